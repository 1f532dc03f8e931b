"""Arrays of other libraries (PyTorch, JAX, anything that speaks DLPack) in and out of flashkm.

A CPU array with ``__dlpack__`` becomes a numpy view of the same memory (no copy; any strides;
16-bit floats included, which ``numpy.from_dlpack`` refuses for bfloat16), and results go back
in the producer's kind of array through its library's ``from_dlpack``.
"""

import ctypes
import functools
import sys

import numpy as np
from sklearn.utils._set_output import _get_output_config

# DLPack's device types (dlpack.h, DLDeviceType); those whose memory the CPU can read are used.
_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
            10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi",
            15: "webgpu", 16: "hexagon", 17: "maia"}
_CPU_READABLE = {1, 3, 11, 13}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor)))]

_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The protocol's names; the capsule keeps a pointer to its name, so these live as long as the module.
_DLTENSOR = b"dltensor"
_USED_DLTENSOR = b"used_dltensor"

# DLDataTypeCode -> numpy typestr kind: int, uint, float, (3: opaque handle), bfloat, complex, bool.
_KINDS = {0: "i", 1: "u", 2: "f", 4: "bfloat", 5: "c", 6: "b"}


def is_dlpack(X):
    """True for an array of another library that speaks DLPack (numpy arrays are not)."""
    return not isinstance(X, (np.ndarray, np.generic)) and hasattr(type(X), "__dlpack__")


def device_name(X):
    """The device of a DLPack array, as 'cuda:0' (from ``__dlpack_device__``)."""
    kind, index = (int(v) for v in X.__dlpack_device__())
    return f"{_DEVICES.get(kind, f'device type {kind}')}:{index}"


class _Owner:
    """Presents a DLPack tensor's memory to numpy (``__array_interface__``) and hands the tensor
    back to its producer (the DLPack deleter) when the last numpy view of it is gone."""

    def __init__(self, managed, interface):
        self._managed = managed
        self.__array_interface__ = interface

    def __del__(self):
        _release(self._managed)


def _release(managed):
    if managed.deleter:
        managed.deleter(ctypes.pointer(managed))


def _numpy_view(X):
    """A numpy view of the CPU memory of DLPack array X; bfloat16 as ml_dtypes.bfloat16."""
    capsule = X.__dlpack__()
    managed = _DLManagedTensor.from_address(_capsule_get_pointer(capsule, _DLTENSOR))
    # From here on the tensor is ours to hand back (its deleter), not the capsule's.
    _capsule_set_name(capsule, _USED_DLTENSOR)
    t = managed.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    kind, bits = _KINDS.get(t.dtype.code), t.dtype.bits
    if kind is None or t.dtype.lanes != 1 or bits % 8 or (kind == "bfloat" and bits != 16):
        _release(managed)
        raise TypeError(f"flashkm cannot read DLPack dtype code {t.dtype.code} with {bits} bits "
                        f"and {t.dtype.lanes} lanes; pass floating-point data")
    itemsize = bits // 8
    order = "<" if sys.byteorder == "little" else ">"
    typestr = ("|" if itemsize == 1 else order) + ("u" if kind == "bfloat" else kind) + str(itemsize)
    strides = None if not t.strides else tuple(t.strides[i] * itemsize for i in range(t.ndim))
    if 0 in shape:  # no memory to view (its pointer may be null)
        _release(managed)
        view = np.empty(shape, dtype=np.dtype(typestr))
    else:
        interface = {"version": 3, "shape": shape, "typestr": typestr, "strides": strides,
                     "data": (t.data + t.byte_offset, True)}
        view = np.asarray(_Owner(managed, interface))
    if kind == "bfloat":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("bfloat16 input needs the ml_dtypes package (pip install ml_dtypes)") from None
        view = view.view(ml_dtypes.bfloat16)
    return view


def _from_dlpack_of(X):
    """The ``from_dlpack`` of X's library: its array-API namespace's, else that of the nearest
    module enclosing X's type that has one (``torch.from_dlpack`` for a torch.Tensor)."""
    if hasattr(X, "__array_namespace__"):
        f = getattr(X.__array_namespace__(), "from_dlpack", None)
        if callable(f):
            return f
    module = type(X).__module__
    while module:
        f = getattr(sys.modules.get(module), "from_dlpack", None)
        if callable(f):
            return f
        module = module.rpartition(".")[0]
    return None


def as_numpy(X, name="X"):
    """(array, back): X itself and None for anything but a DLPack array of another library;
    for one, a numpy view of its memory and a function that turns numpy results into X's
    library's arrays. Refuses arrays on a device the CPU cannot read, naming the device."""
    if not is_dlpack(X):
        return X, None
    kind = int(X.__dlpack_device__()[0])
    if kind not in _CPU_READABLE:
        raise ValueError(f"flashkm runs on the CPU; {name} is on {device_name(X)}. Copy it to the "
                         f"CPU first (a torch tensor: {name}.cpu()).")
    from_dlpack = _from_dlpack_of(X)

    def back(result):
        if from_dlpack is None or not isinstance(result, np.ndarray):
            return result
        return from_dlpack(np.ascontiguousarray(result))

    return _numpy_view(X), back


def accepts_dlpack(method):
    """Decorator for an estimator method taking X first: X (and any other argument, such as
    sample_weight) may be a DLPack array, read in place on the CPU, and an array result comes
    back in X's kind of array -- except from transform and fit_transform when ``set_output``
    asks for a DataFrame, which is built from numpy."""
    dataframe_out = method.__name__ in ("transform", "fit_transform")

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        X, back = as_numpy(X)
        args = [as_numpy(a, "argument")[0] for a in args]
        kwargs = {k: as_numpy(v, k)[0] for k, v in kwargs.items()}
        result = method(self, X, *args, **kwargs)
        if back is None or (dataframe_out and _get_output_config("transform", self)["dense"] != "default"):
            return result
        return back(result)

    return wrapper
