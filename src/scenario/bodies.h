/* Bodies placed one by one from the configuration: rigid bodies of any shape with their pose,
 * velocities and material, dynamic or of infinite mass (fixed in space, or kinematic: moving with
 * a prescribed velocity and angular velocity, such as a paddle), and the clump templates they
 * refer to.
 *
 *  Clump {                                   // repeatable: a rigid union of spheres
 *      name dumbbell;
 *      Sphere { centre < -0.01, 0, 0 >; radius 0.008; }   // repeatable, 1 .. 32 of them
 *      Sphere { centre < 0.01, 0, 0 >; radius 0.008; }
 *  }
 *  Body {                                    // repeatable
 *      shape box;                 // sphere | box | capsule | cylinder | clump
 *      half_extents < 0.02, 0.01, 0.005 >;   // box (m)
 *      radius 0.01;               // sphere, capsule, cylinder (m)
 *      half_length 0.03;          // capsule, cylinder: half the axis along body z (m)
 *      clump dumbbell;  scale 1;  // clump: template and its scale
 *      position < .. >;           // centre of mass (m)
 *      orientation < 1, 0, 0, 0 >;   // unit quaternion (w, x, y, z), body to world; or
 *      axis < 0, 1, 0 >;  angle 0.3; // a rotation by `angle` (rad) about `axis`
 *      velocity < .. >;  angular_velocity < .. >;   // m/s, rad/s (world frame)
 *      material glass;
 *      motion dynamic;            // dynamic | fixed | kinematic
 *  }
 *
 * A clump's members are given in any frame; the body frame is its principal frame with the
 * centre of mass at the origin, and `position` and `orientation` place the frame the members were
 * given in (so a clump appears where its members say). */
#ifndef GRANFLOW_BODIES_H
#define GRANFLOW_BODIES_H

#include <stdint.h>

#include "granflow/collide.h"
#include "config/config.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "body/material.h"
#include "body/particles.h"
#include "body/shape_config.h"
#include "granflow/shape.h"

/* The deepest overlap of a body with the walls, obstacles and meshes of `w`: *depth (0 when
 * clear) and *which, the geometry body of the deepest (a wall, GF_BOX_BASE + box, GF_CYL_BASE +
 * cylinder, GF_MESH_BASE + mesh), -1 when clear. */
gf_status gf_bodies_wall_overlap(const gf_body_pose *pose, const gf_walls *w, double *depth,
                                 int *which);

/* Whether a particle placed by a generator would overlap a wall, an obstacle or a mesh: its
 * bounding sphere decides when it is clear, the exact shape otherwise (an undecided test counts
 * as blocked); touching is not overlapping. */
int gf_bodies_blocked(const gf_walls *w, const gf_particle *rec, const gf_clumps *clumps);

/* Reads the Body blocks and checks each against the domain [lo, hi] (periodic axes excepted),
 * the walls and obstacles and every other body: a body overlapping any of them is refused,
 * naming both. With `out` (NULL: check only), adds all bodies with ids first_id, first_id + 1,
 * .. in the order of the configuration (the caller keeps those its rank owns). *count receives
 * the number of bodies, *max_radius their largest bounding radius. */
gf_status gf_bodies_configure(gf_config_block *root, const gf_materials *m, const gf_clumps *clumps,
                              const gf_walls *w, const double lo[3], const double hi[3],
                              const int periodic[3], int64_t first_id, gf_particles *out,
                              int64_t *count, double *max_radius);

/* Checks the bodies (all of them) against the particles already placed (this rank's): one
 * overlapping another is refused naming both. Local: the caller agrees. */
gf_status gf_bodies_check_clear(const gf_particles *bodies, const gf_particles *p);

#endif
