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

#include "config/config.h"
#include "par/decomp.h"
#include "granflow/error.h"
#include "body/material.h"
#include "granflow/shape.h"
#include "core/state.h"
#include "granflow/trimesh.h"

#define GF_MAX_WALLS 64
#define GF_MAX_OBSTACLES 64
#define GF_MAX_MESHES 16
#define GF_BOX_BASE GF_MAX_WALLS
#define GF_CYL_BASE (GF_MAX_WALLS + GF_MAX_OBSTACLES)
#define GF_MESH_BASE (GF_MAX_WALLS + 2 * GF_MAX_OBSTACLES)
#define GF_MAX_BODIES (GF_MESH_BASE + GF_MAX_MESHES)
/* The most velocity changes of all schedules together. */
#define GF_MAX_SCHEDULE 256

/* Reads an STL file into a triangle soup, like gf_trimesh_read_stl. */
typedef gf_status (*gf_stl_reader)(const void *ctx, const char *path, double **corners, size_t *nt);

typedef struct {
    size_t count; /* walls */
    double point[GF_MAX_WALLS][3];
    double normal[GF_MAX_WALLS][3]; /* unit, pointing into the particle side */
    size_t nbox;
    double box_lo[GF_MAX_OBSTACLES][3], box_hi[GF_MAX_OBSTACLES][3];
    size_t ncyl;
    double cyl_centre[GF_MAX_OBSTACLES][3], cyl_axis[GF_MAX_OBSTACLES][3]; /* axis: unit */
    double cyl_radius[GF_MAX_OBSTACLES], cyl_half_length[GF_MAX_OBSTACLES];
    /* Triangle meshes (geometry_trimesh.c): mesh m is body GF_MESH_BASE + m, its triangles in
     * its own frame, placed at mesh_x (the point it turns about) with orientation mesh_q; it
     * moves at velocity[GF_MESH_BASE + m] and turns at mesh_omega[m] (rad/s, world frame). */
    size_t nmesh;
    gf_trimesh *mesh[GF_MAX_MESHES];
    double mesh_x[GF_MAX_MESHES][3], mesh_q[GF_MAX_MESHES][4], mesh_omega[GF_MAX_MESHES][3];
    double mesh_reach[GF_MAX_MESHES];  /* the farthest vertex from mesh_x */
    double velocity[GF_MAX_BODIES][3]; /* the current velocity of each body */
    int material[GF_MAX_BODIES];
    /* Velocity schedules, piecewise constant: from sched_time[k] on, body sched_body[k] moves at
     * sched_velocity[k]; before its first entry at base_velocity. A body's entries are in
     * increasing time. */
    size_t nsched;
    int sched_body[GF_MAX_SCHEDULE];
    double sched_time[GF_MAX_SCHEDULE];
    double sched_velocity[GF_MAX_SCHEDULE][3];
    double base_velocity[GF_MAX_BODIES][3];
    /* A mesh's entries change its angular velocity too (zero for other bodies' entries); its
     * rate before its first entry is mesh_base_omega, taken with base_velocity when that entry
     * is added (gf_walls_add_mesh_schedule). */
    double sched_omega[GF_MAX_SCHEDULE][3];
    double mesh_base_omega[GF_MAX_MESHES][3];
    /* How Mesh files are read: NULL reads them here (gf_trimesh_read_stl); under MPI the
     * simulation sets a collective reader (gf_par_read_stl: one rank reads, every rank gets the
     * triangles or the same error), which gf_geometry_configure keeps. */
    gf_stl_reader stl_read;
    const void *stl_ctx;
} gf_walls;

/* The largest |coordinate| of the domain's box (m). */
#define GF_DOMAIN_MAX_COORD 1e15

void gf_walls_init(gf_walls *w);
/* The run state of the geometry for a checkpoint (gf_state): the positions of the walls and
 * obstacles and the meshes' poses (velocities follow from the configuration and the time).
 * Restoring needs the configuration's walls, obstacles and meshes; a checkpoint from before
 * moving obstacles has no obstacle positions, and they stay where configured. */
gf_status gf_walls_save(const gf_walls *w, gf_state *s);
gf_status gf_walls_restore(gf_walls *w, const gf_state *s);
/* Frees the meshes (the rest is plain data: copies of a gf_walls share the meshes). */
void gf_walls_free(gf_walls *w);
gf_status gf_walls_add(gf_walls *w, const double point[3], const double normal[3],
                       const double velocity[3], int material);
/* Signed distance of x from wall k (positive on the particle side). Inline: detection takes it
 * for every particle and wall. */
static inline double gf_walls_distance(const gf_walls *w, size_t k, const double x[3]) {
    return (x[0] - w->point[k][0]) * w->normal[k][0] + (x[1] - w->point[k][1]) * w->normal[k][1] +
           (x[2] - w->point[k][2]) * w->normal[k][2];
}
/* Moves kinematic walls and obstacles by dt at their current velocities. */
void gf_walls_advance(gf_walls *w, double dt);
/* Sets the velocity of geometry body `body` (as in contacts); a scheduled body's velocity
 * before its first entry. */
void gf_walls_set_velocity(gf_walls *w, int body, const double velocity[3]);
/* Appends a schedule entry: from time t on, body `body` moves at `velocity`. Entries of a body
 * must come in increasing time. */
gf_status gf_walls_add_schedule(gf_walls *w, int body, double t, const double velocity[3]);
/* Appends a schedule entry of mesh k: from time t on it moves at `velocity` and turns at
 * `omega` (rad/s, world frame) about its pivot. Its motion until its first entry is the one it
 * has when that entry is added (gf_walls_add_mesh's, unless set since). */
gf_status gf_walls_add_mesh_schedule(gf_walls *w, size_t k, double t, const double velocity[3],
                                     const double omega[3]);
/* The velocities (and meshes' angular velocities) in force at time t: of each scheduled body,
 * its last entry with time <= t + tol (tol absorbs the rounding of a time summed step by step),
 * else its base motion. Called at the start of every step: a change inside a step takes effect
 * at the next step's start. */
void gf_walls_apply_schedule(gf_walls *w, double t, double tol);

/* How a mesh moves over a whole run, all its phases (its motion before any schedule entry and
 * each entry) together: not at all; turning about one fixed axis through its pivot (each phase
 * static or turning about that axis, either way, and none translating: the mesh then never
 * leaves the solid of revolution its triangles sweep about the axis); anyhow else. */
typedef enum { GF_MESH_STATIC, GF_MESH_FIXED_AXIS, GF_MESH_GENERAL } gf_mesh_motion;
/* Of n phases given as velocities v[i] and angular velocities omega[i]; with GF_MESH_FIXED_AXIS
 * the unit axis in `axis` (zero otherwise). Angular velocities count as along one axis when
 * their cross product vanishes to 1e-12 of the product of their lengths. */
gf_mesh_motion gf_mesh_motion_classify(size_t n, const double (*v)[3], const double (*omega)[3],
                                       double axis[3]);
/* Of mesh k with its schedule entries as added so far (the pivot is w->mesh_x[k], which a
 * non-translating mesh keeps). */
gf_mesh_motion gf_walls_mesh_motion(const gf_walls *w, size_t k, double axis[3]);

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
 * gf_touch_tolerance, core/vec.h) counts as touching. */
int gf_walls_overlap(const gf_walls *w, const double x[3], double r);

/* Adds a mesh of nt triangles (corners: 9 numbers each, world frame at time 0) turning about
 * `pivot` at `omega` (rad/s) and moving at `velocity`. */
gf_status gf_walls_add_mesh(gf_walls *w, size_t nt, const double *corners, const double pivot[3],
                            const double velocity[3], const double omega[3], int material);
/* The velocity of geometry body `body`'s surface at the world point p (a turning mesh's surface
 * moves at v + omega x (p - pivot)). */
void gf_walls_surface_velocity(const gf_walls *w, int body, const double p[3], double v[3]);
/* Whether geometry body `body` turns. */
int gf_walls_turning(const gf_walls *w, int body);
/* Geometry body `body`'s angular velocity (rad/s; zero unless it is a turning mesh). */
void gf_walls_angular_velocity(const gf_walls *w, int body, double omega[3]);
/* The fastest any point of the geometry's surface moves (for the speculative margin). */
double gf_walls_max_speed(const gf_walls *w);
/* Reads the Mesh blocks of the Domain block, whose box is [lo, hi] (gf_geometry_configure calls
 * it). A mesh wholly outside the box is an error unless it moves; one reaching beyond it is
 * warned about (rank 0): both name the mesh's and the box's extents. */
gf_status gf_geometry_configure_meshes(gf_walls *w, gf_config_block *db, const gf_materials *m,
                                       const double lo[3], const double hi[3]);
/* Whether a sphere at x of radius r overlaps mesh k (touching is not overlapping). */
int gf_walls_mesh_overlap(const gf_walls *w, size_t k, const double x[3], double r);
/* How deep a sphere at x of radius r reaches into mesh k (0 when clear). */
double gf_walls_mesh_depth(const gf_walls *w, size_t k, const double x[3], double r);
/* The region where this rank's particles can meet the geometry: its subdomain of d, unbounded
 * outwards on the domain's faces (a particle a hair or more outside the box stays with the
 * edge rank), grown by `halo` elsewhere. */
void gf_walls_region(const gf_decomp *d, double halo, double lo[3], double hi[3]);
/* A rank whose region holds the point x whatever the halo: that of x's cell clamped into the
 * box (never wrapped). Under MPI it holds every mesh triangle near x, so tests of the geometry
 * near x made there are exact. */
int gf_walls_region_owner(const gf_decomp *d, const double x[3]);
/* Keeps of each mesh only the triangles that can come into the box [lo, hi] (infinite bounds
 * allowed) during the run, with every triangle sharing a vertex with one of them (so that the
 * contact rule, which looks at the neighbours of a feature, sees all of them): a static mesh's
 * triangles where they are; a turning mesh's whose body of revolution about the axis meets the
 * box (their range of distance from the axis and of position along it meets the box's); of
 * any other motion all. Feature keys stay the whole mesh's. */
gf_status gf_walls_localize_meshes(gf_walls *w, const double lo[3], const double hi[3]);
/* Moves and turns the meshes by dt (gf_walls_advance calls it). */
void gf_walls_advance_meshes(gf_walls *w, double dt);

/*  Domain {
 *      min < 0, 0, 0 >;  max < 1, 1, 1 >;
 *      box_walls true;             // six walls on the faces of [min, max]
 *      wall_material default;
 *      Wall { point < .. >; normal < .. >; velocity < .. >; material glass;    // repeatable
 *             Schedule { time 0.1; velocity < 0, 0, 1 >; } }   // repeatable, times increasing
 *      Box { min < .. >; max < .. >; velocity < .. >; Schedule { .. } }
 *      Cylinder { centre < .. >; axis < .. >; radius ..; length ..; velocity < .. >; Schedule {..}
 * }
 *      Mesh { ..; velocity < .. >; angular_velocity < .. >;     // geometry_trimesh.c
 *             Schedule { time 0.2; velocity < .. >; angular_velocity < .. >; } }  // 0 if left out
 *  }
 * Fills the domain bounds, the periodic flags and the walls. */
gf_status gf_geometry_configure(gf_walls *w, double lo[3], double hi[3], int periodic[3],
                                gf_config_block *root, const gf_materials *m);

#endif
