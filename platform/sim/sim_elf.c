/*
 * sim_elf.c — the sim's module loader (see sim_elf.h).
 *
 * Two halves:
 *  - simelf_check reads the container with a bounded reader that trusts
 *    nothing: every field is copied out with memcpy (no casts of unaligned
 *    pointers), every offset + size is checked against the buffer size
 *    without overflow before it is used, header checks come first and the
 *    cross-checks (segments against each other, dynamic tags against each
 *    other) last. It validates the container — the ELF header, the program
 *    headers and the dynamic table — and leaves the tables the dynamic
 *    loader interprets (symbols, strings, hashes, relocations) and the code
 *    to be trusted, like any other code linked into the process.
 *  - simelf_open writes the checked bytes to a sealed anonymous memfd and
 *    dlopens it through "/proc/self/fd/<n>" — unless the module is
 *    immutable (no writable memory after relocation) and a live object of
 *    the same bytes exists: then that object is shared (see
 *    "simelf_immutable" and the list of shared objects below).
 *
 * Name aliasing. The dynamic loader returns an already loaded object when
 * the name passed to dlopen matches that object's name (or its DT_SONAME),
 * without opening the file. Every module here is named after its memfd's
 * descriptor number, so a new module must never get the name of an object
 * still loaded. The scheme:
 *  1. the memfd stays open while its module is loaded (closed by
 *     simelf_close after dlclose), so no other module can get its number;
 *  2. an object can outlive dlclose (DF_1_NODELETE, or a DT_SONAME that
 *     happens to look like "/proc/self/fd/<n>"), so before dlopen a
 *     RTLD_NOLOAD probe asks whether the name is taken; if it is, the memfd
 *     moves to another descriptor number (the taken number stays open while
 *     searching, so it is not handed out again);
 *  3. probe and dlopen run under one mutex, so two simelf_open calls cannot
 *     both pass the probe for a name and then load it.
 */
#include "sim_elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * The host: modules are shared objects for the machine the sim runs on.
 * ---------------------------------------------------------------------- */
#if defined(__x86_64__) && defined(__LP64__)
#define SIMELF_HOST_MACHINE EM_X86_64
#define SIMELF_HOST_MACHINE_NAME "EM_X86_64"
#elif defined(__aarch64__) && defined(__LP64__)
#define SIMELF_HOST_MACHINE EM_AARCH64
#define SIMELF_HOST_MACHINE_NAME "EM_AARCH64"
#elif defined(__riscv) && defined(__LP64__)
#define SIMELF_HOST_MACHINE EM_RISCV
#define SIMELF_HOST_MACHINE_NAME "EM_RISCV"
#elif defined(__powerpc64__)
#define SIMELF_HOST_MACHINE EM_PPC64
#define SIMELF_HOST_MACHINE_NAME "EM_PPC64"
#elif defined(__s390x__)
#define SIMELF_HOST_MACHINE EM_S390
#define SIMELF_HOST_MACHINE_NAME "EM_S390"
#elif defined(__loongarch64)
#define SIMELF_HOST_MACHINE 258 /* EM_LOONGARCH, absent from older <elf.h> */
#define SIMELF_HOST_MACHINE_NAME "EM_LOONGARCH"
#else
#error "sim_elf.c: unsupported host (the sim loads ELF64 modules for the host machine)"
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SIMELF_HOST_DATA ELFDATA2LSB
#define SIMELF_HOST_DATA_NAME "ELFDATA2LSB"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define SIMELF_HOST_DATA ELFDATA2MSB
#define SIMELF_HOST_DATA_NAME "ELFDATA2MSB"
#else
#error "sim_elf.c: unknown host byte order"
#endif

/* Fields are read in host byte order, so the host must be ELF64 itself. */
_Static_assert(sizeof(void *) == 8, "the sim loads ELF64 modules: 64-bit hosts only");
_Static_assert(sizeof(Elf64_Ehdr) == 64 && sizeof(Elf64_Phdr) == 56 && sizeof(Elf64_Dyn) == 16,
               "unexpected <elf.h> layout");

/* Every architecture above relocates with RELA (glibc asserts DT_PLTREL). */
#define SIMELF_HOST_PLTREL DT_RELA

/* A limit on the program header count (linkers emit about ten): keeps the
 * segment cross-checks, which are quadratic in it, cheap on any input. */
#define SIMELF_MAX_PHNUM 256u

#ifndef PT_GNU_PROPERTY
#define PT_GNU_PROPERTY 0x6474e553
#endif

/* ------------------------------------------------------------------------
 * Messages
 * ---------------------------------------------------------------------- */
__attribute__((format(printf, 3, 4))) static int say(char *msg, size_t msgsz, const char *fmt,
                                                     ...) {
    if (msg != NULL && msgsz > 0) {
        va_list ap;
        va_start(ap, fmt);
        if (vsnprintf(msg, msgsz, fmt, ap) < 0) msg[0] = '\0';
        va_end(ap);
    }
    return -1;
}

#define REJECT "module rejected: "
#define LOADFAIL "module load failed: "

/* ------------------------------------------------------------------------
 * The bounded reader
 * ---------------------------------------------------------------------- */
typedef struct {
    const unsigned char *base;
    uint64_t size;
} elf_reader;

/* 1 if [off, off + len) lies inside the image (computed without overflow). */
static int rd_in_bounds(const elf_reader *r, uint64_t off, uint64_t len) {
    return off <= r->size && len <= r->size - off;
}

/* Copy len bytes at off into out; -1 (and nothing read) if out of bounds. */
static int rd_copy(const elf_reader *r, uint64_t off, void *out, size_t len) {
    if (!rd_in_bounds(r, off, len)) return -1;
    memcpy(out, r->base + off, len);
    return 0;
}

/* Program header i; the table was bounds-checked, but the read is checked
 * again rather than trusted. */
static int rd_phdr(const elf_reader *r, const Elf64_Ehdr *eh, unsigned i, Elf64_Phdr *ph) {
    return rd_copy(r, eh->e_phoff + (uint64_t)i * sizeof *ph, ph, sizeof *ph);
}

/* 1 if the memory range [vaddr, vaddr + len) of a segment is mapped by some
 * PT_LOAD from the file bytes at [off, off + len): what the dynamic loader
 * will read in memory is exactly what was checked in the file. */
static int mapped_from_file(const elf_reader *r, const Elf64_Ehdr *eh, uint64_t off, uint64_t vaddr,
                            uint64_t len) {
    for (unsigned i = 0; i < eh->e_phnum; ++i) {
        Elf64_Phdr ld;
        if (rd_phdr(r, eh, i, &ld) != 0) return 0;
        if (ld.p_type != PT_LOAD || vaddr < ld.p_vaddr || off < ld.p_offset) continue;
        uint64_t delta = vaddr - ld.p_vaddr;
        if (off - ld.p_offset != delta) continue;
        if (delta > ld.p_filesz || len > ld.p_filesz - delta) continue;
        return 1;
    }
    return 0;
}

static const char *segment_name(uint32_t type) {
    switch (type) {
    case PT_DYNAMIC:
        return "PT_DYNAMIC";
    case PT_PHDR:
        return "PT_PHDR";
    case PT_NOTE:
        return "PT_NOTE";
    case PT_GNU_PROPERTY:
        return "PT_GNU_PROPERTY";
    default:
        return "segment";
    }
}

/* ------------------------------------------------------------------------
 * simelf_check
 * ---------------------------------------------------------------------- */
static int check_header(const elf_reader *r, Elf64_Ehdr *eh, char *msg, size_t msgsz) {
    if (rd_copy(r, 0, eh, sizeof *eh) != 0)
        return say(msg, msgsz,
                   REJECT "%" PRIu64 " bytes is too small for an ELF64 header (%zu bytes)", r->size,
                   sizeof *eh);
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return say(msg, msgsz, REJECT "not an ELF file (bad magic at offset 0x0)");
    if (eh->e_ident[EI_CLASS] != ELFCLASS64)
        return say(msg, msgsz, REJECT "ELF class %u at offset 0x%x: need ELFCLASS64",
                   eh->e_ident[EI_CLASS], (unsigned)EI_CLASS);
    if (eh->e_ident[EI_DATA] != SIMELF_HOST_DATA)
        return say(msg, msgsz,
                   REJECT "ELF data encoding %u at offset 0x%x: need " SIMELF_HOST_DATA_NAME
                          " (host byte order)",
                   eh->e_ident[EI_DATA], (unsigned)EI_DATA);
    if (eh->e_ident[EI_VERSION] != EV_CURRENT)
        return say(msg, msgsz, REJECT "ELF ident version %u at offset 0x%x: need EV_CURRENT",
                   eh->e_ident[EI_VERSION], (unsigned)EI_VERSION);
    if (eh->e_type != ET_DYN)
        return say(msg, msgsz, REJECT "ELF type %u at offset 0x%zx: need ET_DYN (a shared object)",
                   eh->e_type, offsetof(Elf64_Ehdr, e_type));
    if (eh->e_machine != SIMELF_HOST_MACHINE)
        return say(msg, msgsz,
                   REJECT "ELF machine %u at offset 0x%zx: need " SIMELF_HOST_MACHINE_NAME
                          " (%u, the host)",
                   eh->e_machine, offsetof(Elf64_Ehdr, e_machine), (unsigned)SIMELF_HOST_MACHINE);
    if (eh->e_version != EV_CURRENT)
        return say(msg, msgsz, REJECT "ELF version %" PRIu32 " at offset 0x%zx: need EV_CURRENT",
                   eh->e_version, offsetof(Elf64_Ehdr, e_version));
    if (eh->e_ehsize != sizeof *eh)
        return say(msg, msgsz, REJECT "ELF header size %u at offset 0x%zx: need %zu", eh->e_ehsize,
                   offsetof(Elf64_Ehdr, e_ehsize), sizeof *eh);
    if (eh->e_phentsize != sizeof(Elf64_Phdr))
        return say(msg, msgsz, REJECT "program header entry size %u at offset 0x%zx: need %zu",
                   eh->e_phentsize, offsetof(Elf64_Ehdr, e_phentsize), sizeof(Elf64_Phdr));
    if (eh->e_phnum == 0)
        return say(msg, msgsz, REJECT "no program headers (e_phnum 0 at offset 0x%zx)",
                   offsetof(Elf64_Ehdr, e_phnum));
    if (eh->e_phnum == PN_XNUM)
        return say(msg, msgsz,
                   REJECT "extended program header numbering (e_phnum 0x%x at offset 0x%zx) "
                          "is not supported",
                   (unsigned)PN_XNUM, offsetof(Elf64_Ehdr, e_phnum));
    if (eh->e_phnum > SIMELF_MAX_PHNUM)
        return say(msg, msgsz,
                   REJECT "program header table has %u entries (e_phnum at offset 0x%zx): "
                          "at most %u are allowed",
                   eh->e_phnum, offsetof(Elf64_Ehdr, e_phnum), SIMELF_MAX_PHNUM);
    if (!rd_in_bounds(r, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        return say(msg, msgsz,
                   REJECT "program header table (offset 0x%" PRIx64 ", %u entries of %zu bytes) "
                          "extends past the end of the %" PRIu64 "-byte image",
                   (uint64_t)eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr), r->size);
    /* The loader does not need section headers, but a table that the file
     * claims and does not contain means the file was truncated. */
    if (eh->e_shnum != 0 &&
        (eh->e_shentsize != sizeof(Elf64_Shdr) ||
         !rd_in_bounds(r, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))))
        return say(msg, msgsz,
                   REJECT "section header table (offset 0x%" PRIx64
                          ", %u entries of %u bytes, field e_shoff at "
                          "offset 0x%zx) does not fit the %" PRIu64 "-byte image (truncated?)",
                   (uint64_t)eh->e_shoff, (unsigned)eh->e_shnum, (unsigned)eh->e_shentsize,
                   offsetof(Elf64_Ehdr, e_shoff), r->size);
    return 0;
}

/* One pass over the program headers: per-segment rules, and the dynamic
 * segment (exactly one). */
static int check_segments(const elf_reader *r, const Elf64_Ehdr *eh, Elf64_Phdr *dyn,
                          unsigned *dyn_index, char *msg, size_t msgsz) {
    unsigned loads = 0, dyns = 0;
    for (unsigned i = 0; i < eh->e_phnum; ++i) {
        uint64_t at = eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
        Elf64_Phdr ph;
        if (rd_phdr(r, eh, i, &ph) != 0)
            return say(msg, msgsz,
                       REJECT "program header %u (offset 0x%" PRIx64 ") is out of bounds", i, at);
        switch (ph.p_type) {
        case PT_TLS:
            return say(msg, msgsz,
                       REJECT "PT_TLS segment at program header %u (offset 0x%" PRIx64 "): "
                              "thread-local storage is not allowed",
                       i, at);
        case PT_LOAD:
            if (!rd_in_bounds(r, ph.p_offset, ph.p_filesz))
                return say(msg, msgsz,
                           REJECT "PT_LOAD segment at program header %u (offset 0x%" PRIx64 "): "
                                  "file bytes 0x%" PRIx64 "+0x%" PRIx64
                                  " extend past the end of the %" PRIu64 "-byte image",
                           i, at, (uint64_t)ph.p_offset, (uint64_t)ph.p_filesz, r->size);
            if (ph.p_filesz > ph.p_memsz)
                return say(msg, msgsz,
                           REJECT "PT_LOAD segment at program header %u (offset 0x%" PRIx64 "): "
                                  "file size 0x%" PRIx64 " exceeds memory size 0x%" PRIx64,
                           i, at, (uint64_t)ph.p_filesz, (uint64_t)ph.p_memsz);
            if (ph.p_memsz > UINT64_MAX - ph.p_vaddr)
                return say(msg, msgsz,
                           REJECT "PT_LOAD segment at program header %u (offset 0x%" PRIx64 "): "
                                  "address range 0x%" PRIx64 "+0x%" PRIx64 " overflows",
                           i, at, (uint64_t)ph.p_vaddr, (uint64_t)ph.p_memsz);
            ++loads;
            break;
        case PT_DYNAMIC:
            if (dyns++ != 0)
                return say(msg, msgsz,
                           REJECT
                           "second PT_DYNAMIC segment at program header %u (offset 0x%" PRIx64
                           "): a module has exactly one dynamic table",
                           i, at);
            *dyn = ph;
            *dyn_index = i;
            break;
        default:
            break;
        }
    }
    if (loads == 0) return say(msg, msgsz, REJECT "no PT_LOAD segment: nothing to load");
    if (dyns == 0)
        return say(msg, msgsz, REJECT "no PT_DYNAMIC segment: not a loadable shared object");
    return 0;
}

/* Segments the dynamic loader reads through memory after mapping (the
 * dynamic table, the program headers, notes and GNU properties) must be
 * mapped from the file bytes that were checked. */
static int check_mapped_segments(const elf_reader *r, const Elf64_Ehdr *eh, char *msg,
                                 size_t msgsz) {
    for (unsigned i = 0; i < eh->e_phnum; ++i) {
        uint64_t at = eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
        Elf64_Phdr ph;
        if (rd_phdr(r, eh, i, &ph) != 0)
            return say(msg, msgsz,
                       REJECT "program header %u (offset 0x%" PRIx64 ") is out of bounds", i, at);
        uint64_t len;
        switch (ph.p_type) {
        case PT_DYNAMIC: /* the walk reads p_filesz bytes, up to DT_NULL */
            len = ph.p_filesz;
            break;
        case PT_PHDR:
            if (ph.p_offset != eh->e_phoff)
                return say(msg, msgsz,
                           REJECT "PT_PHDR at program header %u (offset 0x%" PRIx64 ") points at "
                                  "file offset 0x%" PRIx64
                                  ", not at the program header table (0x%" PRIx64 ")",
                           i, at, (uint64_t)ph.p_offset, (uint64_t)eh->e_phoff);
            len = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);
            break;
        case PT_NOTE:
        case PT_GNU_PROPERTY:
            len = ph.p_filesz > ph.p_memsz ? ph.p_filesz : ph.p_memsz;
            break;
        default:
            continue;
        }
        if (!mapped_from_file(r, eh, ph.p_offset, ph.p_vaddr, len))
            return say(msg, msgsz,
                       REJECT "%s at program header %u (offset 0x%" PRIx64
                              "): file bytes 0x%" PRIx64 "+0x%" PRIx64 " at address 0x%" PRIx64
                              " are not inside a PT_LOAD segment at the same "
                              "offset: the loader would read something else",
                       segment_name(ph.p_type), i, at, (uint64_t)ph.p_offset, len,
                       (uint64_t)ph.p_vaddr);
    }
    return 0;
}

/* The dynamic table as found at the PT_DYNAMIC p_offset/p_filesz. Every
 * entry up to DT_NULL is checked (a tag that occurs twice is checked twice:
 * the loader keeps the last one). */
static int check_dynamic(const elf_reader *r, const Elf64_Phdr *dyn, unsigned dyn_index, char *msg,
                         size_t msgsz) {
    if (!rd_in_bounds(r, dyn->p_offset, dyn->p_filesz))
        return say(msg, msgsz,
                   REJECT "dynamic table (PT_DYNAMIC at program header %u: offset 0x%" PRIx64
                          ", size 0x%" PRIx64 ") extends past the end of the %" PRIu64
                          "-byte image",
                   dyn_index, (uint64_t)dyn->p_offset, (uint64_t)dyn->p_filesz, r->size);
    if (dyn->p_filesz % sizeof(Elf64_Dyn) != 0)
        return say(msg, msgsz,
                   REJECT "dynamic table size 0x%" PRIx64 " (PT_DYNAMIC at program header %u) is "
                          "not a multiple of the %zu-byte entry",
                   (uint64_t)dyn->p_filesz, dyn_index, sizeof(Elf64_Dyn));

    /* Tags whose presence requires another tag (the loader dereferences the
     * companion without checking it is there). */
    int init_array = 0, init_arraysz = 0, fini_array = 0, fini_arraysz = 0;
    int rela = 0, relaent = 0, relr = 0, relrent = 0;
    uint64_t n = dyn->p_filesz / sizeof(Elf64_Dyn);
    for (uint64_t k = 0; k < n; ++k) {
        uint64_t at = dyn->p_offset + k * sizeof(Elf64_Dyn);
        Elf64_Dyn d;
        if (rd_copy(r, at, &d, sizeof d) != 0)
            return say(msg, msgsz,
                       REJECT "dynamic entry %" PRIu64 " (offset 0x%" PRIx64 ") is out of bounds",
                       k, at);
        uint64_t val = d.d_un.d_val;
        switch (d.d_tag) {
        case DT_NULL:
            if (init_array && !init_arraysz)
                return say(msg, msgsz,
                           REJECT "DT_INIT_ARRAY without DT_INIT_ARRAYSZ in the dynamic table "
                                  "(offset 0x%" PRIx64 ")",
                           (uint64_t)dyn->p_offset);
            if (fini_array && !fini_arraysz)
                return say(msg, msgsz,
                           REJECT "DT_FINI_ARRAY without DT_FINI_ARRAYSZ in the dynamic table "
                                  "(offset 0x%" PRIx64 ")",
                           (uint64_t)dyn->p_offset);
            if (rela && !relaent)
                return say(msg, msgsz,
                           REJECT
                           "DT_RELA without DT_RELAENT in the dynamic table (offset 0x%" PRIx64 ")",
                           (uint64_t)dyn->p_offset);
            if (relr && !relrent)
                return say(msg, msgsz,
                           REJECT
                           "DT_RELR without DT_RELRENT in the dynamic table (offset 0x%" PRIx64 ")",
                           (uint64_t)dyn->p_offset);
            return 0;
        case DT_INIT:
            return say(msg, msgsz,
                       REJECT "DT_INIT (initialiser function) at dynamic entry %" PRIu64
                              " (offset 0x%" PRIx64 "): initialisers are not allowed",
                       k, at);
        case DT_FINI:
            return say(msg, msgsz,
                       REJECT "DT_FINI (finaliser function) at dynamic entry %" PRIu64
                              " (offset 0x%" PRIx64 "): finalisers are not allowed",
                       k, at);
        case DT_PREINIT_ARRAY:
        case DT_PREINIT_ARRAYSZ:
            return say(msg, msgsz,
                       REJECT "%s at dynamic entry %" PRIu64 " (offset 0x%" PRIx64 "): "
                              "pre-initialisers are not allowed",
                       d.d_tag == DT_PREINIT_ARRAY ? "DT_PREINIT_ARRAY" : "DT_PREINIT_ARRAYSZ", k,
                       at);
        case DT_INIT_ARRAYSZ:
            if (val != 0)
                return say(msg, msgsz,
                           REJECT "DT_INIT_ARRAYSZ 0x%" PRIx64 " at dynamic entry %" PRIu64
                                  " (offset 0x%" PRIx64
                                  "): initialisers (constructors) are not allowed",
                           val, k, at);
            init_arraysz = 1;
            break;
        case DT_FINI_ARRAYSZ:
            if (val != 0)
                return say(msg, msgsz,
                           REJECT "DT_FINI_ARRAYSZ 0x%" PRIx64 " at dynamic entry %" PRIu64
                                  " (offset 0x%" PRIx64
                                  "): finalisers (destructors) are not allowed",
                           val, k, at);
            fini_arraysz = 1;
            break;
        case DT_INIT_ARRAY:
            init_array = 1;
            break;
        case DT_FINI_ARRAY:
            fini_array = 1;
            break;
        case DT_RELA:
            rela = 1;
            break;
        case DT_RELAENT:
            if (val != sizeof(Elf64_Rela))
                return say(msg, msgsz,
                           REJECT "DT_RELAENT %" PRIu64 " at dynamic entry %" PRIu64
                                  " (offset 0x%" PRIx64 "): need %zu",
                           val, k, at, sizeof(Elf64_Rela));
            relaent = 1;
            break;
#ifdef DT_RELR
        case DT_RELR:
            relr = 1;
            break;
        case DT_RELRENT:
            if (val != sizeof(Elf64_Xword))
                return say(msg, msgsz,
                           REJECT "DT_RELRENT %" PRIu64 " at dynamic entry %" PRIu64
                                  " (offset 0x%" PRIx64 "): need %zu",
                           val, k, at, sizeof(Elf64_Xword));
            relrent = 1;
            break;
#endif
        case DT_PLTREL:
            if (val != SIMELF_HOST_PLTREL)
                return say(msg, msgsz,
                           REJECT "DT_PLTREL %" PRIu64 " at dynamic entry %" PRIu64
                                  " (offset 0x%" PRIx64 "): need DT_RELA (%d)",
                           val, k, at, SIMELF_HOST_PLTREL);
            break;
        default:
            break;
        }
    }
    return say(msg, msgsz,
               REJECT "dynamic table (PT_DYNAMIC at program header %u: offset 0x%" PRIx64
                      ", %" PRIu64 " entries) has no DT_NULL terminator",
               dyn_index, (uint64_t)dyn->p_offset, n);
}

int simelf_check(const void *bytes, size_t size, char *msg, size_t msgsz) {
    if (msg != NULL && msgsz > 0) msg[0] = '\0';
    if (bytes == NULL) return say(msg, msgsz, REJECT "no bytes (NULL image)");
    elf_reader r = {bytes, size};
    Elf64_Ehdr eh;
    Elf64_Phdr dyn;
    memset(&eh, 0, sizeof eh);
    memset(&dyn, 0, sizeof dyn);
    unsigned dyn_index = 0;
    if (check_header(&r, &eh, msg, msgsz) != 0) return -1;
    if (check_segments(&r, &eh, &dyn, &dyn_index, msg, msgsz) != 0) return -1;
    if (check_dynamic(&r, &dyn, dyn_index, msg, msgsz) != 0) return -1;
    if (check_mapped_segments(&r, &eh, msg, msgsz) != 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------------
 * simelf_immutable: may identical bytes share one loaded object?
 * ---------------------------------------------------------------------- */

/* 1 if the module, once relocated, has no writable memory of its own: every
 * byte of every writable PT_LOAD lies in its PT_GNU_RELRO range, which the
 * loader makes read-only after relocation. Such a module has no data
 * (.data, .bss, a lazily bound .got.plt) its code could change, so two
 * loads of the same bytes could not tell one object from two. Called on
 * checked bytes; reads them again through the bounded reader. */
static int simelf_immutable(const void *bytes, size_t size) {
    elf_reader r = {bytes, size};
    Elf64_Ehdr eh;
    if (rd_copy(&r, 0, &eh, sizeof eh) != 0) return 0;
    uint64_t relro_lo = 0, relro_hi = 0;
    unsigned relros = 0;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (rd_phdr(&r, &eh, i, &ph) != 0) return 0;
        if (ph.p_type != PT_GNU_RELRO) continue;
        if (relros++ != 0 || ph.p_memsz > UINT64_MAX - ph.p_vaddr) return 0;
        relro_lo = ph.p_vaddr;
        relro_hi = ph.p_vaddr + ph.p_memsz;
    }
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (rd_phdr(&r, &eh, i, &ph) != 0) return 0;
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W) || ph.p_memsz == 0) continue;
        /* checked: p_vaddr + p_memsz does not overflow */
        if (relros == 0 || ph.p_vaddr < relro_lo || ph.p_vaddr + ph.p_memsz > relro_hi) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------
 * simelf_open / simelf_sym / simelf_close
 *
 * A loaded object is one dlopen. Objects of immutable modules (above) are
 * listed by their bytes: a later simelf_open of the same bytes takes a
 * reference on the listed object instead of loading another, so many
 * modules of the same bytes cost one object of the dynamic loader, whose
 * dlopen, dlsym and dladdr walk every object loaded (their cost grows with
 * the number of objects). The list compares the bytes themselves (the
 * sealed memfd, mapped read-only): the hash only picks the bucket.
 * ---------------------------------------------------------------------- */
typedef struct simelf_object {
    void *dl;             /* dlopen handle */
    struct link_map *map; /* the module's link map (to recognise its symbols) */
    int fd;               /* the memfd it was loaded from, open until close */
    unsigned refs;        /* simelf_open handles (simelf_load_lock) */
    /* listed objects only (immutable modules): */
    const unsigned char *bytes; /* the memfd mapped read-only: the loaded bytes */
    size_t size;
    uint64_t hash;
    struct simelf_object *next; /* in its bucket */
} simelf_object;

typedef struct simelf_module {
    simelf_object *obj;
} simelf_module;

/* Probe and dlopen run under this lock (see "Name aliasing" above); it also
 * guards the list of shared objects and their references. */
static pthread_mutex_t simelf_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The shared objects by hash of their bytes: chained buckets, a power of
 * two, grown to keep at most one object per bucket on average. */
static simelf_object **g_buckets;
static size_t g_nbuckets, g_nlisted;

/* Test support (simelf_test_constant_hash): every hash 0. */
static int g_constant_hash;

void simelf_test_constant_hash(int on) {
    pthread_mutex_lock(&simelf_load_lock);
    g_constant_hash = on;
    pthread_mutex_unlock(&simelf_load_lock);
}

/* Picks a bucket only; equality is decided by the bytes. */
static uint64_t bytes_hash(const unsigned char *p, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ (uint64_t)n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * UINT64_C(0x100000001b3);
        h ^= h >> 29;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h ^ (h >> 32);
}

/* Called with simelf_load_lock held. */
static simelf_object *listed_find(const unsigned char *bytes, size_t size, uint64_t hash) {
    if (g_nbuckets == 0) return NULL;
    for (simelf_object *o = g_buckets[hash & (g_nbuckets - 1)]; o != NULL; o = o->next)
        if (o->hash == hash && o->size == size && memcmp(o->bytes, bytes, size) == 0) return o;
    return NULL;
}

/* Called with simelf_load_lock held. 0, or -1 (out of memory: not listed). */
static int listed_add(simelf_object *o) {
    if (g_nlisted + 1 > g_nbuckets) {
        size_t nb = g_nbuckets ? g_nbuckets * 2 : 64;
        simelf_object **b = calloc(nb, sizeof *b);
        if (b == NULL) return -1;
        for (size_t i = 0; i < g_nbuckets; ++i) {
            while (g_buckets[i] != NULL) {
                simelf_object *x = g_buckets[i];
                g_buckets[i] = x->next;
                x->next = b[x->hash & (nb - 1)];
                b[x->hash & (nb - 1)] = x;
            }
        }
        free(g_buckets);
        g_buckets = b;
        g_nbuckets = nb;
    }
    simelf_object **head = &g_buckets[o->hash & (g_nbuckets - 1)];
    o->next = *head;
    *head = o;
    g_nlisted++;
    return 0;
}

/* Called with simelf_load_lock held. */
static void listed_remove(simelf_object *o) {
    for (simelf_object **pp = &g_buckets[o->hash & (g_nbuckets - 1)]; *pp != NULL;
         pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            g_nlisted--;
            return;
        }
    }
}

/* Descriptor numbers tried before giving up on finding a free name. */
#define SIMELF_NAME_TRIES 16

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += (size_t)w;
        n -= (size_t)w;
    }
    return 0;
}

static void fd_path(char *buf, size_t bufsz, int fd) {
    snprintf(buf, bufsz, "/proc/self/fd/%d", fd);
}

/* Called with simelf_load_lock held. Moves *fd to a descriptor number whose
 * "/proc/self/fd/<n>" names no loaded object. */
static int pick_free_name(int *fd, char *path, size_t pathsz, char *msg, size_t msgsz) {
    int taken[SIMELF_NAME_TRIES];
    int ntaken = 0, rc = 0;
    for (;;) {
        fd_path(path, pathsz, *fd);
        void *old = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (old == NULL) break;
        dlclose(old);
        if (ntaken == SIMELF_NAME_TRIES) {
            rc = say(msg, msgsz, LOADFAIL "%d descriptor names are taken by objects still loaded",
                     ntaken);
            break;
        }
        int moved = fcntl(*fd, F_DUPFD_CLOEXEC, 0); /* the lowest number not held */
        if (moved < 0) {
            rc = say(msg, msgsz, LOADFAIL "fcntl(F_DUPFD_CLOEXEC): %s", strerror(errno));
            break;
        }
        taken[ntaken++] = *fd;
        *fd = moved;
    }
    (void)dlerror(); /* a probe may leave an error behind */
    for (int i = 0; i < ntaken; ++i) close(taken[i]);
    return rc;
}

/* Load checked bytes as a new object (memfd, probe, dlopen). With `list`
 * set, the object is listed for sharing unless a racing load of the same
 * bytes listed one first: then that one is referenced and returned. */
static simelf_object *object_load(const void *bytes, size_t size, int list, uint64_t hash,
                                  char *msg, size_t msgsz) {
    simelf_object *o = calloc(1, sizeof *o);
    if (o == NULL) {
        say(msg, msgsz, LOADFAIL "out of host memory");
        return NULL;
    }
    int fd = memfd_create("kctx-sim-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        int e = errno;
        free(o);
        say(msg, msgsz, LOADFAIL "memfd_create: %s", strerror(e));
        return NULL;
    }
    if (write_all(fd, bytes, size) != 0) {
        int e = errno;
        close(fd);
        free(o);
        say(msg, msgsz, LOADFAIL "writing %zu bytes to the memfd: %s", size, strerror(e));
        return NULL;
    }
    /* The bytes that were checked are the bytes that get mapped. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        int e = errno;
        close(fd);
        free(o);
        say(msg, msgsz, LOADFAIL "sealing the memfd: %s", strerror(e));
        return NULL;
    }
    /* What a later load compares its bytes with: the sealed file itself
     * (no copy). Without the mapping the object is simply not shared. */
    const unsigned char *view = NULL;
    if (list) {
        void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) view = p;
    }

    char path[40];
    void *dl = NULL;
    simelf_object *other = NULL;
    int rc;
    pthread_mutex_lock(&simelf_load_lock);
    if (view != NULL) other = listed_find(bytes, size, hash);
    if (other != NULL) {
        other->refs++; /* a racing load of the same bytes listed its object first */
        rc = 0;
    } else {
        rc = pick_free_name(&fd, path, sizeof path, msg, msgsz);
        if (rc == 0) {
            (void)dlerror();
            dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (dl == NULL) {
                const char *err = dlerror();
                rc = say(msg, msgsz, LOADFAIL "%s", err != NULL ? err : "dlopen failed");
            }
        }
        struct link_map *map = NULL;
        if (dl != NULL && (dlinfo(dl, RTLD_DI_LINKMAP, &map) != 0 || map == NULL)) {
            const char *err = dlerror();
            rc = say(msg, msgsz, LOADFAIL "dlinfo: %s", err != NULL ? err : "no link map");
            dlclose(dl);
            dl = NULL;
        }
        if (rc == 0 && dl != NULL) {
            o->dl = dl;
            o->map = map;
            o->fd = fd;
            o->refs = 1;
            if (view != NULL) {
                o->bytes = view;
                o->size = size;
                o->hash = hash;
                if (listed_add(o) != 0) o->bytes = NULL; /* not listed: unmapped below */
            }
        }
    }
    pthread_mutex_unlock(&simelf_load_lock);

    if (other != NULL || rc != 0 || dl == NULL || o->bytes == NULL) {
        if (view != NULL) munmap((void *)view, size);
    }
    if (other != NULL || rc != 0 || dl == NULL) {
        close(fd);
        free(o);
        return rc != 0 ? NULL : other;
    }
    return o;
}

int simelf_open(const void *bytes, size_t size, void **handle, char *msg, size_t msgsz) {
    if (handle == NULL) return say(msg, msgsz, LOADFAIL "no handle out-parameter");
    *handle = NULL;
    if (simelf_check(bytes, size, msg, msgsz) != 0) return -1;

    simelf_module *m = calloc(1, sizeof *m);
    if (m == NULL) return say(msg, msgsz, LOADFAIL "out of host memory");

    const int list = simelf_immutable(bytes, size);
    uint64_t hash = 0;
    simelf_object *o = NULL;
    if (list) {
        hash = bytes_hash(bytes, size);
        pthread_mutex_lock(&simelf_load_lock);
        if (g_constant_hash) hash = 0;
        o = listed_find(bytes, size, hash);
        if (o != NULL) o->refs++;
        pthread_mutex_unlock(&simelf_load_lock);
    }
    if (o == NULL) o = object_load(bytes, size, list, hash, msg, msgsz);
    if (o == NULL) {
        free(m);
        return -1;
    }
    m->obj = o;
    *handle = m;
    if (msg != NULL && msgsz > 0) msg[0] = '\0';
    return 0;
}

void *simelf_sym(void *handle, const char *name) {
    simelf_module *m = handle;
    if (m == NULL || name == NULL) return NULL;
    const simelf_object *o = m->obj;
    void *p = dlsym(o->dl, name);
    if (p == NULL) {
        (void)dlerror();
        return NULL;
    }
    /* Only a function defined by the module itself. */
    Dl_info info;
    void *owner = NULL, *entry = NULL;
    if (dladdr1(p, &info, &owner, RTLD_DL_LINKMAP) == 0 || owner != (void *)o->map) return NULL;
    if (dladdr1(p, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == NULL) return NULL;
    const Elf64_Sym *sym = entry;
    unsigned type = ELF64_ST_TYPE(sym->st_info);
    if (info.dli_saddr != p || (type != STT_FUNC && type != STT_GNU_IFUNC)) return NULL;
    return p;
}

void simelf_close(void *handle) {
    simelf_module *m = handle;
    if (m == NULL) return;
    simelf_object *o = m->obj;
    free(m);
    pthread_mutex_lock(&simelf_load_lock);
    int last = --o->refs == 0;
    if (last && o->bytes != NULL) listed_remove(o); /* no later load finds it */
    pthread_mutex_unlock(&simelf_load_lock);
    if (!last) return;
    dlclose(o->dl);
    if (o->bytes != NULL) munmap((void *)o->bytes, o->size);
    close(o->fd); /* only now may the descriptor number (the name) be reused */
    free(o);
}
