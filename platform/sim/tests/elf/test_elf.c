/*
 * test_elf.c — tests of the sim's module loader (platform/sim/sim_elf.c).
 *
 * The fixture modules are built by platform/sim/tests/elf/CMakeLists.txt; their paths
 * arrive as FX_* macros. Every image given to simelf_check is first copied
 * into a heap buffer of exactly its size, so that a read past the end is
 * caught by ASan. Mutated images are only checked, never loaded.
 */
#include "sim_elf.h"

#include "kctx_test_check.h"
#include "kctx_test_common.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSGSZ 512
#define REJECTED "module rejected: "

typedef int (*int_fn)(void);

/* ------------------------------------------------------------------------
 * Helpers (trusted code on trusted input)
 * ---------------------------------------------------------------------- */
typedef struct {
    unsigned char *bytes;
    size_t size;
} image;

static image read_image(const char *path) {
    image im = {NULL, 0};
    char why[512];
    im.bytes = ktc_read_file(path, &im.size, why, sizeof why);
    if (im.bytes == NULL) {
        fprintf(stderr, "cannot read fixture: %s\n", why);
        exit(1);
    }
    CHECK(im.size > 0);
    return im;
}

static image copy_image(const image *src) {
    image im = {malloc(src->size), src->size};
    CHECK(im.bytes != NULL);
    memcpy(im.bytes, src->bytes, src->size);
    return im;
}

/* simelf_check on an exact-size heap copy of bytes[0, n). */
static int check_exact(const unsigned char *bytes, size_t n, char *msg) {
    unsigned char *copy = malloc(n ? n : 1);
    CHECK(copy != NULL);
    if (n) memcpy(copy, bytes, n);
    int rc = simelf_check(copy, n, msg, MSGSZ);
    free(copy);
    return rc;
}

static Elf64_Ehdr get_ehdr(const image *im) {
    Elf64_Ehdr eh;
    CHECK(im->size >= sizeof eh);
    memcpy(&eh, im->bytes, sizeof eh);
    return eh;
}

static void put_ehdr(image *im, const Elf64_Ehdr *eh) { memcpy(im->bytes, eh, sizeof *eh); }

static uint64_t phdr_off(const image *im, unsigned i) {
    Elf64_Ehdr eh = get_ehdr(im);
    return eh.e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
}

static Elf64_Phdr get_phdr(const image *im, unsigned i) {
    Elf64_Phdr ph;
    uint64_t off = phdr_off(im, i);
    CHECK(off + sizeof ph <= im->size);
    memcpy(&ph, im->bytes + off, sizeof ph);
    return ph;
}

static void put_phdr(image *im, unsigned i, const Elf64_Phdr *ph) {
    memcpy(im->bytes + phdr_off(im, i), ph, sizeof *ph);
}

/* Index of the first program header of a type, or -1. */
static int find_phdr(const image *im, uint32_t type) {
    Elf64_Ehdr eh = get_ehdr(im);
    for (unsigned i = 0; i < eh.e_phnum; ++i)
        if (get_phdr(im, i).p_type == type) return (int)i;
    return -1;
}

static Elf64_Dyn get_dyn(const image *im, unsigned k) {
    Elf64_Phdr d = get_phdr(im, (unsigned)find_phdr(im, PT_DYNAMIC));
    Elf64_Dyn e;
    memcpy(&e, im->bytes + d.p_offset + (uint64_t)k * sizeof e, sizeof e);
    return e;
}

static void put_dyn(image *im, unsigned k, int64_t tag, uint64_t val) {
    Elf64_Phdr d = get_phdr(im, (unsigned)find_phdr(im, PT_DYNAMIC));
    Elf64_Dyn e;
    e.d_tag = tag;
    e.d_un.d_val = val;
    memcpy(im->bytes + d.p_offset + (uint64_t)k * sizeof e, &e, sizeof e);
}

static unsigned dyn_count(const image *im) {
    return (unsigned)(get_phdr(im, (unsigned)find_phdr(im, PT_DYNAMIC)).p_filesz /
                      sizeof(Elf64_Dyn));
}

/* Index of the first dynamic entry with a tag, or -1. */
static int find_dyn(const image *im, int64_t tag) {
    unsigned n = dyn_count(im);
    for (unsigned k = 0; k < n; ++k)
        if (get_dyn(im, k).d_tag == tag) return (int)k;
    return -1;
}

/* Dynamic entries that may be overwritten in check-only tests: anything
 * but DT_NULL and the tags the checker cross-checks. */
static int harmless_dyn(const image *im, int nth) {
    unsigned n = dyn_count(im);
    for (unsigned k = 0; k < n; ++k) {
        int64_t t = get_dyn(im, k).d_tag;
        if (t == DT_NULL) return -1;
        if (t == DT_RELA || t == DT_RELAENT || t == DT_INIT_ARRAY || t == DT_FINI_ARRAY ||
            t == DT_INIT_ARRAYSZ || t == DT_FINI_ARRAYSZ || t == DT_PLTREL)
            continue;
        if (nth-- == 0) return (int)k;
    }
    return -1;
}

static uint64_t phdrs_end(const image *im) {
    Elf64_Ehdr eh = get_ehdr(im);
    return eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
}

static uint64_t dyn_end(const image *im) {
    Elf64_Phdr d = get_phdr(im, (unsigned)find_phdr(im, PT_DYNAMIC));
    return d.p_offset + d.p_filesz;
}

static uint64_t loads_end(const image *im) {
    Elf64_Ehdr eh = get_ehdr(im);
    uint64_t end = 0;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph = get_phdr(im, i);
        if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end)
            end = ph.p_offset + ph.p_filesz;
    }
    return end;
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
}

static int call(void *h, const char *name) {
    void *p = simelf_sym(h, name);
    CHECK(p != NULL);
    int_fn f;
    memcpy(&f, &p, sizeof f);
    return f();
}

static void expect_rejected(const image *im, const char *reason) {
    char msg[MSGSZ];
    int rc = check_exact(im->bytes, im->size, msg);
    CHECK(rc == -1, "msg: \"%s\"", msg);
    CHECK(strncmp(msg, REJECTED, strlen(REJECTED)) == 0, "msg: \"%s\"", msg);
    if (strstr(msg, reason) == NULL) {
        fprintf(stderr, "expected a rejection naming \"%s\", got \"%s\"\n", reason, msg);
        CHECK(0);
    }
}

static void expect_accepted(const image *im) {
    char msg[MSGSZ];
    int rc = check_exact(im->bytes, im->size, msg);
    CHECK(rc == 0, "msg: \"%s\"", msg);
    CHECK(msg[0] == '\0');
}

static image valid, fx_one, fx_two;

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */
static void test_valid_module(void) {
    char msg[MSGSZ] = "junk";
    CHECK(simelf_check(valid.bytes, valid.size, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(msg[0] == '\0');
    void *h = (void *)&msg;
    CHECK(simelf_open(valid.bytes, valid.size, &h, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(h != NULL);
    CHECK(call(h, "fixture_answer") == 42);
    CHECK(simelf_sym(h, "no_such_symbol") == NULL);
    CHECK(simelf_sym(h, "fixture_data") == NULL);   /* data, not a function */
    CHECK(simelf_sym(h, "fixture_hidden") == NULL); /* not exported */
    CHECK(simelf_sym(h, "") == NULL);
    CHECK(simelf_sym(h, NULL) == NULL);
    CHECK(simelf_sym(NULL, "fixture_answer") == NULL);
    simelf_close(h);
    simelf_close(NULL);
}

static void test_invalid_fixtures(void) {
    static const struct {
        const char *path, *reason;
    } cases[] = {
        {FX_CTOR, "DT_INIT_ARRAYSZ"},
        {FX_DTOR, "DT_FINI_ARRAYSZ"},
        {FX_TLS, "PT_TLS segment at program header"},
        {FX_LIBC, "DT_INIT (initialiser function)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        image im = read_image(cases[i].path);
        expect_rejected(&im, cases[i].reason);
        char msg[MSGSZ];
        void *h = (void *)&msg;
        CHECK(simelf_open(im.bytes, im.size, &h, msg, sizeof msg) == -1);
        CHECK(h == NULL);
        CHECK(strstr(msg, cases[i].reason) != NULL, "msg: \"%s\"", msg);
        printf("  %s: %s\n", strrchr(cases[i].path, '/') + 1, msg);
        free(im.bytes);
    }
}

static void test_dlopen_failure(void) {
    image im = read_image(FX_UNRESOLVED);
    expect_accepted(&im);
    char msg[MSGSZ];
    void *h = (void *)&msg;
    CHECK(simelf_open(im.bytes, im.size, &h, msg, sizeof msg) == -1);
    CHECK(h == NULL);
    CHECK(strncmp(msg, "module load failed: ", 20) == 0, "msg: \"%s\"", msg);
    CHECK(strstr(msg, "kctx_elf_fixture_missing") != NULL, "msg: \"%s\"", msg);
    printf("  fx_unresolved: %s\n", msg);
    free(im.bytes);
}

static void test_bad_inputs(void) {
    char msg[MSGSZ];
    void *h = (void *)&msg;
    CHECK(simelf_check(NULL, 100, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "NULL") != NULL, "msg: \"%s\"", msg);
    CHECK(simelf_check(NULL, 0, NULL, 0) == -1);
    CHECK(simelf_open(NULL, 100, &h, msg, sizeof msg) == -1);
    CHECK(h == NULL);
    CHECK(simelf_open(valid.bytes, valid.size, NULL, msg, sizeof msg) == -1);
    CHECK(msg[0] != '\0');

    static const size_t shorts[] = {0, 1, 4, 16, 63};
    for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; ++i) {
        CHECK(check_exact(valid.bytes, shorts[i], msg) == -1);
        CHECK(strstr(msg, "too small") != NULL, "msg: \"%s\"", msg);
    }
    /* The header alone: the program headers are cut off. */
    CHECK(check_exact(valid.bytes, 64, msg) == -1);
    CHECK(strstr(msg, "program header table") != NULL, "msg: \"%s\"", msg);

    /* Not ELF at all. */
    static const char text[] =
        "#!/bin/sh\necho this is not an ELF shared object, but it is long enough\n";
    CHECK(check_exact((const unsigned char *)text, sizeof text, msg) == -1);
    CHECK(strstr(msg, "not an ELF file") != NULL, "msg: \"%s\"", msg);

    /* Message buffers: none, one byte, truncated. */
    CHECK(simelf_check(text, sizeof text, NULL, 0) == -1);
    CHECK(simelf_check(text, sizeof text, NULL, 100) == -1);
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK(simelf_check(text, sizeof text, tiny, 1) == -1);
    CHECK(tiny[0] == '\0' && tiny[1] == 'x');
    CHECK(simelf_check(text, sizeof text, tiny, sizeof tiny) == -1);
    CHECK(tiny[sizeof tiny - 1] == '\0' && strlen(tiny) == sizeof tiny - 1);
}

static void test_header_rules(void) {
    image im;
    Elf64_Ehdr eh;

#define HEADER_CASE(stmt, reason)     \
    do {                              \
        im = copy_image(&valid);      \
        eh = get_ehdr(&im);           \
        stmt;                         \
        put_ehdr(&im, &eh);           \
        expect_rejected(&im, reason); \
        free(im.bytes);               \
    } while (0)

    HEADER_CASE(eh.e_ident[EI_MAG1] = 'e', "not an ELF file");
    HEADER_CASE(eh.e_ident[EI_CLASS] = ELFCLASS32, "need ELFCLASS64");
    HEADER_CASE(eh.e_ident[EI_CLASS] = ELFCLASSNONE, "need ELFCLASS64");
    HEADER_CASE(eh.e_ident[EI_DATA] = ELFDATA2MSB, "data encoding 2 at offset 0x5");
    HEADER_CASE(eh.e_ident[EI_VERSION] = 0, "ident version");
    HEADER_CASE(eh.e_type = ET_EXEC, "need ET_DYN");
    HEADER_CASE(eh.e_type = ET_REL, "need ET_DYN");
    HEADER_CASE(eh.e_machine = (eh.e_machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64),
                "ELF machine");
    HEADER_CASE(eh.e_machine = EM_386, "ELF machine 3 at offset 0x12");
    HEADER_CASE(eh.e_version = 2, "ELF version");
    HEADER_CASE(eh.e_ehsize = 52, "ELF header size");
    HEADER_CASE(eh.e_phentsize = 32, "program header entry size");
    HEADER_CASE(eh.e_phnum = 0, "no program headers");
    HEADER_CASE(eh.e_phnum = PN_XNUM, "extended program header numbering");
    HEADER_CASE(eh.e_phnum = 0xfffe, "program header table has 65534 entries");
    HEADER_CASE(eh.e_phnum = 257, "at most 256 are allowed");
    HEADER_CASE(eh.e_phoff = UINT64_MAX - 8, "program header table");
    HEADER_CASE(eh.e_phoff = UINT64_MAX, "program header table");
    HEADER_CASE(eh.e_phoff = valid.size - sizeof(Elf64_Phdr), "program header table");
    HEADER_CASE(eh.e_phoff = valid.size, "program header table");
#undef HEADER_CASE
}

static void test_segment_rules(void) {
    Elf64_Ehdr eh0 = get_ehdr(&valid);
    int idyn = find_phdr(&valid, PT_DYNAMIC);
    int iload = find_phdr(&valid, PT_LOAD);
    int istack = find_phdr(&valid, PT_GNU_STACK);
    CHECK(idyn >= 0 && iload >= 0 && istack >= 0);
    image im;
    Elf64_Phdr ph;
    char want[128];

#define SEGMENT_CASE(index, stmt, reason)      \
    do {                                       \
        im = copy_image(&valid);               \
        ph = get_phdr(&im, (unsigned)(index)); \
        stmt;                                  \
        put_phdr(&im, (unsigned)(index), &ph); \
        expect_rejected(&im, reason);          \
        free(im.bytes);                        \
    } while (0)

    snprintf(want, sizeof want,
             "PT_TLS segment at program header %d (offset 0x%llx): thread-local storage", istack,
             (unsigned long long)(eh0.e_phoff + (uint64_t)istack * sizeof(Elf64_Phdr)));
    SEGMENT_CASE(istack, ph.p_type = PT_TLS, want);
    SEGMENT_CASE(istack, ph.p_type = PT_DYNAMIC, "second PT_DYNAMIC");
    SEGMENT_CASE(idyn, ph.p_type = PT_NULL, "no PT_DYNAMIC");
    SEGMENT_CASE(iload, ph.p_filesz = valid.size + 1, "PT_LOAD segment");
    SEGMENT_CASE(iload, ph.p_offset = UINT64_MAX - 4, "PT_LOAD segment");
    SEGMENT_CASE(iload, (ph.p_filesz = 1, ph.p_offset = UINT64_MAX), "PT_LOAD segment");
    SEGMENT_CASE(iload, ph.p_memsz = ph.p_filesz - 1, "exceeds memory size");
    SEGMENT_CASE(iload, ph.p_vaddr = UINT64_MAX - 16, "overflows");
    SEGMENT_CASE(idyn, ph.p_offset = UINT64_MAX - 8, "dynamic table");
    SEGMENT_CASE(idyn, ph.p_filesz = UINT64_MAX, "dynamic table");
    SEGMENT_CASE(idyn, ph.p_offset = valid.size - 8, "dynamic table");
    SEGMENT_CASE(idyn, ph.p_filesz += 1, "not a multiple");
    SEGMENT_CASE(idyn, ph.p_filesz = 0, "no DT_NULL");
    SEGMENT_CASE(idyn, ph.p_vaddr += 16, "not inside a PT_LOAD");
    SEGMENT_CASE(idyn, ph.p_vaddr = UINT64_MAX - 8, "not inside a PT_LOAD");
    /* The dynamic table moved onto the ELF header: rejected, whatever the reason. */
    SEGMENT_CASE(idyn, ph.p_offset = 0, REJECTED);
#undef SEGMENT_CASE

    /* No PT_LOAD at all. */
    im = copy_image(&valid);
    for (unsigned i = 0; i < eh0.e_phnum; ++i) {
        ph = get_phdr(&im, i);
        if (ph.p_type == PT_LOAD) {
            ph.p_type = PT_NULL;
            put_phdr(&im, i, &ph);
        }
    }
    expect_rejected(&im, "no PT_LOAD");
    free(im.bytes);

    /* The table checked must be the table loaded: a clean copy of the
     * dynamic table appended to the file (outside every PT_LOAD) and named by
     * PT_DYNAMIC's p_offset, while p_vaddr still maps the original, which
     * now asks for an initialiser. */
    {
        Elf64_Phdr d = get_phdr(&valid, (unsigned)idyn);
        size_t off = (valid.size + 15) & ~(size_t)15;
        image big = {calloc(1, off + d.p_filesz), off + d.p_filesz};
        CHECK(big.bytes != NULL);
        memcpy(big.bytes, valid.bytes, valid.size);
        memcpy(big.bytes + off, valid.bytes + d.p_offset, d.p_filesz);
        int k = harmless_dyn(&big, 0);
        CHECK(k >= 0);
        put_dyn(&big, (unsigned)k, DT_INIT, 0x1000);
        d.p_offset = off;
        put_phdr(&big, (unsigned)idyn, &d);
        expect_rejected(&big, "PT_DYNAMIC at program header");
        expect_rejected(&big, "not inside a PT_LOAD");
        free(big.bytes);
    }

    /* PT_PHDR, where the linker emits one, must name the table checked. */
    int iphdr = find_phdr(&valid, PT_PHDR);
    if (iphdr >= 0) {
        im = copy_image(&valid);
        ph = get_phdr(&im, (unsigned)iphdr);
        ph.p_offset += 8;
        ph.p_vaddr += 8;
        put_phdr(&im, (unsigned)iphdr, &ph);
        expect_rejected(&im, "PT_PHDR");
        free(im.bytes);
    }
    /* A note outside the loaded image. */
    int inote = find_phdr(&valid, PT_NOTE);
    if (inote >= 0) {
        im = copy_image(&valid);
        ph = get_phdr(&im, (unsigned)inote);
        ph.p_vaddr += 0x10000000;
        put_phdr(&im, (unsigned)inote, &ph);
        expect_rejected(&im, "PT_NOTE");
        free(im.bytes);
    }
}

static void test_dynamic_rules(void) {
    int a = harmless_dyn(&valid, 0), b = harmless_dyn(&valid, 1);
    CHECK(a >= 0 && b >= 0);
    image im;

#define DYN_CASE(stmts, expectation) \
    do {                             \
        im = copy_image(&valid);     \
        stmts;                       \
        expectation;                 \
        free(im.bytes);              \
    } while (0)
#define REJECTS(reason) expect_rejected(&im, reason)
#define ACCEPTS expect_accepted(&im)

    DYN_CASE(put_dyn(&im, (unsigned)a, DT_INIT, 0x1000),
             REJECTS("DT_INIT (initialiser function) at dynamic entry"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_FINI, 0x1000),
             REJECTS("DT_FINI (finaliser function) at dynamic entry"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_PREINIT_ARRAY, 0x1000), REJECTS("DT_PREINIT_ARRAY at"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_PREINIT_ARRAYSZ, 0), REJECTS("DT_PREINIT_ARRAYSZ at"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_INIT_ARRAYSZ, 8), REJECTS("DT_INIT_ARRAYSZ 0x8"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_FINI_ARRAYSZ, 16), REJECTS("DT_FINI_ARRAYSZ 0x10"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_INIT_ARRAYSZ, 0), ACCEPTS);
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_FINI_ARRAYSZ, 0), ACCEPTS);
    DYN_CASE((put_dyn(&im, (unsigned)a, DT_INIT_ARRAY, 0x1000),
              put_dyn(&im, (unsigned)b, DT_INIT_ARRAYSZ, 0)),
             ACCEPTS);
    DYN_CASE((put_dyn(&im, (unsigned)a, DT_FINI_ARRAYSZ, 0),
              put_dyn(&im, (unsigned)b, DT_FINI_ARRAY, 0x1000)),
             ACCEPTS);
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_INIT_ARRAY, 0x1000),
             REJECTS("DT_INIT_ARRAY without DT_INIT_ARRAYSZ"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_FINI_ARRAY, 0x1000),
             REJECTS("DT_FINI_ARRAY without DT_FINI_ARRAYSZ"));
    /* A repeated tag: every occurrence counts. */
    DYN_CASE((put_dyn(&im, (unsigned)a, DT_INIT_ARRAYSZ, 0),
              put_dyn(&im, (unsigned)b, DT_INIT_ARRAYSZ, 8)),
             REJECTS("DT_INIT_ARRAYSZ 0x8"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_RELAENT, 12), REJECTS("DT_RELAENT 12"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_PLTREL, DT_REL), REJECTS("DT_PLTREL 17"));
    if (find_dyn(&valid, DT_RELAENT) < 0)
        DYN_CASE(put_dyn(&im, (unsigned)a, DT_RELA, 0x1000), REJECTS("DT_RELA without DT_RELAENT"));
#ifdef DT_RELR
    if (find_dyn(&valid, DT_RELRENT) < 0)
        DYN_CASE(put_dyn(&im, (unsigned)a, DT_RELR, 0x1000), REJECTS("DT_RELR without DT_RELRENT"));
    DYN_CASE(put_dyn(&im, (unsigned)a, DT_RELRENT, 4), REJECTS("DT_RELRENT 4"));
#endif

    /* Entries after DT_NULL are not part of the table. */
    int knull = find_dyn(&valid, DT_NULL);
    CHECK(knull >= 0);
    if ((unsigned)knull + 1 < dyn_count(&valid)) {
        DYN_CASE(put_dyn(&im, (unsigned)knull + 1, DT_INIT, 0x1000), ACCEPTS);
        DYN_CASE((put_dyn(&im, (unsigned)knull, DT_DEBUG, 0),
                  put_dyn(&im, (unsigned)knull + 1, DT_INIT, 0x1000)),
                 REJECTS("DT_INIT ("));
    }
    /* No terminator. */
    DYN_CASE(for (unsigned k = (unsigned)knull; k < dyn_count(&im); ++k)
                 put_dyn(&im, k, DT_DEBUG, 0),
             REJECTS("no DT_NULL terminator"));
#undef DYN_CASE
#undef REJECTS
#undef ACCEPTS
}

/* Truncation: every length through the end of the program headers, then
 * ~200 spread lengths and the edges of the dynamic table and the loaded
 * segments. A truncation that cuts the program headers, the dynamic table
 * or a loaded segment must be rejected; one that is accepted must load. */
static void test_truncation(void) {
    uint64_t ph_end = phdrs_end(&valid), d_end = dyn_end(&valid), l_end = loads_end(&valid);
    uint64_t needed = ph_end;
    if (d_end > needed) needed = d_end;
    if (l_end > needed) needed = l_end;
    CHECK(needed <= valid.size);

    size_t lens[1024];
    size_t n = 0;
    for (uint64_t L = 0; L <= ph_end; ++L) {
        if (n == sizeof lens / sizeof lens[0]) break;
        lens[n++] = (size_t)L;
    }
    CHECK(n == ph_end + 1);
    for (unsigned k = 0; k <= 200 && n < sizeof lens / sizeof lens[0]; ++k)
        lens[n++] = (size_t)(ph_end + (valid.size - ph_end) * k / 200);
    const uint64_t edges[] = {d_end - 1, d_end,     d_end + 1,     l_end - 1,
                              l_end,     l_end + 1, valid.size - 1};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0] && n < sizeof lens / sizeof lens[0]; ++k)
        if (edges[k] <= valid.size) lens[n++] = (size_t)edges[k];

    unsigned accepted = 0, loaded = 0;
    for (size_t i = 0; i < n; ++i) {
        char msg[MSGSZ];
        size_t L = lens[i];
        int rc = check_exact(valid.bytes, L, msg);
        if (L < needed) CHECK(rc == -1, "msg: \"%s\"", msg);
        if (rc != 0) {
            CHECK(strncmp(msg, REJECTED, strlen(REJECTED)) == 0, "msg: \"%s\"", msg);
            continue;
        }
        ++accepted;
        /* Accepted: only unloaded bytes (section headers, symbol tables)
         * are missing; the module loads and works. */
        if (loaded < 20 || L == valid.size) {
            void *h = NULL;
            CHECK(simelf_open(valid.bytes, L, &h, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
            CHECK(call(h, "fixture_answer") == 42);
            simelf_close(h);
            ++loaded;
        }
    }
    CHECK(accepted > 0); /* at least the whole image */
    printf(
        "  %zu truncations (program headers end 0x%llx, dynamic 0x%llx, loads 0x%llx, size 0x%zx): "
        "%u accepted, %u of them loaded\n",
        n, (unsigned long long)ph_end, (unsigned long long)d_end, (unsigned long long)l_end,
        valid.size, accepted, loaded);
}

/* Single-byte mutations of the header, the program headers and the dynamic
 * table, then random multi-byte ones: check only, never crash. */
static void test_mutations(void) {
    uint64_t ph_end = phdrs_end(&valid);
    Elf64_Phdr d = get_phdr(&valid, (unsigned)find_phdr(&valid, PT_DYNAMIC));
    image im = copy_image(&valid);
    unsigned checks = 0, accepted = 0;
    char msg[MSGSZ];

    for (int region = 0; region < 2; ++region) {
        uint64_t lo = region == 0 ? 0 : d.p_offset,
                 hi = region == 0 ? ph_end : d.p_offset + d.p_filesz;
        for (uint64_t pos = lo; pos < hi; ++pos) {
            unsigned char orig = im.bytes[pos];
            const unsigned char vals[] = {0x00,
                                          0xff,
                                          0x7f,
                                          0x80,
                                          (unsigned char)(orig ^ 0x01),
                                          (unsigned char)(orig ^ 0x80),
                                          (unsigned char)(orig + 1),
                                          (unsigned char)(orig - 1)};
            for (size_t v = 0; v < sizeof vals; ++v) {
                im.bytes[pos] = vals[v];
                int rc = check_exact(im.bytes, im.size, msg);
                CHECK(rc == 0 || rc == -1);
                if (rc != 0)
                    CHECK(strncmp(msg, REJECTED, strlen(REJECTED)) == 0, "msg: \"%s\"", msg);
                accepted += rc == 0;
                ++checks;
            }
            im.bytes[pos] = orig;
        }
    }

    /* Random: a few bytes, or a whole 16/32/64-bit field set to an edge value. */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    static const uint64_t edge[] = {0,
                                    1,
                                    8,
                                    16,
                                    56,
                                    64,
                                    0x7fffffffffffffffull,
                                    0x8000000000000000ull,
                                    UINT64_MAX,
                                    UINT64_MAX - 7};
    for (unsigned it = 0; it < 20000; ++it) {
        memcpy(im.bytes, valid.bytes, valid.size);
        unsigned edits = 1 + (unsigned)(it % 4);
        for (unsigned e = 0; e < edits; ++e) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t r = seed >> 16;
            uint64_t lo = (r & 1) ? d.p_offset : 0, hi = (r & 1) ? d.p_offset + d.p_filesz : ph_end;
            uint64_t pos = lo + (r >> 8) % (hi - lo);
            if ((r >> 1) & 1) {
                im.bytes[pos] = (unsigned char)(r >> 40);
            } else {
                uint64_t val = ((r >> 2) & 1) ? edge[(r >> 40) % (sizeof edge / sizeof edge[0])]
                                              : (r >> 20) % (valid.size * 2 + 1);
                size_t width = (size_t)1 << (1 + (r >> 4) % 3); /* 2, 4 or 8 */
                if (pos + width > hi) pos = hi - width;
                memcpy(im.bytes + pos, &val, width); /* little-endian host: the low bytes */
            }
        }
        int rc = check_exact(im.bytes, im.size, msg);
        CHECK(rc == 0 || rc == -1);
        accepted += rc == 0;
        ++checks;
    }
    free(im.bytes);
    printf("  %u mutated images checked, %u accepted\n", checks, accepted);
}

static void test_distinct_modules(void) {
    char msg[MSGSZ];
    void *h1 = NULL, *h2 = NULL, *v1 = NULL, *v2 = NULL;
    CHECK(simelf_open(fx_one.bytes, fx_one.size, &h1, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(simelf_open(fx_two.bytes, fx_two.size, &h2, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(h1 != h2);
    CHECK(simelf_sym(h1, "fixture_which") != simelf_sym(h2, "fixture_which"));
    CHECK(call(h1, "fixture_which") == 1);
    CHECK(call(h2, "fixture_which") == 2);
    CHECK(simelf_sym(h1, "fixture_answer") == NULL);

    /* The same bytes twice: two objects with their own data. */
    CHECK(simelf_open(valid.bytes, valid.size, &v1, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(simelf_open(valid.bytes, valid.size, &v2, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(simelf_sym(v1, "fixture_bump") != simelf_sym(v2, "fixture_bump"));
    CHECK(call(v1, "fixture_bump") == 1);
    CHECK(call(v1, "fixture_bump") == 2);
    CHECK(call(v2, "fixture_bump") == 1);
    simelf_close(h1);
    /* Closing one leaves the others working. */
    CHECK(call(h2, "fixture_which") == 2);
    CHECK(call(v2, "fixture_bump") == 2);
    simelf_close(v1);
    simelf_close(v2);
    simelf_close(h2);
}

/* Objects the dynamic loader has loaded (the program and its libraries
 * included). */
static int count_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

static int loaded_objects(void) {
    int n = 0;
    dl_iterate_phdr(count_object, &n);
    return n;
}

/* Kills: a loader that dlopens every load of an immutable module (one
 * dynamic-loader object per load: the cost the sim's prepare used to grow
 * with), one that shares modules with data of their own, and one that
 * unloads a shared object while a handle still uses it. sim_elf.h: an
 * immutable module (fx_one: no globals, bound at load, so every writable
 * byte is in PT_GNU_RELRO) shares one object with every live handle of the
 * same bytes; a module with data (fx_valid's counter) gets an object per
 * load (test_distinct_modules). */
static void test_identical_immutable_modules_share_one_object(void) {
    char msg[MSGSZ];
    int base = loaded_objects();
    image again = copy_image(&fx_one); /* the same bytes in another buffer */
    void *a = NULL, *b = NULL, *c = NULL, *v1 = NULL, *v2 = NULL;
    CHECK(simelf_open(fx_one.bytes, fx_one.size, &a, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 1);
    CHECK(simelf_open(again.bytes, again.size, &b, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 1); /* shared: no second object */
    CHECK(a != b);                       /* handles are each its own */
    CHECK(simelf_sym(a, "fixture_which") == simelf_sym(b, "fixture_which"));
    /* other bytes: an object of their own */
    CHECK(simelf_open(fx_two.bytes, fx_two.size, &c, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 2);
    CHECK(call(c, "fixture_which") == 2);
    /* data of its own: never shared */
    CHECK(simelf_open(valid.bytes, valid.size, &v1, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(simelf_open(valid.bytes, valid.size, &v2, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 4);
    simelf_close(v1);
    simelf_close(v2);
    /* the shared object lives while a handle does */
    simelf_close(a);
    CHECK(loaded_objects() == base + 2);
    CHECK(call(b, "fixture_which") == 1);
    simelf_close(b);
    CHECK(loaded_objects() == base + 1); /* its last handle unloaded it */
    simelf_close(c);
    CHECK(loaded_objects() == base);
    free(again.bytes);
}

/* Kills: a shared-object lookup that trusts the hash (and size) without
 * comparing the bytes (sim_elf.c, listed_find). With every hash forced
 * equal, fx_one and fx_two (the same size, other bytes) must still load as
 * two objects, each itself, while a copy of fx_one still shares fx_one's. */
static void test_sharing_compares_bytes_not_the_hash(void) {
    char msg[MSGSZ];
    CHECK(fx_one.size == fx_two.size);
    CHECK(memcmp(fx_one.bytes, fx_two.bytes, fx_one.size) != 0);
    simelf_test_constant_hash(1);
    int base = loaded_objects();
    void *a = NULL, *b = NULL, *a2 = NULL;
    CHECK(simelf_open(fx_one.bytes, fx_one.size, &a, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(simelf_open(fx_two.bytes, fx_two.size, &b, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 2);
    CHECK(call(a, "fixture_which") == 1);
    CHECK(call(b, "fixture_which") == 2);
    image again = copy_image(&fx_one);
    CHECK(simelf_open(again.bytes, again.size, &a2, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(loaded_objects() == base + 2);
    CHECK(simelf_sym(a2, "fixture_which") == simelf_sym(a, "fixture_which"));
    simelf_close(a);
    simelf_close(b);
    simelf_close(a2);
    CHECK(loaded_objects() == base);
    simelf_test_constant_hash(0);
    free(again.bytes);
}

/* Descriptor numbers of open kctx module memfds. */
static int module_fds(int *fds, int max) {
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = '\0';
        if (strstr(target, "memfd:kctx-sim-module") != NULL && n < max) fds[n++] = atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* A module that outlives dlclose (DF_1_NODELETE) keeps its name,
 * /proc/self/fd/<n>, after its descriptor is closed. A later module that
 * gets descriptor <n> must still be itself. */
static void test_name_reuse(void) {
    image nd = read_image(FX_NODELETE);
    char msg[MSGSZ], path[64];
    void *h = NULL;
    int fds[8];
    CHECK(module_fds(fds, 8) == 0);
    CHECK(simelf_open(nd.bytes, nd.size, &h, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    CHECK(call(h, "fixture_which") == 3);
    CHECK(module_fds(fds, 8) == 1);
    int stale = fds[0];
    simelf_close(h);
    CHECK(module_fds(fds, 8) == 0);
    /* The hazard is real: the name still finds the old object. */
    snprintf(path, sizeof path, "/proc/self/fd/%d", stale);
    void *old = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    CHECK(old != NULL);
    dlclose(old);

    for (int round = 0; round < 3; ++round) {
        void *a = NULL, *b = NULL;
        CHECK(simelf_open(valid.bytes, valid.size, &a, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
        CHECK(call(a, "fixture_answer") == 42);
        CHECK(simelf_sym(a, "fixture_which") == NULL);
        CHECK(simelf_open(fx_one.bytes, fx_one.size, &b, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
        CHECK(call(b, "fixture_which") == 1);
        CHECK(module_fds(fds, 8) == 2);
        CHECK(fds[0] != stale && fds[1] != stale);
        simelf_close(b);
        simelf_close(a);
    }
    /* The stale number is free again for ordinary use. */
    CHECK(module_fds(fds, 8) == 0);
    free(nd.bytes);
}

#define THREADS 4
#define THREAD_ROUNDS 40

static void *load_worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    char msg[MSGSZ];
    for (unsigned r = 0; r < THREAD_ROUNDS; ++r) {
        void *h1 = NULL, *h2 = NULL;
        const image *first = ((id + r) & 1) ? &fx_one : &fx_two;
        const image *second = first == &fx_one ? &fx_two : &fx_one;
        CHECK(simelf_open(first->bytes, first->size, &h1, msg, sizeof msg) == 0, "msg: \"%s\"",
              msg);
        CHECK(simelf_open(second->bytes, second->size, &h2, msg, sizeof msg) == 0, "msg: \"%s\"",
              msg);
        CHECK(call(h1, "fixture_which") == (first == &fx_one ? 1 : 2));
        CHECK(call(h2, "fixture_which") == (second == &fx_one ? 1 : 2));
        simelf_close(h1);
        CHECK(call(h2, "fixture_which") == (second == &fx_one ? 1 : 2));
        simelf_close(h2);
    }
    return NULL;
}

static void test_concurrent_loads(void) {
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; ++i)
        CHECK(pthread_create(&t[i], NULL, load_worker, (void *)(uintptr_t)i) == 0);
    for (unsigned i = 0; i < THREADS; ++i) CHECK(pthread_join(t[i], NULL) == 0);
}

static void test_no_fd_leak(void) {
    image bad = read_image(FX_CTOR), unresolved = read_image(FX_UNRESOLVED);
    char msg[MSGSZ];
    void *h = NULL;
    /* Warm up (the runtime may open descriptors of its own on first use). */
    CHECK(simelf_open(valid.bytes, valid.size, &h, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
    simelf_close(h);
    CHECK(simelf_open(unresolved.bytes, unresolved.size, &h, msg, sizeof msg) == -1);

    int before = count_fds();
    for (int i = 0; i < 200; ++i) {
        CHECK(simelf_open(valid.bytes, valid.size, &h, msg, sizeof msg) == 0, "msg: \"%s\"", msg);
        CHECK(call(h, "fixture_answer") == 42);
        simelf_close(h);
        if (i % 10 == 0) {
            CHECK(simelf_open(bad.bytes, bad.size, &h, msg, sizeof msg) == -1);
            CHECK(simelf_open(unresolved.bytes, unresolved.size, &h, msg, sizeof msg) == -1);
        }
    }
    int after = count_fds();
    CHECK(before == after);
    printf("  200 loads: %d descriptors before and after\n", before);
    free(bad.bytes);
    free(unresolved.bytes);
}

int main(void) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"valid_module", test_valid_module},
        {"invalid_fixtures", test_invalid_fixtures},
        {"dlopen_failure", test_dlopen_failure},
        {"bad_inputs", test_bad_inputs},
        {"header_rules", test_header_rules},
        {"segment_rules", test_segment_rules},
        {"dynamic_rules", test_dynamic_rules},
        {"truncation", test_truncation},
        {"mutations", test_mutations},
        {"distinct_modules", test_distinct_modules},
        {"name_reuse", test_name_reuse},
        {"concurrent_loads", test_concurrent_loads},
        {"no_fd_leak", test_no_fd_leak},
        {"identical_immutable_modules_share_one_object",
         test_identical_immutable_modules_share_one_object},
        {"sharing_compares_bytes_not_the_hash", test_sharing_compares_bytes_not_the_hash},
    };
    /* The first failed check ends the program (exit status 1): the tests go
     * on to use what a check vouched for (an open handle, a symbol). */
    ktc_exit_on_failure();
    valid = read_image(FX_VALID);
    fx_one = read_image(FX_ONE);
    fx_two = read_image(FX_TWO);
    int passed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
        printf("%s\n", tests[i].name);
        fflush(stdout);
        tests[i].fn();
        ++passed;
    }
    free(valid.bytes);
    free(fx_one.bytes);
    free(fx_two.bytes);
    printf("%d passed, 0 failed\n", passed);
    return 0;
}
