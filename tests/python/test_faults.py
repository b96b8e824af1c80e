"""Issue 27: kctx's own fault injection from Python (kctx.arm_fault over
kctx_fault_arm / kctx_fault_hits / kctx_fault_clear_all, and
kctx.thread_platform_calls), on the sim here; the sweep of a launch on the
opencl platform is in test_opencl.py."""
from __future__ import annotations

import re
import time

import pytest

import kctx
from kctx import PlatformOp, Status, sim
from conftest import REPO, header


def test_platform_op_enum_matches_the_header_and_the_library() -> None:
    text = (header("kctx.h")).read_text()
    body = text[text.index("#define KCTX_PLATFORM_OP_MAP"):text.index("// clang-format on")]
    pairs = re.findall(r"X\((\w+),\s*(\w+)\)", body)
    assert [op.name for op in PlatformOp if op != PlatformOp.ANY] == [n for n, _ in pairs]
    assert [op.value for op in PlatformOp] == list(range(-1, len(pairs)))
    for op, (_, member) in zip(list(PlatformOp)[1:], pairs):
        assert op.c_name == member
    assert PlatformOp.ANY.c_name == "any"


def test_an_armed_fault_fails_init_and_the_block_disarms_it() -> None:
    """Any platform (here the sim): the first stream_create of kernel_init
    fails with the injected status (the message says so), the init rolls
    back (NEW); once the with block is left the same init succeeds."""
    ctx = kctx.Context()
    try:
        before = kctx.thread_platform_calls(PlatformOp.STREAM_CREATE)
        with kctx.arm_fault(PlatformOp.STREAM_CREATE) as fault:
            assert fault.armed and fault.hits == 0
            with pytest.raises(kctx.PlatformError, match="injected fault"):
                ctx.kernel_init()
            assert fault.hits == 1
        assert not fault.armed and fault.hits == 1  # kept once disarmed
        assert kctx.thread_platform_calls(PlatformOp.STREAM_CREATE) > before  # the failed call counted
        assert ctx.phase == kctx.Phase.NEW
        ctx.kernel_init()
        assert ctx.phase == kctx.Phase.READY
    finally:
        ctx.close()
        ctx.destroy()


def test_the_block_disarms_when_it_raises() -> None:
    with pytest.raises(ZeroDivisionError):
        with kctx.arm_fault(PlatformOp.ANY, persistent=True, error=Status.OUT_OF_MEMORY) as fault:
            1 // 0
    assert not fault.armed
    with kctx.Context.kernel() as ctx:  # nothing fails: the persistent fault is gone
        assert ctx.phase == kctx.Phase.READY
    assert fault.hits == 0


def test_the_injected_status_class_is_the_faults() -> None:
    for status, cls in ((Status.OUT_OF_MEMORY, kctx.OutOfMemory), (Status.UNSUPPORTED, kctx.Unsupported),
                        (Status.TIMEOUT, kctx.Timeout)):
        with kctx.arm_fault(PlatformOp.EVENT_CREATE, nth=2, error=status) as fault:
            with pytest.raises(cls):
                kctx.Context.kernel()  # the factory destroys the rolled-back context
        assert fault.hits == 1, status


def test_other_threads_calls_do_not_match_a_this_thread_fault() -> None:
    import threading

    with kctx.arm_fault(PlatformOp.ANY, persistent=True) as fault:
        out = []

        def other() -> None:
            with kctx.Context.kernel() as ctx:
                out.append(ctx.phase)

        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert out == [kctx.Phase.READY] and fault.hits == 0


def test_bad_faults_are_refused_and_arm_nothing() -> None:
    for kwargs, cls in (({"nth": 0}, kctx.InvalidArgument), ({"nth": -1}, kctx.InvalidArgument),
                        ({"error": Status.INVALID_STATE}, kctx.InvalidArgument),
                        ({"error": 999}, kctx.InvalidArgument), ({"persistent": 1}, kctx.KctxTypeError),
                        ({"this_thread_only": None}, kctx.KctxTypeError)):
        with pytest.raises(cls):
            kctx.arm_fault(PlatformOp.ANY, **kwargs)  # type: ignore[arg-type]
    for op in (999, -2):
        with pytest.raises(kctx.InvalidArgument):
            kctx.arm_fault(op)
    with kctx.Context.kernel() as ctx:  # nothing was armed
        assert ctx.phase == kctx.Phase.READY


def test_capacity_then_clear_faults_disarms_them_all() -> None:
    faults = [kctx.arm_fault(PlatformOp.MODULE_UNLOAD, nth=1000 + i) for i in range(16)]  # KCTX_MAX_FAULTS
    with pytest.raises(kctx.Capacity):
        kctx.arm_fault(PlatformOp.MODULE_UNLOAD)
    faults[3].disarm()  # kctx.h has no per-fault disarm: every fault goes
    assert not any(f.armed for f in faults)
    with kctx.arm_fault(PlatformOp.STREAM_CREATE) as again:  # room again
        assert again.armed
        with pytest.raises(kctx.PlatformError):
            kctx.Context.kernel()
    assert "disarmed" in repr(again) and "hits=1" in repr(again)


def test_context_kernel_releases_a_refused_init_in_every_phase_it_leaves() -> None:
    """kctx.Context.kernel with each platform call of its init failed in
    turn (sim): the error is raised and the new context released — also
    where the init left it CLOSING (kctx.h: an init upload whose wait
    failed; close releases it once the streams are idle, Busy before): the
    constructor closes, then destroys, and nothing rides on the error as
    ``.context`` or is abandoned (the autouse fixture checks the sim's
    objects and memory are back at their baseline)."""
    with kctx.Context.kernel():
        pass
    before = kctx.thread_platform_calls()
    with kctx.Context.kernel():
        calls = kctx.thread_platform_calls() - before
    closing = 0
    for k in range(1, calls + 1):
        with kctx.arm_fault(PlatformOp.ANY, nth=k) as fault:
            try:
                made = kctx.Context.kernel()
            except kctx.KctxError as e:
                assert "injected fault" in e.message, (k, e.message)
                assert getattr(e, "context", None) is None, (k, e.context.phase)
                closing += "CLOSING" in e.message
            else:  # a failed call the init recovers from
                made.close()
                made.destroy()
        assert fault.hits == 1, k
        assert kctx.abandoned_contexts() == [], k
    assert closing >= 1, "no init call left the context CLOSING: the case is not swept"


def test_a_refused_init_that_cannot_be_released_rides_on_the_error() -> None:
    """The init's upload wait failed (CLOSING) and every later platform
    call fails too (a persistent fault): the constructor's close cannot
    release it, so the error carries the context as ``e.context`` (a note
    says why) instead of abandoning it; once the fault is gone, close and
    destroy release it."""
    with kctx.Context.kernel():
        pass
    before = kctx.thread_platform_calls()
    with kctx.Context.kernel():
        calls = kctx.thread_platform_calls() - before
    for k in range(1, calls + 1):  # the call whose failure leaves the context CLOSING
        with kctx.arm_fault(PlatformOp.ANY, nth=k):
            try:
                kctx.Context.kernel().close()
                continue
            except kctx.KctxError as e:
                if "CLOSING" in e.message:
                    break
    else:
        pytest.fail("no init call leaves the context CLOSING")
    with kctx.arm_fault(PlatformOp.ANY, nth=k, persistent=True):
        with pytest.raises(kctx.KctxError) as info:
            kctx.Context.kernel()
    # the persistent fault also failed kctx's exchange_capture_mode that gives
    # the thread its capture mode back: restore the sim's default here
    sim.exchange_capture_mode(sim.CaptureMode.GLOBAL)
    left = info.value.context  # type: ignore[attr-defined]
    assert left.phase == kctx.Phase.CLOSING
    assert any("releasing the new context failed" in n and ".context" in n for n in info.value.__notes__)
    assert kctx.abandoned_contexts() == []
    for _ in range(10000):  # Busy until the upload the failed wait left is done (kctx.h)
        try:
            left.close()
            break
        except kctx.Busy:
            time.sleep(0.001)
    left.destroy()
