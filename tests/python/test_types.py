"""Issue 18 item 4: types that help. Enums print their names; the user
surface has no typing.Any where the issue names it."""
from __future__ import annotations

import inspect
import typing

import pytest

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


TYPED_USE = '''
import ctypes
from typing import Dict, Optional
import kctx
import kctx.acl
from kctx import sim


class TorchStream:
    cuda_stream: int = 5


class CuPyArray:
    @property
    def __cuda_array_interface__(self) -> Dict[str, object]:
        return {}


class SVM:
    svm_ptr: int = 1
    size: int = 4


class NpuStream:  # torch_npu.npu.Stream
    npu_stream: int = 6


class NpuDevice:
    type: str = "npu"
    index: Optional[int] = 0


class NpuTensor:  # a torch tensor on npu
    device: NpuDevice = NpuDevice()

    def data_ptr(self) -> int:
        return 1

    def numel(self) -> int:
        return 1

    def element_size(self) -> int:
        return 4

    def is_contiguous(self) -> bool:
        return True


def f(exe: kctx.Executable, s: sim.Stream, b: sim.DeviceBuffer) -> None:
    exe.launch(b, CuPyArray(), SVM(), (1, 2), 3, 1.5, ctypes.c_float(1.0), stream=TorchStream())
    exe.launch(b, stream=s)
    exe.launch(NpuTensor(), 3, stream=NpuStream())
    kctx.acl.stream_handle_of(NpuStream())
    exe.launch("not a tensor", stream=s)   # refused by the type
    exe.launch(b, stream="not a stream")   # refused by the type
'''


def test_the_protocols_accept_framework_shapes_and_refuse_the_rest(tmp_path):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed: run `make deps` (scripts/install-deps.sh lists it)")
    import os
    import subprocess
    import sys

    from conftest import PACKAGE_DIR, REPO

    src = tmp_path / "typed_use.py"
    src.write_text(TYPED_USE)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                        str(src)], env=dict(os.environ, MYPYPATH=str(PACKAGE_DIR)), capture_output=True,
                       text=True, timeout=240, cwd=tmp_path)
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    refused = [str(i + 1) for i, line in enumerate(TYPED_USE.splitlines()) if "refused by the type" in line]
    assert [e.split(":")[1] for e in errors] == refused, r.stdout
