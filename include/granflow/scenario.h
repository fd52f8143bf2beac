/* Initial states: particle generators. A generated particle's id, position and random velocity
 * depend only on its lattice index and the seed, never on the rank count. */
#ifndef GRANFLOW_SCENARIO_H
#define GRANFLOW_SCENARIO_H

#include <stdint.h>

#include "granflow/config.h"
#include "granflow/decomp.h"
#include "granflow/error.h"
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
    double spread;      /* each component uniform in velocity +- spread */
    uint64_t seed;
    int64_t first_id;
} gf_lattice;

/*  Lattice { count < 10, 10, 10 >; origin < .. >; spacing 0.01; radius 0.004;
 *            material glass; velocity < 0, 0, 0 >; velocity_spread 0.1; seed 42; }
 * An absent Lattice block generates nothing. The lattice must lie inside [lo, hi]. */
gf_status gf_lattice_configure(gf_lattice *l, gf_config_block *root, const gf_materials *m,
                               const double lo[3], const double hi[3]);

int64_t gf_lattice_size(const gf_lattice *l);

/* Adds the lattice spheres this rank owns (all of them when decomp is NULL). */
gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_decomp *decomp,
                              gf_particles *p);

#endif
