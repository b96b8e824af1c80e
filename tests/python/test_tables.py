"""The binding's tables mirror the C headers: status lists, the sim's op
list, image rejection reasons, and the prototypes (only functions the
public headers declare)."""
from __future__ import annotations

import ast
import ctypes
import re

import kctx
from kctx import _lib, image, sim
from conftest import REPO
from conftest import header as public_header

HEADERS = [public_header(h) for h in ("kctx.h", "sim.h", "image.h")]


def _header_map(header: str, macro: str):
    text = (public_header(header)).read_text()
    body = text[text.index(f"#define {macro}"):]
    body = body[:body.index("\n\n")]
    return [(n, int(v)) for n, v in re.findall(r"X\((\w+),\s*(\d+),", body)]


def test_status_enum_and_table_match_the_header_and_the_library():
    assert [(s.name, s.value) for s in kctx.Status] == _header_map("kctx.h", "KCTX_STATUS_MAP")
    assert [row[0] for row in kctx.STATUS_TABLE] == list(kctx.Status)
    for status, cls_name, _, doc in kctx.STATUS_TABLE:
        assert kctx.status_name(status) == f"KCTX_{status.name}"
        assert kctx.status_string(status) == doc
        if cls_name:
            cls = getattr(kctx, cls_name)
            assert kctx.exception_for(status) is cls and cls.status == status
            assert issubclass(cls, kctx.KctxError) and cls.__module__ == "kctx"
            assert cls("m").name == f"KCTX_{status.name}"
    assert kctx.status_name(max(kctx.Status) + 1) == "KCTX_UNKNOWN"  # no status the enum lacks


def test_the_type_checker_view_of_the_exceptions_matches_the_generated_classes():
    tree = ast.parse((REPO / "python" / "kctx" / "errors.py").read_text())
    declared = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for c in node.body:
                declared[c.name] = [ast.unparse(b) for b in c.bases]
    generated = {name: [b.__name__ for b in getattr(kctx, name).__bases__] for name in kctx.EXCEPTION_NAMES}
    assert declared == generated
    assert set(kctx.EXCEPTION_NAMES) <= set(kctx.__all__)


def test_sim_enums_match_the_header_and_the_library():
    assert [(s.name, s.value) for s in sim.SimStatus] == _header_map("sim.h", "SIM_STATUS_MAP")
    for status in sim.SimStatus:
        assert sim.status_name(status) == f"SIM_{status.name}"
    assert sim.status_name(17) == "SIM_UNKNOWN"
    text = (public_header("sim.h")).read_text()
    op_map = text[text.index("#define SIM_OP_MAP"):text.index("typedef enum sim_op")]
    assert tuple(re.findall(r"X\((\w+)\)", op_map)) == sim.OP_NAMES
    for op in sim.Op:
        if op != sim.Op.ANY:
            assert sim.op_name(op) == f"SIM_OP_{op.name}"
    assert sim.op_name(len(sim.OP_NAMES)) != f"SIM_OP_{sim.OP_NAMES[-1]}"


def test_image_reasons_match_the_header_and_the_library():
    assert [(r.name, r.value) for r in image.Reason] == _header_map("image.h", "KCTX_IMAGE_REASON_MAP")
    for reason in image.Reason:
        assert image.reason_name(reason) == f"KCTX_IMAGE_{reason.name}"
        assert image.reason_string(reason)


def test_only_functions_the_public_headers_declare_are_bound():
    declared = set()
    for h in HEADERS:
        declared |= set(re.findall(r"\b((?:kctx|sim)_\w+)\s*\(", h.read_text()))
    bound = set(_lib.KCTX_PROTOTYPES) | set(_lib.SIM_PROTOTYPES)
    assert bound <= declared, sorted(bound - declared)


def test_size_prefixed_structs_have_the_c_sizes():
    # sizes of the C structs on LP64 (x86-64), from the header declarations
    expected = {
        _lib.KernelConfig: 56, _lib.ProgramConfig: 56, _lib.Arg: 16, _lib.CheckReport: 32,
        _lib.ResourceInfo: 8 + 8 * 14 + 16 + 8 + 8, _lib.PlatformCaps: 80, _lib.ImageError: 176,
        _lib.SimDeviceProps: 104,
        _lib.KctxFault: 40, _lib.SimFault: 40, _lib.SimHold: 32, _lib.SimObjectCounts: 56,
    }
    for cls, size in expected.items():
        assert ctypes.sizeof(cls) == size, cls.__name__


def _c_struct_fields(header: str, name: str):
    text = (public_header(header)).read_text()
    body = text[text.index(f"typedef struct {name} {{"):]
    body = body[:body.index(f"}} {name};")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return re.findall(r"(\w+)\s*(?:\[[^]]*\])?;", body) + re.findall(r"\(\*(\w+)\)\(", body)


def test_mirrored_structs_have_the_header_fields_in_order():
    for cls, header, name in ((_lib.KernelConfig, "kctx.h", "kctx_kernel_config"),
                              (_lib.ProgramConfig, "kctx.h", "kctx_program_config"),
                              (_lib.PlatformCaps, "kctx.h", "kctx_platform_caps"),
                              (_lib.KctxFault, "kctx.h", "kctx_fault")):
        assert [f[0] for f in cls._fields_] == _c_struct_fields(header, name), name


def test_the_kernel_descriptor_has_no_lifecycle_member():
    # K4 by construction: what a kernel context receives (the descriptor and
    # its ops table) cannot express a device lifecycle operation; only the
    # registry entry, which program init alone looks up, holds that table.
    for name in ("kctx_platform_desc", "kctx_platform_ops"):
        members = _c_struct_fields("platform.h", name)
        assert members and not [m for m in members if "lifecycle" in m], (name, members)
        for op in ("init", "finalize", "set_device", "reset_device"):
            assert op not in members, (name, op)
    assert "lifecycle" in _c_struct_fields("platform.h", "kctx_platform_entry")
