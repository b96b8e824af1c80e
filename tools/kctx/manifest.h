/*
 * manifest.h — the callable manifest: a YAML description of a callable
 * (name, signature, children with their variant files, tasks) that
 * `kctx pack` turns into an image. docs/cli.md has the schema reference.
 *
 * manifest_load() parses and checks everything that can be checked without
 * reading variant files: the schema (known keys, required fields, value
 * types and kinds), the image format's limits, unique names, every name a
 * task refers to, bindings against the child's parameters, and that every
 * dependency names an earlier task. Names are resolved to indices, so the
 * result maps one to one onto kctx_image_builder calls.
 *
 * Every error message has the form
 *     PATH:LINE:COLUMN: error: WHAT
 * with the position (1-based) of the offending YAML node.
 */
#ifndef KCTX_TOOL_MANIFEST_H
#define KCTX_TOOL_MANIFEST_H

#include <kctx/image.h>

#include <stddef.h>
#include <stdint.h>

/* Upper bound on a manifest file's size; anything bigger is not a manifest. */
#define MANIFEST_MAX_FILE_SIZE (16u << 20)

typedef struct mf_mark {
    unsigned line, column; /* 1-based */
} mf_mark;

typedef struct mf_param {
    const char *name;
    kctx_param_kind kind;
    mf_mark mark;
} mf_param;

typedef struct mf_variant {
    kctx_variant_kind kind;
    const char *file; /* as written: relative to the manifest's directory or a search dir */
    mf_mark mark;     /* of the file value */
} mf_variant;

typedef struct mf_child {
    const char *name;
    const char *entry; /* the kernel's symbol; defaults to the name */
    mf_param *params;
    uint32_t param_count;
    mf_variant *variants;
    uint32_t variant_count;
    mf_mark mark;
} mf_child;

typedef struct mf_binding {
    kctx_binding_kind kind;
    uint32_t param; /* callable parameter index (0 for immediates) */
    uint64_t value; /* tensor: byte offset; immediate: the value */
    mf_mark mark;
} mf_binding;

typedef struct mf_task {
    const char *id;
    uint32_t child; /* index into children = function id */
    uint32_t block_dim;
    mf_binding *bindings; /* one per child parameter, in order */
    uint32_t binding_count;
    uint32_t *deps; /* indices of earlier tasks */
    uint32_t dep_count;
    mf_mark mark;
} mf_task;

typedef struct manifest {
    const char *path; /* as given to manifest_load (not owned) */
    char *dir;        /* directory of the manifest */
    const char *name;
    mf_param *params;
    uint32_t param_count;
    mf_child *children;
    uint32_t child_count;
    mf_task *tasks;
    uint32_t task_count;
    void *doc; /* the YAML document; the strings above point into it */
} manifest;

/* Parse and check the manifest at `path`. Returns 0, or -1 with a message
 * in `err` (and `*m` left empty: manifest_free is still safe). */
int manifest_load(const char *path, manifest *m, char *err, size_t err_size);

/* Release everything manifest_load allocated; safe on a zeroed manifest. */
void manifest_free(manifest *m);

/* Names of the kinds as written in manifests (and printed by inspect);
 * "unknown" for values outside the enums. */
const char *manifest_param_kind_name(kctx_param_kind kind);
const char *manifest_variant_kind_name(kctx_variant_kind kind);
const char *manifest_binding_kind_name(kctx_binding_kind kind);

#endif /* KCTX_TOOL_MANIFEST_H */
