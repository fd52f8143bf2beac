#include "test_util.h"

double gf_test_uniform(uint64_t *state, double lo, double hi) {
    /* xorshift64*: good enough for test inputs, and the same everywhere. */
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    double u = (double)((x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}
