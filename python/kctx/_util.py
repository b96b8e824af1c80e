"""Argument checks and buffer access shared by the modules of the package.

ctypes silently truncates integers to the C type; every integer that
reaches C goes through check_int first so that an out-of-range value is an
error, never a different value.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional, Tuple, Type

from .errors import KctxTypeError, KctxValueError

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1

#: bytes, bytearray, memoryview, or any C-contiguous object with the buffer
#: protocol (numpy arrays). Typing has no spelling of "has the buffer
#: protocol" before Python 3.12 (collections.abc.Buffer), so any object is
#: accepted by the type and checked at run time (KctxTypeError).
BytesLike = object


def check_int(name: str, value: object, lo: int, hi: int, range_error: Type[Exception] = KctxValueError) -> int:
    """`value` as an int in [lo, hi]; TypeError for a non-integer (bool is
    refused too), `range_error` for one out of range."""
    if isinstance(value, bool) or not isinstance(value, int):
        # numpy integers and other index-like objects are accepted
        index = getattr(type(value), "__index__", None)
        if isinstance(value, bool) or index is None:
            raise KctxTypeError(f"{name} must be an int, not {type(value).__name__}")
        value = int(index(value))
    if not lo <= value <= hi:
        raise range_error(f"{name} must be in [{lo}, {hi}], got {value}")
    return int(value)


def readable(data: BytesLike, name: str = "data") -> Tuple[Any, int]:
    """(pointer argument, size in bytes) for a read-only view of `data`.
    bytes are passed without a copy; writable buffers are passed in place;
    other read-only buffers are copied. The pointer argument keeps what it
    points to alive."""
    if isinstance(data, bytes):
        return data, len(data)
    if isinstance(data, str):
        raise KctxTypeError(f"{name} must be a bytes-like object, not str")
    try:
        mv = memoryview(data)  # type: ignore[arg-type]  # checked here, at run time
    except TypeError:
        raise KctxTypeError(f"{name} must be a bytes-like object, not {type(data).__name__}") from None
    if not mv.c_contiguous:
        raise KctxValueError(f"{name} must be C-contiguous")
    mv = mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv
    if mv.readonly:
        return bytes(mv), mv.nbytes
    if mv.nbytes == 0:
        return b"", 0
    return (ctypes.c_char * mv.nbytes).from_buffer(mv), mv.nbytes


def writable(data: BytesLike, name: str = "out") -> Tuple[Any, int]:
    """(pointer argument, size in bytes) for writing into `data` in place:
    a writable, C-contiguous buffer (bytearray, writable memoryview, numpy
    array)."""
    if isinstance(data, (bytes, str)):
        raise KctxTypeError(f"{name} must be a writable buffer (bytearray, memoryview, numpy array), not "
                        f"{type(data).__name__}")
    try:
        mv = memoryview(data)  # type: ignore[arg-type]  # checked here, at run time
    except TypeError:
        raise KctxTypeError(f"{name} must be a writable buffer, not {type(data).__name__}") from None
    if mv.readonly:
        raise KctxTypeError(f"{name} is read-only")
    if not mv.c_contiguous:
        raise KctxValueError(f"{name} must be C-contiguous")
    mv = mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv
    if mv.nbytes == 0:
        return None, 0
    return (ctypes.c_char * mv.nbytes).from_buffer(mv), mv.nbytes


def add_note(exc: BaseException, note: str) -> None:
    """BaseException.add_note (Python 3.11+), or the same ``__notes__`` list
    on older interpreters."""
    adder = getattr(exc, "add_note", None)
    if adder is not None:
        adder(note)
        return
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        setattr(exc, "__notes__", notes)
    notes.append(note)


def exit_release(exc: Optional[BaseException], release: Callable[[], None], what: str) -> None:
    """What every ``__exit__`` of the package does: run `release`; when the
    body succeeded (`exc` None) a failure of `release` raises as usual; when
    the body raised, a failure of `release` is attached to the body's
    exception as a note and the body's exception goes on (``__exit__``
    returns None: never swallowed, never replaced)."""
    if exc is None:
        release()
        return
    try:
        release()
    except Exception as e:  # the user's exception wins; ours rides along
        add_note(exc, f"also, while leaving the with block, {what} failed: {type(e).__name__}: {e}")
