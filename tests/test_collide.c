/* Narrow-phase contacts (collide.c): dispatch, closed forms, box-box separating axes, clumps.
 *
 * References are written here, independently of the code under test: the contact
 * configurations set up by hand have analytic gaps, normals and points; the random ones are
 * checked against a bracket of the true signed distance built from closed-form support and
 * signed-distance functions of the shapes:
 *   lower bound: the largest separation of the bodies' projections over a dense, refined set
 *     of directions (every direction gives a lower bound, and the best one gives the signed
 *     distance, penetration included);
 *   upper bound: the smallest signed distance from sampled surface points of one body to the
 *     other body (a point of a lying at depth d inside b means no translation shorter than d
 *     separates them).
 * Each reported point is also checked as a certificate: p + gap/2 n must lie in a and
 * p - gap/2 n in b, and for the deepest point on their surfaces, so that a separated pair is at
 * most `gap` apart; and the deepest point's normal must separate the bodies by its gap, so that
 * they are at least `gap` apart (or overlap by no more than -gap). */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "granflow/collide.h"

#define MAXPTS (GF_CLUMP_MAX_MEMBERS * GF_CLUMP_MAX_MEMBERS)

/* ---- small linear algebra, written for the tests ------------------------------------------ */

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static double len3(const double a[3]) {
    return sqrt(dot3(a, a));
}

static void cross3(const double a[3], const double b[3], double o[3]) {
    double t[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    memcpy(o, t, sizeof t);
}

static void unit3(double a[3]) {
    double l = len3(a);
    a[0] /= l;
    a[1] /= l;
    a[2] /= l;
}

/* Rotation matrix of a unit quaternion (w, x, y, z): R[i][j], row i, column j. */
static void q_matrix(const double q[4], double R[3][3]) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0][0] = w * w + x * x - y * y - z * z;
    R[0][1] = 2 * (x * y - w * z);
    R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z);
    R[1][1] = w * w - x * x + y * y - z * z;
    R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y);
    R[2][1] = 2 * (y * z + w * x);
    R[2][2] = w * w - x * x - y * y + z * z;
}

static void rot(const double q[4], const double v[3], double o[3]) {
    double R[3][3];
    q_matrix(q, R);
    double t[3];
    for (int i = 0; i < 3; ++i)
        t[i] = R[i][0] * v[0] + R[i][1] * v[1] + R[i][2] * v[2];
    memcpy(o, t, sizeof t);
}

static void rot_inv(const double q[4], const double v[3], double o[3]) {
    double R[3][3];
    q_matrix(q, R);
    double t[3];
    for (int i = 0; i < 3; ++i)
        t[i] = R[0][i] * v[0] + R[1][i] * v[1] + R[2][i] * v[2];
    memcpy(o, t, sizeof t);
}

static void q_mul(const double a[4], const double b[4], double o[4]) {
    double t[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                   a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                   a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                   a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    memcpy(o, t, sizeof t);
}

static void q_axis(double ax, double ay, double az, double angle, double q[4]) {
    double l = sqrt(ax * ax + ay * ay + az * az), s = sin(0.5 * angle) / l;
    q[0] = cos(0.5 * angle);
    q[1] = ax * s;
    q[2] = ay * s;
    q[3] = az * s;
}

static void q_random(uint64_t *rng, double q[4]) {
    double l2;
    do {
        for (int k = 0; k < 4; ++k)
            q[k] = gf_test_uniform(rng, -1.0, 1.0);
        l2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    } while (l2 > 1.0 || l2 < 1e-3);
    double l = sqrt(l2);
    for (int k = 0; k < 4; ++k)
        q[k] /= l;
}

static void dir_random(uint64_t *rng, double d[3]) {
    double l2;
    do {
        for (int k = 0; k < 3; ++k)
            d[k] = gf_test_uniform(rng, -1.0, 1.0);
        l2 = dot3(d, d);
    } while (l2 > 1.0 || l2 < 1e-3);
    unit3(d);
}

static const double q_id[4] = {1.0, 0.0, 0.0, 0.0};
static const double still[3] = {0.0, 0.0, 0.0}; /* no turn */

/* ---- bodies --------------------------------------------------------------------------------- */

typedef struct {
    gf_shape s;
    gf_body_pose p;
} body;

static gf_body_pose *pose(body *b, const gf_clumps *clumps) {
    b->p.shape = &b->s;
    b->p.clumps = clumps;
    return &b->p;
}

static void body_set(body *b, gf_shape s, const gf_clumps *clumps, const double x[3],
                     const double q[4]) {
    memset(b, 0, sizeof *b);
    b->s = s;
    memcpy(b->p.x, x, sizeof b->p.x);
    memcpy(b->p.q, q, sizeof b->p.q);
    pose(b, clumps);
}

static gf_shape shape_plane(void) {
    gf_shape s = {GF_SHAPE_PLANE, -1, {0.0, 0.0, 0.0}};
    return s;
}

static gf_shape shape_of(int type, double d0, double d1, double d2) {
    gf_shape s = {type, -1, {d0, d1, d2}};
    return s;
}

static gf_shape shape_clump(int32_t index, double scale) {
    gf_shape s = {GF_SHAPE_CLUMP, index, {scale, 0.0, 0.0}};
    return s;
}

static gf_clump clump_template(int n, const double c[][3], const double r[]) {
    gf_clump t;
    memset(&t, 0, sizeof t);
    t.count = n;
    t.q_input[0] = 1.0;
    for (int k = 0; k < n; ++k) {
        memcpy(t.centre[k], c[k], sizeof t.centre[k]);
        t.radius[k] = r[k];
        double reach = len3(c[k]) + r[k];
        if (reach > t.bounding_radius)
            t.bounding_radius = reach;
    }
    return t;
}

static const gf_clump *clump_of(const gf_body_pose *p) {
    return &p->clumps->item[p->shape->clump];
}

static void member(const gf_body_pose *p, int k, double c[3], double *r) {
    const gf_clump *t = clump_of(p);
    double s = p->shape->dim[0];
    double v[3] = {s * t->centre[k][0], s * t->centre[k][1], s * t->centre[k][2]};
    rot(p->q, v, c);
    for (int i = 0; i < 3; ++i)
        c[i] += p->x[i];
    *r = s * t->radius[k];
}

/* max over the body of d . y (d need not be unit); planes are handled by the callers. */
static double support(const gf_body_pose *p, const double d[3]) {
    const double *dim = p->shape->dim;
    double l[3];
    rot_inv(p->q, d, l);
    double base = dot3(d, p->x), dl = len3(d);
    switch (p->shape->type) {
    case GF_SHAPE_SPHERE:
        return base + dim[0] * dl;
    case GF_SHAPE_BOX:
        return base + dim[0] * fabs(l[0]) + dim[1] * fabs(l[1]) + dim[2] * fabs(l[2]);
    case GF_SHAPE_CAPSULE:
        return base + dim[1] * fabs(l[2]) + dim[0] * dl;
    case GF_SHAPE_CYLINDER:
        return base + dim[1] * fabs(l[2]) + dim[0] * sqrt(l[0] * l[0] + l[1] * l[1]);
    case GF_SHAPE_CLUMP: {
        double best = -INFINITY;
        for (int k = 0; k < clump_of(p)->count; ++k) {
            double c[3], r;
            member(p, k, c, &r);
            double h = dot3(d, c) + r * dl;
            if (h > best)
                best = h;
        }
        return best;
    }
    default:
        fail_msg("support of shape type %d", (int)p->shape->type);
    }
    return 0.0;
}

static void plane_normal(const gf_body_pose *p, double n[3]) {
    const double ez[3] = {0.0, 0.0, 1.0};
    rot(p->q, ez, n);
}

/* Separation of a from b along unit d: min over a of d.y minus max over b of d.y. Against a
 * plane only its normal direction gives a finite value. */
static double separation(const gf_body_pose *a, const gf_body_pose *b, const double d[3]) {
    double md[3] = {-d[0], -d[1], -d[2]};
    if (b->shape->type == GF_SHAPE_PLANE) {
        double n[3];
        plane_normal(b, n);
        if (dot3(n, d) < 1.0 - 1e-12)
            return -INFINITY;
        return -support(a, md) - dot3(n, b->x);
    }
    if (a->shape->type == GF_SHAPE_PLANE) {
        double n[3];
        plane_normal(a, n);
        if (dot3(n, d) > -1.0 + 1e-12)
            return -INFINITY;
        return -dot3(n, a->x) - support(b, d);
    }
    return -support(a, md) - support(b, d);
}

/* For a clump, the member sphere whose surface holds y (as a sphere body in *out); any other
 * body is returned unchanged. */
static const gf_body_pose *piece_at(const gf_body_pose *p, const double y[3], double tol,
                                    gf_shape *shape, gf_body_pose *out) {
    if (p->shape->type != GF_SHAPE_CLUMP)
        return p;
    for (int k = 0; k < clump_of(p)->count; ++k) {
        double c[3], r;
        member(p, k, c, &r);
        double w[3] = {y[0] - c[0], y[1] - c[1], y[2] - c[2]};
        if (fabs(len3(w) - r) <= tol) {
            *shape = shape_of(GF_SHAPE_SPHERE, r, 0, 0);
            out->shape = shape;
            out->clumps = NULL;
            memcpy(out->x, c, sizeof out->x);
            memcpy(out->q, q_id, sizeof out->q);
            return out;
        }
    }
    fail_msg("no member of the clump holds the point");
    return p;
}

/* Signed distance from y to the body (for a clump: to the nearest member, whose sign and
 * depth bound the union's from the right side). */
static double sdf(const gf_body_pose *p, const double y[3]) {
    const double *dim = p->shape->dim;
    double v[3] = {y[0] - p->x[0], y[1] - p->x[1], y[2] - p->x[2]}, l[3];
    rot_inv(p->q, v, l);
    switch (p->shape->type) {
    case GF_SHAPE_SPHERE:
        return len3(v) - dim[0];
    case GF_SHAPE_BOX: {
        double o2 = 0.0, in = -INFINITY;
        for (int i = 0; i < 3; ++i) {
            double qi = fabs(l[i]) - dim[i];
            if (qi > 0.0)
                o2 += qi * qi;
            if (qi > in)
                in = qi;
        }
        return o2 > 0.0 ? sqrt(o2) : in;
    }
    case GF_SHAPE_CAPSULE: {
        double t = fmax(-dim[1], fmin(dim[1], l[2]));
        double w[3] = {l[0], l[1], l[2] - t};
        return len3(w) - dim[0];
    }
    case GF_SHAPE_CYLINDER: {
        double d0 = sqrt(l[0] * l[0] + l[1] * l[1]) - dim[0], d1 = fabs(l[2]) - dim[1];
        double o0 = fmax(d0, 0.0), o1 = fmax(d1, 0.0);
        return fmin(fmax(d0, d1), 0.0) + sqrt(o0 * o0 + o1 * o1);
    }
    case GF_SHAPE_CLUMP: {
        double best = INFINITY;
        for (int k = 0; k < clump_of(p)->count; ++k) {
            double c[3], r;
            member(p, k, c, &r);
            double w[3] = {y[0] - c[0], y[1] - c[1], y[2] - c[2]};
            best = fmin(best, len3(w) - r);
        }
        return best;
    }
    case GF_SHAPE_PLANE:
        return l[2];
    default:
        fail_msg("sdf of shape type %d", (int)p->shape->type);
    }
    return 0.0;
}

/* Whether y lies on the surface of the body within tol: for a clump, on some member's sphere
 * and not inside the union beyond tol. */
static int on_surface(const gf_body_pose *p, const double y[3], double tol) {
    if (p->shape->type != GF_SHAPE_CLUMP)
        return fabs(sdf(p, y)) <= tol;
    for (int k = 0; k < clump_of(p)->count; ++k) {
        double c[3], r;
        member(p, k, c, &r);
        double w[3] = {y[0] - c[0], y[1] - c[1], y[2] - c[2]};
        if (fabs(len3(w) - r) <= tol)
            return 1;
    }
    return 0;
}

static void fib_dir(int i, int n, double d[3]) {
    double z = 1.0 - (2.0 * i + 1.0) / n, r = sqrt(fmax(0.0, 1.0 - z * z));
    double phi = 2.399963229728653 * i;
    d[0] = r * cos(phi);
    d[1] = r * sin(phi);
    d[2] = z;
}

/* Points on the surface of the body (none for a plane), at most `cap`. */
static int surface_samples(const gf_body_pose *p, int k, double (*out)[3], int cap) {
    const double *dim = p->shape->dim;
    double loc[4096][3];
    int n = 0;
    switch (p->shape->type) {
    case GF_SHAPE_SPHERE:
        for (int i = 0; i < 6 * k * k && n < 4096; ++i, ++n) {
            fib_dir(i, 6 * k * k, loc[n]);
            for (int j = 0; j < 3; ++j)
                loc[n][j] *= dim[0];
        }
        break;
    case GF_SHAPE_BOX:
        for (int ax = 0; ax < 3; ++ax)
            for (int sg = -1; sg <= 1; sg += 2)
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < k; ++j) {
                        int a1 = (ax + 1) % 3, a2 = (ax + 2) % 3;
                        loc[n][ax] = sg * dim[ax];
                        loc[n][a1] = dim[a1] * (2.0 * i / (k - 1) - 1.0);
                        loc[n][a2] = dim[a2] * (2.0 * j / (k - 1) - 1.0);
                        ++n;
                    }
        break;
    case GF_SHAPE_CAPSULE:
    case GF_SHAPE_CYLINDER: {
        double r = dim[0], h = dim[1];
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < 2 * k; ++j) {
                double a = M_PI * j / k;
                loc[n][0] = r * cos(a);
                loc[n][1] = r * sin(a);
                loc[n][2] = h * (2.0 * i / (k - 1) - 1.0);
                ++n;
            }
        if (p->shape->type == GF_SHAPE_CAPSULE) {
            for (int i = 0; i < 4 * k * k; ++i, ++n) {
                fib_dir(i, 4 * k * k, loc[n]);
                for (int j = 0; j < 3; ++j)
                    loc[n][j] *= r;
                loc[n][2] += loc[n][2] > 0.0 ? h : -h;
            }
        } else {
            for (int sg = -1; sg <= 1; sg += 2)
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < 2 * k; ++j) {
                        double a = M_PI * j / k, rr = r * i / (k - 1);
                        loc[n][0] = rr * cos(a);
                        loc[n][1] = rr * sin(a);
                        loc[n][2] = sg * h;
                        ++n;
                    }
        }
        break;
    }
    case GF_SHAPE_CLUMP: {
        int m = clump_of(p)->count, per = 4096 / m < 2 * k * k ? 4096 / m : 2 * k * k;
        for (int kk = 0; kk < m; ++kk) {
            double c[3], r;
            member(p, kk, c, &r);
            for (int i = 0; i < per && n < cap; ++i, ++n) {
                double d[3];
                fib_dir(i, per, d);
                for (int j = 0; j < 3; ++j)
                    out[n][j] = c[j] + r * d[j];
            }
        }
        return n;
    }
    default:
        return 0;
    }
    int m = n < cap ? n : cap;
    for (int i = 0; i < m; ++i) {
        rot(p->q, loc[i], out[i]);
        for (int j = 0; j < 3; ++j)
            out[i][j] += p->x[j];
    }
    return m;
}

/* Lower bound of the signed distance: the best separating direction, from a Fibonacci grid
 * of directions refined by a pattern search. `dir` receives it. */
static double distance_lower(const gf_body_pose *a, const gf_body_pose *b, double dir[3]) {
    if (b->shape->type == GF_SHAPE_PLANE || a->shape->type == GF_SHAPE_PLANE) {
        const gf_body_pose *pl = b->shape->type == GF_SHAPE_PLANE ? b : a;
        plane_normal(pl, dir);
        if (pl == a)
            for (int k = 0; k < 3; ++k)
                dir[k] = -dir[k];
        return separation(a, b, dir);
    }
    enum { NDIR = 700, NBEST = 4, NSEED = 64, NPAT = 16 };
    /* Besides the grid, the directions where separations have kinks and ridges (the bodies'
     * axes, their cross products, the line of centres), which a pattern search is slow to
     * find. */
    double seed[NSEED][3], ax[2][3][3];
    int ns = 0;
    for (int side = 0; side < 2; ++side) {
        const gf_body_pose *p = side ? b : a;
        for (int k = 0; k < 3; ++k) {
            double e[3] = {0, 0, 0};
            e[k] = 1.0;
            rot(p->q, e, ax[side][k]);
            for (int sg = -1; sg <= 1; sg += 2)
                for (int i = 0; i < 3; ++i)
                    seed[ns + (sg + 1) / 2][i] = sg * ax[side][k][i];
            ns += 2;
        }
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double c[3];
            cross3(ax[0][i], ax[1][j], c);
            if (len3(c) < 1e-9)
                continue;
            unit3(c);
            for (int k = 0; k < 3; ++k) {
                seed[ns][k] = c[k];
                seed[ns + 1][k] = -c[k];
            }
            ns += 2;
        }
    double ab[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    if (len3(ab) > 1e-9) {
        unit3(ab);
        memcpy(seed[ns++], ab, sizeof ab);
    }
    double bestv[NBEST], bestd[NBEST][3];
    for (int i = 0; i < NBEST; ++i)
        bestv[i] = -INFINITY;
    for (int i = 0; i < NDIR + ns; ++i) {
        double d[3];
        if (i < NDIR)
            fib_dir(i, NDIR, d);
        else
            memcpy(d, seed[i - NDIR], sizeof d);
        double v = separation(a, b, d);
        int w = 0;
        for (int j = 1; j < NBEST; ++j)
            if (bestv[j] < bestv[w])
                w = j;
        if (v > bestv[w]) {
            bestv[w] = v;
            memcpy(bestd[w], d, sizeof d);
        }
    }
    double top = -INFINITY;
    for (int j = 0; j < NBEST; ++j) {
        double d[3], v = bestv[j];
        memcpy(d, bestd[j], sizeof d);
        double step = 0.1, phase = 0.0;
        for (int it = 0; it < 4000 && step > 1e-11; ++it) {
            double t1[3], t2[3], e[3] = {0.0, 0.0, 0.0};
            e[fabs(d[0]) < 0.6 ? 0 : (fabs(d[1]) < 0.6 ? 1 : 2)] = 1.0;
            cross3(d, e, t1);
            unit3(t1);
            cross3(d, t1, t2);
            double bv = v, bd[3] = {d[0], d[1], d[2]};
            for (int k = 0; k < NPAT; ++k) {
                double ang = 2.0 * M_PI * (k + phase) / NPAT, c[3];
                for (int i = 0; i < 3; ++i)
                    c[i] = d[i] + step * (cos(ang) * t1[i] + sin(ang) * t2[i]);
                unit3(c);
                double cv = separation(a, b, c);
                if (cv > bv) {
                    bv = cv;
                    memcpy(bd, c, sizeof c);
                }
            }
            phase = fmod(phase + 0.618033988749895, 1.0);
            if (bv > v) {
                v = bv;
                memcpy(d, bd, sizeof d);
                step = fmin(2.0 * step, 0.1);
            } else {
                step *= 0.5;
            }
        }
        if (v > top) {
            top = v;
            memcpy(dir, d, sizeof d);
        }
    }
    return top;
}

/* Upper bound of the signed distance: sampled surface points of each body against the other
 * body's signed distance. No samples exist on a plane: there the lower bound is exact. */
static double distance_upper(const gf_body_pose *a, const gf_body_pose *b) {
    static double pts[4096][3];
    double ub = INFINITY;
    for (int side = 0; side < 2; ++side) {
        const gf_body_pose *s = side ? b : a, *o = side ? a : b;
        int n = surface_samples(s, 24, pts, 4096);
        for (int i = 0; i < n; ++i)
            ub = fmin(ub, sdf(o, pts[i]));
    }
    return ub;
}

/* ---- running the code under test ------------------------------------------------------------ */

static int collide(const gf_body_pose *a, const gf_body_pose *b, double margin,
                   gf_contact_point *out) {
    int n = -1;
    int cap = gf_collide_capacity(a, b);
    assert_true(cap >= 1 && cap <= MAXPTS);
    GF_ASSERT_OK(gf_collide(a, b, margin, out, cap, &n));
    assert_true(n >= 0 && n <= cap);
    return n;
}

static double min_gap(const gf_contact_point *pt, int n, int *at) {
    double g = INFINITY;
    for (int i = 0; i < n; ++i)
        if (pt[i].gap < g) {
            g = pt[i].gap;
            if (at)
                *at = i;
        }
    return g;
}

/* Every point: unit normal, p + gap/2 n in a and p - gap/2 n in b (the surfaces of spheres
 * inside the bodies, such as a capsule's end sphere, may lie inside the body); for the deepest
 * point both on the surfaces, so that bodies apart are at most its gap apart. */
static void check_certificates(const gf_body_pose *a, const gf_body_pose *b,
                               const gf_contact_point *pt, int n, double tol) {
    int deepest = -1;
    min_gap(pt, n, &deepest);
    for (int i = 0; i < n; ++i) {
        GF_ASSERT_NEAR(len3(pt[i].n), 1.0, 1e-12);
        double sa[3], sb[3];
        for (int k = 0; k < 3; ++k) {
            sa[k] = pt[i].p[k] + 0.5 * pt[i].gap * pt[i].n[k];
            sb[k] = pt[i].p[k] - 0.5 * pt[i].gap * pt[i].n[k];
        }
        int ok = i == deepest ? on_surface(a, sa, tol) && on_surface(b, sb, tol)
                              : sdf(a, sa) <= tol && sdf(b, sb) <= tol;
        if (!ok)
            fail_msg("types %d,%d point %d of %d (gap %g%s): a-side point off a by %g, b-side "
                     "off b by %g",
                     (int)a->shape->type, (int)b->shape->type, i, n, pt[i].gap,
                     i == deepest ? ", deepest" : "", sdf(a, sa), sdf(b, sb));
    }
}

/* The world form of local configurations: a common rigid motion (q0, t0). */
typedef struct {
    double q[4];
    double t[3];
} motion;

static void move_pose(const motion *m, const double xl[3], const double ql[4], double x[3],
                      double q[4]) {
    rot(m->q, xl, x);
    for (int k = 0; k < 3; ++k)
        x[k] += m->t[k];
    q_mul(m->q, ql, q);
}

static void move_body(const motion *m, body *bd) {
    double x[3], q[4];
    move_pose(m, bd->p.x, bd->p.q, x, q);
    memcpy(bd->p.x, x, sizeof x);
    memcpy(bd->p.q, q, sizeof q);
}

static motion motion_random(uint64_t seed) {
    motion m;
    uint64_t rng = seed;
    q_random(&rng, m.q);
    for (int k = 0; k < 3; ++k)
        m.t[k] = gf_test_uniform(&rng, -3.0, 3.0);
    return m;
}

/* Finds the point with normal n_l, position p_l (both local, mapped by m) and gap g. */
static void expect_point(const motion *m, const gf_contact_point *pt, int n, const double n_l[3],
                         const double p_l[3], double g, double tol) {
    double nw[3], pw[3], nn[3];
    memcpy(nn, n_l, sizeof nn);
    unit3(nn);
    rot(m->q, nn, nw);
    rot(m->q, p_l, pw);
    for (int k = 0; k < 3; ++k)
        pw[k] += m->t[k];
    for (int i = 0; i < n; ++i) {
        double dp[3] = {pt[i].p[0] - pw[0], pt[i].p[1] - pw[1], pt[i].p[2] - pw[2]};
        if (len3(dp) <= tol) {
            GF_ASSERT_NEAR(pt[i].gap, g, tol);
            GF_ASSERT_NEAR(dot3(pt[i].n, nw), 1.0, tol);
            return;
        }
    }
    fail_msg("no point at (%g, %g, %g) local (%g, %g, %g) among %d", pw[0], pw[1], pw[2], p_l[0],
             p_l[1], p_l[2], n);
}

/* A single point with gap g and some unit normal (coincident cores: any normal will do). */
static void expect_gap_only(const gf_contact_point *pt, int n, double g) {
    assert_int_equal(n, 1);
    GF_ASSERT_NEAR(pt[0].gap, g, 1e-12);
    GF_ASSERT_NEAR(len3(pt[0].n), 1.0, 1e-12);
}

static double box_axes_separation(const gf_body_pose *a, const gf_body_pose *b);

/* ---- closed forms against hand-set configurations ------------------------------------------- */

static void test_sphere_sphere(void **state) {
    (void)state;
    motion m = motion_random(11);
    gf_contact_point pt[4];
    body a, b;
    double xa[3], qa[4], xb[3], qb[4];
    const double o[3] = {0, 0, 0}, far[3] = {3, 4, 0};
    move_pose(&m, o, q_id, xa, qa);
    move_pose(&m, far, q_id, xb, qb);
    body_set(&a, shape_of(GF_SHAPE_SPHERE, 1.0, 0, 0), NULL, xa, qa);
    body_set(&b, shape_of(GF_SHAPE_SPHERE, 2.0, 0, 0), NULL, xb, qb);
    /* Centres 5 apart, radii 1 and 2: gap 2, normal from b to a, midpoint at 1.2, 1.6. */
    assert_int_equal(collide(&a.p, &b.p, 1.9, pt), 0);
    assert_int_equal(collide(&a.p, &b.p, 2.1, pt), 1);
    expect_point(&m, pt, 1, (double[]){-3, -4, 0}, (double[]){1.2, 1.6, 0}, 2.0, 1e-12);
    /* Overlap: centres 1.5 apart on x. */
    const double near[3] = {1.5, 0, 0};
    move_pose(&m, near, q_id, b.p.x, b.p.q);
    assert_int_equal(collide(&a.p, &b.p, 0.0, pt), 1);
    expect_point(&m, pt, 1, (double[]){-1, 0, 0}, (double[]){0.25, 0, 0}, -1.5, 1e-12);
    /* Coincident centres: any unit normal, gap minus both radii. */
    memcpy(b.p.x, a.p.x, sizeof b.p.x);
    expect_gap_only(pt, collide(&a.p, &b.p, 0.0, pt), -3.0);
}

static void test_sphere_plane(void **state) {
    (void)state;
    motion m = motion_random(12);
    gf_contact_point pt[4];
    body s, pl;
    double x[3], q[4];
    const double o[3] = {0, 0, 0}, c[3] = {0.2, -0.4, 0.7};
    move_pose(&m, o, q_id, x, q);
    body_set(&pl, shape_plane(), NULL, x, q);
    move_pose(&m, c, q_id, x, q);
    body_set(&s, shape_of(GF_SHAPE_SPHERE, 0.5, 0, 0), NULL, x, q);
    assert_int_equal(collide(&s.p, &pl.p, 0.19, pt), 0);
    assert_int_equal(collide(&s.p, &pl.p, 0.21, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){0.2, -0.4, 0.1}, 0.2, 1e-12);
    /* The plane as body a: the normal flips. */
    assert_int_equal(collide(&pl.p, &s.p, 0.21, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, -1}, (double[]){0.2, -0.4, 0.1}, 0.2, 1e-12);
    /* Centre below the surface. */
    const double below[3] = {1.0, 2.0, -0.3};
    move_pose(&m, below, q_id, s.p.x, s.p.q);
    assert_int_equal(collide(&s.p, &pl.p, 0.0, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){1.0, 2.0, -0.4}, -0.8, 1e-12);
}

static void sphere_against(const motion *m, body *other, const double c[3], double r, double margin,
                           const double n[3], const double sb[3], double gap) {
    body s;
    double x[3], q[4];
    gf_contact_point pt[4];
    move_pose(m, c, q_id, x, q);
    body_set(&s, shape_of(GF_SHAPE_SPHERE, r, 0, 0), NULL, x, q);
    int k = collide(&s.p, &other->p, margin, pt);
    if (!n) {
        assert_int_equal(k, 0);
        return;
    }
    assert_int_equal(k, 1);
    double nn[3], p[3];
    memcpy(nn, n, sizeof nn);
    unit3(nn);
    for (int i = 0; i < 3; ++i)
        p[i] = sb[i] + 0.5 * gap * nn[i];
    expect_point(m, pt, 1, nn, p, gap, 1e-12);
    /* And with the sphere as body b. */
    assert_int_equal(collide(&other->p, &s.p, margin, pt), 1);
    double mn[3] = {-nn[0], -nn[1], -nn[2]};
    expect_point(m, pt, 1, mn, p, gap, 1e-12);
}

static void test_sphere_box(void **state) {
    (void)state;
    motion m = motion_random(13);
    body box;
    double x[3], q[4];
    const double o[3] = {0, 0, 0};
    move_pose(&m, o, q_id, x, q);
    body_set(&box, shape_of(GF_SHAPE_BOX, 1.0, 2.0, 3.0), NULL, x, q);
    const double r = 0.25;
    /* Face, edge and corner regions; the closest box point is the clamped centre. */
    sphere_against(&m, &box, (double[]){1.5, 0.2, 0.3}, r, 1.0, (double[]){1, 0, 0},
                   (double[]){1, 0.2, 0.3}, 0.25);
    sphere_against(&m, &box, (double[]){1.3, 2.4, 0.5}, r, 1.0, (double[]){0.6, 0.8, 0},
                   (double[]){1, 2, 0.5}, 0.25);
    sphere_against(&m, &box, (double[]){1.2, -2.2, 3.2}, r, 1.0, (double[]){1, -1, 1},
                   (double[]){1, -2, 3}, sqrt(0.12) - 0.25);
    /* Centre inside: out through the nearest face. */
    sphere_against(&m, &box, (double[]){0.9, 0.5, 0.1}, r, 0.0, (double[]){1, 0, 0},
                   (double[]){1, 0.5, 0.1}, -0.35);
    sphere_against(&m, &box, (double[]){0.2, 0.3, -2.85}, r, 0.0, (double[]){0, 0, -1},
                   (double[]){0.2, 0.3, -3}, -0.4);
    sphere_against(&m, &box, (double[]){-0.3, -1.9, 0.0}, r, 0.0, (double[]){0, -1, 0},
                   (double[]){-0.3, -2, 0.0}, -0.35);
    /* Gap 0.25 against margin 0.2: nothing. */
    sphere_against(&m, &box, (double[]){1.5, 0, 0}, r, 0.2, NULL, NULL, 0);
}

static void test_sphere_capsule(void **state) {
    (void)state;
    motion m = motion_random(14);
    body cap;
    double x[3], q[4], ql[4];
    const double o[3] = {0, 0, 0};
    memcpy(ql, q_id, sizeof ql);
    move_pose(&m, o, ql, x, q);
    body_set(&cap, shape_of(GF_SHAPE_CAPSULE, 0.3, 1.0, 0), NULL, x, q);
    sphere_against(&m, &cap, (double[]){0.8, 0, 0.4}, 0.2, 1.0, (double[]){1, 0, 0},
                   (double[]){0.3, 0, 0.4}, 0.3);
    sphere_against(&m, &cap, (double[]){0.3, 0, 1.4}, 0.2, 1.0, (double[]){0.6, 0, 0.8},
                   (double[]){0.18, 0, 1.24}, 0.0);
    sphere_against(&m, &cap, (double[]){-0.1, 0.2, -0.9}, 0.2, 1.0, (double[]){-1, 2, 0},
                   (double[]){-0.3 / sqrt(5.0), 0.6 / sqrt(5.0), -0.9}, sqrt(0.05) - 0.5);
    /* Centre on the axis: any normal perpendicular to it, gap minus both radii. */
    body s;
    gf_contact_point pt[4];
    move_pose(&m, (double[]){0, 0, 0.5}, q_id, x, q);
    body_set(&s, shape_of(GF_SHAPE_SPHERE, 0.2, 0, 0), NULL, x, q);
    expect_gap_only(pt, collide(&s.p, &cap.p, 0.0, pt), -0.5);
    double axis[3];
    rot(m.q, (double[]){0, 0, 1}, axis);
    GF_ASSERT_NEAR(dot3(axis, pt[0].n), 0.0, 1e-12);
}

static void test_sphere_cylinder(void **state) {
    (void)state;
    motion m = motion_random(15);
    body cyl;
    double x[3], q[4];
    const double o[3] = {0, 0, 0};
    move_pose(&m, o, q_id, x, q);
    body_set(&cyl, shape_of(GF_SHAPE_CYLINDER, 1.0, 1.5, 0), NULL, x, q);
    const double r = 0.2;
    /* Side, cap and rim. */
    sphere_against(&m, &cyl, (double[]){1.5, 0, 0.3}, r, 1.0, (double[]){1, 0, 0},
                   (double[]){1, 0, 0.3}, 0.3);
    sphere_against(&m, &cyl, (double[]){0.9, 1.2, -0.2}, r, 1.0, (double[]){0.6, 0.8, 0},
                   (double[]){0.6, 0.8, -0.2}, 0.3);
    sphere_against(&m, &cyl, (double[]){0.3, 0.2, 2.0}, r, 1.0, (double[]){0, 0, 1},
                   (double[]){0.3, 0.2, 1.5}, 0.3);
    sphere_against(&m, &cyl, (double[]){1.3 * 0.6, 1.3 * 0.8, -1.9}, r, 1.0,
                   (double[]){0.6 * 0.6, 0.6 * 0.8, -0.8}, (double[]){0.6, 0.8, -1.5}, 0.3);
    /* Inside: out through the side or the cap, whichever is nearer. */
    sphere_against(&m, &cyl, (double[]){0.95, 0, 0.2}, r, 0.0, (double[]){1, 0, 0},
                   (double[]){1, 0, 0.2}, -0.25);
    sphere_against(&m, &cyl, (double[]){0.1, 0.2, -1.45}, r, 0.0, (double[]){0, 0, -1},
                   (double[]){0.1, 0.2, -1.5}, -0.25);
    sphere_against(&m, &cyl, (double[]){1.5, 0, 0.3}, r, 0.3, NULL, NULL, 0);
}

static void test_capsule_capsule(void **state) {
    (void)state;
    motion m = motion_random(16);
    gf_contact_point pt[4];
    body a, b;
    double x[3], q[4], qx[4], qy[4];
    q_axis(0, 1, 0, M_PI / 2, qx);  /* body z along world x */
    q_axis(1, 0, 0, -M_PI / 2, qy); /* body z along world y */
    /* Crossing axes one apart: a single point between the axes' closest points. */
    move_pose(&m, (double[]){0.2, 0.1, 1.0}, qx, x, q);
    body_set(&a, shape_of(GF_SHAPE_CAPSULE, 0.3, 1.0, 0), NULL, x, q);
    move_pose(&m, (double[]){0, 0, 0}, qy, x, q);
    body_set(&b, shape_of(GF_SHAPE_CAPSULE, 0.2, 1.5, 0), NULL, x, q);
    assert_int_equal(collide(&a.p, &b.p, 1.0, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){0, 0.1, 0.45}, 0.5, 1e-12);
    assert_int_equal(collide(&a.p, &b.p, 0.5, pt), 0);
    /* Parallel, overlapping over x in [-0.5, 1]: the two ends of the overlap. The outer ends
     * are sqrt(1.25) - 0.5 = 0.618 apart, beyond the margin. */
    move_pose(&m, (double[]){0.5, 0, 1.0}, qx, a.p.x, a.p.q);
    move_pose(&m, (double[]){0, 0, 0}, qx, b.p.x, b.p.q);
    b.s.dim[1] = 1.0;
    assert_int_equal(collide(&a.p, &b.p, 0.6, pt), 2);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){-0.5, 0, 0.45}, 0.5, 1e-12);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){1.0, 0, 0.45}, 0.5, 1e-12);
    /* Tilted by 0.01 rad in the plane of the axes: still held at both ends of the overlap. */
    double qt[4], tilt[4];
    q_axis(0, 1, 0, 0.01, tilt);
    q_mul(tilt, qx, qt);
    move_pose(&m, (double[]){0.5, 0, 1.0}, qt, a.p.x, a.p.q);
    int n = collide(&a.p, &b.p, 0.6, pt);
    assert_true(n >= 2);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; ++i) {
        double l[3] = {pt[i].p[0] - m.t[0], pt[i].p[1] - m.t[1], pt[i].p[2] - m.t[2]};
        rot_inv(m.q, l, l);
        lo = fmin(lo, l[0]);
        hi = fmax(hi, l[0]);
    }
    assert_true(lo < -0.49 && hi > 0.99);
    /* Collinear, end to end 0.5 apart: one point, along the axis. */
    move_pose(&m, (double[]){2.5, 0, 0}, qx, a.p.x, a.p.q);
    assert_int_equal(collide(&a.p, &b.p, 0.1, pt), 1);
    expect_point(&m, pt, 1, (double[]){1, 0, 0}, (double[]){1.2, 0, 0}, 0.0, 1e-12);
}

static void test_capsule_plane(void **state) {
    (void)state;
    motion m = motion_random(17);
    gf_contact_point pt[4];
    body c, pl;
    double x[3], q[4], qx[4];
    q_axis(0, 1, 0, M_PI / 2, qx);
    move_pose(&m, (double[]){0, 0, 0}, q_id, x, q);
    body_set(&pl, shape_plane(), NULL, x, q);
    /* Lying parallel 0.05 above the plane: both ends. */
    move_pose(&m, (double[]){0.3, 0.1, 0.3}, qx, x, q);
    body_set(&c, shape_of(GF_SHAPE_CAPSULE, 0.25, 1.0, 0), NULL, x, q);
    assert_int_equal(collide(&c.p, &pl.p, 0.1, pt), 2);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){-0.7, 0.1, 0.025}, 0.05, 1e-12);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){1.3, 0.1, 0.025}, 0.05, 1e-12);
    assert_int_equal(collide(&c.p, &pl.p, 0.049, pt), 0);
    /* One end raised by 0.5, the lower one's centre 0.3 up: that end alone. */
    double qt[4], tilt[4], al = asin(0.25);
    q_axis(0, 1, 0, -al, tilt);
    q_mul(tilt, qx, qt);
    move_pose(&m, (double[]){0.3, 0.1, 0.3 + 0.25}, qt, c.p.x, c.p.q);
    assert_int_equal(collide(&c.p, &pl.p, 0.1, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){0.3 - cos(al), 0.1, 0.025}, 0.05,
                 1e-12);
}

/* Bottom corners of a box of half extents h turned by `yaw` about z, centred at (cx, cy). */
static void box_bottom_corners(const double h[3], double yaw, double cx, double cy,
                               double out[4][3]) {
    for (int i = 0; i < 4; ++i) {
        double lx = (i & 1) ? h[0] : -h[0], ly = (i & 2) ? h[1] : -h[1];
        out[i][0] = cx + cos(yaw) * lx - sin(yaw) * ly;
        out[i][1] = cy + sin(yaw) * lx + cos(yaw) * ly;
        out[i][2] = 0.0;
    }
}

static void test_box_plane(void **state) {
    (void)state;
    motion m = motion_random(18);
    gf_contact_point pt[4];
    body bx, pl;
    double x[3], q[4], yaw[4];
    const double h[3] = {0.5, 0.3, 0.2};
    move_pose(&m, (double[]){0, 0, 0}, q_id, x, q);
    body_set(&pl, shape_plane(), NULL, x, q);
    q_axis(0, 0, 1, 0.7, yaw);
    double corner[4][3];
    box_bottom_corners(h, 0.7, 0.1, -0.2, corner);
    /* Resting, lifted within the margin, sunk, and with a margin beyond the box's height: the
     * four bottom corners with the lift as gap. */
    const double lift[4] = {0.0, 0.005, -0.003, 0.0}, margin[4] = {0.01, 0.01, 0.01, 0.6};
    for (int c = 0; c < 4; ++c) {
        move_pose(&m, (double[]){0.1, -0.2, 0.2 + lift[c]}, yaw, x, q);
        body_set(&bx, shape_of(GF_SHAPE_BOX, h[0], h[1], h[2]), NULL, x, q);
        assert_int_equal(collide(&bx.p, &pl.p, margin[c], pt), 4);
        for (int i = 0; i < 4; ++i) {
            double p[3] = {corner[i][0], corner[i][1], 0.5 * lift[c]};
            expect_point(&m, pt, 4, (double[]){0, 0, 1}, p, lift[c], 1e-12);
        }
    }
    /* Lifted above the margin: nothing. */
    move_pose(&m, (double[]){0.1, -0.2, 0.2 + 0.011}, yaw, bx.p.x, bx.p.q);
    assert_int_equal(collide(&bx.p, &pl.p, 0.01, pt), 0);
    /* Resting on its local +x face, with a margin reaching all eight corners: the four of
     * that face. */
    double qr[4], qyaw_r[4];
    q_axis(0, 1, 0, M_PI / 2, qr);
    q_mul(yaw, qr, qyaw_r);
    move_pose(&m, (double[]){0.1, -0.2, 0.2}, qyaw_r, x, q);
    body_set(&bx, shape_of(GF_SHAPE_BOX, 0.2, 0.3, 0.5), NULL, x, q);
    double side[4][3];
    box_bottom_corners((double[]){0.5, 0.3, 0.2}, 0.7, 0.1, -0.2, side);
    assert_int_equal(collide(&bx.p, &pl.p, 0.6, pt), 4);
    for (int i = 0; i < 4; ++i)
        expect_point(&m, pt, 4, (double[]){0, 0, 1}, side[i], 0.0, 1e-12);
    /* A cube on an edge: the edge's two ends. */
    double q45[4];
    q_axis(1, 0, 0, M_PI / 4, q45);
    move_pose(&m, (double[]){0, 0, 0.5 * sqrt(2.0)}, q45, x, q);
    body_set(&bx, shape_of(GF_SHAPE_BOX, 0.5, 0.5, 0.5), NULL, x, q);
    assert_int_equal(collide(&bx.p, &pl.p, 0.05, pt), 2);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){0.5, 0, 0}, 0.0, 1e-12);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){-0.5, 0, 0}, 0.0, 1e-12);
    /* The same from the plane's side: normals flip. */
    assert_int_equal(collide(&pl.p, &bx.p, 0.05, pt), 2);
    expect_point(&m, pt, 2, (double[]){0, 0, -1}, (double[]){0.5, 0, 0}, 0.0, 1e-12);
    /* On a corner (the body diagonal vertical): one point. */
    double qv[4], axis[3] = {1, -1, 0};
    q_axis(axis[0], axis[1], axis[2], acos(1.0 / sqrt(3.0)), qv);
    move_pose(&m, (double[]){0, 0, 0.5 * sqrt(3.0)}, qv, x, q);
    body_set(&bx, shape_of(GF_SHAPE_BOX, 0.5, 0.5, 0.5), NULL, x, q);
    assert_int_equal(collide(&bx.p, &pl.p, 0.05, pt), 1);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){0, 0, 0}, 0.0, 1e-12);
    /* With a margin that reaches the corner's three neighbours (1/sqrt(3) higher) they join
     * it: a tripod. */
    assert_int_equal(collide(&bx.p, &pl.p, 0.6, pt), 4);
}

static void test_box_on_box(void **state) {
    (void)state;
    motion m = motion_random(19);
    gf_contact_point pt[4];
    body big, small;
    double x[3], q[4], yaw[4];
    const double hb[3] = {2.0, 2.0, 0.5}, hs[3] = {0.5, 0.3, 0.2};
    move_pose(&m, (double[]){0, 0, -0.5}, q_id, x, q);
    body_set(&big, shape_of(GF_SHAPE_BOX, hb[0], hb[1], hb[2]), NULL, x, q);
    q_axis(0, 0, 1, 0.4, yaw);
    /* Wholly on the top face, sunk 0.001 and lifted 0.02: the small box's four bottom corners
     * with the lift as gap (the closest features are faces, so the gap is the distance). */
    const double lift[2] = {-0.001, 0.02};
    double corner[4][3];
    box_bottom_corners(hs, 0.4, 0.3, 0.2, corner);
    for (int c = 0; c < 2; ++c) {
        move_pose(&m, (double[]){0.3, 0.2, hs[2] + lift[c]}, yaw, x, q);
        body_set(&small, shape_of(GF_SHAPE_BOX, hs[0], hs[1], hs[2]), NULL, x, q);
        assert_int_equal(collide(&small.p, &big.p, 0.05, pt), 4);
        for (int i = 0; i < 4; ++i) {
            double p[3] = {corner[i][0], corner[i][1], 0.5 * lift[c]};
            expect_point(&m, pt, 4, (double[]){0, 0, 1}, p, lift[c], 1e-9);
        }
        /* And with the big box as a. */
        assert_int_equal(collide(&big.p, &small.p, 0.05, pt), 4);
        for (int i = 0; i < 4; ++i) {
            double p[3] = {corner[i][0], corner[i][1], 0.5 * lift[c]};
            expect_point(&m, pt, 4, (double[]){0, 0, -1}, p, lift[c], 1e-9);
        }
    }
    /* Overhanging the edge x = 2: four points, all inside both footprints, spanning most of
     * the overlap. */
    move_pose(&m, (double[]){1.8, 0.2, hs[2] - 0.001}, yaw, x, q);
    body_set(&small, shape_of(GF_SHAPE_BOX, hs[0], hs[1], hs[2]), NULL, x, q);
    int n = collide(&small.p, &big.p, 0.05, pt);
    assert_int_equal(n, 4);
    double xmin = INFINITY, xmax = -INFINITY;
    for (int i = 0; i < n; ++i) {
        double l[3] = {pt[i].p[0] - m.t[0], pt[i].p[1] - m.t[1], pt[i].p[2] - m.t[2]};
        rot_inv(m.q, l, l);
        GF_ASSERT_NEAR(pt[i].gap, -0.001, 1e-9);
        assert_true(fabs(l[0]) <= 2.0 + 1e-7 && fabs(l[1]) <= 2.0 + 1e-7);
        double sl[3] = {cos(0.4) * (l[0] - 1.8) + sin(0.4) * (l[1] - 0.2),
                        -sin(0.4) * (l[0] - 1.8) + cos(0.4) * (l[1] - 0.2), 0};
        assert_true(fabs(sl[0]) <= hs[0] + 1e-7 && fabs(sl[1]) <= hs[1] + 1e-7);
        xmin = fmin(xmin, l[0]);
        xmax = fmax(xmax, l[0]);
    }
    /* The overlap reaches from the small box's leftmost corner to the edge x = 2. */
    assert_true(xmax > 2.0 - 1e-7);
    assert_true(xmin < 1.8 - hs[0] * cos(0.4) - hs[1] * sin(0.4) + 1e-7);
}

/* Found by a search over random deep overlaps: the face axis of b is within the face bias of
 * the best edge axis, but b's face does not hold a's corner, which lies beside it; the contact
 * is edge on edge, and its point must lie on both surfaces. */
static void test_box_box_face_beside(void **state) {
    (void)state;
    body a, b;
    const double qa[4] = {-0.78235468919404638, -0.22706855201101148, -0.45062081663080511,
                          0.36510531713835098};
    const double qb[4] = {-0.41981910331671696, -0.34922635598585716, 0.19077917948267908,
                          -0.81571819732742445};
    body_set(&a,
             shape_of(GF_SHAPE_BOX, 0.23254297520061445, 0.69388138664260712, 0.62451433002790879),
             NULL, (double[]){0, 0, 0}, qa);
    body_set(
        &b, shape_of(GF_SHAPE_BOX, 0.70153011810164623, 0.25110307164270607, 0.28082574932431448),
        NULL, (double[]){-0.048032894479619219, -0.67046812032457181, -0.33564753457007734}, qb);
    gf_contact_point pt[4];
    int n = collide(&a.p, &b.p, 0.1, pt);
    assert_true(n >= 1);
    double sat = box_axes_separation(&a.p, &b.p);
    assert_true(sat < 0.0);
    /* the exact penetration depth, up to the face bias */
    GF_ASSERT_NEAR(min_gap(pt, n, NULL), sat, 2e-3 * fabs(sat));
    check_certificates(&a.p, &b.p, pt, n, 1e-9);
}

/* The height after turning by th about e (about the centre) of the rim point at angle phi of the
 * cap at cap * half of the cylinder p, and in `now` where that point is before the turn. */
static double rim_after(const gf_body_pose *p, double rad, double half, double cap, double phi,
                        const double e[3], double th, double now[3]) {
    const double local[3] = {rad * cos(phi), rad * sin(phi), cap * half};
    double r[3], ex[3];
    rot(p->q, local, r);
    cross3(e, r, ex);
    for (int d = 0; d < 3; ++d)
        now[d] = p->x[d] + r[d];
    return p->x[2] + r[2] * cos(th) + ex[2] * sin(th) + e[2] * dot3(e, r) * (1.0 - cos(th));
}

/* A cylinder rolling on its rim (issue 31, del. 5): against a plane, gf_collide_turning adds the
 * rim point that the turn brings lowest, placed where it is now, with the gap that its height at
 * the step's end less the turn's linear part gives; brute force: the rim of both caps sampled at
 * 2e5 points, turned about the centre, the lowest of them. A turn of zero, or another pair,
 * gives gf_collide's points. */
static void test_cylinder_plane_turning(void **state) {
    (void)state;
    const double rad = 0.4, half = 0.6, tilt = 0.3;
    body cyl, pl, sph;
    body_set(&pl, shape_plane(), NULL, (double[]){0, 0, 0}, q_id);
    double qt[4];
    q_axis(1, 2, 0, tilt, qt);
    const double z = half * cos(tilt) + rad * sin(tilt) + 1e-4;
    body_set(&cyl, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, (double[]){0.1, 0.2, z}, qt);
    const double turns[3][3] = {{0.02, -0.05, 0.03}, {-0.04, 0.01, 0.0}, {0.0, 0.0, 0.08}};
    for (int c = 0; c < 3; ++c) {
        const double *t = turns[c];
        gf_contact_point plain[GF_MANIFOLD_MAX], pt[GF_MANIFOLD_MAX];
        int np = 0, n = 0;
        GF_ASSERT_OK(gf_collide(&cyl.p, &pl.p, 0.05, plain, GF_MANIFOLD_MAX, &np));
        GF_ASSERT_OK(gf_collide_turning(&cyl.p, &pl.p, t, still, 0.05, pt, GF_MANIFOLD_MAX, &n));
        assert_int_equal(np, 1); /* the lowest rim point only: the others are beyond 0.05 */
        /* a turn about the plane's normal keeps the lowest point the lowest: nothing added */
        const int added = c < 2;
        assert_int_equal(n, 1 + added);
        assert_memory_equal(&plain[0], &pt[0], sizeof pt[0]);
        /* brute force: the rim point lowest after the turn (Rodrigues), where it is now; the
         * best sample refined by a ternary search of its neighbourhood */
        const double th = len3(t), e[3] = {t[0] / th, t[1] / th, t[2] / th};
        double best = INFINITY, best_phi = 0.0, best_cap = 0.0, now[3];
        for (int cap = -1; cap <= 1; cap += 2)
            for (int k = 0; k < 200000; ++k) {
                double phi = 2.0 * M_PI * k / 200000.0, r[3];
                double after = rim_after(&cyl.p, rad, half, cap, phi, e, th, r);
                if (after < best)
                    best = after, best_phi = phi, best_cap = cap;
            }
        double lo = best_phi - 2.0 * M_PI / 200000.0, hi = best_phi + 2.0 * M_PI / 200000.0;
        for (int it = 0; it < 200; ++it) {
            double m1 = lo + (hi - lo) / 3.0, m2 = hi - (hi - lo) / 3.0, r[3];
            if (rim_after(&cyl.p, rad, half, best_cap, m1, e, th, r) <
                rim_after(&cyl.p, rad, half, best_cap, m2, e, th, r))
                hi = m2;
            else
                lo = m1;
        }
        double end = rim_after(&cyl.p, rad, half, best_cap, 0.5 * (lo + hi), e, th, now);
        /* its gap: the height at the step's end less the turn's linear part t x r */
        const double r[3] = {now[0] - cyl.p.x[0], now[1] - cyl.p.x[1], now[2] - cyl.p.x[2]};
        double lin[3];
        cross3(t, r, lin);
        const double want_gap = added ? end - lin[2] : now[2];
        /* the a-side point of the added contact (of the lowest one, where none is added) */
        const gf_contact_point *q = &pt[added];
        double a_side[3];
        for (int d = 0; d < 3; ++d)
            a_side[d] = q->p[d] + 0.5 * q->gap * q->n[d];
        for (int d = 0; d < 3; ++d)
            GF_ASSERT_NEAR(a_side[d], now[d], 1e-7); /* the search finds a minimum to ~sqrt(eps) */
        GF_ASSERT_NEAR(q->gap, want_gap, 1e-8);
        assert_true(now[2] >= pt[0].gap);
    }
    /* Nearly flat, with a margin that holds four rim points: the turn's point takes the place
     * of the highest of them (a point of the rim, lower than the one it replaces). */
    {
        double qf[4];
        q_axis(1, 2, 0, 0.1, qf);
        const double zf = half * cos(0.1) + rad * sin(0.1) + 1e-4;
        body flat;
        body_set(&flat, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, (double[]){0.1, 0.2, zf},
                 qf);
        gf_contact_point plain[GF_MANIFOLD_MAX], pt[GF_MANIFOLD_MAX];
        int np = 0, n = 0;
        GF_ASSERT_OK(gf_collide(&flat.p, &pl.p, 0.2, plain, GF_MANIFOLD_MAX, &np));
        GF_ASSERT_OK(
            gf_collide_turning(&flat.p, &pl.p, turns[0], still, 0.2, pt, GF_MANIFOLD_MAX, &n));
        assert_int_equal(np, GF_MANIFOLD_MAX);
        assert_int_equal(n, GF_MANIFOLD_MAX);
        int top = 1, differ = 0, at = -1;
        for (int i = 1; i < np; ++i)
            top = plain[i].gap > plain[top].gap ? i : top;
        for (int i = 0; i < np; ++i)
            if (memcmp(&plain[i], &pt[i], sizeof pt[i]) != 0)
                ++differ, at = i;
        assert_int_equal(differ, 1);
        assert_int_equal(at, top);
        assert_true(pt[at].gap < plain[top].gap);
        double v[3], lc[3];
        for (int k = 0; k < 3; ++k)
            v[k] = pt[at].p[k] + 0.5 * pt[at].gap * pt[at].n[k] - flat.p.x[k];
        rot_inv(flat.p.q, v, lc);
        GF_ASSERT_NEAR(sqrt(lc[0] * lc[0] + lc[1] * lc[1]), rad, 1e-12);
        GF_ASSERT_NEAR(fabs(lc[2]), half, 1e-12);
    }
    /* no turn, or a pair without such points: gf_collide's */
    gf_contact_point a[GF_MANIFOLD_MAX], b[GF_MANIFOLD_MAX];
    int na = 0, nb = 0;
    GF_ASSERT_OK(gf_collide(&cyl.p, &pl.p, 0.05, a, GF_MANIFOLD_MAX, &na));
    GF_ASSERT_OK(gf_collide_turning(&cyl.p, &pl.p, still, still, 0.05, b, GF_MANIFOLD_MAX, &nb));
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof a[0]);
    body_set(&sph, shape_of(GF_SHAPE_SPHERE, 0.3, 0, 0), NULL, (double[]){0, 0, 0.31}, q_id);
    GF_ASSERT_OK(gf_collide_turning(&sph.p, &pl.p, turns[0], still, 0.05, b, GF_MANIFOLD_MAX, &nb));
    assert_int_equal(nb, 1);
    GF_ASSERT_NEAR(b[0].gap, 0.01, 1e-15);
}

/* The same rim point against a flat face of another body (through the convex path): a tilted
 * disc on a box's top face and on a cylinder's cap gets, beside its manifold, the point that it
 * gets against the face's plane, with the normal reversed when it is the pair's b; off the face
 * (its point beyond the face's edge), none. */
static void test_cylinder_face_turning(void **state) {
    (void)state;
    const double rad = 0.4, half = 0.1, tilt = 0.25, turn[3] = {0.03, -0.06, 0.02};
    double qt[4];
    q_axis(1, 2, 0, tilt, qt);
    const double top = 0.5; /* the face: z = top */
    const double z = top + half * cos(tilt) + rad * sin(tilt) + 1e-4;
    body disc, plane, box, drum;
    body_set(&disc, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, (double[]){0.1, 0.2, z}, qt);
    body_set(&plane, shape_plane(), NULL, (double[]){0, 0, top}, q_id);
    body_set(&box, shape_of(GF_SHAPE_BOX, 2.0, 2.0, 0.25), NULL, (double[]){0, 0, top - 0.25},
             q_id);
    body_set(&drum, shape_of(GF_SHAPE_CYLINDER, 2.0, 0.25, 0), NULL, (double[]){0, 0, top - 0.25},
             q_id);
    gf_contact_point want[GF_MANIFOLD_MAX], pt[GF_MANIFOLD_MAX];
    int nw = 0, n = 0;
    GF_ASSERT_OK(
        gf_collide_turning(&disc.p, &plane.p, turn, still, 0.05, want, GF_MANIFOLD_MAX, &nw));
    assert_int_equal(nw, 2);
    const gf_contact_point *w = &want[nw - 1];
    const body *faces[2] = {&box, &drum};
    for (int f = 0; f < 2; ++f)
        for (int swap = 0; swap < 2; ++swap) {
            const gf_body_pose *a = swap ? &faces[f]->p : &disc.p,
                               *b = swap ? &disc.p : &faces[f]->p;
            GF_ASSERT_OK(gf_collide_turning(a, b, swap ? still : turn, swap ? turn : still, 0.05,
                                            pt, GF_MANIFOLD_MAX, &n));
            assert_true(n >= 2);
            const gf_contact_point *q = &pt[n - 1];
            for (int d = 0; d < 3; ++d) {
                GF_ASSERT_NEAR(q->p[d], w->p[d], 1e-12);
                GF_ASSERT_NEAR(q->n[d], swap ? -w->n[d] : w->n[d], 1e-12);
            }
            GF_ASSERT_NEAR(q->gap, w->gap, 1e-12);
            /* the manifold before it is gf_collide's */
            gf_contact_point plain[GF_MANIFOLD_MAX];
            int np = 0;
            GF_ASSERT_OK(gf_collide(a, b, 0.05, plain, GF_MANIFOLD_MAX, &np));
            assert_int_equal(np, n - 1);
        }
    /* a disc nearly flat, its whole rim within the margin: a full manifold gives up its highest
     * point but the first for the turned one, on the faces as on the plane */
    {
        body flat;
        double qf[4];
        q_axis(1, 2, 0, 0.05, qf);
        const double zf = top + half * cos(0.05) + rad * sin(0.05) + 1e-4;
        body_set(&flat, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, (double[]){0.1, 0.2, zf},
                 qf);
        gf_contact_point full[GF_MANIFOLD_MAX], plain[GF_MANIFOLD_MAX];
        int nf = 0, np = 0;
        GF_ASSERT_OK(
            gf_collide_turning(&flat.p, &plane.p, turn, still, 0.5, full, GF_MANIFOLD_MAX, &nf));
        GF_ASSERT_OK(gf_collide(&flat.p, &plane.p, 0.5, plain, GF_MANIFOLD_MAX, &np));
        assert_int_equal(nf, GF_MANIFOLD_MAX);
        assert_int_equal(np, GF_MANIFOLD_MAX);
        int t = -1; /* the turned point: the one gf_collide does not give */
        for (int i = 0; i < nf; ++i)
            if (memcmp(&full[i], &plain[i], sizeof full[i]) != 0)
                t = t < 0 ? i : 99;
        assert_true(t > 0 && t < nf);
        for (int f = 0; f < 2; ++f)
            for (int swap = 0; swap < 2; ++swap) {
                const gf_body_pose *a = swap ? &faces[f]->p : &flat.p,
                                   *b = swap ? &flat.p : &faces[f]->p;
                GF_ASSERT_OK(gf_collide_turning(a, b, swap ? still : turn, swap ? turn : still, 0.5,
                                                pt, GF_MANIFOLD_MAX, &n));
                GF_ASSERT_OK(gf_collide(a, b, 0.5, plain, GF_MANIFOLD_MAX, &np));
                assert_int_equal(np, GF_MANIFOLD_MAX);
                assert_int_equal(n, GF_MANIFOLD_MAX);
                int found = 0;
                for (int i = 1; i < n; ++i) {
                    double e = fabs(pt[i].gap - full[t].gap);
                    for (int d = 0; d < 3; ++d)
                        e += fabs(pt[i].p[d] - full[t].p[d]) +
                             fabs(pt[i].n[d] - (swap ? -full[t].n[d] : full[t].n[d]));
                    found += e < 1e-12;
                }
                assert_int_equal(found, 1);
                assert_memory_equal(&pt[0], &plain[0], sizeof pt[0]); /* the first is kept */
                /* with room beside the manifold: appended, the manifold kept whole */
                gf_contact_point more[GF_MANIFOLD_MAX + 1];
                int nm = 0;
                GF_ASSERT_OK(gf_collide_turning(a, b, swap ? still : turn, swap ? turn : still, 0.5,
                                                more, GF_MANIFOLD_MAX + 1, &nm));
                assert_int_equal(nm, GF_MANIFOLD_MAX + 1);
                assert_memory_equal(more, plain, GF_MANIFOLD_MAX * sizeof more[0]);
                double e = fabs(more[GF_MANIFOLD_MAX].gap - full[t].gap);
                for (int d = 0; d < 3; ++d)
                    e += fabs(more[GF_MANIFOLD_MAX].p[d] - full[t].p[d]);
                assert_true(e < 1e-12);
            }
    }
    /* a small box or post under the disc's lowest point only: the turned point is off its
     * face */
    for (int f = 0; f < 2; ++f) {
        body small;
        const double *low = want[0].p;
        body_set(&small,
                 f ? shape_of(GF_SHAPE_CYLINDER, 0.02, 0.25, 0)
                   : shape_of(GF_SHAPE_BOX, 0.02, 0.02, 0.25),
                 NULL, (double[]){low[0], low[1], top - 0.25}, q_id);
        GF_ASSERT_OK(
            gf_collide_turning(&disc.p, &small.p, turn, still, 0.05, pt, GF_MANIFOLD_MAX, &n));
        gf_contact_point plain[GF_MANIFOLD_MAX];
        int np = 0;
        GF_ASSERT_OK(gf_collide(&disc.p, &small.p, 0.05, plain, GF_MANIFOLD_MAX, &np));
        assert_true(np >= 1);
        /* no rim point; gf_collide's manifold, then at most the pair's own turned point (the
         * post's edge that the disc's underside turns onto; test_clump_box_turning) */
        assert_true(n == np || n == np + 1);
        assert_memory_equal(plain, pt, (size_t)np * sizeof pt[0]);
    }
}

/* A sphere in front of a box's face, the box spinning about its vertical axis: the box's
 * point nearest the sphere at the step's end, where it is now, is added, its gap the end's gap
 * plus the turn's linear part along the normal; brute force: the sphere's centre clamped to the
 * box in the turned box's frame. The sphere as the pair's b gets the same point, its normal
 * reversed; a turn of the sphere alone adds nothing. */
static void test_sphere_box_turning(void **state) {
    (void)state;
    const double h[3] = {0.2, 0.1, 0.3}, r = 0.05, spin[3] = {0.0, 0.0, 0.08};
    body box, ball;
    body_set(&box, shape_of(GF_SHAPE_BOX, h[0], h[1], h[2]), NULL, (double[]){0, 0, 0}, q_id);
    /* in front of the face x = h0, 3 mm off it: its nearest point slides along the face */
    const double c[3] = {h[0] + r + 0.003, 0.05, 0.05};
    body_set(&ball, shape_of(GF_SHAPE_SPHERE, r, 0, 0), NULL, c, q_id);
    gf_contact_point pt[GF_MANIFOLD_MAX], plain[GF_MANIFOLD_MAX];
    int n = 0, np = 0;
    GF_ASSERT_OK(gf_collide(&ball.p, &box.p, 0.05, plain, GF_MANIFOLD_MAX, &np));
    GF_ASSERT_OK(gf_collide_turning(&ball.p, &box.p, still, spin, 0.05, pt, GF_MANIFOLD_MAX, &n));
    assert_int_equal(np, 1);
    assert_int_equal(n, 2);
    assert_memory_equal(&plain[0], &pt[0], sizeof pt[0]);
    /* brute force: c in the frame of the box turned by spin (about z), clamped, turned back */
    const double th = spin[2], cs = cos(th), sn = sin(th);
    const double cl[3] = {cs * c[0] + sn * c[1], -sn * c[0] + cs * c[1], c[2]};
    double q[3];
    for (int k = 0; k < 3; ++k)
        q[k] = fmin(fmax(cl[k], -h[k]), h[k]); /* the material point, in the box's own frame */
    const double qe[3] = {cs * q[0] - sn * q[1], sn * q[0] + cs * q[1], q[2]}; /* at the end */
    double d_end[3] = {c[0] - qe[0], c[1] - qe[1], c[2] - qe[2]};
    double d_now[3] = {c[0] - q[0], c[1] - q[1], c[2] - q[2]}, nn[3], lin[3];
    double g_end = len3(d_end) - r, l_now = len3(d_now);
    for (int k = 0; k < 3; ++k)
        nn[k] = d_now[k] / l_now;
    cross3(spin, q, lin);
    const double want_gap = g_end + dot3(nn, lin);
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_NEAR(pt[1].n[k], nn[k], 1e-12);
        GF_ASSERT_NEAR(pt[1].p[k] - 0.5 * pt[1].gap * pt[1].n[k], q[k], 1e-12);
    }
    GF_ASSERT_NEAR(pt[1].gap, want_gap, 1e-12);
    assert_true(l_now - r > pt[0].gap); /* a point farther now, nearest at the end */
    /* the sphere as b: the same point, the normal from the sphere to the box */
    GF_ASSERT_OK(gf_collide_turning(&box.p, &ball.p, spin, still, 0.05, pt, GF_MANIFOLD_MAX, &n));
    assert_int_equal(n, 2);
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_NEAR(pt[1].n[k], -nn[k], 1e-12);
        GF_ASSERT_NEAR(pt[1].gap, want_gap, 1e-12);
    }
    /* only the sphere turning: nothing added */
    GF_ASSERT_OK(gf_collide_turning(&ball.p, &box.p, spin, still, 0.05, pt, GF_MANIFOLD_MAX, &n));
    assert_int_equal(n, 1);
}

/* x turned by the rotation vector t (Rodrigues), for the references below. */
static void turn3(const double t[3], const double x[3], double y[3]) {
    double th = len3(t);
    if (th == 0.0) {
        memcpy(y, x, 3 * sizeof *y);
        return;
    }
    double e[3] = {t[0] / th, t[1] / th, t[2] / th}, ex[3];
    cross3(e, x, ex);
    double c = cos(th), sn = sin(th), ed = dot3(e, x) * (1.0 - c);
    for (int k = 0; k < 3; ++k)
        y[k] = x[k] * c + ex[k] * sn + e[k] * ed;
}

/* A clump whose member lies off a box's face while both turn (the general turned point of
 * gf_collide_turning): the box's nearest point slides along its face, and the member's centre
 * moves on an arc about the clump's centre. Against brute force: the member's centre and the box
 * in their turned poses, the box's nearest point by clamping in its turned frame, both material
 * points turned back to now, the gap at the end less the turns' linear part. */
static void test_clump_box_turning(void **state) {
    (void)state;
    static const double cc[2][3] = {{-0.1, 0.0, 0.0}, {0.1, 0.0, 0.0}}, cr[2] = {0.05, 0.05};
    gf_clump t = clump_template(2, cc, cr);
    gf_clumps cl = {1, &t};
    const double h[3] = {0.2, 0.1, 0.3}, xc[3] = {0.38, 0.04, 0.05};
    const double spin_b[3] = {0.0, 0.0, 0.08}, spin_c[3] = {0.0, 0.03, 0.05};
    body box, clump;
    body_set(&box, shape_of(GF_SHAPE_BOX, h[0], h[1], h[2]), NULL, (double[]){0, 0, 0}, q_id);
    body_set(&clump, shape_clump(0, 1.0), &cl, xc, q_id);
    gf_contact_point pt[4], plain[4];
    int n = 0, np = 0;
    GF_ASSERT_OK(gf_collide(&clump.p, &box.p, 0.05, plain, 4, &np));
    GF_ASSERT_OK(gf_collide_turning(&clump.p, &box.p, spin_c, spin_b, 0.05, pt, 4, &n));
    assert_int_equal(np, 1); /* member 0, 3 mm off the face x = h0 */
    assert_int_equal(n, 2);
    assert_memory_equal(&plain[0], &pt[0], sizeof pt[0]);
    /* brute force */
    double m_now[3] = {cc[0][0], cc[0][1], cc[0][2]}, m_end[3], c_end[3];
    turn3(spin_c, m_now, m_end);
    for (int k = 0; k < 3; ++k)
        c_end[k] = xc[k] + m_end[k]; /* the member's centre at the end */
    double back[3] = {-spin_b[0], -spin_b[1], -spin_b[2]}, cl_b[3], qb[3], qe[3];
    turn3(back, c_end, cl_b); /* in the turned box's frame */
    for (int k = 0; k < 3; ++k)
        qb[k] = fmin(fmax(cl_b[k], -h[k]), h[k]); /* the box's material point (box frame = now) */
    turn3(spin_b, qb, qe);                        /* ... at the end */
    double d[3] = {c_end[0] - qe[0], c_end[1] - qe[1], c_end[2] - qe[2]}, nn[3];
    double l = len3(d), g_end = l - cr[0];
    for (int k = 0; k < 3; ++k)
        nn[k] = d[k] / l;
    /* the clump's material point: at the end on the member along -n, turned back about xc */
    double ae[3], an[3], la[3], lb[3], backc[3] = {-spin_c[0], -spin_c[1], -spin_c[2]};
    for (int k = 0; k < 3; ++k)
        ae[k] = m_end[k] - cr[0] * nn[k];
    turn3(backc, ae, an);
    cross3(spin_c, an, la);
    cross3(spin_b, qb, lb);
    const double want_gap = g_end - (dot3(nn, la) - dot3(nn, lb));
    GF_ASSERT_NEAR(pt[1].gap, want_gap, 1e-12);
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_NEAR(pt[1].n[k], nn[k], 1e-12);
        /* both turn: the point midway between the two material points now */
        GF_ASSERT_NEAR(pt[1].p[k], 0.5 * (xc[k] + an[k] + qb[k]), 1e-12);
    }
    /* turning slowly (second-order displacement below 1e-4 of the smaller body): nothing added */
    const double slow_b[3] = {0.0, 0.0, 1e-4}, slow_c[3] = {0.0, 0.0, 1e-4};
    GF_ASSERT_OK(gf_collide_turning(&clump.p, &box.p, slow_c, slow_b, 0.05, pt, 4, &n));
    assert_int_equal(n, 1);
    /* the box as a: the same point, the normal reversed */
    GF_ASSERT_OK(gf_collide_turning(&box.p, &clump.p, spin_b, spin_c, 0.05, pt, 4, &n));
    assert_int_equal(n, 2);
    GF_ASSERT_NEAR(pt[1].gap, want_gap, 1e-12);
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_NEAR(pt[1].n[k], -nn[k], 1e-12);
        GF_ASSERT_NEAR(pt[1].p[k], 0.5 * (xc[k] + an[k] + qb[k]), 1e-12);
    }
}

/* A capsule tilted over a plane, its lower end just above it, tumbling end over end: the lowest
 * point of its lower cap slides over the hemisphere as it turns, and the one lowest at the end
 * lies higher now by r (1 - cos theta). Against the closed form: the lower end's centre in the
 * turned pose, its point r below, turned back; the gap it reaches less the turn's linear part. */
static void test_capsule_plane_turning(void **state) {
    (void)state;
    const double r = 0.05, half = 0.2, tilt = 0.5, g0 = 0.003;
    double q[4];
    q_axis(0, 1, 0, tilt, q); /* the axis tilted in the x-z plane */
    const double ez[3] = {0, 0, 1};
    double axis[3], x[3];
    rot(q, ez, axis);
    /* the lower end at height r + g0 */
    for (int k = 0; k < 3; ++k)
        x[k] = half * axis[k];
    x[2] = r + g0 + half * fabs(axis[2]);
    body cap, pl;
    body_set(&cap, shape_of(GF_SHAPE_CAPSULE, r, half, 0), NULL, x, q);
    body_set(&pl, shape_plane(), NULL, (double[]){0, 0, 0}, q_id);
    gf_contact_point pt[GF_MANIFOLD_MAX];
    int n = 0;
    GF_ASSERT_OK(gf_collide(&cap.p, &pl.p, 0.01, pt, GF_MANIFOLD_MAX, &n));
    assert_int_equal(n, 1);
    GF_ASSERT_NEAR(pt[0].gap, g0, 1e-12);
    /* turning about y so that the lower end comes down */
    double lower[3] = {-half * axis[0], -half * axis[1], -half * axis[2]};
    const double t[3] = {0.0, lower[0] > 0.0 ? 0.1 : -0.1, 0.0};
    GF_ASSERT_OK(gf_collide_turning(&cap.p, &pl.p, t, still, 0.01, pt, GF_MANIFOLD_MAX, &n));
    assert_int_equal(n, 2);
    GF_ASSERT_NEAR(pt[0].gap, g0, 1e-12);
    double le[3], ae[3], an[3], lin[3], back[3] = {-t[0], -t[1], -t[2]};
    turn3(t, lower, le); /* the lower end's centre at the end, from x */
    for (int k = 0; k < 3; ++k)
        ae[k] = le[k] - r * ez[k]; /* the capsule's lowest point at the end, from x */
    const double g_end = x[2] + ae[2];
    assert_true(g_end < g0); /* the turn brings it down */
    turn3(back, ae, an);     /* that material point now */
    cross3(t, an, lin);
    const double want = g_end - lin[2];
    GF_ASSERT_NEAR(pt[1].gap, want, 1e-12);
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_NEAR(pt[1].n[k], ez[k], 1e-12);
        /* on the capsule's material point, half the gap below it */
        GF_ASSERT_NEAR(pt[1].p[k] + 0.5 * pt[1].gap * pt[1].n[k], x[k] + an[k], 1e-12);
    }
    /* turning about its own axis leaves its shape where it is: a point added for the material
     * point that will be lowest asks no more than the lowest one now (its gap plus the turn's
     * linear part is g0), so it neither lifts nor brakes the capsule */
    const double own[3] = {0.1 * axis[0], 0.1 * axis[1], 0.1 * axis[2]};
    GF_ASSERT_OK(gf_collide_turning(&cap.p, &pl.p, own, still, 0.01, pt, GF_MANIFOLD_MAX, &n));
    assert_true(n >= 1 && n <= 2);
    GF_ASSERT_NEAR(pt[0].gap, g0, 1e-12);
    for (int i = 1; i < n; ++i) {
        double ra[3], l[3];
        for (int k = 0; k < 3; ++k)
            ra[k] = pt[i].p[k] + 0.5 * pt[i].gap * pt[i].n[k] - x[k];
        cross3(own, ra, l);
        GF_ASSERT_NEAR(pt[i].gap + dot3(pt[i].n, l), g0, 1e-12);
    }
}

static void test_cylinder_plane(void **state) {
    (void)state;
    motion m = motion_random(20);
    gf_contact_point pt[5];
    body cyl, pl;
    double x[3], q[4];
    const double rad = 0.4, half = 0.6;
    move_pose(&m, (double[]){0, 0, 0}, q_id, x, q);
    body_set(&pl, shape_plane(), NULL, x, q);
    /* Standing on its cap, exactly and tilted by 0.002 rad (its lowest rim point touching):
     * at least three rim points, not collinear, so it cannot rock. */
    const double tilts[2] = {0.0, 0.002};
    for (int c = 0; c < 2; ++c) {
        double qt[4];
        q_axis(1, 2, 0, tilts[c], qt);
        double z = half * cos(tilts[c]) + rad * sin(tilts[c]);
        move_pose(&m, (double[]){0.2, 0.1, z}, qt, x, q);
        body_set(&cyl, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, x, q);
        int n = collide(&cyl.p, &pl.p, 0.01, pt);
        assert_true(n >= 3 && n <= 4);
        for (int i = 0; i < n; ++i) {
            /* the a-side point lies on the rim of the lower cap */
            double v[3], lc[3];
            for (int k = 0; k < 3; ++k)
                v[k] = pt[i].p[k] + 0.5 * pt[i].gap * pt[i].n[k] - cyl.p.x[k];
            rot_inv(cyl.p.q, v, lc);
            GF_ASSERT_NEAR(sqrt(lc[0] * lc[0] + lc[1] * lc[1]), rad, 1e-12);
            GF_ASSERT_NEAR(lc[2], -half, 1e-12);
            assert_true(pt[i].gap >= -1e-12 && pt[i].gap <= 2 * rad * sin(tilts[c]) + 1e-12);
        }
        double best = 0.0;
        for (int i = 0; i < n; ++i)
            for (int j = i + 1; j < n; ++j)
                for (int k = j + 1; k < n; ++k) {
                    double u[3], v[3], w[3];
                    for (int d = 0; d < 3; ++d) {
                        u[d] = pt[j].p[d] - pt[i].p[d];
                        v[d] = pt[k].p[d] - pt[i].p[d];
                    }
                    cross3(u, v, w);
                    best = fmax(best, 0.5 * len3(w));
                }
        /* the largest triangle of four rim points a quarter turn apart is r^2 */
        assert_true(best > 0.9 * rad * rad);
        GF_ASSERT_NEAR(min_gap(pt, n, NULL), 0.0, 1e-12);
    }
    /* Lying on its side: the lowest points of both caps. */
    double qx[4];
    q_axis(0, 1, 0, M_PI / 2, qx);
    move_pose(&m, (double[]){0, 0, rad}, qx, x, q);
    body_set(&cyl, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, x, q);
    assert_int_equal(collide(&cyl.p, &pl.p, 0.01, pt), 2);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){half, 0, 0}, 0.0, 1e-12);
    expect_point(&m, pt, 2, (double[]){0, 0, 1}, (double[]){-half, 0, 0}, 0.0, 1e-12);
    /* Tilted 30 degrees about y, lowest rim point 0.01 up: that point alone. */
    double q30[4], th = M_PI / 6;
    q_axis(0, 1, 0, th, q30);
    double z = half * cos(th) + rad * sin(th) + 0.01;
    move_pose(&m, (double[]){0, 0, z}, q30, x, q);
    body_set(&cyl, shape_of(GF_SHAPE_CYLINDER, rad, half, 0), NULL, x, q);
    assert_int_equal(collide(&cyl.p, &pl.p, 0.05, pt), 1);
    /* lowest point: centre - half*axis + rad*(direction in the cap plane pointing down) */
    double px = -half * sin(th) + rad * cos(th);
    expect_point(&m, pt, 1, (double[]){0, 0, 1}, (double[]){px, 0, 0.005}, 0.01, 1e-12);
}

/* ---- clumps --------------------------------------------------------------------------------- */

static const double clump_c[3][3] = {{0, 0, 0}, {0.8, 0, 0.1}, {-0.6, 0.3, 0.6}};
static const double clump_r[3] = {0.5, 0.3, 0.2};

static void test_clump_plane(void **state) {
    (void)state;
    gf_clump t = clump_template(3, clump_c, clump_r);
    gf_clumps cl = {1, &t};
    motion m = motion_random(21);
    body c, pl;
    double x[3], q[4], qc[4];
    move_pose(&m, (double[]){0, 0, 0}, q_id, x, q);
    body_set(&pl, shape_plane(), NULL, x, q);
    q_axis(0.3, -1, 0.2, 0.5, qc);
    const double scale = 1.5;
    move_pose(&m, (double[]){0.1, 0.2, 0.7}, qc, x, q);
    body_set(&c, shape_clump(0, scale), &cl, x, q);
    gf_contact_point pt[8];
    for (int pass = 0; pass < 2; ++pass) {
        double margin = pass ? 10.0 : 0.05;
        int n = collide(&c.p, &pl.p, margin, pt), expect = 0;
        for (int k = 0; k < 3; ++k) {
            /* member k in the local frame of the configuration */
            double ck[3],
                v[3] = {scale * clump_c[k][0], scale * clump_c[k][1], scale * clump_c[k][2]};
            rot(qc, v, ck);
            for (int i = 0; i < 3; ++i)
                ck[i] += (double[]){0.1, 0.2, 0.7}[i];
            double g = ck[2] - scale * clump_r[k];
            if (g < margin) {
                ++expect;
                expect_point(&m, pt, n, (double[]){0, 0, 1}, (double[]){ck[0], ck[1], 0.5 * g}, g,
                             1e-12);
            }
        }
        assert_int_equal(n, expect);
        if (pass)
            assert_int_equal(n, 3);
        else
            assert_true(n >= 1 && n < 3);
    }
}

static void test_capacity_and_errors(void **state) {
    (void)state;
    double c5[5][3] = {{0, 0, 0}, {0.1, 0, 0}, {0, 0.1, 0}, {0, 0, 0.1}, {0.1, 0.1, 0.1}};
    double r5[5] = {0.5, 0.5, 0.5, 0.5, 0.5};
    gf_clump t[2] = {clump_template(3, clump_c, clump_r), clump_template(5, c5, r5)};
    gf_clumps cl = {2, t};
    body a, b, s, bx, pl;
    const double o[3] = {0, 0, 0};
    body_set(&a, shape_clump(0, 1.0), &cl, o, q_id);
    body_set(&b, shape_clump(1, 1.0), &cl, (double[]){0.05, 0, 0}, q_id);
    body_set(&s, shape_of(GF_SHAPE_SPHERE, 1.0, 0, 0), NULL, o, q_id);
    body_set(&bx, shape_of(GF_SHAPE_BOX, 1, 1, 1), NULL, o, q_id);
    body_set(&pl, shape_plane(), NULL, (double[]){0, 0, 5}, q_id);
    assert_int_equal(gf_collide_capacity(&s.p, &bx.p), GF_MANIFOLD_MAX);
    assert_int_equal(gf_collide_capacity(&a.p, &bx.p), 3);
    assert_int_equal(gf_collide_capacity(&bx.p, &b.p), 5);
    assert_int_equal(gf_collide_capacity(&a.p, &b.p), 15);
    /* Every member overlapping every member: the capacity is reached. */
    gf_contact_point pt[MAXPTS];
    assert_int_equal(collide(&a.p, &b.p, 1.0, pt), 15);
    assert_int_equal(collide(&b.p, &a.p, 1.0, pt), 15);
    int n = 99;
    /* Too small a buffer. */
    assert_int_equal(gf_collide(&a.p, &b.p, 0.0, pt, 14, &n), GF_ERR_STATE);
    assert_int_equal(n, 0);
    /* Plane with plane has no contact function. */
    body pl2;
    body_set(&pl2, shape_plane(), NULL, o, q_id);
    assert_int_equal(gf_collide(&pl.p, &pl2.p, 0.0, pt, 4, &n), GF_ERR_UNSUPPORTED);
    assert_non_null(strstr(gf_error_message(), "plane"));
    /* Non-finite positions, orientations and margins. */
    const double bad[2] = {NAN, INFINITY};
    for (int k = 0; k < 2; ++k) {
        body_set(&a, shape_of(GF_SHAPE_SPHERE, 1.0, 0, 0), NULL, o, q_id);
        a.p.x[1] = bad[k];
        assert_int_equal(gf_collide(&a.p, &s.p, 0.0, pt, 4, &n), GF_ERR_NUMERIC);
        assert_non_null(strstr(gf_error_message(), "non-finite"));
        assert_int_equal(gf_collide(&bx.p, &a.p, 0.0, pt, 4, &n), GF_ERR_NUMERIC);
        body_set(&a, shape_of(GF_SHAPE_BOX, 1, 1, 1), NULL, o, q_id);
        a.p.q[2] = -bad[k];
        assert_int_equal(gf_collide(&pl.p, &a.p, 0.0, pt, 4, &n), GF_ERR_NUMERIC);
        assert_int_equal(n, 0);
    }
    assert_int_equal(gf_collide(&s.p, &bx.p, NAN, pt, 4, &n), GF_ERR_NUMERIC);
    /* A clump whose template does not exist. */
    body_set(&a, shape_clump(7, 1.0), &cl, o, q_id);
    assert_int_equal(gf_collide(&a.p, &s.p, 0.0, pt, MAXPTS, &n), GF_ERR_INPUT);
    gf_error_clear();
}

/* ---- random configurations: bracketed distances, symmetry, invariance ----------------------- */

enum { MODE_CLOSED, MODE_BOXBOX, MODE_CONVEX };

static gf_shape random_shape(int type, uint64_t *rng, int nclumps) {
    switch (type) {
    case GF_SHAPE_SPHERE:
        return shape_of(type, gf_test_uniform(rng, 0.2, 1.0), 0, 0);
    case GF_SHAPE_BOX:
        return shape_of(type, gf_test_uniform(rng, 0.15, 1.0), gf_test_uniform(rng, 0.15, 1.0),
                        gf_test_uniform(rng, 0.15, 1.0));
    case GF_SHAPE_CAPSULE:
        return shape_of(type, gf_test_uniform(rng, 0.1, 0.6), gf_test_uniform(rng, 0.1, 1.0), 0);
    case GF_SHAPE_CYLINDER:
        return shape_of(type, gf_test_uniform(rng, 0.2, 0.8), gf_test_uniform(rng, 0.1, 1.0), 0);
    case GF_SHAPE_CLUMP:
        return shape_clump((int32_t)gf_test_uniform(rng, 0, nclumps),
                           gf_test_uniform(rng, 0.5, 1.5));
    default:
        return shape_plane();
    }
}

/* Places b (or, for a plane a, a) so that the bodies' separation along a random direction is
 * `target`: configurations near contact, overlapping or not. */
static void random_pair(int ta, int tb, uint64_t *rng, const gf_clumps *cl, body *a, body *b) {
    double xa[3], qa[4], qb[4], e[3];
    for (int k = 0; k < 3; ++k)
        xa[k] = gf_test_uniform(rng, -2.0, 2.0);
    q_random(rng, qa);
    q_random(rng, qb);
    double target = gf_test_uniform(rng, -0.3, 0.25);
    int nc = (int)cl->count;
    if (ta == GF_SHAPE_PLANE) {
        /* built as (b, a) with the plane second, then swapped */
        random_pair(tb, ta, rng, cl, b, a);
        return;
    }
    body_set(a, random_shape(ta, rng, nc), cl, xa, qa);
    if (tb == GF_SHAPE_PLANE) {
        double n[3];
        body_set(b, shape_plane(), NULL, (double[]){0, 0, 0}, qb);
        plane_normal(&b->p, n);
        double mn[3] = {-n[0], -n[1], -n[2]}, t[3];
        double off = -support(&a->p, mn) - target;
        dir_random(rng, t);
        for (int k = 0; k < 3; ++k)
            b->p.x[k] = off * n[k] + t[k] - dot3(t, n) * n[k];
        return;
    }
    dir_random(rng, e);
    body_set(b, random_shape(tb, rng, nc), cl, (double[]){0, 0, 0}, qb);
    double me[3] = {-e[0], -e[1], -e[2]};
    double tau = target + support(&a->p, me) + dot3(e, xa) + support(&b->p, e);
    for (int k = 0; k < 3; ++k)
        b->p.x[k] = xa[k] - tau * e[k];
}

/* Whether the two point sets agree: each point of x matches one of y mapped by (q, t) with its
 * normal times `nsign`. */
static void match_sets(const gf_contact_point *x, int nx, const gf_contact_point *y, int ny,
                       const double q[4], const double t[3], double nsign, double tol) {
    assert_int_equal(nx, ny);
    for (int i = 0; i < ny; ++i) {
        double p[3], n[3];
        rot(q, y[i].p, p);
        rot(q, y[i].n, n);
        for (int k = 0; k < 3; ++k)
            p[k] += t[k];
        int found = 0;
        for (int j = 0; j < nx && !found; ++j) {
            double dp[3] = {x[j].p[0] - p[0], x[j].p[1] - p[1], x[j].p[2] - p[2]};
            found = len3(dp) <= tol && fabs(x[j].gap - y[i].gap) <= tol &&
                    dot3(x[j].n, n) * nsign >= 1.0 - tol;
        }
        if (!found)
            fail_msg("point %d (gap %g) has no counterpart", i, y[i].gap);
    }
}

/* Two boxes: the largest separation along their 15 candidate axes (face normals, edge cross
 * products), in world coordinates from the support functions. */
static double box_axes_separation(const gf_body_pose *a, const gf_body_pose *b) {
    double ax[2][3][3];
    for (int k = 0; k < 3; ++k) {
        double e[3] = {0, 0, 0};
        e[k] = 1.0;
        rot(a->q, e, ax[0][k]);
        rot(b->q, e, ax[1][k]);
    }
    double axes[15][3];
    int na = 0;
    for (int k = 0; k < 3; ++k) {
        memcpy(axes[na++], ax[0][k], sizeof axes[0]);
        memcpy(axes[na++], ax[1][k], sizeof axes[0]);
        for (int j = 0; j < 3; ++j) {
            cross3(ax[0][k], ax[1][j], axes[na]);
            if (len3(axes[na]) > 1e-9) {
                unit3(axes[na]);
                ++na;
            }
        }
    }
    double best = -INFINITY;
    for (int i = 0; i < na; ++i) {
        double m[3] = {-axes[i][0], -axes[i][1], -axes[i][2]};
        best = fmax(best, fmax(separation(a, b, axes[i]), separation(a, b, m)));
    }
    return best;
}

typedef struct {
    int overlap, within, beyond, contact, tight, exact;
} tally;

static void check_random_pair(int ta, int tb, int mode, uint64_t seed, int count, tally *tl) {
    double c4[4][3] = {{0, 0, 0}, {0.6, 0, 0}, {0, 0.5, 0.2}, {-0.2, -0.3, 0.5}};
    double r4[4] = {0.4, 0.3, 0.35, 0.25};
    double c2[2][3] = {{-0.4, 0, 0}, {0.4, 0, 0}};
    double r2[2] = {0.5, 0.3};
    gf_clump t[3] = {clump_template(3, clump_c, clump_r), clump_template(4, c4, r4),
                     clump_template(2, c2, r2)};
    gf_clumps cl = {3, t};
    uint64_t rng = seed;
    const double margin = 0.1;
    static gf_contact_point pt[MAXPTS], sw[MAXPTS], mv[MAXPTS];
    for (int it = 0; it < count; ++it) {
        body a, b;
        random_pair(ta, tb, &rng, &cl, &a, &b);
        pose(&a, a.s.type == GF_SHAPE_CLUMP ? &cl : NULL);
        pose(&b, b.s.type == GF_SHAPE_CLUMP ? &cl : NULL);
        int n = collide(&a.p, &b.p, margin, pt);
        double dir[3];
        double lb0 = distance_lower(&a.p, &b.p, dir), lb = lb0;
        int has_plane = ta == GF_SHAPE_PLANE || tb == GF_SHAPE_PLANE;
        double ub = has_plane ? lb : distance_upper(&a.p, &b.p);
        if (lb > ub + 1e-9)
            fail_msg("reference bracket inverted: %g > %g", lb, ub);
        int at = -1;
        double g = min_gap(pt, n, &at);
        if (ub < -1e-6 && !(g < 0.0))
            fail_msg("types %d,%d config %d: overlap by %g, but gap %g", ta, tb, it, -ub, g);
        if (mode == MODE_CLOSED) {
            const double tol = 1e-9;
            if (n > 0) {
                check_certificates(&a.p, &b.p, pt, n, tol);
                /* The deepest point's normal separates the bodies (for a clump: the member
                 * the point is on, a union not being convex) by its gap: the reported gap is
                 * no more than the true signed distance. */
                gf_shape sha, shb;
                gf_body_pose pa, pb;
                double ya[3], yb[3];
                for (int k = 0; k < 3; ++k) {
                    ya[k] = pt[at].p[k] + 0.5 * g * pt[at].n[k];
                    yb[k] = pt[at].p[k] - 0.5 * g * pt[at].n[k];
                }
                double s = separation(piece_at(&a.p, ya, tol, &sha, &pa),
                                      piece_at(&b.p, yb, tol, &shb, &pb), pt[at].n);
                if (!(g <= s + tol))
                    fail_msg("types %d,%d config %d: gap %.12g but separation %.12g along its "
                             "normal",
                             ta, tb, it, g, s);
                if (a.s.type != GF_SHAPE_CLUMP && b.s.type != GF_SHAPE_CLUMP)
                    lb = fmax(lb, s);
                /* ... and no less than the true signed distance. */
                if (!(g >= lb - tol) || !(g <= ub + tol))
                    fail_msg("types %d,%d config %d: gap %.12g outside [%.12g, %.12g]", ta, tb, it,
                             g, lb, ub);
            }
            if (ub < margin - tol && n == 0)
                fail_msg("types %d,%d config %d: no point, but distance <= %g", ta, tb, it, ub);
            if (lb >= margin + tol && n != 0)
                fail_msg("types %d,%d config %d: %d points, but distance >= %g", ta, tb, it, n, lb);
        } else if (mode == MODE_BOXBOX) {
            /* The largest separation over the 15 axes is the signed distance of boxes that
             * overlap and a lower bound of the distance of boxes apart. The code may prefer a
             * face axis within its bias. */
            double sat = box_axes_separation(&a.p, &b.p);
            const double tol = 1e-7, bias = 2e-3 * fabs(sat) + 1e-4;
            /* Boxes apart: where the separating axes stop short of the distance, the manifold
             * clips the features against a face up to 2 degrees off the axis and may measure
             * a little more than the distance (at most 2e-4 in 20000 configurations). */
            const double apart = 5e-4;
            if (sat > lb0 + tol || (sat < 0.0 && sat < lb0 - 1e-3))
                fail_msg("config %d: separating axes %.12g against a direction search %.12g", it,
                         sat, lb0);
            if (n > 0) {
                if (g <= 0.0)
                    check_certificates(&a.p, &b.p, pt, n, tol);
                if (!(g >= sat - bias - tol) || !(g <= ub + apart) ||
                    (sat < 0.0 && !(g <= sat + tol)))
                    fail_msg("config %d: gap %.12g, separating axes %.12g, upper bound %.12g", it,
                             g, sat, ub);
            }
            if (ub < margin - tol && n == 0)
                fail_msg("config %d: no point, but distance <= %g", it, ub);
            if (sat >= margin && n != 0)
                fail_msg("config %d: %d points, but distance >= %g", it, n, sat);
        } else {
            /* collide_convex.c's own tests hold its accuracy (a cylinder's cap is a 12-gon
             * there, 0.034 r inside the rim); here: the dispatch and the signs. */
            const double tol = 0.03;
            if (n > 0 && (!(g >= lb - tol) || !(g <= ub + tol)))
                fail_msg("types %d,%d config %d: gap %.12g outside [%.12g, %.12g]", ta, tb, it, g,
                         lb, ub);
            if (ub < margin - tol && n == 0)
                fail_msg("types %d,%d config %d: no point, but distance <= %g", ta, tb, it, ub);
            if (lb >= margin + 1e-6 && n != 0)
                fail_msg("types %d,%d config %d: %d points, but distance >= %g", ta, tb, it, n, lb);
        }
        tl->overlap += ub < -1e-6;
        tl->within += lb > 0.0 && ub < margin;
        tl->beyond += lb >= margin;
        if (n > 0 && a.s.type != GF_SHAPE_CLUMP && b.s.type != GF_SHAPE_CLUMP) {
            tl->contact++;
            tl->tight += fabs(g - lb0) <= 1e-4;
            tl->exact += fabs(g - lb0) <= 1e-6;
        }

        /* Swapping a and b: normals flip, the same gaps (and, but for box pairs, whose
         * reference face may change, the same points). */
        int ns = collide(&b.p, &a.p, margin, sw);
        assert_int_equal(ns, n);
        if (n > 0)
            GF_ASSERT_NEAR(min_gap(sw, ns, NULL), g, mode == MODE_CONVEX ? 0.03 : 1e-9);
        if (mode == MODE_CLOSED)
            match_sets(pt, n, sw, ns, q_id, (double[]){0, 0, 0}, -1.0, 1e-9);

        /* A common rigid motion moves the points with the bodies. */
        motion m = motion_random(seed + (uint64_t)it);
        body ma = a, mb = b;
        pose(&ma, a.p.clumps);
        pose(&mb, b.p.clumps);
        move_body(&m, &ma);
        move_body(&m, &mb);
        int nm = collide(&ma.p, &mb.p, margin, mv);
        assert_int_equal(nm, n);
        if (n > 0)
            GF_ASSERT_NEAR(min_gap(mv, nm, NULL), g, mode == MODE_CONVEX ? 0.03 : 1e-9);
        /* (Boxes apart along a separating axis that is not their closest direction get a
         * point from supporting vertices, which are not unique on a face.) */
        if (mode == MODE_CLOSED || (mode == MODE_BOXBOX && g <= 0.0))
            match_sets(mv, nm, pt, n, m.q, m.t, 1.0, 1e-8);
    }
}

static const int closed_pairs[][2] = {
    {GF_SHAPE_SPHERE, GF_SHAPE_SPHERE},   {GF_SHAPE_SPHERE, GF_SHAPE_BOX},
    {GF_SHAPE_BOX, GF_SHAPE_SPHERE},      {GF_SHAPE_SPHERE, GF_SHAPE_CAPSULE},
    {GF_SHAPE_CAPSULE, GF_SHAPE_SPHERE},  {GF_SHAPE_SPHERE, GF_SHAPE_CYLINDER},
    {GF_SHAPE_CYLINDER, GF_SHAPE_SPHERE}, {GF_SHAPE_SPHERE, GF_SHAPE_PLANE},
    {GF_SHAPE_PLANE, GF_SHAPE_SPHERE},    {GF_SHAPE_CAPSULE, GF_SHAPE_CAPSULE},
    {GF_SHAPE_CAPSULE, GF_SHAPE_PLANE},   {GF_SHAPE_PLANE, GF_SHAPE_CAPSULE},
    {GF_SHAPE_BOX, GF_SHAPE_PLANE},       {GF_SHAPE_PLANE, GF_SHAPE_BOX},
    {GF_SHAPE_CYLINDER, GF_SHAPE_PLANE},  {GF_SHAPE_PLANE, GF_SHAPE_CYLINDER},
    {GF_SHAPE_CLUMP, GF_SHAPE_SPHERE},    {GF_SHAPE_SPHERE, GF_SHAPE_CLUMP},
    {GF_SHAPE_CLUMP, GF_SHAPE_BOX},       {GF_SHAPE_BOX, GF_SHAPE_CLUMP},
    {GF_SHAPE_CLUMP, GF_SHAPE_CAPSULE},   {GF_SHAPE_CLUMP, GF_SHAPE_CYLINDER},
    {GF_SHAPE_CLUMP, GF_SHAPE_CLUMP},     {GF_SHAPE_CLUMP, GF_SHAPE_PLANE},
    {GF_SHAPE_PLANE, GF_SHAPE_CLUMP},
};

static void test_random_closed_forms(void **state) {
    (void)state;
    tally tl = {0, 0, 0, 0, 0, 0};
    int per = 60, total = 0;
    for (size_t i = 0; i < sizeof closed_pairs / sizeof closed_pairs[0]; ++i, total += per)
        check_random_pair(closed_pairs[i][0], closed_pairs[i][1], MODE_CLOSED, 1000 + 97 * i, per,
                          &tl);
    printf("closed forms: %d configurations, %d overlapping, %d apart within the margin, %d "
           "beyond; of %d convex pairs in contact, %d gaps within 1e-4 of the direction search, %d "
           "within 1e-6\n",
           total, tl.overlap, tl.within, tl.beyond, tl.contact, tl.tight, tl.exact);
    /* The test covers every regime, and the direction search alone finds the gap the code
     * reports (it is a lower bound, which a wrong normal or gap would exceed). */
    assert_true(tl.overlap > total / 5 && tl.within > total / 10 && tl.beyond > total / 10);
    assert_true(tl.tight > 0.98 * tl.contact && tl.exact > 0.9 * tl.contact);
}

static void test_random_box_box(void **state) {
    (void)state;
    tally tl = {0, 0, 0, 0, 0, 0};
    check_random_pair(GF_SHAPE_BOX, GF_SHAPE_BOX, MODE_BOXBOX, 77, 300, &tl);
    printf("box-box: %d overlapping, %d apart within the margin, %d beyond\n", tl.overlap,
           tl.within, tl.beyond);
    assert_true(tl.overlap > 30 && tl.within > 20);
}

static void test_random_convex(void **state) {
    (void)state;
    static const int pairs[][2] = {{GF_SHAPE_BOX, GF_SHAPE_CAPSULE},
                                   {GF_SHAPE_CAPSULE, GF_SHAPE_BOX},
                                   {GF_SHAPE_BOX, GF_SHAPE_CYLINDER},
                                   {GF_SHAPE_CYLINDER, GF_SHAPE_CAPSULE},
                                   {GF_SHAPE_CYLINDER, GF_SHAPE_CYLINDER}};
    tally tl = {0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i)
        check_random_pair(pairs[i][0], pairs[i][1], MODE_CONVEX, 500 + 13 * i, 40, &tl);
    assert_true(tl.overlap > 20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_sphere),
        cmocka_unit_test(test_sphere_plane),
        cmocka_unit_test(test_sphere_box),
        cmocka_unit_test(test_sphere_capsule),
        cmocka_unit_test(test_sphere_cylinder),
        cmocka_unit_test(test_capsule_capsule),
        cmocka_unit_test(test_capsule_plane),
        cmocka_unit_test(test_box_plane),
        cmocka_unit_test(test_box_on_box),
        cmocka_unit_test(test_box_box_face_beside),
        cmocka_unit_test(test_cylinder_plane),
        cmocka_unit_test(test_cylinder_plane_turning),
        cmocka_unit_test(test_cylinder_face_turning),
        cmocka_unit_test(test_sphere_box_turning),
        cmocka_unit_test(test_clump_box_turning),
        cmocka_unit_test(test_capsule_plane_turning),
        cmocka_unit_test(test_clump_plane),
        cmocka_unit_test(test_capacity_and_errors),
        cmocka_unit_test(test_random_closed_forms),
        cmocka_unit_test(test_random_box_box),
        cmocka_unit_test(test_random_convex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
