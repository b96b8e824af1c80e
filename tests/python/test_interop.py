"""Issue 18 item 1: one resolver for streams, tensors and scalars.

No GPU and no framework is installed here (pyopencl, torch, cupy and
cuda-python are absent), so the framework objects are STAND-INS carrying
exactly the attributes each framework documents, wrapping real sim streams
and sim device memory: the launches below run on the sim device and their
results are checked.
"""
from __future__ import annotations

import ctypes
import struct
from types import SimpleNamespace
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

import kctx
from kctx import interop, sim
from support import N, add_image, scalar_add_image, u32s


# -- stand-ins ---------------------------------------------------------------
class TorchStream:  # torch.cuda.Stream: .cuda_stream
    def __init__(self, s: sim.Stream) -> None:
        self.cuda_stream = s.handle


class CuPyStream:  # cupy.cuda.Stream: .ptr
    def __init__(self, s: sim.Stream) -> None:
        self.ptr = s.handle


class CudaCoreStream:  # cuda.core.experimental.Stream: __cuda_stream__() -> (version, handle)
    def __init__(self, s: sim.Stream) -> None:
        self._h = s.handle

    def __cuda_stream__(self) -> Tuple[int, int]:
        return (0, self._h)


class PyOpenCLQueue:  # pyopencl.CommandQueue: .int_ptr
    def __init__(self, s: sim.Stream) -> None:
        self.int_ptr = s.handle


class WatchedDict(Dict[str, object]):
    """A __cuda_array_interface__ that records which keys were read."""

    def __init__(self, *a: object, **k: object) -> None:
        super().__init__(*a, **k)
        self.read: List[str] = []

    def __getitem__(self, key: str) -> object:
        self.read.append(key)
        return super().__getitem__(key)

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.read.append(key)
        return super().get(key, default)


class TorchTensor:  # torch.Tensor on cuda: __cuda_array_interface__ v2, .device.index, and __dlpack__
    def __init__(self, ptr: int, n: int, index: int = 0, strides: object = None) -> None:
        self.cai = WatchedDict(shape=(n,), typestr="<u4", data=(ptr, False), version=2, strides=strides, stream=1)
        self.device = SimpleNamespace(type="cuda", index=index)

    @property
    def __cuda_array_interface__(self) -> Dict[str, object]:
        return self.cai

    def __dlpack__(self, stream: object = None) -> object:
        raise AssertionError("__cuda_array_interface__ comes before DLPack")


class CuPyArray:  # cupy.ndarray: __cuda_array_interface__ v3, .device.id
    def __init__(self, ptr: int, shape: Tuple[int, ...], strides: object = None, dev: int = 0) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<u4", "data": (ptr, False), "version": 3,
                                         "strides": strides, "stream": 1}
        self.device = SimpleNamespace(id=dev)


class PyOpenCLSVM:  # pyopencl.SVMAllocation: svm_ptr, size (None: unknown, as PyOpenCL's stubs allow)
    def __init__(self, ptr: int, size: Optional[int]) -> None:
        self.svm_ptr = ptr
        self.size = size


class DLPackArray:  # any DLPack producer, with a real "dltensor" capsule
    def __init__(self, ptr: int, shape: Tuple[int, ...], strides: object = None, dev: Tuple[int, int] = (2, 0),
                 bits: int = 32) -> None:
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(shape))(*strides)  # type: ignore[arg-type]
        self._t = interop._DLTensor()
        self._t.data = ptr
        self._t.device.device_type, self._t.device.device_id = dev
        self._t.ndim = len(shape)
        self._t.dtype.code, self._t.dtype.bits, self._t.dtype.lanes = 1, bits, 1
        self._t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            self._t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        self._dev = dev
        self.streams: List[object] = []

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self._dev

    def __dlpack__(self, stream: object = None) -> object:
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


class NumpyArray:  # a host numpy array: __array_interface__, shape, and an __index__ that refuses
    __array_interface__ = {"shape": (4,), "typestr": "<u4", "data": (0x1000, False), "version": 3}
    shape = (4,)

    def __index__(self) -> int:
        raise TypeError("only integer scalar arrays can be converted to a scalar index")


class NumpyU32:  # numpy.uint32 scalar: __index__
    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v


class NumpyF32:  # numpy.float32 scalar: dtype.kind "f", shape (), tobytes
    dtype = SimpleNamespace(kind="f", itemsize=4)
    shape = ()

    def __init__(self, v: float) -> None:
        self.v = v

    def tobytes(self) -> bytes:
        return struct.pack("<f", self.v)


@pytest.fixture
def ready(kernel_bytes) -> Iterator[Tuple[kctx.Context, sim.Stream, sim.DeviceBuffer]]:
    from support import kernel_context

    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        s.memset_async(out, 0)
        yield ctx, s, out
        s.synchronize()


def test_every_framework_stream_is_resolved(ready):
    ctx, s, out = ready
    streams = [s, s.handle, NumpyU32(s.handle), TorchStream(s), CuPyStream(s), CudaCoreStream(s), PyOpenCLQueue(s)]
    for st in streams:
        assert interop.stream_handle(st) == s.handle, st
        ctx.launch(1, [out], st)
    s.synchronize()
    assert set(u32s(out)) == {len(streams)}


def test_every_framework_tensor_is_resolved(ready):
    ctx, s, out = ready
    torch = TorchTensor(out.ptr, N)
    dl = DLPackArray(out.ptr, (N // 4, 4))
    tensors = [out, out.tensor(), (out.ptr, out.size), torch, CuPyArray(out.ptr, (N // 2, 2), strides=(8, 4)),
               PyOpenCLSVM(out.ptr, out.size), dl]
    for t in tensors:
        assert interop.tensor_arg(t) == (out.ptr, 4 * N), t
        ctx.launch(1, [t], s)
    s.synchronize()
    assert set(u32s(out)) == {len(tensors)}
    assert "stream" not in torch.cai.read  # never synchronised on (a capture would break)
    assert dl.streams and all(x == -1 for x in dl.streams)  # DLPack asked with stream=-1


def test_bad_tensors_are_refused_with_a_clear_message(ready):
    ctx, s, out = ready
    with pytest.raises(kctx.KctxValueError, match="non-contiguous"):
        ctx.launch(1, [CuPyArray(out.ptr, (N // 2, 2), strides=(4, 8))], s)  # a transposed view
    with pytest.raises(kctx.KctxValueError, match="non-contiguous"):
        ctx.launch(1, [DLPackArray(out.ptr, (N // 2, 2), strides=(1, N // 2))], s)
    with pytest.raises(kctx.KctxValueError, match="device 1.*device is 0"):
        ctx.launch(1, [TorchTensor(out.ptr, N, index=1)], s)
    with pytest.raises(kctx.KctxValueError, match="device 1"):
        ctx.launch(1, [DLPackArray(out.ptr, (N,), dev=(2, 1))], s)
    for host in (NumpyArray(), DLPackArray(out.ptr, (N,), dev=(1, 0)), bytearray(16)):
        with pytest.raises(kctx.KctxValueError, match="host array.*copy it to the device"):
            ctx.launch(1, [host], s)
    assert isinstance(kctx.KctxValueError("x"), ValueError)
    s.synchronize()
    assert set(u32s(out)) == {0}  # nothing was launched


def test_k18_released_and_null_framework_tensors_are_refused_before_any_c_call(ready):
    """Issue 23 item 1, the resolver's sweep: framework objects that say they
    were released or hold no memory — a CuPy- or PyTorch-shaped array whose
    data pointer reads 0, a DLPack tensor with a NULL data pointer, a PyOpenCL
    SVM allocation whose svm_ptr reads 0, a freed kctx.sim.DeviceBuffer, a
    NULL (address, nbytes) and zero-length tensors — are refused with
    InvalidArgument (the class the library gives a NULL or zero-length tensor,
    K18) naming what is wrong, before any C call: the context makes no
    platform call, nothing is enqueued, and it stays READY."""
    ctx, s, out = ready
    freed = sim.DeviceBuffer(64)
    freed.free()
    cases = [
        (CuPyArray(0, (N,)), "device address 0 \\(NULL\\)"),
        (TorchTensor(0, N), "device address 0 \\(NULL\\)"),
        (DLPackArray(0, (N,)), "device address 0 \\(NULL\\)"),
        (PyOpenCLSVM(0, 4 * N), "released PyOpenCL SVM allocation"),
        (freed, "was freed"),
        (kctx.Tensor(0, 4 * N), "device address 0 \\(NULL\\)"),
        ((0, 4 * N), "device address 0 \\(NULL\\)"),
        (CuPyArray(out.ptr, (0,)), "zero-length tensor"),
        (kctx.Tensor(out.ptr, 0), "zero-length tensor"),
    ]
    calls = ctx.platform_calls
    for bad, message in cases:
        with pytest.raises(kctx.InvalidArgument, match=message) as e:
            ctx.launch(1, [bad], s)
        assert "(K18)" in str(e.value) and str(e.value).startswith("args[0]"), e.value
    with pytest.raises(kctx.InvalidArgument, match="was freed"):
        freed.tensor()
    assert ctx.platform_calls == calls  # refused by the binding: no C launch was made
    assert ctx.phase == kctx.Phase.READY
    ctx.launch(1, [out], s)  # nothing changed
    s.synchronize()
    assert set(u32s(out)) == {1}


def test_scalars_of_every_kind(kernel_bytes):
    def values(*args: object) -> List[int]:
        arr, n = interop.marshal_args(list(args))
        assert all(arr[i].size == 0 for i in range(n))
        return [arr[i].value for i in range(n)]

    f32 = int.from_bytes(struct.pack("<f", 1.5), "little")
    f64 = int.from_bytes(struct.pack("<d", 1.5), "little")
    assert values(7, -1, NumpyU32(9), ctypes.c_uint32(5), ctypes.c_int8(-2)) == [7, (1 << 64) - 1, 9, 5, (1 << 64) - 2]
    assert values(1.5, NumpyF32(1.5), ctypes.c_float(1.5), ctypes.c_double(1.5)) == [f64, f32, f32, f64]
    assert kctx.scalar_f32(1.5) == f32

    class ZeroDimCudaTensor(TorchTensor):  # a 0-d torch CUDA tensor also has __index__ (.item(): a sync)
        def __index__(self) -> int:
            raise AssertionError("a device tensor must not be read as a scalar")

    arr, _ = interop.marshal_args([ZeroDimCudaTensor(0x5000, 1)])
    assert (arr[0].value, arr[0].size) == (0x5000, 4)
    with pytest.raises(TypeError):
        values(True)
    # a numpy-integer-like scalar really launches (it was refused before issue 18)
    with kernel_context_prepared(kernel_bytes) as (ctx, s, out):
        ctx.launch(2, [out, NumpyU32(N | (3 << 32))], s)
        s.synchronize()
        assert set(u32s(out)) == {3}


def kernel_context_prepared(kernel_bytes):  # type: ignore[no-untyped-def]
    import contextlib

    from support import kernel_context

    @contextlib.contextmanager
    def cm():  # type: ignore[no-untyped-def]
        with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
            ctx.prepare(2, scalar_add_image(kernel_bytes))
            s.memset_async(out, 0)
            yield ctx, s, out
            s.synchronize()

    return cm()


def test_real_pyopencl_svm_arrays_and_queues_resolve():  # issue 18: PyOpenCL is a framework
    """With PyOpenCL on the machine's OpenCL (PoCL here): the real objects,
    not stand-ins, resolve to their SVM pointers and sizes and the queue's
    handle."""
    cl = pytest.importorskip("pyopencl")
    np = pytest.importorskip("numpy")
    try:
        ctx = cl.Context(dev_type=cl.device_type.ALL)
    except Exception as e:  # no OpenCL platform or device here
        pytest.skip(f"no OpenCL device: {e}")
    queue = cl.CommandQueue(ctx)
    alloc = cl.SVMAllocation(ctx, 256, 0, cl.svm_mem_flags.READ_WRITE)
    wrapped = cl.SVM(cl.csvm_empty(ctx, 16, np.float32))
    assert interop.stream_handle(queue) == queue.int_ptr
    assert interop.tensor_arg(alloc) == (alloc.svm_ptr, 256)
    assert interop.tensor_arg(wrapped) == (wrapped.svm_ptr, 64)


def test_an_svm_pointer_of_unknown_size_is_refused_with_the_way_out() -> None:
    """PyOpenCL's SVMPointer may have size None: a KctxValueError saying what to pass,
    never a bare TypeError from int(None)."""
    with pytest.raises(kctx.KctxValueError, match="unknown size"):
        interop.tensor_arg(PyOpenCLSVM(0x1000, None))
    assert interop.tensor_arg(PyOpenCLSVM(0x1000, 64)) == (0x1000, 64)


def test_the_sims_own_stream_taking_calls_accept_framework_streams(kernel_bytes):  # issue 18
    """Event.record and GraphExec.launch go through the same resolver."""
    with sim.Stream() as s, sim.Stream() as t, sim.Event() as ev:
        ev.record(TorchStream(s))  # a framework's stream object names the sim stream
        s.synchronize()
        with s.capture() as cap:
            ev.record(CuPyStream(s))
        with cap.graph as g, g.instantiate() as x:
            x.launch(CudaCoreStream(t))
            t.synchronize()
        with pytest.raises(kctx.KctxTypeError):
            ev.record("not a stream")  # type: ignore[arg-type]
