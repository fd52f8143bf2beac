/* Narrow phase: one table from the pair of shape types to its contact function; closed forms
 * for every pair that has one (spheres against anything, planes against anything convex,
 * capsule with capsule, box with box by separating axes); clumps as the union of their member
 * spheres. Pairs without a closed form (cylinders against boxes, capsules and cylinders; capsule
 * with box) go to gf_collide_convex.
 *
 * Every function here writes points with the conventions of collide.h: n from b towards a,
 * signed gap, point midway between the surfaces. They work from the b-side surface point sb:
 * the a-side surface point is sb + gap n and the midpoint sb + gap/2 n. */
#include "granflow/collide.h"

#include <math.h>
#include <string.h>

#include "collide_internal.h"
#include "core/vec.h"

/* Nearly parallel capsule axes (sine of the angle below this) also get points at the ends of
 * their overlap: a capsule lying along another then rests on a segment and does not rock
 * about the single closest point, which wanders along the axes from step to step. */
#define CAPSULE_PARALLEL_SIN 0.05
/* Box-box: the best face axis yields to an edge-edge axis only when the edge separates the
 * boxes by more than this (relative, and absolute times the smallest half extent), so that
 * boxes resting face on face, whose edge axes tie with the face up to rounding, keep a face
 * manifold instead of flickering to one edge point. Small, because a face kept by the bias
 * reports a penetration up to the bias too deep; gf_manifold_build already gives normals
 * within 2 degrees of a face that face's manifold. */
#define BOX_EDGE_BIAS_REL 1e-3
#define BOX_EDGE_BIAS_ABS 1e-5
/* Face axes of b replace those of a only beyond rounding, for the same reason. */
#define BOX_FACE_BIAS_ABS 1e-7
/* A box edge within this angle (its sine) of a face plane lies flat on it: gf_manifold_build's
 * threshold for a face or an edge. */
#define BOX_FEATURE_SIN 0.0349

static inline void put_point(gf_contact_point *o, const double n[3], const double sb[3],
                             double gap) {
    double h = 0.5 * gap;
    for (int k = 0; k < 3; ++k) {
        o->n[k] = n[k];
        o->p[k] = sb[k] + h * n[k];
    }
    o->gap = gap;
}

static inline double clampd(double v, double lo, double hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* The body z axis in the world: the third column of the rotation matrix of q. */
static inline void quat_axis_z(const double q[4], double u[3]) {
    u[0] = 2.0 * (q[1] * q[3] + q[0] * q[2]);
    u[1] = 2.0 * (q[2] * q[3] - q[0] * q[1]);
    u[2] = 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2]);
}

/* The body axes in the world: ax[i] is column i of the rotation matrix of q. */
static inline void quat_axes(const double q[4], double ax[3][3]) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    ax[0][0] = 1.0 - 2.0 * (y * y + z * z);
    ax[0][1] = 2.0 * (x * y + w * z);
    ax[0][2] = 2.0 * (x * z - w * y);
    ax[1][0] = 2.0 * (x * y - w * z);
    ax[1][1] = 1.0 - 2.0 * (x * x + z * z);
    ax[1][2] = 2.0 * (y * z + w * x);
    ax[2][0] = 2.0 * (x * z + w * y);
    ax[2][1] = 2.0 * (y * z - w * x);
    ax[2][2] = 1.0 - 2.0 * (x * x + y * y);
}

/* Two spheres (centres ca, cb): the shared tail of every pair whose closest features are a
 * point of a's core and a point of b's core. `fallback` is the normal used when the centres
 * coincide, where any direction is as good as another. */
static inline int sphere_sphere(const double ca[3], double ra, const double cb[3], double rb,
                                const double fallback[3], double margin, gf_contact_point *out) {
    double d[3] = {ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]};
    double reach = ra + rb + margin;
    double d2 = gf_dot(d, d);
    if (!(reach > 0.0) || d2 >= reach * reach)
        return 0;
    double dist = sqrt(d2);
    double n[3];
    /* Below rounding the direction of d is noise: take the fallback. */
    if (dist > 1e-12 * (ra + rb)) {
        double inv = 1.0 / dist;
        n[0] = d[0] * inv;
        n[1] = d[1] * inv;
        n[2] = d[2] * inv;
    } else {
        n[0] = fallback[0];
        n[1] = fallback[1];
        n[2] = fallback[2];
    }
    double sb[3] = {cb[0] + rb * n[0], cb[1] + rb * n[1], cb[2] + rb * n[2]};
    put_point(out, n, sb, dist - ra - rb);
    return 1;
}

static const double ez[3] = {0.0, 0.0, 1.0};

static inline int sphere_plane(const double c[3], double r, const gf_body_pose *b, double margin,
                               gf_contact_point *out) {
    double n[3];
    quat_axis_z(b->q, n);
    double s = (c[0] - b->x[0]) * n[0] + (c[1] - b->x[1]) * n[1] + (c[2] - b->x[2]) * n[2];
    double gap = s - r;
    if (gap >= margin)
        return 0;
    double sb[3] = {c[0] - s * n[0], c[1] - s * n[1], c[2] - s * n[2]};
    put_point(out, n, sb, gap);
    return 1;
}

/* The closest point of the box to the centre; a centre inside leaves through the face it is
 * nearest to, which is the least translation that separates a point from a box. */
static inline int sphere_box(const double c[3], double r, const gf_body_pose *b, double margin,
                             gf_contact_point *out) {
    const double *h = b->shape->dim;
    double d[3] = {c[0] - b->x[0], c[1] - b->x[1], c[2] - b->x[2]};
    /* Out of reach of the box's circumscribed sphere: no rotation needed. */
    double reach = r + margin;
    double far = reach + sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]);
    if (!(far > 0.0) || gf_dot(d, d) >= far * far)
        return 0;
    double ax[3][3];
    quat_axes(b->q, ax);
    double l[3] = {gf_dot(ax[0], d), gf_dot(ax[1], d), gf_dot(ax[2], d)};
    double cl[3] = {clampd(l[0], -h[0], h[0]), clampd(l[1], -h[1], h[1]),
                    clampd(l[2], -h[2], h[2])};
    double diff[3] = {l[0] - cl[0], l[1] - cl[1], l[2] - cl[2]};
    double d2 = gf_dot(diff, diff);
    double nl[3], s;
    if (d2 > 0.0) {
        if (!(reach > 0.0) || d2 >= reach * reach)
            return 0;
        s = sqrt(d2);
        double inv = 1.0 / s;
        nl[0] = diff[0] * inv;
        nl[1] = diff[1] * inv;
        nl[2] = diff[2] * inv;
    } else {
        int k = 0;
        double depth = h[0] - fabs(l[0]);
        for (int i = 1; i < 3; ++i) {
            double di = h[i] - fabs(l[i]);
            if (di < depth) {
                depth = di;
                k = i;
            }
        }
        double sg = l[k] < 0.0 ? -1.0 : 1.0;
        nl[0] = nl[1] = nl[2] = 0.0;
        nl[k] = sg;
        cl[k] = sg * h[k];
        s = -depth;
        if (s - r >= margin)
            return 0;
    }
    double n[3], sb[3];
    for (int k = 0; k < 3; ++k) {
        n[k] = ax[0][k] * nl[0] + ax[1][k] * nl[1] + ax[2][k] * nl[2];
        sb[k] = b->x[k] + ax[0][k] * cl[0] + ax[1][k] * cl[1] + ax[2][k] * cl[2];
    }
    put_point(out, n, sb, s - r);
    return 1;
}

static inline int sphere_capsule(const double c[3], double r, const gf_body_pose *b, double margin,
                                 gf_contact_point *out) {
    double u[3];
    quat_axis_z(b->q, u);
    double half = b->shape->dim[1];
    double d[3] = {c[0] - b->x[0], c[1] - b->x[1], c[2] - b->x[2]};
    double t = clampd(gf_dot(d, u), -half, half);
    double q[3] = {b->x[0] + t * u[0], b->x[1] + t * u[1], b->x[2] + t * u[2]};
    double fallback[3];
    gf_orthonormal(u, fallback);
    return sphere_sphere(c, r, q, b->shape->dim[0], fallback, margin, out);
}

/* The closest point of the solid cylinder (side, cap or rim); a centre inside leaves through
 * the side or the cap, whichever is nearer. */
static inline int sphere_cylinder(const double c[3], double r, const gf_body_pose *b, double margin,
                                  gf_contact_point *out) {
    double rad = b->shape->dim[0], half = b->shape->dim[1];
    double d[3] = {c[0] - b->x[0], c[1] - b->x[1], c[2] - b->x[2]};
    double l[3];
    gf_quat_rotate_inv(b->q, d, l);
    double rho = sqrt(l[0] * l[0] + l[1] * l[1]);
    double nl[3], cl[3], s;
    if (rho > rad || fabs(l[2]) > half) {
        double k = rho > rad ? rad / rho : 1.0;
        cl[0] = l[0] * k;
        cl[1] = l[1] * k;
        cl[2] = clampd(l[2], -half, half);
        double diff[3] = {l[0] - cl[0], l[1] - cl[1], l[2] - cl[2]};
        double d2 = gf_dot(diff, diff);
        double reach = r + margin;
        if (!(reach > 0.0) || d2 >= reach * reach)
            return 0;
        s = sqrt(d2);
        double inv = 1.0 / s;
        nl[0] = diff[0] * inv;
        nl[1] = diff[1] * inv;
        nl[2] = diff[2] * inv;
    } else {
        double side = rad - rho, cap = half - fabs(l[2]);
        if (side < cap) {
            double e0 = 1.0, e1 = 0.0;
            if (rho > 0.0) {
                e0 = l[0] / rho;
                e1 = l[1] / rho;
            }
            nl[0] = e0;
            nl[1] = e1;
            nl[2] = 0.0;
            cl[0] = rad * e0;
            cl[1] = rad * e1;
            cl[2] = l[2];
            s = -side;
        } else {
            double sg = l[2] < 0.0 ? -1.0 : 1.0;
            nl[0] = nl[1] = 0.0;
            nl[2] = sg;
            cl[0] = l[0];
            cl[1] = l[1];
            cl[2] = sg * half;
            s = -cap;
        }
        if (s - r >= margin)
            return 0;
    }
    double n[3], sb[3];
    gf_quat_rotate(b->q, nl, n);
    gf_quat_rotate(b->q, cl, sb);
    sb[0] += b->x[0];
    sb[1] += b->x[1];
    sb[2] += b->x[2];
    put_point(out, n, sb, s - r);
    return 1;
}

static inline const gf_clump *clump_of(const gf_body_pose *p) {
    const gf_clumps *cs = p->clumps;
    int32_t k = p->shape->clump;
    if (!cs || k < 0 || (size_t)k >= cs->count || !cs->item)
        return NULL;
    return &cs->item[k];
}

/* World centre of member k of a clump at scale `scale`. */
static inline void member_centre(const gf_body_pose *p, const gf_clump *t, double scale, int k,
                                 double out[3]) {
    double v[3] = {scale * t->centre[k][0], scale * t->centre[k][1], scale * t->centre[k][2]};
    gf_quat_rotate(p->q, v, out);
    out[0] += p->x[0];
    out[1] += p->x[1];
    out[2] += p->x[2];
}

/* A sphere (centre c, radius r) as body a against any body b but a plane-plane pair; at most
 * one point per sphere pair, so at most one per member of a clump b. */
static int sphere_body(const double c[3], double r, const gf_body_pose *b, double margin,
                       gf_contact_point *out) {
    switch (b->shape->type) {
    case GF_SHAPE_SPHERE:
        return sphere_sphere(c, r, b->x, b->shape->dim[0], ez, margin, out);
    case GF_SHAPE_BOX:
        return sphere_box(c, r, b, margin, out);
    case GF_SHAPE_CAPSULE:
        return sphere_capsule(c, r, b, margin, out);
    case GF_SHAPE_CYLINDER:
        return sphere_cylinder(c, r, b, margin, out);
    case GF_SHAPE_PLANE:
        return sphere_plane(c, r, b, margin, out);
    case GF_SHAPE_CLUMP: {
        const gf_clump *t = clump_of(b);
        double scale = b->shape->dim[0];
        /* Members out of reach of the whole clump are skipped at once. */
        double d[3] = {c[0] - b->x[0], c[1] - b->x[1], c[2] - b->x[2]};
        double reach = r + margin + scale * t->bounding_radius;
        if (gf_dot(d, d) >= reach * reach)
            return 0;
        int m = 0;
        for (int k = 0; k < t->count; ++k) {
            double ck[3];
            member_centre(b, t, scale, k, ck);
            m += sphere_sphere(c, r, ck, scale * t->radius[k], ez, margin, out + m);
        }
        return m;
    }
    default:
        return 0;
    }
}

static gf_status pair_sphere_any(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                 gf_contact_point *out, int *count) {
    *count = sphere_body(a->x, a->shape->dim[0], b, margin, out);
    return GF_OK;
}

static gf_status pair_clump_any(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                gf_contact_point *out, int *count) {
    const gf_clump *t = clump_of(a);
    double scale = a->shape->dim[0];
    int m = 0;
    if (b->shape->type == GF_SHAPE_CLUMP) {
        /* Member pairs: b's members placed once, not once per member of a. */
        const gf_clump *tb = clump_of(b);
        double sb = b->shape->dim[0], reach_b = sb * tb->bounding_radius + margin;
        double cb[GF_CLUMP_MAX_MEMBERS][3], rb[GF_CLUMP_MAX_MEMBERS];
        for (int k = 0; k < tb->count; ++k) {
            member_centre(b, tb, sb, k, cb[k]);
            rb[k] = sb * tb->radius[k];
        }
        for (int k = 0; k < t->count; ++k) {
            double ck[3], rk = scale * t->radius[k];
            member_centre(a, t, scale, k, ck);
            double d[3] = {ck[0] - b->x[0], ck[1] - b->x[1], ck[2] - b->x[2]};
            double reach = rk + reach_b;
            if (gf_dot(d, d) >= reach * reach)
                continue;
            for (int j = 0; j < tb->count; ++j)
                m += sphere_sphere(ck, rk, cb[j], rb[j], ez, margin, out + m);
        }
        *count = m;
        return GF_OK;
    }
    for (int k = 0; k < t->count; ++k) {
        double ck[3];
        member_centre(a, t, scale, k, ck);
        m += sphere_body(ck, scale * t->radius[k], b, margin, out + m);
    }
    *count = m;
    return GF_OK;
}

/* Both ends of the axis segment when both are within the margin: a capsule lying on a plane
 * rests on a segment. The end nearer the plane is the closest point of the capsule; the other
 * is the contact of the sphere at that end, whose lowest point lies inside the capsule when it
 * is tilted, a true constraint all the same. */
static gf_status pair_capsule_plane(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                    gf_contact_point *out, int *count) {
    double n[3], u[3];
    quat_axis_z(b->q, n);
    quat_axis_z(a->q, u);
    double r = a->shape->dim[0], half = a->shape->dim[1];
    double d[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    double base = gf_dot(d, n), du = half * gf_dot(u, n);
    /* Lower end first. */
    double sg = du > 0.0 ? -1.0 : 1.0;
    int m = 0;
    for (int e = 0; e < 2; ++e, sg = -sg) {
        double s = base + sg * du;
        double gap = s - r;
        if (gap >= margin)
            continue;
        double sb[3];
        for (int k = 0; k < 3; ++k)
            sb[k] = a->x[k] + sg * half * u[k] - s * n[k];
        put_point(out + m++, n, sb, gap);
    }
    *count = m;
    return GF_OK;
}

/* Corners within the margin. More than four only when the margin exceeds the rise of the two
 * flattest edge directions, and then the four corners of the lowest face are all within it:
 * that face is the deepest support of largest area, so it is kept. */
static gf_status pair_box_plane(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                gf_contact_point *out, int *count) {
    double n[3], ax[3][3];
    quat_axis_z(b->q, n);
    quat_axes(a->q, ax);
    const double *h = a->shape->dim;
    double d[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    double base = gf_dot(d, n);
    double c[3] = {h[0] * gf_dot(ax[0], n), h[1] * gf_dot(ax[1], n), h[2] * gf_dot(ax[2], n)};
    *count = 0;
    if (base - fabs(c[0]) - fabs(c[1]) - fabs(c[2]) >= margin)
        return GF_OK;
    double gap[8];
    int within = 0;
    for (int i = 0; i < 8; ++i) {
        double s0 = (i & 1) ? 1.0 : -1.0, s1 = (i & 2) ? 1.0 : -1.0, s2 = (i & 4) ? 1.0 : -1.0;
        gap[i] = base + s0 * c[0] + s1 * c[1] + s2 * c[2];
        within += gap[i] < margin;
    }
    int face = -1, face_bit = 0;
    if (within > 4) {
        face = 0;
        for (int j = 1; j < 3; ++j)
            if (fabs(c[j]) > fabs(c[face]))
                face = j;
        /* The face whose corners have the sign opposite to c (they lie lowest). */
        face_bit = c[face] > 0.0 ? 0 : 1;
    }
    int m = 0;
    for (int i = 0; i < 8; ++i) {
        if (!(gap[i] < margin) || (face >= 0 && ((i >> face) & 1) != face_bit))
            continue;
        double s0 = (i & 1) ? h[0] : -h[0], s1 = (i & 2) ? h[1] : -h[1],
               s2 = (i & 4) ? h[2] : -h[2];
        double sb[3];
        for (int k = 0; k < 3; ++k)
            sb[k] = a->x[k] + s0 * ax[0][k] + s1 * ax[1][k] + s2 * ax[2][k] - gap[i] * n[k];
        put_point(out + m++, n, sb, gap[i]);
    }
    *count = m;
    return GF_OK;
}

/* The least rise above the lowest rim point, in radii, of the point a turn brings lowest. */
#define GF_RIM_RISE 1e-4

/* x turned by the angle |t| about t (Rodrigues). */
static void turn_vector(const double t[3], const double x[3], double y[3]) {
    double th = gf_norm(t);
    if (!(th > 0.0)) {
        y[0] = x[0], y[1] = x[1], y[2] = x[2];
        return;
    }
    double e[3] = {t[0] / th, t[1] / th, t[2] / th}, ex[3];
    gf_cross(e, x, ex);
    double c = cos(th), sn = sin(th), ed = gf_dot(e, x) * (1.0 - c);
    for (int k = 0; k < 3; ++k)
        y[k] = x[k] * c + ex[k] * sn + e[k] * ed;
}

/* The lowest rim point of the lower cap, the rim points a quarter turn either side of it and
 * the one opposite, and the lowest rim point of the upper cap. Standing on its cap the four
 * rim points of the lower cap hold the cylinder; lying on its side the lowest points of the
 * two caps do; tilted, the quarter-turn points join as soon as they come within the margin, so
 * the manifold grows smoothly into the flat one instead of jumping. */
static gf_status cylinder_plane(const gf_body_pose *a, const gf_body_pose *b, const double turn[3],
                                double margin, gf_contact_point *out, int *count);

static gf_status pair_cylinder_plane(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                     gf_contact_point *out, int *count) {
    return cylinder_plane(a, b, NULL, margin, out, count);
}

/* The rim point of the cylinder a that is lowest against the plane (normal n) once a has turned
 * by `turn` (a rotation vector), where it is now: `lower` the side of its cap along u, and dir
 * its direction from the cap's centre. Returns 0 where the turned cylinder stands on its cap
 * (no rim point is lowest). */
static int rim_low_after(const double u[3], const double n[3], const double turn[3], double *lower,
                         double dir[3]) {
    double ut[3];
    turn_vector(turn, u, ut);
    double cu = gf_dot(ut, n);
    double w[3] = {-(n[0] - cu * ut[0]), -(n[1] - cu * ut[1]), -(n[2] - cu * ut[2])};
    double wl = gf_norm(w);
    if (!(wl > 1e-12))
        return 0;
    for (int k = 0; k < 3; ++k)
        w[k] /= wl;
    const double back[3] = {-turn[0], -turn[1], -turn[2]};
    turn_vector(back, w, dir);
    *lower = cu > 0.0 ? -1.0 : 1.0;
    return 1;
}

/* The rim point of the cylinder a that `turn` brings lowest against the plane {p : p.n = offset}
 * (n towards a), where it is now, with its gap: its height at the step's end less the turn's
 * linear part. The solve moves the point along its velocity, a straight line, while the turn
 * carries it along an arc, which for a rim rolling on the plane rises from it by as much as the
 * line falls below (the line alone braked a cylinder rolling on its side). Returns 0 where it is
 * the lowest point already, lies beyond the margin, or rises less than 1e-4 radii above the
 * lowest (a near-copy of its constraint: a cylinder at rest or rolling slowly; near-copies made
 * Gauss-Seidel cycle; the sinking it would prevent is at most that rise). */
static int rim_turn_point(const gf_body_pose *a, const double n[3], double offset,
                          const double turn[3], double margin, gf_contact_point *o) {
    double u[3];
    quat_axis_z(a->q, u);
    const double rad = a->shape->dim[0], half = a->shape->dim[1], cu = gf_dot(u, n);
    double w[3] = {-(n[0] - cu * u[0]), -(n[1] - cu * u[1]), -(n[2] - cu * u[2])};
    const double wl = gf_norm(w);
    if (!(wl > 1e-12))
        gf_orthonormal(u, w);
    else
        for (int k = 0; k < 3; ++k)
            w[k] /= wl;
    /* the lowest rim point now */
    const double low = gf_dot(a->x, n) - offset - half * fabs(cu) - rad * (wl > 1e-12 ? wl : 0.0);
    double lower, dir[3];
    if (!rim_low_after(u, n, turn, &lower, dir) || !(gf_dot(dir, w) < 1.0 - 1e-12))
        return 0;
    double r[3], rt[3], lin[3], sb[3];
    for (int k = 0; k < 3; ++k)
        r[k] = lower * half * u[k] + rad * dir[k];
    const double g = gf_dot(r, n) + gf_dot(a->x, n) - offset;
    turn_vector(turn, r, rt);
    gf_cross(turn, r, lin);
    const double ge = g + gf_dot(rt, n) - gf_dot(r, n) - gf_dot(lin, n);
    if (!(ge < margin && g - low > GF_RIM_RISE * rad))
        return 0;
    for (int k = 0; k < 3; ++k)
        sb[k] = a->x[k] + r[k] - ge * n[k];
    put_point(o, n, sb, ge);
    return 1;
}

/* As the comment above pair_cylinder_plane; with `turn` (the cylinder's rotation over the step
 * relative to the plane) also the rim point that will be lowest at the step's end, in a free
 * place of the manifold or instead of its highest point. A tilted cylinder rolling on its rim (a
 * coin wobbling down) brings a new rim point to the bottom every step: held at the present lowest
 * point only, the rim between came down through the plane by (a dt)^2 / (2 r sin(tilt)), a the
 * rate at which the normal velocity grows along the rim (docs/physics.md, "Penetrations"). */
static gf_status cylinder_plane(const gf_body_pose *a, const gf_body_pose *b, const double turn[3],
                                double margin, gf_contact_point *out, int *count) {
    double n[3], u[3];
    quat_axis_z(b->q, n);
    quat_axis_z(a->q, u);
    double rad = a->shape->dim[0], half = a->shape->dim[1];
    double cu = gf_dot(u, n);
    double sg = cu > 0.0 ? -1.0 : 1.0; /* sign of the lower cap along u */
    double d[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    double base = gf_dot(d, n);
    double hl = base + sg * half * cu, hu = base - sg * half * cu;
    /* w: in the cap plane, pointing most against n; wl = |n - (n.u)u| = sine of the tilt. */
    double w[3] = {-(n[0] - cu * u[0]), -(n[1] - cu * u[1]), -(n[2] - cu * u[2])};
    double wl = gf_norm(w);
    *count = 0;
    if (fmin(hl, hu) - rad * wl >= margin)
        return GF_OK;
    if (wl > 1e-12) {
        w[0] /= wl;
        w[1] /= wl;
        w[2] /= wl;
    } else {
        gf_orthonormal(u, w);
        wl = 0.0;
    }
    double v[3];
    gf_cross(u, w, v);
    /* Candidates: (cap sign, cos, sin) of the rim angle from w. */
    const double cand[5][3] = {
        {sg, 1.0, 0.0}, {sg, 0.0, 1.0}, {sg, 0.0, -1.0}, {sg, -1.0, 0.0}, {-sg, 1.0, 0.0}};
    double gap[5] = {hl - rad * wl, hl, hl, hl + rad * wl, hu - rad * wl};
    int keep[5], within = 0;
    for (int i = 0; i < 5; ++i)
        within += keep[i] = gap[i] < margin;
    if (within == 5) {
        /* Drop the highest: the far side of the lower cap or the upper cap's point. */
        if (gap[3] > gap[4])
            keep[3] = 0;
        else
            keep[4] = 0;
    }
    int m = 0;
    for (int i = 0; i < 5; ++i) {
        if (!keep[i])
            continue;
        double sb[3];
        for (int k = 0; k < 3; ++k)
            sb[k] = a->x[k] + cand[i][0] * half * u[k] +
                    rad * (cand[i][1] * w[k] + cand[i][2] * v[k]) - gap[i] * n[k];
        put_point(out + m++, n, sb, gap[i]);
    }
    gf_contact_point o;
    if (turn && m > 0 && rim_turn_point(a, n, gf_dot(b->x, n), turn, margin, &o)) {
        /* Its place: a free one, or that of the highest point after the lowest if it lies
         * higher (a disc nearly flat, flipping over: its rim's far points are in the margin) */
        int at = m;
        for (int i = 1; m == GF_MANIFOLD_MAX && i < m; ++i)
            if (out[i].gap > o.gap && (at == m || out[i].gap > out[at].gap))
                at = i;
        if (at < GF_MANIFOLD_MAX) {
            out[at] = o;
            m += at == m;
        }
    }
    *count = m;
    return GF_OK;
}

/* The closest points of the two axis segments, then sphere against sphere. Nearly parallel
 * axes add each segment end paired with its closest point on the other axis: the ends bounding
 * the overlap hold the capsule along a segment. Every pair of axis points is the contact of
 * two spheres inside the capsules, so each such point is a true constraint; and the set is the
 * same whichever capsule is a. */
static gf_status pair_capsule_capsule(const gf_body_pose *a, const gf_body_pose *b, double margin,
                                      gf_contact_point *out, int *count) {
    double ua[3], ub[3];
    quat_axis_z(a->q, ua);
    quat_axis_z(b->q, ub);
    double ra = a->shape->dim[0], la = a->shape->dim[1];
    double rb = b->shape->dim[0], lb = b->shape->dim[1];
    double r[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    double cab = gf_dot(ua, ub), c = gf_dot(ua, r), f = gf_dot(ub, r);
    double sin2 = 1.0 - cab * cab;
    int parallel = sin2 < 1e-12;
    double fallback[3];
    gf_cross(ua, ub, fallback);
    double fl = gf_norm(fallback);
    if (!parallel) {
        fallback[0] /= fl;
        fallback[1] /= fl;
        fallback[2] /= fl;
    } else {
        gf_orthonormal(ua, fallback);
    }
    /* Parameters (s along a, t along b) of the candidate pairs. */
    double st[5][2];
    int nc = 0;
    if (!parallel) {
        /* Minimise |r + s ua - t ub| over the box of (s, t): the unconstrained s, t for it,
         * and s again when t had to be clamped. */
        double s = clampd((cab * f - c) / sin2, -la, la);
        double t = cab * s + f;
        if (t < -lb || t > lb) {
            t = clampd(t, -lb, lb);
            s = clampd(cab * t - c, -la, la);
        }
        st[0][0] = s;
        st[0][1] = t;
        nc = 1;
    }
    if (sin2 < CAPSULE_PARALLEL_SIN * CAPSULE_PARALLEL_SIN) {
        double tol = 1e-9 * (la + lb + ra + rb);
        for (int e = 0; e < 4; ++e) {
            double se, te;
            if (e < 2) {
                se = e ? la : -la;
                te = clampd(cab * se + f, -lb, lb);
            } else {
                te = (e & 1) ? lb : -lb;
                se = clampd(cab * te - c, -la, la);
            }
            int dup = 0;
            for (int k = 0; k < nc; ++k)
                dup |= fabs(st[k][0] - se) <= tol && fabs(st[k][1] - te) <= tol;
            if (!dup) {
                st[nc][0] = se;
                st[nc][1] = te;
                ++nc;
            }
        }
    }
    gf_contact_point pt[5];
    int m = 0, worst = -1;
    for (int k = 0; k < nc; ++k) {
        double pa[3], pb[3];
        for (int i = 0; i < 3; ++i) {
            pa[i] = a->x[i] + st[k][0] * ua[i];
            pb[i] = b->x[i] + st[k][1] * ub[i];
        }
        if (sphere_sphere(pa, ra, pb, rb, fallback, margin, &pt[m])) {
            if (worst < 0 || pt[m].gap > pt[worst].gap)
                worst = m;
            ++m;
        }
    }
    int w = 0;
    for (int k = 0; k < m; ++k)
        if (m <= GF_MANIFOLD_MAX || k != worst)
            out[w++] = pt[k];
    *count = w;
    return GF_OK;
}

/* Whether the face f of a reference box (half extents hr) holds the feature the other box
 * (half extents ho) presents in direction sdir * (axis f): that feature projects onto the face
 * plane within the face. o is the other box's centre and M[k][m] = ref_k . other_m, both in the
 * reference frame. The other box's axes within 2 degrees of the face plane span the feature (an
 * edge or a face) rather than pick a vertex, as in the manifold. */
static int box_face_holds(const double hr[3], int f, const double o[3], const double M[3][3],
                          const double ho[3], double sdir, double slack) {
    for (int k = 0; k < 3; ++k) {
        if (k == f)
            continue;
        double v = o[k], w = 0.0;
        for (int m = 0; m < 3; ++m) {
            double c = sdir * M[f][m];
            if (fabs(c) < BOX_FEATURE_SIN)
                w += ho[m] * fabs(M[k][m]);
            else
                v += (c > 0.0 ? ho[m] : -ho[m]) * M[k][m];
        }
        if (v - w > hr[k] + slack || v + w < -hr[k] - slack)
            return 0;
    }
    return 1;
}

/* Separating axes of two boxes: the 3 + 3 face normals and the 9 edge-edge cross products.
 * The largest separation along them is the penetration depth when the boxes overlap and a
 * lower bound of their distance when apart; its axis is the normal of the manifold. */
static gf_status pair_box_box(const gf_body_pose *a, const gf_body_pose *b, double margin,
                              gf_contact_point *out, int *count) {
    double A[3][3], B[3][3];
    quat_axes(a->q, A);
    quat_axes(b->q, B);
    const double *ha = a->shape->dim, *hb = b->shape->dim;
    double d[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    double C[3][3], absC[3][3], da[3], db[3];
    for (int i = 0; i < 3; ++i) {
        da[i] = gf_dot(A[i], d);
        db[i] = gf_dot(B[i], d);
        for (int j = 0; j < 3; ++j) {
            C[i][j] = gf_dot(A[i], B[j]);
            absC[i][j] = fabs(C[i][j]);
        }
    }
    double hmin = fmin(fmin(fmin(ha[0], ha[1]), fmin(ha[2], hb[0])), fmin(hb[1], hb[2]));
    *count = 0;
    double best_a = -INFINITY, best_b = -INFINITY;
    int ia = 0, jb = 0;
    for (int i = 0; i < 3; ++i) {
        double s =
            fabs(da[i]) - (ha[i] + hb[0] * absC[i][0] + hb[1] * absC[i][1] + hb[2] * absC[i][2]);
        if (s >= margin)
            return GF_OK;
        if (s > best_a) {
            best_a = s;
            ia = i;
        }
    }
    for (int j = 0; j < 3; ++j) {
        double s =
            fabs(db[j]) - (hb[j] + ha[0] * absC[0][j] + ha[1] * absC[1][j] + ha[2] * absC[2][j]);
        if (s >= margin)
            return GF_OK;
        if (s > best_b) {
            best_b = s;
            jb = j;
        }
    }
    double n[3];
    double best;
    int face_b = best_b > best_a + BOX_FACE_BIAS_ABS * hmin;
    if (face_b) {
        best = best_b;
        double sg = db[jb] < 0.0 ? -1.0 : 1.0;
        for (int k = 0; k < 3; ++k)
            n[k] = sg * B[jb][k];
    } else {
        best = best_a;
        double sg = da[ia] < 0.0 ? -1.0 : 1.0;
        for (int k = 0; k < 3; ++k)
            n[k] = sg * A[ia][k];
    }
    double best_e = -INFINITY, proj_e = 0.0, len_e = 1.0;
    int ie = -1, je = -1;
    for (int i = 0; i < 3; ++i) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            double len2 = 1.0 - C[i][j] * C[i][j];
            /* Parallel edges: their cross product carries no direction, and the separation
             * along the normals of the faces they bound is already tested. */
            if (len2 < 1e-12)
                continue;
            double len = sqrt(len2);
            /* d . (A_i x B_j) and the radii along it, written with C = A^T B. */
            double proj = da[i2] * C[i1][j] - da[i1] * C[i2][j];
            double ra = ha[i1] * absC[i2][j] + ha[i2] * absC[i1][j];
            double rb = hb[j1] * absC[i][j2] + hb[j2] * absC[i][j1];
            double s = (fabs(proj) - ra - rb) / len;
            if (s >= margin)
                return GF_OK;
            if (s > best_e) {
                best_e = s;
                ie = i;
                je = j;
                proj_e = proj;
                len_e = len;
            }
        }
    }
    int edge = ie >= 0 && best_e > best + BOX_EDGE_BIAS_REL * fabs(best) + BOX_EDGE_BIAS_ABS * hmin;
    if (!edge && ie >= 0 && best_e > best) {
        /* The face wins by the bias only if the other box really rests on it; an edge or a
         * corner beside the face, touching an edge of it, is an edge-edge contact, and the
         * face's manifold would miss it. */
        double slack = 1e-9 * hmin, o[3], M[3][3];
        if (face_b) {
            for (int k = 0; k < 3; ++k) {
                o[k] = db[k];
                for (int m = 0; m < 3; ++m)
                    M[k][m] = C[m][k];
            }
            edge = !box_face_holds(hb, jb, o, M, ha, db[jb] < 0.0 ? 1.0 : -1.0, slack);
        } else {
            for (int k = 0; k < 3; ++k)
                o[k] = -da[k];
            edge = !box_face_holds(ha, ia, o, C, hb, da[ia] < 0.0 ? -1.0 : 1.0, slack);
        }
    }
    if (edge) {
        gf_cross(A[ie], B[je], n);
        double sg = (proj_e < 0.0 ? -1.0 : 1.0) / len_e;
        n[0] *= sg;
        n[1] *= sg;
        n[2] *= sg;
        best = best_e;
    }
    return gf_manifold_build(a, b, n, best, margin, out, count);
}

static gf_status pair_convex(const gf_body_pose *a, const gf_body_pose *b, double margin,
                             gf_contact_point *out, int *count) {
    return gf_collide_convex(a, b, margin, out, count);
}

typedef gf_status (*pair_fn)(const gf_body_pose *a, const gf_body_pose *b, double margin,
                             gf_contact_point *out, int *count);

/* fn[a][b], with `swap` when only the order (b, a) is written: then the normals flip. A NULL
 * function is a pair without contact geometry (plane with plane). */
static const struct {
    pair_fn fn;
    int swap;
} pair_table[GF_SHAPE_COUNT][GF_SHAPE_COUNT] = {
    [GF_SHAPE_SPHERE] =
        {
            [GF_SHAPE_SPHERE] = {pair_sphere_any, 0},
            [GF_SHAPE_BOX] = {pair_sphere_any, 0},
            [GF_SHAPE_CAPSULE] = {pair_sphere_any, 0},
            [GF_SHAPE_CYLINDER] = {pair_sphere_any, 0},
            [GF_SHAPE_CLUMP] = {pair_sphere_any, 0},
            [GF_SHAPE_PLANE] = {pair_sphere_any, 0},
        },
    [GF_SHAPE_BOX] =
        {
            [GF_SHAPE_SPHERE] = {pair_sphere_any, 1},
            [GF_SHAPE_BOX] = {pair_box_box, 0},
            [GF_SHAPE_CAPSULE] = {pair_convex, 0},
            [GF_SHAPE_CYLINDER] = {pair_convex, 0},
            [GF_SHAPE_CLUMP] = {pair_clump_any, 1},
            [GF_SHAPE_PLANE] = {pair_box_plane, 0},
            [GF_SHAPE_TRIANGLE] = {pair_convex, 0},
        },
    [GF_SHAPE_CAPSULE] =
        {
            [GF_SHAPE_SPHERE] = {pair_sphere_any, 1},
            [GF_SHAPE_BOX] = {pair_convex, 0},
            [GF_SHAPE_CAPSULE] = {pair_capsule_capsule, 0},
            [GF_SHAPE_CYLINDER] = {pair_convex, 0},
            [GF_SHAPE_CLUMP] = {pair_clump_any, 1},
            [GF_SHAPE_PLANE] = {pair_capsule_plane, 0},
            [GF_SHAPE_TRIANGLE] = {pair_convex, 0},
        },
    [GF_SHAPE_CYLINDER] =
        {
            [GF_SHAPE_SPHERE] = {pair_sphere_any, 1},
            [GF_SHAPE_BOX] = {pair_convex, 0},
            [GF_SHAPE_CAPSULE] = {pair_convex, 0},
            [GF_SHAPE_CYLINDER] = {pair_convex, 0},
            [GF_SHAPE_CLUMP] = {pair_clump_any, 1},
            [GF_SHAPE_PLANE] = {pair_cylinder_plane, 0},
            [GF_SHAPE_TRIANGLE] = {pair_convex, 0},
        },
    [GF_SHAPE_CLUMP] =
        {
            [GF_SHAPE_SPHERE] = {pair_clump_any, 0},
            [GF_SHAPE_BOX] = {pair_clump_any, 0},
            [GF_SHAPE_CAPSULE] = {pair_clump_any, 0},
            [GF_SHAPE_CYLINDER] = {pair_clump_any, 0},
            [GF_SHAPE_CLUMP] = {pair_clump_any, 0},
            [GF_SHAPE_PLANE] = {pair_clump_any, 0},
        },
    [GF_SHAPE_PLANE] =
        {
            [GF_SHAPE_SPHERE] = {pair_sphere_any, 1},
            [GF_SHAPE_BOX] = {pair_box_plane, 1},
            [GF_SHAPE_CAPSULE] = {pair_capsule_plane, 1},
            [GF_SHAPE_CYLINDER] = {pair_cylinder_plane, 1},
            [GF_SHAPE_CLUMP] = {pair_clump_any, 1},
            [GF_SHAPE_PLANE] = {NULL, 0},
        },
    /* Triangles are the pieces of meshes that boxes, capsules and cylinders meet (spheres and
     * clumps meet meshes through the mesh's own closest-point query). */
    [GF_SHAPE_TRIANGLE] =
        {
            [GF_SHAPE_BOX] = {pair_convex, 1},
            [GF_SHAPE_CAPSULE] = {pair_convex, 1},
            [GF_SHAPE_CYLINDER] = {pair_convex, 1},
        },
};

/* Member count of a clump body, 1 for any other body, 0 for a clump without a template. */
static inline int body_members(const gf_body_pose *p) {
    if (p->shape->type != GF_SHAPE_CLUMP)
        return 1;
    const gf_clump *t = clump_of(p);
    return t ? t->count : 0;
}

/* Each member sphere of a clump meets the other body in at most one point (every sphere pair
 * has one closest point), so a clump pair needs one point per member pair. */
int gf_collide_capacity(const gf_body_pose *a, const gf_body_pose *b) {
    if (a->shape->type != GF_SHAPE_CLUMP && b->shape->type != GF_SHAPE_CLUMP)
        return GF_MANIFOLD_MAX;
    int m = body_members(a) * body_members(b);
    return m > 0 ? m : 1;
}

/* Exactly zero for finite values; NaN as soon as one is infinite or NaN. */
static inline double nonfinite_probe(const gf_body_pose *p) {
    return p->x[0] * 0.0 + p->x[1] * 0.0 + p->x[2] * 0.0 + p->q[0] * 0.0 + p->q[1] * 0.0 +
           p->q[2] * 0.0 + p->q[3] * 0.0;
}

gf_status gf_collide(const gf_body_pose *a, const gf_body_pose *b, double margin,
                     gf_contact_point *out, int cap, int *count) {
    *count = 0;
    int32_t ta = a->shape->type, tb = b->shape->type;
    if ((uint32_t)ta >= GF_SHAPE_COUNT || (uint32_t)tb >= GF_SHAPE_COUNT)
        return GF_ERROR(GF_ERR_INPUT, "contact between shape types %d and %d: unknown type",
                        (int)ta, (int)tb);
    if (!(nonfinite_probe(a) + nonfinite_probe(b) == 0.0) || isnan(margin))
        return GF_ERROR(GF_ERR_NUMERIC,
                        "contact between a %s at (%g, %g, %g) and a %s at (%g, %g, %g): "
                        "non-finite position, orientation or margin (%g)",
                        gf_shape_name(ta), a->x[0], a->x[1], a->x[2], gf_shape_name(tb), b->x[0],
                        b->x[1], b->x[2], margin);
    /* The hot pairs, a sphere against a sphere, a plane or a box, skip the table. */
    if (ta == GF_SHAPE_SPHERE && tb != GF_SHAPE_CLUMP) {
        if (cap < GF_MANIFOLD_MAX)
            return GF_ERROR(GF_ERR_STATE, "contact buffer of %d points for a sphere pair", cap);
        *count = sphere_body(a->x, a->shape->dim[0], b, margin, out);
        return GF_OK;
    }
    if ((ta == GF_SHAPE_CLUMP && !clump_of(a)) || (tb == GF_SHAPE_CLUMP && !clump_of(b)))
        return GF_ERROR(
            GF_ERR_INPUT, "contact with a clump whose template %d does not exist",
            (int)(ta == GF_SHAPE_CLUMP && !clump_of(a) ? a->shape->clump : b->shape->clump));
    int need = gf_collide_capacity(a, b);
    if (cap < need)
        return GF_ERROR(GF_ERR_STATE,
                        "contact buffer of %d points between a %s and a %s, which need %d", cap,
                        gf_shape_name(ta), gf_shape_name(tb), need);
    pair_fn fn = pair_table[ta][tb].fn;
    if (!fn)
        return GF_ERROR(GF_ERR_UNSUPPORTED, "no contact between a %s and a %s", gf_shape_name(ta),
                        gf_shape_name(tb));
    if (!pair_table[ta][tb].swap)
        return fn(a, b, margin, out, count);
    GF_TRY(fn(b, a, margin, out, count));
    for (int i = 0; i < *count; ++i) {
        out[i].n[0] = -out[i].n[0];
        out[i].n[1] = -out[i].n[1];
        out[i].n[2] = -out[i].n[2];
    }
    return GF_OK;
}

/* Cos of the largest angle between a contact normal and a face normal for the face to count as
 * the one touched (the manifold's feature angle, contact/manifold.c). */
#define GF_FACE_COS 0.984807753012208

/* The face of `other` that the normal n (pointing from other towards the cylinder) comes
 * through, if it is flat: its outward normal nb, a point on it, and whether the point q lies on
 * it (in its plane's coordinates). Returns 0 for a curved or unknown feature. */
static int flat_face(const gf_body_pose *other, const double n[3], const double q[3], double nb[3],
                     double on[3], int *inside) {
    const gf_shape *sh = other->shape;
    double e[3][3];
    for (int k = 0; k < 3; ++k) {
        double unit[3] = {0.0, 0.0, 0.0};
        unit[k] = 1.0;
        gf_quat_rotate(other->q, unit, e[k]);
    }
    if (sh->type == GF_SHAPE_PLANE) {
        memcpy(nb, e[2], sizeof e[2]);
        memcpy(on, other->x, sizeof on[0] * 3);
        *inside = 1;
        return 1;
    }
    double d[3] = {q[0] - other->x[0], q[1] - other->x[1], q[2] - other->x[2]};
    if (sh->type == GF_SHAPE_BOX)
        for (int k = 0; k < 3; ++k) {
            double c = gf_dot(e[k], n);
            if (fabs(c) < GF_FACE_COS)
                continue;
            double sg = c > 0.0 ? 1.0 : -1.0;
            *inside = 1;
            for (int j = 0; j < 3; ++j) {
                nb[j] = sg * e[k][j];
                on[j] = other->x[j] + sg * sh->dim[k] * e[k][j];
                if (j != k && fabs(gf_dot(d, e[j])) > sh->dim[j])
                    *inside = 0;
            }
            return 1;
        }
    if (sh->type == GF_SHAPE_CYLINDER) {
        double c = gf_dot(e[2], n), sg = c > 0.0 ? 1.0 : -1.0;
        if (fabs(c) < GF_FACE_COS)
            return 0;
        double along = gf_dot(d, e[2]), r2 = gf_dot(d, d) - along * along;
        for (int j = 0; j < 3; ++j) {
            nb[j] = sg * e[2][j];
            on[j] = other->x[j] + sg * sh->dim[1] * e[2][j];
        }
        *inside = r2 <= sh->dim[0] * sh->dim[0];
        return 1;
    }
    return 0;
}

/* For the cylinder cyl touching a flat face of `other` (n from other towards cyl), the rim point
 * that the turn (cyl's relative to other) brings lowest against that face, as cylinder_plane
 * takes it against the face's plane, with the normal flipped when cyl is the pair's b (flip):
 * appended while out has room for `cap` points, else in the place of the highest point but the
 * first if that lies higher. Only where the point lies on the face. Returns whether it was put. */
static int rim_on_face(const gf_body_pose *cyl, const gf_body_pose *other, const double n[3],
                       const double turn[3], double margin, int flip, gf_contact_point *out,
                       int cap, int *count) {
    double nb[3], on[3];
    int inside;
    if (!flat_face(other, n, cyl->x, nb, on, &inside))
        return 0;
    gf_contact_point o;
    if (!rim_turn_point(cyl, nb, gf_dot(on, nb), turn, margin, &o))
        return 0;
    double foot[3]; /* its point on the face */
    for (int k = 0; k < 3; ++k)
        foot[k] = o.p[k] - 0.5 * o.gap * o.n[k];
    if (!flat_face(other, n, foot, nb, on, &inside) || !inside)
        return 0;
    if (flip)
        for (int k = 0; k < 3; ++k)
            o.n[k] = -o.n[k];
    int at = *count;
    for (int i = 1; *count >= cap && i < *count; ++i)
        if (out[i].gap > o.gap && (at == *count || out[i].gap > out[at].gap))
            at = i;
    if (at >= cap)
        return 0;
    out[at] = o;
    *count += at == *count;
    return 1;
}

/* The sphere (centre c, radius r) against the body b that turns by tb about its centre over the
 * step: the material point of b that will be nearest the sphere at the step's end, where it is
 * now, with its gap as for the rim in cylinder_plane (the height at the step's end less the
 * turn's linear part); appended to out when it lies more than 1e-4 sphere radii farther than
 * the nearest point now (g0), with the normal pointing to the sphere (reversed: flip). */
static void sphere_turned(const double c[3], double r, const gf_body_pose *b, const double tb[3],
                          double g0, double margin, int flip, gf_contact_point *out, int *count) {
    const int tp = b->shape->type;
    if (tp != GF_SHAPE_BOX && tp != GF_SHAPE_CYLINDER && tp != GF_SHAPE_CAPSULE)
        return;
    gf_body_pose bt = *b;
    double th = gf_norm(tb), half = 0.5 * th, s = th > 0.0 ? sin(half) / th : 0.0;
    const double dq[4] = {cos(half), s * tb[0], s * tb[1], s * tb[2]};
    gf_quat_mul(dq, b->q, bt.q);
    gf_contact_point end;
    if (sphere_body(c, r, &bt, margin + r, &end) != 1)
        return;
    double qe[3], rb[3], back[3] = {-tb[0], -tb[1], -tb[2]}, rn[3];
    for (int k = 0; k < 3; ++k)
        qe[k] = end.p[k] - 0.5 * end.gap * end.n[k] - b->x[k]; /* b's point at the end */
    turn_vector(back, qe, rb);                                 /* ... where it is now */
    double d[3] = {c[0] - b->x[0] - rb[0], c[1] - b->x[1] - rb[1], c[2] - b->x[2] - rb[2]};
    double dl = gf_norm(d);
    if (!(dl > 0.0))
        return;
    double n[3] = {d[0] / dl, d[1] / dl, d[2] / dl}, lin[3];
    double g = dl - r;
    if (!(g - g0 > GF_RIM_RISE * r))
        return;
    gf_cross(tb, rb, lin);
    double ge = end.gap + gf_dot(n, lin);
    if (!(ge < margin))
        return;
    gf_contact_point *o = &out[(*count)++];
    for (int k = 0; k < 3; ++k) {
        rn[k] = b->x[k] + rb[k] + 0.5 * ge * n[k]; /* b's point, then half the gap on */
        o->n[k] = flip ? -n[k] : n[k];
        o->p[k] = rn[k];
    }
    o->gap = ge;
}

/* p's pose turned by the rotation vector t about its centre. */
static void turned_pose(const gf_body_pose *p, const double t[3], gf_body_pose *out) {
    *out = *p;
    double th = gf_norm(t), half = 0.5 * th, sn = th > 0.0 ? sin(half) / th : 0.0;
    const double dq[4] = {cos(half), sn * t[0], sn * t[1], sn * t[2]};
    gf_quat_mul(dq, p->q, out->q);
}

/* The size of a body for the rise test below (0 for a plane: it has none). */
static inline double body_size(const gf_body_pose *p) {
    return p->shape->type == GF_SHAPE_PLANE ? 0.0 : gf_shape_bounding_radius(p->shape, p->clumps);
}

/* Any pair turning over the step, a by ta and b by tb about their centres: the points of the
 * pair in the turned poses, each mapped back to where its two material points are now, its gap
 * the one it reaches less the turns' linear part (as for the rim in cylinder_plane and the
 * sphere in sphere_turned, which this generalises: an edge sliding along an edge, a curved side,
 * the member of a turning clump). A point is added where the manifold has none near it (by its
 * point on a) or where it lies more than GF_RIM_RISE of the smaller body above the nearest one
 * (the turn brings another material point nearest), within the pair's capacity however large
 * the buffer: a full manifold keeps its points (giving up the highest one let a box spinning on
 * a box lose a support: the hopper pour with boxes sank 2.8 % deep with it, 0.35 % without; a
 * fifth point beside it, 4.8 %). Skipped where the turns' second-order displacement R theta^2
 * stays below that rise: a body turning slowly keeps its nearest points. */
static gf_status turned_points(const gf_body_pose *a, const gf_body_pose *b, const double ta[3],
                               const double tb[3], double margin, gf_contact_point *out, int cap,
                               int *count) {
    const double ra = body_size(a), rb = body_size(b);
    const double rmin = ra > 0.0 && rb > 0.0 ? fmin(ra, rb) : fmax(ra, rb);
    const double rise = GF_RIM_RISE * rmin;
    if (!(ra * gf_dot(ta, ta) + rb * gf_dot(tb, tb) > rise))
        return GF_OK;
    gf_body_pose at, bt;
    turned_pose(a, ta, &at);
    turned_pose(b, tb, &bt);
    gf_contact_point end[GF_CLUMP_MAX_MEMBERS * GF_CLUMP_MAX_MEMBERS];
    int ne = 0;
    const int now = *count;
    /* Within the pair's capacity: a fifth point beside a full manifold of two boxes made the
     * hopper with boxes sink 4.8 % deep (the sweeps cycle between near-copies). */
    const int capacity = gf_collide_capacity(a, b), room = cap < capacity ? cap : capacity;
    GF_TRY(gf_collide(&at, &bt, margin, end, capacity, &ne));
    const double back_a[3] = {-ta[0], -ta[1], -ta[2]}, back_b[3] = {-tb[0], -tb[1], -tb[2]};
    for (int e = 0; e < ne; ++e) {
        const double *n = end[e].n;
        double qa[3], qb[3], ua[3], ub[3], la[3], lb[3];
        for (int k = 0; k < 3; ++k) { /* the material points at the step's end */
            qa[k] = end[e].p[k] + 0.5 * end[e].gap * n[k] - a->x[k];
            qb[k] = end[e].p[k] - 0.5 * end[e].gap * n[k] - b->x[k];
        }
        turn_vector(back_a, qa, ua); /* ... where they are now */
        turn_vector(back_b, qb, ub);
        gf_cross(ta, ua, la);
        gf_cross(tb, ub, lb);
        double ge = end[e].gap - (gf_dot(n, la) - gf_dot(n, lb)), gnow = 0.0;
        for (int k = 0; k < 3; ++k)
            gnow += n[k] * (a->x[k] + ua[k] - b->x[k] - ub[k]);
        int near = -1; /* (its end gap is within the margin: gf_collide's points are) */
        double dnear = INFINITY;
        for (int i = 0; i < now; ++i) {
            double d2 = 0.0;
            for (int k = 0; k < 3; ++k) {
                double dk = out[i].p[k] + 0.5 * out[i].gap * out[i].n[k] - a->x[k] - ua[k];
                d2 += dk * dk;
            }
            if (d2 < dnear) {
                dnear = d2;
                near = i;
            }
        }
        if (near >= 0 && !(gnow - out[near].gap > rise))
            continue;
        if (*count >= room)
            break;
        int to = (*count)++;
        /* The point the solver's lever arms start from: on the turning body's material point
         * (its velocity there is the one that closes the gap), between the two when both turn. */
        const double wa = gf_dot(ta, ta) > 0.0 ? (gf_dot(tb, tb) > 0.0 ? 0.5 : 1.0) : 0.0;
        for (int k = 0; k < 3; ++k) {
            out[to].n[k] = n[k];
            out[to].p[k] = wa * (a->x[k] + ua[k] - 0.5 * ge * n[k]) +
                           (1.0 - wa) * (b->x[k] + ub[k] + 0.5 * ge * n[k]);
        }
        out[to].gap = ge;
    }
    return GF_OK;
}

gf_status gf_collide_turning(const gf_body_pose *a, const gf_body_pose *b, const double turn_a[3],
                             const double turn_b[3], double margin, gf_contact_point *out, int cap,
                             int *count) {
    const int ta = a->shape->type, tb = b->shape->type;
    const double turn[3] = {turn_a[0] - turn_b[0], turn_a[1] - turn_b[1], turn_a[2] - turn_b[2]};
    const int sphere_pair = (ta == GF_SHAPE_SPHERE) != (tb == GF_SHAPE_SPHERE);
    if (!(gf_dot(turn_a, turn_a) + gf_dot(turn_b, turn_b) > 0.0))
        return gf_collide(a, b, margin, out, cap, count);
    if (!(turn[0] * 0.0 + turn[1] * 0.0 + turn[2] * 0.0 == 0.0))
        return GF_ERROR(GF_ERR_NUMERIC, "contact of a %s and a %s: non-finite turn",
                        gf_shape_name(ta), gf_shape_name(tb));
    if (ta == GF_SHAPE_CYLINDER && tb == GF_SHAPE_PLANE) {
        *count = 0;
        if (!(nonfinite_probe(a) + nonfinite_probe(b) == 0.0) || isnan(margin))
            return GF_ERROR(GF_ERR_NUMERIC,
                            "contact between a cylinder at (%g, %g, %g) and a plane: non-finite "
                            "position, orientation or margin (%g)",
                            a->x[0], a->x[1], a->x[2], margin);
        if (cap < GF_MANIFOLD_MAX)
            return GF_ERROR(GF_ERR_STATE, "contact buffer of %d points for a cylinder and a plane",
                            cap);
        return cylinder_plane(a, b, turn, margin, out, count);
    }
    GF_TRY(gf_collide(a, b, margin, out, cap, count));
    if (ta == GF_SHAPE_CLUMP || tb == GF_SHAPE_CLUMP ||
        (!sphere_pair && ta != GF_SHAPE_CYLINDER && tb != GF_SHAPE_CYLINDER))
        return turned_points(a, b, turn_a, turn_b, margin, out, cap, count);
    /* A sphere against a turning box, cylinder or capsule: the point of the other body that
     * its own turn brings nearest (a sphere's turn moves no point of its surface nearer). */
    if (sphere_pair) {
        if (*count == 0 || *count >= GF_MANIFOLD_MAX)
            return GF_OK;
        if (ta == GF_SHAPE_SPHERE)
            sphere_turned(a->x, a->shape->dim[0], b, turn_b, out[0].gap, margin, 0, out, count);
        else
            sphere_turned(b->x, b->shape->dim[0], a, turn_a, out[0].gap, margin, 1, out, count);
        return GF_OK;
    }
    /* A cylinder on a flat face of a box or of another cylinder's cap, through the convex
     * path: the manifold, then the rim point the turn brings lowest against that face; any
     * other cylinder pair (a side against a side or an edge) as every other pair. */
    if (*count > 0) {
        const double n[3] = {out[0].n[0], out[0].n[1], out[0].n[2]};
        const double back[3] = {-turn[0], -turn[1], -turn[2]}, nr[3] = {-n[0], -n[1], -n[2]};
        if ((ta == GF_SHAPE_CYLINDER && rim_on_face(a, b, n, turn, margin, 0, out, cap, count)) ||
            (tb == GF_SHAPE_CYLINDER && rim_on_face(b, a, nr, back, margin, 1, out, cap, count)))
            return GF_OK;
    }
    return turned_points(a, b, turn_a, turn_b, margin, out, cap, count);
}

gf_status gf_collide_overlap(const gf_body_pose *a, const gf_body_pose *b, double *depth) {
    gf_contact_point pts[GF_CLUMP_MAX_MEMBERS * GF_CLUMP_MAX_MEMBERS];
    int count = 0;
    *depth = 0.0;
    GF_TRY(gf_collide(a, b, 0.0, pts, (int)(sizeof pts / sizeof pts[0]), &count));
    for (int k = 0; k < count; ++k)
        *depth = fmax(*depth, -pts[k].gap);
    return GF_OK;
}
