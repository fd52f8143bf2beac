/* The joint kernel of a contact manifold (manifold_kernel.h; README, "Contact manifolds").
 *
 * Maximum dissipation. For a set S of loaded points the problem
 *     min 1/2 x^T A x - x^T b   over x_S in the cones, x_i = 0 off S,   (A x - b)_n,i = 0 on S
 * is convex; its optimality conditions, with y the multipliers of the normal conditions and
 * z = A x - b - N^T y (N: the normal rows of A), are z in the dual cone, orthogonal to x. With
 * the Euclidean projection onto a cone (Moreau: x = P_K(x - g z) for any g > 0 says exactly
 * that) they are the equations
 *     F1 = x - P_K(x - g z) = 0,      F2 = g (A x - b)_n,S = 0,
 * solved by a semismooth Newton method with a backtracking line search on |F|, from the
 * point-by-point answer (close to the joint one). Where Newton's method does not converge from
 * there (its convergence is local), the alternating direction method of multipliers (sure,
 * slow) gets close and Newton's method polishes. Which points are loaded follows from an
 * active-set loop: a point off S that would approach joins, a point of S that carries nothing
 * and would separate once freed leaves, and when no impulses in the cones can hold all of S the
 * least loaded point leaves. For one point this is the paper's problem: sticking (x = A^-1 b) or
 * the conic section of the plane (A x - b)_n = 0 and the cone (KERNEL.md, steps 3 and 7).
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
 * one nearest the warm start (the least from a cold start), unique and continuous in time, the
 * normal conditions are independent, and Newton's matrix is regular. */
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
#define MAX_NEWTON 60
#define ACCEPT 1e-9
/* A normal condition is taken as implied by the others when its pivot falls below this share of
 * the largest diagonal entry. */
#define INDEPENDENT 1e-9
/* Points of a manifold whose every set of loaded points may be tried. */
#define ENUMERATE_MAX 4
/* Proximal passes at most. */
#define PASSES 12

/* One sub-problem: the points of S and what the residual needs. */
typedef struct {
    int s;       /* points */
    int coulomb; /* the Coulomb law instead of maximum dissipation */
    int n;       /* unknowns: 3 s (+ r multipliers for maximum dissipation) */
    int r;               /* normal conditions imposed: those of points row[0 .. r-1] */
    int row[PMAX];
    double A[3 * PMAX][3 * PMAX];
    double eps;          /* the proximal term's weight */
    double b0[3 * PMAX]; /* b */
    double b[3 * PMAX];  /* b + eps times the centre of the proximal term */
    double mu[PMAX];
    double gamma; /* 1 / mean diagonal */
    double tau;   /* > 0: the smoothed equations (see smooth_newton) */
} problem;

/* Projection of w onto the cone |x_t| <= mu x_n, and its derivative D (3 x 3, row-major). */
static void project_cone(const double w[3], double mu, double p[3], double D[9]) {
    double r = hypot(w[1], w[2]);
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

/* The projection onto the standard cone {w0 >= |(w1, w2)|} smoothed (Chen-Harker-Kanzow-Smale):
 * with the spectral values l1,2 = w0 -/+ |w~| each max(0, l) becomes (l + sqrt(l^2 + 4 tau^2))/2,
 * a smooth map that tends to the projection as tau -> 0; and its Jacobian D. */
static void project_soc_smooth(const double w[3], double tau, double p[3], double D[9]) {
    double r = hypot(w[1], w[2]), l1 = w[0] - r, l2 = w[0] + r, t4 = 4.0 * tau * tau;
    double s1 = sqrt(l1 * l1 + t4), s2 = sqrt(l2 * l2 + t4);
    double f1 = 0.5 * (l1 + s1), f2 = 0.5 * (l2 + s2);
    double d1 = 0.5 * (1.0 + l1 / s1), d2 = 0.5 * (1.0 + l2 / s2);
    double u[2] = {1.0, 0.0};
    if (r > 0.0) {
        u[0] = w[1] / r;
        u[1] = w[2] / r;
    }
    p[0] = 0.5 * (f1 + f2);
    p[1] = 0.5 * (f2 - f1) * u[0];
    p[2] = 0.5 * (f2 - f1) * u[1];
    /* b, c: the derivatives along w0 and |w~|; a = (f2 - f1) / (l2 - l1), its limit b at r = 0. */
    double b = 0.5 * (d1 + d2), c = 0.5 * (d2 - d1);
    double a = r > 1e-12 * (fabs(w[0]) + tau) ? (f2 - f1) / (l2 - l1) : b;
    D[0] = b;
    D[1] = D[3] = c * u[0];
    D[2] = D[6] = c * u[1];
    D[4] = a + (b - a) * u[0] * u[0];
    D[5] = D[7] = (b - a) * u[0] * u[1];
    D[8] = a + (b - a) * u[1] * u[1];
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
        for (int k = 0; k < m3; ++k)
            for (int l = 0; l < m3; ++l)
                dz[k][l] = P->A[k][l] + (k == l ? P->eps : 0.0);
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
                        P->mu[i] * (g[3 * i + 1] * dz[3 * i + 1][l] + g[3 * i + 2] * dz[3 * i + 2][l]) / r;
        }
    }
    if (J)
        memset(J, 0, (size_t)n * (size_t)n * sizeof *J);
    for (int i = 0; i < s; ++i) {
        /* Smoothed: in the scaled variables T x (T = diag(mu, 1, 1)), whose cone is the standard
         * one, and T^-1 z. */
        const double t[3] = {P->tau > 0.0 ? P->mu[i] : 1.0, 1.0, 1.0};
        double w[3], p[3], D[9];
        for (int a = 0; a < 3; ++a)
            w[a] = t[a] * x[3 * i + a] - P->gamma * z[3 * i + a] / t[a];
        if (P->tau > 0.0)
            project_soc_smooth(w, P->tau, p, D);
        else
            project_cone(w, P->mu[i], p, D);
        for (int a = 0; a < 3; ++a)
            F[3 * i + a] = t[a] * x[3 * i + a] - p[a];
        if (!J)
            continue;
        /* dF1/dx = T - D (T - g T^-1 dz/dx), dF1/dy = -D g T^-1 N^T. */
        for (int a = 0; a < 3; ++a) {
            double *row = J + (size_t)(3 * i + a) * (size_t)n;
            row[3 * i + a] += t[a];
            for (int c = 0; c < 3; ++c) {
                double dac = D[3 * a + c];
                if (dac == 0.0)
                    continue;
                row[3 * i + c] -= dac * t[c];
                double gc = P->gamma * dac / t[c];
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

/* r -> J^-1 r with the factors of lu_factor. */
static void lu_apply(const double *J, const int *piv, double *r, int n) {
    for (int c = 0; c < n; ++c) {
        double t = r[c];
        r[c] = r[piv[c]];
        r[piv[c]] = t;
        for (int k = c + 1; k < n; ++k)
            r[k] -= J[k * n + c] * r[c];
    }
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
    double F[NMAX], Ft[NMAX], ut[NMAX], d[NMAX], J[NMAX * NMAX], Jt[NMAX * NMAX];
    /* A smoothed stage needs its answer only well within its smoothing. */
    const double tol = P->tau > 0.0 ? 1e-3 * P->tau : NEWTON_TOL * scale;
    residual(P, u, F, J);
    double f = norm2(F, n);
    for (int it = 0; it < MAX_NEWTON; ++it) {
        if (f <= tol)
            return 1;
        double ft = INFINITY;
        for (int look = 0; look < 4 && !(ft <= 0.5 * f); ++look) {
            for (int k = 0; k < n; ++k)
                d[k] = -F[k];
            if (!lu_solve(look == 0 ? J : Jt, d, n))
                break;
            for (int k = 0; k < n; ++k)
                ut[k] = u[k] + d[k];
            residual(P, ut, Ft, Jt);
            ft = norm2(Ft, n);
            if (look == 0)
                residual(P, u, F, J); /* lu_solve overwrote J: kept for the line search */
        }
        if (!(ft <= (1.0 - 1e-4) * f)) {
            /* Backtracking along the first piece's direction. */
            for (int k = 0; k < n; ++k)
                d[k] = -F[k];
            if (!lu_solve(J, d, n))
                return f <= fmax(tol, NEWTON_STALL * scale);
            double t = 1.0;
            for (; t > 1e-12; t *= 0.5) {
                for (int k = 0; k < n; ++k)
                    ut[k] = u[k] + t * d[k];
                residual(P, ut, Ft, NULL);
                ft = norm2(Ft, n);
                if (ft <= (1.0 - 1e-4 * t) * f)
                    break;
            }
            if (t <= 1e-12)
                return f <= fmax(tol, NEWTON_STALL * scale);
        }
        memcpy(u, ut, (size_t)n * sizeof *u);
        residual(P, u, F, J);
        f = norm2(F, n);
    }
    return f <= fmax(tol, NEWTON_STALL * scale);
}

/* The smoothing Newton method: the equations with the smoothed projection of
 * project_soc_smooth are smooth, and Newton's method follows their solution from a wide
 * smoothing (tau ~ the impulses' scale: far from every kink) down to none, each stage from the
 * last one's answer; then Newton's method on the equations themselves polishes. Slower than
 * Newton's method alone, but it does not stall at the kinks where a point's impulse is at the
 * edge of its cone or at its apex (a face's unloaded corner). 1 on convergence. */
static int smooth_newton(problem *P, double *u, double scale) {
    int ok = 1;
    for (double tau = 0.1 * scale; tau > 1e-13 * scale && ok; tau *= 0.1) {
        P->tau = tau;
        ok = newton(P, u, scale);
    }
    P->tau = 0.0;
    return ok && newton(P, u, scale);
}

static int all_finite(int m, const double *A, const double *b, const double *mu,
                      const double *x0) {
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
    for (int sweep = 0; sweep < 8; ++sweep) {
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

/* For maximum dissipation the multiplier of each normal condition imposed from its point's own
 * optimality condition, (g_i - a_i y_i) . x_i = 0 with a_i the column of its normal. */
static void multipliers(const problem *P, double *u) {
    const int m3 = 3 * P->s;
    if (P->coulomb)
        return;
    for (int q = 0; q < P->r; ++q) {
        int i = P->row[q];
        double gx = 0.0, ax = 0.0;
        for (int a = 0; a < 3; ++a) {
            double g = -P->b[3 * i + a];
            for (int l = 0; l < m3; ++l)
                g += P->A[3 * i + a][l] * u[l];
            gx += g * u[3 * i + a];
            ax += P->A[3 * i + a][3 * i] * u[3 * i + a];
        }
        u[m3 + q] = ax > 0.0 ? gx / ax : 0.0;
    }
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
static void build(problem *P, int m, const double *A, const double *b, const double *mu,
                  double eps, const int *S, int s, int coulomb, double *bmax) {
    P->s = s;
    P->coulomb = coulomb;
    P->eps = eps;
    P->tau = 0.0;
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

/* Solves the problem on the points listed in S from the impulses xs (all m points), proximal
 * to x0; x: the result for all m points (zeros off S). 1 on success. */
static int solve_subset(int m, const double *A, const double *b, const double *mu, double eps,
                        const double *x0, const double *xs, const int *S, int s, int coulomb,
                        int passes, double *x) {
    problem P;
    double bmax;
    build(&P, m, A, b, mu, eps, S, s, coulomb, &bmax);
    double u[NMAX], xmax = 0.0;
    for (int i = 0; i < s; ++i)
        for (int a = 0; a < 3; ++a) {
            u[3 * i + a] = xs[3 * S[i] + a];
            xmax = fmax(xmax, fabs(u[3 * i + a]));
        }
    multipliers(&P, u);
    double scale = fmax(bmax * P.gamma, xmax);
    if (!(scale > 0.0))
        scale = DBL_MIN;
    /* Proximal passes: A + eps I with b + eps c is the problem plus eps/2 |x - c|^2. The first
     * centres on x0 (among impulses that do the same to the bodies it keeps the one nearest the
     * warm start: the least from a cold start, and continuous in time after); each next one on
     * the last answer, so the regularisation's pull on the rest shrinks by eps / (eps + the
     * curvature) per pass and the answer solves the problem with A itself. */
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
        if (!ok) {
            memcpy(u, first, sizeof first);
            ok = smooth_newton(&P, u, scale);
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
                          const double *x0, const double *xs, double bmax, int passes,
                          double *x) {
    double best = INFINITY, trial[3 * PMAX], diag = eps / REGULARISE;
    for (unsigned set = 1; set < (1u << m); ++set) {
        int S[PMAX], s = 0;
        for (int i = 0; i < m; ++i)
            if (set & (1u << i))
                S[s++] = i;
        if (!solve_subset(m, A, b, mu, eps, x0, xs, S, s, 0, passes, trial))
            continue;
        double vtol = 1e-11 * fmax(bmax, diag * norm_inf(trial, 3 * m));
        int consistent = 1;
        for (int i = 0; i < m && consistent; ++i)
            consistent = (set & (1u << i)) || normal_velocity(m, A, b, trial, i) >= -vtol;
        double f = consistent ? objective(m, A, b, trial) : INFINITY;
        if (f < best) {
            best = f;
            memcpy(x, trial, (size_t)(3 * m) * sizeof *x);
        }
    }
    return best < INFINITY;
}

static gf_status failed(int m, const double *x0, double *x, const char *why) {
    memcpy(x, x0, (size_t)(3 * m) * sizeof *x);
    return GF_ERROR(GF_ERR_NUMERIC, "joint contact manifold kernel (%d points): %s", m, why);
}

/* The checks of the input, the regularisation and the point-by-point start (xs) of both. */
static gf_status prepare(int m, const double *A, const double *b, const double *mu,
                         const double *x0, int coulomb, double *eps, double *bmax, double *xs,
                         double *x) {
    if (m < 1 || m > PMAX)
        return failed(m < 1 ? 0 : m, x0, x, "too many points");
    if (!all_finite(m, A, b, mu, x0))
        return failed(m, x0, x, "input is not finite");
    double diag = 0.0;
    for (int k = 0; k < 3 * m; ++k)
        diag += A[k * 3 * m + k];
    if (!(diag > 0.0))
        return failed(m, x0, x, "the Delassus matrix is not positive");
    *eps = REGULARISE * diag / (3.0 * m);
    int all[PMAX];
    for (int i = 0; i < m; ++i)
        all[i] = i;
    problem P;
    build(&P, m, A, b, mu, *eps, all, m, coulomb, bmax);
    /* From the warm start where there is one (the solver's current impulses). */
    memcpy(xs, x0, (size_t)(3 * m) * sizeof *xs);
    if (norm_inf(x0, 3 * m) == 0.0)
        start(&P, xs);
    return GF_OK;
}

gf_status gf_manifold_kernel_maxdiss(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, int exact, double *x) {
    const int passes = exact ? PASSES : 1;
    double eps, bmax, xs[3 * PMAX];
    GF_TRY(prepare(m, A, b, mu, x0, 0, &eps, &bmax, xs, x));
    /* The points the point-by-point answer loads are the first guess of those loaded. */
    int in[PMAX], S[PMAX], s = 0;
    for (int i = 0; i < m; ++i)
        in[i] = xs[3 * i] > 0.0;
    double trial[3 * PMAX], diag = eps / REGULARISE;
    for (int round = 0; round < 4 * m; ++round) {
        s = 0;
        for (int i = 0; i < m; ++i)
            if (in[i])
                S[s++] = i;
        if (s == 0) {
            memset(x, 0, (size_t)(3 * m) * sizeof *x);
        } else if (!solve_subset(m, A, b, mu, eps, x0, xs, S, s, 0, passes, x)) {
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
        /* The point off S that approaches fastest joins. */
        int add = -1;
        double worst = -vtol;
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
        /* A point of S without load leaves if it then separates. */
        int changed = 0;
        for (int i = 0; i < m && !changed; ++i) {
            if (!in[i] || x[3 * i] > 1e-12 * xmax)
                continue;
            int T[PMAX], t = 0;
            for (int j = 0; j < m; ++j)
                if (in[j] && j != i)
                    T[t++] = j;
            if (t > 0 && !solve_subset(m, A, b, mu, eps, x0, xs, T, t, 0, passes, trial))
                continue;
            if (t == 0)
                memset(trial, 0, (size_t)(3 * m) * sizeof *trial);
            if (normal_velocity(m, A, b, trial, i) >= -vtol) {
                in[i] = 0;
                changed = 1;
            }
        }
        if (!changed)
            return GF_OK;
    }
    /* The loop did not settle (or no impulses held a set): every set of loaded points is tried
     * and the consistent answer of least energy kept (2^m - 1 sets: small manifolds only). */
    if (m <= ENUMERATE_MAX && enumerate_sets(m, A, b, mu, eps, x0, xs, bmax, passes, x))
        return GF_OK;
    return failed(m, x0, x, "the set of loaded points did not settle");
}

gf_status gf_manifold_kernel_coulomb(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, int exact, double *x) {
    const int passes = exact ? PASSES : 1;
    double eps, bmax, xs[3 * PMAX];
    GF_TRY(prepare(m, A, b, mu, x0, 1, &eps, &bmax, xs, x));
    int S[PMAX];
    for (int i = 0; i < m; ++i)
        S[i] = i;
    if (!solve_subset(m, A, b, mu, eps, x0, xs, S, m, 1, passes, x))
        return failed(m, x0, x, "Newton's method did not converge");
    return GF_OK;
}
