#include "granflow/rng.h"

static uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t gf_rng_bits(uint64_t seed, uint64_t stream, uint64_t index) {
    return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

double gf_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return (double)(gf_rng_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}
