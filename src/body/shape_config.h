/* Shapes and clump templates from the configuration: the Clump blocks (repeatable: a rigid union
 * of 1 to 32 spheres, given in any frame) and the shape keys a Body, Lattice, Inflow or Insert
 * block reads (shape, radius, half_extents, half_length, clump, scale). */
#ifndef GRANFLOW_SHAPE_CONFIG_H
#define GRANFLOW_SHAPE_CONFIG_H

#include <stdint.h>

#include "config/config.h"
#include "granflow/error.h"
#include "granflow/shape.h"

/* Reads the Clump blocks into `clumps` (in the order of the configuration). */
gf_status gf_bodies_configure_clumps(gf_clumps *clumps, gf_config_block *root);

/* The template index of the Clump block named `name` (the order of the configuration), -1 if
 * none. */
int32_t gf_bodies_clump_index(gf_config_block *root, const char *name);

/* The shape keys of block `b` (as in Body: shape, radius, half_extents, half_length, clump,
 * scale); `def` names the shape when `shape` is absent (NULL: required). */
gf_status gf_bodies_read_shape(gf_config_block *b, gf_config_block *root, const gf_clumps *clumps,
                               const char *def, gf_shape *s);

#endif
