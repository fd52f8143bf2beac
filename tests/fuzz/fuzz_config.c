/* libFuzzer target for the configuration parser (issue 16).
 *
 * Any input must give either a configuration or one input error that names the file, and never
 * a crash, a leak or undefined behaviour. What parses must then survive the way the program
 * uses it: command-line overrides, typed getters on the usual blocks, repeated blocks, the check
 * for unused keys, and a dump of the effective configuration that parses again and reads back
 * the same values. The input is the file up to its first NUL byte; NUL-separated command-line
 * overrides may follow (a fixed set is applied when there are none). Built with clang
 * -fsanitize=fuzzer,address,undefined when clang is there (tests/fuzz/CMakeLists.txt);
 * fuzz_config_replay runs the same function over the seed corpus with any compiler. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed invariant is a crash for libFuzzer, which then keeps the input. */
static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_config: %s (last message: %s)\n", what, gf_error_message());
        abort();
    }
}

static void require_status(gf_status st, const char *what) {
    require(st == GF_OK || st == GF_ERR_INPUT, what);
    gf_error_clear();
}

/* Every value read, in the order read, so that the dump can be read back and compared. */
typedef struct {
    gf_status st[256];
    double v[256][3];
    char s[256][24];
    size_t n;
} readings;

static void note(readings *r, gf_status st, const double *v, int nv, const char *s) {
    if (r->n >= 256)
        return;
    r->st[r->n] = st;
    memset(r->v[r->n], 0, sizeof r->v[r->n]);
    memset(r->s[r->n], 0, sizeof r->s[r->n]);
    if (st == GF_OK) {
        if (v)
            memcpy(r->v[r->n], v, (size_t)nv * sizeof *v);
        if (s)
            snprintf(r->s[r->n], sizeof r->s[r->n], "%s", s);
    }
    r->n++;
}

/* The reads a simulation does: each key with one getter only (a second getter of another type
 * would replace the recorded default and the dump could not be compared). */
static void read_block(gf_config_block *b, readings *r) {
    static const char *doubles[] = {"dt", "x", "tolerance", "a"};
    static const char *longs[] = {"steps", "n", "b"};
    static const char *bools[] = {"flag", "c"};
    static const char *strings[] = {"model", "name", "directory", "d"};
    static const char *vectors[] = {"min", "max", "normal", "point", "v"};
    static const double def3[3] = {1.0, -2.0, 0.5};
    for (size_t i = 0; i < sizeof doubles / sizeof *doubles; ++i) {
        double v = 0;
        gf_status st = gf_config_get_double(b, doubles[i], 0.25, &v);
        note(r, st, &v, 1, NULL);
        if (st == GF_OK)
            note(r, gf_config_check_range(b, doubles[i], v, -1.0, 1.0), NULL, 0, NULL);
        require_status(st, "get_double");
    }
    for (size_t i = 0; i < sizeof longs / sizeof *longs; ++i) {
        long v = 0;
        gf_status st = gf_config_get_long(b, longs[i], 3, &v);
        double d = (double)v;
        note(r, st, &d, 1, NULL);
        require_status(st, "get_long");
    }
    for (size_t i = 0; i < sizeof bools / sizeof *bools; ++i) {
        int v = 0;
        gf_status st = gf_config_get_bool(b, bools[i], 1, &v);
        double d = v;
        note(r, st, &d, 1, NULL);
        require_status(st, "get_bool");
    }
    for (size_t i = 0; i < sizeof strings / sizeof *strings; ++i) {
        char s[24];
        gf_status st = gf_config_get_string(b, strings[i], "def", s, sizeof s);
        note(r, st, NULL, 0, s);
        require_status(st, "get_string");
    }
    for (size_t i = 0; i < sizeof vectors / sizeof *vectors; ++i) {
        double v[3];
        gf_status st = gf_config_get_vec3(b, vectors[i], def3, v);
        note(r, st, v, 3, NULL);
        require_status(st, "get_vec3");
    }
    /* A required key that nobody gives. */
    double d;
    require(gf_config_require_double(b, "required_never_given", &d) == GF_ERR_INPUT,
            "require_double of an absent key succeeded");
    gf_error_clear();
}

static void read_config(gf_config *cfg, readings *r) {
    static const char *blocks[] = {"Time", "Solver", "Output", "Physics", "A"};
    gf_config_block *root = gf_config_root(cfg);
    read_block(root, r);
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; ++i) {
        gf_config_block *b = gf_config_section(root, blocks[i]);
        require(b != NULL, "gf_config_section returned NULL");
        read_block(b, r);
    }
    gf_config_block *domain = gf_config_section(root, "Domain");
    require(domain != NULL, "gf_config_section returned NULL");
    static const char *repeated[] = {"Wall", "Material"};
    for (size_t j = 0; j < 2; ++j) {
        size_t n = gf_config_section_count(domain, repeated[j]);
        double dn = (double)n;
        note(r, GF_OK, &dn, 1, NULL);
        for (size_t k = 0; k < n; ++k) {
            gf_config_block *w = gf_config_section_nth(domain, repeated[j], k);
            require(w != NULL, "gf_config_section_nth returned NULL below the count");
            read_block(w, r);
            /* Sub-blocks one level further down. */
            read_block(gf_config_section(w, "A"), r);
        }
        require(gf_config_section_nth(domain, repeated[j], n) == NULL,
                "gf_config_section_nth returned a block past the count");
    }
}

/* Applies the NUL-separated overrides in data[0, size). */
static void apply_overrides(gf_config *cfg, const uint8_t *data, size_t size) {
    char arg[512];
    for (size_t start = 0, k = 0; start < size && k < 16; ++k) {
        const uint8_t *nul = memchr(data + start, 0, size - start);
        size_t len = nul ? (size_t)(nul - data) - start : size - start;
        size_t n = len < sizeof arg ? len : sizeof arg - 1;
        memcpy(arg, data + start, n);
        arg[n] = '\0';
        require_status(gf_config_override(cfg, arg), "override");
        start += len + 1;
        if (!nul)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t text_len = nul ? (size_t)(nul - data) : size;
    gf_config *cfg = NULL;
    gf_status st = gf_config_parse((const char *)data, text_len, "fuzz.cfg", &cfg);
    if (st != GF_OK) {
        require(st == GF_ERR_INPUT, "parse failed with a status other than an input error");
        require(cfg == NULL, "failed parse returned a configuration");
        require(strstr(gf_error_message(), "fuzz.cfg") != NULL, "parse error names no file");
        gf_error_clear();
        return 0;
    }
    static const char *overrides[] = {"-Time.dt=1e-3",
                                      "-Domain.Wall.normal=<0,0,1>",
                                      "-Output.directory=out/r 1",
                                      "Solver.model=coulomb",
                                      "-A.B.x=<1,2>",
                                      "-Time..dt=5",
                                      "-Time.steps=1e400",
                                      "-Domain.Material.n=7"};
    if (nul) {
        apply_overrides(cfg, nul + 1, size - text_len - 1);
    } else {
        for (size_t i = 0; i < sizeof overrides / sizeof *overrides; ++i)
            require_status(gf_config_override(cfg, overrides[i]), "override");
    }

    readings *first = calloc(2, sizeof *first);
    require(first != NULL, "out of memory");
    readings *second = first + 1;
    read_config(cfg, first);
    require_status(gf_config_check_unused(cfg), "check_unused");

    char *dump = NULL;
    require(gf_config_dump(cfg, &dump) == GF_OK, "dump failed");
    gf_config *again = NULL;
    if (gf_config_parse(dump, strlen(dump), "dump.cfg", &again) != GF_OK) {
        fprintf(stderr, "fuzz_config: the dump does not parse again:\n%s\n", dump);
        require(0, "dump parses");
    }
    /* Read back in the same order: every value the program saw, defaults included. */
    read_config(again, second);
    require(first->n == second->n, "different number of readings from the dump");
    for (size_t i = 0; i < first->n; ++i) {
        require(first->st[i] == second->st[i], "a reading changed status through the dump");
        require(memcmp(first->v[i], second->v[i], sizeof first->v[i]) == 0,
                "a value changed through the dump");
        require(strcmp(first->s[i], second->s[i]) == 0, "a string changed through the dump");
    }
    require_status(gf_config_check_unused(again), "check_unused of the dump");
    gf_config_destroy(again);
    free(dump);
    free(first);
    gf_config_destroy(cfg);
    return 0;
}
