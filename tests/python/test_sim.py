"""kctx.sim: the framework side of the simulated device from Python."""
from __future__ import annotations

import struct
import threading

import pytest

from kctx import sim

try:
    import numpy as np
except ImportError:
    np = None


def test_devices_and_props():
    n = sim.device_count()
    assert n >= 1 and sim.get_device() == 0
    p = sim.device_props(0)
    assert p.name.startswith("sim") and p.aicore_count >= 1 and p.aicpu_count == 1
    assert p.alloc_alignment == 256 and p.device_word_size == 4


def test_copies_with_python_buffers():
    with sim.DeviceBuffer(64) as buf:
        assert buf.ptr % 256 == 0 and sim.mem_lookup(0, buf.ptr + 8, 8) == (buf.ptr, 64)
        buf.copy_from_host(bytes(range(64)))
        assert bytes(buf.copy_to_host()) == bytes(range(64))
        buf.copy_from_host(bytearray(b"\xff" * 8), offset=8)
        buf.copy_from_host(memoryview(b"0123456789")[2:6], offset=16)
        out = bytearray(32)
        buf.copy_to_host(out)
        assert out[8:16] == b"\xff" * 8 and out[16:20] == b"2345"
        view = memoryview(bytearray(4))
        buf.copy_to_host(view, offset=16)
        assert bytes(view) == b"2345"
        assert buf.read_u32(16) == struct.unpack("<I", b"2345")[0]
        buf.write_u32(0xDEADBEEF, offset=4)
        assert buf.read_u32(4) == 0xDEADBEEF
        with pytest.raises(TypeError):
            buf.copy_to_host(b"immutable")
        with pytest.raises(ValueError):
            buf.copy_to_host(bytearray(8), offset=60)


@pytest.mark.skipif(np is None, reason="numpy is not installed (optional)")
def test_copies_with_numpy_arrays():
    with sim.DeviceBuffer(4 * 16) as buf:
        a = np.arange(16, dtype=np.uint32)
        buf.copy_from_host(a)
        assert (buf.to_numpy(np.uint32) == a).all()
        b = np.zeros((4, 4), dtype=np.uint32)
        buf.copy_to_host(b)
        assert (b.ravel() == a).all()
        with pytest.raises(ValueError):
            buf.copy_from_host(a[::2])  # not contiguous


def test_kernel_launch_on_a_stream_and_events(kernel_bytes):
    with sim.Module(kernel_bytes) as mod, sim.Stream() as s, sim.DeviceBuffer(4 * 8) as buf, \
            sim.Event() as start, sim.Event() as end:
        add = mod.function("k_add_u32")
        assert add.address
        with pytest.raises(sim.SimError) as info:
            mod.function("no_such_kernel")
        assert info.value.status == sim.SimStatus.NOT_FOUND
        s.memset_async(buf, 0)
        start.record(s)
        s.launch_kernel(add, struct.pack("<QII", buf.ptr, 8, 5), target=sim.Target.AICORE, block_dim=2)
        end.record(s)
        s.synchronize()
        assert start.query() and end.query() and s.query()
        assert sim.elapsed_ms(start, end) >= 0.0
        assert struct.unpack("<8I", buf.copy_to_host()) == (5,) * 8


def test_hold_makes_work_provably_in_flight(kernel_bytes):
    with sim.Module(kernel_bytes) as mod, sim.Stream() as s:
        hold = sim.arm_hold(sim.ExecKind.KERNEL, device=0)
        s.launch_kernel(mod.function("k_noop"), target=sim.Target.AICPU)
        hold.wait_reached(10000)
        assert s.query() is False
        hold.release()
        s.synchronize()
        assert s.query() is True


def test_fault_injection_and_counters():
    sim.thread_calls_reset()
    f = sim.arm_fault(sim.Op.STREAM_CREATE, nth=2, this_thread_only=True)
    with sim.Stream():
        with pytest.raises(sim.SimError) as info:
            sim.Stream()
        assert info.value.status == sim.SimStatus.INJECTED and f.hits == 1
        with sim.Stream():
            pass
    assert sim.thread_calls(sim.Op.STREAM_CREATE) == 3  # the failed call counts too
    assert sim.thread_calls(sim.Op.STREAM_DESTROY) == 2

    # Faults on another thread's calls only when not restricted to this one.
    sim.arm_fault(sim.Op.MALLOC, nth=1, this_thread_only=True)
    result = []
    t = threading.Thread(target=lambda: result.append(sim.DeviceBuffer(8)))
    t.start()
    t.join()
    result[0].free()
    sim.clear_faults()


def test_capture_mode_exchange():
    with sim.capture_mode(sim.CaptureMode.RELAXED):
        assert sim.exchange_capture_mode(sim.CaptureMode.RELAXED) == sim.CaptureMode.RELAXED
    assert sim.exchange_capture_mode(sim.CaptureMode.GLOBAL) == sim.CaptureMode.GLOBAL


def test_capture_restricts_unsafe_calls_and_graphs_replay():
    with sim.Stream() as s, sim.DeviceBuffer(16) as buf:
        s.begin_capture(sim.CaptureMode.GLOBAL)
        s.memset_async(buf, 7)
        info = s.capture_info()
        assert info.status == sim.CaptureStatus.ACTIVE and info.id and info.graph
        with pytest.raises(sim.SimError) as err:
            sim.DeviceBuffer(8)  # sim_malloc is refused during a global capture
        assert err.value.status == sim.SimStatus.CAPTURE_UNSUPPORTED
        with pytest.raises(sim.SimError) as err:
            s.end_capture()
        assert err.value.status == sim.SimStatus.CAPTURE_INVALIDATED

        with s.capture() as cap:
            s.memset_async(buf, 7)
        assert cap.graph.node_count == 1
        with cap.graph.instantiate() as x:
            x.launch(s)
            s.synchronize()
        cap.graph.destroy()
        assert bytes(buf.copy_to_host()) == b"\x07" * 16
