/* The joint manifold kernel (issue 31): for one point it is the paper's kernel; a box sliding
 * flat on a floor loses exactly mu m g dt of momentum per step (Coulomb's law, the closed form of
 * MANIFOLD.md) under both friction models and does not turn; a slender box pushed hard keeps its
 * trailing corners unloaded and its friction at what its leading corners can balance;
 * random multi-point problems are feasible, complementary and no feasible perturbation lowers
 * the objective. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "granflow/contact_kernel.h"
#include "granflow/manifold_kernel.h"
#include "core/vec.h"
#include "test_util.h"

#define MAXP GF_MANIFOLD_KERNEL_MAX

/* A rigid body (mass m, diagonal inertia I in world axes) against a fixed body, touching at
 * points p (relative to its centre) with normals n: the Delassus matrix of the points in their
 * frames (n, t, o) and the frames, as the solver builds them. */
typedef struct {
    int np;
    double m, I[3];
    double r[MAXP][3], e[MAXP][3][3]; /* lever arm; frame rows n, t, o */
    double A[9 * MAXP * MAXP];
} body_points;

static void frame(const double n[3], double e[3][3]) {
    double a[3] = {fabs(n[0]) < 0.9 ? 1.0 : 0.0, fabs(n[0]) < 0.9 ? 0.0 : 1.0, 0.0}, t[3], o[3];
    gf_cross(n, a, t);
    double l = sqrt(gf_dot(t, t));
    for (int d = 0; d < 3; ++d)
        t[d] /= l;
    gf_cross(n, t, o);
    memcpy(e[0], n, sizeof e[0]);
    memcpy(e[1], t, sizeof e[1]);
    memcpy(e[2], o, sizeof e[2]);
}

static void delassus(body_points *B) {
    int n3 = 3 * B->np;
    for (int i = 0; i < B->np; ++i)
        for (int a = 0; a < 3; ++a)
            for (int j = 0; j < B->np; ++j)
                for (int c = 0; c < 3; ++c) {
                    double ra[3], rc[3];
                    gf_cross(B->r[i], B->e[i][a], ra);
                    gf_cross(B->r[j], B->e[j][c], rc);
                    double v = gf_dot(B->e[i][a], B->e[j][c]) / B->m;
                    for (int d = 0; d < 3; ++d)
                        v += ra[d] * rc[d] / B->I[d];
                    B->A[(3 * i + a) * n3 + 3 * j + c] = v;
                }
}

/* Minus the relative velocity at each point for body velocities v, w. */
static void rhs(const body_points *B, const double v[3], const double w[3], double *b) {
    for (int i = 0; i < B->np; ++i) {
        double u[3], wr[3];
        gf_cross(w, B->r[i], wr);
        for (int d = 0; d < 3; ++d)
            u[d] = v[d] + wr[d];
        for (int a = 0; a < 3; ++a)
            b[3 * i + a] = -gf_dot(u, B->e[i][a]);
    }
}

/* The body's velocities after the impulses x. */
static void after(const body_points *B, const double v[3], const double w[3], const double *x,
                  double v1[3], double w1[3]) {
    double P[3] = {0, 0, 0}, T[3] = {0, 0, 0};
    for (int i = 0; i < B->np; ++i) {
        double f[3], rf[3];
        for (int d = 0; d < 3; ++d)
            f[d] = x[3 * i] * B->e[i][0][d] + x[3 * i + 1] * B->e[i][1][d] +
                   x[3 * i + 2] * B->e[i][2][d];
        gf_cross(B->r[i], f, rf);
        for (int d = 0; d < 3; ++d) {
            P[d] += f[d];
            T[d] += rf[d];
        }
    }
    for (int d = 0; d < 3; ++d) {
        v1[d] = v[d] + P[d] / B->m;
        w1[d] = w[d] + T[d] / B->I[d];
    }
}

/* A box of half extents h (density 1000) resting on a floor z = const, its bottom corners the
 * points. */
static void box_on_floor(body_points *B, const double h[3]) {
    memset(B, 0, sizeof *B);
    B->np = 4;
    B->m = 8.0 * h[0] * h[1] * h[2] * 1000.0;
    B->I[0] = B->m * (h[1] * h[1] + h[2] * h[2]) / 3.0;
    B->I[1] = B->m * (h[0] * h[0] + h[2] * h[2]) / 3.0;
    B->I[2] = B->m * (h[0] * h[0] + h[1] * h[1]) / 3.0;
    const double up[3] = {0, 0, 1};
    for (int i = 0; i < 4; ++i) {
        B->r[i][0] = (i & 1) ? h[0] : -h[0];
        B->r[i][1] = (i & 2) ? h[1] : -h[1];
        B->r[i][2] = -h[2];
        frame(up, B->e[i]);
    }
    delassus(B);
}

typedef gf_status (*joint_fn)(int, const double *, const double *, const double *, const double *,
                              int, double *);

static gf_status maxdiss(int m, const double *A, const double *b, const double *mu,
                         const double *x0, int exact, double *x) {
    return gf_manifold_kernel_maxdiss(m, A, b, mu, x0, NULL, exact, x);
}

/* Sliding along `dir` at 2 m/s with gravity over dt: the speed drops by mu g dt exactly, the body
 * neither tips, turns nor leaves the floor, and no corner moves into it. */
static void check_sliding_box(joint_fn kernel, const double h[3], const double dir[2]) {
    body_points B;
    box_on_floor(&B, h);
    const double g = 9.81, dt = 1e-3, mu[4] = {0.5, 0.5, 0.5, 0.5};
    double v[3] = {2.0 * dir[0], 2.0 * dir[1], -g * dt}, w[3] = {0, 0, 0};
    double b[12], x0[12] = {0}, x[12], v1[3], w1[3];
    rhs(&B, v, w, b);
    /* Twice: from zero, then from its own answer (the warm start of the next sweep). */
    for (int pass = 0; pass < 2; ++pass) {
        GF_ASSERT_OK(kernel(4, B.A, b, mu, x0, 1, x));
        memcpy(x0, x, sizeof x);
    }
    after(&B, v, w, x, v1, w1);
    double speed = hypot(v1[0], v1[1]);
    if (!(fabs(speed - (2.0 - 0.5 * g * dt)) <= 1e-11))
        fail_msg("box %g x %g x %g along (%g, %g): speed %.17g after a step, Coulomb's law %.17g",
                 h[0], h[1], h[2], dir[0], dir[1], speed, 2.0 - 0.5 * g * dt);
    GF_ASSERT_NEAR(v1[0] * dir[1] - v1[1] * dir[0], 0.0, 1e-13); /* no heading change */
    GF_ASSERT_NEAR(v1[2], 0.0, 1e-13);
    for (int d = 0; d < 3; ++d)
        GF_ASSERT_NEAR(w1[d], 0.0, 1e-12);
    for (int i = 0; i < 4; ++i) {
        double vn = -b[3 * i];
        for (int l = 0; l < 12; ++l)
            vn += B.A[3 * i * 12 + l] * x[l];
        assert_true(vn >= -1e-13);
        assert_true(x[3 * i] >= 0.0);
        assert_true(hypot(x[3 * i + 1], x[3 * i + 2]) <= 0.5 * x[3 * i] * (1 + 1e-12) + 1e-300);
    }
}

static void test_sliding_box(void **state) {
    (void)state;
    const double axis[2] = {1, 0}, diag[2] = {M_SQRT1_2, M_SQRT1_2}, odd[2] = {0.6, -0.8};
    const double shapes[3][3] = {{0.1, 0.1, 0.025}, {0.1, 0.1, 0.1}, {0.1, 0.1, 0.15}};
    for (int k = 0; k < 3; ++k) {
        check_sliding_box(maxdiss, shapes[k], axis);
        check_sliding_box(maxdiss, shapes[k], diag);
        check_sliding_box(maxdiss, shapes[k], odd);
        check_sliding_box(gf_manifold_kernel_coulomb, shapes[k], axis);
        check_sliding_box(gf_manifold_kernel_coulomb, shapes[k], diag);
    }
}

/* A box at rest under gravity stops exactly (v' = 0, w' = 0): static friction is not needed,
 * the normal impulses carry m g dt between them. Pushed sideways below mu g it sticks. */
static void test_resting_box(void **state) {
    (void)state;
    const double h[3] = {0.1, 0.05, 0.08}, mu[4] = {0.5, 0.5, 0.5, 0.5};
    body_points B;
    box_on_floor(&B, h);
    double v[3] = {0.3 * 9.81e-3, 0.0, -9.81e-3}, w[3] = {0, 0, 0};
    double b[12], x0[12] = {0}, x[12], v1[3], w1[3];
    rhs(&B, v, w, b);
    GF_ASSERT_OK(gf_manifold_kernel_maxdiss(4, B.A, b, mu, x0, NULL, 1, x));
    after(&B, v, w, x, v1, w1);
    for (int d = 0; d < 3; ++d) {
        GF_ASSERT_NEAR(v1[d], 0.0, 1e-13);
        GF_ASSERT_NEAR(w1[d], 0.0, 1e-12);
    }
    double sum = 0.0;
    for (int i = 0; i < 4; ++i)
        sum += x[3 * i];
    GF_ASSERT_NEAR(sum, B.m * 9.81e-3, 1e-12 * B.m);
}

/* A slender box (hx/hz = 0.2) sliding fast with mu = 1: friction mu N would turn it over its
 * leading edge, but its trailing corners cannot pull, so the most dissipative impulse keeps the
 * body from pitching with the friction that the load on the leading corners can balance,
 * F = (hx/hz) N: the leading corners carry the load, the trailing ones stay in touch unloaded. */
static void test_slender_box_pushed(void **state) {
    (void)state;
    const double h[3] = {0.02, 0.1, 0.1}, mu[4] = {1, 1, 1, 1};
    body_points B;
    box_on_floor(&B, h);
    double v[3] = {3.0, 0.0, -9.81e-3}, w[3] = {0, 0, 0};
    double b[12], x0[12] = {0}, x[12], v1[3], w1[3];
    rhs(&B, v, w, b);
    GF_ASSERT_OK(gf_manifold_kernel_maxdiss(4, B.A, b, mu, x0, NULL, 1, x));
    double N = 0.0, F[2] = {0.0, 0.0};
    for (int i = 0; i < 4; ++i) {
        double vn = -b[3 * i];
        for (int l = 0; l < 12; ++l)
            vn += B.A[3 * i * 12 + l] * x[l];
        assert_true(fabs(vn) <= 1e-12);
        if (B.r[i][0] < 0.0)
            assert_true(x[3 * i] <= 1e-12 * B.m * 9.81e-3);
        N += x[3 * i];
        for (int d = 0; d < 2; ++d)
            F[d] += x[3 * i + 1] * B.e[i][1][d] + x[3 * i + 2] * B.e[i][2][d];
    }
    GF_ASSERT_NEAR(N, B.m * 9.81e-3, 1e-12 * N);
    GF_ASSERT_NEAR(F[0], -(h[0] / h[2]) * N, 1e-9 * N);
    GF_ASSERT_NEAR(F[1], 0.0, 1e-12 * N);
    after(&B, v, w, x, v1, w1);
    for (int d = 0; d < 3; ++d)
        GF_ASSERT_NEAR(w1[d], 0.0, 1e-9);
}

/* A random body (mass, diagonal inertia) touching a fixed body at np points near its underside
 * with random normals, and random velocities: b of the pair's contact problem. */
static void random_contact(uint64_t *rng, body_points *B, int np, double *b, double *mu) {
    memset(B, 0, sizeof *B);
    B->np = np;
    B->m = gf_test_uniform(rng, 0.5, 2.0);
    for (int d = 0; d < 3; ++d)
        B->I[d] = gf_test_uniform(rng, 0.02, 0.2);
    for (int i = 0; i < np; ++i) {
        double n[3];
        for (int d = 0; d < 3; ++d) {
            B->r[i][d] = gf_test_uniform(rng, -0.3, 0.3);
            n[d] = gf_test_uniform(rng, -0.3, 0.3);
        }
        n[2] += 1.0;
        double l = sqrt(gf_dot(n, n));
        for (int d = 0; d < 3; ++d)
            n[d] /= l;
        frame(n, B->e[i]);
        mu[i] = gf_test_uniform(rng, 0.1, 1.0);
    }
    delassus(B);
    double v[3], w[3];
    for (int d = 0; d < 3; ++d) {
        v[d] = gf_test_uniform(rng, -1, 1);
        w[d] = gf_test_uniform(rng, -2, 2);
    }
    v[2] -= 0.5;
    rhs(B, v, w, b);
}

/* For one point the joint kernel is the paper's: the analytic kernel's answer. */
static void test_one_point_is_the_paper_kernel(void **state) {
    (void)state;
    uint64_t rng = 77;
    for (int trial = 0; trial < 2000; ++trial) {
        body_points B;
        double b[3], mu, xa[3], xj[3], x0[3] = {0, 0, 0};
        random_contact(&rng, &B, 1, b, &mu);
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(B.A, b, mu, xa));
        GF_ASSERT_OK(gf_manifold_kernel_maxdiss(1, B.A, b, &mu, x0, NULL, 1, xj));
        double scale = fmax(fabs(xa[0]), 1e-300);
        for (int k = 0; k < 3; ++k)
            if (!(fabs(xj[k] - xa[k]) <= 1e-9 * scale))
                fail_msg("trial %d: x[%d] = %.17g, analytic %.17g", trial, k, xj[k], xa[k]);
    }
}

/* Random pairs of bodies touching at 2-4 points with random normals: the answer is feasible
 * and complementary, and no feasible perturbation (one that keeps the loaded points' normal
 * velocities at zero and stays in the cones) lowers the objective. Where no answer exists (a
 * wedged body), the kernel fails instead of answering. */
static double objective(int n3, const double *A, const double *b, const double *x) {
    double f = 0.0;
    for (int k = 0; k < n3; ++k) {
        double ax = 0.0;
        for (int l = 0; l < n3; ++l)
            ax += A[k * n3 + l] * x[l];
        f += 0.5 * x[k] * ax - x[k] * b[k];
    }
    return f;
}

static void test_random_manifolds(void **state) {
    (void)state;
    uint64_t rng = 4242;
    int perturbed = 0, unsolved = 0;
    for (int trial = 0; trial < 400; ++trial) {
        body_points B;
        double mu[MAXP], b[3 * MAXP], x0[3 * MAXP] = {0}, x[3 * MAXP];
        random_contact(&rng, &B, 2 + trial % 3, b, mu);
        int n3 = 3 * B.np;
        if (gf_manifold_kernel_maxdiss(B.np, B.A, b, mu, x0, NULL, 1, x) != GF_OK) {
            ++unsolved;
            gf_error_clear();
            continue;
        }
        double vn[MAXP];
        int S[MAXP], s = 0;
        for (int i = 0; i < B.np; ++i) {
            vn[i] = -b[3 * i];
            for (int l = 0; l < n3; ++l)
                vn[i] += B.A[3 * i * n3 + l] * x[l];
            if (!(vn[i] >= -1e-9))
                fail_msg("trial %d: point %d approaches at %g", trial, i, vn[i]);
            if (!(hypot(x[3 * i + 1], x[3 * i + 2]) <= mu[i] * x[3 * i] * (1 + 1e-12) + 1e-300))
                fail_msg("trial %d: point %d outside its cone", trial, i);
            if (x[3 * i] > 1e-12) {
                if (!(fabs(vn[i]) <= 1e-9))
                    fail_msg("trial %d: loaded point %d separates at %g", trial, i, vn[i]);
                S[s++] = i;
            }
        }
        if (s == 0)
            continue;
        /* Perturbations of the loaded points' impulses, normal parts corrected so the loaded
         * points' normal velocities stay 0 (least squares by normal equations, G = N N^T). */
        double f0 = objective(n3, B.A, b, x);
        for (int p = 0; p < 200; ++p) {
            double dx[3 * MAXP] = {0};
            for (int i = 0; i < s; ++i)
                for (int a = 0; a < 3; ++a)
                    dx[3 * S[i] + a] = gf_test_uniform(&rng, -1, 1) * x[3 * S[i]];
            /* Correct with normal components only: M c = -N dx, M_ij = A(n_i, n_j). */
            double M[MAXP][MAXP], r[MAXP];
            for (int i = 0; i < s; ++i) {
                r[i] = 0.0;
                for (int l = 0; l < n3; ++l)
                    r[i] -= B.A[3 * S[i] * n3 + l] * dx[l];
                for (int j = 0; j < s; ++j)
                    M[i][j] = B.A[3 * S[i] * n3 + 3 * S[j]] + (i == j ? 1e-14 : 0.0);
            }
            /* Gaussian elimination (s <= 4, M SPD up to redundancy). */
            for (int c = 0; c < s; ++c)
                for (int k = c + 1; k < s; ++k) {
                    double f = M[k][c] / M[c][c];
                    for (int l = c; l < s; ++l)
                        M[k][l] -= f * M[c][l];
                    r[k] -= f * r[c];
                }
            for (int c = s - 1; c >= 0; --c) {
                for (int l = c + 1; l < s; ++l)
                    r[c] -= M[c][l] * r[l];
                r[c] /= M[c][c];
            }
            for (int i = 0; i < s; ++i)
                dx[3 * S[i]] += r[i];
            for (double tau = 1e-3; tau <= 1.0; tau *= 10.0) {
                double xp[3 * MAXP];
                int ok = 1;
                for (int k = 0; k < n3; ++k)
                    xp[k] = x[k] + tau * dx[k];
                for (int i = 0; i < B.np && ok; ++i) {
                    ok = hypot(xp[3 * i + 1], xp[3 * i + 2]) <= mu[i] * xp[3 * i];
                    double vni = -b[3 * i];
                    for (int l = 0; l < n3; ++l)
                        vni += B.A[3 * i * n3 + l] * xp[l];
                    ok = ok && fabs(vni) < 1e-9 + (x[3 * i] > 1e-12 ? 0.0 : 1e300) && vni >= -1e-9;
                }
                if (!ok)
                    continue;
                ++perturbed;
                double fp = objective(n3, B.A, b, xp);
                if (!(fp >= f0 - 1e-9 * fabs(f0)))
                    fail_msg("trial %d: a feasible perturbation lowers the objective %.17g -> "
                             "%.17g",
                             trial, f0, fp);
            }
        }
    }
    /* Random normals tilted by up to 17 degrees at random points wedge the body now and then:
     * there the kernel must say so (the solver then solves the points one by one). */
    assert_true(perturbed > 1000);
    assert_true(unsolved <= 12);
}

/* Boxes of random proportions lying on a floor, moving and turning at random (towards the floor,
 * away from it, tipping): always solved, no corner approaches the floor, a loaded corner does
 * not leave it, the body's velocity changes only by what the loaded corners push. */
static void test_random_boxes_on_floor(void **state) {
    (void)state;
    uint64_t rng = 99;
    for (int trial = 0; trial < 2000; ++trial) {
        const double h[3] = {gf_test_uniform(&rng, 0.01, 0.2), gf_test_uniform(&rng, 0.01, 0.2),
                             gf_test_uniform(&rng, 0.01, 0.2)};
        body_points B;
        box_on_floor(&B, h);
        double v[3], w[3], mu[4], b[12], x0[12] = {0}, x[12];
        for (int d = 0; d < 3; ++d) {
            v[d] = gf_test_uniform(&rng, -1, 1);
            w[d] = gf_test_uniform(&rng, -5, 5);
        }
        v[2] -= 0.3;
        for (int i = 0; i < 4; ++i)
            mu[i] = trial % 2 ? 0.5 : gf_test_uniform(&rng, 0.05, 1.5);
        rhs(&B, v, w, b);
        GF_ASSERT_OK(gf_manifold_kernel_maxdiss(4, B.A, b, mu, x0, NULL, 1, x));
        double vscale = fmax(hypot(v[0], hypot(v[1], v[2])), 1.0);
        for (int i = 0; i < 4; ++i) {
            double vn = -b[3 * i];
            for (int l = 0; l < 12; ++l)
                vn += B.A[3 * i * 12 + l] * x[l];
            if (!(vn >= -1e-9 * vscale))
                fail_msg("trial %d: corner %d approaches at %g", trial, i, vn);
            if (x[3 * i] > 0.0 && !(fabs(vn) <= 1e-9 * vscale))
                fail_msg("trial %d: loaded corner %d leaves at %g", trial, i, vn);
            assert_true(hypot(x[3 * i + 1], x[3 * i + 2]) <= mu[i] * x[3 * i] * (1 + 1e-12));
        }
    }
}

static void test_bad_input(void **state) {
    (void)state;
    double A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, b[3] = {NAN, 0, 0}, mu = 0.5, x0[3] = {0}, x[3];
    assert_int_equal(gf_manifold_kernel_maxdiss(1, A, b, &mu, x0, NULL, 1, x), GF_ERR_NUMERIC);
    assert_int_equal(gf_manifold_kernel_coulomb(1, A, b, &mu, x0, 1, x), GF_ERR_NUMERIC);
    b[0] = 1.0;
    mu = -1.0;
    assert_int_equal(gf_manifold_kernel_maxdiss(1, A, b, &mu, x0, NULL, 1, x), GF_ERR_NUMERIC);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sliding_box),
        cmocka_unit_test(test_resting_box),
        cmocka_unit_test(test_slender_box_pushed),
        cmocka_unit_test(test_one_point_is_the_paper_kernel),
        cmocka_unit_test(test_random_manifolds),
        cmocka_unit_test(test_random_boxes_on_floor),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
