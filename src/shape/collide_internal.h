/* Shared between the narrow-phase files: collide.c (dispatch, closed forms, box-box separating
 * axes, clumps) and collide_convex.c / manifold.c (general convex pairs through libccd, and the
 * manifold built by clipping the touching features). Not public API. */
#ifndef GRANFLOW_COLLIDE_INTERNAL_H
#define GRANFLOW_COLLIDE_INTERNAL_H

#include "granflow/collide.h"

/* General convex pair (box, capsule, cylinder, sphere in any combination; no planes, no clumps):
 * the normal and gap from GJK/EPA on the shapes (libccd), then the manifold by
 * gf_manifold_build. Writes at most GF_MANIFOLD_MAX points. */
gf_status gf_collide_convex(const gf_body_pose *a, const gf_body_pose *b, double margin,
                            gf_contact_point *out, int *count);

/* Given the contact normal n (unit, from b towards a) of two convex bodies (box, capsule,
 * cylinder, sphere, plane) and their signed distance along it as the caller found it (NAN:
 * unknown), the manifold: the feature of a facing -n and the feature of b facing +n (face, edge
 * or vertex; a cylinder's cap, side line or rim point), the incident one clipped against the
 * reference one in the plane normal to n, each point's gap measured along n, those with gap <
 * margin kept and reduced to at most GF_MANIFOLD_MAX (deepest first, then the largest area).
 * The points share the normal of the first, but for a body whose deepest point lies beyond the
 * reference face's border: its points over the face keep the face's normal beside the border's
 * point (see the function). */
gf_status gf_manifold_build(const gf_body_pose *a, const gf_body_pose *b, const double n[3],
                            double gap, double margin, gf_contact_point *out, int *count);

#endif
