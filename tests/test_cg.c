/* Coarse-grained fields (issue 34, deliverable 6; tools/lib/cg.h, gf-cg).
 *
 * The computation on synthetic data with exact answers: the line integral of the Gaussian
 * against brute-force quadrature; a body's mass and a contact's f (x) b recovered by integrating
 * the fields over space (through periodic boundaries too); the kinetic stress of two bodies
 * passing through each other, rho u^2.
 *
 * The tool on a run: a simple-cubic column of spheres at rest under gravity on a floor (periodic
 * sideways), written by granflow: inside the column (5 widths from its ends) the density is the
 * bulk density rho_b, the solid fraction pi/6, the vertical stress rho_b g (H - z) (H the column's
 * top), the horizontal stresses 0; and everywhere the momentum balance d(sigma_zz)/dz = -rho g + t
 * holds, t the floor's push (the column's weight per area) spread by psi about the floor (the
 * contacts with walls count along the branch from the contact point, Weinhart et al. 2012); the
 * same fields from 2 ranks sharing the snapshots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cg.h"
#include "test_util.h"

static const int along_z[3] = {0, 0, 1}, all3[3] = {1, 1, 1};
static const double lo[3] = {0, 0, 0}, hi[3] = {1, 2, 4};
static const int none[3] = {0, 0, 0};

/* The line weight of a profile, a plane and a 3D Gaussian against the midpoint rule with 2e5
 * points along the branch (psi evaluated directly). */
static void test_line_weight_exact(void **state) {
    (void)state;
    const double w = 0.1;
    const int sets[3][3] = {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}};
    const double cases[4][6] = {{0.05, -0.02, 0.03, 0.2, 0.1, -0.05},
                                {0.3, 0.1, -0.2, 0.01, 0.0, 0.02},
                                {-0.01, 0.02, 0.4, 0.0, 0.0, 0.9},
                                {0.0, 0.0, 0.0, 1e-7, 0.0, 1e-7}};
    for (int k = 0; k < 3; ++k) {
        gf_cg c;
        const int n[3] = {1, 1, 1};
        const double at[3] = {0.5, 1, 2};
        assert_int_equal(gf_cg_init(&c, sets[k], n, at, at, lo, hi, none, w, 4.0), 0);
        for (int j = 0; j < 4; ++j) {
            const double *e = cases[j], *b = cases[j] + 3;
            double brute = 0.0;
            const int steps = 200000;
            for (int q = 0; q < steps; ++q) {
                double s = (q + 0.5) / steps, psi = 1.0;
                for (int a = 0; a < 3; ++a) {
                    double d = e[a] - s * b[a];
                    psi *= sets[k][a] ? exp(-d * d / (2 * w * w)) / (sqrt(2 * M_PI) * w)
                                      : 1.0 / (hi[a] - lo[a]);
                }
                brute += psi / steps;
            }
            double got = gf_cg_line_weight(&c, e, b);
            if (fabs(got - brute) > 1e-9 * fabs(brute) + 1e-300)
                fail_msg("axes %d%d%d, case %d: %.15g, quadrature %.15g", sets[k][0], sets[k][1],
                         sets[k][2], j, got, brute);
        }
        gf_cg_free(&c);
    }
}

/* Integrated over the grid (points times cell volume), the density gives the mass, the solid
 * fraction the volume, the momentum density m v and the contact stress f (x) b: psi and its line
 * integral have unit mass. Along a periodic axis a body at the face gives all of it too. */
static void test_integrals(void **state) {
    (void)state;
    const double w = 0.05;
    for (int periodic = 0; periodic < 2; ++periodic) {
        const int per[3] = {periodic, periodic, periodic};
        const int n[3] = {40, 80, 160};
        gf_cg c;
        assert_int_equal(gf_cg_init(&c, all3, n, lo, hi, lo, hi, per, w, 8.0), 0);
        /* away from the faces, or across them when periodic */
        const double x[6] = {0.5, 1.0, 2.0, periodic ? 0.98 : 0.6, periodic ? 0.01 : 1.1, 2.2};
        const double v[6] = {1, 2, 3, -1, 0, 0.5}, m[2] = {2.0, 3.0}, vol[2] = {0.1, 0.2};
        gf_cg_add_bodies(&c, 2, x, v, m, vol);
        const double f[3] = {0.3, -0.7, 1.1};
        gf_cg_add_contacts(&c, 1, x, x + 3, f);
        c.samples = 1;
        double cell = (hi[0] / n[0]) * (hi[1] / n[1]) * (hi[2] / n[2]);
        double M = 0, V = 0, P[3] = {0, 0, 0}, S[9] = {0};
        for (size_t k = 0; k < c.npoints; ++k) {
            double rho, phi, vel[3], sk[9], sc[9];
            gf_cg_result(&c, k, &rho, &phi, vel, sk, sc);
            M += rho * cell;
            V += phi * cell;
            for (int a = 0; a < 3; ++a)
                P[a] += c.momentum[3 * k + a] * cell;
            for (int a = 0; a < 9; ++a)
                S[a] += sc[a] * cell;
        }
        double b[3] = {x[0] - x[3], x[1] - x[4], x[2] - x[5]};
        for (int a = 0; a < 3 && periodic; ++a)
            b[a] -= (hi[a] - lo[a]) * round(b[a] / (hi[a] - lo[a]));
        /* a Gaussian sampled at a spacing of w / 2 or finer sums to its integral to ~1e-12 */
        if (fabs(M - 5.0) > 1e-9 || fabs(V - 0.3) > 1e-10)
            fail_msg("periodic %d: mass %.15g (5), volume %.15g (0.3)", periodic, M, V);
        for (int a = 0; a < 3; ++a)
            if (fabs(P[a] - (m[0] * v[a] + m[1] * v[3 + a])) > 1e-9)
                fail_msg("periodic %d: momentum %d %.15g", periodic, a, P[a]);
        for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s)
                if (fabs(S[3 * r + s] - f[r] * b[s]) > 1e-9)
                    fail_msg("periodic %d: contact stress %d%d integrates to %.15g, f b = %.15g",
                             periodic, r, s, S[3 * r + s], f[r] * b[s]);
        gf_cg_free(&c);
    }
}

/* Two bodies of mass m at one place moving at +u and -u along x: V = 0 and the kinetic stress
 * is rho u^2 along xx, nothing else; one body alone has none (no fluctuation about itself). */
static void test_kinetic_stress(void **state) {
    (void)state;
    const int n[3] = {1, 1, 20};
    const double from[3] = {0, 0, 1.5}, to[3] = {0, 0, 2.5};
    gf_cg c;
    assert_int_equal(gf_cg_init(&c, along_z, n, from, to, lo, hi, none, 0.2, 6.0), 0);
    const double x[6] = {0.5, 1, 2, 0.5, 1, 2}, v[6] = {0.7, 0, 0, -0.7, 0, 0};
    const double m[2] = {1.5, 1.5}, vol[2] = {0, 0};
    gf_cg_add_bodies(&c, 2, x, v, m, vol);
    c.samples = 1;
    for (size_t k = 0; k < c.npoints; ++k) {
        double rho, phi, vel[3], sk[9], sc[9];
        gf_cg_result(&c, k, &rho, &phi, vel, sk, sc);
        assert_true(fabs(vel[0]) < 1e-12);
        if (fabs(sk[0] - rho * 0.49) > 1e-12 * rho)
            fail_msg("point %zu: kinetic xx %.15g, rho u^2 %.15g", k, sk[0], rho * 0.49);
        for (int a = 1; a < 9; ++a)
            assert_true(fabs(sk[a]) < 1e-12 * rho);
    }
    gf_cg_free(&c);
    assert_int_equal(gf_cg_init(&c, along_z, n, from, to, lo, hi, none, 0.2, 6.0), 0);
    gf_cg_add_bodies(&c, 1, x, v, m, vol);
    for (size_t k = 0; k < c.npoints; ++k) {
        double rho, phi, vel[3], sk[9], sc[9];
        gf_cg_result(&c, k, &rho, &phi, vel, sk, sc);
        assert_true(fabs(sk[0]) < 1e-12 * (rho + 1e-300));
    }
    gf_cg_free(&c);
}

/* ---- the tool on a column of spheres at rest -------------------------------------------- */

static char dir[512];

/* Reads a profile CSV: the columns AXIS (the coordinate), density, solid_fraction, contact_xx,
 * contact_zz and kinetic_zz of each row into rows (at most max); returns the count. */
static int read_profile_axis(const char *path, const char *axis, double rows[][6], int max) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    assert_non_null(fgets(line, sizeof line, f));
    const char *want[6] = {axis,         "density",    "solid_fraction",
                           "contact_xx", "contact_zz", "kinetic_zz"};
    int col[6];
    for (int k = 0; k < 6; ++k) {
        col[k] = -1;
        int c = 0;
        for (char *tok = line, *end; tok; tok = end ? end + 1 : NULL, ++c) {
            end = strpbrk(tok, ",\n");
            size_t len = end ? (size_t)(end - tok) : strlen(tok);
            if (len == strlen(want[k]) && strncmp(tok, want[k], len) == 0)
                col[k] = c;
        }
        if (col[k] < 0)
            fail_msg("%s: no column %s in %s", path, want[k], line);
    }
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        int c = 0;
        for (char *tok = line; tok; tok = strchr(tok, ','), tok = tok ? tok + 1 : NULL, ++c)
            for (int k = 0; k < 6; ++k)
                if (col[k] == c)
                    rows[n][k] = strtod(tok, NULL);
        n++;
    }
    fclose(f);
    return n;
}

static int read_profile(const char *path, double rows[][6], int max) {
    return read_profile_axis(path, "z", rows, max);
}

static void test_column_at_rest(void **state) {
    (void)state;
    /* 4 x 4 x 20 spheres of radius r on a simple-cubic lattice, touching, periodic in x and y */
    const double r = 0.005, d = 2 * r, rho_s = 2500, g = 9.81, H = 20 * d, w = d;
    char cfg[1024], cmd[4096], *out = NULL;
    snprintf(cfg, sizeof cfg, "%s/column.cfg", dir);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f,
            "Domain { min <0,0,0>; max <0.04,0.04,0.3>; periodic <1,1,0>; box_walls true; }\n"
            "Materials { friction 0.5; Material { name glass; density %g; } }\n"
            "Lattice { count <4,4,20>; spacing %g; origin <%g,%g,%g>; radius %g; "
            "material glass; }\n"
            "Physics { gravity <0,0,%g>; }\nTime { dt 1e-4; steps 20; }\n"
            "Solver { tolerance 1e-9; max_iterations 2000; }\n"
            "Output { directory \"%s/out\"; checkpoint \"%s/out/c.h5\"; snapshot_every 10; "
            "contacts true; progress_every 0; }\n",
            rho_s, d, r, r, r, r, -g, dir, dir);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s", GRANFLOW_EXE, cfg);
    if (gf_test_run(cmd, &out) != 0)
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    /* Steps 10 and 20 averaged, on 1 rank and on 2 (one snapshot each). */
    for (int ranks = 1; ranks <= 2; ++ranks) {
        snprintf(cmd, sizeof cmd,
                 "%s -n %d --oversubscribe %s --width %g --profile z --range 0 0.25 --n 400 "
                 "-o %s/cg%d %s/out/run_000000010.h5 %s/out/run_000000020.h5",
                 GF_MPIEXEC, ranks, GF_CG, w, dir, ranks, dir, dir);
        if (gf_test_run(cmd, &out) != 0 || !strstr(out, "2 snapshot(s)"))
            fail_msg("'%s' failed:\n%s", cmd, out);
        free(out);
    }
    static double a[500][6], b[500][6];
    char path[600];
    snprintf(path, sizeof path, "%s/cg1.csv", dir);
    int n = read_profile(path, a, 500);
    snprintf(path, sizeof path, "%s/cg2.csv", dir);
    assert_int_equal(read_profile(path, b, 500), n);
    assert_int_equal(n, 400);
    const double m = rho_s * 4.0 / 3.0 * M_PI * r * r * r, rho_b = m / (d * d * d);
    const double scale = rho_b * g * H;
    double worst_law = 0, worst_balance = 0, worst_ranks = 0;
    for (int k = 0; k < n; ++k) {
        for (int c = 1; c < 6; ++c)
            worst_ranks = fmax(worst_ranks, fabs(a[k][c] - b[k][c]) / (fabs(a[k][c]) + 1e-9));
        double z = a[k][0];
        if (z > 5 * w && z < H - 5 * w) { /* inside: the bulk (the edges' tails below 1e-6) */
            if (fabs(a[k][1] - rho_b) > 1e-6 * rho_b || fabs(a[k][2] - M_PI / 6) > 1e-6 ||
                fabs(a[k][3]) > 1e-9 * scale || fabs(a[k][5]) > 1e-9 * scale)
                fail_msg("z = %g: density %.9g (%.9g), solid fraction %.9g (pi/6), contact xx "
                         "%g, kinetic zz %g",
                         z, a[k][1], rho_b, a[k][2], a[k][3], a[k][5]);
            worst_law = fmax(worst_law, fabs(a[k][4] - rho_b * g * (H - z)) / scale);
        }
        if (k > 0 && k < n - 1) { /* the balance, by central differences */
            double dz = a[k + 1][0] - a[k - 1][0];
            double dsdz = (a[k + 1][4] - a[k - 1][4]) / dz;
            /* the floor's push, the column's weight per area, spread by psi about z = 0 */
            double floor = rho_b * g * H * exp(-z * z / (2 * w * w)) / (sqrt(2 * M_PI) * w);
            worst_balance = fmax(worst_balance, fabs(dsdz + a[k][1] * g - floor) / (rho_b * g));
        }
    }
    printf("column: sigma_zz off rho_b g (H - z) by %.2g of rho_b g H inside; d(sigma_zz)/dz + "
           "rho g - t off by %.2g of rho_b g; 1 and 2 ranks differ by %.2g\n",
           worst_law, worst_balance, worst_ranks);
    /* the solver's tolerance (1e-9) and differences over 0.5 mm (h^2/w^2 ~ 3e-3 of the
     * curvature) bound what is left */
    assert_true(worst_law < 1e-4);
    assert_true(worst_balance < 1e-2);
    assert_true(worst_ranks < 1e-12);
    /* A plane across the column at mid-height (a 3D Gaussian): the same bulk everywhere in it. */
    snprintf(cmd, sizeof cmd,
             "%s --width %g --plane xy --at %g --n 8 -o %s/plane %s/out/run_000000020.h5", GF_CG, w,
             H / 2, dir, dir);
    if (gf_test_run(cmd, &out) != 0 || !strstr(out, "64 points"))
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    snprintf(path, sizeof path, "%s/plane.csv", dir);
    assert_int_equal(read_profile(path, a, 500), 64);
    for (int k = 0; k < 64; ++k)
        if (a[k][0] != H / 2 || fabs(a[k][1] - rho_b) > 1e-6 * rho_b ||
            fabs(a[k][4] - rho_b * g * H / 2) > 1e-4 * scale)
            fail_msg("plane point %d: z %g, density %.9g (%.9g), contact zz %.9g (%.9g)", k,
                     a[k][0], a[k][1], rho_b, a[k][4], rho_b * g * H / 2);
}

/* The channel demo (the paper's section 4.3, scaled down) after 300 steps of flow past the
 * obstacle: the solid fraction, averaged over the box, is the particles' volume over the box's,
 * the figure the paper's Table 2 reports and the engine's statistics file gives (its own sum over
 * the particles). A profile across the channel (y, between its walls) with a width of a quarter
 * radius loses less than 1e-4 of any body's weight beyond the walls. */
static void test_channel_solid_fraction(void **state) {
    (void)state;
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s %s/configs/channel-demo.cfg -Time.steps=300 -Output.snapshot_every=300 "
             "-Statistics.every=300 -Output.progress_every=0 -Output.checkpoint_every=0 "
             "-Output.directory=%s/ch -Output.checkpoint=%s/ch/c.h5",
             GRANFLOW_EXE, GF_SOURCE_DIR, dir, dir);
    if (gf_test_run(cmd, &out) != 0)
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    const double w = 0.000235 / 4, ly = 0.013;
    snprintf(cmd, sizeof cmd,
             "%s --width %g --profile y --n 1300 -o %s/chy %s/ch/channel_000000300.h5", GF_CG, w,
             dir, dir);
    if (gf_test_run(cmd, &out) != 0)
        fail_msg("'%s' failed:\n%s", cmd, out);
    free(out);
    /* the statistics' row of step 300: solid_fraction is its 9th column */
    char path[600], line[1024];
    snprintf(path, sizeof path, "%s/ch/stats.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    double stats = NAN;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "300,", 4) == 0) {
            char *c = line;
            for (int k = 0; k < 8; ++k)
                c = strchr(c, ',') + 1;
            stats = strtod(c, NULL);
        }
    fclose(f);
    assert_true(stats > 0.01 && stats < 0.7);
    static double a[1400][6];
    snprintf(path, sizeof path, "%s/chy.csv", dir);
    int n = read_profile_axis(path, "y", a, 1400);
    assert_int_equal(n, 1300);
    double mean = 0.0;
    for (int k = 0; k < n; ++k)
        mean += a[k][2] * (ly / n) / ly;
    printf("channel: solid fraction %.6f from the coarse-grained profile, %.6f in the statistics\n",
           mean, stats);
    if (fabs(mean - stats) > 2e-4 * stats)
        fail_msg("the coarse-grained solid fraction %.6f is not the statistics' %.6f", mean, stats);
}

/* Bad input: a clear message and a failing status. */
static void test_refusals(void **state) {
    (void)state;
    char cmd[2048], *out = NULL;
    const char *cases[][2] = {
        {"--profile z /nonexistent.h5", "--width is required"},
        {"--width 0.01 /nonexistent.h5", "one of --profile and --plane"},
        {"--width 0.01 --profile w x.h5", "--profile wants one of x, y, z"},
        {"--width -1 --profile z x.h5", "--width must be positive"},
        {"--width 0.01 --profile z --at 3 x.h5", "--at goes with --plane"},
        {"--width 0.01 --profile z /nonexistent.h5", "nonexistent.h5"},
    };
    /* --help: the usage on stdout, nothing on stderr, success */
    snprintf(cmd, sizeof cmd, "{ %s --help 2>/dev/null; }", GF_CG);
    assert_int_equal(gf_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "usage: gf-cg"));
    free(out);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        snprintf(cmd, sizeof cmd, "%s %s", GF_CG, cases[k][0]);
        int rc = gf_test_run(cmd, &out);
        if (rc == 0 || !strstr(out, cases[k][1]))
            fail_msg("'%s' gave %d, without '%s':\n%s", cmd, rc, cases[k][1], out);
        free(out);
    }
    /* In an MPI job the options' faults, every rank's alike, are said once (by rank 0). */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        snprintf(cmd, sizeof cmd, "%s -n 2 --oversubscribe %s %s", GF_MPIEXEC, GF_CG, cases[k][0]);
        int rc = gf_test_run(cmd, &out);
        const char *first = strstr(out, cases[k][1]);
        if (rc == 0 || !first || strstr(first + 1, cases[k][1]))
            fail_msg("'%s' gave %d, without '%s' once:\n%s", cmd, rc, cases[k][1], out);
        free(out);
    }
}

static int setup(void **state) {
    (void)state;
    return gf_test_tmpdir(dir, sizeof dir, "cg");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_weight_exact),      cmocka_unit_test(test_integrals),
        cmocka_unit_test(test_kinetic_stress),         cmocka_unit_test(test_column_at_rest),
        cmocka_unit_test(test_channel_solid_fraction), cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
