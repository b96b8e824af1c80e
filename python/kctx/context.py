"""kctx.Context: kernel contexts (include/kctx/kctx.h) from Python.

The rules the C header promises (K1..K36, docs/kernel-mode.md) hold
unchanged: this is a thin, checked binding. What the binding adds is the
Python side of "teardown errors reach the caller before anything is
forgotten":

- ``close()`` raises on failure and the object keeps its native handle and
  its registry of prepared callables (``prepared``: id -> digest and size),
  so a later ``close()`` can retry; only a successful close clears them.
- ``destroy()`` of a context that is not NEW or CLOSED raises ``Busy`` (the
  native side refuses, K27) and keeps everything.
- The finaliser (``__del__``) of a context that is not NEW or CLOSED never
  frees native resources: a live captured graph may still use them. It
  leaves them, remembers the handle (``abandoned_contexts()``,
  ``reclaim_abandoned()``) and warns with ``ResourceWarning``. A NEW or
  CLOSED but not destroyed context is destroyed quietly.
"""
from __future__ import annotations

from ._enum import NamedIntEnum

import ctypes
import enum
import hashlib
import os
import threading
import time
import warnings
from ctypes import byref, c_int, c_uint64
from dataclasses import dataclass
from os import PathLike as _OsPathLike
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, TypeVar, Union, overload

from . import _lib
from .caps import Capabilities, Strategy, StrategyLike, capabilities, new_caps
from ._util import U32_MAX, U64_MAX, BytesLike, add_note, check_int, exit_release, readable
from .interop import Arg, StreamLike, Tensor, marshal_args, stream_handle
from .errors import Busy, InvalidArgument, InvalidHandle, KctxError, KctxTypeError, KctxValueError, Status, error

KCTX_CONFIG_VERSION = 1
_I64_MIN = -(1 << 63)


class Mode(NamedIntEnum):
    """kctx_mode: the latch (K1)."""

    NONE = 0
    KERNEL = 1
    PROGRAM = 2


class Phase(NamedIntEnum):
    """kctx_phase (K8)."""

    NEW = 0
    READY = 1
    POISONED = 2
    QUARANTINED = 3
    CLOSING = 4
    CLOSED = 5


class PreparedCallable(NamedTuple):
    """What the Python object remembers of a prepared id: the SHA-256 of the
    image bytes and their size."""

    digest: str
    size: int


class ErrorSlot(NamedTuple):
    """One of the two error slots (K10): its status, C name and message."""

    status: Status
    name: str
    message: str


class CheckReport(NamedTuple):
    """kctx_check_report"""

    device_status: Status
    refused_replays: int
    concurrent_launches: int
    error_detail: int


@dataclass(frozen=True)
class ResourceInfo:
    """kctx_resource_info: the resident resources (0 where released)."""

    aicpu_stream: int
    aicore_stream: int
    events: Tuple[int, ...]
    programs_module: int
    runtime_image: int
    arch_table: int
    args_block: int
    runtime_image_bytes: int
    arch_table_bytes: int
    args_block_bytes: int
    token_capacity: int
    tokens_in_use: int
    callables: int
    uploads: int
    upload_bytes: int
    upload_stream: int


def scalar_f32(value: float) -> int:
    """The scalar that carries a float32 (its IEEE-754 bits in the low 32 bits)."""
    return int.from_bytes(ctypes.c_float(value), "little") & 0xFFFFFFFF


def _digest(image: BytesLike) -> str:
    data = image if isinstance(image, bytes) else memoryview(image).cast("B")  # type: ignore[arg-type]
    return hashlib.sha256(data).hexdigest()


def _raise(st: int) -> None:
    raise error(st, _lib.decode(_lib.kctx().kctx_thread_last_error()))


def _check(st: int) -> None:
    if st != 0:
        _raise(st)


def _id(value: Any) -> int:
    return check_int("id", value, 0, U64_MAX, InvalidArgument)


# Handles (and registries) the finaliser left behind; see reclaim_abandoned().
_abandoned_lock = threading.Lock()
_abandoned: List[Tuple[int, Dict[int, PreparedCallable]]] = []


def abandoned_contexts() -> List[int]:
    """Native handles of contexts whose Python object was finalised while not
    NEW or CLOSED: their resources were left in place."""
    with _abandoned_lock:
        return [h for h, _ in _abandoned]


def reclaim_abandoned() -> List["Context"]:
    """Take back every abandoned context as a new Context object (with its
    registry of prepared ids) so that it can be closed and destroyed."""
    with _abandoned_lock:
        taken = list(_abandoned)
        _abandoned.clear()
    out = []
    for h, prepared in taken:
        c = Context.__new__(Context)
        c._init_fields()
        c._handle = h
        c._prepared = prepared
        out.append(c)
    return out


PathLike = Union[str, "_OsPathLike[str]"]
_Self = TypeVar("_Self", bound="BaseContext")


def _trace_fields(cfg: Union[_lib.KernelConfig, _lib.ProgramConfig], path: Optional[PathLike], dev: int,
                  host: int) -> None:
    """Fill the tracing fields of a config (tracing on when path is given)."""
    cfg.trace_device_records = check_int("trace_device_records", dev, 0, U32_MAX, InvalidArgument)
    cfg.trace_host_records = check_int("trace_host_records", host, 0, U32_MAX, InvalidArgument)
    if path is not None:
        if isinstance(path, _OsPathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise KctxTypeError(f"trace_path must be a str or an os.PathLike, not {type(path).__name__}")
        cfg.flags = 1  # KCTX_TRACE_ENABLE
        cfg.trace_path = os.fsencode(path)


class Executable:
    """A prepared callable of a context (returned by ``Context.prepare``):
    ``exe.launch(*args, stream=s)`` or ``exe(*args, stream=s)`` launches it
    (kernel mode), ``exe.run(*args)`` runs it (program mode). ``id`` is its
    callable id, ``digest`` and ``size`` those of its image. It holds no
    native resource: the context owns the callable until close."""

    __slots__ = ("context", "id", "digest", "size")

    def __init__(self, context: "BaseContext", id: int, entry: PreparedCallable) -> None:
        self.context = context
        self.id = id
        self.digest = entry.digest
        self.size = entry.size

    def launch(self, *args: Arg, stream: StreamLike) -> None:
        """``context.launch(id, args, stream)``"""
        self.context.launch(self.id, args, stream)

    def __call__(self, *args: Arg, stream: StreamLike) -> None:
        self.context.launch(self.id, args, stream)

    def run(self, *args: Arg) -> None:
        """``context.run(id, args)`` (program mode)."""
        self.context.run(self.id, args)

    def __repr__(self) -> str:
        return f"<kctx.Executable id={self.id} size={self.size} sha256={self.digest[:12]}>"


class BaseContext:
    """What every kctx context object is (include/kctx/kctx.h): one native
    context handle, whatever made it and whatever its mode, with
    prepare, launch, run, check, capturable, flush_trace, close, destroy,
    the ``with`` block and the queries, each with its C entry's contract
    and errors. It promises no way to make one: ``kctx.Context`` creates a
    mode-less context for a platform by name (and inits it itself),
    ``kctx.opencl.Context`` and ``kctx.cuda.Context`` borrow a framework's
    device and are kernel-initialised by their constructor.
    ``BaseContext()`` itself raises KctxTypeError."""

    _handle: Optional[int]
    _destroyed: bool
    _prepared: Dict[int, PreparedCallable]
    #: the name ``repr`` shows
    _kind = "kctx.Context"

    def __init__(self) -> None:
        raise KctxTypeError("kctx.BaseContext is not constructed directly: use kctx.Context(platform), "
                            "kctx.opencl.Context(queue), kctx.cuda.Context() or kctx.acl.Context()")

    def _init_fields(self) -> None:
        # Guards the Python-side state below, and only that: it is never held
        # across a C call, so a call on another thread is never delayed by one
        # of this thread's (a close racing a prepare gets BUSY from the
        # library at once, K25) and the library decides every race (K33).
        self._lock = threading.Lock()
        self._handle = None
        self._destroyed = False
        self._prepared = {}
        self._in_flight: Dict[int, int] = {}  # id -> prepares of it still in C (minting skips them)
        self._closes = 0  # successful closes and destroys: a prepare that raced one records nothing
        self._next_id = 1 << 32
        self._strategy = Strategy.DEFAULT  # the config's strategy field unless an init is given one

    def _create(self, platform: Optional[str]) -> None:
        """kctx_context_create (the errors of ``kctx.Context``'s constructor)."""
        if platform is not None and not isinstance(platform, str):
            raise KctxTypeError(f"platform must be a str or None, not {type(platform).__name__}")
        h = c_uint64()
        _check(_lib.kctx().kctx_context_create(platform.encode() if platform is not None else None, byref(h)))
        self._handle = h.value

    # -- handle ------------------------------------------------------------
    @property
    def handle(self) -> Optional[int]:
        """The native handle, or None once destroyed."""
        return None if self._destroyed else self._handle

    def _h(self) -> int:
        # A destroyed context's stale handle still goes to C, which answers
        # INVALID_HANDLE (handles are validated without touching freed memory).
        if self._handle is None:
            raise InvalidHandle("the context was never created")
        return self._handle

    # -- init (for the subclasses) ----------------------------------------
    def _kernel_init(self, args_capacity: int = 4096, token_capacity: int = 256,
                     prepare_timeout_ms: int = 10000, trace_path: Optional[PathLike] = None,
                     trace_device_records: int = 65536, trace_host_records: int = 16384,
                     strategy: StrategyLike = None) -> None:
        """kctx_kernel_init with these config fields (``kctx.Context.kernel_init``)."""
        cfg = _lib.KernelConfig()
        cfg.size = ctypes.sizeof(cfg)
        cfg.version = KCTX_CONFIG_VERSION
        cfg.strategy = self._strategy if strategy is None else Strategy.parse(strategy)
        _trace_fields(cfg, trace_path, trace_device_records, trace_host_records)
        cfg.args_capacity = check_int("args_capacity", args_capacity, 0, U32_MAX, InvalidArgument)
        cfg.token_capacity = check_int("token_capacity", token_capacity, 0, U32_MAX, InvalidArgument)
        cfg.prepare_timeout_ms = check_int("prepare_timeout_ms", prepare_timeout_ms, 0, U32_MAX, InvalidArgument)
        _check(_lib.kctx().kctx_kernel_init(self._h(), byref(cfg)))

    def _borrow_and_init(self, platform: str, strategy: StrategyLike, **config: Any) -> None:
        """A kernel context on ``platform`` borrowing the calling thread's
        current device (kctx.cuda.Context, kctx.acl.Context): the strategy
        parsed first, then kctx_context_create and kctx_kernel_init with
        ``config`` (``_kernel_init``'s fields); a refused init releases the
        new context (``_release_refused_init``) and raises. The caller ran
        ``_init_fields`` first."""
        self._strategy = Strategy.parse(strategy)
        self._create(platform)
        try:
            self._kernel_init(**config)
        except BaseException as e:  # released as kctx.Context.kernel releases it
            self._release_refused_init(e, config.get("prepare_timeout_ms", 10000))
            raise

    def _release_refused_init(self, exc: BaseException, timeout_ms: int) -> None:
        """After a constructor's init was refused: release the new context,
        then let `exc` go on. A refused init leaves it NEW (destroy makes no
        platform call, K28) or, kctx.h says, CLOSING (a failed rollback, or
        an init upload whose wait failed: close releases it once the streams
        are idle, Busy before): then close first, retrying Busy for up to
        `timeout_ms`, and destroy. What cannot be released is not abandoned:
        `exc` carries this context as ``exc.context`` (close and destroy it
        later) and a note says why."""
        def release() -> None:
            if self.phase == Phase.CLOSING:
                deadline = time.monotonic() + timeout_ms / 1000.0
                delay = 0.001
                while True:
                    try:
                        self.close()
                        break
                    except Busy:  # the init's upload is still in flight (K17)
                        if time.monotonic() >= deadline:
                            raise
                        time.sleep(delay)
                        delay = min(delay * 2, 0.05)
            self.destroy()

        try:
            release()
        except Exception as e:  # the init's error wins; this one rides along
            exc.context = self  # type: ignore[attr-defined]
            add_note(exc, f"also, releasing the new context failed: {type(e).__name__}: {e}; it is {type(exc).__name__}'s "
                          f".context: close() and destroy() it later")

    # -- prepare, launch, check, run --------------------------------------
    @overload
    def prepare(self, image: BytesLike, *, id: Optional[int] = None) -> "Executable": ...

    @overload
    def prepare(self, id: int, image: BytesLike) -> "Executable": ...

    def prepare(self, *args: Union[int, BytesLike], id: Optional[int] = None,
                image: Optional[BytesLike] = None) -> "Executable":
        """kctx_prepare: validate `image` completely (InvalidImage, with the
        reason and offset in the message), then upload it under an id and
        wait for the upload. Returns the prepared callable as a callable
        object (``exe.launch(*args, stream=s)``, ``exe(*args, stream=s)``).

        ``prepare(image)`` (or ``prepare(image, id=None)``) lets kctx mint an
        id that no callable of this context uses; ``prepare(id, image)`` and
        ``prepare(image, id=7)`` use the given one. DuplicateId leaves the
        first registration undisturbed (K14); Busy while a launch is in flight
        (K15); CaptureActive while the context's streams are captured (K16).
        The bytes may be reused as soon as this returns. The binding's lock is
        not held while the library validates, builds and uploads: a close on
        another thread meanwhile raises Busy at once (K25); if one succeeds
        right after the library prepared, the returned Executable is not
        listed in the closed context's ``prepared``."""
        if len(args) == 2:
            if id is not None or image is not None:
                raise KctxTypeError("prepare(id, image) takes no id= or image= keyword")
            ident_v: object = args[0]
            image_v: object = args[1]
            if ident_v is None:
                raise KctxTypeError("id must be an int (omit it to let kctx mint one), not None")
        elif len(args) == 1:
            if image is None:
                ident_v, image_v = id, args[0]
            else:
                if id is not None:
                    raise KctxTypeError("id given twice")
                ident_v, image_v = args[0], image
        elif not args:
            ident_v, image_v = id, image
        else:
            raise KctxTypeError(f"prepare takes (image) or (id, image), not {len(args)} arguments")
        if image_v is None:
            raise KctxTypeError("prepare needs an image (bytes-like)")
        ptr, size = readable(image_v, "image")
        entry = PreparedCallable(_digest(image_v), size)
        with self._lock:
            ident = self._mint_id() if ident_v is None else _id(ident_v)
            self._in_flight[ident] = self._in_flight.get(ident, 0) + 1
            closes = self._closes
        ok = False
        try:  # without the lock: the build or upload may take long (K25: a close meanwhile is BUSY)
            _check(_lib.kctx().kctx_prepare(self._h(), ident, ptr, size))
            ok = True
        finally:
            with self._lock:
                left = self._in_flight.pop(ident) - 1
                if left:
                    self._in_flight[ident] = left
                if ok and closes == self._closes:  # a close that won right after prepare cleared the registry
                    self._prepared[ident] = entry
        return Executable(self, ident, entry)

    def _mint_id(self) -> int:
        # ids minted by the binding count up from 2**32, skipping ids in use
        # or being prepared (called with the lock held)
        while self._next_id in self._prepared or self._next_id in self._in_flight:
            self._next_id += 1
        ident = self._next_id
        self._next_id += 1
        return ident

    def launch(self, id: int, args: Iterable[Arg], stream: StreamLike) -> None:
        """kctx_launch: enqueue the prepared callable onto the caller's
        `stream` (a native stream handle, or a kctx.sim.Stream; never stored).
        `args` gives one argument per callable parameter, in signature order:
        a kctx.Tensor or kctx.sim.DeviceBuffer for a tensor parameter, an int
        for a scalar (its 64-bit value; negative ints as two's complement).

        Success means *submitted*; device-side failures surface through
        check(). Preflight refusals change nothing: InvalidArgument,
        Poisoned, DeviceLost, InvalidState, UnknownId, CaptureActive (K34),
        CaptureBroken (the caller's capture is already invalidated), Capacity
        (no graph lifetime token left). A failure after enqueueing started
        poisons the context (CaptureBroken inside a capture: discard it).
        A captured launch replays with the args it was captured with (K22).
        Do not wait on kctx's events (K21)."""
        ident = _id(id)
        s = stream_handle(stream)
        arr, n = marshal_args(args, self._device_of_args)
        _check(_lib.kctx().kctx_launch(self._h(), ident, arr, n, s))

    def run(self, id: int, args: Iterable[Arg] = ()) -> None:
        """kctx_run: program mode's synchronous run (InvalidState on a kernel context, K3)."""
        ident = _id(id)
        arr, n = marshal_args(args, self._device_of_args)
        _check(_lib.kctx().kctx_run(self._h(), ident, arr, n))

    def check(self) -> CheckReport:
        """kctx_check: read the device side without waiting (outside capture).
        Returns the report when the device side is clean. A device error or a
        detected concurrent launch poisons the context and raises DeviceError
        / ConcurrentLaunch; a poisoned context raises Poisoned; the exception
        carries the report as ``.report`` when the library wrote one."""
        rep = _lib.CheckReport()
        rep.size = ctypes.sizeof(rep)
        rep.device_status = -1  # tells whether the library wrote the report
        st = _lib.kctx().kctx_check(self._h(), byref(rep))
        report = None
        if rep.device_status != -1:
            report = CheckReport(Status(rep.device_status), rep.refused_replays, rep.concurrent_launches,
                                 rep.error_detail)
        if st != 0:
            e = error(st, _lib.decode(_lib.kctx().kctx_thread_last_error()))
            e.report = report  # type: ignore[attr-defined]
            raise e
        assert report is not None
        return report

    def capturable(self, id: int) -> bool:
        """kctx_capturable: may a launch of callable `id` be captured into the
        caller's graph here? Returns True when yes (the platform has capture
        and `id` is prepared); otherwise raises the answer, with the reason
        in the message, checked in this order: InvalidHandle (destroyed);
        InvalidState (a mode-less or program-mode context: only kernel mode
        launches onto a caller's stream, K3); Unsupported (the platform has
        no capture: launch eagerly); UnknownId (no callable is prepared
        under `id`, also after close). InvalidArgument for an id that is no
        u64, before any C call. A question, not a launch: no platform call,
        nothing changes, any phase (a poisoned context's launches are
        refused whatever this says)."""
        ident = _id(id)
        _check(_lib.kctx().kctx_capturable(self._h(), ident))
        return True

    def flush_trace(self) -> None:
        """kctx_trace_flush: write what the trace has collected so far to
        trace_path (Chrome trace-event JSON, as close does), while the
        context lives (K32, docs/tracing.md). Legal while launches run and
        captured graphs replay: only committed device records are copied
        (on the upload stream), none twice. Each flush rewrites the file
        with everything since init; a flush does not empty the buffers, so
        past their capacity later records are dropped (and counted).
        Accepted in READY and POISONED.
        Errors, checked in this order: Unsupported (tracing is off: a
        property of the config, in any phase); DeviceLost (quarantined);
        InvalidState (another phase: NEW, CLOSING, CLOSED; or another
        current device, K5); CaptureActive (the context's streams are in a
        capture); PlatformError (the trace file cannot be written); a
        platform call's mapped status; InvalidHandle (destroyed)."""
        _check(_lib.kctx().kctx_trace_flush(self._h()))

    def _device_of_args(self) -> int:
        # asked only when an argument declares its device
        v = c_int(-1)
        _lib.kctx().kctx_get_device(self._h(), byref(v))
        return v.value

    # -- teardown --------------------------------------------------------
    def close(self) -> None:
        """kctx_close (K25, K26, K30, K36). Busy (nothing changed) while the
        context's streams are captured, a launch runs, or live captured graphs
        hold it; DeviceLost in quarantine; a failed release raises and keeps
        the context CLOSING with what failed still held — and this object
        keeps its handle and ``prepared`` registry: call close() again. Only a
        successful close clears the registry. Close of a NEW or CLOSED
        context succeeds. It never waits for another thread's call on the
        context: while a prepare builds or uploads, Busy at once (K25)."""
        _check(_lib.kctx().kctx_close(self._h()))  # the library orders it with every other call (K33)
        self._forget()

    def _forget(self) -> None:
        """After a successful close or destroy: the registry is empty, and a
        prepare still returning from C does not record into it."""
        with self._lock:
            self._closes += 1
            self._prepared.clear()

    def destroy(self) -> None:
        """kctx_destroy: refused with Busy unless the phase is NEW or CLOSED
        (K27); never calls the platform (K28). Afterwards the handle is stale:
        every call raises InvalidHandle."""
        _check(_lib.kctx().kctx_destroy(self._h()))
        self._destroyed = True
        self._forget()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        """Close, then destroy. When the body succeeded a failing close
        raises (the handle is kept for a retry); when the body raised, the
        failure is attached to the body's exception as a note and the body's
        exception is what propagates."""
        if self._destroyed:
            return

        def release() -> None:
            self.close()  # raises on failure: the handle is kept for a retry
            self.destroy()

        exit_release(exc, release, f"closing {self!r}")

    def __del__(self) -> None:
        h = getattr(self, "_handle", None)
        if h is None or getattr(self, "_destroyed", True):
            return
        try:
            lib = _lib.kctx()
            phase = c_int(-1)
            if lib.kctx_get_phase(h, byref(phase)) != 0:
                return  # not live (destroyed behind our back): nothing to do
            if phase.value in (Phase.NEW, Phase.CLOSED):
                lib.kctx_destroy(h)  # no platform calls (K28)
                return
            with _abandoned_lock:
                _abandoned.append((h, dict(self._prepared)))
            message = (f"kctx.Context 0x{h:x} was finalised while {Phase(phase.value).name}: its native "
                       f"resources are left in place (a captured graph may still use them); close() and "
                       f"destroy() it, or take it back with kctx.reclaim_abandoned()")
        except Exception:  # interpreter shutdown: modules may be half torn down
            return
        try:
            warnings.warn(message, ResourceWarning, stacklevel=2)
        except ResourceWarning:
            raise  # -W error::ResourceWarning: reported like Python's own unclosed resources
        except Exception:
            pass

    # -- queries ----------------------------------------------------------
    @property
    def prepared(self) -> Mapping[int, PreparedCallable]:
        """The registry of prepared ids (a copy): id -> (sha256 hex digest, size)."""
        with self._lock:
            return dict(self._prepared)

    @property
    def phase(self) -> Phase:
        """kctx_get_phase"""
        v = c_int()
        _check(_lib.kctx().kctx_get_phase(self._h(), byref(v)))
        return Phase(v.value)

    @property
    def mode(self) -> Mode:
        """kctx_get_mode"""
        v = c_int()
        _check(_lib.kctx().kctx_get_mode(self._h(), byref(v)))
        return Mode(v.value)

    @property
    def device(self) -> int:
        """kctx_get_device: the borrowed (kernel) or owned (program) device; -1 if NEW."""
        v = c_int()
        _check(_lib.kctx().kctx_get_device(self._h(), byref(v)))
        return v.value

    @property
    def platform(self) -> str:
        """kctx_platform_name ("sim")."""
        name = _lib.decode(_lib.kctx().kctx_platform_name(self._h()))
        if not name:
            raise InvalidHandle(_lib.decode(_lib.kctx().kctx_thread_last_error()))
        return name

    def _slot(self, fn: str) -> Optional[ErrorSlot]:
        st = c_int()
        buf = ctypes.create_string_buffer(512)
        _check(getattr(_lib.kctx(), fn)(self._h(), byref(st), buf, len(buf)))
        if st.value == 0:
            return None
        s = Status(st.value)
        return ErrorSlot(s, f"KCTX_{s.name}", _lib.decode(buf.value))

    @property
    def runtime_error(self) -> Optional[ErrorSlot]:
        """kctx_runtime_error: the first cause of poisoning or quarantine, or None."""
        return self._slot("kctx_runtime_error")

    @property
    def teardown_error(self) -> Optional[ErrorSlot]:
        """kctx_teardown_error: the first real release failure (kept after a
        later retry succeeds), or None."""
        return self._slot("kctx_teardown_error")

    @property
    def last_error(self) -> str:
        """kctx_last_error: the last refusal on this context (any thread)."""
        return _lib.decode(_lib.kctx().kctx_last_error(self._h()))

    @property
    def resources(self) -> ResourceInfo:
        """kctx_get_resources"""
        r = _lib.ResourceInfo()
        r.size = ctypes.sizeof(r)
        _check(_lib.kctx().kctx_get_resources(self._h(), byref(r)))
        return ResourceInfo(r.aicpu_stream, r.aicore_stream, tuple(r.events), r.programs_module, r.runtime_image,
                            r.arch_table, r.args_block, r.runtime_image_bytes, r.arch_table_bytes,
                            r.args_block_bytes, r.token_capacity, r.tokens_in_use, r.callables, r.uploads,
                            r.upload_bytes, r.upload_stream)

    def _caps(self) -> _lib.PlatformCaps:
        c = new_caps()
        _check(_lib.kctx().kctx_get_context_caps(self._h(), byref(c)))
        return c

    @property
    def caps(self) -> Capabilities:
        """kctx_get_context_caps: the capabilities of the context's platform
        (a read-only ``kctx.Capabilities``), with ``strategy`` the one in
        effect (DEFAULT before an init latched it). Any phase, any mode, any
        thread; no platform call. Errors: InvalidHandle (destroyed)."""
        return capabilities(self._caps())

    @property
    def strategy(self) -> Strategy:
        """The strategy in effect (kctx_get_context_caps' ``strategy``):
        RESIDENT or HOST_ORDERED once an init latched it, Strategy.DEFAULT
        before. Any phase, any mode, any thread; no platform call.
        Errors: InvalidHandle (destroyed)."""
        return capabilities(self._caps()).strategy

    @property
    def platform_calls(self) -> int:
        """kctx_platform_calls: calls the context made into the platform table."""
        v = c_uint64()
        _check(_lib.kctx().kctx_platform_calls(self._h(), byref(v)))
        return v.value

    def __repr__(self) -> str:
        if self._destroyed:
            return f"<{self._kind} destroyed>"
        try:
            extra = f" phase={self.phase.name} mode={self.mode.name}"
        except KctxError:
            extra = ""
        h = self._handle if self._handle is not None else 0
        return f"<{self._kind} 0x{h:x}{extra} prepared={len(self._prepared)}>"


class Context(BaseContext):
    """A kctx context (kctx_context_create): mode-less until kernel_init or
    program_init latches it (K1). Usable as a context manager: ``__exit__``
    closes, then destroys; if close fails it raises and the object keeps its
    handle (close again later). Everything but making and initialising it
    is ``kctx.BaseContext``'s."""

    def __init__(self, platform: Optional[str] = None, strategy: StrategyLike = None) -> None:
        """Create a context for a platform: by name, or, when None,
        KCTX_PLATFORM from the environment, else "sim". No device work.
        `strategy` (``kctx.Strategy``, "resident", "host-ordered", or None
        for DEFAULT: $KCTX_STRATEGY, else the platform's default) is what
        kernel_init and program_init put in the config's ``strategy`` field
        unless given their own; ``strategy`` (the property) reports the one
        init latched.
        Errors: KctxValueError (a ValueError: a strategy that is none) and
        KctxTypeError (a platform or strategy of the wrong type), both
        before any C call; NotFound (an unknown or unbuilt platform);
        Unsupported (built but not available here); Capacity (too many
        live handles). A strategy the platform does not offer is refused by
        the init (Unsupported, naming what it offers)."""
        self._init_fields()
        if platform is not None and not isinstance(platform, str):
            raise KctxTypeError(f"platform must be a str or None, not {type(platform).__name__}")
        self._strategy = Strategy.parse(strategy)
        self._create(platform)

    @classmethod
    def create(cls, platform: Optional[str] = None, strategy: StrategyLike = None) -> "Context":
        """Same as Context(platform, strategy)."""
        return cls(platform, strategy)

    @classmethod
    def kernel(cls, platform: Optional[str] = None, *, strategy: StrategyLike = None, args_capacity: int = 4096,
               token_capacity: int = 256, prepare_timeout_ms: int = 10000, trace_path: Optional[PathLike] = None,
               trace_device_records: int = 65536, trace_host_records: int = 16384) -> "Context":
        """Create and kernel_init in one step (``with kctx.Context.kernel() as
        ctx:``; ``strategy`` as in ``Context``). If kernel_init fails, the new
        context is released and the error raised: destroyed when the init
        left it NEW; closed (Busy retried for up to prepare_timeout_ms), then
        destroyed, when it left it CLOSING (a failed rollback, an init upload
        still in flight: kctx.h); what cannot be released rides on the error
        as ``.context`` (close and destroy it later), never abandoned."""
        ctx = cls(platform, strategy)
        try:
            ctx.kernel_init(args_capacity=args_capacity, token_capacity=token_capacity,
                            prepare_timeout_ms=prepare_timeout_ms, trace_path=trace_path,
                            trace_device_records=trace_device_records, trace_host_records=trace_host_records)
        except BaseException as e:
            ctx._release_refused_init(e, prepare_timeout_ms)
            raise
        return ctx

    @classmethod
    def program(cls, device: int, platform: Optional[str] = None, *, strategy: StrategyLike = None,
                args_capacity: int = 4096, prepare_timeout_ms: int = 10000) -> "Context":
        """Create and program_init in one step (``strategy`` as in
        ``Context``); released again if the init fails, as in ``kernel``."""
        ctx = cls(platform, strategy)
        try:
            ctx.program_init(device, args_capacity=args_capacity, prepare_timeout_ms=prepare_timeout_ms)
        except BaseException as e:
            ctx._release_refused_init(e, prepare_timeout_ms)
            raise
        return ctx

    # -- init ------------------------------------------------------------
    def kernel_init(self, args_capacity: int = 4096, token_capacity: int = 256,
                    prepare_timeout_ms: int = 10000, trace_path: Optional[PathLike] = None,
                    trace_device_records: int = 65536, trace_host_records: int = 16384,
                    strategy: StrategyLike = None) -> None:
        """kctx_kernel_init: borrow the calling thread's current device (K4),
        take the claim (K6), latch KERNEL and create the resident resources.
        Refused before the latch (InvalidArgument for a bad config, Busy when
        another kernel context holds the device): the context stays NEW and
        mode-less. InvalidState on a READY or PROGRAM context.
        With `trace_path`, tracing is enabled (K32): the trace is written there
        as Chrome trace-event JSON after a successful close (see
        docs/tracing.md).
        `strategy` (None: the one the context was created with) goes into the
        config's ``strategy`` field; a bad value is KctxValueError /
        KctxTypeError before any C call, a strategy the platform does not
        offer Unsupported (the context stays NEW), a $KCTX_STRATEGY naming
        none InvalidArgument."""
        self._kernel_init(args_capacity, token_capacity, prepare_timeout_ms, trace_path, trace_device_records,
                          trace_host_records, strategy)

    def program_init(self, device: int, args_capacity: int = 4096, prepare_timeout_ms: int = 10000,
                     strategy: StrategyLike = None) -> None:
        """kctx_program_init: the context owns `device` (it initialises the
        platform and makes the device current on the calling thread). No
        claim. `strategy` as in kernel_init."""
        cfg = _lib.ProgramConfig()
        cfg.size = ctypes.sizeof(cfg)
        cfg.version = KCTX_CONFIG_VERSION
        cfg.strategy = self._strategy if strategy is None else Strategy.parse(strategy)
        _trace_fields(cfg, None, 65536, 16384)
        cfg.device = check_int("device", device, -(1 << 31), (1 << 31) - 1, InvalidArgument)
        cfg.args_capacity = check_int("args_capacity", args_capacity, 0, U32_MAX, InvalidArgument)
        cfg.prepare_timeout_ms = check_int("prepare_timeout_ms", prepare_timeout_ms, 0, U32_MAX, InvalidArgument)
        _check(_lib.kctx().kctx_program_init(self._h(), byref(cfg)))


def status_name(status: int) -> str:
    """kctx_status_name: "KCTX_BUSY", ...; "KCTX_UNKNOWN" otherwise."""
    return _lib.decode(_lib.kctx().kctx_status_name(check_int("status", status, -(1 << 31), (1 << 31) - 1)))


def status_string(status: int) -> str:
    """kctx_status_string: one line describing the status class."""
    return _lib.decode(_lib.kctx().kctx_status_string(check_int("status", status, -(1 << 31), (1 << 31) - 1)))


def phase_name(phase: int) -> str:
    """kctx_phase_name"""
    return _lib.decode(_lib.kctx().kctx_phase_name(check_int("phase", phase, -(1 << 31), (1 << 31) - 1)))


def version() -> str:
    """The loaded library's version, "major.minor.patch" (kctx_version), the
    same as kctx.__version__ and `kctx --version`."""
    return _lib.version_string(int(_lib.kctx().kctx_version()))


def thread_last_error() -> str:
    """kctx_thread_last_error: the calling thread's last error message."""
    return _lib.decode(_lib.kctx().kctx_thread_last_error())
