/* A runtime error met by one rank alone ends the whole job promptly, with a non-zero status and
 * that rank's message (issue 11). Before, the failing rank waited in a reduction while the
 * others waited in the solver's exchange, and the job hung until its wall-time limit.
 *
 * Each case runs a job under mpiexec with a hard timeout from this (serial) parent process:
 * the fail_driver program with a fault injected on the last rank, and the granflow program
 * restarted from a checkpoint in which two spheres of the last rank share a centre. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

/* Generous for a loaded 2-core machine under the sanitizers, far below any hang. */
#define JOB_SECONDS 60
#define PROMPT_SECONDS 40.0

static char tmpdir[64];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs `mpiexec -n ranks args` with a timeout; returns the exit status, the output (malloc'd)
 * and the wall time. A job killed by the timeout exits with 124. */
static int run_job(int ranks, const char *args, char **out, double *seconds) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && timeout -s KILL %d %s -n %d --oversubscribe %s", tmpdir,
             JOB_SECONDS, GF_MPIEXEC, ranks, args);
    double t0 = now();
    int rc = gf_test_run(cmd, out);
    *seconds = now() - t0;
    return rc;
}

/* The job must end by itself, promptly, non-zero, with the failing rank's message. */
static void expect_failure(int ranks, const char *args, const char *rank_tag, const char *frag1,
                           const char *frag2) {
    char *out = NULL;
    double seconds = 0.0;
    int rc = run_job(ranks, args, &out, &seconds);
    if (rc == 137 || rc == 124 || rc == -1 || seconds >= JOB_SECONDS - 1)
        fail_msg("%d ranks '%s' hung (killed after %.0f s):\n%s", ranks, args, seconds, out);
    if (rc == 0)
        fail_msg("%d ranks '%s' exited with 0 despite the fault:\n%s", ranks, args, out);
    if (seconds > PROMPT_SECONDS)
        fail_msg("%d ranks '%s' took %.1f s to end", ranks, args, seconds);
    const char *frags[3] = {rank_tag, frag1, frag2};
    for (int k = 0; k < 3; ++k)
        if (frags[k] && !strstr(out, frags[k]))
            fail_msg("output of %d ranks '%s' lacks '%s':\n%s", ranks, args, frags[k], out);
    free(out);
}

static void driver_case(int ranks, const char *fault, const char *frag) {
    char args[1024], tag[64];
    snprintf(args, sizeof args, "%s %s", GF_FAIL_DRIVER, fault);
    snprintf(tag, sizeof tag, "[rank %d] error:", ranks - 1);
    expect_failure(ranks, args, tag, frag, "step 2");
}

static void test_fault_free_run_ends_normally(void **state) {
    (void)state;
    for (int ranks = 1; ranks <= 4; ranks *= 2) {
        char args[1024], *out = NULL;
        double seconds;
        snprintf(args, sizeof args, "%s none", GF_FAIL_DRIVER);
        int rc = run_job(ranks, args, &out, &seconds);
        if (rc != 0 || !strstr(out, "run finished normally"))
            fail_msg("%d ranks without a fault exited with %d:\n%s", ranks, rc, out);
        free(out);
    }
}

static void test_coincident_centres(void **state) {
    (void)state;
    driver_case(1, "coincident", "coincident centres");
    driver_case(2, "coincident", "coincident centres");
    driver_case(4, "coincident", "coincident centres");
}

static void test_non_finite_velocity(void **state) {
    (void)state;
    driver_case(2, "nan", "finite");
    driver_case(4, "nan", "finite");
}

/* The displaced sphere arrives on the rank before the one whose slab it now lies in. */
static void test_moved_too_far(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "%s jump", GF_FAIL_DRIVER);
    expect_failure(4, args, "] error:", "moved more than one subdomain", "step 2");
}

/* Rewrites the checkpoint so that two spheres owned by `rank` share a centre. */
static void make_coincident(const char *path, int rank) {
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t dpos = H5Dopen2(f, "/particles/position", H5P_DEFAULT);
    hid_t down = H5Dopen2(f, "/particles/owner_rank", H5P_DEFAULT);
    assert_true(dpos >= 0 && down >= 0);
    hid_t space = H5Dget_space(down);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, NULL);
    H5Sclose(space);
    int *owner = malloc(n * sizeof *owner);
    double *x = malloc(3 * n * sizeof *x);
    assert_true(H5Dread(down, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, owner) >= 0);
    assert_true(H5Dread(dpos, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    long first = -1, second = -1;
    for (hsize_t i = 0; i < n && second < 0; ++i)
        if (owner[i] == rank) {
            if (first < 0)
                first = (long)i;
            else
                second = (long)i;
        }
    assert_true(second >= 0);
    memcpy(x + 3 * second, x + 3 * first, 3 * sizeof *x);
    assert_true(H5Dwrite(dpos, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
    free(owner);
    free(x);
    H5Dclose(dpos);
    H5Dclose(down);
    H5Fclose(f);
}

/* The reproduction of the issue: the demo restarted on 2 (4) ranks from a checkpoint with two
 * coincident spheres on the upper rank. */
static void test_granflow_restart_coincident(void **state) {
    (void)state;
    for (int ranks = 2; ranks <= 4; ranks *= 2) {
        char args[2048], *out = NULL, ckpt[128];
        double seconds;
        snprintf(ckpt, sizeof ckpt, "c%d.h5", ranks);
        snprintf(args, sizeof args,
                 "%s %s/configs/demo.cfg -Time.steps=20 -Output.checkpoint_every=20 "
                 "-Output.directory=out -Output.checkpoint=%s -Output.progress_every=0",
                 GRANFLOW_EXE, GF_SOURCE_DIR, ckpt);
        int rc = run_job(ranks, args, &out, &seconds);
        if (rc != 0)
            fail_msg("writing the checkpoint failed (%d):\n%s", rc, out);
        free(out);
        char path[256];
        snprintf(path, sizeof path, "%s/%s", tmpdir, ckpt);
        make_coincident(path, ranks - 1);
        snprintf(args, sizeof args,
                 "%s %s/configs/demo.cfg -Time.steps=100 -Output.directory=out "
                 "-Output.progress_every=0 --restart %s",
                 GRANFLOW_EXE, GF_SOURCE_DIR, ckpt);
        char tag[64];
        snprintf(tag, sizeof tag, "[rank %d] error:", ranks - 1);
        expect_failure(ranks, args, tag, "coincident centres", "step 21");
    }
}

/* A mesh file missing or damaged: one rank reads it for all, and every rank ends with its
 * error, agreed (printed once, exit status 1, no rank aborting the job alone), promptly. */
static void write_text(const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_mesh_file_error(const char *stl, const char *what) {
    char cfg[1024], args[1024], *out = NULL;
    snprintf(cfg, sizeof cfg,
             "Domain { min < 0, 0, 0 >; max < 0.1, 0.1, 0.1 >; box_walls true;\n"
             "  Mesh { file \"%s\"; material glass; } }\n"
             "Materials { Material { name glass; density 2500; } }\n"
             "Lattice { count < 4, 4, 4 >; origin < 0.02, 0.02, 0.05 >; spacing 0.012; radius "
             "0.004; material glass; }\n"
             "Time { dt 1e-4; steps 5; }\nOutput { progress_every 0; snapshot_every 0; }\n",
             stl);
    write_text("mesh.cfg", cfg);
    snprintf(args, sizeof args, "%s mesh.cfg -Output.directory=out -Output.checkpoint=out/c.h5",
             GRANFLOW_EXE);
    double seconds = 0.0;
    int rc = run_job(2, args, &out, &seconds);
    if (rc == 137 || rc == 124 || rc == -1 || seconds >= JOB_SECONDS - 1)
        fail_msg("a bad mesh file hung the job (killed after %.0f s):\n%s", seconds, out);
    if (rc != 1 || seconds > PROMPT_SECONDS)
        fail_msg("a bad mesh file: exit status %d after %.1f s (want 1, promptly):\n%s", rc,
                 seconds, out);
    const char *first = strstr(out, what);
    if (!first || !strstr(out, stl) || strstr(first + 1, what) || strstr(out, "job is aborted"))
        fail_msg("a bad mesh file should end every rank with its error '%s' (naming %s) said "
                 "once:\n%s",
                 what, stl, out);
    free(out);
}

static void test_bad_mesh_file(void **state) {
    (void)state;
    expect_mesh_file_error("nowhere.stl", "cannot open the STL file");
    write_text("damaged.stl", "solid plate\n facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n"
                              "   vertex 1 0 zz\n");
    expect_mesh_file_error("damaged.stl", "'zz' is not a finite number");
}

static int setup(void **state) {
    (void)state;
    return gf_test_tmpdir(tmpdir, sizeof tmpdir, "fail");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_rmtree(tmpdir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_free_run_ends_normally),
        cmocka_unit_test(test_coincident_centres),
        cmocka_unit_test(test_non_finite_velocity),
        cmocka_unit_test(test_moved_too_far),
        cmocka_unit_test(test_granflow_restart_coincident),
        cmocka_unit_test(test_bad_mesh_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
