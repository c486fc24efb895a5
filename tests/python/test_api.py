"""The API of `import pipec`: compile with defines, pipelines, batches as DLPack tensors without a copy,
element_spec, stats, close and the context manager."""
import gc

import numpy as np
import pytest

import pipec
from conftest import CHESS_RECORDS, numpy_batch


def test_compile_lists_pipelines_and_explains(chess_spec):
    assert chess_spec.pipelines == ["train", "held_out", "training_targets", "held_out_targets", "mean_baseline"]
    plan = chess_spec.explain("train")
    assert "tfrecord" in plan and "batch" in plan


def test_batches_are_dicts_of_dlpack_tensors(chess_spec):
    with chess_spec.pipeline("train", threads=2, seed=1) as ds:
        batch = next(ds)
    assert set(batch) == {"board", "flags", "score"}
    board = batch["board"]
    assert isinstance(board, pipec.Tensor)
    assert board.shape == (64, 8, 8, 24) and board.dtype == "float32" and board.ndim == 4
    assert board.__dlpack_device__() == (1, 0)
    assert board.nbytes == 64 * 8 * 8 * 24 * 4
    a = np.from_dlpack(board)
    assert a.shape == (64, 8, 8, 24) and a.dtype == np.float32
    # The planes hold piece signs: +1 and -1 where a piece is, 0 elsewhere.
    assert set(np.unique(a)) <= {-1.0, 0.0, 1.0} and np.abs(a).sum() > 0
    assert np.array_equal(np.asarray(board), a)


def test_dlpack_shares_the_pipelines_memory(chess_spec):
    with chess_spec.pipeline("train", threads=2) as ds:
        batch = next(ds)
    a = np.from_dlpack(batch["board"])
    b = np.from_dlpack(batch["board"])
    # Two consumers, one buffer: no copy was made for either.
    assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    assert batch["board"].numpy().__array_interface__["data"][0] == a.__array_interface__["data"][0]


def test_tensors_outlive_the_pipeline_and_are_released(chess_spec):
    gc.collect()
    before = pipec._pipec.live_tensors()
    ds = chess_spec.pipeline("train", threads=2)
    kept = [next(ds) for _ in range(3)]
    arrays = [np.from_dlpack(b["score"]) for b in kept]
    ds.close()
    expected = [a.copy() for a in arrays]
    del ds
    gc.collect()
    # Still readable after close: each tensor holds its buffer.
    assert all(np.array_equal(a, e) for a, e in zip(arrays, expected))
    assert pipec._pipec.live_tensors() > before
    del kept, arrays
    gc.collect()
    assert pipec._pipec.live_tensors() == before


def test_defines_override_consts_and_are_type_checked(chess_dir):
    spec = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 32})
    with spec.pipeline() as ds:
        assert next(ds)["board"].shape == (32, 8, 8, 24)
        assert ds.element_spec["board"] == ("float32", (32, 8, 8, 24))
    with pytest.raises(pipec.SpecError) as e:
        pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 2.5})
    assert any(d.kind == "type_mismatch" for d in e.value.diagnostics)
    assert "BATCH" in str(e.value)
    with pytest.raises(pipec.SpecError) as e:
        pipec.compile(chess_dir / "chess.pipe", defines={"NO_SUCH_CONST": 1})
    assert e.value.diagnostics[0].kind == "unknown_const_override"
    spec = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": pipec.Expr("4 * 8")})
    with spec.pipeline() as ds:
        assert next(ds)["score"].shape == (32,)


def test_defines_of_every_python_type(write_spec):
    path = write_spec("""
        const N = 3
        const SCALE = 1.0
        const ON = false
        const OFFSETS = [0, 0, 0]
        pipeline p = range(N) | map(r => { v: f32(r.value) * SCALE + f32(sum(OFFSETS)), on: ON })
    """)
    spec = pipec.compile(path, defines={"N": np.int64(4), "SCALE": 0.5, "ON": True, "OFFSETS": np.array([1, 2, 3])})
    with spec.pipeline() as ds:
        rows = [(float(np.from_dlpack(b["v"])), bool(np.from_dlpack(b["on"]))) for b in ds]
    assert rows == [(6.0, True), (6.5, True), (7.0, True), (7.5, True)]


def test_stats_is_the_run_summary(chess_spec):
    with chess_spec.pipeline("train", threads=2) as ds:
        for _ in ds.take(5):
            pass
        s = ds.stats()
    assert s["pipeline"] == "train" and s["elements"] == 5 and s["examples"] == 5 * 64
    assert s["bytes"] == 5 * 64 * (8 * 8 * 24 + 10 + 1) * 4
    assert s["examples_per_second"] > 0
    ops = [st["op"] for st in s["stages"]]
    assert ops[0] == "tfrecord" and "batch" in ops
    assert all({"elements_out", "busy_seconds", "device", "backend"} <= set(st) for st in s["stages"])
    # Kept after close (the prefetch ran on meanwhile, so the stages' counts may have grown).
    after = ds.stats()
    assert ds.closed and after["elements"] == 5 and after["seconds"] == s["seconds"] and len(after["stages"]) == len(s["stages"])


def test_close_ends_iteration_and_is_idempotent(chess_spec):
    ds = chess_spec.pipeline("train", threads=2)
    next(ds)
    ds.close()
    ds.close()
    assert ds.closed
    with pytest.raises(StopIteration):
        next(ds)


def test_a_finite_pipeline_ends(write_spec):
    spec = pipec.compile(write_spec("pipeline p = range(10) | batch(4)"))
    with spec.pipeline(threads=1) as ds:
        sizes = [b["value"].shape for b in ds]
    assert sizes == [(4,), (4,), (2,)]


def test_run_seed_changes_random_ops_only_when_unseeded(write_spec):
    spec = pipec.compile(write_spec("pipeline p = range(8) | map(r => { x: random_uniform([3]) }) | batch(8)"))
    def first(seed):
        with spec.pipeline(seed=seed, threads=1) as ds:
            return numpy_batch(next(ds))["x"]
    assert np.array_equal(first(1), first(1))
    assert not np.array_equal(first(1), first(2))


def test_bad_arguments_are_value_errors(chess_spec):
    with pytest.raises(ValueError, match="shard"):
        chess_spec.pipeline(shard=(3, 3))
    with pytest.raises(ValueError, match="threads"):
        chess_spec.pipeline(threads=-1)
    with pytest.raises(ValueError, match="device"):
        chess_spec.pipeline(device="tpu")
    with pytest.raises(ValueError, match="nope"):
        chess_spec.pipeline("nope")
    with pytest.raises(FileNotFoundError):
        pipec.compile("/no/such/spec.pipe")


def test_byte_string_fields_are_refused_with_a_reason(write_spec):
    spec = pipec.compile(write_spec('pipeline p = range(2) | map(r => { s: "abc" })'))
    with pytest.raises(RuntimeError, match="byte string"):
        spec.pipeline()


def test_chess_data_is_all_there(chess_spec, write_spec, chess_dir):
    # One epoch of the records without shuffle or repeat: every record once.
    path = write_spec(f"""
        source positions = tfrecord("{chess_dir}/data/chess-*.tfrecord") {{
          d: bytes[194]
          s: i64
        }}
        pipeline p = positions | map(r => {{ s: r.s }}) | batch(1000)
    """)
    with pipec.compile(path).pipeline(threads=2) as ds:
        assert sum(len(b["s"]) for b in ds) == CHESS_RECORDS
