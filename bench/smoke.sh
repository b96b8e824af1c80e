#!/bin/sh
# smoke.sh — how ctest runs a benchmark (bench/CMakeLists.txt, label bench):
#
#   sh smoke.sh [--skip-if REGEX] --expect REGEX [--expect REGEX]... -- BENCHMARK [ARGS...]
#
# Runs the benchmark (its output is passed through) and decides:
#   - exit status non-zero: that status (the benchmark failed; it checks its
#     own work and exits non-zero, without figures, when the work was wrong);
#   - output matching a --skip-if REGEX (a benchmark that cannot measure in
#     this build says so and exits 0): 77, which the tests' SKIP_RETURN_CODE
#     reports as SKIPPED, never as passed;
#   - every --expect REGEX must match a line of the output, else 1. This is
#     how a smoke test requires its headline metric line and enforces the
#     absolute goals (for example "metric launch_allocs value=0 ");
#   - otherwise 0.
# Timings are never asserted. REGEX: an extended regular expression (grep -E).
set -u
skip=""
nexpect=0
while [ $# -gt 0 ]; do
    case "$1" in
    --skip-if) skip="$2"; shift 2 ;;
    --expect) nexpect=$((nexpect + 1)); eval "expect_$nexpect=\$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "smoke.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
if [ $# -eq 0 ] || [ "$nexpect" -eq 0 ]; then
    echo "usage: smoke.sh [--skip-if REGEX] --expect REGEX... -- BENCHMARK [ARGS...]" >&2
    exit 2
fi
out=$(mktemp "${TMPDIR:-/tmp}/kctx-smoke.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
    echo "smoke.sh: $1 exited with status $rc"
    exit "$rc"
fi
if [ -n "$skip" ] && grep -Eq -- "$skip" "$out"; then
    echo "smoke.sh: SKIPPED: $1 could not measure in this build (output matches '$skip')"
    exit 77
fi
failed=0
i=1
while [ "$i" -le "$nexpect" ]; do
    eval "re=\$expect_$i"
    if ! grep -Eq -- "$re" "$out"; then
        echo "smoke.sh: FAILED: no output line matches '$re'"
        failed=1
    fi
    i=$((i + 1))
done
[ "$failed" -eq 0 ] && echo "smoke.sh: every expected line was printed"
exit "$failed"
