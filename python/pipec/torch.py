"""pipec for a PyTorch DataLoader: an IterableDataset whose shard comes from torch.distributed and the
DataLoader's worker info.

    from pipec.torch import PipeDataset
    ds = PipeDataset("examples/chess/chess.pipe", "train", threads=4)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)  # the spec batches

Each of ``world_size * num_workers`` readers runs the pipeline on its own shard (``shard=(rank *
num_workers + worker_id, world_size * num_workers)``), so together they see every source element once
per epoch. Batches come as dicts of torch tensors that share the pipeline's memory (no copy). The spec
is compiled in each process that iterates (a DataLoader worker, too), since compiled code cannot be
pickled. Without a DataLoader, iterating ``pipec.Pipeline`` directly with ``torch.from_dlpack`` is the
fastest path.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple

import torch
import torch.utils.data

import pipec

__all__ = ["PipeDataset", "IterableDataset", "shard_for_this_reader", "to_torch"]


def to_torch(batch: Mapping[str, "pipec.Tensor"]) -> Dict[str, torch.Tensor]:
    """``{field: torch.Tensor}`` sharing the batch's memory."""
    return {k: torch.from_dlpack(v) for k, v in batch.items()}


def shard_for_this_reader() -> Tuple[int, int]:
    """``(index, count)`` of this process and DataLoader worker among all readers: the rank and world
    size of torch.distributed (when initialized) combined with the worker id and count."""
    rank, world = 0, 1
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    worker = torch.utils.data.get_worker_info()
    wid, nworkers = (worker.id, worker.num_workers) if worker is not None else (0, 1)
    return rank * nworkers + wid, world * nworkers


class PipeDataset(torch.utils.data.IterableDataset):
    """A pipeline of a spec as a torch IterableDataset of batches (``{field: torch.Tensor}``).

    spec: a path (compiled in each process that iterates) or a :class:`pipec.Spec` (used as it is in
        this process; workers of a DataLoader compile the same path again with the same options).
    pipeline: the pipeline's name (None: the only one).
    shard: ``(index, count)`` to use instead of the one taken from torch.distributed and worker info.
    The other arguments are those of :func:`pipec.compile` and :meth:`pipec.Spec.pipeline`.
    Use it with ``DataLoader(ds, batch_size=None)``: the spec already batches.
    """

    def __init__(self, spec: "str | os.PathLike[str] | pipec.Spec", pipeline: Optional[str] = None, *,
                 defines: Optional[Mapping[str, Any]] = None, import_dirs: Sequence[str] = (),
                 threads: int = 0, seed: int = 0, device: str = "auto", shard: Optional[Tuple[int, int]] = None,
                 data_dir: Optional[str] = None):
        super().__init__()
        if isinstance(spec, pipec.Spec):
            self._spec: Optional[pipec.Spec] = spec
            self._path = spec.path
        else:
            self._spec = None
            self._path = os.fspath(spec)
        self._compile_args = {"defines": dict(defines or {}), "import_dirs": list(import_dirs)}
        self._pipeline = pipeline
        self._run_args = {"threads": threads, "seed": seed, "device": device, "data_dir": data_dir}
        self._shard = shard
        self._pid = os.getpid()

    def _get_spec(self) -> "pipec.Spec":
        # A forked worker inherits the parent's compiled spec; a spawned one compiles its own.
        if self._spec is None:
            self._spec = pipec.compile(self._path, **self._compile_args)
        return self._spec

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_spec"] = None  # compiled code does not pickle
        return state

    def __iter__(self) -> Iterator[Dict[str, torch.Tensor]]:
        shard = self._shard if self._shard is not None else shard_for_this_reader()
        with self._get_spec().pipeline(self._pipeline, shard=shard, **self._run_args) as ds:
            for batch in ds:
                yield to_torch(batch)


IterableDataset = PipeDataset
"""The same class under the name torch users look for."""
