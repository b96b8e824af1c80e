/*
 * test_fixtures.c — every checked-in fixture image gives exactly its
 * expected reason and offset (fixtures/expected.txt), valid ones walk
 * cleanly, and every rejection reason that a file can carry has a fixture.
 *
 *   test_image_fixtures DIR
 */
#include <kctx/image.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "image_testlib.h"

static const char *fixture_dir;

static int reason_by_name(const char *name, kctx_image_reason *out) {
#define REASON_BY_NAME_(rname, num, msg)           \
    if (strcmp(name, "KCTX_IMAGE_" #rname) == 0) { \
        *out = KCTX_IMAGE_##rname;                 \
        return 0;                                  \
    }
    KCTX_IMAGE_REASON_MAP(REASON_BY_NAME_)
#undef REASON_BY_NAME_
    return -1;
}

static void test_every_fixture_gives_its_reason_and_offset(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.txt", fixture_dir);
    FILE *m = fopen(path, "r");
    REQUIRE(m != NULL);
    int seen[1100] = {0};
    int count = 0;
    char line[512];
    while (fgets(line, sizeof line, m) != NULL) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char file[256], rname[64];
        unsigned long long offset;
        unsigned shift;
        if (!CHECK(sscanf(line, "%255s %63s %llx %u", file, rname, &offset, &shift) == 4,
                   "bad manifest line: %s", line))
            continue;
        kctx_image_reason want;
        if (!CHECK(reason_by_name(rname, &want) == 0, "unknown reason %s", rname)) continue;
        snprintf(path, sizeof path, "%s/%s", fixture_dir, file);
        size_t size = 0;
        char why[512];
        uint8_t *bytes = ktc_read_file(path, &size, why, sizeof why);
        if (!CHECK(bytes != NULL, "%s", why)) continue;
        void *block = NULL;
        uint8_t *at = copy_shifted(bytes, size, shift, &block);
        kctx_image_error err;
        kctx_image_view v;
        kctx_image_reason got = kctx_image_view_open(&v, at, size, &err);
        printf("     %-32s %-36s at 0x%-5llx %s\n", file, kctx_image_reason_name(got),
               (unsigned long long)err.offset, err.message);
        CHECK(got == want, "%s: %s, expected %s", file, kctx_image_reason_name(got), rname);
        CHECK(err.reason == got && err.offset == offset, "%s: offset 0x%llx, expected 0x%llx", file,
              (unsigned long long)err.offset, offset);
        if (got == KCTX_IMAGE_OK) {
            const char *problem = NULL;
            CHECK(walk_view(&v, &problem) != 0, "%s: %s", file, problem);
        } else {
            CHECK(v.base == NULL);
        }
        /* The verdict does not depend on the validator being asked twice. */
        CHECK(kctx_image_validate(at, size, NULL) == got);
        seen[(int)want]++;
        count++;
        free(block);
        free(bytes);
    }
    fclose(m);
    CHECK(count > 0);
    /* Every reason has a fixture, except a NULL pointer, which no file
     * can be (test_validate checks it). */
#define REASON_SEEN_(rname, num, msg)                \
    if (KCTX_IMAGE_##rname != KCTX_IMAGE_NULL_IMAGE) \
        CHECK(seen[num] > 0, "no fixture for KCTX_IMAGE_" #rname);
    KCTX_IMAGE_REASON_MAP(REASON_SEEN_)
#undef REASON_SEEN_
    printf("     %d fixtures\n", count);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    fixture_dir = argv[1];
    RUN(test_every_fixture_gives_its_reason_and_offset);
    return check_summary();
}
