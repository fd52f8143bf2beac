/* Shapes of rigid bodies: their kinds and dimensions, mass properties from shape and density,
 * bounding radius, support function and point containment.
 *
 * Every shape is described in its body frame, whose origin is the centre of mass and whose axes
 * are the principal axes of inertia, so that the inertia tensor of a body is diagonal there and
 * the integrator needs only the three principal moments. Boxes, capsules and cylinders are built
 * that way (capsules and cylinders have their axis along body z); a clump is brought into that
 * frame when its template is made (gf_clump_make), which records the transformation from the
 * frame the user gave its members in.
 *
 * Planes are static geometry only (the solid is the half-space z <= 0 of the body frame, the
 * surface normal +z); they have no mass properties. So are triangles, the pieces of a mesh that
 * convex bodies meet: flat, in the body plane z = 0 with their centroid at the origin, corners
 * (0, 0, 0) - g, (dim[0], 0, 0) - g, (dim[1], dim[2], 0) - g, g the centroid of those three;
 * their support and features let the general convex contact test take them like any body. */
#ifndef GRANFLOW_SHAPE_H
#define GRANFLOW_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"

typedef enum {
    GF_SHAPE_SPHERE = 0,   /* dim[0]: radius */
    GF_SHAPE_BOX = 1,      /* dim: half extents along body x, y, z */
    GF_SHAPE_CAPSULE = 2,  /* dim[0]: radius; dim[1]: half length of the axis segment (body z) */
    GF_SHAPE_CYLINDER = 3, /* dim[0]: radius; dim[1]: half length (body z); flat caps */
    GF_SHAPE_CLUMP = 4,    /* dim[0]: scale applied to the clump template `clump` */
    GF_SHAPE_PLANE = 5,    /* static only: the half-space z <= 0 of the body frame */
    GF_SHAPE_TRIANGLE = 6, /* static only: a triangle of a mesh, see gf_shape_triangle */
    GF_SHAPE_COUNT
} gf_shape_type;

/* The most spheres one clump may have: contact buffers are sized from it. */
#define GF_CLUMP_MAX_MEMBERS 32

/* A clump template: a rigid union of spheres, in its principal frame at scale 1. */
typedef struct {
    int count;                              /* members, 1 .. GF_CLUMP_MAX_MEMBERS */
    double centre[GF_CLUMP_MAX_MEMBERS][3]; /* member centres relative to the centre of mass */
    double radius[GF_CLUMP_MAX_MEMBERS];    /* member radii */
    double volume;                          /* of the union, overlaps counted once */
    double second_moment[3];                /* principal moments of inertia per unit density */
    double bounding_radius;                 /* around the centre of mass */
    /* The frame the members were given in: input = rotate(q_input, principal) + com_input. */
    double q_input[4];
    double com_input[3];
} gf_clump;

/* The clump templates of a run, the same on every rank (built from the configuration). */
typedef struct {
    size_t count;
    gf_clump *item;
} gf_clumps;

/* The shape of one body. */
typedef struct {
    int32_t type;  /* gf_shape_type */
    int32_t clump; /* template index for GF_SHAPE_CLUMP, -1 otherwise */
    double dim[3]; /* as documented at gf_shape_type; unused entries 0 */
} gf_shape;

const char *gf_shape_name(gf_shape_type type);
/* The type named `name` ("sphere", "box", "capsule", "cylinder", "clump", "plane"); -1 if none. */
int gf_shape_type_from_name(const char *name);

gf_shape gf_shape_sphere(double radius);
gf_shape gf_shape_box(double hx, double hy, double hz);
gf_shape gf_shape_capsule(double radius, double half_length);
gf_shape gf_shape_cylinder(double radius, double half_length);
gf_shape gf_shape_clump(int32_t clump, double scale);

/* Whether bodies of this type are static geometry only (planes, triangles): no particle is one. */
int gf_shape_is_static(int type);

/* The triangle with corners c[0], c[1], c[2] (world frame) as a shape and a pose (its centroid
 * and orientation). Its body z axis is the normal (c1 - c0) x (c2 - c0), made unit. The corners
 * must span a triangle of nonzero area. */
gf_shape gf_shape_triangle(const double c[3][3], double centre[3], double q[4]);
/* A triangle shape's corners in its body frame. */
void gf_shape_triangle_corners(const gf_shape *s, double v[3][3]);

/* Checks that the dimensions are finite and positive (and the template index valid) and names
 * the offending value in the error message. */
gf_status gf_shape_check(const gf_shape *s, const gf_clumps *clumps);

double gf_shape_volume(const gf_shape *s, const gf_clumps *clumps);
/* Mass and principal moments of inertia (body frame) of a body of uniform density. */
void gf_shape_mass_properties(const gf_shape *s, const gf_clumps *clumps, double density,
                              double *mass, double inertia[3]);
/* Radius of the smallest sphere around the centre of mass holding the whole body. */
double gf_shape_bounding_radius(const gf_shape *s, const gf_clumps *clumps);
/* A point of the body (body frame) farthest in direction d (not necessarily unit, nonzero). */
void gf_shape_support(const gf_shape *s, const gf_clumps *clumps, const double d[3], double out[3]);
/* Whether the point p (body frame) lies inside or on the body. */
int gf_shape_contains(const gf_shape *s, const gf_clumps *clumps, const double p[3]);

/* Builds a clump template from member spheres given in any frame: the centre of mass, volume and
 * inertia tensor of their union (overlaps counted once), its principal axes, and the members
 * moved into the principal frame. Refuses counts outside 1 .. GF_CLUMP_MAX_MEMBERS and radii that
 * are not finite and positive. */
gf_status gf_clump_make(int count, const double centre[][3], const double radius[], gf_clump *out);

void gf_clumps_init(gf_clumps *c);
void gf_clumps_free(gf_clumps *c);
/* Appends a copy of `clump`; *index receives its template index. */
gf_status gf_clumps_add(gf_clumps *c, const gf_clump *clump, int32_t *index);

#endif
