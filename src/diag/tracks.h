/* Tracks of chosen particles (issue 15): every few steps the time, id, position, velocity and
 * angular velocity of each selected particle that exists, gathered on rank 0 and written as CSV
 * rows sorted by id.
 *
 *  Tracks { ids "1 17 250 1000-1009"; every 10; file "output/tracks.csv"; }
 *
 * ids: global particle ids separated by spaces or commas; a-b is every id from a to b. Without
 * a Tracks block nothing is done (no cost per step). A restarted run continues the file. */
#ifndef GRANFLOW_TRACKS_H
#define GRANFLOW_TRACKS_H

#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "granflow/error.h"
#include "sim/observer.h"
#include "sim/sim.h"

/* The most ids one Tracks block selects. */
#define GF_TRACKS_MAX 100000

typedef struct {
    long every; /* 0: off */
    char file[1024];
    int64_t *ids; /* sorted, distinct */
    size_t nids;
    FILE *csv;        /* rank 0 */
    long resume_step; /* > 0 after a restart: the CSV keeps its rows up to this step */
} gf_tracks;

gf_status gf_tracks_configure(gf_tracks *tr, gf_config_block *root);
/* Parses an id list ("1 17 250", "3-7, 9") into sorted distinct ids (*ids malloc'd). */
gf_status gf_tracks_parse_ids(const char *text, int64_t **ids, size_t *n);
gf_status gf_tracks_start(gf_tracks *tr, const gf_sim *sim, int restarted);
/* Collective on the schedule (or always with force): a row per selected particle. */
gf_status gf_tracks_observe(gf_tracks *tr, const gf_sim *sim, int force);
void gf_tracks_free(gf_tracks *tr);

/* Tracks as an observer (observer.h); its check probes Tracks.file when particles are tracked. */
extern const gf_observer_type gf_tracks_observer_type;

#endif
