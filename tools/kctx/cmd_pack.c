/*
 * cmd_pack.c — `kctx pack MANIFEST -o OUT [--search-dir DIR]...`: build a
 * callable image from a manifest with the image builder, and write it
 * atomically (a temporary file in OUT's directory, renamed into place), so
 * that a failed pack leaves no file behind and an existing OUT unchanged.
 */
#include "commands.h"
#include "manifest.h"
#include "util.h"

#include <kctx/image.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
    OPT_OUTPUT = 1,
    OPT_SEARCH_DIR,
    OPT_VERBOSE
};

static const cli_option pack_options[] = {
    {OPT_OUTPUT, "output", 'o', "OUT", "write the image to OUT (required)"},
    {OPT_SEARCH_DIR, "search-dir", 0, "DIR",
     "look for relative variant files in DIR too (repeatable)"},
    {OPT_VERBOSE, "verbose", 'v', NULL,
     "say where each variant file was found, and what was written"},
    {0, NULL, 0, NULL, NULL}};

typedef struct pack_args {
    const char *manifest;
    const char *output;
    const char **search_dirs;
    int search_dir_count;
    int verbose;
} pack_args;

/* Read one variant file. A relative path is looked up in the manifest's
 * directory, then in each search directory in the order given; the first
 * that exists is used (and must be readable). */
static int read_variant(const pack_args *a, const manifest *m, const mf_variant *v, void **data,
                        size_t *size, char *err, size_t err_size) {
    const char *file = v->file;
    int absolute = file[0] == '/';
    int candidates = absolute ? 1 : 1 + a->search_dir_count;
    for (int i = 0; i < candidates; i++) {
        const char *dir = absolute ? NULL : (i == 0 ? m->dir : a->search_dirs[i - 1]);
        char *path = util_path_join(dir, file);
        if (path == NULL) {
            snprintf(err, err_size, "%s: error: out of memory", m->path);
            return -1;
        }
        struct stat st;
        if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) { /* not here */
            free(path);
            continue;
        }
        if (util_read_file(path, KCTX_IMAGE_MAX_SIZE, data, size) != 0) {
            snprintf(err, err_size, "%s:%u:%u: error: cannot read variant file '%s' (%s): %s",
                     m->path, v->mark.line, v->mark.column, file, path,
                     errno == EFBIG ? "larger than the image size limit" : strerror(errno));
            free(path);
            return -1;
        }
        if (*size == 0) {
            snprintf(err, err_size, "%s:%u:%u: error: variant file '%s' (%s) is empty", m->path,
                     v->mark.line, v->mark.column, file, path);
            free(*data);
            free(path);
            return -1;
        }
        if (a->verbose)
            fprintf(stderr, "kctx pack: %s variant '%s': %s (%zu bytes)\n",
                    manifest_variant_kind_name(v->kind), file, path, *size);
        free(path);
        return 0;
    }
    /* Not found anywhere: say where we looked. */
    int n = snprintf(err, err_size, "%s:%u:%u: error: cannot open variant file '%s': %s", m->path,
                     v->mark.line, v->mark.column, file, strerror(ENOENT));
    if (!absolute && n >= 0 && (size_t)n < err_size)
        n += snprintf(err + n, err_size - (size_t)n, " (looked in: %s", m->dir);
    for (int i = 0; !absolute && i < a->search_dir_count && n >= 0 && (size_t)n < err_size; i++)
        n += snprintf(err + n, err_size - (size_t)n, ", %s", a->search_dirs[i]);
    if (!absolute && n >= 0 && (size_t)n < err_size)
        n += snprintf(err + n, err_size - (size_t)n, ")");
    /* The hint: variant files are build outputs, usually not next to the
     * manifest (the examples' are built into <build>/examples/callables). */
    if (!absolute && n >= 0 && (size_t)n < err_size)
        snprintf(err + n, err_size - (size_t)n,
                 "; hint: %s --search-dir DIR naming the folder the variant file was built into "
                 "(the examples': --search-dir <build>/examples/callables)",
                 a->search_dir_count ? "add a" : "pass");
    return -1;
}

/* Report a builder failure: the sticky status is returned again by finish,
 * with the builder's own message. `at` is the manifest element being added. */
static int builder_failed(kctx_image_builder *b, const manifest *m, mf_mark at, char *err,
                          size_t err_size) {
    char msg[256] = "";
    void *out = NULL;
    size_t out_size = 0;
    kctx_build_status st = kctx_image_builder_finish(b, &out, &out_size, msg, sizeof msg);
    free(out); /* cannot be set after a failure; freed in case */
    if (st == KCTX_BUILD_NO_MEMORY)
        snprintf(err, err_size, "%s: error: out of memory while building the image", m->path);
    else
        snprintf(err, err_size, "%s:%u:%u: error: the image builder rejected this: %s", m->path,
                 at.line, at.column, msg[0] ? msg : "invalid content");
    return -1;
}

static int build_image(const pack_args *a, const manifest *m, void **image, size_t *image_size,
                       char *err, size_t err_size) {
    kctx_image_builder *b = kctx_image_builder_new(m->name);
    int rc = -1;
    if (b == NULL) {
        snprintf(err, err_size, "%s: error: out of memory", m->path);
        return -1;
    }
    for (uint32_t i = 0; i < m->param_count; i++) {
        const mf_param *p = &m->params[i];
        if (kctx_image_builder_param(b, p->name, p->kind) != KCTX_BUILD_OK) {
            builder_failed(b, m, p->mark, err, err_size);
            goto out;
        }
    }
    for (uint32_t i = 0; i < m->child_count; i++) {
        const mf_child *c = &m->children[i];
        uint32_t func_id = 0;
        if (kctx_image_builder_child(b, c->name, c->entry, &func_id) != KCTX_BUILD_OK) {
            builder_failed(b, m, c->mark, err, err_size);
            goto out;
        }
        if (func_id != i) { /* tasks refer to children by their manifest position */
            snprintf(err, err_size,
                     "%s: error: the image builder gave child '%s' function id %u, "
                     "expected %u",
                     m->path, c->name, func_id, i);
            goto out;
        }
        for (uint32_t j = 0; j < c->param_count; j++) {
            const mf_param *p = &c->params[j];
            if (kctx_image_builder_child_param(b, p->name, p->kind) != KCTX_BUILD_OK) {
                builder_failed(b, m, p->mark, err, err_size);
                goto out;
            }
        }
        for (uint32_t j = 0; j < c->variant_count; j++) {
            const mf_variant *v = &c->variants[j];
            void *data = NULL;
            size_t size = 0;
            if (read_variant(a, m, v, &data, &size, err, err_size) != 0) goto out;
            kctx_build_status st = kctx_image_builder_variant(b, v->kind, data, size);
            free(data);
            if (st != KCTX_BUILD_OK) {
                builder_failed(b, m, v->mark, err, err_size);
                goto out;
            }
        }
    }
    for (uint32_t i = 0; i < m->task_count; i++) {
        const mf_task *t = &m->tasks[i];
        if (kctx_image_builder_task(b, t->child, t->block_dim, NULL) != KCTX_BUILD_OK) {
            builder_failed(b, m, t->mark, err, err_size);
            goto out;
        }
        for (uint32_t j = 0; j < t->binding_count; j++) {
            const mf_binding *bd = &t->bindings[j];
            if (kctx_image_builder_bind(b, bd->kind, bd->param, bd->value) != KCTX_BUILD_OK) {
                builder_failed(b, m, bd->mark, err, err_size);
                goto out;
            }
        }
        for (uint32_t j = 0; j < t->dep_count; j++) {
            if (kctx_image_builder_dep(b, t->deps[j]) != KCTX_BUILD_OK) {
                builder_failed(b, m, t->mark, err, err_size);
                goto out;
            }
        }
    }
    char msg[256] = "";
    kctx_build_status st = kctx_image_builder_finish(b, image, image_size, msg, sizeof msg);
    if (st == KCTX_BUILD_NO_MEMORY) {
        snprintf(err, err_size, "%s: error: out of memory while building the image", m->path);
        goto out;
    }
    if (st != KCTX_BUILD_OK) {
        /* A property of the whole callable (e.g. the string table's size):
         * no one node to point at. */
        snprintf(err, err_size, "%s: error: the image builder rejected the callable: %s", m->path,
                 msg[0] ? msg : "invalid content");
        goto out;
    }
    rc = 0;
out:
    kctx_image_builder_free(b);
    return rc;
}

static int run_pack(const cli_command *cmd, int argc, char **argv) {
    pack_args a = {0};
    cli_parser p;
    int opt;
    int rc = CLI_EXIT_FAILURE;
    /* At most one search dir per argument. */
    a.search_dirs = calloc((size_t)argc + 1, sizeof *a.search_dirs);
    if (a.search_dirs == NULL) {
        fprintf(stderr, "kctx pack: out of memory\n");
        return CLI_EXIT_FAILURE;
    }
    cli_parser_init(&p, cmd, argc, argv);
    while ((opt = cli_next(&p)) != CLI_END) {
        switch (opt) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            rc = CLI_EXIT_OK;
            goto out;
        case CLI_BAD:
            rc = CLI_EXIT_USAGE;
            goto out;
        case OPT_OUTPUT:
            if (a.output != NULL) {
                rc = cli_usage_error(cmd, "option '-o' given twice");
                goto out;
            }
            a.output = p.value;
            break;
        case OPT_SEARCH_DIR:
            a.search_dirs[a.search_dir_count++] = p.value;
            break;
        case OPT_VERBOSE:
            a.verbose = 1;
            break;
        case CLI_POSITIONAL:
            if (a.manifest != NULL) {
                rc = cli_usage_error(cmd, "unexpected argument '%s' (one MANIFEST only)", p.value);
                goto out;
            }
            a.manifest = p.value;
            break;
        default:
            rc = cli_usage_error(cmd, "internal error: option %d", opt);
            goto out;
        }
    }
    if (a.manifest == NULL) {
        rc = cli_usage_error(cmd, "missing MANIFEST");
        goto out;
    }
    if (a.output == NULL) {
        rc = cli_usage_error(cmd, "missing -o OUT");
        goto out;
    }
    if (a.output[0] == '\0') {
        rc = cli_usage_error(cmd, "-o needs a non-empty path");
        goto out;
    }

    manifest m;
    char err[1024];
    if (manifest_load(a.manifest, &m, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    void *image = NULL;
    size_t image_size = 0;
    if (build_image(&a, &m, &image, &image_size, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        manifest_free(&m);
        goto out;
    }
    const char *step = NULL;
    if (util_write_file_atomic(a.output, image, image_size, &step) != 0) {
        fprintf(stderr, "%s: error: cannot write the image (%s): %s\n", a.output, step,
                strerror(errno));
    } else {
        if (a.verbose)
            fprintf(stderr, "kctx pack: wrote %s: callable '%s', %zu bytes, %u %s, %u %s\n",
                    a.output, m.name, image_size, m.child_count,
                    m.child_count == 1 ? "child" : "children", m.task_count,
                    m.task_count == 1 ? "task" : "tasks");
        rc = CLI_EXIT_OK;
    }
    free(image);
    manifest_free(&m);
out:
    free(a.search_dirs);
    return rc;
}

const cli_command kctx_cmd_pack = {
    .name = "pack",
    .summary = "Build a callable image from a manifest",
    .synopsis = "MANIFEST -o OUT [--search-dir DIR]... [-v]",
    .description =
        "Reads the YAML manifest MANIFEST (the callable's name, signature, children with\n"
        "their variant files, and tasks; see docs/cli.md for the schema), builds a\n"
        "canonical image and writes it to OUT. Relative variant file paths are looked up\n"
        "in the manifest's directory, then in each --search-dir in order.\n"
        "\n"
        "The image is written to a temporary file next to OUT and renamed into place:\n"
        "on any error nothing is written and an existing OUT is left unchanged. Errors\n"
        "name the manifest, line and column. Packing the same content twice gives\n"
        "identical bytes.\n",
    .options = pack_options,
    .run = run_pack,
};
