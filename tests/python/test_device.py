"""Where the maps after to(gpu) run, made explicit: device="gpu" without a GPU is GpuUnavailableError,
"auto" falls back to the CPU with a DeviceWarning (and says so per stage), "cpu" runs there silently.
Batches arrive in CPU memory in every case."""
import warnings

import numpy as np
import pytest

import pipec

SPEC = """
pipeline p = range(64)
  | map(r => { x: f32(r.value) })
  | to(gpu)
  | map(r => { x: r.x * 2.0 + 1.0 })
  | batch(16)
"""


def gpu_available(spec):
    try:
        spec.pipeline(device="gpu").close()
        return True
    except pipec.GpuUnavailableError:
        return False


def values(ds):
    return np.concatenate([np.from_dlpack(b["x"]).copy() for b in ds])


def test_device_policies(write_spec):
    spec = pipec.compile(write_spec(SPEC))
    expected = np.arange(64, dtype=np.float32) * 2 + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = spec.pipeline(device="auto")
    device_warnings = [w for w in caught if issubclass(w.category, pipec.DeviceWarning)]
    with ds:
        got = values(ds)
        devices = [s["device"] for s in ds.stats()["stages"]]
    assert np.array_equal(got, expected)
    if gpu_available(spec):
        assert not device_warnings and any(d.startswith("gpu") for d in devices)
    else:
        assert len(device_warnings) == 1 and "to(gpu)" in str(device_warnings[0].message)
        assert set(devices) == {"cpu"}
        with pytest.raises(pipec.GpuUnavailableError):
            spec.pipeline(device="gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "cpu" never warns
        with spec.pipeline(device="cpu") as ds:
            batch = next(ds)
            assert np.array_equal(values(ds), expected[16:])
    assert batch["x"].device == "cpu" and batch["x"].__dlpack_device__() == (1, 0)
