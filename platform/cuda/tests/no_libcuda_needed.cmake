# cmake -DLIB=<libkctx.so> -P no_libcuda_needed.cmake
# The cuda platform loads the driver at run time (dlopen): libkctx must have
# no NEEDED entry for libcuda, so that it loads on a machine without one.
execute_process(COMMAND readelf -d ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${out}")
message("${LIB}: ${needed}")
if(out MATCHES "NEEDED\\)[^\n]*libcuda")
  message(FATAL_ERROR "${LIB} has a NEEDED entry for libcuda: the driver must be dlopen'd")
endif()
if(NOT out MATCHES "NEEDED\\)[^\n]*libc\\.so")
  message(FATAL_ERROR "${LIB}: no NEEDED entries read (the check would be vacuous)")
endif()
message("1 passed, 0 failed")
