#!/usr/bin/env python3
"""Writes the small .npy files that tests/unit_runtime/io_npy_test.cpp reads: arrays saved by real NumPy.

Needs only NumPy. make_fixtures.py runs it too. Usage: python3 tests/conformance/make_npy_fixtures.py
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "npy")


def save(name, array, **kwargs):
    with open(os.path.join(OUT, name), "wb") as f:
        np.lib.format.write_array(f, array, **kwargs) if kwargs else np.save(f, array)


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".npy"):
            os.remove(os.path.join(OUT, old))
    # One file per dtype: [0, 1, min, max] (bool: [False, True, True, False]; floats: specials).
    for code in ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8"]:
        info = np.iinfo(np.dtype(code))
        save(f"dtype_{code}.npy", np.array([0, 1, info.min, info.max], dtype=code))
    save("dtype_b1.npy", np.array([False, True, True, False]))
    for code in ["f2", "f4", "f8"]:
        save(f"dtype_{code}.npy", np.array([0.0, -1.5, np.inf, np.finfo(np.dtype(code)).max], dtype=code))
    save("f32_2x3.npy", (np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 1))
    save("i64_scalar.npy", np.int64(-1234567890123))
    save("u16_2x3x4.npy", (np.arange(24, dtype=np.uint16) * 1000).reshape(2, 3, 4))
    save("bytes_2x2.npy", np.array([[b"ab", b""], [b"hello", b"x\x00y"]]))   # |S5, NUL inside a value
    save("bytes_empty_strings.npy", np.array([b"", b"", b""]))                 # |S1, all empty
    save("f32_0x3.npy", np.zeros((0, 3), dtype=np.float32))
    save("i32_v2.npy", np.arange(5, dtype=np.int32), version=(2, 0))           # format version 2.0
    # Files pipec must refuse with a clear error.
    save("bad_fortran.npy", np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
    save("bad_big_endian.npy", np.arange(3, dtype=">i4"))
    save("bad_unicode.npy", np.array(["ab", "c"]))
    save("bad_complex.npy", np.array([1 + 2j], dtype=np.complex64))
    with open(os.path.join(OUT, "bad_object.npy"), "wb") as f:
        np.save(f, np.array([1, "x"], dtype=object), allow_pickle=True)
    print(f"wrote {len(os.listdir(OUT))} files to {OUT} (numpy {np.__version__})")


if __name__ == "__main__":
    main()
