/*
 * replay_main.c — runs the fuzz target over files, without libFuzzer:
 *
 *   kctx_image_fuzz_replay PATH...    (files, or directories of files)
 *
 * This is how `make test` replays the checked-in corpus in every build
 * flavour. Prints the number of inputs run; a failing input aborts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kctx_test_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    char why[512];
    size_t n = 0;
    uint8_t *buf = ktc_read_file(path, &n, why, sizeof why);
    if (buf == NULL) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    long inputs = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot stat %s\n", argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= run_file(argv[i]) != 0;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            fprintf(stderr, "cannot open directory %s\n", argv[i]);
            failed = 1;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            failed |= run_file(path) != 0;
            inputs++;
        }
        closedir(d);
    }
    printf("replayed %ld inputs\n", inputs);
    if (inputs == 0) {
        fprintf(stderr, "no inputs\n");
        return 1;
    }
    return failed;
}
