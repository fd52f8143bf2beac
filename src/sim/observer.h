/* What a run does after each step besides the step itself (statistics, forces on geometry,
 * particle tracks, snapshots and checkpoints): each kind of observer describes itself once by a
 * gf_observer_type, and a program registers the kinds it wants in a gf_observers list, which
 * then configures, checks, starts, runs, finishes and frees them all in turn. Observers run in
 * the order they were added; they finish in the opposite order (snapshots and the final
 * checkpoint, added last, are written before the reports of the others).
 *
 *     gf_observers obs;
 *     gf_observers_init(&obs);
 *     gf_observers_add(&obs, &gf_stats_observer_type, NULL);
 *     ...
 *     gf_observers_configure(&obs, gf_config_root(cfg), &sim);
 *     gf_observers_check(&obs, &sim);
 *     gf_observers_start(&obs, &sim, restarted);
 *     gf_sim_run(&sim, gf_observers_observe, &obs);
 *     gf_observers_finish(&obs, &sim);
 *     gf_observers_free(&obs);
 */
#ifndef GRANFLOW_OBSERVER_H
#define GRANFLOW_OBSERVER_H

#include <stddef.h>

#include "config/config.h"
#include "granflow/error.h"
#include "sim/sim.h"

#define GF_MAX_OBSERVERS 16

/* One kind of observer. `size` bytes of state are allocated zeroed for each instance; every
 * function gets that state. Any function may be NULL (nothing to do). */
typedef struct gf_observer_type {
    const char *name; /* for messages: the configuration block it reads */
    size_t size;
    /* Reads its configuration block(s); not collective (a dry run calls it on rank 0 alone). */
    gf_status (*configure)(void *self, gf_config_block *root, const gf_sim *sim);
    /* Rank 0, before the run: the files it will write can be made (a clear error now instead of
     * a failure hours into the run). */
    gf_status (*check)(const void *self);
    /* Collective, just before the first step of this run (restarted: from a checkpoint). */
    gf_status (*start)(void *self, gf_sim *sim, int restarted);
    /* Collective, after every step; setting *stop ends the run after this step. */
    gf_status (*observe)(void *self, gf_sim *sim, int *stop);
    /* Collective, after a run that ended without error. */
    gf_status (*finish)(void *self, gf_sim *sim);
    /* Frees what it holds (files, memory); safe after a failure at any point. */
    void (*release)(void *self);
} gf_observer_type;

typedef struct {
    const gf_observer_type *type[GF_MAX_OBSERVERS];
    void *self[GF_MAX_OBSERVERS];
    int count;
} gf_observers;

void gf_observers_init(gf_observers *obs);
/* Adds an instance of `type` (its state zeroed); *self (if not NULL) gets its state. */
gf_status gf_observers_add(gf_observers *obs, const gf_observer_type *type, void **self);
/* The state of the first instance of `type`, or NULL. */
void *gf_observers_find(const gf_observers *obs, const gf_observer_type *type);

gf_status gf_observers_configure(gf_observers *obs, gf_config_block *root, const gf_sim *sim);
/* Collective (rank 0 checks, every rank gets the verdict). */
gf_status gf_observers_check(const gf_observers *obs, const gf_sim *sim);
gf_status gf_observers_start(gf_observers *obs, gf_sim *sim, int restarted);
/* A gf_sim_observer: every observer sees the step, even when an earlier one asks to stop. */
gf_status gf_observers_observe(void *obs, gf_sim *sim, int *stop);
/* In the opposite order of adding; all are finished even if one fails (the first error is
 * returned). */
gf_status gf_observers_finish(gf_observers *obs, gf_sim *sim);
void gf_observers_free(gf_observers *obs);

#endif
