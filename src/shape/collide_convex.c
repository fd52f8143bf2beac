/* General convex pairs (box, capsule, cylinder, sphere): the contact normal and gap, then the
 * manifold from the features along that normal (manifold.c).
 *
 * Every body is taken as its core (a sphere's centre, a capsule's axis segment, a box or a
 * cylinder itself) rounded by its radius (the sphere's or capsule's, 0 otherwise): the gap is
 * the distance of the cores less both radii, and the normal, from b towards a, is the direction
 * that maximises the gap between the bodies' supporting planes (the separating-plane theorem:
 * for overlapping bodies that maximum is minus the penetration depth).
 *
 * Separated cores (every speculative contact, and spheres and capsules overlapping by less than
 * their radius): GJK distance, written here, since libccd 2.1 has no distance query. It stops as
 * soon as the gap is known to exceed the margin, so pairs that do not touch cost a few support
 * calls, and it allocates nothing. The alternative, libccd's penetration query on bodies
 * inflated by the margin, was measured and rejected: the inflated bodies are rounded, and libccd
 * 2.1's EPA grows its polytope by each new vertex over the nearest face only, without removing
 * the other faces that vertex sees, so on curved surfaces the polytope folds and EPA stops
 * short, with no error: 4 % of random capsule pairs got normals up to 10 degrees off and gaps up
 * to 2 % of their size too small.
 *
 * Overlapping cores (boxes and cylinders pressed together): libccd's GJK+EPA (ccdGJKSeparate:
 * ccdGJKPenetration without the contact position, which is not needed and costs a sort) on the
 * cores, one of them inflated by EXTRA_INFLATION so that the origin lies strictly inside their
 * Minkowski difference even when the cores just touch, where EPA degenerates. EPA's normal is a
 * start, not the answer: it may be off where the polytope folded, and penetration has local
 * optima (a body pushed deep into another can leave it through several faces), one of which EPA
 * may settle on. MPR's normal (ccdMPRPenetration, along the line of centres), the line of
 * centres and the bodies' axes are further starts, cheap to evaluate; the best one is refined by
 * ascent on the supporting-plane gap (refine_normal), which also makes the normals of curved
 * contacts exact. Measured against a brute-force search over directions on random pairs
 * overlapping by up to 10 % of their size: gaps right to 1e-7 of the size (to round-off for
 * most); without EPA's start, off by up to 3 %. Deeper overlaps (10-30 %) settle on a local
 * optimum in a few pairs per thousand: a direction that does separate the bodies, but not the
 * shortest one.
 *
 * Both work in a frame centred at the smaller body and measured in its bounding radius: libccd
 * compares against absolute epsilons (DBL_EPSILON on squared lengths), and in this frame they,
 * and the tolerances below, are relative to the size of the contact whether the grains are
 * metres or microns, and far away bodies lose no digits to their absolute position. */
#include <math.h>
#include <string.h>

#include <ccd/ccd.h>

#include "collide_internal.h"
#include "core/vec.h"

/* All lengths below are in units of the smaller body's bounding radius.
 *
 * GJK stops when the distance is known to GJK_TOLERANCE (the difference of its upper bound |v|
 * and lower bound v.w/|v|), when its simplex stops shrinking (curved cores), or after
 * GJK_ITERATIONS (boxes take about 10, curved cylinders up to about 50); cores closer than
 * GJK_TOUCH count as overlapping. */
#define GJK_ITERATIONS 64
#define GJK_TOLERANCE 1e-10
#define GJK_TOUCH 1e-9
/* EPA stops when the next support point gains less than EPA_TOLERANCE over the nearest face of
 * its polytope; libccd measures that gain times the face's distance to the origin, and the new
 * point's squared distance to the face, so 1e-12 is a length of 1e-6 for the latter. Looser
 * tolerances (1e-8, 1e-6) left random cylinder pairs' gaps off by up to 1e-6 and 2e-4 of their
 * size after refinement (EPA's normal then starts nearer another optimum) and saved at most a
 * quarter of the time; each polytope face is a malloc inside libccd. MPR stops when its portal
 * moves less than MPR_TOLERANCE. libccd's GJK and MPR stop after CCD_ITERATIONS. */
#define EPA_TOLERANCE 1e-12
#define MPR_TOLERANCE 1e-9
#define CCD_ITERATIONS 200
/* Support calls (of both bodies) allowed to one libccd query: GJK takes at most
 * CCD_ITERATIONS + 1 and EPA's first polytope 44, which leaves EPA over 260 expansions, twice
 * the most any pair of the accuracy tests takes (126; most take 5 to 30). */
#define CCD_SUPPORTS 512
#define EXTRA_INFLATION 1e-3
/* refine_normal takes at most REFINE_ITERATIONS steps, and stops when the gradient of the gap
 * is below REFINE_STATIONARY of the distance of the supporting points: the normal is then right
 * to about that, its gap to the square of it. */
#define REFINE_ITERATIONS 50
#define REFINE_STATIONARY 1e-9
/* Directions within this sine (0.6 degrees) of perpendicular to a box's or cylinder's axis are
 * tried on the ridge of the gap function there (see refine_normal). */
#define RIDGE_SIN 1e-2

enum { CORE_SOLID, CORE_SEGMENT, CORE_POINT };

/* A body in the scaled frame. */
typedef struct {
    const gf_shape *shape;
    int core;       /* CORE_*: what replaces gf_shape_support for rounded bodies */
    double half;    /* half length of a capsule's axis */
    double radius;  /* the rounding: sphere or capsule radius, 0 otherwise */
    double inflate; /* what libccd adds to the core */
    double scale;   /* frame lengths per world length */
    double x[3];    /* centre of mass */
    double q[4];    /* orientation */
    /* while libccd runs: the count of its support calls, shared by both bodies */
    struct ccd_budget *budget;
} convex_body;

/* libccd 2.1's loops end on tests of the support points alone: EPA's has no iteration limit,
 * MPR's portal discovery and refinement none either. EPA grows its polytope by the new vertex
 * over the nearest element only, keeping the other faces that vertex sees; on a Minkowski
 * difference that is curved and nearly degenerate the polytope folds, its element nearest the
 * origin lies inside the difference, and the support point along it, a vertex the polytope
 * already has, still gains over that element: it was added again at every iteration, and the
 * step never ended (configs/reference.cfg, step 1795: a box's edge, rounded by the inflation,
 * against a pillar's side, their bottom faces coplanar). So each query gets CCD_SUPPORTS
 * support calls; past them, both bodies answer the same point, and the difference's support is
 * the origin: it gains over nothing, and every loop of libccd ends by its own test, with its
 * polytope freed. EPA's answer is then the nearest element so far, still the best start on that
 * pair; leaving libccd by longjmp instead leaks the polytope and loses EPA's start, and the
 * other starts ended 37 % too deep there. Such a query costs 2 ms (libccd rescans the whole
 * polytope at every expansion); 2 of 1500 in the reference run. */
typedef struct ccd_budget {
    int calls;
    int spent; /* set by the first body's support, so that both answer alike */
} ccd_budget;

/* The core's supporting point in direction d. */
static void core_support(const convex_body *b, const double d[3], double out[3]) {
    double u[3], s[3] = {0.0, 0.0, 0.0};
    gf_quat_rotate_inv(b->q, d, u);
    if (b->core == CORE_SOLID) {
        gf_shape_support(b->shape, NULL, u, s);
        s[0] *= b->scale;
        s[1] *= b->scale;
        s[2] *= b->scale;
    } else if (b->core == CORE_SEGMENT) {
        s[2] = copysign(b->half, u[2]);
    }
    gf_quat_rotate(b->q, s, out);
    out[0] += b->x[0];
    out[1] += b->x[1];
    out[2] += b->x[2];
}

/* The gap of the bodies along the unit normal n (from b to a): the distance between their
 * supporting planes normal to n. It is a lower bound of the gap for any n and equals it for the
 * contact normal. w gets the difference of the supporting points; its part across n is the
 * gradient of this gap over the directions. */
static double support_gap(const convex_body *a, const convex_body *b, const double n[3],
                          double w[3]) {
    double mn[3] = {-n[0], -n[1], -n[2]}, sa[3], sb[3];
    core_support(a, mn, sa);
    core_support(b, n, sb);
    for (int k = 0; k < 3; ++k)
        w[k] = sa[k] - sb[k] - (a->radius + b->radius) * n[k];
    return gf_dot(n, w);
}

/* ---- GJK distance of the cores ------------------------------------------------------------- */

/* Up to four points of the Minkowski difference core(a) - core(b). */
typedef struct {
    double p[4][3];
    int n;
} simplex;

static void keep(simplex *s, int i, int j, int k) {
    double p[3][3];
    int idx[3] = {i, j, k}, n = 0;
    for (int m = 0; m < 3; ++m)
        if (idx[m] >= 0)
            memcpy(p[n++], s->p[idx[m]], sizeof p[0]);
    memcpy(s->p, p, (size_t)n * sizeof p[0]);
    s->n = n;
}

static void lerp(const double a[3], const double b[3], double t, double out[3]) {
    for (int k = 0; k < 3; ++k)
        out[k] = a[k] + t * (b[k] - a[k]);
}

/* The point of segment p[0] p[1] nearest the origin; the simplex shrinks to its support. */
static void closest_segment(simplex *s, double v[3]) {
    const double *a = s->p[0], *b = s->p[1];
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double den = gf_dot(ab, ab), t = den > 0.0 ? -gf_dot(a, ab) / den : 0.0;
    if (t <= 0.0) {
        memcpy(v, a, 3 * sizeof v[0]);
        keep(s, 0, -1, -1);
    } else if (t >= 1.0) {
        memcpy(v, b, 3 * sizeof v[0]);
        keep(s, 1, -1, -1);
    } else {
        lerp(a, b, t, v);
    }
}

/* The point of triangle p[0] p[1] p[2] nearest the origin by its Voronoi regions (Ericson,
 * Real-Time Collision Detection 5.1.5); the simplex shrinks to its support. */
static void closest_triangle(simplex *s, double v[3]) {
    const double *a = s->p[0], *b = s->p[1], *c = s->p[2];
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double d1 = -gf_dot(ab, a), d2 = -gf_dot(ac, a);
    if (d1 <= 0.0 && d2 <= 0.0) {
        memcpy(v, a, 3 * sizeof v[0]);
        keep(s, 0, -1, -1);
        return;
    }
    double d3 = -gf_dot(ab, b), d4 = -gf_dot(ac, b);
    if (d3 >= 0.0 && d4 <= d3) {
        memcpy(v, b, 3 * sizeof v[0]);
        keep(s, 1, -1, -1);
        return;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
        lerp(a, b, d1 / (d1 - d3), v);
        keep(s, 0, 1, -1);
        return;
    }
    double d5 = -gf_dot(ab, c), d6 = -gf_dot(ac, c);
    if (d6 >= 0.0 && d5 <= d6) {
        memcpy(v, c, 3 * sizeof v[0]);
        keep(s, 2, -1, -1);
        return;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
        lerp(a, c, d2 / (d2 - d6), v);
        keep(s, 0, 2, -1);
        return;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0) {
        lerp(b, c, (d4 - d3) / ((d4 - d3) + (d5 - d6)), v);
        keep(s, 1, 2, -1);
        return;
    }
    double sum = va + vb + vc;
    if (!(sum > 0.0)) {
        /* collinear: the best of its edges */
        simplex e[3] = {{{{0}}, 2}, {{{0}}, 2}, {{{0}}, 2}};
        double ve[3][3], best = INFINITY;
        int ib = 0;
        for (int k = 0; k < 3; ++k) {
            memcpy(e[k].p[0], s->p[k], sizeof e[k].p[0]);
            memcpy(e[k].p[1], s->p[(k + 1) % 3], sizeof e[k].p[1]);
            closest_segment(&e[k], ve[k]);
            if (gf_dot(ve[k], ve[k]) < best) {
                best = gf_dot(ve[k], ve[k]);
                ib = k;
            }
        }
        memcpy(v, ve[ib], 3 * sizeof v[0]);
        *s = e[ib];
        return;
    }
    double t = vb / sum, u = vc / sum;
    for (int k = 0; k < 3; ++k)
        v[k] = a[k] + t * ab[k] + u * ac[k];
}

/* The point of tetrahedron p[0..3] nearest the origin: the nearest of the faces the origin lies
 * outside of. Returns 1 when it lies inside (the cores overlap). */
static int closest_tetrahedron(simplex *s, double v[3]) {
    static const int face[4][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 3, 2, 0}};
    double best = INFINITY;
    simplex sb = *s;
    /* a flat tetrahedron (the last points of a curved core nearly coincide) holds no origin,
     * whatever the signs of its round-off volumes say: all its faces are then tried */
    double e[3][3], x[3], edge = 0.0;
    for (int k = 0; k < 3; ++k) {
        for (int j = 0; j < 3; ++j)
            e[k][j] = s->p[k + 1][j] - s->p[0][j];
        edge = fmax(edge, gf_norm(e[k]));
    }
    gf_cross(e[0], e[1], x);
    int flat = !(fabs(gf_dot(x, e[2])) > 1e-9 * edge * edge * edge);
    int inside = !flat;
    for (int f = 0; f < 4; ++f) {
        const double *p = s->p[face[f][0]], *q = s->p[face[f][1]], *r = s->p[face[f][2]];
        const double *o = s->p[face[f][3]];
        double e1[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
        double e2[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
        double nf[3], po[3] = {o[0] - p[0], o[1] - p[1], o[2] - p[2]};
        gf_cross(e1, e2, nf);
        double side_o = gf_dot(nf, po), side_0 = -gf_dot(nf, p);
        if (!flat && side_o * side_0 > 0.0)
            continue; /* the origin is on the tetrahedron's side of this face */
        inside = 0;
        simplex t = {{{0}}, 3};
        memcpy(t.p[0], p, sizeof t.p[0]);
        memcpy(t.p[1], q, sizeof t.p[1]);
        memcpy(t.p[2], r, sizeof t.p[2]);
        double vt[3];
        closest_triangle(&t, vt);
        if (gf_dot(vt, vt) < best) {
            best = gf_dot(vt, vt);
            memcpy(v, vt, 3 * sizeof v[0]);
            sb = t;
        }
    }
    if (inside)
        return 1;
    *s = sb;
    return 0;
}

enum { CORES_OVERLAP, CORES_APART, CORES_FAR };

/* GJK (Gilbert, Johnson, Keerthi, with van den Bergen's termination) for the distance of the
 * cores. Every iterate v gives a lower bound of the distance, the supporting-plane gap along v,
 * and |v| an upper one. CORES_APART: n is the unit normal (from b towards a) of the best lower
 * bound (on curved cores the simplex degenerates near the end, and the last v is noisier than
 * the best one). CORES_FAR: the distance exceeds `far`. CORES_OVERLAP: the cores overlap or
 * touch. */
static int core_distance(const convex_body *a, const convex_body *b, double far, double n[3]) {
    simplex s = {{{0}}, 0};
    double v[3];
    for (int k = 0; k < 3; ++k)
        v[k] = a->x[k] - b->x[k]; /* the centres lie in the cores: a point of the difference */
    double vv = gf_dot(v, v), best = -INFINITY;
    if (vv <= GJK_TOUCH * GJK_TOUCH)
        return CORES_OVERLAP;
    for (int it = 0; it < GJK_ITERATIONS; ++it) {
        double mv[3] = {-v[0], -v[1], -v[2]}, sa[3], sb[3], w[3];
        core_support(a, mv, sa);
        core_support(b, v, sb);
        for (int k = 0; k < 3; ++k)
            w[k] = sa[k] - sb[k];
        double len = sqrt(vv), lower = gf_dot(v, w) / len;
        if (lower >= far)
            return CORES_FAR;
        if (lower > best) {
            best = lower;
            for (int k = 0; k < 3; ++k)
                n[k] = v[k] / len;
        }
        if (len - best <= GJK_TOLERANCE)
            break;
        int fresh = 1;
        for (int i = 0; i < s.n; ++i) {
            double e[3] = {w[0] - s.p[i][0], w[1] - s.p[i][1], w[2] - s.p[i][2]};
            fresh &= gf_dot(e, e) > 1e-24;
        }
        if (!fresh)
            break; /* no new point: as near as round-off allows */
        memcpy(s.p[s.n++], w, sizeof w);
        double vn[3];
        if (s.n == 1) {
            memcpy(vn, w, sizeof w);
        } else if (s.n == 2) {
            closest_segment(&s, vn);
        } else if (s.n == 3) {
            closest_triangle(&s, vn);
        } else if (closest_tetrahedron(&s, vn)) {
            return CORES_OVERLAP;
        }
        double vvn = gf_dot(vn, vn);
        if (vvn <= GJK_TOUCH * GJK_TOUCH)
            return CORES_OVERLAP;
        /* no progress: v is as good as it gets (the first v, the centres' difference, is no
         * point of the simplex) */
        if (it > 0 && vvn >= vv)
            break;
        memcpy(v, vn, sizeof vn);
        vv = vvn;
    }
    if (!(best > 0.0))
        return CORES_OVERLAP; /* no plane separates them (GJK ran out of iterations) */
    return CORES_APART;
}

/* ---- penetration of the cores through libccd ------------------------------------------------ */

static void ccd_support(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *out) {
    const convex_body *b = obj;
    if (b->budget->spent) {
        memset(out->v, 0, sizeof out->v);
        return;
    }
    const double *d = dir->v;
    core_support(b, d, out->v);
    double len = gf_norm(d);
    if (len > 0.0)
        gf_axpy(b->inflate / len, d, out->v);
}

/* libccd asks the first body first, then the second for the opposite direction. */
static void ccd_support1(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *out) {
    const convex_body *a = obj;
    a->budget->spent = ++a->budget->calls > CCD_SUPPORTS;
    ccd_support(obj, dir, out);
}

static void ccd_center(const void *obj, ccd_vec3_t *c) {
    const convex_body *b = obj;
    memcpy(c->v, b->x, sizeof c->v);
}

/* GJK's first direction: from a towards b, where the Minkowski difference a - b reaches nearest
 * the origin. */
static void ccd_first_dir(const void *o1, const void *o2, ccd_vec3_t *dir) {
    const convex_body *a = o1, *b = o2;
    for (int k = 0; k < 3; ++k)
        dir->v[k] = b->x[k] - a->x[k];
    if (gf_dot(dir->v, dir->v) == 0.0)
        dir->v[0] = 1.0;
}

/* A triangle's supporting point jumps where two corners are equally far along d, that is
 * across the directions normal to the edge between them, when those two are its farthest: the
 * ridge axes are those edges (both at once when d is along the face normal). u is d in the body
 * frame. */
static int triangle_ridges(const convex_body *b, const double u[3], double out[][3]) {
    double v[3][3], h[3];
    gf_shape_triangle_corners(b->shape, v);
    for (int k = 0; k < 3; ++k)
        h[k] = gf_dot(v[k], u);
    int n = 0;
    for (int k = 0; k < 3; ++k) {
        int i = k, j = (k + 1) % 3, o = (k + 2) % 3;
        double e[3] = {v[j][0] - v[i][0], v[j][1] - v[i][1], v[j][2] - v[i][2]};
        double len = gf_norm(e);
        if (fabs(h[j] - h[i]) > RIDGE_SIN * len || fmin(h[i], h[j]) < h[o] - RIDGE_SIN * len)
            continue;
        for (int d = 0; d < 3; ++d)
            e[d] /= len;
        gf_quat_rotate(b->q, e, out[n++]);
    }
    return n;
}

/* The world axes that body b's supporting point in the unit direction d jumps across: a box's
 * axes and a cylinder's or capsule's axis that d is within RIDGE_SIN of perpendicular to. The
 * supporting-plane gap has a ridge there (a face or an edge is extreme), which gradient steps
 * cannot follow. Returns their number. */
static int ridge_axes(const convex_body *b, const double d[3], double out[][3]) {
    double u[3];
    gf_quat_rotate_inv(b->q, d, u);
    if (b->core == CORE_SOLID && b->shape->type == GF_SHAPE_TRIANGLE)
        return triangle_ridges(b, u, out);
    int n = 0, box = b->core == CORE_SOLID && b->shape->type == GF_SHAPE_BOX;
    for (int k = b->core == CORE_POINT ? 3 : 0; k < 3; ++k) {
        if (!box && k != 2)
            continue;
        if (fabs(u[k]) <= RIDGE_SIN) {
            double e[3] = {0.0, 0.0, 0.0};
            e[k] = 1.0;
            gf_quat_rotate(b->q, e, out[n++]);
        }
    }
    return n;
}

/* An orthonormal basis (at most 2 vectors) of the span of the ridge axes of both bodies at n;
 * vectors that add less than a tenth of their length to it are left out. */
static int ridge_basis(const convex_body *a, const convex_body *b, const double n[3],
                       double basis[2][3]) {
    double ax[6][3], mn[3] = {-n[0], -n[1], -n[2]};
    int na = ridge_axes(a, mn, ax);
    na += ridge_axes(b, n, ax + na);
    int nb = 0;
    for (int i = 0; i < na && nb < 2; ++i) {
        double v[3] = {ax[i][0], ax[i][1], ax[i][2]};
        for (int j = 0; j < nb; ++j)
            gf_axpy(-gf_dot(v, basis[j]), basis[j], v);
        double len = gf_norm(v);
        if (len > 0.1) {
            for (int k = 0; k < 3; ++k)
                basis[nb][k] = v[k] / len;
            ++nb;
        }
    }
    return nb;
}

static void project_out(double v[3], const double basis[2][3], int nb) {
    for (int j = 0; j < nb; ++j)
        gf_axpy(-gf_dot(v, basis[j]), basis[j], v);
}

/* n turned by the angle theta towards the unit direction t / tl (normal to n), made unit. */
static void rotate_towards(const double n[3], const double t[3], double tl, double theta,
                           double m[3]) {
    double c = cos(theta), sn = sin(theta) / tl;
    for (int k = 0; k < 3; ++k)
        m[k] = c * n[k] + sn * t[k];
    double len = gf_norm(m);
    for (int k = 0; k < 3; ++k)
        m[k] /= len;
}

/* Raises the supporting-plane gap over the directions n, until the supporting points face each
 * other along n or the gap stops rising; returns the gap. On curved faces a gap known to 1e-6
 * leaves the normal uncertain by the square root of that, and EPA's normal of a face or edge
 * contact is off by as much: these steps make them exact. Each step first moves n onto the
 * ridges it lies near (perpendicular to the edges and faces that are extreme along it), where
 * the gap has a kink that gradient steps would zigzag across, then takes a gradient step along
 * them on the unit sphere, with backtracking. */
static double refine_normal(const convex_body *a, const convex_body *b, double n[3]) {
    double w[3], wm[3], m[3], curv = 0.0;
    double gap = support_gap(a, b, n, w);
    for (int it = 0; it < REFINE_ITERATIONS; ++it) {
        /* onto the ridges n lies near, when that is better */
        double basis[2][3];
        int nb = ridge_basis(a, b, n, basis);
        if (nb > 0) {
            if (nb == 2) {
                gf_cross(basis[0], basis[1], m);
            } else {
                memcpy(m, n, sizeof m);
                project_out(m, basis, nb);
            }
            double len = copysign(gf_norm(m), gf_dot(m, n)), gm = -INFINITY;
            if (len != 0.0) {
                for (int k = 0; k < 3; ++k)
                    m[k] /= len;
                double e[3] = {m[0] - n[0], m[1] - n[1], m[2] - n[2]};
                if (gf_dot(e, e) <= 1e-30) { /* on them already */
                    memcpy(wm, w, sizeof wm);
                    gm = gap;
                } else {
                    gm = support_gap(a, b, m, wm);
                }
            }
            if (gm >= gap - 1e-14 * (1.0 + fabs(gap))) {
                memcpy(n, m, sizeof m);
                memcpy(w, wm, sizeof w);
                gap = gm;
            } else {
                nb = 0; /* not a ridge after all */
            }
        }
        if (nb == 2)
            break; /* two ridges cross at n: it is fixed */
        /* then a gradient step along them, halved until the gap rises */
        double t[3];
        for (int k = 0; k < 3; ++k)
            t[k] = w[k] - gap * n[k];
        project_out(t, basis, nb);
        gf_axpy(-gf_dot(t, n), n, t);
        double tl = gf_norm(t);
        if (!(tl > REFINE_STATIONARY * gf_norm(w)))
            break; /* the supporting points face each other along n */
        /* the first try: Newton's step with the last curvature seen, else the step that is
         * exact for two spheres */
        double theta = fmin(curv > 0.0 ? tl / curv : atan2(tl, fabs(gap)), 0.25), gm = gap;
        for (int halvings = 0; halvings < 30; ++halvings, theta *= 0.5) {
            rotate_towards(n, t, tl, theta, m);
            gm = support_gap(a, b, m, wm);
            if (gm > gap)
                break;
        }
        if (!(gm > gap))
            break;
        /* the parabola through the gap, its slope tl at n and the gap at theta peaks at
         * tl / curv: on a smooth stretch that is Newton's step, which the first rising halving
         * (anywhere short of twice the peak) need not be */
        curv = 2.0 * (gap + tl * theta - gm) / (theta * theta);
        if (curv > 0.0 && fabs(tl / curv - theta) > 0.1 * theta && tl / curv < 4.0 * theta) {
            double theta_p = tl / curv, mp[3], wp[3];
            rotate_towards(n, t, tl, theta_p, mp);
            double gp = support_gap(a, b, mp, wp);
            if (gp > gm) {
                gm = gp;
                memcpy(m, mp, sizeof m);
                memcpy(wm, wp, sizeof wm);
            }
        }
        memcpy(n, m, sizeof m);
        memcpy(w, wm, sizeof wm);
        gap = gm;
    }
    return gap;
}

/* Takes the direction d (made unit, either sign) as the normal n if its supporting-plane gap
 * beats *best. */
static void try_normal(const convex_body *a, const convex_body *b, const double d[3], double n[3],
                       double *best) {
    double len = gf_norm(d);
    if (!(len > 0.0) || !isfinite(len))
        return;
    for (int sign = -1; sign <= 1; sign += 2) {
        double u[3], w[3];
        for (int k = 0; k < 3; ++k)
            u[k] = sign * d[k] / len;
        double g = support_gap(a, b, u, w);
        if (g > *best) {
            *best = g;
            memcpy(n, u, sizeof u);
        }
    }
}

/* The normal and gap of bodies whose cores overlap: the best of several starts, refined.
 * Penetration has local optima (a body pushed deep into another can leave it through several
 * faces), and libccd 2.1's EPA, whose polytope may fold, need not give the global one; MPR's
 * normal (found along the line of centres), the line of centres and the bodies' axes are the
 * other starts, cheap to evaluate, and the best one is refined. */
static gf_status penetration(convex_body *a, convex_body *b, double n[3], double *gap) {
    a->inflate = EXTRA_INFLATION;
    b->inflate = 0.0;
    ccd_t ccd;
    CCD_INIT(&ccd);
    ccd.first_dir = ccd_first_dir;
    ccd.support1 = ccd_support1;
    ccd.support2 = ccd_support;
    ccd.center1 = ccd_center;
    ccd.center2 = ccd_center;
    ccd.max_iterations = CCD_ITERATIONS;
    ccd.epa_tolerance = EPA_TOLERANCE;
    ccd.mpr_tolerance = MPR_TOLERANCE;

    ccd_budget budget = {0, 0};
    a->budget = b->budget = &budget;
    ccd_vec3_t sep = {{0.0, 0.0, 0.0}}, dir, pos;
    int res = ccdGJKSeparate(a, b, &ccd, &sep), mpr = -1;
    ccd_real_t depth;
    budget = (ccd_budget){0, 0};
    if (res == 0 || res == -1)
        mpr = ccdMPRPenetration(a, b, &ccd, &depth, &dir, &pos);
    a->budget = b->budget = NULL;
    if (res != 0 && res != -1)
        return GF_ERROR(GF_ERR_MEMORY, "libccd's GJK/EPA failed (code %d): out of memory", res);
    double best = -INFINITY;
    if (res == 0)
        try_normal(a, b, sep.v, n, &best);
    if (mpr == 0)
        try_normal(a, b, dir.v, n, &best);
    double centres[3] = {a->x[0] - b->x[0], a->x[1] - b->x[1], a->x[2] - b->x[2]};
    try_normal(a, b, centres, n, &best);
    const convex_body *body[2] = {a, b};
    for (int j = 0; j < 2; ++j) {
        if (body[j]->core == CORE_POINT)
            continue;
        for (int k = body[j]->shape->type == GF_SHAPE_BOX ? 0 : 2; k < 3; ++k) {
            double e[3] = {0.0, 0.0, 0.0}, d[3];
            e[k] = 1.0;
            gf_quat_rotate(body[j]->q, e, d);
            try_normal(a, b, d, n, &best);
        }
    }
    if (best == -INFINITY) {
        /* concentric spheres: every direction is as good */
        const double ez[3] = {0.0, 0.0, 1.0};
        try_normal(a, b, ez, n, &best);
    }
    *gap = refine_normal(a, b, n);
    return GF_OK;
}

/* ---- the pair ------------------------------------------------------------------------------ */

static int pose_finite(const gf_body_pose *p) {
    double s = 0.0;
    for (int k = 0; k < 3; ++k)
        s += p->x[k] + p->shape->dim[k];
    for (int k = 0; k < 4; ++k)
        s += p->q[k];
    return isfinite(s);
}

static gf_status body_setup(const gf_body_pose *p, const double origin[3], double scale,
                            convex_body *b) {
    const double *dim = p->shape->dim;
    b->shape = p->shape;
    b->budget = NULL;
    b->scale = scale;
    b->half = 0.0;
    b->radius = 0.0;
    b->inflate = 0.0;
    switch (p->shape->type) {
    case GF_SHAPE_SPHERE:
        b->core = CORE_POINT;
        b->radius = dim[0] * scale;
        break;
    case GF_SHAPE_CAPSULE:
        b->core = CORE_SEGMENT;
        b->radius = dim[0] * scale;
        b->half = dim[1] * scale;
        break;
    case GF_SHAPE_BOX:
    case GF_SHAPE_CYLINDER:
    case GF_SHAPE_TRIANGLE:
        b->core = CORE_SOLID;
        break;
    default:
        return GF_ERROR(GF_ERR_UNSUPPORTED, "the convex contact test takes no %s bodies",
                        gf_shape_name((gf_shape_type)p->shape->type));
    }
    for (int k = 0; k < 3; ++k)
        b->x[k] = (p->x[k] - origin[k]) * scale;
    memcpy(b->q, p->q, sizeof b->q);
    return GF_OK;
}

gf_status gf_collide_convex(const gf_body_pose *a, const gf_body_pose *b, double margin,
                            gf_contact_point *out, int *count) {
    *count = 0;
    if (!pose_finite(a) || !pose_finite(b))
        return GF_ERROR(GF_ERR_NUMERIC, "non-finite position, orientation or size in a contact "
                                        "test of two convex bodies");
    if (!(margin >= 0.0) || !isfinite(margin))
        return GF_ERROR(GF_ERR_INPUT, "contact margin %g is not finite and non-negative", margin);

    double ra = gf_shape_bounding_radius(a->shape, NULL);
    double rb = gf_shape_bounding_radius(b->shape, NULL);
    const gf_body_pose *small = ra <= rb ? a : b;
    double scale = 1.0 / fmin(ra, rb), m = margin * scale;
    convex_body A, B;
    GF_TRY(body_setup(a, small->x, scale, &A));
    GF_TRY(body_setup(b, small->x, scale, &B));

    double n[3], gap = 0.0;
    switch (core_distance(&A, &B, m + A.radius + B.radius, n)) {
    case CORES_FAR:
        return GF_OK;
    case CORES_APART:
        gap = refine_normal(&A, &B, n);
        break;
    default:
        GF_TRY(penetration(&A, &B, n, &gap));
    }
    if (gap >= m)
        return GF_OK;
    return gf_manifold_build(a, b, n, gap / scale, margin, out, count);
}
