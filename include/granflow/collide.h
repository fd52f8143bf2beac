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

/* The deepest overlap of two placed bodies, 0 if they do not overlap: for checks of placements,
 * not for the step (its buffer of the most points any pair yields is on the stack). */
gf_status gf_collide_overlap(const gf_body_pose *a, const gf_body_pose *b, double *depth);

#endif
