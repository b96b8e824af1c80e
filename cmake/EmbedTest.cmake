# The ctest entry embed_install (examples/CMakeLists.txt), run with cmake -P:
# installs the build into a fresh prefix under WORK, then builds and runs
# examples/embed against it both ways — pkg-config (examples/embed/Makefile)
# and find_package(kctx) (examples/embed/CMakeLists.txt) — and runs the
# installed tool's demo, which must find its images in <prefix>/share/kctx.
#   -DBUILD=<build dir> -DSRC=<source dir> -DWORK=<scratch dir>
#   -DCC=<C compiler> -DGENERATOR=<CMake generator> -DMAKE=<make program>
foreach(v BUILD SRC WORK CC GENERATOR MAKE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "EmbedTest.cmake: -D${v}= is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("-- ${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "embed_install: ${what} failed (${rc})")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Nothing from the build tree or the caller's environment may help.
unset(ENV{LD_LIBRARY_PATH})
unset(ENV{KCTX_LIB_DIR})
unset(ENV{CMAKE_PREFIX_PATH})
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
foreach(f include/kctx/kctx.h include/kctx/sim.h lib/libkctx.so lib/libkctx_sim.so
          lib/pkgconfig/kctx.pc lib/cmake/kctx/kctxConfig.cmake bin/kctx
          share/kctx/examples/callables/mlp_block_wide.kctx)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "embed_install: ${prefix}/${f} was not installed")
  endif()
endforeach()

# libkctx finds libkctx_sim next to itself ($ORIGIN), as a dlopen would.
run("ldd libkctx.so" ldd ${prefix}/lib/libkctx.so)
if(NOT last_output MATCHES "libkctx_sim\\.so\\.[0-9]+ => ${prefix}/lib/")
  message(FATAL_ERROR "embed_install: the installed libkctx does not find libkctx_sim in ${prefix}/lib")
endif()

# pkg-config
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run("pkg-config build" ${MAKE} -C ${SRC}/examples/embed CC=${CC} OUT=${WORK}/embed-pc)
run("embed (pkg-config)" ${WORK}/embed-pc)
unset(ENV{PKG_CONFIG_PATH})

# find_package(kctx)
run("find_package configure" ${CMAKE_COMMAND} -S ${SRC}/examples/embed -B ${WORK}/embed-cmake
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix})
run("find_package build" ${CMAKE_COMMAND} --build ${WORK}/embed-cmake)
run("embed (find_package)" ${WORK}/embed-cmake/embed)

# The installed tool finds its images in the prefix (probe names the place)
# and runs its demo from them (its trace files go into WORK).
run("installed kctx probe" ${prefix}/bin/kctx probe --only alternating_replays_hold_last_graph_values)
if(NOT last_output MATCHES "images ${prefix}/share/kctx/examples/callables")
  message(FATAL_ERROR "embed_install: the installed kctx probe did not use ${prefix}/share/kctx")
endif()
run("installed kctx demo" ${prefix}/bin/kctx demo --requests 10)
file(REMOVE_RECURSE ${WORK})
