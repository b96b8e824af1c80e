"""kctx's own fault injection at the platform seam (include/kctx/kctx.h,
"Fault injection and call counting at the platform seam"): every call kctx
makes into a platform's tables goes through one wrapper in the core, which
counts it and can fail it before the platform is reached, on every
platform (sim, opencl, cuda), so a framework's tests can sweep faults from
Python anywhere, not only on the sim (``kctx.sim.arm_fault`` fails the
sim's own runtime calls instead).

- ``kctx.arm_fault(op, nth=1, ...)`` arms one fault and returns a
  ``kctx.Fault``, a context manager that always disarms on leaving the
  block (also when the block raises).
- ``kctx.thread_platform_calls(op)`` counts the calling thread's calls
  through the seam (the ruler of a sweep); ``kctx.clear_faults()`` disarms
  every fault.
"""
from __future__ import annotations

import ctypes
import threading
import weakref
from ctypes import byref, c_int, c_uint64
from typing import Any, Optional, Union

from . import _lib
from ._enum import NamedIntEnum
from ._util import U64_MAX, check_int
from .errors import InvalidArgument, KctxTypeError, Status
from .errors import error as _error


class PlatformOp(NamedIntEnum):
    """kctx_platform_op: KCTX_PLATFORM_OP_MAP of kctx.h, in order (the tests
    check names, values and kctx_platform_op_name against the header)."""

    ANY = -1
    DEVICE_COUNT = 0
    DEVICE_INFO = 1
    STREAM_CREATE = 2
    STREAM_DESTROY = 3
    STREAM_SYNC = 4
    STREAM_QUERY = 5
    STREAM_INFO = 6
    EVENT_CREATE = 7
    EVENT_DESTROY = 8
    EVENT_RECORD = 9
    STREAM_WAIT_EVENT = 10
    MEM_ALLOC = 11
    MEM_FREE = 12
    MEMCPY_HTOD_ASYNC = 13
    MEMSET_ASYNC = 14
    MEMCPY_DTOH_ASYNC = 15
    ATOMIC_READ_U32 = 16
    ATOMIC_WRITE_U32 = 17
    MODULE_LOAD = 18
    MODULE_UNLOAD = 19
    MODULE_FUNCTION = 20
    LAUNCH = 21
    CURRENT_DEVICE = 22
    DEVICE_EPOCH = 23
    MEM_RANGE_CHECK = 24
    FUNCTION_ADDRESS = 25
    EXCHANGE_CAPTURE_MODE = 26
    GRAPH_ATTACH_HOOK = 27
    BOUND_DEVICE = 28
    LIFECYCLE_INIT = 29
    LIFECYCLE_FINALIZE = 30
    LIFECYCLE_SET_DEVICE = 31
    LIFECYCLE_RESET_DEVICE = 32
    MEM_FREE_COUNTER = 33

    @property
    def c_name(self) -> str:
        """kctx_platform_op_name: "stream_sync", ...; "any" for ANY."""
        return _lib.decode(_lib.kctx().kctx_platform_op_name(int(self)))


#: The operations that enqueue work (the conformance sweep's list): a launch
#: makes its preflight calls first, then only these (K19).
ENQUEUE_OPS = (PlatformOp.EVENT_RECORD, PlatformOp.STREAM_WAIT_EVENT, PlatformOp.LAUNCH,
               PlatformOp.MEMCPY_HTOD_ASYNC, PlatformOp.MEMSET_ASYNC, PlatformOp.MEMCPY_DTOH_ASYNC)

#: The statuses a fault may inject (kctx_fault_arm refuses any other).
FAULT_ERRORS = (Status.PLATFORM_ERROR, Status.OUT_OF_MEMORY, Status.BUSY, Status.DEVICE_LOST,
                Status.CAPTURE_BROKEN, Status.TIMEOUT, Status.DEVICE_ERROR, Status.UNSUPPORTED)


# The faults this package armed and has not disarmed: kctx.h has no
# per-fault disarm, only kctx_fault_clear_all, so every disarm disarms them
# all and each keeps its hit count from that moment.
_armed_lock = threading.Lock()
_armed: "weakref.WeakSet[Fault]" = weakref.WeakSet()


class Fault:
    """One armed fault (``kctx.arm_fault``): ``id`` (kctx's fault id),
    ``op``, ``nth``, ``persistent``, ``this_thread_only``, ``error``, and
    ``hits`` (how many calls it has failed). A context manager: leaving the
    ``with`` block disarms it, whether or not the block raised (the block's
    exception propagates unchanged). ``disarm()`` is idempotent.

    kctx.h has only kctx_fault_clear_all: disarming one fault disarms every
    kctx fault armed in the process (this package's ``Fault`` objects then
    all report ``armed`` False and keep their hit counts)."""

    __slots__ = ("id", "op", "nth", "persistent", "this_thread_only", "error", "_hits", "__weakref__")

    def __init__(self, id: int, op: PlatformOp, nth: int, persistent: bool, this_thread_only: bool,
                 error: Status) -> None:
        self.id = id
        self.op = op
        self.nth = nth
        self.persistent = persistent
        self.this_thread_only = this_thread_only
        self.error = error
        self._hits: Optional[int] = None  # set when disarmed

    @property
    def armed(self) -> bool:
        return self._hits is None

    @property
    def hits(self) -> int:
        """kctx_fault_hits: the calls this fault has failed (frozen once disarmed)."""
        frozen = self._hits
        if frozen is not None:
            return frozen
        return _hits(self.id)

    def disarm(self) -> None:
        """Disarm (kctx_fault_clear_all: every kctx fault). Never raises."""
        clear_faults()

    def __enter__(self) -> "Fault":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.disarm()

    def __repr__(self) -> str:
        state = "armed" if self.armed else "disarmed"
        return (f"<kctx.Fault {self.id} {self.op.name} nth={self.nth}{' persistent' if self.persistent else ''} "
                f"-> {self.error.name}, {state}, hits={self.hits}>")


def _hits(fault_id: int) -> int:
    v = c_uint64()
    st = _lib.kctx().kctx_fault_hits(fault_id, byref(v))
    if st != 0:
        raise _error(st, _lib.decode(_lib.kctx().kctx_thread_last_error()))
    return v.value


def _op(op: Union[PlatformOp, int]) -> PlatformOp:
    v = check_int("op", op, -(1 << 31), (1 << 31) - 1, InvalidArgument)
    try:
        return PlatformOp(v)
    except ValueError:
        raise InvalidArgument(f"op {v} is not a kctx_platform_op (-1 any, 0..{len(PlatformOp) - 2})") from None


def arm_fault(op: Union[PlatformOp, int] = PlatformOp.ANY, *, nth: int = 1, persistent: bool = False,
              this_thread_only: bool = True, error: Union[Status, int] = Status.PLATFORM_ERROR) -> Fault:
    """kctx_fault_arm: the `nth` (1-based) matching call made after arming —
    of operation `op` (``PlatformOp.ANY``: any), made by the arming thread
    when `this_thread_only` (the default), on any context and any platform
    — fails with `error` instead of reaching the platform; with
    `persistent`, that call and every later matching one. The failure goes
    through the same mapping as a real one (K29's quarantine included) and
    its message says "injected fault". Use it as ``with kctx.arm_fault(...)
    as fault:`` (disarmed on leaving the block, also on an exception) or
    call ``fault.disarm()``.

    Errors: InvalidArgument (an op that is none, nth 0 or beyond u64, an
    error that is not one of FAULT_ERRORS: PLATFORM_ERROR, OUT_OF_MEMORY,
    BUSY, DEVICE_LOST, CAPTURE_BROKEN, TIMEOUT, DEVICE_ERROR, UNSUPPORTED);
    Capacity (16 faults armed, KCTX_MAX_FAULTS); KctxTypeError (a value of
    the wrong type). Nothing is armed when it raises."""
    f = _lib.KctxFault()
    f.size = ctypes.sizeof(f)
    which = _op(op)
    f.op = which
    f.nth = check_int("nth", nth, 0, U64_MAX, InvalidArgument)
    for name, flag in (("persistent", persistent), ("this_thread_only", this_thread_only)):
        if not isinstance(flag, bool):
            raise KctxTypeError(f"{name} must be a bool, not {type(flag).__name__}")
    f.persistent = int(persistent)
    f.this_thread_only = int(this_thread_only)
    err = check_int("error", error, -(1 << 31), (1 << 31) - 1, InvalidArgument)
    f.error = err
    fid = c_int(-1)
    lib = _lib.kctx()
    with _armed_lock:
        st = lib.kctx_fault_arm(byref(f), byref(fid))
        if st != 0:
            raise _error(st, _lib.decode(lib.kctx_thread_last_error()))
        fault = Fault(fid.value, which, f.nth, persistent, this_thread_only, Status(err))
        _armed.add(fault)
    return fault


def clear_faults() -> None:
    """kctx_fault_clear_all: disarm every kctx fault (each ``Fault`` keeps
    its hit count). Never raises."""
    lib = _lib.kctx()
    with _armed_lock:
        for fault in list(_armed):
            if fault._hits is None:
                try:
                    fault._hits = _hits(fault.id)
                except Exception:  # a fault id is always valid: cannot happen
                    fault._hits = 0
        _armed.clear()
        lib.kctx_fault_clear_all()


def thread_platform_calls(op: Union[PlatformOp, int] = PlatformOp.ANY) -> int:
    """kctx_thread_platform_calls: the calls of `op` (ANY: all) the calling
    thread made through the seam since it started, on any context,
    injected failures included. The ruler of a fault sweep: count one run,
    then fail its 1st, 2nd, ... call."""
    return int(_lib.kctx().kctx_thread_platform_calls(_op(op)))
