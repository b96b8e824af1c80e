# The opencl platform (cmake/Platforms.cmake reads this declaration). It
# loads OpenCL at run time (dlopen): building it needs OpenCL's headers only
# (Debian: opencl-headers). KCTX_OPENCL: AUTO (built when the headers are
# found, the default), ON (required) or OFF.
set(KCTX_OPENCL "AUTO" CACHE STRING "Build the OpenCL platform: AUTO (when CL/cl.h is found), ON or OFF")
find_path(KCTX_OPENCL_INCLUDE_DIR CL/cl.h)
set(kctx_opencl_built FALSE)
if(KCTX_OPENCL STREQUAL "OFF")
  set(kctx_opencl_why "not built into this library (KCTX_OPENCL=OFF)")
elseif(NOT KCTX_OPENCL_INCLUDE_DIR)
  set(kctx_opencl_why "not built into this library: OpenCL's headers (CL/cl.h, Debian "
                      "opencl-headers) were missing at build time")
  string(CONCAT kctx_opencl_why ${kctx_opencl_why})
  if(KCTX_OPENCL STREQUAL "ON")
    message(FATAL_ERROR "KCTX_OPENCL=ON but OpenCL's headers (CL/cl.h) were not found: install "
                        "them (Debian: opencl-headers)")
  endif()
  message(STATUS "kctx: OpenCL headers (CL/cl.h) not found: the opencl platform is not built "
                 "(Debian: opencl-headers)")
else()
  set(kctx_opencl_built TRUE)
  set(kctx_opencl_why "")
endif()

kctx_declare_platform(opencl
  ORDER 20
  BUILT ${kctx_opencl_built}
  NOT_BUILT "${kctx_opencl_why}"
  ENTRY kctx_opencl_platform_entry
  SOURCES adapter.c binding.c test_hold.c cl_api.c cl_errors.c
          ${CMAKE_BINARY_DIR}/kctx_rt_opencl_blob.c ${CMAKE_BINARY_DIR}/kctx_task_abi_opencl_blob.c
  INCLUDES ${KCTX_OPENCL_INCLUDE_DIR}
  NOT_BUILT_SOURCES not_built.c
  FW_DRIVERS opencl=fw_opencl_driver
  FW_SOURCES fw_opencl.c cl_errors.c
  FW_INCLUDES ${KCTX_OPENCL_INCLUDE_DIR} ${CMAKE_CURRENT_LIST_DIR}
  EXPECTED_NA expected_na.inc
  # On the machine's OpenCL (PoCL), through the failing layer in front of the
  # ICD loader (platform/opencl/tests/opencl_fault_layer.c: transparent until a driver
  # sweep arms it; the sweeps need it, KCTX_FAULT_LAYER_REQUIRED). The layer
  # loads libOpenCL.so.1 behind it (KCTX_FAULT_LAYER_UNDER may name another).
  CONFORMANCE host-ordered:_opencl
  CONFORMANCE_ENV KCTX_OPENCL_LIBRARY=$<TARGET_FILE:kctx_opencl_fault_layer>
                  KCTX_FAULT_LAYER_REQUIRED=1
  CONFORMANCE_DEPENDS kctx_opencl_fault_layer
  DEVICE_UNIT "compute units"
  BENCH_PREFIX opencl_
  BENCHMARKS opencl_launch_overhead opencl_dag_dispatch
  # Its public header, tests (and the failing layer the conformance runs
  # load), benchmarks and Python module.
  PUBLIC_HEADERS include/kctx/opencl.h
  TEST_DIRS tests
  BENCH_DIRS bench
  PYTHON python/opencl.py
  # OpenCL C source, built at prepare (format 1.0; declared built or not)
  BINARY_KINDS opencl_c=2:0)

if(kctx_opencl_built)
  # Two OpenCL C sources embedded as bytes: the runtime's device programs
  # and the task ABI every built source starts with.
  foreach(blob "rt_opencl:platform/opencl/rt_programs.cl:kctx_rt_opencl_programs"
               "task_abi_opencl:include/kctx/task_abi_opencl.h:kctx_task_abi_opencl")
    string(REPLACE ":" ";" blob "${blob}")
    list(GET blob 0 stem)
    list(GET blob 1 file)
    list(GET blob 2 symbol)
    add_custom_command(
      OUTPUT ${CMAKE_BINARY_DIR}/kctx_${stem}_blob.c
      COMMAND ${CMAKE_COMMAND} -DIN=${PROJECT_SOURCE_DIR}/${file}
              -DOUT=${CMAKE_BINARY_DIR}/kctx_${stem}_blob.c -DSYMBOL=${symbol}
              -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
      DEPENDS ${PROJECT_SOURCE_DIR}/${file} ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
      VERBATIM)
  endforeach()
endif()
