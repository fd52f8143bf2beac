/* The contact manifold of two convex bodies, given their contact normal.
 *
 * Each body offers the feature that faces the other along the normal: a face (box face,
 * cylinder cap, plane), a segment (box edge, cylinder side line, capsule axis) or a point (box
 * corner, cylinder rim point, capsule end, sphere). The feature of higher dimension is the
 * reference, the other one the incident feature; the incident feature is clipped against the
 * prism the reference face sweeps along the normal, and every kept point's gap is its distance
 * to the reference plane along the normal. Two segments meet in their overlap when parallel and
 * in their closest points otherwise. This is what keeps a box resting on its face from rocking:
 * four points, not the one deepest point a GJK/EPA query alone gives.
 *
 * Nothing here allocates: the features and the candidate points live on the stack. */
#include <math.h>
#include <string.h>

#include "shape/collide_internal.h"
#include "core/vec.h"

/* A feature is taken as a face when its normal lies within FEATURE_SIN (the sine of 2 degrees)
 * of the contact normal, and as a segment when its direction is within that angle of
 * perpendicular. A body that rocks by less than 2 degrees so keeps its whole face as support,
 * the lifted points carrying their own (positive) gaps, instead of flipping from one edge to the
 * other. Beyond that angle an edge or face still joins when its far end lies within the margin
 * (its rise, the edge's length times the sine, below the margin): the margin is what the bodies
 * may close within a step, and a box spinning at 180 rad/s on a hopper pour turned the far corner
 * of an edge 3 degrees off a face 0.13 mm into it within one step, a corner no contact held. */
#define FEATURE_SIN 0.0349
/* When the features at that angle miss the deepest pair of points along n (the face chosen is
 * not the one that touches), they are taken again at this one (0.06 degrees): what is a face
 * or an edge then is one for any normal but a grossly wrong one. */
#define FEATURE_SIN_EXACT 1e-3
/* The widest angle (its sine, 10 degrees) of an edge at which the margin still makes a face or a
 * segment of a feature (a box face so tilted about both its edges is 14 degrees off): a face
 * taken becomes the reference and its normal the manifold's, so its angle to the detected normal
 * is bounded. */
#define FEATURE_SIN_REACH 0.1736
/* A cylinder cap enters as the regular 12-gon inscribed in its rim. Its vertices and every point
 * clipped from it lie on the true cap, so no point lies outside the body; the rim is under-
 * estimated by at most r (1 - cos 15 deg) = 0.034 r between vertices. One vertex is turned towards
 * the deepest rim point, so that a tilted cylinder's deepest point, its pivot, is exact. Twelve
 * rather than eight vertices halve that error for little cost: the result is reduced to
 * GF_MANIFOLD_MAX points anyway. */
#define CAP_SIDES 12
/* Clipping a convex n-gon by m half-planes leaves at most n + m vertices. */
#define CANDIDATE_MAX (2 * CAP_SIDES + 8)

enum { FEAT_POINT = 0, FEAT_SEGMENT = 1, FEAT_FACE = 2, FEAT_PLANE = 3 };

typedef struct {
    int dim; /* FEAT_* */
    int nv;  /* vertices in v: 1, 2, a face's polygon, or 1 point of a plane */
    double v[CAP_SIDES][3];
    double m[3]; /* outward unit normal of a face or a plane */
    double area; /* of a face */
    int disc;    /* a cylinder's cap: the disc of `radius` around `centre`, the polygon inside */
    double centre[3], radius;
} feature;

typedef struct {
    double p[3];
    double gap;
    double n[3]; /* the normal its gap is measured along */
    int first;   /* a point of the first features beside the final ones' (gf_manifold_build) */
} candidate;

/* cos and sin of k * 30 degrees */
static const double cap_cos[CAP_SIDES] = {
    1.0,  0.86602540378443865,  0.5,  0.0, -0.5, -0.86602540378443865,
    -1.0, -0.86602540378443865, -0.5, 0.0, 0.5,  0.86602540378443865};
static const double cap_sin[CAP_SIDES] = {
    0.0, 0.5,  0.86602540378443865,  1.0,  0.86602540378443865,  0.5,
    0.0, -0.5, -0.86602540378443865, -1.0, -0.86602540378443865, -0.5};

static void to_world(const gf_body_pose *p, const double local[3], double out[3]) {
    gf_quat_rotate(p->q, local, out);
    out[0] += p->x[0];
    out[1] += p->x[1];
    out[2] += p->x[2];
}

static void set_point(feature *f, const gf_body_pose *p, const double local[3], double round,
                      const double d[3]) {
    f->dim = FEAT_POINT;
    f->nv = 1;
    to_world(p, local, f->v[0]);
    gf_axpy(round, d, f->v[0]);
}

static void set_segment(feature *f, const gf_body_pose *p, const double e0[3], const double e1[3],
                        double round, const double d[3]) {
    f->dim = FEAT_SEGMENT;
    f->nv = 2;
    to_world(p, e0, f->v[0]);
    to_world(p, e1, f->v[1]);
    gf_axpy(round, d, f->v[0]);
    gf_axpy(round, d, f->v[1]);
}

static void set_face_normal(feature *f, const gf_body_pose *p, int axis, double sign) {
    double e[3] = {0.0, 0.0, 0.0};
    e[axis] = sign;
    f->dim = FEAT_FACE;
    gf_quat_rotate(p->q, e, f->m);
}

/* Whether an edge of this length, at the angle of sine s to the plane normal to the direction
 * of the feature, lies flat: within the angle sinmax, or its far end within reach (the margin)
 * at an angle up to FEATURE_SIN_REACH. */
static int lies_flat(double s, double length, double sinmax, double reach) {
    return s <= sinmax || (s <= FEATURE_SIN_REACH && s * length < reach);
}

static void box_feature(const gf_body_pose *p, const double u[3], const double d[3], double sinmax,
                        double cosmin, double reach, feature *f) {
    const double *h = p->shape->dim;
    double au[3] = {fabs(u[0]), fabs(u[1]), fabs(u[2])};
    int k = au[0] >= au[1] ? (au[0] >= au[2] ? 0 : 2) : (au[1] >= au[2] ? 1 : 2);
    int kj = (k + 1) % 3, kl = (k + 2) % 3;
    int flat_j = lies_flat(au[kj], 2.0 * h[kj], sinmax, reach);
    int flat_l = lies_flat(au[kl], 2.0 * h[kl], sinmax, reach);
    if (au[k] >= cosmin || (flat_j && flat_l)) {
        int j = (k + 1) % 3, l = (k + 2) % 3;
        double s = copysign(1.0, u[k]);
        /* counter-clockwise about e_k, clockwise about -e_k: clipping works with either */
        static const double sj[4] = {1.0, -1.0, -1.0, 1.0}, sl[4] = {1.0, 1.0, -1.0, -1.0};
        for (int c = 0; c < 4; ++c) {
            double loc[3];
            loc[k] = s * h[k];
            loc[j] = sj[c] * h[j];
            loc[l] = sl[c] * h[l];
            to_world(p, loc, f->v[c]);
        }
        f->nv = 4;
        f->area = 4.0 * h[j] * h[l];
        set_face_normal(f, p, k, s);
        return;
    }
    int e = au[0] <= au[1] ? (au[0] <= au[2] ? 0 : 2) : (au[1] <= au[2] ? 1 : 2);
    if (!(au[e] <= sinmax) && (flat_j || flat_l))
        e = flat_j ? kj : kl;
    double loc[3] = {copysign(h[0], u[0]), copysign(h[1], u[1]), copysign(h[2], u[2])};
    if (au[e] <= sinmax || flat_j || flat_l) {
        double loc1[3] = {loc[0], loc[1], loc[2]};
        loc[e] = h[e];
        loc1[e] = -h[e];
        set_segment(f, p, loc, loc1, 0.0, d);
    } else {
        set_point(f, p, loc, 0.0, d);
    }
}

static void cylinder_feature(const gf_body_pose *p, const double u[3], const double d[3],
                             double sinmax, double cosmin, double reach, feature *f) {
    double r = p->shape->dim[0], h = p->shape->dim[1];
    double rho = sqrt(u[0] * u[0] + u[1] * u[1]);
    /* the direction of the deepest rim point; any one when the axis is along d */
    double c0 = rho > 1e-12 ? u[0] / rho : 1.0, s0 = rho > 1e-12 ? u[1] / rho : 0.0;
    double z = copysign(h, u[2]);
    if (fabs(u[2]) >= cosmin || lies_flat(rho, 2.0 * r, 0.0, reach)) {
        for (int k = 0; k < CAP_SIDES; ++k) {
            double loc[3] = {r * (c0 * cap_cos[k] - s0 * cap_sin[k]),
                             r * (s0 * cap_cos[k] + c0 * cap_sin[k]), z};
            to_world(p, loc, f->v[k]);
        }
        f->nv = CAP_SIDES;
        f->area = 0.5 * CAP_SIDES * r * r * cap_sin[1];
        set_face_normal(f, p, 2, copysign(1.0, u[2]));
        double centre[3] = {0.0, 0.0, z};
        to_world(p, centre, f->centre);
        f->radius = r;
        f->disc = 1;
        return;
    }
    double loc[3] = {r * c0, r * s0, z};
    if (lies_flat(fabs(u[2]), 2.0 * h, sinmax, reach)) {
        double loc1[3] = {loc[0], loc[1], -h};
        loc[2] = h;
        set_segment(f, p, loc, loc1, 0.0, d);
    } else {
        set_point(f, p, loc, 0.0, d);
    }
}

/* A triangle (two-sided) offers its face to directions near its normal (either side), else the
 * edge whose corners both lie within the angle sinmax of the farthest along u, else its
 * farthest corner. */
static void triangle_feature(const gf_body_pose *p, const double u[3], const double d[3],
                             double sinmax, double cosmin, double reach, feature *f) {
    double v[3][3], h[3];
    gf_shape_triangle_corners(p->shape, v);
    for (int k = 0; k < 3; ++k)
        h[k] = gf_dot(v[k], u);
    int top = h[0] >= h[1] ? (h[0] >= h[2] ? 0 : 2) : (h[1] >= h[2] ? 1 : 2);
    int flat[3], near = 1;
    for (int k = 0; k < 3; ++k) {
        double e[3] = {v[k][0] - v[top][0], v[k][1] - v[top][1], v[k][2] - v[top][2]};
        double len = gf_norm(e);
        flat[k] = k != top && len > 0.0 && lies_flat((h[top] - h[k]) / len, len, sinmax, reach);
        near = near && h[top] - h[k] < reach;
    }
    if (fabs(u[2]) >= cosmin ||
        (near && 1.0 - u[2] * u[2] <= FEATURE_SIN_REACH * FEATURE_SIN_REACH)) {
        for (int k = 0; k < 3; ++k)
            to_world(p, v[k], f->v[k]);
        f->nv = 3;
        f->area = 0.5 * p->shape->dim[0] * p->shape->dim[2];
        set_face_normal(f, p, 2, copysign(1.0, u[2]));
        return;
    }
    int next = -1;
    for (int k = 0; k < 3; ++k)
        if (k != top && flat[k] && (next < 0 || h[k] > h[next]))
            next = k;
    if (next >= 0)
        set_segment(f, p, v[top], v[next], 0.0, d);
    else
        set_point(f, p, v[top], 0.0, d);
}

/* The feature of body p facing the unit world direction d: a face whose normal is within the
 * angle of sine sinmax of d, else a segment perpendicular to d within that angle, else a point;
 * faces and segments whose far ends lie within reach of the supporting point join too (see
 * FEATURE_SIN). */
static gf_status feature_of(const gf_body_pose *p, const double d[3], double sinmax, double reach,
                            feature *f) {
    const double cosmin = sqrt(1.0 - sinmax * sinmax);
    const double *dim = p->shape->dim;
    double u[3];
    f->disc = 0;
    gf_quat_rotate_inv(p->q, d, u);
    switch (p->shape->type) {
    case GF_SHAPE_SPHERE: {
        const double c[3] = {0.0, 0.0, 0.0};
        set_point(f, p, c, dim[0], d);
        return GF_OK;
    }
    case GF_SHAPE_CAPSULE: {
        double e0[3] = {0.0, 0.0, dim[1]}, e1[3] = {0.0, 0.0, -dim[1]};
        if (lies_flat(fabs(u[2]), 2.0 * dim[1], sinmax, reach)) {
            set_segment(f, p, e0, e1, dim[0], d);
        } else {
            e0[2] = copysign(dim[1], u[2]);
            set_point(f, p, e0, dim[0], d);
        }
        return GF_OK;
    }
    case GF_SHAPE_BOX:
        box_feature(p, u, d, sinmax, cosmin, reach, f);
        return GF_OK;
    case GF_SHAPE_CYLINDER:
        cylinder_feature(p, u, d, sinmax, cosmin, reach, f);
        return GF_OK;
    case GF_SHAPE_TRIANGLE:
        triangle_feature(p, u, d, sinmax, cosmin, reach, f);
        return GF_OK;
    case GF_SHAPE_PLANE:
        f->nv = 1;
        memcpy(f->v[0], p->x, sizeof f->v[0]);
        set_face_normal(f, p, 2, 1.0);
        f->dim = FEAT_PLANE;
        return GF_OK;
    default:
        return GF_ERROR(GF_ERR_UNSUPPORTED, "no contact manifold for %s bodies",
                        gf_shape_name((gf_shape_type)p->shape->type));
    }
}

/* Side planes of a reference face: each holds one edge and the normal n; w[k] points inwards. */
static int side_planes(const feature *ref, const double n[3], double w[][3]) {
    double centre[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < ref->nv; ++k)
        gf_axpy(1.0 / ref->nv, ref->v[k], centre);
    for (int k = 0; k < ref->nv; ++k) {
        const double *q0 = ref->v[k], *q1 = ref->v[(k + 1) % ref->nv];
        double e[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]};
        gf_cross(e, n, w[k]);
        double len = gf_norm(w[k]);
        double c[3] = {centre[0] - q0[0], centre[1] - q0[1], centre[2] - q0[2]};
        double s = gf_dot(w[k], c) >= 0.0 ? 1.0 / len : -1.0 / len;
        w[k][0] *= s;
        w[k][1] *= s;
        w[k][2] *= s;
    }
    return ref->nv;
}

/* Signed distance of p inside the side plane through q with inward normal w. */
static double side_dist(const double w[3], const double q[3], const double p[3]) {
    double e[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    return gf_dot(w, e);
}

/* Where the segment from a point at side distance fa to one at fb crosses the side plane. */
static double crossing(double fa, double fb) {
    return fmin(fmax(fa / (fa - fb), 0.0), 1.0);
}

static void lerp(const double a[3], const double b[3], double t, double out[3]) {
    out[0] = a[0] + t * (b[0] - a[0]);
    out[1] = a[1] + t * (b[1] - a[1]);
    out[2] = a[2] + t * (b[2] - a[2]);
}

/* Sutherland-Hodgman: the incident polygon clipped by the reference face's side planes. */
static int clip_polygon(const feature *ref, const double w[][3], int nw, const feature *inc,
                        double tol, double out[][3]) {
    double buf[CANDIDATE_MAX][3];
    double(*src)[3] = out, (*dst)[3] = buf;
    int ns = inc->nv;
    memcpy(src, inc->v, (size_t)ns * sizeof src[0]);
    for (int k = 0; k < nw && ns > 0; ++k) {
        int nd = 0;
        const double *q = ref->v[k];
        const double *prev = src[ns - 1];
        double fp = side_dist(w[k], q, prev);
        for (int i = 0; i < ns; ++i) {
            const double *cur = src[i];
            double fc = side_dist(w[k], q, cur);
            /* points within tol outside count as inside (a rim on the rim stays); a convex
             * polygon crosses a line twice at most, the bound guards round-off */
            if ((fc >= -tol) != (fp >= -tol) && nd < CANDIDATE_MAX)
                lerp(prev, cur, crossing(fp, fc), dst[nd++]);
            if (fc >= -tol && nd < CANDIDATE_MAX)
                memcpy(dst[nd++], cur, sizeof dst[0]);
            prev = cur;
            fp = fc;
        }
        double(*t)[3] = src;
        src = dst;
        dst = t;
        ns = nd;
    }
    if (src != out)
        memcpy(out, src, (size_t)ns * sizeof out[0]);
    return ns;
}

/* Cyrus-Beck: the incident segment clipped by the side planes; 0, 1 or 2 points. */
static int clip_segment(const feature *ref, const double w[][3], int nw, const double a[3],
                        const double b[3], double tol, double out[][3]) {
    double t0 = 0.0, t1 = 1.0;
    for (int k = 0; k < nw; ++k) {
        double fa = side_dist(w[k], ref->v[k], a), fb = side_dist(w[k], ref->v[k], b);
        if (fa < -tol && fb < -tol)
            return 0;
        if (fa < -tol)
            t0 = fmax(t0, crossing(fa, fb));
        else if (fb < -tol)
            t1 = fmin(t1, crossing(fa, fb));
    }
    if (t0 > t1)
        return 0;
    lerp(a, b, t0, out[0]);
    lerp(a, b, t1, out[1]);
    double e[3] = {out[1][0] - out[0][0], out[1][1] - out[0][1], out[1][2] - out[0][2]};
    return gf_norm(e) > tol ? 2 : 1;
}

/* p - centre with its part along n removed: p's offset from a disc's centre as seen along n. */
static void in_plane(const double p[3], const double centre[3], const double n[3], double e[3]) {
    for (int k = 0; k < 3; ++k)
        e[k] = p[k] - centre[k];
    gf_axpy(-gf_dot(e, n), n, e);
}

/* A point or segment against a cylinder cap: clipped by the true disc, not its polygon, so that
 * a sphere or an edge resting near the rim is not lost between the polygon and the circle. */
static int clip_disc(const feature *ref, const feature *inc, const double n[3], double tol,
                     double out[][3]) {
    double r = ref->radius + tol, f[3];
    in_plane(inc->v[0], ref->centre, n, f);
    if (inc->dim == FEAT_POINT) {
        if (gf_dot(f, f) > r * r)
            return 0;
        memcpy(out[0], inc->v[0], sizeof out[0]);
        return 1;
    }
    /* |f + t d|^2 <= r^2 for t in [0, 1] */
    double d[3] = {inc->v[1][0] - inc->v[0][0], inc->v[1][1] - inc->v[0][1],
                   inc->v[1][2] - inc->v[0][2]};
    gf_axpy(-gf_dot(d, n), n, d);
    double qa = gf_dot(d, d), qb = gf_dot(f, d), qc = gf_dot(f, f) - r * r;
    double t0 = 0.0, t1 = 1.0;
    if (qa > 0.0) {
        double disc = qb * qb - qa * qc;
        if (disc < 0.0)
            return 0;
        double sq = sqrt(disc);
        t0 = fmax(t0, (-qb - sq) / qa);
        t1 = fmin(t1, (-qb + sq) / qa);
    } else if (qc > 0.0) {
        return 0;
    }
    if (t0 > t1)
        return 0;
    lerp(inc->v[0], inc->v[1], t0, out[0]);
    lerp(inc->v[0], inc->v[1], t1, out[1]);
    double e[3] = {out[1][0] - out[0][0], out[1][1] - out[0][1], out[1][2] - out[0][2]};
    return gf_norm(e) > tol ? 2 : 1;
}

/* The incident feature against a reference face or plane: clipped points with their gaps. */
static int face_contacts(const feature *ref, const feature *inc, int ref_is_a, const double n[3],
                         double tol, candidate *c) {
    double pts[CANDIDATE_MAX][3];
    int np;
    if (ref->dim == FEAT_PLANE) {
        np = inc->nv;
        memcpy(pts, inc->v, (size_t)np * sizeof pts[0]);
    } else if (ref->disc && inc->dim != FEAT_FACE) {
        np = clip_disc(ref, inc, n, tol, pts);
    } else {
        double w[CAP_SIDES][3];
        int nw = side_planes(ref, n, w);
        if (inc->dim == FEAT_SEGMENT) {
            np = clip_segment(ref, w, nw, inc->v[0], inc->v[1], tol, pts);
        } else {
            np = clip_polygon(ref, w, nw, inc, tol, pts);
        }
    }
    /* gap = n.(p_a - p_b): the incident point against the reference plane */
    double s = ref_is_a ? -1.0 : 1.0;
    for (int i = 0; i < np; ++i) {
        double e[3] = {pts[i][0] - ref->v[0][0], pts[i][1] - ref->v[0][1],
                       pts[i][2] - ref->v[0][2]};
        double gap = s * gf_dot(n, e);
        c[i].gap = gap;
        memcpy(c[i].p, pts[i], sizeof c[i].p);
        gf_axpy(-0.5 * s * gap, n, c[i].p);
    }
    return np;
}

/* Parameters (s on p0-p1, t on q0-q1) of the closest points of two segments (Ericson, Real-Time
 * Collision Detection 5.1.9), in the plane normal to n: coordinates along n are dropped, so the
 * segments are taken as seen along the normal. */
static void closest_params(const double p0[3], const double p1[3], const double q0[3],
                           const double q1[3], const double n[3], double *s, double *t) {
    double d1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
    double d2[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]};
    double r[3] = {p0[0] - q0[0], p0[1] - q0[1], p0[2] - q0[2]};
    gf_axpy(-gf_dot(d1, n), n, d1);
    gf_axpy(-gf_dot(d2, n), n, d2);
    gf_axpy(-gf_dot(r, n), n, r);
    double a = gf_dot(d1, d1), e = gf_dot(d2, d2), f = gf_dot(d2, r);
    double sc, tc;
    if (a <= 0.0 && e <= 0.0) {
        sc = tc = 0.0;
    } else if (a <= 0.0) {
        sc = 0.0;
        tc = fmin(fmax(f / e, 0.0), 1.0);
    } else {
        double cc = gf_dot(d1, r);
        if (e <= 0.0) {
            tc = 0.0;
            sc = fmin(fmax(-cc / a, 0.0), 1.0);
        } else {
            double b = gf_dot(d1, d2), den = a * e - b * b;
            sc = den > 0.0 ? fmin(fmax((b * f - cc * e) / den, 0.0), 1.0) : 0.0;
            tc = (b * sc + f) / e;
            if (tc < 0.0) {
                tc = 0.0;
                sc = fmin(fmax(-cc / a, 0.0), 1.0);
            } else if (tc > 1.0) {
                tc = 1.0;
                sc = fmin(fmax((b - cc) / a, 0.0), 1.0);
            }
        }
    }
    *s = sc;
    *t = tc;
}

static void pair_point(const double pa[3], const double pb[3], const double n[3], candidate *c) {
    double e[3] = {pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]};
    c->gap = gf_dot(n, e);
    lerp(pa, pb, 0.5, c->p);
}

/* Points and segments against each other (neither a face): closest points along the normal, or
 * the two ends of the overlap of parallel segments. */
static int edge_contacts(const feature *fa, const feature *fb, const double n[3], double tol,
                         candidate *c) {
    const double *a0 = fa->v[0], *a1 = fa->v[fa->nv - 1];
    const double *b0 = fb->v[0], *b1 = fb->v[fb->nv - 1];
    if (fa->dim == FEAT_SEGMENT && fb->dim == FEAT_SEGMENT) {
        double da[3] = {a1[0] - a0[0], a1[1] - a0[1], a1[2] - a0[2]};
        double db[3] = {b1[0] - b0[0], b1[1] - b0[1], b1[2] - b0[2]};
        gf_axpy(-gf_dot(da, n), n, da);
        gf_axpy(-gf_dot(db, n), n, db);
        double la = gf_norm(da), lb = gf_norm(db), x[3];
        gf_cross(da, db, x);
        if (la > tol && lb > tol && fabs(gf_dot(x, n)) <= FEATURE_SIN * la * lb) {
            /* parallel: b's ends as parameters along a, then the overlap of [0, 1] with them */
            double rb0[3] = {b0[0] - a0[0], b0[1] - a0[1], b0[2] - a0[2]};
            double rb1[3] = {b1[0] - a0[0], b1[1] - a0[1], b1[2] - a0[2]};
            double s0 = gf_dot(rb0, da) / (la * la), s1 = gf_dot(rb1, da) / (la * la);
            double lo = fmax(0.0, fmin(s0, s1)), hi = fmin(1.0, fmax(s0, s1));
            if (hi >= lo && (hi - lo) * la > tol) {
                double ends[2] = {lo, hi};
                for (int k = 0; k < 2; ++k) {
                    double pa[3], pb[3];
                    lerp(a0, a1, ends[k], pa);
                    lerp(b0, b1, (ends[k] - s0) / (s1 - s0), pb);
                    pair_point(pa, pb, n, &c[k]);
                }
                return 2;
            }
        }
    }
    double s, t, pa[3], pb[3];
    closest_params(a0, a1, b0, b1, n, &s, &t);
    lerp(a0, a1, s, pa);
    lerp(b0, b1, t, pb);
    pair_point(pa, pb, n, c);
    return 1;
}

/* Twice the area of triangle (a, b, c) seen along n. */
static double tri_area2(const double a[3], const double b[3], const double c[3],
                        const double n[3]) {
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double x[3];
    gf_cross(e1, e2, x);
    return fabs(gf_dot(x, n));
}

/* Twice the area of the quadrilateral with diagonals (a, c) and (b, d), seen along n. */
static double quad_area2(const double a[3], const double b[3], const double c[3], const double d[3],
                         const double n[3]) {
    double e1[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double e2[3] = {d[0] - b[0], d[1] - b[1], d[2] - b[2]};
    double x[3];
    gf_cross(e1, e2, x);
    return fabs(gf_dot(x, n));
}

/* At most GF_MANIFOLD_MAX of the candidates: the deepest, the one farthest from it, the one
 * spanning the largest triangle with those, and the one that enlarges their hull most. Written
 * to out with the deepest first; returns their number. */
static int reduce(const candidate *c, int nc, const double n[3], double tol,
                  gf_contact_point *out) {
    int pick[GF_MANIFOLD_MAX];
    int np = 0;
    /* the deepest point of the final features first: its normal is the manifold's */
    int i0 = 0;
    for (int i = 1; i < nc; ++i)
        if (c[i].first < c[i0].first || (c[i].first == c[i0].first && c[i].gap < c[i0].gap))
            i0 = i;
    pick[np++] = i0;
    if (nc > 1) {
        int i1 = -1;
        double best = tol * tol;
        for (int i = 0; i < nc; ++i) {
            double e[3] = {c[i].p[0] - c[i0].p[0], c[i].p[1] - c[i0].p[1], c[i].p[2] - c[i0].p[2]};
            gf_axpy(-gf_dot(e, n), n, e);
            double d2 = gf_dot(e, e);
            if (d2 > best) {
                best = d2;
                i1 = i;
            }
        }
        if (i1 >= 0) {
            pick[np++] = i1;
            double len = sqrt(best);
            int i2 = -1;
            double area = tol * len;
            for (int i = 0; i < nc; ++i) {
                double a2 = tri_area2(c[i0].p, c[i1].p, c[i].p, n);
                if (a2 > area) {
                    area = a2;
                    i2 = i;
                }
            }
            if (i2 >= 0) {
                pick[np++] = i2;
                /* the hull of four points: the triangle, or the largest of the three
                 * quadrilaterals they form when the fourth lies outside it */
                int i3 = -1;
                double hull = area + tol * len;
                for (int i = 0; i < nc; ++i) {
                    const double *p0 = c[i0].p, *p1 = c[i1].p, *p2 = c[i2].p, *p3 = c[i].p;
                    double h =
                        fmax(quad_area2(p0, p1, p2, p3, n),
                             fmax(quad_area2(p0, p1, p3, p2, n), quad_area2(p0, p3, p1, p2, n)));
                    if (h > hull) {
                        hull = h;
                        i3 = i;
                    }
                }
                if (i3 >= 0)
                    pick[np++] = i3;
            }
        }
    }
    for (int k = 0; k < np; ++k) {
        memcpy(out[k].n, c[pick[k]].n, sizeof out[k].n);
        memcpy(out[k].p, c[pick[k]].p, sizeof out[k].p);
        out[k].gap = c[pick[k]].gap;
    }
    return np;
}

/* The supporting point of a body in world direction d. */
static void support_world(const gf_body_pose *p, const double d[3], double out[3]) {
    double u[3], s[3];
    gf_quat_rotate_inv(p->q, d, u);
    gf_shape_support(p->shape, p->clumps, u, s);
    to_world(p, s, out);
}

/* The candidate points of the features facing along n, found with the angle sinmax; nn gets
 * the manifold's normal (n, or the reference face's normal), *ref which body has the reference
 * face (-1: a, 1: b, 0: neither). */
static gf_status candidates(const gf_body_pose *a, const gf_body_pose *b, const double n[3],
                            double sinmax, double reach, double tol, candidate *c, int *nc,
                            double nn[3], int *ref) {
    double mn[3] = {-n[0], -n[1], -n[2]};
    feature fa, fb;
    GF_TRY(feature_of(a, mn, sinmax, reach, &fa));
    GF_TRY(feature_of(b, n, sinmax, reach, &fb));
    memcpy(nn, n, 3 * sizeof nn[0]);
    *ref = 0;
    if (fa.dim < FEAT_FACE && fb.dim < FEAT_FACE) {
        *nc = edge_contacts(&fa, &fb, n, tol, c);
        return GF_OK;
    }
    /* the face more aligned with n is the reference (ties: the larger), and its normal the
     * contact normal: the points' gaps are then their exact distances to that face */
    int ref_is_a;
    if (fa.dim != fb.dim) {
        ref_is_a = fa.dim > fb.dim;
    } else {
        double ca = -gf_dot(fa.m, n), cb = gf_dot(fb.m, n);
        ref_is_a = ca > cb + 1e-9 || (ca >= cb - 1e-9 && fa.area > fb.area);
    }
    *ref = ref_is_a ? -1 : 1;
    const feature *rf = ref_is_a ? &fa : &fb;
    feature *inc = ref_is_a ? &fb : &fa;
    for (int k = 0; k < 3; ++k)
        nn[k] = *ref * rf->m[k];
    /* the incident feature again along the reference normal: a curved body's line or point
     * facing the face exactly */
    if (ref_is_a) {
        GF_TRY(feature_of(b, nn, sinmax, reach, inc));
    } else {
        double mnn[3] = {-nn[0], -nn[1], -nn[2]};
        GF_TRY(feature_of(a, mnn, sinmax, reach, inc));
    }
    *nc = face_contacts(rf, inc, ref_is_a, nn, tol, c);
    return GF_OK;
}

static double min_candidate_gap(const candidate *c, int nc) {
    double g = INFINITY;
    for (int i = 0; i < nc; ++i)
        g = fmin(g, c[i].gap);
    return g;
}

gf_status gf_manifold_build(const gf_body_pose *a, const gf_body_pose *b, const double n_in[3],
                            double gap, double margin, gf_contact_point *out, int *count) {
    *count = 0;
    double len = gf_norm(n_in);
    if (!(len > 0.0) || !isfinite(len))
        return GF_ERROR(GF_ERR_NUMERIC, "contact normal (%g, %g, %g) is not a direction", n_in[0],
                        n_in[1], n_in[2]);
    double n[3] = {n_in[0] / len, n_in[1] / len, n_in[2] / len};
    int pa = a->shape->type == GF_SHAPE_PLANE, pb = b->shape->type == GF_SHAPE_PLANE;
    if (pa && pb)
        return GF_ERROR(GF_ERR_UNSUPPORTED, "no contact manifold between two planes");

    /* lengths below tol count as zero: 1e-9 of the bodies' size */
    double size = 0.0;
    if (!pa)
        size += gf_shape_bounding_radius(a->shape, a->clumps);
    if (!pb)
        size += gf_shape_bounding_radius(b->shape, b->clumps);
    double tol = 1e-9 * size;

    /* the clipped points, the supporting pair, and the first features' points kept */
    candidate c[2 * CANDIDATE_MAX + 1];
    int nc, ref, nfirst = 0;
    double nn[3], nfirst_n[3] = {0.0, 0.0, 0.0};
    candidate first[CANDIDATE_MAX];
    GF_TRY(candidates(a, b, n, FEATURE_SIN, margin, tol, c, &nc, nn, &ref));
    if (!pa && !pb) {
        /* The bodies' supporting points along the manifold's normal are their deepest pair. When
         * that normal is a reference face's, and the face's border rather than the face is what
         * touches (a body hanging over an edge), clipping drops them: the features are then
         * taken again at the angle a normal is known to (FEATURE_SIN_EXACT), and should the pair
         * still be missing, it joins the candidates, placed by the supporting point of the body
         * without the reference face (the other one's is ambiguous, a face being normal to nn). A
         * plane's supporting points are at infinity, but a plane is never clipped.
         * The first features' points stay beside those: what of a body lies over the reference
         * face touches it there too (a box lying tilted across another's edge rests on the edge
         * and on the face; with the edge's point alone its face came down through the other box
         * within a step). Only points no deeper than the pair are kept: apart, no point over
         * the face is nearer than the pair's distance, and deeper ones are the faces of bodies
         * beside each other, not facing; pressed in, the pair's depth is the least way out, and
         * the border's point holds it. They keep the face's normal, within FEATURE_SIN_REACH of
         * the final one, which the manifold's first point has. */
        double floor = gap - 1e3 * tol;
        double sa[3], sb[3], e[3];
        for (int pass = 0; pass < 2; ++pass) {
            double mnn[3] = {-nn[0], -nn[1], -nn[2]};
            support_world(a, mnn, sa);
            support_world(b, nn, sb);
            for (int k = 0; k < 3; ++k)
                e[k] = sa[k] - sb[k];
            double deepest = gf_dot(nn, e) + 1e3 * tol; /* 1e-6 of the size */
            if (nc > 0 && deepest >= min_candidate_gap(c, nc))
                break;
            if (pass == 0) {
                for (int i = 0; i < nc; ++i)
                    if (c[i].gap >= floor && c[i].gap < margin)
                        first[nfirst++] = c[i];
                memcpy(nfirst_n, nn, sizeof nn);
                GF_TRY(candidates(a, b, n, FEATURE_SIN_EXACT, 0.0, tol, c, &nc, nn, &ref));
                continue;
            }
            double g = gf_dot(nn, e);
            c[nc].gap = g;
            if (ref > 0) {
                memcpy(c[nc].p, sa, sizeof sa);
                gf_axpy(-0.5 * g, nn, c[nc].p);
            } else if (ref < 0) {
                memcpy(c[nc].p, sb, sizeof sb);
                gf_axpy(0.5 * g, nn, c[nc].p);
            } else {
                lerp(sa, sb, 0.5, c[nc].p);
            }
            ++nc;
        }
    }
    int kept = 0;
    for (int i = 0; i < nc; ++i)
        if (c[i].gap < margin) {
            c[kept] = c[i];
            c[kept].first = 0;
            memcpy(c[kept++].n, nn, sizeof nn);
        }
    for (int i = 0; i < nfirst; ++i) {
        c[kept] = first[i];
        c[kept].first = 1;
        memcpy(c[kept++].n, nfirst_n, sizeof nfirst_n);
    }
    if (kept == 0)
        return GF_OK;
    *count = reduce(c, kept, nn, tol, out);
    return GF_OK;
}
