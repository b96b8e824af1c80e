"""kctx: kernel contexts for accelerator task graphs, from Python.

A ctypes binding of the public C headers (include/kctx/kctx.h, sim.h,
image.h) — no compiled extension. The native libraries (libkctx.so and
libkctx_sim.so) are found through $KCTX_LIB_DIR, else next to this package,
else in build/ of the source checkout (see docs/python.md).

- ``kctx.Context``: kernel mode (launch onto the caller's stream, check,
  close) and program mode (run); errors raise one exception class per
  status class (``kctx.Busy``, ``kctx.InvalidImage``, ...; base
  ``kctx.KctxError``).
- ``kctx.sim``: the simulated device's runtime API (the framework side:
  devices, streams, events, device memory, capture, graphs, faults).
- ``kctx.image``: the callable image builder and validator.
- ``kctx.platforms()``, ``kctx.platform(name)``, ``kctx.platform_caps(name)``:
  the registry's platforms and their capabilities; ``kctx.Strategy``.
- ``kctx.arm_fault``: kctx's own platform-call faults, on any platform.
- ``kctx.opencl``: lending an OpenCL (PyOpenCL) context, device and queue
  to the ``opencl`` platform (per-thread binding; ``kctx.opencl.Context``).
- ``kctx.cuda``: lending the thread's current CUDA context and a framework's
  streams (PyTorch, CuPy) to the ``cuda`` platform (``kctx.cuda.Context``);
  importing it loads no driver.
- ``kctx.acl``: lending the thread's current NPU and an Ascend framework's
  streams and tensors (torch_npu) to the ``acl`` platform
  (``kctx.acl.Context``); importing it loads no ACL library.
- ``kctx.BaseContext``: what ``kctx.Context``, ``kctx.opencl.Context``,
  ``kctx.cuda.Context`` and ``kctx.acl.Context`` all are (the methods and queries of one context).
"""
from __future__ import annotations

from . import _lib, image, interop

# The platforms' modules (kctx.sim, kctx.opencl, kctx.cuda, kctx.acl): each
# lives in its platform's folder (platform/<name>/python/<name>.py, declared
# by its platform.cmake: PYTHON). A built package (<build>/python, which the
# tests use) and an installed one have them beside this file with the
# generated list _platforms.py; in the source tree (PYTHONPATH=python) they
# are found in the platform folders (docs/platforms.md).
try:
    from ._platforms import *  # noqa: F401,F403
    from ._platforms import __all__ as _platform_names
except ImportError:
    import importlib as _importlib
    from pathlib import Path as _Path

    _platform_names = []
    for _dir in sorted((_Path(__file__).resolve().parents[2] / "platform").glob("*/python")):
        __path__.append(str(_dir))
        for _module in sorted(_dir.glob("*.py")):
            _platform_names.append(_module.stem)
    # the sim first: the others' modules may use it
    _platform_names.sort(key=lambda n: (n != "sim", n))
    for _name in _platform_names:
        globals()[_name] = _importlib.import_module(f".{_name}", __name__)
from ._lib import LibraryNotFound, data_path, library_dir
from .caps import Capabilities, Platform, Strategy, StrategyLike, platform, platform_caps, platforms
from .faults import Fault, PlatformOp, arm_fault, clear_faults, thread_platform_calls
from .interop import Arg, ScalarLike, StreamLike, Tensor, TensorLike
from .context import (
    BaseContext,
    CheckReport,
    Context,
    ErrorSlot,
    Executable,
    Mode,
    Phase,
    PreparedCallable,
    ResourceInfo,
    abandoned_contexts,
    phase_name,
    reclaim_abandoned,
    scalar_f32,
    status_name,
    status_string,
    thread_last_error,
    version,
)
from .errors import (
    EXCEPTION_NAMES,
    STATUS_TABLE,
    Busy,
    Capacity,
    CaptureActive,
    CaptureBroken,
    ConcurrentLaunch,
    DeviceError,
    DeviceLost,
    DuplicateId,
    IncompatibleImage,
    InvalidArgument,
    InvalidHandle,
    InvalidImage,
    InvalidState,
    KctxError,
    KctxTypeError,
    KctxValueError,
    NotFound,
    OutOfMemory,
    PlatformError,
    Poisoned,
    Status,
    Timeout,
    Unsupported,
    UnknownId,
    exception_for,
)

# The one version is the C library's: this package loads only a library of
# its own version (kctx._lib.LIBRARY_VERSION), so this is also the loaded
# library's (kctx.version()).
__version__ = _lib.version_string(_lib.LIBRARY_VERSION)

__all__ = [
    "image", "interop", "Arg", "ScalarLike", "StreamLike", "TensorLike", "LibraryNotFound", "library_dir", "data_path",
    "Capabilities", "Platform", "Strategy", "StrategyLike", "platform", "platform_caps", "platforms",
    "Fault", "PlatformOp", "arm_fault", "clear_faults", "thread_platform_calls",
    "BaseContext", "CheckReport", "Context", "ErrorSlot", "Executable", "Mode", "Phase", "PreparedCallable", "ResourceInfo", "Tensor",
    "abandoned_contexts", "phase_name", "reclaim_abandoned", "scalar_f32", "status_name", "status_string",
    "thread_last_error", "version",
    "KctxError", "KctxTypeError", "KctxValueError", "Status", "STATUS_TABLE", "EXCEPTION_NAMES", "exception_for",
    # one exception class per status class (errors.STATUS_TABLE)
    "InvalidArgument", "InvalidHandle", "InvalidState", "Busy", "Capacity", "DuplicateId", "UnknownId",
    "InvalidImage", "IncompatibleImage", "Unsupported", "CaptureActive", "CaptureBroken", "DeviceLost",
    "Poisoned", "PlatformError", "OutOfMemory", "Timeout", "DeviceError", "ConcurrentLaunch", "NotFound",
]
__all__ += list(_platform_names)
