"""Many pipelines in one process: each independent and deterministic, run from several threads at once,
and closing them stops their threads."""
import os
import threading

import numpy as np

import pipec
from conftest import numpy_batch


def thread_count():
    return len(os.listdir("/proc/self/task"))


def reference(spec, seed, n):
    with spec.pipeline("train", threads=2, seed=seed) as ds:
        return [numpy_batch(b) for b in ds.take(n)]


def same(a, b):
    return all(x[k].tobytes() == y[k].tobytes() for x, y in zip(a, b) for k in x) and len(a) == len(b)


def test_many_pipelines_interleaved(chess_spec):
    before = thread_count()
    expected = {seed: reference(chess_spec, seed, 6) for seed in (1, 2)}
    pipelines = [(seed, chess_spec.pipeline("train", threads=2, seed=seed)) for seed in (1, 2) * 8]
    got = [[] for _ in pipelines]
    for _ in range(6):
        for i, (_, ds) in enumerate(pipelines):
            got[i].append(numpy_batch(next(ds)))
    assert thread_count() > before  # each runs its own threads
    for (seed, ds), g in zip(pipelines, got):
        assert same(g, expected[seed])
        ds.close()
    assert thread_count() <= before + 1  # + the SIGINT helper, started once per process


def test_pipelines_in_several_threads(chess_spec):
    expected = reference(chess_spec, 4, 20)
    results, errors = {}, []

    def work(i):
        try:
            with chess_spec.pipeline("train", threads=2, seed=4) as ds:
                results[i] = [numpy_batch(b) for b in ds.take(20)]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(same(results[i], expected) for i in range(4))


def test_several_specs_in_one_process(chess_dir, write_spec):
    a = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 8})
    b = pipec.compile(chess_dir / "chess.pipe", defines={"BATCH": 16})
    c = pipec.compile(write_spec("pipeline p = range(5) | map(r => { v: r.value * 2 })"))
    with a.pipeline() as da, b.pipeline() as db, c.pipeline() as dc:
        assert next(da)["board"].shape[0] == 8
        assert next(db)["board"].shape[0] == 16
        assert [int(np.from_dlpack(x["v"])) for x in dc] == [0, 2, 4, 6, 8]
