#include "par/par.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "granflow/trimesh.h"
#include "par_internal.h"

gf_status gf_par_check(int rc, const char *what, const char *file, int line) {
    if (rc == MPI_SUCCESS)
        return GF_OK;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return gf_error_set(GF_ERR_MPI, file, line, "%s failed: %s", what, text);
}

gf_status gf_par_init(int *argc, char ***argv, gf_par *par) {
    int started = 0;
    MPI_Initialized(&started);
    if (!started)
        MPI_TRY(MPI_Init(argc, argv));
    /* Errors come back as codes so that they are reported like any other failure. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    par->comm = MPI_COMM_WORLD;
    MPI_TRY(MPI_Comm_rank(par->comm, &par->rank));
    MPI_TRY(MPI_Comm_size(par->comm, &par->size));
    return GF_OK;
}

gf_status gf_par_finalize(void) {
    int started = 0, finalized = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&finalized);
    if (started && !finalized)
        MPI_TRY(MPI_Finalize());
    return GF_OK;
}

void gf_par_abort(const gf_par *par, int code) {
    MPI_Abort(par ? par->comm : MPI_COMM_WORLD, code);
}

gf_status gf_par_agree(const gf_par *par, gf_status local, int *first_rank) {
    int mine = local != GF_OK ? par->rank : par->size;
    int lowest = par->size;
    MPI_TRY(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, par->comm));
    if (first_rank)
        *first_rank = lowest;
    if (lowest == par->size)
        return GF_OK;
    /* Every rank gets the finder's status and message, so that whichever rank reports it (also
     * after a later, nested agreement) prints what was found, not its own empty message. */
    struct {
        int status, origin;
        char text[2048];
    } msg;
    memset(&msg, 0, sizeof msg);
    if (par->rank == lowest) {
        msg.status = (int)local;
        /* A failure adopted from an earlier agreement keeps the rank that found it. */
        msg.origin = gf_error_agreed() ? gf_error_origin() : par->rank;
        snprintf(msg.text, sizeof msg.text, "%s", gf_error_message());
    }
    MPI_TRY(MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, lowest, par->comm));
    gf_error_adopt((gf_status)msg.status, msg.text, msg.origin);
    return (gf_status)msg.status;
}

int gf_par_conclude(const gf_par *par, gf_status st, int setup) {
    if (st != GF_OK && !gf_error_agreed() && !(setup && st == GF_ERR_INPUT))
        gf_par_fail_alone(par, st);
    int first = 0;
    gf_status all = gf_par_agree(par, st, &first);
    if (all == GF_OK)
        return 0;
    if (par->rank == first)
        gf_log_error_from(gf_error_origin(), "%s: %s", gf_status_name(all), gf_error_message());
    return 1;
}

void gf_par_fail_alone(const gf_par *par, gf_status status) {
    int rank = par ? par->rank : 0;
    fprintf(stderr, "[rank %d] error: %s: %s\n", rank, gf_status_name(status), gf_error_message());
    fprintf(stderr, "[rank %d] the job is aborted: the other ranks cannot know of this failure\n",
            rank);
    fflush(stderr);
    fflush(stdout);
    MPI_Abort(par ? par->comm : MPI_COMM_WORLD, 1);
}

gf_status gf_par_bcast_text(const gf_par *par, int root, char **text, size_t *len) {
    uint64_t n = par->rank == root ? (uint64_t)*len : 0;
    MPI_TRY(MPI_Bcast(&n, 1, MPI_UINT64_T, root, par->comm));
    if (par->rank != root) {
        *text = gf_malloc((size_t)n + 1, 1);
        if (!*text)
            return gf_error_status();
        *len = (size_t)n;
    }
    /* MPI counts are int: send in chunks so configurations and restarts of any size work. */
    for (uint64_t off = 0; off < n;) {
        int chunk = (int)((n - off) > (1u << 30) ? (1u << 30) : (n - off));
        MPI_TRY(MPI_Bcast(*text + off, chunk, MPI_CHAR, root, par->comm));
        off += (uint64_t)chunk;
    }
    (*text)[n] = '\0';
    return GF_OK;
}

gf_status gf_par_bcast_doubles(const gf_par *par, int root, double **data, size_t *n) {
    uint64_t count = par->rank == root ? (uint64_t)*n : 0;
    MPI_TRY(MPI_Bcast(&count, 1, MPI_UINT64_T, root, par->comm));
    int ok = 1;
    if (par->rank != root) {
        *data = gf_malloc((size_t)count + 1, sizeof **data);
        ok = *data != NULL;
        *n = (size_t)count;
    }
    /* A rank out of memory must not leave the root waiting in the broadcasts. */
    GF_TRY(gf_par_agree(par, ok ? GF_OK : gf_error_status(), NULL));
    for (uint64_t off = 0; off < count;) {
        int chunk = (int)((count - off) > (1u << 27) ? (1u << 27) : (count - off));
        MPI_TRY(MPI_Bcast(*data + off, chunk, MPI_DOUBLE, root, par->comm));
        off += (uint64_t)chunk;
    }
    return GF_OK;
}

gf_status gf_par_read_stl(const gf_par *par, const char *path, double **corners, size_t *nt) {
    *corners = NULL;
    *nt = 0;
    gf_status st = par->rank == 0 ? gf_trimesh_read_stl(path, corners, nt) : GF_OK;
    st = gf_par_agree(par, st, NULL);
    size_t n = 9 * *nt;
    if (st == GF_OK)
        st = gf_par_bcast_doubles(par, 0, corners, &n);
    if (st != GF_OK) {
        free(*corners);
        *corners = NULL;
        return st;
    }
    *nt = n / 9;
    return GF_OK;
}

static MPI_Op mpi_op(gf_par_op op) {
    switch (op) {
    case GF_PAR_MIN:
        return MPI_MIN;
    case GF_PAR_MAX:
        return MPI_MAX;
    default:
        return MPI_SUM;
    }
}

gf_status gf_par_allreduce_double(const gf_par *par, double *values, int n, gf_par_op op) {
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, mpi_op(op), par->comm));
    return GF_OK;
}

gf_status gf_par_allreduce_i64(const gf_par *par, int64_t *values, int n, gf_par_op op) {
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_INT64_T, mpi_op(op), par->comm));
    return GF_OK;
}

gf_status gf_par_exscan_i64(const gf_par *par, int64_t value, int64_t *offset) {
    *offset = 0;
    MPI_TRY(MPI_Exscan(&value, offset, 1, MPI_INT64_T, MPI_SUM, par->comm));
    if (par->rank == 0)
        *offset = 0; /* MPI leaves rank 0's result undefined */
    return GF_OK;
}

gf_status gf_par_barrier(const gf_par *par) {
    MPI_TRY(MPI_Barrier(par->comm));
    return GF_OK;
}

gf_status gf_par_gather_bytes(const gf_par *par, int root, const void *data, size_t bytes,
                              void **out, size_t **offsets) {
    *out = NULL;
    if (offsets)
        *offsets = NULL;
    uint64_t mine = bytes;
    uint64_t *all = NULL;
    int *counts = NULL, *displs = NULL;
    gf_status st = GF_OK;
    if (par->rank == root) {
        all = gf_calloc((size_t)par->size, sizeof *all);
        counts = gf_calloc((size_t)par->size, sizeof *counts);
        displs = gf_calloc((size_t)par->size, sizeof *displs);
        if (!all || !counts || !displs)
            st = gf_error_status();
    }
    /* Every rank takes part even when the root failed to allocate, so nobody hangs. */
    int rc = MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, root, par->comm);
    if (st == GF_OK && rc != MPI_SUCCESS)
        st = GF_ERROR(GF_ERR_MPI, "MPI_Gather of message sizes failed");
    uint64_t total = 0;
    if (par->rank == root && st == GF_OK) {
        for (int r = 0; r < par->size; ++r) {
            if (total + all[r] > (uint64_t)INT32_MAX) {
                st = GF_ERROR(GF_ERR_UNSUPPORTED, "gathering more than 2 GiB on one rank");
                break;
            }
            counts[r] = (int)all[r];
            displs[r] = (int)total;
            total += all[r];
        }
        if (st == GF_OK) {
            *out = gf_malloc((size_t)total + 1, 1);
            if (offsets)
                *offsets = gf_malloc((size_t)par->size + 1, sizeof **offsets);
            if (!*out || (offsets && !*offsets))
                st = gf_error_status();
            else if (offsets) {
                for (int r = 0; r < par->size; ++r)
                    (*offsets)[r] = (size_t)displs[r];
                (*offsets)[par->size] = (size_t)total;
            }
        }
    }
    int ok = st == GF_OK;
    MPI_Bcast(&ok, 1, MPI_INT, root, par->comm);
    if (ok) {
        rc = MPI_Gatherv(data, (int)bytes, MPI_BYTE, *out, counts, displs, MPI_BYTE, root,
                         par->comm);
        if (rc != MPI_SUCCESS)
            st = GF_ERROR(GF_ERR_MPI, "MPI_Gatherv failed");
    } else if (st == GF_OK) {
        st = GF_ERROR(GF_ERR_MEMORY, "the gather root ran out of memory");
    }
    free(all);
    free(counts);
    free(displs);
    return st;
}

gf_status gf_par_alltoallv_bytes(const gf_par *par, const void *sendbuf, const size_t *sendcounts,
                                 void **recvbuf, size_t *recvlen) {
    int n = par->size;
    int *sc = gf_calloc((size_t)n, sizeof *sc), *rc = gf_calloc((size_t)n, sizeof *rc);
    int *sd = gf_calloc((size_t)n, sizeof *sd), *rd = gf_calloc((size_t)n, sizeof *rd);
    gf_status st = (sc && rc && sd && rd) ? GF_OK : gf_error_status();
    size_t total = 0;
    for (int r = 0; r < n && st == GF_OK; ++r) {
        if (sendcounts[r] > (size_t)INT32_MAX || total > (size_t)INT32_MAX - sendcounts[r])
            st = GF_ERROR(GF_ERR_UNSUPPORTED, "an all-to-all message exceeds 2 GiB");
        else {
            sc[r] = (int)sendcounts[r];
            sd[r] = (int)total;
            total += sendcounts[r];
        }
    }
    /* Every rank must enter the collectives even after a local failure: agree first. */
    st = gf_par_agree(par, st, NULL);
    if (st == GF_OK && MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, par->comm) != MPI_SUCCESS)
        st = GF_ERROR(GF_ERR_MPI, "MPI_Alltoall of message sizes failed");
    size_t in = 0;
    for (int r = 0; r < n && st == GF_OK; ++r) {
        rd[r] = (int)in;
        in += (size_t)rc[r];
    }
    if (st == GF_OK && in > (size_t)INT32_MAX)
        st = GF_ERROR(GF_ERR_UNSUPPORTED, "an all-to-all receives more than 2 GiB on one rank");
    *recvbuf = NULL;
    if (st == GF_OK) {
        *recvbuf = gf_malloc(in + 1, 1);
        if (!*recvbuf)
            st = gf_error_status();
    }
    st = gf_par_agree(par, st, NULL);
    if (st == GF_OK && MPI_Alltoallv(sendbuf, sc, sd, MPI_BYTE, *recvbuf, rc, rd, MPI_BYTE,
                                     par->comm) != MPI_SUCCESS)
        st = GF_ERROR(GF_ERR_MPI, "MPI_Alltoallv failed");
    *recvlen = in;
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    return st;
}
