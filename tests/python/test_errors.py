"""Issue 18 item 3: one exception root. Every error the package raises is a
kctx.KctxError and the matching standard exception; str() does not repeat
the status name; every exception pickles (multiprocessing)."""
from __future__ import annotations

import pickle

import pytest

import kctx
from kctx import image, sim
from kctx._lib import LibraryNotFound


STANDARD = {
    "InvalidArgument": ValueError, "InvalidImage": ValueError, "IncompatibleImage": ValueError,
    "OutOfMemory": MemoryError, "Timeout": TimeoutError, "Unsupported": NotImplementedError,
    "NotFound": LookupError,
}


def test_status_exceptions_have_the_root_and_their_standard_base():
    for name in kctx.EXCEPTION_NAMES:
        cls = getattr(kctx, name)
        assert issubclass(cls, kctx.KctxError)
        if name in STANDARD:
            assert issubclass(cls, STANDARD[name]), name
    assert issubclass(LibraryNotFound, kctx.KctxError) and issubclass(LibraryNotFound, OSError)
    assert issubclass(kctx.KctxTypeError, TypeError) and issubclass(kctx.KctxValueError, ValueError)
    assert issubclass(sim.SimError, kctx.KctxError) and issubclass(image.BuildError, kctx.KctxError)
    assert issubclass(sim.SimOutOfMemory, MemoryError) and issubclass(sim.SimInvalidValue, ValueError)


def test_binding_side_errors_are_kctx_errors():
    with pytest.raises(kctx.KctxTypeError):
        kctx.Context(platform=3)  # type: ignore[arg-type]
    with pytest.raises(kctx.KctxValueError):
        sim.device_epoch(-5)
    with pytest.raises(kctx.KctxTypeError):
        sim.Module.from_handle("x")  # type: ignore[arg-type]


def test_messages_do_not_repeat_the_status_name():
    with pytest.raises(kctx.NotFound) as info:
        kctx.Context("no-such-platform")
    e = info.value
    assert e.name == "KCTX_NOT_FOUND" and "KCTX_NOT_FOUND" not in str(e) and "no-such-platform" in str(e)
    assert str(kctx.Busy()) == kctx.status_string(kctx.Status.BUSY)
    with sim.Stream() as s:
        pass
    with pytest.raises(sim.SimError) as sinfo:
        s.synchronize()
    assert sinfo.value.name == "SIM_INVALID_HANDLE"
    assert str(sinfo.value).count("SIM_INVALID_HANDLE") <= 1


def test_sim_errors_raise_the_standard_subclass():
    with pytest.raises(MemoryError) as info:
        sim.DeviceBuffer(1 << 62)
    assert isinstance(info.value, sim.SimError) and info.value.status == sim.SimStatus.OUT_OF_MEMORY


def test_every_exception_pickles():
    with pytest.raises(kctx.NotFound) as info:
        kctx.Context("no-such-platform")
    with sim.Stream() as s:
        pass
    with pytest.raises(sim.SimError) as sinfo:
        s.synchronize()
    busy = kctx.Busy("held")
    busy.report = kctx.CheckReport(kctx.Status.OK, 0, 0, 0)  # type: ignore[attr-defined]
    unknown = kctx.errors.error(777, "")
    for e in (info.value, sinfo.value, busy, unknown, kctx.OutOfMemory("m"), LibraryNotFound("gone"),
              kctx.KctxTypeError("t"), image.BuildError(2, "bad"), sim.sim_error(3, "oom", "sim_malloc")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.status == e.status, e
        assert back.name == e.name
    assert pickle.loads(pickle.dumps(busy)).report == busy.report
    assert unknown.status == 777 and unknown.name == "KCTX_UNKNOWN"


def test_bad_python_input_raises_kctx_errors_everywhere(kernel_bytes):
    from support import add_image, kernel_context

    with kernel_context() as ctx, sim.Stream() as s, sim.DeviceBuffer(64) as out:
        exe = ctx.prepare(add_image(kernel_bytes, 1))
        cases = [
            lambda: ctx.prepare("1", b"x"), lambda: ctx.prepare(2, "text"), lambda: exe.launch(None, stream=s),
            lambda: exe.launch(out, stream="s"), lambda: exe.launch(out, stream=1 << 64),
            lambda: exe.launch(True, stream=s), lambda: ctx.kernel_init(args_capacity="4096"),
            lambda: out.copy_to_host(b"read-only"), lambda: out.copy_from_host(b"x" * 65),
            lambda: sim.set_device(-1), lambda: image.validate("text"), lambda: image.Builder(3),
        ]
        for i, case in enumerate(cases):
            with pytest.raises(kctx.KctxError) as info:
                case()
            assert isinstance(info.value, (TypeError, ValueError)), (i, info.value)
