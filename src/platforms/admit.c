/*
 * admit.c — admitting a platform's registration (see admit.h).
 */
#include "admit.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Every table starts like this. */
typedef struct table_head {
    size_t size;
    uint32_t version;
} table_head;

static int refuse(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t why_size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (why_size) vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* Copy a table of any accepted size over an all-zero one of this
 * library's size: members beyond what the platform gave stay NULL/0; a
 * larger (newer) table's tail is ignored (its members are offers, see
 * platform.h). */
static int take(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what,
                char *why, size_t why_size) {
    if (!src) return refuse(why, why_size, "its %s is NULL", what);
    table_head h;
    memcpy(&h, src, sizeof h);
    if (h.size < min_size || h.version < KCTX_PLATFORM_VERSION)
        return refuse(why, why_size,
                      "its %s (size %zu, version %u) is older than this library accepts (at least "
                      "%zu bytes, version %u)",
                      what, h.size, h.version, min_size, KCTX_PLATFORM_VERSION);
    memset(dst, 0, dst_size);
    memcpy(dst, src, h.size < dst_size ? h.size : dst_size);
    h.size = dst_size;
    h.version = KCTX_PLATFORM_VERSION;
    memcpy(dst, &h, sizeof h);
    return 0;
}

/* The required ops, in table order: exactly the members before
 * KCTX_PLATFORM_OPS_MIN_SIZE (checked below). */
// clang-format off
#define REQUIRED_OPS(X)                                                               \
    X(classify) X(status_name) X(last_message)                                        \
    X(device_count) X(device_info)                                                    \
    X(stream_create) X(stream_destroy) X(stream_sync) X(stream_query) X(stream_info)  \
    X(event_create) X(event_destroy) X(event_record) X(stream_wait_event)             \
    X(mem_alloc) X(mem_free) X(memcpy_htod_async) X(memset_async)                     \
    X(memcpy_dtoh_async) X(atomic_read_u32) X(atomic_write_u32)                       \
    X(module_load) X(module_unload) X(module_function) X(launch)
// clang-format on
#define COUNT_OP_(name) +1
_Static_assert(offsetof(kctx_platform_ops, classify) +
                       (0 REQUIRED_OPS(COUNT_OP_)) * sizeof(void (*)(void)) ==
                   KCTX_PLATFORM_OPS_MIN_SIZE,
               "REQUIRED_OPS lists every member before the conditional ops");

static int check_ops(const kctx_platform_desc *d, kctx_platform_ops *o, char *why,
                     size_t why_size) {
#define REQUIRE_OP_(name) \
    if (!o->name) return refuse(why, why_size, "its required op %s is NULL", #name);
    REQUIRED_OPS(REQUIRE_OP_)
#undef REQUIRE_OP_
    /* Conditional ops: a declared capability needs its ops; an op of an
     * undeclared capability is ignored (the declaration decides). */
    if (!o->current_device && !o->bound_device)
        return refuse(why, why_size,
                      "it has neither current_device nor bound_device: the core cannot read "
                      "the device a caller works on (K4, K5)");
    if (d->has_epoch && !o->device_epoch)
        return refuse(why, why_size, "it declares has_epoch but device_epoch is NULL");
    if (!d->has_epoch) o->device_epoch = NULL;
    if (d->can_check_ranges && !o->mem_range_check)
        return refuse(why, why_size, "it declares can_check_ranges but mem_range_check is NULL");
    if (!d->can_check_ranges) o->mem_range_check = NULL, o->mem_free_counter = NULL;
    bool resident = (d->strategies & KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT)) != 0;
    if (resident && !o->function_address)
        return refuse(why, why_size,
                      "it offers the resident strategy but function_address is NULL");
    if (d->has_capture && (!o->exchange_capture_mode || !o->graph_attach_hook))
        return refuse(why, why_size,
                      "it declares has_capture but exchange_capture_mode or graph_attach_hook is "
                      "NULL");
    if (!d->has_capture) o->exchange_capture_mode = NULL, o->graph_attach_hook = NULL;
    return 0;
}

static int check_desc(const kctx_platform_entry *e, const kctx_platform_desc *d, char *why,
                      size_t why_size) {
    if (!d->name || !*d->name || strcmp(d->name, e->name) != 0)
        return refuse(why, why_size, "its descriptor names '%s', not '%s'",
                      d->name ? d->name : "(null)", e->name);
    const uint32_t known =
        KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT) | KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED);
    if (d->strategies == 0 || (d->strategies & ~known))
        return refuse(why, why_size, "it declares strategies 0x%x (known: 0x%x, at least one)",
                      d->strategies, known);
    if (d->default_strategy >= 32 || !(d->strategies & KCTX_STRATEGY_BIT(d->default_strategy)))
        return refuse(why, why_size, "its default strategy %u is not one it offers (0x%x)",
                      d->default_strategy, d->strategies);
    if (d->max_params_size == 0)
        return refuse(why, why_size, "it declares a parameter-block limit of 0 bytes");
    return 0;
}

int kctx__platform_admit(const kctx_platform_entry *e, kctx__admitted *out, char *why,
                         size_t why_size) {
    kctx_platform_entry entry;
    memset(out, 0, sizeof *out);
    if (take(&entry, sizeof entry, e, KCTX_PLATFORM_ENTRY_MIN_SIZE, "registration entry", why,
             why_size))
        return -1;
    if (!entry.name || !*entry.name) return refuse(why, why_size, "its entry has no name");
    if (take(&out->desc, sizeof out->desc, entry.desc, KCTX_PLATFORM_DESC_MIN_SIZE, "descriptor",
             why, why_size) ||
        check_desc(&entry, &out->desc, why, why_size))
        return -1;
    if (take(&out->ops, sizeof out->ops, out->desc.ops, KCTX_PLATFORM_OPS_MIN_SIZE, "ops table",
             why, why_size) ||
        check_ops(&out->desc, &out->ops, why, why_size))
        return -1;
    out->desc.ops = &out->ops;
    if (entry.lifecycle) {
        if (take(&out->lifecycle, sizeof out->lifecycle, entry.lifecycle,
                 KCTX_PLATFORM_LIFECYCLE_MIN_SIZE, "lifecycle table", why, why_size))
            return -1;
        const kctx_platform_lifecycle_ops *l = &out->lifecycle;
        if (!l->init || !l->finalize || !l->set_device || !l->reset_device)
            return refuse(why, why_size, "its lifecycle table has a NULL op");
        out->has_lifecycle = true;
    }
    return 0;
}
