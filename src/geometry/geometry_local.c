/* Meshes under MPI: each rank keeps the triangles its particles can meet during the run.
 *
 * A rank's particles meet a mesh only in a region about its subdomain (gf_walls_region); which
 * triangles can come into it depends on how the mesh moves, over the whole run, so the choice
 * is made once: a static mesh's triangles where they lie; a mesh turning about a fixed axis
 * sweeps each triangle over a body of revolution, so a triangle is kept when its range of
 * (distance from the axis, position along it) meets the region's, whatever the number of
 * turns; a mesh that translates keeps everything. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry.h"
#include "core/vec.h"

void gf_walls_region(const gf_decomp *d, double halo, double lo[3], double hi[3]) {
    for (int a = 0; a < 3; ++a) {
        lo[a] = d->coords[a] == 0 ? -INFINITY : d->sub_lo[a] - halo;
        hi[a] = d->coords[a] == d->dims[a] - 1 ? INFINITY : d->sub_hi[a] + halo;
    }
}

int gf_walls_region_owner(const gf_decomp *d, const double x[3]) {
    int cell[3];
    for (int a = 0; a < 3; ++a)
        cell[a] = gf_decomp_slab(d, a, x[a]);
    return d->rank_of[(cell[2] * d->dims[1] + cell[1]) * d->dims[0] + cell[0]];
}

/* The range of distance from the line through p along unit a and of position along it. */
typedef struct {
    double rho[2], z[2];
} axial_range;

static void axial_point(const double p[3], const double a[3], const double x[3], double *rho,
                        double *z) {
    double r[3] = {x[0] - p[0], x[1] - p[1], x[2] - p[2]};
    *z = gf_dot(r, a);
    double perp[3] = {r[0] - *z * a[0], r[1] - *z * a[1], r[2] - *z * a[2]};
    *rho = gf_norm(perp);
}

/* Distance of the segment [x0, x1] from the line (p, a): the squared distance from the line is
 * a quadratic of the segment's parameter. */
static double line_segment(const double p[3], const double a[3], const double x0[3],
                           const double x1[3]) {
    double u[3], d[3];
    for (int e = 0; e < 3; ++e) {
        u[e] = x0[e] - p[e];
        d[e] = x1[e] - x0[e];
    }
    double ua = gf_dot(u, a), da = gf_dot(d, a);
    for (int e = 0; e < 3; ++e) {
        u[e] -= ua * a[e];
        d[e] -= da * a[e];
    }
    double dd = gf_dot(d, d), s = dd > 0.0 ? -gf_dot(u, d) / dd : 0.0;
    s = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s);
    double q[3] = {u[0] + s * d[0], u[1] + s * d[1], u[2] + s * d[2]};
    return gf_norm(q);
}

/* A triangle's axial range: along the axis and farthest from it at corners (linear and convex
 * functions); nearest 0 where the line pierces it, else on an edge. */
static axial_range triangle_range(const double p[3], const double a[3], const double c[3][3]) {
    axial_range r = {{INFINITY, -INFINITY}, {INFINITY, -INFINITY}};
    for (int k = 0; k < 3; ++k) {
        double rho, z;
        axial_point(p, a, c[k], &rho, &z);
        r.rho[1] = fmax(r.rho[1], rho);
        r.z[0] = fmin(r.z[0], z);
        r.z[1] = fmax(r.z[1], z);
        r.rho[0] = fmin(r.rho[0], line_segment(p, a, c[k], c[(k + 1) % 3]));
    }
    /* Pierced: the axis's point lies inside the triangle's projection along the axis. */
    double e1[3], e2[3], side[3];
    gf_orthonormal(a, e1);
    gf_cross(a, e1, e2);
    double u[3], v[3];
    for (int k = 0; k < 3; ++k) {
        double r3[3] = {c[k][0] - p[0], c[k][1] - p[1], c[k][2] - p[2]};
        u[k] = gf_dot(r3, e1);
        v[k] = gf_dot(r3, e2);
    }
    for (int k = 0; k < 3; ++k) {
        int j = (k + 1) % 3;
        side[k] = u[k] * v[j] - u[j] * v[k]; /* origin's side of edge k (2D cross product) */
    }
    if ((side[0] > 0.0 && side[1] > 0.0 && side[2] > 0.0) ||
        (side[0] < 0.0 && side[1] < 0.0 && side[2] < 0.0))
        r.rho[0] = 0.0;
    return r;
}

/* A (finite) box's axial range: corners bound it but for the nearest distance, 0 where the line
 * crosses the box, else on one of its 12 edges (the outline of its projection along the axis). */
static axial_range box_range(const double p[3], const double a[3], const double lo[3],
                             const double hi[3]) {
    axial_range r = {{INFINITY, -INFINITY}, {INFINITY, -INFINITY}};
    double corner[8][3];
    for (int k = 0; k < 8; ++k) {
        for (int e = 0; e < 3; ++e)
            corner[k][e] = (k >> e) & 1 ? hi[e] : lo[e];
        double rho, z;
        axial_point(p, a, corner[k], &rho, &z);
        r.rho[1] = fmax(r.rho[1], rho);
        r.z[0] = fmin(r.z[0], z);
        r.z[1] = fmax(r.z[1], z);
    }
    for (int k = 0; k < 8; ++k)
        for (int e = 0; e < 3; ++e)
            if (!((k >> e) & 1))
                r.rho[0] = fmin(r.rho[0], line_segment(p, a, corner[k], corner[k | 1 << e]));
    /* The slab test: the parameter interval of the line inside the box. */
    double t0 = -INFINITY, t1 = INFINITY;
    for (int e = 0; e < 3; ++e) {
        if (a[e] == 0.0) {
            if (p[e] < lo[e] || p[e] > hi[e])
                t0 = INFINITY;
            continue;
        }
        double s0 = (lo[e] - p[e]) / a[e], s1 = (hi[e] - p[e]) / a[e];
        t0 = fmax(t0, fmin(s0, s1));
        t1 = fmin(t1, fmax(s0, s1));
    }
    if (t0 <= t1)
        r.rho[0] = 0.0;
    return r;
}

static int ranges_meet(const axial_range *s, const axial_range *t) {
    return s->rho[0] <= t->rho[1] && t->rho[0] <= s->rho[1] && s->z[0] <= t->z[1] &&
           t->z[0] <= s->z[1];
}

/* Triangle t of mesh k at the mesh's present pose (world frame). */
static void world_corners(const gf_walls *w, size_t k, size_t t, double c[3][3]) {
    const gf_trimesh *m = w->mesh[k];
    for (int j = 0; j < 3; ++j) {
        gf_quat_rotate(w->mesh_q[k], m->v[m->tri[t][j]], c[j]);
        for (int e = 0; e < 3; ++e)
            c[j][e] += w->mesh_x[k][e];
    }
}

/* The triangles of mesh k that can come into [lo, hi] (flags in keep). */
static void near_triangles(const gf_walls *w, size_t k, const double lo[3], const double hi[3],
                           unsigned char *keep) {
    const gf_trimesh *m = w->mesh[k];
    double axis[3] = {0.0, 0.0, 1.0};
    gf_mesh_motion motion = gf_walls_mesh_motion(w, k, axis);
    if (motion == GF_MESH_GENERAL) {
        /* Translating (possibly turning too): anywhere in the run; every triangle. A box swept
         * over the run's time would do for a known motion, schedules make it unknown. */
        memset(keep, 1, m->nt);
        return;
    }
    if (motion == GF_MESH_STATIC) {
        for (size_t t = 0; t < m->nt; ++t) {
            double c[3][3];
            world_corners(w, k, t, c);
            int meets = 1;
            for (int e = 0; e < 3 && meets; ++e) {
                double l = fmin(fmin(c[0][e], c[1][e]), c[2][e]);
                double h = fmax(fmax(c[0][e], c[1][e]), c[2][e]);
                meets = l <= hi[e] && h >= lo[e];
            }
            keep[t] = (unsigned char)meets;
        }
        return;
    }
    /* Turning: the mesh stays within its reach of the pivot, so the region may be cut to the
     * cube about it (finite, which the box's range needs) without losing a triangle. */
    const double *p = w->mesh_x[k];
    double reach = 1.001 * w->mesh_reach[k] + 1e-9 * m->size, blo[3], bhi[3];
    memset(keep, 0, m->nt);
    for (int e = 0; e < 3; ++e) {
        blo[e] = fmax(lo[e], p[e] - reach);
        bhi[e] = fmin(hi[e], p[e] + reach);
        if (!(blo[e] <= bhi[e]))
            return;
    }
    axial_range region = box_range(p, axis, blo, bhi);
    for (size_t t = 0; t < m->nt; ++t) {
        double c[3][3];
        world_corners(w, k, t, c);
        axial_range tr = triangle_range(p, axis, c);
        keep[t] = (unsigned char)ranges_meet(&tr, &region);
    }
}

gf_status gf_walls_localize_meshes(gf_walls *w, const double lo[3], const double hi[3]) {
    for (size_t k = 0; k < w->nmesh; ++k) {
        gf_trimesh *m = w->mesh[k];
        unsigned char *near = gf_malloc(m->nt + 1, 1), *keep = gf_calloc(m->nt + 1, 1);
        gf_trimesh *part = gf_malloc(1, sizeof *part);
        if (!near || !keep || !part) {
            free(near);
            free(keep);
            free(part);
            return gf_error_status();
        }
        near_triangles(w, k, lo, hi, near);
        /* With each triangle kept, its one ring: a feature's rule looks at every triangle
         * holding it, and those share a vertex with it. The ring's own far neighbours may go:
         * a ring triangle lies outside the region, so no particle here has a contact on it. */
        for (size_t t = 0; t < m->nt; ++t) {
            if (!near[t])
                continue;
            for (int j = 0; j < 3; ++j) {
                int32_t v = m->tri[t][j];
                for (int32_t s = m->vert_start[v]; s < m->vert_start[v + 1]; ++s)
                    keep[m->vert_tri[s]] = 1;
            }
        }
        gf_trimesh_init(part);
        gf_status st = gf_trimesh_subset(m, keep, part);
        free(near);
        free(keep);
        if (st != GF_OK) {
            free(part);
            return st;
        }
        gf_trimesh_free(m);
        free(m);
        w->mesh[k] = part;
    }
    return GF_OK;
}
