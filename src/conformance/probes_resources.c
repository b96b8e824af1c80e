/*
 * probes_resources.c — resident resources (issue 5, conformance item 13):
 * launches allocate nothing and never move the resident addresses (K11);
 * every captured graph shares the context's five events (K12).
 */
#include "probes.h"

#include <inttypes.h>
#include <string.h>

enum {
    ID_VADD = 1,
    ID_CHAIN = 2
};

#define LAUNCHES 10000u
#define SYNC_EVERY 1000u

/* The resident part of kctx_resource_info (what a captured graph bakes in). */
static int same_resident(probe *p, const kctx_resource_info *a, const kctx_resource_info *b,
                         const char *when) {
    int same = a->aicpu_stream == b->aicpu_stream && a->aicore_stream == b->aicore_stream &&
               memcmp(a->events, b->events, sizeof a->events) == 0 &&
               a->programs_module == b->programs_module && a->runtime_image == b->runtime_image &&
               a->arch_table == b->arch_table && a->args_block == b->args_block &&
               a->runtime_image_bytes == b->runtime_image_bytes &&
               a->arch_table_bytes == b->arch_table_bytes &&
               a->args_block_bytes == b->args_block_bytes && a->uploads == b->uploads &&
               a->upload_bytes == b->upload_bytes;
    return CHECK(same,
                 "%s: resident resources moved (runtime image 0x%" PRIx64 " -> 0x%" PRIx64
                 ", args block 0x%" PRIx64 " -> 0x%" PRIx64 ", uploads %u -> %u)",
                 when, a->runtime_image, b->runtime_image, a->args_block, b->args_block, a->uploads,
                 b->uploads);
}

/* ------------------------------------------------------------------ */
/* 13. zero allocations and fixed addresses over 10,000 launches (K11) */

void probe_launches_allocate_nothing_and_addresses_stay(probe *p) {
    rig r;
    job a;
    fw_stream s;
    char host_part[200] = "", dev_part[120] = "";
    /* The device counter must be seen to count before a zero is trusted:
     * kernel init allocates the resident resources on the device, under
     * every strategy (prepare uploads a device table only under RESIDENT;
     * under HOST_ORDERED it allocates nothing on the device). */
    int device = -1;
    uint64_t init0 = 0, init1 = 0;
    int have_dev = CHECK_FW_OK(p->fw, p->fw->current_device(&device)) &&
                   OPTIONAL_HOOK(p, device_allocs, "device allocation calls", device, &init0);
    if (!pr_ok(p)) return;
    if (!rig_open(p, &r, NULL) ||
        (have_dev && (!CHECK_FW_OK(p->fw, p->fw->device_allocs(device, &init1)) ||
                      !CHECK(init1 > init0,
                             "control: kernel init made no device allocation the counter saw"))) ||
        !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 256, 80, 0) || !CHECK_K(job_launch(&r, &a, s), KCTX_OK) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "the warm-up launch"))
        goto done;
    kctx_resource_info res0, res1;
    fw_counts c0, c1;
    uint64_t dev0 = 0, dev1 = 0, calls0 = 0, calls1 = 0, kctx_host = 0, other_host = 0;
    int have_counts =
        OPTIONAL_HOOK(p, live_counts, "that no object or memory was created", r.device, &c0);
    const probe_host_allocs *ha = p->env->allocs;
    int have_host = ha && !ha->unavailable;
    if (!have_host)
        pr_dropped(p, "host allocation calls from libkctx (%s)",
                   ha ? ha->unavailable : "no counter in this runner");
    if (!pr_ok(p)) goto done;
    /* The host counter too: a prepare allocates on the host (in libkctx),
     * under every strategy. */
    const void *img;
    size_t img_size;
    if (!rig_image(&r, "scale_add_chain", &img, &img_size)) goto done;
    if (have_host) ha->begin();
    kctx_status ps = kctx_prepare(r.ctx, ID_CHAIN, img, img_size);
    if (have_host) ha->end(&kctx_host, &other_host);
    if (!CHECK_K(ps, KCTX_OK) ||
        !CHECK(!have_host || kctx_host > 0,
               "control: a prepare made no host allocation calls from libkctx "
               "that the counter saw: it does not count"))
        goto done;
    if (have_dev && !CHECK_FW_OK(p->fw, p->fw->device_allocs(r.device, &dev0))) goto done;
    if (have_counts && !CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &c0))) goto done;
    if (!CHECK_K(get_resources(r.ctx, &res0), KCTX_OK) ||
        !CHECK_K(kctx_platform_calls(r.ctx, &calls0), KCTX_OK))
        goto done;
    if (have_host) ha->begin();
    unsigned done_launches = 0;
    kctx_status ls = KCTX_OK;
    for (unsigned i = 0; i < LAUNCHES; i++) {
        ls = job_launch(&r, &a, s);
        if (ls != KCTX_OK) break;
        done_launches++;
        if ((i + 1) % SYNC_EVERY == 0 && r.fw->stream_sync(s, SYNC_MS) != FW_OK) break;
    }
    if (have_host) ha->end(&kctx_host, &other_host);
    if (!CHECK(done_launches == LAUNCHES, "launch %u of %u: %s (%s)", done_launches + 1, LAUNCHES,
               kctx_status_name(ls), kctx_thread_last_error()) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "after 10,000 launches"))
        goto done;
    if (!CHECK_K(get_resources(r.ctx, &res1), KCTX_OK) ||
        !same_resident(p, &res0, &res1, "after 10,000 launches") ||
        !CHECK_K(kctx_platform_calls(r.ctx, &calls1), KCTX_OK) ||
        !CHECK((calls1 - calls0) % LAUNCHES == 0,
               "%" PRIu64 " platform calls over %u launches: not the same per launch",
               calls1 - calls0, LAUNCHES))
        goto done;
    if (have_dev && CHECK_FW_OK(p->fw, p->fw->device_allocs(r.device, &dev1)))
        CHECK(dev1 == dev0, "%" PRIu64 " device allocation calls during the launches", dev1 - dev0);
    if (have_counts && CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &c1)))
        CHECK(c1.streams == c0.streams && c1.events == c0.events && c1.modules == c0.modules &&
                  c1.allocations == c0.allocations && c1.bytes == c0.bytes,
              "live objects changed during the launches: streams %" PRIu64 "->%" PRIu64
              ", events %" PRIu64 "->%" PRIu64 ", modules %" PRIu64 "->%" PRIu64
              ", allocations %" PRIu64 "->%" PRIu64,
              c0.streams, c1.streams, c0.events, c1.events, c0.modules, c1.modules, c0.allocations,
              c1.allocations);
    if (have_host)
        CHECK(kctx_host == 0,
              "%" PRIu64 " host allocation calls (malloc/calloc/realloc/free/aligned) came from "
              "libkctx during %u launches",
              kctx_host, LAUNCHES);
    if (!pr_ok(p)) goto done;
    if (have_host)
        snprintf(host_part, sizeof host_part,
                 "0 host allocation calls from libkctx (%" PRIu64 " by the platform and others), ",
                 other_host);
    if (have_dev)
        snprintf(dev_part, sizeof dev_part, "0 device allocations (kernel init made %" PRIu64 "), ",
                 init1 - init0);
    pr_note(p,
            "%u launches (counters proven on init and a prepare first): %s%sresident addresses "
            "unchanged, %" PRIu64 " platform calls per launch",
            LAUNCHES, host_part, dev_part, (calls1 - calls0) / LAUNCHES);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 13'. every captured graph uses the same five events (K12)           */

#define EVENT_GRAPHS 8

void probe_captured_graphs_share_the_five_events(probe *p) {
    rig r;
    job jobs[EVENT_GRAPHS];
    fw_stream s;
    int g[EVENT_GRAPHS];
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s))
        goto done;
    kctx_resource_info res0, res;
    fw_counts c0, c1;
    int have_counts = OPTIONAL_HOOK(p, live_counts, "that no event was created", r.device, &c0);
    if (!pr_ok(p) || !CHECK_K(get_resources(r.ctx, &res0), KCTX_OK)) goto done;
    for (unsigned i = 0; i < 5; i++)
        if (!CHECK(res0.events[i] != 0, "event %u of the context is not live", i)) goto done;
    for (unsigned i = 0; i < EVENT_GRAPHS; i++) {
        int ok = i % 2 ? job_chain(&r, &jobs[i], ID_CHAIN, 100 + 10 * i, 90 + i, 0)
                       : job_vadd(&r, &jobs[i], ID_VADD, 100 + 10 * i, 90 + i, 0);
        if (!ok || !rig_begin_capture(&r, s)) goto done;
        kctx_status ls = job_launch(&r, &jobs[i], s);
        if (!rig_end_capture(&r, s, &g[i]) || !CHECK_K(ls, KCTX_OK)) goto done;
        if (!CHECK_K(get_resources(r.ctx, &res), KCTX_OK) ||
            !CHECK(memcmp(res.events, res0.events, sizeof res.events) == 0,
                   "the context's events changed after capturing graph %u", i + 1))
            goto done;
    }
    if (have_counts && CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &c1)) &&
        !CHECK(c1.events == c0.events, "%" PRIu64 " events were created for %u graphs",
               c1.events - c0.events, EVENT_GRAPHS))
        goto done;
    /* the graphs share the events and still replay interleaved */
    for (unsigned i = 0; i < EVENT_GRAPHS; i++)
        if (!job_clear(&r, &jobs[i], s)) goto done;
    for (unsigned k = 0; k < 2 * EVENT_GRAPHS; k++) {
        unsigned i = k < EVENT_GRAPHS ? k : 2 * EVENT_GRAPHS - 1 - k;
        if (!rig_replay(&r, g[i], s)) goto done;
    }
    if (!rig_sync(&r, s)) goto done;
    for (unsigned i = 0; i < EVENT_GRAPHS; i++)
        if (!job_expect(&r, &jobs[i], "interleaved replays")) goto done;
    pr_note(p,
            "%u graphs captured: the context's five events kept their handles%s; 16 back-to-back "
            "replays "
            "correct",
            EVENT_GRAPHS, have_counts ? " and no event was created" : "");
done:
    rig_close(&r);
}
