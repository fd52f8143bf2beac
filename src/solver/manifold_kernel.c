/* The joint kernel of a contact manifold (manifold_kernel.h; docs/physics.md, "Contact manifolds").
 *
 * Maximum dissipation. For a set S of loaded points the problem
 *     min 1/2 x^T A x - x^T b   over x_S in the cones, x_i = 0 off S,   (A x - b)_n,i = 0 on S
 * is convex; its optimality conditions, with y the multipliers of the normal conditions and
 * z = A x - b - N^T y (N: the normal rows of A), are z in the dual cone, orthogonal to x. With
 * the Euclidean projection onto a cone (Moreau: x = P_K(x - g z) for any g > 0 says exactly
 * that) they are the equations
 *     F1 = x - P_K(x - g z) = 0,      F2 = g (A x - b)_n,S = 0,
 * solved by a semismooth Newton method with a backtracking line search on |F| from a few
 * point-by-point sweeps of the paper's kernel (close to the joint answer), or from the warm
 * start. Only independent normal conditions are imposed (a face's fourth point repeats what
 * three say of a rigid body's motion; pivoted Cholesky of A_NN). S follows from an active-set
 * loop: a point off S that would approach or stays in touch joins, a point of S that carries
 * nothing and would move away once freed leaves, and when no impulses in the cones hold all of S
 * the least loaded point leaves. In exact mode two sure but slow steps back Newton's local
 * convergence: where it fails, a log-barrier interior-point method (smooth, tens of Newton
 * steps) gets close and Newton's method polishes; if the loop does not settle, every set is
 * tried (up to ENUMERATE_MAX points) and the consistent answer of least energy kept. (The
 * solver, one proximal step per sweep from a warm start, solves a block point by point where
 * Newton's method alone fails: cheaper, and rare there.) For
 * one point this is the paper's problem, sticking (x = A^-1 b) or the conic section of the
 * plane (A x - b)_n = 0 and the cone (KERNEL.md, steps 3 and 7): solved by its analytic kernel.
 *
 * Coulomb. Signorini's condition and Coulomb's law at every point are one cone complementarity
 * in the modified velocity u~ = u + mu |u_t| e_n (De Saxce and Feng's bipotential): x in the
 * cone, u~ in its dual, orthogonal. The same Newton method solves F = x - P_K(x - g u~) = 0.
 *
 * Both solve with A + eps I for A (eps = REGULARISE times A's mean diagonal) and b + eps c: the
 * problem plus a proximal term eps/2 |x - c|^2, centred first on the warm start x0 and then on
 * each answer until the answer stays (proximal point passes), so the result solves the problem
 * with A itself. It makes every pass strictly convex: the split of a face's load between its
 * points (which three conditions on a rigid body's motion leave open for four points) is the
 * one nearest the warm start (the least from a cold start), unique and continuous in time, and
 * Newton's matrix is regular. */
#include "granflow/manifold_kernel.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "granflow/contact_kernel.h"

#define PMAX GF_MANIFOLD_KERNEL_MAX
#define NMAX (4 * PMAX) /* unknowns: three impulses and a multiplier per point */

/* The compliance, relative to the mean diagonal of A. */
#define REGULARISE 1e-3
/* Newton: converged at this residual (relative to the impulses' scale); also accepted when the
 * line search can no longer improve a residual of NEWTON_STALL (rounding); given up after
 * MAX_NEWTON steps. An answer is taken when its residual is below ACCEPT. */
#define NEWTON_TOL 1e-14
#define NEWTON_STALL 1e-11
#define MAX_NEWTON 15 /* 10 fails a sliding 2:1 box now and then; 30 costs 2x in dense piles */
/* The barrier method stops at this share of the objective's scale (Newton's method polishes). */
#define BARRIER_GAP 1e-11
/* Newton steps of the barrier method at most. */
#define BARRIER_STEPS 150
#define ACCEPT 1e-9
/* A normal condition is taken as implied by the others when its pivot falls below this share of
 * the largest diagonal entry. */
#define INDEPENDENT 1e-9
/* Points of a manifold whose every set of loaded points may be tried. */
#define ENUMERATE_MAX 4
/* The Newton matrix's diagonal at the multipliers (their equations have none of their own). */
#define MULTIPLIER_DAMPING 1e-12
/* Point-by-point sweeps of Newton's start at most. */
#define START_SWEEPS 4
/* Proximal passes at most. */
#define PASSES 12

/* One sub-problem: the points of S and what the residual needs. */
typedef struct {
    int s;       /* points */
    int coulomb; /* the Coulomb law instead of maximum dissipation */
    int n;       /* unknowns: 3 s (+ r multipliers for maximum dissipation) */
    int r;       /* normal conditions imposed: those of points row[0 .. r-1] */
    int row[PMAX];
    double A[3 * PMAX][3 * PMAX];
    double eps;          /* the proximal term's weight */
    double b0[3 * PMAX]; /* b */
    double b[3 * PMAX];  /* b + eps times the centre of the proximal term */
    double mu[PMAX];
    double gamma; /* 1 / mean diagonal */
} problem;

/* Projection of w onto the cone |x_t| <= mu x_n, and its derivative D (3 x 3, row-major). */
static void project_cone(const double w[3], double mu, double p[3], double D[9]) {
    double r = sqrt(w[1] * w[1] + w[2] * w[2]);
    memset(D, 0, 9 * sizeof *D);
    if (r <= mu * w[0]) { /* inside */
        memcpy(p, w, 3 * sizeof *w);
        D[0] = D[4] = D[8] = 1.0;
        return;
    }
    if (mu * r <= -w[0]) { /* in the polar cone */
        p[0] = p[1] = p[2] = 0.0;
        return;
    }
    /* Onto the boundary ray through w's tangential direction (r > 0 here). */
    double k = 1.0 / (1.0 + mu * mu), c = (w[0] + mu * r) * k;
    double u[2] = {w[1] / r, w[2] / r};
    p[0] = c;
    p[1] = c * mu * u[0];
    p[2] = c * mu * u[1];
    D[0] = k;
    for (int a = 0; a < 2; ++a) {
        D[1 + a] = mu * u[a] * k;
        D[3 * (1 + a)] = mu * u[a] * k;
        for (int e = 0; e < 2; ++e)
            D[3 * (1 + a) + 1 + e] =
                mu * mu * u[a] * u[e] * k + mu * c / r * ((a == e ? 1.0 : 0.0) - u[a] * u[e]);
    }
}

/* F(u) and, when J is not NULL, an element of its generalised Jacobian (n x n, row-major). */
static void residual(const problem *P, const double *u, double *F, double *J) {
    const int s = P->s, m3 = 3 * s, n = P->n;
    const double *x = u, *y = u + m3;
    double g[3 * PMAX], z[3 * PMAX];
    double dz[3 * PMAX][3 * PMAX]; /* dz/dx (Coulomb: the modified velocity's derivative) */
    for (int k = 0; k < m3; ++k) {
        double v = P->eps * x[k] - P->b[k];
        for (int l = 0; l < m3; ++l)
            v += P->A[k][l] * x[l];
        g[k] = v;
        z[k] = v;
    }
    if (J)
        for (int k = 0; k < m3; ++k) {
            memcpy(dz[k], P->A[k], (size_t)m3 * sizeof dz[k][0]);
            dz[k][k] += P->eps;
        }
    if (!P->coulomb) {
        for (int k = 0; k < m3; ++k)
            for (int q = 0; q < P->r; ++q)
                z[k] -= P->A[k][3 * P->row[q]] * y[q];
    } else {
        for (int i = 0; i < s; ++i) {
            double r = hypot(g[3 * i + 1], g[3 * i + 2]);
            z[3 * i] += P->mu[i] * r;
            if (J && r > 0.0)
                for (int l = 0; l < m3; ++l)
                    dz[3 * i][l] +=
                        P->mu[i] *
                        (g[3 * i + 1] * dz[3 * i + 1][l] + g[3 * i + 2] * dz[3 * i + 2][l]) / r;
        }
    }
    if (J)
        memset(J, 0, (size_t)n * (size_t)n * sizeof *J);
    for (int i = 0; i < s; ++i) {
        double w[3], p[3], D[9];
        for (int a = 0; a < 3; ++a)
            w[a] = x[3 * i + a] - P->gamma * z[3 * i + a];
        project_cone(w, P->mu[i], p, D);
        for (int a = 0; a < 3; ++a)
            F[3 * i + a] = x[3 * i + a] - p[a];
        if (!J)
            continue;
        /* dF1/dx = I - D (I - g dz/dx), dF1/dy = -D g N^T. */
        for (int a = 0; a < 3; ++a) {
            double *row = J + (size_t)(3 * i + a) * (size_t)n;
            row[3 * i + a] += 1.0;
            for (int c = 0; c < 3; ++c) {
                double dac = D[3 * a + c];
                if (dac == 0.0)
                    continue;
                row[3 * i + c] -= dac;
                double gc = P->gamma * dac;
                for (int l = 0; l < m3; ++l)
                    row[l] += gc * dz[3 * i + c][l];
                if (!P->coulomb)
                    for (int q = 0; q < P->r; ++q)
                        row[m3 + q] -= gc * P->A[3 * i + c][3 * P->row[q]];
            }
        }
    }
    if (P->coulomb)
        return;
    /* F2 = g (A x - b)_n of the independent normal conditions. */
    for (int q = 0; q < P->r; ++q) {
        int i = P->row[q];
        double v = -P->b0[3 * i];
        for (int l = 0; l < m3; ++l)
            v += P->A[3 * i][l] * x[l];
        F[m3 + q] = P->gamma * v;
        if (!J)
            continue;
        double *row = J + (size_t)(m3 + q) * (size_t)n;
        for (int l = 0; l < m3; ++l)
            row[l] = P->gamma * P->A[3 * i][l];
        /* A point at its cone's apex leaves its multiplier out of F: kept regular (Newton's
         * step then barely moves it). */
        row[m3 + q] = -MULTIPLIER_DAMPING;
    }
}

static double norm_inf(const double *v, int n) {
    double m = 0.0;
    for (int k = 0; k < n; ++k)
        m = fmax(m, fabs(v[k]));
    return m;
}

static double norm2(const double *v, int n) {
    double m = 0.0;
    for (int k = 0; k < n; ++k)
        m += v[k] * v[k];
    return sqrt(m);
}

/* LU factorisation with partial pivoting of the n x n matrix J (in place, pivots in piv); 0 if
 * J is singular. */
static int lu_factor(double *J, int *piv, int n) {
    for (int c = 0; c < n; ++c) {
        int p = c;
        for (int k = c + 1; k < n; ++k)
            if (fabs(J[k * n + c]) > fabs(J[p * n + c]))
                p = k;
        piv[c] = p;
        if (!(fabs(J[p * n + c]) > 0.0))
            return 0;
        if (p != c)
            for (int l = 0; l < n; ++l) {
                double t = J[c * n + l];
                J[c * n + l] = J[p * n + l];
                J[p * n + l] = t;
            }
        for (int k = c + 1; k < n; ++k) {
            double f = J[k * n + c] / J[c * n + c];
            J[k * n + c] = f;
            if (f != 0.0)
                for (int l = c + 1; l < n; ++l)
                    J[k * n + l] -= f * J[c * n + l];
        }
    }
    return 1;
}

/* r -> J^-1 r with the factors of lu_factor (rows swapped whole: the swaps first, in order). */
static void lu_apply(const double *J, const int *piv, double *r, int n) {
    for (int c = 0; c < n; ++c) {
        double t = r[c];
        r[c] = r[piv[c]];
        r[piv[c]] = t;
    }
    for (int c = 0; c < n; ++c)
        for (int k = c + 1; k < n; ++k)
            r[k] -= J[k * n + c] * r[c];
    for (int c = n - 1; c >= 0; --c) {
        double v = r[c];
        for (int l = c + 1; l < n; ++l)
            v -= J[c * n + l] * r[l];
        r[c] = v / J[c * n + c];
    }
}

static int lu_solve(double *J, double *r, int n) {
    int piv[NMAX];
    if (!lu_factor(J, piv, n))
        return 0;
    lu_apply(J, piv, r, n);
    return 1;
}

/* Newton's method on F from u (in: start, out: solution); 1 on convergence. F is smooth on
 * pieces (each point inside its cone, on its edge, or at its apex), and a Newton step taken with
 * one piece's Jacobian may land on another piece where it does not reduce |F|; the step is then
 * taken again with the Jacobian of the piece it landed on (an active-set step) before the line
 * search halves it. */
static int newton(const problem *P, double *u, double scale) {
    const int n = P->n;
    const size_t nn = (size_t)n * (size_t)n;
    double F[NMAX], Ft[NMAX], ut[NMAX], d[NMAX], d0[NMAX], J[NMAX * NMAX], Jt[NMAX * NMAX],
        LU[NMAX * NMAX];
    const double tol = NEWTON_TOL * scale, stall = fmax(tol, NEWTON_STALL * scale);
    residual(P, u, F, J);
    double f = norm2(F, n);
    for (int it = 0; it < MAX_NEWTON; ++it) {
        if (f <= tol)
            return 1;
        /* The step with the Jacobian at u, then with the one where the last step landed. */
        double ft = INFINITY;
        int jt = 0; /* Jt holds the Jacobian at ut */
        for (int look = 0; look < 4 && !(ft <= 0.5 * f); ++look) {
            memcpy(LU, look == 0 ? J : Jt, nn * sizeof *LU);
            for (int k = 0; k < n; ++k)
                d[k] = -F[k];
            if (!lu_solve(LU, d, n)) {
                if (look == 0)
                    return f <= stall; /* singular at u: nothing to search along */
                break;
            }
            if (look == 0)
                memcpy(d0, d, (size_t)n * sizeof *d0);
            for (int k = 0; k < n; ++k)
                ut[k] = u[k] + d[k];
            residual(P, ut, Ft, Jt);
            jt = 1;
            ft = norm2(Ft, n);
        }
        if (!(ft <= (1.0 - 1e-4) * f)) {
            /* Backtracking along the first piece's direction. */
            double t = 1.0;
            for (; t > 1e-12; t *= 0.5) {
                for (int k = 0; k < n; ++k)
                    ut[k] = u[k] + t * d0[k];
                residual(P, ut, Ft, NULL);
                ft = norm2(Ft, n);
                if (ft <= (1.0 - 1e-4 * t) * f)
                    break;
            }
            if (t <= 1e-12)
                return f <= stall;
            jt = 0;
        }
        memcpy(u, ut, (size_t)n * sizeof *u);
        if (jt) { /* the last look's point: its residual and Jacobian are at hand */
            memcpy(F, Ft, (size_t)n * sizeof *F);
            memcpy(J, Jt, nn * sizeof *J);
        } else {
            residual(P, u, F, J);
        }
        f = ft;
    }
    return f <= stall;
}

/* How far the impulses x = T^-1 v are from the normal conditions: max |g (A x - b)_n|. */
static double infeasibility(const problem *P, const double *v, const double *t) {
    double feas = 0.0;
    for (int q = 0; q < P->r; ++q) {
        const int row = 3 * P->row[q];
        double res = -P->b0[row];
        for (int l = 0; l < 3 * P->s; ++l)
            res += P->A[row][l] * v[l] / t[l];
        feas = fmax(feas, fabs(res) * P->gamma);
    }
    return feas;
}

/* The log-barrier (interior point) method on the convex problem of maximum dissipation: slow
 * (tens of Newton steps) but sure where Newton's method on the nonsmooth equations does not
 * converge from its start (its convergence is local). In the scaled variables v = T x
 * (T = diag(mu, 1, 1) per point), whose cones are the standard one, it minimises
 *     t (1/2 x^T H x - h^T x) - sum_i log(v_i0^2 - |v_i~|^2)   subject to N x = c
 * for growing t, each by Newton's method (the first steps also reaching N x = c), and stops
 * when the barrier's share of the objective, 2 s / t, is below rounding; Newton's method on the
 * equations then polishes. Fails (0) where no impulses inside the cones meet the normal
 * conditions (a point of S must then leave), or it does not converge. */
static int barrier(const problem *P, double *u, double scale) {
    const int s = P->s, m3 = 3 * s, r = P->r, n = m3 + r;
    double v[3 * PMAX], t_[3 * PMAX], K[NMAX * NMAX], rhs[NMAX];
    for (int i = 0; i < s; ++i) {
        t_[3 * i] = P->mu[i];
        t_[3 * i + 1] = t_[3 * i + 2] = 1.0;
        /* Inside every cone, at the impulses' scale. */
        v[3 * i] = scale;
        v[3 * i + 1] = v[3 * i + 2] = 0.0;
    }
    /* The objective's scale: impulses times velocities (scale / gamma). */
    const double fscale = scale * scale / P->gamma;
    double t = 1.0 / fscale;
    int steps = 0;
    for (int outer = 0; outer < 40; ++outer) {
        for (int it = 0; it < 50; ++it, ++steps) {
            /* Within a few tens of steps the first stage meets the normal conditions, or no
             * impulses inside the cones can (a point of S that must leave). */
            if (steps >= BARRIER_STEPS || (outer == 0 && it >= 30))
                return 0;
            /* Gradient and Hessian of t f + phi in v; x = T^-1 v. */
            double grad[3 * PMAX];
            memset(K, 0, sizeof K);
            for (int k = 0; k < m3; ++k) {
                double gk = -P->b[k];
                for (int l = 0; l < m3; ++l) {
                    gk += (P->A[k][l] + (k == l ? P->eps : 0.0)) * v[l] / t_[l];
                    K[k * n + l] = t * (P->A[k][l] + (k == l ? P->eps : 0.0)) / (t_[k] * t_[l]);
                }
                grad[k] = t * gk / t_[k];
            }
            for (int i = 0; i < s; ++i) {
                const double *vi = v + 3 * i;
                const double Jv[3] = {vi[0], -vi[1], -vi[2]};
                double d = vi[0] * vi[0] - vi[1] * vi[1] - vi[2] * vi[2];
                for (int a = 0; a < 3; ++a) {
                    grad[3 * i + a] -= 2.0 * Jv[a] / d;
                    for (int c = 0; c < 3; ++c)
                        K[(3 * i + a) * n + 3 * i + c] +=
                            4.0 * Jv[a] * Jv[c] / (d * d) -
                            (a == c ? (a == 0 ? 2.0 : -2.0) / d : 0.0);
                }
            }
            double feas = 0.0;
            for (int q = 0; q < r; ++q) {
                const int row = 3 * P->row[q];
                double res = -P->b0[row];
                for (int l = 0; l < m3; ++l) {
                    K[(m3 + q) * n + l] = K[l * n + m3 + q] = P->A[row][l] / t_[l];
                    res += P->A[row][l] * v[l] / t_[l];
                }
                rhs[m3 + q] = -res;
                feas = fmax(feas, fabs(res) * P->gamma);
            }
            for (int k = 0; k < m3; ++k)
                rhs[k] = -grad[k];
            double dec = 0.0;
            if (!lu_solve(K, rhs, n))
                return 0;
            for (int k = 0; k < m3; ++k)
                dec -= rhs[k] * grad[k];
            /* The longest step that stays inside every cone (x 0.99), at most 1. */
            double alpha = 1.0;
            for (int i = 0; i < s; ++i) {
                for (int halve = 0; halve < 60; ++halve) {
                    const double *vi = v + 3 * i, *di = rhs + 3 * i;
                    double w0 = vi[0] + alpha * di[0], w1 = vi[1] + alpha * di[1],
                           w2 = vi[2] + alpha * di[2];
                    if (w0 > 0.0 && w0 * w0 - w1 * w1 - w2 * w2 > 0.0)
                        break;
                    alpha *= 0.5;
                }
            }
            alpha *= alpha < 1.0 ? 0.99 : 1.0;
            for (int k = 0; k < m3; ++k)
                v[k] += alpha * rhs[k];
            for (int q = 0; q < r; ++q)
                u[m3 + q] = -rhs[m3 + q] / t;
            /* Newton's decrement at rounding (it is noisy there at large t), or enough steps. */
            if (feas <= 1e-12 * scale && alpha == 1.0 && (fabs(dec) <= 1e-6 || it >= 12))
                break;
        }
        /* The normal conditions met inside the cones after the first stage, or none can be. */
        if (outer == 0 && !(infeasibility(P, v, t_) <= 1e-9 * scale))
            return 0;
        if (2.0 * s / t <= BARRIER_GAP * fscale)
            break;
        t *= 20.0;
    }
    for (int k = 0; k < m3; ++k)
        u[k] = v[k] / t_[k];
    return infeasibility(P, v, t_) <= 1e-9 * scale;
}

static int all_finite(int m, const double *A, const double *b, const double *mu, const double *x0) {
    double sum = 0.0;
    for (int k = 0; k < 9 * m * m; ++k)
        sum += 0.0 * A[k];
    for (int k = 0; k < 3 * m; ++k)
        sum += 0.0 * b[k] + 0.0 * x0[k];
    for (int i = 0; i < m; ++i)
        sum += mu[i] < 0.0 ? NAN : 0.0 * mu[i];
    return isfinite(sum);
}

/* Newton's starting point: a few point-by-point sweeps of the single-contact kernels over the
 * points (the solver's old answer, close to the joint one). */
static void start(const problem *P, double *u) {
    const int s = P->s, m3 = 3 * s;
    for (int sweep = 0; sweep < START_SWEEPS; ++sweep) {
        double change = 0.0, size = 0.0;
        for (int i = 0; i < s; ++i) {
            double Ai[9], bi[3], xi[3];
            for (int a = 0; a < 3; ++a) {
                double v = P->b[3 * i + a];
                for (int l = 0; l < m3; ++l)
                    if (l / 3 != i)
                        v -= P->A[3 * i + a][l] * u[l];
                bi[a] = v;
                for (int c = 0; c < 3; ++c)
                    Ai[3 * a + c] = P->A[3 * i + a][3 * i + c];
            }
            if ((P->coulomb ? gf_contact_kernel_coulomb(Ai, bi, P->mu[i], xi)
                            : gf_contact_kernel_maxdiss(Ai, bi, P->mu[i], xi)) != GF_OK)
                gf_error_clear();
            for (int a = 0; a < 3; ++a) {
                change = fmax(change, fabs(xi[a] - u[3 * i + a]));
                size = fmax(size, fabs(xi[a]));
                u[3 * i + a] = xi[a];
            }
        }
        if (change <= 1e-3 * size)
            break;
    }
}

/* For maximum dissipation the multipliers y of the normal conditions imposed, for Newton's
 * start: at a solution each point's z_i = g_i - (N^T y)_i is 0 where the point sticks (inside
 * its cone) and sigma_i (mu, -d_i) where it slides in direction d_i (on the cone's edge, sigma_i
 * >= 0); least squares in y and the sigmas over those conditions (exact at a solution), for the
 * impulses of the start. */
static void multipliers(const problem *P, double *u) {
    const int s = P->s, m3 = 3 * s, r = P->r;
    if (P->coulomb || r == 0)
        return;
    /* Unknowns: y (r), then one sigma per sliding point; rows: 3 per point not at its apex. */
    double G[3 * PMAX][2 * PMAX], h[3 * PMAX];
    int rows = 0, nu = r;
    for (int i = 0; i < s; ++i) {
        const double *xi = u + 3 * i;
        double t = hypot(xi[1], xi[2]);
        if (!(xi[0] > 0.0))
            continue;
        int sliding = t >= (1.0 - 1e-9) * P->mu[i] * xi[0];
        for (int a = 0; a < 3; ++a) {
            double g = P->eps * u[3 * i + a] - P->b[3 * i + a];
            for (int l = 0; l < m3; ++l)
                g += P->A[3 * i + a][l] * u[l];
            h[rows + a] = g;
            for (int q = 0; q < 2 * PMAX; ++q)
                G[rows + a][q] = 0.0;
            for (int q = 0; q < r; ++q)
                G[rows + a][q] = P->A[3 * i + a][3 * P->row[q]];
        }
        if (sliding && t > 0.0) {
            G[rows][nu] = P->mu[i];
            G[rows + 1][nu] = -xi[1] / t;
            G[rows + 2][nu] = -xi[2] / t;
            ++nu;
        }
        rows += 3;
    }
    double M[2 * PMAX * 2 * PMAX], y[2 * PMAX], tr = 0.0;
    for (int q = 0; q < nu; ++q) {
        y[q] = 0.0;
        for (int k = 0; k < rows; ++k)
            y[q] += G[k][q] * h[k];
        for (int p2 = 0; p2 < nu; ++p2) {
            double v = 0.0;
            for (int k = 0; k < rows; ++k)
                v += G[k][q] * G[k][p2];
            M[q * nu + p2] = v;
        }
        tr += M[q * nu + q];
    }
    for (int q = 0; q < nu; ++q)
        M[q * nu + q] += 1e-12 * tr + DBL_MIN;
    for (int q = 0; q < r; ++q)
        u[m3 + q] = 0.0;
    if (nu == 0 || !lu_solve(M, y, nu))
        return;
    for (int q = 0; q < r; ++q)
        u[m3 + q] = y[q];
}

/* The points whose normal conditions are independent (rows of A_NN by pivoted Cholesky): a face's
 * fourth point repeats what three say of a rigid body's motion. Returns how many, in P->row. */
static int independent_normals(problem *P) {
    const int s = P->s;
    double M[PMAX][PMAX], top = 0.0;
    int used[PMAX] = {0}, r = 0;
    for (int i = 0; i < s; ++i) {
        for (int j = 0; j < s; ++j)
            M[i][j] = P->A[3 * i][3 * j];
        top = fmax(top, M[i][i]);
    }
    for (int k = 0; k < s; ++k) {
        int p = -1;
        for (int i = 0; i < s; ++i)
            if (!used[i] && (p < 0 || M[i][i] > M[p][p]))
                p = i;
        if (!(M[p][p] > INDEPENDENT * top))
            break;
        used[p] = 1;
        for (int i = 0; i < s; ++i)
            for (int j = 0; j < s; ++j)
                if (!used[i] && !used[j])
                    M[i][j] -= M[i][p] * M[p][j] / M[p][p];
    }
    for (int i = 0; i < s; ++i)
        if (used[i])
            P->row[r++] = i;
    return r;
}

/* The sub-problem of the points S (s of them) of the m-point problem, with the proximal weight
 * eps; *bmax: the largest |b|. */
static void build(problem *P, int m, const double *A, const double *b, const double *mu, double eps,
                  const int *S, int s, int coulomb, double *bmax) {
    P->s = s;
    P->coulomb = coulomb;
    P->eps = eps;
    double diag = 0.0;
    *bmax = 0.0;
    for (int i = 0; i < s; ++i) {
        P->mu[i] = mu[S[i]];
        for (int a = 0; a < 3; ++a) {
            int k = 3 * S[i] + a;
            for (int j = 0; j < s; ++j)
                for (int c = 0; c < 3; ++c)
                    P->A[3 * i + a][3 * j + c] = A[k * 3 * m + 3 * S[j] + c];
            P->b[3 * i + a] = P->b0[3 * i + a] = b[k];
            diag += P->A[3 * i + a][3 * i + a];
            *bmax = fmax(*bmax, fabs(b[k]));
        }
    }
    P->gamma = 3.0 * s / diag;
    P->r = coulomb ? 0 : independent_normals(P);
    P->n = 3 * s + P->r;
}

/* The problem with point i alone loaded is the paper's single-contact problem on its block
 * when b_n >= 0 (its analytic kernel); with b_n < 0 only a pull could hold the point. */
static int solve_one(int m, const double *A, const double *b, const double *mu, int i, double *x) {
    double Ai[9];
    for (int a = 0; a < 3; ++a)
        for (int c = 0; c < 3; ++c)
            Ai[3 * a + c] = A[(3 * i + a) * 3 * m + 3 * i + c];
    memset(x, 0, (size_t)(3 * m) * sizeof *x);
    if (!(b[3 * i] >= 0.0))
        return 0;
    if (gf_contact_kernel_maxdiss(Ai, b + 3 * i, mu[i], x + 3 * i) != GF_OK) {
        gf_error_clear();
        return 0;
    }
    return 1;
}

/* Solves the problem on the points listed in S from the impulses xs (all m points), proximal
 * to x0; x: the result for all m points (zeros off S). 1 on success. */
static int solve_subset(int m, const double *A, const double *b, const double *mu, double eps,
                        const double *x0, const double *xs, const int *S, int s, int coulomb,
                        int passes, double *y, double *x) {
    if (y)
        for (int i = 0; i < m; ++i)
            y[i] = 0.0;
    if (s == 1 && !coulomb)
        return solve_one(m, A, b, mu, S[0], x);
    problem P;
    double bmax;
    build(&P, m, A, b, mu, eps, S, s, coulomb, &bmax);
    double u[NMAX], xmax = 0.0;
    for (int i = 0; i < s; ++i)
        for (int a = 0; a < 3; ++a) {
            u[3 * i + a] = xs[3 * S[i] + a];
            xmax = fmax(xmax, fabs(u[3 * i + a]));
        }
    /* The multipliers: as the last call left them (the solver's previous sweep), else
     * estimated. */
    int warm = 0;
    for (int q = 0; q < P.r; ++q)
        warm |= xs[3 * m + S[P.row[q]]] != 0.0;
    if (warm)
        for (int q = 0; q < P.r; ++q)
            u[3 * s + q] = xs[3 * m + S[P.row[q]]];
    else
        multipliers(&P, u);
    double scale = fmax(bmax * P.gamma, xmax);
    if (!(scale > 0.0))
        scale = DBL_MIN;
    /* Proximal passes: A + eps I with b + eps c is the problem plus eps/2 |x - c|^2. The first
     * centres on x0, each next one on the last answer, so the term's pull shrinks by
     * eps / (eps + the curvature) per pass and the answer solves the problem with A itself;
     * what the problem leaves open (the split of a face's load between its points, which moves
     * nothing) stays where x0 has it: the least split from x0 = 0, continuous in time from a
     * warm start. */
    int ok = 0;
    for (int pass = 0; pass < passes; ++pass) {
        for (int i = 0; i < s; ++i)
            for (int a = 0; a < 3; ++a) {
                int k = 3 * i + a;
                P.b[k] = P.b0[k] + eps * (pass == 0 ? x0[3 * S[i] + a] : u[k]);
            }
        double first[NMAX];
        memcpy(first, u, sizeof first);
        ok = newton(&P, u, scale);
        if (!ok && passes > 1) {
            memcpy(u, first, sizeof first);
            ok = barrier(&P, u, scale);
            double rough[NMAX];
            memcpy(rough, u, sizeof rough);
            if (ok && !newton(&P, u, scale))
                memcpy(u, rough, sizeof rough);
        }
        /* A stalled Newton iteration must still have found an answer. */
        if (ok) {
            double F[NMAX];
            residual(&P, u, F, NULL);
            ok = norm_inf(F, P.n) <= ACCEPT * scale;
        }
        if (!ok)
            break;
        double change = 0.0;
        for (int k = 0; k < 3 * s; ++k)
            change = fmax(change, fabs(u[k] - first[k]));
        if (pass > 0 && change <= 16.0 * DBL_EPSILON * scale)
            break;
    }
    if (y)
        for (int q = 0; q < P.r; ++q)
            y[S[P.row[q]]] = u[3 * s + q];
    /* Into the cones exactly (a move by at most the residual). */
    memset(x, 0, (size_t)(3 * m) * sizeof *x);
    for (int i = 0; i < s; ++i) {
        double D[9];
        project_cone(u + 3 * i, P.mu[i], x + 3 * S[i], D);
    }
    return ok;
}

/* The normal velocity of point i after the impulses x. */
static double normal_velocity(int m, const double *A, const double *b, const double *x, int i) {
    double v = -b[3 * i];
    for (int l = 0; l < 3 * m; ++l)
        v += A[3 * i * 3 * m + l] * x[l];
    return v;
}

/* The objective 1/2 x^T A x - x^T b of all m points. */
static double objective(int m, const double *A, const double *b, const double *x) {
    double f = 0.0;
    for (int k = 0; k < 3 * m; ++k) {
        double ax = 0.0;
        for (int l = 0; l < 3 * m; ++l)
            ax += A[k * 3 * m + l] * x[l];
        f += x[k] * (0.5 * ax - b[k]);
    }
    return f;
}

/* Every non-empty set of loaded points: of the answers in which no other point approaches, the
 * one of least energy (maximum dissipation over the consistent sets). 1 if there is one. */
static int enumerate_sets(int m, const double *A, const double *b, const double *mu, double eps,
                          const double *x0, const double *xs, double bmax, int passes, double *y,
                          double *x) {
    double best = INFINITY, trial[3 * PMAX], ytrial[PMAX], diag = eps / REGULARISE;
    for (unsigned set = 1; set < (1u << m); ++set) {
        int S[PMAX], s = 0;
        for (int i = 0; i < m; ++i)
            if (set & (1u << i))
                S[s++] = i;
        if (!solve_subset(m, A, b, mu, eps, x0, xs, S, s, 0, passes, ytrial, trial))
            continue;
        double vtol = 1e-11 * fmax(bmax, diag * norm_inf(trial, 3 * m));
        int consistent = 1;
        for (int i = 0; i < m && consistent; ++i)
            consistent = (set & (1u << i)) || normal_velocity(m, A, b, trial, i) >= -vtol;
        double f = consistent ? objective(m, A, b, trial) : INFINITY;
        if (f < best) {
            best = f;
            memcpy(x, trial, (size_t)(3 * m) * sizeof *x);
            if (y)
                memcpy(y, ytrial, (size_t)m * sizeof *y);
        }
    }
    return best < INFINITY;
}

/* No point would approach without impulses and none carries one: nothing to do (x = 0 meets
 * every condition). NaN fails the test and goes on to the checks. */
static int separating(int m, const double *b, const double *x0) {
    for (int k = 0; k < 3 * m; ++k)
        if (!(x0[k] == 0.0))
            return 0;
    for (int i = 0; i < m; ++i)
        if (!(b[3 * i] <= 0.0))
            return 0;
    return 1;
}

static gf_status failed(int m, const double *x0, double *x, const char *why) {
    memcpy(x, x0, (size_t)(3 * m) * sizeof *x);
    return GF_ERROR(GF_ERR_NUMERIC, "joint contact manifold kernel (%d points): %s", m, why);
}

/* The checks of the input, the regularisation and the point-by-point start (xs) of both. */
static gf_status prepare(int m, const double *A, const double *b, const double *mu,
                         const double *x0, const double *y0, int coulomb, double *eps, double *bmax,
                         double *xs, double *x) {
    if (m < 1 || m > PMAX) {
        memset(x, 0, (size_t)(m > 0 ? 3 * m : 0) * sizeof *x);
        return GF_ERROR(GF_ERR_INPUT, "joint contact manifold kernel: %d points (1 to %d)", m,
                        PMAX);
    }
    if (!all_finite(m, A, b, mu, x0))
        return failed(m, x0, x, "input is not finite");
    double diag = 0.0;
    for (int k = 0; k < 3 * m; ++k)
        diag += A[k * 3 * m + k];
    if (!(diag > 0.0))
        return failed(m, x0, x, "the Delassus matrix is not positive");
    *eps = REGULARISE * diag / (3.0 * m);
    *bmax = 0.0;
    for (int k = 0; k < 3 * m; ++k)
        *bmax = fmax(*bmax, fabs(b[k]));
    /* From the warm start (the solver's current impulses and the multipliers of its last
     * call), or from a few point-by-point sweeps. */
    memcpy(xs, x0, (size_t)(3 * m) * sizeof *xs);
    for (int i = 0; i < m; ++i)
        xs[3 * m + i] = y0 ? y0[i] : 0.0;
    if (norm_inf(x0, 3 * m) == 0.0) {
        int all[PMAX];
        for (int i = 0; i < m; ++i)
            all[i] = i;
        problem P;
        double unused;
        build(&P, m, A, b, mu, *eps, all, m, coulomb, &unused);
        start(&P, xs);
    }
    return GF_OK;
}

gf_status gf_manifold_kernel_maxdiss(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, double *y, int exact, double *x) {
    const int passes = exact ? PASSES : 1;
    double eps, bmax, xs[4 * PMAX];
    if (m >= 1 && m <= PMAX && separating(m, b, x0)) {
        memset(x, 0, (size_t)(3 * m) * sizeof *x);
        if (y)
            memset(y, 0, (size_t)m * sizeof *y);
        return GF_OK;
    }
    GF_TRY(prepare(m, A, b, mu, x0, y, 0, &eps, &bmax, xs, x));
    /* The points that would approach without impulses, or carry a load, are the first guess of
     * those loaded; the loop adds those the others' impulses push into contact. */
    int in[PMAX], S[PMAX], s = 0;
    for (int i = 0; i < m; ++i)
        in[i] = b[3 * i] > 0.0 || x0[3 * i] > 0.0;
    double trial[3 * PMAX], ytrial[PMAX], diag = eps / REGULARISE;
    for (int round = 0; round < 4 * m; ++round) {
        s = 0;
        for (int i = 0; i < m; ++i)
            if (in[i])
                S[s++] = i;
        if (s == 0) {
            memset(x, 0, (size_t)(3 * m) * sizeof *x);
            if (y)
                memset(y, 0, (size_t)m * sizeof *y);
        } else if (!solve_subset(m, A, b, mu, eps, x0, xs, S, s, 0, passes, y, x)) {
            /* No impulses in the cones hold all of S: the least loaded of the start leaves. */
            int drop = S[0];
            for (int k = 1; k < s; ++k)
                if (xs[3 * S[k]] < xs[3 * drop])
                    drop = S[k];
            in[drop] = 0;
            continue;
        }
        double xmax = norm_inf(x, 3 * m);
        double vtol = 1e-11 * fmax(bmax, diag * xmax);
        /* The point off S that approaches fastest joins; one that stays in touch joins too, so
         * that a face's load is spread over all its points that touch (the least split) rather
         * than held by the first three found. */
        int add = -1;
        double worst = vtol;
        for (int i = 0; i < m; ++i) {
            if (in[i])
                continue;
            double v = normal_velocity(m, A, b, x, i);
            if (v < worst) {
                worst = v;
                add = i;
            }
        }
        if (add >= 0) {
            in[add] = 1;
            continue;
        }
        /* A point of S without load leaves if it then separates (moves away, not only stays in
         * touch). */
        int changed = 0;
        for (int i = 0; i < m && !changed; ++i) {
            if (!in[i] || x[3 * i] > 1e-12 * xmax)
                continue;
            int T[PMAX], t = 0;
            for (int j = 0; j < m; ++j)
                if (in[j] && j != i)
                    T[t++] = j;
            if (t > 0 && !solve_subset(m, A, b, mu, eps, x0, xs, T, t, 0, passes, ytrial, trial))
                continue;
            if (t == 0) {
                memset(trial, 0, (size_t)(3 * m) * sizeof *trial);
                memset(ytrial, 0, (size_t)m * sizeof *ytrial);
            }
            if (normal_velocity(m, A, b, trial, i) > vtol) {
                in[i] = 0;
                if (y)
                    memcpy(y, ytrial, (size_t)m * sizeof *y);
                changed = 1;
            }
        }
        if (!changed)
            return GF_OK;
    }
    /* The loop did not settle (or no impulses held a set): every set of loaded points is tried
     * and the consistent answer of least energy kept (2^m - 1 sets: small manifolds only). */
    if (exact && m <= ENUMERATE_MAX && enumerate_sets(m, A, b, mu, eps, x0, xs, bmax, passes, y, x))
        return GF_OK;
    if (y)
        memset(y, 0, (size_t)m * sizeof *y);
    return failed(m, x0, x, "the set of loaded points did not settle");
}

gf_status gf_manifold_kernel_coulomb(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, int exact, double *x) {
    const int passes = exact ? PASSES : 1;
    double eps, bmax, xs[4 * PMAX];
    if (m >= 1 && m <= PMAX && separating(m, b, x0)) {
        memset(x, 0, (size_t)(3 * m) * sizeof *x);
        return GF_OK;
    }
    GF_TRY(prepare(m, A, b, mu, x0, NULL, 1, &eps, &bmax, xs, x));
    int S[PMAX];
    for (int i = 0; i < m; ++i)
        S[i] = i;
    if (!solve_subset(m, A, b, mu, eps, x0, xs, S, m, 1, passes, NULL, x))
        return failed(m, x0, x, "Newton's method did not converge");
    return GF_OK;
}
