/* Internals of the maximum-dissipation kernel exposed to the tests. */
#ifndef GRANFLOW_CONTACT_KERNEL_INTERNAL_H
#define GRANFLOW_CONTACT_KERNEL_INTERNAL_H

/* Coefficients of the stationarity condition of the sliding case (a multiple of the paper's
 * Eq. 8): E(a) = t0 + t1 cos a + t2 sin a + t3 cos 2a + t4 sin 2a. */
void gf_maxdiss_stationary_coeffs(const double A[9], const double b[3], double mu, double t[5]);

#endif
