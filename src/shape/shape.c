#include "granflow/shape.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

static const char *const shape_names[GF_SHAPE_COUNT] = {"sphere", "box",   "capsule", "cylinder",
                                                        "clump",  "plane", "triangle"};

static void quat_from_matrix(const double m[3][3], double q[4]);

int gf_shape_is_static(int type) {
    return type == GF_SHAPE_PLANE || type == GF_SHAPE_TRIANGLE;
}

const char *gf_shape_name(gf_shape_type type) {
    if ((int)type < 0 || type >= GF_SHAPE_COUNT)
        return "unknown";
    return shape_names[type];
}

int gf_shape_type_from_name(const char *name) {
    if (!name)
        return -1;
    for (int k = 0; k < GF_SHAPE_COUNT; ++k)
        if (strcmp(name, shape_names[k]) == 0)
            return k;
    return -1;
}

static gf_shape shape_make(gf_shape_type type, double d0, double d1, double d2) {
    gf_shape s = {.type = type, .clump = -1, .dim = {d0, d1, d2}};
    return s;
}

gf_shape gf_shape_sphere(double radius) {
    return shape_make(GF_SHAPE_SPHERE, radius, 0.0, 0.0);
}

gf_shape gf_shape_box(double hx, double hy, double hz) {
    return shape_make(GF_SHAPE_BOX, hx, hy, hz);
}

gf_shape gf_shape_capsule(double radius, double half_length) {
    return shape_make(GF_SHAPE_CAPSULE, radius, half_length, 0.0);
}

gf_shape gf_shape_cylinder(double radius, double half_length) {
    return shape_make(GF_SHAPE_CYLINDER, radius, half_length, 0.0);
}

gf_shape gf_shape_clump(int32_t clump, double scale) {
    gf_shape s = shape_make(GF_SHAPE_CLUMP, scale, 0.0, 0.0);
    s.clump = clump;
    return s;
}

static gf_status check_dim(const gf_shape *s, int k, const char *what) {
    double v = s->dim[k];
    if (isfinite(v) && v > 0.0)
        return GF_OK;
    return GF_ERROR(GF_ERR_INPUT, "%s %s (dim[%d]) is %g: it must be finite and positive",
                    gf_shape_name((gf_shape_type)s->type), what, k, v);
}

gf_status gf_shape_check(const gf_shape *s, const gf_clumps *clumps) {
    switch (s->type) {
    case GF_SHAPE_SPHERE:
        return check_dim(s, 0, "radius");
    case GF_SHAPE_BOX:
        GF_TRY(check_dim(s, 0, "half extent along x"));
        GF_TRY(check_dim(s, 1, "half extent along y"));
        return check_dim(s, 2, "half extent along z");
    case GF_SHAPE_CAPSULE:
    case GF_SHAPE_CYLINDER:
        GF_TRY(check_dim(s, 0, "radius"));
        return check_dim(s, 1, "half length");
    case GF_SHAPE_CLUMP: {
        size_t n = clumps ? clumps->count : 0;
        if (s->clump < 0 || (size_t)s->clump >= n)
            return GF_ERROR(GF_ERR_INPUT,
                            "clump template %d does not exist: %zu template%s defined", s->clump, n,
                            n == 1 ? " is" : "s are");
        return check_dim(s, 0, "scale");
    }
    case GF_SHAPE_PLANE:
        return GF_OK;
    case GF_SHAPE_TRIANGLE:
        if (!(isfinite(s->dim[1]) && s->dim[0] > 0.0 && s->dim[2] > 0.0 && isfinite(s->dim[0]) &&
              isfinite(s->dim[2])))
            return GF_ERROR(GF_ERR_INPUT, "a triangle needs finite corners and a nonzero area");
        return GF_OK;
    default:
        return GF_ERROR(GF_ERR_INPUT, "shape type %d is unknown", (int)s->type);
    }
}

/* ---- mass properties ---------------------------------------------------------------------- */

double gf_shape_volume(const gf_shape *s, const gf_clumps *clumps) {
    const double *d = s->dim;
    switch (s->type) {
    case GF_SHAPE_SPHERE:
        return 4.0 / 3.0 * M_PI * d[0] * d[0] * d[0];
    case GF_SHAPE_BOX:
        return 8.0 * d[0] * d[1] * d[2];
    case GF_SHAPE_CAPSULE:
        return M_PI * d[0] * d[0] * (2.0 * d[1] + 4.0 / 3.0 * d[0]);
    case GF_SHAPE_CYLINDER:
        return 2.0 * M_PI * d[0] * d[0] * d[1];
    case GF_SHAPE_CLUMP:
        return clumps->item[s->clump].volume * d[0] * d[0] * d[0];
    default:
        /* A plane's half-space: unbounded, so that 1 / mass is 0 as for any static body. */
        return INFINITY;
    }
}

void gf_shape_mass_properties(const gf_shape *s, const gf_clumps *clumps, double density,
                              double *mass, double inertia[3]) {
    const double *d = s->dim;
    switch (s->type) {
    case GF_SHAPE_SPHERE: {
        double m = density * gf_shape_volume(s, clumps);
        *mass = m;
        inertia[0] = inertia[1] = inertia[2] = 0.4 * m * d[0] * d[0];
        return;
    }
    case GF_SHAPE_BOX: {
        double m = density * gf_shape_volume(s, clumps);
        double x2 = d[0] * d[0], y2 = d[1] * d[1], z2 = d[2] * d[2];
        *mass = m;
        inertia[0] = m * (y2 + z2) / 3.0;
        inertia[1] = m * (x2 + z2) / 3.0;
        inertia[2] = m * (x2 + y2) / 3.0;
        return;
    }
    case GF_SHAPE_CYLINDER: {
        double m = density * gf_shape_volume(s, clumps);
        double r2 = d[0] * d[0], h2 = d[1] * d[1];
        *mass = m;
        inertia[0] = inertia[1] = m * (0.25 * r2 + h2 / 3.0);
        inertia[2] = 0.5 * m * r2;
        return;
    }
    case GF_SHAPE_CAPSULE: {
        /* A cylinder of length 2h and two hemispheres whose flat faces sit at z = +-h. About its
         * flat face a hemisphere has the transverse moment 2/5 m r^2 of the whole sphere; moving
         * it to its centroid (3r/8 beyond the face) and then to the capsule's centre gives
         * m (2/5 r^2 + h^2 + 3/4 h r) for the pair. */
        double r = d[0], h = d[1], r2 = r * r;
        double mc = density * 2.0 * M_PI * r2 * h;
        double ms = density * 4.0 / 3.0 * M_PI * r2 * r;
        *mass = mc + ms;
        inertia[0] = inertia[1] =
            mc * (0.25 * r2 + h * h / 3.0) + ms * (0.4 * r2 + h * h + 0.75 * h * r);
        inertia[2] = 0.5 * mc * r2 + 0.4 * ms * r2;
        return;
    }
    case GF_SHAPE_CLUMP: {
        const gf_clump *c = &clumps->item[s->clump];
        double sc = d[0], s3 = sc * sc * sc, s5 = s3 * sc * sc;
        *mass = density * c->volume * s3;
        for (int k = 0; k < 3; ++k)
            inertia[k] = density * c->second_moment[k] * s5;
        return;
    }
    default:
        *mass = INFINITY;
        inertia[0] = inertia[1] = inertia[2] = INFINITY;
        return;
    }
}

/* ---- geometry ----------------------------------------------------------------------------- */

double gf_shape_bounding_radius(const gf_shape *s, const gf_clumps *clumps) {
    const double *d = s->dim;
    switch (s->type) {
    case GF_SHAPE_SPHERE:
        return d[0];
    case GF_SHAPE_BOX:
        return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    case GF_SHAPE_CAPSULE:
        return d[0] + d[1];
    case GF_SHAPE_CYLINDER:
        return sqrt(d[0] * d[0] + d[1] * d[1]);
    case GF_SHAPE_CLUMP:
        return clumps->item[s->clump].bounding_radius * d[0];
    case GF_SHAPE_TRIANGLE: {
        double v[3][3];
        gf_shape_triangle_corners(s, v);
        return fmax(gf_norm(v[0]), fmax(gf_norm(v[1]), gf_norm(v[2])));
    }
    default:
        return INFINITY;
    }
}

void gf_shape_triangle_corners(const gf_shape *s, double v[3][3]) {
    const double *d = s->dim;
    double gx = (d[0] + d[1]) / 3.0, gy = d[2] / 3.0;
    const double corner[3][2] = {{0.0, 0.0}, {d[0], 0.0}, {d[1], d[2]}};
    for (int k = 0; k < 3; ++k) {
        v[k][0] = corner[k][0] - gx;
        v[k][1] = corner[k][1] - gy;
        v[k][2] = 0.0;
    }
}

gf_shape gf_shape_triangle(const double c[3][3], double centre[3], double q[4]) {
    double e1[3], n[3], y[3], f[3];
    for (int d = 0; d < 3; ++d) {
        e1[d] = c[1][d] - c[0][d];
        f[d] = c[2][d] - c[0][d];
        centre[d] = (c[0][d] + c[1][d] + c[2][d]) / 3.0;
    }
    double a = gf_norm(e1);
    for (int d = 0; d < 3; ++d)
        e1[d] /= a;
    gf_cross(e1, f, n);
    double len = gf_norm(n);
    for (int d = 0; d < 3; ++d)
        n[d] /= len;
    gf_cross(n, e1, y);
    /* The rotation whose columns are e1, y, n. */
    const double R[3][3] = {{e1[0], y[0], n[0]}, {e1[1], y[1], n[1]}, {e1[2], y[2], n[2]}};
    quat_from_matrix(R, q);
    return shape_make(GF_SHAPE_TRIANGLE, a, gf_dot(f, e1), gf_dot(f, y));
}

/* The unit vector along d; +z for a zero d, so that the support stays a point of the body. */
static void unit_or_z(const double d[3], double u[3]) {
    double n = gf_norm(d);
    if (n > 0.0) {
        u[0] = d[0] / n;
        u[1] = d[1] / n;
        u[2] = d[2] / n;
    } else {
        u[0] = u[1] = 0.0;
        u[2] = 1.0;
    }
}

void gf_shape_support(const gf_shape *s, const gf_clumps *clumps, const double d[3],
                      double out[3]) {
    const double *dim = s->dim;
    double u[3];
    switch (s->type) {
    case GF_SHAPE_SPHERE:
        unit_or_z(d, u);
        out[0] = dim[0] * u[0];
        out[1] = dim[0] * u[1];
        out[2] = dim[0] * u[2];
        return;
    case GF_SHAPE_BOX:
        out[0] = copysign(dim[0], d[0]);
        out[1] = copysign(dim[1], d[1]);
        out[2] = copysign(dim[2], d[2]);
        return;
    case GF_SHAPE_CAPSULE:
        unit_or_z(d, u);
        out[0] = dim[0] * u[0];
        out[1] = dim[0] * u[1];
        out[2] = dim[0] * u[2] + copysign(dim[1], d[2]);
        return;
    case GF_SHAPE_CYLINDER: {
        /* Along the axis the whole cap is extreme: its centre is reported. */
        double rho = sqrt(d[0] * d[0] + d[1] * d[1]);
        double f = rho > 0.0 ? dim[0] / rho : 0.0;
        out[0] = f * d[0];
        out[1] = f * d[1];
        out[2] = copysign(dim[1], d[2]);
        return;
    }
    case GF_SHAPE_TRIANGLE: {
        double v[3][3];
        gf_shape_triangle_corners(s, v);
        int best = 0;
        for (int k = 1; k < 3; ++k)
            if (gf_dot(v[k], d) > gf_dot(v[best], d))
                best = k;
        memcpy(out, v[best], sizeof v[best]);
        return;
    }
    case GF_SHAPE_CLUMP: {
        const gf_clump *c = &clumps->item[s->clump];
        unit_or_z(d, u);
        int best = 0;
        double best_h = -INFINITY;
        for (int k = 0; k < c->count; ++k) {
            double h = gf_dot(c->centre[k], u) + c->radius[k];
            if (h > best_h) {
                best_h = h;
                best = k;
            }
        }
        double sc = dim[0];
        for (int a = 0; a < 3; ++a)
            out[a] = sc * (c->centre[best][a] + c->radius[best] * u[a]);
        return;
    }
    default:
        /* The half-space z <= 0 is unbounded in every direction but +z: its supremum is reached
         * only at infinity, reported as such. */
        out[0] = d[0] == 0.0 ? 0.0 : copysign(INFINITY, d[0]);
        out[1] = d[1] == 0.0 ? 0.0 : copysign(INFINITY, d[1]);
        out[2] = d[2] < 0.0 ? -INFINITY : 0.0;
        return;
    }
}

int gf_shape_contains(const gf_shape *s, const gf_clumps *clumps, const double p[3]) {
    const double *d = s->dim;
    switch (s->type) {
    case GF_SHAPE_SPHERE:
        return gf_dot(p, p) <= d[0] * d[0];
    case GF_SHAPE_BOX:
        return fabs(p[0]) <= d[0] && fabs(p[1]) <= d[1] && fabs(p[2]) <= d[2];
    case GF_SHAPE_CAPSULE: {
        double z = fabs(p[2]) - d[1];
        double dz = z > 0.0 ? z : 0.0;
        return p[0] * p[0] + p[1] * p[1] + dz * dz <= d[0] * d[0];
    }
    case GF_SHAPE_CYLINDER:
        return p[0] * p[0] + p[1] * p[1] <= d[0] * d[0] && fabs(p[2]) <= d[1];
    case GF_SHAPE_CLUMP: {
        const gf_clump *c = &clumps->item[s->clump];
        double q[3] = {p[0] / d[0], p[1] / d[0], p[2] / d[0]};
        for (int k = 0; k < c->count; ++k) {
            double e[3] = {q[0] - c->centre[k][0], q[1] - c->centre[k][1], q[2] - c->centre[k][2]};
            if (gf_dot(e, e) <= c->radius[k] * c->radius[k])
                return 1;
        }
        return 0;
    }
    case GF_SHAPE_PLANE:
        return p[2] <= 0.0;
    default:
        return 0;
    }
}

/* ---- clump templates ---------------------------------------------------------------------- */

/* Volume, first and second moments of a union of spheres.
 *
 * The divergence theorem turns them into integrals over the union's boundary, which is made of
 * the parts of each sphere not inside another one (div(x_a x_b x) = 5 x_a x_b, and likewise for
 * the lower degrees):
 *   V = 1/3 oint x.n dA,
 *   int x_a dV = 1/4 oint x_a (x.n) dA,
 *   int x_a x_b dV = 1/5 oint x_a x_b (x.n) dA.
 * On sphere i (centre c, radius r) x = c + r u and n = u, so the integrands are polynomials of
 * degree <= 3 in the unit vector u, and all that is needed are the 20 moments int u^k dOmega
 * (|k| <= 3) over the exposed part of the unit sphere. Each other sphere j hides a cap
 * u.e_j > t_j. In polar coordinates (s = cos(polar angle), phi) the hidden part of a latitude
 * circle is a union of arcs known in closed form, and so are the phi-integrals of the
 * trigonometric monomials over the remaining arcs: only the integral over s is numerical. It is
 * smooth between the latitudes where a cap's rim touches the latitude circle (square-root
 * behaviour) and where two rims cross on the exposed boundary (kinks); these split [-1, 1], and
 * on each piece the substitution s = a + (b - a)(1 - cos tau)/2 makes the square roots at the
 * ends smooth, so that adaptive Gauss-Kronrod quadrature converges fast.
 *
 * Accuracy: the quadrature stops at an error estimate of 1e-13 per unit of tau on moments of
 * order 1, so volume and moments come out to about 1e-12 relative or better (two overlapping
 * spheres agree with the lens formula and the disc-slice integrals to 1e-13 or better; the tests
 * demand 1e-12, and the same result in any input frame to 1e-13).
 * A volume octree would need far more time for far less: its error falls only with the square
 * of the cell size. Spheres that nothing overlaps are taken in closed form, so clumps without
 * overlaps are exact. A 32-sphere template takes a few milliseconds. */

#define GF_MOMENTS 20 /* u monomials of degree 0 .. 3 */

typedef struct {
    double e[3]; /* cap axis in the local frame of the sphere */
    double t;    /* the cap is u.e > t */
    double rho;  /* |e| in the local xy plane */
    double phi;  /* azimuth of e */
} sphere_cap;

typedef struct {
    const sphere_cap *cap;
    int ncap;
} cap_set;

/* Monomial exponents of the 20 moments, in the order used throughout. */
static const int moment_exp[GF_MOMENTS][3] = {
    {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {2, 0, 0}, {1, 1, 0}, {1, 0, 1},
    {0, 2, 0}, {0, 1, 1}, {0, 0, 2}, {3, 0, 0}, {2, 1, 0}, {2, 0, 1}, {1, 2, 0},
    {1, 1, 1}, {1, 0, 2}, {0, 3, 0}, {0, 2, 1}, {0, 1, 2}, {0, 0, 3}};

/* Antiderivatives of cos^p(phi) sin^q(phi), p + q <= 3, indexed [p][q]. */
static void trig_antiderivatives(double phi, double f[4][4]) {
    double c = cos(phi), s = sin(phi);
    f[0][0] = phi;
    f[1][0] = s;
    f[0][1] = -c;
    f[2][0] = 0.5 * (phi + s * c);
    f[1][1] = 0.5 * s * s;
    f[0][2] = 0.5 * (phi - s * c);
    f[3][0] = s - s * s * s / 3.0;
    f[2][1] = -c * c * c / 3.0;
    f[1][2] = s * s * s / 3.0;
    f[0][3] = -c + c * c * c / 3.0;
}

typedef struct {
    double lo, hi;
} arc;

/* The 20 u-moments integrated over phi along the exposed part of the latitude s. */
static void latitude_moments(const cap_set *cs, double s, double out[GF_MOMENTS]) {
    arc a[2 * GF_CLUMP_MAX_MEMBERS];
    int na = 0;
    double w = sqrt((1.0 - s) * (1.0 + s));
    for (int k = 0; k < GF_MOMENTS; ++k)
        out[k] = 0.0;
    for (int j = 0; j < cs->ncap; ++j) {
        const sphere_cap *c = &cs->cap[j];
        double num = c->t - s * c->e[2], den = c->rho * w;
        if (num >= den)
            continue; /* the cap misses this latitude */
        if (num <= -den)
            return; /* it hides the whole latitude */
        double half = acos(num / den);
        double lo = c->phi - half;
        lo -= 2.0 * M_PI * floor(lo / (2.0 * M_PI));
        double hi = lo + 2.0 * half;
        if (hi > 2.0 * M_PI) {
            a[na++] = (arc){lo, 2.0 * M_PI};
            a[na++] = (arc){0.0, hi - 2.0 * M_PI};
        } else {
            a[na++] = (arc){lo, hi};
        }
    }
    for (int i = 1; i < na; ++i) { /* few arcs: insertion sort */
        arc x = a[i];
        int j = i - 1;
        for (; j >= 0 && a[j].lo > x.lo; --j)
            a[j + 1] = a[j];
        a[j + 1] = x;
    }
    /* The gaps between the merged hidden arcs are the exposed ones. */
    double t[4][4] = {{0.0}}, fa[4][4], fb[4][4];
    double start = 0.0;
    int i = 0;
    for (;;) {
        double end = i < na ? a[i].lo : 2.0 * M_PI;
        if (end > start) {
            trig_antiderivatives(start, fa);
            trig_antiderivatives(end, fb);
            for (int p = 0; p <= 3; ++p)
                for (int q = 0; p + q <= 3; ++q)
                    t[p][q] += fb[p][q] - fa[p][q];
        }
        if (i >= na)
            break;
        double reach = a[i].hi;
        for (++i; i < na && a[i].lo <= reach; ++i)
            reach = fmax(reach, a[i].hi);
        start = fmax(start, reach);
    }
    double wp[4] = {1.0, w, w * w, w * w * w}, sp[4] = {1.0, s, s * s, s * s * s};
    for (int k = 0; k < GF_MOMENTS; ++k) {
        const int *e = moment_exp[k];
        out[k] = wp[e[0] + e[1]] * sp[e[2]] * t[e[0]][e[1]];
    }
}

/* 15-point Gauss-Kronrod rule with its embedded 7-point Gauss rule (QUADPACK's qk15). */
static const double gk_x[8] = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0};
static const double gk_wk[8] = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
static const double gk_wg[4] = {
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

typedef struct {
    const cap_set *cs;
    double sa, sb; /* the latitude interval */
    double tol;    /* accepted error estimate per unit of tau */
} piece;

/* The moments over tau in [ta, tb] of the piece (s = sa + (sb - sa)(1 - cos tau)/2). */
static void integrate_piece(const piece *pc, double ta, double tb, int depth,
                            double acc[GF_MOMENTS]) {
    double kron[GF_MOMENTS] = {0.0}, gauss[GF_MOMENTS] = {0.0}, f[GF_MOMENTS];
    double mid = 0.5 * (ta + tb), half = 0.5 * (tb - ta), ds = 0.5 * (pc->sb - pc->sa);
    for (int n = 0; n < 15; ++n) {
        int k = n < 8 ? n : 14 - n;
        double tau = mid + (n < 8 ? -1.0 : 1.0) * half * gk_x[k];
        double s = pc->sa + ds * (1.0 - cos(tau)), jac = ds * sin(tau) * half;
        latitude_moments(pc->cs, s, f);
        for (int m = 0; m < GF_MOMENTS; ++m) {
            kron[m] += gk_wk[k] * jac * f[m];
            if (k % 2 == 1)
                gauss[m] += gk_wg[k / 2] * jac * f[m];
        }
    }
    double err = 0.0;
    for (int m = 0; m < GF_MOMENTS; ++m)
        err = fmax(err, fabs(kron[m] - gauss[m]));
    if (err <= pc->tol * (tb - ta) || depth >= 40) {
        for (int m = 0; m < GF_MOMENTS; ++m)
            acc[m] += kron[m];
        return;
    }
    integrate_piece(pc, ta, mid, depth + 1, acc);
    integrate_piece(pc, mid, tb, depth + 1, acc);
}

/* A point u of the unit sphere lies strictly inside a cap other than skip1, skip2, by more than
 * a rounding margin: such a point of a rim is no singularity of the latitude integrals. */
static int hidden(const cap_set *cs, const double u[3], int skip1, int skip2) {
    for (int m = 0; m < cs->ncap; ++m)
        if (m != skip1 && m != skip2 && gf_dot(u, cs->cap[m].e) > cs->cap[m].t + 1e-9)
            return 1;
    return 0;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The 20 u-moments over the part of the unit sphere outside all caps. */
static void exposed_moments(const cap_set *cs, double out[GF_MOMENTS]) {
    enum { MAXB = 2 * GF_CLUMP_MAX_MEMBERS + GF_CLUMP_MAX_MEMBERS * GF_CLUMP_MAX_MEMBERS + 2 };
    double brk[MAXB];
    int nb = 0;
    brk[nb++] = -1.0;
    brk[nb++] = 1.0;
    const double ez[3] = {0.0, 0.0, 1.0};
    for (int j = 0; j < cs->ncap; ++j) {
        const sphere_cap *c = &cs->cap[j];
        if (c->rho < 1e-12) { /* the rim is itself a latitude */
            brk[nb++] = c->t * c->e[2];
            continue;
        }
        /* The rim's points nearest to and farthest from the pole lie on the great circle
         * through the pole and e. */
        double m[3] = {ez[0] - c->e[2] * c->e[0], ez[1] - c->e[2] * c->e[1],
                       ez[2] - c->e[2] * c->e[2]};
        double mn = gf_norm(m), sb = sqrt(fmax(0.0, 1.0 - c->t * c->t));
        for (int sign = -1; sign <= 1; sign += 2) {
            double u[3];
            for (int a = 0; a < 3; ++a)
                u[a] = c->t * c->e[a] + sign * sb * m[a] / mn;
            if (!hidden(cs, u, j, -1))
                brk[nb++] = u[2];
        }
    }
    for (int j = 0; j < cs->ncap; ++j)
        for (int k = j + 1; k < cs->ncap; ++k) {
            const sphere_cap *cj = &cs->cap[j], *ck = &cs->cap[k];
            double g = gf_dot(cj->e, ck->e), cr[3];
            gf_cross(cj->e, ck->e, cr);
            double n2 = gf_dot(cr, cr);
            if (n2 < 1e-24)
                continue; /* coaxial rims do not cross */
            double a = (cj->t - ck->t * g) / n2, b = (ck->t - cj->t * g) / n2;
            double g2 = (1.0 - (a * cj->t + b * ck->t)) / n2;
            if (g2 < 0.0)
                continue;
            double gam = sqrt(g2);
            for (int sign = -1; sign <= 1; sign += 2) {
                double u[3];
                for (int d = 0; d < 3; ++d)
                    u[d] = a * cj->e[d] + b * ck->e[d] + sign * gam * cr[d];
                if (!hidden(cs, u, j, k))
                    brk[nb++] = u[2];
            }
        }
    for (int k = 0; k < nb; ++k)
        brk[k] = fmin(1.0, fmax(-1.0, brk[k]));
    qsort(brk, (size_t)nb, sizeof *brk, compare_double);
    for (int m = 0; m < GF_MOMENTS; ++m)
        out[m] = 0.0;
    for (int k = 0; k + 1 < nb; ++k) {
        if (!(brk[k + 1] - brk[k] > 1e-15))
            continue;
        piece pc = {.cs = cs, .sa = brk[k], .sb = brk[k + 1], .tol = 1e-13};
        integrate_piece(&pc, 0.0, M_PI, 0, out);
    }
}

static int moment_index(int ex, int ey, int ez) {
    for (int k = 0; k < GF_MOMENTS; ++k)
        if (moment_exp[k][0] == ex && moment_exp[k][1] == ey && moment_exp[k][2] == ez)
            return k;
    return -1;
}

/* int u_a u_b ... over the exposed part, for the listed axes (at most 3, -1 ends the list). */
static double moment(const double mom[GF_MOMENTS], int a, int b, int c) {
    int e[3] = {0, 0, 0};
    if (a >= 0)
        e[a]++;
    if (b >= 0)
        e[b]++;
    if (c >= 0)
        e[c]++;
    return mom[moment_index(e[0], e[1], e[2])];
}

typedef struct {
    double v;       /* volume */
    double p[3];    /* int x dV */
    double s[3][3]; /* int x x^T dV */
} body_moments;

/* Adds the boundary integrals over the exposed part of sphere (c, r) (c relative to the
 * reference point), whose exposed unit-sphere moments are `mom` in the local frame `axis`
 * (rows: local x, y, z in the input frame). */
static void add_sphere_surface(const double c[3], double r, const double axis[3][3],
                               const double mom[GF_MOMENTS], body_moments *acc) {
    double cl[3];
    for (int a = 0; a < 3; ++a)
        cl[a] = gf_dot(axis[a], c);
    /* k0 = int (c.u + r), k1_a = int u_a (c.u + r), k2_ab = int u_a u_b (c.u + r). */
    double k0 = r * moment(mom, -1, -1, -1), k1[3], k2[3][3];
    for (int a = 0; a < 3; ++a) {
        k0 += cl[a] * moment(mom, a, -1, -1);
        k1[a] = r * moment(mom, a, -1, -1);
        for (int d = 0; d < 3; ++d)
            k1[a] += cl[d] * moment(mom, a, d, -1);
        for (int b = 0; b < 3; ++b) {
            k2[a][b] = r * moment(mom, a, b, -1);
            for (int d = 0; d < 3; ++d)
                k2[a][b] += cl[d] * moment(mom, a, b, d);
        }
    }
    double r2 = r * r, pl[3], sl[3][3];
    double v = r2 / 3.0 * k0;
    for (int a = 0; a < 3; ++a) {
        pl[a] = r2 / 4.0 * (cl[a] * k0 + r * k1[a]);
        for (int b = 0; b < 3; ++b)
            sl[a][b] = r2 / 5.0 *
                       (cl[a] * cl[b] * k0 + r * (cl[a] * k1[b] + cl[b] * k1[a]) + r2 * k2[a][b]);
    }
    acc->v += v;
    for (int a = 0; a < 3; ++a)
        for (int la = 0; la < 3; ++la) {
            acc->p[a] += axis[la][a] * pl[la];
            for (int b = 0; b < 3; ++b)
                for (int lb = 0; lb < 3; ++lb)
                    acc->s[a][b] += axis[la][a] * sl[la][lb] * axis[lb][b];
        }
}

/* Whether ball i lies inside ball j; of two equal balls the later one counts as inside. */
static int ball_inside(int i, int j, const double c[][3], const double r[]) {
    double e[3] = {c[j][0] - c[i][0], c[j][1] - c[i][1], c[j][2] - c[i][2]};
    double d = gf_norm(e);
    if (d == 0.0 && r[i] == r[j])
        return i > j;
    return d + r[i] <= r[j];
}

/* The volume and moments of the union of balls (centres relative to the reference point). */
static void union_moments(int n, const double c[][3], const double r[], body_moments *acc) {
    memset(acc, 0, sizeof *acc);
    int inside[GF_CLUMP_MAX_MEMBERS];
    for (int i = 0; i < n; ++i) {
        inside[i] = 0;
        for (int j = 0; j < n && !inside[i]; ++j)
            inside[i] = j != i && ball_inside(i, j, c, r);
    }
    /* Candidate polar axes: the one farthest from every rim keeps the poles smooth. */
    static const double cand[7][3] = {{1, 0, 0},  {0, 1, 0},  {0, 0, 1}, {1, 1, 1},
                                      {1, 1, -1}, {1, -1, 1}, {-1, 1, 1}};
    for (int i = 0; i < n; ++i) {
        if (inside[i])
            continue;
        double dir[GF_CLUMP_MAX_MEMBERS][3], t[GF_CLUMP_MAX_MEMBERS];
        int ncap = 0, buried = 0;
        for (int j = 0; j < n; ++j) {
            if (j == i || inside[j])
                continue;
            double e[3] = {c[j][0] - c[i][0], c[j][1] - c[i][1], c[j][2] - c[i][2]};
            double d = gf_norm(e);
            /* (r_i^2 + d^2 - r_j^2) / (2 r_i d), without losing d^2 against r^2 when the
             * centres nearly coincide. */
            double tj = (d * d + (r[i] - r[j]) * (r[i] + r[j])) / (2.0 * r[i] * d);
            if (tj >= 1.0)
                continue; /* apart or touching */
            if (tj <= -1.0) {
                buried = 1; /* rounding: i is inside j after all */
                break;
            }
            for (int a = 0; a < 3; ++a)
                dir[ncap][a] = e[a] / d;
            t[ncap++] = tj;
        }
        if (buried)
            continue;
        double v = 4.0 / 3.0 * M_PI * r[i] * r[i] * r[i];
        if (ncap == 0) { /* closed form */
            acc->v += v;
            for (int a = 0; a < 3; ++a) {
                acc->p[a] += v * c[i][a];
                for (int b = 0; b < 3; ++b)
                    acc->s[a][b] += v * (c[i][a] * c[i][b] + (a == b ? 0.2 * r[i] * r[i] : 0.0));
            }
            continue;
        }
        int best = 0;
        double best_clear = -1.0;
        for (int k = 0; k < 7; ++k) {
            double z[3] = {cand[k][0], cand[k][1], cand[k][2]}, nz = gf_norm(z);
            double clear = INFINITY;
            for (int j = 0; j < ncap; ++j) {
                double th = acos(fmax(-1.0, fmin(1.0, gf_dot(z, dir[j]) / nz)));
                double beta = acos(t[j]);
                clear = fmin(clear, fmin(fabs(th - beta), fabs(M_PI - th - beta)));
            }
            if (clear > best_clear) {
                best_clear = clear;
                best = k;
            }
        }
        double axis[3][3];
        double nz = gf_norm(cand[best]);
        for (int a = 0; a < 3; ++a)
            axis[2][a] = cand[best][a] / nz;
        gf_orthonormal(axis[2], axis[0]);
        gf_cross(axis[2], axis[0], axis[1]);
        sphere_cap cap[GF_CLUMP_MAX_MEMBERS];
        for (int j = 0; j < ncap; ++j) {
            for (int a = 0; a < 3; ++a)
                cap[j].e[a] = gf_dot(axis[a], dir[j]);
            cap[j].t = t[j];
            cap[j].rho = hypot(cap[j].e[0], cap[j].e[1]);
            cap[j].phi = atan2(cap[j].e[1], cap[j].e[0]);
        }
        cap_set cs = {cap, ncap};
        double mom[GF_MOMENTS];
        exposed_moments(&cs, mom);
        add_sphere_surface(c[i], r[i], axis, mom, acc);
    }
}

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations: a = v diag(w) v^T,
 * the eigenvectors in the columns of v. */
static void jacobi3(const double m[3][3], double w[3], double v[3][3]) {
    double a[3][3];
    memcpy(a, m, sizeof a);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            v[i][j] = i == j ? 1.0 : 0.0;
    for (int sweep = 0; sweep < 50; ++sweep) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        double diag = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off <= 1e-17 * diag || off == 0.0)
            break;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0.0)
                    continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 3; ++k) { /* a <- a J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; ++k) { /* a <- J^T a */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; ++k) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 3; ++i)
        w[i] = a[i][i];
}

/* The unit quaternion (w >= 0) of the rotation matrix m. */
static void quat_from_matrix(const double m[3][3], double q[4]) {
    double tr = m[0][0] + m[1][1] + m[2][2];
    if (tr > 0.0) {
        double s = 2.0 * sqrt(tr + 1.0);
        q[0] = 0.25 * s;
        q[1] = (m[2][1] - m[1][2]) / s;
        q[2] = (m[0][2] - m[2][0]) / s;
        q[3] = (m[1][0] - m[0][1]) / s;
    } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
        double s = 2.0 * sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]);
        q[0] = (m[2][1] - m[1][2]) / s;
        q[1] = 0.25 * s;
        q[2] = (m[0][1] + m[1][0]) / s;
        q[3] = (m[0][2] + m[2][0]) / s;
    } else if (m[1][1] > m[2][2]) {
        double s = 2.0 * sqrt(1.0 + m[1][1] - m[0][0] - m[2][2]);
        q[0] = (m[0][2] - m[2][0]) / s;
        q[1] = (m[0][1] + m[1][0]) / s;
        q[2] = 0.25 * s;
        q[3] = (m[1][2] + m[2][1]) / s;
    } else {
        double s = 2.0 * sqrt(1.0 + m[2][2] - m[0][0] - m[1][1]);
        q[0] = (m[1][0] - m[0][1]) / s;
        q[1] = (m[0][2] + m[2][0]) / s;
        q[2] = (m[1][2] + m[2][1]) / s;
        q[3] = 0.25 * s;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double sg = q[0] < 0.0 ? -1.0 : 1.0;
    for (int k = 0; k < 4; ++k)
        q[k] *= sg / n;
}

gf_status gf_clump_make(int count, const double centre[][3], const double radius[], gf_clump *out) {
    if (count < 1 || count > GF_CLUMP_MAX_MEMBERS)
        return GF_ERROR(GF_ERR_INPUT, "a clump needs 1 to %d spheres, not %d", GF_CLUMP_MAX_MEMBERS,
                        count);
    for (int k = 0; k < count; ++k) {
        if (!(isfinite(radius[k]) && radius[k] > 0.0))
            return GF_ERROR(GF_ERR_INPUT,
                            "clump sphere %d has radius %g: it must be finite and positive", k,
                            radius[k]);
        if (!(isfinite(centre[k][0]) && isfinite(centre[k][1]) && isfinite(centre[k][2])))
            return GF_ERROR(GF_ERR_INPUT, "clump sphere %d has a non-finite centre (%g, %g, %g)", k,
                            centre[k][0], centre[k][1], centre[k][2]);
    }
    /* Moments about the mean centre keep the cancellations of the surface integrals small. */
    double ref[3] = {0.0, 0.0, 0.0}, c[GF_CLUMP_MAX_MEMBERS][3];
    for (int k = 0; k < count; ++k)
        gf_axpy(1.0 / count, centre[k], ref);
    for (int k = 0; k < count; ++k)
        for (int a = 0; a < 3; ++a)
            c[k][a] = centre[k][a] - ref[a];
    body_moments bm;
    union_moments(count, (const double(*)[3])c, radius, &bm);
    if (!(bm.v > 0.0) || !isfinite(bm.v))
        return GF_ERROR(GF_ERR_NUMERIC, "the volume of a clump of %d spheres came out as %g", count,
                        bm.v);
    double com[3], inertia[3][3];
    for (int a = 0; a < 3; ++a)
        com[a] = bm.p[a] / bm.v;
    /* Second moments about the centre of mass, then the inertia tensor per unit density. */
    double sc[3][3];
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            sc[a][b] = 0.5 * (bm.s[a][b] + bm.s[b][a]) - bm.v * com[a] * com[b];
    double tr = sc[0][0] + sc[1][1] + sc[2][2];
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            inertia[a][b] = (a == b ? tr : 0.0) - sc[a][b];
    double w[3], v[3][3];
    jacobi3(inertia, w, v);
    /* Ascending moments; each of the first two axes with its largest component positive, the
     * third completing a right-handed frame: the same input gives the same frame. */
    int order[3] = {0, 1, 2};
    for (int i = 1; i < 3; ++i)
        for (int j = i; j > 0 && w[order[j]] < w[order[j - 1]]; --j) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    double rot[3][3], col[3][3];
    for (int k = 0; k < 3; ++k) {
        for (int a = 0; a < 3; ++a)
            col[k][a] = v[a][order[k]];
        if (k == 2)
            break;
        int big = 0;
        for (int a = 1; a < 3; ++a)
            if (fabs(col[k][a]) > fabs(col[k][big]))
                big = a;
        if (col[k][big] < 0.0)
            for (int a = 0; a < 3; ++a)
                col[k][a] = -col[k][a];
    }
    gf_cross(col[0], col[1], col[2]);
    for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 3; ++k)
            rot[a][k] = col[k][a];

    memset(out, 0, sizeof *out);
    out->count = count;
    out->volume = bm.v;
    for (int k = 0; k < 3; ++k) {
        out->second_moment[k] = w[order[k]];
        out->com_input[k] = com[k] + ref[k];
    }
    quat_from_matrix(rot, out->q_input);
    double bound = 0.0;
    for (int k = 0; k < count; ++k) {
        double e[3] = {c[k][0] - com[0], c[k][1] - com[1], c[k][2] - com[2]};
        for (int a = 0; a < 3; ++a)
            out->centre[k][a] = gf_dot(col[a], e);
        out->radius[k] = radius[k];
        bound = fmax(bound, gf_norm(out->centre[k]) + radius[k]);
    }
    out->bounding_radius = bound;
    return GF_OK;
}

void gf_clumps_init(gf_clumps *c) {
    c->count = 0;
    c->item = NULL;
}

void gf_clumps_free(gf_clumps *c) {
    free(c->item);
    gf_clumps_init(c);
}

gf_status gf_clumps_add(gf_clumps *c, const gf_clump *clump, int32_t *index) {
    if (c->count >= (size_t)INT32_MAX)
        return GF_ERROR(GF_ERR_INPUT, "too many clump templates (%zu)", c->count);
    GF_TRY(gf_grow((void **)&c->item, c->count + 1, sizeof *c->item));
    c->item[c->count] = *clump;
    if (index)
        *index = (int32_t)c->count;
    c->count++;
    return GF_OK;
}
