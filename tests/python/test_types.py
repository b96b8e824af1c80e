"""Issue 18 item 4: types that help. Enums print their names; the user
surface has no typing.Any where the issue names it."""
from __future__ import annotations

import inspect
import typing

import kctx
from kctx import image, interop, sim


def test_enums_print_their_names():
    assert str(kctx.Status.BUSY) == "BUSY" and f"{kctx.Phase.READY}" == "READY"
    assert f"{kctx.Mode.KERNEL:>8}" == "  KERNEL"
    assert str(sim.SimStatus.TIMEOUT) == "TIMEOUT" and str(image.ParamKind.TENSOR) == "TENSOR"
    assert repr(kctx.Status.BUSY) == "<Status.BUSY: 4>" and kctx.Status.BUSY == 4


def _mentions_any(obj: object) -> bool:
    hints = typing.get_type_hints(obj, globalns=vars(inspect.getmodule(obj)))
    return any("Any" in repr(h) for h in hints.values())


def test_no_any_in_the_user_surface():
    for alias in (interop.Arg, interop.StreamLike, interop.TensorLike, interop.ScalarLike):
        assert "Any" not in repr(alias), alias
    for fn in (kctx.Context.launch, kctx.Context.run, kctx.Executable.launch, kctx.Executable.__call__,
               sim.DeviceBuffer.tensor, sim.Stream.__enter__, kctx.Context.kernel, kctx.Context.kernel_init,
               sim.Module.load_file):
        assert not _mentions_any(fn), fn


def test_with_returns_the_object_itself():
    with sim.Stream() as s:
        assert type(s) is sim.Stream
