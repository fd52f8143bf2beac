/* The force the particles exert on each wall and obstacle, as a time series (issue 15): per
 * geometry body the sum of the impulses of its contacts (normal and tangential, the force ON the
 * body) over the steps since the previous sample, divided by that time: the average force over
 * the sample interval. Optionally also the torque about a point.
 *
 *  Forces { every 100; file "output/forces.csv"; torque_point < 0, 0, 0 >; }
 *
 * One CSV row per sample (rank 0): step, time, then per body in contact order (walls, boxes,
 * cylinders, meshes) fx, fy, fz (N), columns named wall0_fx, box0_fy, cyl1_fz, mesh0_fx, ...;
 * with torque_point given also wall0_tx .. (N m), each contact's impulse about the point from
 * the contact point (so a mesh's torque is the sum over its contacts wherever it has turned). Each
 * rank sums its contacts every step (a contact with the geometry belongs to the rank owning its
 * particle, so none is counted twice); the sums are reduced over the ranks only at a sample. A
 * restarted run continues the file. */
#ifndef GRANFLOW_FORCES_H
#define GRANFLOW_FORCES_H

#include <stdio.h>

#include "config/config.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "sim/observer.h"
#include "sim/sim.h"

typedef struct {
    long every; /* 0: off */
    char file[1024];
    int torque; /* torque_point given */
    double torque_point[3];
    FILE *csv;        /* rank 0 */
    long resume_step; /* > 0 after a restart: the CSV keeps its rows up to this step */
    double last_time; /* of the previous sample (or the start) */
    /* This rank's impulses on each body since the previous sample: force, then torque. */
    double impulse[GF_MAX_BODIES][6];
} gf_forces;

gf_status gf_forces_configure(gf_forces *fo, gf_config_block *root);
/* Collective, before the first step of this run (restarted: from a checkpoint). */
gf_status gf_forces_start(gf_forces *fo, const gf_sim *sim, int restarted);
/* After every step (the contacts of the step and their impulses are still in sim->contacts):
 * adds them up; collective on the schedule (or always with force): a sample. */
gf_status gf_forces_observe(gf_forces *fo, const gf_sim *sim, int force);
/* Adds the impulses of the step's contacts on the geometry to fo->impulse (local, no sample). */
void gf_forces_accumulate(gf_forces *fo, const gf_contacts *c);
void gf_forces_finish(gf_forces *fo);

/* Forces as an observer (observer.h); its check probes Forces.file when sampling is on. */
extern const gf_observer_type gf_forces_observer_type;

#endif
