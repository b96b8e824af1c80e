#!/usr/bin/env bash
# npu-check.sh — the acl platform on a real Ascend NPU with CANN, from a
# build made beforehand (nothing is built or installed here; a few minutes):
# the counterpart of scripts/gpu-check.sh, for a person with an NPU.
#
#   scripts/npu-check.sh [--double] [BUILD_DIR]
#
# Items, one summary line each ("npu-check: ITEM: ..."), full logs in
# $NPU_CHECK_LOGS (default: $OUT/npu-check when $OUT is set, else
# /tmp/npu-check):
#   1. decls     kctx's own ACL declarations (platform/acl/acl_abi.h)
#                compiled against the vendor's prototypes
#                (platform/acl/decl_check.c; needs CANN's headers: set
#                ASCEND_TOOLKIT_HOME, default /usr/local/Ascend/ascend-toolkit/latest)
#   2. rules     the ACL driver double's rule tests replayed against the
#                library (platform/acl/double/kctx_acl_double_rules): on a real
#                libascendcl each line says where the double is wrong
#   3. platforms the acl line of `kctx platforms`
#   4. init      what kernel init says (`kctx probe --platform acl` of one
#                probe): on an NPU, UNSUPPORTED naming kctx's runtime
#                programs is the expected answer (they are built for the sim,
#                not with CANN's compilers; docs/acl.md)
# KCTX_ACL_LIBRARY picks the library (default libascendcl.so). --double is a
# dry run on the ACL driver double (BUILD_DIR/platform/acl/double/libascendcl.so
# with its images): without CANN, item 1 checks the check itself (a stand-in
# header made from acl_abi.h passes; one changed prototype fails), and
# kernel init must succeed; the test suite runs it (npu_check_dry_run). Exit status 0 when no
# item failed.
set -u
DOUBLE=0
if [ "${1:-}" = "--double" ]; then
    DOUBLE=1
    shift
fi
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KCTX=$BUILD/tools/kctx/kctx
RULES=$BUILD/platform/acl/double/kctx_acl_double_rules
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOGS=${NPU_CHECK_LOGS:-${OUT:+$OUT/npu-check}}
LOGS=${LOGS:-/tmp/npu-check}
mkdir -p "$LOGS"
failed=0
say() { printf 'npu-check: %s\n' "$*"; }
run() {
    local name=$1 secs=$2
    shift 2
    timeout "$secs" "$@" >"$LOGS/$name.log" 2>&1
}
last() { grep -E "$2" "$LOGS/$1.log" | tail -1; }

if [ $DOUBLE -eq 1 ]; then
    export KCTX_ACL_LIBRARY=$BUILD/platform/acl/double/libascendcl.so
    IMAGES=$BUILD/platform/acl/double/images
    if [ ! -f "$KCTX_ACL_LIBRARY" ]; then
        say "no ACL driver double at $KCTX_ACL_LIBRARY: build first"
        exit 2
    fi
else
    IMAGES=${NPU_CHECK_IMAGES:-$BUILD/examples/callables}
fi
if [ ! -x "$KCTX" ]; then
    say "no kctx tool at $KCTX: build first (cmake --build $BUILD)"
    exit 2
fi
say "build $BUILD, library ${KCTX_ACL_LIBRARY:-libascendcl.so}, images $IMAGES, logs $LOGS$([ $DOUBLE -eq 1 ] && echo ' (dry run on the double)')"
command -v npu-smi >/dev/null 2>&1 && say "device: $(npu-smi info 2>/dev/null | grep -m1 -E 'Ascend|910|310' | tr -s ' ')"

# 1. the declarations against the vendor's prototypes
CANN=${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}
if [ -f "$CANN/include/acl/acl.h" ]; then
    run decls 60 "${CC:-cc}" -std=c11 -fsyntax-only -Werror=incompatible-pointer-types \
        -I"$CANN/include" -I"$SRC/platform/acl" "$SRC/platform/acl/decl_check.c"
    rc=$?
    n=$(grep -cE "error:.*(kacl_fn_|undeclared)" "$LOGS/decls.log")
    say "decls (rc $rc): $( [ $rc -eq 0 ] && echo 'every declaration matches the vendor prototype' || echo "$n errors name entries that differ or are absent (see $LOGS/decls.log; an absent KACL_OPTIONAL entry is an answer)")"
    [ $rc -eq 0 ] || failed=1
elif [ $DOUBLE -eq 1 ]; then
    # No CANN here: check the check itself. A stand-in acl/acl.h made from
    # acl_abi.h's own entries must pass, and the same with one prototype
    # changed (aclrtGetDevice taking an int64_t *) must fail naming it.
    # This proves the mechanism only, not the declarations.
    mkdir -p "$LOGS/standin/acl"
    {
        printf '#include "acl_abi.h"\n#define D_(name, ret, params) ret name params;\nKACL_SELF_BEGIN\n'
        printf 'KACL_REQUIRED(D_) KACL_OPTIONAL(D_) KACL_NOT_KERNEL_MODE(D_)\n'
    } >"$LOGS/standin/gen.c"
    "${CC:-cc}" -E -P -I"$SRC/platform/acl" "$LOGS/standin/gen.c" |
        sed -n '/KACL_SELF_BEGIN/,$p' | sed 's/KACL_SELF_BEGIN//; s/;/;\n/g' >"$LOGS/standin/decls.h"
    printf '#include <stddef.h>\n#include <stdint.h>\n#include "acl_abi.h"\n#include "decls.h"\n' \
        >"$LOGS/standin/acl/acl.h"
    check=("${CC:-cc}" -std=c11 -fsyntax-only -Werror=incompatible-pointer-types -I"$LOGS/standin"
        -I"$SRC/platform/acl" "$SRC/platform/acl/decl_check.c")
    run decls 60 "${check[@]}"
    ok=$?
    cp "$LOGS/standin/decls.h" "$LOGS/standin/decls.ok"
    sed -i 's/aclrtGetDevice *(int32_t/aclrtGetDevice (int64_t/' "$LOGS/standin/decls.h"
    run decls_mutant 60 "${check[@]}"
    bad=$?
    cp "$LOGS/standin/decls.ok" "$LOGS/standin/decls.h"
    if [ $ok -eq 0 ] && [ $bad -ne 0 ] && grep -q "error:.*kacl_fn_aclrtGetDevice" "$LOGS/decls_mutant.log"; then
        say "decls: no CANN headers here; the check itself works: a stand-in of acl_abi.h's own prototypes passes, one changed prototype fails naming aclrtGetDevice (mechanism only)"
    else
        say "decls: the check does not work (stand-in rc $ok, changed-prototype rc $bad; logs decls*.log)"
        failed=1
    fi
else
    say "decls: FAILED: no CANN headers at $CANN/include/acl/acl.h (set ASCEND_TOOLKIT_HOME)"
    failed=1
fi

# 2. the double's rule tests against this library
if [ -x "$RULES" ]; then
    run rules 120 "$RULES"
    rc=$?
    say "rules (rc $rc): $(last rules 'passed, ')"
    grep -E '^(FAIL|observed)' "$LOGS/rules.log" | head -20 | while read -r l; do say "rules: $l"; done
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || failed=1
else
    say "rules: SKIPPED: no $RULES"
    failed=1
fi

# 3. the registry's answer
run platforms 30 "$KCTX" platforms
say "platforms: $(last platforms '^platform acl')"
grep -Eq '^platform acl +built' "$LOGS/platforms.log" || failed=1

# 4. what kernel init says (one probe: init, prepare, one launch)
run init 120 "$KCTX" probe --platform acl --images "$IMAGES" --only vector_add_matches_host_reference
rc=$?
say "init (rc $rc): $(last init '^probe |error|UNSUPPORTED' | cut -c1-300)"
if [ $DOUBLE -eq 1 ]; then
    [ $rc -eq 0 ] || failed=1
fi

if [ $failed -eq 0 ]; then say "ALL PASSED"; else say "SOMETHING FAILED (logs in $LOGS)"; fi
exit $failed
