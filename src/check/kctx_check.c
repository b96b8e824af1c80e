/*
 * kctx_check.c — the check vocabulary's implementation (kctx_test_check.h):
 * the counters, the failure report and sink, the summary line, and the
 * file reader both need (ktc_read_file). A
 * library of its own (kctx_check) because two kinds of program use it: the
 * test programs (through tests/common's kctx_test_common, which links it)
 * and the conformance suite, which the installed `kctx probe` links
 * (src/conformance): installed code, so it lives outside tests/.
 */
#include "kctx_test_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading a file (ktc_read_file) -------------------------------------- */

static void set_why(char *why, size_t why_size, const char *what, const char *path, int err) {
    if (why != NULL && why_size > 0)
        snprintf(why, why_size, "%s %s: %s", what, path, err ? strerror(err) : "short read");
}

void *ktc_read_file(const char *path, size_t *size, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_why(why, why_size, "cannot open", path, errno);
        return NULL;
    }
    /* Read to the end rather than trusting a size from fseek/ftell, so
     * that pipes and files that change size are read as they are. */
    size_t len = 0, cap = 0;
    char *buf = NULL;
    for (;;) {
        if (cap - len < 2) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                set_why(why, why_size, "out of memory reading", path, ENOMEM);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (err) {
        free(buf);
        set_why(why, why_size, "cannot read", path, err);
        return NULL;
    }
    buf[len] = '\0';
    if (size != NULL) *size = len;
    return buf;
}

int ktc_exit_status(unsigned failed, unsigned skipped) {
    return failed ? 1 : (skipped ? KTC_EXIT_SKIP : 0);
}

int ktc_summary(FILE *out, unsigned passed, unsigned failed, unsigned skipped) {
    if (skipped)
        fprintf(out, "%u passed, %u failed, %u skipped\n", passed, failed, skipped);
    else
        fprintf(out, "%u passed, %u failed\n", passed, failed);
    fflush(out);
    return ktc_exit_status(failed, skipped);
}

/* ---- checks (kctx_test_check.h) -------------------------------------------- */

static atomic_uint g_held, g_failed, g_test_failed;
static atomic_int g_exit_on_failure;
static const char *(*_Atomic g_note)(void);
static atomic_flag g_sink_lock = ATOMIC_FLAG_INIT;
static ktc_failure_sink g_sink; /* under g_sink_lock */
static void *g_sink_arg;

static void sink_lock(void) {
    while (atomic_flag_test_and_set_explicit(&g_sink_lock, memory_order_acquire)) {
    }
}
static void sink_unlock(void) { atomic_flag_clear_explicit(&g_sink_lock, memory_order_release); }

int ktc_held(void) {
    atomic_fetch_add_explicit(&g_held, 1, memory_order_relaxed);
    return 1;
}

int ktc_fail(const char *file, int line, const char *check, const char *what, const char *fmt,
             ...) {
    unsigned nth = atomic_fetch_add(&g_test_failed, 1);
    atomic_fetch_add(&g_failed, 1);
    /* text: "what: seen", or either alone */
    char text[1536] = "";
    size_t n = 0;
    if (what != NULL && what[0] != '\0') {
        snprintf(text, sizeof text, "%s%s", what, fmt != NULL && fmt[0] != '\0' ? ": " : "");
        n = strlen(text);
    }
    if (fmt != NULL && n < sizeof text) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text + n, sizeof text - n, fmt, ap);
        va_end(ap);
    }
    const char *(*note_fn)(void) = atomic_load(&g_note);
    const char *note = note_fn != NULL ? note_fn() : NULL;
    if (note != NULL && note[0] != '\0') {
        n = strlen(text);
        snprintf(text + n, sizeof text - n, " [note: %s]", note);
    }
    sink_lock();
    ktc_failure_sink sink = g_sink;
    if (sink != NULL) sink(g_sink_arg, file, line, text);
    sink_unlock();
    if (sink == NULL && nth <= KTC_MAX_REPORTS) {
        fflush(stdout); /* the report lands after what the program printed so far */
        if (nth == KTC_MAX_REPORTS)
            fprintf(stderr, "(more failures in this test: counted, not printed)\n");
        else if (file == NULL)
            fprintf(stderr, "%s\n", text);
        else if (check == NULL)
            fprintf(stderr, "%s:%d: FAIL: %s\n", file, line, text);
        else
            fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, check, text);
    }
    if (atomic_load(&g_exit_on_failure)) {
        fflush(stdout);
        fflush(stderr);
        exit(1);
    }
    return 0;
}

int ktc_fail_status(const char *file, int line, const char *check, const char *what,
                    const char *got, const char *want1, const char *want2, const char *last_error) {
    int err = last_error != NULL && last_error[0] != '\0';
    return ktc_fail(file, line, check, what, "%s, expected %s%s%s%s%s%s", got, want1,
                    want2 ? " or " : "", want2 ? want2 : "", err ? " (" : "", err ? last_error : "",
                    err ? ")" : "");
}

int ktc_check_eq(const char *file, int line, uint64_t a, uint64_t b, const char *ea,
                 const char *eb) {
    if (a == b) return ktc_held();
    char what[512];
    snprintf(what, sizeof what, "%s == %s", ea, eb);
    return ktc_fail(file, line, "CHECK_EQ", what, "left %lld (0x%llx), right %lld (0x%llx)",
                    (long long)a, (unsigned long long)a, (long long)b, (unsigned long long)b);
}

int ktc_check_contains(const char *file, int line, const char *text, const char *part,
                       const char *etext, const char *epart) {
    if (text != NULL && part != NULL && strstr(text, part) != NULL) return ktc_held();
    char what[512];
    snprintf(what, sizeof what, "%s contains %s", etext, epart);
    if (text == NULL) return ktc_fail(file, line, "CHECK_CONTAINS", what, "the text is NULL");
    return ktc_fail(file, line, "CHECK_CONTAINS", what, "\"%s\" lacks \"%s\"", text,
                    part ? part : "(null)");
}

unsigned ktc_checks_held(void) { return atomic_load(&g_held); }
unsigned ktc_checks_failed(void) { return atomic_load(&g_failed); }
void ktc_test_begin(void) { atomic_store(&g_test_failed, 0); }
unsigned ktc_test_failures(void) { return atomic_load(&g_test_failed); }
void ktc_exit_on_failure(void) { atomic_store(&g_exit_on_failure, 1); }
void ktc_failure_note(const char *(*note)(void)) { atomic_store(&g_note, note); }

void ktc_set_failure_sink(ktc_failure_sink sink, void *arg) {
    sink_lock();
    g_sink = sink;
    g_sink_arg = arg;
    sink_unlock();
}

int ktc_check_summary(void) {
    return ktc_summary(stdout, ktc_checks_held(), ktc_checks_failed(), 0);
}
