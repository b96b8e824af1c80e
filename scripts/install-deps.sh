#!/usr/bin/env bash
# Install what kctx needs to build, test and benchmark on Debian 12.
#
# Idempotent: every package is checked with dpkg-query first and only the
# missing ones are installed ('apt-get update' runs only when something must
# be installed). Prints one line per action.
#
# Runs as root, or through sudo when it exists. With neither, it prints what
# is missing and exits 3 (the build may still work; `make` treats 3 as a
# warning and will try again next time).
#
# Exit status: 0 everything present (or installed now); 3 something missing
# that could not be installed (only optional packages, or no privileges);
# 1 a required package could not be installed.
set -uo pipefail

log() { printf 'install-deps: %s\n' "$*"; }

# Required to configure, build and test.
#  build-essential  gcc, make, libc headers
#  cmake, ninja-build
#  clang, libclang-rt-14-dev   CC=clang builds and clang's sanitizer/libFuzzer runtimes
#  binutils         the linker script that keeps sanitizer init arrays out of kernel modules
#  python3          the CLI tests and the Python binding
#  libyaml-dev      the manifest parser of `kctx pack` (a well-kept YAML library)
#  libjansson-dev   the trace reader of `kctx trace` (a well-kept JSON library; tool only, not libkctx)
#  clang-format     `make format-check`, part of `make test` (version 14 on Debian 12)
#  opencl-headers   builds the opencl platform (libkctx loads OpenCL at run time:
#                   headers only at build time)
#  pocl-opencl-icd, ocl-icd-opencl-dev   a real OpenCL driver (PoCL, CPU) and the ICD
#                   loader: the opencl platform's tests (conformance, demo, Python)
#                   and the benchmarks' OpenCL baselines run on them
#  librsvg2-bin     rsvg-convert: `kctx trace render -o FILE.png` (a PNG of the swimlane picture)
#  valgrind         callgrind and valgrind/callgrind.h: the launch_instructions benchmark
#                   (instruction counts of a launch; without it "not measured")
REQUIRED_DEBS=(build-essential cmake ninja-build clang libclang-rt-14-dev binutils python3 libyaml-dev libjansson-dev clang-format
               opencl-headers pocl-opencl-icd ocl-icd-opencl-dev librsvg2-bin valgrind)
# Optional: the build and the tests pass without them.
OPTIONAL_DEBS=()

# PyPI packages, as "import_name=requirement" (pytest runs tests/python). They are
# installed with the python3 found on PATH (pyenv's on the project machines).
PYPI_PACKAGES=("pytest=pytest" "mypy=mypy")
# Optional PyPI packages: the tests that need them skip with the reason.
#  numpy, pyopencl   the Python tests that use a real framework's objects
#                    (PyOpenCL on PoCL, the OpenCL driver above) and numpy arrays
#  nvidia-cuda-cuobjdump   cuobjdump, for the check that the CUDA fatbins hold
#                    every kernel for every architecture (platform/cuda/tests)
PYPI_OPTIONAL=("numpy=numpy" "pyopencl=pyopencl" "nvidia.cu13=nvidia-cuda-cuobjdump")

deb_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = "installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    log "not a Debian system (no dpkg-query/apt-get): skipping system packages"
    log "needed: ${REQUIRED_DEBS[*]} (optional: ${OPTIONAL_DEBS[*]})"
    exit 3
fi

missing_req=()
missing_opt=()
for p in "${REQUIRED_DEBS[@]}"; do deb_installed "$p" || missing_req+=("$p"); done
for p in "${OPTIONAL_DEBS[@]}"; do deb_installed "$p" || missing_opt+=("$p"); done
# pip only when no python3 on PATH already has one (pyenv's does).
if ! python3 -m pip --version >/dev/null 2>&1 && ! deb_installed python3-pip; then
    missing_req+=(python3-pip)
fi

status=0
if [ ${#missing_req[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then
    log "all Debian packages present"
else
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO=(sudo)
        else
            log "not root and no sudo: cannot install missing packages"
            [ ${#missing_req[@]} -gt 0 ] && log "missing (required): ${missing_req[*]}"
            [ ${#missing_opt[@]} -gt 0 ] && log "missing (optional): ${missing_opt[*]}"
            all=("${missing_req[@]}" "${missing_opt[@]}")
            log "continuing; as root run: apt-get install ${all[*]}"
            exit 3
        fi
    fi
    # apt's and dpkg's chatter goes to a log, shown only when a step fails.
    aptlog=$(mktemp "${TMPDIR:-/tmp}/kctx-install-deps.XXXXXX")
    trap 'rm -f "$aptlog"' EXIT
    apt_get() {
        if "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$aptlog" 2>&1; then
            return 0
        fi
        sed 's/^/  apt: /' "$aptlog"
        return 1
    }
    log "apt-get update"
    if ! apt_get update -qq; then
        log "apt-get update failed; trying to install from the current package lists"
    fi
    all=("${missing_req[@]}" "${missing_opt[@]}")
    log "installing: ${all[*]}"
    if apt_get install -y -qq --no-install-recommends "${all[@]}"; then
        log "installed: ${all[*]}"
    else
        # Retry the required ones alone so that an unavailable optional
        # package does not block the build.
        if [ ${#missing_req[@]} -gt 0 ]; then
            log "retrying required packages only: ${missing_req[*]}"
            if ! apt_get install -y -qq --no-install-recommends "${missing_req[@]}"; then
                log "ERROR: could not install required packages: ${missing_req[*]}"
                exit 1
            fi
            log "installed: ${missing_req[*]}"
        fi
        still=()
        for p in "${missing_opt[@]}"; do deb_installed "$p" || still+=("$p"); done
        if [ ${#still[@]} -gt 0 ]; then
            log "WARNING: optional packages not installed: ${still[*]}"
            status=3
        fi
    fi
fi

# ---- PyPI packages -------------------------------------------------------
# Add entries to PYPI_PACKAGES above; this installs those whose module does
# not import. pyenv's python (the project machines) takes a plain --user
# install; Debian's own python3 is "externally managed" (PEP 668) and needs
# --break-system-packages for a --user install.
if [ ${#PYPI_PACKAGES[@]} -eq 0 ]; then
    log "no PyPI packages needed"
else
    pip_flags=(--user --quiet --disable-pip-version-check)
    if python3 -c 'import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)' 2>/dev/null; then
        pip_flags+=(--break-system-packages)
    fi
    for entry in "${PYPI_PACKAGES[@]}" "${PYPI_OPTIONAL[@]}"; do
        mod=${entry%%=*}
        req=${entry#*=}
        optional=0
        for o in "${PYPI_OPTIONAL[@]}"; do [ "$o" = "$entry" ] && optional=1; done
        if python3 -c "import $mod" >/dev/null 2>&1; then
            log "python module $mod present"
        else
            log "pip install $req"
            if ! python3 -m pip install "${pip_flags[@]}" "$req"; then
                if [ "$optional" -eq 1 ]; then
                    log "WARNING: optional pip install $req failed (its tests skip)"
                    status=3
                else
                    log "ERROR: pip install $req failed"
                    exit 1
                fi
            fi
        fi
    done
fi

exit "$status"
