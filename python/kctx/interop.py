"""One resolver for what launch-like calls accept: a framework's own
streams, tensors and scalars (issue 18).

Nothing here imports a framework: every object is recognised by the
attributes its framework documents, in a fixed order. The sim's Python
objects implement the same protocols (``kctx.sim.Stream.handle``,
``kctx.sim.DeviceBuffer.__kctx_tensor__``), so the core never imports the
sim module.

Streams, first match wins (``stream_handle``):

1. ``__cuda_stream__`` (cuda-python's ``cuda.core``, CuPy): a method (or
   attribute) giving ``(version, handle)``;
2. ``.cuda_stream`` (PyTorch's ``torch.cuda.Stream``);
3. ``.npu_stream`` (torch_npu's ``torch_npu.npu.Stream``: the
   ``aclrtStream`` as an int);
4. ``.ptr`` (CuPy's ``cupy.cuda.Stream``);
5. ``.int_ptr`` (PyOpenCL's ``CommandQueue``);
6. ``.handle`` (kctx's ``sim.Stream``);
7. an ``int`` or anything with ``__index__``.

Tensors, first match wins (``tensor_arg``):

1. kctx's own: ``kctx.Tensor``, or an object with ``__kctx_tensor__()``
   giving ``(address, nbytes)`` (``kctx.sim.DeviceBuffer``);
2. PyOpenCL SVM: ``svm_ptr`` and ``size`` (an ``SVMAllocation`` /
   ``SVMPointer``), or a ``pyopencl.array.Array`` whose ``base_data`` is one
   (``offset``, ``nbytes``, ``flags.c_contiguous``);
3. an NPU tensor (a torch tensor on torch_npu's ``npu`` device: its
   ``device.type`` is ``"npu"``): ``data_ptr()`` (the storage offset
   included), ``numel() * element_size()`` bytes, ``is_contiguous()``,
   ``device.index``, and ``untyped_storage().nbytes()`` to tell a released
   storage. torch_npu has no array interface, and torch's DLPack export
   knows no NPU device, so it is read this way (``npu_tensor``);
4. ``__cuda_array_interface__`` v2/v3 (PyTorch, CuPy, Numba). Its ``stream``
   entry is never synchronised on: that would break a capture. The caller
   orders the producer's work before the launch, as with any stream API;
5. DLPack: ``__dlpack_device__()`` then ``__dlpack__(stream=-1)`` (-1: no
   synchronisation), read without taking ownership;
6. an explicit ``(address, nbytes)`` tuple.

Non-contiguous views and arrays on another device than the context's are
refused with ``kctx.KctxValueError``; a host array (numpy, a DLPack CPU
tensor, a bytes-like object) is refused with a message saying how to put it
on the device. What holds no memory is refused with ``kctx.InvalidArgument``,
the class the library gives a NULL or zero-length tensor (K18), before any C
call: an object its framework says was released (a PyOpenCL SVM allocation
whose ``svm_ptr`` reads 0, a ``pyopencl.SVM`` of an array whose allocation
was released, a ``pyopencl.array.Array`` whose ``base_data`` was, a freed
``kctx.sim.DeviceBuffer``, an NPU tensor whose storage was released:
``untyped_storage().nbytes()`` is 0), any tensor at address 0 (an array interface or
DLPack tensor with a NULL data pointer) and any tensor of 0 bytes.

Scalars (``scalar_value``): ``int`` (64-bit; negative as two's
complement), ``float`` (its IEEE-754 binary64 bits, as a C ``double``;
use ``kctx.scalar_f32`` for a float32), numpy scalars (integers by value,
floats by their own width's bits: ``numpy.float32`` gives its 32 bits),
ctypes scalars (``c_float``: 32 bits, ``c_double``: 64 bits, integers by
value) and anything with ``__index__``. ``bool`` is refused.
"""
from __future__ import annotations

import ctypes
import struct
from typing import Callable, Iterable, Mapping, NamedTuple, Optional, Tuple, Union

try:  # Python 3.8+: typing.Protocol
    from typing import Protocol, runtime_checkable
except ImportError:  # pragma: no cover
    from typing_extensions import Protocol, runtime_checkable  # type: ignore[assignment]

from ._lib import Arg as _CArg
from ._util import U32_MAX, U64_MAX, check_int
from .errors import InvalidArgument, KctxTypeError, KctxValueError

_I64_MIN = -(1 << 63)


class Tensor(NamedTuple):
    """A tensor argument: a device address of the context's device and its
    size in bytes (> 0)."""

    addr: int
    nbytes: int


# ---------------------------------------------------------------------------
# What users pass, as protocols (no Any in the user surface)
# ---------------------------------------------------------------------------
@runtime_checkable
class SupportsIndex(Protocol):
    def __index__(self) -> int: ...


@runtime_checkable
class KctxTensorLike(Protocol):
    """An object that is a kctx tensor (``kctx.sim.DeviceBuffer``)."""

    def __kctx_tensor__(self) -> Tuple[int, int]: ...


@runtime_checkable
class CudaArrayInterface(Protocol):
    """PyTorch, CuPy, Numba device arrays."""

    @property
    def __cuda_array_interface__(self) -> Mapping[str, object]: ...


@runtime_checkable
class DLPackTensor(Protocol):
    """Any DLPack producer."""

    def __dlpack__(self, *, stream: Optional[int] = None) -> object: ...

    def __dlpack_device__(self) -> Tuple[int, int]: ...


@runtime_checkable
class CudaStreamProtocol(Protocol):
    """cuda-python's ``cuda.core`` stream protocol (CuPy implements it too)."""

    def __cuda_stream__(self) -> Tuple[int, int]: ...


@runtime_checkable
class HasHandle(Protocol):
    """kctx's ``sim.Stream``."""

    @property
    def handle(self) -> int: ...


@runtime_checkable
class TorchStreamLike(Protocol):
    """``torch.cuda.Stream``"""

    @property
    def cuda_stream(self) -> int: ...


@runtime_checkable
class NpuStreamLike(Protocol):
    """``torch_npu.npu.Stream``: ``npu_stream`` is its ``aclrtStream`` as an
    int (torch_npu's ``PyLong_FromVoidPtr`` of the stream)."""

    @property
    def npu_stream(self) -> int: ...


@runtime_checkable
class NpuDevice(Protocol):
    """``torch.device`` as an NPU tensor has it (``npu:0``)."""

    @property
    def type(self) -> str: ...

    @property
    def index(self) -> Optional[int]: ...


@runtime_checkable
class NpuTensorLike(Protocol):
    """A torch tensor on torch_npu's ``npu`` device, as the resolver reads it."""

    @property
    def device(self) -> NpuDevice: ...

    def data_ptr(self) -> int: ...

    def numel(self) -> int: ...

    def element_size(self) -> int: ...

    def is_contiguous(self) -> bool: ...


@runtime_checkable
class CuPyStreamLike(Protocol):
    """``cupy.cuda.Stream``"""

    @property
    def ptr(self) -> int: ...


@runtime_checkable
class OpenCLQueueLike(Protocol):
    """``pyopencl.CommandQueue``"""

    @property
    def int_ptr(self) -> int: ...


@runtime_checkable
class SVMLike(Protocol):
    """A PyOpenCL SVM allocation (``SVMAllocation``, ``SVMPointer``)."""

    @property
    def svm_ptr(self) -> int: ...

    @property
    def size(self) -> Optional[int]: ...  # PyOpenCL's stubs: None when the size is unknown


#: A tensor argument: kctx's own, a framework's device array, or (address,
#: nbytes). (An SVM-backed ``pyopencl.array.Array`` is accepted at run time;
#: pass its ``base_data`` to keep a type checker's help.)
TensorLike = Union[Tensor, KctxTensorLike, SVMLike, NpuTensorLike, CudaArrayInterface, DLPackTensor, Tuple[int, int]]
#: A scalar argument. numpy integer scalars are SupportsIndex and
#: numpy.float64 is a float; numpy.float32 is accepted at run time but not by
#: this type (write ``ctypes.c_float(x)`` to keep a type checker's help).
ScalarLike = Union[int, float, SupportsIndex, ctypes.c_float, ctypes.c_double, ctypes.c_int8, ctypes.c_int16,
                   ctypes.c_int32, ctypes.c_int64, ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32,
                   ctypes.c_uint64]
#: One launch argument.
Arg = Union[TensorLike, ScalarLike]
#: A stream: a framework's stream object, kctx's sim.Stream, or a native handle.
StreamLike = Union[int, SupportsIndex, CudaStreamProtocol, TorchStreamLike, NpuStreamLike, CuPyStreamLike,
                   OpenCLQueueLike, HasHandle]


def _index(v: object) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return int(v)
    idx = getattr(type(v), "__index__", None)
    return int(idx(v)) if idx is not None else None


# ---------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------
def stream_handle(stream: StreamLike) -> int:
    """The native stream handle of `stream` (see the module docstring for
    the order). KctxTypeError for anything else; InvalidArgument for a
    handle out of range."""
    if isinstance(stream, bool):
        raise KctxTypeError("stream must be a stream object or a native stream handle (int), not bool")
    h: Optional[int] = None
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        got = proto() if callable(proto) else proto
        if not isinstance(got, tuple) or len(got) != 2:
            raise KctxTypeError(f"__cuda_stream__ of {type(stream).__name__} must give (version, handle), "
                                f"not {got!r}")
        h = _index(got[1])
    else:
        for attr in ("cuda_stream", "npu_stream", "ptr", "int_ptr", "handle"):
            v = getattr(stream, attr, None)
            if v is not None and not callable(v):
                h = _index(v)
                if h is None:
                    raise KctxTypeError(f"{type(stream).__name__}.{attr} must be an int, not {type(v).__name__}")
                break
        else:
            h = _index(stream)
    if h is None:
        raise KctxTypeError(
            f"stream must be a stream object (__cuda_stream__, torch .cuda_stream, torch_npu .npu_stream, cupy "
            f".ptr, pyopencl .int_ptr, kctx.sim.Stream) or a native stream handle (int), not "
            f"{type(stream).__name__}")
    return check_int("stream", h, 0, U64_MAX, InvalidArgument)


# ---------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------
_HOST_HINT = ("copy it to the device first (kctx.sim.DeviceBuffer.copy_from_host on the sim, "
              "torch.Tensor.cuda() / torch.Tensor.npu() / cupy.asarray() / pyopencl.array.to_device() with a "
              "framework)")
_DL_CPU, _DL_CUDA_HOST, _DL_CUDA_MANAGED, _DL_ONEAPI, _DL_OPENCL = 1, 3, 13, 14, 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _c_contiguous(shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]], unit: int) -> bool:
    """strides (in `unit`s) describe a C-contiguous layout of `shape`."""
    if strides is None:
        return True
    expected = 1
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _check_device(name: str, what: str, dev: Optional[int], device: Callable[[], int]) -> None:
    if dev is None:
        return
    mine = device()
    if mine >= 0 and dev != mine:
        raise KctxValueError(f"{name} is {what} on device {dev}, but the context's device is {mine}: "
                             f"move it to device {mine} first")


def _framework_device(obj: object) -> Optional[int]:
    """The device index a framework array declares (torch: .device.index,
    cupy: .device.id), None when it declares none."""
    d = getattr(obj, "device", None)
    if d is None or isinstance(d, (int, str)):
        return None
    for attr in ("index", "id"):
        v = getattr(d, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _from_cai(name: str, obj: object, cai: Mapping[str, object], device: Callable[[], int]) -> Tuple[int, int]:
    version = cai.get("version", 0)
    if not isinstance(version, int) or version < 2:
        raise KctxValueError(f"{name}: __cuda_array_interface__ version {version!r} is not supported (v2 or v3)")
    if cai.get("mask") is not None:
        raise KctxValueError(f"{name}: a masked array cannot be passed as a tensor")
    shape = tuple(int(x) for x in cai["shape"])  # type: ignore[attr-defined]
    typestr = str(cai["typestr"])
    itemsize = int(typestr[2:])
    data = cai["data"]
    addr = int(data[0])  # type: ignore[index]
    strides_v = cai.get("strides")
    strides = None if strides_v is None else tuple(int(x) for x in strides_v)  # type: ignore[attr-defined]
    if strides is not None and not _c_contiguous(tuple(shape) + (itemsize,), tuple(strides) + (1,), 1):
        raise KctxValueError(f"{name} is a non-contiguous view (shape {shape}, strides {strides} bytes): pass a "
                             f"contiguous copy (.contiguous() in PyTorch, cupy.ascontiguousarray)")
    _check_device(name, "an array", _framework_device(obj), device)
    n = itemsize
    for dim in shape:
        n *= dim
    return addr, n


def _from_dlpack(name: str, obj: object, device: Callable[[], int]) -> Tuple[int, int]:
    dev_fn = getattr(obj, "__dlpack_device__", None)
    if dev_fn is not None:
        dev_type, dev_id = dev_fn()
        if int(dev_type) in (_DL_CPU, _DL_CUDA_HOST):
            raise KctxValueError(f"{name} is a host array (DLPack device type {int(dev_type)}): {_HOST_HINT}")
        _check_device(name, "a DLPack tensor", int(dev_id), device)
    capsule = obj.__dlpack__(stream=-1)  # type: ignore[attr-defined]  # -1: never synchronise
    ptr = _capsule_get(capsule, b"dltensor")
    if not ptr:  # pragma: no cover - PyCapsule_GetPointer raised already
        raise KctxValueError(f"{name}: __dlpack__ gave no DLPack tensor")
    t = _DLTensor.from_address(ptr)  # DLManagedTensor starts with its DLTensor
    if t.device.device_type in (_DL_CPU, _DL_CUDA_HOST):
        raise KctxValueError(f"{name} is a host array (DLPack device type {t.device.device_type}): {_HOST_HINT}")
    _check_device(name, "a DLPack tensor", int(t.device.device_id), device)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
    if not _c_contiguous(shape, strides, 1):
        raise KctxValueError(f"{name} is a non-contiguous view (shape {shape}, strides {strides} elements): pass "
                             f"a contiguous copy")
    n = (t.dtype.bits * t.dtype.lanes + 7) // 8
    for dim in shape:
        n *= dim
    return int(t.data or 0) + int(t.byte_offset), n


_RELEASED_HINT = ("keep the allocation alive until every launch that uses it has finished (a launch with a "
                  "released allocation would make the device read and write freed memory)")


def _svm_base_released(obj: object) -> bool:
    """`obj` is a ``pyopencl.SVM`` wrapper whose memory (``.mem``, a numpy
    array from ``fsvm_empty``) belongs to an SVM allocation that was released:
    some object on its ``.base`` chain is an allocation whose ``svm_ptr``
    reads 0. PyOpenCL's wrapper keeps the array's stale address."""
    mem = getattr(obj, "mem", None)
    seen = 0
    while mem is not None and seen < 32:  # numpy collapses view chains; 32 is far more than any real one
        ptr = getattr(mem, "svm_ptr", None)
        if ptr is not None and not isinstance(ptr, bool) and _index(ptr) == 0:
            return True
        mem = getattr(mem, "base", None)
        seen += 1
    return False


def svm_tensor(obj: object, name: str) -> Optional[Tuple[int, int]]:
    """(address, nbytes) of a PyOpenCL SVM object (``SVMAllocation``,
    ``pyopencl.SVM``, or a ``pyopencl.array.Array`` whose ``base_data`` is
    one), None when `obj` is none of them. Refused with InvalidArgument (as
    the library refuses a NULL tensor, K18): an allocation PyOpenCL says was
    released (``svm_ptr`` reads 0, also as an array's ``base_data``), and an
    ``SVM`` wrapper of an array whose allocation was released. KctxValueError:
    an unknown size, a non-contiguous array."""
    svm = getattr(obj, "svm_ptr", None)
    if svm is not None:
        if _index(svm) == 0:
            raise InvalidArgument(f"{name} is a released PyOpenCL SVM allocation ({type(obj).__name__}.svm_ptr "
                                  f"reads 0): {_RELEASED_HINT} (K18)")
        if _svm_base_released(obj):
            raise InvalidArgument(f"{name} is a {type(obj).__name__} of an array whose SVM allocation was "
                                  f"released (its base's svm_ptr reads 0): {_RELEASED_HINT} (K18)")
        size = getattr(obj, "size", None)
        if size is None:
            raise KctxValueError(f"{name} is an SVM pointer of unknown size ({type(obj).__name__}.size is None): "
                                 f"pass kctx.Tensor(svm_ptr, nbytes)")
        return int(svm), int(size)
    base = getattr(obj, "base_data", None)
    if base is not None and getattr(base, "svm_ptr", None) is not None:  # pyopencl.array.Array on SVM
        if _index(base.svm_ptr) == 0:
            raise InvalidArgument(f"{name} is a pyopencl array whose SVM allocation (base_data) was released "
                                  f"(its svm_ptr reads 0): {_RELEASED_HINT} (K18)")
        flags = getattr(obj, "flags", None)
        if flags is not None and not getattr(flags, "c_contiguous", True):
            raise KctxValueError(f"{name} is a non-contiguous pyopencl array: pass a contiguous copy")
        return int(base.svm_ptr) + int(getattr(obj, "offset", 0)), int(getattr(obj, "nbytes"))
    return None


def is_npu_tensor(obj: object) -> bool:
    """`obj` is a tensor on torch_npu's ``npu`` device: its ``device.type``
    is ``"npu"`` and it has a ``data_ptr()`` method."""
    d = getattr(obj, "device", None)
    return (d is not None and not isinstance(d, (int, str)) and getattr(d, "type", None) == "npu"
            and callable(getattr(obj, "data_ptr", None)))


def npu_tensor(obj: object, name: str, device: Callable[[], int]) -> Optional[Tuple[int, int]]:
    """(address, nbytes) of an NPU tensor (``is_npu_tensor``), None for any
    other object: ``data_ptr()`` (torch's address of the first element, the
    storage offset included) and ``numel() * element_size()`` bytes.
    KctxValueError: a non-contiguous view, a tensor on another NPU than the
    context's. InvalidArgument (K18): a tensor whose storage was released
    (``untyped_storage().nbytes()`` reads 0, as after
    ``untyped_storage().resize_(0)``); a NULL or empty one is refused by
    ``tensor_arg`` as any tensor is. Nothing here synchronises."""
    if not is_npu_tensor(obj):
        return None
    contiguous = getattr(obj, "is_contiguous", None)
    if callable(contiguous) and not contiguous():
        raise KctxValueError(f"{name} is a non-contiguous NPU tensor view: pass a contiguous copy (.contiguous())")
    _check_device(name, "an NPU tensor", _framework_device(obj), device)
    addr = _index(obj.data_ptr())  # type: ignore[attr-defined]
    numel, itemsize = getattr(obj, "numel", None), getattr(obj, "element_size", None)
    if addr is None or not callable(numel) or not callable(itemsize):
        raise KctxValueError(f"{name}: an NPU tensor needs data_ptr(), numel() and element_size() giving ints")
    n, size = _index(numel()), _index(itemsize())
    if n is None or size is None:
        raise KctxValueError(f"{name}: an NPU tensor's numel() and element_size() must give ints")
    storage_of = getattr(obj, "untyped_storage", None)
    if n * size > 0 and callable(storage_of):  # an empty tensor's storage is empty too: tensor_arg refuses it
        storage_bytes = getattr(storage_of(), "nbytes", None)
        if callable(storage_bytes) and _index(storage_bytes()) == 0:
            raise InvalidArgument(f"{name} is an NPU tensor whose storage was released (untyped_storage().nbytes() "
                                  f"reads 0): {_RELEASED_HINT} (K18)")
    return addr, n * size


def _resolve_tensor(obj: object, name: str, dev: Callable[[], int]) -> Optional[Tuple[int, int]]:
    if isinstance(obj, Tensor):
        return obj.addr, obj.nbytes
    own = getattr(obj, "__kctx_tensor__", None)
    if own is not None:
        try:
            a, n = own()
        except InvalidArgument as e:  # a freed kctx.sim.DeviceBuffer: say which argument
            raise InvalidArgument(f"{name} is {e}") from None
        return a, n
    svm = svm_tensor(obj, name)
    if svm is not None:
        return svm
    npu = npu_tensor(obj, name, dev)
    if npu is not None:
        return npu
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(name, obj, cai, dev)
    if getattr(obj, "__dlpack__", None) is not None:
        return _from_dlpack(name, obj, dev)
    if isinstance(obj, tuple) and len(obj) == 2 and _index(obj[0]) is not None and _index(obj[1]) is not None:
        return _index(obj[0]), _index(obj[1])  # type: ignore[return-value]
    if (getattr(obj, "__array_interface__", None) is not None
            or isinstance(obj, (bytes, bytearray, memoryview))):
        raise KctxValueError(f"{name} is a host array ({type(obj).__name__}): {_HOST_HINT}")
    return None


def check_tensor(name: str, what: str, addr: int, nbytes: int) -> None:
    """A tensor is a device address that is not NULL and a size > 0, on every
    platform (K18): InvalidArgument otherwise, before any C call, the class
    the library gives the same refusal. `what` names the object."""
    if nbytes == 0:
        raise InvalidArgument(f"{name} ({what}) is a zero-length tensor: a tensor's size must be > 0 (K18)")
    if addr == 0:
        raise InvalidArgument(f"{name} ({what}) has device address 0 (NULL) for {nbytes} bytes: a released or "
                              f"never-allocated buffer is not a tensor (K18)")


def tensor_arg(obj: object, name: str = "tensor", device: Optional[Callable[[], int]] = None) -> Optional[Tuple[int, int]]:
    """(address, nbytes) of a tensor-like `obj`, or None when `obj` is no
    tensor at all. `device` gives the context's device (checked only when
    the object declares one). KctxValueError for a non-contiguous view, an
    array on another device or a host array; InvalidArgument (K18) for an
    object its framework says was released, a NULL address or a size of 0."""
    dev: Callable[[], int] = device if device is not None else (lambda: -1)
    t = _resolve_tensor(obj, name, dev)
    if t is not None:
        a = check_int(f"{name} address", t[0], 0, U64_MAX, InvalidArgument)
        n = check_int(f"{name} nbytes", t[1], 0, U64_MAX, InvalidArgument)
        check_tensor(name, type(obj).__name__, a, n)
        return a, n
    return t


# ---------------------------------------------------------------------------
# Scalars
# ---------------------------------------------------------------------------
_CTYPES_FLOATS = {ctypes.c_float: "<f", ctypes.c_double: "<d"}


def _is_device_object(obj: object) -> bool:
    """obj declares itself a device tensor (checked before __index__, which a
    0-d framework tensor also has)."""
    return is_npu_tensor(obj) or any(getattr(obj, attr, None) is not None for attr in (
        "__kctx_tensor__", "svm_ptr", "__cuda_array_interface__", "__dlpack_device__"))


def scalar_value(obj: object, name: str = "scalar") -> Optional[int]:
    """The 64-bit value a scalar argument carries, or None when `obj` is no
    scalar. bool is refused (KctxTypeError)."""
    if isinstance(obj, bool):
        raise KctxTypeError(f"{name} must not be a bool: pass an int")
    if isinstance(obj, int):
        return check_int(name, obj, _I64_MIN, U64_MAX, InvalidArgument) & U64_MAX
    if isinstance(obj, float):
        return int.from_bytes(struct.pack("<d", obj), "little")
    if isinstance(obj, ctypes._SimpleCData):
        fmt = _CTYPES_FLOATS.get(type(obj))
        if fmt is not None:
            return int.from_bytes(struct.pack(fmt, obj.value), "little")
        v = obj.value
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return check_int(name, v, _I64_MIN, U64_MAX, InvalidArgument) & U64_MAX
        raise KctxTypeError(f"{name}: a {type(obj).__name__} is not a scalar")
    if _is_device_object(obj):
        return None  # a device tensor, even a 0-d one with __index__ (reading it would synchronise)
    if getattr(obj, "__array_interface__", None) is not None and getattr(obj, "shape", ()) != ():
        return None  # a host array (numpy): tensor_arg refuses it with advice
    dtype = getattr(obj, "dtype", None)
    if dtype is not None and getattr(obj, "shape", None) == () and getattr(dtype, "kind", "") == "f":
        raw = obj.tobytes()  # type: ignore[attr-defined]  # numpy float scalar: its own width's bits
        if len(raw) > 8:
            raise KctxValueError(f"{name}: a {len(raw) * 8}-bit float does not fit a 64-bit scalar")
        return int.from_bytes(bytes(raw), "little")
    try:
        idx = _index(obj)
    except TypeError:  # an __index__ that refuses (a numpy array of more than one element)
        return None
    if idx is not None:
        return check_int(name, idx, _I64_MIN, U64_MAX, InvalidArgument) & U64_MAX
    return None


# ---------------------------------------------------------------------------
# Argument arrays
# ---------------------------------------------------------------------------
def marshal_args(args: Iterable[Arg], device: Optional[Callable[[], int]] = None) -> Tuple[ctypes.Array[_CArg], int]:
    """(kctx_arg array, count) for a sequence of tensors and scalars."""
    if isinstance(args, (str, bytes, bytearray, memoryview, Mapping)) or not hasattr(args, "__iter__"):
        raise KctxTypeError(f"args must be a sequence of tensors and scalars, not {type(args).__name__}")
    items = list(args)
    if len(items) > U32_MAX:
        raise InvalidArgument("too many arguments")
    arr = (_CArg * max(len(items), 1))()
    for i, a in enumerate(items):
        name = f"args[{i}]"
        v = scalar_value(a, name)
        if v is not None:
            arr[i].value = v
            arr[i].size = 0
            continue
        t = tensor_arg(a, name, device)
        if t is None:
            raise KctxTypeError(
                f"{name} must be a tensor (kctx.Tensor, kctx.sim.DeviceBuffer, a PyOpenCL SVM allocation, an NPU "
                f"tensor, an object with __cuda_array_interface__ or __dlpack__, an (address, nbytes) tuple) or a "
                f"scalar (int, float, numpy or ctypes scalar), not {type(a).__name__}")
        arr[i].value, arr[i].size = t
    return arr, len(items)
