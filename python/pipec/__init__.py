"""pipec from Python: a ``.pipe`` spec compiled at run time, its batches handed to PyTorch, JAX and
NumPy without a copy.

    import pipec, torch
    spec = pipec.compile("examples/chess/chess.pipe", defines={"BATCH": 1024})
    with spec.pipeline("train", threads=8, seed=1) as ds:
        for batch in ds:                                   # {field: pipec.Tensor}
            board = torch.from_dlpack(batch["board"])      # no copy

See docs/python.md.
"""
from __future__ import annotations

import itertools
import os
import warnings as _warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import _pipec
from ._defines import Expr
from .serving import Model, load_model
from .errors import (DataError, DeviceWarning, Diagnostic, Error, GpuUnavailableError, SpecError, SpecWarning,
                     StateError)

__all__ = ["compile", "load_model", "Model", "Spec", "Pipeline", "Tensor", "Expr", "Diagnostic", "Error", "SpecError", "DataError",
           "StateError", "GpuUnavailableError", "SpecWarning", "DeviceWarning", "__version__"]
__version__ = "0.1.0"

Tensor = _pipec.Tensor

# The Pipe standard library shipped in the package (a wheel has no checkout to find it in).
_STDLIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stdlib")

_DEVICES = ("auto", "cpu", "gpu")


def compile(path: "os.PathLike[str] | str", defines: Optional[Mapping[str, Any]] = None, *,
            import_dirs: Sequence["os.PathLike[str] | str"] = (), optimize: bool = True,
            jit: bool = True) -> "Spec":
    """Checks the spec at `path` and returns it, ready to start pipelines from.

    defines: values for the spec's consts, like ``pipec run -D NAME=VALUE``: bool, int, float, str, a
        list of them, or ``pipec.Expr("Pipe source")``; each is type-checked against the const.
    import_dirs: folders searched for ``import name`` after the spec's own (``-I``).
    optimize: False runs the plan as lowered, on the interpreter (``-O0``, the reference).
    jit: False runs map and filter bodies on the interpreter instead of compiling them (``--no-jit``).

    Raises SpecError (with file:line:col) when the spec has errors, FileNotFoundError when it is
    missing. Warnings of the check are issued as SpecWarning.
    """
    from ._defines import defines_to_pipe

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "no such spec file", path)
    dirs = [os.fspath(d) for d in import_dirs]
    if os.path.isdir(_STDLIB):
        dirs.append(_STDLIB)
    native = _pipec.Spec(path, defines_to_pipe(defines or {}), dirs, 1 if optimize else 0, bool(jit))
    for d in native.warnings:
        _warnings.warn(SpecWarning(str(d)), stacklevel=2)
    return Spec(native)


class Spec:
    """A checked spec (made by :func:`pipec.compile`). Each pipeline is compiled on first use and
    kept, so starting it again, or several times at once, costs no compilation."""

    def __init__(self, native: "_pipec.Spec"):
        self._native = native

    @property
    def path(self) -> str:
        return self._native.path

    @property
    def pipelines(self) -> List[str]:
        """The pipelines the spec declares, in order."""
        return list(self._native.pipelines)

    @property
    def warnings(self) -> List[Diagnostic]:
        """The check's warnings."""
        return list(self._native.warnings)

    def explain(self, name: Optional[str] = None, *, device: str = "auto") -> str:
        """The optimized plan of pipeline `name`, as ``pipec explain`` prints it."""
        return self._compiled(name, device).explain()

    def pipeline(self, name: Optional[str] = None, *, threads: int = 0, seed: int = 0,
                 shard: Optional[Tuple[int, int]] = None, device: str = "auto", state: Optional[bytes] = None,
                 data_dir: "os.PathLike[str] | str | None" = None) -> "Pipeline":
        """Starts pipeline `name` (None: the only one, or the one a train block reads).

        threads: worker threads (0: one per core).
        seed: the run seed for shuffles and random ops without a seed of their own (``--seed``).
        shard: ``(index, count)``, e.g. ``(rank, world_size)``: this pipeline sees the source elements
            i with ``i % count == index``, before any shuffle, map or batch; the `count` shards together
            see every element once per epoch.
        device: where the maps after ``to(gpu)`` run: ``"auto"`` (the GPU when there is one, else the CPU
            with a DeviceWarning), ``"cpu"``, or ``"gpu"`` (GpuUnavailableError without one). Batches
            arrive in CPU memory in every case (see docs/python.md).
        state: bytes from :meth:`Pipeline.state` of the same pipeline, seed and shard: continues
            exactly where that one was (``pipec run --resume``).
        data_dir: where relative data paths resolve (default: the spec's folder).
        """
        if not isinstance(threads, int) or not 0 <= threads <= 1024:
            raise ValueError(f"threads must be an int in [0, 1024] (0: one per core), not {threads!r}")
        if not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
            raise ValueError(f"seed must be an int in [0, 2**64), not {seed!r}")
        index, count = 0, 1
        if shard is not None:
            try:
                index, count = (int(v) for v in shard)
            except (TypeError, ValueError):
                raise ValueError(f"shard must be (index, count), not {shard!r}") from None
            if count < 1 or not 0 <= index < count:
                raise ValueError(f"shard (index, count) needs 0 <= index < count, not {shard!r}")
        compiled = self._compiled(name, device)
        run = compiled.start(threads, seed, index, count, device, os.fspath(data_dir) if data_dir else "")
        p = Pipeline(run)
        if state is not None:
            try:
                run.restore(bytes(state))
            except BaseException:
                p.close()
                raise
        for w in run.warnings():
            _warnings.warn(DeviceWarning(w) if "to(gpu)" in w else UserWarning(w), stacklevel=2)
        return p

    def _compiled(self, name: Optional[str], device: str) -> "_pipec.Compiled":
        if device not in _DEVICES:
            raise ValueError(f"device must be one of {_DEVICES}, not {device!r}")
        return self._native.compile_pipeline(name or "", device)

    def __repr__(self) -> str:
        return f"pipec.Spec({self.path!r}, pipelines={self.pipelines})"


class Pipeline:
    """A running pipeline: an iterator of batches, each a dict ``{field: pipec.Tensor}``.

    Waiting for a batch releases the GIL; Ctrl-C stops the wait (KeyboardInterrupt) and the pipeline.
    A DataError stops it too. close() (or leaving a ``with`` block) stops its threads; tensors already
    handed out stay valid. Many pipelines can run at once, each with its own threads.
    """

    def __init__(self, run: "_pipec.Run"):
        self._run = run

    def __iter__(self) -> "Pipeline":
        return self

    def __next__(self) -> Dict[str, Tensor]:
        return self._run.next()

    def take(self, n: int) -> Iterator[Dict[str, Tensor]]:
        """The next `n` batches (fewer at the end of the data)."""
        return itertools.islice(self, n)

    @property
    def name(self) -> str:
        return self._run.name

    @property
    def element_spec(self) -> Dict[str, Tuple[str, Tuple[Optional[int], ...]]]:
        """``{field: (dtype, shape)}`` as the spec types them, batch dimension first; None for a
        dimension known only at run time."""
        return self._run.element_spec()

    def state(self) -> bytes:
        """The iterator state (positions in the files, shuffle buffers, partial batches, ...): give it to
        ``Spec.pipeline(state=...)`` with the same seed and shard to continue exactly from here."""
        return self._run.state()

    def stats(self) -> Dict[str, Any]:
        """The run summary of ``pipec run --stats-json``: elements, examples, bytes, seconds,
        examples_per_second, and per stage its output, busy time, backend and device."""
        return self._run.stats()

    @property
    def warnings(self) -> List[str]:
        return list(self._run.warnings())

    @property
    def closed(self) -> bool:
        return self._run.closed

    def close(self) -> None:
        """Stops the run and its threads (idempotent). Iterating afterwards ends at once."""
        self._run.close()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"pipec.Pipeline({self.name!r}{', closed' if self.closed else ''})"
