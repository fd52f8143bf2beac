/* Static and kinematic geometry that particles collide with, all of infinite mass: walls
 * (half-spaces; particles live on the side the normal points to; a wall may move with a
 * prescribed velocity, like the inflow piston), and solid obstacles: boxes and finite cylinders
 * with their caps.
 *
 * In a contact, body -1 - k is geometry body k: walls are k = 0 .. count - 1, box b is
 * GF_BOX_BASE + b and cylinder c is GF_CYL_BASE + c, so velocity[] and material[] are indexed
 * alike for every kind. */
#ifndef GRANFLOW_GEOMETRY_H
#define GRANFLOW_GEOMETRY_H

#include <stddef.h>

#include "granflow/config.h"
#include "granflow/error.h"
#include "granflow/material.h"
#include "granflow/shape.h"

#define GF_MAX_WALLS 64
#define GF_MAX_OBSTACLES 64
#define GF_BOX_BASE GF_MAX_WALLS
#define GF_CYL_BASE (GF_MAX_WALLS + GF_MAX_OBSTACLES)
#define GF_MAX_BODIES (GF_MAX_WALLS + 2 * GF_MAX_OBSTACLES)

typedef struct {
    size_t count; /* walls */
    double point[GF_MAX_WALLS][3];
    double normal[GF_MAX_WALLS][3]; /* unit, pointing into the particle side */
    size_t nbox;
    double box_lo[GF_MAX_OBSTACLES][3], box_hi[GF_MAX_OBSTACLES][3];
    size_t ncyl;
    double cyl_centre[GF_MAX_OBSTACLES][3], cyl_axis[GF_MAX_OBSTACLES][3]; /* axis: unit */
    double cyl_radius[GF_MAX_OBSTACLES], cyl_half_length[GF_MAX_OBSTACLES];
    double velocity[GF_MAX_BODIES][3]; /* zero for obstacles */
    int material[GF_MAX_BODIES];
} gf_walls;

void gf_walls_init(gf_walls *w);
gf_status gf_walls_add(gf_walls *w, const double point[3], const double normal[3],
                       const double velocity[3], int material);
/* Signed distance of x from wall k (positive on the particle side). */
double gf_walls_distance(const gf_walls *w, size_t k, const double x[3]);
/* Moves kinematic walls by dt. */
void gf_walls_advance(gf_walls *w, double dt);

gf_status gf_walls_add_box(gf_walls *w, const double lo[3], const double hi[3], int material);
gf_status gf_walls_add_cylinder(gf_walls *w, const double centre[3], const double axis[3],
                                double radius, double length, int material);

/* Closest point of the solid obstacle `body` (box or cylinder index as in contacts) to x: the
 * signed distance (negative inside) and the outward unit normal there. */
double gf_walls_obstacle_distance(const gf_walls *w, int body, const double x[3], double normal[3]);
/* Geometry body `body` (as in contacts) named for messages: "wall 2 (point .., normal ..)",
 * "obstacle box 0", "obstacle cylinder 1". Returns buf. */
const char *gf_walls_describe(const gf_walls *w, int body, char *buf, size_t size);

/* Geometry body `body` (a wall 0 .. count - 1, GF_BOX_BASE + b, GF_CYL_BASE + c) as a rigid body
 * of infinite mass for the contact geometry of any shape: a plane, a box or a cylinder (its axis
 * along body z) and its pose (a point of the plane or the centre; orientation body to world). */
void gf_walls_body(const gf_walls *w, int body, gf_shape *shape, double x[3], double q[4]);
/* Whether a sphere at x of radius r would overlap any wall or obstacle. Touching is not
 * overlapping: a distance equal to r up to the rounding of the coordinates involved (see
 * gf_geometry_touch_tolerance) counts as touching. */
int gf_walls_overlap(const gf_walls *w, const double x[3], double r);
/* The rounding allowance of a distance computed from coordinates of total magnitude `scale`. */
double gf_geometry_touch_tolerance(double scale);

/*  Domain {
 *      min < 0, 0, 0 >;  max < 1, 1, 1 >;
 *      box_walls true;             // six walls on the faces of [min, max]
 *      wall_material default;
 *      Wall { point < .. >; normal < .. >; velocity < .. >; material glass; }  // repeatable
 *  }
 * Fills the domain bounds, the periodic flags and the walls. */
gf_status gf_geometry_configure(gf_walls *w, double lo[3], double hi[3], int periodic[3],
                                gf_config_block *root, const gf_materials *m);

#endif
