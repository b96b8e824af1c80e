/*
 * cmd_inspect.c — `kctx inspect IMAGE [--json]`: validate an image, then
 * print what it holds. Validation comes first and decides everything: the
 * printing code only ever sees a view that kctx_image_view_open produced.
 */
#include "commands.h"
#include "json.h"
#include "manifest.h"
#include "util.h"

#include <kctx/image.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_JSON = 1
};

static const cli_option inspect_options[] = {
    {OPT_JSON, "json", 0, NULL, "print a JSON document instead of text"}, {0, NULL, 0, NULL, NULL}};

/* Header fields the view API does not expose; the view is validated, so
 * the header is known to be complete. */
static uint32_t le_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned le_u16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* ---- the task graph at a glance ------------------------------------- */

typedef struct dag_summary {
    uint32_t tasks, edges, roots, sinks;
    uint32_t depth; /* tasks on the longest dependency chain */
    uint32_t width; /* most tasks at one level (level = 1 + deepest dependency) */
} dag_summary;

static int summarize_dag(const kctx_image_view *v, dag_summary *s) {
    uint32_t n = kctx_image_task_count(v);
    memset(s, 0, sizeof *s);
    s->tasks = n;
    uint32_t *level = calloc(n ? n : 1, sizeof *level);
    uint32_t *per_level = calloc(n + 1, sizeof *per_level);
    unsigned char *has_dependent = calloc(n ? n : 1, 1);
    if (level == NULL || per_level == NULL || has_dependent == NULL) {
        free(level);
        free(per_level);
        free(has_dependent);
        return -1;
    }
    for (uint32_t t = 0; t < n; t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        uint32_t lv = 1;
        for (uint32_t i = 0; i < task.dep_count; i++) {
            uint32_t d = kctx_image_dep_at(v, t, i); /* validated: d < t */
            if (level[d] + 1 > lv) lv = level[d] + 1;
            has_dependent[d] = 1;
        }
        level[t] = lv;
        per_level[lv]++;
        s->edges += task.dep_count;
        if (task.dep_count == 0) s->roots++;
        if (lv > s->depth) s->depth = lv;
        if (per_level[lv] > s->width) s->width = per_level[lv];
    }
    for (uint32_t t = 0; t < n; t++)
        if (!has_dependent[t]) s->sinks++;
    free(level);
    free(per_level);
    free(has_dependent);
    return 0;
}

static const char *plural(uint32_t n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

/* ---- text ------------------------------------------------------------ */

static void print_params_text(const kctx_image_view *v, int child, uint32_t count) {
    fputc('(', stdout);
    for (uint32_t i = 0; i < count; i++) {
        kctx_image_param p = child < 0 ? kctx_image_param_at(v, i)
                                       : kctx_image_child_param_at(v, (uint32_t)child, i);
        printf("%s%s: %s", i ? ", " : "", p.name, manifest_param_kind_name(p.kind));
    }
    fputs(")\n", stdout);
}

static void print_text(const kctx_image_view *v, size_t size, const dag_summary *dag) {
    const uint8_t *h = v->base;
    printf("callable %s\n", kctx_image_name(v));
    printf("  image      %zu bytes, format %u.%u, crc32c 0x%08" PRIx32 "\n", size, le_u16(h + 8),
           le_u16(h + 10), le_u32(h + 24));
    printf("  signature  ");
    print_params_text(v, -1, kctx_image_param_count(v));

    uint32_t nc = kctx_image_child_count(v);
    printf("\nchildren (%u):\n", nc);
    for (uint32_t i = 0; i < nc; i++) {
        kctx_image_child c = kctx_image_child_at(v, i);
        printf("  #%u %s  entry %s  func_id %u\n", i, c.name, c.entry, c.func_id);
        printf("     params   ");
        print_params_text(v, (int)c.index, c.param_count);
        for (uint32_t j = 0; j < c.variant_count; j++) {
            kctx_image_variant var = kctx_image_variant_at(v, c.index, j);
            printf("     variant  %-11s %10" PRIu64 " bytes at offset 0x%" PRIx64 "\n",
                   manifest_variant_kind_name(var.kind), var.blob_size, var.blob_offset);
        }
    }

    uint32_t nt = kctx_image_task_count(v);
    printf("\ntasks (%u):\n", nt);
    for (uint32_t t = 0; t < nt; t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_image_child c = kctx_image_child_by_id(v, task.func_id);
        printf("  #%u %s  block_dim %u\n", t, c.name, task.block_dim);
        for (uint32_t i = 0; i < task.binding_count; i++) {
            kctx_image_binding b = kctx_image_binding_at(v, t, i);
            kctx_image_param cp = kctx_image_child_param_at(v, c.index, i);
            printf("     %-8s <- ", cp.name);
            switch (b.kind) {
            case KCTX_BIND_TENSOR:
                printf("%s + %" PRIu64 "\n", kctx_image_param_at(v, b.param).name, b.value);
                break;
            case KCTX_BIND_SCALAR:
                printf("%s\n", kctx_image_param_at(v, b.param).name);
                break;
            case KCTX_BIND_IMMEDIATE:
                printf("%" PRIu64 " (0x%" PRIx64 ")\n", b.value, b.value);
                break;
            default:
                printf("?\n");
                break;
            }
        }
        printf("     after    ");
        if (task.dep_count == 0) printf("(none)");
        for (uint32_t i = 0; i < task.dep_count; i++)
            printf("%s#%u", i ? ", " : "", kctx_image_dep_at(v, t, i));
        printf("\n");
    }
    printf("\ndag: %u %s, %u %s, %u %s, %u %s, depth %u, width %u\n", dag->tasks,
           plural(dag->tasks, "task", "tasks"), dag->edges, plural(dag->edges, "edge", "edges"),
           dag->roots, plural(dag->roots, "root", "roots"), dag->sinks,
           plural(dag->sinks, "sink", "sinks"), dag->depth, dag->width);
}

/* ---- JSON ------------------------------------------------------------ */

static void json_params(json_writer *w, const kctx_image_view *v, int child, uint32_t count) {
    json_array_begin(w, "params");
    for (uint32_t i = 0; i < count; i++) {
        kctx_image_param p = child < 0 ? kctx_image_param_at(v, i)
                                       : kctx_image_child_param_at(v, (uint32_t)child, i);
        json_object_begin(w, NULL);
        json_u64(w, "index", i);
        json_string(w, "name", p.name);
        json_string(w, "kind", manifest_param_kind_name(p.kind));
        json_object_end(w);
    }
    json_array_end(w);
}

static void print_json(const kctx_image_view *v, size_t size, const dag_summary *dag) {
    const uint8_t *h = v->base;
    char buf[32];
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "name", kctx_image_name(v));
    json_u64(&w, "size", size);
    snprintf(buf, sizeof buf, "%u.%u", le_u16(h + 8), le_u16(h + 10));
    json_string(&w, "format_version", buf);
    snprintf(buf, sizeof buf, "0x%08" PRIx32, le_u32(h + 24));
    json_string(&w, "checksum", buf);
    json_params(&w, v, -1, kctx_image_param_count(v));

    json_array_begin(&w, "children");
    for (uint32_t i = 0; i < kctx_image_child_count(v); i++) {
        kctx_image_child c = kctx_image_child_at(v, i);
        json_object_begin(&w, NULL);
        json_u64(&w, "index", c.index);
        json_u64(&w, "func_id", c.func_id);
        json_string(&w, "name", c.name);
        json_string(&w, "entry", c.entry);
        json_params(&w, v, (int)c.index, c.param_count);
        json_array_begin(&w, "variants");
        for (uint32_t j = 0; j < c.variant_count; j++) {
            kctx_image_variant var = kctx_image_variant_at(v, c.index, j);
            json_object_begin(&w, NULL);
            json_string(&w, "kind", manifest_variant_kind_name(var.kind));
            json_u64(&w, "size", var.blob_size);
            json_u64(&w, "offset", var.blob_offset);
            json_object_end(&w);
        }
        json_array_end(&w);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_array_begin(&w, "tasks");
    for (uint32_t t = 0; t < kctx_image_task_count(v); t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_image_child c = kctx_image_child_by_id(v, task.func_id);
        json_object_begin(&w, NULL);
        json_u64(&w, "index", t);
        json_u64(&w, "func_id", task.func_id);
        json_string(&w, "child", c.name);
        json_u64(&w, "block_dim", task.block_dim);
        json_array_begin(&w, "bindings");
        for (uint32_t i = 0; i < task.binding_count; i++) {
            kctx_image_binding b = kctx_image_binding_at(v, t, i);
            json_object_begin(&w, NULL);
            json_string(&w, "child_param", kctx_image_child_param_at(v, c.index, i).name);
            json_string(&w, "kind", manifest_binding_kind_name(b.kind));
            if (b.kind == KCTX_BIND_IMMEDIATE) {
                json_u64(&w, "value", b.value);
            } else {
                json_u64(&w, "param", b.param);
                json_string(&w, "param_name", kctx_image_param_at(v, b.param).name);
                if (b.kind == KCTX_BIND_TENSOR) json_u64(&w, "offset", b.value);
            }
            json_object_end(&w);
        }
        json_array_end(&w);
        json_array_begin(&w, "after");
        for (uint32_t i = 0; i < task.dep_count; i++)
            json_u64(&w, NULL, kctx_image_dep_at(v, t, i));
        json_array_end(&w);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_object_begin(&w, "dag");
    json_u64(&w, "tasks", dag->tasks);
    json_u64(&w, "edges", dag->edges);
    json_u64(&w, "roots", dag->roots);
    json_u64(&w, "sinks", dag->sinks);
    json_u64(&w, "depth", dag->depth);
    json_u64(&w, "width", dag->width);
    json_object_end(&w);
    json_object_end(&w);
}

/* ---- the command ----------------------------------------------------- */

static int run_inspect(const cli_command *cmd, int argc, char **argv) {
    const char *path = NULL;
    int as_json = 0;
    cli_parser p;
    int opt;
    cli_parser_init(&p, cmd, argc, argv);
    while ((opt = cli_next(&p)) != CLI_END) {
        switch (opt) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case OPT_JSON:
            as_json = 1;
            break;
        case CLI_POSITIONAL:
            if (path != NULL)
                return cli_usage_error(cmd, "unexpected argument '%s' (one IMAGE only)", p.value);
            path = p.value;
            break;
        default:
            return cli_usage_error(cmd, "internal error: option %d", opt);
        }
    }
    if (path == NULL) return cli_usage_error(cmd, "missing IMAGE");

    /* util_read_file returns malloc'd memory: 8-byte aligned, as images
     * must be. */
    void *bytes = NULL;
    size_t size = 0;
    if (util_read_file(path, KCTX_IMAGE_MAX_SIZE, &bytes, &size) != 0) {
        fprintf(stderr, "%s: error: cannot read the image: %s\n", path,
                errno == EFBIG ? "larger than the format's 4 GiB limit" : strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    kctx_image_view view;
    kctx_image_error err;
    memset(&err, 0, sizeof err);
    kctx_image_reason r = kctx_image_view_open(&view, bytes, size, &err);
    if (r != KCTX_IMAGE_OK) {
        fprintf(stderr, "%s: rejected: %s at offset %" PRIu64 ": %s\n", path,
                kctx_image_reason_name(r), err.offset,
                err.message[0] ? err.message : kctx_image_reason_string(r));
        free(bytes);
        return CLI_EXIT_FAILURE;
    }
    dag_summary dag;
    if (summarize_dag(&view, &dag) != 0) {
        fprintf(stderr, "kctx inspect: out of memory\n");
        free(bytes);
        return CLI_EXIT_FAILURE;
    }
    if (as_json)
        print_json(&view, size, &dag);
    else
        print_text(&view, size, &dag);
    free(bytes);
    return CLI_EXIT_OK;
}

const cli_command kctx_cmd_inspect = {
    .name = "inspect",
    .summary = "Validate a callable image and print what it holds",
    .synopsis = "IMAGE [--json]",
    .description =
        "Reads IMAGE (\"-\" reads standard input) and validates it completely before\n"
        "anything else. A rejected image prints one line on stderr,\n"
        "    IMAGE: rejected: REASON at offset N: MESSAGE\n"
        "and exits 1. A valid image prints the callable: name, size, format version,\n"
        "checksum, signature, children with their parameters and variants (kind, size,\n"
        "offset), tasks with their bindings and dependencies, and a one-line summary of\n"
        "the task graph; --json prints the same as one JSON document.\n",
    .options = inspect_options,
    .run = run_inspect,
};
