/* What the targets that read files share: a failed invariant as a crash (libFuzzer then keeps
 * the input), and the input written to a file of this process, removed at exit, for readers that
 * take a path. */
#ifndef GRANFLOW_FUZZ_FILE_H
#define GRANFLOW_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "granflow/error.h"

static void fuzz_require(int ok, const char *target, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s: %s (last message: %s)\n", target, what, gf_error_message());
        abort();
    }
}

static char fuzz_path[64];

static void fuzz_remove_file(void) {
    unlink(fuzz_path);
}

/* Writes the input to /tmp/gf_<target>_XXXXXX<suffix> (made at the first call); returns 1 at the
 * first call. */
static int fuzz_write_input(const char *target, const char *suffix, const uint8_t *data,
                            size_t size) {
    int first = !fuzz_path[0];
    if (first) {
        int n = snprintf(fuzz_path, sizeof fuzz_path, "/tmp/gf_%s_XXXXXX%s", target, suffix);
        int len = 0;
        while (suffix[len])
            ++len;
        int fd = n > 0 && (size_t)n < sizeof fuzz_path ? mkstemps(fuzz_path, len) : -1;
        fuzz_require(fd >= 0, target, "cannot make a temporary file");
        close(fd);
        atexit(fuzz_remove_file);
    }
    FILE *f = fopen(fuzz_path, "wb");
    fuzz_require(f != NULL, target, "cannot write the temporary file");
    fuzz_require(fwrite(data, 1, size, f) == size, target, "cannot write the input");
    fuzz_require(fclose(f) == 0, target, "cannot close the temporary file");
    return first;
}

#endif
