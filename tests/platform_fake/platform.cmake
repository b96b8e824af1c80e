# The fake platform (tests only): a platform declared only in this folder,
# which the top-level build never reads (it is not under platform/). Its
# test (CMakeLists.txt here) generates the registry, the conformance run
# list and the tool's lists with it added, builds libkctx, the suite and the
# kctx tool over them, and checks that they list it and run probes on it:
# adding a platform is writing its folder (docs/platforms.md, "How to add a
# platform"). The adapter is the sim's ops under another name. Like a
# platform under platform/, it has a public header (include/kctx/fake.h),
# a test folder (tests/) and a benchmark (bench/), all in this folder.
# It loads the sim's binary kind (sim_elf) and declares no BINARY_KINDS of
# its own.
kctx_declare_platform(fake
  ORDER 90
  BUILT TRUE
  ENTRY kctx_fake_platform_entry
  SOURCES adapter.c
  FW_DRIVERS fake=fw_fake_driver
  FW_SOURCES fw_fake.c
  EXPECTED_NA expected_na.inc
  CONFORMANCE resident:_fake host-ordered:_fake_host_ordered
  LABEL fake
  DEVICE_UNIT "fake cores"
  BENCH_PREFIX fake_
  BENCHMARKS fake_caps_query
  # its public header, its test folder and its benchmark folder
  PUBLIC_HEADERS include/kctx/fake.h
  TEST_DIRS tests
  BENCH_DIRS bench)
