/* The MPI layer: every MPI call of the engine lives here (and in the HDF5 writer), so the
 * physics modules stay testable without MPI and the communication pattern is in one place. */
#ifndef GRANFLOW_PAR_H
#define GRANFLOW_PAR_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"

typedef struct {
    MPI_Comm comm;
    int rank;
    int size;
} gf_par;

/* Starts MPI (if not yet started) and fills `par` for MPI_COMM_WORLD. */
gf_status gf_par_init(int *argc, char ***argv, gf_par *par);
gf_status gf_par_finalize(void);
/* Ends the whole job: only main and the tests call it. */
void gf_par_abort(const gf_par *par, int code);
/* For a failure this rank met alone (not agreed, e.g. during a step while the others wait in an
 * exchange): prints "[rank N] error: ..." with the recorded message and aborts the whole job
 * with exit status 1, so that no rank is left waiting. Only main and the tests call it. */
void gf_par_fail_alone(const gf_par *par, gf_status status);
/* Ends a phase of a program (main and the tests): a failure every rank knows of (agreed, or,
 * with `setup`, an input error, which every rank finds alike in the same configuration) is
 * agreed on and printed once, with the rank that found it, and 1 is returned on every rank; any
 * other failure was met by this rank alone (typically during a step, while the others wait in
 * an exchange) and ends the job from here with gf_par_fail_alone. Returns 0 if all succeeded. */
int gf_par_conclude(const gf_par *par, gf_status st, int setup);

/* Collective agreement on failure (for errors every rank reaches at the same point, such as
 * input checks or I/O): every rank passes its local status and all return the status of the
 * lowest failing rank (GF_OK if none), whose message every rank then holds as an agreed failure
 * (gf_error_agreed). `*first_rank` (may be NULL) receives that rank, so exactly one rank prints
 * the message. */
gf_status gf_par_agree(const gf_par *par, gf_status local, int *first_rank);

/* Broadcasts a byte buffer owned by `root`; other ranks receive a malloc'd copy (NUL-terminated).
 */
gf_status gf_par_bcast_text(const gf_par *par, int root, char **text, size_t *len);

/* Broadcasts root's *n doubles at *data; other ranks receive a malloc'd copy and its length. */
gf_status gf_par_bcast_doubles(const gf_par *par, int root, double **data, size_t *n);

/* Reads an STL file once for all ranks (gf_trimesh_read_stl on rank 0, the triangle soup
 * broadcast): every rank returns the same soup, or the same agreed error (a missing or damaged
 * file: rank 0's message), so that no rank is left waiting. Collective. */
gf_status gf_par_read_stl(const gf_par *par, const char *path, double **corners, size_t *nt);

typedef enum { GF_PAR_SUM, GF_PAR_MIN, GF_PAR_MAX } gf_par_op;
gf_status gf_par_allreduce_double(const gf_par *par, double *values, int n, gf_par_op op);
gf_status gf_par_allreduce_i64(const gf_par *par, int64_t *values, int n, gf_par_op op);
/* Exclusive prefix sum over ranks (rank 0 gets 0): offsets of per-rank counts. */
gf_status gf_par_exscan_i64(const gf_par *par, int64_t value, int64_t *offset);
gf_status gf_par_barrier(const gf_par *par);

/* Gathers every rank's `bytes` bytes on `root`: *out (malloc'd, root only) holds them rank by
 * rank and offsets[r] (size nranks + 1, root only) where rank r's part starts. */
/* Personalised all-to-all: sendbuf holds, rank by rank, sendcounts[r] bytes for rank r. On return
 * *recvbuf (malloc'd) holds what every rank sent here, *recvlen its length. */
gf_status gf_par_alltoallv_bytes(const gf_par *par, const void *sendbuf, const size_t *sendcounts,
                                 void **recvbuf, size_t *recvlen);

gf_status gf_par_gather_bytes(const gf_par *par, int root, const void *data, size_t bytes,
                              void **out, size_t **offsets);

#endif
