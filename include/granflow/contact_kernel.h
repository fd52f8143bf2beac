/* Per-contact kernels: the exact solution of one contact's block given all others.
 *
 * Inputs are in the contact frame (n, t, o): A is the 3x3 symmetric positive definite Delassus
 * block, row-major; b is minus the relative contact velocity the contact would see without its
 * own reaction, minus the gap term (KERNEL.md); mu >= 0 the friction coefficient. The result x
 * is the contact impulse (n, t, o).
 *
 * The gf_contact_kernel_* functions return GF_ERR_NUMERIC (and x = 0) when the input holds NaN or
 * Inf, so a solver can report the contact instead of spreading NaN through the packing. The
 * gf_contact_solve_* wrappers have the plain signature for other programs. */
#ifndef GRANFLOW_CONTACT_KERNEL_H
#define GRANFLOW_CONTACT_KERNEL_H

#include "granflow/error.h"

typedef gf_status (*gf_contact_kernel_fn)(const double A[9], const double b[3], double mu,
                                          double x[3]);

/* Normal impulse only: x = (max(0, b_n / A_nn), 0, 0). */
gf_status gf_contact_kernel_frictionless(const double A[9], const double b[3], double mu,
                                         double x[3]);

/* Coulomb-like impulsive friction by decoupling (pe's InelasticCoulombContactByDecoupling):
 * the normal impulse first, then the sticking tangential impulse for that normal impulse,
 * projected onto the friction disc. Equal to the maximum-dissipation result for spheres. */
gf_status gf_contact_kernel_coulomb(const double A[9], const double b[3], double mu, double x[3]);

/* The maximum-dissipation impulse, solved analytically (paper Fig. 5, quartic of Eq. 8). */
gf_status gf_contact_kernel_maxdiss(const double A[9], const double b[3], double mu, double x[3]);

/* The same for the block of a sphere-sphere or sphere-wall contact: A = diag(a_n, a_t, a_t)
 * (isotropic tangential block, no normal-tangential coupling), where the quartic degenerates. */
gf_status gf_contact_kernel_maxdiss_sphere(const double A[9], const double b[3], double mu,
                                           double x[3]);

void gf_contact_solve_maxdiss(const double A[9], const double b[3], double mu, double x[3]);
void gf_contact_solve_coulomb(const double A[9], const double b[3], double mu, double x[3]);

/* The minimiser x of 1/2 x.M x - g.x over the disc |x| <= R, M = {m11, m12, m22} symmetric
 * positive semi-definite: the maximum-dissipation rolling torque of a contact with rolling
 * resistance (M the rolling part of its torque block, g = M tau - Omega for its current torque
 * tau and relative spin Omega, R the bound). x = 0 for R <= 0 or M = 0. */
void gf_contact_kernel_disc(const double M[3], const double g[2], double R, double x[2]);

/* The objective 1/2 x^T A x - x^T b the maximum-dissipation impulse minimises. */
double gf_contact_objective(const double A[9], const double b[3], const double x[3]);

#endif
