/* Driving a simulation from a program: a run made from a configuration file exactly as the
 * `granflow` program makes it (the program is built on this), stepped in parts, its particles
 * read and changed between parts, its output written. Every function is collective over the
 * MPI job (MPI_COMM_WORLD; MPI is started if the program has not started it) and returns a
 * status every rank agrees on; none ends the job.
 *
 *     gf_run_options o = {.config_path = "configs/demo.cfg"};
 *     gf_run *run = NULL;
 *     if (gf_run_create(&o, &run) != GF_OK) ...           // gf_error_message() says why
 *     gf_run_advance(run, 500, NULL);                      // 500 steps, with its output
 *     size_t n = gf_run_local_count(run);                  // this rank's particles
 *     ... gf_run_local_particles(run, ids, x, v, NULL); gf_run_set_velocities(run, ...);
 *     gf_run_advance(run, 500, NULL);
 *     gf_run_finish(run);                                  // final checkpoint, reports, summary
 *     gf_run_destroy(run);
 *
 * docs/developer.md has a complete example program. */
#ifndef GRANFLOW_RUN_H
#define GRANFLOW_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"

typedef struct gf_run gf_run;

/* The version of this interface (the functions below and gf_run_options): a binding loaded at run
 * time (Python's granflow.Simulation over libgranflow.so) checks it. */
#define GF_RUN_API 4
int gf_run_api(void);

typedef struct {
    const char *config_path;      /* the configuration file (required) */
    const char *const *overrides; /* "-Block.key=value" items, as on the command line */
    int noverrides;
    const char *restart; /* a checkpoint to continue from, or NULL */
    int restart_force;   /* continue even if the configuration differs (warned) */
    int quiet;           /* no effective configuration and start lines on rank 0 */
    int check;           /* only to check the configuration (granflow --check): a lattice of more
                            than 1e7 sites is not placed (--dry-run estimates it) */
} gf_run_options;

/* Reads, checks and sets up the configuration (and restarts from the checkpoint if asked);
 * prints the effective configuration unless quiet. On failure *out is NULL. */
gf_status gf_run_create(const gf_run_options *o, gf_run **out);

/* Prints what a run of this configuration on `nranks` processes (0: this job's) would look
 * like without running it: the decomposition, particles per rank, a memory estimate. Rank 0
 * does the work; no job of that size is needed. */
gf_status gf_run_dry(const gf_run_options *o, int nranks);

/* Ends the MPI job (MPI_Finalize) at the end of a program; no run may be used after it. */
void gf_run_end_job(void);

/* Runs `steps` more steps (beyond the configured Time.steps too), with the configuration's
 * output, statistics and reports; the first call checks the output's locations and writes the
 * initial snapshot. *stopped (if not NULL) is set when a signal (SIGTERM, SIGUSR1, once
 * gf_run_handle_signals was called) or Output.wall_limit ended the part early after a
 * checkpoint. */
gf_status gf_run_advance(gf_run *r, long steps, int *stopped);

/* Ends the run: its final checkpoint, the reports' summaries and the run summary. */
gf_status gf_run_finish(gf_run *r);
void gf_run_destroy(gf_run *r);

/* SIGTERM and SIGUSR1 make the next step write a checkpoint and stop (what batch systems send
 * before a time limit). */
void gf_run_handle_signals(void);

/* The step reached, the configured last step (Time.steps), the simulated time (s). */
long gf_run_step(const gf_run *r);
long gf_run_last_step(const gf_run *r);
double gf_run_time(const gf_run *r);
/* This process's rank and the job's size. */
int gf_run_rank(const gf_run *r);
int gf_run_size(const gf_run *r);

/* The particles this rank owns (they move between ranks from step to step) and all of them. */
size_t gf_run_local_count(const gf_run *r);
gf_status gf_run_global_count(const gf_run *r, int64_t *n);
/* This rank's particles: ids, and positions, velocities, angular velocities as n x 3 rows
 * (m, m/s, rad/s); any pointer may be NULL. */
gf_status gf_run_local_particles(const gf_run *r, int64_t *id, double *x, double *v, double *w);
/* Sets the velocity (n x 3, m/s) of each particle of `id` that this rank owns; the same lists
 * may be given on every rank. *found (if not NULL) gets how many of the ids exist in the job. */
gf_status gf_run_set_velocities(gf_run *r, size_t n, const int64_t *id, const double *v,
                                int64_t *found);

/* Gravity (m/s^2) from the next step on, the same on every rank. The configuration that
 * snapshots and checkpoints record says so (Physics.gravity); a Stage that comes in force later
 * sets its own. */
gf_status gf_run_set_gravity(gf_run *r, const double g[3]);

/* A contact law's coefficient from the next step on, the same on every rank: `key` is a key of
 * the Materials block, for every pair ("friction", "restitution", "cohesion",
 * "rolling_friction", "twisting_friction", "restitution_velocity") or for one Pair block
 * ("Pair[2].friction", from 1). The recorded configuration says so, as for gravity. Any other
 * key, a value out of the key's range or a Pair that is not there is refused, nothing changed. */
gf_status gf_run_set_material(gf_run *r, const char *key, double value);

/* Adds bodies between steps: `text` holds Body blocks as a configuration writes them
 * ("Body { shape sphere; radius 0.01; position < 0, 0, 0.1 >; velocity < 1, 0, 0 >; }"), the
 * same on every rank; their ids are *first_id .. *first_id + *count - 1. A body that overlaps
 * another, lies outside the box, names an unknown material or clump, or has a key no body reads
 * is refused with an error, nothing added. The recorded configuration does not list them;
 * checkpoints hold them as they hold every particle. */
gf_status gf_run_add_bodies(gf_run *r, const char *text, int64_t *first_id, int64_t *count);

/* A snapshot (as Output writes them) or a checkpoint of the current state to `path`. */
gf_status gf_run_write_snapshot(gf_run *r, const char *path);
gf_status gf_run_write_checkpoint(gf_run *r, const char *path);

#endif
