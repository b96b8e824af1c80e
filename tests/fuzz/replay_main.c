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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (buf == NULL) {
            fclose(f);
            fprintf(stderr, "out of memory reading %s\n", path);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *bigger = realloc(buf, cap * 2);
        if (bigger == NULL) free(buf);
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
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
