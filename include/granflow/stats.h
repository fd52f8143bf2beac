/* On-line statistics of a run, sampled every few steps and averaged over the run, as in the
 * paper's Table 2: particles, solid volume fraction, contacts, contacts per particle, maximum
 * penetration, kinetic energy and the mass flow rate at the outlet. A CSV time series and a
 * summary table at the end.
 *
 *  Statistics { every 1000; region_min < .. >; region_max < .. >; file "output/stats.csv"; }
 *
 * After a restart the CSV continues the earlier run's (the summary covers the restarted part;
 * gf-stats on the CSV gives the whole run's averages).
 *
 * The solid fraction counts the whole volume of every sphere whose centre lies in the region
 * (default: the domain box) over the region's volume, obstacles included in that volume. */
#ifndef GRANFLOW_STATS_H
#define GRANFLOW_STATS_H

#include <stdio.h>

#include "granflow/config.h"
#include "granflow/error.h"
#include "granflow/sim.h"

typedef struct {
    long every;
    double region_lo[3], region_hi[3];
    char file[1024];
    FILE *csv; /* rank 0 */
    long samples;
    double sum_particles, sum_fraction, sum_contacts, sum_cpp, sum_energy, sum_rate;
    double max_penetration, max_penetration_rel;
    double last_time, last_mass;
    double first_time;
    int64_t first_created;
    long resume_step; /* > 0 after a restart: the CSV keeps its rows up to this step */
} gf_stats;

gf_status gf_stats_configure(gf_stats *st, gf_config_block *root, const gf_sim *sim);
/* Collective. Samples on the schedule (or always with force). */
gf_status gf_stats_observe(gf_stats *st, gf_sim *sim, int force);
/* Collective, just before the first step of this run (restarted: from a checkpoint): the
 * reference time, inflow count and outflow mass the samples are taken against. */
gf_status gf_stats_start(gf_stats *st, const gf_sim *sim, int restarted);
/* Rank 0 prints the averages; closes the CSV. */
void gf_stats_finish(gf_stats *st, const gf_sim *sim);

#endif
