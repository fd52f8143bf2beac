/* Coarse-grained fields: Gaussian sums over bodies and exact line integrals over contacts. */
#include "lib/cg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most periodic images on each side a point sums over (a box 19 cut-offs narrow). */
#define GF_CG_MAX_IMAGES 20

int gf_cg_init(gf_cg *c, const int resolved[3], const int n[3], const double from[3],
               const double to[3], const double lo[3], const double hi[3], const int periodic[3],
               double width, double cutoff) {
    memset(c, 0, sizeof *c);
    if (!(width > 0.0) || !isfinite(width) || !(cutoff > 0.0) || !isfinite(cutoff))
        return -1;
    c->width = width;
    c->cutoff = cutoff;
    double points = 1.0;
    for (int a = 0; a < 3; ++a) {
        if (!(hi[a] > lo[a]) || !isfinite(hi[a] - lo[a]))
            return -1;
        c->resolved[a] = resolved[a] != 0;
        c->lo[a] = lo[a];
        c->hi[a] = hi[a];
        c->periodic[a] = periodic[a] != 0;
        /* the images a point can see along a periodic axis (image_shifts) */
        if (c->resolved[a] && c->periodic[a] &&
            cutoff * width > (GF_CG_MAX_IMAGES - 1) * (hi[a] - lo[a]))
            return -1;
        if (!c->resolved[a]) {
            c->n[a] = 1;
            c->g0[a] = 0.5 * (lo[a] + hi[a]);
            continue;
        }
        if (n[a] < 1 || !(to[a] >= from[a]) || !isfinite(to[a] - from[a]) ||
            (to[a] == from[a] && n[a] != 1))
            return -1;
        c->n[a] = n[a];
        c->h[a] = (to[a] - from[a]) / n[a];
        c->g0[a] = from[a] + 0.5 * c->h[a];
        points *= n[a];
    }
    if (points > 1e8)
        return -1;
    c->npoints = (size_t)points;
    size_t np = c->npoints;
    c->mass = calloc(np, sizeof *c->mass);
    c->volume = calloc(np, sizeof *c->volume);
    c->momentum = calloc(3 * np, sizeof *c->momentum);
    c->second = calloc(9 * np, sizeof *c->second);
    c->contact = calloc(9 * np, sizeof *c->contact);
    if (!c->mass || !c->volume || !c->momentum || !c->second || !c->contact) {
        gf_cg_free(c);
        return -1;
    }
    return 0;
}

void gf_cg_free(gf_cg *c) {
    free(c->mass);
    free(c->volume);
    free(c->momentum);
    free(c->second);
    free(c->contact);
    memset(c, 0, sizeof *c);
}

void gf_cg_point(const gf_cg *c, size_t k, double r[3]) {
    size_t idx[3] = {k % (size_t)c->n[0], (k / (size_t)c->n[0]) % (size_t)c->n[1],
                     k / ((size_t)c->n[0] * (size_t)c->n[1])};
    for (int a = 0; a < 3; ++a)
        r[a] = c->g0[a] + (double)idx[a] * c->h[a];
}

/* The product of 1 / length over the axes psi is uniform along. */
static double uniform_part(const gf_cg *c) {
    double u = 1.0;
    for (int a = 0; a < 3; ++a)
        if (!c->resolved[a])
            u /= c->hi[a] - c->lo[a];
    return u;
}

/* The points along resolved axis a within the cut-off of [x0, x1]: indices *k0 .. *k1 (none if
 * *k0 > *k1). Along the other axes, the one point. */
static void index_range(const gf_cg *c, int a, double x0, double x1, long *k0, long *k1) {
    if (!c->resolved[a]) {
        *k0 = *k1 = 0;
        return;
    }
    double cut = c->cutoff * c->width;
    if (c->h[a] == 0.0) {
        int near = c->g0[a] >= x0 - cut && c->g0[a] <= x1 + cut;
        *k0 = 0;
        *k1 = near ? 0 : -1;
        return;
    }
    double f0 = ceil((x0 - cut - c->g0[a]) / c->h[a]), f1 = floor((x1 + cut - c->g0[a]) / c->h[a]);
    f0 = f0 < 0.0 ? 0.0 : f0;
    f1 = f1 > c->n[a] - 1 ? c->n[a] - 1 : f1;
    *k0 = (long)f0;
    *k1 = f0 <= f1 ? (long)f1 : (long)f0 - 1;
}

/* The periodic images that reach the points along axis a: shifts k L for |k| <= K, K the images
 * the cut-off spans (just {0} along an axis that is averaged or not periodic). */
static int image_shifts(const gf_cg *c, int a, double s[2 * GF_CG_MAX_IMAGES + 1]) {
    s[0] = 0.0;
    if (!c->resolved[a] || !c->periodic[a])
        return 1;
    const double L = c->hi[a] - c->lo[a];
    int K = (int)ceil(c->cutoff * c->width / L) + 1, n = 1;
    for (int k = 1; k <= K; ++k) {
        s[n++] = -k * L;
        s[n++] = k * L;
    }
    return n;
}

double gf_cg_line_weight(const gf_cg *c, const double e[3], const double b[3]) {
    const double w = c->width;
    double A = 0.0, B = 0.0, C = 0.0, pre = uniform_part(c);
    for (int a = 0; a < 3; ++a)
        if (c->resolved[a]) {
            A += b[a] * b[a];
            B += e[a] * b[a];
            C += e[a] * e[a];
            pre /= sqrt(2.0 * M_PI) * w;
        }
    const double t = sqrt(A / (2.0 * w * w));
    if (t < 1e-3) {
        /* A branch short against w (or across the resolved axes): Simpson's rule, exact to
         * t^4 ~ 1e-12 relative. */
        double f[3];
        for (int k = 0; k < 3; ++k) {
            double s = 0.5 * k;
            f[k] = exp(-(A * s * s - 2.0 * B * s + C) / (2.0 * w * w));
        }
        return pre * (f[0] + 4.0 * f[1] + f[2]) / 6.0;
    }
    /* q(s) = A (s - s0)^2 + m: a Gaussian in s, integrated with error functions. */
    const double s0 = B / A, m = fmax(0.0, C - B * B / A);
    const double hi = t * (1.0 - s0), lo = -t * s0;
    double diff;
    if (lo > 0.0)
        diff = erfc(lo) - erfc(hi); /* both tails on one side: no cancellation */
    else if (hi < 0.0)
        diff = erfc(-hi) - erfc(-lo);
    else
        diff = erf(hi) - erf(lo);
    return pre * exp(-m / (2.0 * w * w)) * sqrt(M_PI) / (2.0 * t) * diff;
}

/* Calls visit(c, k, e, ctx) for every point k within the cut-off of the segment from x to
 * x - b (b = 0: the point x), and every periodic image of it that reaches one, with e the
 * image of x minus the point. */
static void for_points_near(gf_cg *c, const double x[3], const double b[3],
                            void (*visit)(gf_cg *, size_t, const double[3], void *), void *ctx) {
    double sh[3][2 * GF_CG_MAX_IMAGES + 1];
    int ns[3];
    for (int a = 0; a < 3; ++a)
        ns[a] = image_shifts(c, a, sh[a]);
    for (int i0 = 0; i0 < ns[0]; ++i0)
        for (int i1 = 0; i1 < ns[1]; ++i1)
            for (int i2 = 0; i2 < ns[2]; ++i2) {
                const double p[3] = {x[0] + sh[0][i0], x[1] + sh[1][i1], x[2] + sh[2][i2]};
                long k0[3], k1[3];
                for (int a = 0; a < 3; ++a)
                    index_range(c, a, fmin(p[a], p[a] - b[a]), fmax(p[a], p[a] - b[a]), &k0[a],
                                &k1[a]);
                if (k0[0] > k1[0] || k0[1] > k1[1] || k0[2] > k1[2])
                    continue;
                for (long q2 = k0[2]; q2 <= k1[2]; ++q2)
                    for (long q1 = k0[1]; q1 <= k1[1]; ++q1)
                        for (long q0 = k0[0]; q0 <= k1[0]; ++q0) {
                            const long q[3] = {q0, q1, q2};
                            double e[3];
                            for (int a = 0; a < 3; ++a)
                                e[a] = p[a] - (c->g0[a] + (double)q[a] * c->h[a]);
                            size_t k =
                                ((size_t)q2 * (size_t)c->n[1] + (size_t)q1) * (size_t)c->n[0] +
                                (size_t)q0;
                            visit(c, k, e, ctx);
                        }
            }
}

/* One body: its mass, volume and velocity. */
typedef struct {
    double m, vol;
    const double *v;
} body_sum;

static void add_body_at(gf_cg *c, size_t k, const double e[3], void *ctx) {
    const body_sum *b = ctx;
    const double w = c->width;
    double psi = uniform_part(c);
    for (int a = 0; a < 3; ++a)
        if (c->resolved[a])
            psi *= exp(-e[a] * e[a] / (2.0 * w * w)) / (sqrt(2.0 * M_PI) * w);
    double mp = b->m * psi;
    c->mass[k] += mp;
    c->volume[k] += b->vol * psi;
    for (int r = 0; r < 3; ++r) {
        c->momentum[3 * k + r] += mp * b->v[r];
        for (int s = 0; s < 3; ++s)
            c->second[9 * k + 3 * r + s] += mp * b->v[r] * b->v[s];
    }
}

void gf_cg_add_bodies(gf_cg *c, size_t n, const double *x, const double *v, const double *mass,
                      const double *volume) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; ++i) {
        body_sum b = {mass[i], volume[i], &v[3 * i]};
        for_points_near(c, &x[3 * i], zero, add_body_at, &b);
    }
}

/* One contact: its force on the first body and its branch. */
typedef struct {
    const double *f;
    double b[3];
} contact_sum;

static void add_contact_at(gf_cg *c, size_t k, const double e[3], void *ctx) {
    const contact_sum *t = ctx;
    double wgt = gf_cg_line_weight(c, e, t->b);
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
            c->contact[9 * k + 3 * r + s] += t->f[r] * t->b[s] * wgt;
}

void gf_cg_add_contacts(gf_cg *c, size_t n, const double *x1, const double *x2, const double *f) {
    for (size_t j = 0; j < n; ++j) {
        contact_sum t = {&f[3 * j], {0.0, 0.0, 0.0}};
        for (int a = 0; a < 3; ++a) {
            t.b[a] = x1[3 * j + a] - x2[3 * j + a];
            if (c->periodic[a]) { /* the branch of a pair across the boundary: its image's */
                double L = c->hi[a] - c->lo[a];
                t.b[a] -= L * round(t.b[a] / L);
            }
        }
        for_points_near(c, &x1[3 * j], t.b, add_contact_at, &t);
    }
}

void gf_cg_result(const gf_cg *c, size_t k, double *rho, double *phi, double v[3], double sk[9],
                  double sc[9]) {
    const double S = c->samples > 0 ? (double)c->samples : 1.0, m = c->mass[k];
    *rho = m / S;
    *phi = c->volume[k] / S;
    for (int r = 0; r < 3; ++r)
        v[r] = m > 0.0 ? c->momentum[3 * k + r] / m : NAN;
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
            /* sum m (v - V)(v - V) psi = sum m v v psi - rho V V */
            double mean = m > 0.0 ? c->momentum[3 * k + r] * c->momentum[3 * k + s] / m : 0.0;
            sk[3 * r + s] = (c->second[9 * k + 3 * r + s] - mean) / S;
            sc[3 * r + s] = c->contact[9 * k + 3 * r + s] / S;
        }
}
