/* The computations behind the post-processing tools (issue 7) on synthetic data with known
 * answers: g(r) of an ideal gas and of a simple-cubic lattice, the edge correction, velocity-field
 * binning, and the PNGs of the plots decoded back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/analysis.h"
#include "lib/plot.h"
#include "test_png.h"

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

/* The heat map of the default 150 x 65 grid over the paper's 15 x 6.5 cm channel: 810 x 360
 * pixels (600 x 260 map, 4 pixels per cell), each cell in its colour, empty cells grey; the line
 * plot has the size asked for. */
static void test_png_plots(void **state) {
    (void)state;
    char dir[] = "/tmp/gf_test_png_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    enum { NX = 150, NY = 65 };
    static double v[NX * NY];
    for (int c = 0; c < NX * NY; ++c)
        v[c] = (double)(c % NX) / (NX - 1);
    v[10 * NX + 20] = NAN;
    snprintf(path, sizeof path, "%s/map.png", dir);
    assert_int_equal(
        gf_plot_heatmap(path, "t", "x (cm)", "y (cm)", "|v|", v, NX, NY, 0, 15, 0, 6.5, 0.0, 1.0),
        0);
    const int w = 810;
    uint8_t *rgb = gf_test_read_png(path, w, 360);
    int mw, mh;
    gf_plot_heatmap_size(NX, 15, 6.5, &mw, &mh);
    assert_int_equal(mw, 600);
    assert_int_equal(mh, 260);
    const uint8_t grey[3] = {200, 200, 200};
    for (int j = 0; j < NY; j += 8)
        for (int i = 0; i < NX; i += 7) {
            /* Cell centre: 4 px per cell in x; rows counted from the top, y up. */
            int px = GF_HEATMAP_LEFT + 4 * i + 2, py = GF_HEATMAP_TOP + 4 * (NY - 1 - j) + 2;
            uint8_t want[3];
            gf_colormap(v[j * NX + i], want);
            gf_test_expect_pixel(rgb, w, px, py, want);
        }
    gf_test_expect_pixel(rgb, w, GF_HEATMAP_LEFT + 4 * 20 + 1,
                         GF_HEATMAP_TOP + 4 * (NY - 1 - 10) + 1, grey);
    free(rgb);

    double xs[50], ys[50];
    for (int i = 0; i < 50; ++i) {
        xs[i] = 0.1 * i;
        ys[i] = sin(xs[i]);
    }
    gf_series s = {"sin", xs, ys, 50};
    double one = 1.0;
    snprintf(path, sizeof path, "%s/lines.png", dir);
    assert_int_equal(gf_plot_lines(path, 640, 400, "t", "x", "y", &s, 1, 0, 0, &one), 0);
    free(gf_test_read_png(path, 640, 400));

    /* Not a PNG: an error, not a crash. */
    snprintf(path, sizeof path, "%s/junk.png", dir);
    FILE *f = fopen(path, "w");
    fputs("not a png", f);
    fclose(f);
    int jw, jh;
    uint8_t *junk = NULL;
    char err[256];
    assert_int_not_equal(gf_png_read(path, &jw, &jh, &junk, err, sizeof err), 0);
    assert_null(junk);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_factor),      cmocka_unit_test(test_rdf_ideal_gas),
        cmocka_unit_test(test_rdf_simple_cubic), cmocka_unit_test(test_field_linear),
        cmocka_unit_test(test_png_plots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
