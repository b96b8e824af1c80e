"""pytest configuration of the Python binding's tests.

The package under test is the build's (<build>/python: python/kctx with
each platform's module, cmake/Python.cmake), named by $KCTX_PYTHON_DIR
(the ctest registration sets it), else the source tree's (python/: its
__init__ finds the platforms' modules in their folders); put first on
sys.path. The native libraries come from $KCTX_LIB_DIR (the ctest
registration sets it to the build directory) or the package's own search
(docs/python.md); the sim test kernels from $KCTX_TEST_KERNELS, else
<library dir>/examples/sim_test_kernels.so.

Every test ends by proving clean teardown (the autouse fixture
`clean_device`): no abandoned context, sim objects and device allocations
back to their baseline on every device, no fault armed, no hold left, the
calling thread back on device 0.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(os.environ.get("KCTX_PYTHON_DIR") or REPO / "python")


def header(name: str) -> Path:
    """A public header by name (kctx.h, sim.h, opencl.h ...): the core's are
    in include/kctx, each platform's in platform/<name>/include/kctx."""
    for d in [REPO / "include" / "kctx", *sorted(REPO.glob("platform/*/include/kctx"))]:
        if (d / name).is_file():
            return d / name
    raise FileNotFoundError(f"no public header {name} in include/kctx or platform/*/include/kctx")
sys.path.insert(0, str(PACKAGE_DIR))

import kctx  # noqa: E402
from kctx import sim  # noqa: E402


def pytest_sessionstart(session):
    # Not a skip: a run that cannot load the libraries has failed, once, clearly.
    try:
        kctx.library_dir()
    except kctx.LibraryNotFound as e:
        pytest.exit(f"kctx Python tests: {e}", returncode=1)


def pytest_report_header(config):
    try:
        where = kctx.library_dir()
    except kctx.LibraryNotFound as e:
        return f"kctx: libraries NOT FOUND ({e})"
    return f"kctx: package {Path(kctx.__file__).parent}, libraries {where}"


@pytest.fixture(scope="session")
def libdir() -> Path:
    return kctx.library_dir()


@pytest.fixture(scope="session")
def kernels_path(libdir) -> Path:
    env = os.environ.get("KCTX_TEST_KERNELS")
    path = Path(env) if env else libdir / "examples" / "sim_test_kernels.so"
    if not path.is_file():
        pytest.fail(f"sim test kernels not found at {path} (build the tree, or set KCTX_TEST_KERNELS)")
    return path


@pytest.fixture(scope="session")
def kernel_bytes(kernels_path) -> bytes:
    return kernels_path.read_bytes()


def _snapshot():
    n = sim.device_count()
    return {d: (sim.object_counts(d), sim.mem_stats(d)) for d in range(n)}


@pytest.fixture(autouse=True)
def clean_device():
    if sim.get_device() != 0:
        sim.set_device(0)
    before = _snapshot()
    yield
    sim.clear_faults()
    kctx.clear_faults()  # kctx's own seam faults (kctx.arm_fault)
    sim.release_all_holds()
    if sim.get_device() != 0:
        sim.set_device(0)
    leaked = kctx.reclaim_abandoned()
    for c in leaked:  # keep later tests usable, then fail this one
        try:
            c.close()
            c.destroy()
        except kctx.KctxError:
            pass
    assert not leaked, f"{len(leaked)} context(s) were left unclosed"
    after = _snapshot()
    assert after == before, f"sim objects or device memory leaked:\n before {before}\n after  {after}"
