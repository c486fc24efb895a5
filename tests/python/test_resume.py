"""ds.state() and Spec.pipeline(state=...) continue exactly where a run was (as pipec run --resume),
mid-epoch, mid-shuffle-buffer and mid-chunk."""
import numpy as np

import pipec
from conftest import numpy_batch


def take(ds, n):
    return [numpy_batch(b) for b in ds.take(n)]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert x[k].tobytes() == y[k].tobytes(), k


def test_resume_continues_exactly(chess_spec):
    # 3,584 records in the training files, batches of 64: 56 batches an epoch; stop at 37 (mid-epoch,
    # shuffle buffer full) and compare 40 more (across the epoch boundary).
    with chess_spec.pipeline("train", threads=2, seed=5) as ds:
        take(ds, 37)
        state = ds.state()
        expected = take(ds, 40)
    with chess_spec.pipeline("train", threads=2, seed=5, state=state) as resumed:
        assert_same(take(resumed, 40), expected)


def test_resume_with_other_thread_counts(chess_spec):
    with chess_spec.pipeline("train", threads=1, seed=3) as ds:
        take(ds, 10)
        state = ds.state()
        expected = take(ds, 5)
    with chess_spec.pipeline("train", threads=4, seed=3, state=state) as resumed:
        assert_same(take(resumed, 5), expected)


def test_resume_between_elements_of_one_chunk(write_spec):
    # Unbatched elements come many to a chunk: a state taken between two of them keeps the rest.
    spec = pipec.compile(write_spec("pipeline p = range(5000) | shuffle(100, seed = 1) | map(r => { v: r.value * 3 })"))
    with spec.pipeline(threads=2) as ds:
        take(ds, 123)
        state = ds.state()
        expected = take(ds, 1000)
    with spec.pipeline(threads=2, state=state) as resumed:
        assert_same(take(resumed, 1000), expected)
    values = [int(x["v"]) for x in expected]
    assert len(set(values)) == 1000 and all(v % 3 == 0 for v in values)


def test_resume_of_a_shard(chess_spec):
    with chess_spec.pipeline("train", threads=2, seed=9, shard=(1, 3)) as ds:
        take(ds, 7)
        state = ds.state()
        expected = take(ds, 9)
    with chess_spec.pipeline("train", threads=2, seed=9, shard=(1, 3), state=state) as resumed:
        assert_same(take(resumed, 9), expected)
