# The sim platform (cmake/Platforms.cmake reads this declaration): kctx's
# adapter to the simulated accelerator (libkctx_sim, defined by the
# top-level CMakeLists.txt). Always built: the tests and tools run on it.
# Its runtime programs are the shared sim_elf build
# (platform/common/rt_programs_elf.cmake, which the acl platform lists too).
include(${PROJECT_SOURCE_DIR}/platform/common/rt_programs_elf.cmake)
kctx_declare_platform(sim
  ORDER 10
  BUILT TRUE
  ENTRY kctx_sim_platform_entry
  SOURCES adapter.c ${KCTX_RT_ELF_BLOB}
  FW_DRIVERS sim=fw_sim_driver sim-nocapture=fw_sim_driver_without_capture
  FW_SOURCES fw_sim.c
  EXPECTED_NA expected_na.inc
  CONFORMANCE resident: host-ordered:_host_ordered
  CLI_DEVICES kctx_cli_sim_devices
  CLI_SOURCES cli_devices.c
  BENCH_PREFIX ""
  BENCHMARKS launch_overhead launch_allocs replay_protocol replay_vs_eager validate_throughput
             prepare_dedup task_dispatch sim_enqueue context_footprint trace_overhead
             sim_roundtrip growth launch_instructions
  # The simulator's API (sim.h, and sim_kernel.h for the device code of its
  # modules), its own tests (tests/: the runtime API; tests/elf: the module
  # loader), its benchmarks and its Python module.
  PUBLIC_HEADERS include/kctx/sim.h include/kctx/sim_kernel.h
  TEST_DIRS tests tests/elf
  BENCH_DIRS bench
  PYTHON python/sim.py
  # x86-64 ELF shared objects for the simulated accelerator (format 1.0)
  BINARY_KINDS sim_elf=1:0)
