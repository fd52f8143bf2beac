/* Convex bodies (boxes, capsules, cylinders) against triangle meshes.
 *
 * Each triangle near the body is a convex body of its own (GF_SHAPE_TRIANGLE), so the general
 * convex test gives the pair's normal, gap and manifold: exact for the lone triangle. What the
 * mesh adds is which of those contacts are the surface's. A triangle's contact comes through a
 * feature of it, its face, an edge or a corner, the one farthest along the contact normal. When
 * a neighbour sharing that feature reaches farther along the normal, the contact is not one of
 * the surface: the neighbour's material lies beyond it (a body near a flat seam between two
 * triangles, taken against one of them alone, is pushed sideways across the seam's edge; one
 * pressed slightly into the mesh, sideways out of a lone triangle). Such a triangle is taken
 * along its face normal instead, on the side of the body's centre: whatever of the body lies
 * over the triangle touches it through its face, and the manifold's clipping keeps just those
 * points. A feature several triangles share (a ridge's edge, a corner) gives its contact once,
 * from the first of them that finds it a contact of the surface: for bodies apart from the mesh
 * the normal of the nearest points is unique and every one of them finds it, but a body pressed
 * in may be pushed out of a lone triangle sideways, and then only some of them do.
 *
 * This is the rule the sphere query of the mesh applies (trimesh.c), which a sphere can apply
 * to its closest points directly. */
#include <math.h>

#include "collide_internal.h"
#include "core/vec.h"

/* Corners count as equally far along a normal when they differ by at most this per unit of
 * their distance (a sine). The convex test's gaps are exact, but where the gap is flat in a
 * direction (a cylinder's rim along a ridge) its normal is known only to about the square root
 * of the gap's precision, 1e-4 and less; the normals of wrong contacts (sideways out of a lone
 * triangle, or across a flat seam) are off by far more, and surfaces bend by more at their
 * edges (a drum of 512 facets by 1.2e-2). */
#define EXTREME_SLOPE 1e-3
/* The same for normals within 2 degrees of the triangle's own (FACE_COS): rounding only. */
#define FACING_SLOPE 1e-9
/* A point counts as over a triangle when it lies outside its edges by at most this fraction of
 * the edge's length: clipped points on an edge are on it to rounding. */
#define OVER_TOLERANCE 1e-9
/* Edges and corners reported for one body, kept to report each once (past this many a shared
 * feature may come twice: a repeated contact, harmless to the solver). */
#define SHARED_MAX 64
/* The cosine of 2 degrees: the manifold takes a face's normal as the contact's within that. */
#define FACE_COS 0.99939082701909573

/* The key of triangle t's face: the whole mesh's number of the triangle. */
static int32_t face_key(const gf_trimesh *m, size_t t) {
    return m->tri_id ? m->tri_id[t] : (int32_t)t;
}

/* Whether the point p (mesh frame) lies over triangle t along its normal, to rounding. */
static int over_triangle(const gf_trimesh *m, size_t t, const double p[3]) {
    const double *nf = m->normal[t];
    for (int k = 0; k < 3; ++k) {
        const double *a = m->v[m->tri[t][k]], *b = m->v[m->tri[t][(k + 1) % 3]];
        double e[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double r[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]}, c[3];
        gf_cross(e, r, c);
        /* (e x r).n / |e| is p's distance inside the edge */
        if (gf_dot(c, nf) < -OVER_TOLERANCE * gf_dot(e, e))
            return 0;
    }
    return 1;
}

/* The manifold of body a and triangle t (as body b) along the triangle's normal, on the side
 * `side` gives the sign of, kept to the points over the triangle: whatever of the body lies
 * over the face touches it through the face. (The manifold adds the bodies' deepest pair along
 * the normal when clipping loses it, which for a body beside the triangle's plane, over a
 * neighbouring face past a ridge, lies off the triangle; the clipped points no deeper than the
 * lone triangle's gap allows stay beside it, so a body across a flat seam whose deepest point
 * is over the neighbour keeps its points over this triangle: a box sank 0.09 mm into a cone's
 * facet that had lost them.) */
static gf_status face_points(const gf_body_pose *a, const gf_body_pose *b, const gf_trimesh *m,
                             size_t t, const double x[3], const double q[4], double side,
                             double gap, double margin, gf_contact_point pts[GF_MANIFOLD_MAX],
                             int *count) {
    const double *nf = m->normal[t];
    double sg = side < 0.0 ? -1.0 : 1.0, ns[3] = {sg * nf[0], sg * nf[1], sg * nf[2]}, nw[3];
    gf_quat_rotate(q, ns, nw);
    GF_TRY(gf_error_context(gf_manifold_build(a, b, nw, gap, margin, pts, count),
                            "triangle %d of a mesh", (int)face_key(m, t)));
    int kept = 0;
    for (int k = 0; k < *count; ++k) {
        double pd[3] = {pts[k].p[0] - x[0], pts[k].p[1] - x[1], pts[k].p[2] - x[2]}, pl[3];
        gf_quat_rotate_inv(q, pd, pl);
        if (over_triangle(m, t, pl))
            pts[kept++] = pts[k];
    }
    *count = kept;
    return GF_OK;
}

gf_status gf_collide_mesh(const gf_body_pose *a, const gf_trimesh *m, const double x[3],
                          const double q[4], double margin, int32_t **tri, size_t *captri,
                          gf_collide_mesh_fn fn, void *ctx) {
    double reach = gf_shape_bounding_radius(a->shape, a->clumps) + margin;
    double d[3] = {a->x[0] - x[0], a->x[1] - x[1], a->x[2] - x[2]}, local[3];
    gf_quat_rotate_inv(q, d, local);
    size_t n = 0;
    GF_TRY(gf_trimesh_candidates(m, local, reach, tri, captri, &n));
    int32_t shared[SHARED_MAX];
    int nshared = 0;
    for (size_t u = 0; u < n; ++u) {
        size_t t = (size_t)(*tri)[u];
        double closest[3];
        gf_trimesh_closest(m, t, local, closest);
        double e[3] = {local[0] - closest[0], local[1] - closest[1], local[2] - closest[2]};
        if (gf_dot(e, e) >= reach * reach)
            continue;
        double corner[3][3];
        for (int k = 0; k < 3; ++k) {
            gf_quat_rotate(q, m->v[m->tri[t][k]], corner[k]);
            for (int j = 0; j < 3; ++j)
                corner[k][j] += x[j];
        }
        gf_shape shape;
        gf_body_pose b = {&shape, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
        shape = gf_shape_triangle(corner, b.x, b.q);
        gf_contact_point pts[GF_MANIFOLD_MAX];
        int count = 0;
        GF_TRY(gf_error_context(gf_collide(a, &b, margin, pts, GF_MANIFOLD_MAX, &count),
                                "triangle %d of a mesh", (int)face_key(m, t)));
        if (count == 0)
            continue;
        double nl[3];
        gf_quat_rotate_inv(q, pts[0].n, nl);
        const double *nf = m->normal[t];
        double along = gf_dot(nl, nf);
        /* A normal within 2 degrees of the face's that the manifold did not take as the face's
         * comes through an edge or corner of a triangle the body is not over: the surface's
         * only where the neighbours fall away clearly (a boundary, a ridge); across a flat seam
         * the neighbour's face gives the contact. */
        int surface;
        int32_t key = gf_trimesh_extreme(
            m, t, nl, fabs(along) >= FACE_COS ? FACING_SLOPE : EXTREME_SLOPE, &surface);
        if (surface && key >= (int32_t)m->key_nt) {
            /* an edge or corner: the first triangle sharing it that finds it reports it */
            int seen = 0;
            for (int k = 0; k < nshared && !seen; ++k)
                seen = shared[k] == key;
            if (seen)
                continue;
            if (nshared < SHARED_MAX)
                shared[nshared++] = key;
        }
        if (!surface) {
            /* the face on the side of the body's centre */
            const double *v0 = m->v[m->tri[t][0]];
            double r[3] = {local[0] - v0[0], local[1] - v0[1], local[2] - v0[2]};
            double gap = pts[0].gap;
            for (int k = 1; k < count; ++k)
                gap = fmin(gap, pts[k].gap);
            GF_TRY(face_points(a, &b, m, t, x, q, gf_dot(r, nf), gap, margin, pts, &count));
            key = face_key(m, t);
        }
        for (int k = 0; k < count; ++k)
            GF_TRY(fn(ctx, key * GF_MANIFOLD_MAX + k, &pts[k]));
    }
    return GF_OK;
}
