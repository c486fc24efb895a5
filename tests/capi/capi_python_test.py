"""Reads batches from libraries built by `pipec build` through ctypes and DLPack (numpy, and torch when
it is installed), and checks them against `pipec run --output`.

Run by ctest as `capi_python` with PIPEC set to the pipec binary:
    PIPEC=build/pipec python3 tests/capi/capi_python_test.py
"""
import ctypes
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:  # a clear failure, not a skip: the test needs numpy
    sys.exit("capi_python_test needs numpy (Debian: apt-get install python3-numpy)")

PIPEC = os.environ.get("PIPEC", "pipec")

c_int32, c_int64, c_uint64, c_void_p = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(c_int64)), ("strides", ctypes.POINTER(c_int64)),
                ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class PipeOptions(ctypes.Structure):
    _fields_ = [("threads", c_int32), ("seed", c_uint64), ("shard_count", c_int64), ("shard_index", c_int64),
                ("data_dir", ctypes.c_char_p)]


# PyCapsule plumbing. The destructor gets the raw PyObject* of a dying capsule, so it only uses
# functions taking void* (no reference counting on an object being freed).
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [c_void_p, ctypes.c_char_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = c_void_p
_capsule_get.argtypes = [c_void_p, ctypes.c_char_p]


def _release(ptr):
    m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor))
    m.contents.deleter(m)


@ctypes.CFUNCTYPE(None, c_void_p)
def _capsule_destructor(capsule):
    # Still named "dltensor": no consumer took ownership, so the tensor is released here. A consumer
    # renames it to "used_dltensor" and calls the deleter itself.
    if _capsule_is_valid(capsule, b"dltensor"):
        _release(_capsule_get(capsule, b"dltensor"))


class DLPackTensor:
    """One DLManagedTensor from pipe_next, offered to np.from_dlpack / torch.from_dlpack."""

    def __init__(self, ptr):
        self._ptr = ptr

    def __dlpack__(self, stream=None):
        if self._ptr is None:
            raise BufferError("this tensor was already exported")
        capsule = _capsule_new(self._ptr, b"dltensor", ctypes.cast(_capsule_destructor, c_void_p))
        self._ptr = None  # the capsule owns it now
        return capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __del__(self):
        if self._ptr is not None:
            _release(self._ptr)


class Library:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)  # RTLD_LOCAL: each built library keeps its own symbols
        L = self.lib
        L.pipe_open.restype = c_void_p
        L.pipe_open.argtypes = [ctypes.POINTER(PipeOptions)]
        L.pipe_num_fields.argtypes = [c_void_p]
        L.pipe_field_name.restype = ctypes.c_char_p
        L.pipe_field_name.argtypes = [c_void_p, c_int32]
        L.pipe_next.argtypes = [c_void_p, ctypes.POINTER(c_void_p)]
        L.pipe_save_state.argtypes = [c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        L.pipe_free_state.argtypes = [c_void_p]
        L.pipe_restore_state.argtypes = [c_void_p, c_void_p, ctypes.c_size_t]
        L.pipe_close.argtypes = [c_void_p]
        L.pipe_last_error.restype = ctypes.c_char_p
        L.pipe_live_tensors.restype = c_int64
        L.pipe_pipeline_name.restype = ctypes.c_char_p

    def error(self):
        return self.lib.pipe_last_error().decode()

    def live(self):
        return self.lib.pipe_live_tensors()

    def open(self, threads=2, seed=0, shard_count=0, shard_index=0, data_dir=None):
        o = PipeOptions(threads, seed, shard_count, shard_index, data_dir.encode() if data_dir else None)
        h = self.lib.pipe_open(ctypes.byref(o))
        return Handle(self, h) if h else None


class Handle:
    def __init__(self, lib, h):
        self.lib, self.h = lib, h
        L = lib.lib
        self.fields = [L.pipe_field_name(h, i).decode() for i in range(L.pipe_num_fields(h))]

    def next_tensors(self):
        """The next element as {field: DLPackTensor}, or None at the end."""
        out = (c_void_p * len(self.fields))()
        rc = self.lib.lib.pipe_next(self.h, out)
        if rc < 0:
            raise RuntimeError(self.lib.error())
        if rc == 0:
            return None
        return {f: DLPackTensor(out[i]) for i, f in enumerate(self.fields)}

    def next(self):
        t = self.next_tensors()
        return None if t is None else {f: np.from_dlpack(x) for f, x in t.items()}

    def save(self):
        buf, n = c_void_p(), ctypes.c_size_t()
        assert self.lib.lib.pipe_save_state(self.h, ctypes.byref(buf), ctypes.byref(n)) == 0, self.lib.error()
        state = ctypes.string_at(buf, n.value)
        self.lib.lib.pipe_free_state(buf)
        return state

    def restore(self, state):
        return self.lib.lib.pipe_restore_state(self.h, state, len(state))

    def close(self):
        self.lib.lib.pipe_close(self.h)
        self.h = None


SPEC = """
pipeline small = range(100)
  | map(r => { x: f32(r.value) * 0.5, y: r.value * 3, z: f32(r.value) * [1.0, 2.0, 3.0] })
  | shuffle(16, seed = 3)
  | batch(8)

pipeline other = range(10) | map(r => { v: r.value * 10 }) | batch(2)
"""


def sh(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


class CapiPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pipec-capi-py-")
        cls.spec = os.path.join(cls.dir, "s.pipe")
        with open(cls.spec, "w") as f:
            f.write(SPEC)
        cls.small_path = os.path.join(cls.dir, "libsmall.so")
        cls.other_path = os.path.join(cls.dir, "libother.so")
        sh(PIPEC, "build", cls.spec, "--pipeline", "small", "-o", cls.small_path, "-q")
        sh(PIPEC, "build", cls.spec, "--pipeline", "other", "-o", cls.other_path, "-q")
        cls.npy = os.path.join(cls.dir, "npy")
        sh(PIPEC, "run", cls.spec, "--pipeline", "small", "--output", cls.npy, "-q")
        cls.small = Library(cls.small_path)
        cls.other = Library(cls.other_path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def expected(self, k, field):
        return np.load(os.path.join(self.npy, f"{k:06d}", f"{field}.npy"))

    def test_batches_match_pipec_run_and_tensors_are_released(self):
        gc.collect()
        self.assertEqual(self.small.live(), 0)
        h = self.small.open()
        self.assertIsNotNone(h, self.small.error())
        self.assertEqual(h.fields, ["x", "y", "z"])
        kept = []
        k = 0
        while (el := h.next()) is not None:
            for f, a in el.items():
                want = self.expected(k, f)
                self.assertEqual(a.dtype, want.dtype, f)
                self.assertEqual(a.shape, want.shape, f)
                np.testing.assert_array_equal(a, want)
            kept.append(el)
            k += 1
        self.assertEqual(k, 13)  # 12 batches of 8 and one of 4
        self.assertEqual(kept[-1]["z"].shape, (4, 3))
        # The arrays point into the runtime's buffers: every one is alive until numpy lets go.
        self.assertEqual(self.small.live(), 3 * 13)
        h.close()
        np.testing.assert_array_equal(kept[0]["y"], self.expected(0, "y"))  # still valid after close
        del kept, el, a
        gc.collect()
        self.assertEqual(self.small.live(), 0)

    def test_unconsumed_tensors_are_released_too(self):
        gc.collect()
        self.assertEqual(self.small.live(), 0)
        h = self.small.open()
        t = h.next_tensors()
        self.assertEqual(self.small.live(), 3)
        capsule = t["x"].__dlpack__()  # a capsule nobody consumes
        del t, capsule
        gc.collect()
        self.assertEqual(self.small.live(), 0)
        h.close()

    def test_save_and_restore(self):
        h = self.small.open()
        for _ in range(3):
            h.next()
        state = h.save()
        after = [h.next() for _ in range(4)]
        self.assertEqual(h.restore(state), 0, self.small.error())
        again = [h.next() for _ in range(4)]
        for a, b in zip(after, again):
            for f in h.fields:
                np.testing.assert_array_equal(a[f], b[f])
        np.testing.assert_array_equal(after[0]["x"], self.expected(3, "x"))
        h2 = self.small.open(seed=5)
        self.assertEqual(h2.restore(state), -1)
        self.assertIn("seed", self.small.error())
        h.close()
        h2.close()

    def test_two_libraries_in_one_process(self):
        self.assertEqual(self.small.lib.pipe_pipeline_name(), b"small")
        self.assertEqual(self.other.lib.pipe_pipeline_name(), b"other")
        a, b = self.small.open(), self.other.open()
        self.assertEqual(b.fields, ["v"])
        np.testing.assert_array_equal(b.next()["v"], [0, 10])
        np.testing.assert_array_equal(a.next()["x"], self.expected(0, "x"))
        a.close()
        b.close()

    def test_shards_split_the_source(self):
        seen = []
        for i in range(3):
            h = self.other.open(shard_count=3, shard_index=i)
            self.assertIsNotNone(h, self.other.error())
            while (el := h.next()) is not None:
                seen.extend(int(v) // 10 for v in el["v"])
            h.close()
        self.assertEqual(sorted(seen), list(range(10)))
        self.assertIsNone(self.other.open(shard_count=2, shard_index=2))
        self.assertIn("shard_index 2", self.other.error())

    def test_missing_data_names_the_file(self):
        spec = os.path.join(self.dir, "m.pipe")
        with open(spec, "w") as f:
            f.write('source s = tfrecord("gone.tfrecord") {\n  x: i64\n}\npipeline p = s | batch(2)\n')
        path = os.path.join(self.dir, "libmissing.so")
        sh(PIPEC, "build", spec, "-o", path, "-q")
        lib = Library(path)
        h = lib.open()
        if h is not None:
            with self.assertRaises(RuntimeError) as e:
                h.next()
            self.assertIn("gone.tfrecord", str(e.exception))
            h.close()
        else:
            self.assertIn("gone.tfrecord", lib.error())

    def test_torch_from_dlpack(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        h = self.small.open()
        t = h.next_tensors()
        x = torch.from_dlpack(t["z"])
        np.testing.assert_array_equal(x.numpy(), self.expected(0, "z"))
        del x, t
        gc.collect()
        h.close()
        self.assertEqual(self.small.live(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
