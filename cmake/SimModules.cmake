# kctx_add_sim_module(<target> <sources...>)
#
# Builds a sim kernel module: an ELF shared object with no C runtime start
# files, no libc, no initialisers/finalisers and no TLS, so that the sim's
# loader accepts it. Kernel modules are built for the build's sanitizer
# flavour (so sanitizers see kernel code too); the sanitizer's per-module
# constructor (.init_array.*: it calls __asan_init / __tsan_init, already
# done by the host, and under ASan registers the module's globals) is
# removed from each object before linking. Consequence: ASan does not
# check overflows of a kernel module's own global variables (kernels should
# have none; device memory itself is checked).
# The module file is <binary dir>/<target>.so; use $<TARGET_FILE:target>.
find_program(KCTX_OBJCOPY NAMES objcopy REQUIRED)
function(kctx_add_sim_module target)
  add_library(${target} MODULE ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE -O2 -fno-stack-protector -fno-builtin
                         -fvisibility=hidden)
  target_link_options(${target} PRIVATE -nostdlib -nostartfiles)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so")
  add_custom_command(TARGET ${target} PRE_LINK
    COMMAND sh -c "for o in \"$@\"; do ${KCTX_OBJCOPY} -w -R '.init_array*' -R '.rela.init_array*' -R '.fini_array*' -R '.rela.fini_array*' \"$o\" || exit 1; done" kctx-strip $<TARGET_OBJECTS:${target}>
    VERBATIM)
endfunction()
