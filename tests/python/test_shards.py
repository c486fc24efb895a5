"""shard=(index, count): the shards together see every source element exactly once per epoch."""
import numpy as np
import pytest

import pipec


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_shards_cover_a_range_once(write_spec, count):
    spec = pipec.compile(write_spec("pipeline p = range(1000) | shuffle(64, seed = 4) | batch(7)"))
    seen = []
    for index in range(count):
        with spec.pipeline(threads=2, shard=(index, count)) as ds:
            mine = np.concatenate([np.from_dlpack(b["value"]).copy() for b in ds])
        assert all(v % count == index for v in mine)  # sharded before the shuffle
        seen.append(mine)
    allv = np.concatenate(seen)
    assert len(allv) == 1000 and set(allv.tolist()) == set(range(1000))


def test_shards_cover_tfrecords_once(chess_dir, write_spec):
    path = write_spec(f"""
        source positions = tfrecord("{chess_dir}/data/chess-*.tfrecord") {{
          d: bytes[194]
          s: i64
        }}
        pipeline p = positions | map(r => {{ d: unpack_bits(r.d)[0:64], s: r.s }}) | batch(100)
    """)
    spec = pipec.compile(path)

    def rows(**kw):
        with spec.pipeline(threads=2, **kw) as ds:
            out = []
            for b in ds:
                d, s = np.from_dlpack(b["d"]), np.from_dlpack(b["s"])
                out += [d[i].tobytes() + s[i].tobytes() for i in range(len(s))]
            return out

    everything = rows()
    parts = [rows(shard=(i, 4)) for i in range(4)]
    assert sum(len(p) for p in parts) == len(everything)
    assert sorted(sum(parts, [])) == sorted(everything)
