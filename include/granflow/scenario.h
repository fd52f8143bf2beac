/* Initial states: particle generators. A generated particle's id, position and random velocity
 * depend only on its lattice index and the seed, never on the rank count. */
#ifndef GRANFLOW_SCENARIO_H
#define GRANFLOW_SCENARIO_H

#include <stdint.h>

#include "granflow/config.h"
#include "granflow/decomp.h"
#include "granflow/error.h"
#include "granflow/geometry.h"
#include "granflow/material.h"
#include "granflow/particles.h"

typedef struct {
    int enabled;
    long count[3];    /* spheres along x, y, z */
    double origin[3]; /* centre of the first sphere */
    double spacing;   /* centre distance */
    double radius;
    int material;
    double velocity[3]; /* mean velocity */
    double spread[3];   /* component d uniform in velocity[d] +- spread[d] */
    uint64_t seed;
    int64_t first_id;
} gf_lattice;

/*  Lattice { count < 10, 10, 10 >; origin < .. >; spacing 0.01; radius 0.004;
 *            material glass; velocity < 0, 0, 0 >; spread < 0.1, 0.1, 0.1 >; seed 42; }
 * An absent Lattice block generates nothing. The lattice must lie inside [lo, hi]. */
gf_status gf_lattice_configure(gf_lattice *l, gf_config_block *root, const gf_materials *m,
                               const double lo[3], const double hi[3]);

int64_t gf_lattice_size(const gf_lattice *l);

/* Adds to counts[rank] the lattice spheres each rank of `decomp` would own (dry runs). */
void gf_lattice_count_owners(const gf_lattice *l, const gf_walls *w, const gf_decomp *decomp,
                             int64_t *counts);

/* Adds the lattice spheres this rank owns (all of them when decomp is NULL). Spheres that would
 * overlap an obstacle are left out (their ids stay unused). */
gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                              const gf_decomp *decomp, gf_particles *p, int64_t *skipped);

/* The inflow of the channel flow (paper section 4.3): a piston wall of infinite mass, normal +x,
 * moving at `speed`; whenever it has moved `reset_distance` it jumps back to `position` and a new
 * layer of spheres is created in front of it on a square grid in y and z. A sphere's id, position
 * and random velocity depend only on (seed, layer, grid index), never on the rank count.
 *
 *  Inflow { position 0; speed 1; reset_distance 0.00047; spacing 0.001; radius 0.000235;
 *           material glass; particle_velocity < 1, 0, 0 >; spread < 0, 0.5, 0.5 >; seed 7; } */
typedef struct {
    int enabled;
    int wall; /* the piston's wall index */
    double position, speed, reset_distance, spacing, radius;
    int material;
    double velocity[3], spread[3];
    uint64_t seed;
    double lo[2], hi[2]; /* the layer's extent in y and z */
    long ny, nz;         /* grid points per layer */
    long per_layer;      /* points clear of obstacles: spheres created per layer */
    /* State (checkpointed). */
    long layers;
    double moved;
} gf_inflow;

/* Reads the Inflow block (if any) and adds the piston wall. */
gf_status gf_inflow_configure(gf_inflow *in, gf_config_block *root, const gf_materials *m,
                              gf_walls *w, const double lo[3], const double hi[3]);
/* After the walls moved by dt: resets the piston and creates a layer when due. Adds the spheres
 * this rank owns (all with decomp NULL); *created is the global number created (the same on
 * every rank, no communication), ids start at *next_id, which advances past the layer. */
gf_status gf_inflow_advance(gf_inflow *in, gf_walls *w, double dt, const gf_decomp *decomp,
                            const gf_materials *m, gf_particles *p, int64_t *next_id,
                            int64_t *created);

/* Adds to counts[rank] the spheres of one inflow layer each rank would own (dry runs). */
void gf_inflow_count_owners(const gf_inflow *in, const gf_walls *w, const gf_decomp *decomp,
                            int64_t *counts);

/* Outflow: particles whose centre passed x > position are deleted.  Outflow { position 0.15; } */
typedef struct {
    int enabled;
    double position;
} gf_outflow;

gf_status gf_outflow_configure(gf_outflow *out, gf_config_block *root);
/* Deletes the owned particles beyond the outflow (no ghosts present): count and mass. */
void gf_outflow_apply(const gf_outflow *out, gf_particles *p, int64_t *deleted, double *mass);

#endif
