/* The time integration of the impulse-velocity scheme (paper section 3.1): velocities
 * explicitly (free velocity from external forces and the torque-free rotation, then contact
 * impulses from the solver), positions implicitly with the new velocities. */
#ifndef GRANFLOW_INTEGRATOR_H
#define GRANFLOW_INTEGRATOR_H

#include "body/particles.h"

/* For owned and ghost particles: v += dt g; w unchanged for isotropic bodies (spheres), else
 * the w' with R' I R'^T w' = R I R^T w, where R' is the orientation gf_integrate_positions
 * will reach with w' (a fixed point, iterated to rounding): without contacts the world angular
 * momentum is conserved exactly. First order: the rotational energy of an asymmetric body
 * decays by O(dt |w|) per unit of |w| t and never grows. */
void gf_integrate_free_velocity(gf_particles *p, const double gravity[3], double dt);

/* x += dt v;  q = exp(dt (0, w) / 2) q, the exact rotation by the angle dt |w| about w. */
void gf_integrate_positions(gf_particles *p, double dt);

#endif
