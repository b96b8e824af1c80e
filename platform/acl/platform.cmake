# The ACL (Ascend) platform (docs/acl.md; cmake/Platforms.cmake reads the
# declaration). Always built: the adapter (adapter.c) uses kctx's own ACL
# declarations (acl_abi.h), no CANN header, and loads libascendcl.so (or
# KCTX_ACL_LIBRARY) at run time, so `kctx platforms` lists it everywhere,
# unavailable with the loader's reason where no ACL runtime is installed.
# Its runtime programs are the shared sim_elf build
# (platform/common/rt_programs_elf.cmake, which the sim platform lists too):
# they load only on the driver double (platform/acl/double, built on the sim).
include(${PROJECT_SOURCE_DIR}/platform/common/rt_programs_elf.cmake)
kctx_declare_platform(acl
  ORDER 40
  BUILT TRUE
  ENTRY kctx_acl_platform_entry
  SOURCES adapter.c ${KCTX_RT_ELF_BLOB}
  INCLUDES ${CMAKE_CURRENT_LIST_DIR}
  FW_DRIVERS acl=fw_acl_driver
  FW_SOURCES fw_acl.c
  FW_INCLUDES ${CMAKE_CURRENT_LIST_DIR}
  EXPECTED_NA expected_na.inc
  # The real adapter against the ACL driver double (platform/acl/double),
  # with the example images repacked for it, through the failing layer in
  # front of the double (platform/acl/double/fault_layer.c: transparent until
  # a driver sweep arms it; the sweeps need it, KCTX_FAULT_LAYER_REQUIRED),
  # under both strategies.
  CONFORMANCE resident:_acl host-ordered:_acl_host_ordered
  CONFORMANCE_IF kctx_acl_double
  CONFORMANCE_ARGS --images ${PROJECT_BINARY_DIR}/platform/acl/double/images
  CONFORMANCE_ENV KCTX_ACL_LIBRARY=$<TARGET_FILE:kctx_acl_fault_layer>
                  KCTX_FAULT_LAYER_UNDER=$<TARGET_FILE:kctx_acl_double>
                  KCTX_FAULT_LAYER_REQUIRED=1
  CONFORMANCE_DEPENDS kctx_acl_double_images kctx_acl_fault_layer
  LABEL acl
  DEVICE_UNIT "AICore cores"
  # launch_overhead against the ACL calls by hand (platform/acl/bench)
  BENCH_PREFIX acl_
  BENCHMARKS acl_launch_overhead
  # Its driver double and failing layer (double/), tests, benchmarks and
  # Python module (it has no public header: kctx.h's generic API serves it).
  SUPPORT_DIRS double
  TEST_DIRS tests
  BENCH_DIRS bench
  PYTHON python/acl.py
  # an Ascend binary (aclrtBinaryLoadFromData's bytes): format 1.1
  BINARY_KINDS ascend_bin=6:1)
