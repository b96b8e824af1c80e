# kctx_add_sim_module(<target> <sources...>)
#
# Builds a sim kernel module: an ELF shared object with no C runtime start
# files, no libc, no initialisers/finalisers and no TLS, so that the sim's
# loader accepts it. Kernel modules are built for the build's sanitizer
# flavour (so sanitizers see kernel code too); the sanitizer's per-module
# constructor (.init_array.*: it calls __asan_init / __tsan_init, already
# done by the host, and under ASan registers the module's globals) is
# dropped at link time by cmake/sim_module.ld. Consequence: ASan does not
# check overflows of a kernel module's own global variables (kernels should
# have none; device memory itself is checked).
# The module file is <binary dir>/<target>.so; use $<TARGET_FILE:target>.
function(kctx_add_sim_module target)
  add_library(${target} MODULE ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE -O2 -fno-stack-protector -fno-builtin
                         -fvisibility=hidden)
  target_link_options(${target} PRIVATE -nostdlib -nostartfiles
                      -Wl,-T,${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so"
                        LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
endfunction()
