"""docs/python.md: its complete example runs as written, and every other
Python snippet at least compiles."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import kctx
from conftest import PACKAGE_DIR, REPO

DOC = REPO / "docs" / "python.md"


def _blocks():
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_every_snippet_compiles():
    blocks = _blocks()
    assert len(blocks) >= 2
    for i, code in enumerate(blocks):
        compile(code, f"{DOC}:python block {i}", "exec")


def test_the_complete_example_runs(libdir, kernels_path):
    # A process of its own: a fresh sim, and the example as a user runs it
    # (unclosed contexts would warn: ResourceWarning is made an error).
    env = dict(os.environ, KCTX_LIB_DIR=str(libdir), KCTX_TEST_KERNELS=str(kernels_path),
               PYTHONPATH=str(PACKAGE_DIR), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", _blocks()[0]], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "CheckReport(device_status=<Status.OK: 0>" in r.stdout and r.stdout.rstrip().endswith("ok")


def test_the_complete_example_passes_mypy_strict(tmp_path):
    """Issue 18 item 4: `mypy --strict` on the docs example, which also
    checks the package it imports (python/kctx ships py.typed)."""
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed: run `make deps` (scripts/install-deps.sh lists it)")
    example = tmp_path / "python_md_example.py"
    example.write_text(_blocks()[0])
    env = dict(os.environ, MYPYPATH=str(PACKAGE_DIR))
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                        str(example)], env=env, capture_output=True, text=True,
                       timeout=240, cwd=tmp_path)
    assert r.returncode == 0, f"mypy --strict on docs/python.md's example:\n{r.stdout}\n{r.stderr}"


def _examples():
    """The blocks that start with `# example: NAME` (issue 27: the strategy,
    capability, trace and fault-sweep examples): each is a complete program."""
    out = {}
    for code in _blocks():
        m = re.match(r"# example: ([\w-]+)\n", code)
        if m:
            out[m.group(1)] = code
    return out


EXAMPLES = _examples()


def test_the_issue_27_examples_are_there():
    assert {"strategies", "capabilities", "flush-trace", "opencl-fault-sweep", "cuda", "acl"} <= set(EXAMPLES), \
        sorted(EXAMPLES)


def _needs_opencl(code: str) -> None:
    if "# needs: opencl" not in code:
        return
    pytest.importorskip("pyopencl", reason="pyopencl is not installed: run `make deps`")
    avail = kctx.opencl.availability()
    if not avail.available:
        pytest.skip(f"the opencl platform is not usable here: {avail.reason}")


def _needs_cuda(code: str, env: dict) -> None:
    """`# needs: cuda`: run on the CUDA driver double (tests/python/CMakeLists.txt
    names it when the cuda platform is built)."""
    if "# needs: cuda" not in code:
        return
    double = os.environ.get("KCTX_TEST_CUDA_DOUBLE", "")
    if not double:
        pytest.skip("the cuda platform is not built (no nvcc): no CUDA driver double")
    env["KCTX_CUDA_DRIVER"] = double
    env["KCTX_CUDA_IMAGES"] = os.environ["KCTX_TEST_CUDA_IMAGES"]


def _needs_acl(code: str, env: dict) -> None:
    """`# needs: acl`: run on the ACL driver double (tests/python/CMakeLists.txt
    names it when it is built)."""
    if "# needs: acl" not in code:
        return
    double = os.environ.get("KCTX_TEST_ACL_DOUBLE", "")
    if not double:
        pytest.skip("the acl platform's driver double is not built: KCTX_TEST_ACL_DOUBLE unset")
    env["KCTX_ACL_LIBRARY"] = double
    env["KCTX_ACL_IMAGES"] = os.environ["KCTX_TEST_ACL_IMAGES"]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_runs_as_written(libdir, kernels_path, name):
    code = EXAMPLES[name]
    _needs_opencl(code)
    env = dict(os.environ, KCTX_LIB_DIR=str(libdir), KCTX_TEST_KERNELS=str(kernels_path),
               PYTHONPATH=str(PACKAGE_DIR), PYTHONDONTWRITEBYTECODE="1")
    _needs_cuda(code, env)
    _needs_acl(code, env)
    env.pop("KCTX_STRATEGY", None)
    env.pop("KCTX_PLATFORM", None)
    r = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", code], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"{name}: stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.stdout.rstrip().endswith("ok"), r.stdout


def test_the_examples_pass_mypy_strict(tmp_path):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed: run `make deps` (scripts/install-deps.sh lists it)")
    files = []
    for name, code in EXAMPLES.items():
        f = tmp_path / f"python_md_{name.replace('-', '_')}.py"
        f.write_text(code)
        files.append(str(f))
    env = dict(os.environ, MYPYPATH=str(PACKAGE_DIR))
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                        *files], env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert r.returncode == 0, f"mypy --strict on docs/python.md's examples:\n{r.stdout}\n{r.stderr}"
