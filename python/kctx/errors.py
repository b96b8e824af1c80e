"""kctx statuses and the exceptions that carry them.

``Status`` mirrors KCTX_STATUS_MAP of include/kctx/kctx.h, and one table
(STATUS_TABLE) generates one exception class per status class; the test
suite checks both against the header and against the library's
kctx_status_name() and kctx_status_string(), so they cannot drift apart.

Every exception raised for a failed kctx call is a subclass of
``KctxError`` and carries:

- ``status``: the ``Status`` the C function returned;
- ``name``: its C name (``"KCTX_BUSY"``);
- ``message``: the detailed message the library recorded for the calling
  thread (kctx_thread_last_error: what exactly, and where).

Errors found by the binding itself before calling C (a value out of range
for its C type, a destroyed context) use the same classes with a message
of their own; a value of the wrong Python type raises ``KctxTypeError``
(a ``TypeError``), a bad value that is no status ``KctxValueError`` (a
``ValueError``).

One root: every exception the package raises is a ``KctxError`` and also the
matching standard exception (``OutOfMemory`` is a ``MemoryError``,
``InvalidArgument`` a ``ValueError``, ``Timeout`` a ``TimeoutError``,
``kctx.LibraryNotFound`` an ``OSError``, ``kctx.sim.SimError`` a
``KctxError``). ``str(e)`` is the message alone (the status is in
``e.name``), and every exception pickles (multiprocessing).
"""
from __future__ import annotations

from ._enum import NamedIntEnum

import enum
from typing import TYPE_CHECKING, Dict, Optional, Tuple, Type


class Status(NamedIntEnum):
    """kctx_status: KCTX_STATUS_MAP of include/kctx/kctx.h, in order (the
    tests check names, values and strings against the header and the library)."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_HANDLE = 2
    INVALID_STATE = 3
    BUSY = 4
    CAPACITY = 5
    DUPLICATE_ID = 6
    UNKNOWN_ID = 7
    INVALID_IMAGE = 8
    INCOMPATIBLE_IMAGE = 9
    UNSUPPORTED = 10
    CAPTURE_ACTIVE = 11
    CAPTURE_BROKEN = 12
    DEVICE_LOST = 13
    POISONED = 14
    PLATFORM_ERROR = 15
    OUT_OF_MEMORY = 16
    TIMEOUT = 17
    DEVICE_ERROR = 18
    CONCURRENT_LAUNCH = 19
    NOT_FOUND = 20


# The one table the exception classes are generated from: per status, the
# class, an extra standard base (or None) and the header's one-line string.
STATUS_TABLE: Tuple[Tuple[Status, Optional[str], Optional[type], str], ...] = (
    (Status.OK, None, None, "success"),
    (Status.INVALID_ARGUMENT, "InvalidArgument", ValueError, "invalid argument"),
    (Status.INVALID_HANDLE, "InvalidHandle", None, "not a live context handle"),
    (Status.INVALID_STATE, "InvalidState", None,
     "not allowed in the context's mode or phase, or on this thread's current device"),
    (Status.BUSY, "Busy", None, "in use: claim held, work in flight, capture active, or live graphs"),
    (Status.CAPACITY, "Capacity", None, "a fixed capacity would be exceeded"),
    (Status.DUPLICATE_ID, "DuplicateId", None, "the callable id is already prepared"),
    (Status.UNKNOWN_ID, "UnknownId", None, "no callable is prepared under this id"),
    (Status.INVALID_IMAGE, "InvalidImage", ValueError, "the callable image was rejected by validation"),
    (Status.INCOMPATIBLE_IMAGE, "IncompatibleImage", ValueError, "the image has no binary variant this platform can load"),
    (Status.UNSUPPORTED, "Unsupported", NotImplementedError, "not supported by this platform or build"),
    (Status.CAPTURE_ACTIVE, "CaptureActive", None,
     "the context's streams are part of an active or invalidated capture"),
    (Status.CAPTURE_BROKEN, "CaptureBroken", None, "a failure inside a capture: the caller must discard that capture"),
    (Status.DEVICE_LOST, "DeviceLost", None, "the device is lost (fatal error); the context is quarantined"),
    (Status.POISONED, "Poisoned", None,
     "the context is poisoned by an earlier failure; only check and close are accepted"),
    (Status.PLATFORM_ERROR, "PlatformError", None, "a platform call failed"),
    (Status.OUT_OF_MEMORY, "OutOfMemory", MemoryError, "host or device memory exhausted"),
    (Status.TIMEOUT, "Timeout", TimeoutError, "a bounded wait timed out"),
    (Status.DEVICE_ERROR, "DeviceError", None, "work failed on the device"),
    (Status.CONCURRENT_LAUNCH, "ConcurrentLaunch", None, "unordered launches of one context overlapped on the device"),
    (Status.NOT_FOUND, "NotFound", LookupError, "unknown platform name"),
)


class KctxError(Exception):
    """A kctx call failed. ``status`` is the returned Status, ``name`` its C
    name and ``message`` the detailed message (kctx_thread_last_error)."""

    status: Status = Status.OK  # set by each subclass

    def __init__(self, message: str = "", status: Optional[int] = None) -> None:
        if status is not None:
            try:
                self.status = Status(status)
            except ValueError:  # a status this binding does not know
                self.status = int(status)  # type: ignore[assignment]
        self.message = message or _STRINGS.get(self.status, "")
        super().__init__(self.message)

    def __reduce__(self) -> "Tuple[object, ...]":
        # (class, (message,), attributes): pickles with its status (an
        # instance attribute where it differs from the class's) and any
        # attribute added later (``report``), for multiprocessing.
        return (type(self), (self.message,), dict(self.__dict__))

    def __str__(self) -> str:
        return self.message

    @property
    def name(self) -> str:
        """The C name of the status, as kctx_status_name() gives it."""
        s = self.status
        return f"KCTX_{s.name}" if isinstance(s, Status) else "KCTX_UNKNOWN"


KctxError.__module__ = "kctx"  # shown as kctx.KctxError, like the generated classes

_STRINGS: Dict[Status, str] = {row[0]: row[3] for row in STATUS_TABLE}
_BY_STATUS: Dict[int, Type[KctxError]] = {}

if TYPE_CHECKING:  # what the loop below generates, spelled out for type checkers (a test compares)
    class InvalidArgument(KctxError, ValueError): ...
    class InvalidHandle(KctxError): ...
    class InvalidState(KctxError): ...
    class Busy(KctxError): ...
    class Capacity(KctxError): ...
    class DuplicateId(KctxError): ...
    class UnknownId(KctxError): ...
    class InvalidImage(KctxError, ValueError): ...
    class IncompatibleImage(KctxError, ValueError): ...
    class Unsupported(KctxError, NotImplementedError): ...
    class CaptureActive(KctxError): ...
    class CaptureBroken(KctxError): ...
    class DeviceLost(KctxError): ...
    class Poisoned(KctxError): ...
    class PlatformError(KctxError): ...
    class OutOfMemory(KctxError, MemoryError): ...
    class Timeout(KctxError, TimeoutError): ...
    class DeviceError(KctxError): ...
    class ConcurrentLaunch(KctxError): ...
    class NotFound(KctxError, LookupError): ...
else:
    for _status, _cls_name, _extra, _doc in STATUS_TABLE:
        if _cls_name is None:
            continue
        _cls = type(_cls_name, (KctxError,) if _extra is None else (KctxError, _extra), {
            "__doc__": f"KCTX_{_status.name}: {_doc}.",
            "__module__": "kctx",  # shown as kctx.Busy etc.
            "status": _status,
        })
        globals()[_cls_name] = _cls
        _BY_STATUS[_status] = _cls
    del _status, _cls_name, _extra, _doc, _cls

class KctxTypeError(KctxError, TypeError):
    """An argument of the wrong Python type (found before any C call)."""

    status = Status.INVALID_ARGUMENT


class KctxValueError(KctxError, ValueError):
    """A bad value found by the binding that is no kctx status of its own
    (a sim-side range, a non-contiguous array, a host array)."""

    status = Status.INVALID_ARGUMENT


KctxTypeError.__module__ = KctxValueError.__module__ = "kctx"

EXCEPTION_NAMES: Tuple[str, ...] = tuple(row[1] for row in STATUS_TABLE if row[1] is not None)


def exception_for(status: int) -> Type[KctxError]:
    """The exception class of a status (KctxError for an unknown value)."""
    return _BY_STATUS.get(int(status), KctxError)


def error(status: int, message: str) -> KctxError:
    """An exception instance for a failed call that returned `status`."""
    cls = _BY_STATUS.get(int(status))
    if cls is not None:
        prefix = f"KCTX_{cls.status.name}: "
        if message.startswith(prefix):  # the library's message leads with the name: e.name has it
            message = message[len(prefix):]
        return cls(message)
    return KctxError(message or f"unknown kctx status {int(status)}", int(status))
