/* Static and kinematic geometry that particles collide with. Walls are half-spaces: particles
 * live on the side the normal points to. A wall may move with a prescribed velocity (inflow
 * pistons); its mass is infinite. */
#ifndef GRANFLOW_GEOMETRY_H
#define GRANFLOW_GEOMETRY_H

#include <stddef.h>

#include "granflow/config.h"
#include "granflow/error.h"
#include "granflow/material.h"

#define GF_MAX_WALLS 64

typedef struct {
    size_t count;
    double point[GF_MAX_WALLS][3];
    double normal[GF_MAX_WALLS][3]; /* unit, pointing into the particle side */
    double velocity[GF_MAX_WALLS][3];
    int material[GF_MAX_WALLS];
} gf_walls;

void gf_walls_init(gf_walls *w);
gf_status gf_walls_add(gf_walls *w, const double point[3], const double normal[3],
                       const double velocity[3], int material);
/* Signed distance of x from wall k (positive on the particle side). */
double gf_walls_distance(const gf_walls *w, size_t k, const double x[3]);
/* Moves kinematic walls by dt. */
void gf_walls_advance(gf_walls *w, double dt);

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
