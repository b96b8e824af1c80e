/*
 * decl_check.c — the compile-only check of kctx's own ACL declarations
 * (acl_abi.h) against the vendor's prototypes, for a machine with a CANN
 * toolkit (scripts/npu-check.sh item 1; never built in CI: CANN's headers
 * are licensed for Huawei-processor systems only, and none is here).
 *
 * Compiled with -fsyntax-only -Werror=incompatible-pointer-types against
 * CANN's include directory: every typed entry of acl_abi.h is assigned the
 * vendor's function, so a declaration whose return or parameter types
 * differ from the prototype is an error naming the entry; an entry the
 * vendor's headers lack is an error too ("undeclared"), which for an
 * optional entry (KACL_OPTIONAL) is an answer, not a fault: npu-check.sh
 * reports both kinds per entry.
 */
#include <acl/acl.h>

#include "acl_abi.h"

#define KACL_CHECK_(name, ret, params) kacl_fn_##name kacl_check_##name = name;
KACL_REQUIRED(KACL_CHECK_)
KACL_OPTIONAL(KACL_CHECK_)
KACL_NOT_KERNEL_MODE(KACL_CHECK_)
#undef KACL_CHECK_
