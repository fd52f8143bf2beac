/* What a run reports (internal to src/sim): the tallies of each step, the progress line and
 * the summary (gf_sim_print_summary, gf_sim_eta in sim.h). */
#ifndef GF_SIM_REPORT_H
#define GF_SIM_REPORT_H

#include "sim/sim.h"

/* The tallies of a step, right after its solve: the figures of its contacts (before integration
 * and migration reorder the particles), the run's sums and maxima, the particles stepped and
 * the solver's sweeps and convergence. */
void gf_sim_tally_step(gf_sim *sim);

/* The progress line after `done` of the run's `todo` steps (collective). */
gf_status gf_sim_progress(gf_sim *sim, long done, long todo);

#endif
