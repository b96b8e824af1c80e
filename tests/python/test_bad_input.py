"""Bad input from Python gives the right exception, never a crash: wrong
types, values out of range for their C types, closed and destroyed
contexts, unknown ids, bad images, bad streams."""
from __future__ import annotations

import pytest

import kctx
from kctx import _lib, sim
from support import N, add_image, kernel_context


@pytest.fixture
def ready(kernel_bytes):
    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(1, add_image(kernel_bytes, 1))
        yield ctx, s, out
        s.synchronize()


def test_wrong_python_types_raise_type_error(ready, kernel_bytes):
    ctx, s, out = ready
    image = add_image(kernel_bytes, 2)
    for bad_id in ("1", 1.0, None, True):
        with pytest.raises(TypeError):
            ctx.prepare(bad_id, image)
    for bad_image in ("text", 42, None, [1, 2]):
        with pytest.raises(TypeError):
            ctx.prepare(2, bad_image)
    for bad_args in (out, "abc", b"abc", 5, {0: out}):
        with pytest.raises(TypeError):
            ctx.launch(1, bad_args, s)
    # (a float is a scalar since issue 18: its binary64 bits; test_interop covers it)
    for bad_arg in ("x", None, object(), True, 1j, [out]):
        with pytest.raises(TypeError):
            ctx.launch(1, [bad_arg], s)
    for bad_stream in (None, "s", 1.0, [s]):
        with pytest.raises(TypeError):
            ctx.launch(1, [out], bad_stream)
    with pytest.raises(TypeError):
        ctx.kernel_init(args_capacity="4096")
    with pytest.raises(TypeError):
        kctx.Context(platform=3)
    assert ctx.phase == kctx.Phase.READY and set(ctx.prepared) == {1}


def test_values_out_of_range_for_c_are_refused_not_truncated(ready, kernel_bytes):
    ctx, s, out = ready
    image = add_image(kernel_bytes, 2)
    for bad_id in (-1, 1 << 64):
        with pytest.raises(kctx.InvalidArgument):
            ctx.prepare(bad_id, image)
    with pytest.raises(kctx.InvalidArgument):
        ctx.launch(1, [kctx.Tensor(-8, 16)], s)
    with pytest.raises(kctx.InvalidArgument):
        ctx.launch(1, [kctx.Tensor(out.ptr, 1 << 64)], s)
    with pytest.raises(kctx.InvalidArgument):
        ctx.launch(1, [out], 1 << 64)
    c = kctx.Context()
    try:
        with pytest.raises(kctx.InvalidArgument):
            c.kernel_init(args_capacity=1 << 32)  # would truncate to 0 in C
        assert isinstance(kctx.InvalidArgument("x"), ValueError)
    finally:
        c.destroy()


def test_the_library_refuses_bad_arguments(ready):
    ctx, s, out = ready
    with pytest.raises(kctx.InvalidArgument, match="2 given"):
        ctx.launch(1, [out, out], s)
    with pytest.raises(kctx.InvalidArgument):
        ctx.launch(1, [], s)
    # a zero-length tensor: the binding refuses it first (test_interop.py), so
    # the library's own refusal is reached through the C entry directly
    zero = (_lib.Arg * 1)()
    zero[0].value, zero[0].size = out.ptr, 0
    assert _lib.kctx().kctx_launch(ctx.handle, 1, zero, 1, s.handle) == kctx.Status.INVALID_ARGUMENT
    assert "size must be > 0" in kctx.thread_last_error()
    with pytest.raises(kctx.InvalidArgument, match="live allocation"):
        ctx.launch(1, [kctx.Tensor(out.ptr, out.size + 1)], s)
    with pytest.raises(kctx.InvalidArgument, match="is a tensor"):
        ctx.launch(1, [7], s)  # a scalar where the callable takes a tensor
    with pytest.raises(kctx.InvalidArgument, match="NULL stream"):
        ctx.launch(1, [out], 0)
    with pytest.raises(kctx.InvalidArgument, match="caller stream"):
        ctx.launch(1, [out], 0x1234)
    with pytest.raises(kctx.InvalidArgument, match="own streams"):
        ctx.launch(1, [out], ctx.resources.aicpu_stream)
    for config in ({"args_capacity": 1}, {"token_capacity": 0}, {"prepare_timeout_ms": 0}):
        c = kctx.Context()
        try:
            with pytest.raises(kctx.InvalidArgument):
                c.kernel_init(**config)
            assert c.mode == kctx.Mode.NONE  # refused before the latch (K2)
        finally:
            c.destroy()
    assert ctx.phase == kctx.Phase.READY


def test_stream_of_another_device_is_refused(ready):
    if sim.device_count() < 2:
        pytest.skip("needs two sim devices (KCTX_SIM_DEVICES)")
    ctx, s, out = ready
    sim.set_device(1)
    try:
        with sim.Stream() as s1:
            sim.set_device(0)
            with pytest.raises(kctx.InvalidArgument, match="device 1"):
                ctx.launch(1, [out], s1)
            sim.set_device(1)
    finally:
        sim.set_device(0)
    sim.set_device(1)
    try:  # K5: the thread's current device must still be the borrowed one
        with pytest.raises(kctx.InvalidState, match="current device"):
            ctx.launch(1, [out], s)
    finally:
        sim.set_device(0)


def test_unknown_and_duplicate_ids(ready, kernel_bytes):
    ctx, s, out = ready
    with pytest.raises(kctx.UnknownId) as info:
        ctx.launch(99, [out], s)
    assert info.value.status == kctx.Status.UNKNOWN_ID and "99" in info.value.message
    first = ctx.prepared[1]
    with pytest.raises(kctx.DuplicateId):
        ctx.prepare(1, add_image(kernel_bytes, 5))
    assert ctx.prepared[1] == first  # the first registration is undisturbed (K14)


def test_bad_images(ready, kernel_bytes):
    ctx, s, out = ready
    with pytest.raises(kctx.InvalidArgument, match="size is 0"):
        ctx.prepare(2, b"")  # arguments are checked before the image
    with pytest.raises(kctx.InvalidImage, match="TOO_SMALL.*smaller than the 144-byte header"):
        ctx.prepare(2, b"\0" * 16)
    with pytest.raises(kctx.InvalidImage, match="magic"):
        ctx.prepare(2, b"\0" * 256)
    image = bytearray(add_image(kernel_bytes, 3))
    image[-1] ^= 0xFF
    with pytest.raises(kctx.InvalidImage, match="checksum"):
        ctx.prepare(2, image)
    assert 2 not in ctx.prepared and ctx.resources.callables == 1


def test_closed_and_destroyed_contexts(kernel_bytes):
    image = add_image(kernel_bytes, 1)
    ctx = kctx.Context()
    ctx.kernel_init()
    ctx.close()
    with sim.Stream() as s, sim.DeviceBuffer(64) as buf:
        with pytest.raises(kctx.InvalidState):
            ctx.prepare(1, image)
        with pytest.raises(kctx.InvalidState):
            ctx.launch(1, [buf], s)
        with pytest.raises(kctx.InvalidState):
            ctx.check()
        with pytest.raises(kctx.InvalidState):
            ctx.kernel_init()
        ctx.destroy()
        for call in (lambda: ctx.prepare(1, image), lambda: ctx.launch(1, [buf], s), ctx.check, ctx.close,
                     ctx.destroy, ctx.kernel_init, lambda: ctx.phase, lambda: ctx.resources,
                     lambda: ctx.platform, lambda: ctx.teardown_error):
            with pytest.raises(kctx.InvalidHandle):
                call()


def test_unknown_platform_and_mode_mismatches():
    with pytest.raises(kctx.NotFound, match="no-such-platform"):
        kctx.Context("no-such-platform")
    with kernel_context() as ctx:
        with pytest.raises(kctx.InvalidState):
            ctx.program_init(device=0)  # K1
        with pytest.raises(kctx.InvalidState):
            ctx.run(1, [])  # K3


def test_sim_errors_name_the_status():
    s = sim.Stream()
    s.destroy()
    with pytest.raises(sim.SimError) as info:
        s.synchronize()
    assert info.value.status == sim.SimStatus.INVALID_HANDLE and info.value.name == "SIM_INVALID_HANDLE"
    assert info.value.message and info.value.call == "sim_stream_synchronize"
    with pytest.raises(sim.SimError) as info:
        s.destroy()
    b = sim.DeviceBuffer(64)
    b.free()
    with pytest.raises(sim.SimError) as info:
        b.free()
    assert info.value.status == sim.SimStatus.DOUBLE_FREE
    with pytest.raises(ValueError):
        b.copy_from_host(bytes(65))
    with pytest.raises(TypeError):
        sim.set_device("0")
    with pytest.raises(sim.SimError) as info:
        sim.set_device(1000)
    assert info.value.status == sim.SimStatus.INVALID_VALUE
    with sim.Stream() as s2:
        with pytest.raises(TypeError):
            s2.wait_event("event")
        with pytest.raises(TypeError):
            s2.launch_kernel("k_noop")


def test_check_reports_and_raises_with_the_report(kernel_bytes):
    """A device-side failure poisons at check and raises with the report."""
    from kctx.image import Builder, ParamKind, VariantKind

    b = Builder("fail")
    b.param("out", ParamKind.TENSOR_OUT)
    f = b.child("err", "t_report_error")
    b.child_param("code_pad", ParamKind.SCALAR)
    b.child_param("detail", ParamKind.SCALAR)
    b.variant(VariantKind.SIM_ELF, kernel_bytes)
    b.task(f, 1)
    b.bind_immediate(77)
    b.bind_immediate(5)
    image = b.finish()
    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(64) as out:
        ctx.prepare(1, image)
        ctx.launch(1, [out], s)
        with pytest.raises(sim.SimError) as info:
            s.synchronize()
        assert info.value.status == sim.SimStatus.KERNEL_ERROR
        with pytest.raises(kctx.DeviceError) as info:
            ctx.check()
        assert info.value.report.device_status == kctx.Status.DEVICE_ERROR
        assert ctx.phase == kctx.Phase.POISONED
        assert ctx.runtime_error.status == kctx.Status.DEVICE_ERROR
        with pytest.raises(kctx.Poisoned):
            ctx.launch(1, [out], s)
        with pytest.raises(kctx.DeviceError) as info:  # the device error word stays set
            ctx.check()
        assert info.value.report.device_status == kctx.Status.DEVICE_ERROR
        assert info.value.report.error_detail == 0  # the failed task's index
