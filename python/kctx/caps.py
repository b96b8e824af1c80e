"""Execution strategies and platform capabilities (include/kctx/kctx.h:
kctx_strategy, kctx_platform_caps, kctx_get_platform_caps, the registry).

- ``kctx.Strategy``: how the device side of a launch runs (RESIDENT,
  HOST_ORDERED; DEFAULT: ``$KCTX_STRATEGY``, else the platform's default).
  ``Strategy.parse`` takes the enum, its number, or the C name
  (``"resident"``, ``"host-ordered"``, ``"default"``).
- ``kctx.Capabilities``: what an available platform declares (read-only).
- ``kctx.Platform``: one platform of libkctx's registry: built, available,
  the reason when not, and ``caps`` (None unless available). The same
  facts ``kctx platforms`` prints (both read kctx_get_platform_caps).
"""
from __future__ import annotations

import ctypes
from ctypes import byref
from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Union

from . import _lib
from ._enum import NamedIntEnum
from .errors import KctxTypeError, KctxValueError, NotFound, Unsupported, error


class Strategy(NamedIntEnum):
    """kctx_strategy (docs/kernel-mode.md, "Execution strategies")."""

    DEFAULT = 0
    RESIDENT = 1
    HOST_ORDERED = 2

    @property
    def c_name(self) -> str:
        """kctx_strategy_name: "default", "resident", "host-ordered"."""
        return self.name.lower().replace("_", "-")

    @classmethod
    def parse(cls, value: "StrategyLike") -> "Strategy":
        """`value` as a Strategy: None (DEFAULT), a Strategy, its number, or
        its C name ("resident", "host-ordered", "default"). Checked in Python,
        before any C call: KctxValueError (a ValueError) for a name or number
        that is no strategy, KctxTypeError (a TypeError) for another type
        (bool included)."""
        if value is None:
            return cls.DEFAULT
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for s in cls:
                if value == s.c_name:
                    return s
            raise KctxValueError(f"strategy {value!r} is not a strategy: use one of "
                                 f"{', '.join(repr(s.c_name) for s in cls)} or kctx.Strategy")
        if isinstance(value, bool) or not isinstance(value, int):
            raise KctxTypeError(f"strategy must be a kctx.Strategy, a str ('resident', 'host-ordered') or None, "
                                f"not {type(value).__name__}")
        try:
            return cls(value)
        except ValueError:
            raise KctxValueError(f"strategy {value} is not a kctx_strategy (0 default, 1 resident, "
                                 f"2 host-ordered)") from None


#: What ``strategy=`` accepts.
StrategyLike = Union[Strategy, str, int, None]


@dataclass(frozen=True)
class Capabilities:
    """kctx_platform_caps' declared capabilities of an available platform;
    ``strategy`` is a context's strategy in effect once init latched it
    (``Strategy.DEFAULT`` before, and for a platform's own capabilities)."""

    strategies: FrozenSet[Strategy]
    default_strategy: Strategy
    max_params_size: int
    has_capture: bool
    has_null_stream: bool
    has_epoch: bool
    can_check_ranges: bool
    program_mode: bool
    strategy: Strategy


@dataclass(frozen=True)
class Platform:
    """A platform of libkctx's registry (kctx_get_platform_caps): ``built``
    into this libkctx, ``available`` on this machine, ``reason`` why not
    ("" when available), ``caps`` (None unless available), and ``note``:
    where it runs when that is narrower than ``available`` says (acl: only
    where kctx's runtime programs load), "" when nothing."""

    name: str
    built: bool
    available: bool
    reason: str
    caps: Optional[Capabilities]
    note: str = ""


def _strategy(value: int) -> Strategy:
    try:
        return Strategy(value)
    except ValueError:  # a strategy newer than this binding: shown as DEFAULT would lie
        raise KctxValueError(f"libkctx reported strategy {value}, which this binding does not know") from None


def capabilities(c: _lib.PlatformCaps) -> Capabilities:
    """A filled kctx_platform_caps as Capabilities."""
    return Capabilities(
        strategies=frozenset(s for s in (Strategy.RESIDENT, Strategy.HOST_ORDERED) if c.strategies & (1 << s)),
        default_strategy=_strategy(c.default_strategy), max_params_size=int(c.max_params_size),
        has_capture=bool(c.has_capture), has_null_stream=bool(c.has_null_stream), has_epoch=bool(c.has_epoch),
        can_check_ranges=bool(c.can_check_ranges), program_mode=bool(c.program_mode),
        strategy=_strategy(c.strategy))


def new_caps() -> _lib.PlatformCaps:
    c = _lib.PlatformCaps()
    c.size = ctypes.sizeof(c)
    return c


def platform(name: Optional[str] = None) -> Platform:
    """kctx_get_platform_caps: the platform `name` (None: $KCTX_PLATFORM,
    else "sim", as ``kctx.Context``). A known platform that is not built or
    not available is answered too (``built``/``available`` False, with the
    ``reason``). No platform call, no context; any thread.
    Errors: NotFound (no known platform has that name); KctxTypeError (not
    a str or None)."""
    if name is not None and not isinstance(name, str):
        raise KctxTypeError(f"platform name must be a str or None, not {type(name).__name__}")
    c = new_caps()
    st = _lib.kctx().kctx_get_platform_caps(name.encode() if name is not None else None, byref(c))
    if st != 0:
        raise error(st, _lib.decode(_lib.kctx().kctx_thread_last_error()))
    return Platform(_lib.decode(c.name), bool(c.built), bool(c.available), _lib.decode(c.reason),
                    capabilities(c) if c.available else None, _lib.decode(c.note) if c.note else "")


def platform_caps(name: Optional[str] = None) -> Capabilities:
    """The capabilities of platform `name` (``platform(name).caps``).
    Errors: NotFound (no known platform has that name, or this libkctx was
    not built with it: the reason is in the message, as kctx_context_create
    answers); Unsupported (built but not available on this machine, with the
    reason); KctxTypeError."""
    p = platform(name)
    if p.caps is None:
        cls = NotFound if not p.built else Unsupported
        raise cls(f"platform {p.name!r} is {'not built' if not p.built else 'built but not available'}: {p.reason}")
    return p.caps


def platforms() -> List[Platform]:
    """Every platform libkctx's registry knows, built or not, in its order
    (kctx_platform_count, kctx_platform_name_at, kctx_get_platform_caps):
    the facts ``kctx platforms`` prints. Never raises a kctx status."""
    lib = _lib.kctx()
    out = []
    for i in range(int(lib.kctx_platform_count())):
        name = lib.kctx_platform_name_at(i)
        if not name:
            break
        out.append(platform(_lib.decode(name)))
    return out
