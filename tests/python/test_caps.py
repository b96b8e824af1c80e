"""Issue 27: capability queries from Python. ``kctx.platform(name)`` and
``kctx.platform_caps(name)`` (kctx_get_platform_caps), ``ctx.caps``
(kctx_get_context_caps) as read-only objects, and ``ctx.capturable(id)``
(kctx_capturable: True, or the answer's status as its exception)."""
from __future__ import annotations

import ctypes
import dataclasses
import threading
import time
from typing import Callable, List, Tuple

import pytest

import kctx
from kctx import _lib, sim
from support import add_image


def _raw(name: str) -> _lib.PlatformCaps:
    c = _lib.PlatformCaps()
    c.size = ctypes.sizeof(c)
    assert _lib.kctx().kctx_get_platform_caps(name.encode(), ctypes.byref(c)) == 0
    return c


def _registry() -> List[str]:
    lib = _lib.kctx()
    return [_lib.decode(lib.kctx_platform_name_at(i)) for i in range(lib.kctx_platform_count())]


def test_every_platform_object_mirrors_the_c_struct() -> None:
    names = _registry()
    assert "sim" in names
    for name in names:
        p, c = kctx.platform(name), _raw(name)
        assert (p.name, p.built, p.available, p.reason) == (name, bool(c.built), bool(c.available),
                                                             _lib.decode(c.reason))
        if not p.available:
            assert p.caps is None and p.reason
            continue
        assert p.caps is not None
        assert p.caps.strategies == {s for s in (kctx.Strategy.RESIDENT, kctx.Strategy.HOST_ORDERED)
                                     if c.strategies & (1 << s)}
        assert (p.caps.default_strategy, p.caps.max_params_size, p.caps.strategy) == (
            c.default_strategy, c.max_params_size, kctx.Strategy.DEFAULT)
        assert (p.caps.has_capture, p.caps.has_null_stream, p.caps.has_epoch, p.caps.can_check_ranges,
                p.caps.program_mode) == tuple(bool(getattr(c, f)) for f in (
                    "has_capture", "has_null_stream", "has_epoch", "can_check_ranges", "program_mode"))


def test_the_sims_capabilities_are_what_the_docs_say() -> None:
    # docs/platforms.md / kernel-mode.md: the sim offers both strategies
    # (RESIDENT by default), capture, device epochs, range checks, program mode.
    caps = kctx.platform_caps("sim")
    assert caps.strategies == frozenset({kctx.Strategy.RESIDENT, kctx.Strategy.HOST_ORDERED})
    assert caps.default_strategy is kctx.Strategy.RESIDENT
    assert caps.has_capture and caps.has_epoch and caps.can_check_ranges and caps.program_mode
    assert not caps.has_null_stream and caps.max_params_size > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.has_capture = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        kctx.platform("sim").available = False  # type: ignore[misc]


def test_platform_caps_of_an_unusable_platform_raises_with_the_reason() -> None:
    for name in _registry():
        p = kctx.platform(name)
        if p.available:
            assert kctx.platform_caps(name) == p.caps
            continue
        cls = kctx.NotFound if not p.built else kctx.Unsupported  # as kctx_context_create answers
        with pytest.raises(cls) as e:
            kctx.platform_caps(name)
        assert p.reason in str(e.value)


def test_platform_names_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KCTX_PLATFORM", raising=False)
    assert kctx.platform().name == "sim"
    monkeypatch.setenv("KCTX_PLATFORM", "opencl")  # None: KCTX_PLATFORM, as kctx.Context
    assert kctx.platform().name == "opencl"
    with pytest.raises(kctx.NotFound, match="nosuch"):
        kctx.platform("nosuch")
    with pytest.raises(kctx.NotFound):
        kctx.platform_caps("nosuch")
    with pytest.raises(kctx.KctxTypeError):
        kctx.platform(b"sim")  # type: ignore[arg-type]


def test_context_caps_are_the_platforms_with_the_latched_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KCTX_STRATEGY", raising=False)
    platform_caps = kctx.platform_caps("sim")
    ctx = kctx.Context(strategy="host-ordered")
    try:
        calls = ctx.platform_calls
        assert ctx.caps == platform_caps  # NEW: strategy DEFAULT
        ctx.kernel_init()
        assert ctx.caps == dataclasses.replace(platform_caps, strategy=kctx.Strategy.HOST_ORDERED)
        assert ctx.caps.strategy is ctx.strategy
        calls = ctx.platform_calls
        ctx.caps
        assert ctx.platform_calls == calls  # no platform call
    finally:
        ctx.close()
    assert ctx.caps.strategy is kctx.Strategy.HOST_ORDERED  # until destroy
    ctx.destroy()
    with pytest.raises(kctx.InvalidHandle):
        ctx.caps
    with kctx.Context.program(1) as prog:
        assert prog.caps == dataclasses.replace(platform_caps, strategy=platform_caps.default_strategy)
    sim.set_device(0)


def test_capturable_answers_true_or_raises_in_the_headers_order(kernel_bytes: bytes) -> None:
    """kctx_capturable's statuses in its order: InvalidState (mode-less,
    program mode), UnknownId, True; after close UnknownId, after destroy
    InvalidHandle; a bad id InvalidArgument before any C call. No platform
    call, nothing changes."""
    ctx = kctx.Context()
    with pytest.raises(kctx.InvalidState, match="mode"):
        ctx.capturable(1)
    ctx.kernel_init()
    exe = ctx.prepare(add_image(kernel_bytes, 1))
    calls = ctx.platform_calls
    assert ctx.capturable(exe.id) is True
    with pytest.raises(kctx.UnknownId):
        ctx.capturable(exe.id + 1)
    with pytest.raises(kctx.InvalidArgument):
        ctx.capturable(-1)
    assert ctx.platform_calls == calls and ctx.phase == kctx.Phase.READY
    ctx.close()
    with pytest.raises(kctx.UnknownId):
        ctx.capturable(exe.id)
    ctx.destroy()
    with pytest.raises(kctx.InvalidHandle):
        ctx.capturable(exe.id)
    with kctx.Context.program(1) as prog:
        with pytest.raises(kctx.InvalidState):
            prog.capturable(1)
    sim.set_device(0)


def _race(make: Callable[[], Tuple[kctx.Context, int]], call: Callable[[kctx.Context, int], object],
          allowed: Tuple[type, ...]) -> None:
    """K33: `call` in a loop on one thread while this one closes, then
    destroys, the context: every call returns or raises one of `allowed`."""
    for _ in range(4):
        ctx, ident = make()
        stop = threading.Event()
        errors: List[BaseException] = []
        done = [0]

        def hammer() -> None:
            while not stop.is_set():
                try:
                    call(ctx, ident)
                    done[0] += 1
                except allowed:
                    done[0] += 1
                except BaseException as e:
                    errors.append(e)
                    return

        t = threading.Thread(target=hammer, daemon=True)
        t.start()
        time.sleep(0.002)
        ctx.close()
        time.sleep(0.001)
        ctx.destroy()
        time.sleep(0.001)
        stop.set()
        t.join(10)
        assert not errors, f"raced by close and destroy: {errors[0]!r}"
        assert done[0] > 0


def test_k33_caps_and_capturable_raced_by_close_and_destroy(kernel_bytes: bytes) -> None:
    image = add_image(kernel_bytes, 1)

    def make() -> Tuple[kctx.Context, int]:
        ctx = kctx.Context.kernel()
        return ctx, ctx.prepare(image).id

    _race(make, lambda c, i: c.caps, (kctx.InvalidHandle,))
    _race(make, lambda c, i: c.capturable(i), (kctx.UnknownId, kctx.InvalidHandle))
