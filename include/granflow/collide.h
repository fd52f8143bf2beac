/* Narrow-phase contact geometry between two bodies of any shape: the contact manifold.
 *
 * A pair of convex shapes touches in a point, along a segment or over a face; the manifold
 * gives the points a solver needs so that resting bodies neither rock nor creep (a box lying
 * flat on a plane: its 4 corners; an edge on a face: 2 points). A clump yields the points of its
 * member spheres. Each point carries its own normal and signed gap so that the solver's
 * non-penetration condition holds point by point.
 *
 * Conventions: the normal points from body b towards body a (the contact store's convention
 * with a = body 1, b = body 2); the gap is the signed distance of the two surfaces along the
 * normal, negative when they overlap; the point lies midway between the two surfaces, so the
 * lever arms are p - x_a and p - x_b. Points are reported when gap < margin. */
#ifndef GRANFLOW_COLLIDE_H
#define GRANFLOW_COLLIDE_H

#include "granflow/error.h"
#include "granflow/shape.h"
#include "granflow/trimesh.h"

/* The most points one pair of convex shapes yields (a face on a face is reduced to 4). */
#define GF_MANIFOLD_MAX 4

/* A body placed in the world. */
typedef struct {
    const gf_shape *shape;
    const gf_clumps *clumps; /* templates, for clumps; may be NULL otherwise */
    double x[3];             /* centre of mass (for planes a point on the surface) */
    double q[4];             /* orientation, body frame to world, unit (w, x, y, z) */
} gf_body_pose;

typedef struct {
    double n[3]; /* unit, from b towards a */
    double p[3]; /* world position, midway between the surfaces */
    double gap;  /* signed distance, negative on overlap */
} gf_contact_point;

/* The most points the pair may yield: the size of the buffer gf_collide needs. */
int gf_collide_capacity(const gf_body_pose *a, const gf_body_pose *b);

/* Finds the contact points of a and b with gap < margin and writes them to out[0 .. *count).
 * `cap` must be at least gf_collide_capacity(a, b). Fails with GF_ERR_UNSUPPORTED for a pair no
 * contact function exists for (plane with plane) and GF_ERR_NUMERIC for non-finite poses. */
gf_status gf_collide(const gf_body_pose *a, const gf_body_pose *b, double margin,
                     gf_contact_point *out, int cap, int *count);

/* gf_collide for bodies that turn over the step the contacts are for, a by turn_a and b by
 * turn_b (rotation vectors: the axis times the angle, in the world frame, about each body's
 * centre). Where the point of a body nearest the other moves along its surface as the bodies
 * turn, the manifold also holds the point that will be nearest at the step's end, where it is
 * now, its gap the one it would reach less the turn's linear part: a cylinder's rim against a
 * plane, a box's face or a cylinder's cap (a rim rolling or wobbling on a flat face; either body
 * may be the cylinder; appended when `cap` leaves room beyond gf_collide_capacity, else in the
 * place of the highest point but the first, if that lies higher), a sphere against a turning box,
 * cylinder or capsule (an edge sweeping past it), and for every other pair the points of the pair
 * in the turned poses, mapped back to their material points now (a capsule's cap tumbling onto a
 * plane, the member of a turning clump, a cylinder's side), within gf_collide_capacity and only
 * where the turns' second-order displacement exceeds 1e-4 of the smaller body. Meshes are not
 * covered. */
gf_status gf_collide_turning(const gf_body_pose *a, const gf_body_pose *b, const double turn_a[3],
                             const double turn_b[3], double margin, gf_contact_point *out, int cap,
                             int *count);

/* A contact point with a mesh and its key: the surface feature it comes through (a face t, an
 * edge nt + e, a vertex nt + ne + v, as gf_trimesh_hit.key) times GF_MANIFOLD_MAX plus its
 * number in that feature's manifold, the same from step to step while the contact persists. */
typedef gf_status (*gf_collide_mesh_fn)(void *ctx, int32_t key, const gf_contact_point *point);

/* The contacts of a convex body a (box, capsule, cylinder) with the triangle mesh m placed at x
 * with orientation q (mesh frame to world): for each triangle within reach, the manifold of the
 * pair, kept only when it is a contact of the surface and not of the lone triangle (no triangle
 * sharing the feature it comes through reaches farther along its normal); a triangle whose
 * contact is not kept is taken along its face normal instead (what it touches, it touches
 * through its face: a body over a flat seam of two triangles, which alone would push it across
 * the seam's edge). A feature several triangles share gives its contact once. `fn` receives
 * each point (normals from the mesh towards a); tri and captri are scratch kept by the caller
 * (freed by it). */
gf_status gf_collide_mesh(const gf_body_pose *a, const gf_trimesh *m, const double x[3],
                          const double q[4], double margin, int32_t **tri, size_t *captri,
                          gf_collide_mesh_fn fn, void *ctx);

/* The deepest overlap of two placed bodies, 0 if they do not overlap: for checks of placements,
 * not for the step (its buffer of the most points any pair yields is on the stack). */
gf_status gf_collide_overlap(const gf_body_pose *a, const gf_body_pose *b, double *depth);

#endif
