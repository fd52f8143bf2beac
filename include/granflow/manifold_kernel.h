/* The joint kernel of a contact manifold: the impulses of all points of one pair of bodies (a
 * box face on a floor: four points) solved together, so that the pair's impulses maximise
 * dissipation together (README, "Contact manifolds").
 *
 * Inputs, for m points: A, the pair's 3m x 3m Delassus matrix (row-major, symmetric, point i's
 * rows and columns at 3i..3i+2 in its frame (n, t, o)); b, minus the relative velocity each point
 * would see with all of the manifold's impulses removed, minus its gap term; mu per point; x0,
 * the current impulses (the warm start, and the centre of the proximal term below).
 *
 * Maximum dissipation: among the impulses with every point's impulse in its friction cone and
 * Signorini's condition at every point (a loaded point does not approach, v'_n = 0; an unloaded
 * one does not penetrate, v'_n >= 0), the one of least kinetic energy, 1/2 x^T A x - x^T b. For
 * m = 1 this is the paper's single-contact problem (KERNEL.md).
 * Coulomb: Signorini's condition at every point and at each sliding point a friction impulse at
 * the cone's edge opposite that point's slip after the impulses (a sticking point does not slip).
 *
 * A face contact's points leave the split of the load between them open (four coplanar points,
 * three conditions on the body's motion); a proximal term eps/2 |x - x0|^2 (eps = 1e-3 of the
 * mean diagonal of A) picks the split nearest the current impulses (the least from x0 = 0), so
 * the answer is unique and continuous in time. With `exact` the kernel re-centres the term on
 * its answer until the answer stays, and solves the problem itself; without, it makes one
 * proximal step from x0, for a caller that iterates anyway (the Gauss-Seidel sweeps: their
 * fixed point is the problem's, x = x0).
 *
 * Accuracy: residuals of 1e-9 of the impulses' scale or better (usually rounding). Where no
 * answer exists or none is found (a body wedged between points with strongly differing
 * normals; violent tumbling: 8 in 30 000 random boxes on a floor, exact), it says so. */
#ifndef GRANFLOW_MANIFOLD_KERNEL_H
#define GRANFLOW_MANIFOLD_KERNEL_H

#include "granflow/error.h"

/* Points of one joint problem at most (the solver passes one collision query's manifold: up to
 * GF_MANIFOLD_MAX = 4 points). */
#define GF_MANIFOLD_KERNEL_MAX 4

/* y (maximum dissipation; NULL: none): m multipliers of the points' normal conditions, in: those
 * of the last call on the same block (0: none; a warm start for Newton's method), out: this
 * answer's (0 where a point's condition is not imposed).
 * Both return GF_OK with x the solution, or GF_ERR_NUMERIC (x = x0) when the input is not finite
 * or no answer was found (the caller then solves the points one by one). */
gf_status gf_manifold_kernel_maxdiss(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, double *y, int exact, double *x);
gf_status gf_manifold_kernel_coulomb(int m, const double *A, const double *b, const double *mu,
                                     const double *x0, int exact, double *x);

#endif
