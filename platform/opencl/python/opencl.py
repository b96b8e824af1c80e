"""kctx.opencl: lend an OpenCL context, device and queue to kctx
(platform/opencl/include/kctx/opencl.h; docs/opencl.md is the guide).

OpenCL has no "current device": a framework owns a ``cl_context``, its
devices and its command queues, and tells kctx which (context, device) pair
it lends **per thread**. Every thread that calls kctx on an OpenCL context
binds first, or kctx refuses the call (K4 at init, K5 afterwards). Two ways:

- ``kctx.opencl.Context(queue)`` (or ``Context(context, device)``): a
  ``kctx.BaseContext`` on the ``opencl`` platform, created and kernel-initialised
  in one step, that binds its pair on the calling thread around each of its
  calls (init, prepare, launch, run, check, close) and gives the thread's
  previous binding back afterwards. It cannot be forgotten, on any thread.
- ``kctx.opencl.bind(queue)`` / ``bind(context, device)``: the C API's
  binding of the calling thread, for a plain ``kctx.Context("opencl")``;
  ``with kctx.opencl.lent(queue):`` binds for a block and restores the
  previous binding.

What names an OpenCL object: a PyOpenCL object (its ``int_ptr``), or the
native handle as an ``int``. One argument is a **queue** (its context and
device are lent); two are a **context and a device**.

Tensors are SVM allocations of the lent context: ``pyopencl.SVM(array)``
of an array from ``pyopencl.fsvm_empty`` (fine-grained buffer SVM), an
``SVMAllocation``, or an SVM-backed ``pyopencl.array.Array``, resolved by
``kctx.interop``. OpenCL cannot tell an SVM pointer from any other, so a
host array (numpy, even an SVM one passed unwrapped) is refused with
``kctx.KctxValueError`` saying what to pass. Streams are in-order PyOpenCL
queues of the lent context and device.
"""
from __future__ import annotations

import contextlib
import ctypes
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union, overload

try:  # Python 3.8+: typing.Protocol
    from typing import Protocol, runtime_checkable
except ImportError:  # pragma: no cover
    from typing_extensions import Protocol, runtime_checkable  # type: ignore[assignment]

from . import _lib
from ._util import U64_MAX, BytesLike, check_int
from .context import BaseContext as _BaseContext
from .caps import Strategy, StrategyLike
from .context import CheckReport, PathLike, PreparedCallable, _check
from .context import Executable as _Executable
from .errors import InvalidArgument, KctxTypeError, KctxValueError
from .interop import Arg, StreamLike, Tensor, svm_tensor


class OpenclLive(ctypes.Structure):
    """kctx_opencl_live (platform/opencl/include/kctx/opencl.h)"""

    _fields_ = [
        ("size", c_size_t),
        ("queues", c_uint64),
        ("events", c_uint64),
        ("programs", c_uint64),
        ("kernels", c_uint64),
        ("allocations", c_uint64),
        ("bytes", c_uint64),
        ("total_allocations", c_uint64),
        ("enqueues", c_uint64),
    ]


# kctx/opencl.h. libkctx exports these whether or not the opencl platform is
# built (a build without it answers UNSUPPORTED); they are bound apart, on
# first use (_lib.with_prototypes), so that a libkctx older than opencl.h
# still loads for everything else. The OpenCL handles are pointers.
_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "kctx_opencl_bind": (c_int, [c_void_p, c_void_p, POINTER(c_int)]),
    "kctx_opencl_bind_queue": (c_int, [c_void_p, POINTER(c_int)]),
    "kctx_opencl_bound": (c_int, [POINTER(c_void_p), POINTER(c_void_p), POINTER(c_int)]),
    "kctx_opencl_driver_calls": (c_int, [c_char_p, POINTER(c_uint64)]),
    "kctx_opencl_live_objects": (c_int, [c_int, POINTER(OpenclLive)]),
    "kctx_opencl_test_hold": (c_int, [c_int, c_void_p]),
    "kctx_opencl_test_hold_reached": (c_int, [POINTER(c_int)]),
    "kctx_opencl_test_hold_clear": (c_int, []),
}


def _opencl() -> ctypes.CDLL:
    """libkctx with the kctx/opencl.h prototypes bound (once)."""
    return _lib.with_prototypes("kctx/opencl.h", _PROTOTYPES)


PLATFORM = "opencl"

__all__ = ["PLATFORM", "Availability", "Binding", "Context", "Executable", "HasIntPtr", "Handle", "LiveObjects",
           "OpenCLArg", "SVMPointerLike", "availability", "bind", "bound", "lent", "live_objects", "unbind"]


@runtime_checkable
class HasIntPtr(Protocol):
    """A PyOpenCL object (``Context``, ``Device``, ``CommandQueue``): its
    native handle is ``int_ptr``."""

    @property
    def int_ptr(self) -> int: ...


@runtime_checkable
class _SupportsIndex(Protocol):
    def __index__(self) -> int: ...


#: An OpenCL object: a PyOpenCL object or a native handle.
Handle = Union[HasIntPtr, int, _SupportsIndex]


@runtime_checkable
class SVMPointerLike(Protocol):
    """PyOpenCL's ``SVMPointer`` (``pyopencl.SVM``, ``SVMAllocation``), as its
    type stubs declare it: ``size`` may be None (a pointer of unknown size,
    refused as a tensor)."""

    @property
    def svm_ptr(self) -> int: ...

    @property
    def size(self) -> Optional[int]: ...


#: One launch argument on OpenCL: anything ``kctx.Arg`` is, or a PyOpenCL
#: SVM pointer as PyOpenCL's stubs type it.
OpenCLArg = Union[Arg, SVMPointerLike]


def _args(args: Iterable[OpenCLArg]) -> List[Arg]:
    """PyOpenCL SVM pointers become kctx.Tensor (kctx.interop.svm_tensor: a
    released allocation, or a pyopencl.SVM of an array whose allocation was
    released, is refused with InvalidArgument, K18); a host array (numpy, even
    one allocated as SVM: pass it as pyopencl.SVM(array)) is refused with
    KctxValueError; the rest go to the resolver (kctx.interop) unchanged."""
    if isinstance(args, (str, bytes, bytearray, memoryview)) or not hasattr(args, "__iter__"):
        raise KctxTypeError(f"args must be a sequence of tensors and scalars, not {type(args).__name__}")
    out: List[Arg] = []
    for i, a in enumerate(args):
        if getattr(a, "svm_ptr", None) is not None and not isinstance(a, Tensor):
            # the resolver's SVM rules: a released allocation is refused (K18)
            t = svm_tensor(a, f"args[{i}]")
            assert t is not None
            out.append(Tensor(*t))
        elif getattr(a, "__array_interface__", None) is not None and getattr(a, "shape", ()) != ():
            raise KctxValueError(
                f"args[{i}] is a host array ({type(a).__name__}): on OpenCL a tensor is an SVM allocation of the "
                f"lent context (OpenCL cannot tell an SVM pointer from any other): allocate it with "
                f"pyopencl.fsvm_empty and pass pyopencl.SVM(array)")
        else:
            out.append(a)  # not an SVM pointer: an Arg
    return out


class Executable(_Executable):
    """``kctx.Executable`` of a ``kctx.opencl.Context``: its launches take
    ``OpenCLArg`` (PyOpenCL's SVM objects as its stubs type them)."""

    __slots__ = ()

    def launch(self, *args: OpenCLArg, stream: StreamLike) -> None:
        """``context.launch(id, args, stream)``"""
        self.context.launch(self.id, _args(args), stream)

    def __call__(self, *args: OpenCLArg, stream: StreamLike) -> None:
        self.context.launch(self.id, _args(args), stream)


def _handle(what: str, obj: Handle) -> int:
    if isinstance(obj, bool):
        raise KctxTypeError(f"{what} must be an OpenCL object (a PyOpenCL {what}, or its int handle), not bool")
    v = getattr(obj, "int_ptr", None)
    if v is None:
        idx = getattr(type(obj), "__index__", None)
        v = idx(obj) if idx is not None else None
    if not isinstance(v, int) or isinstance(v, bool):
        raise KctxTypeError(f"{what} must be an OpenCL object (a PyOpenCL {what} with .int_ptr, or its int "
                            f"handle), not {type(obj).__name__}")
    return check_int(what, v, 0, U64_MAX, InvalidArgument)


# ---------------------------------------------------------------------------
# The platform
# ---------------------------------------------------------------------------
class Availability(NamedTuple):
    """Whether the ``opencl`` platform can be used in this process:
    ``built`` into libkctx, ``available`` (the OpenCL library was loaded)
    and, when not, the ``reason``."""

    built: bool
    available: bool
    reason: str


def availability() -> Availability:
    """kctx_get_platform_caps("opencl"): built, available, and why not."""
    caps = _lib.PlatformCaps()
    caps.size = ctypes.sizeof(caps)
    st = _lib.kctx().kctx_get_platform_caps(PLATFORM.encode(), byref(caps))
    if st != 0:
        return Availability(False, False, _lib.decode(_lib.kctx().kctx_thread_last_error()))
    return Availability(bool(caps.built), bool(caps.available), _lib.decode(caps.reason))


# ---------------------------------------------------------------------------
# The calling thread's binding
# ---------------------------------------------------------------------------
class Binding(NamedTuple):
    """What the calling thread lends: the ``cl_context`` and ``cl_device_id``
    handles, and kctx's number for the pair (the ``device`` of kctx's API)."""

    context: int
    device: int
    kctx_device: int


def bind(lend: Handle, device: Optional[Handle] = None) -> int:
    """Lend to the calling thread: ``bind(queue)`` lends the queue's context
    and device (kctx_opencl_bind_queue), ``bind(context, device)`` the pair
    (kctx_opencl_bind). Returns kctx's number for the pair. Every thread that
    calls kctx on an OpenCL context binds first.

    Errors (the binding is unchanged): InvalidArgument (not a queue / not a
    context, or a device that is not the context's), Unsupported (no OpenCL
    library here, with the reason; a device without fine-grained buffer SVM
    with atomics), Capacity (more than 64 pairs), PlatformError."""
    lib = _opencl()
    n = c_int(-1)
    if device is None:
        _check(lib.kctx_opencl_bind_queue(c_void_p(_handle("queue", lend) or None), byref(n)))
    else:
        _check(lib.kctx_opencl_bind(c_void_p(_handle("context", lend) or None),
                                    c_void_p(_handle("device", device) or None), byref(n)))
    return n.value


def unbind() -> None:
    """End the calling thread's binding (kctx_opencl_bind(NULL, ...))."""
    _check(_opencl().kctx_opencl_bind(None, None, None))


def bound() -> Optional[Binding]:
    """The calling thread's binding, or None when it lends nothing."""
    lib = _opencl()
    ctx, dev, n = c_void_p(), c_void_p(), c_int(-1)
    if lib.kctx_opencl_bound(byref(ctx), byref(dev), byref(n)) != 0:
        return None  # INVALID_STATE: nothing lent (the only error)
    return Binding(ctx.value or 0, dev.value or 0, n.value)


def _restore(prev: Optional[Binding]) -> None:
    lib = _opencl()
    if prev is None:
        lib.kctx_opencl_bind(None, None, None)
    else:  # a pair bound before is known: rebinding it cannot fail
        _check(lib.kctx_opencl_bind(c_void_p(prev.context), c_void_p(prev.device), None))


@contextlib.contextmanager
def lent(lend: Handle, device: Optional[Handle] = None) -> Iterator[int]:
    """``with kctx.opencl.lent(queue) as kctx_device:`` binds as ``bind`` for
    the block, then gives the calling thread its previous binding back."""
    prev = bound()
    n = bind(lend, device)
    try:
        yield n
    finally:
        _restore(prev)


# ---------------------------------------------------------------------------
# What kctx holds
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LiveObjects:
    """kctx_opencl_live: the OpenCL objects kctx holds on a lent pair now
    (every kernel context on it together) and what it did there since the
    process started. ``enqueues`` counts commands (each makes the driver's
    own cl_event); kctx's own objects do not grow per launch (K11)."""

    queues: int
    events: int
    programs: int
    kernels: int
    allocations: int
    bytes: int
    total_allocations: int
    enqueues: int

    @property
    def held(self) -> Tuple[int, int, int, int, int, int]:
        """What is held now (queues, events, programs, kernels, allocations,
        bytes): all zero once every context on the pair is closed."""
        return (self.queues, self.events, self.programs, self.kernels, self.allocations, self.bytes)


def live_objects(kctx_device: int) -> LiveObjects:
    """kctx_opencl_live_objects for lent pair `kctx_device` (InvalidArgument
    for a number no pair has)."""
    out = OpenclLive()
    out.size = ctypes.sizeof(out)
    n = check_int("kctx_device", kctx_device, -(1 << 31), (1 << 31) - 1, InvalidArgument)
    _check(_opencl().kctx_opencl_live_objects(n, byref(out)))
    return LiveObjects(out.queues, out.events, out.programs, out.kernels, out.allocations, out.bytes,
                       out.total_allocations, out.enqueues)


# ---------------------------------------------------------------------------
# A kernel context that binds its pair itself
# ---------------------------------------------------------------------------
class _Lending:
    """``with _Lending((context, device)):`` the calling thread lends the
    pair inside the block and its previous binding (or none) after it. On
    the launch path: a few C calls, no generator."""

    __slots__ = ("_ctx", "_dev", "_prev")

    def __init__(self, pair: Tuple[int, int]) -> None:
        self._ctx, self._dev = pair
        self._prev: Optional[Tuple[int, int]] = None

    def __enter__(self) -> None:
        lib = _opencl()
        ctx, dev = c_void_p(), c_void_p()
        if lib.kctx_opencl_bound(byref(ctx), byref(dev), None) == 0:
            if ctx.value == self._ctx and dev.value == self._dev:
                self._prev = (self._ctx, self._dev)
                return
            self._prev = (ctx.value or 0, dev.value or 0)
        _check(lib.kctx_opencl_bind(c_void_p(self._ctx), c_void_p(self._dev), None))

    def __exit__(self, *exc: object) -> None:
        prev = self._prev
        if prev is not None and prev == (self._ctx, self._dev):
            return  # the thread lent this pair before: keep it
        lib = _opencl()
        if prev is None:
            lib.kctx_opencl_bind(None, None, None)
        else:  # a pair bound before is known: rebinding it cannot fail
            _check(lib.kctx_opencl_bind(c_void_p(prev[0]), c_void_p(prev[1]), None))


class Context(_BaseContext):
    """A kernel context on the ``opencl`` platform borrowing the caller's
    OpenCL objects: ``Context(queue)`` lends the queue's context and device,
    ``Context(context, device)`` the pair. The constructor creates the
    context and kernel-initialises it (K4: it borrows the pair; OpenCL has
    kernel mode only) with the keyword arguments of ``kctx.Context.kernel``;
    if the init fails, the new context is released as ``kctx.Context.kernel``
    releases it (closed first when the init left it CLOSING; what cannot be
    released rides on the error as ``.context``) and the error raised.

    A ``kctx.BaseContext`` (prepare, launch, check, capturable, flush_trace,
    close, destroy, the queries, with their contracts), not a
    ``kctx.Context``: it is never mode-less, so it has no ``create``,
    ``kernel``, ``program``, ``kernel_init`` or ``program_init``; ``run``
    is InvalidState as on any kernel-mode context (K3).

    Around each of its calls that reaches the device (the init, prepare,
    launch and the Executables' launches, run, check, flush_trace, close, so also the
    ``with`` block's exit) it binds its pair on the calling thread and gives
    that thread's previous binding back afterwards, so any thread may use it
    without calling ``bind``. It keeps a reference to the lent objects.

    Launch streams are in-order queues of the same context and device (a
    queue of another context: InvalidArgument; an out-of-order queue:
    InvalidArgument); tensors are SVM allocations of that context.

    Errors of the constructor: those of ``bind`` (nothing created),
    KctxValueError / KctxTypeError for a bad strategy (before anything is
    bound), those of ``kctx.Context`` and of ``kctx.Context.kernel_init``
    (Busy: another kernel context holds the pair, K6; Unsupported: a
    strategy OpenCL does not offer)."""

    _kind = "kctx.opencl.Context"
    _pair: Tuple[int, int]
    _kctx_device: int

    def __init__(self, lend: Handle, device: Optional[Handle] = None, *, strategy: StrategyLike = None,
                 args_capacity: int = 4096, token_capacity: int = 256, prepare_timeout_ms: int = 10000,
                 trace_path: Optional[PathLike] = None, trace_device_records: int = 65536,
                 trace_host_records: int = 16384) -> None:
        self._init_fields()
        self._strategy = Strategy.parse(strategy)  # refused before anything is bound or created
        with lent(lend, device):
            b = bound()
        assert b is not None
        self._create(PLATFORM)
        self._pair = (b.context, b.device)
        self._kctx_device = b.kctx_device  # the pair's number: fixed for the process
        self._lent = (lend, device)  # keeps PyOpenCL's objects (and so the cl_context) alive
        try:
            with self._bound():
                self._kernel_init(args_capacity=args_capacity, token_capacity=token_capacity,
                                  prepare_timeout_ms=prepare_timeout_ms, trace_path=trace_path,
                                  trace_device_records=trace_device_records, trace_host_records=trace_host_records)
        except BaseException as e:  # released as kctx.Context.kernel releases it
            self._release_refused_init(e, prepare_timeout_ms)
            raise

    @property
    def binding(self) -> Binding:
        """The pair this context borrows, with kctx's number for it (known
        from the constructor on: no C call, so also after close or destroy)."""
        return Binding(self._pair[0], self._pair[1], self._kctx_device)

    @property
    def live_objects(self) -> LiveObjects:
        """``kctx.opencl.live_objects`` of this context's pair."""
        return live_objects(self._kctx_device)

    def _bound(self) -> "_Lending":
        """Binds the pair on the calling thread for a ``with`` block, then
        gives the thread's previous binding back (nothing to do when the
        thread lends the pair already: one C call)."""
        return _Lending(self._pair)

    @overload
    def prepare(self, image: BytesLike, *, id: Optional[int] = None) -> Executable: ...

    @overload
    def prepare(self, id: int, image: BytesLike) -> Executable: ...

    def prepare(self, *args: Union[int, BytesLike], id: Optional[int] = None,
                image: Optional[BytesLike] = None) -> Executable:
        """``kctx.Context.prepare`` on the bound pair: the OPENCL_C variant is
        built for the lent device (a source that does not build:
        IncompatibleImage with the build log in the message)."""
        with self._bound():
            exe = super().prepare(*args, id=id, image=image)  # type: ignore[call-overload]
        # from what prepare returned, never from the registry again: a close on
        # another thread may have emptied it already (K33)
        return Executable(self, exe.id, PreparedCallable(exe.digest, exe.size))

    def launch(self, id: int, args: Iterable[OpenCLArg], stream: StreamLike) -> None:
        """``kctx.Context.launch`` on the bound pair; `stream` is an in-order
        queue of the lent context and device (a PyOpenCL ``CommandQueue``)."""
        with self._bound():
            super().launch(id, _args(args), stream)

    def run(self, id: int, args: Iterable[OpenCLArg] = ()) -> None:
        with self._bound():
            super().run(id, _args(args))

    def check(self) -> CheckReport:
        with self._bound():
            return super().check()

    def flush_trace(self) -> None:
        with self._bound():
            super().flush_trace()

    def close(self) -> None:
        with self._bound():
            super().close()


