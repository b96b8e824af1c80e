"""The simulated accelerator's runtime API (platform/sim/include/kctx/sim.h) for Python.

This is the *framework side*: what a framework does with a real
accelerator runtime (CUDA runtime, Ascend ACL) a Python program does here
with the sim — pick the current device, create streams and events, own
device memory, capture streams into graphs and replay them — and it is how
tests inject faults, hold work and count calls. kctx reaches the same
device through its platform adapter (libkctx_sim.so is loaded once, with
RTLD_GLOBAL, and shared).

Conventions, as in sim.h:

- A failed call raises ``SimError`` carrying the ``SimStatus``, its C name
  and sim_last_error_message() (the calling thread's detailed message).
  Python-side checks raise ``TypeError`` / ``ValueError`` before any call.
- Objects wrap opaque 64-bit handles. 0 is never a valid handle; a
  destroyed, stale (device reset), foreign or wrong-device handle gives
  SIM_INVALID_HANDLE — the sim never touches freed memory to find out, so
  using a destroyed object from Python is an error, never a crash.
- Nothing is destroyed implicitly: Python objects are *not* finalisers of
  sim objects (a garbage collection must not make sim calls, which would
  disturb call counters, injected faults and captures). Call ``destroy()``
  / ``free()`` or use the objects as context managers; ``object_counts()``
  and ``mem_stats()`` find leaks.
- Every function may be called from any thread; the GIL is released
  during every call.
- Allocations, streams, events and modules belong to the calling thread's
  current device at creation.
"""
from __future__ import annotations

from ._enum import NamedIntEnum

import ctypes
import enum
import os
from ctypes import byref, c_float, c_int, c_size_t, c_uint32, c_uint64
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional, Tuple, Type, TypeVar, Union, overload

_Out = TypeVar("_Out")

from . import _lib
from .errors import InvalidArgument, KctxError, KctxTypeError, KctxValueError
from .interop import StreamLike, stream_handle
from .interop import Tensor
from ._util import I32_MAX, U32_MAX, U64_MAX, BytesLike, check_int, exit_release, readable, writable

import importlib
from types import ModuleType

_np: Optional[ModuleType]
try:  # optional: copies to and from numpy arrays (imported by name: no numpy stubs needed)
    _np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover - depends on the environment
    _np = None

# ---------------------------------------------------------------------------
# Tables mirroring sim.h
# ---------------------------------------------------------------------------
class SimStatus(NamedIntEnum):
    """sim_status: SIM_STATUS_MAP of platform/sim/include/kctx/sim.h (the capture codes
    carry the numbers of their CUDA equivalents). The tests check it against
    the header and sim_status_name()."""

    OK = 0
    INVALID_VALUE = 1
    INVALID_HANDLE = 2
    OUT_OF_MEMORY = 3
    NOT_READY = 4
    DEVICE_LOST = 5
    NOT_PERMITTED = 6
    NOT_SUPPORTED = 7
    TIMEOUT = 8
    KERNEL_ERROR = 9
    INVALID_MODULE = 10
    NOT_FOUND = 11
    ILLEGAL_STATE = 12
    INVALID_ADDRESS = 13
    DOUBLE_FREE = 14
    FOREIGN_FREE = 15
    INJECTED = 16
    CAPTURE_UNSUPPORTED = 900
    CAPTURE_INVALIDATED = 901
    CAPTURE_MERGE = 902
    CAPTURE_UNMATCHED = 903
    CAPTURE_UNJOINED = 904
    CAPTURE_ISOLATION = 905
    CAPTURED_EVENT = 907
    CAPTURE_WRONG_THREAD = 908


class Op(NamedIntEnum):
    """sim_op: every counted API operation, valued by its position in
    SIM_OP_MAP of platform/sim/include/kctx/sim.h (the tests check the order against the
    header and sim_op_name()); ANY matches all."""

    ANY = -1
    INIT = 0
    FINALIZE = 1
    DEVICE_COUNT = 2
    SET_DEVICE = 3
    DEVICE_RESET = 4
    DEVICE_GET_PROPS = 5
    DEVICE_SYNCHRONIZE = 6
    MALLOC = 7
    FREE = 8
    MEM_LOOKUP = 9
    MEMCPY = 10
    ATOMIC_READ = 11
    ATOMIC_WRITE = 12
    STREAM_CREATE = 13
    STREAM_DESTROY = 14
    STREAM_SYNCHRONIZE = 15
    STREAM_QUERY = 16
    STREAM_GET_DEVICE = 17
    LAUNCH_KERNEL = 18
    MEMCPY_ASYNC = 19
    MEMSET_ASYNC = 20
    LAUNCH_HOST_FUNC = 21
    EVENT_CREATE = 22
    EVENT_DESTROY = 23
    EVENT_RECORD = 24
    STREAM_WAIT_EVENT = 25
    EVENT_QUERY = 26
    EVENT_SYNCHRONIZE = 27
    EVENT_ELAPSED = 28
    MODULE_LOAD = 29
    MODULE_UNLOAD = 30
    MODULE_GET_FUNCTION = 31
    FUNCTION_ADDRESS = 32
    BEGIN_CAPTURE = 33
    END_CAPTURE = 34
    GET_CAPTURE_INFO = 35
    EXCHANGE_CAPTURE_MODE = 36
    GRAPH_NODE_COUNT = 37
    GRAPH_DESTROY = 38
    GRAPH_INSTANTIATE = 39
    GRAPH_LAUNCH = 40
    GRAPH_EXEC_DESTROY = 41
    GRAPH_ATTACH_HOOK = 42
    GET_DEVICE = 43
    DEVICE_EPOCH = 44
    MEM_FREE_COUNTER = 45


OP_NAMES: Tuple[str, ...] = tuple(op.name for op in Op if op >= 0)  # SIM_OP_MAP order


class LifecycleOp(NamedIntEnum):
    """sim_lifecycle_op"""

    INIT = 0
    FINALIZE = 1
    SET_DEVICE = 2
    RESET_DEVICE = 3


class CaptureMode(NamedIntEnum):
    """sim_capture_mode (as cudaStreamCaptureMode)."""

    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


class CaptureStatus(NamedIntEnum):
    """sim_capture_status"""

    NONE = 0
    ACTIVE = 1
    INVALIDATED = 2


class Target(NamedIntEnum):
    """sim_target: where a kernel runs."""

    AICPU = 1
    AICORE = 2


class CopyKind(NamedIntEnum):
    """sim_copy_kind"""

    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3


class ExecKind(NamedIntEnum):
    """sim_exec_kind: what a hold matches."""

    ANY = 0
    KERNEL = 1
    COPY = 2
    FILL = 3
    HOST_FUNC = 4
    EVENT_RECORD = 5
    GRAPH = 6


EVENT_DEFAULT = 0
EVENT_DISABLE_TIMING = 1
MAX_FAULTS = 16
MAX_HOLDS = 16


class SimError(KctxError):
    """A sim call failed: ``status`` (SimStatus), ``name`` ("SIM_CAPTURE_ISOLATION"),
    ``message`` (sim_last_error_message() of the calling thread) and
    ``call`` (the C function). A ``kctx.KctxError``; the statuses with a
    standard meaning raise a subclass that is also the standard exception
    (SIM_INVALID_VALUE: ``ValueError``, SIM_OUT_OF_MEMORY: ``MemoryError``,
    SIM_TIMEOUT: ``TimeoutError``, SIM_NOT_SUPPORTED: ``NotImplementedError``,
    SIM_NOT_FOUND: ``LookupError``). ``str(e)`` is "call: message"."""

    def __init__(self, status: int, message: str = "", call: str = "") -> None:  # noqa: D107
        self.status: Union[SimStatus, int]  # type: ignore[assignment]
        try:
            self.status = SimStatus(status)
            sim_name = f"SIM_{self.status.name}"
        except ValueError:
            self.status = int(status)
            sim_name = "SIM_UNKNOWN"
        self._sim_name = sim_name
        if message.startswith(sim_name + ": "):  # e.name has it
            message = message[len(sim_name) + 2:]
        self.message = message or sim_name
        self.call = call
        Exception.__init__(self, self.message)

    @property
    def name(self) -> str:
        """The C name of the status ("SIM_INJECTED")."""
        return self._sim_name

    def __str__(self) -> str:
        return f"{self.call}: {self.message}" if self.call else self.message

    def __reduce__(self) -> "Tuple[object, ...]":
        return (type(self), (int(self.status), self.message, self.call), {})


def _sim_error_class(name: str, extra: type) -> "Type[SimError]":
    cls = type(name, (SimError, extra), {"__module__": "kctx.sim",
                                         "__doc__": f"A SimError that is also a {extra.__name__}."})
    return cls


SimInvalidValue = _sim_error_class("SimInvalidValue", ValueError)
SimOutOfMemory = _sim_error_class("SimOutOfMemory", MemoryError)
SimTimeout = _sim_error_class("SimTimeout", TimeoutError)
SimNotSupported = _sim_error_class("SimNotSupported", NotImplementedError)
SimNotFound = _sim_error_class("SimNotFound", LookupError)
_SIM_ERRORS: Dict[int, Type[SimError]] = {
    SimStatus.INVALID_VALUE: SimInvalidValue, SimStatus.OUT_OF_MEMORY: SimOutOfMemory,
    SimStatus.TIMEOUT: SimTimeout, SimStatus.NOT_SUPPORTED: SimNotSupported, SimStatus.NOT_FOUND: SimNotFound,
}


def sim_error(status: int, message: str, call: str = "") -> SimError:
    """The exception for a failed sim call (SimError or its standard-base subclass)."""
    cls: Type[SimError] = _SIM_ERRORS.get(status, SimError)
    return cls(status, message, call)


def _call(name: str, *args: Any) -> None:
    st = getattr(_lib.sim(), name)(*args)
    if st != 0:
        raise sim_error(st, _lib.decode(_lib.sim().sim_last_error_message()), name)


def status_name(status: int) -> str:
    """sim_status_name: "SIM_OK", "SIM_CAPTURE_ISOLATION", ...; "SIM_UNKNOWN" otherwise."""
    return _lib.decode(_lib.sim().sim_status_name(check_int("status", status, -(1 << 31), I32_MAX)))


def status_string(status: int) -> str:
    """sim_status_string: one line describing the status class."""
    return _lib.decode(_lib.sim().sim_status_string(check_int("status", status, -(1 << 31), I32_MAX)))


def op_name(op: int) -> str:
    """sim_op_name"""
    return _lib.decode(_lib.sim().sim_op_name(check_int("op", op, -(1 << 31), I32_MAX)))


def last_error_message() -> str:
    """sim_last_error_message: the calling thread's message for its last failed call."""
    return _lib.decode(_lib.sim().sim_last_error_message())


def _device(device: int, allow_any: bool = False) -> int:
    return check_int("device", device, -1 if allow_any else 0, I32_MAX)


def _handle(obj: Any, cls: type, what: str) -> int:
    if isinstance(obj, cls):
        return int(getattr(obj, "handle"))
    if isinstance(obj, int) and not isinstance(obj, bool):
        return check_int(what, obj, 0, U64_MAX)
    raise KctxTypeError(f"{what} must be a {cls.__name__} or a handle (int), not {type(obj).__name__}")


# ---------------------------------------------------------------------------
# Lifecycle and devices
# ---------------------------------------------------------------------------
def init() -> None:
    """sim_init: explicit, counted lifecycle call (never required). Idempotent."""
    _call("sim_init")


def finalize() -> None:
    """sim_finalize: resets every device (destroying all their objects)."""
    _call("sim_finalize")


def device_count() -> int:
    """sim_device_count (KCTX_SIM_DEVICES, default 2)."""
    n = c_int()
    _call("sim_device_count", byref(n))
    return n.value


def set_device(device: int) -> None:
    """sim_set_device: the calling thread's current device (a counted lifecycle call)."""
    _call("sim_set_device", _device(device))


def get_device() -> int:
    """sim_get_device: the calling thread's current device (never counted, works on a lost device)."""
    d = c_int()
    _call("sim_get_device", byref(d))
    return d.value


def device_reset() -> None:
    """sim_device_reset: reset the calling thread's current device (counted): every
    object of the device is destroyed, its handles become stale, the epoch grows."""
    _call("sim_device_reset")


def device_epoch(device: int) -> int:
    """sim_device_epoch: 0 at first use, +1 per reset."""
    e = c_uint64()
    _call("sim_device_epoch", _device(device), byref(e))
    return e.value


def lifecycle_count(device: int, op: Union[LifecycleOp, int]) -> int:
    """sim_lifecycle_count: lifecycle calls of kind `op` attributed to `device`."""
    n = c_uint64()
    _call("sim_lifecycle_count", _device(device), check_int("op", op, 0, 3), byref(n))
    return n.value


def lifecycle_reset_counts() -> None:
    """sim_lifecycle_reset_counts"""
    _call("sim_lifecycle_reset_counts")


@dataclass(frozen=True)
class DeviceProps:
    """sim_device_props"""

    name: str
    aicore_count: int
    aicpu_count: int
    memory_capacity: int
    max_params_size: int
    max_block_dim: int
    device_word_size: int
    alloc_alignment: int


def device_props(device: int) -> DeviceProps:
    """sim_device_get_props"""
    p = _lib.SimDeviceProps()
    p.size = ctypes.sizeof(p)
    _call("sim_device_get_props", _device(device), byref(p))
    return DeviceProps(_lib.decode(p.name), p.aicore_count, p.aicpu_count, p.memory_capacity, p.max_params_size,
                       p.max_block_dim, p.device_word_size, p.alloc_alignment)


def device_synchronize() -> None:
    """sim_device_synchronize: wait for all work of the current device."""
    _call("sim_device_synchronize")


class MemStats(NamedTuple):
    live_count: int
    live_bytes: int


def mem_stats(device: int) -> MemStats:
    """sim_mem_stats: live allocations of a device (count, bytes)."""
    n, b = c_uint64(), c_uint64()
    _call("sim_mem_stats", _device(device), byref(n), byref(b))
    return MemStats(n.value, b.value)


def mem_lookup(device: int, ptr: int, size: int) -> Tuple[int, int]:
    """sim_mem_lookup: (base, size) of the live allocation holding [ptr, ptr+size)."""
    base, asize = c_uint64(), c_size_t()
    _call("sim_mem_lookup", _device(device), check_int("ptr", ptr, 0, U64_MAX), check_int("size", size, 0, U64_MAX),
          byref(base), byref(asize))
    return base.value, asize.value


def atomic_read_u32(ptr: int) -> int:
    """sim_atomic_read_u32: atomic host read of an aligned device word."""
    v = c_uint32()
    _call("sim_atomic_read_u32", check_int("ptr", ptr, 0, U64_MAX), byref(v))
    return v.value


def atomic_read_u64(ptr: int) -> int:
    """sim_atomic_read_u64"""
    v = c_uint64()
    _call("sim_atomic_read_u64", check_int("ptr", ptr, 0, U64_MAX), byref(v))
    return v.value


def atomic_write_u32(ptr: int, value: int) -> None:
    """sim_atomic_write_u32: atomic host write of an aligned device word,
    visible to kernels at once; wakes kernels waiting on it. Not ordered with
    any stream; legal during capture."""
    _call("sim_atomic_write_u32", check_int("ptr", ptr, 0, U64_MAX), check_int("value", value, 0, U32_MAX))


def make_fatal(device: int) -> None:
    """sim_device_make_fatal: the device is lost until its owner resets it."""
    _call("sim_device_make_fatal", _device(device))


@dataclass(frozen=True)
class ObjectCounts:
    """sim_object_counts: live objects of a device, for leak checks."""

    streams: int
    events: int
    modules: int
    graphs: int
    graph_execs: int
    hooks_pending: int


def object_counts(device: int) -> ObjectCounts:
    """sim_object_counts_get"""
    c = _lib.SimObjectCounts()
    c.size = ctypes.sizeof(c)
    _call("sim_object_counts_get", _device(device), byref(c))
    return ObjectCounts(c.streams, c.events, c.modules, c.graphs, c.graph_execs, c.hooks_pending)


def exchange_capture_mode(mode: Union[CaptureMode, int]) -> CaptureMode:
    """sim_thread_exchange_capture_mode: set the calling thread's capture mode,
    return the previous one."""
    m = c_int(check_int("mode", mode, 0, 2))
    _call("sim_thread_exchange_capture_mode", byref(m))
    return CaptureMode(m.value)


class capture_mode:
    """``with capture_mode(CaptureMode.RELAXED): ...`` sets the calling
    thread's capture mode for the block and restores the previous one."""

    def __init__(self, mode: Union[CaptureMode, int]) -> None:
        self._mode = mode
        self._old: Optional[CaptureMode] = None

    def __enter__(self) -> "capture_mode":
        self._old = exchange_capture_mode(self._mode)
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        if self._old is not None:
            old = self._old

            def restore() -> None:
                exchange_capture_mode(old)

            exit_release(exc, restore, "restoring the capture mode")


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------
class DeviceBuffer:
    """Device memory of the calling thread's current device (sim_malloc).

    ``ptr`` is its device address, ``size`` its length in bytes. Copies to
    and from host buffers (bytes, bytearray, memoryview, numpy arrays) are
    synchronous (sim_memcpy: they first wait for all work of the device, and
    are refused while a capture restricts the thread). Free with ``free()``
    or by using the buffer as a context manager.
    """

    def __init__(self, size: int) -> None:
        size = check_int("size", size, 0, U64_MAX)
        p = c_uint64()
        _call("sim_malloc", byref(p), size)
        self.ptr: int = p.value
        self.size: int = size
        self.device: int = get_device()
        self.freed = False

    def free(self) -> None:
        """sim_free. A second free reaches the sim (SIM_DOUBLE_FREE)."""
        _call("sim_free", self.ptr)
        self.freed = True

    def __enter__(self) -> "DeviceBuffer":
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """Free; a failure rides on the body's exception as a note when the body raised."""
        if not self.freed:
            exit_release(exc, self.free, f"freeing {self!r}")

    def __repr__(self) -> str:
        state = " freed" if self.freed else ""
        return f"<kctx.sim.DeviceBuffer ptr=0x{self.ptr:x} size={self.size} device={self.device}{state}>"

    def _live(self) -> None:
        if self.freed:  # the sim would refuse the range too; say what happened (K18)
            raise InvalidArgument(f"{self!r} was freed: a freed buffer is not a tensor (K18)")

    def __kctx_tensor__(self) -> Tuple[int, int]:
        """The kctx tensor protocol (kctx.interop): the whole buffer.
        InvalidArgument once freed."""
        self._live()
        return self.ptr, self.size

    def tensor(self, offset: int = 0, nbytes: Optional[int] = None) -> Tensor:
        """A ``kctx.Tensor`` for [ptr+offset, ptr+offset+nbytes) (default: to
        the end). InvalidArgument once freed."""
        self._live()
        offset = check_int("offset", offset, 0, self.size)
        nbytes = self.size - offset if nbytes is None else check_int("nbytes", nbytes, 0, U64_MAX)
        return Tensor(self.ptr + offset, nbytes)

    def _range(self, offset: int, nbytes: int) -> int:
        offset = check_int("offset", offset, 0, U64_MAX)
        if offset + nbytes > self.size:
            raise KctxValueError(f"[{offset}, +{nbytes}) exceeds the buffer's {self.size} bytes")
        return self.ptr + offset

    def copy_from_host(self, data: BytesLike, offset: int = 0) -> None:
        """Copy `data` (any C-contiguous bytes-like object) to the buffer at `offset`."""
        src, n = readable(data, "data")
        dst = self._range(offset, n)
        if n:
            _call("sim_memcpy", ctypes.c_void_p(dst), src, n, int(CopyKind.HOST_TO_DEVICE))

    @overload
    def copy_to_host(self, out: None = None, offset: int = 0, nbytes: Optional[int] = None) -> bytearray: ...

    @overload
    def copy_to_host(self, out: _Out, offset: int = 0, nbytes: Optional[int] = None) -> _Out: ...

    def copy_to_host(self, out: object = None, offset: int = 0,
                     nbytes: Optional[int] = None) -> object:
        """Copy from the buffer at `offset` into `out` (a writable C-contiguous
        buffer, its whole length) or, without `out`, into a new bytearray of
        `nbytes` (default: to the end of the buffer). Returns what was filled."""
        if out is None:
            offset = check_int("offset", offset, 0, self.size)
            n = self.size - offset if nbytes is None else check_int("nbytes", nbytes, 0, U64_MAX)
            out = bytearray(n)
        dst, n = writable(out, "out")
        src = self._range(offset, n)
        if n:
            _call("sim_memcpy", dst, ctypes.c_void_p(src), n, int(CopyKind.DEVICE_TO_HOST))
        return out

    def to_numpy(self, dtype: Any = "uint8", count: Optional[int] = None, offset: int = 0) -> Any:
        """A new numpy array of `count` elements of `dtype` copied from `offset`
        (default: as many whole elements as fit). Needs numpy."""
        if _np is None:
            raise KctxError("numpy is not installed")
        dt = _np.dtype(dtype)
        offset = check_int("offset", offset, 0, self.size)
        if count is None:
            count = (self.size - offset) // dt.itemsize
        arr = _np.empty(check_int("count", count, 0, U64_MAX), dtype=dt)
        self.copy_to_host(arr, offset)
        return arr

    def read_u32(self, offset: int = 0) -> int:
        """Atomic read of the aligned device word at `offset` (legal during capture)."""
        return atomic_read_u32(self._range(offset, 4))

    def write_u32(self, value: int, offset: int = 0) -> None:
        """Atomic write of the aligned device word at `offset` (not ordered with any stream)."""
        atomic_write_u32(self._range(offset, 4), value)


def free(ptr: int) -> None:
    """sim_free of a raw device address."""
    _call("sim_free", check_int("ptr", ptr, 0, U64_MAX))


# ---------------------------------------------------------------------------
# Streams, events, capture, graphs
# ---------------------------------------------------------------------------
_H = TypeVar("_H", bound="_Handle")


class _Handle:
    """An owned sim handle; ``destroy()`` releases it, ``with`` destroys on exit."""

    _destroy_fn = ""
    handle: int

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.destroyed = False

    @classmethod
    def from_handle(cls: Type[_H], handle: int) -> _H:
        """Wrap an existing handle (for example a stream kctx reports)."""
        obj = cls.__new__(cls)
        _Handle.__init__(obj, check_int("handle", handle, 0, U64_MAX))
        return obj

    def destroy(self) -> None:
        _call(self._destroy_fn, self.handle)
        self.destroyed = True

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """Destroy; a failure rides on the body's exception as a note when the body raised."""
        if not self.destroyed:
            exit_release(exc, self.destroy, f"destroying {self!r}")

    def __int__(self) -> int:
        return self.handle

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Handle) and type(other) is type(self) and other.handle == self.handle

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.handle))

    def __repr__(self) -> str:
        state = " destroyed" if self.destroyed else ""
        return f"<kctx.sim.{type(self).__name__} 0x{self.handle:x}{state}>"


class CaptureInfo(NamedTuple):
    """sim_stream_get_capture_info: status, capture id and graph (0 when NONE)."""

    status: CaptureStatus
    id: int
    graph: int


class Stream(_Handle):
    """A stream of the current device (sim_stream_create): a FIFO executed
    asynchronously. The sim has no NULL stream; pass this object (or its
    ``handle``) to ``kctx.Context.launch`` as the caller stream."""

    _destroy_fn = "sim_stream_destroy"

    def __init__(self) -> None:
        h = c_uint64()
        _call("sim_stream_create", byref(h))
        super().__init__(h.value)

    def synchronize(self, timeout_ms: Optional[int] = None) -> None:
        """Wait for all enqueued work; raises with the stream's (sticky) error.
        With a timeout: SIM_TIMEOUT after timeout_ms (the work goes on). On a
        capturing stream: SIM_CAPTURE_UNSUPPORTED and the capture is invalidated."""
        if timeout_ms is None:
            _call("sim_stream_synchronize", self.handle)
        else:
            _call("sim_stream_synchronize_timeout", self.handle, check_int("timeout_ms", timeout_ms, 0, U32_MAX))

    def query(self) -> bool:
        """True when idle, False while work is pending; raises the stream error."""
        st = _lib.sim().sim_stream_query(self.handle)
        if st == SimStatus.NOT_READY:
            return False
        if st != 0:
            raise sim_error(st, last_error_message(), "sim_stream_query")
        return True

    @property
    def device(self) -> int:
        """sim_stream_get_device"""
        d = c_int()
        _call("sim_stream_get_device", self.handle, byref(d))
        return d.value

    def wait_event(self, event: Union["Event", int]) -> None:
        """sim_stream_wait_event: wait for the event's most recent record.
        Inside a capture, an event last recorded outside it is
        SIM_CAPTURE_ISOLATION and invalidates the capture."""
        _call("sim_stream_wait_event", self.handle, _handle(event, Event, "event"))

    def record_event(self, event: Union["Event", int]) -> None:
        """sim_event_record(event, this stream)."""
        _call("sim_event_record", _handle(event, Event, "event"), self.handle)

    def launch_kernel(self, function: Union["Function", int], params: BytesLike = b"", *,
                      target: Union[Target, int] = Target.AICORE, block_dim: int = 1) -> None:
        """sim_launch_kernel: `params` is copied at enqueue time."""
        p, n = readable(params, "params")
        _call("sim_launch_kernel", self.handle, _handle(function, Function, "function"),
              check_int("target", target, 1, 2), check_int("block_dim", block_dim, 0, U32_MAX), p, n)

    def memset_async(self, dst: Union[DeviceBuffer, int], value: int, size: Optional[int] = None) -> None:
        """sim_memset_async: fill `size` bytes (default: the whole buffer) with `value`."""
        if isinstance(dst, DeviceBuffer):
            ptr, size = dst.ptr, dst.size if size is None else size
        else:
            ptr = check_int("dst", dst, 0, U64_MAX)
            if size is None:
                raise KctxTypeError("size is required for a raw device address")
        _call("sim_memset_async", ptr, check_int("value", value, 0, 255), check_int("size", size, 0, U64_MAX),
              self.handle)

    def copy_device_async(self, dst: Union[DeviceBuffer, int], src: Union[DeviceBuffer, int], size: int) -> None:
        """sim_memcpy_async, device to device (host-side asynchronous copies are
        not offered: Python cannot keep the host buffer alive until the copy runs)."""
        d = dst.ptr if isinstance(dst, DeviceBuffer) else check_int("dst", dst, 0, U64_MAX)
        s = src.ptr if isinstance(src, DeviceBuffer) else check_int("src", src, 0, U64_MAX)
        _call("sim_memcpy_async", ctypes.c_void_p(d), ctypes.c_void_p(s), check_int("size", size, 0, U64_MAX),
              int(CopyKind.DEVICE_TO_DEVICE), self.handle)

    def begin_capture(self, mode: Union[CaptureMode, int] = CaptureMode.GLOBAL) -> None:
        """sim_stream_begin_capture (SIM_ILLEGAL_STATE if already part of a capture)."""
        _call("sim_stream_begin_capture", self.handle, check_int("mode", mode, 0, 2))

    def end_capture(self) -> "Graph":
        """sim_stream_end_capture: the captured graph. Raises SIM_CAPTURE_INVALIDATED
        (no graph) when the capture was invalidated; the stream leaves the capture."""
        g = c_uint64()
        _call("sim_stream_end_capture", self.handle, byref(g))
        return Graph.from_handle(g.value)

    def capture_info(self) -> CaptureInfo:
        """sim_stream_get_capture_info: legal at any time, never invalidates anything."""
        st, cid, g = c_int(), c_uint64(), c_uint64()
        _call("sim_stream_get_capture_info", self.handle, byref(st), byref(cid), byref(g))
        return CaptureInfo(CaptureStatus(st.value), cid.value, g.value)

    def capture(self, mode: Union[CaptureMode, int] = CaptureMode.GLOBAL) -> "Capture":
        """``with stream.capture() as cap: ...`` then ``cap.graph``. If the block
        raises, the capture is ended and its graph (if any) destroyed."""
        return Capture(self, mode)


class Capture:
    """The context manager returned by ``Stream.capture``."""

    def __init__(self, stream: Stream, mode: Union[CaptureMode, int]) -> None:
        self.stream = stream
        self.mode = mode
        self.graph: Optional[Graph] = None

    def __enter__(self) -> "Capture":
        self.stream.begin_capture(self.mode)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.graph = self.stream.end_capture()
            return
        # the block failed: end the capture, drop what it built; a failure of
        # that rides on the block's exception as a note
        exit_release(exc, lambda: self.stream.end_capture().destroy(), "ending the capture")


class Event(_Handle):
    """sim_event_create. ``disable_timing=True`` makes a sync-only event."""

    _destroy_fn = "sim_event_destroy"

    def __init__(self, disable_timing: bool = False) -> None:
        h = c_uint64()
        _call("sim_event_create", byref(h), EVENT_DISABLE_TIMING if disable_timing else EVENT_DEFAULT)
        super().__init__(h.value)

    def record(self, stream: "StreamLike") -> None:
        """sim_event_record: captures all work submitted to `stream` so far."""
        _call("sim_event_record", self.handle, stream_handle(stream))

    def query(self) -> bool:
        """True once the most recent record has executed (or none was made)."""
        st = _lib.sim().sim_event_query(self.handle)
        if st == SimStatus.NOT_READY:
            return False
        if st != 0:
            raise sim_error(st, last_error_message(), "sim_event_query")
        return True

    def synchronize(self) -> None:
        """sim_event_synchronize"""
        _call("sim_event_synchronize", self.handle)


def elapsed_ms(start: Union[Event, int], end: Union[Event, int]) -> float:
    """sim_event_elapsed_ms between two executed records of timing events."""
    ms = c_float()
    _call("sim_event_elapsed_ms", byref(ms), _handle(start, Event, "start"), _handle(end, Event, "end"))
    return ms.value


class Graph(_Handle):
    """A captured graph (from ``Stream.end_capture``)."""

    _destroy_fn = "sim_graph_destroy"

    def __init__(self) -> None:  # pragma: no cover - graphs come from captures
        raise KctxTypeError("graphs are made by Stream.end_capture()")

    @property
    def node_count(self) -> int:
        """sim_graph_node_count: kernels, copies, fills, host functions."""
        n = c_size_t()
        _call("sim_graph_node_count", self.handle, byref(n))
        return n.value

    def instantiate(self) -> "GraphExec":
        """sim_graph_instantiate: snapshot into an executable graph."""
        x = c_uint64()
        _call("sim_graph_instantiate", byref(x), self.handle)
        return GraphExec.from_handle(x.value)


class GraphExec(_Handle):
    """An executable graph."""

    _destroy_fn = "sim_graph_exec_destroy"

    def __init__(self) -> None:  # pragma: no cover
        raise KctxTypeError("executable graphs are made by Graph.instantiate()")

    def launch(self, stream: "StreamLike") -> None:
        """sim_graph_launch: enqueue one replay on `stream`. Replays of one
        executable graph never overlap each other."""
        _call("sim_graph_launch", self.handle, stream_handle(stream))


# ---------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------
class Function(_Handle):
    """A kernel entry point of a loaded module (no destroy: it lives as long
    as its module)."""

    def __init__(self) -> None:  # pragma: no cover
        raise KctxTypeError("functions come from Module.function()")

    def destroy(self) -> None:  # pragma: no cover
        raise KctxTypeError("a function is released by unloading its module")

    @property
    def address(self) -> int:
        """sim_function_address: the entry point's device address."""
        a = c_uint64()
        _call("sim_function_address", self.handle, byref(a))
        return a.value


class Module(_Handle):
    """A kernel module loaded from bytes (sim_module_load): an x86-64 ELF
    shared object built for the sim. The bytes are not retained."""

    _destroy_fn = "sim_module_unload"

    def __init__(self, data: BytesLike) -> None:
        p, n = readable(data, "data")
        h = c_uint64()
        _call("sim_module_load", byref(h), p, n)
        super().__init__(h.value)

    @classmethod
    def load_file(cls, path: "Union[str, os.PathLike[str]]") -> "Module":
        with open(path, "rb") as f:
            return cls(f.read())

    def unload(self) -> None:
        """sim_module_unload (SIM_ILLEGAL_STATE while its kernels are enqueued or running)."""
        self.destroy()

    def function(self, name: str) -> Function:
        """sim_module_get_function"""
        if not isinstance(name, str):
            raise KctxTypeError(f"name must be a str, not {type(name).__name__}")
        f = c_uint64()
        _call("sim_module_get_function", byref(f), self.handle, name.encode())
        return Function.from_handle(f.value)


# ---------------------------------------------------------------------------
# Fault injection, call counters, holds
# ---------------------------------------------------------------------------
class Fault(NamedTuple):
    """An armed fault (sim_fault_arm)."""

    id: int

    @property
    def hits(self) -> int:
        """sim_fault_hits: how many calls this fault has failed so far."""
        n = c_uint64()
        _call("sim_fault_hits", self.id, byref(n))
        return n.value


def arm_fault(op: Union[Op, int] = Op.ANY, *, nth: int = 1, device: int = -1, this_thread_only: bool = False,
              persistent: bool = False, error: Union[SimStatus, int] = SimStatus.INJECTED) -> Fault:
    """sim_fault_arm: the nth (1-based) matching counted call after arming fails
    with `error` before doing anything (with `persistent`, every later one too)."""
    f = _lib.SimFault()
    f.size = ctypes.sizeof(f)
    f.op = check_int("op", op, -1, len(OP_NAMES) - 1)
    f.device = _device(device, allow_any=True)
    f.this_thread_only = 1 if this_thread_only else 0
    f.nth = check_int("nth", nth, 0, U64_MAX)
    f.persistent = 1 if persistent else 0
    f.error = check_int("error", error, -(1 << 31), I32_MAX)
    fid = c_int()
    _call("sim_fault_arm", byref(f), byref(fid))
    return Fault(fid.value)


def clear_faults() -> None:
    """sim_fault_clear_all"""
    _call("sim_fault_clear_all")


def calls(op: Union[Op, int] = Op.ANY, device: int = -1) -> int:
    """sim_calls: calls of `op` in the process (device -1) or attributed to `device`."""
    return int(_lib.sim().sim_calls(check_int("op", op, -1, I32_MAX), _device(device, allow_any=True)))


def thread_calls(op: Union[Op, int] = Op.ANY) -> int:
    """sim_thread_calls: calls of `op` made by the calling thread."""
    return int(_lib.sim().sim_thread_calls(check_int("op", op, -1, I32_MAX)))


def calls_reset() -> None:
    """sim_calls_reset: process and per-device counters."""
    _lib.sim().sim_calls_reset()


def thread_calls_reset() -> None:
    """sim_thread_calls_reset"""
    _lib.sim().sim_thread_calls_reset()


class Hold(NamedTuple):
    """An armed hold (sim_hold_arm)."""

    id: int

    def wait_reached(self, timeout_ms: int) -> None:
        """sim_hold_wait_reached: SimError(TIMEOUT) if not reached in time."""
        _call("sim_hold_wait_reached", self.id, check_int("timeout_ms", timeout_ms, 0, U32_MAX))

    def release(self) -> None:
        """sim_hold_release (also disarms a hold not yet reached)."""
        _call("sim_hold_release", self.id)


def arm_hold(kind: Union[ExecKind, int] = ExecKind.ANY, *, device: int = -1, nth: int = 1,
             function: Union[Function, int, None] = None) -> Hold:
    """sim_hold_arm: the nth execution of `kind` after arming blocks before it
    runs until released."""
    h = _lib.SimHold()
    h.size = ctypes.sizeof(h)
    h.kind = check_int("kind", kind, 0, 6)
    h.device = _device(device, allow_any=True)
    h.nth = check_int("nth", nth, 0, U64_MAX)
    h.fn = 0 if function is None else _handle(function, Function, "function")
    hid = c_int()
    _call("sim_hold_arm", byref(h), byref(hid))
    return Hold(hid.value)


def release_all_holds() -> None:
    """sim_hold_release_all"""
    _call("sim_hold_release_all")
