/* The restart's configuration check (issue 11) on hand-written effective configurations: which
 * keys count, how values compare, and how differences are named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_compare.h"
#include "config/config_schema.h"
#include "test_util.h"

static const char *stored = "Domain {\n"
                            "    min < 0, 0, 0 >;\n"
                            "    max < 0.10000000000000001, 0.10000000000000001, 0.2 >;\n"
                            "    processes < 0, 0, 0 >; // default\n"
                            "    Wall {\n"
                            "        point < 0, 0, 0 >;\n"
                            "        normal < 0, 0, 1 >;\n"
                            "    }\n"
                            "}\n"
                            "Materials {\n"
                            "    friction 0.4;\n"
                            "    Material {\n"
                            "        name glass;\n"
                            "        density 2650;\n"
                            "    }\n"
                            "    Material {\n"
                            "        name steel;\n"
                            "        density 7850;\n"
                            "    }\n"
                            "}\n"
                            "Time {\n"
                            "    dt 1e-4;\n"
                            "    steps 3000;\n"
                            "}\n"
                            "Solver {\n"
                            "    model max_dissipation;\n"
                            "    max_iterations 50;\n"
                            "    tolerance 1e-5;\n"
                            "    error_reduction 0.10000000000000001; // default\n"
                            "}\n"
                            "Output {\n"
                            "    directory \"out; a \\\"b\\\"\";\n"
                            "    progress_every 250;\n"
                            "}\n";

/* `current` is `stored` with the replacements from[k] -> to[k]. */
static char *edited(const char *const *from, const char *const *to, int n) {
    char *s = strdup(stored);
    for (int k = 0; k < n; ++k) {
        char *at = strstr(s, from[k]);
        assert_non_null(at);
        size_t lf = strlen(from[k]), lt = strlen(to[k]), rest = strlen(at + lf);
        char *t = malloc(strlen(s) - lf + lt + 1);
        memcpy(t, s, (size_t)(at - s));
        memcpy(t + (at - s), to[k], lt);
        memcpy(t + (at - s) + lt, at + lf, rest + 1);
        free(s);
        s = t;
    }
    return s;
}

static int compare(const char *current, char **report) {
    int n = -1;
    GF_ASSERT_OK(gf_config_compare(stored, current, report, &n));
    return n;
}

static void test_same_and_equivalent(void **state) {
    (void)state;
    char *report = NULL;
    assert_int_equal(compare(stored, &report), 0);
    assert_null(report);
    /* The same numbers written otherwise, keys that may differ, comments. */
    const char *from[] = {"dt 1e-4;",
                          "max < 0.10000000000000001, 0.10000000000000001, 0.2 >",
                          "steps 3000;",
                          "max_iterations 50;",
                          "tolerance 1e-5;",
                          "processes < 0, 0, 0 >; // default",
                          "directory \"out; a \\\"b\\\"\";",
                          "progress_every 250;",
                          "error_reduction 0.10000000000000001; // default"};
    const char *to[] = {"dt 0.0001;",
                        "max < 0.1, 0.1, 2e-1 >",
                        "steps 9000;",
                        "max_iterations 500;",
                        "tolerance 1e-9;",
                        "processes < 2, 2, 1 >;",
                        "directory \"elsewhere\";",
                        "progress_every 1;",
                        "error_reduction 0.1;"};
    char *cur = edited(from, to, 9);
    assert_int_equal(compare(cur, &report), 0);
    free(cur);
}

static void test_differences_named(void **state) {
    (void)state;
    const char *from[] = {"dt 1e-4;", "density 7850;", "model max_dissipation;",
                          "normal < 0, 0, 1 >;"};
    const char *to[] = {"dt 2e-4;", "density 7800;", "model coulomb;", "normal < 0, 0, -1 >;"};
    char *cur = edited(from, to, 4), *report = NULL, *changed = NULL;
    int n = -1;
    GF_ASSERT_OK(gf_config_compare_changes(stored, cur, &report, &n, &changed));
    /* The bodies and the box: differences; the time step and the solver: a stage's changes. */
    assert_int_equal(n, 2);
    const char *lines[] = {"  Materials.Material[2].density: 7850 in the checkpoint, 7800 now",
                           "  Domain.Wall.normal: < 0, 0, 1 > in the checkpoint, < 0, 0, -1 > now"};
    for (size_t k = 0; k < 2; ++k)
        if (!strstr(report, lines[k]))
            fail_msg("the report lacks '%s':\n%s", lines[k], report);
    const char *stage[] = {"  Time.dt: 1e-4 in the checkpoint, 2e-4 now",
                           "  Solver.model: max_dissipation in the checkpoint, coulomb now"};
    assert_non_null(changed);
    for (size_t k = 0; k < 2; ++k)
        if (!strstr(changed, stage[k]) || strstr(report, stage[k]))
            fail_msg("'%s' is not a stage's change:\nchanged:\n%s\nreport:\n%s", stage[k], changed,
                     report);
    free(report);
    free(changed);
    free(cur);
}

/* A block or key in one configuration only, and a long list of differences. */
static void test_absent_and_many(void **state) {
    (void)state;
    char *cur = malloc(strlen(stored) + 128), *report = NULL;
    strcpy(cur, stored);
    strcat(cur, "Inflow {\n    speed 1;\n}\n");
    const char *from[] = {"    density 7850;\n"};
    const char *to[] = {""};
    assert_int_equal(compare(cur, &report), 1);
    assert_non_null(strstr(report, "  Inflow.speed: absent in the checkpoint, 1 now"));
    free(report);
    free(cur);
    cur = edited(from, to, 1);
    assert_int_equal(compare(cur, &report), 1);
    assert_non_null(
        strstr(report, "  Materials.Material[2].density: 7850 in the checkpoint, absent now"));
    free(report);
    free(cur);
    /* Twenty new keys: twelve named, then the count. */
    cur = malloc(strlen(stored) + 2048);
    strcpy(cur, stored);
    strcat(cur, "Physics {\n");
    for (int k = 0; k < 20; ++k)
        sprintf(cur + strlen(cur), "    k%02d %d;\n", k, k);
    strcat(cur, "}\n");
    assert_int_equal(compare(cur, &report), 20);
    assert_non_null(strstr(report, "Physics.k11: absent in the checkpoint, 11 now"));
    assert_null(strstr(report, "Physics.k12"));
    assert_non_null(strstr(report, "  and 8 more"));
    free(report);
    free(cur);
}

/* Both texts are read by the configuration's own parser (issue 32: one grammar), so any layout
 * the grammar allows compares by its keys: blocks and keys on one line, comments anywhere. */
static void test_any_layout(void **state) {
    (void)state;
    const char *a =
        "Physics { g 1e-4; } Time { steps 3000; } /* note */ Solver { model coulomb; }\n";
    const char *b =
        "Physics {\n  g 2e-4; // halved\n}\nTime { steps 10; }\nSolver {\n  model coulomb;\n}\n";
    char *report = NULL;
    int n = -1;
    GF_ASSERT_OK(gf_config_compare(a, b, &report, &n));
    assert_int_equal(n, 1);
    assert_non_null(strstr(report, "  Physics.g: 1e-4 in the checkpoint, 2e-4 now"));
    free(report);
    /* A stored text the grammar refuses is an error, not a silent match. */
    assert_int_not_equal(gf_config_compare("Time { dt 1e-4; ", b, &report, &n), GF_OK);
    assert_non_null(strstr(gf_error_message(), "stored configuration"));
}

/* The reports a run writes may be added, changed or dropped at a restart (issue 32: Forces and
 * Tracks blocks added at a restart were refused), and so may the solver (as a Stage may change
 * it); the bodies may not. */
static void test_restart_free_keys(void **state) {
    (void)state;
    char *cur = malloc(strlen(stored) + 256), *report = NULL;
    strcpy(cur, stored);
    strcat(cur, "Forces {\n    every 10;\n}\nTracks {\n    ids \"1-5\";\n}\n"
                "Statistics {\n    every 7;\n}\n");
    assert_int_equal(compare(cur, &report), 0);
    free(cur);
    const char *from[] = {"tolerance 1e-5;", "density 7850;"};
    const char *to[] = {
        "tolerance 1e-5;\n    over_relaxation 1.4;\n    sweeps 3;\n    mode jacobi;",
        "density 7851;"};
    cur = edited(from, to, 2);
    assert_int_equal(compare(cur, &report), 1);
    assert_non_null(strstr(report, "density"));
    free(report);
    free(cur);
    /* Every name of the list is a registered key or block (a renamed key cannot leave a stale
     * entry that silently lets nothing through). */
    char list[4096];
    gf_config_schema_restart_free_list(list, sizeof list);
    assert_true(strlen(list) + 1 < sizeof list);
    assert_non_null(strstr(list, "Time.steps"));
    for (char *name = strtok(list, ", "); name; name = strtok(NULL, ", ")) {
        char path[256];
        snprintf(path, sizeof path, "%s", name);
        char *dot = strrchr(path, '.');
        assert_non_null(dot);
        *dot = '\0';
        char block[256]; /* "Materials.Pair" is the block path "Materials/Pair" */
        snprintf(block, sizeof block, "%s", path);
        for (char *c = block; *c; ++c)
            *c = *c == '.' ? '/' : *c;
        if (strcmp(dot + 1, "*") == 0)
            assert_non_null(gf_config_schema_find_block(block));
        else if (!gf_config_schema_find(block, dot + 1))
            fail_msg("'%s' of the list is no registered key", name);
        char probe[300];
        snprintf(probe, sizeof probe, "%s.%s", path, strcmp(dot + 1, "*") == 0 ? "any" : dot + 1);
        assert_true(gf_config_schema_restart_free(probe));
    }
    /* A key a later version added, at its default now, is no difference; at another value it is. */
    char *later = malloc(strlen(stored) + 128);
    strcpy(later, stored);
    const char *old = "Contact {\n    sort_every 20;\n}\n";
    strcat(later, "Contact {\n    sort_every 20;\n    margin_fraction 0.01; // default\n}\n");
    char *stored_old = malloc(strlen(stored) + 128);
    strcpy(stored_old, stored);
    strcat(stored_old, old);
    int n = -1;
    GF_ASSERT_OK(gf_config_compare(stored_old, later, &report, &n));
    assert_int_equal(n, 0);
    strcpy(later, stored);
    strcat(later, "Contact {\n    sort_every 20;\n    margin_fraction 0.02;\n}\n");
    GF_ASSERT_OK(gf_config_compare(stored_old, later, &report, &n));
    assert_int_equal(n, 1);
    assert_non_null(strstr(report, "Contact.margin_fraction: absent in the checkpoint, 0.02 now"));
    free(report);
    free(later);
    free(stored_old);
    assert_true(gf_config_schema_restart_free("Time.dt"));
    assert_false(gf_config_schema_restart_free("Materials.Material.density"));
    assert_false(gf_config_schema_restart_free("Domain.Wall.normal"));
    assert_true(gf_config_schema_restart_free("Statistics.region_min"));
    /* A stage's keys, with the command line's selectors */
    assert_true(gf_config_schema_stage_free("Materials.Pair[2].friction"));
    assert_true(gf_config_schema_stage_free("Insert[feed].stop"));
    assert_true(gf_config_schema_stage_free("Outlet[1].open"));
    assert_true(gf_config_schema_stage_free("Solver.model"));
    assert_false(gf_config_schema_stage_free("Insert[feed].rate"));
    assert_false(gf_config_schema_stage_free("Materials.Material[steel].density"));
    assert_false(gf_config_schema_stage_free("Output.directory"));
    assert_false(gf_config_schema_stage_free("Materials.Pair[2.friction"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_and_equivalent), cmocka_unit_test(test_differences_named),
        cmocka_unit_test(test_absent_and_many),     cmocka_unit_test(test_any_layout),
        cmocka_unit_test(test_restart_free_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
