"""Issue 23 items 2 and 3: every Python method may be called from any thread
(K33), and close never waits for another thread's call (K25).

The binding's lock guards its own registry only and is never held across a
C call: the library decides every race, and a racing call's outcome is a
status the C API gives (as a kctx exception), never a KeyError or an
AttributeError, never a crash. The OpenCL halves (the real framework,
PyOpenCL on PoCL) are in test_opencl.py.
"""
from __future__ import annotations

import itertools
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import pytest

import kctx
from kctx import sim
from support import N, add_image, close_right_after_prepare, u32s

#: The statuses a call that lost a race with close (then destroy) may raise:
#: the context is closed (INVALID_STATE), a close is busy with it (BUSY), or
#: it is gone (INVALID_HANDLE).
RACE_STATUSES = (kctx.InvalidState, kctx.Busy, kctx.InvalidHandle)

#: A bound on waits for another thread's progress: generous, so that only a
#: hang (a broken behaviour) reaches it, never a slow, loaded machine.
WAIT_S = 60.0

#: The most calls a racing thread makes in one round (it stops earlier once
#: it has called after the close).
HAMMER_CALLS = 1000


class Outcome:
    """What one thread's call gave: its value or the exception, with the time it took."""

    def __init__(self) -> None:
        self.value: object = None
        self.error: Optional[BaseException] = None
        self.seconds = 0.0


def _in_thread(fn: Callable[[], object]) -> Tuple[threading.Thread, Outcome]:
    out = Outcome()

    def run() -> None:
        t0 = time.monotonic()
        try:
            out.value = fn()
        except BaseException as e:  # everything, so that a KeyError is seen, not printed
            out.error = e
        out.seconds = time.monotonic() - t0

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def _close_until_done(ctx: kctx.Context) -> None:
    """close (Busy while a racing call still runs: retried), then destroy."""
    deadline = time.monotonic() + 10
    while True:
        try:
            ctx.close()
            break
        except kctx.Busy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)
    ctx.destroy()


# ---------------------------------------------------------------------------
# K25: close during another thread's prepare is BUSY at once
# ---------------------------------------------------------------------------
def test_k25_close_during_another_threads_prepare_is_busy_without_waiting(kernel_bytes):
    """A prepare held inside its upload (a sim hold on the copy of its
    callable table) on thread A; close on thread B raises Busy at once — the
    Python lock does not span the prepare — and changes nothing: the context
    stays READY, the prepare completes once released and its callable
    launches correctly; then close succeeds."""
    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx = kctx.Context.kernel(prepare_timeout_ms=int(WAIT_S * 2000))
        hold = sim.arm_hold(sim.ExecKind.COPY, device=0)  # the prepare's upload of its table
        try:
            prep, prep_out = _in_thread(lambda: ctx.prepare(add_image(kernel_bytes, 5)))
            hold.wait_reached(int(WAIT_S * 1000))  # thread A is inside kctx_prepare, waiting for its upload
            closer, close_out = _in_thread(ctx.close)
            # The hold keeps A's prepare inside its upload until the finally
            # below (its wait is bounded by prepare_timeout_ms, longer than
            # this join): a close that waited for it cannot have returned.
            # Its time is only reported, never asserted.
            closer.join(WAIT_S / 2)
            assert not closer.is_alive(), "close waited for the other thread's prepare (K25: BUSY without waiting)"
            assert isinstance(close_out.error, kctx.Busy), (close_out.error, close_out.seconds)
            assert "prepare" in str(close_out.error), close_out.error  # the reason
            assert ctx.phase == kctx.Phase.READY and prep.is_alive()
        finally:
            hold.release()
        prep.join(WAIT_S)
        assert prep_out.error is None, prep_out.error
        exe = prep_out.value
        assert isinstance(exe, kctx.Executable) and exe.id in ctx.prepared
        s.memset_async(out, 0)
        exe(out, stream=s)  # the context stayed usable
        s.synchronize()
        assert set(u32s(out)) == {5}
        ctx.check()
        ctx.close()
        assert ctx.prepared == {}
        ctx.destroy()


def test_k33_a_prepare_that_a_close_follows_records_nothing_after_the_close(kernel_bytes):
    """The registry stays true when close wins right after a prepare's C call
    returned: a prepare whose result arrives after a successful close does
    not put its id back into the closed context's registry (K26: only what
    the context holds is listed)."""
    ctx = kctx.Context.kernel()
    with close_right_after_prepare(ctx):
        exe = ctx.prepare(add_image(kernel_bytes, 1))
    assert exe.id not in ctx.prepared and ctx.prepared == {}
    assert ctx.phase == kctx.Phase.CLOSED
    ctx.destroy()


# ---------------------------------------------------------------------------
# K33: every method raced by close (then destroy) on another thread
# ---------------------------------------------------------------------------
def _methods(s: sim.Stream, out: sim.DeviceBuffer, image: bytes) -> Dict[str, Callable[[kctx.Context, kctx.Executable], object]]:
    ids = itertools.count(100)
    return {
        "prepare(id, image)": lambda c, e: c.prepare(next(ids), image),
        "prepare(image)": lambda c, e: c.prepare(image),
        "launch": lambda c, e: c.launch(e.id, [out], s),
        "Executable.launch": lambda c, e: e.launch(out, stream=s),
        "Executable.__call__": lambda c, e: e(out, stream=s),
        "check": lambda c, e: c.check(),
        "close": lambda c, e: c.close(),
        "destroy": lambda c, e: c.destroy(),
        "kernel_init": lambda c, e: c.kernel_init(),
        "prepared": lambda c, e: c.prepared,
        "phase": lambda c, e: c.phase,
        "mode": lambda c, e: c.mode,
        "device": lambda c, e: c.device,
        "platform": lambda c, e: c.platform,
        "runtime_error": lambda c, e: c.runtime_error,
        "teardown_error": lambda c, e: c.teardown_error,
        "last_error": lambda c, e: c.last_error,
        "resources": lambda c, e: c.resources,
        "platform_calls": lambda c, e: c.platform_calls,
        "handle": lambda c, e: c.handle,
        "repr": lambda c, e: repr(c),
    }


METHODS = list(_methods(None, None, b"").keys())  # type: ignore[arg-type]


@pytest.mark.parametrize("method", METHODS)
def test_k33_every_context_method_raced_by_close_gives_a_kctx_status(kernel_bytes, method):
    """Thread A calls `method` in a loop while thread B closes the context.
    Each of A's calls either succeeds or raises the kctx status the C API
    gives a call that lost the race (InvalidState, Busy, InvalidHandle) —
    never KeyError, AttributeError or any other exception; B's close
    succeeds or is Busy (work of A's still in flight). Then the context
    closes and is destroyed, and the registry lists nothing (K26)."""
    image = add_image(kernel_bytes, 1)
    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        call = _methods(s, out, image)[method]
        for _ in range(4):
            ctx = kctx.Context.kernel()
            exe = ctx.prepare(1, image)
            go = threading.Barrier(2)
            stop, called, closed, called_after_close = (threading.Event() for _ in range(4))
            errors: List[BaseException] = []

            def hammer() -> None:
                go.wait()
                try:
                    # Bounded: every launch queues work on `s` that s.synchronize()
                    # below drains; unbounded, a starved main thread let A queue
                    # thousands of launches (tens of seconds on a loaded machine).
                    for _ in range(HAMMER_CALLS):
                        if stop.is_set():
                            return
                        try:
                            call(ctx, exe)
                        except RACE_STATUSES:
                            pass
                        except BaseException as e:
                            errors.append(e)
                            return
                        called.set()
                        if closed.is_set():
                            return  # a call against the closed context made: done
                finally:  # A is done: nothing more to wait for
                    called.set()
                    called_after_close.set()

            t = threading.Thread(target=hammer, daemon=True)
            t.start()
            go.wait()
            # No fixed sleeps: wait for A's progress itself (bounds only catch a hang).
            called.wait(WAIT_S)
            try:
                ctx.close()  # the racing close
            except (kctx.Busy, kctx.InvalidHandle):  # A's launch in flight; A's destroy won
                pass
            closed.set()
            called_after_close.wait(WAIT_S)  # A goes on against the closed context (unless its calls ran out)
            stop.set()
            t.join(WAIT_S)
            assert not t.is_alive()
            assert not errors, f"{method} raced by close raised {errors[0]!r}"
            s.synchronize()
            if ctx.handle is not None:
                _close_until_done(ctx)
            assert ctx.prepared == {}  # K26: a closed context lists nothing


def test_k33_sim_objects_raced_by_their_release_give_sim_errors(kernel_bytes):
    """The framework side's objects (kctx.sim) released on one thread while
    another uses them: each use succeeds or raises a SimError (a stale handle,
    a freed address), never another exception, never a crash."""
    def race(use: Callable[[], object], release: Callable[[], None]) -> None:
        go = threading.Barrier(2)
        errors: List[BaseException] = []

        def user() -> None:
            go.wait()
            for _ in range(200):
                try:
                    use()
                except (sim.SimError, kctx.InvalidArgument):
                    return  # released: the status says so
                except BaseException as e:
                    errors.append(e)
                    return

        t = threading.Thread(target=user, daemon=True)
        t.start()
        go.wait()
        release()
        t.join(10)
        assert not errors, f"{use} raced by its release raised {errors[0]!r}"

    for _ in range(4):
        s = sim.Stream()
        race(lambda: (s.query(), s.capture_info(), s.device), s.destroy)
        ev, s2 = sim.Event(), sim.Stream()
        race(lambda: (ev.record(s2), ev.query()), ev.destroy)
        s2.synchronize()
        s2.destroy()
        buf = sim.DeviceBuffer(4096)
        race(lambda: buf.copy_to_host(nbytes=64), buf.free)
        mod = sim.Module(kernel_bytes)
        race(lambda: mod.function("k_noop"), mod.unload)


PREPARE_OPS = [sim.Op.MODULE_LOAD, sim.Op.MODULE_GET_FUNCTION, sim.Op.FUNCTION_ADDRESS, sim.Op.MALLOC,
               sim.Op.MEMCPY_ASYNC, sim.Op.STREAM_SYNCHRONIZE]


@pytest.mark.parametrize("op", PREPARE_OPS, ids=[op.name for op in PREPARE_OPS])
def test_k33_prepare_raced_by_close_under_fault_injection(kernel_bytes, op):
    """Each platform call of a prepare failed in turn (on the preparing
    thread only) while another thread closes: the prepare raises the
    library's mapped status (or InvalidState when the close won first),
    never KeyError; the close succeeds or is Busy; the failed id is never
    listed; close then succeeds and every sim object and allocation is back
    to its baseline (the clean-teardown fixture)."""
    image = add_image(kernel_bytes, 3)
    hits = 0
    # Three free races, then one where the close starts only once the
    # prepare returned: the races may all be won by the close (it then
    # finds no prepare and closes), the last round always reaches the
    # failing call, so the sweep cannot pass without injecting its fault.
    for attempt in range(4):
        ctx = kctx.Context.kernel()
        go = threading.Barrier(2)
        faults: List[sim.Fault] = []

        def prepare() -> kctx.Executable:
            faults.append(sim.arm_fault(op, nth=1, this_thread_only=True))
            go.wait()
            return ctx.prepare(image)

        prep, prep_out = _in_thread(prepare)
        go.wait()
        if attempt == 3:
            prep.join(30)
        closer, close_out = _in_thread(ctx.close)
        prep.join(30)
        closer.join(30)
        assert prep_out.error is None or isinstance(prep_out.error, kctx.KctxError), repr(prep_out.error)
        assert close_out.error is None or isinstance(close_out.error, kctx.Busy), repr(close_out.error)
        if prep_out.error is not None:
            assert ctx.prepared == {}  # the failed id is not listed
        hits += faults[0].hits
        sim.clear_faults()
        _close_until_done(ctx)
        assert ctx.prepared == {}
    assert hits > 0, f"no prepare reached its {op.name} call: the close always won"
