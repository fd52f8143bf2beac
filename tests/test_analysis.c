/* The computations behind the post-processing tools (issue 7) on synthetic data with known
 * answers: g(r) of an ideal gas and of a simple-cubic lattice, the edge correction, velocity-field
 * binning in any plane and its grid, and the outlines of walls and obstacles (issue 14). (The
 * figures: tests/test_mpl_figures.py.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "geometry/geometry_mesh.h"
#include "lib/analysis.h"
#include "test_util.h"
#include "lib/outline.h"

/* f(r) for a box walled along one axis and periodic along the others is E[1 - r |u_z| / L]
 * with |u_z| uniform on [0, 1] (Archimedes): 1 - r / (2L). Fully periodic: 1. A cube for small
 * r: 1 - 3r / (2L) to first order. */
static void test_edge_factor(void **state) {
    (void)state;
    const double len[3] = {1.0, 1.0, 1.0};
    const int slab[3] = {1, 1, 0}, all[3] = {1, 1, 1}, none[3] = {0, 0, 0};
    for (double r = 0.1; r < 1.0; r += 0.2)
        GF_ASSERT_NEAR(gf_rdf_edge_factor(r, len, slab), 1.0 - r / 2.0, 1e-6);
    GF_ASSERT_NEAR(gf_rdf_edge_factor(0.7, len, all), 1.0, 1e-15);
    GF_ASSERT_NEAR(gf_rdf_edge_factor(1e-3, len, none), 1.0 - 1.5e-3, 2e-6);
    /* Beyond the box's diagonal no shell point can stay inside. */
    GF_ASSERT_NEAR(gf_rdf_edge_factor(1.8, len, none), 0.0, 1e-15);
}

/* Uniform random points: every bin with enough pairs agrees with 1 within 5 standard deviations,
 * and the bins together show no bias above 1%. The deviation has two parts: the pair count's own
 * (1 / pairs) and that of the points' positions, which near walls change how many neighbours a
 * point can have (the U-statistic's first-order term, below 1 / N for these boxes). */
static void check_ideal_gas(const double hi[3], const int periodic[3], double rmax, size_t n,
                            uint64_t seed) {
    const double lo[3] = {0, 0, 0};
    double *x = malloc(3 * n * sizeof *x), vol = hi[0] * hi[1] * hi[2];
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k)
            x[3 * i + k] = gf_test_uniform(&seed, lo[k], hi[k]);
    enum { NB = 40 };
    double r[NB], g[NB], bias = 0.0;
    int used = 0;
    assert_int_equal(gf_rdf(n, x, lo, hi, periodic, rmax, NB, 1, r, g), 0);
    for (int b = 0; b < NB; ++b) {
        double r0 = b * rmax / NB, r1 = (b + 1) * rmax / NB;
        GF_ASSERT_NEAR(r[b], 0.5 * (r0 + r1), 1e-12);
        double len[3] = {hi[0], hi[1], hi[2]};
        double pairs = 0.5 * n * (n / vol) * 4.0 / 3.0 * M_PI * (r1 * r1 * r1 - r0 * r0 * r0) *
                       gf_rdf_edge_factor(r[b], len, periodic);
        if (pairs < 200)
            continue;
        double sigma = sqrt(1.0 / pairs + 1.0 / (double)n);
        if (!(fabs(g[b] - 1.0) < 5 * sigma))
            fail_msg("g(%g) = %g, expected 1 +- %g (%.0f pairs)", r[b], g[b], sigma, pairs);
        bias += g[b] - 1.0;
        used++;
    }
    assert_true(used > NB / 2);
    if (!(fabs(bias / used) < 0.01))
        fail_msg("g - 1 is %g on average over %d bins", bias / used, used);
    /* The paper's plain normalisation leaves the shells' share outside the region in g: the
     * same counts over f(r), so an ideal gas gives f(r) itself. */
    double rp[NB], gp[NB];
    assert_int_equal(gf_rdf(n, x, lo, hi, periodic, rmax, NB, 0, rp, gp), 0);
    const double len[3] = {hi[0], hi[1], hi[2]};
    for (int b = 0; b < NB; ++b) {
        double f = gf_rdf_edge_factor(r[b], len, periodic);
        if (f > 0)
            GF_ASSERT_NEAR(gp[b], g[b] * f, 1e-12 * fabs(g[b]) + 1e-300);
    }
    free(x);
}

static void test_rdf_ideal_gas(void **state) {
    (void)state;
    /* Walls everywhere, on a flat box: at r = 0.2 a fifth of a shell leaves the box through the
     * thin axis alone, so without the edge correction g would fall well below 1. */
    const double flat[3] = {1.0, 0.8, 0.3};
    const int walls[3] = {0, 0, 0}, periodic[3] = {1, 1, 1}, mixed[3] = {1, 1, 0};
    check_ideal_gas(flat, walls, 0.2, 20000, 11);
    check_ideal_gas(flat, mixed, 0.2, 20000, 12);
    const double cube[3] = {1.0, 1.0, 1.0};
    check_ideal_gas(cube, periodic, 0.3, 20000, 13);
}

/* A periodic simple-cubic lattice of spacing 1: g is zero except in the bins of the neighbour
 * shells at 1, sqrt 2, sqrt 3, 2, sqrt 5, sqrt 6, whose heights hold exactly 6, 12, 8, 6, 24 and
 * 24 neighbours per point (g rho V_shell). */
static void test_rdf_simple_cubic(void **state) {
    (void)state;
    enum { M = 8, NB = 241 }; /* bins whose edges miss the shells */
    const double lo[3] = {0, 0, 0}, hi[3] = {M, M, M};
    const int periodic[3] = {1, 1, 1};
    size_t n = M * M * M;
    double *x = malloc(3 * n * sizeof *x);
    for (size_t i = 0; i < n; ++i) {
        x[3 * i] = 0.5 + (double)(i % M);
        x[3 * i + 1] = 0.5 + (double)(i / M % M);
        x[3 * i + 2] = 0.5 + (double)(i / (M * M));
    }
    double r[NB], g[NB], rmax = 2.5, dr = rmax / NB;
    assert_int_equal(gf_rdf(n, x, lo, hi, periodic, rmax, NB, 1, r, g), 0);
    const double shell_r2[6] = {1, 2, 3, 4, 5, 6}, shell_n[6] = {6, 12, 8, 6, 24, 24};
    int peak_bin[6];
    for (int s = 0; s < 6; ++s)
        peak_bin[s] = (int)(sqrt(shell_r2[s]) / dr);
    double rho = 1.0;
    for (int b = 0; b < NB; ++b) {
        double r0 = b * dr, r1 = (b + 1) * dr;
        double per_point = g[b] * rho * 4.0 / 3.0 * M_PI * (r1 * r1 * r1 - r0 * r0 * r0);
        double want = 0.0;
        for (int s = 0; s < 6; ++s)
            if (b == peak_bin[s])
                want = shell_n[s];
        if (fabs(per_point - want) > 1e-9)
            fail_msg("bin %d (r %g .. %g): %g neighbours per point, expected %g", b, r0, r1,
                     per_point, want);
    }
    free(x);
}

/* A linear field binned on cells with a symmetric 2 x 2 sample in each: the cell means are the
 * field at the cell centres; two "snapshots" halve the counts and volumes. */
static void test_field_linear(void **state) {
    (void)state;
    enum { NX = 6, NY = 4 };
    gf_field f;
    assert_int_equal(gf_field_init(&f, NX, NY, 0.0, 0.6, -0.2, 0.2, 0.05), 0);
    double x[3 * 4 * NX * NY], v[3 * 4 * NX * NY], w[3 * 4 * NX * NY], rad[4 * NX * NY];
    size_t n = 0;
    for (int j = 0; j < NY; ++j)
        for (int i = 0; i < NX; ++i)
            for (int s = 0; s < 4; ++s) {
                double px = 0.05 + 0.1 * i + (s & 1 ? 0.02 : -0.02);
                double py = -0.15 + 0.1 * j + (s & 2 ? 0.03 : -0.03);
                double p[3] = {px, py, 0.01}, vel[3] = {2 * py, -px, 0.5}, om[3] = {0, 0, 10 * px};
                memcpy(x + 3 * n, p, sizeof p);
                memcpy(v + 3 * n, vel, sizeof vel);
                memcpy(w + 3 * n, om, sizeof om);
                rad[n++] = 0.01;
            }
    /* Outside the region: ignored. */
    double out_x[3] = {0.7, 0.0, 0.0}, out_v[3] = {99, 99, 99};
    gf_field_add(&f, n, x, v, w, rad);
    gf_field_add(&f, n, x, v, w, rad);
    gf_field_add(&f, 1, out_x, out_v, out_v, rad);
    double vx[NX * NY], vy[NX * NY], vz[NX * NY], vm[NX * NY], wm[NX * NY], cnt[NX * NY],
        fr[NX * NY];
    gf_field_result(&f, 2, vx, vy, vz, vm, wm, cnt, fr);
    double cell = 0.1 * 0.1 * 0.05, sphere = 4.0 / 3.0 * M_PI * 1e-6;
    for (int j = 0; j < NY; ++j)
        for (int i = 0; i < NX; ++i) {
            int c = j * NX + i;
            double xc = 0.05 + 0.1 * i, yc = -0.15 + 0.1 * j;
            GF_ASSERT_NEAR(vx[c], 2 * yc, 1e-12);
            GF_ASSERT_NEAR(vy[c], -xc, 1e-12);
            GF_ASSERT_NEAR(vz[c], 0.5, 1e-12);
            GF_ASSERT_NEAR(vm[c], sqrt(4 * yc * yc + xc * xc + 0.25), 1e-12);
            GF_ASSERT_NEAR(wm[c], 10 * xc, 1e-12);
            GF_ASSERT_NEAR(cnt[c], 4.0, 0.0);
            GF_ASSERT_NEAR(fr[c], 4 * sphere / cell, 1e-12);
        }
    gf_field_free(&f);
}

/* The grid that fits a region: square cells, 150 along the longer side; by cell size. */
static void test_fit_grid(void **state) {
    (void)state;
    int nx, ny;
    gf_field_fit_grid(0.15, 0.065, 150, &nx, &ny);
    assert_true(nx == 150 && ny == 65);
    gf_field_fit_grid(0.02, 0.15, 150, &nx, &ny);
    assert_true(nx == 20 && ny == 150);
    gf_field_fit_grid(1.0, 1e-6, 150, &nx, &ny);
    assert_true(nx == 150 && ny == 1);
    gf_field_fit_grid(0.065, 0.01, 150, &nx, &ny);
    assert_true(nx == 150 && ny == 23); /* 23.08 */
    assert_int_equal(gf_field_cell_grid(0.03, 0.013, 0.001, 100000, &nx, &ny), 0);
    assert_true(nx == 30 && ny == 13);
    assert_int_equal(gf_field_cell_grid(0.03, 0.0001, 0.001, 100000, &nx, &ny), 0);
    assert_true(nx == 30 && ny == 1);
    assert_int_equal(gf_field_cell_grid(1.0, 1.0, 1e-6, 100000, &nx, &ny), -1);
    assert_int_equal(gf_field_cell_grid(1.0, 1.0, 0.0, 100000, &nx, &ny), -1);
}

/* Binning in the x-z plane: particles at known x and z (y anywhere) with velocities along
 * known directions land in their cells, whatever their y. */
static void test_field_plane(void **state) {
    (void)state;
    enum { NX = 3, NZ = 2 };
    gf_field f;
    assert_int_equal(gf_field_init_plane(&f, 0, 2, NX, NZ, 0.0, 0.3, 0.0, 0.1, 0.5), 0);
    double x[3 * NX * NZ * 2], v[3 * NX * NZ * 2], w[3 * NX * NZ * 2], r[NX * NZ * 2];
    size_t n = 0;
    for (int k = 0; k < NZ; ++k)
        for (int i = 0; i < NX; ++i)
            for (int copy = 0; copy < 2; ++copy) {
                /* Two particles per cell, far apart in y, velocity i along x and k + 1 along z. */
                double p[3] = {0.05 + 0.1 * i, copy ? 0.45 : 0.01, 0.025 + 0.05 * k};
                double vel[3] = {(double)i, 0.0, (double)(k + 1)}, om[3] = {0, 0, 0};
                memcpy(x + 3 * n, p, sizeof p);
                memcpy(v + 3 * n, vel, sizeof vel);
                memcpy(w + 3 * n, om, sizeof om);
                r[n++] = 0.01;
            }
    gf_field_add(&f, n, x, v, w, r);
    double vx[NX * NZ], vy[NX * NZ], vz[NX * NZ], vm[NX * NZ], wm[NX * NZ], cnt[NX * NZ],
        fr[NX * NZ];
    gf_field_result(&f, 1, vx, vy, vz, vm, wm, cnt, fr);
    for (int k = 0; k < NZ; ++k)
        for (int i = 0; i < NX; ++i) {
            int c = k * NX + i;
            GF_ASSERT_NEAR(vx[c], i, 1e-15);
            GF_ASSERT_NEAR(vz[c], k + 1, 1e-15);
            GF_ASSERT_NEAR(cnt[c], 2, 0);
            /* Two spheres in a cell 0.1 x 0.05 across and 0.5 deep. */
            GF_ASSERT_NEAR(fr[c], 2 * 4.0 / 3.0 * M_PI * 1e-6 / (0.1 * 0.05 * 0.5), 1e-12);
        }
    gf_field_free(&f);
    assert_int_not_equal(gf_field_init_plane(&f, 1, 1, 2, 2, 0, 1, 0, 1, 1), 0);
}

/* The engine's mesh of walls and obstacles projected on a plane: a box gives the rectangle of
 * its extent along the plane's axes, a cylinder along the third axis its 32-gon of the right
 * radius, a tilted cylinder the hull of its rims; a wall across the box parallel to the third
 * axis the segment where it cuts the box, walls on the box's faces and walls across the plane
 * nothing. */
static void test_outline_projection(void **state) {
    (void)state;
    gf_walls walls;
    gf_walls_init(&walls);
    const double lo[3] = {0, 0, 0}, hi[3] = {0.3, 0.2, 0.1};
    const double blo[3] = {0.05, 0.04, 0.02}, bhi[3] = {0.09, 0.12, 0.07};
    const double c0[3] = {0.2, 0.1, 0.05}, zaxis[3] = {0, 0, 1};
    const double c1[3] = {0.15, 0.15, 0.05}, tilted[3] = {0.6, 0, 0.8};
    const double face_p[3] = {0, 0, 0}, face_n[3] = {0, 1, 0};       /* on the face y = 0 */
    const double cut_p[3] = {0.25, 0, 0}, cut_n[3] = {-0.6, 0.8, 0}; /* parallel to z */
    const double floor_n[3] = {0, 0.6, 0.8};                         /* across the x-y plane */
    GF_ASSERT_OK(gf_walls_add_box(&walls, blo, bhi, 0));
    GF_ASSERT_OK(gf_walls_add_cylinder(&walls, c0, zaxis, 0.03, 0.1, 0));
    GF_ASSERT_OK(gf_walls_add_cylinder(&walls, c1, tilted, 0.01, 0.05, 0));
    GF_ASSERT_OK(gf_walls_add(&walls, face_p, face_n, NULL, 0));
    GF_ASSERT_OK(gf_walls_add(&walls, cut_p, cut_n, NULL, 0));
    GF_ASSERT_OK(gf_walls_add(&walls, face_p, floor_n, NULL, 0));
    gf_geometry_mesh mesh;
    gf_geometry_mesh_init(&mesh);
    GF_ASSERT_OK(gf_geometry_mesh_build(&walls, lo, hi, &mesh));
    gf_snapshot_geometry g = {mesh.npoints, mesh.ncells, mesh.nconn, mesh.points,
                              mesh.conn,    mesh.kind,   mesh.body};
    gf_outlines o;
    const double plo[2] = {0, 0}, phi[2] = {0.3, 0.2};
    assert_int_equal(gf_outlines_project(&g, 0, 1, plo, phi, &o), 0);
    assert_int_equal(o.n, 4); /* box, two cylinders, the cutting wall */
    int seen_box = 0, seen_cyl = 0, seen_tilted = 0, seen_wall = 0;
    for (size_t k = 0; k < o.n; ++k) {
        size_t a = o.start[k], n = o.start[k + 1] - a;
        double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
        for (size_t p = a; p < a + n; ++p) {
            xmin = fmin(xmin, o.x[p]);
            xmax = fmax(xmax, o.x[p]);
            ymin = fmin(ymin, o.y[p]);
            ymax = fmax(ymax, o.y[p]);
        }
        if (n == 4 && o.closed[k]) { /* the box: its corners */
            seen_box++;
            GF_ASSERT_NEAR(xmin, blo[0], 1e-15);
            GF_ASSERT_NEAR(xmax, bhi[0], 1e-15);
            GF_ASSERT_NEAR(ymin, blo[1], 1e-15);
            GF_ASSERT_NEAR(ymax, bhi[1], 1e-15);
            for (size_t p = a; p < a + n; ++p)
                assert_true((o.x[p] == blo[0] || o.x[p] == bhi[0]) &&
                            (o.y[p] == blo[1] || o.y[p] == bhi[1]));
        } else if (n == 32 && o.closed[k]) { /* the upright cylinder: its rim */
            seen_cyl++;
            for (size_t p = a; p < a + n; ++p)
                GF_ASSERT_NEAR(hypot(o.x[p] - c0[0], o.y[p] - c0[1]), 0.03, 1e-12);
        } else if (o.closed[k]) {
            /* The tilted one: its axis projects to 0.6 of its length along x, each rim to an
             * ellipse of half-axes 0.8 r along x and r along y. */
            seen_tilted++;
            GF_ASSERT_NEAR(xmax - xmin, 0.6 * 0.05 + 2 * 0.8 * 0.01, 1e-3 * 0.01);
            GF_ASSERT_NEAR(ymax - ymin, 2 * 0.01, 1e-2 * 0.01); /* a 32-gon's vertices */
            GF_ASSERT_NEAR(0.5 * (xmin + xmax), c1[0], 1e-12);
        } else {
            /* The wall through (0.25, 0) along (0.8, 0.6): from (0.25, 0) to (0.3, 0.0375). */
            seen_wall++;
            assert_int_equal(n, 2);
            GF_ASSERT_NEAR(xmin, 0.25, 1e-12);
            GF_ASSERT_NEAR(xmax, 0.3, 1e-12);
            GF_ASSERT_NEAR(ymin, 0.0, 1e-12);
            GF_ASSERT_NEAR(ymax, 0.0375, 1e-12);
        }
    }
    assert_true(seen_box == 1 && seen_cyl == 1 && seen_tilted == 1 && seen_wall == 1);
    gf_outlines_free(&o);
    /* In the x-z plane: the box's x and z extent; the upright cylinder a rectangle. */
    const double qlo[2] = {0, 0}, qhi[2] = {0.3, 0.1};
    assert_int_equal(gf_outlines_project(&g, 0, 2, qlo, qhi, &o), 0);
    int rects = 0;
    for (size_t k = 0; k < o.n; ++k) {
        size_t a = o.start[k], n = o.start[k + 1] - a;
        if (n != 4)
            continue;
        rects++;
        for (size_t p = a; p < a + n; ++p)
            assert_true(((o.x[p] == blo[0] || o.x[p] == bhi[0]) &&
                         (o.y[p] == blo[2] || o.y[p] == bhi[2])) ||
                        (fabs(fabs(o.x[p] - c0[0]) - 0.03) < 1e-12 &&
                         (fabs(o.y[p]) < 1e-12 || fabs(o.y[p] - 0.1) < 1e-12)));
    }
    assert_int_equal(rects, 2);
    gf_outlines_free(&o);
    gf_geometry_mesh_free(&mesh);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_factor),        cmocka_unit_test(test_rdf_ideal_gas),
        cmocka_unit_test(test_rdf_simple_cubic),   cmocka_unit_test(test_field_linear),
        cmocka_unit_test(test_fit_grid),           cmocka_unit_test(test_field_plane),
        cmocka_unit_test(test_outline_projection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
