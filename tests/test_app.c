/* The granflow program as a user runs it: the demo, command-line overrides, and clear errors
 * with a non-zero exit status for bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static void expect(const char *args, int want_ok, const char *frag1, const char *frag2) {
    char cmd[2048], *out = NULL;
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

static void test_bad_input(void **state) {
    (void)state;
    char args[1024];
    expect("", 0, "no configuration file given", NULL);
    expect("/nonexistent/x.cfg", 0, "cannot open configuration file '/nonexistent/x.cfg'", NULL);
    expect("--frobnicate", 0, "unknown option '--frobnicate'", NULL);
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

/* Snapshots with the XDMF sidecar, a checkpoint on SIGUSR1, and a restart that finishes. */
static void test_output_and_restart(void **state) {
    (void)state;
    char args[2048], *out = NULL;
    snprintf(args, sizeof args,
             "%s %s/configs/demo.cfg -Time.steps=60 -Output.progress_every=0 "
             "-Output.directory=%s/out -Output.snapshot_every=20",
             GRANFLOW_EXE, GF_SOURCE_DIR, tmpdir);
    int rc = gf_test_run(args, &out);
    if (rc != 0)
        fail_msg("snapshot run failed:\n%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/out/run.xmf", tmpdir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int grids = 0, files_ok = 0;
    while (fgets(line, sizeof line, f)) {
        grids += strstr(line, "<Grid Name=\"step\"") != NULL;
        char *h = strstr(line, ">run_");
        if (h && strstr(line, ":/particles/position")) {
            char name[256], full[800];
            sscanf(h + 1, "%255[^:]", name);
            snprintf(full, sizeof full, "%s/out/%s", tmpdir, name);
            files_ok += access(full, R_OK) == 0;
        }
    }
    fclose(f);
    assert_int_equal(grids, 3);
    assert_int_equal(files_ok, 3);

    /* A long run stopped by SIGUSR1 writes a checkpoint and says how to resume. */
    snprintf(args, sizeof args,
             "%s %s/configs/demo.cfg -Time.steps=1000000 -Output.progress_every=0 "
             "-Output.checkpoint=%s/out/sig.ckpt.h5 & pid=$!; sleep 2; kill -USR1 $pid; wait $pid",
             GRANFLOW_EXE, GF_SOURCE_DIR, tmpdir);
    rc = gf_test_run(args, &out);
    if (rc != 0 || !strstr(out, "signal received") || !strstr(out, "--restart"))
        fail_msg("no checkpoint on SIGUSR1 (%d):\n%s", rc, out);
    free(out);
    /* Resume from it, on two ranks, to a few steps later. */
    snprintf(path, sizeof path, "%s/out/sig.ckpt.h5", tmpdir);
    assert_true(access(path, R_OK) == 0);
    snprintf(args, sizeof args,
             "%s -n 2 --oversubscribe %s %s/configs/demo.cfg -Output.progress_every=0 "
             "--restart %s -Time.steps=0",
             GF_MPIEXEC, GRANFLOW_EXE, GF_SOURCE_DIR, path);
    rc = gf_test_run(args, &out);
    /* steps 0 < the checkpoint's step: nothing to do, but the restart itself must work. */
    if (rc != 0 || !strstr(out, "restarted from"))
        fail_msg("restart failed (%d):\n%s", rc, out);
    free(out);
    snprintf(args, sizeof args, "%s %s/configs/demo.cfg --restart %s/configs/demo.cfg",
             GRANFLOW_EXE, GF_SOURCE_DIR, GF_SOURCE_DIR);
    rc = gf_test_run(args, &out);
    if (rc == 0 || !strstr(out, "cannot open"))
        fail_msg("a text file accepted as checkpoint (%d):\n%s", rc, out);
    free(out);
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

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gf_test_app_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_runs), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_parallel),  cmocka_unit_test(test_output_and_restart),
        cmocka_unit_test(test_channel),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
