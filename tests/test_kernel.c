/* The analytic maximum-dissipation kernel (issue 3): the paper's reference problems, feasibility
 * and optimality against a dense boundary search on thousands of random problems over many
 * magnitudes, scale invariance, continuity at the case boundaries, the sphere fast path, the
 * paper's Appendix A coefficients, and bad input. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "contact_kernel_internal.h"
#include "granflow/contact_kernel.h"
#include "test_util.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */

static void matvec(const double A[9], const double x[3], double y[3]) {
    for (int i = 0; i < 3; ++i)
        y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

/* Q^T M Q for Q = [c0 c1 c2] (columns). */
static void rotate_into(const double M[9], const double Q[3][3], double A[9]) {
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            double s = 0;
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k)
                    s += Q[r][i] * M[3 * i + k] * Q[c][k];
            A[3 * r + c] = s;
        }
}

/* A random SPD matrix with condition number up to ~1e3 and scale s. */
static void random_spd(uint64_t *rng, double s, double A[9]) {
    double L[9] = {0};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < i; ++j)
            L[3 * i + j] = gf_test_uniform(rng, -1, 1);
        L[3 * i + i] = gf_test_uniform(rng, 0.05, 1.5);
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double v = 0;
            for (int k = 0; k < 3; ++k)
                v += L[3 * i + k] * L[3 * j + k];
            A[3 * i + j] = s * v;
        }
}

/* D A D with D = diag(0.3, 1, 1): still SPD, but A_nn small against the normal-tangential
 * coupling, so the conic sections are often hyperbolas (not P2). */
static void weaken_normal(double A[9]) {
    for (int i = 0; i < 3; ++i) {
        A[i] *= 0.3;
        A[3 * i] *= 0.3;
    }
}

typedef struct {
    double best;    /* least objective found over the feasible set */
    int admissible; /* number of feasible samples */
} search_result;

/* Independent brute force over the feasible set: for b_n > 0 the boundary of the conic
 * section sampled densely in the angle (plus the unconstrained minimum when it is feasible);
 * for b_n = 0 the best point along each sampled direction of the plane through the origin. */
static search_result brute_force(const double A[9], const double b[3], double mu, int nsamples) {
    search_result res = {0.0, 1}; /* x = 0 is feasible when b_n <= 0 */
    if (b[0] > 0)
        res.best = INFINITY, res.admissible = 0;
    if (b[0] < 0)
        return res;
    double Ann = A[0], Ant = A[1], Ano = A[2];
    double Att = A[4] - Ant * Ant / Ann, Ato = A[5] - Ant * Ano / Ann, Aoo = A[8] - Ano * Ano / Ann;
    double bt = b[1] - Ant * b[0] / Ann, bo = b[2] - Ano * b[0] / Ann;
    for (int k = 0; k < nsamples; ++k) {
        double a = 2.0 * M_PI * (k + 0.5) / nsamples;
        double c = cos(a), s = sin(a);
        double fr = Ann + mu * (Ant * c + Ano * s);
        double g = Att * c * c + 2 * Ato * c * s + Aoo * s * s, h = bt * c + bo * s;
        double r;
        if (b[0] > 0) {
            if (fr <= 0)
                continue;
            r = mu * b[0] / fr;
        } else {
            if (fr > 0)
                continue; /* only the origin is feasible in that direction */
            r = h > 0 ? h / g : 0.0;
        }
        double x[3] = {(b[0] - Ant * r * c - Ano * r * s) / Ann, r * c, r * s};
        double f = gf_contact_objective(A, b, x);
        res.admissible++;
        if (f < res.best)
            res.best = f;
    }
    return res;
}

/* Feasibility to rounding (relative to the size of the problem). */
static void assert_feasible(const double A[9], const double b[3], double mu, const double x[3],
                            double xscale, double vscale) {
    double tol_x = 1e-9 * xscale, tol_v = 1e-9 * vscale;
    double Ax[3];
    matvec(A, x, Ax);
    double gap = Ax[0] - b[0]; /* a_n^T x - b_n */
    if (!(x[0] >= -tol_x))
        fail_msg("negative normal impulse %g", x[0]);
    if (!(hypot(x[1], x[2]) <= mu * x[0] + tol_x))
        fail_msg("outside the cone: |x_to| = %g > mu x_n = %g", hypot(x[1], x[2]), mu * x[0]);
    if (!(gap >= -tol_v))
        fail_msg("Signorini violated: a_n^T x - b_n = %g", gap);
    if (!(fabs(x[0] * gap) <= tol_x * vscale + tol_v * fabs(x[0])))
        fail_msg("not complementary: x_n = %g, a_n^T x - b_n = %g", x[0], gap);
    if (!(Ax[0] >= -tol_v))
        fail_msg("pressure condition violated: a_n^T x = %g", Ax[0]);
}

/* ---------------------------------------------------------------------------------------- */
/* Reference problems                                                                       */

static void table1_problem(double A[9], double b[3]) {
    const double dx = 10, dy = 1, dz = 1, mx = 0.03, my = 65, mz = 50;
    double n[3] = {0.25, 0.36, -0.9};
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int i = 0; i < 3; ++i)
        n[i] /= len;
    /* t = n x e_x and o = n x t exactly as the paper writes them, not normalised: Table 1
     * was computed with this Q (a normalised frame gives a different problem). */
    double t[3] = {0, n[2], -n[1]};
    double o[3] = {n[1] * t[2] - n[2] * t[1], n[2] * t[0] - n[0] * t[2], n[0] * t[1] - n[1] * t[0]};
    double In[3] = {2 * (my * dy * dy + mz * dz * dz), 2 * (mx * dx * dx + mz * dz * dz),
                    2 * (mx * dx * dx + my * dy * dy)};
    /* -[e_x]x I^-1 [e_x]x = diag(0, 1/I_z, 1/I_y) for a lever arm along x. */
    double M[9] = {0};
    double im = 1.0 / (2 * (mx + my + mz));
    M[0] = im;
    M[4] = im + dx * dx / In[2];
    M[8] = im + dx * dx / In[1];
    const double Q[3][3] = {{n[0], n[1], n[2]}, {t[0], t[1], t[2]}, {o[0], o[1], o[2]}};
    rotate_into(M, Q, A);
    const double bw[3] = {0.06, 0.7, 0.23};
    for (int i = 0; i < 3; ++i)
        b[i] = Q[i][0] * bw[0] + Q[i][1] * bw[1] + Q[i][2] * bw[2];
}

static void test_table1(void **state) {
    (void)state;
    double A[9], b[3], x[3];
    table1_problem(A, b);
    const double mu = 3.7;
    GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x));
    GF_ASSERT_NEAR(x[0], 1.603, 1e-3);
    GF_ASSERT_NEAR(x[1], -1.082, 1e-3);
    GF_ASSERT_NEAR(x[2], -5.832, 1e-3);
    double Ax[3];
    matvec(A, x, Ax);
    GF_ASSERT_NEAR(Ax[0] - b[0], 0.0, 1e-12);
    GF_ASSERT_NEAR(Ax[1] - b[1], -0.0575, 1e-4);
    GF_ASSERT_NEAR(Ax[2] - b[2], 0.0345, 1e-4);
    double f = gf_contact_objective(A, b, x);
    GF_ASSERT_NEAR(f, -0.6340, 1e-4);
    /* Lower than each of the three Coulomb solutions the paper lists. */
    assert_true(f < -0.631 && f < -0.393 && f < -0.252);
    /* And lower than what the decoupled Coulomb kernel gives. */
    double xc[3];
    GF_ASSERT_OK(gf_contact_kernel_coulomb(A, b, mu, xc));
    assert_true(f < gf_contact_objective(A, b, xc));
    /* The dense search finds nothing better. */
    search_result s = brute_force(A, b, mu, 200000);
    assert_true(f <= s.best + 1e-12);
    GF_ASSERT_NEAR(f, s.best, 1e-8);
}

/* Paper section 4.2: a rod sliding on a plane at angle theta0, the Painlevé configuration. */
static void painleve_problem(double theta, double A[9]) {
    const double m = 1.0, l = 1.0;
    double e[3] = {cos(theta), sin(theta), 0};
    double r[3] = {-0.5 * l * e[0], -0.5 * l * e[1], 0}; /* centre to the lower tip */
    /* World inverse inertia: 12/(m l^2) (E - e e^T) (infinite inertia about the rod axis). */
    double iI[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            iI[3 * i + j] = 12.0 / (m * l * l) * ((i == j) - e[i] * e[j]);
    double Rx[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0};
    double W[9] = {0};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double s = 0;
            for (int k = 0; k < 3; ++k)
                for (int q = 0; q < 3; ++q)
                    s += Rx[3 * i + k] * iI[3 * k + q] * Rx[3 * q + j];
            W[3 * i + j] = (i == j) / m - s;
        }
    /* Contact frame n = e_y, t = e_x, o = e_z. */
    const double Q[3][3] = {{0, 1, 0}, {1, 0, 0}, {0, 0, 1}};
    rotate_into(W, Q, A);
}

static void test_painleve(void **state) {
    (void)state;
    const double thetas[] = {0.3, 0.6, 0.9, 1.2, 1.45};
    const double v0 = 2.0, m = 1.0;
    for (size_t k = 0; k < sizeof thetas / sizeof thetas[0]; ++k) {
        double th = thetas[k];
        double mustar = (cos(th) + 1.0 / (3.0 * cos(th))) / sin(th);
        if (k == 1)
            GF_ASSERT_NEAR(mustar, 2.17697, 1e-5);
        double A[9], b[3] = {0, v0, 0}, x[3];
        painleve_problem(th, A);
        double L0[3] = {m * v0 / 8 * 3 * sin(2 * th), m * v0 / 8 * (5 + 3 * cos(2 * th)), 0};
        if (k == 1) {
            GF_ASSERT_NEAR(L0[0] / (m * v0), 0.349515, 1e-6);
            GF_ASSERT_NEAR(L0[1] / (m * v0), 0.760884, 1e-6);
        }
        const double factors[] = {0.5, 0.9, 0.999, 1.001, 1.1, 3.0};
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; ++f) {
            double mu = factors[f] * mustar;
            GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x));
            if (mu >= mustar) {
                for (int i = 0; i < 3; ++i)
                    GF_ASSERT_NEAR(x[i], L0[i], 1e-12 * v0);
            } else {
                for (int i = 0; i < 3; ++i)
                    GF_ASSERT_NEAR(x[i], 0.0, 0.0);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Random problems                                                                          */

static void test_random_feasible_and_optimal(void **state) {
    (void)state;
    uint64_t rng = 2024;
    int sliding = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        double sa = pow(10.0, gf_test_uniform(&rng, -9, 9));
        double sb = pow(10.0, gf_test_uniform(&rng, -13, 3));
        double A[9], b[3], x[3];
        random_spd(&rng, sa, A);
        for (int i = 0; i < 3; ++i)
            b[i] = sb * gf_test_uniform(&rng, -1, 1);
        if (trial % 3 == 0)
            b[0] = fabs(b[0]); /* more colliding contacts */
        double mu = trial % 11 == 0 ? 0.0 : gf_test_uniform(&rng, 0.01, 3.0);
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x));
        double xscale = sb / sa;
        assert_feasible(A, b, mu, x, xscale, sb);
        double f = gf_contact_objective(A, b, x);
        double fscale = sb * sb / sa;
        search_result s = brute_force(A, b, mu, 4000);
        if (b[0] > 0 && mu > 0) {
            assert_true(s.admissible > 0);
            if (!(f <= s.best + 1e-12 * fscale))
                fail_msg("trial %d: objective %.17g above a boundary sample %.17g", trial, f,
                         s.best);
            /* Sliding when the boundary attains the optimum (to sampling accuracy). */
            if (f > -1e300 && fabs(f - s.best) < 1e-3 * fabs(f))
                sliding++;
        } else {
            assert_true(f <= s.best + 1e-12 * fscale);
        }
    }
    assert_true(sliding > 500); /* the sliding branch was exercised heavily */
}

/* b_n = 0 exactly: the degenerate cone section (point, or the wedge between two rays). */
static void test_bn_zero(void **state) {
    (void)state;
    uint64_t rng = 77;
    int rays = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        double A[9], b[3], x[3];
        random_spd(&rng, 1.0, A);
        weaken_normal(A);
        b[0] = 0;
        b[1] = gf_test_uniform(&rng, -1, 1);
        b[2] = gf_test_uniform(&rng, -1, 1);
        double mu = gf_test_uniform(&rng, 0.1, 4.0);
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x));
        assert_feasible(A, b, mu, x, 1.0, 1.0);
        double f = gf_contact_objective(A, b, x);
        search_result s = brute_force(A, b, mu, 20000);
        if (!(f <= s.best + 1e-12))
            fail_msg("trial %d: objective %.17g above a sampled ray %.17g", trial, f, s.best);
        /* The exact answer: the better of the two asymptote rays (or zero), computed here
         * with angles (atan2/acos) rather than the kernel's rotation formulas. */
        double Ann = A[0], Ant = A[1], Ano = A[2], a3 = hypot(Ant, Ano);
        double expect = 0.0;
        if (Ann <= mu * a3) {
            double a0 = atan2(Ano, Ant), da = acos(-Ann / (mu * a3));
            for (int side = -1; side <= 1; side += 2) {
                double c = cos(a0 + side * da), sn = sin(a0 + side * da);
                double y[3] = {0, c, sn};
                y[0] = -(Ant * c + Ano * sn) / Ann;
                double Ay[3];
                matvec(A, y, Ay);
                double g = y[0] * Ay[0] + y[1] * Ay[1] + y[2] * Ay[2];
                double h = b[1] * c + b[2] * sn;
                if (h > 0)
                    expect = fmin(expect, -0.5 * h * h / g);
            }
        }
        double x0[3];
        /* Unless the unconstrained minimum (on the plane, since b_n = 0) is in the cone. */
        double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                     A[2] * (A[3] * A[7] - A[4] * A[6]);
        for (int i = 0; i < 3; ++i) {
            double M[9];
            memcpy(M, A, sizeof M);
            for (int r = 0; r < 3; ++r)
                M[3 * r + i] = b[r];
            x0[i] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                     M[2] * (M[3] * M[7] - M[4] * M[6])) /
                    det;
        }
        if (x0[0] >= 0 && hypot(x0[1], x0[2]) <= mu * x0[0])
            expect = gf_contact_objective(A, b, x0);
        GF_ASSERT_NEAR(f, expect, 1e-12 * (fabs(f) + 1e-12));
        if (f < 0)
            rays++;
    }
    assert_true(rays > 200);
}

/* x(sA A, sb b) = (sb / sA) x(A, b): the kernel normalises internally, so results must not
 * depend on units, from grains of 1e-8 kg to boulders. */
static void test_scale_invariance(void **state) {
    (void)state;
    uint64_t rng = 31;
    for (int trial = 0; trial < 500; ++trial) {
        double A[9], b[3], x[3];
        random_spd(&rng, 1.0, A);
        for (int i = 0; i < 3; ++i)
            b[i] = gf_test_uniform(&rng, -1, 1);
        b[0] = fabs(b[0]);
        double mu = gf_test_uniform(&rng, 0.05, 2.0);
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x));
        double xn = fabs(x[0]) + fabs(x[1]) + fabs(x[2]);
        const double sas[] = {1e-8, 1e8, 1e12}, sbs[] = {1e-12, 1e-4, 1e3};
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                double As[9], bs[3], xs[3];
                for (int k = 0; k < 9; ++k)
                    As[k] = A[k] * sas[i];
                for (int k = 0; k < 3; ++k)
                    bs[k] = b[k] * sbs[j];
                GF_ASSERT_OK(gf_contact_kernel_maxdiss(As, bs, mu, xs));
                double f = sbs[j] / sas[i];
                for (int k = 0; k < 3; ++k)
                    GF_ASSERT_NEAR(xs[k] / f, x[k], 1e-12 * xn);
            }
    }
}

/* Near the boundaries between the branches the result must not jump. */
static void test_continuity(void **state) {
    (void)state;
    uint64_t rng = 5;
    for (int trial = 0; trial < 300; ++trial) {
        double A[9], b[3], x0[3], x1[3];
        random_spd(&rng, 1.0, A);
        weaken_normal(A);
        b[1] = gf_test_uniform(&rng, -1, 1);
        b[2] = gf_test_uniform(&rng, -1, 1);
        double mu = gf_test_uniform(&rng, 0.1, 3.0);
        /* b_n -> 0+ approaches the b_n = 0 solution. */
        b[0] = 0;
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x0));
        double xn = fabs(x0[0]) + fabs(x0[1]) + fabs(x0[2]) + 1e-300;
        const double eps[] = {1e-6, 1e-9, 1e-12};
        double prev = INFINITY;
        for (int k = 0; k < 3; ++k) {
            b[0] = eps[k];
            GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, x1));
            double d = fabs(x1[0] - x0[0]) + fabs(x1[1] - x0[1]) + fabs(x1[2] - x0[2]);
            if (xn > 1e-12) {
                /* The distance shrinks with b_n (at least like sqrt near a hyperbola). */
                if (!(d <= 1e3 * sqrt(eps[k]) * (xn + 1.0)) || !(d <= prev + 1e-12))
                    fail_msg("trial %d: b_n = %g moves x by %g (previous %g, |x| %g)", trial,
                             eps[k], d, prev, xn);
            }
            prev = d;
        }
    }
    /* The unconstrained minimum crossing the cone edge: sticking and sliding solutions meet. */
    for (int trial = 0; trial < 300; ++trial) {
        double A[9], b[3], xs[3], xin[3], xout[3];
        random_spd(&rng, 1.0, A);
        /* Choose the sticking impulse on the cone edge, b = A x_edge. */
        double mu = gf_test_uniform(&rng, 0.1, 2.0);
        double ang = gf_test_uniform(&rng, 0, 2 * M_PI);
        double xe[3] = {1.0, mu * cos(ang), mu * sin(ang)};
        matvec(A, xe, b);
        if (b[0] <= 0)
            continue;
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, xs));
        for (int i = 0; i < 3; ++i)
            GF_ASSERT_NEAR(xs[i], xe[i], 1e-9);
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu * (1 + 1e-9), xin));
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu * (1 - 1e-9), xout));
        for (int i = 0; i < 3; ++i) {
            GF_ASSERT_NEAR(xin[i], xe[i], 1e-7);
            GF_ASSERT_NEAR(xout[i], xe[i], 1e-7);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Sphere fast path, model relations, Appendix A, bad input                                 */

static void test_sphere_fast_path(void **state) {
    (void)state;
    uint64_t rng = 8;
    for (int trial = 0; trial < 5000; ++trial) {
        double s = pow(10.0, gf_test_uniform(&rng, -8, 8));
        double an = s * gf_test_uniform(&rng, 0.1, 2), at = s * gf_test_uniform(&rng, 0.1, 4);
        double A[9] = {an, 0, 0, 0, at, 0, 0, 0, at};
        double sb = pow(10.0, gf_test_uniform(&rng, -12, 2));
        double b[3] = {sb * gf_test_uniform(&rng, -0.3, 1), sb * gf_test_uniform(&rng, -1, 1),
                       sb * gf_test_uniform(&rng, -1, 1)};
        if (trial % 50 == 0)
            b[0] = 0;
        double mu = trial % 17 == 0 ? 0 : gf_test_uniform(&rng, 0.0, 2.0);
        double xf[3], xg[3], xc[3];
        GF_ASSERT_OK(gf_contact_kernel_maxdiss_sphere(A, b, mu, xf));
        GF_ASSERT_OK(gf_contact_kernel_maxdiss(A, b, mu, xg));
        GF_ASSERT_OK(gf_contact_kernel_coulomb(A, b, mu, xc));
        double scale = (fabs(xg[0]) + fabs(xg[1]) + fabs(xg[2])) + 1e-300;
        for (int i = 0; i < 3; ++i) {
            GF_ASSERT_NEAR(xf[i], xg[i], 1e-12 * scale);
            /* Coulomb and maximum dissipation coincide for spheres (KERNEL.md). */
            GF_ASSERT_NEAR(xc[i], xg[i], 1e-12 * scale);
        }
    }
}

/* Our stationarity polynomial is a positive or negative multiple of the paper's Eq. 8 with the
 * coefficients of Appendix A: e0 : 2|e1| : 2|e2| = c0 : c1 : c2 and arg e_k = phi_k. */
static void test_appendix_a(void **state) {
    (void)state;
    uint64_t rng = 1234;
    int checked = 0;
    for (int trial = 0; trial < 500; ++trial) {
        double A[9], b[3];
        random_spd(&rng, 1.0, A);
        for (int i = 0; i < 3; ++i)
            b[i] = gf_test_uniform(&rng, -1, 1);
        b[0] = fabs(b[0]);
        double mu = gf_test_uniform(&rng, 0.1, 2);
        double Ann = A[0], Ant = A[1], Ano = A[2], Att = A[4], Ato = A[5], Aoo = A[8];
        double bn = b[0], bt = b[1], bo = b[2];
        double mu2 = mu * mu, mu4 = mu2 * mu2;
        double c0 = 1.5 * mu * Ann * (Ano * bt - Ant * bo);
        double d = Ant * bo - Ano * bt;
        double c1sq =
            mu4 * ((Ano * Ano * (Att * Att + Ato * Ato) - 2 * Ant * Ano * Ato * (Att + Aoo) +
                    Ant * Ant * (Ato * Ato + Aoo * Aoo)) *
                       bn * bn +
                   2 * d * (Ano * Ano * Ato + Ant * Ano * (Att - Aoo) - Ant * Ant * Ato) * bn +
                   (Ant * Ant + Ano * Ano) * d * d) +
            2 * mu2 * Ann *
                ((2 * Ant * Ano * Ato - Ano * Ano * Att - Ant * Ant * Aoo) * bn * bn +
                 Ann * (Ano * (Att * bo - Ato * bt) - Ant * (Ato * bo - Aoo * bt)) * bn +
                 Ann * d * d) +
            Ann * Ann *
                ((Ant * Ant + Ano * Ano) * bn * bn - 2 * Ann * (Ant * bt + Ano * bo) * bn +
                 Ann * Ann * (bt * bt + bo * bo));
        double c1 = sqrt(c1sq);
        double c2 = mu * Ann *
                    sqrt((0.25 * (Att * Att + Aoo * Aoo) + Ato * Ato - 0.5 * Att * Aoo) * bn * bn +
                         (Ano * (0.5 * (Att - Aoo) * bo - Ato * bt) -
                          Ant * (Ato * bo + 0.5 * (Att - Aoo) * bt)) *
                             bn +
                         0.25 * (Ant * Ant + Ano * Ano) * (bo * bo + bt * bt));
        double phi1 = atan2(mu2 * ((Ano * Ato - Ant * Aoo) * bn - Ano * Ano * bt + Ant * Ano * bo) -
                                Ann * Ann * bt + Ann * Ant * bn,
                            mu2 * ((Ant * Ato - Ano * Att) * bn + Ant * Ano * bt - Ant * Ant * bo) -
                                Ann * Ann * bo + Ann * Ano * bn);
        double phi2 =
            atan2((Att - Aoo) * bn - Ant * bt + Ano * bo, 2 * Ato * bn - Ano * bt - Ant * bo);
        double e[5];
        gf_maxdiss_stationary_coeffs(A, b, mu, e);
        /* Compare the two trigonometric polynomials at many angles: proportional with one
         * constant factor. */
        double ratio = NAN;
        int ok = 1;
        for (int k = 0; k < 64 && ok; ++k) {
            double a = 2 * M_PI * k / 64.0 + 0.01;
            double ours =
                e[0] + e[1] * cos(a) + e[2] * sin(a) + e[3] * cos(2 * a) + e[4] * sin(2 * a);
            double paper = c0 + c1 * cos(a + phi1) + c2 * cos(2 * a + phi2);
            if (fabs(paper) < 1e-3 * (fabs(c0) + c1 + c2))
                continue;
            double r = ours / paper;
            if (isnan(ratio))
                ratio = r;
            else if (fabs(r - ratio) > 1e-8 * fabs(ratio))
                ok = 0;
        }
        if (!ok)
            fail_msg("trial %d: our stationarity condition is not a multiple of Eq. 8", trial);
        checked++;
    }
    assert_int_equal(checked, 500);
}

static void test_bad_input(void **state) {
    (void)state;
    double A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, b[3] = {1, 0.5, 0.2}, x[3];
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; ++k) {
        for (int i = 0; i < 9; ++i) {
            double Ab[9];
            memcpy(Ab, A, sizeof Ab);
            Ab[i] = bad[k];
            x[0] = x[1] = x[2] = 7;
            assert_int_equal(gf_contact_kernel_maxdiss(Ab, b, 0.5, x), GF_ERR_NUMERIC);
            assert_true(x[0] == 0 && x[1] == 0 && x[2] == 0);
            assert_int_equal(gf_contact_kernel_coulomb(Ab, b, 0.5, x), GF_ERR_NUMERIC);
            assert_int_equal(gf_contact_kernel_frictionless(Ab, b, 0.5, x), GF_ERR_NUMERIC);
            assert_int_equal(gf_contact_kernel_maxdiss_sphere(Ab, b, 0.5, x), GF_ERR_NUMERIC);
        }
        for (int i = 0; i < 3; ++i) {
            double bb[3] = {b[0], b[1], b[2]};
            bb[i] = bad[k];
            assert_int_equal(gf_contact_kernel_maxdiss(A, bb, 0.5, x), GF_ERR_NUMERIC);
            assert_non_null(strstr(gf_error_message(), "not finite"));
        }
        assert_int_equal(gf_contact_kernel_maxdiss(A, b, bad[k], x), GF_ERR_NUMERIC);
    }
    assert_int_equal(gf_contact_kernel_maxdiss(A, b, -1.0, x), GF_ERR_NUMERIC);
    double notpd[9] = {1, 2, 0, 2, 1, 0, 0, 0, 1};
    assert_int_equal(gf_contact_kernel_maxdiss(notpd, b, 0.5, x), GF_ERR_NUMERIC);
    /* The plain wrappers give zero rather than NaN. */
    double nanb[3] = {NAN, 0, 0};
    gf_contact_solve_maxdiss(A, nanb, 0.5, x);
    assert_true(x[0] == 0 && x[1] == 0 && x[2] == 0);
    gf_contact_solve_coulomb(A, b, 0.5, x);
    assert_true(x[0] == 1.0);
}

/* The rolling kernel (gf_contact_kernel_disc) against the optimality conditions of
 * min 1/2 x.M x - g.x over |x| <= R, which characterise the minimiser of a convex problem:
 * inside the disc M x = g; on its circle g - M x = a x with a >= 0. Random positive
 * (semi-)definite M, isotropic, singular and strongly anisotropic ones among them. */
static void test_disc_kernel(void **state) {
    (void)state;
    uint64_t rng = 99;
    int inside = 0, boundary = 0;
    for (int k = 0; k < 20000; ++k) {
        double e1 = gf_test_uniform(&rng, 0.0, 2.0), e2 = gf_test_uniform(&rng, 0.0, 2.0);
        if (k % 7 == 0)
            e1 = 0.0; /* singular */
        if (k % 11 == 0 && e1 > 0.0)
            e2 = e1; /* isotropic */
        if (k % 13 == 0)
            e1 = 1e-6 * e2; /* strongly anisotropic */
        double th = gf_test_uniform(&rng, 0.0, 2.0 * M_PI), c = cos(th), sn = sin(th);
        const double M[3] = {e1 * c * c + e2 * sn * sn, (e1 - e2) * c * sn,
                             e1 * sn * sn + e2 * c * c};
        const double g[2] = {gf_test_uniform(&rng, -1.0, 1.0), gf_test_uniform(&rng, -1.0, 1.0)};
        const double R = gf_test_uniform(&rng, 0.0, 2.0);
        double x[2];
        gf_contact_kernel_disc(M, g, R, x);
        const double nx = hypot(x[0], x[1]);
        const double res[2] = {g[0] - (M[0] * x[0] + M[1] * x[1]),
                               g[1] - (M[1] * x[0] + M[2] * x[1])};
        const double scale = hypot(g[0], g[1]) + 2.0 * (nx + R);
        if (!(nx <= R * (1.0 + 1e-12)))
            fail_msg("case %d: |x| = %.17g outside the disc of radius %.17g", k, nx, R);
        if (nx < R * (1.0 - 1e-9)) {
            ++inside;
            if (!(hypot(res[0], res[1]) <= 1e-11 * scale))
                fail_msg("case %d: inside the disc but M x - g = %g %g", k, res[0], res[1]);
        } else {
            ++boundary;
            /* g - M x parallel to x, pointing outwards */
            double cross = res[0] * x[1] - res[1] * x[0], a = (res[0] * x[0] + res[1] * x[1]);
            if (!(fabs(cross) <= 1e-10 * scale * nx && a >= -1e-10 * scale * nx))
                fail_msg("case %d: on the circle but g - M x = %g %g is not along x = %g %g", k,
                         res[0], res[1], x[0], x[1]);
        }
    }
    /* both cases met often */
    assert_true(inside > 1000 && boundary > 1000);
    /* no bound, or no inertia: no torque */
    const double M[3] = {1.0, 0.2, 2.0}, g[2] = {1.0, -1.0}, Z[3] = {0.0, 0.0, 0.0};
    double x[2] = {5.0, 5.0};
    gf_contact_kernel_disc(M, g, 0.0, x);
    assert_true(x[0] == 0.0 && x[1] == 0.0);
    x[0] = x[1] = 5.0;
    gf_contact_kernel_disc(Z, g, 1.0, x);
    assert_true(x[0] == 0.0 && x[1] == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table1),
        cmocka_unit_test(test_painleve),
        cmocka_unit_test(test_random_feasible_and_optimal),
        cmocka_unit_test(test_bn_zero),
        cmocka_unit_test(test_scale_invariance),
        cmocka_unit_test(test_continuity),
        cmocka_unit_test(test_sphere_fast_path),
        cmocka_unit_test(test_appendix_a),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_disc_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
