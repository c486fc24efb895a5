#!/usr/bin/env python3
"""Regenerates the tf.data conformance fixtures in tests/conformance/fixtures/ with real TensorFlow.

  pip install tensorflow-cpu numpy && python3 tests/conformance/make_fixtures.py [--only NAME ...]

Each case is a folder fixtures/<case>/ holding
  spec.pipe         the pipec spec of the case (its paths are relative to the spec's folder)
  case.txt          `key = value` lines: description, elements (the count), and options for the runner
  data/             input TFRecords, when the case has its own (shared inputs live in fixtures/_data/)
  expected/NNNNNN/<field>.npy
                    what tf.data yields, element by element (a whole batch per element after batch),
                    in exactly the layout `pipec run SPEC --output DIR` writes: one file per field, dtype
                    and shape as the spec types them, bytes as |S<longest> (null-padded).

Options in case.txt that tests/unit/conformance_test.cpp reads:
  expect_error = 1      tf.data fails on this input; `pipec run` must exit with status 1 (a data error),
                        and no expected/ folder exists.
  float_ulp = N         compare floating-point fields to within N units in the last place (default 0:
                        exact, with NaN equal to NaN).

The script also rewrites fixtures/npy/ (make_npy_fixtures.py, NumPy only). Everything it writes is
deterministic: fixed seeds, sorted file lists, TensorFlow's own TFRecordWriter.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
SHARED_DATA = os.path.join(FIXTURES, "_data")
# The shared test data: $PIPEC_SHARED_DIR (as CMake finds it), else shared/ next to the checkout.
SHARED = os.environ.get("PIPEC_SHARED_DIR") or os.path.join(os.path.dirname(REPO), "shared")
EXTERNAL = os.path.join(SHARED, "testdata", "external", "tfrecord")
# How a spec in fixtures/<case>/ names shared/testdata/external/tfrecord/ (paths in a spec are relative
# to the spec's folder): fixtures/<case> -> fixtures -> conformance -> tests -> repo -> its parent.
EXTERNAL_FROM_SPEC = "../../../../../shared/testdata/external/tfrecord"

sys.path.insert(0, os.path.join(REPO, "bench", "chess"))
import tfdata_peer  # noqa: E402  (seed 002's tf.data code, ported to TF2)

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# ---------------------------------------------------------------------------------------------------
# Writing a case


def to_numpy(value):
    """A TF value as the numpy array pipec writes: bytes as |S<longest> (at least 1), else as is."""
    a = value.numpy() if hasattr(value, "numpy") else value
    if isinstance(a, bytes) or (isinstance(a, np.ndarray) and a.dtype == object):
        obj = np.asarray(a, dtype=object)
        longest = max([len(x) for x in obj.ravel()] + [1])
        return obj.astype(f"S{longest}")
    return np.asarray(a)


def write_case(name, spec, elements, description, data_files=None, options=None, raw_files=None):
    """Writes fixtures/<name>/: spec.pipe, case.txt, data/ and expected/ from `elements` (dicts).
    `data_files` are TFRecord files (lists of records), `raw_files` files of bytes, both under data/."""
    folder = os.path.join(FIXTURES, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    with open(os.path.join(folder, "spec.pipe"), "w") as f:
        f.write(spec.strip() + "\n")
    for rel, records in (data_files or {}).items():
        write_tfrecord(os.path.join(folder, "data", rel), records)
    for rel, content in (raw_files or {}).items():
        os.makedirs(os.path.join(folder, "data"), exist_ok=True)
        with open(os.path.join(folder, "data", rel), "wb") as f:
            f.write(content)
    options = dict(options or {})
    if elements is not None:
        expected = os.path.join(folder, "expected")
        os.makedirs(expected)
        for i, element in enumerate(elements):
            d = os.path.join(expected, f"{i:06d}")
            os.makedirs(d)
            for field, value in element.items():
                np.save(os.path.join(d, field + ".npy"), to_numpy(value), allow_pickle=False)
        options["elements"] = len(elements)
    with open(os.path.join(folder, "case.txt"), "w") as f:
        f.write(f"description = {' '.join(description.split())}\n")
        for k, v in options.items():
            f.write(f"{k} = {v}\n")
    print(f"  {name}: {options.get('elements', 'error')} elements")


def run_tf(ds):
    return [{k: v for k, v in e.items()} for e in ds]


def expect_tf_error(ds):
    """Returns TF's error message for a dataset that must fail."""
    try:
        for _ in ds:
            pass
    except tf.errors.OpError as e:
        # Drop the op/iterator prefix (it holds run-dependent ids) and keep TF's own reason.
        msg = " ".join(e.message.split())
        msg = re.sub(r"^.*?(?=(Key: |Feature: |Name: |Input to DecodeRaw|DecodeRaw|Selector index|Excluding))", "", msg)
        return re.sub(r"\s*(\[Op:\w+\]|\[\[\{\{node).*$", "", msg).strip()
    raise AssertionError("tf.data did not fail")


# ---------------------------------------------------------------------------------------------------
# Input data


def write_tfrecord(path, records):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)


def feature(value=None, kind=None):
    """A tf.train.Feature: ints -> int64_list, floats -> float_list, bytes -> bytes_list, None -> Feature{}."""
    if kind == "empty":
        return tf.train.Feature()
    if kind == "int64" or (kind is None and all(isinstance(v, (int, np.integer)) for v in value)):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value))
    if kind == "float" or (kind is None and all(isinstance(v, float) for v in value)):
        return tf.train.Feature(float_list=tf.train.FloatList(value=value))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=value))


def example(**features):
    # deterministic=True sorts the feature map, so regenerating gives byte-identical files.
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(deterministic=True)


# Interleave inputs: TensorFlow's interleave kernel tests use elements [4, 5, 6] repeated twice, element x
# expanding to x copies of x. Here each is a file of x records {x, file, idx}, so the output shows which
# file and which record every element came from.
INTERLEAVE_SETS = {
    "il_456": [4, 5, 6, 4, 5, 6],
    "il_edge": [3, 0, 1, 5, 2],   # an empty file and a one-record file
}


def interleave_files(set_name):
    return sorted(glob.glob(os.path.join(SHARED_DATA, set_name, "f-*.tfrecord")))


def make_shared_data():
    if os.path.isdir(SHARED_DATA):
        shutil.rmtree(SHARED_DATA)
    for set_name, lengths in INTERLEAVE_SETS.items():
        for k, n in enumerate(lengths):
            write_tfrecord(os.path.join(SHARED_DATA, set_name, f"f-{k:02d}.tfrecord"),
                           [example(x=feature([n]), file=feature([k]), idx=feature([j])) for j in range(n)])
    # Variable-length int64 / float features, with empty rows and a batch of only empty rows.
    lengths = [2, 0, 3, 1, 5, 2, 0, 0, 0, 4, 1]
    rng = np.random.default_rng(11)
    records = []
    for i, n in enumerate(lengths):
        v = [int(x) for x in rng.integers(-1000, 1000, n)]
        w = [float(np.float32(x)) for x in rng.normal(size=(i % 3))]
        feats = {"id": feature([i]), "v": feature(v, "int64"), "w": feature(w, "float")}
        if i == 5:
            feats["v"] = feature([], "int64")    # present with no values: an empty row
        if i == 7:
            feats["w"] = feature(kind="empty")   # Feature{} with no kind: also an empty row
        records.append(example(**feats))
    write_tfrecord(os.path.join(SHARED_DATA, "varlen.tfrecord"), records)


VARLEN_SPEC_SOURCE = """
source rows = tfrecord("../_data/varlen.tfrecord") {
  id: i64
  v: i64[?]
  w: f32[?]
}
"""

VARLEN_FEATURES = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "v": tf.io.VarLenFeature(tf.int64),
    "w": tf.io.VarLenFeature(tf.float32),
}


def varlen_dataset():
    def parse(r):
        p = tf.io.parse_single_example(r, VARLEN_FEATURES)
        return {"id": p["id"], "v": tf.sparse.to_dense(p["v"]), "w": tf.sparse.to_dense(p["w"])}
    return tf.data.TFRecordDataset(os.path.join(SHARED_DATA, "varlen.tfrecord")).map(parse)


def range_ds(*args):
    return tf.data.Dataset.range(*args).map(lambda x: {"value": x})


# ---------------------------------------------------------------------------------------------------
# Cases: range + batch


@case
def range_batch():
    for n in (10, 20):
        for size in (1, 3, 7):
            for drop in (False, True):
                name = f"range_batch_{n}_by_{size}" + ("_drop" if drop else "")
                spec = f"""
# tf.data.Dataset.range({n}).batch({size}, drop_remainder={drop})
source nums = range({n})
pipeline p = nums | batch({size}, drop_remainder = {str(drop).lower()})
"""
                write_case(name, spec, run_tf(range_ds(n).batch(size, drop_remainder=drop)),
                           f"range({n}) batched by {size}, drop_remainder {drop}")


@case
def range_args():
    write_case("range_start_stop_step", """
# tf.data.Dataset.range(2, 20, 3), unbatched: one scalar element per value
source nums = range(2, 20, 3)
pipeline p = nums
""", run_tf(range_ds(2, 20, 3)), "range(2, 20, 3), unbatched: scalar elements")
    write_case("range_negative_step", """
# tf.data.Dataset.range(10, 0, -3)
source nums = range(10, 0, -3)
pipeline p = nums
""", run_tf(range_ds(10, 0, -3)), "range(10, 0, -3), unbatched")
    write_case("range_empty_batch", """
# An empty input: batch yields nothing (no remainder batch of size 0)
source nums = range(0)
pipeline p = nums | batch(3)
""", run_tf(range_ds(0).batch(3)), "range(0).batch(3) yields no element")


# ---------------------------------------------------------------------------------------------------
# shard


@case
def shard():
    for n, i in ((3, 0), (3, 1), (3, 2), (1, 0), (4, 3)):
        write_case(f"shard_10_{n}_{i}", f"""
# tf.data.Dataset.range(10).shard({n}, {i})
source nums = range(10)
pipeline p = nums | shard({n}, {i})
""", run_tf(range_ds(10).shard(n, i)), f"range(10).shard({n}, {i})")
    write_case("shard_more_shards_than_elements", """
# Shard 6 of 7 over 5 elements: empty
source nums = range(5)
pipeline p = nums | shard(7, 6)
""", run_tf(range_ds(5).shard(7, 6)), "range(5).shard(7, 6) is empty")
    write_case("shard_before_batch", """
# tf.data.Dataset.range(20).shard(4, 3).batch(2)
source nums = range(20)
pipeline p = nums | shard(4, 3) | batch(2)
""", run_tf(range_ds(20).shard(4, 3).batch(2)), "range(20).shard(4, 3).batch(2)")
    write_case("shard_after_batch", """
# tf.data.Dataset.range(20).batch(3).shard(2, 1): shards whole batches, the remainder batch included
source nums = range(20)
pipeline p = nums | batch(3) | shard(2, 1)
""", run_tf(range_ds(20).batch(3).shard(2, 1)), "range(20).batch(3).shard(2, 1)")
    write_case("shard_after_batch_drop", """
# tf.data.Dataset.range(20).batch(3, drop_remainder=True).shard(3, 0)
source nums = range(20)
pipeline p = nums | batch(3, drop_remainder = true) | shard(3, 0)
""", run_tf(range_ds(20).batch(3, drop_remainder=True).shard(3, 0)), "range(20).batch(3, True).shard(3, 0)")


# ---------------------------------------------------------------------------------------------------
# repeat / take / skip


@case
def repeat_take_skip():
    combos = [
        ("repeat3", "repeat(3)", lambda d: d.repeat(3)),
        ("repeat3_take5", "repeat(3) | take(5)", lambda d: d.repeat(3).take(5)),
        ("repeat3_skip5", "repeat(3) | skip(5)", lambda d: d.repeat(3).skip(5)),
        ("take0_repeat3", "take(0) | repeat(3)", lambda d: d.take(0).repeat(3)),
        ("repeat3_take0", "repeat(3) | take(0)", lambda d: d.repeat(3).take(0)),
        ("skip_past_end", "skip(10)", lambda d: d.skip(10)),
        ("skip_past_end_repeat3", "skip(10) | repeat(3)", lambda d: d.skip(10).repeat(3)),
        ("take_all_repeat2", "take(-1) | repeat(2)", lambda d: d.take(-1).repeat(2)),
        ("take_past_end", "take(100)", lambda d: d.take(100)),
        ("skip2_take3_repeat2", "skip(2) | take(3) | repeat(2)", lambda d: d.skip(2).take(3).repeat(2)),
        ("repeat2_skip3_take4", "repeat(2) | skip(3) | take(4)", lambda d: d.repeat(2).skip(3).take(4)),
        ("repeat_take7", "repeat() | take(7)", lambda d: d.repeat().take(7)),
        ("repeat2_batch3", "repeat(2) | batch(3)", lambda d: d.repeat(2).batch(3)),
        ("batch3_repeat2", "batch(3) | repeat(2)", lambda d: d.batch(3).repeat(2)),
        ("batch3_repeat2_take3", "batch(3) | repeat(2) | take(3)", lambda d: d.batch(3).repeat(2).take(3)),
        ("repeat1", "repeat(1)", lambda d: d.repeat(1)),
    ]
    for name, stages, fn in combos:
        write_case(f"rts_{name}", f"""
# tf.data.Dataset.range(4).{stages.replace(' | ', '.')}
source nums = range(4)
pipeline p = nums | {stages}
""", run_tf(fn(range_ds(4))), f"range(4) | {stages}")


# ---------------------------------------------------------------------------------------------------
# padded_batch


@case
def padded_batch():
    def pad(size, drop=False, value=None):
        values = None
        if value is not None:
            values = {"id": tf.constant(0, tf.int64), "v": tf.constant(value, tf.int64),
                      "w": tf.constant(float(value), tf.float32)}
        return run_tf(varlen_dataset().padded_batch(size, padding_values=values, drop_remainder=drop))

    for size, drop, value in ((4, False, None), (4, True, None), (3, False, -1), (1, False, None), (20, False, 7)):
        args = [str(size)]
        if value is not None:
            args.append(f"padding_value = {value}")
        if drop:
            args.append("drop_remainder = true")
        name = f"padded_batch_{size}" + ("_drop" if drop else "") + (f"_pad{value}".replace("-", "m") if value is not None else "")
        write_case(name, f"""
# Variable-length int64 and float features (rows of 0-5 values, some empty lists, one empty Feature{{}}
# for `w`) padded to the longest row of each batch. (A missing var-len feature: see parse_defaults.)
{VARLEN_SPEC_SOURCE.strip()}
pipeline p = rows | padded_batch({', '.join(args)})
""", pad(size, drop, value),
            f"varlen.tfrecord parsed per element with VarLenFeature, then padded_batch({', '.join(args)}); "
            "padding_value applies to every padded field, in its dtype")
    write_case("varlen_unbatched", f"""
# Variable-length features, one element per record: each element's rows have their own length
{VARLEN_SPEC_SOURCE.strip()}
pipeline p = rows
""", run_tf(varlen_dataset()), "varlen.tfrecord, unbatched: v and w have each record's own length")


@case
def padded_batch_strings():
    """Byte strings in padded_batch: tf.data pads them with b"" where a batch's elements differ in shape."""
    names = [b"alpha", b"", b"b", b"gamma-delta", b"e", b"", b"zeta", b"eta theta", b"i", b"", b"kappa"]
    lengths = [2, 0, 3, 1, 5, 2, 0, 0, 0, 4, 1]
    records = [example(id=feature([i]), name=feature([names[i]]), v=feature(list(range(10 * i, 10 * i + n)), "int64"))
               for i, n in enumerate(lengths)]
    path = os.path.join(FIXTURES, "_strings.tfrecord")
    write_tfrecord(path, records)
    feats = {"id": tf.io.FixedLenFeature([], tf.int64), "name": tf.io.FixedLenFeature([], tf.string),
             "v": tf.io.VarLenFeature(tf.int64)}

    def rows():
        def parse(r):
            p = tf.io.parse_single_example(r, feats)
            return {"id": p["id"], "name": p["name"], "v": tf.sparse.to_dense(p["v"])}
        return tf.data.TFRecordDataset(path).map(parse)

    source = """
source rows = tfrecord("data/strings.tfrecord") {
  id: i64
  name: bytes
  v: i64[?]
}
"""
    def ids_and_names(e):
        return {"id": e["id"], "name": e["name"]}

    data = {"strings.tfrecord": records}
    write_case("padded_batch_strings_4", f"""
# A byte-string field batched with padded_batch: a scalar string per element needs no padding
{source.strip()}
pipeline p = rows | padded_batch(4)
""", run_tf(rows().padded_batch(4)), "strings.tfrecord (id, a byte string, a var-len int64 list), padded_batch(4)",
              data_files=data)
    write_case("padded_batch_strings_padm1", f"""
# padding_value pads the numeric fields; byte strings always pad with empty strings
{source.strip()}
pipeline p = rows | padded_batch(3, padding_value = -1)
""", run_tf(rows().padded_batch(3, padding_values={"id": tf.constant(-1, tf.int64), "name": tf.constant(b""),
                                                   "v": tf.constant(-1, tf.int64)})),
              "strings.tfrecord, padded_batch(3) with padding_values -1 for the numbers and b'' for the strings",
              data_files=data)
    write_case("padded_batch_strings_rows", f"""
# Byte strings with a `?` dimension (batches of 3 strings, the last one shorter) padded with b"" to the
# longest batch of each padded batch
{source.strip()}
pipeline p = rows | map(r => {{ id: r.id, name: r.name }}) | batch(3) | padded_batch(2)
""", run_tf(rows().map(ids_and_names).batch(3).padded_batch(2)),
              "strings.tfrecord, ids and names batched by 3, then padded_batch(2): the last padded batch "
              "holds a batch of 3 and one of 2, padded with b''", data_files=data)
    os.remove(path)
    external_case("padded_batch_strings_tfx_taxi", "tfx_taxi_eval_00000.tfrecord.gz", "GZIP",
                  '''  company: bytes = "none"
  dropoff_census_tract: i64[?]''',
                  {"company": tf.io.FixedLenFeature([], tf.string, default_value="none"),
                   "dropoff_census_tract": tf.io.VarLenFeature(tf.int64)},
                  " | take(12) | padded_batch(4)", lambda d: d.take(12).batch(4),
                  "company strings (default \"none\") and var-len census tracts of the first 12 records, "
                  "padded_batch(4)")


# ---------------------------------------------------------------------------------------------------
# cache


@case
def cache():
    write_case("cache_repeat3", """
# tf.data.Dataset.range(5).cache().repeat(3)
source nums = range(5)
pipeline p = nums | cache() | repeat(3)
""", run_tf(range_ds(5).cache().repeat(3)), "range(5).cache().repeat(3)")
    write_case("cache_take_repeat", """
# A cache whose first pass is cut short by take: each epoch reads the input again
source nums = range(5)
pipeline p = nums | cache() | take(3) | repeat(2)
""", run_tf(range_ds(5).cache().take(3).repeat(2)), "range(5).cache().take(3).repeat(2)")
    write_case("cache_batched_repeat2", """
# tf.data.Dataset.range(6).batch(4).cache().repeat(2)
source nums = range(6)
pipeline p = nums | batch(4) | cache() | repeat(2)
""", run_tf(range_ds(6).batch(4).cache().repeat(2)), "range(6).batch(4).cache().repeat(2)")
    write_case("cache_varlen_repeat2", f"""
# A cached TFRecord source with variable-length rows, replayed
{VARLEN_SPEC_SOURCE.strip()}
pipeline p = rows | cache() | repeat(2) | padded_batch(5)
""", run_tf(varlen_dataset().cache().repeat(2).padded_batch(5)), "varlen.tfrecord cache().repeat(2).padded_batch(5)")


# ---------------------------------------------------------------------------------------------------
# concatenate, enumerate, choose_from: joining datasets


def ranges_spec(args):
    """`range(a, b)` for a (start, stop) pair, as the spec writes the datasets."""
    return f"range({args[0]}, {args[1]})"


@case
def concatenate():
    for name, a, b in (("3_4", (0, 3), (10, 14)), ("empty_a", (0, 0), (10, 13)), ("empty_b", (0, 3), (10, 10)),
                       ("both_empty", (0, 0), (5, 5))):
        write_case(f"concatenate_{name}", f"""
# tf.data.Dataset.range{a}.concatenate(tf.data.Dataset.range{b})
pipeline p = concatenate({ranges_spec(a)}, {ranges_spec(b)})
""", run_tf(range_ds(*a).concatenate(range_ds(*b))), f"range{a}.concatenate(range{b})")
    write_case("concatenate_batches_of_two_shapes", """
# A batch of 2 and a remainder batch, then full batches: the shapes differ, each element keeps its own
pipeline p = concatenate(range(5) | batch(2, drop_remainder = true), range(10, 15) | batch(2)) | take(5)
""", run_tf(range_ds(5).batch(2, drop_remainder=True).concatenate(range_ds(10, 15).batch(2)).take(5)),
               "range(5).batch(2, True).concatenate(range(10, 15).batch(2)).take(5)")
    write_case("concatenate_fields_by_name", """
# Dict elements whose keys are written in another order: joined by key
pipeline p = concatenate(range(3) | map(r => { a: r.value, b: f32(r.value) * 0.5 }),
                         range(7, 9) | map(r => { b: f32(r.value), a: r.value * 2 }))
""", run_tf(tf.data.Dataset.range(3).map(lambda x: {"a": x, "b": tf.cast(x, tf.float32) * 0.5}).concatenate(
        tf.data.Dataset.range(7, 9).map(lambda x: {"b": tf.cast(x, tf.float32), "a": x * 2}))),
               "dicts {a, b} concatenated with dicts {b, a}")


def enumerated(ds, start=0, field="index"):
    """tf.data's (index, element) tuple as pipec's record: the index first, then the element's fields."""
    return ds.enumerate(start).map(lambda i, e: {field: i, **e})


@case
def enumerate_():
    write_case("enumerate_range", """
# tf.data.Dataset.range(10, 15).enumerate()
pipeline p = range(10, 15) | enumerate()
""", run_tf(enumerated(range_ds(10, 15))), "range(10, 15).enumerate()")
    write_case("enumerate_start", """
# tf.data.Dataset.range(4).enumerate(start=100), the index field named n
pipeline p = range(4) | enumerate(start = 100, field = "n")
""", run_tf(enumerated(range_ds(4), 100, "n")), "range(4).enumerate(100)")
    write_case("enumerate_batches", """
# tf.data.Dataset.range(7).batch(3).enumerate(start=-2): one index per batch
pipeline p = range(7) | batch(3) | enumerate(start = -2)
""", run_tf(enumerated(range_ds(7).batch(3), -2)), "range(7).batch(3).enumerate(-2)")
    write_case("enumerate_repeat", """
# tf.data.Dataset.range(3).enumerate().repeat(2): the count restarts with each pass
pipeline p = range(3) | enumerate() | repeat(2)
""", run_tf(enumerated(range_ds(3)).repeat(2)), "range(3).enumerate().repeat(2)")
    write_case("enumerate_empty", """
# tf.data.Dataset.range(0).enumerate()
pipeline p = range(0) | enumerate()
""", run_tf(enumerated(range_ds(0))), "range(0).enumerate()")


def choice(n, mul, mod):
    """The index pipeline range(n) | map(i: value * mul % mod), in both spellings."""
    spec = f"range({n}) | map(r => {{ i: r.value * {mul} % {mod} }})"
    return spec, tf.data.Dataset.range(n).map(lambda x: x * mul % mod)


@case
def choose_from():
    datasets = ((10, 14), (20, 26), (30, 31))
    spec_list = "[" + ", ".join(ranges_spec(d) for d in datasets) + "]"
    for name, (n, mul, mod), stop in (("alternate", (8, 1, 2), True), ("stop_on_empty", (14, 5, 3), True),
                                      ("skip_empty", (14, 5, 3), False), ("index_ends_first", (3, 1, 2), True),
                                      ("empty_index", (0, 1, 2), True)):
        index_spec, index_tf = choice(n, mul, mod)
        option = "" if stop else ", stop_on_empty = false"
        write_case(f"choose_from_{name}", f"""
# tf.data.Dataset.choose_from_datasets([range{datasets[0]}, range{datasets[1]}, range{datasets[2]}],
#     range({n}).map(x * {mul} % {mod}), stop_on_empty_dataset={stop})
pipeline p = choose_from({spec_list}, {index_spec}{option})
""", run_tf(tf.data.Dataset.choose_from_datasets([range_ds(*d) for d in datasets], index_tf,
                                                 stop_on_empty_dataset=stop)),
                   f"choose_from_datasets over 3 ranges, index range({n}) * {mul} % {mod}, stop {stop}")
    index_spec, index_tf = choice(5, 1, 5)
    ds = tf.data.Dataset.choose_from_datasets([range_ds(10, 14), range_ds(20, 26)], index_tf)
    write_case("choose_from_index_out_of_range", f"""
# The third index is 2, and there are 2 datasets: tf.data fails there
pipeline p = choose_from([range(10, 14), range(20, 26)], {index_spec})
""", None, "an index that names no dataset", options={"expect_error": 1, "tf_error": expect_tf_error(ds)})


def weights_spec(weights):
    """sample_from's weights as the spec writes them."""
    return "[" + ", ".join(repr(float(w)) for w in weights) + "]"


@case
def sample_from():
    # sample_from_datasets draws TensorFlow's own random stream: pipec reproduces it, so the elements
    # must be the same for the same seed. Long streams are batched, so a case stays a few files.
    three = ((0, 60), (100, 160), (200, 230))
    for seed in (5, 42, 123456789, -3, 2**40):
        write_case(f"sample_from_seed_{seed}".replace("-", "minus_"), f"""
# tf.data.Dataset.sample_from_datasets([range{three[0]}, range{three[1]}, range{three[2]}],
#     weights=[0.2, 0.5, 0.3], seed={seed}).batch(50)
pipeline p = sample_from([{", ".join(ranges_spec(d) for d in three)}], weights = [0.2, 0.5, 0.3], seed = {seed}) | batch(50)
""", run_tf(tf.data.Dataset.sample_from_datasets([range_ds(*d) for d in three], [0.2, 0.5, 0.3], seed=seed).batch(50)),
                   f"sample_from_datasets over 3 ranges, weights 0.2 0.5 0.3, seed {seed}")
    for name, datasets, weights, stop, seed in (
            ("stop_on_empty", ((0, 5), (100, 130)), (0.5, 0.5), True, 7),
            ("zero_weight", ((0, 20), (100, 120), (200, 220)), (0.5, 0.0, 0.5), False, 3),
            ("equal_weights", ((0, 30), (100, 130), (200, 230)), None, False, 11),
            ("one_dataset", ((0, 5),), (2.0,), False, 1),
            ("empty_datasets", ((0, 0), (0, 0)), (1.0, 3.0), False, 1),
            ("an_empty_dataset_stops", ((0, 0), (100, 140)), (0.1, 0.9), True, 9),
            ("tiny_weight", ((0, 40), (100, 140)), (1e-3, 1.0), False, 77)):
        option = "" if weights is None else f", weights = {weights_spec(weights)}"
        option += ", stop_on_empty = true" if stop else ""
        write_case(f"sample_from_{name}", f"""
# tf.data.Dataset.sample_from_datasets([{", ".join(f"range{d}" for d in datasets)}], weights={weights},
#     seed={seed}, stop_on_empty_dataset={stop}).batch(16)
pipeline p = sample_from([{", ".join(ranges_spec(d) for d in datasets)}]{option}, seed = {seed}) | batch(16)
""", run_tf(tf.data.Dataset.sample_from_datasets([range_ds(*d) for d in datasets], None if weights is None else
                                                 list(weights), seed=seed, stop_on_empty_dataset=stop).batch(16)),
                   f"sample_from_datasets over {len(datasets)} ranges, weights {weights}, seed {seed}, stop {stop}")
    write_case("sample_from_repeat", """
# tf.data.Dataset.sample_from_datasets([range(4), range(100, 104)], [0.3, 0.7], seed=2).repeat(2).batch(16):
# each pass draws the same choices
pipeline p = sample_from([range(4), range(100, 104)], weights = [0.3, 0.7], seed = 2) | repeat(2) | batch(16)
""", run_tf(tf.data.Dataset.sample_from_datasets([range_ds(4), range_ds(100, 104)], [0.3, 0.7], seed=2)
            .repeat(2).batch(16)), "sample_from_datasets(...).repeat(2): the same choices each pass")
    write_case("sample_from_infinite", """
# tf.data.Dataset.sample_from_datasets([range(10).repeat(), range(100, 110).repeat()], [0.9, 0.1],
#     seed=31).take(400).batch(100)
pipeline p = sample_from([range(10) | repeat(), range(100, 110) | repeat()], weights = [0.9, 0.1], seed = 31)
  | take(400) | batch(100)
""", run_tf(tf.data.Dataset.sample_from_datasets([range_ds(10).repeat(), range_ds(100, 110).repeat()], [0.9, 0.1],
                                                 seed=31).take(400).batch(100)),
               "sample_from_datasets over two infinite datasets, 400 draws")
    write_case("sample_from_fields_by_name", """
# Dict elements whose keys are written in another order: joined by key
pipeline p = sample_from([range(6) | map(r => { a: r.value, b: f32(r.value) * 0.5 }),
                          range(7, 12) | map(r => { b: f32(r.value), a: r.value * 2 })], weights = [1.0, 2.0], seed = 4)
""", run_tf(tf.data.Dataset.sample_from_datasets([
        tf.data.Dataset.range(6).map(lambda x: {"a": x, "b": tf.cast(x, tf.float32) * 0.5}),
        tf.data.Dataset.range(7, 12).map(lambda x: {"b": tf.cast(x, tf.float32), "a": x * 2})], [1.0, 2.0], seed=4)),
               "dicts {a, b} sampled with dicts {b, a}")


def resample_input(n, repeat=False):
    """rejection_resample's input: {v, w} from range(n) (forever with `repeat`), v scattered over [0, 1000)."""
    ds = tf.data.Dataset.range(n)
    if repeat:
        ds = ds.repeat()
    return ds.map(lambda x: {"v": (x * 7919) % 1000, "w": x})


def resample_tf(ds, classes, target, initial, seed):
    """tf.data's rejection_resample with class v % classes, its (class, element) made the element again."""
    return ds.rejection_resample(lambda d: tf.cast(d["v"] % classes, tf.int32), target, initial, seed=seed) \
        .map(lambda c, d: d)


@case
def rejection_resample():
    # The filter's stateful uniform draws, the estimate in batches of 32 and the mixing's draws are all
    # TensorFlow's: pipec reproduces them, so the elements must be the same for the same seed.
    for name, n, classes, target, initial, seeds in (
            ("estimated", 200, 3, [0.2, 0.3, 0.5], None, (5, 42, 123456789, -3, 2**40)),
            ("initial", 200, 3, [0.2, 0.3, 0.5], [0.3, 0.3, 0.4], (5, 7, 2**40)),
            ("four_classes", 300, 4, [0.1, 0.2, 0.3, 0.4], None, (11,)),
            ("target_zero", 150, 3, [0.0, 0.5, 0.5], None, (3, 8)),
            ("target_zero_initial", 150, 3, [0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], (3,)),
            ("initial_zero", 120, 2, [0.5, 0.5], [1.0, 0.0], (4,)),
            ("initial_is_target", 50, 2, [0.5, 0.5], [0.5, 0.5], (1,)),
            ("one_class", 70, 1, [1.0], None, (9,)),
            ("one_class_initial", 70, 1, [1.0], [1.0], (9,)),
            ("shorter_than_a_batch", 20, 2, [0.7, 0.3], None, (6,)),
            ("empty", 0, 2, [0.5, 0.5], None, (1,))):
        for seed in seeds:
            case_name = f"rejection_resample_{name}" + (f"_seed_{seed}".replace("-", "minus_") if len(seeds) > 1 else "")
            option = "" if initial is None else f", initial_dist = {weights_spec(initial)}"
            write_case(case_name, f"""
# tf.data.Dataset.range({n}).map(lambda x: {{"v": (x * 7919) % 1000, "w": x}})
#     .rejection_resample(lambda d: tf.cast(d["v"] % {classes}, tf.int32), {target}, {initial}, seed={seed})
#     .map(lambda c, d: d).batch(50)
pipeline p = range({n}) | map(r => {{ v: (r.value * 7919) % 1000, w: r.value }})
  | rejection_resample(class_fn = r => r.v % {classes}, target_dist = {weights_spec(target)}{option}, seed = {seed})
  | batch(50)
""", run_tf(resample_tf(resample_input(n), classes, target, initial, seed).batch(50)),
                       f"rejection_resample of {n} elements, {classes} classes, target {target}, initial {initial}, "
                       f"seed {seed}")
    write_case("rejection_resample_infinite", """
# tf.data.Dataset.range(10).repeat().map(...).rejection_resample(lambda d: d["v"] % 2, [0.8, 0.2],
#     seed=13).map(lambda c, d: d).take(400).batch(100): the estimate goes on with the input
pipeline p = range(10) | repeat() | map(r => { v: (r.value * 7919) % 1000, w: r.value })
  | rejection_resample(class_fn = r => r.v % 2, target_dist = [0.8, 0.2], seed = 13) | take(400) | batch(100)
""", run_tf(resample_tf(resample_input(10, repeat=True), 2, [0.8, 0.2], None, 13).take(400).batch(100)),
               "rejection_resample of an infinite input, 400 elements")
    ds = resample_tf(resample_input(40), 3, [0.5, 0.5], None, 2)
    write_case("rejection_resample_class_out_of_range", """
# tf.data.Dataset.range(40).map(...).rejection_resample(lambda d: d["v"] % 3, [0.5, 0.5], seed=2): class 2
# names no chance of target_dist (tf.data's gather of the acceptance fails)
pipeline p = range(40) | map(r => { v: (r.value * 7919) % 1000, w: r.value })
  | rejection_resample(class_fn = r => r.v % 3, target_dist = [0.5, 0.5], seed = 2)
""", None, "a class outside [0, number of classes)",
               options={"expect_error": 1, "tf_error": re.sub(r"^.*(?=indices = )", "", expect_tf_error(ds))})


def windowed(ds, size, shift=None, stride=1, drop=False):
    """tf.data's window(...) with each window batched, as pipec's window yields it."""
    return ds.window(size, shift, stride, drop).flat_map(lambda w: tf.data.Dataset.zip(w).batch(size))


def window_spec(size, shift, stride, drop):
    """pipec's window(...) call for the same arguments."""
    args = [str(size)] + ([f"shift = {shift}"] if shift is not None else []) + \
        ([f"stride = {stride}"] if stride != 1 else []) + (["drop_remainder = true"] if drop else [])
    return f"window({', '.join(args)})"


@case
def window():
    for name, n, size, shift, stride, drop in (
            ("3", 7, 3, None, 1, False), ("3_shift_2", 7, 3, 2, 1, False), ("shift_1", 5, 3, 1, 1, False),
            ("stride_2", 10, 3, 1, 2, False), ("stride_2_drop", 10, 3, 1, 2, True),
            ("longer_than_data", 4, 10, None, 1, False), ("longer_than_data_drop", 4, 10, None, 1, True),
            ("shift_beyond_size", 13, 2, 5, 1, False), ("shift_beyond_size_drop", 13, 2, 5, 3, True),
            ("empty", 0, 3, None, 1, False), ("one", 6, 1, None, 1, False)):
        write_case(f"window_{name}", f"""
# tf.data.Dataset.range({n}).window({size}, shift={shift}, stride={stride}, drop_remainder={drop})
#     .flat_map(lambda w: w.batch({size}))
pipeline p = range({n}) | {window_spec(size, shift, stride, drop)}
""", run_tf(windowed(range_ds(n), size, shift, stride, drop)),
                   f"range({n}).window({size}, {shift}, {stride}, {drop}), each window batched")
    write_case("window_of_batches", """
# Windows of batches: each element is a batch of 2, each window stacks 3 of them
pipeline p = range(12) | batch(2, drop_remainder = true) | window(3, shift = 2)
""", run_tf(windowed(range_ds(12).batch(2, drop_remainder=True), 3, 2)), "range(12).batch(2, True).window(3, 2)")
    write_case("window_fields", """
# Two fields, windowed together
pipeline p = range(9) | map(r => { a: r.value, b: f32(r.value) * 0.5 }) | window(4, shift = 3)
""", run_tf(windowed(tf.data.Dataset.range(9).map(lambda x: {"a": x, "b": tf.cast(x, tf.float32) * 0.5}), 4, 3)),
               "dicts {a, b} windowed by 4, shift 3")
    write_case("window_then_repeat", """
# The windows of one pass, twice
pipeline p = range(5) | window(2, shift = 3) | repeat(2)
""", run_tf(windowed(range_ds(5), 2, 3).repeat(2)), "range(5).window(2, 3).repeat(2)")
    write_case("window_across_passes", """
# Windows of a repeated input run across the passes' boundary
pipeline p = range(5) | repeat(2) | window(4, shift = 3)
""", run_tf(windowed(range_ds(5).repeat(2), 4, 3)), "range(5).repeat(2).window(4, 3)")
    write_case("window_unbatch", """
# window then unbatch: every element once per window that holds it
pipeline p = range(6) | window(3, shift = 2, stride = 2) | unbatch()
""", run_tf(windowed(range_ds(6), 3, 2, 2).unbatch()), "range(6).window(3, 2, 2) unbatched")


@case
def scan():
    i64 = lambda v: tf.constant(v, tf.int64)  # noqa: E731  (pipec's integer literals are i64)
    cases = (
        ("running_sum", 10, "{ total: 0 }, (s, r) => { total: s.total + r.value, value: r.value }",
         {"total": i64(0)}, lambda s, e: ({"total": s["total"] + e["value"]},
                                          {"total": s["total"] + e["value"], "value": e["value"]})),
        ("fibonacci", 12, "{ a: 0, b: 1 }, (s, r) => { a: s.b, b: s.a + s.b, x: s.a * r.value }",
         {"a": i64(0), "b": i64(1)}, lambda s, e: ({"a": s["b"], "b": s["a"] + s["b"]},
                                                    {"a": s["b"], "b": s["a"] + s["b"], "x": s["a"] * e["value"]})),
        ("moving_average", 9, "{ m: 0.0 }, (s, r) => { m: 0.75 * s.m + 0.25 * f64(r.value) }",
         {"m": tf.constant(0.0, tf.float64)},
         lambda s, e: ({"m": 0.75 * s["m"] + 0.25 * tf.cast(e["value"], tf.float64)},
                       {"m": 0.75 * s["m"] + 0.25 * tf.cast(e["value"], tf.float64)})),
        ("last_three", 7, "{ h: [0, 0, 0] }, (s, r) => { h: [s.h[1], s.h[2], r.value], n: r.value }",
         {"h": tf.constant([0, 0, 0], tf.int64)},
         lambda s, e: ({"h": tf.stack([s["h"][1], s["h"][2], e["value"]])},
                       {"h": tf.stack([s["h"][1], s["h"][2], e["value"]]), "n": e["value"]})),
        ("empty", 0, "{ total: 0 }, (s, r) => { total: s.total + r.value }",
         {"total": i64(0)}, lambda s, e: ({"total": s["total"] + e["value"]}, {"total": s["total"] + e["value"]})),
    )
    for name, n, spec_args, init, fn in cases:
        write_case(f"scan_{name}", f"""
# tf.data.Dataset.range({n}).scan(initial_state, scan_func): the fields of the returned record named like
# the state's are the next state, the record is the element
pipeline p = range({n}) | scan({spec_args})
""", run_tf(range_ds(n).scan(init, fn)), f"range({n}).scan(...) ({name})")
    write_case("scan_of_batches", """
# The state carried from batch to batch: a running total of the batches' sums
pipeline p = range(10) | batch(3) | scan({ total: 0 }, (s, r) => { total: s.total + sum(r.value), value: r.value })
""", run_tf(range_ds(10).batch(3).scan({"total": i64(0)}, lambda s, e: (
        {"total": s["total"] + tf.reduce_sum(e["value"])},
        {"total": s["total"] + tf.reduce_sum(e["value"]), "value": e["value"]}))), "range(10).batch(3).scan(...)")
    write_case("scan_repeat", """
# Each pass of the repeat starts from the initial state again
pipeline p = range(4) | scan({ total: 0 }, (s, r) => { total: s.total + r.value }) | repeat(2)
""", run_tf(range_ds(4).scan({"total": i64(0)}, lambda s, e: ({"total": s["total"] + e["value"]},
                                                              {"total": s["total"] + e["value"]})).repeat(2)),
               "range(4).scan(running sum).repeat(2)")


@case
def rebatch():
    for name, n, first, size, drop in (("3", 10, 4, 3, False), ("3_drop", 10, 4, 3, True), ("bigger", 10, 2, 5, False),
                                       ("one", 5, 3, 1, False), ("empty", 0, 2, 3, False)):
        option = ", drop_remainder = true" if drop else ""
        write_case(f"rebatch_{name}", f"""
# tf.data.Dataset.range({n}).batch({first}).rebatch({size}, drop_remainder={drop})
pipeline p = range({n}) | batch({first}) | rebatch({size}{option})
""", run_tf(range_ds(n).batch(first).rebatch(size, drop_remainder=drop)),
                   f"range({n}).batch({first}).rebatch({size}, {drop})")
    write_case("rebatch_rows_of_two", """
# Elements of two values each, batched by 5 and rebatched by 4
pipeline p = range(12) | map(r => { x: [r.value, r.value * 10] }) | batch(5) | rebatch(4)
""", run_tf(tf.data.Dataset.range(12).map(lambda v: {"x": tf.stack([v, v * 10])}).batch(5).rebatch(4)),
               "range(12) as [v, 10 v], batch(5).rebatch(4)")


def raw_case(files, make_ds):
    """Writes `files` (name -> bytes) to a scratch folder and runs make_ds(sorted paths) there."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for rel, content in sorted(files.items()):
            with open(os.path.join(d, rel), "wb") as f:
                f.write(content)
            paths.append(os.path.join(d, rel))
        return run_tf(make_ds(paths))


def compressed(data, kind):
    """`data` as gzip (a fixed mtime, so the bytes do not change) or zlib."""
    import gzip
    import zlib
    return gzip.compress(data, mtime=0) if kind == "gzip" else zlib.compress(data)


@case
def text_lines():
    for name, files, kind in (
            ("two_files", {"a.txt": b"one\ntwo\n", "b.txt": b"three\r\nfour"}, None),
            ("empty_lines_and_returns", {"a.txt": b"\n\nx\r\n\r\n\r", "b.txt": b"", "c.txt": b"\n",
                                         "d.txt": b"last\r"}, None),
            ("gzip", {"a.txt": b"alpha\nbeta\r\ngamma", "b.txt": b"\n" * 3 + b"delta\n"}, "gzip"),
            ("zlib", {"a.txt": b"".join(b"line %d\n" % i for i in range(40))}, "zlib")):
        stored = {rel: compressed(c, kind) if kind else c for rel, c in files.items()}
        option = f", compression = {kind}" if kind else ""
        elements = raw_case(stored, lambda paths: tf.data.TextLineDataset(
            paths, compression_type=(kind or "").upper()).map(lambda x: {"line": x}))
        write_case(f"text_lines_{name}", f"""
# tf.data.TextLineDataset(sorted(glob("data/*.txt")), compression_type="{(kind or "").upper()}")
pipeline p = text_lines("data/*.txt"{option})
""", elements, f"TextLineDataset over {len(files)} files ({name})", raw_files=stored)


def text_case(name, text, spec_map, tf_map, description):
    """A case over one text file data/a.txt: text_lines | map(spec_map) against TextLineDataset.map(tf_map);
    when TensorFlow fails on the text, the case expects pipec to fail too."""
    files = {"a.txt": text}
    spec = f"""
# tf.data.TextLineDataset(["data/a.txt"]).map(...)
pipeline p = text_lines("data/*.txt") | map(r => {spec_map})
"""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.txt")
        with open(path, "wb") as f:
            f.write(text)
        ds = tf.data.TextLineDataset([path]).map(tf_map)
        try:
            elements = run_tf(ds)
        except tf.errors.OpError:
            write_case(f"strings_{name}", spec, None, description,
                       options={"expect_error": 1,
                                "tf_error": re.sub(r"^.*?(?=StringToNumberOp)", "", expect_tf_error(ds))},
                       raw_files=files)
            return
    write_case(f"strings_{name}", spec, elements, description, raw_files=files)


@case
def strings():
    S = tf.strings
    text_case("strip", b"  a b  \n\tx\t\n\n   \n\x0b\x0cy\r\nz\xc2\xa0\n\x00 q \n",
              "{ s: strip(r.line) }", lambda x: {"s": S.strip(x)},
              "tf.strings.strip: spaces, tabs, \\v \\f, empty and blank lines; a NUL and UTF-8's no-break space stay")
    text_case("split_whitespace", b" 12 7 301 4 \n\t5\t6\n\n   \na\x0bb\x0cc\n1  2   3\nsolo\n",
              "{ t: split(r.line) }", lambda x: {"t": S.split(x)},
              "tf.strings.split(sep=None): runs of whitespace, no empty pieces, [] for empty and blank lines")
    text_case("split_sep", b"a,,b,\n\n,\nx\n1,2,3\n,,\n",
              "{ t: split(r.line, sep = \",\") }", lambda x: {"t": S.split(x, sep=",")},
              "tf.strings.split(sep=','): empty pieces kept, [''] for an empty line")
    text_case("split_several_separators", b" a  b \na<>b<><>c\naaaa\n\n",
              "{ a: split(r.line, sep = \"<>\"), b: split(r.line, sep = \" \"), c: split(r.line, sep = \"aa\") }",
              lambda x: {"a": S.split(x, sep="<>"), "b": S.split(x, sep=" "), "c": S.split(x, sep="aa")},
              "tf.strings.split with a two-byte separator, a space and an overlapping one")
    floats = (b"1\n -2.5 \n1e3\n-1.5E-2\n0x1.8p1\n0x10\n-0X1A\ninf\n-Infinity\nINF\nnan\nNaN\n1e40\n1e-50\n.5\n"
              b"+4\n-0\n3.4028235e38\n3.4028236e38\n1e-40\n0.1\n\t7\n1.8e308\n4e-320\n")
    text_case("to_number_f32", floats, "{ f: to_number(r.line) }", lambda x: {"f": S.to_number(x)},
              "tf.strings.to_number to float32: signs, exponents, hex, inf/nan in any case, overflow to inf")
    text_case("to_number_f64", floats, "{ f: to_number(r.line, dtype = f64) }",
              lambda x: {"f": S.to_number(x, out_type=tf.float64)},
              "tf.strings.to_number to float64: the same lines")
    text_case("to_number_i32", b"0\n-7\n +42 \n2147483647\n-2147483648\n007\n\t5\x0b\n-0\n",
              "{ n: to_number(r.line, i32) }", lambda x: {"n": S.to_number(x, out_type=tf.int32)},
              "tf.strings.to_number to int32: signs, leading zeros, whitespace around, both ends of the range")
    text_case("to_number_i64", b"9223372036854775807\n-9223372036854775808\n2147483648\n12\n",
              "{ n: to_number(r.line, dtype = i64) }", lambda x: {"n": S.to_number(x, out_type=tf.int64)},
              "tf.strings.to_number to int64: both ends of the range")
    text_case("tokens_i64", b"12 7 301 4\n  5\t6 \n\n-3 +8 0\n",
              "{ ids: to_number(split(strip(r.line)), i64) }",
              lambda x: {"ids": S.to_number(S.split(S.strip(x)), out_type=tf.int64)},
              "a line of token ids to an int64 vector: strip, split, to_number")
    text_case("to_number_i32_overflow", b"1\n2147483648\n", "{ n: to_number(r.line, i32) }",
              lambda x: {"n": S.to_number(x, out_type=tf.int32)}, "2^31 is not an int32: an error")
    for name, text, dtype, tf_dtype in (("i64_exponent", b"12\n1e3\n", "i64", tf.int64),
                                        ("i64_hex", b"0x10\n", "i64", tf.int64),
                                        ("f32_empty", b"1\n\n", "f32", tf.float32),
                                        ("f64_letters", b"1.5\n1.5x\n", "f64", tf.float64)):
        text_case(f"to_number_error_{name}", text, f"{{ n: to_number(r.line, {dtype}) }}",
                  lambda x, t=tf_dtype: {"n": S.to_number(x, out_type=t)}, f"not a {dtype} number: an error")


def records_bytes(n, size, seed):
    return bytes((seed * 31 + i * 7) % 256 for i in range(n * size))


@case
def fixed_length_records():
    for name, files, record, header, footer, kind in (
            ("header_footer", {"a.bin": b"HH" + records_bytes(3, 4, 1) + b"F", "b.bin": b"HH" + records_bytes(2, 4, 2) + b"F"},
             4, 2, 1, None),
            ("plain", {"a.bin": records_bytes(5, 3, 3)}, 3, 0, 0, None),
            ("empty_body", {"a.bin": b"HHHF", "b.bin": b"HHH" + records_bytes(1, 2, 4) + b"F"}, 2, 3, 1, None),
            ("gzip", {"a.bin": b"head" + records_bytes(6, 5, 5) + b"foot"}, 5, 4, 4, "gzip"),
            ("zlib", {"a.bin": records_bytes(4, 8, 6) + b"ff"}, 8, 0, 2, "zlib")):
        stored = {rel: compressed(c, kind) if kind else c for rel, c in files.items()}
        args = [f"record_bytes = {record}"] + ([f"header_bytes = {header}"] if header else []) + \
            ([f"footer_bytes = {footer}"] if footer else []) + ([f"compression = {kind}"] if kind else [])
        elements = raw_case(stored, lambda paths: tf.data.FixedLengthRecordDataset(
            paths, record, header, footer, compression_type=(kind or "").upper()).map(
                lambda x: {"record": tf.io.decode_raw(x, tf.uint8)}))
        write_case(f"fixed_length_records_{name}", f"""
# tf.data.FixedLengthRecordDataset(sorted(glob("data/*.bin")), {record}, {header}, {footer},
#     compression_type="{(kind or "").upper()}"), each record decode_raw'd to uint8
pipeline p = fixed_length_records("data/*.bin", {", ".join(args)})
""", elements, f"FixedLengthRecordDataset ({name})", raw_files=stored)
    for name, content, kind in (("not_whole", b"HH" + records_bytes(2, 4, 7) + b"xyF", None),
                                ("not_whole_gzip", b"HH" + records_bytes(2, 4, 7) + b"xyF", "gzip")):
        stored = {"a.bin": compressed(content, kind) if kind else content}
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.bin")
            with open(path, "wb") as f:
                f.write(stored["a.bin"])
            error = expect_tf_error(tf.data.FixedLengthRecordDataset([path], 4, 2, 1,
                                                                     compression_type=(kind or "").upper()))
        option = f", compression = {kind}" if kind else ""
        write_case(f"fixed_length_records_{name}", f"""
# The body (after a 2-byte header, before a 1-byte footer) is 10 bytes, not a whole number of 4-byte records:
# tf.data fails
pipeline p = fixed_length_records("data/*.bin", record_bytes = 4, header_bytes = 2, footer_bytes = 1{option})
""", None, "a body that is not a whole number of records", raw_files=stored,
                   options={"expect_error": 1, "tf_error": re.sub(r"\"/[^\"]*/", "\"", error)})


# ---------------------------------------------------------------------------------------------------
# bucket_by_length and group_by_window


SEQS_SPEC_SOURCE = """
source rows = tfrecord("data/seqs.tfrecord") {
  id: i64
  tokens: i64[?]
  w: f32[?]
  name: bytes
}
"""

SEQS_FEATURES = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "tokens": tf.io.VarLenFeature(tf.int64),
    "w": tf.io.VarLenFeature(tf.float32),
    "name": tf.io.FixedLenFeature([], tf.string),
}


def seq_records(n, seed, max_len):
    """`n` records of token sequences of 0 to max_len values (and a float list of a third of that length,
    and a name), from a fixed seed."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        length = int(rng.integers(0, max_len + 1))
        tokens = [int(x) for x in rng.integers(1, 1000, length)]
        w = [float(np.float32(x)) for x in rng.normal(size=length // 3)]
        records.append(example(id=feature([i]), tokens=feature(tokens, "int64"), w=feature(w, "float"),
                               name=feature([f"s{i}".encode() * (1 + length % 3)])))
    return records


def seq_case(records, make_ds):
    """Runs make_ds(dataset of the parsed records) on `records` written to a scratch file."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "seqs.tfrecord")
        write_tfrecord(path, records)

        def parse(r):
            p = tf.io.parse_single_example(r, SEQS_FEATURES)
            return {"id": p["id"], "tokens": tf.sparse.to_dense(p["tokens"]), "w": tf.sparse.to_dense(p["w"]),
                    "name": p["name"]}
        return run_tf(make_ds(tf.data.TFRecordDataset(path).map(parse)))


def expect_seq_error(records, make_ds):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "seqs.tfrecord")
        write_tfrecord(path, records)

        def parse(r):
            p = tf.io.parse_single_example(r, SEQS_FEATURES)
            return {"id": p["id"], "tokens": tf.sparse.to_dense(p["tokens"]), "w": tf.sparse.to_dense(p["w"]),
                    "name": p["name"]}
        return expect_tf_error(make_ds(tf.data.TFRecordDataset(path).map(parse)))


def token_length(e):
    return tf.size(e["tokens"])


@case
def bucket_by_length():
    # name, records (n, seed, longest), boundaries, batch sizes, padding value, pad_to_bucket_boundary, drop
    for name, n, seed, longest, bounds, sizes, pad, to_boundary, drop in (
            ("3_buckets", 20, 1, 9, [3, 6], [2, 3, 2], None, False, False),
            ("4_buckets_pad", 30, 2, 12, [2, 4, 8], [3, 2, 2, 1], -1, False, False),
            ("seed3", 25, 3, 7, [4], [4, 3], None, False, False),
            ("one_bucket", 11, 4, 6, [100], [4, 4], 5, False, False),
            ("no_boundaries", 9, 15, 6, [], [4], None, False, False),
            ("longer_than_every_boundary", 14, 5, 15, [2, 4], [2, 2, 3], None, False, False),
            ("drop", 23, 6, 9, [3, 6], [2, 3, 4], None, False, True),
            ("to_boundary", 21, 7, 12, [4, 8, 13], [3, 2, 2, 1], None, True, False),
            ("to_boundary_drop", 21, 8, 12, [5, 13], [3, 2, 2], 9, True, True),
            ("empty", 0, 9, 5, [3], [2, 2], None, False, False),
            ("batch_1", 6, 10, 5, [3], [1, 1], None, False, False)):
        records = seq_records(n, seed, longest)
        args = [f"length = r => size(r.tokens)", f"boundaries = {bounds}", f"batch_sizes = {sizes}"]
        if pad is not None:
            args.append(f"padding_value = {pad}")
        if to_boundary:
            args.append("pad_to_bucket_boundary = true")
        if drop:
            args.append("drop_remainder = true")
        values = None
        if pad is not None:
            values = {"id": tf.constant(pad, tf.int64), "tokens": tf.constant(pad, tf.int64),
                      "w": tf.constant(float(pad), tf.float32), "name": tf.constant(b"")}
        expected = seq_case(records, lambda d: d.bucket_by_sequence_length(
            token_length, bounds, sizes, padding_values=values, pad_to_bucket_boundary=to_boundary,
            drop_remainder=drop))
        write_case(f"bucket_by_length_{name}", f"""
# {n} sequences of 0-{longest} tokens bucketed by length:
# tf.data's bucket_by_sequence_length(size(tokens), {bounds}, {sizes}, padding_values={pad},
#     pad_to_bucket_boundary={to_boundary}, drop_remainder={drop})
{SEQS_SPEC_SOURCE.strip()}
pipeline p = rows | bucket_by_length({", ".join(args)})
""", expected, f"seqs.tfrecord ({n} records, seed {seed}) bucket_by_sequence_length({bounds}, {sizes}, pad {pad}, "
                   f"to boundary {to_boundary}, drop {drop})", data_files={"seqs.tfrecord": records})
    records = seq_records(12, 11, 9)
    write_case("bucket_by_length_to_boundary_too_long", f"""
# pad_to_bucket_boundary with elements as long as the last boundary: tf.data fails padding that bucket
{SEQS_SPEC_SOURCE.strip()}
pipeline p = rows | bucket_by_length(length = r => size(r.tokens), boundaries = [4], batch_sizes = [2, 2], pad_to_bucket_boundary = true)
""", None, "pad_to_bucket_boundary with lengths >= the last boundary; tf.data fails: " + re.search(
        r"\[(When pad_to_bucket_boundary[^\]]*)\]", expect_seq_error(
            records, lambda d: d.bucket_by_sequence_length(token_length, [4], [2, 2], pad_to_bucket_boundary=True)))[1],
        data_files={"seqs.tfrecord": records}, options={"expect_error": 1})
    write_case("bucket_by_length_range", """
# Fixed-shape elements (no padding) bucketed by a computed length, across two passes of the input
pipeline p = range(17) | map(r => { v: r.value, x: [r.value, -r.value] }) | repeat(2) | bucket_by_length(length = r => r.v % 7, boundaries = [2, 5], batch_sizes = [3, 2, 4])
""", run_tf(tf.data.Dataset.range(17).map(lambda v: {"v": v, "x": tf.stack([v, -v])}).repeat(2)
            .bucket_by_sequence_length(lambda e: tf.cast(e["v"] % 7, tf.int32), [2, 5], [3, 2, 4])),
        "range(17) as {v, [v, -v]} repeated twice, bucketed by v % 7 with boundaries [2, 5] and sizes [3, 2, 4]")
    write_case("bucket_by_length_of_batches", f"""
# Batches bucketed by the length of their padded rows: the batch dimension is padded too (it is unknown)
{SEQS_SPEC_SOURCE.strip()}
pipeline p = rows | map(r => {{ tokens: r.tokens }}) | padded_batch(3) | bucket_by_length(length = r => size(r.tokens), boundaries = [10], batch_sizes = [2, 2])
""", seq_case(seq_records(16, 12, 5), lambda d: d.map(lambda e: {"tokens": e["tokens"]}).padded_batch(3)
              .bucket_by_sequence_length(token_length, [10], [2, 2])),
        "seqs.tfrecord ({tokens}) padded_batch(3), then bucketed by the padded batch's size",
        data_files={"seqs.tfrecord": seq_records(16, 12, 5)})


def grouped(ds, key, window, reduce):
    return ds.group_by_window(key_func=key, reduce_func=reduce, window_size=window)


@case
def group_by_window():
    i64 = lambda v: tf.constant(v, tf.int64)  # noqa: E731
    for name, n, key_spec, key, window, reduce_spec, reduce in (
            ("parity_4", 12, "r.value % 2", lambda e: e["value"] % 2, 4, "w => w | batch(4)",
             lambda k, w: w.batch(4)),
            ("mod3_batch2", 17, "r.value % 3", lambda e: e["value"] % 3, 5, "w => w | batch(2)",
             lambda k, w: w.batch(2)),
            ("mod3_batch2_drop", 17, "r.value % 3", lambda e: e["value"] % 3, 5,
             "w => w | batch(2, drop_remainder = true)", lambda k, w: w.batch(2, drop_remainder=True)),
            ("window_bigger_batch", 14, "r.value % 2", lambda e: e["value"] % 2, 3, "(k, w) => w | batch(5)",
             lambda k, w: w.batch(5)),
            ("negative_keys", 20, "r.value % 5 - 2", lambda e: e["value"] % 5 - i64(2), 3, "w => w | batch(3)",
             lambda k, w: w.batch(3)),
            ("window_1", 5, "r.value % 3", lambda e: e["value"] % 3, 1, "w => w | batch(1)",
             lambda k, w: w.batch(1)),
            ("one_key", 10, "0", lambda e: i64(0), 4, "w => w | batch(4)", lambda k, w: w.batch(4)),
            ("empty", 0, "r.value % 2", lambda e: e["value"] % 2, 2, "w => w | batch(2)", lambda k, w: w.batch(2))):
        write_case(f"group_by_window_{name}", f"""
# tf.data.Dataset.range({n}).group_by_window(key_func={key_spec}, window_size={window}, reduce_func={reduce_spec})
pipeline p = range({n}) | group_by_window(key = r => {key_spec}, window_size = {window}, reduce = {reduce_spec})
""", run_tf(grouped(range_ds(n), key, window, reduce)), f"range({n}) grouped by {key_spec}, windows of {window}, "
                   f"reduced by {reduce_spec}")
    for name, n, seed, window, args, values, size, drop in (
            ("padded", 19, 13, 3, "3", None, 3, False),
            ("padded_pad_drop", 25, 14, 4, "2, padding_value = -1, drop_remainder = true", -1, 2, True)):
        records = seq_records(n, seed, 8)
        pv = None
        if values is not None:
            pv = {"id": i64(values), "tokens": i64(values), "w": tf.constant(float(values), tf.float32),
                  "name": tf.constant(b"")}
        write_case(f"group_by_window_{name}", f"""
# Sequences grouped by the parity of their length, each window padded and batched
{SEQS_SPEC_SOURCE.strip()}
pipeline p = rows | group_by_window(key = r => size(r.tokens) % 2, window_size = {window}, reduce = w => w | padded_batch({args}))
""", seq_case(records, lambda d: grouped(d, lambda e: tf.cast(token_length(e) % 2, tf.int64), window,
                                         lambda k, w: w.padded_batch(size, padding_values=pv, drop_remainder=drop))),
                   f"seqs.tfrecord ({n} records, seed {seed}) grouped by size % 2, windows of {window}, "
                   f"padded_batch({args})", data_files={"seqs.tfrecord": records})
    write_case("group_by_window_repeat", """
# Groups fill across the two passes of the input
pipeline p = range(7) | repeat(2) | group_by_window(key = r => r.value % 3, window_size = 3, reduce = w => w | batch(3))
""", run_tf(grouped(range_ds(7).repeat(2), lambda e: e["value"] % 3, 3, lambda k, w: w.batch(3))),
               "range(7).repeat(2) grouped by value % 3, windows of 3")


# ---------------------------------------------------------------------------------------------------
# interleave


@case
def interleave():
    settings = {
        "il_456": [(1, 1), (2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (4, 5), (7, 2)],
        "il_edge": [(2, 1), (2, 2), (3, 1), (3, 4)],
    }
    for set_name, pairs in settings.items():
        files = interleave_files(set_name)
        lengths = INTERLEAVE_SETS[set_name]
        for cycle, block in pairs:
            def parse(r):
                p = tf.io.parse_single_example(r, {k: tf.io.FixedLenFeature([], tf.int64) for k in ("x", "file", "idx")})
                return {"x": p["x"], "file": p["file"], "idx": p["idx"]}
            ds = (tf.data.Dataset.from_tensor_slices(files)
                  .interleave(tf.data.TFRecordDataset, cycle_length=cycle, block_length=block)
                  .map(parse).batch(100))
            write_case(f"interleave_{set_name}_c{cycle}_b{block}", f"""
# {len(files)} files of {lengths} records (record j of file k: x = the file's length, file = k, idx = j),
# read cycle_length = {cycle} files at a time, block_length = {block} records from each in turn. The whole
# output is one batch so the order is one array per field.
source recs = tfrecord("../_data/{set_name}/f-*.tfrecord") {{
  x: i64
  file: i64
  idx: i64
}}
pipeline p = recs | interleave(cycle_length = {cycle}, block_length = {block}) | batch(100)
""", run_tf(ds), f"Dataset.from_tensor_slices(sorted files).interleave(TFRecordDataset, cycle_length={cycle}, "
                 f"block_length={block}) over files of {lengths} records, then batch(100)")


# flat_map and interleave with a function: a dataset per element


@case
def flat_map():
    """Dataset.flat_map and Dataset.interleave(fn): element v of range(1, n) becomes
    range(10 v, 10 v + v % 4), so the inner datasets have different lengths and v = 4, 8 give empty ones."""
    def outer(n):
        return tf.data.Dataset.range(1, n)

    def inner(v):
        return tf.data.Dataset.range(v * 10, v * 10 + v % 4).map(lambda x: {"value": x})
    outer_spec = "range(1, {n}) | map(r => {{ lo: r.value * 10, hi: r.value * 10 + r.value % 4 }})"
    write_case("flat_map_ranges", f"""
# tf.data.Dataset.range(1, 9).flat_map(lambda v: Dataset.range(10 v, 10 v + v % 4)): lengths 1, 2, 3, 0, 1, 2, 3, 0
pipeline p = {outer_spec.format(n=9)} | flat_map(r => range(r.lo, r.hi))
""", run_tf(outer(9).flat_map(inner)), "range(1, 9).flat_map(v => range(10 v, 10 v + v % 4))")
    write_case("flat_map_take_in_inner", """
# tf.data.Dataset.range(6).flat_map(lambda v: Dataset.range(v).take(2)): an inner pipeline with a stage
pipeline p = range(6) | flat_map(r => range(r.value) | take(2))
""", run_tf(tf.data.Dataset.range(6).flat_map(lambda v: tf.data.Dataset.range(v).take(2).map(
        lambda x: {"value": x}))), "range(6).flat_map(v => range(v).take(2))")
    for n, cycle, block in ((9, 2, 1), (9, 3, 2), (9, 2, 3), (4, 8, 1), (4, 8, 2), (1, 3, 1), (9, 1, 1)):
        write_case(f"interleave_fn_n{n - 1}_c{cycle}_b{block}", f"""
# tf.data.Dataset.range(1, {n}).interleave(lambda v: Dataset.range(10 v, 10 v + v % 4),
#                                          cycle_length={cycle}, block_length={block})
pipeline p = {outer_spec.format(n=n)} | interleave(r => range(r.lo, r.hi), cycle_length = {cycle}, block_length = {block})
""", run_tf(outer(n).interleave(inner, cycle_length=cycle, block_length=block)),
                   f"range(1, {n}).interleave(v => range(10 v, 10 v + v % 4), cycle_length={cycle}, "
                   f"block_length={block}): inner datasets of lengths 1, 2, 3, 0, ...")
    files = {"a.txt": b"a1\na2\na3\n", "b.txt": b"b1\n", "c.txt": b"", "d.txt": b"d1\nd2\nd3\nd4\nd5\n"}
    for cycle, block in ((2, 2), (3, 1)):
        elements = raw_case(files, lambda paths: tf.data.Dataset.from_tensor_slices(paths).interleave(
            lambda f: tf.data.TextLineDataset(f).take(4), cycle_length=cycle, block_length=block).map(
            lambda x: {"line": x}))
        write_case(f"interleave_fn_text_lines_c{cycle}_b{block}", f"""
# tf.data.Dataset.from_tensor_slices(sorted(glob("data/*.txt")))
#   .interleave(lambda f: TextLineDataset(f).take(4), cycle_length={cycle}, block_length={block})
pipeline p = files("data/*.txt") | interleave(f => text_lines(f.path) | take(4), cycle_length = {cycle}, block_length = {block})
""", elements, f"the lines of 4 files (3, 1, 0 and 5 lines), at most 4 of each, cycle_length={cycle}, "
               f"block_length={block}", raw_files=files)


@case
def parallel_reads():
    """TFRecordDataset(files, num_parallel_reads=N): a deterministic interleave of N files, block 1."""
    for set_name, reads in {"il_456": [2, 3, 4], "il_edge": [2, 3]}.items():
        files = interleave_files(set_name)
        lengths = INTERLEAVE_SETS[set_name]
        for n in reads:
            def parse(r):
                p = tf.io.parse_single_example(r, {k: tf.io.FixedLenFeature([], tf.int64) for k in ("x", "file", "idx")})
                return {"x": p["x"], "file": p["file"], "idx": p["idx"]}
            ds = tf.data.TFRecordDataset(files, num_parallel_reads=n).map(parse).batch(100)
            write_case(f"parallel_reads_{set_name}_n{n}", f"""
# {len(files)} files of {lengths} records (record j of file k: x = the file's length, file = k, idx = j),
# read with parallel_reads = {n}: {n} files at a time, one record from each in turn, read concurrently.
# The whole output is one batch so the order is one array per field.
source recs = tfrecord("../_data/{set_name}/f-*.tfrecord", parallel_reads = {n}) {{
  x: i64
  file: i64
  idx: i64
}}
pipeline p = recs | batch(100)
""", run_tf(ds), f"TFRecordDataset(sorted files, num_parallel_reads={n}) over files of {lengths} records, "
                 f"then batch(100)")


# ---------------------------------------------------------------------------------------------------
# parse_example on the external TFRecord files


def external_case(name, file, compression, schema, tf_features, stages_spec, stages_tf, description, post=None):
    """tf.io.parse_example (on batches, or per element) over shared/testdata/external/tfrecord/<file>."""
    path = os.path.join(EXTERNAL, file)
    comp = f", compression = {compression.lower()}" if compression else ""
    spec = f"""
# tf.io.parse_example over {file} (shared/testdata/external/tfrecord/), {description}
source recs = tfrecord("{EXTERNAL_FROM_SPEC}/{file}"{comp}) {{
{schema.strip()}
}}
pipeline p = recs{stages_spec}
"""
    ds = stages_tf(tf.data.TFRecordDataset(path, compression_type=compression or ""))
    batched = "batch" in stages_spec

    def parse(r):
        out = tf.io.parse_example(r, tf_features) if batched else tf.io.parse_single_example(r, tf_features)
        out = {k: (tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v) for k, v in out.items()}
        return post(out) if post else out
    write_case(name, spec, run_tf(ds.map(parse)), f"{file}: {description}")


def schema_and_features(fields):
    """fields: (name, pipec type, default or None, tf feature)."""
    lines = []
    for name, ptype, default, _ in fields:
        lines.append(f"  {name}: {ptype}" + (f" = {default}" if default is not None else ""))
    return "\n".join(lines), {name: feat for name, _, _, feat in fields}


@case
def external():
    F = tf.io.FixedLenFeature
    i64, f32, s = tf.int64, tf.float32, tf.string

    schema, feats = schema_and_features([
        ("x_float", "f32[10]", None, F([10], f32)),
        ("x_int", "i64[10]", None, F([10], i64)),
        ("x_byte", "bytes", None, F([], s)),
    ])
    external_case("parse_pytorch_example", "pytorch_data_example.tfrecord", None, schema, feats, "",
                  lambda d: d, "4 records, fixed-length float and int64 lists and a bytes value, one element each")
    external_case("parse_pytorch_example_batched", "pytorch_data_example.tfrecord", None, schema, feats,
                  " | batch(3)", lambda d: d.batch(3), "batched by 3 (parse_example on each batch)")

    schema, feats = schema_and_features([
        ("species", "i64", None, F([], i64)),
        ("culmen_depth_mm", "f32", None, F([], f32)),
        ("culmen_length_mm", "f32", None, F([], f32)),
        ("body_mass_g", "f32", None, F([], f32)),
        ("flipper_length_mm", "f32", None, F([], f32)),
    ])
    external_case("parse_tfx_penguin", "tfx_penguin_eval.tfrecord.gz", "GZIP", schema, feats, " | batch(32)",
                  lambda d: d.batch(32), "GZIP, 100 records batched by 32")

    schema, feats = schema_and_features([
        ("session_index", "i64", None, F([], i64)),
        ("cur_page", "bytes", None, F([], s)),
        ("label", "bytes", None, F([], s)),
    ])
    external_case("parse_tfx_next_page", "tfx_next_page.tfrecord.gz", "GZIP", schema, feats, " | batch(32)",
                  lambda d: d.batch(32), "GZIP with FNAME and mtime in the header, 100 records batched by 32")

    # Taxi: several features hold an empty Feature{} (no kind set) in some records, and
    # pickup_census_tract holds one in every record. tf.io.parse_example treats Feature{} as missing:
    # a FixedLenFeature takes its default (and fails without one), a VarLenFeature gives an empty row.
    taxi_fields = [
        ("company", "bytes", '""', F([], s, default_value=b"")),
        ("dropoff_census_tract", "i64", "-1", F([], i64, default_value=-1)),
        ("dropoff_community_area", "i64", "-1", F([], i64, default_value=-1)),
        ("dropoff_latitude", "f32", "-91.5", F([], f32, default_value=-91.5)),
        ("dropoff_longitude", "f32", "-181.25", F([], f32, default_value=-181.25)),
        ("fare", "f32", None, F([], f32)),
        ("payment_type", "bytes", None, F([], s)),
        ("pickup_census_tract", "i64", "0", F([], i64, default_value=0)),
        ("pickup_community_area", "i64", None, F([], i64)),
        ("pickup_latitude", "f32", None, F([], f32)),
        ("pickup_longitude", "f32", None, F([], f32)),
        ("tips", "f32", None, F([], f32)),
        ("trip_miles", "f32", None, F([], f32)),
        ("trip_seconds", "i64", None, F([], i64)),
        ("trip_start_day", "i64", None, F([], i64)),
        ("trip_start_hour", "i64", None, F([], i64)),
        ("trip_start_month", "i64", None, F([], i64)),
        ("trip_start_timestamp", "i64", None, F([], i64)),
    ]
    schema, feats = schema_and_features(taxi_fields)
    external_case("parse_tfx_taxi", "tfx_taxi_eval_00000.tfrecord.gz", "GZIP", schema, feats, " | batch(128)",
                  lambda d: d.batch(128),
                  "all 18 features, defaults where records hold an empty Feature{}; 424 records batched by 128")
    schema, feats = schema_and_features([
        ("trip_start_timestamp", "i64", None, F([], i64)),
        ("pickup_census_tract", "i64[?]", None, tf.io.VarLenFeature(i64)),
        ("dropoff_census_tract", "i64[?]", None, tf.io.VarLenFeature(i64)),
        ("dropoff_latitude", "f32[?]", None, tf.io.VarLenFeature(f32)),
    ])
    external_case("parse_tfx_taxi_varlen", "tfx_taxi_eval_00000.tfrecord.gz", "GZIP", schema, feats,
                  " | padded_batch(128)", lambda d: d.batch(128),
                  "empty Feature{} values read as variable-length rows (empty), padded per batch of 128 "
                  "(pickup_census_tract is empty in every record, so its batches are [n, 0]); tf.data side: "
                  "parse_example with VarLenFeature on batches, densified with 0")

    schema, feats = schema_and_features([
        ("image_floats", "f32[784]", None, F([784], f32)),
        ("image_class", "i64", None, F([], i64)),
    ])
    external_case("parse_tfx_mnist", "tfx_mnist.tfrecord", None, schema, feats, " | take(16) | batch(8)",
                  lambda d: d.take(16).batch(8), "the first 16 of 1,000 records, batched by 8")

    schema, feats = schema_and_features([
        ("image_raw", "bytes", None, F([], s)),
        ("height", "i64", None, F([], i64)),
        ("width", "i64", None, F([], i64)),
        ("depth", "i64", None, F([], i64)),
        ("label", "i64", None, F([], i64)),
    ])
    external_case("parse_lite_images", "tfrecord_lite_images.tfrecord", None, schema, feats, "", lambda d: d,
                  "2 records with JPEG bytes, one element each")

    schema, feats = schema_and_features([
        ("feature0", "i64", None, F([], i64)),
        ("feature1", "i64", None, F([], i64)),
        ("feature2", "bytes", None, F([], s)),
        ("feature3", "f32", None, F([], f32)),
    ])
    external_case("parse_lite_test", "tfrecord_lite_test.tfrecord", None, schema, feats, " | batch(10)",
                  lambda d: d.batch(10), "42 records batched by 10 (a remainder batch of 2)")


# ---------------------------------------------------------------------------------------------------
# tf.Example defaults, missing and empty features


@case
def parse_defaults():
    records = [
        example(a=feature([5]), b=feature([1.0, 2.0]), c=feature([b"x"]), v=feature([1, 2], "int64")),
        example(),                                                       # everything missing
        example(a=feature(kind="empty"), b=feature(kind="empty"), c=feature(kind="empty"), v=feature(kind="empty")),
        example(a=feature([-3]), c=feature([b""]), v=feature([], "int64")),  # empty string; empty var-len list
    ]
    feats = {
        "a": tf.io.FixedLenFeature([], tf.int64, default_value=7),
        "b": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.5, -0.5]),
        "c": tf.io.FixedLenFeature([], tf.string, default_value=b"dflt"),
        "v": tf.io.VarLenFeature(tf.int64),
    }
    path = os.path.join(FIXTURES, "parse_defaults", "data", "defaults.tfrecord")
    spec = """
# Defaults replace a missing feature and an empty Feature{} (no kind set); a variable-length feature
# that is missing or empty is an empty row. Records: all present / none / all Feature{} / partly empty.
source recs = tfrecord("data/defaults.tfrecord") {
  a: i64 = 7
  b: f32[2] = [0.5, -0.5]
  c: bytes = "dflt"
  v: i64[?]
}
pipeline p = recs
"""
    tmp = os.path.join(FIXTURES, "_tmp_defaults.tfrecord")
    write_tfrecord(tmp, records)

    def parse(r):
        out = tf.io.parse_single_example(r, feats)
        out["v"] = tf.sparse.to_dense(out["v"])
        return out
    elements = run_tf(tf.data.TFRecordDataset(tmp).map(parse))
    os.remove(tmp)
    write_case("parse_defaults", spec, elements, "defaults for missing and Feature{} values; empty var-len rows",
               data_files={"defaults.tfrecord": records})
    assert os.path.exists(path)

    # Where tf.data fails: pipec must fail too (exit status 1), not return defaults or garbage.
    error_cases = [
        ("parse_error_empty_list_with_default",
         "an int64_list with no values for a fixed scalar that has a default: TF does not use the default "
         "for a present but empty list, it fails",
         [example(a=feature([1])), example(a=feature([], "int64"))],
         "a: i64 = 7", {"a": tf.io.FixedLenFeature([], tf.int64, default_value=7)}),
        ("parse_error_missing_no_default", "a required feature missing from record 1",
         [example(a=feature([1])), example(b=feature([2]))],
         "a: i64", {"a": tf.io.FixedLenFeature([], tf.int64)}),
        ("parse_error_empty_feature_no_default", "an empty Feature{} for a required feature (no default)",
         [example(a=feature([1])), example(a=feature(kind="empty"))],
         "a: i64", {"a": tf.io.FixedLenFeature([], tf.int64)}),
        ("parse_error_wrong_kind", "a float_list where the schema says int64",
         [example(a=feature([1])), example(a=feature([1.5]))],
         "a: i64", {"a": tf.io.FixedLenFeature([], tf.int64)}),
        ("parse_error_wrong_count", "3 values where the schema says exactly 2",
         [example(a=feature([1, 2])), example(a=feature([1, 2, 3]))],
         "a: i64[2]", {"a": tf.io.FixedLenFeature([2], tf.int64)}),
        ("parse_error_wrong_byte_length", "a 3-byte value where the schema says bytes[4] (tf: decode_raw of a "
         "batch with a wrong-length value fails)",
         [example(a=feature([b"abcd"])), example(a=feature([b"abc"]))],
         "a: bytes[4]", None),
    ]
    for name, what, recs, field, tf_feats in error_cases:
        write_tfrecord(tmp, recs)
        if tf_feats is not None:
            msg = expect_tf_error(tf.data.TFRecordDataset(tmp).map(lambda r: tf.io.parse_single_example(r, tf_feats)))
        else:
            ds = tf.data.TFRecordDataset(tmp).batch(2).map(
                lambda r: tf.io.decode_raw(tf.io.parse_example(r, {"a": tf.io.FixedLenFeature([], tf.string)})["a"],
                                           tf.uint8))
            msg = expect_tf_error(ds)
        os.remove(tmp)
        write_case(name, f"""
# tf.data fails here ({what}); pipec must fail with a data error too.
source recs = tfrecord("data/records.tfrecord") {{
  {field}
}}
pipeline p = recs
""", None, what, data_files={"records.tfrecord": recs},
            options={"expect_error": 1, "tf_error": msg.replace("\n", " ")[:300]})


# ---------------------------------------------------------------------------------------------------
# Seed 002: the chess pipeline


def chess_records(n, rng):
    """Synthetic positions in the seed's format: d = 194 bytes (1552 bits), s = int64 score."""
    out = []
    scores = [0, 1, -1, 9, -9, 10, -10, 11, -11, 399, -400, 5000, -5000, 1 << 40, -(1 << 40)]
    for i in range(n):
        bits = (rng.random(1552) < rng.choice([0.04, 0.3, 0.5])).astype(np.uint8)
        bits[1547:] = 0                               # padding
        mate = i % 4 == 1 or i % 9 == 0
        bits[1546] = 1 if mate else 0
        if i < len(scores):
            s = scores[i]
        elif mate:
            s = int(rng.integers(-15, 16))
        else:
            s = int(rng.integers(-3000, 3001))
        out.append(example(d=feature([np.packbits(bits).tobytes()]), s=feature([s])))
    return out


@case
def chess_seed002():
    rng = np.random.default_rng(2002)
    batch = 8
    data = {"chess-00000-of-00002.tfrecord": chess_records(13, rng), "chess-00001-of-00002.tfrecord": chess_records(14, rng)}
    folder = os.path.join(FIXTURES, "chess_seed002")
    tmpdir = os.path.join(FIXTURES, "_tmp_chess")
    for rel, recs in data.items():
        write_tfrecord(os.path.join(tmpdir, rel), recs)
    files = sorted(glob.glob(os.path.join(tmpdir, "chess-*.tfrecord")))
    elements = {}
    for mode in ("original", "vectorized"):
        ds = tfdata_peer.seed_dataset(files, mode, batch_size=batch, shuffle=False, repeat=False, shuffle_files=False)
        out = []
        for d, s in ds:
            board, flags, score = tfdata_peer.iterator_to_data(d, s, batch)
            # The seed computes in float64; the spec types every field f32, so store TF's f64 values cast to f32.
            out.append({"board": board.numpy().astype(np.float32), "flags": flags.numpy().astype(np.float32),
                        "score": score.numpy().astype(np.float32)})
        elements[mode] = out
    shutil.rmtree(tmpdir)
    for a, b in zip(elements["original"], elements["vectorized"], strict=True):
        for k in a:
            assert np.array_equal(a[k], b[k]), "original and vectorized disagree"
    spec = """
# Seed 002 (examples/chess/chess.pipe) against the seed's own tf.data code (bench/chess/tfdata_peer.py):
# the same map, without the shuffle (its order comes from TF's RNG), repeat and prefetch, and with
# batches of 8 so the fixture stays small. 27 synthetic positions in 2 files: 3 batches, 3 dropped.
import chess_score

const BATCH = 8

source positions = tfrecord("data/chess-*.tfrecord") {
  d: bytes[194]   # 1552 packed bits
  s: i64          # engine score
}

const PLANE_ORDER = [0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23]
const PLANE_SIGN = [1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1]

pipeline train = positions
  | map(r => {
      bits = unpack_bits(r.d)                       # u8[1552]
      board = reshape(bits[0:1536], [8, 8, 24])
      board = f32(board[:, :, PLANE_ORDER]) * PLANE_SIGN
      flags = f32(bits[1536:1546])
      score = f32(combined_score(f64(r.s), f64(bits[1546])))
      { board, flags, score }
    })
  | batch(BATCH, drop_remainder = true)
"""
    write_case("chess_seed002", spec, elements["original"],
               "seed 002's per-element parse + iterator_to_data (TF2 port, float64, cast to f32), batches of 8; "
               "the vectorized version gives the same values", data_files=data)
    assert os.path.isdir(folder)


# ---------------------------------------------------------------------------------------------------


def check_with_pipec(pipec, names):
    """`pipec check` on every spec written (optional: --pipec PATH)."""
    bad = 0
    for name in names:
        spec = os.path.join(FIXTURES, name, "spec.pipe")
        r = subprocess.run([pipec, "check", spec], capture_output=True, text=True)
        if r.returncode != 0:
            bad += 1
            print(f"pipec check failed on {spec}:\n{r.stdout}{r.stderr}", file=sys.stderr)
    return bad


def main():
    ap = argparse.ArgumentParser(description="Regenerates tests/conformance/fixtures with TensorFlow.")
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="regenerate only these groups of cases")
    ap.add_argument("--pipec", help="a pipec binary: run `pipec check` on every spec written")
    args = ap.parse_args()

    print(f"TensorFlow {tf.__version__}, NumPy {np.__version__}")
    import make_npy_fixtures
    make_npy_fixtures.main()
    make_shared_data()
    for name in args.only or CASES:
        print(f"{name}:")
        CASES[name]()
    written = sorted(d for d in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, d, "spec.pipe")))
    if args.pipec and check_with_pipec(args.pipec, written):
        sys.exit(1)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(FIXTURES) for f in fs)
    nfiles = sum(len(fs) for _, _, fs in os.walk(FIXTURES))
    print(f"{len(written)} cases, {nfiles} files, {total / 1e6:.2f} MB in {FIXTURES}")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
