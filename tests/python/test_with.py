"""Issue 18 item 2: context managers never hide the user's error. When the
body raised, a failing release is attached to the body's exception as a
note and the body's exception propagates; when the body succeeded, a
failing release raises as before (test_lifecycle pins that)."""
from __future__ import annotations

import pytest

import kctx
from kctx import sim
from kctx.context import Phase
from support import add_image


class BodyError(Exception):
    pass


def _notes(e: BaseException) -> str:
    return "\n".join(getattr(e, "__notes__", []))


def test_context_with_block_shows_the_body_exception(kernel_bytes):
    with pytest.raises(BodyError) as info:
        with kctx.Context() as ctx:
            ctx.kernel_init()
            ctx.prepare(1, add_image(kernel_bytes, 1))
            sim.arm_fault(sim.Op.STREAM_DESTROY, nth=2, this_thread_only=True)
            raise BodyError("the user's own error")
    assert str(info.value) == "the user's own error"
    notes = _notes(info.value)
    assert "PlatformError" in notes and "closing" in notes, notes
    # nothing forgotten: the handle is kept for a retry, as when the body succeeded
    assert ctx.handle is not None and ctx.phase == Phase.CLOSING and set(ctx.prepared) == {1}
    ctx.close()
    ctx.destroy()


def test_a_clean_exit_of_a_failing_body_adds_no_note():
    with pytest.raises(BodyError) as info:
        with kctx.Context() as ctx:
            ctx.kernel_init()
            raise BodyError("x")
    assert ctx.handle is None and not getattr(info.value, "__notes__", None)


def test_sim_objects_with_blocks_show_the_body_exception():
    # the body destroys the stream itself, so the with block's destroy fails
    with pytest.raises(BodyError) as info:
        with sim.Stream() as s:
            s.destroy()
            s.destroyed = False  # as if the user destroyed it behind the object's back
            raise BodyError("stream body")
    assert "SIM_INVALID_HANDLE" in _notes(info.value) or "SimError" in _notes(info.value)
    with pytest.raises(BodyError) as info:
        with sim.DeviceBuffer(64) as buf:
            sim.free(buf.ptr)
            raise BodyError("buffer body")
    assert "freeing" in _notes(info.value)
    # the body succeeded: the failing release raises, as before
    with pytest.raises(sim.SimError):
        with sim.Stream() as s:
            s.destroy()
            s.destroyed = False


def test_graphs_are_context_managers():
    with sim.Stream() as s, sim.DeviceBuffer(16) as buf:
        with s.capture() as cap:
            s.memset_async(buf, 1)
        assert cap.graph is not None
        with cap.graph as graph, graph.instantiate() as exe:
            exe.launch(s)
            s.synchronize()
        assert graph.destroyed and exe.destroyed
