#include "core/rng.h"

#include <math.h>

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

void gf_rng_rotation(double u1, double u2, double u3, double q[4]) {
    double a = sqrt(1.0 - u1), b = sqrt(u1);
    double t2 = 2.0 * M_PI * u2, t3 = 2.0 * M_PI * u3;
    q[0] = b * cos(t3);
    q[1] = a * sin(t2);
    q[2] = a * cos(t2);
    q[3] = b * sin(t3);
}

/* Acklam's rational approximation (relative error 1.2e-9) refined by one Halley step on
 * erfc, which brings it to rounding level. */
double gf_rng_normal_quantile(double p) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    /* The upper half by symmetry: 1 - p is exact there, p's complement near 1 is not. */
    if (p > 0.5)
        return -gf_rng_normal_quantile(1.0 - p);
    const double plow = 0.02425;
    double x;
    if (p < plow) {
        double q = sqrt(-2.0 * log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    } else if (p <= 1.0 - plow) {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    } else {
        double q = sqrt(-2.0 * log(1.0 - p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    }
    double e = 0.5 * erfc(-x / M_SQRT2) - p;
    double u = e * sqrt(2.0 * M_PI) * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
}
