/*
 * json.h — a tiny streaming JSON writer (output only) for `--json` modes.
 *
 * Values are written in order; the writer inserts commas, newlines and
 * two-space indentation. Inside an object every value takes a key; inside
 * an array keys are NULL. Strings are escaped per RFC 8259: '"', '\\' and
 * control characters; other bytes (UTF-8 included) pass through. Numbers
 * are unsigned 64-bit integers, printed exactly.
 */
#ifndef KCTX_TOOL_JSON_H
#define KCTX_TOOL_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
    FILE *out;
    int depth;
    int has_items[JSON_MAX_DEPTH]; /* per open container: written a value yet */
} json_writer;

void json_init(json_writer *w, FILE *out);
void json_object_begin(json_writer *w, const char *key);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w, const char *key);
void json_array_end(json_writer *w);
void json_string(json_writer *w, const char *key, const char *value);
void json_u64(json_writer *w, const char *key, uint64_t value);
void json_bool(json_writer *w, const char *key, int value);
/* Write `s` as a quoted, escaped JSON string. */
void json_write_escaped(FILE *out, const char *s);

#endif /* KCTX_TOOL_JSON_H */
