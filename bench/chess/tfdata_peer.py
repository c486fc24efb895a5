#!/usr/bin/env python3
"""The tf.data peer of the chess benchmark: seed 002's input pipeline, ported to TensorFlow 2.

  python3 bench/chess/tfdata_peer.py --files 'examples/chess/data/chess-*.tfrecord' --mode original --batches 400

--mode original    the seed's own code: TFRecordDataset -> shuffle(10000) -> map(parse_single_example) per
                   element -> batch(512, drop_remainder) -> repeat, then the seed's `iterator_to_data` on
                   each batch (decode_raw, unpack bits, 24-way stack of planes with signs, combined score,
                   all in float64).
--mode vectorized  the accepted answer's version: the same, but batch before a map that parses the whole
                   batch with tf.io.parse_example.

The port changes only what TF2 renamed (tf.parse_single_example -> tf.io.parse_single_example,
tf.decode_raw -> tf.io.decode_raw, tf.mod -> tf.math.floormod, tf.to_int32 -> tf.cast,
make_initializable_iterator -> iter). In the seed, `iterator_to_data` was part of the same TF1 graph as
`iterator.get_next()`, so each session.run pulled one batch and transformed it; here one tf.function
call does the same (get_next + iterator_to_data), which is TF2's equivalent of that session.run.

Prints one number on stdout: examples per second over --batches batches, measured after --warmup
batches (the shuffle buffer fills and the function is traced during the warm-up). Details go to stderr.

tests/conformance/make_fixtures.py imports `iterator_to_data` and `seed_dataset` from here, so the
conformance fixture chess_seed002 is produced by exactly this port.
"""
import argparse
import glob
import os
import random
import sys
import time

BATCH_SIZE = 512
SHUFFLE_BUFFER = 10000
# The seed's constants (the same as stdlib/chess_score.pipe's A, K and B).
VALUE_A = 0.5
VALUE_K = 400.0
VALUE_B = 10.0


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def keys_to_map():
    return {
        "d": tf.io.FixedLenFeature([], tf.string),  # data
        "s": tf.io.FixedLenFeature([], tf.int64),   # score
    }


def _parser(record):
    parsed = tf.io.parse_single_example(record, keys_to_map())
    return parsed["d"], parsed["s"]


def _batch_parser(record_batch):
    # NOTE: Use 'tf.io.parse_example()' to operate on batches of records.
    parsed = tf.io.parse_example(record_batch, keys_to_map())
    return parsed["d"], parsed["s"]


def seed_dataset(files, mode, batch_size=BATCH_SIZE, shuffle=True, repeat=True, shuffle_files=True):
    """The seed's init_tfrecord_dataset (mode 'original') or the accepted answer's (mode 'vectorized').

    shuffle/repeat/shuffle_files exist so the conformance fixture can read the files once, in order.
    """
    files_train = list(files)
    if shuffle_files:
        random.shuffle(files_train)
    ds = tf.data.TFRecordDataset(files_train)          # define data from randomly ordered files
    if shuffle:
        ds = ds.shuffle(buffer_size=SHUFFLE_BUFFER)    # select elements randomly from the buffer
    if mode == "original":
        ds = ds.map(_parser)                           # map them based on tfrecord format
        ds = ds.batch(batch_size, drop_remainder=True)  # group elements in batch
    elif mode == "vectorized":
        ds = ds.batch(batch_size, drop_remainder=True)  # group elements in batch
        ds = ds.map(_batch_parser)                     # map batches based on tfrecord format
    else:
        raise ValueError(f"unknown mode {mode!r}")
    if repeat:
        ds = ds.repeat()                               # iterate infinitely
    return ds


def iterator_to_data(data_packed, score_int, batch_size=BATCH_SIZE):
    """The seed's iterator_to_data, on one batch (d: string [B], s: int64 [B]).

    Returns data_board (B, 8, 8, 24), data_flags (B, 10) and combined_score (B,), all float64.
    """
    BATCH = batch_size
    b = tf.constant((128, 64, 32, 16, 8, 4, 2, 1), dtype=tf.uint8, name="unpacked_const")

    score = tf.cast(score_int, tf.float64, name="score_float")

    # https://stackoverflow.com/q/45454470/1090562
    data_unpacked = tf.reshape(
        tf.math.floormod(tf.cast(tf.io.decode_raw(data_packed, tf.uint8)[:, :, None] // b, tf.int32), 2),
        [BATCH, 1552], name="data_unpack")

    score_is_mate = tf.cast(tf.squeeze(tf.slice(data_unpacked, [0, 1546], [BATCH, 1])), tf.float64, name="is_mate")
    combined_score = (1 - score_is_mate) * VALUE_A * tf.tanh(score / VALUE_K) + score_is_mate * tf.sign(score) * (
        VALUE_A + (1 - VALUE_A) / (VALUE_B - 1) *
        tf.reduce_max(tf.stack([tf.zeros(BATCH, dtype=tf.float64), VALUE_B - tf.abs(score)]), axis=0))

    data_board = tf.reshape(tf.slice(data_unpacked, [0, 0], [BATCH, 8 * 8 * 24]), [BATCH, 8, 8, 24],
                            name="board_reshape")
    data_board = tf.cast(tf.stack([
        data_board[:, :, :, 0],
        data_board[:, :, :, 4],
        data_board[:, :, :, 8],
        data_board[:, :, :, 12],
        data_board[:, :, :, 16],
        data_board[:, :, :, 20],
        - data_board[:, :, :, 1],
        - data_board[:, :, :, 5],
        - data_board[:, :, :, 9],
        - data_board[:, :, :, 13],
        - data_board[:, :, :, 17],
        - data_board[:, :, :, 21],
        data_board[:, :, :, 2],
        data_board[:, :, :, 6],
        data_board[:, :, :, 10],
        data_board[:, :, :, 14],
        data_board[:, :, :, 18],
        data_board[:, :, :, 22],
        - data_board[:, :, :, 3],
        - data_board[:, :, :, 7],
        - data_board[:, :, :, 11],
        - data_board[:, :, :, 15],
        - data_board[:, :, :, 19],
        - data_board[:, :, :, 23],
    ], axis=3), tf.float64, name="board_compact")

    data_flags = tf.cast(tf.slice(data_unpacked, [0, 1536], [BATCH, 10]), tf.float64, name="flags")

    return data_board, data_flags, combined_score


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", required=True, help="glob of the chess TFRecord files")
    ap.add_argument("--mode", choices=["original", "vectorized"], required=True)
    ap.add_argument("--batches", type=int, default=200, help="batches to time (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=25, help="batches before timing starts")
    ap.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    ap.add_argument("--seed", type=int, default=0, help="seeds python's file shuffle and TF's global seed")
    args = ap.parse_args()

    files = sorted(glob.glob(args.files))
    if not files:
        sys.exit(f"tfdata_peer: no files match {args.files!r}")
    random.seed(args.seed)
    tf.random.set_seed(args.seed)

    ds = seed_dataset(files, args.mode, batch_size=args.batch_size)
    iterator = iter(ds)

    @tf.function
    def step(it):
        data_packed, score_int = next(it)
        return iterator_to_data(data_packed, score_int, args.batch_size)

    for _ in range(args.warmup):
        step(iterator)
    start = time.perf_counter()
    for _ in range(args.batches):
        board, flags, score = step(iterator)
    elapsed = time.perf_counter() - start
    examples = args.batches * args.batch_size
    rate = examples / elapsed
    print(f"tf.data {args.mode}: {args.batches} batches of {args.batch_size} in {elapsed:.3f} s "
          f"(TensorFlow {tf.__version__}, {len(files)} files)", file=sys.stderr)
    print(f"{rate:.1f}")


if __name__ == "__main__":
    main()
