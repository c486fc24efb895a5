#!/usr/bin/env python3
"""tf.data peers of bench/images: the same work as deblur_bench.pipe / seg_bench.pipe, on the same files.

  tfdata_peer.py deblur_seed   DATA EPOCHS   seed 003's code: decode whole images, normalize in f32, stack
                                             the pair, tf.image.random_crop, flip (no cache: every epoch
                                             decodes, as deblur_bench.pipe does)
  tfdata_peer.py deblur_cache  DATA EPOCHS   seed 003's code as its article has it: the decoded, normalized
                                             images are cache()d before the patch selection, so only the
                                             first epoch decodes (memory: 11 MB per 1280x720 image)
  tfdata_peer.py deblur_crop   DATA EPOCHS   the best tf.data version without a cache: read the JPEG header
                                             (extract_jpeg_shape), draw one window, decode_and_crop_jpeg
                                             both images, flip, then convert and normalize the patch only
  tfdata_peer.py seg_seed      DATA EPOCHS   seed 004's preprocess_fn (decode_png, convert_image_dtype,
                                             resize_with_crop_or_pad 512, one-hot by colour), batches of 3
  tfdata_peer.py decode_only   DATA EPOCHS   tf.io.decode_jpeg of both images, nothing else

Prints elements per second (pairs; for seg_seed, samples) on stdout.
"""
import csv
import glob
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

AUTOTUNE = tf.data.AUTOTUNE
PATCH = 256
EPOCHS = 1  # set by main


def pair_files(data, a, b, ext, repeat=True):
    xs = sorted(glob.glob(os.path.join(data, a, "*." + ext)))
    ys = sorted(glob.glob(os.path.join(data, b, "*." + ext)))
    ds = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(xs), tf.data.Dataset.from_tensor_slices(ys)))
    return (ds.repeat(EPOCHS) if repeat else ds), len(xs)


def flip_pair(stack):
    return tf.cond(tf.random.uniform([]) < 0.5, lambda: tf.reverse(stack, axis=[2]), lambda: stack)


def deblur_seed(data, cache=False):
    ds, n = pair_files(data, "blurred", "sharp", "jpg", repeat=not cache)

    def load(path):  # the seed's load_image: decode, then scale the whole image to [-1, 1]
        image = tf.image.decode_jpeg(tf.io.read_file(path), channels=3)
        return (tf.cast(image, tf.float32) - 127.5) / 127.5

    def select_patch(blurred, sharp):  # the seed's select_patch: one window for both
        stack = tf.stack([blurred, sharp], axis=0)
        stack = tf.image.random_crop(stack, size=[2, PATCH, PATCH, 3])
        stack = flip_pair(stack)
        return stack[0], stack[1]

    ds = ds.map(lambda b, s: (load(b), load(s)), num_parallel_calls=AUTOTUNE)
    if cache:
        ds = ds.cache().repeat(EPOCHS)
    return ds.map(select_patch, num_parallel_calls=AUTOTUNE), n


def deblur_crop(data):
    ds, n = pair_files(data, "blurred", "sharp", "jpg")

    def load(bp, sp):
        b, s = tf.io.read_file(bp), tf.io.read_file(sp)
        shape = tf.image.extract_jpeg_shape(b)
        top = tf.random.uniform([], 0, shape[0] - PATCH + 1, dtype=tf.int32)
        left = tf.random.uniform([], 0, shape[1] - PATCH + 1, dtype=tf.int32)
        win = tf.stack([top, left, PATCH, PATCH])
        stack = tf.stack([tf.image.decode_and_crop_jpeg(b, win, channels=3),
                          tf.image.decode_and_crop_jpeg(s, win, channels=3)], axis=0)
        stack = flip_pair(stack)
        stack = (tf.image.convert_image_dtype(stack, tf.float32) - 0.5) / 0.5
        return stack[0], stack[1]

    return ds.map(load, num_parallel_calls=AUTOTUNE), n


def decode_only(data):
    ds, n = pair_files(data, "blurred", "sharp", "jpg")
    dec = lambda p: tf.image.decode_jpeg(tf.io.read_file(p), channels=3)  # noqa: E731
    return ds.map(lambda b, s: (dec(b), dec(s)), num_parallel_calls=AUTOTUNE), n


def seg_seed(data):
    ds, n = pair_files(data, "image", "label", "png")
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "examples", "segmentation", "class_dict.csv")) as f:
        rows = list(csv.reader(f))[1:]
    label_values = [[int(r[1]), int(r[2]), int(r[3])] for r in rows]

    def preprocess_fn(train_image_filename, train_label_filename):  # the seed's function
        x = tf.image.decode_png(tf.io.read_file(train_image_filename), channels=3)
        x = tf.image.convert_image_dtype(x, tf.float32, saturate=False)
        x = tf.image.resize_with_crop_or_pad(x, 512, 512)
        y = tf.image.decode_png(tf.io.read_file(train_label_filename), channels=3)
        y = tf.image.resize_with_crop_or_pad(y, 512, 512)
        semantic_map = []
        for colour in label_values:
            class_map = tf.reduce_all(tf.equal(y, colour), axis=-1)
            semantic_map.append(class_map)
        semantic_map = tf.stack(semantic_map, axis=-1)
        semantic_map = tf.cast(semantic_map, tf.float32)
        return x, semantic_map

    return ds.map(preprocess_fn, num_parallel_calls=AUTOTUNE).batch(3, drop_remainder=True), n


def main():
    global EPOCHS
    mode, data, EPOCHS = sys.argv[1], sys.argv[2], int(sys.argv[3])
    modes = {"deblur_seed": deblur_seed, "deblur_cache": lambda d: deblur_seed(d, cache=True), "deblur_crop": deblur_crop,
             "decode_only": decode_only, "seg_seed": seg_seed}
    ds, n = modes[mode](data)
    ds = ds.prefetch(AUTOTUNE)
    start = time.perf_counter()
    count = 0
    for _ in ds:
        count += 1
    elapsed = time.perf_counter() - start
    per = 3 if mode == "seg_seed" else 1
    print(f"{count * per / elapsed:.2f}")


if __name__ == "__main__":
    main()
