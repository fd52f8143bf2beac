/* The driver API (run.h, issue 32) at 1, 2 and 4 ranks: a run made from a configuration file,
 * stepped in parts, its particles read and their velocities changed between parts, its output
 * written. Spheres in free flight (no gravity, apart) move by v dt per step exactly; a run in
 * parts ends bit for bit where a run in one go ends; a bad configuration is an error with its
 * name and no run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "granflow/error.h"
#include "granflow/run.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

/* 4 x 4 x 2 spheres 10 mm apart in a 60 mm box, no gravity: they fly freely for a while. */
static const char *const config =
    "Domain { min < 0, 0, 0 >; max < 0.06, 0.06, 0.03 >; }\n"
    "Materials { Material { name glass; density 2500; } }\n"
    "Lattice { count < 4, 4, 2 >; origin < 0.015, 0.015, 0.01 >; spacing 0.01;\n"
    "  radius 0.002; material glass; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 1e-4; steps 100; }\n"
    "Output { progress_every 0; }\n";

static void write_config(char *path, size_t size) {
    snprintf(path, size, "%s/free.cfg", dir);
    if (P.rank == 0) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(config, f);
        fclose(f);
    }
    GF_ASSERT_OK(gf_par_barrier(&P));
}

static gf_run *make_run(const char *path, const char *tag) {
    char out[320], ckpt[320];
    snprintf(out, sizeof out, "-Output.directory=%s/%s", dir, tag);
    snprintf(ckpt, sizeof ckpt, "-Output.checkpoint=%s/%s/c.h5", dir, tag);
    const char *ov[2] = {out, ckpt};
    gf_run_options o = {.config_path = path, .overrides = ov, .noverrides = 2, .quiet = 1};
    gf_run *r = NULL;
    GF_ASSERT_OK(gf_run_create(&o, &r));
    assert_non_null(r);
    return r;
}

/* This rank's particles: ids and positions. */
static size_t local_state(const gf_run *r, int64_t **id, double **x, double **v) {
    size_t n = gf_run_local_count(r);
    *id = malloc((n + 1) * sizeof **id);
    *x = malloc((3 * n + 1) * sizeof **x);
    *v = malloc((3 * n + 1) * sizeof **v);
    GF_ASSERT_OK(gf_run_local_particles(r, *id, *x, *v, NULL));
    return n;
}

static void test_free_flight_in_parts(void **state) {
    (void)state;
    char path[300];
    write_config(path, sizeof path);
    gf_run *r = make_run(path, "parts");
    assert_int_equal(gf_run_step(r), 0);
    assert_int_equal(gf_run_last_step(r), 100);
    int64_t n = 0;
    GF_ASSERT_OK(gf_run_global_count(r, &n));
    assert_int_equal(n, 32);
    GF_ASSERT_OK(gf_run_advance(r, 10, NULL));
    assert_int_equal(gf_run_step(r), 10);
    /* Every rank names every particle: each sets those it owns. The k-th id flies at
     * (k, -k, k/2) mm/s; ids are consecutive from the lowest. */
    int64_t *lid;
    double *lx, *lv;
    size_t ln = local_state(r, &lid, &lx, &lv);
    double lowest = 1e300;
    for (size_t i = 0; i < ln; ++i)
        lowest = fmin(lowest, (double)lid[i]);
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &lowest, 1, GF_PAR_MIN));
    const int64_t base = (int64_t)lowest;
    free(lid);
    free(lx);
    free(lv);
    int64_t ids[32];
    double vel[96];
    for (int k = 0; k < 32; ++k) {
        ids[k] = base + k;
        vel[3 * k] = 1e-3 * (k + 1);
        vel[3 * k + 1] = -1e-3 * (k + 1);
        vel[3 * k + 2] = 0.5e-3 * (k + 1);
    }
    int64_t found = 0;
    GF_ASSERT_OK(gf_run_set_velocities(r, 32, ids, vel, &found));
    assert_int_equal(found, 32);
    int64_t *id0;
    double *x0, *v0;
    size_t n0 = local_state(r, &id0, &x0, &v0);
    /* 50 steps: each particle moves by 50 dt v (the particles may change ranks meanwhile: the
     * start positions are gathered by id). */
    GF_ASSERT_OK(gf_run_advance(r, 50, NULL));
    double start[96] = {0};
    for (size_t i = 0; i < n0; ++i)
        for (int d = 0; d < 3; ++d)
            start[3 * (id0[i] - base) + d] = x0[3 * i + d];
    GF_ASSERT_OK(gf_par_allreduce_double(&P, start, 96, GF_PAR_SUM));
    int64_t *id1;
    double *x1, *v1;
    size_t n1 = local_state(r, &id1, &x1, &v1);
    double worst = 0.0;
    for (size_t i = 0; i < n1; ++i) {
        int64_t k = id1[i] - base;
        for (int d = 0; d < 3; ++d) {
            double want = start[3 * k + d] + 50 * 1e-4 * vel[3 * k + d];
            worst = fmax(worst, fabs(x1[3 * i + d] - want));
            assert_true(v1[3 * i + d] == vel[3 * k + d]);
        }
    }
    assert_true(worst < 1e-15);
    /* A step count past 1e15 steps in all (LONG_MAX: the step to run to would overflow) is
     * refused on every rank, and the run goes on. */
    assert_int_equal(gf_run_advance(r, LONG_MAX, NULL), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "1e15"));
    gf_error_clear();
    /* Past the configured last step, then the end: a final checkpoint and a snapshot. */
    GF_ASSERT_OK(gf_run_advance(r, 60, NULL));
    assert_int_equal(gf_run_step(r), 120);
    assert_int_equal(gf_run_last_step(r), 120);
    char snap[320];
    snprintf(snap, sizeof snap, "%s/parts/by_hand.h5", dir);
    GF_ASSERT_OK(gf_run_write_snapshot(r, snap));
    GF_ASSERT_OK(gf_run_finish(r));
    if (P.rank == 0) {
        char ckpt[320];
        snprintf(ckpt, sizeof ckpt, "%s/parts/c.h5", dir);
        assert_int_equal(access(ckpt, R_OK), 0);
        assert_int_equal(access(snap, R_OK), 0);
    }
    gf_run_destroy(r);
    free(id0);
    free(x0);
    free(v0);
    free(id1);
    free(x1);
    free(v1);
}

/* Steps in parts end where the same steps in one go end, bit for bit. */
static void test_parts_equal_one_go(void **state) {
    (void)state;
    char path[300];
    write_config(path, sizeof path);
    /* Gravity on: the spheres fall onto the floor and collide with it. */
    const char *g = "-Physics.gravity=<0,0,-9.81>";
    double sums[2][4];
    for (int run = 0; run < 2; ++run) {
        char out[320], ckpt[320];
        snprintf(out, sizeof out, "-Output.directory=%s/eq%d", dir, run);
        snprintf(ckpt, sizeof ckpt, "-Output.checkpoint=%s/eq%d/c.h5", dir, run);
        const char *ov[3] = {out, ckpt, g};
        gf_run_options o = {.config_path = path, .overrides = ov, .noverrides = 3, .quiet = 1};
        gf_run *r = NULL;
        GF_ASSERT_OK(gf_run_create(&o, &r));
        if (run == 0) {
            GF_ASSERT_OK(gf_run_advance(r, 900, NULL));
        } else {
            for (int k = 0; k < 9; ++k)
                GF_ASSERT_OK(gf_run_advance(r, 100, NULL));
        }
        int64_t *id;
        double *x, *v;
        size_t n = local_state(r, &id, &x, &v);
        memset(sums[run], 0, sizeof sums[run]);
        for (size_t i = 0; i < n; ++i) {
            sums[run][0] += (double)id[i] * x[3 * i + 2];
            sums[run][1] += v[3 * i + 2];
            sums[run][2] += x[3 * i];
            sums[run][3] += 1.0;
        }
        GF_ASSERT_OK(gf_par_allreduce_double(&P, sums[run], 4, GF_PAR_SUM));
        /* They did reach the floor: at rest on it after 0.09 s of falling 8 mm or more. */
        assert_true(sums[run][1] > -32 * 0.5);
        free(id);
        free(x);
        free(v);
        gf_run_destroy(r);
    }
    for (int k = 0; k < 4; ++k)
        assert_true(sums[0][k] == sums[1][k]);
}

static void test_bad_configuration(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/missing.cfg", dir);
    gf_run_options o = {.config_path = path, .quiet = 1};
    gf_run *r = (gf_run *)&o; /* any non-NULL value: it must come back NULL */
    assert_int_not_equal(gf_run_create(&o, &r), GF_OK);
    assert_null(r);
    if (P.rank == 0)
        assert_non_null(strstr(gf_error_message(), "missing.cfg"));
    const char *bad[1] = {"-Time.dt=-1"};
    write_config(path, sizeof path);
    gf_run_options o2 = {.config_path = path, .overrides = bad, .noverrides = 1, .quiet = 1};
    assert_int_equal(gf_run_create(&o2, &r), GF_ERR_INPUT);
    assert_null(r);
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "run");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_free_flight_in_parts, setup, teardown),
    cmocka_unit_test_setup_teardown(test_parts_equal_one_go, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_configuration, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
