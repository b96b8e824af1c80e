/*
 * kctx_test_check.h — the one check vocabulary of kctx's C test programs
 * (src/check, library kctx_check, which tests/common's kctx_test_common links;
 * the conformance probes use it too). A harness (tests/kctx/kt.h, the sim's
 * platform/sim/tests/harness.h, the image tests' check.h, ...) adds how tests
 * are registered, run and skipped; the checks themselves are these,
 * everywhere.
 *
 * Every check is an expression that evaluates its operands once and is 1
 * when the check held, else 0 after the failure was recorded. A failure is
 * counted and reported as one line on stderr (stdout flushed first):
 *
 *   file:line: CHECK_K failed: kctx_close(c): KCTX_BUSY, expected KCTX_OK (last error)
 *
 * the check, what was checked as written, then what was seen.
 *
 *   CHECK(cond)                    cond is true
 *   CHECK(cond, fmt, ...)          the same, with a printf-style note (a
 *                                  string literal, up to 15 arguments) of
 *                                  what was seen, printed on failure
 *   CHECK_EQ(a, b)                 a == b, as 64-bit integers; shows both
 *   CHECK_CONTAINS(text, part)     string `text` contains `part` (a NULL
 *                                  text fails); shows both
 *   CHECK_K(expr, want)            a kctx_status is `want`; shows both names
 *                                  and the thread's kctx last error
 *   CHECK_K2(expr, w1, w2)         one of two (where the contract leaves
 *                                  the choice open)
 *   CHECK_OK(expr)                 CHECK_K(expr, KCTX_OK)
 *   CHECK_SIM(expr, want)          the same for a sim_status, with the
 *   CHECK_SIM2, CHECK_SIM_OK       sim's last error message
 *   CHECK_FW(drv, expr, want)      an fw_status of framework driver `drv`
 *   CHECK_FW_OK(drv, expr)         (src/conformance/fw.h), with
 *                                  drv->last_error()
 *   FAIL(fmt, ...)                 a failure where no condition says it
 *                                  (always 0)
 *   CHECK_AT(file, line, cond[, fmt, ...])   CHECK reported at the given
 *                                  place (a helper reporting its caller's)
 *   REQUIRE(cond[, fmt, ...]), REQUIRE_EQ, REQUIRE_K, REQUIRE_OK,
 *   REQUIRE_SIM, REQUIRE_SIM_OK    the check, then `return;` from the
 *                                  calling (void) function when it failed
 *
 * The status checks name their types only where they are used: include
 * kctx/kctx.h, kctx/sim.h or fw.h for the ones you use. A harness that
 * checks its own objects (kt.h's CHECK_PHASE, CHECK_SNAP, ...) builds them
 * on ktc_fail / ktc_held below, so that they count, report and stop alike.
 *
 * What a failure does (one mechanism for every program, thread-safe):
 *  - it is counted for the program (ktc_checks_failed) and for the running
 *    test (ktc_test_failures, since the last ktc_test_begin); a harness
 *    fails a test whose count moved. Checks that held are counted too
 *    (ktc_checks_held): a program that is one scenario ends with
 *    `return ktc_check_summary();` ("N passed, M failed" over its checks).
 *  - the first KTC_MAX_REPORTS failures of a test are printed, the rest
 *    only counted (a loop over a buffer does not bury the first one);
 *  - a program that cannot go on after a failed check calls
 *    ktc_exit_on_failure() first: every failure then ends the program with
 *    exit status 1 after its report;
 *  - a runner that keeps failures itself (the conformance suite: a probe's
 *    first failure is its result's detail) installs a sink: failures then
 *    go to the sink instead of stderr, and are still counted.
 */
#ifndef KCTX_TEST_CHECK_H
#define KCTX_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ctest's SKIP_RETURN_CODE for every kctx test (the Automake convention). */
#define KTC_EXIT_SKIP 77

/* The exit status of a test program: 1 when failed, else KTC_EXIT_SKIP
 * when skipped, else 0. */
int ktc_exit_status(unsigned failed, unsigned skipped);

/* Prints "N passed, M failed" (", K skipped" when K > 0) on `out` and
 * flushes it; returns ktc_exit_status(failed, skipped). */
int ktc_summary(FILE *out, unsigned passed, unsigned failed, unsigned skipped);

/* Reads a whole file into malloc'd memory (free() it) with one NUL byte
 * after the last (not counted in *size), so text can be used as a string;
 * malloc's alignment suits images (8-byte aligned). Returns NULL on failure
 * with the reason ("cannot open PATH: ...") in why (may be NULL). */
void *ktc_read_file(const char *path, size_t *size, char *why, size_t why_size);

/* A test's failures printed before the rest are only counted. */
#define KTC_MAX_REPORTS 20

/* ---- the mechanism ------------------------------------------------------- */

/* Counts a check that held; returns 1. */
int ktc_held(void);
/* Records a failed check and returns 0. `check` is the macro's name (NULL
 * for FAIL), `what` what was checked as written (may be NULL), fmt... what
 * was seen (may be NULL). `file` NULL: a harness's own finding, reported
 * without a place (e.g. "teardown: ..."). */
int ktc_fail(const char *file, int line, const char *check, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A status check's failure: "GOT, expected WANT1[ or WANT2][ (last error)]". */
int ktc_fail_status(const char *file, int line, const char *check, const char *what,
                    const char *got, const char *want1, const char *want2, const char *last_error);
/* CHECK_EQ's comparison, for helpers that report their caller's line. */
int ktc_check_eq(const char *file, int line, uint64_t a, uint64_t b, const char *ea,
                 const char *eb);
/* CHECK_CONTAINS's, likewise. */
int ktc_check_contains(const char *file, int line, const char *text, const char *part,
                       const char *etext, const char *epart);

unsigned ktc_checks_held(void);
unsigned ktc_checks_failed(void);
/* A test starts: its failure count (and report budget) starts at 0. */
void ktc_test_begin(void);
/* Failed checks since the last ktc_test_begin (or the program's start). */
unsigned ktc_test_failures(void);
/* From now on, a failed check ends the program (exit status 1). */
void ktc_exit_on_failure(void);
/* A function whose text, when not NULL or empty, every failure report
 * adds ("[note: ...]"): what the program's failures should also show (a
 * driver's last message). Called only on failure. NULL: none. */
void ktc_failure_note(const char *(*note)(void));
/* Failures go to sink(arg, file, line, text) instead of stderr, where text
 * is "what: seen" (or either alone); NULL restores stderr. Calls to the
 * sink are serialised. */
typedef void (*ktc_failure_sink)(void *arg, const char *file, int line, const char *text);
void ktc_set_failure_sink(ktc_failure_sink sink, void *arg);
/* "N passed, M failed" over the program's checks (kctx_test_common.h's
 * ktc_summary on stdout); returns the exit status. */
int ktc_check_summary(void);

/* ---- the checks ------------------------------------------------------------ */

/* CHECK's two forms, told apart by the number of arguments after cond
 * (KTC_FORM_(_, ##__VA_ARGS__): the `_` keeps the comma elision working in
 * ISO mode, where GNU cpp keeps the comma of a macro whose only parameter
 * is `...`). */
#define KTC_PICK_(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, form, \
                  ...)                                                                             \
    form
#define KTC_FORM_(...)                                                                       \
    KTC_PICK_(__VA_ARGS__, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, \
              KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_NOTE_,   \
              KTC_NOTE_, KTC_NOTE_, KTC_NOTE_, KTC_BARE_)
/* ktc_1_ and ktc_0_ let the compiler see which way a check went (no "may be
 * used uninitialized" after `if (!CHECK(parse(&v))) continue;`), without a
 * comma expression that warns when the check's value is not used. */
static inline int ktc_1_(int counted) {
    (void)counted;
    return 1;
}
static inline int ktc_0_(int recorded) {
    (void)recorded;
    return 0;
}
#define KTC_BARE_(file, line, cond, what) \
    ((cond) ? ktc_1_(ktc_held()) : ktc_0_(ktc_fail(file, line, "CHECK", what, NULL)))
#define KTC_NOTE_(file, line, cond, what, ...) \
    ((cond) ? ktc_1_(ktc_held()) : ktc_0_(ktc_fail(file, line, "CHECK", what, __VA_ARGS__)))
/* `what` is stringified here, before cond's macros are expanded. */
#define CHECK_AT(file, line, cond, ...) \
    KTC_FORM_(_, ##__VA_ARGS__)(file, line, cond, #cond, ##__VA_ARGS__)
#define CHECK(cond, ...) KTC_FORM_(_, ##__VA_ARGS__)(__FILE__, __LINE__, cond, #cond, ##__VA_ARGS__)
#define FAIL(...) ktc_fail(__FILE__, __LINE__, NULL, NULL, __VA_ARGS__)

#define CHECK_EQ(a, b) ktc_check_eq(__FILE__, __LINE__, (uint64_t)(a), (uint64_t)(b), #a, #b)
#define CHECK_CONTAINS(text, part) \
    ktc_check_contains(__FILE__, __LINE__, (text), (part), #text, #part)

/* A status check: `expr` and the expected statuses evaluated once; on
 * failure, the names and the matching last error (read before anything
 * else can change it). A single expected status passes ktc_w1_ as w2. */
#define KTC_STATUS_(check, type, name, last_error, what, expr, w1, w2)                         \
    __extension__({                                                                            \
        type ktc_got_ = (expr), ktc_w1_ = (w1), ktc_w2_ = (w2);                                \
        ktc_got_ == ktc_w1_ || ktc_got_ == ktc_w2_                                             \
            ? ktc_1_(ktc_held())                                                               \
            : ktc_0_(ktc_fail_status(__FILE__, __LINE__, check, what, name(ktc_got_),          \
                                     name(ktc_w1_), ktc_w1_ == ktc_w2_ ? NULL : name(ktc_w2_), \
                                     last_error));                                             \
    })
#define KTC_K_(what, expr, w1, w2)                                                              \
    KTC_STATUS_("CHECK_K", kctx_status, kctx_status_name, kctx_thread_last_error(), what, expr, \
                w1, w2)
#define KTC_SIM_(what, expr, w1, w2)                                                            \
    KTC_STATUS_("CHECK_SIM", sim_status, sim_status_name, sim_last_error_message(), what, expr, \
                w1, w2)
#define KTC_FW_(drv, what, expr, want)                 \
    KTC_STATUS_("CHECK_FW", fw_status, fw_status_name, \
                ktc_got_ == FW_OK ? "" : (drv)->last_error(), what, expr, want, ktc_w1_)
#define CHECK_K(expr, want) KTC_K_(#expr, expr, want, ktc_w1_)
#define CHECK_K2(expr, w1, w2) KTC_K_(#expr, expr, w1, w2)
#define CHECK_OK(expr) KTC_K_(#expr, expr, KCTX_OK, ktc_w1_)
#define CHECK_SIM(expr, want) KTC_SIM_(#expr, expr, want, ktc_w1_)
#define CHECK_SIM2(expr, w1, w2) KTC_SIM_(#expr, expr, w1, w2)
#define CHECK_SIM_OK(expr) KTC_SIM_(#expr, expr, SIM_OK, ktc_w1_)
#define CHECK_FW(drv, expr, want) KTC_FW_(drv, #expr, expr, want)
#define CHECK_FW_OK(drv, expr) KTC_FW_(drv, #expr, expr, FW_OK)

#define KTC_RETURN_UNLESS_(check) \
    do {                          \
        if (!(check)) return;     \
    } while (0)
#define REQUIRE(cond, ...) \
    KTC_RETURN_UNLESS_(KTC_FORM_(_, ##__VA_ARGS__)(__FILE__, __LINE__, cond, #cond, ##__VA_ARGS__))
#define REQUIRE_EQ(a, b) \
    KTC_RETURN_UNLESS_(ktc_check_eq(__FILE__, __LINE__, (uint64_t)(a), (uint64_t)(b), #a, #b))
#define REQUIRE_K(expr, want) KTC_RETURN_UNLESS_(KTC_K_(#expr, expr, want, ktc_w1_))
#define REQUIRE_OK(expr) KTC_RETURN_UNLESS_(KTC_K_(#expr, expr, KCTX_OK, ktc_w1_))
#define REQUIRE_SIM(expr, want) KTC_RETURN_UNLESS_(KTC_SIM_(#expr, expr, want, ktc_w1_))
#define REQUIRE_SIM_OK(expr) KTC_RETURN_UNLESS_(KTC_SIM_(#expr, expr, SIM_OK, ktc_w1_))

#ifdef __cplusplus
}
#endif
#endif /* KCTX_TEST_CHECK_H */
