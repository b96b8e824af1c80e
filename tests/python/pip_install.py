#!/usr/bin/env python3
"""`pip install ./python` in a fresh virtual environment, as a new user does
(issue 16): the wheel build (scikit-build-core driving CMake) bundles the
libraries, the kctx tool and the example data, and everything works with no
environment variable:

  1. `import kctx` loads the bundled libraries (kctx.library_dir() is inside
     the venv), and kctx.__version__ == kctx.version();
  2. `kctx --version` (the venv's console script) says the same version;
  3. `python -m kctx platforms` runs the bundled tool;
  4. docs/python.md's complete example runs as written;
  5. `kctx demo` finds its images in the install and passes.

usage: pip_install.py REPO WORKDIR   (needs PyPI for scikit-build-core)
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}\n{detail}")


def main():
    repo, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py, kctx_cmd = venv / "bin" / "python", venv / "bin" / "kctx"
    # a user's environment: none of the test suite's variables
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KCTX_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                        str(repo / "python")], env=env, cwd=work, capture_output=True, text=True, timeout=1500)
    check(r.returncode == 0, "pip install ./python in a fresh venv", r.stdout[-4000:] + r.stderr[-4000:])
    if r.returncode != 0:
        print(f"{passed} passed, {failed} failed")
        return 1

    r = subprocess.run([str(py), "-c", "import kctx; print(kctx.__version__); print(kctx.version()); "
                        "print(kctx.library_dir())"], env=env, cwd=work, capture_output=True, text=True,
                       timeout=120)
    lines = r.stdout.split()
    check(r.returncode == 0 and len(lines) == 3 and lines[0] == lines[1],
          "kctx.__version__ == kctx.version()", r.stdout + r.stderr)
    check(r.returncode == 0 and len(lines) == 3 and lines[2].startswith(str(venv)),
          "the libraries are the install's, not a build tree's", r.stdout + r.stderr)
    version = lines[0] if lines else "?"

    # every platform's module (platform/<name>/python, cmake/Install.cmake)
    # is in the installed package, as kctx.<name>, and loads from the venv
    want = sorted(p.parent.parent.name for p in (repo / "platform").glob("*/python/*.py"))
    r = subprocess.run([str(py), "-c", "import kctx, kctx._platforms as p; "
                        "print(' '.join(sorted(p.__all__))); "
                        "print(all(getattr(kctx, n).__file__.startswith(kctx.__path__[0]) for n in p.__all__))"],
                       env=env, cwd=work, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and r.stdout.split("\n")[:2] == [" ".join(want), "True"],
          f"the platforms' modules are installed ({' '.join(want)})", r.stdout + r.stderr)

    r = subprocess.run([str(kctx_cmd), "--version"], env=env, cwd=work, capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == f"kctx {version}", "kctx --version agrees",
          r.stdout + r.stderr)

    r = subprocess.run([str(py), "-m", "kctx", "platforms"], env=env, cwd=work, capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0 and "platform sim" in r.stdout, "python -m kctx platforms", r.stdout + r.stderr)

    doc = (repo / "docs" / "python.md").read_text()
    example = doc.split("```python\n", 1)[1].split("```", 1)[0]
    r = subprocess.run([str(py), "-W", "error::ResourceWarning", "-c", example], env=env, cwd=work,
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0 and r.stdout.rstrip().endswith("ok"), "docs/python.md's example runs",
          r.stdout[-3000:] + r.stderr[-3000:])

    r = subprocess.run([str(kctx_cmd), "demo", "--requests", "5", "--out", str(work / "demo")], env=env,
                       cwd=work, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and "result        PASS" in r.stdout, "kctx demo from the install",
          r.stdout[-3000:] + r.stderr[-3000:])
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
