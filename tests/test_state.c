/* Each module saves and restores its own run state (issue 32): the named items of a gf_state,
 * and the walk over the modules of gf_sim_save_state / gf_sim_restore_state. The restart tests
 * (test_mpi_io, test_app) check that a restarted run continues bit for bit; these check the
 * pieces: every item a module saves comes back, and a missing or mis-sized item is refused with
 * its name and the file's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "sim/sim.h"
#include "core/state.h"
#include "test_util.h"

static void test_items(void **state) {
    (void)state;
    gf_state s;
    gf_state_init(&s);
    s.source = "run.ckpt.h5";
    const int64_t n3[3] = {1, -2, 3};
    const double r2[2] = {0.5, 4.0};
    GF_ASSERT_OK(gf_state_put_int(&s, "counts", 3, n3));
    GF_ASSERT_OK(gf_state_put_real(&s, "amounts", 2, r2));
    int64_t i[3];
    double r[3];
    GF_ASSERT_OK(gf_state_get_int(&s, "counts", 3, i));
    assert_true(i[0] == 1 && i[1] == -2 && i[2] == 3);
    /* Integers read as reals; reals that are whole numbers as integers, others refused. */
    GF_ASSERT_OK(gf_state_get_real(&s, "counts", 3, r));
    assert_true(r[1] == -2.0);
    assert_int_equal(gf_state_get_int(&s, "amounts", 2, i), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "amounts"));
    /* A second put of a name replaces it. */
    GF_ASSERT_OK(gf_state_put_real(&s, "amounts", 1, &r2[1]));
    assert_int_equal(s.count, 2);
    GF_ASSERT_OK(gf_state_get_int(&s, "amounts", 1, i));
    assert_true(i[0] == 4);
    /* Missing and mis-sized items name the item and the file. */
    assert_int_equal(gf_state_get_int(&s, "next_id", 1, i), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "next_id"));
    assert_non_null(strstr(gf_error_message(), "run.ckpt.h5"));
    assert_int_equal(gf_state_get_int(&s, "counts", 2, i), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "3 values"));
    assert_null(gf_state_find(&s, "next_id"));
    gf_state_free(&s);
}

static void configure(gf_sim *sim, int generate) {
    char *text = NULL;
    size_t len = 0;
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_read_file("configs/reference.cfg", &text, &len));
    GF_ASSERT_OK(gf_config_parse(text, len, "reference.cfg", &cfg));
    free(text);
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    gf_status st = gf_sim_configure(sim, cfg, generate);
    if (st != GF_OK)
        fail_msg("%s", gf_error_message());
    gf_config_destroy(cfg);
}

/* Two states hold the same items with the same values. */
static void assert_same_state(const gf_state *a, const gf_state *b) {
    assert_int_equal(a->count, b->count);
    for (size_t k = 0; k < a->count; ++k) {
        const gf_state_item *x = &a->item[k], *y = gf_state_find(b, x->name);
        if (!y)
            fail_msg("item '%s' was saved but not restored", x->name);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->n, y->n);
        for (size_t j = 0; j < x->n; ++j) {
            int same = x->type == GF_STATE_INT ? x->i[j] == y->i[j] : x->r[j] == y->r[j];
            if (!same)
                fail_msg("item '%s'[%zu] differs after a save and restore", x->name, j);
        }
    }
}

/* The reference configuration has a state in every module that keeps one: walls moving on a
 * schedule, moving obstacles, turning meshes, an inflow, inserts and outlets. After 400 steps
 * its state, restored into a freshly configured simulation, saves again item for item alike,
 * and those items differ from the configured start (the test sees each module's restore). */
static void test_modules_round_trip(void **state) {
    (void)state;
    if (chdir(GF_SOURCE_DIR) != 0)
        fail_msg("cannot enter %s", GF_SOURCE_DIR);
    gf_sim a, b;
    configure(&a, 1);
    gf_state start;
    gf_state_init(&start);
    GF_ASSERT_OK(gf_sim_save_state(&a, &start));
    GF_ASSERT_OK(gf_sim_start(&a));
    for (int k = 0; k < 400; ++k)
        GF_ASSERT_OK(gf_sim_step(&a));
    gf_state sa, sb;
    gf_state_init(&sa);
    gf_state_init(&sb);
    GF_ASSERT_OK(gf_sim_save_state(&a, &sa));
    const char *moved[] = {"next_id",      "expected_particles", "inflow_layers",
                           "inflow_moved", "insert_inserted",    "insert_events",
                           "insert_mass",  "wall_points",        "mesh_poses"};
    for (size_t k = 0; k < sizeof moved / sizeof moved[0]; ++k) {
        const gf_state_item *x = gf_state_find(&start, moved[k]), *y = gf_state_find(&sa, moved[k]);
        assert_non_null(x);
        assert_non_null(y);
        int differ = 0;
        for (size_t j = 0; j < x->n; ++j)
            differ |= x->type == GF_STATE_INT ? x->i[j] != y->i[j] : x->r[j] != y->r[j];
        if (!differ)
            fail_msg("'%s' did not change in 400 steps: the test would not see it restored",
                     moved[k]);
    }
    configure(&b, 0);
    GF_ASSERT_OK(gf_sim_restore_state(&b, &sa));
    GF_ASSERT_OK(gf_sim_save_state(&b, &sb));
    assert_same_state(&sa, &sb);
    /* A state of another geometry is refused, naming what differs. */
    int64_t walls = 1;
    GF_ASSERT_OK(gf_state_put_int(&sa, "wall_count", 1, &walls));
    sa.source = "other.ckpt.h5";
    assert_int_equal(gf_sim_restore_state(&b, &sa), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "other.ckpt.h5"));
    assert_non_null(strstr(gf_error_message(), "walls"));
    gf_state_free(&start);
    gf_state_free(&sa);
    gf_state_free(&sb);
    gf_sim_free(&a);
    gf_sim_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items),
        cmocka_unit_test(test_modules_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
