#!/usr/bin/env python3
"""`pipec run --save` writes weights other tools read: the file is parsed here byte by byte with plain
Python and NumPy (8-byte little-endian header length, JSON header, little-endian f32 data tiling the
rest), the model is evaluated with the loaded weights and must fit the function it was trained on, and
when the `safetensors` package is installed its loader must give the same arrays.

  PIPEC=build/pipec python3 tests/train/safetensors_test.py
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

PIPEC = os.environ.get("PIPEC", "build/pipec")

SPEC = """const W = [0.5, -1.0, 2.0, 0.0]
pipeline data = range(2048)
  | map(r => {
      x = random_uniform([4], -1.0, 1.0, seed = 1)
      { x, y: [sum(x * W) + 0.5] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(8) | tanh | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.02), epochs = 4 }
"""

EXPECTED = {"dense/kernel": [4, 8], "dense/bias": [8], "dense_1/kernel": [8, 1], "dense_1/bias": [1]}


def parse(path):
    data = open(path, "rb").read()
    assert len(data) >= 8, "shorter than the header length"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"header of {n} bytes in a file of {len(data)}"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors, spans = {}, []
    for name, info in header.items():
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert end - begin == 4 * count, (name, begin, end, count)
        tensors[name] = np.frombuffer(body[begin:end], dtype="<f4").reshape(info["shape"])
        spans.append((begin, end))
    spans.sort()
    at = 0
    for begin, end in spans:
        assert begin == at, f"gap or overlap at {at}"
        at = end
    assert at == len(body), "data after the last tensor"
    return tensors, meta


def main():
    with tempfile.TemporaryDirectory() as d:
        spec = os.path.join(d, "fit.pipe")
        weights = os.path.join(d, "w.safetensors")
        with open(spec, "w") as f:
            f.write(SPEC)
        r = subprocess.run([PIPEC, "run", spec, "--save", weights, "-q"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        tensors, meta = parse(weights)
        assert {k: list(v.shape) for k, v in tensors.items()} == EXPECTED, tensors.keys()
        assert meta.get("model") == "net" and meta.get("train") == "fit", meta
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, (500, 4)).astype(np.float32)
        h = np.tanh(x @ tensors["dense/kernel"] + tensors["dense/bias"])
        pred = (h @ tensors["dense_1/kernel"] + tensors["dense_1/bias"])[:, 0]
        want = x @ np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32) + 0.5
        mse = float(np.mean((pred - want) ** 2))
        var = float(np.var(want))
        assert mse < 0.05 * var, f"the loaded model does not fit: mse {mse}, variance of the target {var}"
        print(f"parsed {len(tensors)} tensors; the loaded model's mse is {mse:.4f} (target variance {var:.3f})")
        try:
            from safetensors.numpy import load_file
        except ImportError:
            print("the safetensors package is not installed: its loader was not compared")
            return 0
        loaded = load_file(weights)
        assert loaded.keys() == tensors.keys()
        for k in tensors:
            assert loaded[k].dtype == np.float32 and np.array_equal(loaded[k], tensors[k]), k
        print("the safetensors package loads the same arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
