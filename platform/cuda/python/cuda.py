"""kctx.cuda: lend a framework's CUDA device and streams to kctx
(platform/cuda/include/kctx/cuda.h; docs/cuda.md is the platform's guide).

A CUDA framework (PyTorch, CuPy, cuda-python) owns the CUDA context and
makes it current on its threads. kctx never creates, sets or destroys one
(K4): ``kctx.cuda.Context()`` borrows the context current on the calling
thread when it is made (kctx_kernel_init: ``cuCtxGetCurrent``,
``cuCtxGetDevice``), as ``torch.cuda.init()`` or a first CuPy allocation
leaves it. CUDA's current context is per thread, so each thread that calls
the context must have the same one current (K5: another is InvalidState);
a framework's threads do.

Importing this module loads no CUDA driver: the driver is loaded on first
use (``availability()``, ``Context()``), from $KCTX_CUDA_DRIVER, else
``libcuda.so.1`` (docs/cuda.md, "Loading the driver"). Without it, the
first use raises a kctx exception with the platform's reason.

Streams (``CudaStreamLike``): a ``CUstream`` as an int (0 and 2, the legacy
and per-thread default streams, for eager launches only), PyTorch's
``torch.cuda.Stream`` (``.cuda_stream``), CuPy's ``cupy.cuda.Stream``
(``.ptr``), an object with the ``__cuda_stream__`` protocol (cuda-python's
``cuda.core``), cuda-python's ``CUstream`` (``int()`` of it), or an object
with ``.handle`` (``kctx.sim.Stream``: on the CUDA driver double a sim
stream is a CUstream). A PyOpenCL queue (``.int_ptr``) and a torch_npu
stream (``.npu_stream``, an aclrtStream: ``kctx.acl``) are refused.
Tensors: anything ``kctx.Arg`` is: a CUDA array with
``__cuda_array_interface__`` (a torch or CuPy tensor), DLPack, or
``(CUdeviceptr, nbytes)``; a released one (address 0) is refused with
InvalidArgument before any C call (K18, kctx.interop).
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int, c_uint64
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import _lib
from ._util import U64_MAX, check_int
from .caps import Capabilities, Platform, Strategy, StrategyLike, platform
from .context import BaseContext, PathLike, _check
from .errors import InvalidArgument, KctxTypeError, NotFound, Unsupported
from .interop import (Arg, CudaStreamProtocol, CuPyStreamLike, HasHandle, StreamLike, SupportsIndex, TorchStreamLike,
                      stream_handle)

# kctx/cuda.h (test support; in every libkctx: NOT_FOUND when cuda is not
# built), bound on first use (_lib.with_prototypes); loads no CUDA driver.
_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "kctx_cuda_driver_calls": (c_int, [c_char_p, POINTER(c_uint64)]),
}


def _cuda() -> ctypes.CDLL:
    return _lib.with_prototypes("kctx/cuda.h", _PROTOTYPES)


PLATFORM = "cuda"

__all__ = ["PLATFORM", "Context", "CudaStreamLike", "availability", "driver_calls", "require", "stream_handle_of"]

#: A CUDA stream: a CUstream as an int, or a framework's stream object.
CudaStreamLike = Union[int, SupportsIndex, CudaStreamProtocol, TorchStreamLike, CuPyStreamLike, HasHandle]


def availability() -> Platform:
    """kctx_get_platform_caps("cuda"): ``built``, ``available`` and the
    ``reason`` when not, with ``caps`` when available. The first call in a
    process loads the driver (the registry's probe, once). Never raises a
    kctx status."""
    return platform(PLATFORM)


def require() -> Capabilities:
    """The cuda platform's capabilities, or the reason it cannot be used:
    NotFound (libkctx was built without it: no nvcc), Unsupported (built,
    but no usable driver here: not found, the toolkit's stub, no device, too
    old). Each message names kctx.cuda and gives the registry's reason."""
    p = availability()
    if p.caps is not None:
        return p.caps
    if not p.built:
        raise NotFound(f"kctx.cuda: the cuda platform is not built into this libkctx: {p.reason}")
    raise Unsupported(f"kctx.cuda: the cuda platform is unavailable on this machine: {p.reason}")


def stream_handle_of(stream: StreamLike) -> int:
    """The ``CUstream`` of `stream` (the module docstring lists what is
    accepted). KctxTypeError for a PyOpenCL queue, a torch_npu stream, bool, or anything that
    is no stream; InvalidArgument for a handle that is no u64."""
    if getattr(stream, "int_ptr", None) is not None and getattr(stream, "cuda_stream", None) is None:
        raise KctxTypeError(f"stream is a {type(stream).__name__} with .int_ptr (a PyOpenCL queue?), not a CUDA "
                            f"stream: pass a CUstream (int), torch.cuda.Stream or cupy.cuda.Stream")
    if getattr(stream, "npu_stream", None) is not None and getattr(stream, "cuda_stream", None) is None:
        raise KctxTypeError(f"stream is a {type(stream).__name__} with .npu_stream (a torch_npu stream: an "
                            f"aclrtStream), not a CUDA stream: use kctx.acl for NPU streams")
    get_ptr = getattr(type(stream), "getPtr", None)
    to_int = getattr(type(stream), "__int__", None)
    if callable(get_ptr) and callable(to_int) and not isinstance(stream, int):  # cuda-python's CUstream
        return check_int("stream", int(to_int(stream)), 0, U64_MAX, InvalidArgument)
    return stream_handle(stream)


def driver_calls(entry: str) -> int:
    """kctx_cuda_driver_calls: how many times kctx's cuda adapter called the
    driver entry `entry` in this process ("cuStreamSynchronize",
    "cuCtxSetCurrent": the lifecycle entries it must never call count 0,
    K4). Any thread; loads no driver.
    Errors: NotFound (no such entry in the adapter's table, or cuda is not
    built into this libkctx: the message says which); KctxTypeError (not a
    str)."""
    if not isinstance(entry, str):
        raise KctxTypeError(f"entry must be a str (a driver entry name), not {type(entry).__name__}")
    n = c_uint64()
    _check(_cuda().kctx_cuda_driver_calls(entry.encode(), byref(n)))
    return n.value


class Context(BaseContext):
    """A kernel context on the ``cuda`` platform borrowing the CUDA context
    current on the calling thread (K4). The constructor checks the platform
    (``require``), creates the context and kernel-initialises it with these
    keyword arguments (those of ``kctx.Context.kernel``); if the init fails
    the new context is released as ``kctx.Context.kernel`` releases it
    (closed first when the init left it CLOSING; what cannot be released
    rides on the error as ``.context``) and the error raised.

    A ``kctx.BaseContext`` (prepare, launch, check, capturable, flush_trace,
    close, destroy, the queries, with their contracts), not a
    ``kctx.Context``: it is never mode-less (CUDA has kernel mode only), so
    it has no ``create``, ``kernel``, ``program``, ``kernel_init`` or
    ``program_init``; ``run`` is InvalidState as on any kernel context (K3).

    Errors of the constructor, in this order: KctxValueError / KctxTypeError
    (a strategy that is none, before any C call); NotFound / Unsupported
    (``require``: the platform is not built, or no usable driver, with the
    reason); Capacity (too many live handles); then kctx_kernel_init's:
    Unsupported (a strategy CUDA does not offer: HOST_ORDERED only; kctx's
    runtime fatbin has no code for the device), Busy (another kernel
    context holds the CUDA context, K6), InvalidArgument (a bad capacity),
    the mapped driver status when the thread has no current context (the
    reason in the message)."""

    _kind = "kctx.cuda.Context"

    def __init__(self, strategy: StrategyLike = None, *, args_capacity: int = 4096, token_capacity: int = 256,
                 prepare_timeout_ms: int = 10000, trace_path: Optional[PathLike] = None,
                 trace_device_records: int = 65536, trace_host_records: int = 16384) -> None:
        self._init_fields()
        Strategy.parse(strategy)  # refused before the platform is asked for
        require()
        self._borrow_and_init(PLATFORM, strategy, args_capacity=args_capacity, token_capacity=token_capacity,
                              prepare_timeout_ms=prepare_timeout_ms, trace_path=trace_path,
                              trace_device_records=trace_device_records, trace_host_records=trace_host_records)

    def launch(self, id: int, args: Iterable[Arg], stream: StreamLike) -> None:
        """``kctx.BaseContext.launch`` onto a CUDA stream of the borrowed
        context (a ``CudaStreamLike``; ``stream_handle_of``: KctxTypeError,
        among launch's errors, for a PyOpenCL queue or a non-stream, before
        any C call). Stream 0 and 2 launch eagerly; a
        launch through a capturing default stream is InvalidArgument, into
        a capture of the context's own streams CaptureActive (K34)."""
        super().launch(id, args, stream_handle_of(stream))
