/* Parallel HDF5 output: snapshots, the XDMF sidecar for ParaView, checkpoints and restart.
 *
 * Every rank writes its own rows of each dataset into one shared file with collective MPI-IO
 * (no data funnels through rank 0). Rows are grouped by rank in rank order and sorted by id
 * within a rank; the dataset /particles/rank_offsets (nranks + 1 int64) marks the groups, so a
 * particle is found by id with one binary search per group. The layout is in README.md.
 *
 * Every collective function here returns a status all ranks agree on (gf_par_agree): a failure
 * one rank meets alone is agreed before the next collective call, so no rank is left waiting. */
#ifndef GRANFLOW_IO_H
#define GRANFLOW_IO_H

#include <stddef.h>

#include "config/config.h"
#include "granflow/error.h"
#include "sim/observer.h"
#include "sim/sim.h"

#define GF_IO_PATH 1024

/* One snapshot as the XDMF file lists it: its file, time and the rows of each of its grids. */
typedef struct {
    char file[256];
    double time;
    long long particles;
    long long members;     /* member spheres of clumps */
    long long geometry[3]; /* points, cells and connectivity entries of the geometry mesh */
    long long contacts;    /* contacts written as lines (Output.contacts) */
} gf_snapshot_entry;

typedef struct {
    char directory[GF_IO_PATH]; /* where snapshots and the XDMF file go */
    char prefix[128];
    long snapshot_every;         /* steps between snapshots, 0: none */
    int contacts;                /* add the contact list to snapshots */
    long checkpoint_every;       /* steps between checkpoints, 0: only on signal or wall limit */
    double wall_limit;           /* seconds: checkpoint and stop before this much wall time */
    char checkpoint[GF_IO_PATH]; /* checkpoint file */
    char *config_text;           /* the effective configuration, stored in every file */
    /* The snapshots of the run so far (for the XDMF temporal collections; rank 0 only). */
    size_t nsnap, capsnap;
    gf_snapshot_entry *snaps;
    double start;         /* wall time at configuration: what Output.wall_limit bounds */
    double loop_start;    /* wall time when stepping began (after the step-0 snapshot) */
    long first_step;      /* the step stepping began at */
    long next_check_step; /* the step of the next collective check of signals and wall time */
    long check_step;      /* the step of the last such check, and the stepping time then */
    double check_elapsed;
    long checkpoint_step; /* the step of the last checkpoint written or restarted from, or -1 */
} gf_output;

/*  Output { directory "output"; prefix "run"; snapshot_every 0; contacts false;
 *           checkpoint_every 0; checkpoint "output/run.ckpt.h5"; wall_limit 0; } */
gf_status gf_output_configure(gf_output *o, gf_config_block *root);
void gf_output_free(gf_output *o);
gf_status gf_output_set_config_text(gf_output *o, const char *text);

/* Collective: writes a snapshot of the current state to `path`. */
gf_status gf_io_write_snapshot(const gf_output *o, const gf_sim *sim, const char *path);

/* Collective: the full state needed to continue bit for bit, written to path.tmp; when every
 * rank has written its part, rank 0 renames the existing checkpoint to path.prev and path.tmp to
 * path. With ghost lists kept between rebuilds, the positions they were chosen from too, so a
 * restart on the same layout continues with the same lists. */
gf_status gf_io_write_checkpoint(const gf_output *o, const gf_sim *sim, const char *path);

/* Collective: the effective configuration stored in a checkpoint (*text malloc'd, "" when the
 * file records none). */
gf_status gf_io_read_configuration(const gf_sim *sim, const char *path, char **text);

/* Collective: loads particles, warm-start impulses, step, time, ids and walls into a configured
 * simulation without particles. On the rank count and decomposition that wrote the file every
 * rank reads back exactly its own rows (so the run continues bit for bit); otherwise rows are
 * read in slabs and sent to their owners. Corrupt, truncated or foreign files are errors. */
gf_status gf_io_read_checkpoint(gf_sim *sim, const char *path);

/* mkdir -p for one process (no MPI). */
gf_status gf_io_mkdirs(const char *dir);

/* Rank 0: the XDMF temporal collection of the snapshots listed in `o`. */
gf_status gf_io_write_xdmf(const gf_output *o);

/* Collective: continues from the checkpoint `path`. Its stored configuration must match
 * o->config_text (gf_config_compare): differences are an input error naming each key, or with
 * `force` a warning. Then the checkpoint is read (gf_io_read_checkpoint), and the snapshot list
 * rebuilt from the snapshot files in the output directory up to the checkpoint's step (later
 * ones are the interrupted run's and are written again), so the XDMF file lists each step once,
 * in order. */
gf_status gf_output_restart(gf_output *o, gf_sim *sim, const char *path, int force);

/* Collective, before the first step of a run that is not a restart: with snapshots on, a
 * snapshot of the initial state (step 0). */
gf_status gf_output_begin(gf_output *o, gf_sim *sim, int restarted);

/* After each step: snapshots and checkpoints on schedule, and on a signal or near the wall-time
 * limit a checkpoint followed by *stop = 1 (collective). */
gf_status gf_output_observe(gf_output *o, gf_sim *sim, int *stop);

/* Collective, after the last step: a checkpoint of the final state (unless one was just written
 * at this step), so that a finished run can be continued. */
gf_status gf_output_finish(gf_output *o, gf_sim *sim);

/* Rank 0: the directory of `file` exists (or is made) and takes a new file, so that a bad path
 * stops a run at once, not hours later; `what` names the key in the message. */
gf_status gf_io_probe_location(const char *file, const char *what);

/* The output as an observer (observer.h): begin, observe and finish above; its check probes the
 * snapshot directory (if snapshots are on) and the checkpoint's directory. */
extern const gf_observer_type gf_output_observer_type;

/* Set by the signal handler (SIGUSR1, SIGTERM); read at the end of a step. */
void gf_output_request_checkpoint(void);
void gf_output_install_signal_handlers(void);

#endif
