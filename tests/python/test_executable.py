"""Issue 18 item 6 (and item 4's trace_path): prepare() returns a callable
object, ids are optional (kctx mints one), one-step factories."""
from __future__ import annotations

import json

import pytest

import kctx
from kctx import sim
from support import N, add_image, scalar_add_image, u32s


def test_prepare_returns_a_callable_and_mints_ids(kernel_bytes):
    with kctx.Context.kernel() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        assert ctx.mode == kctx.Mode.KERNEL
        s.memset_async(out, 0)
        add1 = ctx.prepare(add_image(kernel_bytes, 1))                # minted id
        add10 = ctx.prepare(add_image(kernel_bytes, 10), id=None)     # minted id
        given = ctx.prepare(7, add_image(kernel_bytes, 100))           # the classic form
        by_kw = ctx.prepare(add_image(kernel_bytes, 1000), id=8)
        assert isinstance(add1, kctx.Executable) and given.id == 7 and by_kw.id == 8
        assert len({add1.id, add10.id, 7, 8}) == 4 and set(ctx.prepared) == {add1.id, add10.id, 7, 8}
        assert ctx.prepared[add1.id].digest == add1.digest
        add1.launch(out, stream=s)
        add10(out, stream=s)
        given(out, stream=s)
        by_kw.launch(out, stream=s)
        s.synchronize()
        assert set(u32s(out)) == {1111}
        with pytest.raises(TypeError):
            ctx.prepare(None, add_image(kernel_bytes, 1))  # a positional id must be an int
        with pytest.raises(TypeError):
            add1.launch(out, s)  # stream is keyword-only  # type: ignore[misc]
        with pytest.raises(kctx.DuplicateId):
            ctx.prepare(add_image(kernel_bytes, 1), id=add1.id)


def test_scalars_through_the_callable(kernel_bytes):
    with kctx.Context.kernel() as ctx, sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
        s.memset_async(out, 0)
        exe = ctx.prepare(scalar_add_image(kernel_bytes))
        exe(out, N | (5 << 32), stream=s)
        s.synchronize()
        assert set(u32s(out)) == {5}


def test_factory_destroys_the_context_when_init_fails(monkeypatch):
    destroyed = []
    real = kctx.Context.destroy

    def spy(self):  # type: ignore[no-untyped-def]
        destroyed.append(self.handle)
        real(self)

    monkeypatch.setattr(kctx.Context, "destroy", spy)
    before = sim.calls()
    with pytest.raises(kctx.InvalidArgument):
        kctx.Context.kernel(args_capacity=1)
    assert len(destroyed) == 1 and destroyed[0] is not None
    with kctx.Context.kernel() as owner:  # the failed one left no claim and no handle
        with pytest.raises(kctx.Busy):
            kctx.Context.kernel()
    assert owner.handle is None and sim.calls() >= before


def test_program_factory():
    with kctx.Context.program(0) as ctx:
        assert ctx.mode == kctx.Mode.PROGRAM and ctx.device == 0
    sim.set_device(0)


def test_trace_path_accepts_os_pathlike(kernel_bytes, tmp_path):
    path = tmp_path / "trace.json"  # a pathlib.Path, not a str
    with kctx.Context.kernel(trace_path=path, trace_device_records=1024) as ctx, sim.Stream() as s, \
            sim.DeviceBuffer(4 * N) as out:
        ctx.prepare(add_image(kernel_bytes, 1)).launch(out, stream=s)
        s.synchronize()
    assert json.loads(path.read_text())
    with pytest.raises(TypeError):
        kctx.Context.kernel(trace_path=3)  # type: ignore[arg-type]
