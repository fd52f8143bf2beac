/* On-line statistics of a run, sampled every few steps and averaged over the run, as in the
 * paper's Table 2: particles, solid volume fraction, contacts, contacts per particle, maximum
 * penetration, kinetic and potential energy and the mass flow rate at the outlet. A CSV time series
 * and a summary table at the end.
 *
 *  Statistics { every 1000; region_min < .. >; region_max < .. >; file "output/stats.csv"; }
 *
 * After a restart the CSV continues the earlier run's (the summary covers the restarted part;
 * gf-stats on the CSV gives the whole run's averages).
 *
 * Each sample row holds the contacts of the step sampled (solved: every pair within the
 * speculative margin; touching: gap <= 0; loaded: normal impulse > 0, as a DEM coordination
 * number counts them), 2C/N of the touching and of the loaded contacts, and the deepest
 * penetration of every step since the previous sample (not only of the sampled step) and the
 * number of those steps whose solve ended at max_iterations without converging.
 *
 * The potential energy is the gravitational one relative to the origin, -sum m g.x over the
 * particles of finite mass (those of infinite mass do not move under gravity).
 *
 * The solid fraction counts the whole volume of every sphere whose centre lies in the region
 * (default: the domain box) over the region's volume, obstacles included in that volume.
 *
 * Each Outlet block adds a column outlet_<name>_mass_rate after the others: the mass it deleted
 * since the previous sample over the time since then (kg/s). */
#ifndef GRANFLOW_STATS_H
#define GRANFLOW_STATS_H

#include <stdio.h>

#include "config/config.h"
#include "granflow/error.h"
#include "sim/observer.h"
#include "sim/sim.h"

typedef struct {
    long every;
    double region_lo[3], region_hi[3];
    char file[1024];
    FILE *csv; /* rank 0 */
    long samples;
    double sum_particles, sum_fraction, sum_energy, sum_potential, sum_rate;
    double sum_solved, sum_touching, sum_loaded, sum_cpp, sum_lpp;
    /* Deepest penetration of every step (this rank) since the last sample, and of the run. */
    double since_penetration, since_penetration_rel;
    double max_penetration, max_penetration_rel;
    long since_unconverged; /* steps since the last sample whose solve did not converge */
    double last_time, last_mass;
    double first_time;
    int64_t first_created;
    long resume_step; /* > 0 after a restart: the CSV keeps its rows up to this step */
    /* A column per Outlet block: its mass flow rate (kg/s) over the sample interval. */
    char outlet_columns[GF_MAX_OUTLETS * 96];
    double last_outlet_mass[GF_MAX_OUTLETS];
} gf_stats;

gf_status gf_stats_configure(gf_stats *st, gf_config_block *root, const gf_sim *sim);
/* Collective on the schedule (or always with force): a sample. Call after every step: the
 * penetration maxima cover every step. */
gf_status gf_stats_observe(gf_stats *st, gf_sim *sim, int force);
/* Collective, just before the first step of this run (restarted: from a checkpoint): the
 * reference time, inflow count and outflow mass the samples are taken against. */
gf_status gf_stats_start(gf_stats *st, const gf_sim *sim, int restarted);
/* Collective: rank 0 prints the averages; closes the CSV. */
void gf_stats_finish(gf_stats *st, const gf_sim *sim);

/* Statistics as an observer (observer.h): configure, start, observe and finish above; its check
 * probes Statistics.file when sampling is on. */
extern const gf_observer_type gf_stats_observer_type;

#endif
