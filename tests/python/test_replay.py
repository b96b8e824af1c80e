"""Captured launches from Python: the two-graph alternating replay and the
capture-isolation negative control (K12, K21, K22, K25)."""
from __future__ import annotations

import pytest

import kctx
from kctx import sim
from support import N, add_image, kernel_context, scalar_add_image, u32s

A_VALUE, B_VALUE = 0x0A0A, 0x0B0B


def _capture(ctx, stream, out, callable_id):
    """A graph that zeroes `out` and launches the callable into it."""
    with stream.capture(sim.CaptureMode.GLOBAL) as cap:
        stream.memset_async(out, 0)
        ctx.launch(callable_id, [out], stream)
    return cap.graph


def test_two_graphs_alternate_on_one_context_and_one_output(kernel_bytes):
    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, A_VALUE, name="A"))
        ctx.prepare(2, add_image(kernel_bytes, B_VALUE, name="B"))
        graphs = {"A": _capture(ctx, s, out, 1), "B": _capture(ctx, s, out, 2)}
        assert ctx.resources.tokens_in_use == 2  # one lifetime token per graph (K25)
        # K12: both graphs share the context's five events and streams.
        assert all(g.node_count > 1 for g in graphs.values())
        execs = {k: g.instantiate() for k, g in graphs.items()}
        expected = {"A": A_VALUE, "B": B_VALUE}
        for step, name in enumerate("ABABAAB"):
            execs[name].launch(s)
            s.synchronize()
            assert u32s(out) == [expected[name]] * N, f"replay {step} ({name})"
            assert ctx.check().device_status == kctx.Status.OK

        with pytest.raises(kctx.Busy, match="live captured graph"):  # K25
            ctx.close()
        for x in execs.values():
            x.destroy()
        for g in graphs.values():
            g.destroy()
        assert ctx.resources.tokens_in_use == 0


def test_a_captured_launch_replays_its_captured_args(kernel_bytes):  # K22
    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(5, scalar_add_image(kernel_bytes))
        with s.capture() as cap:
            s.memset_async(out, 0)
            ctx.launch(5, [out, N | (3 << 32)], s)
        x = cap.graph.instantiate()
        s.memset_async(out, 0)
        ctx.launch(5, [out, N | (100 << 32)], s)  # eager, other args: not in the graph
        s.synchronize()
        assert u32s(out) == [100] * N
        for _ in range(2):
            x.launch(s)
            s.synchronize()
            assert u32s(out) == [3] * N
        x.destroy()
        cap.graph.destroy()


def test_capture_isolation_negative_control(kernel_bytes):  # K21
    """Waiting inside a capture on an event recorded before it began is
    rejected and invalidates the capture, the way real runtimes do (CUDA 905):
    this is why kctx records and waits each event within one launch."""
    with kernel_context() as ctx, sim.Stream() as s, sim.Stream() as other, sim.Event(disable_timing=True) as ev, \
            sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        ev.record(other)  # recorded outside any capture
        s.begin_capture(sim.CaptureMode.GLOBAL)
        with pytest.raises(sim.SimError) as info:
            s.wait_event(ev)
        assert info.value.status == sim.SimStatus.CAPTURE_ISOLATION
        assert info.value.name == "SIM_CAPTURE_ISOLATION" and info.value.message
        assert s.capture_info().status == sim.CaptureStatus.INVALIDATED
        # A launch into the invalidated capture is refused before anything is
        # enqueued, and the context stays usable.
        with pytest.raises(kctx.CaptureBroken):
            ctx.launch(1, [out], s)
        assert ctx.phase == kctx.Phase.READY
        with pytest.raises(sim.SimError) as info:
            s.end_capture()
        assert info.value.status == sim.SimStatus.CAPTURE_INVALIDATED
        assert s.capture_info().status == sim.CaptureStatus.NONE

        # Control: the same wait is legal once the event is recorded inside.
        with s.capture() as cap:
            ev.record(s)
            s.wait_event(ev)
            ctx.launch(1, [out], s)
        cap.graph.destroy()


def test_context_streams_belong_to_one_capture_at_a_time(kernel_bytes):  # K34, K16, K25
    with kernel_context() as ctx, sim.Stream() as s, sim.Stream() as t, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        s.begin_capture(sim.CaptureMode.RELAXED)
        ctx.launch(1, [out], s)
        with pytest.raises(kctx.CaptureActive):
            ctx.launch(1, [out], t)  # eager launch from another stream during the capture
        ctx.prepare(2, add_image(kernel_bytes, 2))  # K16: prepare works inside the capture
        with pytest.raises(kctx.Busy):
            ctx.close()
        assert ctx.phase == kctx.Phase.READY
        g = s.end_capture()
        g.destroy()
