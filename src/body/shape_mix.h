/* What a generator makes: a mixture of particle kinds (shape, dimensions, material) in given
 * proportions, a size distribution and an orientation law. The lattice and the inflow draw each
 * particle from it with counter-based random numbers, so a particle's kind, size and orientation
 * depend only on the seed and its generator index, never on the rank count.
 *
 * In a Lattice or Inflow block, one kind is given by the keys of a Body block (default: a
 * sphere of `radius`), several by Kind sub-blocks:
 *
 *  Lattice {
 *      shape box;  half_extents < 0.004, 0.002, 0.001 >;   // one kind, or:
 *      Kind { shape sphere;  radius 0.003;  fraction 0.6; }
 *      Kind { shape capsule; radius 0.002;  half_length 0.003;  fraction 0.4;  material steel; }
 *      size lognormal;  size_median 1;  size_sigma 0.2;     // a scale on every kind's dimensions
 *      size_min 0.6;  size_max 1.6;                          // truncation (lognormal, uniform)
 *      orientation random;                                   // random | aligned (body = world)
 *      ..
 *  }
 *
 * Size laws: `fixed` (scale 1), `uniform` in [size_min, size_max], `lognormal` (ln scale normal
 * with median size_median and deviation size_sigma, truncated to [size_min, size_max], by default
 * three deviations either side), `discrete` (Size { scale 0.8; fraction 0.25; } blocks). */
#ifndef GRANFLOW_SHAPE_MIX_H
#define GRANFLOW_SHAPE_MIX_H

#include <stdint.h>

#include "config/config.h"
#include "granflow/error.h"
#include "body/material.h"
#include "granflow/shape.h"

#define GF_MIX_KINDS 16
#define GF_MIX_SIZES 16

typedef enum { GF_SIZE_FIXED, GF_SIZE_UNIFORM, GF_SIZE_LOGNORMAL, GF_SIZE_DISCRETE } gf_size_law;

typedef struct {
    int nkinds;
    gf_shape kind[GF_MIX_KINDS]; /* at scale 1 */
    int32_t material[GF_MIX_KINDS];
    double kind_cdf[GF_MIX_KINDS]; /* cumulative fractions, the last 1 */
    gf_size_law law;
    double size_min, size_max; /* bounds of the scale (all laws) */
    double median, sigma;      /* lognormal */
    double cdf_lo, cdf_hi;     /* lognormal: the normal CDF at the truncation bounds */
    int nsizes;
    double size[GF_MIX_SIZES], size_cdf[GF_MIX_SIZES];
    int random_orientation;
    /* The largest bounding radius of any particle drawn, and with `aligned` orientation the
     * largest half extent along each world axis (either side of the centre of mass). */
    double reach;
    double half_extent[3];
} gf_shape_mix;

/* Reads the mixture from a Lattice or Inflow block `b` (root: for Clump names). Kinds without a
 * material take `material`. */
gf_status gf_shape_mix_configure(gf_shape_mix *mix, gf_config_block *b, gf_config_block *root,
                                 const gf_materials *m, const gf_clumps *clumps, int32_t material);

/* Whether the mixture is spheres of one size in one material (the generators' historic case). */
int gf_shape_mix_is_uniform_spheres(const gf_shape_mix *mix);

/* Particle `index` of the random sequence `key`: its shape (scaled), material and orientation. */
void gf_shape_mix_draw(const gf_shape_mix *mix, uint64_t key, uint64_t index, gf_shape *shape,
                       int32_t *material, double q[4]);

/* The closest spacing of a cubic lattice of the mixture's particles at which none overlaps
 * another: twice the largest half extent along an axis (aligned) or the bounding diameter
 * (random). Two lattice sites differ by at least the spacing along some axis, and bodies whose
 * projections on an axis are apart do not overlap. */
double gf_shape_mix_min_spacing(const gf_shape_mix *mix);

#endif
