/* The configuration parser: values, overrides, unknown keys, and malformed input that must give
 * one clear error with file:line:column and never crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
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
    assert_non_null(strstr(dump, "dt 1e-05; // default"));
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

/* Quaternions are four-component vectors: read whole by the quaternion getter, refused by the
 * vector getter and the other way round. */
static void test_quaternions(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Body { q < 0.5, -0.5, 0.5, 0.5 >; v < 1, 2, 3 >; }\n");
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "Body");
    double q[4], v[3];
    const double unit[4] = {1, 0, 0, 0};
    GF_ASSERT_OK(gf_config_get_quat(b, "q", unit, q));
    assert_true(q[0] == 0.5 && q[1] == -0.5 && q[2] == 0.5 && q[3] == 0.5);
    GF_ASSERT_OK(gf_config_get_quat(b, "absent", unit, q));
    assert_true(q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0);
    assert_int_equal(gf_config_get_vec3(b, "q", unit, v), GF_ERR_INPUT);
    assert_int_equal(gf_config_get_quat(b, "v", unit, q), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "quaternion"));
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
    t = "Time { v < 1, 2, 3, 4, 5 >; }\n";
    expect_parse_error(t, strlen(t), "bad.cfg:1:24", "more than 4");
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

/* Command-line overrides name a block path of valid, non-empty names; a bad one is an error that
 * quotes the argument and leaves the configuration as it was (issue 16). */
static void test_override_paths(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Time { dt 1e-4; }\n");
    static const char *bad[] = {"-Time..dt=5", "-.Time.dt=5", "-Time.=5",    "-Time.dt.=5",
                                "-Ti me.dt=5", "-Time.d-t=5", "-Time.1dt=5", "-Time.Sub..dt=5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        if (gf_config_override(cfg, bad[i]) != GF_ERR_INPUT)
            fail_msg("override '%s' was accepted", bad[i]);
        if (!strstr(gf_error_message(), bad[i]))
            fail_msg("message '%s' does not name '%s'", gf_error_message(), bad[i]);
    }
    /* Blocks nested deeper than a file may nest them are refused too. */
    char deep[4 * GF_CONFIG_MAX_DEPTH + 16] = "-";
    for (int i = 0; i < GF_CONFIG_MAX_DEPTH; ++i)
        strcat(deep, "A.");
    strcat(deep, "k=1");
    assert_int_equal(gf_config_override(cfg, deep), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "deep"));
    gf_config_block *t = gf_config_section(gf_config_root(cfg), "Time");
    double dt = 0;
    GF_ASSERT_OK(gf_config_get_double(t, "dt", 0, &dt));
    assert_true(dt == 1e-4);
    /* Nothing else was added: no key or block the program did not read. */
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    assert_string_equal(dump, "Time {\n    dt 1e-4;\n}\n");
    free(dump);
    gf_config_destroy(cfg);
}

/* One of several blocks of a name is picked on the command line by its place, Name[n] from 1,
 * or by its name key, Name[label]; without either the first is meant. A place or a label that
 * is not there is refused, naming what is. */
static void test_override_selectors(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("M { P { name glass; d 1; }\n    P { name steel; d 2; }\n"
                              "    P { name lead; d 3; } }\n");
    GF_ASSERT_OK(gf_config_override(cfg, "-M.P[2].d=20"));
    GF_ASSERT_OK(gf_config_override(cfg, "-M.P[lead].d=30"));
    GF_ASSERT_OK(gf_config_override(cfg, "-M.P.d=10"));
    gf_config_block *m = gf_config_section(gf_config_root(cfg), "M");
    const double want[3] = {10, 20, 30};
    for (size_t k = 0; k < 3; ++k) {
        double d = 0;
        GF_ASSERT_OK(gf_config_get_double(gf_config_section_nth(m, "P", k), "d", 0, &d));
        if (d != want[k])
            fail_msg("P %zu has d %g, not %g", k + 1, d, want[k]);
    }
    static const struct {
        const char *arg, *says;
    } bad[] = {{"-M.P[4].d=1", "there are 3 P blocks here, not 4"},
               {"-M.P[0].d=1", "there are 3 P blocks here, not 0"},
               {"-M.P[iron].d=1", "no P block here is named 'iron' (named: glass steel lead)"},
               {"-M.Q[1].d=1", "there are 0 Q blocks here, not 1"},
               {"-M.P[x-y].d=1", "Name[n] or Name[label] picks one of several"},
               {"-M.P[2.d=1", "is not a valid block name"},
               {"-M.P[].d=1", "is not a valid block name"},
               {"-M.P.d[2]=1", "is not a valid key"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        assert_int_equal(gf_config_override(cfg, bad[i].arg), GF_ERR_INPUT);
        if (!strstr(gf_error_message(), bad[i].says))
            fail_msg("'%s': message '%s'", bad[i].arg, gf_error_message());
        gf_error_clear();
    }
    gf_config_destroy(cfg);
}

/* A number on the command line too large for a double is reported as such, as in the file, not
 * silently taken as a string; text that merely contains such digits stays a string. */
static void test_override_range(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Time { dt 1e-4; }\n");
    static const char *bad[] = {"-Time.dt=1e400", "-Time.dt=-1e999", "-Domain.min=<0, 1e400, 0>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        if (gf_config_override(cfg, bad[i]) != GF_ERR_INPUT)
            fail_msg("override '%s' was accepted", bad[i]);
        const char *msg = gf_error_message();
        if (!strstr(msg, "out of the range of a double") || !strstr(msg, bad[i]))
            fail_msg("override '%s' gave '%s'", bad[i], msg);
    }
    GF_ASSERT_OK(gf_config_override(cfg, "-Output.directory=runs/1e400"));
    GF_ASSERT_OK(gf_config_override(cfg, "-Output.tag=1e400abc"));
    gf_config_block *root = gf_config_root(cfg);
    char s[64];
    GF_ASSERT_OK(
        gf_config_get_string(gf_config_section(root, "Output"), "directory", "", s, sizeof s));
    assert_string_equal(s, "runs/1e400");
    GF_ASSERT_OK(gf_config_get_string(gf_config_section(root, "Output"), "tag", "", s, sizeof s));
    assert_string_equal(s, "1e400abc");
    double dt = 0;
    GF_ASSERT_OK(gf_config_get_double(gf_config_section(root, "Time"), "dt", 0, &dt));
    assert_true(dt == 1e-4);
    gf_config_destroy(cfg);
}

/* A lone '\r' (old Mac files) ends a line like '\n' and "\r\n": for comments, for the line
 * numbers of messages and for strings left open (issue 16). */
static void test_cr_line_ends(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("// a comment\rTime {\r  dt 1e-3; // another\r  steps 7;\r}\r");
    gf_config_block *t = gf_config_section(gf_config_root(cfg), "Time");
    assert_true(gf_config_has(t, "dt"));
    long steps = 0;
    GF_ASSERT_OK(gf_config_get_long(t, "steps", 0, &steps));
    assert_int_equal(steps, 7);
    double dt = 0;
    GF_ASSERT_OK(gf_config_get_double(t, "dt", 0, &dt));
    assert_true(dt == 1e-3);
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    gf_config_destroy(cfg);

    const char *x;
    x = "Time {\r  dt 1e-4\r  steps 3;\r}\r";
    expect_parse_error(x, strlen(x), "bad.cfg:2:10", "expected ';'");
    x = "// c\r\nTime {\r\n\r\n  dt 1; d$t 2;\r\n}\r\n";
    expect_parse_error(x, strlen(x), "bad.cfg:4:10", "unexpected character '$'");
    x = "a 1;\r\rb 2;\n\r\n\rc x$;\r";
    expect_parse_error(x, strlen(x), "bad.cfg:6:4", "unexpected character '$'");
    x = "Time { name \"open\r}\r";
    expect_parse_error(x, strlen(x), "bad.cfg:1:13", "not closed on the same line");
    x = "/* a\r b\r */ }";
    expect_parse_error(x, strlen(x), "bad.cfg:3:5", "without a matching");
}

/* Found by the fuzzer: an override value with a control byte became a string the dump wrote
 * raw, so the effective configuration no longer parsed. Such values are refused like in a file
 * string; every other value survives the dump (issue 16). */
static void test_override_dump(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Output { directory \"out\"; }\n");
    static const char *bad[] = {"-Output.note=a\x0e"
                                "b",
                                "-Output.note=<0,0,1\r", "-Output.n=x\ny"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        assert_int_equal(gf_config_override(cfg, bad[i]), GF_ERR_INPUT);
        assert_non_null(strstr(gf_error_message(), "control byte"));
    }
    const char *odd = "say \"hi\"\t\\ \x7f caf\xc3\xa9 // not a comment";
    char arg[128];
    snprintf(arg, sizeof arg, "-Output.note=%s", odd);
    GF_ASSERT_OK(gf_config_override(cfg, arg));
    gf_config_block *out = gf_config_section(gf_config_root(cfg), "Output");
    char s[64];
    GF_ASSERT_OK(gf_config_get_string(out, "note", "", s, sizeof s));
    assert_string_equal(s, odd);
    GF_ASSERT_OK(gf_config_get_string(out, "directory", "", s, sizeof s));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    gf_config *again = parse_ok(dump);
    GF_ASSERT_OK(gf_config_get_string(gf_config_section(gf_config_root(again), "Output"), "note",
                                      "", s, sizeof s));
    assert_string_equal(s, odd);
    gf_config_destroy(again);
    free(dump);
    gf_config_destroy(cfg);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n keys in one block, every 16th also set on the command line; all read through getters, then
 * checked and dumped. Returns the CPU time of the configuration calls. */
static double run_many_keys(size_t n) {
    char *text = malloc(16 * n + 16);
    assert_non_null(text);
    size_t len = (size_t)sprintf(text, "Big {\n");
    for (size_t i = 0; i < n; ++i)
        len += (size_t)sprintf(text + len, "k%zx %zu;\n", i, i % 10);
    len += (size_t)sprintf(text + len, "}\n");
    assert_true(len <= GF_CONFIG_MAX_BYTES);
    char arg[64], key[32];
    double t0 = cpu_seconds();
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, len, "big.cfg", &cfg));
    for (size_t i = 0; i < n; i += 16) {
        snprintf(arg, sizeof arg, "-Big.k%zx=%zu", i, 10 + i % 7);
        GF_ASSERT_OK(gf_config_override(cfg, arg));
    }
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "Big");
    for (size_t i = 0; i < n; ++i) {
        long v = -1;
        snprintf(key, sizeof key, "k%zx", i);
        GF_ASSERT_OK(gf_config_get_long(b, key, -1, &v));
        if (v != (long)(i % 16 == 0 ? 10 + i % 7 : i % 10))
            fail_msg("key %s read %ld", key, v);
    }
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    double t1 = cpu_seconds();
    snprintf(key, sizeof key, "\n    k%zx %zu;\n", n - 1, (n - 1) % 10);
    assert_non_null(strstr(dump, key));
    free(dump);
    gf_config_destroy(cfg);
    free(text);
    return t1 - t0;
}

/* n repeated blocks, read the way the program reads walls and materials: the count, then the
 * k-th block for k = 0..n-1. */
static double run_repeated_blocks(size_t n) {
    char *text = malloc(48 * n + 16);
    assert_non_null(text);
    size_t len = (size_t)sprintf(text, "Walls {\n");
    for (size_t i = 0; i < n; ++i)
        len += (size_t)sprintf(text + len, "  Wall { id %zu; normal < 0, 0, 1 >; }\n", i);
    len += (size_t)sprintf(text + len, "}\n");
    assert_true(len <= GF_CONFIG_MAX_BYTES);
    double t0 = cpu_seconds();
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, len, "walls.cfg", &cfg));
    gf_config_block *walls = gf_config_section(gf_config_root(cfg), "Walls");
    size_t count = gf_config_section_count(walls, "Wall");
    assert_int_equal(count, n);
    static const double def[3] = {0, 0, 0};
    for (size_t k = 0; k < count; ++k) {
        gf_config_block *w = gf_config_section_nth(walls, "Wall", k);
        assert_non_null(w);
        long id = -1;
        double normal[3];
        GF_ASSERT_OK(gf_config_get_long(w, "id", -1, &id));
        GF_ASSERT_OK(gf_config_get_vec3(w, "normal", def, normal));
        if (id != (long)k || normal[2] != 1.0)
            fail_msg("Wall %zu has id %ld", k, id);
    }
    assert_null(gf_config_section_nth(walls, "Wall", n));
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    double t1 = cpu_seconds();
    char last[64];
    snprintf(last, sizeof last, "        id %zu;\n", n - 1);
    assert_non_null(strstr(dump, last));
    free(dump);
    gf_config_destroy(cfg);
    free(text);
    return t1 - t0;
}

/* Whether run(n) grows linearly: the sizes double from n0 to 64 n0 and each run must cost less
 * than 6 times its share of the growth over the smallest run (best of five). Linear work grows
 * like the size, up to about 3 times more per item as the data outgrow the caches; quadratic
 * work fails at 8 n0 already (64 against 48), before the sizes get slow for it. A failing run is
 * measured once more before it counts, so a load spike on a shared machine does not fail it. */
static void expect_linear(double (*run)(size_t), size_t n0, const char *what) {
    double t0 = run(n0);
    for (int r = 0; r < 4; ++r) {
        double t = run(n0);
        t0 = t < t0 ? t : t0;
    }
    if (t0 < 1e-4)
        t0 = 1e-4;
    for (size_t m = 2; m <= 64; m *= 2) {
        double t = run(m * n0);
        if (t >= 6.0 * (double)m * t0) {
            double again = run(m * n0);
            t = again < t ? again : t;
        }
        print_message("%s: %zu in %.3f s, %.1f times %zu (linear %zu, quadratic %zu)\n", what,
                      m * n0, t, t / t0, n0, m, m * m);
        if (t >= 6.0 * (double)m * t0)
            fail_msg("%s: %zu times the size took %.1f times as long (%.3f s vs %.3f s): not "
                     "linear",
                     what, m, t / t0, t, t0);
    }
}

/* Issue 16: a block with 1e6 keys took over 15 minutes, 1e5 repeated blocks half a minute. */
static void test_linear_time(void **state) {
    (void)state;
    expect_linear(run_many_keys, 15625, "keys in one block");
    expect_linear(run_repeated_blocks, 1563, "repeated blocks");
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

/* Numbers are printed in the shortest form that reads back exactly: no shorter %g precision
 * reads back (brute force), and defaults appear that way in the dump. */
static void test_shortest_numbers(void **state) {
    (void)state;
    const double xs[] = {0.03,
                         0.1,
                         1.0 / 3.0,
                         2.0 / 3.0,
                         1e-300,
                         5e-324,
                         9.81,
                         -2.5e-7,
                         1e22,
                         123456789.123,
                         1.7976931348623157e308,
                         0.0,
                         4.35e-4,
                         1.0 + 1e-15};
    for (size_t k = 0; k < sizeof xs / sizeof *xs; ++k) {
        char buf[64], shorter[64];
        gf_config_format_double(xs[k], buf, sizeof buf);
        if (strtod(buf, NULL) != xs[k])
            fail_msg("%.17g printed as %s, which reads back as %.17g", xs[k], buf,
                     strtod(buf, NULL));
        for (int p = 1; p < 17; ++p) {
            snprintf(shorter, sizeof shorter, "%.*g", p, xs[k]);
            if (strtod(shorter, NULL) == xs[k]) {
                if (strlen(shorter) < strlen(buf))
                    fail_msg("%.17g printed as %s, but %s reads back too", xs[k], buf, shorter);
                break;
            }
        }
    }
    const char *text = "Time { }\n";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "t.cfg", &cfg));
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "Time");
    double dt, v[3];
    const double def[3] = {0.03, 0.1, 1.0 / 3.0};
    GF_ASSERT_OK(gf_config_get_double(b, "dt", 0.03, &dt));
    GF_ASSERT_OK(gf_config_get_vec3(b, "drift", def, v));
    char *dump = NULL;
    GF_ASSERT_OK(gf_config_dump(cfg, &dump));
    if (!strstr(dump, "dt 0.03;") || !strstr(dump, "drift < 0.03, 0.1, 0.3333333333333333 >;"))
        fail_msg("dump:\n%s", dump);
    free(dump);
    gf_config_destroy(cfg);
}

/* The error must hold `fragment`. */
static void assert_message(gf_status st, const char *fragment) {
    assert_int_equal(st, GF_ERR_INPUT);
    if (!strstr(gf_error_message(), fragment))
        fail_msg("message lacks '%s': %s", fragment, gf_error_message());
    gf_error_clear();
}

static gf_config *parsed(const char *text) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "t.cfg", &cfg));
    return cfg;
}

/* Errors say what is wrong in the user's terms: a misspelt block on the command line is an
 * unknown block (not a block without keys), a block given twice is repeated (not unknown), a
 * vector of the wrong length says both lengths, a range that means "positive" says so. */
static void test_error_messages(void **state) {
    (void)state;
    gf_config *cfg = parsed("Time { steps 5; }\n");
    GF_ASSERT_OK(gf_config_override(cfg, "-Tme.steps=10"));
    long steps;
    GF_ASSERT_OK(
        gf_config_get_long(gf_config_section(gf_config_root(cfg), "Time"), "steps", 1, &steps));
    assert_message(gf_config_check_unused(cfg),
                   "command line: unknown block 'Tme'; did you mean 'Time'?");
    gf_config_destroy(cfg);

    cfg = parsed("Lattice { a 1; }\nLattice { a 2; }\n");
    GF_ASSERT_OK(
        gf_config_get_long(gf_config_section(gf_config_root(cfg), "Lattice"), "a", 0, &steps));
    assert_message(gf_config_check_unused(cfg),
                   "t.cfg:2: block 'Lattice' is given again; it is not repeatable (the one at "
                   "t.cfg:1 is read)");
    gf_config_destroy(cfg);

    cfg = parsed("B { v < 1, 2 >; q < 1, 0, 0 >; x 0; y -1; z 2; w 1e-9; }\n");
    gf_config_block *b = gf_config_section(gf_config_root(cfg), "B");
    double v[4], x;
    const double zero[4] = {0, 0, 0, 0};
    assert_message(gf_config_get_vec3(b, "v", zero, v),
                   "'v' in block 'B' must be a vector < x, y, z > of 3 components, but has 2");
    assert_message(gf_config_get_quat(b, "q", zero, v),
                   "must be a quaternion < w, x, y, z > of 4 components, but has 3");
    GF_ASSERT_OK(gf_config_get_double(b, "x", 1, &x));
    assert_message(gf_config_check_range(b, "x", x, 1e-300, 1e300), "is 0 but must be positive");
    GF_ASSERT_OK(gf_config_get_double(b, "y", 1, &x));
    assert_message(gf_config_check_range(b, "y", x, 0.0, 1e300), "is -1 but must not be negative");
    GF_ASSERT_OK(gf_config_get_double(b, "z", 1, &x));
    assert_message(gf_config_check_range(b, "z", x, 0.0, 1.0), "is 2 but must lie in [0, 1]");
    GF_ASSERT_OK(gf_config_get_double(b, "w", 1, &x));
    assert_message(gf_config_check_range(b, "w", x, 1e-6, 1e300), "must be at least 1e-06");
    gf_config_destroy(cfg);
}

/* More blocks of a kind than the engine takes: the first one too many is named. */
static void test_section_count_max(void **state) {
    (void)state;
    gf_config *cfg = parse_ok("Outlet { a 1; }\nOutlet { a 2; }\nOutlet { a 3; }\n");
    size_t n = 0;
    GF_ASSERT_OK(gf_config_section_count_max(gf_config_root(cfg), "Outlet", 3, &n));
    assert_int_equal(n, 3);
    assert_int_equal(gf_config_section_count_max(gf_config_root(cfg), "Outlet", 2, &n),
                     GF_ERR_INPUT);
    const char *msg = gf_error_message();
    if (!strstr(msg, "t.cfg:3") || !strstr(msg, "3 Outlet blocks, at most 2"))
        fail_msg("message: %s", msg);
    gf_config_destroy(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_context),
        cmocka_unit_test(test_section_count_max),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_fuzz),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_override_paths),
        cmocka_unit_test(test_override_selectors),
        cmocka_unit_test(test_override_range),
        cmocka_unit_test(test_cr_line_ends),
        cmocka_unit_test(test_override_dump),
        cmocka_unit_test(test_linear_time),
        cmocka_unit_test(test_quaternions),
        cmocka_unit_test(test_shortest_numbers),
        cmocka_unit_test(test_error_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
