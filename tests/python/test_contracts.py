"""Issue 27: one context surface per platform, each class keeping the
contract it documents. kctx.BaseContext is what every context object is
(prepare, launch, run, check, capturable, flush_trace, close, destroy,
with, the queries); kctx.Context adds making a mode-less context and its
inits; kctx.opencl.Context, kctx.cuda.Context and kctx.acl.Context are made kernel-initialised
by their constructors and so are BaseContexts, not kctx.Contexts (a
subclass of kctx.Context that refused create/kernel/program broke the
promises of its base class)."""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

import kctx
import kctx.acl
import kctx.cuda
import kctx.opencl

CLASSES = [kctx.BaseContext, kctx.Context, kctx.opencl.Context, kctx.cuda.Context, kctx.acl.Context]
BORROWING = [kctx.opencl.Context, kctx.cuda.Context, kctx.acl.Context]


def _public(cls):
    return {n for n in dir(cls) if not n.startswith("_")}


def test_the_documented_isinstance_relations():
    for cls in (kctx.Context, *BORROWING):
        assert issubclass(cls, kctx.BaseContext), cls
    for cls in BORROWING:
        assert not issubclass(cls, kctx.Context), f"{cls.__module__}.{cls.__name__} is documented as no kctx.Context"
    with pytest.raises(kctx.KctxTypeError, match="not constructed directly"):
        kctx.BaseContext()


def test_a_borrowing_context_promises_no_mode_less_entry():
    """What only a mode-less kctx.Context can do is not there to refuse."""
    only_context = _public(kctx.Context) - _public(kctx.BaseContext)
    assert only_context == {"create", "kernel", "program", "kernel_init", "program_init"}, only_context
    for cls in BORROWING:
        assert not (_public(cls) & only_context), (cls, _public(cls) & only_context)


def _params(fn):
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("cls", [kctx.Context, *BORROWING], ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_overrides_accept_every_call_the_base_accepts(cls):
    """Liskov for signatures: an override takes each of the base method's
    parameters, of the same kind, with the same default."""
    for name in sorted(_public(kctx.BaseContext)):
        base, mine = inspect.getattr_static(kctx.BaseContext, name), inspect.getattr_static(cls, name)
        if isinstance(base, property):
            assert isinstance(mine, property), (cls, name)
            continue
        if mine is base:
            continue
        got = {p.name: p for p in _params(mine)}
        for p in _params(base):
            q = got.get(p.name)
            assert q is not None and q.kind == p.kind and q.default == p.default, (cls, name, p, q)


def _only_raises(fn) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the docstring
    return len(body) == 1 and isinstance(body[0], ast.Raise)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_no_public_method_only_refuses(cls):
    """No public method whose body is one `raise` (a promise it does not keep)."""
    for name in sorted(_public(cls)):
        attr = inspect.getattr_static(cls, name)
        fn = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
        fn = fn.fget if isinstance(fn, property) else fn
        if inspect.isfunction(fn):
            assert not _only_raises(fn), f"{cls.__module__}.{cls.__name__}.{name} only raises"
