/* Initial states: particle generators. A generated particle's id, position and random velocity
 * depend only on its lattice index and the seed, never on the rank count. */
#ifndef GRANFLOW_SCENARIO_H
#define GRANFLOW_SCENARIO_H

#include <stdint.h>

#include "config/config.h"
#include "par/decomp.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "body/material.h"
#include "par/par.h"
#include "body/particles.h"
#include "body/shape_mix.h"
#include "core/state.h"

/* The most particles one lattice and one inflow layer place: larger configurations are typos (and
 * even a dry run's loop over their points would take hours). */
#define GF_LATTICE_MAX 1e10
#define GF_INFLOW_LAYER_MAX 1e8

typedef struct {
    int enabled;
    long count[3];    /* sites along x, y, z */
    double origin[3]; /* the first site */
    double spacing;   /* between sites */
    double radius;    /* the largest bounding radius of the particles it makes */
    int material;
    int fixed;          /* motion fixed: particles of infinite mass at rest (a rough base) */
    double velocity[3]; /* mean velocity (dynamic) */
    double spread[3];   /* component d uniform in velocity[d] +- spread[d] */
    uint64_t seed;
    int64_t first_id;
    gf_shape_mix mix;        /* shapes, sizes and orientations */
    const gf_clumps *clumps; /* the run's clump templates (outlive the lattice) */
} gf_lattice;

/*  Lattice { count < 10, 10, 10 >; origin < .. >; spacing 0.01; radius 0.004;
 *            material glass; velocity < 0, 0, 0 >; spread < 0.1, 0.1, 0.1 >; seed 42;
 *            motion dynamic; }     // dynamic | fixed (infinite mass at rest, like Body)
 * with the particle keys of gf_shape_mix (shape, Kind blocks, size, orientation): a particle at
 * each site, its centre of mass there. An absent Lattice block generates nothing. The spacing
 * must keep particles apart whatever is drawn (gf_shape_mix_min_spacing). Along a walled or open
 * axis the particles must lie inside [lo, hi] (touching a face is fine); along a periodic axis
 * their centres must lie in [lo, hi) and a particle may cross the face, but the lattice must not
 * overlap its own periodic image. */
gf_status gf_lattice_configure(gf_lattice *l, gf_config_block *root, const gf_materials *m,
                               const gf_clumps *clumps, const double lo[3], const double hi[3],
                               const int periodic[3]);

int64_t gf_lattice_size(const gf_lattice *l);

/* Lattices of up to this many sites are counted site by site in dry runs. */
#define GF_LATTICE_VISIT 1e7

/* Adds to counts[rank] the lattice particles each rank of `decomp` would own (dry runs). A
 * lattice of more than GF_LATTICE_VISIT sites is counted axis by axis in O(count[0] + count[1] +
 * count[2]) instead of visiting its sites: its sites in walls and obstacles then count too, and
 * *bound says the counts are upper bounds. */
gf_status gf_lattice_count_owners(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                                  const gf_decomp *decomp, int64_t *counts, int *bound);

/* Adds the lattice particles this rank owns (all of them when decomp is NULL). Particles that
 * would overlap a wall or an obstacle are left out (their ids stay unused); *skipped is their
 * number, over the whole lattice (the same on every rank). Touching is not overlapping: a
 * particle whose distance from a surface is zero to rounding is kept. */
gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                              const gf_decomp *decomp, gf_particles *p, int64_t *skipped);

/* The inflow of the channel flow (paper section 4.3): a piston wall of infinite mass, normal +x,
 * moving at `speed`; whenever it has moved `reset_distance` it jumps back to `position` and a new
 * layer of particles is created in front of it on a square grid in y and z. A particle's id,
 * shape, size, orientation, position and random velocity depend only on (seed, layer, grid
 * index), never on the rank count. The particles are drawn from a gf_shape_mix (keys as in the
 * Lattice block; default a sphere of `radius`).
 *
 * reset_distance must be at least the particles' extent along x (twice `front`): particles stay
 * in front of the piston, so the previous layer is then clear of the new one. A grid point that
 * a particle still overlaps by more than GF_INFLOW_OVERLAP of `radius` (one pushed back against
 * the piston, or one that arrived there otherwise) is left empty in that layer, and its id
 * unused.
 *
 *  Inflow { position 0; speed 1; reset_distance 0.00047; spacing 0.001; radius 0.000235;
 *           material glass; particle_velocity < 1, 0, 0 >; spread < 0, 0.5, 0.5 >; seed 7; } */
typedef struct {
    int enabled;
    int wall; /* the piston's wall index */
    double position, speed, reset_distance, spacing;
    double radius; /* the largest bounding radius of the particles it makes */
    double front;  /* their largest reach along x: a layer's centres are this far from the piston */
    int material;
    double velocity[3], spread[3];
    uint64_t seed;
    double lo[2], hi[2]; /* the layer's extent in y and z */
    long ny, nz;         /* grid points per layer */
    long per_layer;      /* points clear of obstacles: the most particles a layer creates */
    gf_shape_mix mix;
    const gf_clumps *clumps;
    /* State (checkpointed). */
    long layers;
    double moved;
} gf_inflow;

/* Reads the Inflow block (if any) and adds the piston wall. */
gf_status gf_inflow_configure(gf_inflow *in, gf_config_block *root, const gf_materials *m,
                              const gf_clumps *clumps, gf_walls *w, const double lo[3],
                              const double hi[3]);
/* Overlap (in inflow radii) above which a particle occupies a grid point of a new layer. Below it
 * lie the overlaps the solver leaves between touching particles and the rounding of the piston's
 * travel; those are removed like any penetration, at error_reduction / dt. */
#define GF_INFLOW_OVERLAP 0.01

/* After the walls moved by dt: resets the piston and creates a layer when due. Adds the particles
 * this rank owns (all with decomp NULL) at the grid points no owned particle of any rank
 * occupies; *created is the global number created (the same on every rank), ids start at
 * *next_id, which advances past the layer. Collective over `par` when a layer is due (every rank
 * reaches that step alike); par NULL with decomp NULL for a serial run. */
gf_status gf_inflow_advance(gf_inflow *in, gf_walls *w, double dt, const gf_decomp *decomp,
                            const gf_par *par, const gf_materials *m, gf_particles *p,
                            int64_t *next_id, int64_t *created);

/* The inflow's run state for a checkpoint: the layers made and the piston's travel since its
 * last reset. */
gf_status gf_inflow_save(const gf_inflow *in, gf_state *s);
gf_status gf_inflow_restore(gf_inflow *in, const gf_state *s);

/* Adds to counts[rank] the particles of one inflow layer each rank would own (dry runs). */
void gf_inflow_count_owners(const gf_inflow *in, const gf_walls *w, const gf_decomp *decomp,
                            int64_t *counts);

/* Outflow: particles whose centre passed x > position are deleted.  Outflow { position 0.15; }
 *
 * Independently of an Outflow block, a particle whose centre leaves the domain box along an axis
 * that is not periodic is deleted the same way (counted and weighed with the outflow) and also
 * counted in left_box: that is how particles leave through a face without a wall (an open end
 * of a channel); behind a walled face a centre arrives only when the solver let a particle
 * through the wall. */
typedef struct {
    int enabled; /* an Outflow block */
    double position;
    int bounded; /* the box below is set (by gf_outflow_configure) */
    double lo[3], hi[3];
    int periodic[3];
    int64_t left_box; /* particles this rank deleted for leaving the box (cumulative) */
} gf_outflow;

/* Reads the Outflow block (if any; its position must lie in [lo[0], hi[0]]) and records the
 * domain box. */
gf_status gf_outflow_configure(gf_outflow *out, gf_config_block *root, const double lo[3],
                               const double hi[3], const int periodic[3]);
/* Deletes the owned particles beyond the outflow or outside the box (no ghosts present): adds
 * their count and mass to *deleted and *mass, and those outside the box to out->left_box. */
void gf_outflow_apply(gf_outflow *out, gf_particles *p, int64_t *deleted, double *mass);

#endif
