"""Issue 27: the execution strategy from Python. ``kctx.Context(platform,
strategy)`` (and ``Context.kernel`` / ``Context.program``, ``kernel_init`` /
``program_init``) put it into the config's ``strategy`` field
(kctx_kernel_config.strategy); a bad value is refused in Python before any
C call; ``ctx.strategy`` reports the strategy init latched
(kctx_get_context_caps). docs/kernel-mode.md, "Execution strategies"."""
from __future__ import annotations

import re
import threading
import time
from typing import List

import pytest

import kctx
from kctx import _lib, sim
from conftest import REPO, header
from support import N, add_image, u32s

BOTH = [("resident", kctx.Strategy.RESIDENT), (kctx.Strategy.RESIDENT, kctx.Strategy.RESIDENT),
        (1, kctx.Strategy.RESIDENT), ("host-ordered", kctx.Strategy.HOST_ORDERED),
        (kctx.Strategy.HOST_ORDERED, kctx.Strategy.HOST_ORDERED), (2, kctx.Strategy.HOST_ORDERED)]


def test_strategy_enum_matches_the_header_and_the_library() -> None:
    text = (header("kctx.h")).read_text()
    body = text[text.index("typedef enum kctx_strategy {"):text.index("} kctx_strategy;")]
    assert [(s.name, s.value) for s in kctx.Strategy] == [
        (n, int(v)) for n, v in re.findall(r"KCTX_STRATEGY_(\w+)\s*=\s*(\d+)", body)]
    for s in kctx.Strategy:
        assert _lib.decode(_lib.kctx().kctx_strategy_name(s)) == s.c_name
        assert kctx.Strategy.parse(s.c_name) is s


@pytest.fixture
def no_env_strategy(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("KCTX_STRATEGY", raising=False)
    return monkeypatch


@pytest.mark.parametrize("given,latched", BOTH, ids=[repr(g) for g, _ in BOTH])
def test_the_chosen_strategy_is_latched_and_runs(kernel_bytes: bytes, no_env_strategy: pytest.MonkeyPatch,
                                                 given: kctx.StrategyLike, latched: kctx.Strategy) -> None:
    """The sim offers both: each spelling reaches kctx_kernel_init's config,
    the context reports it after the latch (DEFAULT before), and a launch
    under it computes the right result."""
    no_env_strategy.setenv("KCTX_STRATEGY", "resident" if latched == kctx.Strategy.HOST_ORDERED else "host-ordered")
    ctx = kctx.Context(strategy=given)  # the explicit choice wins over $KCTX_STRATEGY
    assert ctx.strategy == kctx.Strategy.DEFAULT  # NEW: nothing latched yet
    try:
        ctx.kernel_init()
        assert ctx.strategy is latched
        with sim.Stream() as s, sim.DeviceBuffer(4 * N) as out:
            s.memset_async(out, 0)
            ctx.prepare(add_image(kernel_bytes, 3))(out, stream=s)
            s.synchronize()
            assert u32s(out) == [3] * N
        ctx.check()
    finally:
        ctx.close()
        ctx.destroy()


def test_factories_and_inits_take_a_strategy(no_env_strategy: pytest.MonkeyPatch) -> None:
    with kctx.Context.kernel(strategy="host-ordered") as ctx:
        assert ctx.strategy == kctx.Strategy.HOST_ORDERED
    with kctx.Context.create("sim", "host-ordered") as ctx:
        ctx.kernel_init()
        assert ctx.strategy == kctx.Strategy.HOST_ORDERED
    with kctx.Context(strategy="host-ordered") as ctx:  # the init's own choice wins over the context's
        ctx.kernel_init(strategy=kctx.Strategy.RESIDENT)
        assert ctx.strategy == kctx.Strategy.RESIDENT
    with kctx.Context.program(1, strategy="host-ordered") as ctx:
        assert (ctx.mode, ctx.strategy) == (kctx.Mode.PROGRAM, kctx.Strategy.HOST_ORDERED)
    sim.set_device(0)


def test_default_is_the_environment_then_the_platforms(no_env_strategy: pytest.MonkeyPatch) -> None:
    with kctx.Context.kernel() as ctx:
        default = ctx.strategy
        assert default in (kctx.Strategy.RESIDENT, kctx.Strategy.HOST_ORDERED)
    other = kctx.Strategy.HOST_ORDERED if default == kctx.Strategy.RESIDENT else kctx.Strategy.RESIDENT
    no_env_strategy.setenv("KCTX_STRATEGY", other.c_name)
    with kctx.Context.kernel(strategy=None) as ctx:
        assert ctx.strategy is other
    no_env_strategy.setenv("KCTX_STRATEGY", "sideways")  # the library's refusal: InvalidArgument, still NEW
    ctx = kctx.Context()
    with pytest.raises(kctx.InvalidArgument, match="KCTX_STRATEGY"):
        ctx.kernel_init()
    assert ctx.phase == kctx.Phase.NEW and ctx.mode == kctx.Mode.NONE
    ctx.destroy()


BAD = [("Resident", kctx.KctxValueError), ("host_ordered", kctx.KctxValueError), ("", kctx.KctxValueError),
       (3, kctx.KctxValueError), (-1, kctx.KctxValueError), (True, kctx.KctxTypeError),
       (1.0, kctx.KctxTypeError), (b"resident", kctx.KctxTypeError)]


@pytest.mark.parametrize("bad,cls", BAD, ids=[repr(b) for b, _ in BAD])
def test_a_bad_strategy_is_refused_before_any_c_call(monkeypatch: pytest.MonkeyPatch, bad: object,
                                                      cls: type) -> None:
    ctx = kctx.Context()
    calls: List[str] = []
    real = _lib.kctx

    def no_c_call() -> object:
        calls.append("kctx")
        return real()

    monkeypatch.setattr(_lib, "kctx", no_c_call)
    try:
        for attempt in (lambda: kctx.Context(strategy=bad), lambda: kctx.Context.kernel(strategy=bad),  # type: ignore[arg-type]
                        lambda: kctx.Context.program(1, strategy=bad),  # type: ignore[arg-type]
                        lambda: ctx.kernel_init(strategy=bad),  # type: ignore[arg-type]
                        lambda: ctx.program_init(1, strategy=bad)):  # type: ignore[arg-type]
            with pytest.raises(cls, match="strategy") as e:
                attempt()
            assert isinstance(e.value, kctx.KctxError)
            assert isinstance(e.value, ValueError if cls is kctx.KctxValueError else TypeError)
        assert calls == [], "a bad strategy reached the C library"
    finally:
        monkeypatch.undo()
    assert ctx.phase == kctx.Phase.NEW
    ctx.destroy()


def test_k33_strategy_raced_by_close_and_destroy() -> None:
    """ctx.strategy read in a loop on one thread while another closes and
    destroys the context: each read gives the latched strategy or raises
    InvalidHandle (destroyed), nothing else."""
    for _ in range(4):
        ctx = kctx.Context.kernel(strategy="host-ordered")
        stop = threading.Event()
        seen: List[object] = []

        def hammer() -> None:
            while not stop.is_set():
                try:
                    seen.append(ctx.strategy)
                except kctx.InvalidHandle:
                    seen.append("destroyed")
                except BaseException as e:
                    seen.append(e)
                    return

        t = threading.Thread(target=hammer, daemon=True)
        t.start()
        time.sleep(0.002)
        ctx.close()
        ctx.destroy()
        time.sleep(0.002)
        stop.set()
        t.join(10)
        assert seen and set(seen) <= {kctx.Strategy.HOST_ORDERED, "destroyed"}, set(map(repr, seen))
