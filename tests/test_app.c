/* The granflow program as a user runs it: the demo, command-line overrides, and clear errors
 * with a non-zero exit status for bad input. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"
#include "test_util.h"

static void expect(const char *args, int want_ok, const char *frag1, const char *frag2) {
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s", GRANFLOW_EXE, args);
    int rc = gf_test_run(cmd, &out);
    if ((rc == 0) != want_ok)
        fail_msg("'%s' exited with %d:\n%s", cmd, rc, out);
    if ((frag1 && !strstr(out, frag1)) || (frag2 && !strstr(out, frag2)))
        fail_msg("output of '%s' lacks '%s' / '%s':\n%s", cmd, frag1, frag2 ? frag2 : "", out);
    free(out);
}

static char tmpdir[64];

static const char *write_cfg(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_demo_runs(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg -Time.steps=40 -Output.progress_every=20 "
             "-Solver.model=coulomb",
             GF_SOURCE_DIR);
    /* The effective configuration shows the override, progress lines and the summary follow. */
    expect(args, 1, "model coulomb;", "particle updates per second");
    expect(args, 1, "step       40", "ETA");
    snprintf(args, sizeof args, "%s/configs/demo.cfg --check", GF_SOURCE_DIR);
    expect(args, 1, "1024 particles, 6 walls", NULL);
}

/* The median of the summary's "median X" field (NAN when absent). */
static double summary_median(const char *out) {
    const char *m = strstr(out, "median ");
    return m ? strtod(m + 7, NULL) : NAN;
}

/* How far from converged the steps ended is said on the progress line (in units of what the
 * tolerance allows) and in the summary (median and worst), with a note on what to change when
 * the steps do not converge; a run whose steps converge gets no note. */
static void test_convergence_reported(void **state) {
    (void)state;
    /* A column of 6 spheres on a floor: Gauss-Seidel needs tens of sweeps to pass its load. */
    const char *cfg = write_cfg(
        "column.cfg", "Domain { min <-0.1,-0.1,0>; max <0.1,0.1,0.5>; box_walls true; }\n"
                      "Materials { friction 0.5; Material { name m; density 1000; } }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.02>; material m; }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.06>; material m; }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.10>; material m; }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.14>; material m; }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.18>; material m; }\n"
                      "Body { shape sphere; radius 0.02; position <0,0,0.22>; material m; }\n"
                      "Time { dt 1e-3; steps 30; }\n"
                      "Output { progress_every 10; }\n");
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s %s -Output.directory=%s/column -Solver.max_iterations=2 -Solver.tolerance=1e-9",
             GRANFLOW_EXE, cfg, tmpdir);
    assert_int_equal(gf_test_run(cmd, &out), 0);
    if (!strstr(out, "sweeps   2!  error ") || !strstr(out, " x tol") ||
        !strstr(out, "raise Solver.max_iterations (now 2)") || !(summary_median(out) > 1.0))
        fail_msg("a budget-limited run is not reported as such:\n%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s %s -Output.directory=%s/column -Solver.max_iterations=1000 "
             "-Solver.tolerance=1e-3",
             GRANFLOW_EXE, cfg, tmpdir);
    assert_int_equal(gf_test_run(cmd, &out), 0);
    if (strstr(out, "note:") || strstr(out, "!  error") || !(summary_median(out) <= 1.0))
        fail_msg("a converged run is reported as unconverged:\n%s", out);
    /* The deepest penetration is named: a pair of the column's spheres, or the lowest one and the
     * floor (a wall, named by its point and normal), and its step. */
    if (!strstr(out, "the deepest relative to its pair: particle ") || !strstr(out, "(sphere)") ||
        !strstr(out, " in step "))
        fail_msg("the deepest penetration is not named:\n%s", out);
    free(out);
}

static void test_bad_input(void **state) {
    (void)state;
    char args[1024];
    expect("", 0, "no configuration file given", NULL);
    expect("/nonexistent/x.cfg", 0, "cannot open the configuration file '/nonexistent/x.cfg'",
           NULL);
    expect("--frobnicate", 0, "unknown option '--frobnicate'", NULL);
    /* A box beyond any sensible size is named as such (issue 36: "no decomposition"). */
    snprintf(args, sizeof args, "%s/configs/demo.cfg --check '-Domain.max=<1e308,0.1,0.2>'",
             GF_SOURCE_DIR);
    expect(args, 0, "[0, 1e+308] along x reaches beyond +-1e+15 m", NULL);
    const char *p = write_cfg("typo.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\n"
                                          "Time { dt 1e-4; stesp 3; }\n");
    snprintf(args, sizeof args, "%s", p);
    expect(args, 0, "typo.cfg:2:17: unknown key 'stesp'", "did you mean 'steps'");
    p = write_cfg("syntax.cfg", "Domain { min <0,0,0>; max <1,1,1> }\n");
    expect(p, 0, "syntax.cfg:1:34: expected ';'", NULL);
    p = write_cfg("model.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\nTime { dt 1e-4; }\n"
                               "Solver { model magic; }\n");
    expect(p, 0, "Solver.model 'magic' is unknown", NULL);
    p = write_cfg("nodt.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\n");
    expect(p, 0, "block 'Time' needs the key 'dt'", NULL);
    p = write_cfg("range.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\nTime { dt -1; }\n");
    expect(p, 0, "range.cfg:2:11: 'dt' in block 'Time' is -1", NULL);
    p = write_cfg("lattice.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\nTime { dt 1e-4; }\n"
                                 "Lattice { count <10,10,10>; radius 0.1; }\n");
    expect(p, 0, "outside the domain", NULL);
    p = write_cfg("overlap.cfg", "Domain { min <0,0,0>; max <1,1,1>; }\nTime { dt 1e-4; }\n"
                                 "Lattice { count <2,2,2>; radius 0.1; spacing 0.15; }\n");
    expect(p, 0, "start overlapping", NULL);
    p = write_cfg("mat.cfg", "Domain { min <0,0,0>; max <1,1,1>; wall_material gold; }\n"
                             "Time { dt 1e-4; }\n");
    expect(p, 0, "unknown material 'gold'", NULL);
    snprintf(args, sizeof args, "%s/configs/demo.cfg -Time.dt=fast", GF_SOURCE_DIR);
    expect(args, 0, "command line: 'dt' in block 'Time' must be a number", NULL);
}

/* The program under mpirun: parallel runs and decomposition errors. */
static void test_parallel(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Time.steps=30 "
             "-Output.progress_every=10",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR);
    /* Run through the shell directly: expect() prefixes the granflow executable. */
    char *out = NULL;
    int rc = gf_test_run(args, &out);
    if (rc != 0 || !strstr(out, "on 2 rank(s)") || !strstr(out, "particles 1024"))
        fail_msg("parallel demo failed (%d):\n%s", rc, out);
    free(out);
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Domain.processes='<3,1,1>'",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR);
    rc = gf_test_run(args, &out);
    if (rc == 0 || !strstr(out, "needs 3 processes, but the job has 2"))
        fail_msg("wrong process count accepted (%d):\n%s", rc, out);
    free(out);
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Domain.processes='<1,2,1>' "
             "-Domain.max='<0.1,0.01,0.2>' -Lattice.count='<8,1,16>' "
             "-Lattice.origin='<0.01,0.005,0.02>'",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR);
    rc = gf_test_run(args, &out);
    if (rc == 0 || !strstr(out, "use fewer processes along y"))
        fail_msg("too thin subdomains accepted (%d):\n%s", rc, out);
    free(out);
}

/* ---- restart through the program (issue 11) ------------------------------------------------- */

/* Runs the granflow program (with `args` after the demo configuration); fails the test if its
 * exit status is not what `want_ok` says. Returns the output (malloc'd). */
static char *granflow(const char *args, int want_ok) {
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s/configs/demo.cfg -Output.progress_every=0 %s", GRANFLOW_EXE,
             GF_SOURCE_DIR, args);
    int rc = gf_test_run(cmd, &out);
    if ((rc == 0) != want_ok)
        fail_msg("'%s' exited with %d:\n%s", cmd, rc, out);
    return out;
}

/* The steps of the snapshots the XDMF file lists, in its order; their files must exist. */
static int xmf_steps(const char *dir, long *steps, int max) {
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/run.xmf", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0, grids = 0;
    while (fgets(line, sizeof line, f)) {
        grids += strstr(line, "<Grid Name=\"snapshot\" GridType=\"Collection\"") != NULL;
        char *h = strstr(line, "<Information Name=\"snapshot\" Value=\"run_");
        if (h) {
            char name[256], full[800];
            sscanf(strstr(h, "run_"), "%255[^\"]", name);
            snprintf(full, sizeof full, "%s/%s", dir, name);
            if (access(full, R_OK) != 0)
                fail_msg("%s lists %s, which does not exist", path, name);
            assert_true(n < max);
            steps[n++] = strtol(name + 4, NULL, 10);
        }
    }
    fclose(f);
    assert_int_equal(grids, n);
    return n;
}

static void assert_steps(const char *dir, const long *want, int nwant) {
    long got[32];
    int n = xmf_steps(dir, got, 32);
    int same = n == nwant;
    for (int k = 0; k < n && same; ++k)
        same = got[k] == want[k];
    if (!same) {
        char text[512];
        int at = 0;
        for (int k = 0; k < n; ++k)
            at += snprintf(text + at, sizeof text - (size_t)at, " %ld", got[k]);
        text[at] = '\0';
        fail_msg("%s/run.xmf lists the steps%s; expected %d steps from %ld to %ld", dir, text,
                 nwant, want[0], want[nwant - 1]);
    }
}

static long long step_attr(const char *path) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        fail_msg("cannot open %s", path);
    long long step = -1;
    hid_t a = H5Aopen(f, "step", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_LLONG, &step);
    H5Aclose(a);
    H5Fclose(f);
    return step;
}

/* A whole dataset of doubles (or int64 ids), with its row count. */
static void *read_all(hid_t f, const char *name, hid_t type, size_t width, size_t *rows) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0)
        fail_msg("no dataset %s", name);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[2] = {0, 1};
    H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    *rows = (size_t)dims[0];
    void *buf = malloc((*rows * (size_t)dims[1] + 1) * width);
    assert_true(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Dclose(d);
    return buf;
}

/* Two files hold the same particles (matched by id) and, for checkpoints, the same warm-start
 * entries, to the last bit. */
static void assert_same_state(const char *p1, const char *p2) {
    static const struct {
        const char *name;
        int ncols;
    } cols[] = {{"/particles/position", 3},
                {"/particles/velocity", 3},
                {"/particles/angular_velocity", 3},
                {"/particles/orientation", 4}};
    hid_t f1 = H5Fopen(p1, H5F_ACC_RDONLY, H5P_DEFAULT),
          f2 = H5Fopen(p2, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f1 >= 0 && f2 >= 0);
    size_t n1, n2;
    int64_t *id1 = read_all(f1, "/particles/id", H5T_NATIVE_INT64, 8, &n1);
    int64_t *id2 = read_all(f2, "/particles/id", H5T_NATIVE_INT64, 8, &n2);
    assert_int_equal(n1, n2);
    assert_true(n1 > 0);
    /* The row in the second file of each row of the first (ids need not be 0 .. n-1: a run with
     * outlets loses some). */
    size_t *row2 = malloc(n1 * sizeof *row2);
    for (size_t i = 0; i < n1; ++i) {
        size_t j = 0;
        while (j < n2 && id2[j] != id1[i])
            ++j;
        if (j == n2)
            fail_msg("particle %lld of %s is not in %s", (long long)id1[i], p1, p2);
        row2[i] = j;
    }
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; ++c) {
        size_t r1, r2, k = (size_t)cols[c].ncols;
        double *a = read_all(f1, cols[c].name, H5T_NATIVE_DOUBLE, 8, &r1);
        double *b = read_all(f2, cols[c].name, H5T_NATIVE_DOUBLE, 8, &r2);
        for (size_t i = 0; i < n1; ++i) {
            size_t j = row2[i];
            for (size_t d = 0; d < k; ++d)
                if (memcmp(&a[k * i + d], &b[k * j + d], sizeof(double)) != 0)
                    fail_msg("%s: particle %lld differs: %.17g in %s, %.17g in %s", cols[c].name,
                             (long long)id1[i], a[k * i + d], p1, b[k * j + d], p2);
        }
        free(a);
        free(b);
    }
    if (H5Lexists(f1, "warmstart", H5P_DEFAULT) > 0) {
        size_t w1, w2, x1, x2;
        int64_t *k1 = read_all(f1, "/warmstart/pair", H5T_NATIVE_INT64, 8, &w1);
        int64_t *k2 = read_all(f2, "/warmstart/pair", H5T_NATIVE_INT64, 8, &w2);
        double *l1 = read_all(f1, "/warmstart/impulse", H5T_NATIVE_DOUBLE, 8, &x1);
        double *l2 = read_all(f2, "/warmstart/impulse", H5T_NATIVE_DOUBLE, 8, &x2);
        assert_int_equal(w1, w2);
        assert_true(w1 > 0);
        assert_memory_equal(k1, k2, 2 * w1 * sizeof *k1);
        assert_memory_equal(l1, l2, 3 * w1 * sizeof *l1);
        free(k1);
        free(k2);
        free(l1);
        free(l2);
    }
    free(row2);
    free(id1);
    free(id2);
    H5Fclose(f1);
    H5Fclose(f2);
}

/* Snapshots with the XDMF sidecar; a finished run continued from its end-of-run checkpoint equals
 * an uninterrupted run bit for bit; the XDMF file of a restarted run lists each step once, in
 * order, earlier snapshots included; a checkpoint on SIGUSR1 resumed on two ranks. */
static void test_output_and_restart(void **state) {
    (void)state;
    char out[256], straight[256], args[2048], path[512], prev[512];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(straight, sizeof straight, "%s/straight", tmpdir);
    /* 60 steps, a checkpoint every 25: at 25, 50 and, at the end, 60. */
    const char *common = "-Output.snapshot_every=20 -Output.checkpoint_every=25";
    snprintf(args, sizeof args, "%s -Time.steps=60 -Output.directory=%s -Output.checkpoint=%s/c.h5",
             common, out, out);
    free(granflow(args, 1));
    /* The initial state too: a snapshot at step 0. */
    const long first[] = {0, 20, 40, 60};
    assert_steps(out, first, 4);
    snprintf(path, sizeof path, "%s/c.h5", out);
    snprintf(prev, sizeof prev, "%s/c.h5.prev", out);
    assert_int_equal(step_attr(path), 60);
    assert_int_equal(step_attr(prev), 50);

    /* Continued to step 100 from the end of the run: the same as 100 steps straight. */
    snprintf(args, sizeof args,
             "%s -Time.steps=100 -Output.directory=%s -Output.checkpoint=%s/c.h5 --restart %s",
             common, out, out, path);
    char *log = granflow(args, 1);
    if (!strstr(log, "at step 60") || !strstr(log, "run summary: 40 steps (60 to 100, restarted)"))
        fail_msg("the restart did not run from step 60 to 100:\n%s", log);
    free(log);
    const long all[] = {0, 20, 40, 60, 80, 100};
    assert_steps(out, all, 6);
    snprintf(args, sizeof args,
             "%s -Time.steps=100 -Output.directory=%s -Output.checkpoint=%s/c.h5", common, straight,
             straight);
    free(granflow(args, 1));
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/run_000000100.h5", out);
    snprintf(b, sizeof b, "%s/run_000000100.h5", straight);
    assert_same_state(a, b);
    snprintf(a, sizeof a, "%s/c.h5", out);
    snprintf(b, sizeof b, "%s/c.h5", straight);
    assert_int_equal(step_attr(a), 100);
    assert_same_state(a, b);

    /* From step 75 (the previous checkpoint) again, a snapshot deleted meanwhile: 80 and 100 are
     * written anew and listed once, 40 is gone, 0, 20 and 60 stay. */
    assert_int_equal(step_attr(prev), 75);
    snprintf(path, sizeof path, "%s/run_000000040.h5", out);
    assert_int_equal(unlink(path), 0);
    snprintf(args, sizeof args,
             "%s -Time.steps=100 -Output.directory=%s -Output.checkpoint=%s/c.h5 --restart %s",
             common, out, out, prev);
    free(granflow(args, 1));
    const long again[] = {0, 20, 60, 80, 100};
    assert_steps(out, again, 5);
    snprintf(a, sizeof a, "%s/run_000000100.h5", out);
    snprintf(b, sizeof b, "%s/run_000000100.h5", straight);
    assert_same_state(a, b);

    /* A long run stopped by SIGUSR1 writes a checkpoint, says how to resume, and exits with
     * 75 so that a batch script can tell "resume needed" from "done". */
    int rc;
    char *text = NULL;
    snprintf(args, sizeof args,
             "%s %s/configs/demo.cfg -Time.steps=1000000 -Output.progress_every=0 "
             "-Output.checkpoint=%s/sig.ckpt.h5 & pid=$!; sleep 2; kill -USR1 $pid; wait $pid",
             GRANFLOW_EXE, GF_SOURCE_DIR, out);
    rc = gf_test_run(args, &text);
    char *at = strstr(text, "signal received at step ");
    if (rc != 75 || !at || !strstr(text, "--restart"))
        fail_msg("no checkpoint and exit status 75 on SIGUSR1 (%d):\n%s", rc, text);
    long stopped = strtol(at + strlen("signal received at step "), NULL, 10);
    free(text);
    /* Resumed on two ranks for 10 more steps. */
    snprintf(path, sizeof path, "%s/sig.ckpt.h5", out);
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Output.progress_every=0 "
             "--restart %s -Time.steps=%ld -Output.checkpoint=%s",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR, path, stopped + 10, path);
    rc = gf_test_run(args, &text);
    char want[128];
    snprintf(want, sizeof want, "run summary: 10 steps (%ld to %ld, restarted)", stopped,
             stopped + 10);
    if (rc != 0 || !strstr(text, want))
        fail_msg("restart on 2 ranks failed (%d), expected '%s':\n%s", rc, want, text);
    free(text);
    assert_int_equal(step_attr(path), stopped + 10);
    /* Output.wall_limit: the run stops with a checkpoint before the limit (it checks about
     * quarter second or 1% of the limit, not every step, and leaves room for the steps in between),
     * on two ranks too: the ranks decide at the same step. */
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Time.steps=100000000 "
             "-Output.progress_every=0 -Output.wall_limit=4 -Output.checkpoint=%s/wall.ckpt.h5",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR, out);
    double t0 = gf_wtime();
    rc = gf_test_run(args, &text);
    double took = gf_wtime() - t0;
    at = strstr(text, "wall-time limit near at step ");
    /* The run's own clock, which the limit bounds, counts from the configuration (set-up and
     * the step-0 snapshot included: on a loaded machine they take seconds, and a batch job's
     * limit counts them too). The run says when it stopped: before the limit (it aims at 2%
     * before, at least a quarter second), but not early (the checks' planning leaves room for 1% of
     * the limit in steps, a few more and the margin). The checkpoint's writing comes after, and the
     * process also starts MPI: it must end within seconds of the limit. */
    double said = -1.0;
    const char *when = at ? strstr(at, " s, ") : NULL;
    if (when)
        sscanf(when + 4, "%lf s of wall time", &said);
    if (rc != 75 || !at || !(said < 4.0) || !(said > 2.0) || took > 4.0 + 20.0)
        fail_msg("no stop before Output.wall_limit 4 s (exit %d, stopped at %.2f s, process "
                 "%.1f s):\n%s",
                 rc, said, took, text);
    snprintf(path, sizeof path, "%s/wall.ckpt.h5", out);
    assert_int_equal(step_attr(path),
                     strtol(at + strlen("wall-time limit near at step "), NULL, 10));
    free(text);
    snprintf(args, sizeof args, "%s %s/configs/demo.cfg --restart %s/configs/demo.cfg",
             GRANFLOW_EXE, GF_SOURCE_DIR, GF_SOURCE_DIR);
    rc = gf_test_run(args, &text);
    if (rc == 0 || !strstr(text, "cannot open"))
        fail_msg("a text file accepted as checkpoint (%d):\n%s", rc, text);
    free(text);
}

/* A turning drum (configs/drum.cfg) continued from a checkpoint equals the uninterrupted run
 * bit for bit: the mesh's pose is restored (the beads reach the drum at about step 275), and
 * the motion its Schedule started at t = 0.06 s (step 300, before the checkpoint at 330) goes
 * on after the restart, which re-reads the schedule from the configuration. */
static void test_turning_mesh_restarts_exactly(void **state) {
    (void)state;
    char cmd[4096], a[512], b[512], *out = NULL;
    const char *base =
        "-Output.progress_every=0 -Output.snapshot_every=400 -Domain.Mesh.Schedule.time=0.06";
    snprintf(cmd, sizeof cmd,
             "%s %s/configs/drum.cfg %s -Time.steps=400 -Output.directory=%s/drum1 "
             "-Output.checkpoint=%s/drum1/c.h5",
             GRANFLOW_EXE, GF_SOURCE_DIR, base, tmpdir, tmpdir);
    if (gf_test_run(cmd, &out) != 0)
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s %s/configs/drum.cfg %s -Time.steps=330 -Output.directory=%s/drum2 "
             "-Output.checkpoint=%s/drum2/c.h5 && %s %s/configs/drum.cfg %s -Time.steps=400 "
             "-Output.directory=%s/drum2 -Output.checkpoint=%s/drum2/c.h5 --restart "
             "%s/drum2/c.h5",
             GRANFLOW_EXE, GF_SOURCE_DIR, base, tmpdir, tmpdir, GRANFLOW_EXE, GF_SOURCE_DIR, base,
             tmpdir, tmpdir, tmpdir);
    if (gf_test_run(cmd, &out) != 0)
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    snprintf(a, sizeof a, "%s/drum1/run_000000400.h5", tmpdir);
    snprintf(b, sizeof b, "%s/drum2/run_000000400.h5", tmpdir);
    assert_same_state(a, b);
}

/* Stages across a restart (issue 34): a run that fills a box and lets it drain, with a stage at
 * t = 0.03 s (step 60) changing friction, the time step and closing the outlet, ends in the same
 * state bit for bit whether it runs straight through or restarts from a checkpoint before the
 * stage (step 50: the restart applies it when due) or after it (step 100: the restart applies it
 * at once, without a difference to report). */
static void test_stages_restart_exactly(void **state) {
    (void)state;
    char cmd[4096], a[512], b[512], *out = NULL;
    const char *base = "-Output.progress_every=0 -Output.snapshot_every=200 -Stage.time=0.03 "
                       "'-Stage.set=\"Materials.friction = 0.1; Time.dt = 2.5e-4; "
                       "Outlet[bottom].open = false\"'";
    const char *runs[] = {"stage1", "stage2", "stage3"};
    const long first[] = {0, 50, 100};
    for (int k = 0; k < 3; ++k) {
        if (first[k] > 0) {
            snprintf(cmd, sizeof cmd,
                     "%s %s/tests/data/fill-drain.cfg %s -Time.steps=%ld -Output.directory=%s/%s "
                     "-Output.checkpoint=%s/%s/c.h5",
                     GRANFLOW_EXE, GF_SOURCE_DIR, base, first[k], tmpdir, runs[k], tmpdir, runs[k]);
            if (gf_test_run(cmd, &out) != 0)
                fail_msg("'%s' failed:\n%s", cmd, out);
            free(out);
        }
        char restart[600] = "";
        if (first[k] > 0)
            snprintf(restart, sizeof restart, " --restart %s/%s/c.h5", tmpdir, runs[k]);
        snprintf(cmd, sizeof cmd,
                 "%s %s/tests/data/fill-drain.cfg %s -Time.steps=200 -Output.directory=%s/%s "
                 "-Output.checkpoint=%s/%s/c.h5%s",
                 GRANFLOW_EXE, GF_SOURCE_DIR, base, tmpdir, runs[k], tmpdir, runs[k], restart);
        if (gf_test_run(cmd, &out) != 0 || !strstr(out, "Stage stage1 (from t = 0.03 s)") ||
            strstr(out, "warning"))
            fail_msg("'%s' failed, or did not apply the stage, or warned:\n%s", cmd, out);
        free(out);
    }
    snprintf(a, sizeof a, "%s/stage1/run_000000200.h5", tmpdir);
    for (int k = 1; k < 3; ++k) {
        snprintf(b, sizeof b, "%s/%s/run_000000200.h5", tmpdir, runs[k]);
        assert_same_state(a, b);
    }
}

/* Meshes under MPI: the turning drum with the decomposition-invariant Jacobi sweeps gives the
 * same state on 1, 2 and 4 ranks (each rank tests its own particles against the triangles it
 * keeps near its subdomain, with the whole mesh's feature keys; the surface velocities are the
 * same on every rank). */
static void test_turning_mesh_in_parallel(void **state) {
    (void)state;
    char cmd[4096], a[512], b[512], *out = NULL;
    const char *base = "-Output.progress_every=0 -Output.snapshot_every=350 -Time.steps=350 "
                       "-Solver.mode=jacobi -Solver.relaxation=0.5 -Domain.Mesh.Schedule.time=0";
    for (int n = 1; n <= 4; n *= 2) {
        snprintf(cmd, sizeof cmd,
                 "%s -n %d --oversubscribe %s %s/configs/drum.cfg %s -Output.directory=%s/jdrum%d "
                 "-Output.checkpoint=%s/jdrum%d/c.h5",
                 GF_MPIEXEC, n, GRANFLOW_EXE, GF_SOURCE_DIR, base, tmpdir, n, tmpdir, n);
        if (gf_test_run(cmd, &out) != 0)
            fail_msg("'%s' failed:\n%s", cmd, out);
        free(out);
    }
    snprintf(a, sizeof a, "%s/jdrum1/run_000000350.h5", tmpdir);
    for (int n = 2; n <= 4; n *= 2) {
        snprintf(b, sizeof b, "%s/jdrum%d/run_000000350.h5", tmpdir, n);
        /* Equal to the rounding of the reductions (the stopping test's sums add in another order):
         * 1e-12 m, where a missed or doubled mesh contact moves beads by micrometres. */
        hid_t f1 = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT),
              f2 = H5Fopen(b, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f1 >= 0 && f2 >= 0);
        size_t n1, n2, r1, r2;
        int64_t *id1 = read_all(f1, "/particles/id", H5T_NATIVE_INT64, 8, &n1);
        int64_t *id2 = read_all(f2, "/particles/id", H5T_NATIVE_INT64, 8, &n2);
        double *x1 = read_all(f1, "/particles/position", H5T_NATIVE_DOUBLE, 8, &r1);
        double *x2 = read_all(f2, "/particles/position", H5T_NATIVE_DOUBLE, 8, &r2);
        assert_int_equal(n1, 500);
        assert_int_equal(n2, 500);
        double *by_id = calloc(3 * n1, sizeof *by_id);
        for (size_t i = 0; i < n2; ++i) {
            assert_true(id2[i] >= 0 && (size_t)id2[i] < n1);
            memcpy(&by_id[3 * id2[i]], &x2[3 * i], 3 * sizeof *by_id);
        }
        for (size_t i = 0; i < n1; ++i)
            for (int d = 0; d < 3; ++d)
                GF_ASSERT_NEAR(x1[3 * i + d], by_id[3 * id1[i] + d], 1e-12);
        free(by_id);
        free(id1);
        free(id2);
        free(x1);
        free(x2);
        H5Fclose(f1);
        H5Fclose(f2);
    }
}

/* A checkpoint written by an earlier version (tests/data: 12ef585, spheres only, before contact
 * manifolds, shape keys and the run-state items of today) restarts with its configuration: keys
 * added since, at their defaults now, are no difference (issue 36: they were refused); a default
 * that changed since (Contact.margin_fraction, 0.05 then) is named, and given its old value the
 * run continues. */
static void test_old_checkpoint_restarts(void **state) {
    (void)state;
    char args[2048], base[1600];
    snprintf(base, sizeof base,
             "%s/tests/data/checkpoint_12ef585.cfg --restart %s/tests/data/checkpoint_12ef585.h5 "
             "-Time.steps=60 -Output.checkpoint=%s/old.ckpt.h5 -Output.checkpoint_every=0 "
             "-Output.directory=%s/old",
             GF_SOURCE_DIR, GF_SOURCE_DIR, tmpdir, tmpdir);
    expect(base, 0, "Contact.margin_fraction: 0.05 in the checkpoint, 0.01 now", NULL);
    snprintf(args, sizeof args, "%s -Contact.margin_fraction=0.05", base);
    expect(args, 1, "restarted from", "run summary: 20 steps (40 to 60, restarted)");
}

/* A restart checks the configuration against the checkpoint's: keys that define the bodies and
 * the box must match (each difference named with both values) unless --restart-force; run length,
 * output and solver effort may change silently, and what a Stage may change (contact laws,
 * gravity, the time step) with a line of information naming each. */
static void test_restart_config(void **state) {
    (void)state;
    char args[2048], ckpt[512];
    snprintf(ckpt, sizeof ckpt, "%s/cfg.ckpt.h5", tmpdir);
    snprintf(args, sizeof args, "-Time.steps=10 -Output.checkpoint_every=10 -Output.checkpoint=%s",
             ckpt);
    free(granflow(args, 1));
    char base[1024];
    snprintf(base, sizeof base, "--restart %s -Output.checkpoint=%s/cfg2.ckpt.h5 -Time.steps=12",
             ckpt, tmpdir);

    /* What a stage may change, a restart may: said as information, not refused. */
    snprintf(args, sizeof args,
             "%s -Time.dt=2e-4 '-Physics.gravity=<0,0,-5>' -Materials.friction=0.5", base);
    char *log = granflow(args, 1);
    const char *named[] = {"Time.dt: 1e-4 in the checkpoint, 2e-4 now",
                           "Physics.gravity: < 0, 0, -9.81 > in the checkpoint, < 0, 0, -5 > now",
                           "Materials.friction: 0.4 in the checkpoint, 0.5 now"};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; ++k)
        if (!strstr(log, named[k]))
            fail_msg("the restart with a stage's changes did not say '%s':\n%s", named[k], log);
    if (strstr(log, "warning") || !strstr(log, "run summary: 2 steps (10 to 12, restarted)"))
        fail_msg("a restart with a stage's changes did not continue without a warning:\n%s", log);
    free(log);

    /* A material's density is not a stage's: refused by name, with the information held back. */
    snprintf(args, sizeof args, "%s -Time.dt=2e-4 -Materials.Material.density=2500", base);
    log = granflow(args, 0);
    if (!strstr(log, "Materials.Material[1].density: 2650 in the checkpoint, 2500 now") ||
        !strstr(log, "--restart-force") || strstr(log, "run summary") ||
        strstr(log, "Time.dt: 1e-4 in the checkpoint"))
        fail_msg("a changed density was not refused by name alone:\n%s", log);
    free(log);

    snprintf(args, sizeof args, "%s -Materials.Material.density=2500 --restart-force", base);
    log = granflow(args, 1);
    if (!strstr(log, "warning") ||
        !strstr(log, "Materials.Material[1].density: 2650 in the checkpoint, 2500 now") ||
        !strstr(log, "run summary: 2 steps (10 to 12, restarted)"))
        fail_msg("--restart-force did not continue with a warning:\n%s", log);
    free(log);

    /* The same time step written another way, and keys that may change. */
    snprintf(args, sizeof args,
             "%s -Time.dt=0.0001 -Output.progress_every=1 -Solver.max_iterations=80 "
             "-Solver.tolerance=1e-7 -Statistics.every=5",
             base);
    log = granflow(args, 1);
    if (strstr(log, "warning") || !strstr(log, "run summary: 2 steps (10 to 12, restarted)"))
        fail_msg("a restart with only run-control changes was not accepted silently:\n%s", log);
    free(log);
}

/* Reads up to max data rows of a statistics CSV (checking its header); returns their number. */
/* The field of a CSV line in the column named `name` of the header `hdr`. */
static long csv_field(const char *hdr, const char *line, const char *name) {
    const char *at = strstr(hdr, name);
    assert_non_null(at);
    int col = 0;
    for (const char *c = hdr; c < at; ++c)
        col += *c == ',';
    for (; col > 0; --col)
        line = strchr(line, ',') + 1;
    return strtol(line, NULL, 10);
}

static char stats_header[512];

static int read_stats_rows(const char *path, char rows[][512], int max) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "solid_fraction"));
    snprintf(stats_header, sizeof stats_header, "%s", line);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (n < max)
            snprintf(rows[n], 512, "%s", line);
        n++;
    }
    fclose(f);
    return n;
}

/* The channel: the full setup checked for 640 ranks without a cluster, the demo with statistics. */
static void test_channel(void **state) {
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "%s/configs/channel.cfg --dry-run --ranks 640", GF_SOURCE_DIR);
    expect(args, 1, "decomposition 16 x 10 x 4", "memory per rank");
    expect(args, 1, "first inflow layer: 1300 particles", "2.766e+06 particles/s");
    snprintf(args, sizeof args, "%s/configs/channel.cfg --dry-run --ranks 64", GF_SOURCE_DIR);
    expect(args, 0, "needs 640 ranks", NULL);
    /* Sizes no run can hold are refused with their number, before any loop over them. */
    snprintf(args, sizeof args, "%s/configs/demo.cfg --check '-Lattice.count=<1e7,1e7,1e7>'",
             GF_SOURCE_DIR);
    expect(args, 0, "is 1e+21 particles, more than granflow places", NULL);
    /* A lattice of 1e10 sites, within the limit: --check does not place it (that took minutes
     * and gigabytes) and --dry-run counts it axis by axis (in seconds). */
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg --check '-Domain.max=<25,25,30>' "
             "'-Lattice.count=<2000,2000,2500>'",
             GF_SOURCE_DIR);
    expect(args, 1, "Lattice: 10000000000 sites not placed by --check", "0 particles, 6 walls");
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg --dry-run --ranks 640 '-Domain.max=<25,25,30>' "
             "'-Lattice.count=<2000,2000,2500>'",
             GF_SOURCE_DIR);
    expect(args, 1, "initial lattice: at most 10000000000 particles", "counted by axis");
    snprintf(args, sizeof args,
             "%s/configs/channel.cfg --dry-run --ranks 640 -Inflow.radius=1e-9 "
             "-Inflow.spacing=2e-9 -Inflow.reset_distance=1e-3",
             GF_SOURCE_DIR);
    expect(args, 0, "particles per layer, more than granflow places", NULL);
    /* A product of process counts beyond what MPI can number is refused (it overflowed int). */
    snprintf(args, sizeof args,
             "%s/configs/channel.cfg --dry-run --ranks 64 '-Domain.processes=<100000,100000,1000>'",
             GF_SOURCE_DIR);
    expect(args, 0, "asks for 10000000000000 ranks, more than MPI can number", NULL);
    /* A bad obstacle is reported at its block. */
    snprintf(args, sizeof args, "%s/configs/channel-demo.cfg --check '-Domain.Box.max=<0,1,1>'",
             GF_SOURCE_DIR);
    expect(args, 0, "channel-demo.cfg:13: a box needs max > min", NULL);
    char common[1024];
    snprintf(common, sizeof common,
             "%s/configs/channel-demo.cfg -Output.directory=%s/ch -Output.snapshot_every=100 "
             "-Statistics.every=50 -Output.checkpoint_every=200 -Output.checkpoint=%s/ch/c.ckpt.h5",
             GF_SOURCE_DIR, tmpdir, tmpdir);
    snprintf(args, sizeof args, "%s -Time.steps=300", common);
    expect(args, 1, "avg. contacts per particle", "inflow rate (particles/s)");
    char path[512], first[8][512];
    snprintf(path, sizeof path, "%s/ch/stats.csv", tmpdir);
    assert_int_equal(read_stats_rows(path, first, 8), 6);
    snprintf(path, sizeof path, "%s/ch/channel_000000300.h5", tmpdir);
    assert_true(access(path, R_OK) == 0);

    /* Restarted from step 200 to 400: the statistics continue in the same file, rows 250 and
     * 300 come again (dropped from the first run, identical from the exact restart), and the
     * inflow count carries on. */
    snprintf(args, sizeof args, "%s -Time.steps=400 --restart %s/ch/c.ckpt.h5", common, tmpdir);
    expect(args, 1, "restarted from", "avg. contacts per particle");
    char again[8][512];
    snprintf(path, sizeof path, "%s/ch/stats.csv", tmpdir);
    assert_int_equal(read_stats_rows(path, again, 8), 8);
    long last_inflow = -1;
    for (int k = 0; k < 8; ++k) {
        assert_int_equal(strtol(again[k], NULL, 10), 50 * (k + 1));
        long inflow = csv_field(stats_header, again[k], "inflow_particles");
        assert_true(inflow >= last_inflow && inflow > 0);
        last_inflow = inflow;
        if (k < 6)
            assert_string_equal(again[k], first[k]);
    }
}

/* Every place a run writes to is checked before the first step: a path that cannot be written
 * stops the run at once with its name, not after all its steps. */
static void test_output_locations_checked(void **state) {
    (void)state;
    char args[2048];
    const char *file = write_cfg("plain_file", "not a directory\n");
    const char *keys[5] = {
        "-Output.checkpoint=%s/c.h5", "-Output.snapshot_every=10 -Output.directory=%s",
        "-Statistics.every=10 -Statistics.file=%s/s.csv", "-Forces.every=10 -Forces.file=%s/f.csv",
        "-Tracks.ids=1-3 -Tracks.file=%s/t.csv"};
    const char *names[5] = {"Output.checkpoint", "Output.directory", "Statistics.file",
                            "Forces.file", "Tracks.file"};
    for (int k = 0; k < 5; ++k) {
        char opt[600];
        snprintf(opt, sizeof opt, keys[k], file);
        snprintf(args, sizeof args,
                 "%s/configs/demo.cfg -Time.steps=2000 -Output.progress_every=1 "
                 "-Output.checkpoint=%s/ok.h5 %s",
                 GF_SOURCE_DIR, tmpdir, opt);
        char cmd[4096], *out = NULL;
        snprintf(cmd, sizeof cmd, "%s %s", GRANFLOW_EXE, args);
        int rc = gf_test_run(cmd, &out);
        if (rc == 0 || !strstr(out, names[k]) || !strstr(out, "plain_file") || strstr(out, "step "))
            fail_msg("'%s' (%d) did not stop before the first step naming %s:\n%s", cmd, rc,
                     names[k], out);
        free(out);
    }
}

/* Every example configuration is valid; the rigid-body example runs to its end. */
static void test_example_configs(void **state) {
    (void)state;
    const char *names[] = {"demo", "channel-demo", "channel", "box-tipping", "mixed-pour",
                           "drum", "hopper",       "silo",    "funnel-heap", "chute"};
    char args[1024];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        snprintf(args, sizeof args, "%s/configs/%s.cfg --check '-Domain.processes=<1,1,1>'",
                 GF_SOURCE_DIR, names[k]);
        expect(args, 1, NULL, NULL);
    }
    snprintf(args, sizeof args,
             "%s/configs/box-tipping.cfg -Time.steps=2000 -Output.directory=%s/tip "
             "-Output.checkpoint=%s/tip/c.h5",
             GF_SOURCE_DIR, tmpdir, tmpdir);
    expect(args, 1, "run summary: 2000 steps", "6 particles");
    snprintf(args, sizeof args,
             "%s/configs/mixed-pour.cfg -Time.steps=200 -Output.directory=%s/pour "
             "-Output.checkpoint=%s/pour/c.h5",
             GF_SOURCE_DIR, tmpdir, tmpdir);
    expect(args, 1, "run summary: 200 steps", "224 particles");
    /* The scenarios of issue 15 run: meshes, insertion, outlets, gates, a fixed base. */
    const char *scenarios[] = {"drum", "hopper", "silo", "funnel-heap", "chute"};
    for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; ++k) {
        snprintf(args, sizeof args,
                 "%s/configs/%s.cfg -Time.steps=60 -Output.snapshot_every=0 "
                 "-Statistics.every=0 -Output.directory=%s/%s -Output.checkpoint=%s/%s/c.h5",
                 GF_SOURCE_DIR, scenarios[k], tmpdir, scenarios[k], tmpdir, scenarios[k]);
        expect(args, 1, "run summary: 60 steps", NULL);
    }
    /* Its particle file is found relative to the working directory. */
    snprintf(args, sizeof args,
             "%s/configs/from-csv.cfg -Particles.file=%s/configs/pack.csv -Time.steps=100 "
             "-Output.directory=%s/csv -Output.checkpoint=%s/csv/c.h5",
             GF_SOURCE_DIR, GF_SOURCE_DIR, tmpdir, tmpdir);
    expect(args, 1, "run summary: 100 steps", NULL);
}

/* Time steps that move particles farther than the box are refused; steps that move them more
 * than half a radius are warned about, once. */
static void test_absurd_time_step(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg -Time.dt=1 -Time.steps=3 -Output.checkpoint=%s/dt.h5",
             GF_SOURCE_DIR, tmpdir);
    expect(args, 0, "more than the box", "reduce Time.dt");
    /* Absurd speeds are refused, not turned into garbage: spheres at 1e20 m/s, a wall at 1e20
     * m/s (which used to eject every sphere out of the box, counted as outflow, exit 0). */
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg '-Lattice.velocity=<0,1e20,0>' -Time.steps=3 "
             "-Output.checkpoint=%s/dt.h5",
             GF_SOURCE_DIR, tmpdir);
    expect(args, 0, "(1e+20 m/s with a step's gravity)", "reduce Time.dt");
    const char *cfg = write_cfg("piston.cfg", "Domain { min <0,0,0>; max <0.1,0.1,0.2>; "
                                              "box_walls true; Wall { point <0,0,0.01>; "
                                              "normal <0,0,1>; velocity <0,0,1e20>; } }\n"
                                              "Lattice { count <4,4,4>; origin <0.02,0.02,0.05>; "
                                              "spacing 0.0115; radius 0.004; }\n"
                                              "Time { dt 1e-4; steps 3; }\n");
    snprintf(args, sizeof args, "%s -Output.checkpoint=%s/dt.h5", cfg, tmpdir);
    expect(args, 0, "a wall moving at 1e+20 m/s", "reduce its velocity");
    /* The demo's spheres (radius 4 mm) move at up to 0.87 m/s: 3 ms is 0.65 radii a step. */
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg -Time.dt=3e-3 -Time.steps=3 -Output.checkpoint=%s/dt.h5",
             GF_SOURCE_DIR, tmpdir);
    expect(args, 1, "warning: at step 0 the fastest particle", "(warned once)");
    snprintf(args, sizeof args,
             "%s/configs/demo.cfg -Time.dt=1e-4 -Time.steps=3 -Output.checkpoint=%s/dt.h5",
             GF_SOURCE_DIR, tmpdir);
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s", GRANFLOW_EXE, args);
    assert_int_equal(gf_test_run(cmd, &out), 0);
    assert_null(strstr(out, "warning"));
    free(out);
}

/* A prefix with characters XML reserves still gives an XDMF file ParaView can open: they are
 * written as entities. */
static void test_xdmf_escaped(void **state) {
    (void)state;
    char args[2048], path[512];
    snprintf(
        args, sizeof args,
        "%s/configs/demo.cfg -Time.steps=20 -Output.snapshot_every=10 -Output.progress_every=0 "
        "'-Output.prefix=a&b<c' -Output.directory=%s/xml -Output.checkpoint=%s/xml/c.h5",
        GF_SOURCE_DIR, tmpdir, tmpdir);
    expect(args, 1, NULL, NULL);
    snprintf(path, sizeof path, "%s/xml/a&b<c.xmf", tmpdir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, ">a&amp;b&lt;c_000000010.h5:/particles/position<"));
    assert_non_null(strstr(text, ">a&amp;b&lt;c_000000020.h5:/particles/velocity<"));
    assert_null(strstr(text, "a&b"));
    assert_null(strstr(text, "b<c"));
}

int main(void) {
    if (gf_test_tmpdir(tmpdir, sizeof tmpdir, "app"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_runs),
        cmocka_unit_test(test_convergence_reported),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_output_and_restart),
        cmocka_unit_test(test_restart_config),
        cmocka_unit_test(test_old_checkpoint_restarts),
        cmocka_unit_test(test_channel),
        cmocka_unit_test(test_xdmf_escaped),
        cmocka_unit_test(test_output_locations_checked),
        cmocka_unit_test(test_absurd_time_step),
        cmocka_unit_test(test_example_configs),
        cmocka_unit_test(test_turning_mesh_restarts_exactly),
        cmocka_unit_test(test_stages_restart_exactly),
        cmocka_unit_test(test_turning_mesh_in_parallel),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return gf_test_rmtree(tmpdir) ? 1 : rc;
}
