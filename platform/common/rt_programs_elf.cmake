# rt_programs_elf.cmake — the runtime's device programs as a sim_elf module
# (rt_programs_elf.c), shared by the platforms whose device runs sim_elf
# modules: each such platform.cmake includes this file and lists
# ${KCTX_RT_ELF_BLOB} in its SOURCES (platform/sim: the sim's own
# programs; platform/acl: what its driver double runs). Included once
# (include_guard) in the top-level directory, where the declarations are
# read (cmake/Platforms.cmake).
#
# Defines:
#   kctx_rt_elf          the module (<build>/kctx_rt_elf.so; $<TARGET_FILE:kctx_rt_elf>),
#                        which the driver doubles' builds also load from the file
#   KCTX_RT_ELF_BLOB     <build>/kctx_rt_elf_blob.c: the module as bytes,
#                        kctx_rt_elf_programs[_size] (rt_programs_elf.h)
include_guard(GLOBAL)

kctx_add_sim_module(kctx_rt_elf ${CMAKE_CURRENT_LIST_DIR}/rt_programs_elf.c)
# Compiled against the sim's public include path (kctx/sim_kernel.h, and
# kctx/rt_layout.h, kctx/task_abi.h): libkctx_sim's, which is complete only
# once every platform is declared, hence read from the target at generation.
target_include_directories(kctx_rt_elf PRIVATE
  $<TARGET_PROPERTY:kctx_sim,INTERFACE_INCLUDE_DIRECTORIES>)
set(KCTX_RT_ELF_BLOB ${CMAKE_BINARY_DIR}/kctx_rt_elf_blob.c)
add_custom_command(
  OUTPUT ${KCTX_RT_ELF_BLOB}
  COMMAND ${CMAKE_COMMAND} -DIN=$<TARGET_FILE:kctx_rt_elf> -DOUT=${KCTX_RT_ELF_BLOB}
          -DSYMBOL=kctx_rt_elf_programs -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
  DEPENDS kctx_rt_elf ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
  VERBATIM)
