"""Tracing from Python (K32): the config's trace_path enables it; close
writes Chrome trace JSON with every launch, replays included."""
from __future__ import annotations

import json

import kctx
from kctx import sim
from support import N, add_image, u32s


def test_trace_path_enables_tracing_and_close_writes_every_launch(kernel_bytes, tmp_path):
    path = tmp_path / "trace.json"
    ctx = kctx.Context()
    ctx.kernel_init(trace_path=str(path), trace_device_records=4096)
    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        out.copy_from_host(bytes(4 * N))
        ctx.prepare(1, add_image(kernel_bytes, 1))
        with s.capture() as cap:
            ctx.launch(1, [out], s)
        graph = cap.graph
        x = graph.instantiate()
        for _ in range(3):
            x.launch(s)
        ctx.launch(1, [out], s)
        s.synchronize()
        assert u32s(out) == [4] * N
        x.destroy()
        graph.destroy()
        ctx.close()
        ctx.destroy()
    doc = json.loads(path.read_text())
    names = [e.get("name") for e in doc["traceEvents"]]
    assert names.count("scheduler") == 4  # 3 replays + 1 eager launch ran on the device
    assert names.count("launch") == 2  # 2 host enqueues (one captured)
    assert doc["otherData"]["dev_dropped"] == 0


def test_trace_settings_are_checked(kernel_bytes):
    ctx = kctx.Context()
    try:
        try:
            ctx.kernel_init(trace_path="x.json", trace_device_records=0)
        except kctx.InvalidArgument:
            pass
        else:
            raise AssertionError("a zero-record ring was accepted")
        assert ctx.mode == kctx.Mode.NONE  # refused before the latch (K2)
    finally:
        ctx.close()
        ctx.destroy()


# ---------------------------------------------------------------------------
# Issue 27: Context.flush_trace (kctx_trace_flush) while the context lives
# ---------------------------------------------------------------------------
import threading  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402


def _schedulers(path) -> int:
    return [e.get("name") for e in json.loads(path.read_text())["traceEvents"]].count("scheduler")


def test_flush_trace_writes_what_was_collected_while_the_context_lives(kernel_bytes, tmp_path):
    """Each flush rewrites trace_path with everything since init (K32): after
    one launch one scheduler span, after two more three; close writes the
    final trace. In a capture: CaptureActive; after close: InvalidState."""
    path = tmp_path / "live.json"
    ctx = kctx.Context.kernel(trace_path=path, trace_device_records=4096)
    try:
        with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
            out.copy_from_host(bytes(4 * N))
            add = ctx.prepare(add_image(kernel_bytes, 1))
            add(out, stream=s)
            s.synchronize()
            assert not path.exists()
            ctx.flush_trace()
            assert _schedulers(path) == 1
            add(out, stream=s)
            add(out, stream=s)
            s.synchronize()
            ctx.flush_trace()
            assert _schedulers(path) == 3
            with s.capture() as cap:
                add(out, stream=s)
                with pytest.raises(kctx.CaptureActive):
                    ctx.flush_trace()
            assert cap.graph is not None
            cap.graph.destroy()
            assert u32s(out) == [3] * N
        ctx.close()
        assert _schedulers(path) == 3  # close wrote the final trace
        # a traced context, closed: a phase error (kctx.h's order), not "tracing off"
        with pytest.raises(kctx.InvalidState):
            ctx.flush_trace()
    finally:
        ctx.close()
        ctx.destroy()
    with pytest.raises(kctx.InvalidHandle):
        ctx.flush_trace()


def test_flush_trace_without_tracing_is_unsupported_in_any_phase(tmp_path):
    ctx = kctx.Context()
    with pytest.raises(kctx.Unsupported):  # NEW: no config, no tracing
        ctx.flush_trace()
    ctx.kernel_init()
    with pytest.raises(kctx.Unsupported, match="trac"):
        ctx.flush_trace()
    ctx.close()
    with pytest.raises(kctx.Unsupported):
        ctx.flush_trace()
    ctx.destroy()


def test_flush_trace_to_an_unwritable_path_is_a_platform_error(tmp_path):
    ctx = kctx.Context.kernel(trace_path=tmp_path / "no-such-dir" / "t.json")
    with pytest.raises(kctx.PlatformError):
        ctx.flush_trace()
    assert ctx.phase == kctx.Phase.READY
    ctx.close()  # the failed write goes to the teardown slot; close still succeeds
    ctx.destroy()


def test_k33_flush_trace_raced_by_close_and_destroy(kernel_bytes, tmp_path):
    """flush_trace in a loop on one thread while another closes, then
    destroys, the context: each flush succeeds or raises InvalidState
    (closed), Busy (a close is busy with it) or InvalidHandle (destroyed),
    never anything else (Unsupported neither: tracing was on)."""
    image = add_image(kernel_bytes, 1)
    for i in range(4):
        ctx = kctx.Context.kernel(trace_path=tmp_path / f"race{i}.json")
        ctx.prepare(image)
        stop = threading.Event()
        seen = []

        def hammer() -> None:
            while not stop.is_set():
                try:
                    ctx.flush_trace()
                    seen.append("ok")
                except (kctx.InvalidState, kctx.Busy, kctx.InvalidHandle) as e:
                    seen.append(type(e).__name__)
                except BaseException as e:
                    seen.append(e)
                    return

        t = threading.Thread(target=hammer, daemon=True)
        t.start()
        time.sleep(0.005)
        while True:
            try:
                ctx.close()
                break
            except kctx.Busy:  # a flush is copying back: close again
                time.sleep(0.001)
        time.sleep(0.002)
        ctx.destroy()
        time.sleep(0.002)
        stop.set()
        t.join(10)
        assert seen and set(seen) <= {"ok", "InvalidState", "Unsupported", "Busy", "InvalidHandle"}, \
            set(map(repr, seen))
        assert "ok" in seen and (tmp_path / f"race{i}.json").exists()


def test_flush_trace_is_accepted_on_a_poisoned_context(kernel_bytes, tmp_path):
    """kctx.h: flush is accepted in READY and POISONED. A launch whose first
    kernel enqueue fails (kctx.arm_fault: after enqueueing started) poisons
    the context; its trace can still be flushed."""
    path = tmp_path / "poisoned.json"
    with kctx.Context.kernel(trace_path=path) as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        add = ctx.prepare(add_image(kernel_bytes, 1))
        with kctx.arm_fault(kctx.PlatformOp.LAUNCH) as fault:
            with pytest.raises(kctx.PlatformError, match="injected fault"):
                add(out, stream=s)
        assert fault.hits == 1 and ctx.phase == kctx.Phase.POISONED
        s.synchronize()
        ctx.flush_trace()
        assert "launch" in [e.get("name") for e in json.loads(path.read_text())["traceEvents"]]
