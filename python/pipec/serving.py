"""Models served from a library built by ``pipec build spec.pipe --train T --weights W -o libT.so``:
the train block's preprocessing and its model's forward pass in inference mode, through the library's C
ABI (``pipe_model_open``, ``pipe_predict``; docs/capi.md, "Served models"). No compiler is involved:
the library carries everything, so this works wherever the library runs.

    import numpy as np, pipec
    model = pipec.load_model("out/libchess_model.so", threads=4)
    print(model.inputs)                                 # [("d", "u8", (194,))]
    scores = np.from_dlpack(model.predict(d=records))   # records: u8 [rows, 194] -> f32 [rows, 1]

Inputs are NumPy arrays (or anything ``numpy.asarray`` takes) of the dtype the model reads; the
prediction is a DLPack tensor (``np.from_dlpack``, ``torch.from_dlpack``) that owns its memory.
``predict`` may be called from several threads at once.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, List, Tuple

from .errors import Error

__all__ = ["load_model", "Model", "Prediction"]

_i32, _i64, _u64, _vp = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", _i32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", _vp), ("device", _DLDevice), ("ndim", _i32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(_i64)), ("strides", ctypes.POINTER(_i64)), ("byte_offset", _u64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", _vp), ("deleter", _DELETER)]


class _ModelOptions(ctypes.Structure):
    _fields_ = [("threads", _i32), ("weights", ctypes.c_char_p)]


# DLPack codes (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool) and bits -> pipec's dtype names.
_DTYPES = {(0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8", (1, 16): "u16",
           (1, 32): "u32", (1, 64): "u64", (2, 16): "f16", (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16",
           (6, 8): "bool"}
_NUMPY = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
          "u32": "uint32", "u64": "uint64", "f16": "float16", "f32": "float32", "f64": "float64", "bool": "bool"}

# PyCapsule plumbing for __dlpack__. A capsule nobody consumed still has the name "dltensor" when it dies:
# its tensor is released then; a consumer renames it "used_dltensor" and runs the deleter itself. The
# destructor gets the raw PyObject*, so it only calls functions that take void*.
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [_vp, ctypes.c_char_p, _vp]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [_vp, ctypes.c_char_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = _vp
_capsule_get.argtypes = [_vp, ctypes.c_char_p]


@ctypes.CFUNCTYPE(None, _vp)
def _capsule_destructor(capsule):
    if _capsule_is_valid(capsule, b"dltensor"):
        m = ctypes.cast(_capsule_get(capsule, b"dltensor"), ctypes.POINTER(_DLManagedTensor))
        m.contents.deleter(m)


class Prediction:
    """The model's output for a request, [rows, ...]: hand it to ``np.from_dlpack`` or
    ``torch.from_dlpack`` (once; the consumer then owns it)."""

    def __init__(self, managed: "ctypes._Pointer[_DLManagedTensor]", dtype: str):
        self._managed = managed
        t = managed.contents.dl_tensor
        self.shape: Tuple[int, ...] = tuple(t.shape[i] for i in range(t.ndim))
        self.dtype = dtype

    def __dlpack__(self, stream=None):
        if self._managed is None:
            raise Error("this prediction was handed to a DLPack consumer already")
        ptr, self._managed = ctypes.cast(self._managed, _vp).value, None
        return _capsule_new(ptr, b"dltensor", ctypes.cast(_capsule_destructor, _vp))

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __del__(self):
        if getattr(self, "_managed", None) is not None:
            self._managed.contents.deleter(self._managed)


class Model:
    """A served model: ``inputs`` lists (name, dtype, one example's shape) in the order ``predict``
    takes them (-1: any size); ``output`` is (dtype, shape)."""

    def __init__(self, path: str, threads: int = 0, weights: "str | None" = None):
        self.path = os.fspath(path)
        self._lib = ctypes.CDLL(os.path.abspath(self.path))
        lib = self._lib
        try:
            lib.pipe_model_open
        except AttributeError:
            raise Error(f"{self.path} serves no model: build it with `pipec build SPEC --train T --weights W`") from None
        lib.pipe_model_open.restype = _vp
        lib.pipe_model_open.argtypes = [ctypes.POINTER(_ModelOptions)]
        lib.pipe_last_error.restype = ctypes.c_char_p
        lib.pipe_model_name.restype = ctypes.c_char_p
        lib.pipe_model_input_name.restype = ctypes.c_char_p
        lib.pipe_model_input_name.argtypes = [_vp, _i32]
        for f in ("pipe_model_num_inputs", "pipe_model_output_ndim"):
            getattr(lib, f).argtypes = [_vp]
        lib.pipe_model_input_dtype.restype = _DLDataType
        lib.pipe_model_input_dtype.argtypes = [_vp, _i32]
        lib.pipe_model_input_ndim.argtypes = [_vp, _i32]
        lib.pipe_model_input_dim.restype = _i64
        lib.pipe_model_input_dim.argtypes = [_vp, _i32, _i32]
        lib.pipe_model_output_dtype.restype = _DLDataType
        lib.pipe_model_output_dtype.argtypes = [_vp]
        lib.pipe_model_output_dim.restype = _i64
        lib.pipe_model_output_dim.argtypes = [_vp, _i32]
        lib.pipe_predict.argtypes = [_vp, ctypes.POINTER(ctypes.POINTER(_DLTensor)), _i32,
                                     ctypes.POINTER(ctypes.POINTER(_DLManagedTensor))]
        lib.pipe_model_close.argtypes = [_vp]
        options = _ModelOptions(int(threads), os.fsencode(weights) if weights else None)
        self._handle = lib.pipe_model_open(ctypes.byref(options))
        if not self._handle:
            raise Error(lib.pipe_last_error().decode())
        self.name: str = lib.pipe_model_name().decode()
        self.inputs: List[Tuple[str, str, Tuple[int, ...]]] = []
        for i in range(lib.pipe_model_num_inputs(self._handle)):
            dt = lib.pipe_model_input_dtype(self._handle, i)
            shape = tuple(lib.pipe_model_input_dim(self._handle, i, d)
                          for d in range(lib.pipe_model_input_ndim(self._handle, i)))
            self.inputs.append((lib.pipe_model_input_name(self._handle, i).decode(), _DTYPES[(dt.code, dt.bits)],
                                shape))
        dt = lib.pipe_model_output_dtype(self._handle)
        self.output = (_DTYPES[(dt.code, dt.bits)],
                       tuple(lib.pipe_model_output_dim(self._handle, d)
                             for d in range(lib.pipe_model_output_ndim(self._handle))))
        self._lock = threading.Lock()

    def predict(self, *args: Any, **fields: Any) -> Prediction:
        """The model's output for one request: the inputs in order, or by name. Each is [rows, ...] of
        the input's dtype (a NumPy array, or anything ``numpy.asarray`` takes); all hold the same rows.
        Raises pipec.Error naming the input when one does not fit."""
        import numpy as np

        if args and fields:
            raise TypeError("give the inputs in order or by name, not both")
        names = [name for name, _, _ in self.inputs]
        if fields:
            unknown = sorted(set(fields) - set(names))
            missing = [n for n in names if n not in fields]
            if unknown or missing:
                raise TypeError(f"the model takes {names}; unknown {unknown}, missing {missing}")
            args = tuple(fields[n] for n in names)
        if len(args) != len(names):
            raise TypeError(f"the model takes {len(names)} inputs ({names}), {len(args)} were given")
        arrays = [np.ascontiguousarray(np.asarray(a, dtype=_NUMPY[dt])) for a, (_, dt, _) in zip(args, self.inputs)]
        tensors, shapes = [], []
        for a, (_, dt, _) in zip(arrays, self.inputs):
            shape = (_i64 * max(a.ndim, 1))(*a.shape)
            code, bits = next(k for k, v in _DTYPES.items() if v == dt)
            tensors.append(_DLTensor(a.ctypes.data, _DLDevice(1, 0), a.ndim, _DLDataType(code, bits, 1), shape, None, 0))
            shapes.append(shape)
        ptrs = (ctypes.POINTER(_DLTensor) * len(tensors))(*(ctypes.pointer(t) for t in tensors))
        out = ctypes.POINTER(_DLManagedTensor)()
        if self._handle is None:
            raise Error(f"model {self.name} is closed")
        # ctypes releases the GIL during the call: concurrent predictions run in parallel.
        if self._lib.pipe_predict(self._handle, ptrs, len(tensors), ctypes.byref(out)) != 0:
            raise Error(self._lib.pipe_last_error().decode())
        return Prediction(out, self.output[0])

    def close(self) -> None:
        """Frees the model (predictions still held stay valid)."""
        if self._handle is not None:
            self._lib.pipe_model_close(self._handle)
            self._handle = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()


def load_model(path: "os.PathLike[str] | str", *, threads: int = 0, weights: "str | None" = None) -> Model:
    """Opens the model library at `path`. threads: each request's kernel threads (0: one per core).
    weights: a safetensors file of the same model (``pipec run --save``) instead of the built-in weights.
    Raises pipec.Error with the library's message when it cannot be opened."""
    return Model(os.fspath(path), threads, weights)
