/*
 * probes_correctness.c — the work itself: every example callable, launched
 * eagerly and replayed from graphs, matches a host reference at several
 * sizes. Integer-valued inputs make every result exact (compared bit for
 * bit); blocked_matmul also runs with random floats in [-1, 1), compared
 * within 2 (K + N + 2) FLT_EPSILON sum|a||b| per element (the float32
 * accumulation bound, twice).
 *
 * Each callable has an eager probe (a platform without capture runs it)
 * and a captured one. Eager: the caller's args array is overwritten right
 * after launch returns, before the work ran (args travel by value, K22),
 * then again over new inputs. Captured: each graph is replayed twice, with
 * the inputs it was captured with (after the caller's args array was
 * overwritten, K22), and after new input values were uploaded (a replay
 * reads the device buffers as they are then, with the scalars it was
 * captured with).
 */
#include "probes.h"

#include <string.h>

enum {
    ID = 1
};

/* One job, eager (on s): launched, then the caller's args array
 * overwritten before the work ran (args travel by value, K22), then
 * checked; launched again over new inputs. */
static int eager(rig *r, job *j, fw_stream s, uint64_t salt, const char *what) {
    char when[160];
    kctx_arg saved[8];
    memcpy(saved, j->args, sizeof saved);
    snprintf(when, sizeof when, "%s, eager (caller's args overwritten after the launch)", what);
    int ok = job_clear(r, j, s) && CHECK_K(job_launch(r, j, s), KCTX_OK);
    memset(j->args, 0x5A, sizeof j->args);
    ok = ok && rig_sync(r, s) && job_expect(r, j, when);
    memcpy(j->args, saved, sizeof saved);
    if (!ok) return 0;
    snprintf(when, sizeof when, "%s, eager over new inputs", what);
    return job_set_inputs(r, j, salt + 1000) && job_clear(r, j, s) &&
           CHECK_K(job_launch(r, j, s), KCTX_OK) && rig_sync(r, s) && job_expect(r, j, when);
}

/* One job, captured (on s) and replayed twice: with the inputs it was
 * captured with, after the caller's args array was overwritten (K22), and
 * over new inputs (a replay reads the device buffers as they are then,
 * with the scalars it was captured with). */
static int replayed(rig *r, job *j, fw_stream s, uint64_t salt, const char *what) {
    char when[160];
    int gi = -1;
    if (!rig_begin_capture(r, s)) return 0;
    kctx_status ls = job_launch(r, j, s);
    if (!rig_end_capture(r, s, &gi) || !CHECK_K(ls, KCTX_OK)) return 0;
    kctx_arg saved[8];
    memcpy(saved, j->args, sizeof saved);
    memset(j->args, 0x5A, sizeof j->args);
    snprintf(when, sizeof when, "%s, replayed (caller's args overwritten)", what);
    int ok = job_clear(r, j, s) && rig_replay(r, gi, s) && rig_sync(r, s) && job_expect(r, j, when);
    memcpy(j->args, saved, sizeof saved);
    if (!ok) return 0;
    snprintf(when, sizeof when, "%s, replayed over new inputs", what);
    if (!job_set_inputs(r, j, salt + 1000) || !job_clear(r, j, s) || !rig_replay(r, gi, s) ||
        !rig_sync(r, s) || !job_expect(r, j, when))
        return 0;
    /* the graph is done with: keep the rig's graph table small */
    return rig_drop_graph(r, gi);
}

typedef int (*run_fn)(rig *r, job *j, fw_stream s, uint64_t salt, const char *what);

static void vector_add(probe *p, run_fn run) {
    static const size_t sizes[] = {1, 3, 4, 5, 64, 1000, 4097, 65539};
    const unsigned count = sizeof sizes / sizeof sizes[0];
    rig r;
    fw_stream s;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s))
        goto done;
    for (unsigned i = 0; i < count; i++) {
        job j;
        char what[64];
        snprintf(what, sizeof what, "vector_add n=%zu", sizes[i]);
        if (!job_vadd(&r, &j, ID, sizes[i], 200 + i, 0) || !run(&r, &j, s, 200 + i, what))
            goto done;
    }
    pr_note(p, "n = 1, 3, 4, 5, 64, 1000, 4097, 65539: %s, exact",
            run == eager ? "eager (the caller's args overwritten at once), and over new inputs"
                         : "replayed (the caller's args overwritten), and over new inputs");
done:
    rig_close(&r);
}

static void scale_add_chain(probe *p, run_fn run) {
    static const size_t sizes[] = {1, 2, 7, 256, 1000, 10007};
    const unsigned count = sizeof sizes / sizeof sizes[0];
    rig r;
    fw_stream s;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "scale_add_chain") || !rig_stream(&r, &s))
        goto done;
    for (unsigned i = 0; i < count; i++) {
        job j;
        char what[64];
        snprintf(what, sizeof what, "scale_add_chain n=%zu", sizes[i]);
        if (!job_chain(&r, &j, ID, sizes[i], 300 + i, 0) || !run(&r, &j, s, 300 + i, what))
            goto done;
    }
    pr_note(p, "n = 1, 2, 7, 256, 1000, 10007 (alpha 1..3): %s and over new inputs, exact",
            run == eager ? "eager" : "replayed");
done:
    rig_close(&r);
}

static void blocked_matmul(probe *p, run_fn run) {
    static const struct {
        uint64_t M, N, K;
        int random;
    } shapes[] = {{1, 1, 1, 0},    {2, 2, 2, 0},    {3, 5, 7, 0},    {16, 16, 16, 0},
                  {33, 17, 65, 0}, {64, 64, 64, 0}, {20, 30, 40, 1}, {64, 64, 64, 1}};
    const unsigned count = sizeof shapes / sizeof shapes[0];
    rig r;
    fw_stream s;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "blocked_matmul") || !rig_stream(&r, &s))
        goto done;
    for (unsigned i = 0; i < count; i++) {
        job j;
        char what[96];
        snprintf(what, sizeof what, "blocked_matmul %llux%llux%llu (%s)",
                 (unsigned long long)shapes[i].M, (unsigned long long)shapes[i].N,
                 (unsigned long long)shapes[i].K, shapes[i].random ? "random floats" : "integers");
        if (!job_matmul(&r, &j, ID, shapes[i].M, shapes[i].N, shapes[i].K, 400 + i,
                        shapes[i].random) ||
            !run(&r, &j, s, 400 + i, what))
            goto done;
    }
    pr_note(p,
            "M x N x K = 1x1x1 .. 64x64x64 and 33x17x65 (integers: exact), 20x30x40 and 64x64x64 "
            "(random floats: within the accumulation bound): C and row sums, %s",
            run == eager ? "eager" : "replayed");
done:
    rig_close(&r);
}

void probe_vector_add_matches_host_reference(probe *p) { vector_add(p, eager); }
void probe_vector_add_replays_match_host_reference(probe *p) { vector_add(p, replayed); }
void probe_scale_add_chain_matches_host_reference(probe *p) { scale_add_chain(p, eager); }
void probe_scale_add_chain_replays_match_host_reference(probe *p) { scale_add_chain(p, replayed); }
void probe_blocked_matmul_matches_host_reference(probe *p) { blocked_matmul(p, eager); }
void probe_blocked_matmul_replays_match_host_reference(probe *p) { blocked_matmul(p, replayed); }
