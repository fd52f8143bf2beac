/* Particle storage as a structure of arrays: the solver and detection sweep one quantity over
 * many particles, so each quantity is contiguous. Owned particles occupy [0, n_local), ghost
 * copies of neighbours' particles [n_local, n_local + n_ghost).
 *
 * A particle is a rigid body of any shape (gf_shape: sphere, box, capsule, cylinder, clump). Its
 * body frame is the principal frame of its shape (centre of mass at the origin), so the inverse
 * inertia is three principal moments, and `radius` is the bounding radius around the centre of
 * mass: the link cells, the interaction range and the ghosts use it, so a sphere's radius is its
 * radius and every other shape lies within it. Clump templates are shared by all particles
 * (`clumps`, set by the owner of the storage). */
#ifndef GRANFLOW_PARTICLES_H
#define GRANFLOW_PARTICLES_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/collide.h"
#include "granflow/error.h"
#include "granflow/shape.h"

typedef struct {
    size_t n_local;
    size_t n_ghost;
    size_t capacity;
    int64_t *id;            /* globally unique for the whole run */
    double *x[3];           /* centre of mass position (m) */
    double *q[4];           /* orientation, unit quaternion (w, x, y, z) */
    double *v[3];           /* linear velocity (m/s) */
    double *w[3];           /* angular velocity, world frame (rad/s) */
    double *radius;         /* bounding radius (m): the sphere's radius for spheres */
    double *inv_mass;       /* 1/kg; 0 for bodies of infinite mass */
    double *inv_inertia[3]; /* principal inverse moments, body frame (1/(kg m^2)) */
    int32_t *material;
    int32_t *shape;          /* gf_shape_type */
    int32_t *clump;          /* template index of a clump, -1 otherwise */
    double *dim[3];          /* shape dimensions, as gf_shape.dim */
    const gf_clumps *clumps; /* templates of the clumps (may be NULL without clumps) */
} gf_particles;

/* One particle as a record, for adding, moving and testing (not for hot loops). */
typedef struct {
    int64_t id;
    double x[3], q[4], v[3], w[3];
    double radius, inv_mass, inv_inertia[3];
    int32_t material;
    gf_shape shape;
} gf_particle;

void gf_particles_init(gf_particles *p);
void gf_particles_free(gf_particles *p);
gf_status gf_particles_reserve(gf_particles *p, size_t capacity);
/* Appends an owned particle; only valid while there are no ghosts. */
gf_status gf_particles_add(gf_particles *p, const gf_particle *rec);
/* Appends a ghost copy after the owned particles. */
gf_status gf_particles_add_ghost(gf_particles *p, const gf_particle *rec);
void gf_particles_clear_ghosts(gf_particles *p);
/* Removes owned particle i by moving the last owned one into its slot (no ghosts present). */
void gf_particles_remove(gf_particles *p, size_t i);
void gf_particles_get(const gf_particles *p, size_t i, gf_particle *rec);
/* Puts the owned particles (no ghosts present) in the order of cells `cell` wide, x fastest, then
 * y, then z, by id within a cell, the order in which detection lists contacts: reading a
 * contact's bodies then walks the particle arrays nearly in memory order (a Morton order
 * measured 25% slower: the sweep then jumps between rows of cells). The order depends only on
 * the particles' positions and ids. */
gf_status gf_particles_sort(gf_particles *p, double cell);
void gf_particles_set(gf_particles *p, size_t i, const gf_particle *rec);

/* A solid sphere of the given radius and density, at rest, identity orientation. */
void gf_particle_make_sphere(gf_particle *rec, int64_t id, const double x[3], double radius,
                             double density, int32_t material);
/* A body of any shape of uniform density (0: infinite mass, a fixed or kinematic body), at rest,
 * identity orientation; mass, inertia and bounding radius from the shape. */
void gf_particle_make(gf_particle *rec, int64_t id, const double x[3], const gf_shape *shape,
                      const gf_clumps *clumps, double density, int32_t material);
/* The shape of particle i. */
gf_shape gf_particles_shape(const gf_particles *p, size_t i);
/* Particle i placed for the contact geometry, with its shape `shape` (which must outlive it). */
void gf_particles_pose(const gf_particles *p, size_t i, const gf_shape *shape, gf_body_pose *pose);

/* World-frame inverse inertia of particle i as a symmetric matrix (xx, xy, xz, yy, yz, zz). */
void gf_particles_inv_inertia_world(const gf_particles *p, size_t i, double out[6]);

double gf_particles_kinetic_energy(const gf_particles *p);
/* Particle i's thinnest dimension: a sphere's or capsule's radius, a box's smallest half
 * extent, the smaller of a cylinder's radius and half length, a clump's smallest member radius.
 * Penetrations are judged against it (a 5.8 cm overlap of a brick 25 cm thick is 23 %, not the
 * 8.7 % of its bounding radius). */
double gf_particles_thickness(const gf_particles *p, size_t i);
/* Gravitational potential energy of the owned particles of finite mass relative to the origin:
 * -sum m g.x. */
double gf_particles_potential_energy(const gf_particles *p, const double gravity[3]);

#endif
