/*
 * sim_elf.h — the sim's module loader: checks an ELF shared object given as
 * bytes in memory and loads it into the process without touching the file
 * system (memfd + dlopen). Internal to the sim.
 */
#ifndef KCTX_SIM_ELF_H
#define KCTX_SIM_ELF_H
#include <stddef.h>

/* Check the container. Returns 0 if acceptable, -1 otherwise with a one-line
 * reason (and the offending field/offset where there is one) in msg, which
 * starts "module rejected: " (msg may be NULL or msgsz 0; it is truncated
 * to msgsz and set to "" on success).
 * Pure: reads only bytes[0, size), allocates nothing, never crashes on any
 * input; thread-safe. Rejects:
 *  - NULL or too small; not ELF; not ELFCLASS64 / host byte order
 *    (little-endian) / EV_CURRENT / host machine (EM_X86_64 on x86-64) /
 *    ET_DYN; a header or program header entry size other than ELF64's;
 *  - header, program header or dynamic table out of bounds or overflowing;
 *    more than 256 program headers;
 *  - no PT_LOAD; a PT_LOAD whose file bytes lie past the end or exceed its
 *    memory size; no PT_DYNAMIC, or more than one; PT_TLS present;
 *  - a dynamic table that is not a whole number of entries or has no
 *    DT_NULL; dynamic tags (up to DT_NULL, every occurrence) DT_INIT,
 *    DT_FINI, DT_PREINIT_ARRAY(SZ), non-zero DT_INIT_ARRAYSZ or
 *    DT_FINI_ARRAYSZ (an array present with size 0 is accepted);
 *    DT_INIT_ARRAY / DT_FINI_ARRAY / DT_RELA / DT_RELR without their size or
 *    entry-size tag, a wrong DT_RELAENT / DT_RELRENT, DT_PLTREL other than
 *    DT_RELA (glibc's loader dereferences or asserts on these unchecked);
 *  - PT_DYNAMIC, PT_PHDR, PT_NOTE or PT_GNU_PROPERTY not mapped by a PT_LOAD
 *    from the same file bytes (the loader reads them in memory: what it reads
 *    must be what was checked); PT_PHDR not at the program header table.
 * Validated is the container (headers, segments, dynamic table); the tables
 * the dynamic loader interprets (symbols, strings, hashes, relocations) and
 * the code are trusted like any code linked into the process. */
int simelf_check(const void *bytes, size_t size, char *msg, size_t msgsz);

/* simelf_check, then load privately (RTLD_NOW | RTLD_LOCAL) through an
 * anonymous in-memory file (a sealed memfd, dlopened as /proc/self/fd/<n>).
 * Returns 0 and *handle, or -1 with msg and *handle = NULL (an unresolvable
 * symbol is a failure; msg then starts "module load failed: " and carries
 * dlerror()'s text). Thread-safe. Each handle is its own until
 * simelf_close; the object behind it:
 *  - a module with writable memory of its own after relocation (a writable
 *    PT_LOAD byte outside PT_GNU_RELRO: .data, .bss, a lazily bound
 *    .got.plt) is a distinct object for every load, even of identical
 *    bytes, each with its own data;
 *  - an immutable module (every writable PT_LOAD byte inside PT_GNU_RELRO,
 *    which the loader makes read-only after relocation) shares one object
 *    with every live handle of the same bytes (compared byte for byte with
 *    the bytes that object was loaded from): the same symbol addresses, one
 *    object of the dynamic loader however many handles; it is unloaded with
 *    its last handle.
 * The memfd of an object stays open (one descriptor per object) until its
 * last handle is closed, so no two live objects share a name, and a name
 * still held by an object that outlived dlclose is skipped. */
int simelf_open(const void *bytes, size_t size, void **handle, char *msg, size_t msgsz);
/* Look up a function symbol defined by the module itself (a data symbol, a
 * hidden one or one of another object yields NULL); NULL if absent or if
 * handle or name is NULL. Thread-safe. */
void *simelf_sym(void *handle, const char *name);
/* Release the handle; with the object's last handle, dlclose, then close its
 * memfd. NULL is a no-op. */
void simelf_close(void *handle);
/* Test support: with `on`, every module's bytes hash to 0, so that sharing
 * rests on the byte comparison alone (platform/sim/tests/elf). */
void simelf_test_constant_hash(int on);
#endif
