/* The observers of a granflow run, in the order each sees a step: statistics, forces on the
 * geometry, particle tracks, then the output (snapshots and checkpoints), whose checkpoint a
 * signal may ask for and whose final checkpoint is written first at the end (observers finish
 * in reverse). The program and the tests that set a run up as it does share this list; a new
 * observer is added here once. */
#ifndef GRANFLOW_RUN_OBSERVERS_H
#define GRANFLOW_RUN_OBSERVERS_H

#include "sim/observer.h"

/* Initialises `obs` and adds the run's observers. */
gf_status gf_run_observers_add(gf_observers *obs);

#endif
