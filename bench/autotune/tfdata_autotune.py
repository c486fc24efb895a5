#!/usr/bin/env python3
"""tf.data with AUTOTUNE on the work of the autotune benchmark's pipelines (bench/autotune/run.sh).

  tfdata_autotune.py chess        DATA_GLOB BATCHES THREADS
  tfdata_autotune.py deblur       DATA_DIR  BATCHES THREADS
  tfdata_autotune.py segmentation DATA_DIR  BATCHES THREADS

Each builds tf.data's version of the example's pipeline as pipec runs it, with every parallelism and
prefetch depth set to tf.data.AUTOTUNE (tf.data's own autotuner picks them while running):

  chess         examples/chess/chess.pipe: TFRecordDataset over the files in order, shuffle(10000),
                batch(512, drop_remainder), a map parsing and unpacking the whole batch (the seed's
                accepted answer, bench/chess/tfdata_peer.py's code, in float32 as chess.pipe makes it),
                repeat, prefetch
  deblur        examples/deblur/deblur.pipe (with repeat() before its prefetch, as the bench runs it):
                decode both JPEGs, cache(), one random 256x256 window for both and a random flip,
                shuffle(1024), [-1, 1] floats, batch(16, drop_remainder), repeat, prefetch
  segmentation  examples/segmentation/segmentation.pipe: shuffle(1000) of the path pairs, decode both
                PNGs and crop_or_pad to 512x512, the photo to f32 and the label one-hot over
                class_dict.csv's 32 colours, batch(3, drop_remainder), repeat, prefetch

THREADS 1 gives the dataset a private thread pool of one thread (and one thread per op); 0 leaves
tf.data's defaults (every core). Prints examples per second over BATCHES batches, timed from the
iterator's creation (the shuffle buffer's first fill and the first epoch's decoding included, as
`pipec run` times them).
"""
import csv
import glob
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "chess"))
from tfdata_peer import _batch_parser, iterator_to_data  # noqa: E402

AUTOTUNE = tf.data.AUTOTUNE


def chess(files_glob):
    files = sorted(glob.glob(files_glob))
    ds = tf.data.TFRecordDataset(files)
    ds = ds.shuffle(10000, seed=7)
    ds = ds.batch(512, drop_remainder=True)

    def parse(records):
        packed, score = _batch_parser(records)
        board, flags, combined = iterator_to_data(packed, score)
        return {"board": tf.cast(board, tf.float32), "flags": tf.cast(flags, tf.float32),
                "score": tf.cast(combined, tf.float32)}

    ds = ds.map(parse, num_parallel_calls=AUTOTUNE)
    return ds.repeat(), 512


def pairs(data, a, b, ext):
    xs = sorted(glob.glob(os.path.join(data, a, "*." + ext)))
    ys = sorted(glob.glob(os.path.join(data, b, "*." + ext)))
    return tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(xs), tf.data.Dataset.from_tensor_slices(ys)))


def deblur(data):
    ds = pairs(data, "blurred", "sharp", "jpg")
    read = lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=3)  # noqa: E731
    ds = ds.map(lambda b, s: (read(b), read(s)), num_parallel_calls=AUTOTUNE)
    ds = ds.cache()

    def patch(b, s):
        stack = tf.image.random_crop(tf.stack([b, s]), [2, 256, 256, 3])
        stack = tf.cond(tf.random.uniform([]) < 0.5, lambda: tf.reverse(stack, axis=[2]), lambda: stack)
        return stack[0], stack[1]

    ds = ds.map(patch, num_parallel_calls=AUTOTUNE)
    ds = ds.shuffle(1024, seed=3)
    norm = lambda x: (tf.image.convert_image_dtype(x, tf.float32) - 0.5) / 0.5  # noqa: E731
    ds = ds.map(lambda b, s: (norm(b), norm(s)), num_parallel_calls=AUTOTUNE)
    return ds.batch(16, drop_remainder=True).repeat(), 16


def segmentation(data):
    ds = pairs(data, "image", "label", "png").shuffle(1000, seed=4)
    with open(os.path.join(HERE, "..", "..", "examples", "segmentation", "class_dict.csv")) as f:
        colours = tf.constant([[int(r[1]), int(r[2]), int(r[3])] for r in list(csv.reader(f))[1:]], tf.uint8)

    def load(image_path, label_path):
        x = tf.image.resize_with_crop_or_pad(tf.io.decode_png(tf.io.read_file(image_path), channels=3), 512, 512)
        y = tf.image.resize_with_crop_or_pad(tf.io.decode_png(tf.io.read_file(label_path), channels=3), 512, 512)
        return x, y

    def convert(x, y):
        one_hot = tf.reduce_all(tf.equal(y[:, :, None, :], colours[None, None, :, :]), axis=-1)
        return tf.image.convert_image_dtype(x, tf.float32), tf.cast(one_hot, tf.float32)

    ds = ds.map(load, num_parallel_calls=AUTOTUNE).map(convert, num_parallel_calls=AUTOTUNE)
    return ds.batch(3, drop_remainder=True).repeat(), 3


def main():
    mode, data, batches, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if threads > 0:
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    ds, per_batch = {"chess": chess, "deblur": deblur, "segmentation": segmentation}[mode](data)
    ds = ds.prefetch(AUTOTUNE)
    options = tf.data.Options()
    options.autotune.enabled = True
    if threads > 0:
        options.threading.private_threadpool_size = threads
        options.threading.max_intra_op_parallelism = 1
    ds = ds.with_options(options)
    start = time.perf_counter()
    n = 0
    for _ in ds.take(batches):
        n += 1
    elapsed = time.perf_counter() - start
    print(f"{n * per_batch / elapsed:.1f}")


if __name__ == "__main__":
    main()
