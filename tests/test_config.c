/* The configuration parser: values, overrides, unknown keys, and malformed input that must give
 * one clear error with file:line:column and never crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/config.h"
#include "test_util.h"

static gf_config *parse_ok(const char *text) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "t.cfg", &cfg));
    return cfg;
}

/* Parses text that must fail and checks the message contains every given fragment. */
static void expect_parse_error(const char *text, size_t len, const char *frag1, const char *frag2) {
    gf_config *cfg = NULL;
    gf_status st = gf_config_parse(text, len, "bad.cfg", &cfg);
    if (st == GF_OK)
        fail_msg("parsing succeeded but should fail: %.60s", text);
    assert_int_equal(st, GF_ERR_INPUT);
    assert_null(cfg);
    const char *msg = gf_error_message();
    if (!strstr(msg, frag1) || (frag2 && !strstr(msg, frag2)))
        fail_msg("message '%s' lacks '%s'%s%s", msg, frag1, frag2 ? " or " : "",
                 frag2 ? frag2 : "");
}

/* Context goes in front of the cause's message, which keeps its status and source position. */
static void test_error_context(void **state) {
    (void)state;
    assert_int_equal(gf_error_context(GF_OK, "unused"), GF_OK);
    gf_status st = gf_error_set(GF_ERR_IO, "src/cause.c", 12, "cannot read '%s'", "x.h5");
    assert_int_equal(gf_error_context(st, "step %d", 7), GF_ERR_IO);
    assert_string_equal(gf_error_message(), "step 7: cannot read 'x.h5' (cause.c:12)");
    assert_int_equal(gf_error_status(), GF_ERR_IO);
    /* Repeated context on a long message stays within the buffer, cut at its end. */
    char long_text[1500];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    gf_error_set(GF_ERR_INPUT, "f.c", 1, "%s", long_text);
    for (int k = 0; k < 4; ++k)
        gf_error_context(GF_ERR_INPUT, "level %d", k);
    assert_int_equal(strncmp(gf_error_message(), "level 3: level 2: level 1: level 0: aaa", 39), 0);
    assert_true(strlen(gf_error_message()) < 2048);
    gf_error_clear();
}

static void test_values(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("// a comment\n"
                              "Domain {\n"
                              "  min < 0, -1.5, 2e-3 >;  /* block\n comment */\n"
                              "  name \"a \\\"quoted\\\" string\";\n"
                              "  flag true; count 42; model max_dissipation;\n"
                              "  Wall { normal < 0, 0, 1 >; }\n"
                              "  Wall { normal < 1, 0, 0 >; }\n"
                              "}\n");
    gf_config_block *root = gf_config_root(cfg);
    gf_config_block *d = gf_config_section(root, "Domain");
    double v[3], def[3] = {9, 9, 9};
    GF_ASSERT_OK(gf_config_get_vec3(d, "min", def, v));
    assert_true(v[0] == 0.0 && v[1] == -1.5 && v[2] == 2e-3);
    char s[64];
    GF_ASSERT_OK(gf_config_get_string(d, "name", "", s, sizeof s));
    assert_string_equal(s, "a \"quoted\" string");
    int flag = 0;
    GF_ASSERT_OK(gf_config_get_bool(d, "flag", 0, &flag));
    assert_int_equal(flag, 1);
    long count = 0;
    GF_ASSERT_OK(gf_config_get_long(d, "count", 0, &count));
    assert_int_equal(count, 42);
    GF_ASSERT_OK(gf_config_get_string(d, "model", "", s, sizeof s));
    assert_string_equal(s, "max_dissipation");
    assert_int_equal(gf_config_section_count(d, "Wall"), 2);
    GF_ASSERT_OK(gf_config_get_vec3(gf_config_section_nth(d, "Wall", 1), "normal", def, v));
    assert_true(v[0] == 1.0 && v[2] == 0.0);
    GF_ASSERT_OK(gf_config_get_vec3(gf_config_section_nth(d, "Wall", 0), "normal", def, v));
    /* An absent key gives the default and is recorded. */
    double dt = 0;
    GF_ASSERT_OK(gf_config_get_double(gf_config_section(root, "Time"), "dt", 1e-5, &dt));
    assert_true(dt == 1e-5);
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    assert_non_null(strstr(dump, "dt 1.0000000000000001e-05; // default"));
    assert_non_null(strstr(dump, "count 42;"));
    assert_non_null(strstr(dump, "name \"a \\\"quoted\\\" string\";"));
    /* The dump is itself a valid configuration with the same values. */
    gf_config *again = parse_ok(dump);
    double dt2 = 0;
    GF_ASSERT_OK(
        gf_config_get_double(gf_config_section(gf_config_root(again), "Time"), "dt", 0, &dt2));
    assert_true(dt2 == dt);
    gf_config_destroy(again);
    free(dump);
    gf_config_destroy(cfg);
}

static void test_type_errors(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Solver {\n  max_iterations 2.5;\n  tolerance fast;\n}\n");
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "Solver");
    long n;
    assert_int_equal(gf_config_get_long(b, "max_iterations", 1, &n), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "t.cfg:2:18"));
    double d;
    assert_int_equal(gf_config_get_double(b, "tolerance", 1, &d), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "t.cfg:3:13"));
    assert_non_null(strstr(gf_error_message(), "must be a number"));
    assert_int_equal(gf_config_require_double(b, "relaxation", &d), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "needs the key 'relaxation'"));
    assert_int_equal(gf_config_check_range(b, "max_iterations", 2.5, 3, 4), GF_ERR_INPUT);
    gf_config_destroy(cfg);
}

static void test_unknown_keys(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Solver {\n  tolerance 1e-6;\n  max_iteratons 10;\n}\n");
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "Solver");
    double d;
    long n;
    GF_ASSERT_OK(gf_config_get_double(b, "tolerance", 0, &d));
    GF_ASSERT_OK(gf_config_get_long(b, "max_iterations", 100, &n));
    assert_int_equal(n, 100);
    assert_int_equal(gf_config_check_unused(cfg), GF_ERR_INPUT);
    const char *msg = gf_error_message();
    assert_non_null(strstr(msg, "t.cfg:3:3"));
    assert_non_null(strstr(msg, "unknown key 'max_iteratons'"));
    assert_non_null(strstr(msg, "did you mean 'max_iterations'"));
    gf_config_destroy(cfg);

    cfg = parse_ok("Solvr { tolerance 1; }\n");
    (void)gf_config_section(gf_config_root(cfg), "Solver");
    assert_int_equal(gf_config_check_unused(cfg), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "unknown block 'Solvr'"));
    assert_non_null(strstr(gf_error_message(), "did you mean 'Solver'"));
    gf_config_destroy(cfg);
}

static void test_overrides(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Time { dt 1e-4; steps 10; }\n");
    GF_ASSERT_OK(gf_config_override(cfg, "-Time.steps=500"));
    GF_ASSERT_OK(gf_config_override(cfg, "-Physics.gravity=<0,0,-1>"));
    GF_ASSERT_OK(gf_config_override(cfg, "-Output.directory=out/run 1"));
    gf_config_block *root = gf_config_root(cfg);
    long steps;
    GF_ASSERT_OK(gf_config_get_long(gf_config_section(root, "Time"), "steps", 0, &steps));
    assert_int_equal(steps, 500);
    double g[3], def[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_config_get_vec3(gf_config_section(root, "Physics"), "gravity", def, g));
    assert_true(g[2] == -1.0);
    char dir[64];
    GF_ASSERT_OK(
        gf_config_get_string(gf_config_section(root, "Output"), "directory", "", dir, sizeof dir));
    assert_string_equal(dir, "out/run 1");
    double dt;
    GF_ASSERT_OK(gf_config_get_double(gf_config_section(root, "Time"), "dt", 0, &dt));
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    /* A misspelt override is caught like a misspelt key. */
    GF_ASSERT_OK(gf_config_override(cfg, "-Time.stesp=5"));
    assert_int_equal(gf_config_check_unused(cfg), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "command line"));
    assert_non_null(strstr(gf_error_message(), "did you mean 'steps'"));
    assert_int_equal(gf_config_override(cfg, "-nodot=1"), GF_ERR_INPUT);
    assert_int_equal(gf_config_override(cfg, "-Time.steps"), GF_ERR_INPUT);
    gf_config_destroy(cfg);
}

static void test_malformed(void **state) {
    (void)state;
    const char *t;
    t = "Domain {\n  min < 0, 0, 0 >;\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:1", "never closed");
    t = "Domain {\n  dt 1e-4\n  steps 3;\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:2:10", "expected ';'");
    t = "Time {\n  dt 1.2.3;\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:2:6", "bad number '1.2.3'");
    t = "Time {\n  dt 12abc;\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:2:6", "bad number");
    t = "Time {\n  dt 1e999;\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:2:6", "out of the range");
    t = "Time {\n  dt 1;\n  dt 2;\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:3:3", "duplicate key 'dt'");
    t = "Time { name \"open\n}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:13", "not closed");
    t = "Time { /* never closed\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:8", "comment");
    t = "Time { v < 1, 2 ; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:17", "expected ',' or '>'");
    t = "Time { v < 1, 2, 3, 4 >; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:21", "more than 3");
    t = "Time { dt ; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:11", "expected a value");
    t = "}\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:1", "without a matching");
    t = "Time { dt 1; } ;\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:16", "expected a key");
    t = "Time { d$t 1; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:9", "unexpected character '$'");
    t = "Time { max-it 1; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:8", "not a valid key");

    /* Nesting too deep. */
    char deep[2048] = "";
    for (int i = 0; i < GF_CONFIG_MAX_DEPTH + 2; ++i)
        strcat(deep, "A { ");
    expect_parse_error(deep, strlen(deep), "nested more than", NULL);

    /* Binary junk, including NUL bytes inside the buffer. */
    const char junk[] = {'T', 'i', 'm', 'e', ' ', '{', 0x00, 0x01, (char)0xff, '}'};
    expect_parse_error(junk, sizeof junk, "bad.cfg:1:7", "binary");
    const char high[] = "Time { dt 1; \xc3\xa9 }";
    expect_parse_error(high, strlen(high), "bad.cfg:1:14", "non-ASCII");

    /* A huge input is refused before any parsing. */
    size_t huge = (size_t)GF_CONFIG_MAX_BYTES + 1;
    char *big = malloc(huge);
    assert_non_null(big);
    memset(big, ' ', huge);
    expect_parse_error(big, huge, "too large", NULL);
    free(big);
}

/* Random byte strings and random mutations of a valid file: the parser must return either
 * success or an input error with a position, never crash (run under the sanitizer build too). */
static void test_fuzz(void **state) {
    (void)state;
    const char *valid = "Domain { min < 0, 0, 0 >; max < 1, 2, 3 >; Wall { point < 0,0,0 >; "
                        "normal < 0,0,1 >; } }\nSolver { model coulomb; tolerance 1e-6; }\n"
                        "Output { dir \"x\\ty\"; } /* c */ // d\n";
    size_t n = strlen(valid);
    char buf[512];
    uint64_t rng = 12345;
    static const char alphabet[] = "{}<>;,\"/*\\ \n\t0123456789.eE+-abcXYZ_\x01\xff";
    for (int trial = 0; trial < 20000; ++trial) {
        memcpy(buf, valid, n);
        int nmut = 1 + (int)gf_test_uniform(&rng, 0, 4);
        for (int m = 0; m < nmut; ++m) {
            size_t pos = (size_t)gf_test_uniform(&rng, 0, (double)n);
            buf[pos] = alphabet[(size_t)gf_test_uniform(&rng, 0, sizeof alphabet - 1)];
        }
        size_t len = trial % 7 == 0 ? (size_t)gf_test_uniform(&rng, 0, (double)n) : n;
        gf_config *cfg = NULL;
        gf_status st = gf_config_parse(buf, len, "fuzz.cfg", &cfg);
        if (st == GF_OK) {
            char *dump = NULL;
            gf_config_block *root = gf_config_root(cfg);
            (void)gf_config_section(root, "Domain");
            GF_ASSERT_OK(gf_config_dump(cfg, &dump));
            free(dump);
            gf_config_destroy(cfg);
        } else {
            assert_int_equal(st, GF_ERR_INPUT);
            assert_non_null(strstr(gf_error_message(), "fuzz.cfg:"));
        }
    }
}

static void test_read_file(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(gf_config_read_file("/nonexistent/granflow.cfg", &text, &len), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "/nonexistent/granflow.cfg"));
    char path[] = "/tmp/gf_test_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("Time { dt 1e-3; }\n", f);
    fclose(f);
    GF_ASSERT_OK(gf_config_read_file(path, &text, &len));
    assert_int_equal(len, 18);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, len, path, &cfg));
    gf_config_destroy(cfg);
    free(text);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_context), cmocka_unit_test(test_values),
        cmocka_unit_test(test_type_errors),   cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_overrides),     cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_fuzz),          cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
