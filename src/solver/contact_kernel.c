/* Per-contact kernels; the maximum-dissipation one follows KERNEL.md (paper section 3.2).
 *
 * How the sliding case is solved. On the boundary of the conic section the objective is
 * f_obj(a) = 1/2 rbar^2 u^T Ahat u - rbar u^T bhat with u = (cos a, sin a), rbar = mu b_n / f_r(a).
 * Multiplying f_obj'(a) = 0 by f_r^3 / (mu b_n) gives the trigonometric polynomial
 *     E(a) = 1/2 mu b_n (g' F - 2 g F') - (h' F - h F') F,   g = u^T Ahat u, h = u^T bhat, F = f_r,
 * whose cubic harmonics cancel: E has degree 2, it is the paper's Eq. 8 up to a positive factor,
 * and y = e^{ia} turns it into the paper's complex quartic. We build E's Fourier coefficients
 * directly (no transcription of Appendix A) and apply the Cayley map y = (1 + i tau)/(1 - i tau),
 * which takes the unit circle, where the wanted roots lie, onto the real line: the quartic gets
 * real coefficients and its real roots are exactly the stationary angles. Roots off the circle,
 * which the paper discards after the fact, are never computed, and no angle needs a trig call:
 * cos and sin follow rationally from tau. The angle is rotated first so that a = pi (tau = inf)
 * is far from every root, which keeps the leading coefficient healthy even when the paper's c2
 * vanishes (isotropic tangential blocks). Real roots are bracketed between the critical points
 * of the quartic and polished by safeguarded Newton steps, then by one Newton step on E(a). */
#include "granflow/contact_kernel.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "contact_kernel_internal.h"

double gf_contact_objective(const double A[9], const double b[3], const double x[3]) {
    double Ax[3];
    for (int i = 0; i < 3; ++i)
        Ax[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
    return 0.5 * (x[0] * Ax[0] + x[1] * Ax[1] + x[2] * Ax[2]) -
           (x[0] * b[0] + x[1] * b[1] + x[2] * b[2]);
}

static int all_finite(const double A[9], const double b[3], double mu) {
    double s = mu;
    for (int i = 0; i < 9; ++i)
        s += 0.0 * A[i];
    for (int i = 0; i < 3; ++i)
        s += 0.0 * b[i];
    return isfinite(s); /* 0 * Inf and 0 * NaN are NaN: one test for all inputs */
}

static gf_status bad_input(const double A[9], const double b[3], double mu, double x[3]) {
    x[0] = x[1] = x[2] = 0.0;
    if (!all_finite(A, b, mu))
        return GF_ERROR(GF_ERR_NUMERIC,
                        "contact kernel input is not finite (A_nn=%g, b=(%g, %g, %g), mu=%g)", A[0],
                        b[0], b[1], b[2], mu);
    return GF_ERROR(GF_ERR_NUMERIC,
                    "contact kernel input is invalid (A_nn=%g must be > 0, mu=%g must be >= 0)",
                    A[0], mu);
}

#define CHECK_INPUT(A, b, mu, x)                                                                   \
    do {                                                                                           \
        if (!all_finite(A, b, mu) || !(A[0] > 0.0) || !(mu >= 0.0))                                \
            return bad_input(A, b, mu, x);                                                         \
    } while (0)

gf_status gf_contact_kernel_frictionless(const double A[9], const double b[3], double mu,
                                         double x[3]) {
    CHECK_INPUT(A, b, mu, x);
    x[0] = b[0] > 0.0 ? b[0] / A[0] : 0.0;
    x[1] = x[2] = 0.0;
    return GF_OK;
}

gf_status gf_contact_kernel_coulomb(const double A[9], const double b[3], double mu, double x[3]) {
    CHECK_INPUT(A, b, mu, x);
    x[0] = b[0] > 0.0 ? b[0] / A[0] : 0.0;
    x[1] = x[2] = 0.0;
    if (x[0] == 0.0 || mu == 0.0)
        return GF_OK;
    /* Sticking tangential impulse for the fixed normal impulse: a 2x2 solve. */
    double rt = b[1] - A[3] * x[0], ro = b[2] - A[6] * x[0];
    double a = A[4], c = A[5], d = A[8];
    double det = a * d - c * c;
    double xt = (d * rt - c * ro) / det, xo = (a * ro - c * rt) / det;
    double len = hypot(xt, xo), lim = mu * x[0];
    if (len > lim) {
        xt *= lim / len;
        xo *= lim / len;
    }
    x[1] = xt;
    x[2] = xo;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Maximum dissipation                                                                        */

/* Solves A x = b for SPD A by Cholesky (A row-major). Returns 0 if A is not positive definite. */
static int solve_spd3(const double A[9], const double b[3], double x[3]) {
    double l00 = A[0];
    if (!(l00 > 0.0))
        return 0;
    l00 = sqrt(l00);
    double l10 = A[3] / l00, l20 = A[6] / l00;
    double d1 = A[4] - l10 * l10;
    if (!(d1 > 0.0))
        return 0;
    double l11 = sqrt(d1);
    double l21 = (A[7] - l20 * l10) / l11;
    double d2 = A[8] - l20 * l20 - l21 * l21;
    if (!(d2 > 0.0))
        return 0;
    double l22 = sqrt(d2);
    double y0 = b[0] / l00;
    double y1 = (b[1] - l10 * y0) / l11;
    double y2 = (b[2] - l20 * y0 - l21 * y1) / l22;
    x[2] = y2 / l22;
    x[1] = (y1 - l21 * x[2]) / l11;
    x[0] = (y0 - l10 * x[1] - l20 * x[2]) / l00;
    return 1;
}

/* Reduced (plane of maximum compression) quantities of a normalised problem. */
typedef struct {
    double Ann, Ant, Ano, bn;
    double Att, Ato, Aoo; /* Ahat */
    double bt, bo;        /* bhat */
    double mu;
} reduced;

static void reduce(const double A[9], const double b[3], double mu, reduced *r) {
    r->Ann = A[0];
    r->Ant = A[1];
    r->Ano = A[2];
    r->bn = b[0];
    r->Att = A[4] - A[1] * A[1] / A[0];
    r->Ato = A[5] - A[1] * A[2] / A[0];
    r->Aoo = A[8] - A[2] * A[2] / A[0];
    r->bt = b[1] - A[1] * b[0] / A[0];
    r->bo = b[2] - A[2] * b[0] / A[0];
    r->mu = mu;
}

/* x from a point (xt, xo) on the plane of maximum compression. */
static void lift(const reduced *r, double xt, double xo, double x[3]) {
    x[0] = (r->bn - r->Ant * xt - r->Ano * xo) / r->Ann;
    x[1] = xt;
    x[2] = xo;
}

/* f_obj along the boundary at direction (c, s); +inf where f_r <= 0 (inadmissible). */
/* f_obj on the boundary at direction (c, s) where f_r = F > 0: rbar = mu b_n / F. */
static double fobj_boundary(const reduced *r, double c, double s, double F, double *rbar) {
    double rb = r->mu * r->bn / F;
    double g = r->Att * c * c + 2.0 * r->Ato * c * s + r->Aoo * s * s;
    double h = r->bt * c + r->bo * s;
    *rbar = rb;
    return 0.5 * rb * rb * g - rb * h;
}

static double fobj_dir(const reduced *r, double c, double s, double *rbar) {
    double fr = r->Ann + r->mu * (r->Ant * c + r->Ano * s);
    if (!(fr > 0.0)) {
        *rbar = INFINITY;
        return INFINITY;
    }
    return fobj_boundary(r, c, s, fr, rbar);
}

/* The stationarity condition as E(a) = t0 + t1 cos a + t2 sin a + t3 cos 2a + t4 sin 2a. With
 * F = A_nn + p c + q s (p = mu A_nt, q = mu A_no), g = G0 + G1 cos 2a + G2 sin 2a and h = u c + v s
 * (u, v = bhat), one finds h'F - hF' = A_nn h' + kappa with kappa = v p - u q, and
 * g'F - 2gF' = 2(A_to p - A_tt q) c + 2(A_oo p - A_to q) s + 2 A_nn A_to cos 2a
 *              - A_nn (A_tt - A_oo) sin 2a,
 * the cubic harmonics cancelling; the rest is collecting terms. */
static void stationary_coeffs(const reduced *r, double t[5]) {
    double A = r->Ann, p = r->mu * r->Ant, q = r->mu * r->Ano, u = r->bt, v = r->bo;
    double k = 0.5 * r->mu * r->bn, kappa = v * p - u * q;
    t[0] = -1.5 * A * kappa;
    t[1] = 2.0 * k * (r->Ato * p - r->Att * q) - (A * A * v + kappa * p);
    t[2] = 2.0 * k * (r->Aoo * p - r->Ato * q) + (A * A * u - kappa * q);
    t[3] = 2.0 * k * A * r->Ato - 0.5 * A * (v * p + u * q);
    t[4] = -k * A * (r->Att - r->Aoo) - 0.5 * A * (v * q - u * p);
}

void gf_maxdiss_stationary_coeffs(const double A[9], const double b[3], double mu, double t[5]) {
    reduced r;
    reduce(A, b, mu, &r);
    stationary_coeffs(&r, t);
}

/* Real roots of the monic cubic x^3 + a x^2 + b x + c; returns their number (1 or 3). */
static int cubic_real_roots(double a, double b, double c, double x[3]) {
    double q = (a * a - 3.0 * b) / 9.0;
    double r = (2.0 * a * a * a - 9.0 * a * b + 27.0 * c) / 54.0;
    double q3 = q * q * q;
    if (r * r < q3) {
        double t = acos(r / sqrt(q3));
        double m = -2.0 * sqrt(q);
        x[0] = m * cos(t / 3.0) - a / 3.0;
        x[1] = m * cos((t + 2.0 * M_PI) / 3.0) - a / 3.0;
        x[2] = m * cos((t - 2.0 * M_PI) / 3.0) - a / 3.0;
        return 3;
    }
    double s = -copysign(cbrt(fabs(r) + sqrt(r * r - q3)), r);
    double t = s != 0.0 ? q / s : 0.0;
    x[0] = s + t - a / 3.0;
    return 1;
}

static double quartic(const double p[5], double t, double *dp) {
    double v = p[4], d = 0.0;
    for (int i = 3; i >= 0; --i) {
        d = d * t + v;
        v = v * t + p[i];
    }
    *dp = d;
    return v;
}

/* The root of p in [lo, hi] where p(lo), p(hi) differ in sign: Newton steps kept inside the
 * shrinking bracket, bisection when Newton leaves it or stalls. Started from the secant point;
 * stopped at 1e-10 relative, since the caller finishes with a Newton step on E(a) itself. */
static double bracketed_root(const double p[5], double lo, double hi, double flo, double fhi) {
    double w = hi - lo;
    double t = lo - flo * w / (fhi - flo), dp;
    t = fmin(fmax(t, lo + 0.01 * w), hi - 0.01 * w);
    double prev_step = w, step = w;
    for (int it = 0; it < 100; ++it) {
        double f = quartic(p, t, &dp);
        if (f == 0.0)
            return t;
        if ((f < 0.0) == (flo < 0.0)) {
            lo = t;
            flo = f;
        } else {
            hi = t;
        }
        double tn = dp != 0.0 ? t - f / dp : lo - 1.0;
        if (tn <= lo || tn >= hi || fabs(2.0 * (t - tn)) > fabs(prev_step)) {
            prev_step = step;
            step = 0.5 * (hi - lo);
            tn = lo + step;
        } else {
            prev_step = step;
            step = t - tn;
        }
        if (fabs(tn - t) <= 1e-10 * (fabs(tn) + 1e-3) || hi - lo <= 4.0 * DBL_EPSILON * fabs(t))
            return tn;
        t = tn;
    }
    return t;
}

/* Real roots of the quartic p[0] + p[1] t + ... + p[4] t^4 (p[4] != 0); returns how many. */
static int quartic_real_roots(const double p_in[5], double roots[4]) {
    double p[5];
    for (int i = 0; i < 5; ++i)
        p[i] = p_in[i] / p_in[4];
    /* Cauchy's bound encloses every root. */
    double bound = 0.0;
    for (int i = 0; i < 4; ++i)
        bound = fmax(bound, fabs(p[i]));
    bound += 1.0;
    double crit[3];
    int nc = cubic_real_roots(0.75 * p[3], 0.5 * p[2], 0.25 * p[1], crit);
    /* Sort critical points and clamp them into the bound. */
    for (int i = 0; i < nc; ++i)
        for (int j = i + 1; j < nc; ++j)
            if (crit[j] < crit[i]) {
                double tmp = crit[i];
                crit[i] = crit[j];
                crit[j] = tmp;
            }
    double edges[5];
    int ne = 0;
    edges[ne++] = -bound;
    for (int i = 0; i < nc; ++i)
        if (crit[i] > -bound && crit[i] < bound)
            edges[ne++] = crit[i];
    edges[ne++] = bound;
    int n = 0;
    double dp;
    double scale = fabs(p[0]) + fabs(p[1]) + fabs(p[2]) + fabs(p[3]) + 1.0;
    for (int i = 0; i + 1 < ne; ++i) {
        double lo = edges[i], hi = edges[i + 1];
        double flo = quartic(p, lo, &dp), fhi = quartic(p, hi, &dp);
        if (i > 0 && fabs(flo) <= 64.0 * DBL_EPSILON * scale * fmax(1.0, lo * lo * lo * lo)) {
            /* A double root at a critical point (tangency of the stationarity curve). */
            if (n == 0 || roots[n - 1] != lo)
                roots[n++] = lo;
            continue;
        }
        if ((flo < 0.0) != (fhi < 0.0) && fhi != 0.0)
            roots[n++] = bracketed_root(p, lo, hi, flo, fhi);
        if (n == 4)
            break;
    }
    return n;
}

/* Near an asymptote of a hyperbola (b_n small against |b|) the optimum sits at an angle
 * delta = O(b_n) from the asymptote direction, and f_r = O(b_n) there: evaluated from the
 * angle, f_r cancels catastrophically and two roots of the quartic (the asymptote and the
 * optimum) merge. Here the angle is measured from the asymptote, f_r is formed without
 * cancellation, and the stationarity condition is solved by Newton's method in delta, seeded by
 * the ray solution. Returns the objective (INFINITY if no admissible stationary point). */
static double near_asymptote(const reduced *r, int side, double *c_out, double *s_out,
                             double *rbar_out) {
    double a3 = hypot(r->Ant, r->Ano);
    double mua3 = r->mu * a3;
    double c0 = r->Ant / a3, s0 = r->Ano / a3;
    double cth = -r->Ann / mua3, sth = side * sqrt(fmax(0.0, 1.0 - cth * cth));
    /* Asymptote direction alpha_a = alpha0 + theta_a. */
    double ca = c0 * cth - s0 * sth, sa = s0 * cth + c0 * sth;
    /* Seed: on the ray the best radius is h/g; f_r = mu b_n / r there. */
    double g = r->Att * ca * ca + 2.0 * r->Ato * ca * sa + r->Aoo * sa * sa;
    double h = r->bt * ca + r->bo * sa;
    if (!(h > 0.0))
        return INFINITY;
    double dF = -mua3 * sth; /* d f_r / d delta at the asymptote */
    double delta = (r->mu * r->bn * g / h) / dF;
    for (int it = 0; it < 30; ++it) {
        double sd = sin(delta), cdm = 2.0 * sin(0.5 * delta) * sin(0.5 * delta); /* 1 - cos */
        double c = ca * (1.0 - cdm) - sa * sd, s = sa * (1.0 - cdm) + ca * sd;
        double F = -mua3 * (sth * sd + cth * cdm);
        double F1 = r->mu * (-r->Ant * s + r->Ano * c);
        double F2 = -r->mu * (r->Ant * c + r->Ano * s);
        double c2 = c * c - s * s, s2 = 2.0 * c * s;
        double gg = r->Att * c * c + 2.0 * r->Ato * c * s + r->Aoo * s * s;
        double g1 = (r->Aoo - r->Att) * s2 + 2.0 * r->Ato * c2;
        double g2 = 2.0 * (r->Aoo - r->Att) * c2 - 4.0 * r->Ato * s2;
        double hh = r->bt * c + r->bo * s, h1 = -r->bt * s + r->bo * c, h2 = -hh;
        double k = 0.5 * r->mu * r->bn;
        double W = h1 * F - hh * F1;
        double E = k * (g1 * F - 2.0 * gg * F1) - W * F;
        double dE = k * (g2 * F - g1 * F1 - 2.0 * gg * F2) - (h2 * F - hh * F2) * F - W * F1;
        if (!(dE != 0.0) || !isfinite(E))
            return INFINITY;
        double step = E / dE;
        delta -= step;
        if (fabs(step) <= 1e-15 * fabs(delta))
            break;
    }
    double sd = sin(delta), cdm = 2.0 * sin(0.5 * delta) * sin(0.5 * delta);
    double c = ca * (1.0 - cdm) - sa * sd, s = sa * (1.0 - cdm) + ca * sd;
    double F = -mua3 * (sth * sd + cth * cdm);
    if (!(F > 0.0))
        return INFINITY;
    *c_out = c;
    *s_out = s;
    return fobj_boundary(r, c, s, F, rbar_out);
}

/* The sliding case, b_n > 0 and mu > 0 with the unconstrained minimum outside the cone: the
 * boundary point of the conic section with the least objective. */
static void maxdiss_sliding(const reduced *r, double x[3]) {
    double tc[5];
    stationary_coeffs(r, tc);
    double a0 = tc[0], a1 = tc[1], b1 = tc[2], a2 = tc[3], b2 = tc[4];
    /* Rotate a = beta + theta with beta + pi where |E| is largest among eight directions, so
     * tau = tan(theta / 2) stays away from infinity for every root. */
    static const double cs8[8][2] = {
        {1, 0},  {M_SQRT1_2, M_SQRT1_2},   {0, 1},  {-M_SQRT1_2, M_SQRT1_2},
        {-1, 0}, {-M_SQRT1_2, -M_SQRT1_2}, {0, -1}, {M_SQRT1_2, -M_SQRT1_2}};
    int best = 0;
    double bestv = -1.0;
    for (int k = 0; k < 8; ++k) {
        double c = cs8[k][0], s = cs8[k][1];
        double v = fabs(a0 + a1 * c + b1 * s + a2 * (c * c - s * s) + b2 * 2.0 * c * s);
        if (v > bestv) {
            bestv = v;
            best = k;
        }
    }
    /* beta = direction(best) + pi. */
    double cb = -cs8[best][0], sb = -cs8[best][1];
    double c2b = cb * cb - sb * sb, s2b = 2.0 * cb * sb;
    /* Coefficients in theta. */
    double A1 = a1 * cb + b1 * sb, B1 = b1 * cb - a1 * sb;
    double A2 = a2 * c2b + b2 * s2b, B2 = b2 * c2b - a2 * s2b;
    double p[5] = {a0 + A1 + A2, 2.0 * B1 + 4.0 * B2, 2.0 * a0 - 6.0 * A2, 2.0 * B1 - 4.0 * B2,
                   a0 - A1 + A2};
    double roots[4];
    int nr = (p[4] != 0.0) ? quartic_real_roots(p, roots) : 0;

    double best_f = INFINITY, best_c = 0.0, best_s = 0.0, best_r = 0.0;
    for (int k = 0; k < nr; ++k) {
        double t = roots[k], den = 1.0 + t * t;
        double ct = (1.0 - t * t) / den, st = 2.0 * t / den;
        double c = cb * ct - sb * st, s = sb * ct + cb * st;
        /* One Newton step on E(a) itself: the trig form is well conditioned at every angle. */
        double c2 = c * c - s * s, s2 = 2.0 * c * s;
        double Ev = a0 + a1 * c + b1 * s + a2 * c2 + b2 * s2;
        double dE = -a1 * s + b1 * c - 2.0 * a2 * s2 + 2.0 * b2 * c2;
        if (dE != 0.0) {
            double d = -Ev / dE;
            if (fabs(d) < 1e-4) {
                double cd = 1.0 - 0.5 * d * d, sd = d - d * d * d / 6.0;
                double cn = c * cd - s * sd, sn = s * cd + c * sd;
                double len = hypot(cn, sn);
                c = cn / len;
                s = sn / len;
            }
        }
        double rb;
        double f = fobj_dir(r, c, s, &rb);
        if (f < best_f) {
            best_f = f;
            best_c = c;
            best_s = s;
            best_r = rb;
        }
    }
    /* Hyperbolas with the optimum close to an asymptote: the angle form above is ill
     * conditioned there, so solve again relative to each asymptote and keep the best. */
    double a3 = hypot(r->Ant, r->Ano);
    if (r->Ann < r->mu * a3) {
        double fr_best =
            best_f < INFINITY ? r->Ann + r->mu * (r->Ant * best_c + r->Ano * best_s) : 0.0;
        if (fr_best < 1e-4 * r->Ann || r->bn < 1e-4) {
            for (int side = -1; side <= 1; side += 2) {
                double c = 1.0, s = 0.0, rb = 0.0;
                double f = near_asymptote(r, side, &c, &s, &rb);
                if (f < best_f || (best_f < INFINITY && fr_best < 1e-4 * r->Ann &&
                                   f <= best_f + 1e-9 * fabs(best_f))) {
                    best_f = f;
                    best_c = c;
                    best_s = s;
                    best_r = rb;
                }
            }
        }
    }
    if (!(best_f < INFINITY)) {
        /* No admissible stationary point survived rounding (E vanishing identically up to
         * rounding): the objective is flat along the boundary, so the direction of bhat
         * (steepest descent at the origin of the plane) is as good as any. */
        double len = hypot(r->bt, r->bo);
        best_c = len > 0.0 ? r->bt / len : 1.0;
        best_s = len > 0.0 ? r->bo / len : 0.0;
        fobj_dir(r, best_c, best_s, &best_r);
        if (!(best_r < INFINITY))
            best_r = 0.0;
    }
    lift(r, best_r * best_c, best_r * best_s, x);
}

/* b_n = 0 with a degenerate hyperbola (not P2): the minimum lies on one of the two asymptote
 * rays; KERNEL.md step 6 with both rays evaluated (the paper's one-line choice can be wrong). */
static void maxdiss_rays(const reduced *r, double x[3]) {
    double a3 = hypot(r->Ant, r->Ano);
    double c0 = r->Ant / a3, s0 = r->Ano / a3;
    double cd = -r->Ann / (r->mu * a3);
    cd = cd < -1.0 ? -1.0 : (cd > 1.0 ? 1.0 : cd);
    double sd = sqrt(1.0 - cd * cd);
    double best = 0.0, bt = 0.0, bo = 0.0;
    for (int sign = -1; sign <= 1; sign += 2) {
        double c = c0 * cd - s0 * sign * sd, s = s0 * cd + c0 * sign * sd;
        double g = r->Att * c * c + 2.0 * r->Ato * c * s + r->Aoo * s * s;
        double h = r->bt * c + r->bo * s;
        double rs = h > 0.0 ? h / g : 0.0;
        double f = -0.5 * rs * h;
        if (f < best) {
            best = f;
            bt = rs * c;
            bo = rs * s;
        }
    }
    lift(r, bt, bo, x);
}

gf_status gf_contact_kernel_maxdiss(const double A[9], const double b[3], double mu, double x[3]) {
    CHECK_INPUT(A, b, mu, x);
    if (b[0] < 0.0 || (b[0] == 0.0 && b[1] == 0.0 && b[2] == 0.0)) {
        x[0] = x[1] = x[2] = 0.0;
        return GF_OK;
    }
    if (mu == 0.0) {
        x[0] = b[0] / A[0];
        x[1] = x[2] = 0.0;
        return GF_OK;
    }
    /* Normalise: granular blocks span many decades (A ~ 1/m, b ~ velocities), the algebra
     * below wants O(1) numbers. x scales by sb / sa. */
    double sa = (A[0] + A[4] + A[8]) / 3.0;
    double sb = fmax(fabs(b[0]), fmax(fabs(b[1]), fabs(b[2])));
    double An[9], bn[3], xn[3];
    for (int i = 0; i < 9; ++i)
        An[i] = A[i] / sa;
    for (int i = 0; i < 3; ++i)
        bn[i] = b[i] / sb;
    double x0[3];
    if (!solve_spd3(An, bn, x0)) {
        x[0] = x[1] = x[2] = 0.0;
        return GF_ERROR(GF_ERR_NUMERIC, "contact block is not positive definite (A_nn=%g)", A[0]);
    }
    reduced r;
    reduce(An, bn, mu, &r);
    if (x0[0] >= 0.0 && hypot(x0[1], x0[2]) <= mu * x0[0]) {
        memcpy(xn, x0, sizeof xn); /* sticking */
    } else if (bn[0] == 0.0) {
        if (r.Ann > mu * hypot(r.Ant, r.Ano))
            xn[0] = xn[1] = xn[2] = 0.0;
        else
            maxdiss_rays(&r, xn);
    } else {
        maxdiss_sliding(&r, xn);
    }
    double scale = sb / sa;
    for (int i = 0; i < 3; ++i)
        x[i] = xn[i] * scale;
    return GF_OK;
}

gf_status gf_contact_kernel_maxdiss_sphere(const double A[9], const double b[3], double mu,
                                           double x[3]) {
    CHECK_INPUT(A, b, mu, x);
    /* The conic section is the circle |x_to| = mu b_n / A_nn and the objective on it is least
     * where x_to points along b_to: the sticking impulse projected onto the disc. */
    if (!(b[0] > 0.0)) {
        x[0] = x[1] = x[2] = 0.0;
        return GF_OK;
    }
    x[0] = b[0] / A[0];
    double xt = b[1] / A[4], xo = b[2] / A[4];
    double len = hypot(xt, xo), lim = mu * x[0];
    if (len > lim) {
        xt *= lim / len;
        xo *= lim / len;
    }
    x[1] = xt;
    x[2] = xo;
    return GF_OK;
}

void gf_contact_solve_maxdiss(const double A[9], const double b[3], double mu, double x[3]) {
    (void)gf_contact_kernel_maxdiss(A, b, mu, x);
}

void gf_contact_solve_coulomb(const double A[9], const double b[3], double mu, double x[3]) {
    (void)gf_contact_kernel_coulomb(A, b, mu, x);
}

/* c / e, where a zero component needs no division (e may then be 0). */
static inline double share(double c, double e) {
    return c == 0.0 ? 0.0 : c / e;
}

/* Isotropic M (spheres, cubes): g / m projected onto the disc. Otherwise, in M's eigenbasis
 * (e1 <= e2, components c1, c2 of g), M^-1 g where that lies in the disc, else x(a) =
 * (M + a I)^-1 g on its circle: the root a > 0 of 1/|x(a)| = 1/R, which is increasing and
 * concave in a (Moré and Sorensen 1983), so Newton's steps from its left approach it
 * monotonically; a bisection guards the first. */
void gf_contact_kernel_disc(const double M[3], const double g[2], double R, double x[2]) {
    x[0] = x[1] = 0.0;
    const double gg = hypot(g[0], g[1]);
    const double h = 0.5 * (M[0] - M[2]), mid = 0.5 * (M[0] + M[2]), rad = hypot(h, M[1]);
    if (!(R > 0.0) || gg == 0.0 || !(mid > 0.0))
        return;
    if (rad == 0.0) {
        double f = gg / mid > R ? R / gg : 1.0 / mid;
        x[0] = f * g[0];
        x[1] = f * g[1];
        return;
    }
    const double e1 = mid - rad, e2 = mid + rad;
    /* e2's eigenvector, from the better conditioned of the two forms */
    double q2[2] = {h + rad, M[1]};
    if (h < 0.0) {
        q2[0] = M[1];
        q2[1] = rad - h;
    }
    const double len = hypot(q2[0], q2[1]);
    q2[0] /= len;
    q2[1] /= len;
    const double q1[2] = {-q2[1], q2[0]};
    const double c1 = q1[0] * g[0] + q1[1] * g[1], c2 = q2[0] * g[0] + q2[1] * g[1];
    /* |x(a)| falls with a: |g| / (e2 + a) <= |x(a)| <= |g| / (e1 + a) brackets the root */
    double lo = fmax(0.0, gg / R - e2), hi = fmax(lo, gg / R - e1), a = lo;
    double y1 = share(c1, e1 + lo), y2 = share(c2, e2 + lo);
    if (!(hypot(y1, y2) > R)) { /* at a = lo (0, or the root) inside: the answer */
        x[0] = y1 * q1[0] + y2 * q2[0];
        x[1] = y1 * q1[1] + y2 * q2[1];
        return;
    }
    for (int it = 0; it < 100 && hi > lo; ++it) {
        y1 = share(c1, e1 + a);
        y2 = share(c2, e2 + a);
        double n2 = y1 * y1 + y2 * y2, psi = 1.0 / sqrt(n2) - 1.0 / R;
        if (psi < 0.0)
            lo = a;
        else
            hi = a;
        if (psi == 0.0)
            break;
        /* psi' = (y1^2 / (e1 + a) + y2^2 / (e2 + a)) / |x|^3 */
        double dpsi = (share(y1 * y1, e1 + a) + share(y2 * y2, e2 + a)) / (n2 * sqrt(n2));
        double next = a - psi / dpsi;
        if (!(next > lo && next < hi))
            next = 0.5 * (lo + hi);
        if (next == a)
            break;
        a = next;
    }
    y1 = share(c1, e1 + a);
    y2 = share(c2, e2 + a);
    x[0] = y1 * q1[0] + y2 * q2[0];
    x[1] = y1 * q1[1] + y2 * q2[1];
    double f = R / hypot(x[0], x[1]); /* on the circle, to rounding */
    x[0] *= f;
    x[1] *= f;
}
