# The CUDA platform (docs/cuda.md; cmake/Platforms.cmake reads the
# declaration at the end): built when nvcc and cuda.h are found.
#
# The adapter (platform/cuda/adapter.c) reaches the driver only through
# dlopen at run time, so the build needs no libcuda: cuda.h for types, and
# nvcc to compile the runtime's device programs (platform/cuda/rt_programs.cu)
# into a fatbin embedded in libkctx. Without nvcc the platform is not built
# and the registry says why (KCTX_CUDA_NOT_BUILT below). The adapter sees
# cuda.h for types only: the driver is loaded at run time (no libcuda at
# link time, no NEEDED entry).
#
# KCTX_CUDA: AUTO (build it when nvcc is found), ON (required), OFF.
# Sets: KCTX_CUDA_BUILT (bool), KCTX_CUDA_INCLUDE_DIR, KCTX_CUDA_NOT_BUILT
# (the reason, when not built), target kctx_rt_cuda_fatbin and the source
# ${CMAKE_BINARY_DIR}/kctx_rt_cuda_blob.c.
set(KCTX_CUDA "AUTO" CACHE STRING "Build the CUDA platform: AUTO (when nvcc is found), ON or OFF")
set(KCTX_CUDA_BUILT FALSE)
set(KCTX_CUDA_NOT_BUILT "")
if(KCTX_CUDA STREQUAL "OFF")
  set(KCTX_CUDA_NOT_BUILT "not built into this library (KCTX_CUDA=OFF)")
endif()
if(NOT KCTX_CUDA STREQUAL "OFF")
find_program(KCTX_NVCC nvcc HINTS $ENV{CUDA_HOME}/bin /usr/local/cuda/bin)
if(KCTX_NVCC)
  get_filename_component(_nvcc_bin ${KCTX_NVCC} DIRECTORY)
  get_filename_component(_cuda_root ${_nvcc_bin} DIRECTORY)
endif()
find_path(KCTX_CUDA_INCLUDE_DIR cuda.h HINTS ${_cuda_root}/include $ENV{CUDA_HOME}/include
          /usr/local/cuda/include NO_DEFAULT_PATH)
if(NOT KCTX_NVCC OR NOT KCTX_CUDA_INCLUDE_DIR)
  set(KCTX_CUDA_NOT_BUILT
      "not built into this library: nvcc and cuda.h were not found when it was built (the "
      "runtime's device programs are CUDA C compiled by nvcc)")
  string(CONCAT KCTX_CUDA_NOT_BUILT ${KCTX_CUDA_NOT_BUILT})
  if(KCTX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KCTX_CUDA=ON but nvcc or cuda.h was not found")
  endif()
  message(STATUS "kctx: the CUDA platform is not built (nvcc or cuda.h not found)")
else()
set(KCTX_CUDA_BUILT TRUE)
message(STATUS "kctx: the CUDA platform is built (nvcc ${KCTX_NVCC}, cuda.h in ${KCTX_CUDA_INCLUDE_DIR})")

# Every real architecture this toolkit supports from sm_75 on (nvcc
# --list-gpu-code), plus PTX of the newest for later GPUs. (CUDA 13 dropped
# everything below sm_75.)
execute_process(COMMAND ${KCTX_NVCC} --list-gpu-code OUTPUT_VARIABLE _codes ERROR_QUIET)
string(REGEX MATCHALL "sm_[0-9]+" _codes "${_codes}")
set(_archs "")
foreach(c IN LISTS _codes)
  string(REPLACE "sm_" "" a ${c})
  if(a GREATER_EQUAL 75)
    list(APPEND _archs ${a})
  endif()
endforeach()
list(REMOVE_DUPLICATES _archs)
list(SORT _archs COMPARE NATURAL)
if(NOT _archs)
  set(_archs 75 80 86 89 90)
endif()
set(KCTX_CUDA_ARCHS "${_archs}" CACHE STRING "SM architectures of the CUDA fatbins (default: every one nvcc supports from sm_75)")
# kctx_cuda_gencode(<var>): nvcc's -gencode options for every fatbin of the
# build: real code for each of KCTX_CUDA_ARCHS, plus PTX of the newest.
function(kctx_cuda_gencode var)
  set(opts "")
  foreach(a IN LISTS KCTX_CUDA_ARCHS)
    list(APPEND opts -gencode arch=compute_${a},code=sm_${a})
  endforeach()
  list(GET KCTX_CUDA_ARCHS -1 ptx)
  list(APPEND opts -gencode arch=compute_${ptx},code=compute_${ptx})
  set(${var} ${opts} PARENT_SCOPE)
endfunction()
kctx_cuda_gencode(_gencode)
set(_fatbin ${CMAKE_BINARY_DIR}/kctx_rt_cuda.fatbin)
add_custom_command(
  OUTPUT ${_fatbin}
  COMMAND ${KCTX_NVCC} --fatbin -std=c++17 -O3 ${_gencode}
          -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/platform/cuda/include
          -o ${_fatbin} ${PROJECT_SOURCE_DIR}/platform/cuda/rt_programs.cu
  DEPENDS ${PROJECT_SOURCE_DIR}/platform/cuda/rt_programs.cu ${PROJECT_SOURCE_DIR}/include/kctx/rt_layout.h
          ${PROJECT_SOURCE_DIR}/include/kctx/task_abi.h ${PROJECT_SOURCE_DIR}/platform/cuda/include/kctx/cuda.h
  COMMENT "nvcc: the runtime's device programs for CUDA (fatbin: sm_${KCTX_CUDA_ARCHS} + PTX)"
  VERBATIM)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/kctx_rt_cuda_blob.c
  COMMAND ${CMAKE_COMMAND} -DIN=${_fatbin} -DOUT=${CMAKE_BINARY_DIR}/kctx_rt_cuda_blob.c
          -DSYMBOL=kctx_rt_cuda_programs -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
  DEPENDS ${_fatbin} ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
  VERBATIM)
add_custom_target(kctx_rt_cuda_fatbin DEPENDS ${_fatbin})
set(KCTX_RT_CUDA_FATBIN ${_fatbin})
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/adapter.c PROPERTIES
  INCLUDE_DIRECTORIES "${KCTX_CUDA_INCLUDE_DIR}")
endif()
endif()

kctx_declare_platform(cuda
  ORDER 30
  BUILT ${KCTX_CUDA_BUILT}
  NOT_BUILT "${KCTX_CUDA_NOT_BUILT}"
  ENTRY kctx_cuda_platform_entry
  SOURCES adapter.c ${CMAKE_BINARY_DIR}/kctx_rt_cuda_blob.c
  NOT_BUILT_SOURCES not_built.c
  FW_DRIVERS cuda=fw_cuda_driver
  FW_SOURCES fw_cuda.c
  FW_INCLUDES ${KCTX_CUDA_INCLUDE_DIR} ${CMAKE_CURRENT_LIST_DIR}
  EXPECTED_NA expected_na.inc
  # The real adapter against the CUDA driver double (platform/cuda/double),
  # with the example images repacked for it, through the failing layer in
  # front of the double (platform/cuda/double/fault_layer.c: transparent until
  # a driver sweep arms it; the sweeps need it, KCTX_FAULT_LAYER_REQUIRED).
  CONFORMANCE host-ordered:_cuda
  CONFORMANCE_IF kctx_cuda_double
  CONFORMANCE_ARGS --images ${PROJECT_BINARY_DIR}/platform/cuda/double/images
  CONFORMANCE_ENV KCTX_CUDA_DRIVER=$<TARGET_FILE:kctx_cuda_fault_layer>
                  KCTX_FAULT_LAYER_UNDER=$<TARGET_FILE:kctx_cuda_double>
                  KCTX_FAULT_LAYER_REQUIRED=1
  CONFORMANCE_DEPENDS kctx_cuda_double_images kctx_cuda_fault_layer
  DEVICE_UNIT "multiprocessors"
  # launch_overhead against the driver calls by hand (platform/cuda/bench)
  BENCH_PREFIX cuda_
  BENCHMARKS cuda_launch_overhead
  # Everything else of the platform is in this folder too: its public
  # header, its driver double and failing layer (double/), its tests,
  # benchmarks and Python module.
  PUBLIC_HEADERS include/kctx/cuda.h
  SUPPORT_DIRS double
  TEST_DIRS tests
  BENCH_DIRS bench
  PYTHON python/cuda.py
  # fat binary, cubin, PTX (format 1.0; declared built or not)
  BINARY_KINDS cuda_fatbin=3:0 cuda_cubin=4:0 cuda_ptx=5:0)
