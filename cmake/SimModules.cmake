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
# Linked with -z now and -z relro: every symbol is bound at load, so the
# GOT lies in PT_GNU_RELRO and a module without globals has no writable
# memory after relocation; the sim then loads identical bytes of it once
# (platform/sim/sim_elf.h, docs/sim.md "Loading and launching").
# The module file is <binary dir>/<target>.so; use $<TARGET_FILE:target>.
function(kctx_add_sim_module target)
  add_library(${target} MODULE ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE -O2 -fno-stack-protector -fno-builtin
                         -fvisibility=hidden)
  target_link_options(${target} PRIVATE -nostdlib -nostartfiles -Wl,-z,now -Wl,-z,relro
                      -Wl,-T,${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so"
                        LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
endfunction()
