#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int gf_cli_numbers(const char *tool, int argc, char **argv, int *i, int n, double *out) {
    const char *option = argv[*i];
    for (int k = 0; k < n; ++k) {
        const char *text = *i + 1 + k < argc ? argv[*i + 1 + k] : NULL;
        char *end = NULL;
        double v = text ? strtod(text, &end) : NAN;
        if (!text || end == text || *end || !isfinite(v)) {
            if (tool)
                fprintf(stderr, "%s: %s expects %d number%s, got '%s'\n", tool, option, n,
                        n > 1 ? "s" : "", text ? text : "(nothing)");
            return -1;
        }
        out[k] = v;
    }
    *i += n;
    return 0;
}

int gf_cli_int(const char *tool, int argc, char **argv, int *i, int *out) {
    double v;
    if (gf_cli_numbers(tool, argc, argv, i, 1, &v))
        return -1;
    if (v != floor(v) || fabs(v) > 1e9) {
        if (tool)
            fprintf(stderr, "%s: %s expects a whole number, got '%s'\n", tool, argv[*i - 1],
                    argv[*i]);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int gf_cli_int_in(const char *tool, int argc, char **argv, int *i, int lo, int hi, int *out) {
    int v;
    if (gf_cli_int(tool, argc, argv, i, &v))
        return -1;
    if (v < lo || v > hi) {
        if (tool)
            fprintf(stderr, "%s: %s must be between %d and %d, got '%s'\n", tool, argv[*i - 1], lo,
                    hi, argv[*i]);
        return -1;
    }
    *out = v;
    return 0;
}

int gf_cli_positive(const char *tool, int argc, char **argv, int *i, double *out) {
    double v;
    if (gf_cli_numbers(tool, argc, argv, i, 1, &v))
        return -1;
    if (!(v > 0)) {
        if (tool)
            fprintf(stderr, "%s: %s must be positive, got '%s'\n", tool, argv[*i - 1], argv[*i]);
        return -1;
    }
    *out = v;
    return 0;
}
