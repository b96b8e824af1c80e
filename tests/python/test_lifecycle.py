"""The kernel-context lifecycle from Python, and teardown errors that reach
the caller before anything is forgotten (issue 7). Rule numbers refer to
docs/kernel-mode.md."""
from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading

import pytest

import kctx
from kctx import Mode, Phase, sim
from support import N, add_image, kernel_context, u32s


def test_lifecycle_new_ready_closed_destroyed(kernel_bytes):
    ctx = kctx.Context()
    assert (ctx.phase, ctx.mode, ctx.device, ctx.platform) == (Phase.NEW, Mode.NONE, -1, "sim")
    ctx.kernel_init(args_capacity=1024, token_capacity=8, prepare_timeout_ms=5000)
    assert (ctx.phase, ctx.mode, ctx.device) == (Phase.READY, Mode.KERNEL, 0)
    res = ctx.resources
    assert res.aicpu_stream and res.aicore_stream and all(res.events)
    assert (res.args_block_bytes, res.token_capacity, res.callables) == (1024, 8, 0)

    image = add_image(kernel_bytes, 5)
    ctx.prepare(7, image)
    ctx.prepare(8, image)  # identical bytes share one upload (K14)
    assert set(ctx.prepared) == {7, 8}
    assert ctx.prepared[7].size == len(image)
    assert (ctx.resources.callables, ctx.resources.uploads) == (2, 1)

    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        s.memset_async(out, 0)
        ctx.launch(7, [out], s)
        ctx.launch(8, [out.tensor()], s)
        s.synchronize()
        assert u32s(out) == [10] * N
        report = ctx.check()
        assert report.device_status == kctx.Status.OK and report.refused_replays == 0

    assert ctx.runtime_error is None and ctx.teardown_error is None
    ctx.close()
    assert ctx.phase == Phase.CLOSED and ctx.prepared == {}
    ctx.close()  # close of a CLOSED context is OK (K8)
    ctx.destroy()
    assert ctx.handle is None
    with pytest.raises(kctx.InvalidHandle):
        ctx.phase


def test_close_succeeds_as_soon_as_the_caller_stream_is_synchronised(kernel_bytes):  # K25, K20
    """Once the caller has waited for a launch on its own stream, nothing of
    that launch is still running: close must not refuse with Busy. (The
    launch's last step on the context's streams is an event record the caller
    stream waits for; a stream whose last record has signalled is idle.)"""
    image = add_image(kernel_bytes, 1)
    with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        for _ in range(50):
            ctx = kctx.Context()
            ctx.kernel_init()
            ctx.prepare(1, image)
            ctx.launch(1, [out], s)
            s.synchronize()
            ctx.close()
            ctx.destroy()


def test_kernel_lifecycle_makes_no_lifecycle_calls(kernel_bytes):  # K4
    # Prove the counter counts before trusting a zero.
    sim.lifecycle_reset_counts()
    sim.set_device(0)
    assert sim.lifecycle_count(0, sim.LifecycleOp.SET_DEVICE) == 1
    sim.lifecycle_reset_counts()
    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        ctx.launch(1, [out], s)
        s.synchronize()
    for op in sim.LifecycleOp:
        assert sim.lifecycle_count(0, op) == 0, op


def test_close_failure_is_raised_and_the_registry_kept_until_a_retry_succeeds(kernel_bytes):  # K26, K27, K10
    base = sim.object_counts(0)
    ctx = kctx.Context()
    ctx.kernel_init()
    ctx.prepare(11, add_image(kernel_bytes, 1))
    ctx.prepare(12, add_image(kernel_bytes, 2))
    handle, registry = ctx.handle, ctx.prepared
    assert sim.object_counts(0).streams == base.streams + 3

    fault = sim.arm_fault(sim.Op.STREAM_DESTROY, nth=1, this_thread_only=True)
    with pytest.raises(kctx.PlatformError) as info:
        ctx.close()
    assert fault.hits == 1
    assert info.value.status == kctx.Status.PLATFORM_ERROR and info.value.name == "KCTX_PLATFORM_ERROR"
    assert "stream_destroy" in info.value.message and "SIM_INJECTED" in info.value.message
    # Nothing forgotten: the handle, the registry, the failed stream.
    assert ctx.handle == handle and ctx.prepared == registry
    assert ctx.phase == Phase.CLOSING
    assert sim.object_counts(0).streams == base.streams + 1
    slot = ctx.teardown_error
    assert slot is not None and slot.status == kctx.Status.PLATFORM_ERROR and "stream_destroy" in slot.message

    with pytest.raises(kctx.Busy):  # K27: destroy of an unclosed context is refused
        ctx.destroy()
    assert ctx.handle == handle and ctx.prepared == registry
    with pytest.raises(kctx.InvalidState):  # CLOSING accepts only close (K8)
        ctx.prepare(13, add_image(kernel_bytes, 3))

    ctx.close()  # the retry releases exactly the remainder
    assert ctx.phase == Phase.CLOSED and ctx.prepared == {}
    assert sim.object_counts(0) == base
    assert ctx.teardown_error.status == kctx.Status.PLATFORM_ERROR  # kept after the retry (K10)
    ctx.destroy()


def test_context_manager_close_failure_keeps_the_handle(kernel_bytes):
    with pytest.raises(kctx.PlatformError):
        with kctx.Context() as ctx:
            ctx.kernel_init()
            ctx.prepare(1, add_image(kernel_bytes, 1))
            sim.arm_fault(sim.Op.STREAM_DESTROY, nth=2, this_thread_only=True)
    assert ctx.handle is not None and ctx.phase == Phase.CLOSING and set(ctx.prepared) == {1}
    ctx.close()
    ctx.destroy()


def test_context_manager_closes_and_destroys():
    with kctx.Context() as ctx:
        ctx.kernel_init()
    assert ctx.handle is None


def test_destroy_of_an_unclosed_context_is_refused():  # K27
    ctx = kctx.Context()
    ctx.kernel_init()
    with pytest.raises(kctx.Busy) as info:
        ctx.destroy()
    assert "READY" in info.value.message
    assert ctx.phase == Phase.READY and ctx.handle is not None
    ctx.close()
    ctx.destroy()


def test_a_second_kernel_context_on_the_device_is_busy_and_stays_usable():  # K6, K2
    with kernel_context() as owner:
        other = kctx.Context()
        with pytest.raises(kctx.Busy):
            other.kernel_init()
        assert (other.phase, other.mode) == (Phase.NEW, Mode.NONE)
        owner.close()
        other.kernel_init()  # the claim was released by the successful close
        other.close()
        other.destroy()


def test_finaliser_of_an_unclosed_context_warns_and_frees_nothing(kernel_bytes):
    base = sim.object_counts(0), sim.mem_stats(0)
    ctx = kctx.Context()
    ctx.kernel_init()
    ctx.prepare(3, add_image(kernel_bytes, 1))
    handle = ctx.handle
    live = sim.object_counts(0), sim.mem_stats(0)
    with pytest.warns(ResourceWarning, match="READY"):
        del ctx
        gc.collect()
    # The native side still holds everything: the claim, streams, memory.
    assert (sim.object_counts(0), sim.mem_stats(0)) == live
    assert kctx.abandoned_contexts() == [handle]
    with pytest.raises(kctx.Busy):
        kctx.Context().kernel_init()  # (a NEW context: finalised quietly)
    [ctx] = kctx.reclaim_abandoned()
    assert ctx.handle == handle and set(ctx.prepared) == {3}
    ctx.close()
    ctx.destroy()
    assert (sim.object_counts(0), sim.mem_stats(0)) == base


def test_finaliser_of_a_closed_context_destroys_it_quietly(recwarn):
    ctx = kctx.Context()
    ctx.kernel_init()
    ctx.close()
    handle = ctx.handle
    del ctx
    gc.collect()
    assert not [w for w in recwarn if issubclass(w.category, ResourceWarning)]
    assert kctx.abandoned_contexts() == []
    probe = kctx.Context.__new__(kctx.Context)
    probe._init_fields()
    probe._handle = handle  # the stale handle is refused, never a crash
    with pytest.raises(kctx.InvalidHandle):
        probe.phase
    with pytest.raises(kctx.InvalidHandle):
        probe.destroy()


def test_unclosed_context_at_interpreter_exit_warns_and_exits_cleanly(libdir, kernels_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(kctx.__file__.rsplit('/kctx/', 1)[0])!r})
        import kctx
        from kctx import sim
        ctx = kctx.Context()
        ctx.kernel_init()
        s = sim.Stream()
        buf = sim.DeviceBuffer(256)
        print("ready", flush=True)
    """)
    env = {"KCTX_LIB_DIR": str(libdir), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", script], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ready" in r.stdout
    assert "ResourceWarning" in r.stderr and "left in place" in r.stderr


def test_program_mode_runs_synchronously(kernel_bytes):  # K3, K31
    with sim.DeviceBuffer(4 * N) as out0:
        ctx = kctx.Context()
        try:
            ctx.program_init(device=1)
            assert (ctx.mode, ctx.device) == (Mode.PROGRAM, 1)
            assert sim.get_device() == 1  # program mode owns and sets its device
            with sim.DeviceBuffer(4 * N) as out:
                with sim.Stream() as s:
                    s.memset_async(out, 0)
                    s.synchronize()
                ctx.prepare(1, add_image(kernel_bytes, 9))
                ctx.run(1, [out])
                assert u32s(out) == [9] * N
                with pytest.raises(kctx.InvalidState):  # K3
                    ctx.launch(1, [out], 1)
                with pytest.raises(kctx.InvalidState):  # K1: the latch is write-once
                    ctx.kernel_init()
            ctx.close()
            ctx.destroy()
        finally:
            sim.set_device(0)
        assert out0.device == 0


def test_a_fatal_device_error_quarantines_until_the_owner_resets(kernel_bytes):  # K29, K30, K36
    ctx = kctx.Context()
    ctx.kernel_init()
    ctx.prepare(1, add_image(kernel_bytes, 1))
    s = sim.Stream()
    out = sim.DeviceBuffer(4 * N)
    epoch = sim.device_epoch(0)
    sim.make_fatal(0)
    with pytest.raises(kctx.DeviceLost):
        ctx.launch(1, [out], s)
    assert ctx.phase == Phase.QUARANTINED and ctx.runtime_error.status == kctx.Status.DEVICE_LOST
    with pytest.raises(kctx.DeviceLost):
        ctx.prepare(2, add_image(kernel_bytes, 2))
    with pytest.raises(kctx.DeviceLost):  # K30: nothing released on a lost device
        ctx.close()
    with pytest.raises(kctx.Busy):
        ctx.destroy()
    assert set(ctx.prepared) == {1}
    # The framework owns the device: it resets it, which destroys every
    # object of the device (kctx's and its own).
    sim.device_reset()
    assert sim.device_epoch(0) == epoch + 1
    ctx.close()  # K36: every handle is abandoned without platform calls
    assert ctx.phase == Phase.CLOSED and ctx.prepared == {}
    ctx.destroy()
    with pytest.raises(sim.SimError) as info:
        s.synchronize()
    assert info.value.status == sim.SimStatus.INVALID_HANDLE  # stale after the reset


def test_launches_from_several_python_threads_are_serialised(kernel_bytes):  # K23, K33
    threads, launches = 4, 25
    with kernel_context() as ctx, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        with sim.Stream() as s:
            s.memset_async(out, 0)
            s.synchronize()
        errors = []

        def worker():
            try:
                with sim.Stream() as stream:  # each thread: its own caller stream
                    for _ in range(launches):
                        ctx.launch(1, [out], stream)
                    stream.synchronize()
            except Exception as e:  # reported below, on the test's thread
                errors.append(e)

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert errors == []
        assert u32s(out) == [threads * launches] * N
        assert ctx.check().concurrent_launches == 0
