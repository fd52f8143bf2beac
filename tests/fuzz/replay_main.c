/* Runs the fuzz target over files and directories of inputs (the seed corpus and the inputs
 * that once crashed it) without libFuzzer, so that any compiler builds it and every test run
 * replays them. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return 1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        uint8_t *grown = realloc(buf, cap);
        if (!grown)
            free(buf);
        buf = grown;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int failed = 0, count = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "cannot find %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failed |= run_file(argv[i]);
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "cannot open the directory %s\n", argv[i]);
            return 1;
        }
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed |= run_file(path);
            count++;
        }
        closedir(d);
    }
    printf("%d inputs replayed\n", count);
    return failed || count == 0;
}
