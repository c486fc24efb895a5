#!/usr/bin/env python3
"""Writes the image fixtures that tests/unit_runtime/image_*_test.cpp compare pipec against, made by
real TensorFlow (tf.io.decode_png / tf.io.decode_jpeg with default options, and the tf.image ops).

Outputs, under fixtures/images/:
  decode_manifest.tsv  one row per (file, channels, dtype): shape and the CRC-32 (zlib's) of the decoded pixels
                       (little-endian, row-major), or `error` and TensorFlow's message when TF refuses
                       the file. Covers every PngSuite file and every JPEG in ../shared/testdata/external.
  jpeg_<name>_c<ch>.npy the decoded pixels of each JPEG TF decodes (small files), so a mismatch can be
                       measured, not just detected.
  ops_*.npy            inputs and outputs of crop_or_pad, central_crop, resize, flips,
                       convert_image_dtype and rgb_to_grayscale on small deterministic images, and of
                       distance_transform (scipy.ndimage.distance_transform_edt of `mask == 0`, which
                       TensorFlow lacks) on a sparse mask.

Usage: /work/tfvenv/bin/python tests/conformance/make_image_fixtures.py [testdata/external folder]
"""
import zlib
import os
import sys

import numpy as np
import scipy.ndimage
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "images")
DEFAULT_DATA = os.path.join(HERE, "..", "..", "..", "shared", "testdata", "external")


def digest(a):
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.byteswap().view(a.dtype.newbyteorder("<"))
    return "%08x" % (zlib.crc32(a.tobytes()) & 0xFFFFFFFF)


def decode_rows(data_dir):
    rows = []
    png_dir = os.path.join(data_dir, "png")
    for name in sorted(os.listdir(png_dir)):
        if not name.endswith(".png"):
            continue
        data = open(os.path.join(png_dir, name), "rb").read()
        for ch in (0, 1, 3, 4):
            for dt, tfdt in (("u8", tf.uint8), ("u16", tf.uint16)):
                try:
                    img = tf.io.decode_png(data, channels=ch, dtype=tfdt).numpy()
                    rows.append((f"png/{name}", ch, dt, "x".join(map(str, img.shape)), digest(img)))
                except Exception as e:  # TF refuses the file: pipec must refuse it too
                    msg = str(e).splitlines()[0].replace("\t", " ")[:120]
                    rows.append((f"png/{name}", ch, dt, "error", msg))
    jpeg_dir = os.path.join(data_dir, "jpeg")
    for name in sorted(os.listdir(jpeg_dir)):
        if not (name.endswith(".jpg") or name.endswith(".jpeg")):
            continue
        data = open(os.path.join(jpeg_dir, name), "rb").read()
        for ch in (0, 1, 3):
            try:
                img = tf.io.decode_jpeg(data, channels=ch).numpy()
                rows.append((f"jpeg/{name}", ch, "u8", "x".join(map(str, img.shape)), digest(img)))
                np.save(os.path.join(OUT, f"jpeg_{os.path.splitext(name)[0]}_c{ch}.npy"), img)
            except Exception as e:
                msg = str(e).splitlines()[0].replace("\t", " ")[:120]
                rows.append((f"jpeg/{name}", ch, "u8", "error", msg))
    return rows


def ops_fixtures():
    rng = np.random.RandomState(6)
    img = rng.randint(0, 256, size=(7, 10, 3)).astype(np.uint8)
    np.save(os.path.join(OUT, "ops_input_u8_7x10x3.npy"), img)
    t = tf.constant(img)
    out = {
        "crop_or_pad_5x12": tf.image.resize_with_crop_or_pad(t, 5, 12),
        "crop_or_pad_9x4": tf.image.resize_with_crop_or_pad(t, 9, 4),
        "crop_or_pad_8x11": tf.image.resize_with_crop_or_pad(t, 8, 11),
        "central_crop_0.5": tf.image.central_crop(t, 0.5),
        "central_crop_0.7": tf.image.central_crop(t, 0.7),
        "flip_left_right": tf.image.flip_left_right(t),
        "flip_up_down": tf.image.flip_up_down(t),
        "convert_f32": tf.image.convert_image_dtype(t, tf.float32),
        "convert_u16": tf.image.convert_image_dtype(t, tf.uint16),
        "resize_bilinear_4x6": tf.image.resize(t, (4, 6), method="bilinear"),
        "resize_bilinear_13x17": tf.image.resize(t, (13, 17), method="bilinear"),
        "resize_nearest_4x6": tf.image.resize(t, (4, 6), method="nearest"),
        "resize_nearest_13x17": tf.image.resize(t, (13, 17), method="nearest"),
    }
    f = tf.image.convert_image_dtype(t, tf.float32)
    out["convert_f32_to_u8"] = tf.image.convert_image_dtype(f * 0.9 + 0.05, tf.uint8)
    np.save(os.path.join(OUT, "ops_input_f32_7x10x3.npy"), (f * 0.9 + 0.05).numpy())
    u16 = tf.image.convert_image_dtype(t, tf.uint16)
    out["convert_u16_to_u8"] = tf.image.convert_image_dtype(u16 + 77, tf.uint8)
    np.save(os.path.join(OUT, "ops_input_u16_7x10x3.npy"), (u16 + 77).numpy())
    out["rgb_to_grayscale_u8"] = tf.image.rgb_to_grayscale(t)
    out["rgb_to_grayscale_f32"] = tf.image.rgb_to_grayscale(f * 0.9 + 0.05)
    # A click map: a few non-zero pixels in channel 0, none in channel 1 (every distance +inf).
    mask = np.zeros((9, 13, 2), dtype=np.uint8)
    for y, x in [(0, 0), (4, 7), (8, 12), (2, 11)]:
        mask[y, x, 0] = 255
    np.save(os.path.join(OUT, "ops_input_mask_9x13x2.npy"), mask)
    dist = np.stack([scipy.ndimage.distance_transform_edt(mask[:, :, k] == 0) if mask[:, :, k].any()
                     else np.full(mask.shape[:2], np.inf) for k in range(2)], axis=-1)
    np.save(os.path.join(OUT, "ops_distance_transform.npy"), dist.astype(np.float32))
    for k, v in out.items():
        np.save(os.path.join(OUT, f"ops_{k}.npy"), v.numpy())


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DATA
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        os.remove(os.path.join(OUT, old))
    rows = decode_rows(data_dir)
    with open(os.path.join(OUT, "decode_manifest.tsv"), "w") as f:
        f.write("# file\tchannels\tdtype\tshape|error\tcrc32|message (made by TensorFlow %s)\n" % tf.__version__)
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")
    ops_fixtures()


if __name__ == "__main__":
    main()
