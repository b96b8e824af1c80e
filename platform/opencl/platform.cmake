# The opencl platform (included by the top-level CMakeLists.txt when
# KCTX_PLATFORMS lists opencl): the loader of OpenCL's entry points, and two
# OpenCL C sources embedded as bytes: the runtime's device programs and the
# task ABI every built source starts with.
if(NOT KCTX_OPENCL_INCLUDE_DIR)
  message(FATAL_ERROR "KCTX_PLATFORMS lists opencl but OpenCL's headers (CL/cl.h) were not "
                      "found: install them (Debian: opencl-headers) or leave opencl out")
endif()
list(APPEND KCTX_PLATFORM_SOURCES platform/opencl/binding.c platform/opencl/test_hold.c
     platform/opencl/cl_api.c platform/opencl/cl_errors.c
     ${CMAKE_CURRENT_BINARY_DIR}/kctx_rt_opencl_blob.c
     ${CMAKE_CURRENT_BINARY_DIR}/kctx_task_abi_opencl_blob.c)
list(APPEND KCTX_PLATFORM_INCLUDES ${KCTX_OPENCL_INCLUDE_DIR})
foreach(blob "rt_opencl:platform/opencl/rt_programs.cl:kctx_rt_opencl_programs"
             "task_abi_opencl:include/kctx/task_abi_opencl.h:kctx_task_abi_opencl")
  string(REPLACE ":" ";" blob "${blob}")
  list(GET blob 0 stem)
  list(GET blob 1 file)
  list(GET blob 2 symbol)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/kctx_${stem}_blob.c
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_CURRENT_SOURCE_DIR}/${file}
            -DOUT=${CMAKE_CURRENT_BINARY_DIR}/kctx_${stem}_blob.c -DSYMBOL=${symbol}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/EmbedFile.cmake
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${file} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/EmbedFile.cmake
    VERBATIM)
endforeach()
