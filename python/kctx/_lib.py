"""Locating and loading the native libraries, and their ctypes prototypes.

Only functions declared in the public headers (include/kctx/kctx.h,
platform/sim/include/kctx/sim.h, include/kctx/image.h, platform/opencl/include/kctx/opencl.h) are bound
here; the test suite checks that every name below is declared there.

Where the libraries are looked for, in order:

1. ``$KCTX_LIB_DIR`` (when set, only there): a CMake build directory, or any
   directory holding ``libkctx_sim.so`` and ``libkctx.so``;
2. ``_native/lib`` in the package (``pip install ./python`` builds the
   libraries and puts them there, as ``libkctx.so.0`` and
   ``libkctx_sim.so.0``, their SONAMEs);
3. the package's own directory (``.so`` files copied next to
   ``__init__.py`` by hand);
4. ``build/`` of the source checkout the package lives in (``python/kctx``
   -> ``../../build``).

``libkctx_sim.so`` is loaded first, with ``RTLD_GLOBAL``, so that
``libkctx.so`` (which links against it) and the framework side of a Python
program share one simulated device runtime.
"""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .errors import KctxError, Unsupported

SIM_LIB = "libkctx_sim.so"
KCTX_LIB = "libkctx.so"


class LibraryNotFound(KctxError, OSError):
    """The native libraries could not be found or loaded; the message lists
    every directory that was tried and why it was rejected. An ``OSError``
    and a ``kctx.KctxError``."""


LibraryNotFound.__module__ = "kctx"


# ---------------------------------------------------------------------------
# Structures (size-prefixed: every one starts with its own size, set by the
# binding exactly as the headers' *_INIT macros do).
# ---------------------------------------------------------------------------
class KernelConfig(ctypes.Structure):
    """kctx_kernel_config"""

    _fields_ = [
        ("size", c_size_t),
        ("version", c_uint32),
        ("args_capacity", c_uint32),
        ("token_capacity", c_uint32),
        ("prepare_timeout_ms", c_uint32),
        ("flags", c_uint32),
        ("trace_device_records", c_uint32),
        ("trace_host_records", c_uint32),
        ("trace_path", ctypes.c_char_p),
        ("strategy", c_uint32),
        ("reserved", c_uint32),
    ]


class ProgramConfig(ctypes.Structure):
    """kctx_program_config"""

    _fields_ = [
        ("size", c_size_t),
        ("version", c_uint32),
        ("device", c_int),
        ("args_capacity", c_uint32),
        ("prepare_timeout_ms", c_uint32),
        ("flags", c_uint32),
        ("trace_device_records", c_uint32),
        ("trace_host_records", c_uint32),
        ("trace_path", ctypes.c_char_p),
        ("strategy", c_uint32),
        ("reserved", c_uint32),
    ]


class Arg(ctypes.Structure):
    """kctx_arg: a tensor (device address, bytes > 0) or a scalar (value, 0)."""

    _fields_ = [("value", c_uint64), ("size", c_uint64)]


class CheckReport(ctypes.Structure):
    """kctx_check_report"""

    _fields_ = [
        ("size", c_size_t),
        ("device_status", c_int),
        ("refused_replays", c_uint32),
        ("concurrent_launches", c_uint32),
        ("error_detail", c_uint64),
    ]


class ResourceInfo(ctypes.Structure):
    """kctx_resource_info"""

    _fields_ = [
        ("size", c_size_t),
        ("aicpu_stream", c_uint64),
        ("aicore_stream", c_uint64),
        ("events", c_uint64 * 5),
        ("programs_module", c_uint64),
        ("runtime_image", c_uint64),
        ("arch_table", c_uint64),
        ("args_block", c_uint64),
        ("runtime_image_bytes", c_uint64),
        ("arch_table_bytes", c_uint64),
        ("args_block_bytes", c_uint64),
        ("token_capacity", c_uint32),
        ("tokens_in_use", c_uint32),
        ("callables", c_uint32),
        ("uploads", c_uint32),
        ("upload_bytes", c_uint64),
        ("upload_stream", c_uint64),
    ]


class PlatformCaps(ctypes.Structure):
    """kctx_platform_caps"""

    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("reason", c_char_p),
        ("built", c_int),
        ("available", c_int),
        ("strategies", c_uint32),
        ("default_strategy", c_uint32),
        ("max_params_size", c_uint32),
        ("has_capture", c_int),
        ("has_null_stream", c_int),
        ("has_epoch", c_int),
        ("can_check_ranges", c_int),
        ("program_mode", c_int),
        ("strategy", c_uint32),
        ("reserved", c_uint32),
        ("note", c_char_p),
    ]


class KctxFault(ctypes.Structure):
    """kctx_fault"""

    _fields_ = [
        ("size", c_size_t),
        ("op", c_int),
        ("nth", c_uint64),
        ("persistent", c_int),
        ("this_thread_only", c_int),
        ("error", c_int),
    ]


class ImageError(ctypes.Structure):
    """kctx_image_error"""

    _fields_ = [("reason", c_int), ("offset", c_uint64), ("message", ctypes.c_char * 160)]


class SimDeviceProps(ctypes.Structure):
    """sim_device_props"""

    _fields_ = [
        ("size", c_size_t),
        ("name", ctypes.c_char * 64),
        ("aicore_count", c_int),
        ("aicpu_count", c_int),
        ("memory_capacity", c_uint64),
        ("max_params_size", c_uint32),
        ("max_block_dim", c_uint32),
        ("device_word_size", c_uint32),
        ("alloc_alignment", c_uint32),
    ]


class SimFault(ctypes.Structure):
    """sim_fault"""

    _fields_ = [
        ("size", c_size_t),
        ("op", c_int),
        ("device", c_int),
        ("this_thread_only", c_int),
        ("nth", c_uint64),
        ("persistent", c_int),
        ("error", c_int),
    ]


class SimHold(ctypes.Structure):
    """sim_hold"""

    _fields_ = [
        ("size", c_size_t),
        ("kind", c_int),
        ("device", c_int),
        ("nth", c_uint64),
        ("fn", c_uint64),
    ]


class SimObjectCounts(ctypes.Structure):
    """sim_object_counts"""

    _fields_ = [
        ("size", c_size_t),
        ("streams", c_uint64),
        ("events", c_uint64),
        ("modules", c_uint64),
        ("graphs", c_uint64),
        ("graph_execs", c_uint64),
        ("hooks_pending", c_uint64),
    ]


# ---------------------------------------------------------------------------
# Prototypes: name -> (restype, argtypes). Statuses are C enums (int).
# ---------------------------------------------------------------------------
_u64p = POINTER(c_uint64)
_intp = POINTER(c_int)

KCTX_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    # kctx.h
    "kctx_version": (c_int, []),
    "kctx_status_name": (c_char_p, [c_int]),
    "kctx_status_string": (c_char_p, [c_int]),
    "kctx_phase_name": (c_char_p, [c_int]),
    "kctx_context_create": (c_int, [c_char_p, _u64p]),
    "kctx_destroy": (c_int, [c_uint64]),
    "kctx_kernel_init": (c_int, [c_uint64, POINTER(KernelConfig)]),
    "kctx_program_init": (c_int, [c_uint64, POINTER(ProgramConfig)]),
    "kctx_prepare": (c_int, [c_uint64, c_uint64, c_void_p, c_size_t]),
    "kctx_close": (c_int, [c_uint64]),
    "kctx_launch": (c_int, [c_uint64, c_uint64, POINTER(Arg), c_uint32, c_uint64]),
    "kctx_check": (c_int, [c_uint64, POINTER(CheckReport)]),
    "kctx_run": (c_int, [c_uint64, c_uint64, POINTER(Arg), c_uint32]),
    "kctx_get_phase": (c_int, [c_uint64, _intp]),
    "kctx_get_mode": (c_int, [c_uint64, _intp]),
    "kctx_get_device": (c_int, [c_uint64, _intp]),
    "kctx_platform_name": (c_char_p, [c_uint64]),
    "kctx_runtime_error": (c_int, [c_uint64, _intp, c_char_p, c_size_t]),
    "kctx_teardown_error": (c_int, [c_uint64, _intp, c_char_p, c_size_t]),
    "kctx_last_error": (c_char_p, [c_uint64]),
    "kctx_thread_last_error": (c_char_p, []),
    "kctx_get_resources": (c_int, [c_uint64, POINTER(ResourceInfo)]),
    "kctx_platform_calls": (c_int, [c_uint64, _u64p]),
    "kctx_platform_count": (c_uint32, []),
    "kctx_platform_name_at": (c_char_p, [c_uint32]),
    "kctx_get_platform_caps": (c_int, [c_char_p, POINTER(PlatformCaps)]),
    "kctx_get_context_caps": (c_int, [c_uint64, POINTER(PlatformCaps)]),
    "kctx_capturable": (c_int, [c_uint64, c_uint64]),
    "kctx_strategy_name": (c_char_p, [c_uint32]),
    "kctx_trace_flush": (c_int, [c_uint64]),
    "kctx_platform_op_name": (c_char_p, [c_int]),
    "kctx_fault_arm": (c_int, [POINTER(KctxFault), _intp]),
    "kctx_fault_hits": (c_int, [c_int, _u64p]),
    "kctx_fault_clear_all": (None, []),
    "kctx_thread_platform_calls": (c_uint64, [c_int]),
    # image.h
    "kctx_image_reason_name": (c_char_p, [c_int]),
    "kctx_image_reason_string": (c_char_p, [c_int]),
    "kctx_image_validate": (c_int, [c_void_p, c_size_t, POINTER(ImageError)]),
    "kctx_crc32c": (c_uint32, [c_void_p, c_size_t]),
    "kctx_image_builder_new": (c_void_p, [c_char_p]),
    "kctx_image_builder_free": (None, [c_void_p]),
    "kctx_image_builder_param": (c_int, [c_void_p, c_char_p, c_int]),
    "kctx_image_builder_child": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_uint32)]),
    "kctx_image_builder_child_param": (c_int, [c_void_p, c_char_p, c_int]),
    "kctx_image_builder_variant": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    "kctx_image_builder_task": (c_int, [c_void_p, c_uint32, c_uint32, POINTER(c_uint32)]),
    "kctx_image_builder_bind": (c_int, [c_void_p, c_int, c_uint32, c_uint64]),
    "kctx_image_builder_dep": (c_int, [c_void_p, c_uint32]),
    "kctx_image_builder_finish": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_size_t), c_char_p, c_size_t]),
    "kctx_image_reseal": (c_int, [c_void_p, c_size_t]),
}

SIM_PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "sim_status_name": (c_char_p, [c_int]),
    "sim_status_string": (c_char_p, [c_int]),
    "sim_last_error_message": (c_char_p, []),
    "sim_init": (c_int, []),
    "sim_finalize": (c_int, []),
    "sim_device_count": (c_int, [_intp]),
    "sim_set_device": (c_int, [c_int]),
    "sim_get_device": (c_int, [_intp]),
    "sim_device_reset": (c_int, []),
    "sim_device_epoch": (c_int, [c_int, _u64p]),
    "sim_lifecycle_count": (c_int, [c_int, c_int, _u64p]),
    "sim_lifecycle_reset_counts": (c_int, []),
    "sim_device_get_props": (c_int, [c_int, POINTER(SimDeviceProps)]),
    "sim_device_synchronize": (c_int, []),
    "sim_malloc": (c_int, [_u64p, c_size_t]),
    "sim_free": (c_int, [c_uint64]),
    "sim_mem_stats": (c_int, [c_int, _u64p, _u64p]),
    "sim_mem_lookup": (c_int, [c_int, c_uint64, c_size_t, _u64p, POINTER(c_size_t)]),
    "sim_memcpy": (c_int, [c_void_p, c_void_p, c_size_t, c_int]),
    "sim_atomic_read_u32": (c_int, [c_uint64, POINTER(c_uint32)]),
    "sim_atomic_read_u64": (c_int, [c_uint64, _u64p]),
    "sim_atomic_write_u32": (c_int, [c_uint64, c_uint32]),
    "sim_stream_create": (c_int, [_u64p]),
    "sim_stream_destroy": (c_int, [c_uint64]),
    "sim_stream_synchronize": (c_int, [c_uint64]),
    "sim_stream_synchronize_timeout": (c_int, [c_uint64, c_uint32]),
    "sim_stream_query": (c_int, [c_uint64]),
    "sim_stream_get_device": (c_int, [c_uint64, _intp]),
    "sim_launch_kernel": (c_int, [c_uint64, c_uint64, c_int, c_uint32, c_void_p, c_size_t]),
    "sim_memcpy_async": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_uint64]),
    "sim_memset_async": (c_int, [c_uint64, c_uint8, c_size_t, c_uint64]),
    "sim_event_create": (c_int, [_u64p, ctypes.c_uint]),
    "sim_event_destroy": (c_int, [c_uint64]),
    "sim_event_record": (c_int, [c_uint64, c_uint64]),
    "sim_stream_wait_event": (c_int, [c_uint64, c_uint64]),
    "sim_event_query": (c_int, [c_uint64]),
    "sim_event_synchronize": (c_int, [c_uint64]),
    "sim_event_elapsed_ms": (c_int, [POINTER(c_float), c_uint64, c_uint64]),
    "sim_module_load": (c_int, [_u64p, c_void_p, c_size_t]),
    "sim_module_unload": (c_int, [c_uint64]),
    "sim_module_get_function": (c_int, [_u64p, c_uint64, c_char_p]),
    "sim_function_address": (c_int, [c_uint64, _u64p]),
    "sim_stream_begin_capture": (c_int, [c_uint64, c_int]),
    "sim_stream_end_capture": (c_int, [c_uint64, _u64p]),
    "sim_stream_get_capture_info": (c_int, [c_uint64, _intp, _u64p, _u64p]),
    "sim_thread_exchange_capture_mode": (c_int, [_intp]),
    "sim_graph_node_count": (c_int, [c_uint64, POINTER(c_size_t)]),
    "sim_graph_destroy": (c_int, [c_uint64]),
    "sim_graph_instantiate": (c_int, [_u64p, c_uint64]),
    "sim_graph_launch": (c_int, [c_uint64, c_uint64]),
    "sim_graph_exec_destroy": (c_int, [c_uint64]),
    "sim_op_name": (c_char_p, [c_int]),
    "sim_fault_arm": (c_int, [POINTER(SimFault), _intp]),
    "sim_fault_hits": (c_int, [c_int, _u64p]),
    "sim_fault_clear_all": (c_int, []),
    "sim_calls": (c_uint64, [c_int, c_int]),
    "sim_thread_calls": (c_uint64, [c_int]),
    "sim_calls_reset": (None, []),
    "sim_thread_calls_reset": (None, []),
    "sim_hold_arm": (c_int, [POINTER(SimHold), _intp]),
    "sim_hold_wait_reached": (c_int, [c_int, c_uint32]),
    "sim_hold_release": (c_int, [c_int]),
    "sim_hold_release_all": (c_int, []),
    "sim_device_make_fatal": (c_int, [c_int]),
    "sim_object_counts_get": (c_int, [c_int, POINTER(SimObjectCounts)]),
}


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------
class _Libraries:
    def __init__(self, sim: ctypes.CDLL, kctx: ctypes.CDLL, directory: Path) -> None:
        self.sim = sim
        self.kctx = kctx
        self.directory = directory
        # The C library's free(): kctx_image_builder_finish hands out malloc'd
        # memory that the caller frees with free().
        libc = ctypes.CDLL(None)
        self.free = libc.free
        self.free.restype = None
        self.free.argtypes = [c_void_p]


_lock = threading.Lock()
_loaded: Optional[_Libraries] = None


def candidate_dirs() -> List[Path]:
    """The directories searched for the libraries, in order."""
    env = os.environ.get("KCTX_LIB_DIR")
    if env:
        return [Path(env)]
    pkg = Path(__file__).resolve().parent
    return [pkg / "_native" / "lib", pkg, pkg.parent.parent / "build"]


def data_path(rel: str) -> Path:
    """A file kctx builds or installs beside its libraries, by its path in a
    build tree: ``<build>/<rel>`` (``$KCTX_LIB_DIR``, or ``build/`` of the
    checkout), or ``share/kctx/<rel>`` of an install (``pip install
    ./python``: ``kctx/_native/share/kctx/<rel>``). For example
    ``data_path("examples/sim_test_kernels.so")`` (the sim's test kernels)
    or ``data_path("examples/callables/vector_add.kctx")``. FileNotFoundError
    lists where it looked."""
    tried: List[Path] = []
    for d in candidate_dirs():
        if d.name == "lib" and d.parent.name == "_native":
            p = d.parent / "share" / "kctx" / rel
        else:
            p = d / rel
        if p.is_file():
            return p
        tried.append(p)
    raise FileNotFoundError(f"{rel}: not found; looked at " + ", ".join(str(p) for p in tried))


def _bind(lib: ctypes.CDLL, table: Dict[str, Tuple[Any, List[Any]]]) -> None:
    for name, (restype, argtypes) in table.items():
        fn = getattr(lib, name)  # AttributeError: the library lacks a public symbol
        fn.restype = restype
        fn.argtypes = argtypes


# The one version: the C library's (kctx.h's KCTX_VERSION, major*10000 +
# minor*100 + patch). This package was written against that library; it
# refuses to load another version (tests/python/test_version.py checks that
# this number is the header's).
LIBRARY_VERSION = 100


def version_string(number: int) -> str:
    """ "0.1.0" for 100."""
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


def load() -> _Libraries:
    """Load (once) and return the native libraries; LibraryNotFound if they
    cannot be found or loaded."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        tried = []
        for d in candidate_dirs():
            sim_path, kctx_path = d / SIM_LIB, d / KCTX_LIB
            if not sim_path.is_file() and (d / (SIM_LIB + ".0")).is_file():  # an install's SONAMEs
                sim_path, kctx_path = d / (SIM_LIB + ".0"), d / (KCTX_LIB + ".0")
            if not sim_path.is_file() or not kctx_path.is_file():
                missing = [p.name for p in (sim_path, kctx_path) if not p.is_file()]
                tried.append(f"{d}: missing {', '.join(missing)}")
                continue
            try:
                sim = ctypes.CDLL(str(sim_path), mode=ctypes.RTLD_GLOBAL)
                kctx = ctypes.CDLL(str(kctx_path), mode=ctypes.RTLD_GLOBAL)
                _bind(sim, SIM_PROTOTYPES)
                _bind(kctx, KCTX_PROTOTYPES)
            except (OSError, AttributeError) as e:
                tried.append(f"{d}: {e}")
                continue
            found = int(kctx.kctx_version())
            if found != LIBRARY_VERSION:
                tried.append(f"{d}: {KCTX_LIB} is version {version_string(found)}, this kctx package "
                             f"is version {version_string(LIBRARY_VERSION)}: use the library built "
                             f"from the same source")
                continue
            _loaded = _Libraries(sim, kctx, d)
            return _loaded
        hint = (
            "set KCTX_LIB_DIR to the CMake build directory that holds libkctx.so and libkctx_sim.so "
            "(for example KCTX_LIB_DIR=$PWD/build after `make build`)"
        )
        raise LibraryNotFound("cannot load the kctx libraries; tried:\n  " + "\n  ".join(tried) + "\n" + hint)


def kctx() -> ctypes.CDLL:
    return load().kctx


_bound_headers: Dict[str, ctypes.CDLL] = {}


def with_prototypes(header: str, table: Dict[str, Tuple[Any, List[Any]]]) -> ctypes.CDLL:
    """libkctx with one platform header's prototypes bound (once per
    header): each platform's module binds its own header's functions
    (kctx.opencl, kctx.cuda). Unsupported when the loaded libkctx predates
    them."""
    lib = _bound_headers.get(header)
    if lib is not None:
        return lib
    lib = load().kctx
    with _lock:
        if header not in _bound_headers:
            try:
                _bind(lib, table)
            except AttributeError as e:
                raise Unsupported(f"{library_dir() / KCTX_LIB} has no {header} functions ({e}): "
                                  f"rebuild it from this source") from None
            _bound_headers[header] = lib
    return lib


def sim() -> ctypes.CDLL:
    return load().sim


def library_dir() -> Path:
    """The directory the libraries were loaded from (loads them if needed)."""
    return load().directory


def decode(s: Optional[bytes]) -> str:
    return s.decode("utf-8", "replace") if s else ""
