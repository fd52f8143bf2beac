/* Contacts of general convex pairs (collide_convex.c: libccd GJK/EPA) and their manifolds
 * (manifold.c), against references written here: brute-force distances from closed-form
 * signed-distance and support functions of the shapes, overlaps computed by hand for simple
 * configurations, and invariants (swapping the bodies, moving both rigidly). */
#include "test_util.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collide_internal.h"
#include "core/vec.h"

/* ---- bodies and rotations ------------------------------------------------------------------ */

typedef struct {
    gf_shape s;
    gf_body_pose p;
} body;

static gf_body_pose *pose(body *b) {
    b->p.shape = &b->s;
    b->p.clumps = NULL;
    return &b->p;
}

static void body_set(body *b, gf_shape s, const double x[3], const double q[4]) {
    memset(b, 0, sizeof *b);
    b->s = s;
    memcpy(b->p.x, x, sizeof b->p.x);
    memcpy(b->p.q, q, sizeof b->p.q);
    pose(b);
}

static const double q_id[4] = {1.0, 0.0, 0.0, 0.0};

static void quat_axis(double ax, double ay, double az, double angle, double q[4]) {
    double l = sqrt(ax * ax + ay * ay + az * az), s = sin(0.5 * angle) / l;
    q[0] = cos(0.5 * angle);
    q[1] = ax * s;
    q[2] = ay * s;
    q[3] = az * s;
}

static void quat_random(uint64_t *st, double q[4]) {
    double l;
    do {
        for (int k = 0; k < 4; ++k)
            q[k] = gf_test_uniform(st, -1.0, 1.0);
        l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    } while (l < 0.1 || l > 1.0);
    for (int k = 0; k < 4; ++k)
        q[k] /= l;
}

static void unit_random(uint64_t *st, double u[3]) {
    double l;
    do {
        for (int k = 0; k < 3; ++k)
            u[k] = gf_test_uniform(st, -1.0, 1.0);
        l = gf_norm(u);
    } while (l < 0.1 || l > 1.0);
    for (int k = 0; k < 3; ++k)
        u[k] /= l;
}

static void to_local(const body *b, const double p[3], double l[3]) {
    double e[3] = {p[0] - b->p.x[0], p[1] - b->p.x[1], p[2] - b->p.x[2]};
    gf_quat_rotate_inv(b->p.q, e, l);
}

static void to_world(const body *b, const double l[3], double p[3]) {
    gf_quat_rotate(b->p.q, l, p);
    for (int k = 0; k < 3; ++k)
        p[k] += b->p.x[k];
}

/* ---- closed-form references ------------------------------------------------------------------ */

/* Signed distance of the world point p to the body: negative inside. */
static double sdf(const body *b, const double p[3]) {
    double l[3];
    to_local(b, p, l);
    const double *d = b->s.dim;
    switch (b->s.type) {
    case GF_SHAPE_SPHERE:
        return gf_norm(l) - d[0];
    case GF_SHAPE_BOX: {
        double q[3], o[3];
        for (int k = 0; k < 3; ++k) {
            q[k] = fabs(l[k]) - d[k];
            o[k] = fmax(q[k], 0.0);
        }
        return gf_norm(o) + fmin(fmax(q[0], fmax(q[1], q[2])), 0.0);
    }
    case GF_SHAPE_CYLINDER: {
        double dr = hypot(l[0], l[1]) - d[0], dz = fabs(l[2]) - d[1];
        return hypot(fmax(dr, 0.0), fmax(dz, 0.0)) + fmin(fmax(dr, dz), 0.0);
    }
    case GF_SHAPE_CAPSULE: {
        double e[3] = {l[0], l[1], l[2] - fmin(fmax(l[2], -d[1]), d[1])};
        return gf_norm(e) - d[0];
    }
    default:
        fail_msg("no sdf for shape %d", b->s.type);
        return 0.0;
    }
}

/* max over the body of u.p (u not necessarily unit) */
static double hsupport(const body *b, const double u[3]) {
    double l[3];
    gf_quat_rotate_inv(b->p.q, u, l);
    const double *d = b->s.dim;
    double h = gf_dot(u, b->p.x);
    switch (b->s.type) {
    case GF_SHAPE_SPHERE:
        return h + d[0] * gf_norm(l);
    case GF_SHAPE_BOX:
        return h + d[0] * fabs(l[0]) + d[1] * fabs(l[1]) + d[2] * fabs(l[2]);
    case GF_SHAPE_CYLINDER:
        return h + d[0] * hypot(l[0], l[1]) + d[1] * fabs(l[2]);
    case GF_SHAPE_CAPSULE:
        return h + d[0] * gf_norm(l) + d[1] * fabs(l[2]);
    default:
        fail_msg("no support for shape %d", b->s.type);
        return 0.0;
    }
}

/* The gap along the unit u (from b towards a): the distance between the supporting planes. */
static double dir_gap(const body *a, const body *b, const double u[3]) {
    double mu[3] = {-u[0], -u[1], -u[2]};
    return -hsupport(a, mu) - hsupport(b, u);
}

/* half width, in points, of the grids the brute-force searches refine with */
#define GRID 3

static void normalise(double u[3]) {
    double l = gf_norm(u);
    for (int k = 0; k < 3; ++k)
        u[k] /= l;
}

/* Refines a direction u (unit, in place) towards a local maximum of the supporting-plane gap by
 * a grid in the tangent plane, re-centred on its best point and shrunk when that is the centre.
 * On a sharp ridge of the non-smooth gap function it may crawl: the ridges are searched on
 * their own (bf_dirs), so the crawl is cut short. Returns the gap at u. */
static double refine_dir(const body *a, const body *b, double u[3]) {
    double g = dir_gap(a, b, u), t1[3], t2[3];
    int moves = 0;
    for (double step = 0.02; step > 1e-10 && moves < 400;) {
        gf_orthonormal(u, t1);
        gf_cross(u, t1, t2);
        double bu[3];
        memcpy(bu, u, sizeof bu);
        for (int i = -GRID; i <= GRID; ++i)
            for (int j = -GRID; j <= GRID; ++j) {
                double v[3];
                for (int m = 0; m < 3; ++m)
                    v[m] = u[m] + step * (i * t1[m] + j * t2[m]);
                normalise(v);
                double gv = dir_gap(a, b, v);
                if (gv > g + 1e-14 * (1.0 + fabs(g))) { /* not round-off */
                    g = gv;
                    memcpy(bu, v, sizeof v);
                }
            }
        if (memcmp(bu, u, sizeof bu) == 0) {
            step *= 0.5;
        } else {
            ++moves;
            memcpy(u, bu, sizeof bu);
        }
    }
    return g;
}

/* The axes across which a body's support function has a kink: the gap function has ridges on
 * the great circles normal to them (a box's faces and edges, a cylinder's or capsule's rim). */
static int kink_axes(const body *b, double ax[][3]) {
    int n = 0;
    for (int k = 0; k < 3; ++k) {
        if (b->s.type == GF_SHAPE_SPHERE || (b->s.type != GF_SHAPE_BOX && k != 2))
            continue;
        double e[3] = {0.0, 0.0, 0.0};
        e[k] = 1.0;
        gf_quat_rotate(b->p.q, e, ax[n++]);
    }
    return n;
}

static void keep_best(const body *a, const body *b, const double u[3], double *g_best,
                      double n[3]) {
    double g = dir_gap(a, b, u);
    if (g > *g_best) {
        *g_best = g;
        memcpy(n, u, 3 * sizeof n[0]);
    }
}

/* The maximum of the gap on the great circle normal to the unit axis e: dense samples, the best
 * ones refined by a shrinking 1-D search. */
static void ridge_search(const body *a, const body *b, const double e[3], double *g_best,
                         double n[3]) {
    enum { M = 720 };
    double t1[3], t2[3];
    gf_orthonormal(e, t1);
    gf_cross(e, t1, t2);
    double g_th[M];
    for (int i = 0; i < M; ++i) {
        double th = 2.0 * M_PI * i / M, u[3];
        for (int k = 0; k < 3; ++k)
            u[k] = cos(th) * t1[k] + sin(th) * t2[k];
        g_th[i] = dir_gap(a, b, u);
    }
    for (int i = 0; i < M; ++i) {
        if (g_th[i] < g_th[(i + 1) % M] || g_th[i] < g_th[(i + M - 1) % M])
            continue; /* not a local maximum of the samples */
        double th = 2.0 * M_PI * i / M, g = g_th[i];
        for (double step = 2.0 * M_PI / M; step > 1e-13;) {
            int moved = 0;
            for (int sgn = -1; sgn <= 1; sgn += 2) {
                double tt = th + sgn * step, u[3];
                for (int k = 0; k < 3; ++k)
                    u[k] = cos(tt) * t1[k] + sin(tt) * t2[k];
                double gv = dir_gap(a, b, u);
                if (gv > g + 1e-14 * (1.0 + fabs(g))) {
                    g = gv;
                    th = tt;
                    moved = 1;
                }
            }
            if (!moved)
                step *= 0.5;
        }
        double u[3];
        for (int k = 0; k < 3; ++k)
            u[k] = cos(th) * t1[k] + sin(th) * t2[k];
        keep_best(a, b, u, g_best, n);
    }
}

/* Brute force over directions: the signed distance of two convex bodies is the largest gap
 * between supporting planes over all normals (separating-plane theorem; for overlapping bodies
 * it is minus the penetration depth), so the best gap found is a lower bound of it. The gap is
 * smooth but on the great circles normal to the bodies' kink axes, so its maximum is a smooth
 * one (a Fibonacci sphere of directions, the best refined, and `start` if not NULL), or on one
 * of those circles (each searched), or where two of them cross (each tried). The maximiser is
 * the normal, from b towards a. */
static double bf_dirs(const body *a, const body *b, const double *start, double n_out[3]) {
    enum { N = 1200, KEEP = 4 };
    double best_g[KEEP + 1], best_u[KEEP + 1][3];
    for (int k = 0; k < KEEP; ++k)
        best_g[k] = -INFINITY;
    const double golden = M_PI * (3.0 - sqrt(5.0));
    for (int i = 0; i < N; ++i) {
        double z = 1.0 - (2.0 * i + 1.0) / N, r = sqrt(1.0 - z * z), phi = golden * i;
        double u[3] = {r * cos(phi), r * sin(phi), z};
        double g = dir_gap(a, b, u);
        int worst = 0;
        for (int k = 1; k < KEEP; ++k)
            if (best_g[k] < best_g[worst])
                worst = k;
        if (g > best_g[worst]) {
            best_g[worst] = g;
            memcpy(best_u[worst], u, sizeof u);
        }
    }
    int starts = KEEP;
    if (start) {
        memcpy(best_u[KEEP], start, sizeof best_u[KEEP]);
        normalise(best_u[KEEP]);
        starts = KEEP + 1;
    }
    double g_best = -INFINITY, n[3] = {0.0, 0.0, 1.0};
    for (int k = 0; k < starts; ++k) {
        refine_dir(a, b, best_u[k]);
        keep_best(a, b, best_u[k], &g_best, n);
    }
    double ax[6][3];
    int na = kink_axes(a, ax);
    na += kink_axes(b, ax + na);
    for (int i = 0; i < na; ++i) {
        ridge_search(a, b, ax[i], &g_best, n);
        for (int j = i + 1; j < na; ++j) {
            double c[3];
            gf_cross(ax[i], ax[j], c);
            if (gf_norm(c) < 1e-12)
                continue;
            normalise(c);
            keep_best(a, b, c, &g_best, n);
            for (int k = 0; k < 3; ++k)
                c[k] = -c[k];
            keep_best(a, b, c, &g_best, n);
        }
    }
    if (n_out)
        memcpy(n_out, n, sizeof n);
    return g_best;
}

/* Surface patches of a body, parametrised over [0, 1]^2; periodic in the first parameter for
 * the round ones. */
static int patches(const body *b) {
    return b->s.type == GF_SHAPE_BOX ? 6 : b->s.type == GF_SHAPE_SPHERE ? 1 : 3;
}

static void surface_point(const body *b, int patch, double u, double v, double p[3]) {
    const double *d = b->s.dim;
    double l[3] = {0.0, 0.0, 0.0};
    switch (b->s.type) {
    case GF_SHAPE_BOX: {
        int k = patch / 2, j = (k + 1) % 3, m = (k + 2) % 3;
        l[k] = (patch % 2 ? -1.0 : 1.0) * d[k];
        l[j] = (2.0 * u - 1.0) * d[j];
        l[m] = (2.0 * v - 1.0) * d[m];
        break;
    }
    case GF_SHAPE_SPHERE: {
        double th = M_PI * v, ph = 2.0 * M_PI * u;
        l[0] = d[0] * sin(th) * cos(ph);
        l[1] = d[0] * sin(th) * sin(ph);
        l[2] = d[0] * cos(th);
        break;
    }
    case GF_SHAPE_CYLINDER: {
        double ph = 2.0 * M_PI * u;
        if (patch == 0) {
            l[0] = d[0] * cos(ph);
            l[1] = d[0] * sin(ph);
            l[2] = (2.0 * v - 1.0) * d[1];
        } else {
            l[0] = d[0] * v * cos(ph);
            l[1] = d[0] * v * sin(ph);
            l[2] = patch == 1 ? d[1] : -d[1];
        }
        break;
    }
    case GF_SHAPE_CAPSULE: {
        double ph = 2.0 * M_PI * u;
        if (patch == 0) {
            l[0] = d[0] * cos(ph);
            l[1] = d[0] * sin(ph);
            l[2] = (2.0 * v - 1.0) * d[1];
        } else {
            double th = 0.5 * M_PI * v, s = patch == 1 ? 1.0 : -1.0;
            l[0] = d[0] * sin(th) * cos(ph);
            l[1] = d[0] * sin(th) * sin(ph);
            l[2] = s * (d[1] + d[0] * cos(th));
        }
        break;
    }
    default:
        fail_msg("no surface for shape %d", b->s.type);
    }
    to_world(b, l, p);
}

static double wrap01(double u, int periodic) {
    if (periodic)
        return u - floor(u);
    return fmin(fmax(u, 0.0), 1.0);
}

/* Brute force over the surface of a: the least signed distance to b of a point of a's surface,
 * a dense grid on every patch refined by a shrinking pattern search. For separated bodies it is
 * their distance; for overlapping ones minus the depth of a's deepest surface point in b, which
 * is a lower bound of the penetration depth (that point must leave b). *where gets the point. */
static double bf_surface(const body *a, const body *b, double where[3]) {
    enum { G = 32 };
    int periodic = a->s.type != GF_SHAPE_BOX;
    double best = INFINITY;
    for (int pt = 0; pt < patches(a); ++pt) {
        double bu = 0.0, bv = 0.0, g = INFINITY, p[3];
        for (int i = 0; i <= G; ++i)
            for (int j = 0; j <= G; ++j) {
                surface_point(a, pt, (double)i / G, (double)j / G, p);
                double s = sdf(b, p);
                if (s < g) {
                    g = s;
                    bu = (double)i / G;
                    bv = (double)j / G;
                }
            }
        for (double step = 1.0 / G; step > 1e-11;) {
            double cu = bu, cv = bv;
            for (int i = -GRID; i <= GRID; ++i)
                for (int j = -GRID; j <= GRID; ++j) {
                    double u = wrap01(cu + step * i, periodic), v = wrap01(cv + step * j, 0);
                    surface_point(a, pt, u, v, p);
                    double s = sdf(b, p);
                    if (s < g - 1e-14 * (1.0 + fabs(g))) { /* not round-off */
                        g = s;
                        bu = u;
                        bv = v;
                    }
                }
            step = bu == cu && bv == cv ? 0.5 * step : fmin(2.0 * step, 1.0 / G);
        }
        if (g < best) {
            best = g;
            if (where)
                surface_point(a, pt, bu, bv, where);
        }
    }
    return best;
}

/* ---- helpers on results ---------------------------------------------------------------------- */

static double min_gap(const gf_contact_point *c, int n) {
    double g = INFINITY;
    for (int i = 0; i < n; ++i)
        g = fmin(g, c[i].gap);
    return g;
}

static void check_common(const gf_contact_point *c, int n, double margin) {
    assert_true(n >= 0 && n <= GF_MANIFOLD_MAX);
    for (int i = 0; i < n; ++i) {
        GF_ASSERT_NEAR(gf_norm(c[i].n), 1.0, 1e-12);
        assert_true(c[i].gap < margin);
        assert_true(c[i].gap >= c[0].gap); /* deepest first */
        /* one normal, but for the points over a face beside a point on its border: the face's
         * normal, within 10 degrees */
        double dn = 0.0;
        for (int k = 0; k < 3; ++k)
            dn = fmax(dn, fabs(c[i].n[k] - c[0].n[k]));
        assert_true(dn <= 1e-15 || gf_dot(c[i].n, c[0].n) >= cos(10.0 * M_PI / 180.0));
    }
}

static int collide(body *a, body *b, double margin, gf_contact_point *c) {
    int n = -1;
    GF_ASSERT_OK(gf_collide_convex(pose(a), pose(b), margin, c, &n));
    check_common(c, n, margin);
    return n;
}

static double size_of(const body *b) {
    const double *d = b->s.dim;
    switch (b->s.type) {
    case GF_SHAPE_BOX:
        return gf_norm(d);
    case GF_SHAPE_CYLINDER:
        return hypot(d[0], d[1]);
    default:
        return d[0] + d[1];
    }
}

/* A body of the given type with random dimensions around 1. */
static gf_shape shape_random(uint64_t *st, int type) {
    switch (type) {
    case GF_SHAPE_BOX:
        return gf_shape_box(gf_test_uniform(st, 0.2, 1.0), gf_test_uniform(st, 0.2, 1.0),
                            gf_test_uniform(st, 0.2, 1.0));
    case GF_SHAPE_CYLINDER:
        return gf_shape_cylinder(gf_test_uniform(st, 0.2, 0.8), gf_test_uniform(st, 0.1, 1.0));
    case GF_SHAPE_CAPSULE:
        return gf_shape_capsule(gf_test_uniform(st, 0.15, 0.6), gf_test_uniform(st, 0.1, 1.0));
    default:
        return gf_shape_sphere(gf_test_uniform(st, 0.2, 0.8));
    }
}

/* b at a random place and orientation, a at a random orientation along a random direction from
 * it, at `offset` (relative to the supporting-plane contact distance along that direction). */
static void pair_random(uint64_t *st, int ta, int tb, double offset, body *a, body *b) {
    double qa[4], qb[4], xb[3], u[3], zero[3] = {0.0, 0.0, 0.0};
    quat_random(st, qa);
    quat_random(st, qb);
    for (int k = 0; k < 3; ++k)
        xb[k] = gf_test_uniform(st, -2.0, 2.0);
    body_set(b, shape_random(st, tb), xb, qb);
    body_set(a, shape_random(st, ta), zero, qa);
    unit_random(st, u);
    double mu[3] = {-u[0], -u[1], -u[2]};
    double t = hsupport(b, u) - gf_dot(u, xb) + hsupport(a, mu);
    for (int k = 0; k < 3; ++k)
        a->p.x[k] = xb[k] + u[k] * (t + offset * (size_of(a) + size_of(b)));
}

static const int pair_types[][2] = {
    {GF_SHAPE_CYLINDER, GF_SHAPE_BOX},      {GF_SHAPE_BOX, GF_SHAPE_CYLINDER},
    {GF_SHAPE_CYLINDER, GF_SHAPE_CYLINDER}, {GF_SHAPE_CAPSULE, GF_SHAPE_BOX},
    {GF_SHAPE_BOX, GF_SHAPE_CAPSULE},       {GF_SHAPE_CYLINDER, GF_SHAPE_CAPSULE},
    {GF_SHAPE_CAPSULE, GF_SHAPE_CAPSULE},   {GF_SHAPE_BOX, GF_SHAPE_BOX},
    {GF_SHAPE_SPHERE, GF_SHAPE_CYLINDER},   {GF_SHAPE_SPHERE, GF_SHAPE_BOX},
};
#define PAIR_TYPES ((int)(sizeof pair_types / sizeof pair_types[0]))

/* ---- gaps against brute force ---------------------------------------------------------------- */

/* Random pairs at offsets in [lo, hi): the reported gap against the brute-force references, to
 * tol of the pair's size. */
static void check_random_gaps(int ta, int tb, uint64_t seed, int count, double lo, double hi,
                              double tol) {
    uint64_t st = seed;
    double worst = 0.0;
    for (int i = 0; i < count; ++i) {
        body a, b;
        pair_random(&st, ta, tb, gf_test_uniform(&st, lo, hi), &a, &b);
        double size = size_of(&a) + size_of(&b), margin = size;
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&a, &b, margin, c);
        assert_true(n >= 1);
        double g = min_gap(c, n);
        /* every direction's supporting-plane gap is a lower bound of the signed distance, the
         * best one found is the reference; the reported normal is one more start for the
         * search, so that a stalled search cannot fail a right answer, while a wrong answer
         * still fails against the other starts */
        double nref[3];
        double ref = bf_dirs(&a, &b, c[0].n, nref);
        if (ref > 0.0) {
            /* separated: the surface-sampled distance is an upper bound of it */
            double up = fmin(bf_surface(&a, &b, NULL), bf_surface(&b, &a, NULL));
            if (!(up >= ref - 1e-9 * size && up - ref <= tol * size))
                fail_msg("references disagree: surface %.10g, directions %.10g", up, ref);
        }
        double err = fabs(g - ref) / size;
        worst = fmax(worst, err);
        if (!(err <= tol))
            fail_msg("pair %d (%s-%s): gap %.10g, brute force %.10g, normal (%.6f %.6f %.6f) vs "
                     "(%.6f %.6f %.6f)",
                     i, gf_shape_name(ta), gf_shape_name(tb), g, ref, c[0].n[0], c[0].n[1],
                     c[0].n[2], nref[0], nref[1], nref[2]);
    }
    print_message("%s-%s: %d pairs, worst gap error %.1e of the size\n", gf_shape_name(ta),
                  gf_shape_name(tb), count, worst);
}

static void test_gaps_separated(void **state) {
    (void)state;
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_BOX, 11, 20, 0.005, 0.3, 1e-7);
    check_random_gaps(GF_SHAPE_BOX, GF_SHAPE_CYLINDER, 12, 20, 0.005, 0.3, 1e-7);
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_CYLINDER, 13, 20, 0.005, 0.3, 1e-7);
    check_random_gaps(GF_SHAPE_CAPSULE, GF_SHAPE_BOX, 14, 20, 0.005, 0.3, 1e-7);
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_CAPSULE, 15, 20, 0.005, 0.3, 1e-7);
}

static void test_gaps_overlapping(void **state) {
    (void)state;
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_BOX, 21, 20, -0.05, -0.002, 1e-7);
    check_random_gaps(GF_SHAPE_BOX, GF_SHAPE_CYLINDER, 22, 20, -0.05, -0.002, 1e-7);
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_CYLINDER, 23, 20, -0.05, -0.002, 1e-7);
    check_random_gaps(GF_SHAPE_CAPSULE, GF_SHAPE_BOX, 24, 20, -0.05, -0.002, 1e-7);
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_CAPSULE, 25, 20, -0.05, -0.002, 1e-7);
}

/* Deep overlaps have local optima (a body can be pushed out through several faces): the
 * reported gap is the global one, minus the least penetration depth. */
static void test_gaps_deep_overlap(void **state) {
    (void)state;
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_BOX, 31, 20, -0.15, -0.05, 1e-7);
    check_random_gaps(GF_SHAPE_BOX, GF_SHAPE_CYLINDER, 32, 20, -0.15, -0.05, 1e-7);
    check_random_gaps(GF_SHAPE_CYLINDER, GF_SHAPE_CYLINDER, 33, 20, -0.15, -0.05, 1e-7);
}

/* Two separated cylinders on which GJK's last simplex, made of nearly coinciding points of the
 * curved sides, turns flat, and its round-off volumes once put the origin inside: the pair was
 * taken for overlapping, and the ascent from EPA's normal then stalled on the ridge of the long
 * cylinder's side, 8 % short of the gap. (A flat simplex is now held empty, and the ridges are
 * sought again at every step of the ascent.) */
static void test_gjk_flat_simplex(void **state) {
    (void)state;
    const double xa[3] = {-1.0004804580236413, -2.2504823468032269, -0.49054099413480884};
    const double qa[4] = {0.76045203715111998, 0.52151411922052049, -0.38551524945940735,
                          0.033372370017834302};
    const double xb[3] = {-1.5507190016450374, -1.9213294896190676, -0.97953148948008817};
    const double qb[4] = {0.69071169640850438, -0.11323759412412077, -0.51220934418819519,
                          0.49773103926494883};
    body a, b;
    body_set(&a, gf_shape_cylinder(0.25789769203933532, 0.23256028434411807), xa, qa);
    body_set(&b, gf_shape_cylinder(0.45158669386701888, 0.80934974605229781), xb, qb);
    gf_contact_point c[GF_MANIFOLD_MAX];
    int n = collide(&a, &b, 0.1, c);
    assert_int_equal(n, 1);
    double dist = fmin(bf_surface(&a, &b, NULL), bf_surface(&b, &a, NULL));
    GF_ASSERT_NEAR(c[0].gap, dist, 1e-9);
}

/* gf_collide_convex in a child process that gets `seconds` to answer: a test of a pair that once
 * hung fails instead of hanging. Returns the number of points written to c. */
static int collide_in_time(body *a, body *b, double margin, unsigned seconds,
                           gf_contact_point c[GF_MANIFOLD_MAX]) {
    struct {
        gf_status st;
        int n;
        gf_contact_point c[GF_MANIFOLD_MAX];
    } r;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        alarm(seconds);
        memset(&r, 0, sizeof r);
        r.st = gf_collide_convex(pose(a), pose(b), margin, r.c, &r.n);
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the contact test %s (signal %d)",
                 WTERMSIG(status) == SIGALRM ? "did not finish in time" : "crashed",
                 WTERMSIG(status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof r);
    assert_int_equal(r.st, GF_OK);
    check_common(r.c, r.n, margin);
    memcpy(c, r.c, sizeof r.c);
    return r.n;
}

/* A box standing on the floor against a cylindrical pillar that also stands on it, so the
 * bodies' bottom faces are coplanar to round-off, and a vertical edge of the box just touches
 * the pillar's side (configs/reference.cfg, step 1795; the poses as they were, in metres).
 * libccd 2.1's EPA then never ended: its polytope folded on the box edge (rounded by the
 * inflation), the face nearest the origin lay inside the Minkowski difference, and the support
 * point along it, a vertex already on the polytope, was added again at every iteration. */
static void test_epa_folded_polytope(void **state) {
    (void)state;
    const double xa[3] = {0.080470375545094258, 0.01146651380969586, 0.0019999993993346904};
    const double qa[4] = {0.80616050057447475, 2.8737418629964104e-08, -1.1207138265718071e-07,
                          0.59169692183878997};
    const double xb[3] = {0.080000000000000002, 0.02, 0.02};
    body a, b;
    body_set(&a, gf_shape_box(0.004, 0.003, 0.002), xa, qa);
    body_set(&b, gf_shape_cylinder(0.004, 0.02), xb, q_id);
    double size = size_of(&a) + size_of(&b);
    gf_contact_point c[GF_MANIFOLD_MAX];
    int n = collide_in_time(&a, &b, 0.00040566605262899806, 10, c);
    assert_true(n >= 1);
    double nref[3], ref = bf_dirs(&a, &b, c[0].n, nref);
    print_message("gap %.10g, brute force %.10g; normal (%.9f %.9f %.9f) vs (%.9f %.9f %.9f)\n",
                  min_gap(c, n), ref, c[0].n[0], c[0].n[1], c[0].n[2], nref[0], nref[1], nref[2]);
    GF_ASSERT_NEAR(min_gap(c, n), ref, 1e-7 * size);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(c[0].n[k], nref[k], 1e-6);
    /* in plan the pillar's axis lies beyond the box's corner (+x, +y): the normal is the radius
     * through that vertical edge, the gap its distance from the axis less the radius (the box is
     * tilted by 1e-7, which moves its edge by less than 1e-9 over its height) */
    const double corner[3] = {0.004, 0.003, 0.0};
    double e[3];
    to_world(&a, corner, e);
    double radial[3] = {e[0] - xb[0], e[1] - xb[1], 0.0}, dist = gf_norm(radial);
    GF_ASSERT_NEAR(min_gap(c, n), dist - 0.004, 1e-9);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(c[0].n[k], radial[k] / dist, 1e-6);
}

/* ---- configurations computed by hand --------------------------------------------------------- */

static const double ez[3] = {0.0, 0.0, 1.0};

static void check_normal(const gf_contact_point *c, int n, const double e[3], double tol) {
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(c[i].n[k], e[k], tol);
}

/* A cylinder lying on a box face: its lowest line is along x at height z0 - r. */
static void test_cylinder_lying_on_box(void **state) {
    (void)state;
    const double r = 0.3, h = 0.6, x0 = 0.1, y0 = -0.05;
    double q[4], zero[3] = {0.0, 0.0, 0.0};
    quat_axis(0.0, 1.0, 0.0, 0.5 * M_PI, q); /* axis z turned onto x */
    const double depths[] = {0.02, 1e-4, 0.0, -0.01, -0.05};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; ++k) {
        double d = depths[k], x[3] = {x0, y0, 0.5 + r - d};
        body cyl, box;
        body_set(&cyl, gf_shape_cylinder(r, h), x, q);
        body_set(&box, gf_shape_box(1.0, 0.8, 0.5), zero, q_id);
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&cyl, &box, 0.1, c);
        assert_int_equal(n, 2);
        check_normal(c, n, ez, 1e-9);
        double xs[2];
        for (int i = 0; i < 2; ++i) {
            GF_ASSERT_NEAR(c[i].gap, -d, 1e-9);
            GF_ASSERT_NEAR(c[i].p[1], y0, 1e-9);
            GF_ASSERT_NEAR(c[i].p[2], 0.5 - 0.5 * d, 1e-9); /* midway */
            xs[i] = c[i].p[0];
        }
        /* the ends of the contact line */
        GF_ASSERT_NEAR(fmin(xs[0], xs[1]), x0 - h, 1e-9);
        GF_ASSERT_NEAR(fmax(xs[0], xs[1]), x0 + h, 1e-9);
        /* the manifold from a normal 1 degree off (about the axis, where the line of a round
         * body moves with the normal): the box face's normal, and the same line */
        double tilted[3] = {0.0, sin(M_PI / 180.0), cos(M_PI / 180.0)};
        gf_contact_point ct[GF_MANIFOLD_MAX];
        int nt = -1;
        GF_ASSERT_OK(gf_manifold_build(pose(&cyl), pose(&box), tilted, NAN, 0.1, ct, &nt));
        assert_int_equal(nt, 2);
        check_normal(ct, nt, ez, 1e-15);
        for (int i = 0; i < 2; ++i) {
            GF_ASSERT_NEAR(ct[i].gap, -d, 1e-12);
            GF_ASSERT_NEAR(ct[i].p[1], y0, 1e-12);
        }
    }
}

/* A cylinder standing on a box face: its cap at z0 - h. */
static void test_cylinder_standing_on_box(void **state) {
    (void)state;
    const double r = 0.3, h = 0.4, x0 = 0.2, y0 = 0.1;
    double zero[3] = {0.0, 0.0, 0.0};
    const double depths[] = {0.03, 1e-5, -0.02};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; ++k) {
        double d = depths[k], x[3] = {x0, y0, 0.5 + h - d};
        body cyl, box;
        body_set(&cyl, gf_shape_cylinder(r, h), x, q_id);
        body_set(&box, gf_shape_box(1.0, 0.8, 0.5), zero, q_id);
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&cyl, &box, 0.1, c);
        assert_true(n >= 3);
        check_normal(c, n, ez, 1e-9);
        for (int i = 0; i < n; ++i) {
            GF_ASSERT_NEAR(c[i].gap, -d, 1e-9);
            GF_ASSERT_NEAR(c[i].p[2], 0.5 - 0.5 * d, 1e-9);
            /* inside the cap disc */
            assert_true(hypot(c[i].p[0] - x0, c[i].p[1] - y0) <= r + 1e-9);
        }
        /* not collinear: they span an area (a triangle of the cap at least) */
        double e1[3], e2[3], cr[3];
        for (int j = 0; j < 3; ++j) {
            e1[j] = c[1].p[j] - c[0].p[j];
            e2[j] = c[2].p[j] - c[0].p[j];
        }
        gf_cross(e1, e2, cr);
        assert_true(0.5 * gf_norm(cr) > 0.5 * r * r);
    }
}

/* Parallel cylinders side by side: gap d - 2r exactly, along the line of centres, at both ends of
 * the common side line. */
static void test_cylinders_side_by_side(void **state) {
    (void)state;
    const double r = 0.3, h = 0.5;
    double q[4];
    quat_axis(0.3, -0.5, 0.8, 1.1, q); /* any common orientation */
    double ax[3], ex[3] = {1.0, 0.0, 0.0}, side[3], local_z[3] = {0.0, 0.0, 1.0};
    gf_quat_rotate(q, local_z, ax);
    gf_quat_rotate(q, ex, side); /* perpendicular to the axis */
    const double dist[] = {0.5, 0.59, 0.6, 0.61, 0.7};
    for (size_t k = 0; k < sizeof dist / sizeof dist[0]; ++k) {
        double xa[3], xb[3] = {0.3, -0.2, 0.1};
        for (int j = 0; j < 3; ++j)
            xa[j] = xb[j] + dist[k] * side[j];
        body a, b;
        body_set(&a, gf_shape_cylinder(r, h), xa, q);
        body_set(&b, gf_shape_cylinder(r, h), xb, q);
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&a, &b, 0.2, c);
        assert_int_equal(n, 2);
        check_normal(c, n, side, 1e-7);
        double s[2];
        for (int i = 0; i < 2; ++i) {
            GF_ASSERT_NEAR(c[i].gap, dist[k] - 2.0 * r, 1e-9);
            double e[3];
            for (int j = 0; j < 3; ++j)
                e[j] = c[i].p[j] - xb[j];
            s[i] = gf_dot(e, ax);
            GF_ASSERT_NEAR(gf_dot(e, side), 0.5 * dist[k], 1e-7); /* midway */
        }
        GF_ASSERT_NEAR(fmin(s[0], s[1]), -h, 1e-7);
        GF_ASSERT_NEAR(fmax(s[0], s[1]), h, 1e-7);
    }
}

/* A capsule lying on a box face: 2 points, at the ends of its axis. */
static void test_capsule_lying_on_box(void **state) {
    (void)state;
    const double r = 0.2, h = 0.5, x0 = -0.1, y0 = 0.2;
    double q[4], zero[3] = {0.0, 0.0, 0.0};
    quat_axis(1.0, 1.0, 0.0, 0.5 * M_PI, q); /* axis z turned into the xy plane */
    double ax[3], local_z[3] = {0.0, 0.0, 1.0};
    gf_quat_rotate(q, local_z, ax);
    const double depths[] = {0.03, 0.0, -0.04};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; ++k) {
        double d = depths[k], x[3] = {x0, y0, 0.5 + r - d};
        body cap, box;
        body_set(&cap, gf_shape_capsule(r, h), x, q);
        body_set(&box, gf_shape_box(1.0, 0.8, 0.5), zero, q_id);
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&box, &cap, 0.1, c); /* the capsule as b: the normal is -z */
        assert_int_equal(n, 2);
        double mz[3] = {0.0, 0.0, -1.0};
        check_normal(c, n, mz, 1e-9);
        double s[2];
        for (int i = 0; i < 2; ++i) {
            GF_ASSERT_NEAR(c[i].gap, -d, 1e-9);
            GF_ASSERT_NEAR(c[i].p[2], 0.5 - 0.5 * d, 1e-9);
            double e[3] = {c[i].p[0] - x0, c[i].p[1] - y0, 0.0};
            s[i] = gf_dot(e, ax);
            GF_ASSERT_NEAR(fabs(gf_dot(e, ax)), gf_norm(e), 1e-9); /* on the axis' shadow */
        }
        GF_ASSERT_NEAR(fmin(s[0], s[1]), -h, 1e-9);
        GF_ASSERT_NEAR(fmax(s[0], s[1]), h, 1e-9);
    }
}

/* A capsule lying across a cylinder's cap, off its centre: the contact is the chord of the cap
 * under the capsule's axis, its ends on the rim (not on the polygon inscribed in it). */
static void test_capsule_across_cap(void **state) {
    (void)state;
    const double rc = 0.5, hc = 0.3, r = 0.1, h = 1.0, y0 = 0.3;
    const double half_chord = sqrt(rc * rc - y0 * y0);
    double qm[4], qx[4], q[4];
    quat_axis(0.2, 0.7, -0.4, 2.0, qm); /* a common rotation of the whole scene */
    quat_axis(0.0, 1.0, 0.0, 0.5 * M_PI, qx);
    gf_quat_mul(qm, qx, q);
    double ex[3] = {1.0, 0.0, 0.0}, ax[3], up[3], local_z[3] = {0.0, 0.0, 1.0};
    gf_quat_rotate(qm, ex, ax);
    gf_quat_rotate(qm, local_z, up);
    const double depths[] = {0.02, -0.01};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; ++k) {
        double d = depths[k], local[3] = {0.05, y0, hc + r - d}, xa[3], zero[3] = {0.0, 0.0, 0.0};
        gf_quat_rotate(qm, local, xa);
        body cap, cyl;
        body_set(&cap, gf_shape_capsule(r, h), xa, q);
        body_set(&cyl, gf_shape_cylinder(rc, hc), zero, qm);
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&cap, &cyl, 0.1, c);
        assert_int_equal(n, 2);
        check_normal(c, n, up, 1e-9);
        double s[2];
        for (int i = 0; i < 2; ++i) {
            GF_ASSERT_NEAR(c[i].gap, -d, 1e-9);
            s[i] = gf_dot(c[i].p, ax);
            GF_ASSERT_NEAR(gf_dot(c[i].p, up), hc - 0.5 * d, 1e-9);
        }
        /* (the disc is widened by 1e-9 of the size, so that points on the rim stay) */
        GF_ASSERT_NEAR(fmin(s[0], s[1]), -half_chord, 1e-8);
        GF_ASSERT_NEAR(fmax(s[0], s[1]), half_chord, 1e-8);
    }
}

/* ---- the manifold of two box faces ---------------------------------------------------------- */

/* Whether the point p projects (along z) into the top face of the box b. */
static int in_top_face(const body *b, const double p[3], double tol) {
    double l[3];
    to_local(b, p, l);
    return fabs(l[0]) <= b->s.dim[0] + tol && fabs(l[1]) <= b->s.dim[1] + tol;
}

/* Twice the area of the convex hull of the points (x, y): gift wrapping. */
static double hull_area2(const gf_contact_point *c, int n) {
    int hull[GF_MANIFOLD_MAX + 1], h = 0, start = 0;
    for (int i = 1; i < n; ++i)
        if (c[i].p[0] < c[start].p[0])
            start = i;
    int cur = start;
    do {
        hull[h++] = cur;
        int next = (cur + 1) % n;
        for (int i = 0; i < n; ++i) {
            double cr = (c[next].p[0] - c[cur].p[0]) * (c[i].p[1] - c[cur].p[1]) -
                        (c[next].p[1] - c[cur].p[1]) * (c[i].p[0] - c[cur].p[0]);
            if (cr < 0.0)
                next = i;
        }
        cur = next;
    } while (cur != start && h <= n);
    double a2 = 0.0;
    for (int i = 0; i < h; ++i) {
        const double *p = c[hull[i]].p, *q = c[hull[(i + 1) % h]].p;
        a2 += p[0] * q[1] - p[1] * q[0];
    }
    return fabs(a2);
}

static void test_manifold_box_on_box(void **state) {
    (void)state;
    const double d = 0.01, zero[3] = {0.0, 0.0, 0.0};
    const double angles[] = {0.0, M_PI / 6.0, 1.0};
    for (size_t k = 0; k < sizeof angles / sizeof angles[0]; ++k) {
        double q[4], x[3] = {0.5, 0.6, 0.5 + 0.3 - d};
        quat_axis(0.0, 0.0, 1.0, angles[k], q);
        body top, bottom;
        body_set(&top, gf_shape_box(0.6, 0.4, 0.3), x, q);
        body_set(&bottom, gf_shape_box(1.0, 1.0, 0.5), zero, q_id);
        gf_contact_point c[GF_MANIFOLD_MAX], ct[GF_MANIFOLD_MAX];
        int n = -1, nt = -1;
        GF_ASSERT_OK(gf_manifold_build(pose(&top), pose(&bottom), ez, NAN, 0.05, c, &n));
        check_common(c, n, 0.05);
        assert_int_equal(n, 4);
        check_normal(c, n, ez, 1e-15);
        /* a normal 1 degree off is taken as the faces' one: the same manifold */
        double tilted[3] = {sin(M_PI / 180.0), 0.0, cos(M_PI / 180.0)};
        GF_ASSERT_OK(gf_manifold_build(pose(&top), pose(&bottom), tilted, NAN, 0.05, ct, &nt));
        assert_int_equal(nt, n);
        for (int i = 0; i < n; ++i) {
            GF_ASSERT_NEAR(ct[i].gap, c[i].gap, 1e-12);
            for (int j = 0; j < 3; ++j) {
                GF_ASSERT_NEAR(ct[i].n[j], c[i].n[j], 1e-12);
                GF_ASSERT_NEAR(ct[i].p[j], c[i].p[j], 1e-12);
            }
        }
        for (int i = 0; i < n; ++i) {
            GF_ASSERT_NEAR(c[i].gap, -d, 1e-12);
            GF_ASSERT_NEAR(c[i].p[2], 0.5 - 0.5 * d, 1e-12);
            assert_true(in_top_face(&top, c[i].p, 1e-9));
            assert_true(in_top_face(&bottom, c[i].p, 1e-9));
        }
        /* the overlap of the faces, by a fine grid: the points span most of it (all of it when
         * the overlap is a rectangle, whose corners they are) */
        enum { G = 400 };
        double cell = 2.0 / G, area = 0.0;
        for (int i = 0; i < G; ++i)
            for (int j = 0; j < G; ++j) {
                double p[3] = {-1.0 + (i + 0.5) * cell, -1.0 + (j + 0.5) * cell, 0.5};
                area += in_top_face(&top, p, 0.0) ? cell * cell : 0.0;
            }
        double hull = 0.5 * hull_area2(c, n);
        if (angles[k] == 0.0) {
            GF_ASSERT_NEAR(hull, 1.1 * 0.8, 1e-12);
            GF_ASSERT_NEAR(area, 1.1 * 0.8, 0.01);
        } else {
            assert_true(hull <= area + 0.01);
            assert_true(hull >= 0.6 * area);
        }
    }
}

/* ---- invariants ------------------------------------------------------------------------------ */

/* Swapping a and b flips the normals and keeps the gaps and points. */
static void test_swap_symmetry(void **state) {
    (void)state;
    uint64_t st = 31;
    for (int i = 0; i < 200; ++i) {
        int t = i % PAIR_TYPES;
        body a, b;
        pair_random(&st, pair_types[t][0], pair_types[t][1], gf_test_uniform(&st, -0.05, 0.05), &a,
                    &b);
        double size = size_of(&a) + size_of(&b), margin = 0.1 * size;
        gf_contact_point c1[GF_MANIFOLD_MAX], c2[GF_MANIFOLD_MAX];
        int n1 = collide(&a, &b, margin, c1), n2 = collide(&b, &a, margin, c2);
        assert_int_equal(n1 > 0, n2 > 0);
        if (n1 == 0)
            continue;
        GF_ASSERT_NEAR(c1[0].gap / size, c2[0].gap / size, 1e-6);
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(c1[0].n[k], -c2[0].n[k], 1e-4);
    }
}

/* Moving both bodies by one rigid motion moves the contacts with them. */
static void test_rigid_motion_invariance(void **state) {
    (void)state;
    uint64_t st = 41;
    for (int i = 0; i < 200; ++i) {
        int t = i % PAIR_TYPES;
        body a, b;
        pair_random(&st, pair_types[t][0], pair_types[t][1], gf_test_uniform(&st, -0.05, 0.05), &a,
                    &b);
        double size = size_of(&a) + size_of(&b), margin = 0.1 * size;
        double qm[4], tm[3];
        quat_random(&st, qm);
        for (int k = 0; k < 3; ++k)
            tm[k] = gf_test_uniform(&st, -5.0, 5.0);
        body a2 = a, b2 = b;
        body *src[2] = {&a, &b}, *dst[2] = {&a2, &b2};
        for (int j = 0; j < 2; ++j) {
            gf_quat_rotate(qm, src[j]->p.x, dst[j]->p.x);
            for (int k = 0; k < 3; ++k)
                dst[j]->p.x[k] += tm[k];
            gf_quat_mul(qm, src[j]->p.q, dst[j]->p.q);
        }
        gf_contact_point c1[GF_MANIFOLD_MAX], c2[GF_MANIFOLD_MAX];
        int n1 = collide(&a, &b, margin, c1), n2 = collide(&a2, &b2, margin, c2);
        assert_int_equal(n1 > 0, n2 > 0);
        if (n1 == 0)
            continue;
        GF_ASSERT_NEAR(c1[0].gap / size, c2[0].gap / size, 1e-6);
        double nr[3], pr[3];
        gf_quat_rotate(qm, c1[0].n, nr);
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(nr[k], c2[0].n[k], 1e-4);
        /* the deepest point moved, when it is a single well-defined point */
        if (n1 == 1 && n2 == 1) {
            gf_quat_rotate(qm, c1[0].p, pr);
            for (int k = 0; k < 3; ++k)
                GF_ASSERT_NEAR((pr[k] + tm[k] - c2[0].p[k]) / size, 0.0, 1e-4);
        }
    }
}

/* The same pair at the scale of microns and of metres, far from the origin: the gap scales with
 * it (the narrow phase works in a frame of the bodies' own size). */
static void test_scale_invariance(void **state) {
    (void)state;
    uint64_t st = 51;
    const double scales[] = {1e-6, 1e3};
    for (int i = 0; i < 40; ++i) {
        int t = i % 7; /* the pairs with cylinders or capsules */
        body a, b;
        pair_random(&st, pair_types[t][0], pair_types[t][1], gf_test_uniform(&st, -0.05, 0.05), &a,
                    &b);
        double size = size_of(&a) + size_of(&b), margin = 0.1 * size;
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&a, &b, margin, c);
        for (size_t k = 0; k < sizeof scales / sizeof scales[0]; ++k) {
            double s = scales[k];
            body as = a, bs = b;
            body *src[2] = {&a, &b}, *dst[2] = {&as, &bs};
            for (int j = 0; j < 2; ++j) {
                for (int m = 0; m < 3; ++m) {
                    dst[j]->s.dim[m] *= s;
                    dst[j]->p.x[m] = (src[j]->p.x[m] + 100.0) * s;
                }
            }
            gf_contact_point cs[GF_MANIFOLD_MAX];
            int ns = collide(&as, &bs, margin * s, cs);
            assert_int_equal(ns, n);
            for (int j = 0; j < n; ++j) {
                /* (a normal on a curved face is as exact as the square root of its gap) */
                GF_ASSERT_NEAR(cs[j].gap / (s * size), c[j].gap / size, 1e-10);
                for (int m = 0; m < 3; ++m) {
                    GF_ASSERT_NEAR(cs[j].n[m], c[j].n[m], 1e-7);
                    GF_ASSERT_NEAR((cs[j].p[m] / s - 100.0 - c[j].p[m]) / size, 0.0, 1e-7);
                }
            }
        }
    }
}

/* ---- overlap and separation by brute force --------------------------------------------------- */

/* Whenever a point of one body's surface lies inside the other at depth delta, the bodies cannot
 * be separated by a translation shorter than delta: the reported gap is at most -delta. */
static void test_overlap_property(void **state) {
    (void)state;
    uint64_t st = 61;
    int overlaps = 0;
    for (int i = 0; i < 150; ++i) {
        int t = i % PAIR_TYPES;
        body a, b;
        pair_random(&st, pair_types[t][0], pair_types[t][1], gf_test_uniform(&st, -0.4, 0.0), &a,
                    &b);
        double size = size_of(&a) + size_of(&b), margin = 0.05 * size;
        double delta = -fmin(bf_surface(&a, &b, NULL), bf_surface(&b, &a, NULL));
        gf_contact_point c[GF_MANIFOLD_MAX];
        int n = collide(&a, &b, margin, c);
        if (delta > 1e-6 * size) {
            ++overlaps;
            if (n == 0 || !(c[0].gap < 0.0 && c[0].gap <= -delta + 1e-5 * size))
                fail_msg("pair %d (%s-%s): a point lies %.3g deep, reported %d points, gap %.6g", i,
                         gf_shape_name(pair_types[t][0]), gf_shape_name(pair_types[t][1]), delta, n,
                         n ? c[0].gap : NAN);
        }
    }
    print_message("%d of 150 pairs overlap\n", overlaps);
    assert_true(overlaps > 100); /* the test tested something */
}

/* Pairs farther apart than the margin give no points, nearer ones at least one. */
static void test_margin(void **state) {
    (void)state;
    uint64_t st = 71;
    for (int i = 0; i < 100; ++i) {
        int t = i % PAIR_TYPES;
        body a, b;
        pair_random(&st, pair_types[t][0], pair_types[t][1], gf_test_uniform(&st, 0.01, 0.2), &a,
                    &b);
        double size = size_of(&a) + size_of(&b);
        double dist = fmin(bf_surface(&a, &b, NULL), bf_surface(&b, &a, NULL));
        assert_true(dist > 0.0);
        gf_contact_point c[GF_MANIFOLD_MAX];
        assert_int_equal(collide(&a, &b, dist - 1e-4 * size, c), 0);
        assert_true(collide(&a, &b, dist + 1e-4 * size, c) >= 1);
        assert_int_equal(collide(&a, &b, 0.0, c), 0);
    }
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_errors(void **state) {
    (void)state;
    double zero[3] = {0.0, 0.0, 0.0}, x[3] = {0.0, 0.0, 0.5};
    body cyl, box, plane, plane2;
    body_set(&cyl, gf_shape_cylinder(0.3, 0.4), x, q_id);
    body_set(&box, gf_shape_box(1.0, 1.0, 0.5), zero, q_id);
    body_set(&plane, gf_shape_sphere(1.0), zero, q_id);
    plane.s.type = GF_SHAPE_PLANE;
    plane2 = plane;
    gf_contact_point c[GF_MANIFOLD_MAX];
    int n = -1;
    assert_int_equal(gf_collide_convex(pose(&cyl), pose(&plane), 0.1, c, &n), GF_ERR_UNSUPPORTED);
    assert_int_equal(n, 0);
    assert_int_equal(gf_manifold_build(pose(&plane), pose(&plane2), ez, NAN, 0.1, c, &n),
                     GF_ERR_UNSUPPORTED);
    double zn[3] = {0.0, 0.0, 0.0};
    assert_int_equal(gf_manifold_build(pose(&cyl), pose(&box), zn, NAN, 0.1, c, &n),
                     GF_ERR_NUMERIC);
    assert_int_equal(gf_collide_convex(pose(&cyl), pose(&box), -0.1, c, &n), GF_ERR_INPUT);
    assert_int_equal(gf_collide_convex(pose(&cyl), pose(&box), NAN, c, &n), GF_ERR_INPUT);
    cyl.p.x[1] = NAN;
    assert_int_equal(gf_collide_convex(pose(&cyl), pose(&box), 0.1, c, &n), GF_ERR_NUMERIC);
    cyl.p.x[1] = 0.0;
    cyl.p.q[2] = INFINITY;
    assert_int_equal(gf_collide_convex(pose(&cyl), pose(&box), 0.1, c, &n), GF_ERR_NUMERIC);
}

/* A body lying on a plane (gf_manifold_build with a plane as b): the whole incident face. */
static void test_manifold_on_plane(void **state) {
    (void)state;
    double q[4], x[3] = {0.3, -0.2, 0.25}, zero[3] = {0.0, 0.0, 0.0};
    quat_axis(0.0, 0.0, 1.0, 0.4, q);
    body box, plane;
    body_set(&box, gf_shape_box(0.5, 0.3, 0.26), x, q);
    body_set(&plane, gf_shape_sphere(1.0), zero, q_id);
    plane.s.type = GF_SHAPE_PLANE;
    gf_contact_point c[GF_MANIFOLD_MAX];
    int n = -1;
    GF_ASSERT_OK(gf_manifold_build(pose(&box), pose(&plane), ez, NAN, 0.05, c, &n));
    assert_int_equal(n, 4);
    for (int i = 0; i < n; ++i) {
        GF_ASSERT_NEAR(c[i].gap, -0.01, 1e-12);
        GF_ASSERT_NEAR(c[i].p[2], -0.005, 1e-12);
        double l[3];
        to_local(&box, c[i].p, l);
        GF_ASSERT_NEAR(fabs(l[0]), 0.5, 1e-12); /* the corners */
        GF_ASSERT_NEAR(fabs(l[1]), 0.3, 1e-12);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gaps_separated),
        cmocka_unit_test(test_gaps_overlapping),
        cmocka_unit_test(test_gaps_deep_overlap),
        cmocka_unit_test(test_gjk_flat_simplex),
        cmocka_unit_test(test_epa_folded_polytope),
        cmocka_unit_test(test_cylinder_lying_on_box),
        cmocka_unit_test(test_cylinder_standing_on_box),
        cmocka_unit_test(test_cylinders_side_by_side),
        cmocka_unit_test(test_capsule_lying_on_box),
        cmocka_unit_test(test_capsule_across_cap),
        cmocka_unit_test(test_manifold_box_on_box),
        cmocka_unit_test(test_manifold_on_plane),
        cmocka_unit_test(test_swap_symmetry),
        cmocka_unit_test(test_rigid_motion_invariance),
        cmocka_unit_test(test_scale_invariance),
        cmocka_unit_test(test_overlap_property),
        cmocka_unit_test(test_margin),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
