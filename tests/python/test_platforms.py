"""Issue 27: kctx.platforms() and `kctx platforms` (tools/kctx) state the
same facts — each platform's built/available state, reason and
capabilities — both from kctx_get_platform_caps over the registry. The
tool's JSON and its text are both parsed and compared."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import kctx
from kctx import _lib
from kctx.__main__ import tool_path


def _tool() -> Path:
    for p in (_lib.load().directory / "tools" / "kctx" / "kctx", tool_path()):
        if p.is_file():
            return p
    pytest.skip("the kctx tool is not built next to these libraries (tools/kctx needs libyaml and Jansson)")


def _run(*args: str) -> str:
    r = subprocess.run([str(_tool()), "platforms", *args], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, f"kctx platforms {' '.join(args)}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _ours(p: kctx.Platform) -> Dict[str, Any]:
    """A Platform as the tool states it."""
    out: Dict[str, Any] = {"name": p.name, "built": p.built, "available": p.available, "reason": p.reason}
    if p.caps is not None:
        c = p.caps
        out["capabilities"] = {
            "strategies": [s.c_name for s in sorted(c.strategies)], "default_strategy": c.default_strategy.c_name,
            "has_capture": c.has_capture, "has_null_stream": c.has_null_stream, "has_epoch": c.has_epoch,
            "can_check_ranges": c.can_check_ranges, "max_params_bytes": c.max_params_size,
            "program_mode": c.program_mode}
    return out


def test_platforms_and_the_tools_json_agree() -> None:
    ours = kctx.platforms()
    assert [p.name for p in ours][:1] == ["sim"] and len({p.name for p in ours}) == len(ours)
    doc = json.loads(_run("--json"))
    keys = ("name", "built", "available", "reason", "capabilities")
    theirs = [{k: e[k] for k in keys if k in e} for e in doc["platforms"]]
    assert [_ours(p) for p in ours] == theirs


_HEAD = re.compile(r"^platform (\S+)\s+(built|not built)\s+(available|not available)(?:  (.*))?$")


def _parse_text(text: str) -> List[Dict[str, Any]]:
    """`kctx platforms`' text: a `platform` line per platform, then, when
    available, its capability lines (device lines are skipped)."""
    out: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, Any]] = None
    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            cur = {"name": m[1], "built": m[2] == "built", "available": m[3] == "available", "reason": m[4] or ""}
            out.append(cur)
            continue
        if cur is None:
            continue
        caps = cur.setdefault("capabilities", {}) if cur["available"] else None
        if (m := re.match(r"^  strategies\s+(.*) \(default (\S+)\)$", line)) and caps is not None:
            caps["strategies"] = m[1].split(", ") if m[1] else []
            caps["default_strategy"] = m[2]
        elif (m := re.match(r"^  capture\s+(yes|no); null stream (yes|no); device epochs (yes|no); "
                            r"range checks (yes|no)$", line)) and caps is not None:
            caps.update(zip(("has_capture", "has_null_stream", "has_epoch", "can_check_ranges"),
                            (v == "yes" for v in m.groups())))
        elif (m := re.match(r"^  parameters\s+blocks up to (\d+) bytes$", line)) and caps is not None:
            caps["max_params_bytes"] = int(m[1])
        elif (m := re.match(r"^  program mode\s+(yes|no)$", line)) and caps is not None:
            caps["program_mode"] = m[1] == "yes"
    return out


def test_platforms_and_the_tools_text_agree() -> None:
    theirs = _parse_text(_run())
    assert theirs, "no platform line in `kctx platforms`"
    assert [_ours(p) for p in kctx.platforms()] == theirs


def test_platforms_are_frozen_and_each_is_platform_of_its_name() -> None:
    for p in kctx.platforms():
        assert kctx.platform(p.name) == p
        assert (p.caps is None) == (not p.available)
        assert p.available or p.reason  # an unusable platform says why
