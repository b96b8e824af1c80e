/*
 * rt_programs_elf.h — the runtime's device programs as a sim_elf module
 * (rt_programs_elf.c), embedded in libkctx as bytes by
 * rt_programs_elf.cmake: the `programs` of every platform descriptor whose
 * device runs sim_elf modules (the sim's; the acl adapter's, which only the
 * ACL driver double, built on the sim, loads). One owner here, so that no
 * platform names another's programs.
 */
#ifndef KCTX_PLATFORM_COMMON_RT_PROGRAMS_ELF_H
#define KCTX_PLATFORM_COMMON_RT_PROGRAMS_ELF_H

#include <stddef.h>

extern const unsigned char kctx_rt_elf_programs[];
extern const size_t kctx_rt_elf_programs_size;

#endif
