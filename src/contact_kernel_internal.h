/* Internals of the maximum-dissipation kernel exposed to the tests. */
#ifndef GRANFLOW_CONTACT_KERNEL_INTERNAL_H
#define GRANFLOW_CONTACT_KERNEL_INTERNAL_H

#include <complex.h>

/* Fourier coefficients e0, e1, e2 of the stationarity condition of the sliding case,
 * E(a) = e0 + 2 Re(e1 e^{ia}) + 2 Re(e2 e^{2ia}) (a positive multiple of the paper's Eq. 8). */
void gf_maxdiss_stationary_coeffs(const double A[9], const double b[3], double mu,
                                  double complex e[3]);

#endif
