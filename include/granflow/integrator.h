/* The time integration of the impulse-velocity scheme (paper section 3.1): velocities
 * explicitly (free velocity from external forces and the gyroscopic term, then contact impulses
 * from the solver), positions implicitly with the new velocities. */
#ifndef GRANFLOW_INTEGRATOR_H
#define GRANFLOW_INTEGRATOR_H

#include "granflow/particles.h"

/* v += dt g;  w += dt I^-1 (-w x I w)  for owned and ghost particles. */
void gf_integrate_free_velocity(gf_particles *p, const double gravity[3], double dt);

/* x += dt v;  q = normalise(q + dt Q(q) w). */
void gf_integrate_positions(gf_particles *p, double dt);

#endif
