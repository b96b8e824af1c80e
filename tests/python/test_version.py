"""One version: the C library's (issue 18, item 5; issue 16)."""
import re
import subprocess
from pathlib import Path

import pytest

import kctx
from kctx import _lib

ROOT = Path(__file__).resolve().parents[2]


def header_version() -> int:
    text = (ROOT / "include" / "kctx" / "kctx.h").read_text()
    parts = [int(re.search(rf"#define KCTX_VERSION_{k} (\d+)", text)[1]) for k in ("MAJOR", "MINOR", "PATCH")]
    return parts[0] * 10000 + parts[1] * 100 + parts[2]


def test_the_package_the_library_and_the_tool_report_one_version():
    assert _lib.LIBRARY_VERSION == header_version()
    assert kctx.__version__ == kctx.version() == _lib.version_string(header_version())
    tool = _lib.load().directory / "tools" / "kctx" / "kctx"
    if tool.is_file():
        out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=True).stdout
        assert out.split() == ["kctx", kctx.__version__]


def test_a_library_of_another_version_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(_lib, "_loaded", None)
    monkeypatch.setattr(_lib, "LIBRARY_VERSION", _lib.LIBRARY_VERSION + 1)
    with pytest.raises(kctx.LibraryNotFound) as e:
        _lib.load()
    assert "is version 0.1.0, this kctx package is version 0.1.1" in str(e.value)
    monkeypatch.undo()
    assert _lib.load() is not None
