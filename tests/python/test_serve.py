"""pipec.load_model: a model library built by `pipec build --train` predicts from Python what the
model computes (checked against NumPy's forward pass with the saved weights), from several threads,
and refuses what does not fit with pipec.Error."""
import json
import struct
import threading

import numpy as np
import pytest

import pipec
from conftest import run_pipec

SPEC = """
pipeline data = range(64)
  | map(r => { x: f32(r.value) * [0.5, -0.25], y: f32(r.value) * [0.1, 0.2, 0.3] })
  | shuffle(16, seed = 1)
  | batch(8)

model net(x: f32[2]) -> f32[3] { x | dense(3) | tanh }

train t = {
  data = data
  model = net(x)
  loss = mse(y)
  optimizer = sgd(lr = 0.01)
  steps = 4
}
"""


def read_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype=np.float32).reshape(e["shape"])
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    (d / "net.pipe").write_text(SPEC)
    run_pipec("run", d / "net.pipe", "--save", d / "w.safetensors", "--quiet")
    run_pipec("build", d / "net.pipe", "--train", "t", "--weights", d / "w.safetensors", "-o", d / "libnet.so")
    return d


def test_predicts_the_models_forward_pass(served):
    w = read_safetensors(served / "w.safetensors")
    with pipec.load_model(served / "libnet.so", threads=1) as model:
        assert model.name == "t"
        assert model.inputs == [("value", "i64", ())]
        assert model.output == ("f32", (3,))
        value = np.arange(37, dtype=np.int64)
        got = np.from_dlpack(model.predict(value))
        assert got.shape == (37, 3) and got.dtype == np.float32
        # The preprocessing (the map before batch) and dense + tanh, in NumPy.
        x = value.astype(np.float32)[:, None] * np.array([0.5, -0.25], dtype=np.float32)
        want = np.tanh(x @ w["dense/kernel"] + w["dense/bias"])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # By name, and one example.
        np.testing.assert_array_equal(np.from_dlpack(model.predict(value=value[:1])), got[:1])


def test_predicts_from_several_threads(served):
    model = pipec.load_model(served / "libnet.so")
    value = np.arange(500, dtype=np.int64)
    want = np.from_dlpack(model.predict(value))
    results = [None] * 4

    def worker(k):
        results[k] = [np.from_dlpack(model.predict(value)) for _ in range(5)]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        for got in r:
            np.testing.assert_array_equal(got, want)
    model.close()


def test_refuses_what_does_not_fit(served, tmp_path):
    model = pipec.load_model(served / "libnet.so")
    with pytest.raises(pipec.Error, match=r"input 0 \(`value`\) has shape \[4, 2\]"):
        model.predict(np.zeros((4, 2), dtype=np.int64))
    with pytest.raises(TypeError, match="unknown"):
        model.predict(board=np.zeros(3))
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(pipec.Error, match="bad.safetensors"):
        pipec.load_model(served / "libnet.so", weights=tmp_path / "bad.safetensors")
