"""PyTorch: torch.from_dlpack shares the batch's memory, and pipec.torch.PipeDataset takes its shard from
the DataLoader's workers (and torch.distributed), covering the data once. Skipped without torch."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pipec  # noqa: E402
import pipec.torch as pt  # noqa: E402


def test_from_dlpack_shares_memory(chess_spec):
    with chess_spec.pipeline("train", threads=2) as ds:
        batch = next(ds)
    t = torch.from_dlpack(batch["board"])
    a = np.from_dlpack(batch["board"])
    assert t.dtype == torch.float32 and tuple(t.shape) == (64, 8, 8, 24)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    assert np.array_equal(t.numpy(), a)


def test_tensor_outlives_batch_and_pipeline(chess_spec):
    with chess_spec.pipeline("train", threads=2) as ds:
        t = torch.from_dlpack(next(ds)["score"])
        expected = t.clone()
    del ds
    assert torch.equal(t, expected)


def values(loader):
    return sorted(int(v) for b in loader for v in b["value"].tolist())


def test_dataset_in_a_dataloader_with_workers(write_spec):
    path = write_spec("pipeline p = range(1000) | shuffle(100, seed = 2) | batch(10)")
    ds = pt.PipeDataset(path, threads=1)
    for workers in (0, 2, 3):
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        assert values(loader) == list(range(1000)), workers
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))
    assert isinstance(batch["value"], torch.Tensor) and batch["value"].shape == (10,)


def test_dataset_from_a_compiled_spec_and_an_explicit_shard(chess_spec, write_spec):
    spec = pipec.compile(write_spec("pipeline p = range(100) | batch(5)"))
    got = []
    for i in range(4):
        got += values(pt.PipeDataset(spec, shard=(i, 4)))
    assert sorted(got) == list(range(100))
    ds = pt.IterableDataset(chess_spec, "train", threads=2)
    first = next(iter(ds))
    assert first["board"].shape == (64, 8, 8, 24)


def test_shard_comes_from_torch_distributed(write_spec, tmp_path):
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rendezvous", rank=0, world_size=1)
    try:
        assert pt.shard_for_this_reader() == (0, 1)
        path = write_spec("pipeline p = range(50) | batch(5)")
        assert values(torch.utils.data.DataLoader(pt.PipeDataset(path), batch_size=None, num_workers=2)) == list(range(50))
    finally:
        dist.destroy_process_group()
