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
  target_include_directories(${target} PRIVATE ${KCTX_PUBLIC_INCLUDE_DIRS})
  target_compile_options(${target} PRIVATE -O2 -fno-stack-protector -fno-builtin
                         -fvisibility=hidden)
  target_link_options(${target} PRIVATE -nostdlib -nostartfiles -Wl,-z,now -Wl,-z,relro
                      -Wl,-T,${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so"
                        LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/sim_module.ld)
endfunction()

# kctx_double_images(<target> <variant kind> <what>): the example callables
# repacked for a driver double, in <current binary dir>/images: each example
# manifest with its OpenCL variant dropped and its sim_elf variant renamed
# <variant kind> (the double runs sim modules under that kind). <target>
# (ALL) builds them. Needs the kctx tool (kctx_cli).
function(kctx_double_images target kind what)
  set(images ${CMAKE_CURRENT_BINARY_DIR}/images)
  set(outputs "")
  foreach(name vector_add scale_add_chain blocked_matmul mlp_block_narrow mlp_block_wide)
    set(src ${PROJECT_SOURCE_DIR}/examples/callables/${name}.yaml)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    file(READ ${src} text)
    string(REPLACE "{kind: sim_elf," "{kind: ${kind}," text "${text}")
    string(REGEX REPLACE "\n[ ]*- {kind: opencl_c[^\n]*" "" text "${text}")
    file(WRITE ${images}/${name}.yaml "${text}")
    add_custom_command(OUTPUT ${images}/${name}.kctx
      COMMAND kctx_cli pack ${images}/${name}.yaml -o ${images}/${name}.kctx
              --search-dir $<TARGET_FILE_DIR:kctx_callable_elementwise>
      DEPENDS kctx_cli ${images}/${name}.yaml kctx_callable_elementwise kctx_callable_matmul
              kctx_callable_mlp
      COMMENT "Packing callable ${name} for ${what}"
      VERBATIM)
    list(APPEND outputs ${images}/${name}.kctx)
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${outputs} ${ARGN})
endfunction()
