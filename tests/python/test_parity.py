"""Batches through `import pipec` are those of `pipec run --output`, bit for bit."""
import numpy as np
import pytest

import pipec
from conftest import run_pipec


def run_output(spec_path, tmp_path, take, *flags):
    out = tmp_path / "out"
    run_pipec("run", spec_path, "--take", take, "--output", out, "--quiet", *flags)
    return sorted(p for p in out.iterdir())


def compare(spec, out_dirs, **kw):
    with spec.pipeline(**kw) as ds:
        batches = list(ds.take(len(out_dirs)))
    assert len(batches) == len(out_dirs)
    for batch, folder in zip(batches, out_dirs):
        assert {p.stem for p in folder.iterdir()} == set(batch)
        for name, tensor in batch.items():
            want = np.load(folder / f"{name}.npy")
            got = np.from_dlpack(tensor)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.tobytes() == want.tobytes(), name


@pytest.mark.parametrize("seed", [0, 7])
def test_chess_batches_equal_pipec_run(chess_dir, tmp_path, seed):
    dirs = run_output(chess_dir / "chess.pipe", tmp_path, 6, "-D", "BATCH=64", "--seed", seed, "--threads", 2)
    spec = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 64})
    compare(spec, dirs, seed=seed, threads=3)


def test_random_ops_equal_pipec_run(write_spec, tmp_path):
    path = write_spec("""
        pipeline p = range(300)
          | map(r => { x: random_normal([4, 3]), k: random_int([], 0, 100), v: f64(r.value) / 3.0 })
          | shuffle(50)
          | batch(32)
    """)
    dirs = run_output(path, tmp_path, 9, "--seed", 11)
    compare(pipec.compile(path), dirs, seed=11)


def test_unoptimized_plan_equals_pipec_run_O0(chess_dir, tmp_path):
    dirs = run_output(chess_dir / "chess.pipe", tmp_path, 3, "-D", "BATCH=16", "-O0")
    spec = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 16}, optimize=False)
    compare(spec, dirs)
