/* A particle file: the initial particles of a run read from a file, to start from any
 * configuration (a packing made elsewhere, the end of another run) at any rank count.
 *
 *  Particles {                 // optional, at most one
 *      file "pack.h5";         // relative to the working directory, like Output paths
 *      format auto;            // auto (by extension: .h5, .hdf5 -> hdf5; .csv -> csv), hdf5, csv
 *      material glass;         // CSV rows without a material column (default: the first one)
 *  }
 *
 * HDF5: a granflow snapshot or checkpoint written at any rank count. Each rank reads an even slab
 * of its rows and sends each particle to its owner (in rounds of GF_CHUNK_ROWS rows). Shape,
 * dimensions, pose, velocities and material index come from the file; mass and inertia from the
 * shape and the configured material's density, except that mass 0 (infinite) stays a body of
 * infinite mass. Clump indices refer to the configuration's Clump blocks in order.
 *
 * CSV: '#' starts a comment line; the first other line is a header naming the columns, in any
 * order, comma separated (spaces around fields allowed, no quoted commas); an empty field means
 * "not given". Columns: id; x y z (required); vx vy vz; wx wy wz (world frame); qw qx qy qz (all
 * four or none: body to world); shape (sphere | box | capsule | cylinder | clump; default
 * sphere); radius (sphere, capsule, cylinder); hx hy hz (box half extents); half_length (capsule,
 * cylinder); clump (template name) and scale (1); material (name); motion (dynamic | fixed |
 * kinematic). A clump's x y z and orientation place the frame its Sphere centres were given in,
 * as in a Body block. Rank 0 alone reads the file (in rounds of GF_CHUNK_ROWS rows, default
 * 65536) and sends each particle to its owner. Every error names file:line and the column.
 *
 * For both: ids unique and in [0, 2^62); orientations unit quaternions to 1e-3 (normalised
 * unless already unit to rounding, so that a snapshot comes back bit for bit); centres inside
 * the box (periodic axes: wrapped into [min, max)); no overlap with a wall or obstacle deeper
 * than GF_PARTICLE_FILE_OVERLAP of the bounding radius. Overlaps between file particles deeper
 * than that are only warned about (snapshots of real runs hold tiny ones). */
#ifndef GRANFLOW_PARTICLE_FILE_H
#define GRANFLOW_PARTICLE_FILE_H

#include <stdint.h>

#include "config/config.h"
#include "granflow/error.h"
#include "body/material.h"
#include "sim/sim.h"

#define GF_PARTICLE_FILE_PATH 1024
/* Overlaps with walls and obstacles beyond this share of the bounding radius are errors, between
 * two file particles warnings: a run's penetrations are far smaller (1e-5 of a radius in the
 * examples), a file for another box or in other units far larger. */
#define GF_PARTICLE_FILE_OVERLAP 0.01
/* An orientation whose norm differs more than this from 1 is no rotation (Euler angles or an
 * axis in the q columns): refused. Less is the rounding of a file written with few digits. */
#define GF_PARTICLE_FILE_QUAT_TOL 1e-3
/* Ids from 0 up to this (exclusive): room for the ids the run gives after them. */
#define GF_PARTICLE_FILE_MAX_ID (INT64_C(1) << 62)

typedef enum { GF_PARTICLE_FILE_HDF5 = 0, GF_PARTICLE_FILE_CSV = 1 } gf_particle_file_format;

typedef struct {
    int enabled; /* a Particles block */
    char path[GF_PARTICLE_FILE_PATH];
    int format;   /* gf_particle_file_format */
    int material; /* of CSV rows without a material column */
    char where[512];
    gf_config_block *root; /* the Clump blocks' names (CSV); valid while the configuration is */
    /* Set by gf_particle_file_load. */
    int64_t count;     /* particles read, over all ranks */
    int64_t end_id;    /* one past the largest id read: particles placed later have larger ids */
    double max_radius; /* the largest bounding radius read, over all ranks */
} gf_particle_file;

/* Reads the Particles block (if any): the same on every rank, no file access. */
gf_status gf_particle_file_configure(gf_particle_file *pf, gf_config_block *root,
                                     const gf_materials *m);

/* Collective: reads the file into a simulation that is configured (materials, clumps, walls,
 * box, decomposition) and holds no particles yet. Each particle goes to its owner;
 * sim->next_id becomes at least the largest id + 1 and sim->expected_particles counts them. A
 * refused file leaves no particle behind. */
gf_status gf_particle_file_load(gf_particle_file *pf, gf_sim *sim);

/* Collective, after the other generators placed theirs (ids from pf->end_id on): a particle
 * that overlaps a file particle is an error naming both; the deepest overlap between two file
 * particles beyond GF_PARTICLE_FILE_OVERLAP of the smaller bounding radius is warned about
 * (rank 0). Contact detection with link cells over ghosts, not all pairs. */
gf_status gf_particle_file_check_clear(const gf_particle_file *pf, gf_sim *sim);

#endif
