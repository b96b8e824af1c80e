#!/usr/bin/env bash
# gpu-check.sh — the cuda platform on a real GPU, from a build made
# beforehand (nothing is built or installed here; under 4 minutes):
#
#   scripts/gpu-check.sh [BUILD_DIR [IMAGES_DIR]]
#
# BUILD_DIR (default: build) holds tools/kctx/kctx, platform/cuda/tests/kctx_test_cuda
# and platform/cuda/tests/kctx_cuda_facts. IMAGES_DIR holds callable images whose
# cuda_fatbin variants are real CUDA kernels (default: BUILD_DIR's
# examples/callables/cuda, the examples with their CUDA C kernels,
# examples/callables/kernels/*.cu). KCTX_CUDA_DRIVER picks the driver (default libcuda.so.1); point it at
# build/platform/cuda/double/libcuda.so.1 (with IMAGES_DIR
# build/platform/cuda/double/images) to rehearse without a GPU.
#
# Prints one summary line per item ("gpu-check: ITEM: ..."); full logs go
# to $GPU_CHECK_LOGS (default: $OUT/gpu-check when $OUT is set, else
# /tmp/gpu-check). Items: the platform line of `kctx platforms`, `kctx probe
# --platform cuda`, `kctx demo --platform cuda`, `kctx bench --platform cuda
# --quick`, the adapter's driver-call counts over a kernel lifecycle (K4,
# K19), and three CUDA facts (K21 isolation 905, K25 user-object destructor
# timing, K36 cuCtxGetId across a primary-context reset). Exit status 0
# when every item passed.
set -u
BUILD=${1:-build}
KCTX=$BUILD/tools/kctx/kctx
if [ -n "${2:-}" ]; then
    IMAGES=$2
else
    IMAGES=$BUILD/examples/callables/cuda
fi
# The build's libraries wherever the build directory now is (its RUNPATH
# names the directory it was built in).
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOGS=${GPU_CHECK_LOGS:-${OUT:+$OUT/gpu-check}}
LOGS=${LOGS:-/tmp/gpu-check}
mkdir -p "$LOGS"
failed=0

say() { printf 'gpu-check: %s\n' "$*"; }
# run NAME SECONDS CMD...: the log in $LOGS/NAME.log; returns the exit status
run() {
    local name=$1 secs=$2
    shift 2
    timeout "$secs" "$@" >"$LOGS/$name.log" 2>&1
}
last() { grep -E "$2" "$LOGS/$1.log" | tail -1; }

if [ ! -x "$KCTX" ]; then
    say "no kctx tool at $KCTX: build first (cmake --build $BUILD)"
    exit 2
fi
# The tool needs libyaml and libjansson; where they are missing, the probe
# runs through the conformance runner instead (no such dependency) and the
# tool's items report why they could not run.
if ! "$KCTX" --help >/dev/null 2>&1; then
    say "the kctx tool does not run here: $("$KCTX" --help 2>&1 | head -1)"
fi
say "build $BUILD, images $IMAGES, driver ${KCTX_CUDA_DRIVER:-libcuda.so.1}, logs $LOGS"
command -v nvidia-smi >/dev/null 2>&1 &&
    say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

# 1. the registry's answer
run platforms 20 "$KCTX" platforms
say "platforms: $(last platforms '^platform cuda')"
grep -Eq '^platform cuda +built +available' "$LOGS/platforms.log" || failed=1

# 2. the conformance suite (HOST_ORDERED, the platform's default)
# (on a real driver: 29 passed, 0 failed, 24 not applicable expected (the
# nine probes of updatable launches among them: RESIDENT-only so far),
# docs/cuda.md)
if "$KCTX" --help >/dev/null 2>&1; then
    run probe 120 "$KCTX" probe --platform cuda --images "$IMAGES"
else
    run probe 120 "$BUILD/tests/conformance/kctx_conformance" --platform cuda --images "$IMAGES"
fi
rc=$?
say "probe (rc $rc): $(last probe '^probes:|error')"
[ $rc -eq 0 ] || failed=1

# 3. the serving demo
run demo 60 "$KCTX" demo --platform cuda --images "$IMAGES" --requests 100 --out "$LOGS/demo"
rc=$?
say "demo (rc $rc): $(last demo 'result|lifecycle|error' | tr -s ' ')"
[ $rc -eq 0 ] || failed=1

# 4. the benchmarks of the platform (cuda_launch_overhead: kctx's launch
# against the same driver calls by hand, docs/benchmarks.md)
run bench 120 "$KCTX" bench --platform cuda --quick
rc=$?
say "bench (rc $rc): $(grep -E '^metric ' "$LOGS/bench.log" | tr '\n' ';' | cut -c1-400) $(tail -1 "$LOGS/bench.log")"
[ $rc -eq 0 ] || failed=1

# 5. the adapter's own counters over a whole lifecycle (K4, K19)
if [ -x "$BUILD/platform/cuda/tests/kctx_test_cuda" ]; then
    run counts 60 "$BUILD/platform/cuda/tests/kctx_test_cuda" lifecycle "$IMAGES"
    rc=$?
    say "counts (rc $rc): $(last counts 'passed, ') | $(last counts '^adapter calls' | cut -c1-400)"
    [ $rc -eq 0 ] || failed=1
else
    say "counts: SKIPPED: no $BUILD/platform/cuda/tests/kctx_test_cuda"
    failed=1
fi

# 6. three facts of the driver
if [ -x "$BUILD/platform/cuda/tests/kctx_cuda_facts" ]; then
    run facts 60 "$BUILD/platform/cuda/tests/kctx_cuda_facts"
    rc=$?
    for f in 1 2 3; do say "$(last facts "^fact $f ")"; done
    [ $rc -eq 0 ] || failed=1
else
    say "facts: SKIPPED: no $BUILD/platform/cuda/tests/kctx_cuda_facts"
    failed=1
fi

if [ $failed -eq 0 ]; then say "ALL PASSED"; else say "SOMETHING FAILED (logs in $LOGS)"; fi
exit $failed
