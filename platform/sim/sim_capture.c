/*
 * sim_capture.c — stream capture (CUDA semantics), graphs, executable
 * graphs with concurrent branches, and graph lifetime hooks.
 *
 * A graph node remembers the "lane" it was captured on: the origin stream is
 * lane 0 and every stream that joined the capture gets the next lane. Replay
 * runs one thread per lane, each executing its lane's nodes in capture order
 * once their dependencies are done. Capture order is a topological order and
 * each lane follows it, so replay cannot deadlock, and branches that ran
 * concurrently when executed eagerly (on different streams) also run
 * concurrently on replay.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct gnode {
    simi_op *op;
    int lane;
    sim_stream stream; /* the stream it was captured on (sim_graph_stream_node_count) */
    uint32_t *deps;
    uint32_t ndeps;
} gnode;

struct simi_hook {
    sim_hook_fn fn;
    void *user;
    atomic_int refs;
    simi_device *dev;
};

struct simi_graph {
    simi_device *dev;
    uint64_t handle;
    gnode *nodes;
    uint32_t n, cap;
    int nlanes;
    int capturing;
    simi_hook **hooks;
    size_t nhooks, caphooks;
};

struct simi_capture {
    simi_capture *next;
    uint64_t id;
    simi_device *dev;
    simi_graph *g;
    int mode;
    uint64_t owner;
    simi_stream *origin;
    simi_stream **streams;
    int nstreams, capstreams;
    int invalidated;
};

struct simi_exec {
    atomic_int refs;
    simi_device *dev;
    gnode *nodes;
    uint32_t n;
    int nlanes;
    simi_hook **hooks;
    size_t nhooks;
    pthread_mutex_t lock;
    simi_cv cond;
    int running;
    int stop;
    uint64_t gen;
    int lanes_left;
    uint8_t *done;
    sim_status *status;
    pthread_t *threads;
    int nthreads;
};

static _Thread_local sim_capture_mode tl_mode = SIM_CAPTURE_MODE_GLOBAL;

/* ------------------------------------------------------------------ */
/* hooks                                                               */

static void hook_put(simi_hook *h) {
    if (atomic_fetch_sub(&h->refs, 1) != 1) return;
    bool was = simi_in_callback();
    simi_set_in_callback(true);
    h->fn(h->user);
    simi_set_in_callback(was);
    atomic_fetch_sub(&h->dev->hooks_pending, 1);
    free(h);
}

/* ------------------------------------------------------------------ */
/* graphs                                                              */

static void nodes_free(gnode *nodes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        simi_op_free(nodes[i].op);
        free(nodes[i].deps);
    }
    free(nodes);
}

void simi_graph_free_obj(simi_graph *g) {
    nodes_free(g->nodes, g->n);
    for (size_t i = 0; i < g->nhooks; i++) hook_put(g->hooks[i]);
    free(g->hooks);
    free(g);
}

static uint32_t *dup_deps(const uint32_t *d, uint32_t n) {
    if (!n) return NULL;
    uint32_t *c = malloc(n * sizeof *c);
    if (c) memcpy(c, d, n * sizeof *c);
    return c;
}

/* ------------------------------------------------------------------ */
/* capture bookkeeping (g_sim.lock held throughout)                    */

simi_capture *simi_capture_find(uint64_t id) {
    for (simi_capture *c = g_sim.captures; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}
void simi_capture_invalidate(simi_capture *c) { c->invalidated = 1; }

sim_status simi_capture_restricted(const char *what) {
    if (tl_mode == SIM_CAPTURE_MODE_RELAXED) return SIM_OK;
    uint64_t me = simi_thread_id();
    int n = 0;
    for (simi_capture *c = g_sim.captures; c; c = c->next) {
        bool own = c->owner == me && c->mode != SIM_CAPTURE_MODE_RELAXED;
        bool global = tl_mode == SIM_CAPTURE_MODE_GLOBAL && c->mode == SIM_CAPTURE_MODE_GLOBAL;
        if (own || global) {
            c->invalidated = 1;
            n++;
        }
    }
    if (!n) return SIM_OK;
    return simi_fail(
        SIM_CAPTURE_UNSUPPORTED,
        "%s is not permitted while a capture restricts this thread (capture mode %d; %d capture(s) "
        "invalidated)",
        what, (int)tl_mode, n);
}

static int set_deps(simi_stream *s, const uint32_t *d, uint32_t n) {
    if (n > s->capdeps) {
        uint32_t *nd = realloc(s->deps, n * sizeof *nd);
        if (!nd) return -1;
        s->deps = nd;
        s->capdeps = n;
    }
    if (n) memcpy(s->deps, d, n * sizeof *d);
    s->ndeps = n;
    return 0;
}

sim_status simi_capture_add(simi_stream *s, simi_op *op) {
    simi_capture *c = s->cap;
    if (c->invalidated)
        return simi_fail(SIM_CAPTURE_INVALIDATED, "the stream's capture was invalidated earlier");
    simi_graph *g = c->g;
    if (g->n == g->cap) {
        uint32_t nc = g->cap ? g->cap * 2 : 16;
        gnode *nn = realloc(g->nodes, nc * sizeof *nn);
        if (!nn) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        g->nodes = nn;
        g->cap = nc;
    }
    uint32_t ndeps = s->ndeps;
    uint32_t *deps = dup_deps(s->deps, ndeps);
    if (ndeps && !deps) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    uint32_t idx = g->n;
    if (set_deps(s, &idx, 1) != 0) {
        free(deps);
        return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    }
    g->nodes[g->n++] =
        (gnode){.op = op, .lane = s->lane, .stream = s->handle, .deps = deps, .ndeps = ndeps};
    return SIM_OK;
}

sim_status simi_capture_record(simi_stream *s, simi_event *e) {
    simi_capture *c = s->cap;
    if (c->invalidated)
        return simi_fail(SIM_CAPTURE_INVALIDATED, "the stream's capture was invalidated earlier");
    uint32_t *d = dup_deps(s->deps, s->ndeps);
    if (s->ndeps && !d) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    free(e->cap_deps);
    e->cap_deps = d;
    e->ncap_deps = s->ndeps;
    e->cap_id = c->id;
    simi_rec_put(e->last);
    e->last = NULL;
    return SIM_OK;
}

static sim_status deps_union(simi_stream *s, const uint32_t *d, uint32_t n) {
    uint32_t *u = malloc((s->ndeps + n + 1) * sizeof *u);
    if (!u) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    uint32_t k = s->ndeps;
    if (k) memcpy(u, s->deps, k * sizeof *u);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = 0;
        while (j < k && u[j] != d[i]) j++;
        if (j == k) u[k++] = d[i];
    }
    int rc = set_deps(s, u, k);
    free(u);
    return rc ? simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed") : SIM_OK;
}

sim_status simi_capture_wait(simi_stream *s, simi_event *e) {
    simi_capture *c = s->cap;
    if (c->invalidated)
        return simi_fail(SIM_CAPTURE_INVALIDATED, "the stream's capture was invalidated earlier");
    if (e->cap_id == c->id) return deps_union(s, e->cap_deps, e->ncap_deps);
    if (e->cap_id && simi_capture_find(e->cap_id)) {
        c->invalidated = 1;
        return simi_fail(
            SIM_CAPTURE_MERGE,
            "the event was last recorded in another active capture (capture invalidated)");
    }
    if (e->last && !e->cap_id) {
        c->invalidated = 1;
        return simi_fail(
            SIM_CAPTURE_ISOLATION,
            "waiting inside a capture on an event last recorded outside it (capture invalidated; "
            "CUDA 905, CANN 107024)");
    }
    return SIM_OK; /* never recorded: no-op */
}

static sim_status add_stream(simi_capture *c, simi_stream *s) {
    if (c->nstreams == c->capstreams) {
        int nc = c->capstreams ? c->capstreams * 2 : 4;
        simi_stream **n = realloc(c->streams, (size_t)nc * sizeof *n);
        if (!n) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        c->streams = n;
        c->capstreams = nc;
    }
    s->lane = c->nstreams;
    c->streams[c->nstreams++] = s;
    s->cap = c;
    return SIM_OK;
}

sim_status simi_capture_join(simi_stream *s, simi_event *e, simi_capture *c) {
    if (set_deps(s, e->cap_deps, e->ncap_deps) != 0)
        return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    sim_status st = add_stream(c, s);
    if (st) return st;
    if (c->invalidated)
        return simi_fail(SIM_CAPTURE_INVALIDATED, "joined a capture that was invalidated earlier");
    return SIM_OK;
}

static void capture_unlink(simi_capture *c) {
    for (simi_capture **p = &g_sim.captures; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    for (int i = 0; i < c->nstreams; i++) {
        c->streams[i]->cap = NULL;
        c->streams[i]->ndeps = 0;
    }
    free(c->streams);
    free(c);
}

void simi_capture_abandon_device(simi_device *dev) {
    simi_capture *c = g_sim.captures;
    while (c) {
        simi_capture *next = c->next;
        if (c->dev == dev) capture_unlink(c); /* its graph goes with the graph handles */
        c = next;
    }
}

/* ------------------------------------------------------------------ */
/* capture API                                                         */

sim_status sim_thread_exchange_capture_mode(sim_capture_mode *mode) {
    sim_status st = simi_enter(SIM_OP_EXCHANGE_CAPTURE_MODE, -1);
    if (st) return st;
    if (!mode || *mode < SIM_CAPTURE_MODE_GLOBAL || *mode > SIM_CAPTURE_MODE_RELAXED)
        return simi_fail(SIM_INVALID_VALUE, "mode is NULL or not a capture mode");
    sim_capture_mode old = tl_mode;
    tl_mode = *mode;
    *mode = old;
    return SIM_OK;
}

sim_status sim_stream_begin_capture(sim_stream stream, sim_capture_mode mode) {
    sim_status st = simi_enter(SIM_OP_BEGIN_CAPTURE, simi_handle_device(stream));
    if (st) return st;
    if (mode < SIM_CAPTURE_MODE_GLOBAL || mode > SIM_CAPTURE_MODE_RELAXED)
        return simi_fail(SIM_INVALID_VALUE, "unknown capture mode %d", (int)mode);
    simi_capture *c = calloc(1, sizeof *c);
    simi_graph *g = calloc(1, sizeof *g);
    if (!c || !g) {
        free(c);
        free(g);
        return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    }
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    if (!s)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                       (unsigned long long)stream);
    else if (atomic_load(&s->dev->lost))
        st = simi_fail(SIM_DEVICE_LOST, "device %d is lost", s->dev->index);
    else if (s->cap)
        st = simi_fail(SIM_ILLEGAL_STATE, "the stream is already part of a capture");
    if (!st) {
        g->dev = s->dev;
        g->capturing = 1;
        g->handle = simi_handle_new(SIMI_T_GRAPH, s->dev->index, g);
        if (!g->handle) st = simi_fail(SIM_OUT_OF_MEMORY, "handle table full");
    }
    if (!st) {
        c->id = g_sim.next_capture_id++;
        c->dev = s->dev;
        c->g = g;
        c->mode = mode;
        c->owner = simi_thread_id();
        c->origin = s;
        st = add_stream(c, s);
        if (st) simi_handle_free(g->handle);
    }
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(c);
        free(g);
        return st;
    }
    s->ndeps = 0;
    s->dev->n_graphs++;
    c->next = g_sim.captures;
    g_sim.captures = c;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

/* Every dependency of every joined stream is an ancestor of (or equal to)
 * the origin stream's current dependencies. */
static bool all_joined(const simi_capture *c) {
    const simi_graph *g = c->g;
    uint8_t *mark = calloc(g->n ? g->n : 1, 1);
    uint32_t *stack = malloc((g->n ? g->n : 1) * sizeof *stack);
    bool ok = mark && stack;
    uint32_t sp = 0;
    for (uint32_t i = 0; ok && i < c->origin->ndeps; i++)
        if (!mark[c->origin->deps[i]]) {
            mark[c->origin->deps[i]] = 1;
            stack[sp++] = c->origin->deps[i];
        }
    while (ok && sp) {
        const gnode *nd = &g->nodes[stack[--sp]];
        for (uint32_t i = 0; i < nd->ndeps; i++)
            if (!mark[nd->deps[i]]) {
                mark[nd->deps[i]] = 1;
                stack[sp++] = nd->deps[i];
            }
    }
    for (int k = 0; ok && k < c->nstreams; k++) {
        const simi_stream *s = c->streams[k];
        if (s == c->origin) continue;
        for (uint32_t i = 0; i < s->ndeps; i++)
            if (!mark[s->deps[i]]) ok = false;
    }
    free(mark);
    free(stack);
    return ok;
}

sim_status sim_stream_end_capture(sim_stream stream, sim_graph *graph) {
    sim_status st = simi_enter(SIM_OP_END_CAPTURE, simi_handle_device(stream));
    if (st) return st;
    if (!graph) return simi_fail(SIM_INVALID_VALUE, "graph is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    simi_capture *c = s ? s->cap : NULL;
    if (!s)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                       (unsigned long long)stream);
    else if (!c)
        st = simi_fail(SIM_ILLEGAL_STATE, "the stream is not capturing");
    else if (c->origin != s)
        st = simi_fail(SIM_CAPTURE_UNMATCHED,
                       "the capture was not begun on this stream (it joined it)");
    else if (c->mode != SIM_CAPTURE_MODE_RELAXED && c->owner != simi_thread_id())
        st = simi_fail(SIM_CAPTURE_WRONG_THREAD,
                       "a capture begun in mode %d must be ended by the thread that began it",
                       c->mode);
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        return st;
    }
    simi_graph *g = c->g, *drop = NULL;
    if (c->invalidated)
        st = simi_fail(SIM_CAPTURE_INVALIDATED, "the capture was invalidated; no graph");
    else if (!all_joined(c))
        st = simi_fail(SIM_CAPTURE_UNJOINED,
                       "a stream that joined the capture was not joined back into the origin");
    if (st) {
        simi_handle_free(g->handle);
        g->dev->n_graphs--;
        drop = g;
    } else {
        g->capturing = 0;
        g->nlanes = c->nstreams;
        *graph = g->handle;
    }
    capture_unlink(c);
    pthread_mutex_unlock(&g_sim.lock);
    if (drop) simi_graph_free_obj(drop); /* runs its hooks */
    return st;
}

sim_status sim_stream_get_capture_info(sim_stream stream, sim_capture_status *status, uint64_t *id,
                                       sim_graph *graph) {
    return sim_stream_get_info(stream, NULL, status, id, graph);
}

sim_status sim_stream_get_info(sim_stream stream, int *device, sim_capture_status *status,
                               uint64_t *id, sim_graph *graph) {
    sim_status st = simi_enter(SIM_OP_GET_CAPTURE_INFO, simi_handle_device(stream));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    if (!s) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                         (unsigned long long)stream);
    }
    simi_capture *c = s->cap;
    if (device) *device = s->dev->index;
    if (status)
        *status = !c               ? SIM_CAPTURE_STATUS_NONE
                  : c->invalidated ? SIM_CAPTURE_STATUS_INVALIDATED
                                   : SIM_CAPTURE_STATUS_ACTIVE;
    if (id) *id = c ? c->id : 0;
    if (graph) *graph = c ? c->g->handle : 0;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* graph API                                                           */

sim_status sim_graph_node_count(sim_graph graph, size_t *count) {
    sim_status st = simi_enter(SIM_OP_GRAPH_NODE_COUNT, simi_handle_device(graph));
    if (st) return st;
    if (!count) return simi_fail(SIM_INVALID_VALUE, "count is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_graph *g = simi_handle_get(graph, SIMI_T_GRAPH);
    if (g) *count = g->n;
    pthread_mutex_unlock(&g_sim.lock);
    return g ? SIM_OK
             : simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live graph",
                         (unsigned long long)graph);
}

sim_status sim_graph_stream_node_count(sim_graph graph, sim_stream stream, size_t *count) {
    if (!count) return simi_fail(SIM_INVALID_VALUE, "count is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_graph *g = simi_handle_get(graph, SIMI_T_GRAPH);
    size_t n = 0;
    if (g)
        for (uint32_t i = 0; i < g->n; i++) n += g->nodes[i].stream == stream;
    pthread_mutex_unlock(&g_sim.lock);
    if (!g)
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live graph",
                         (unsigned long long)graph);
    *count = n;
    return SIM_OK;
}

sim_status sim_graph_destroy(sim_graph graph) {
    sim_status st = simi_enter(SIM_OP_GRAPH_DESTROY, simi_handle_device(graph));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_graph *g = simi_handle_get(graph, SIMI_T_GRAPH);
    if (!g)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live graph", (unsigned long long)graph);
    else if (g->capturing)
        st = simi_fail(SIM_ILLEGAL_STATE, "the graph is still being captured");
    else {
        simi_handle_free(graph);
        g->dev->n_graphs--;
    }
    pthread_mutex_unlock(&g_sim.lock);
    if (!st) simi_graph_free_obj(g);
    return st;
}

sim_status sim_graph_attach_hook(sim_graph graph, sim_hook_fn fn, void *user) {
    sim_status st = simi_enter(SIM_OP_GRAPH_ATTACH_HOOK, simi_handle_device(graph));
    if (st) return st;
    if (!fn) return simi_fail(SIM_INVALID_VALUE, "fn is NULL");
    simi_hook *h = calloc(1, sizeof *h);
    if (!h) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    pthread_mutex_lock(&g_sim.lock);
    simi_graph *g = simi_handle_get(graph, SIMI_T_GRAPH);
    if (!g)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live graph", (unsigned long long)graph);
    else if (g->nhooks == g->caphooks) {
        size_t nc = g->caphooks ? g->caphooks * 2 : 4;
        simi_hook **n = realloc(g->hooks, nc * sizeof *n);
        if (!n)
            st = simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        else {
            g->hooks = n;
            g->caphooks = nc;
        }
    }
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(h);
        return st;
    }
    h->fn = fn;
    h->user = user;
    h->dev = g->dev;
    atomic_init(&h->refs, 1);
    atomic_fetch_add(&g->dev->hooks_pending, 1);
    g->hooks[g->nhooks++] = h;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* executable graphs                                                   */

/* A replay runs on a stream (the device is busy while it does): its lanes
 * wait for each other's nodes the way the device's stream threads do
 * (docs/sim.md, "Hand-offs"). */
static void run_lane(simi_exec *x, int lane) {
    for (uint32_t i = 0; i < x->n; i++) {
        gnode *nd = &x->nodes[i];
        if (nd->lane != lane) continue;
        sim_status err = SIM_OK;
        pthread_mutex_lock(&x->lock);
        for (uint32_t d = 0; d < nd->ndeps; d++) {
            SIMI_WAIT_WHILE_BUSY(&x->cond, &x->lock, &x->dev->active_streams,
                                 !x->done[nd->deps[d]]);
            if (!err) err = x->status[nd->deps[d]];
        }
        pthread_mutex_unlock(&x->lock);
        simi_exec_op(x->dev, nd->op, &err);
        pthread_mutex_lock(&x->lock);
        x->done[i] = 1;
        x->status[i] = err;
        simi_cv_broadcast(&x->cond);
        pthread_mutex_unlock(&x->lock);
    }
}

typedef struct lane_arg {
    simi_exec *x;
    int lane;
} lane_arg;

static void *lane_main(void *p) {
    lane_arg a = *(lane_arg *)p;
    free(p);
    simi_exec *x = a.x;
    uint64_t seen = 0;
    pthread_mutex_lock(&x->lock);
    for (;;) {
        /* between replays: the common wait (a graph among dozens may not
         * replay again soon, and its lanes must not keep the processors) */
        SIMI_WAIT_WHILE(&x->cond, &x->lock, x->gen == seen && !x->stop);
        if (x->stop) break;
        seen = x->gen;
        pthread_mutex_unlock(&x->lock);
        run_lane(x, a.lane);
        pthread_mutex_lock(&x->lock);
        x->lanes_left--;
        simi_cv_broadcast(&x->cond);
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

void simi_exec_run(simi_exec *x, sim_status *err) {
    pthread_mutex_lock(&x->lock);
    SIMI_WAIT_WHILE(&x->cond, &x->lock, x->running); /* launches never overlap */
    x->running = 1;
    memset(x->done, 0, x->n);
    memset(x->status, 0, x->n * sizeof *x->status);
    x->lanes_left = x->nlanes - 1;
    x->gen++;
    simi_cv_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
    run_lane(x, 0);
    pthread_mutex_lock(&x->lock);
    SIMI_WAIT_WHILE_BUSY(&x->cond, &x->lock, &x->dev->active_streams, x->lanes_left > 0);
    for (uint32_t i = 0; i < x->n && *err == SIM_OK; i++) *err = x->status[i];
    x->running = 0;
    simi_cv_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

void simi_exec_put(simi_exec *x) {
    if (atomic_fetch_sub(&x->refs, 1) != 1) return;
    pthread_mutex_lock(&x->lock);
    x->stop = 1;
    simi_cv_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
    for (int i = 0; i < x->nthreads; i++) pthread_join(x->threads[i], NULL);
    nodes_free(x->nodes, x->n);
    for (size_t i = 0; i < x->nhooks; i++) hook_put(x->hooks[i]);
    free(x->hooks);
    free(x->threads);
    free(x->done);
    free(x->status);
    pthread_mutex_destroy(&x->lock);
    simi_cv_destroy(&x->cond);
    free(x);
}

sim_status sim_graph_instantiate(sim_graph_exec *exec, sim_graph graph) {
    sim_status st = simi_enter(SIM_OP_GRAPH_INSTANTIATE, simi_handle_device(graph));
    if (st) return st;
    if (!exec) return simi_fail(SIM_INVALID_VALUE, "exec is NULL");
    simi_exec *x = calloc(1, sizeof *x);
    if (!x) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    atomic_init(&x->refs, 1);
    pthread_mutex_init(&x->lock, NULL);
    simi_cv_init(&x->cond);
    pthread_mutex_lock(&g_sim.lock);
    simi_graph *g = simi_handle_get(graph, SIMI_T_GRAPH);
    if (!g)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live graph", (unsigned long long)graph);
    else if (g->capturing)
        st = simi_fail(SIM_ILLEGAL_STATE, "the graph is still being captured");
    else if (atomic_load(&g->dev->lost))
        st = simi_fail(SIM_DEVICE_LOST, "device %d is lost", g->dev->index);
    if (!st) {
        x->dev = g->dev;
        x->nlanes = g->nlanes > 0 ? g->nlanes : 1;
        x->nodes = calloc(g->n ? g->n : 1, sizeof *x->nodes);
        x->done = calloc(g->n ? g->n : 1, 1);
        x->status = calloc(g->n ? g->n : 1, sizeof *x->status);
        x->hooks = calloc(g->nhooks ? g->nhooks : 1, sizeof *x->hooks);
        x->threads = calloc((size_t)x->nlanes, sizeof *x->threads);
        if (!x->nodes || !x->done || !x->status || !x->hooks || !x->threads)
            st = simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        for (uint32_t i = 0; !st && i < g->n; i++) {
            x->nodes[i].op = simi_op_clone(g->nodes[i].op);
            x->nodes[i].lane = g->nodes[i].lane;
            x->nodes[i].ndeps = g->nodes[i].ndeps;
            x->nodes[i].deps = dup_deps(g->nodes[i].deps, g->nodes[i].ndeps);
            x->n = i + 1;
            if (!x->nodes[i].op || (g->nodes[i].ndeps && !x->nodes[i].deps))
                st = simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        }
        if (!st) {
            for (size_t i = 0; i < g->nhooks; i++) {
                atomic_fetch_add(&g->hooks[i]->refs, 1);
                x->hooks[x->nhooks++] = g->hooks[i];
            }
        }
    }
    pthread_mutex_unlock(&g_sim.lock);
    for (int l = 1; !st && l < x->nlanes; l++) {
        lane_arg *a = malloc(sizeof *a);
        if (a) *a = (lane_arg){x, l};
        if (!a || pthread_create(&x->threads[x->nthreads], NULL, lane_main, a) != 0) {
            free(a);
            st = simi_fail(SIM_OUT_OF_MEMORY, "cannot start graph lane threads");
            break;
        }
        x->nthreads++;
    }
    if (!st) {
        pthread_mutex_lock(&g_sim.lock);
        uint64_t h = simi_handle_new(SIMI_T_EXEC, x->dev->index, x);
        if (h) {
            x->dev->n_execs++;
            *exec = h;
        } else {
            st = simi_fail(SIM_OUT_OF_MEMORY, "handle table full");
        }
        pthread_mutex_unlock(&g_sim.lock);
    }
    if (st) {
        if (!x->nodes) x->n = 0;
        simi_exec_put(x);
    }
    return st;
}

sim_status sim_graph_launch(sim_graph_exec exec, sim_stream stream) {
    simi_watch_arg(exec);
    sim_status st = simi_enter(SIM_OP_GRAPH_LAUNCH, simi_handle_device(stream));
    if (st) return st;
    simi_op *op = simi_op_alloc(0);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    pthread_mutex_lock(&g_sim.lock);
    simi_exec *x = simi_handle_get(exec, SIMI_T_EXEC);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    if (!x)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live executable graph",
                       (unsigned long long)exec);
    else if (!s)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                       (unsigned long long)stream);
    else if (s->dev != x->dev)
        st = simi_fail(SIM_INVALID_HANDLE,
                       "executable graph of device %d launched on a stream of device %d",
                       x->dev->index, s->dev->index);
    else if (atomic_load(&s->dev->lost))
        st = simi_fail(SIM_DEVICE_LOST, "device %d is lost", s->dev->index);
    else if (s->cap)
        st = simi_fail(SIM_NOT_SUPPORTED, "graph launches cannot be captured by the sim");
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    op->kind = SIMI_OP_GRAPH;
    op->u.graph.exec = x;
    atomic_fetch_add(&x->refs, 1);
    simi_stream_push(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_graph_exec_destroy(sim_graph_exec exec) {
    sim_status st = simi_enter(SIM_OP_GRAPH_EXEC_DESTROY, simi_handle_device(exec));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_exec *x = simi_handle_get(exec, SIMI_T_EXEC);
    if (x) {
        simi_handle_free(exec);
        x->dev->n_execs--;
    }
    pthread_mutex_unlock(&g_sim.lock);
    if (!x)
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live executable graph",
                         (unsigned long long)exec);
    simi_exec_put(x); /* enqueued launches hold their own references */
    return SIM_OK;
}
