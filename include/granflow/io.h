/* Parallel HDF5 output: snapshots, the XDMF sidecar for ParaView, checkpoints and restart.
 *
 * Every rank writes its own rows of each dataset into one shared file with collective MPI-IO
 * (no data funnels through rank 0). Rows are grouped by rank in rank order and sorted by id
 * within a rank; /particles/rank_offsets (nranks + 1) marks the groups, so a particle is found
 * by id with one binary search per group. The layout is in README.md. */
#ifndef GRANFLOW_IO_H
#define GRANFLOW_IO_H

#include <stddef.h>

#include "granflow/config.h"
#include "granflow/error.h"
#include "granflow/sim.h"

#define GF_IO_PATH 1024

typedef struct {
    char directory[GF_IO_PATH]; /* where snapshots and the XDMF file go */
    char prefix[128];
    long snapshot_every;         /* steps between snapshots, 0: none */
    int contacts;                /* add the contact list to snapshots */
    long checkpoint_every;       /* steps between checkpoints, 0: only on signal or wall limit */
    double wall_limit;           /* seconds: checkpoint and stop before this much wall time */
    char checkpoint[GF_IO_PATH]; /* checkpoint file */
    char *config_text;           /* the effective configuration, stored in every file */
    /* The snapshots written so far (for the XDMF temporal collection, rank 0). */
    size_t nsnap, capsnap;
    char (*snap_file)[256];
    double *snap_time;
    long long *snap_count;
    double start;     /* wall time at the start of the run */
    double step_time; /* a running estimate of one step's wall time */
    long last_check_step;
} gf_output;

/*  Output { directory "output"; prefix "run"; snapshot_every 0; contacts false;
 *           checkpoint_every 0; checkpoint "output/run.ckpt.h5"; wall_limit 0; } */
gf_status gf_output_configure(gf_output *o, gf_config_block *root);
void gf_output_free(gf_output *o);
gf_status gf_output_set_config_text(gf_output *o, const char *text);

/* Collective: writes a snapshot of the current state to `path`. */
gf_status gf_io_write_snapshot(const gf_output *o, const gf_sim *sim, const char *path);

/* Collective: the full state needed to continue bit for bit, written to path.tmp and renamed
 * over path only when complete. */
gf_status gf_io_write_checkpoint(const gf_output *o, const gf_sim *sim, const char *path);

/* Collective: loads particles, warm-start impulses, step, time, ids and walls into a configured
 * simulation without particles. On the rank count and decomposition that wrote the file every
 * rank reads back exactly its own rows (so the run continues bit for bit); otherwise rows are
 * read in slabs and sent to their owners. Corrupt, truncated or foreign files are errors. */
gf_status gf_io_read_checkpoint(gf_sim *sim, const char *path);

/* mkdir -p for one process (no MPI). */
gf_status gf_io_mkdirs(const char *dir);

/* Rank 0: the XDMF temporal collection of all snapshots written so far. */
gf_status gf_io_write_xdmf(const gf_output *o);

/* After each step: snapshots and checkpoints on schedule, and on a signal or near the wall-time
 * limit a checkpoint followed by *stop = 1 (collective). */
gf_status gf_output_observe(gf_output *o, gf_sim *sim, int *stop);

/* Set by the signal handler (SIGUSR1, SIGTERM); read at the end of a step. */
void gf_output_request_checkpoint(void);
void gf_output_install_signal_handlers(void);

#endif
