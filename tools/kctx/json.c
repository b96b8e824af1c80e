/*
 * json.c — a tiny streaming JSON writer.
 */
#include "json.h"

#include <inttypes.h>

void json_init(json_writer *w, FILE *out) {
    w->out = out;
    w->depth = 0;
    w->has_items[0] = 0;
}

void json_write_escaped(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(out, "\\u%04x", (unsigned)*p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* Separator, indentation and key before a value at the current depth. */
static void begin_value(json_writer *w, const char *key) {
    if (w->depth > 0) {
        fputs(w->has_items[w->depth] ? ",\n" : "\n", w->out);
        w->has_items[w->depth] = 1;
        for (int i = 0; i < w->depth; i++) fputs("  ", w->out);
    }
    if (key != NULL) {
        json_write_escaped(w->out, key);
        fputs(": ", w->out);
    }
}

static void open_container(json_writer *w, const char *key, char c) {
    begin_value(w, key);
    fputc(c, w->out);
    if (w->depth + 1 < JSON_MAX_DEPTH) w->depth++;
    w->has_items[w->depth] = 0;
}

static void close_container(json_writer *w, char c) {
    int had = w->has_items[w->depth];
    if (w->depth > 0) w->depth--;
    if (had) {
        fputc('\n', w->out);
        for (int i = 0; i < w->depth; i++) fputs("  ", w->out);
    }
    fputc(c, w->out);
    if (w->depth == 0) fputc('\n', w->out);
}

void json_object_begin(json_writer *w, const char *key) { open_container(w, key, '{'); }
void json_object_end(json_writer *w) { close_container(w, '}'); }
void json_array_begin(json_writer *w, const char *key) { open_container(w, key, '['); }
void json_array_end(json_writer *w) { close_container(w, ']'); }

void json_string(json_writer *w, const char *key, const char *value) {
    begin_value(w, key);
    json_write_escaped(w->out, value);
}

void json_u64(json_writer *w, const char *key, uint64_t value) {
    begin_value(w, key);
    fprintf(w->out, "%" PRIu64, value);
}

void json_bool(json_writer *w, const char *key, int value) {
    begin_value(w, key);
    fputs(value ? "true" : "false", w->out);
}
