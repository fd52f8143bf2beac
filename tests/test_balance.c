/* Load balancing's cut choice (balance.h) against closed forms, and ownership under moved cuts
 * (decomp.h) against a brute-force scan of the slabs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par/balance.h"
#include "par/decomp.h"
#include "test_util.h"

/* Cuts equally spaced over [lo, hi]. */
static void even(double lo, double hi, int parts, double *cuts) {
    for (int k = 0; k <= parts; ++k)
        cuts[k] = lo + (hi - lo) * k / parts;
}

/* A linear density (the work in bin b is 2 b + 1, a cumulative of x^2 at bin edges) is cut at
 * its quantiles x_k = L sqrt(k / P), exactly at bin edges where those fall on one; repeated
 * balancings from equal cuts get there, each moving a cut at most half way into a neighbour. */
static void test_linear_density_quantiles(void **state) {
    (void)state;
    enum { P = 4, NB = 32 * P };
    const double L = 2.0;
    int64_t count[NB];
    for (int b = 0; b < NB; ++b)
        count[b] = 2 * b + 1;
    double old[P + 1], cuts[P + 1];
    even(0.0, L, P, old);
    for (int round = 0; round < 20; ++round) {
        int moved = gf_balance_cuts(count, NB, 0.0, L, P, old, 0.01, cuts);
        for (int k = 1; k < P; ++k) {
            /* Never past half of an old neighbour slab. */
            assert_true(cuts[k] >= 0.5 * (old[k - 1] + old[k]) - 1e-15);
            assert_true(cuts[k] <= 0.5 * (old[k] + old[k + 1]) + 1e-15);
        }
        if (!moved)
            break;
        memcpy(old, cuts, sizeof old);
    }
    const double bw = L / NB;
    for (int k = 1; k < P; ++k) {
        double exact = L * sqrt((double)k / P);
        /* Within a bin: the density is taken as uniform within one. */
        assert_true(fabs(cuts[k] - exact) <= bw);
    }
    assert_true(cuts[0] == 0.0 && cuts[P] == L);
    /* The work of each slab, summed bin by bin (cuts between bin edges split a bin pro rata):
     * equal to a bin's work. */
    double total = (double)NB * NB, share = total / P;
    for (int k = 0; k < P; ++k) {
        double w = 0.0;
        for (int b = 0; b < NB; ++b) {
            double a = fmax(b * bw, cuts[k]), e = fmin((b + 1) * bw, cuts[k + 1]);
            if (e > a)
                w += (double)count[b] * (e - a) / bw;
        }
        assert_true(fabs(w - share) <= 2.0 * NB + 1.0);
    }
}

/* All the work in the first bin: the cuts pile up against it, each slab min_width thick, the
 * last slab the rest (the closed form lo + k w after enough balancings). */
static void test_min_width_holds(void **state) {
    (void)state;
    enum { P = 5, NB = 32 * P };
    const double lo = -1.0, hi = 3.0, w = 0.3;
    int64_t count[NB] = {0};
    count[0] = 1000;
    double old[P + 1], cuts[P + 1];
    even(lo, hi, P, old);
    for (int round = 0; round < 60; ++round) {
        if (!gf_balance_cuts(count, NB, lo, hi, P, old, w, cuts))
            break;
        for (int k = 0; k < P; ++k)
            assert_true(cuts[k + 1] - cuts[k] >= w * (1.0 - 1e-12));
        memcpy(old, cuts, sizeof old);
    }
    for (int k = 1; k < P; ++k)
        assert_true(fabs(old[k] - (lo + k * w)) < 1e-12);
}

/* Nothing to balance, or no room: the old cuts stay. */
static void test_cuts_kept(void **state) {
    (void)state;
    enum { P = 3, NB = 32 * P };
    int64_t empty[NB] = {0}, some[NB];
    for (int b = 0; b < NB; ++b)
        some[b] = b % 7;
    double old[P + 1] = {0.0, 0.2, 0.7, 1.0}, cuts[P + 1];
    assert_int_equal(gf_balance_cuts(empty, NB, 0.0, 1.0, P, old, 0.1, cuts), 0);
    assert_memory_equal(cuts, old, sizeof old);
    /* Three slabs of at least 0.4 do not fit into 1. */
    assert_int_equal(gf_balance_cuts(some, NB, 0.0, 1.0, P, old, 0.4, cuts), 0);
    assert_memory_equal(cuts, old, sizeof old);
}

/* Owners under moved cuts: the slab whose lower cut is at or below a coordinate, by a scan, for
 * random points and every cut itself (a point on a cut belongs to the slab above); ends clamp,
 * periodic axes wrap first, and a non-increasing set of cuts is refused. */
static void test_owner_under_cuts(void **state) {
    (void)state;
    const int dims[3] = {5, 3, 1}, per[3] = {1, 0, 0}, coords[3] = {2, 1, 0};
    const double lo[3] = {0, -1, 0}, hi[3] = {1, 2, 1};
    gf_decomp d;
    gf_decomp_setup(&d, dims, per, coords, lo, hi);
    d.rank_of = NULL;
    const double cx[6] = {0, 0.05, 0.1, 0.55, 0.6, 1}, cy[4] = {-1, -0.9, 1.5, 2};
    GF_ASSERT_OK(gf_decomp_set_cuts(&d, 0, cx));
    GF_ASSERT_OK(gf_decomp_set_cuts(&d, 1, cy));
    assert_true(d.sub_lo[0] == 0.1 && d.sub_hi[0] == 0.55);
    assert_true(d.sub_lo[1] == -0.9 && d.sub_hi[1] == 1.5);
    uint64_t rng = 7;
    for (int t = 0; t < 20000; ++t) {
        double x = gf_test_uniform(&rng, -0.5, 1.5), y = gf_test_uniform(&rng, -1.5, 2.5);
        if (t < 6)
            x = cx[t];
        if (t < 4)
            y = cy[t];
        double xw = x - floor(x); /* the periodic image in [0, 1) */
        int ex = 0, ey = 0;
        for (int k = 0; k < 5; ++k)
            if (xw >= cx[k])
                ex = k;
        for (int k = 0; k < 3; ++k)
            if (y >= cy[k])
                ey = k;
        assert_int_equal(gf_decomp_coord(&d, 0, x), ex);
        assert_int_equal(gf_decomp_coord(&d, 1, y), ey);
    }
    assert_int_equal(gf_decomp_coord(&d, 0, NAN), 0);
    /* Unwrapped (the region owner's lookup): clamped to the first and last slab. */
    assert_int_equal(gf_decomp_slab(&d, 0, 1.25), 4);
    assert_int_equal(gf_decomp_slab(&d, 0, -0.2), 0);
    assert_int_equal(gf_decomp_slab(&d, 0, 0.57), 3);
    /* Slabs of 0.05 along x are too thin for a range of 0.1. */
    assert_int_equal(gf_decomp_check_range(&d, 0.1), GF_ERR_INPUT);
    GF_ASSERT_OK(gf_decomp_check_range(&d, 0.049));
    const double bad[6] = {0, 0.3, 0.3, 0.5, 0.6, 1}, open[6] = {0, 0.1, 0.2, 0.5, 0.6, 0.9};
    assert_int_equal(gf_decomp_set_cuts(&d, 0, bad), GF_ERR_INPUT);
    assert_int_equal(gf_decomp_set_cuts(&d, 0, open), GF_ERR_INPUT);
    assert_true(gf_decomp_cut(&d, 0, 3) == 0.55); /* unchanged by the refusals */
    gf_decomp_free(&d);
}

/* An axis whose slabs of the minimum width do not fit is named (the run warns of it). */
static void test_blocked_axis(void **state) {
    (void)state;
    const int dims[3] = {1, 4, 3}, per[3] = {0, 0, 0}, coords[3] = {0, 0, 0};
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 1.0, 0.5};
    gf_decomp d;
    gf_decomp_setup(&d, dims, per, coords, lo, hi);
    d.rank_of = NULL;
    assert_int_equal(gf_balance_blocked_axis(&d, 0.16), -1);
    assert_int_equal(gf_balance_blocked_axis(&d, 0.2), 2); /* 3 x 0.2 > 0.5; x is not cut */
    assert_int_equal(gf_balance_blocked_axis(&d, 0.3), 1);
    gf_decomp_free(&d);
}

/* The histogram: a unit at each position lands in the bin of its wrapped coordinate. */
static void test_histogram_bins(void **state) {
    (void)state;
    const int dims[3] = {2, 1, 3}, per[3] = {1, 0, 0}, coords[3] = {0, 0, 0};
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 3};
    gf_decomp d;
    gf_decomp_setup(&d, dims, per, coords, lo, hi);
    d.rank_of = NULL;
    gf_balance b;
    GF_ASSERT_OK(gf_balance_init(&b, &d));
    assert_int_equal(b.nbins[0], 64);
    assert_int_equal(b.nbins[1], 0);
    assert_int_equal(b.nbins[2], 96);
    assert_int_equal(gf_balance_size(&b), 160);
    const double x1[3] = {1.25, 0.5, 1.5}, x2[3] = {-0.01, 0.5, 5.0};
    gf_balance_add(&b, &d, x1, 3);
    gf_balance_add(&b, &d, x2, 2);
    assert_int_equal(b.count[0][16], 3); /* 1.25 wraps to 0.25 */
    assert_int_equal(b.count[0][63], 2); /* -0.01 wraps to 0.99 */
    assert_int_equal(b.count[2][48], 3);
    assert_int_equal(b.count[2][95], 2); /* beyond the box: the last bin */
    gf_balance_clear(&b);
    for (int k = 0; k < gf_balance_size(&b); ++k)
        assert_int_equal(b.bins[k], 0);
    gf_balance_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_density_quantiles),
        cmocka_unit_test(test_min_width_holds),
        cmocka_unit_test(test_cuts_kept),
        cmocka_unit_test(test_owner_under_cuts),
        cmocka_unit_test(test_histogram_bins),
        cmocka_unit_test(test_blocked_axis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
