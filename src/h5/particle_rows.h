/* The particle rows of granflow's snapshots and checkpoints, read by every rank together: the
 * one reader of particles from these files, for a restart (io/io_read.c) and for particle files
 * (sim/particle_file.c). */
#ifndef GF_H5_PARTICLE_ROWS_H
#define GF_H5_PARTICLE_ROWS_H

#include "body/particles.h"
#include "h5/h5file.h"
#include "par/par.h"

/* The particle columns of the rows this rank reads: the inverse mass and inertia of a checkpoint
 * (restart) or the mass every granflow file holds (particle files, which recompute the rest). */
typedef struct {
    size_t n;
    int64_t *id;
    double *x, *v, *w, *q, *r, *im, *ii, *mass, *dim;
    int32_t *mat, *shape, *clump;
} gf_h5_particle_rows;

/* Rows first .. first + n - 1 of N of the group g (/particles); with `inverse` the inverse mass
 * and inertia (checkpoints only), else the mass (snapshots and checkpoints). Files without shapes
 * (before granflow 0.2) hold spheres of the stored radius. Collective over the file's ranks. */
void gf_h5_read_particle_rows(gf_h5file *f, hid_t g, size_t first, size_t n, size_t N, int inverse,
                              gf_h5_particle_rows *p);
void gf_h5_particle_rows_free(gf_h5_particle_rows *p);
/* The rows as particle records (malloc'd, NULL if out of memory): pose, velocities, shape and
 * material as stored; the inverse mass and inertia too when the rows hold them (checkpoints). */
gf_particle *gf_h5_particle_rows_records(const gf_h5_particle_rows *rows);

/* Collective over par (NULL: serial): this rank's even share of the particle rows of a granflow
 * snapshot or checkpoint written at any rank count (independent reads, no rank reads
 * everything). The records hold each row as stored: id, position, orientation, velocities,
 * material and shape; radius, inverse mass and inertia are not set, mass[i] is the row's mass
 * (kg, 0: infinite). *recs and *mass are malloc'd; the caller checks the values. */
gf_status gf_h5_read_particles(const gf_par *par, const char *path, gf_particle **recs,
                               double **mass, size_t *n);

#endif
