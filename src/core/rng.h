/* Counter-based random numbers: a value depends only on (seed, stream, index), never on which
 * rank draws it or in what order, so generated initial states are independent of the rank
 * count and reproducible after a restart. */
#ifndef GRANFLOW_RNG_H
#define GRANFLOW_RNG_H

#include <stdint.h>

/* A 64-bit hash of (seed, stream, index) with good avalanche (splitmix64 finaliser). */
uint64_t gf_rng_bits(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1). */
double gf_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);

/* A uniformly distributed rotation (unit quaternion) from three uniforms in [0, 1) (Shoemake). */
void gf_rng_rotation(double u1, double u2, double u3, double q[4]);

/* The standard normal quantile: x with Phi(x) = p, for p in (0, 1) (for inverse-transform
 * sampling of normal and log-normal laws). */
double gf_rng_normal_quantile(double p);

#endif
