/*
 * probes_graph.c — what a captured launch leaves in the framework's graph
 * (issue 25, item 5):
 *  - a capture in which the framework allocates the launches' outputs and
 *    workspaces from its own graph memory pool (fw.h, GRAPH MEMORY POOL):
 *    kctx allocates nothing (K11, K19), and a pool block freed after a
 *    launch and handed to the next launch inside the same capture is safe
 *    because the launch is joined back into the caller stream (K20 step 5);
 *  - the graph of a captured launch holds nodes from both of the context's
 *    private streams, the AICPU and the AICore stream, none from its upload
 *    stream, and only event edges from the caller stream (K20, K21, K16),
 *    and it replays correctly.
 */
#include "probes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum {
    ID_VADD = 1,
    ID_CHAIN = 2
};

#define POOL_N 1000u /* floats per tensor */
#define POOL_REPLAYS 8u

/* End a capture a failed probe left open on s (the pool cannot be
 * destroyed while it restricts the thread), then destroy the graph. */
static void drop_open_capture(rig *r, fw_stream s) {
    int capturing = 0;
    fw_graph g = 0;
    if (s && r->fw->capture_status(s, &capturing) == FW_OK && capturing &&
        r->fw->end_capture(s, &g) == FW_OK && g)
        r->fw->graph_destroy(g);
}

static int pool_ok(probe *p, fw_status st, const char *expr, int line) {
    if (st == FW_OK) return 1;
    return ktc_fail(__FILE__, line, "POOL_OK", expr, "%s (%s)", fw_status_name(st),
                    p->fw->pool_last_error());
}
#define POOL_OK(p, expr) pool_ok((p), (expr), #expr, __LINE__)

/* ------------------------------------------------------------------ */
/* a capture that allocates from the framework's graph memory pool     */

void probe_captured_launches_use_the_framework_graph_pool(probe *p) {
    const fw_driver *fw = p->fw;
    if (!fw_has_pool(fw)) {
        pr_na(p, "the %s driver has no graph memory pool (pool_* hooks)", fw->name);
        return;
    }
    rig r;
    job c, v;
    fw_stream s = 0;
    fw_pool pool = 0;
    int gi = -1, have_pool = 0;
    size_t bytes = POOL_N * sizeof(float);
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_chain(&r, &c, ID_CHAIN, POOL_N, 31, 0) || !job_vadd(&r, &v, ID_VADD, POOL_N, 32, 0))
        goto done;
    /* The counters must be seen to count: creating the pool is the one
     * device allocation of the framework's pool. */
    uint64_t a0 = 0, a1 = 0, a2 = 0;
    int have_dev = OPTIONAL_HOOK(p, device_allocs, "device allocation calls", r.device, &a0);
    if (!pr_ok(p)) goto done;
    /* room for the chain's output and 3 workspaces, one spare block */
    if (!POOL_OK(p, fw->pool_create(5 * bytes + 5 * 256, &pool))) goto done;
    have_pool = 1;
    if (have_dev && (!CHECK_FW_OK(p->fw, fw->device_allocs(r.device, &a1)) ||
                     !CHECK(a1 > a0, "control: creating the pool made no device allocation "
                                     "that the counter saw")))
        goto done;
    fw_counts c0, c1;
    int have_counts =
        OPTIONAL_HOOK(p, live_counts, "that no object or memory was created", r.device, &c0);
    const probe_host_allocs *ha = p->env->allocs;
    int have_host = ha && !ha->unavailable;
    if (!have_host)
        pr_dropped(p, "host allocation calls from libkctx (%s)",
                   ha ? ha->unavailable : "no counter in this runner");
    if (!pr_ok(p)) goto done;

    /* The capture: every address the two launches write is handed out by
     * the pool inside it. */
    fw_devptr ws[3] = {0, 0, 0}, c_out = 0, v_out = 0;
    uint64_t kctx_host = 0, other_host = 0;
    kctx_resource_info t0, t1;
    if (!CHECK_K(get_resources(r.ctx, &t0), KCTX_OK) || !rig_begin_capture(&r, s)) goto done;
    if (have_host) ha->begin();
    int ok = POOL_OK(p, fw->pool_alloc(pool, bytes, s, &c_out));
    for (int i = 0; ok && i < 3; i++) ok = POOL_OK(p, fw->pool_alloc(pool, bytes, s, &ws[i]));
    kctx_status ls1 = KCTX_OK, ls2 = KCTX_OK;
    if (ok) {
        /* scale_add_chain writes its output and its workspaces in the pool;
         * the framework copies the output out and frees all four blocks on
         * the caller stream */
        c.args[1] = KCTX_TENSOR(c_out, bytes);
        for (int i = 0; i < 3; i++) c.args[2 + i] = KCTX_TENSOR(ws[i], bytes);
        ls1 = job_launch(&r, &c, s);
        ok = CHECK_K(ls1, KCTX_OK) && CHECK_FW_OK(p->fw, fw->copy_async(c.out[0], c_out, bytes, s));
        for (int i = 0; ok && i < 3; i++) ok = POOL_OK(p, fw->pool_free(pool, ws[i], s));
        ok = ok && POOL_OK(p, fw->pool_free(pool, c_out, s));
    }
    if (ok) {
        /* vector_add's output: a block the chain used, reused in stream
         * order (the pool hands a freed block to the next allocation on
         * the same stream) */
        ok = POOL_OK(p, fw->pool_alloc(pool, bytes, s, &v_out)) &&
             CHECK(v_out == c_out || v_out == ws[0] || v_out == ws[1] || v_out == ws[2],
                   "the pool did not reuse a freed block (0x%" PRIx64 ")", v_out);
    }
    if (ok) {
        v.args[2] = KCTX_TENSOR(v_out, bytes);
        v.out[0] = v_out;
        ls2 = job_launch(&r, &v, s);
        ok = CHECK_K(ls2, KCTX_OK);
    }
    if (have_host) ha->end(&kctx_host, &other_host);
    int capturing = 0;
    if (ok)
        ok = CHECK_FW_OK(p->fw, fw->capture_status(s, &capturing)) &&
             CHECK(capturing, "the capture ended or was invalidated by the launches");
    if (!ok || !rig_end_capture(&r, s, &gi)) goto done;
    if (have_dev && CHECK_FW_OK(p->fw, fw->device_allocs(r.device, &a2)))
        CHECK(a2 == a1, "%" PRIu64 " device allocation calls during the capture", a2 - a1);
    if (have_counts && CHECK_FW_OK(p->fw, fw->live_counts(r.device, &c1)))
        CHECK(c1.streams == c0.streams && c1.events == c0.events && c1.modules == c0.modules &&
                  c1.allocations == c0.allocations && c1.bytes == c0.bytes,
              "live objects changed during the capture: streams %" PRIu64 "->%" PRIu64
              ", events %" PRIu64 "->%" PRIu64 ", allocations %" PRIu64 "->%" PRIu64,
              c0.streams, c1.streams, c0.events, c1.events, c0.allocations, c1.allocations);
    /* libkctx's own host allocations: none, but for the one record per
     * attached graph lifetime token an adapter may allocate for the
     * platform's destructor callback (docs/cuda.md, "Allocation"; the ACL
     * adapter the same; the sim's hooks allocate nothing in libkctx) */
    uint32_t tokens = 0;
    if (CHECK_K(get_resources(r.ctx, &t1), KCTX_OK)) tokens = t1.tokens_in_use - t0.tokens_in_use;
    if (have_host)
        CHECK(kctx_host <= tokens,
              "%" PRIu64 " host allocation calls came from libkctx during two captured launches "
              "(%u lifetime tokens attached)",
              kctx_host, tokens);
    if (!pr_ok(p)) goto done;

    /* Replays with new inputs each time: the chain's result (copied out of
     * the pool) and vector_add's (in the reused block) both hold. */
    for (unsigned k = 0; k < POOL_REPLAYS; k++) {
        if (!job_set_inputs(&r, &c, 40 + k) || !job_set_inputs(&r, &v, 60 + k) ||
            !job_clear(&r, &c, s) || !job_clear(&r, &v, s) || !rig_replay(&r, gi, s) ||
            !rig_sync(&r, s) ||
            !job_expect(&r, &c, "a replay (scale_add_chain, pool workspaces)") ||
            !job_expect(&r, &v, "a replay (vector_add, reused pool block)"))
            goto done;
    }
    char host_part[160] = "";
    if (have_host)
        snprintf(host_part, sizeof host_part,
                 "%" PRIu64 " host allocation calls from libkctx (%u lifetime tokens attached), ",
                 kctx_host, tokens);
    pr_note(p,
            "2 launches captured with outputs and workspaces from the framework's graph pool "
            "(5 blocks, one reused after a free on the caller stream): %s%s%u replays correct",
            have_dev ? "0 device allocations during the capture, " : "", host_part, POOL_REPLAYS);
done:
    drop_open_capture(&r, s);
    if (gi >= 0) rig_drop_graph(&r, gi);
    if (have_pool) {
        if (s) (void)fw->stream_sync(s, SYNC_MS);
        POOL_OK(p, fw->pool_destroy(pool));
    }
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* a captured launch's graph holds both private streams' nodes          */

enum {
    ON_AICPU = 0,
    ON_AICORE = 1,
    ON_UPLOAD = 2,
    ON_CALLER = 3,
    ON_N = 4
};

static int stream_nodes(rig *r, int gi, const fw_stream *streams, size_t *on, size_t *total) {
    probe *p = r->p;
    if (!CHECK_FW_OK(p->fw, p->fw->graph_stream_nodes(r->graphs[gi].g, streams, ON_N, on)))
        return 0;
    *total = 0;
    if (p->fw->graph_node_count && p->fw->graph_node_count(r->graphs[gi].g, total) != FW_OK)
        return FAIL("graph_node_count: %s", p->fw->last_error());
    return 1;
}

void probe_captured_launch_holds_nodes_from_both_private_streams(probe *p) {
    if (!HAS_HOOK(p, graph_stream_nodes)) return;
    rig r;
    job a, b;
    fw_stream s = 0;
    int g1 = -1, g2 = -1;
    const char *strategy = pr_host_ordered(p) ? "HOST_ORDERED" : "RESIDENT";
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 300, 71, 0) || !job_chain(&r, &b, ID_CHAIN, 300, 72, 0))
        goto done;
    kctx_resource_info res;
    if (!CHECK_K(get_resources(r.ctx, &res), KCTX_OK)) goto done;
    const fw_stream streams[ON_N] = {res.aicpu_stream, res.aicore_stream, res.upload_stream, s};
    if (!CHECK(res.aicpu_stream && res.aicore_stream && res.aicpu_stream != res.aicore_stream,
               "the context names no two distinct private streams (AICPU 0x%" PRIx64
               ", AICore 0x%" PRIx64 ")",
               res.aicpu_stream, res.aicore_stream))
        goto done;
    int have_total = p->fw->graph_node_count != NULL;
    if (!have_total) pr_dropped(p, "that no other stream contributed nodes (no graph_node_count)");

    /* One launch. Both strategies put two kernels on the AICPU stream
     * (RESIDENT: the acquire step and the scheduler; HOST_ORDERED: acquire
     * and finalize) and at least one on the AICore stream (RESIDENT: the
     * worker program; HOST_ORDERED: the task kernels); the caller stream
     * gets only event records and waits, the upload stream nothing. */
    size_t on1[ON_N], on2[ON_N], total1 = 0, total2 = 0;
    if (!rig_begin_capture(&r, s)) goto done;
    kctx_status ls = job_launch(&r, &a, s);
    if (!rig_end_capture(&r, s, &g1) || !CHECK_K(ls, KCTX_OK) ||
        !stream_nodes(&r, g1, streams, on1, &total1))
        goto done;
    pr_log(p, "%s, one launch: AICPU %zu, AICore %zu, upload %zu, caller %zu nodes (graph %zu)",
           strategy, on1[ON_AICPU], on1[ON_AICORE], on1[ON_UPLOAD], on1[ON_CALLER], total1);
    if (!CHECK(on1[ON_AICPU] == 2,
               "%s: the graph holds %zu nodes from the AICPU stream, expected 2 (K20: the acquire "
               "step and the %s)",
               strategy, on1[ON_AICPU], pr_host_ordered(p) ? "finalize step" : "scheduler") ||
        !CHECK(on1[ON_AICORE] >= 1,
               "%s: the graph holds no node from the AICore stream (K20: the launch did not fork "
               "into it)",
               strategy) ||
        !CHECK(on1[ON_UPLOAD] == 0,
               "the graph holds %zu nodes from the upload stream (K16: no launch touches it)",
               on1[ON_UPLOAD]) ||
        !CHECK(on1[ON_CALLER] == 0,
               "the graph holds %zu work nodes from the caller stream (K20: kctx only records "
               "and waits there)",
               on1[ON_CALLER]) ||
        !CHECK(!have_total || total1 == on1[ON_AICPU] + on1[ON_AICORE],
               "the graph holds %zu nodes, only %zu from the private streams", total1,
               on1[ON_AICPU] + on1[ON_AICORE]))
        goto done;

    /* Two launches after a framework fill on the caller stream (which the
     * hook must see there: its control), in one capture. */
    if (!rig_begin_capture(&r, s)) goto done;
    int ok = job_clear(&r, &a, s);
    kctx_status la = ok ? job_launch(&r, &a, s) : KCTX_OK;
    kctx_status lb = ok ? job_launch(&r, &b, s) : KCTX_OK;
    if (!rig_end_capture(&r, s, &g2) || !ok || !CHECK_K(la, KCTX_OK) || !CHECK_K(lb, KCTX_OK) ||
        !stream_nodes(&r, g2, streams, on2, &total2))
        goto done;
    pr_log(p, "%s, fill + two launches: AICPU %zu, AICore %zu, upload %zu, caller %zu (graph %zu)",
           strategy, on2[ON_AICPU], on2[ON_AICORE], on2[ON_UPLOAD], on2[ON_CALLER], total2);
    if (!CHECK(on2[ON_CALLER] == 1,
               "control: the framework's fill on the caller stream shows as %zu nodes there, "
               "expected 1",
               on2[ON_CALLER]) ||
        !CHECK(on2[ON_AICPU] == 4, "two launches: %zu AICPU nodes, expected 4", on2[ON_AICPU]) ||
        !CHECK(on2[ON_AICORE] >= on1[ON_AICORE] + 1,
               "two launches: %zu AICore nodes, one launch had %zu", on2[ON_AICORE],
               on1[ON_AICORE]) ||
        !CHECK(on2[ON_UPLOAD] == 0, "two launches: %zu upload-stream nodes", on2[ON_UPLOAD]) ||
        !CHECK(!have_total || total2 == on2[ON_AICPU] + on2[ON_AICORE] + on2[ON_CALLER],
               "the graph holds %zu nodes, %zu from the private and caller streams", total2,
               on2[ON_AICPU] + on2[ON_AICORE] + on2[ON_CALLER]))
        goto done;

    /* Replays of both graphs, new inputs each round. */
    for (unsigned k = 0; k < 4; k++) {
        if (!job_set_inputs(&r, &a, 80 + k) || !job_set_inputs(&r, &b, 90 + k) ||
            !job_clear(&r, &a, s) || !rig_replay(&r, g1, s) || !rig_sync(&r, s) ||
            !job_expect(&r, &a, "a replay of the one-launch graph") || !job_clear(&r, &b, s) ||
            !rig_replay(&r, g2, s) || !rig_sync(&r, s) ||
            !job_expect(&r, &a, "a replay of the two-launch graph (vector_add)") ||
            !job_expect(&r, &b, "a replay of the two-launch graph (scale_add_chain)"))
            goto done;
    }
    pr_note(p,
            "%s: a launch's graph holds %zu AICPU-stream and %zu AICore-stream nodes, none from "
            "the upload stream, no work node on the caller stream (a framework fill there counts "
            "1); two launches %zu + %zu; 4 rounds of replays correct",
            strategy, on1[ON_AICPU], on1[ON_AICORE], on2[ON_AICPU], on2[ON_AICORE]);
done:
    rig_close(&r);
}
