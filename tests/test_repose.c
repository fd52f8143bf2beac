/* gf-repose (issue 15) on synthetic beds of known slope, in snapshots written by 1, 2 and 4
 * ranks: the bed of a drum filling the circle below a line tilted at 32 degrees (and -20 for the
 * other sense of rotation, with the drum's axis and gravity given as options), and a cone heap
 * of 25 degrees with a flat top and a foot of stray beads; the least-squares line with its
 * standard error against the closed form; and clear failures on bad input. The tool runs on
 * rank 0 while the other ranks wait. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "sim/sim.h"
#include "lib/repose.h"
#include "test_util.h"

#define P gf_test_par
#define DEG (M_PI / 180.0)

static char dir[256];

static void path_of(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

static char *run_tool(const char *args, int *rc) {
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s", GF_REPOSE, args);
    *rc = gf_test_run(cmd, &out);
    return out;
}

static void expect_failure(const char *args, const char *fragment) {
    int rc;
    char *out = run_tool(args, &rc);
    if (rc != 1 || !strstr(out, fragment))
        fail_msg("'gf-repose %s' exited with %d, expected a failure (exit status 1) saying "
                 "'%s':\n%s",
                 args, rc, fragment, out);
    free(out);
}

/* The angles (column 3) of PREFIX.csv, after its comment and column lines; each row's fitted
 * slope checked against its angle. */
static int read_angles(const char *prefix, double *angle, int max) {
    char path[600], line[2048];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_true(line[0] == '#');
    assert_non_null(fgets(line, sizeof line, f));
    assert_true(strncmp(line, "file,time,angle_deg,stderr_deg,bins,particles", 45) == 0);
    /* The fitted line is in the last four columns (for the figure): its slope is the angle's. */
    assert_non_null(strstr(line, ",fit_from,fit_to,fit_intercept,fit_slope\n"));
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ',');
        assert_non_null(c);
        c = strchr(c + 1, ',');
        assert_non_null(c);
        angle[n] = strtod(c + 1, NULL);
        double slope = strtod(strrchr(line, ',') + 1, NULL);
        if (fabs(atan(fabs(slope)) * 180.0 / M_PI - fabs(angle[n])) > 1e-3)
            fail_msg("%s: fit_slope %g is not the angle %g degrees", path, slope, angle[n]);
        n++;
    }
    fclose(f);
    return n;
}

/* --- the least-squares line ------------------------------------------------------------------ */

/* (0, 0), (1, 1), (2, 0): slope 0, intercept 1/3; residuals -1/3, 2/3, -1/3 give
 * s^2 = (2/3) / (3 - 2) and Sxx = 2, so the slope's standard error is sqrt(1/3). */
static void test_line(void **state) {
    (void)state;
    const double x[3] = {0, 1, 2}, y[3] = {0, 1, 0}, x2[4] = {-1, 0, 2, 5};
    double a, b, se, y2[4];
    assert_int_equal(gf_repose_line(3, x, y, &b, &a, &se), 0);
    GF_ASSERT_NEAR(b, 0.0, 1e-15);
    GF_ASSERT_NEAR(a, 1.0 / 3.0, 1e-15);
    GF_ASSERT_NEAR(se, sqrt(1.0 / 3.0), 1e-15);
    for (int k = 0; k < 4; ++k)
        y2[k] = 0.7 - 1.5 * x2[k];
    assert_int_equal(gf_repose_line(4, x2, y2, &b, &a, &se), 0);
    GF_ASSERT_NEAR(b, -1.5, 1e-14);
    GF_ASSERT_NEAR(a, 0.7, 1e-14);
    GF_ASSERT_NEAR(se, 0.0, 1e-7);
    const double same[3] = {1, 1, 1};
    assert_int_equal(gf_repose_line(3, same, y, &b, &a, &se), -1);
    assert_int_equal(gf_repose_line(1, x, y, &b, &a, &se), -1);
}

/* --- synthetic beds -------------------------------------------------------------------------- */

enum { MAXP = 40000 };
static const double bead = 0.001; /* radius (m) */

/* A dense random-looking packing of a plane: a hexagonal lattice of spacing 2.05 radii turned by
 * `turn`, shifted by `shift`, every site moved by up to 0.15 radii; calls keep(u, v) for the
 * sites in [-L, L]^2. */
static void plane_sites(double L, double turn, const double shift[2], uint64_t *seed,
                        void (*keep)(void *ctx, double u, double v), void *ctx) {
    const double a = 2.05 * bead, h = a * sqrt(3.0) / 2;
    int m = (int)(1.5 * L / h) + 2;
    for (int j = -m; j <= m; ++j)
        for (int i = -m; i <= m; ++i) {
            double p = (i + 0.5 * (j & 1)) * a + shift[0], q = j * h + shift[1];
            double u = cos(turn) * p - sin(turn) * q + gf_test_uniform(seed, -0.15, 0.15) * bead;
            double v = sin(turn) * p + cos(turn) * q + gf_test_uniform(seed, -0.15, 0.15) * bead;
            if (fabs(u) <= L && fabs(v) <= L)
                keep(ctx, u, v);
        }
}

typedef struct {
    double (*x)[3];
    size_t n;
    /* drum: the circle and the line v = c0 + tan(angle) * (the coordinate along `rise`) */
    double R, c0, tan_angle, layer;
    double centre[3];
    int across, up, along; /* world axes of the section's coordinates */
    double rise;           /* +1 or -1: the world axis `across` points up the slope or down */
} bed;

static void keep_drum(void *ctx, double u, double v) {
    bed *b = ctx;
    double s = b->rise * u;
    if (u * u + v * v > (b->R - bead) * (b->R - bead) || v + bead > b->c0 + b->tan_angle * s)
        return;
    if (b->n == MAXP)
        fail_msg("more than %d beads", MAXP);
    b->x[b->n][b->across] = b->centre[b->across] + u;
    b->x[b->n][b->up] = b->centre[b->up] + v;
    b->x[b->n][b->along] = b->centre[b->along] + b->layer;
    b->n++;
}

/* Writes the beads as a snapshot at `time` (with `config` stored, if not NULL) in the box
 * [0, hi]; those above z = vz_from_z fall at 1 m/s, the others rest. */
static void write_beds(const char *path, const double (*x)[3], size_t n, const double hi[3],
                       double time, const char *config, double vz_from_z) {
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    const double lo[3] = {0, 0, 0};
    const int per[3] = {0, 0, 0}, dims[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    for (size_t i = 0; i < n; ++i) {
        gf_particle rec;
        gf_particle_make_sphere(&rec, (int64_t)i, x[i], bead, 2500, 0);
        rec.v[2] = x[i][2] > vz_from_z ? -1.0 : 0.0;
        if (!sim.distributed || gf_decomp_owns(&sim.xch.decomp, rec.x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    }
    sim.expected_particles = sim.next_id = (int64_t)n;
    sim.time = time;
    gf_output o;
    memset(&o, 0, sizeof o);
    if (config)
        GF_ASSERT_OK(gf_output_set_config_text(&o, config));
    GF_ASSERT_OK(gf_io_write_snapshot(&o, &sim, path));
    gf_output_free(&o);
    gf_sim_free(&sim);
}

/* A drum bed of 10 layers along the axis, each with its own lattice turn and shift. */
static void drum_bed(bed *b, double angle_deg, uint64_t seed) {
    b->n = 0;
    b->tan_angle = tan(angle_deg * DEG);
    for (int k = 0; k < 10; ++k) {
        b->layer = (k - 4.5) * 2.05 * bead;
        double shift[2] = {gf_test_uniform(&seed, 0, 0.002), gf_test_uniform(&seed, 0, 0.002)};
        plane_sites(b->R, gf_test_uniform(&seed, 0, M_PI / 3), shift, &seed, keep_drum, b);
    }
}

/* drum.cfg's drum: axis y through (0.06, 0.025, 0.06), turning positively about it; its bottom
 * (-z) moves towards -x (omega y x -z = -x), so a bed dragged that way rises towards -x: a
 * positive angle is a surface higher at -x. Snapshots at t = 0.5 (32 degrees) and t = 1 (28
 * degrees). */
static const char drum_config[] =
    "Domain { min < 0, 0, 0 >; max < 0.12, 0.05, 0.12 >;\n"
    "  Mesh { shape cylinder; centre < 0.06, 0.025, 0.06 >; axis < 0, 1, 0 >; radius 0.05;\n"
    "         length 0.04; caps true; angular_velocity < 0, 3, 0 >; } }\n"
    "Physics { gravity < 0, 0, -9.81 >; }\n";

static void test_drum(void **state) {
    (void)state;
    static double x[MAXP][3];
    const double hi[3] = {0.12, 0.05, 0.12};
    bed b = {.x = x, .R = 0.05, .c0 = -0.005, .centre = {0.06, 0.025, 0.06}};
    b.across = 0, b.up = 2, b.along = 1, b.rise = -1;
    char snap[2][512], prefix[512], args[2048];
    path_of(snap[0], sizeof snap[0], "drum32.h5");
    path_of(snap[1], sizeof snap[1], "drum28.h5");
    path_of(prefix, sizeof prefix, "drum");
    drum_bed(&b, 32, 7);
    write_beds(snap[0], (const double(*)[3])x, b.n, hi, 0.5, drum_config, 1.0);
    drum_bed(&b, 28, 8);
    write_beds(snap[1], (const double(*)[3])x, b.n, hi, 1.0, drum_config, 1.0);

    /* The same drum turned the other way about z, gravity along -y, from the options: its
     * bottom (-y) moves towards +x (omega z x -y = +x); -20 degrees falls towards +x. */
    char other[512];
    path_of(other, sizeof other, "drum-20.h5");
    bed c = {.x = x, .R = 0.05, .c0 = 0.004, .centre = {0.06, 0.06, 0.025}};
    c.across = 0, c.up = 1, c.along = 2, c.rise = 1;
    drum_bed(&c, -20, 9);
    const double hi2[3] = {0.12, 0.12, 0.05};
    write_beds(other, (const double(*)[3])x, c.n, hi2, 0.0, NULL, 1.0);
    if (P.rank != 0)
        return;

    int rc;
    double angle[4];
    snprintf(args, sizeof args, "drum -o %s %s %s", prefix, snap[0], snap[1]);
    char *out = run_tool(args, &rc);
    if (rc != 0 || !strstr(out, "mean over 2 snapshots"))
        fail_msg("gf-repose %s:\n%s", args, out);
    free(out);
    assert_int_equal(read_angles(prefix, angle, 4), 2);
    print_message("beds at 32 and 28 degrees: %.3f and %.3f\n", angle[0], angle[1]);
    if (fabs(angle[0] - 32) > 1 || fabs(angle[1] - 28) > 1)
        fail_msg("beds at 32 and 28 degrees measured %g and %g", angle[0], angle[1]);

    /* --from keeps the later snapshot only. */
    snprintf(args, sizeof args, "drum -o %s --from 0.75 %s %s", prefix, snap[0], snap[1]);
    out = run_tool(args, &rc);
    if (rc != 0 || !strstr(out, "mean over 1 snapshot"))
        fail_msg("gf-repose %s:\n%s", args, out);
    free(out);
    assert_int_equal(read_angles(prefix, angle, 4), 1);
    GF_ASSERT_NEAR(angle[0], 28, 1);

    snprintf(args, sizeof args,
             "drum -o %s --axis 0 0 2 --point 0.06 0.06 0 --gravity 0 -9.81 0 --radius 0.05 %s",
             prefix, other);
    out = run_tool(args, &rc);
    if (rc != 0)
        fail_msg("gf-repose %s:\n%s", args, out);
    free(out);
    assert_int_equal(read_angles(prefix, angle, 4), 1);
    print_message("bed at -20 degrees: %.3f\n", angle[0]);
    if (fabs(angle[0] + 20) > 1)
        fail_msg("a bed at -20 degrees measured %g", angle[0]);
    /* Without --radius the radius comes from the bed, which touches the wall. */
    snprintf(args, sizeof args,
             "drum -o %s --axis 0 0 1 --point 0.06 0.06 0.01 --gravity 0 -1 0 %s", prefix, other);
    out = run_tool(args, &rc);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(read_angles(prefix, angle, 4), 1);
    GF_ASSERT_NEAR(angle[0], -20, 1);

    snprintf(args, sizeof args, "drum %s", other);
    expect_failure(args, "give the drum's axis with --axis and --point");
    /* No configuration stored: gravity is -z, along this axis. */
    snprintf(args, sizeof args, "drum -o %s --axis 0 0 1 --point 0.06 0.06 0 %s", prefix, other);
    expect_failure(args, "parallel to gravity");
}

/* --- a heap ---------------------------------------------------------------------------------- */

typedef struct {
    double (*x)[3];
    size_t n;
    double centre[2], Rb, tan_angle, top, y;
} cone;

static void keep_cone(void *ctx, double u, double v) {
    cone *c = ctx;
    double rho = sqrt(u * u + c->y * c->y);
    if (v < bead || v + bead > fmin(c->top, (c->Rb - rho) * c->tan_angle))
        return;
    if (c->n == MAXP)
        fail_msg("more than %d beads", MAXP);
    c->x[c->n][0] = c->centre[0] + u;
    c->x[c->n][1] = c->centre[1] + c->y;
    c->x[c->n][2] = v;
    c->n++;
}

/* A cone of 25 degrees on the floor z = 0 around (0.05, 0.045), its base 4 cm in radius, cut
 * flat at 85% of its height, in vertical slices 2.05 radii apart (horizontal layers would
 * make its surface a staircase); and a foot of 60 stray beads on the floor 4.2 to 4.8 cm from
 * the axis. */
static void test_heap(void **state) {
    (void)state;
    static double x[MAXP][3];
    cone c = {.x = x, .centre = {0.05, 0.045}, .Rb = 0.04, .tan_angle = tan(25 * DEG)};
    c.top = 0.85 * c.Rb * c.tan_angle;
    uint64_t seed = 21;
    for (c.y = -c.Rb; c.y <= c.Rb; c.y += 2.05 * bead) {
        double shift[2] = {gf_test_uniform(&seed, 0, 0.002), gf_test_uniform(&seed, 0, 0.002)};
        plane_sites(c.Rb, gf_test_uniform(&seed, 0, M_PI / 3), shift, &seed, keep_cone, &c);
    }
    for (int k = 0; k < 60; ++k) {
        double a = 2 * M_PI * k / 60, rho = gf_test_uniform(&seed, 0.042, 0.048);
        x[c.n][0] = c.centre[0] + rho * cos(a);
        x[c.n][1] = c.centre[1] + rho * sin(a);
        x[c.n][2] = bead;
        c.n++;
    }
    /* A stream of 60 beads still falling onto the top, 1.5 to 4.5 cm above it and up to 1 cm
     * from the axis. */
    for (int k = 0; k < 60; ++k) {
        double a = gf_test_uniform(&seed, 0, 2 * M_PI), rho = gf_test_uniform(&seed, 0, 0.01);
        x[c.n][0] = c.centre[0] + rho * cos(a);
        x[c.n][1] = c.centre[1] + rho * sin(a);
        x[c.n][2] = c.top + 0.015 + 0.0005 * k;
        c.n++;
    }
    char snap[512], prefix[512], args[2048];
    path_of(snap, sizeof snap, "heap.h5");
    path_of(prefix, sizeof prefix, "heap");
    const double hi[3] = {0.1, 0.09, 0.07};
    write_beds(snap, (const double(*)[3])x, c.n, hi, 2.0, NULL, c.top + 0.01);
    if (P.rank != 0)
        return;
    int rc;
    double angle[2];
    /* The falling beads would make the heap taller than it is. */
    snprintf(args, sizeof args, "heap -o %s %s", prefix, snap);
    char *out = run_tool(args, &rc);
    print_message("with the falling beads: %s", out);
    assert_true(rc != 0 || (read_angles(prefix, angle, 2) == 1 && fabs(angle[0] - 25) > 2));
    free(out);
    snprintf(args, sizeof args, "heap -o %s --max-speed 0.5 %s", prefix, snap);
    out = run_tool(args, &rc);
    if (rc != 0)
        fail_msg("gf-repose %s:\n%s", args, out);
    free(out);
    assert_int_equal(read_angles(prefix, angle, 2), 1);
    print_message("heap of 25 degrees: %.3f\n", angle[0]);
    if (fabs(angle[0] - 25) > 1)
        fail_msg("a heap of 25 degrees measured %g", angle[0]);
    /* Given the axis and floor, and the whole height fitted: the plateau and the foot pull the
     * line flatter. */
    snprintf(args, sizeof args,
             "heap -o %s --centre 0.05 0.045 0 --floor 0 --flank 0 1 --max-speed 0.5 %s", prefix,
             snap);
    out = run_tool(args, &rc);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(read_angles(prefix, angle, 2), 1);
    print_message("heap with plateau and foot fitted: %.3f\n", angle[0]);
    if (!(angle[0] < 24))
        fail_msg("fitting plateau and foot too gave %g degrees: the flank rule did nothing?",
                 angle[0]);

    const struct {
        const char *options, *says;
    } bad[] = {
        {"heap --flank 0.8 0.2", "--flank LO HI needs 0 <= LO < HI <= 1"},
        {"heap --flank 0.2", "--flank expects 2 numbers"},
        {"heap --radius 0.05", "--radius is an option of gf-repose drum"},
        {"drum --floor 0", "--floor is an option of gf-repose heap"},
        {"drum --keep 1.5", "--keep must be a fraction in (0, 1]"},
        {"drum --keep 0", "--keep must be positive"},
        {"drum --axis 0 0 0", "--axis must not be the zero vector"},
        {"heap --bin -1", "--bin must be positive"},
        {"heap --centre 1 2", "--centre expects 3 numbers"},
        {"heap --from 1 --to 0.5", "--to must not be earlier than --from"},
        {"heap --from 3", "no snapshot has a time within --from .. --to"},
        {"heap --gravity 0 0 0", "gravity is zero"},
        {"heap --max-speed 0", "--max-speed must be positive"},
        {"heap --colour red", "unknown or incomplete option '--colour'"},
        {"pile", "the first argument must be drum or heap, got 'pile'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        snprintf(args, sizeof args, "%s -o %s %s", bad[k].options, prefix, snap);
        expect_failure(args, bad[k].says);
    }
    snprintf(args, sizeof args, "heap -o %s /nonexistent/run.h5", prefix);
    expect_failure(args, "/nonexistent/run.h5: No such file");
    expect_failure("", "usage");
    snprintf(args, sizeof args, "heap -o %s/missing/p %s", dir, snap);
    expect_failure(args, "cannot write");
    out = run_tool("--help", &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "usage: gf-repose drum"));
    free(out);
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "repose");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_line),
    cmocka_unit_test_setup_teardown(test_drum, setup, teardown),
    cmocka_unit_test_setup_teardown(test_heap, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
