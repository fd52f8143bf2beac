#include "par/exchange.h"
#include "core/order.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par_internal.h"

/* Each exchange uses tag and tag + 1 (sizes, data), plus 10 for the second direction. */
enum {
    TAG_MIGRATE = 100,
    TAG_MIGRATE_WS = 120,
    TAG_GHOST = 140,
    TAG_REG = 160,
    TAG_CORR = 170,
    TAG_VEL,
    TAG_PIPE,
    TAG_REFRESH
};

/* A ghost on the wire: the particle, where its original lives and the box lengths it is shifted
 * by along each axis (a periodic image). */
typedef struct {
    gf_particle p;
    int32_t owner_rank, owner_index;
    int8_t shift[3];
} wire_ghost;

gf_status gf_exchange_init(gf_exchange *x, const gf_par *par, const int dims[3],
                           const int periodic[3], const double lo[3], const double hi[3]) {
    memset(x, 0, sizeof *x);
    x->par = par;
    if (dims[0] * dims[1] * dims[2] != par->size)
        return GF_ERROR(GF_ERR_INPUT,
                        "the decomposition %d x %d x %d needs %d processes, but the job has %d",
                        dims[0], dims[1], dims[2], dims[0] * dims[1] * dims[2], par->size);
    /* MPI orders Cartesian coordinates with the last one fastest; granflow's arrays are x
     * fastest, so the grid is handed to MPI as (z, y, x). */
    int mdims[3] = {dims[2], dims[1], dims[0]};
    int mper[3] = {periodic[2], periodic[1], periodic[0]};
    MPI_TRY(MPI_Cart_create(par->comm, 3, mdims, mper, 0, &x->cart));
    int mcoords[3];
    MPI_TRY(MPI_Cart_coords(x->cart, par->rank, 3, mcoords));
    int coords[3] = {mcoords[2], mcoords[1], mcoords[0]};
    gf_decomp_setup(&x->decomp, dims, periodic, coords, lo, hi);
    x->decomp.rank = par->rank;
    int ncell = dims[0] * dims[1] * dims[2];
    x->decomp.rank_of = gf_malloc((size_t)ncell, sizeof(int));
    if (!x->decomp.rank_of)
        return gf_error_status();
    for (int cz = 0; cz < dims[2]; ++cz)
        for (int cy = 0; cy < dims[1]; ++cy)
            for (int cx = 0; cx < dims[0]; ++cx) {
                int mc[3] = {cz, cy, cx}, r;
                MPI_TRY(MPI_Cart_rank(x->cart, mc, &r));
                x->decomp.rank_of[(cz * dims[1] + cy) * dims[0] + cx] = r;
            }
    x->color = gf_exchange_color(dims, periodic, coords, &x->ncolors);
    /* The distinct neighbour ranks, in a fixed order (self first). */
    x->nnbr = 0;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                int r = gf_decomp_neighbor(&x->decomp, dx, dy, dz);
                if (r < 0)
                    continue;
                int seen = 0;
                for (int k = 0; k < x->nnbr; ++k)
                    seen |= x->nbr_rank[k] == r;
                if (!seen)
                    x->nbr_rank[x->nnbr++] = r;
            }
    return GF_OK;
}

int gf_exchange_color(const int dims[3], const int periodic[3], const int coords[3], int *ncolors) {
    int color = 0;
    *ncolors = 1;
    for (int a = 2; a >= 0; --a) {
        int n = dims[a] == 1 ? 1 : (periodic[a] && dims[a] % 2 ? 3 : 2);
        int c = coords[a] % 2;
        if (n == 3 && coords[a] == dims[a] - 1)
            c = 2; /* its periodic neighbour, coordinate 0, has parity 0 too */
        color = color * n + c;
        *ncolors *= n;
    }
    return color;
}

void gf_exchange_free(gf_exchange *x) {
    if (x->cart != MPI_COMM_NULL && x->cart != 0)
        MPI_Comm_free(&x->cart);
    gf_decomp_free(&x->decomp);
    free(x->ghost_rank);
    free(x->ghost_index);
    free(x->ghost_shift);
    free(x->recv_idx);
    free(x->send_idx);
    for (int k = 0; k < 6; ++k)
        free(x->v0[k]);
    free(x->slot);
    free(x->shared);
    free(x->buf);
    free(x->pipe_out);
    free(x->pipe_in);
    free(x->held);
    memset(x, 0, sizeof *x);
}

static gf_status scratch(gf_exchange *x, size_t bytes) {
    if (bytes <= x->cap_buf)
        return GF_OK;
    size_t cap = x->cap_buf ? x->cap_buf : 4096;
    while (cap < bytes)
        cap *= 2;
    GF_TRY(gf_grow(&x->buf, cap, 1));
    x->cap_buf = cap;
    return GF_OK;
}

/* A growable byte buffer for one direction of one stage. */
typedef struct {
    char *data;
    size_t len, cap;
} bytes;

static gf_status bytes_push(bytes *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        GF_TRY(gf_grow((void **)&b->data, cap, 1));
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return GF_OK;
}

/* Sends `out` to `to` and receives from `from` (sizes first), into `in`. */
static gf_status sendrecv_bytes(gf_exchange *x, const bytes *out, int to, bytes *in, int from,
                                int tag) {
    uint64_t nout = out->len, nin = 0;
    MPI_TRY(MPI_Sendrecv(&nout, 1, MPI_UINT64_T, to, tag, &nin, 1, MPI_UINT64_T, from, tag, x->cart,
                         MPI_STATUS_IGNORE));
    in->len = 0;
    if (nin > in->cap) {
        GF_TRY(gf_grow((void **)&in->data, (size_t)nin, 1));
        in->cap = (size_t)nin;
    }
    if (nout > (uint64_t)INT32_MAX || nin > (uint64_t)INT32_MAX)
        return GF_ERROR(GF_ERR_UNSUPPORTED,
                        "a single exchange message exceeds 2 GiB: use more processes");
    MPI_TRY(MPI_Sendrecv(out->data, (int)nout, MPI_BYTE, to, tag + 1, in->data, (int)nin, MPI_BYTE,
                         from, tag + 1, x->cart, MPI_STATUS_IGNORE));
    in->len = (size_t)nin;
    x->bytes_sent += (int64_t)nout;
    return GF_OK;
}

gf_status gf_exchange_migrate(gf_exchange *x, gf_particles *p, const gf_exchange_payload *payload) {
    const gf_decomp *d = &x->decomp;
    if (p->n_ghost != 0)
        return GF_ERROR(GF_ERR_STATE, "migration needs the ghosts removed first");
    bytes out[2] = {{0}}, in = {0}, wsout[2] = {{0}}, wsin = {0};
    int64_t *ids[2] = {NULL, NULL};
    size_t nids[2] = {0, 0}, capids[2] = {0, 0};
    gf_status st = GF_OK;
    for (int a = 0; a < 3 && st == GF_OK; ++a) {
        if (d->dims[a] == 1) {
            /* Nobody to send to: periodic crossings only wrap. */
            for (size_t i = 0; i < p->n_local; ++i)
                p->x[a][i] = gf_decomp_wrap_axis(d, a, p->x[a][i]);
            continue;
        }
        int off[3] = {0, 0, 0};
        off[a] = -1;
        int left = gf_decomp_neighbor(d, off[0], off[1], off[2]);
        off[a] = 1;
        int right = gf_decomp_neighbor(d, off[0], off[1], off[2]);
        out[0].len = out[1].len = 0;
        nids[0] = nids[1] = 0;
        double mid = 0.5 * (d->sub_lo[a] + d->sub_hi[a]);
        for (size_t i = 0; i < p->n_local && st == GF_OK;) {
            int c = gf_decomp_coord(d, a, p->x[a][i]);
            if (c == d->coords[a]) {
                ++i;
                continue;
            }
            /* A particle moves less than a subdomain per step, so the side it is on tells
             * the direction, also across a periodic boundary. */
            int dir = p->x[a][i] < mid ? 0 : 1;
            if ((dir == 0 ? left : right) < 0) {
                st = GF_ERROR(GF_ERR_STATE, "particle %lld left the domain along %c at %g",
                              (long long)p->id[i], "xyz"[a], p -> x[a][i]);
                break;
            }
            gf_particle rec;
            gf_particles_get(p, i, &rec);
            /* Only this stage's axis: the direction along later axes is read from the
             * unwrapped position. */
            rec.x[a] = gf_decomp_wrap_axis(d, a, rec.x[a]);
            st = bytes_push(&out[dir], &rec, sizeof rec);
            if (st == GF_OK && nids[dir] == capids[dir]) {
                capids[dir] = capids[dir] ? 2 * capids[dir] : 64;
                st = gf_grow((void **)&ids[dir], capids[dir], sizeof *ids[dir]);
            }
            if (st == GF_OK)
                ids[dir][nids[dir]++] = rec.id;
            gf_particles_remove(p, i); /* the last particle takes slot i: look at it next */
        }
        if (st != GF_OK)
            break;
        /* The payload's entries of the leaving particles go with them. */
        for (int dir = 0; dir < 2 && st == GF_OK; ++dir) {
            free(wsout[dir].data);
            memset(&wsout[dir], 0, sizeof wsout[dir]);
            if (!payload)
                continue;
            if (nids[dir] > 1)
                qsort(ids[dir], nids[dir], sizeof *ids[dir], gf_cmp_i64);
            void *data = NULL;
            size_t len = 0;
            st = payload->pack(payload->ctx, ids[dir], nids[dir], &data, &len);
            wsout[dir].data = data;
            wsout[dir].len = wsout[dir].cap = len;
        }
        /* Right-going first (received from the left), then left-going. */
        for (int dir = 1; dir >= 0 && st == GF_OK; --dir) {
            int to = dir ? right : left, from = dir ? left : right;
            int to_r = to < 0 ? MPI_PROC_NULL : to, from_r = from < 0 ? MPI_PROC_NULL : from;
            st = sendrecv_bytes(x, &out[dir], to_r, &in, from_r, TAG_MIGRATE + 10 * dir);
            if (st == GF_OK)
                st = sendrecv_bytes(x, &wsout[dir], to_r, &wsin, from_r, TAG_MIGRATE_WS + 10 * dir);
            size_t n = in.len / sizeof(gf_particle);
            for (size_t k = 0; k < n && st == GF_OK; ++k) {
                gf_particle rec;
                memcpy(&rec, in.data + k * sizeof rec, sizeof rec);
                if (gf_decomp_coord(d, a, rec.x[a]) != d->coords[a]) {
                    st = GF_ERROR(GF_ERR_STATE,
                                  "particle %lld moved more than one subdomain along %c in one "
                                  "step (now at %g): reduce the time step",
                                  (long long)rec.id, "xyz"[a], rec.x[a]);
                    break;
                }
                st = gf_particles_add(p, &rec);
            }
            if (st == GF_OK && payload && wsin.len > 0)
                st = payload->unpack(payload->ctx, wsin.data, wsin.len);
        }
    }
    for (int k = 0; k < 2; ++k) {
        free(out[k].data);
        free(wsout[k].data);
        free(ids[k]);
    }
    free(in.data);
    free(wsin.data);
    return st;
}

static gf_status ghost_meta_reserve(gf_exchange *x, size_t n) {
    if (n <= x->capg)
        return GF_OK;
    size_t cap = x->capg ? x->capg : 256;
    while (cap < n)
        cap *= 2;
    GF_TRY(gf_grow((void **)&x->ghost_rank, cap, sizeof *x->ghost_rank));
    GF_TRY(gf_grow((void **)&x->ghost_index, cap, sizeof *x->ghost_index));
    GF_TRY(gf_grow((void **)&x->ghost_shift, 3 * cap, sizeof *x->ghost_shift));
    x->capg = cap;
    return GF_OK;
}

static int nbr_slot(const gf_exchange *x, int rank) {
    for (int k = 0; k < x->nnbr; ++k)
        if (x->nbr_rank[k] == rank)
            return k;
    return -1;
}

typedef struct {
    int32_t rank, index, ghost;
} ghost_key;

static int cmp_ghost_key(const void *a, const void *b) {
    const ghost_key *p = a, *q = b;
    if (p->rank != q->rank)
        return p->rank < q->rank ? -1 : 1;
    if (p->index != q->index)
        return p->index < q->index ? -1 : 1;
    return p->ghost < q->ghost ? -1 : (p->ghost > q->ghost);
}

/* Velocity slots and shared flags (see exchange.h), after the registration. */
static gf_status assign_slots(gf_exchange *x, const gf_particles *p) {
    size_t n = p->n_local + p->n_ghost;
    if (n > x->cap_slot) {
        GF_TRY(gf_grow((void **)&x->slot, n, sizeof *x->slot));
        GF_TRY(gf_grow((void **)&x->shared, n, sizeof *x->shared));
        x->cap_slot = n;
    }
    x->nslot = n;
    for (size_t i = 0; i < p->n_local; ++i) {
        x->slot[i] = (int32_t)i;
        x->shared[i] = 0;
    }
    for (int k = 0; k < x->nnbr; ++k)
        if (x->nbr_rank[k] != x->decomp.rank)
            for (int s = x->send_off[k]; s < x->send_off[k + 1]; ++s)
                x->shared[x->send_idx[s]] = 1;
    if (p->n_ghost == 0)
        return GF_OK;
    ghost_key *keys = gf_malloc(p->n_ghost, sizeof *keys);
    if (!keys)
        return gf_error_status();
    for (size_t g = 0; g < p->n_ghost; ++g)
        keys[g] = (ghost_key){x->ghost_rank[g], x->ghost_index[g], (int32_t)g};
    qsort(keys, p->n_ghost, sizeof *keys, cmp_ghost_key);
    for (size_t k = 0; k < p->n_ghost; ++k) {
        size_t gi = p->n_local + (size_t)keys[k].ghost;
        if (keys[k].rank == x->decomp.rank) {
            x->slot[gi] = keys[k].index; /* a periodic image of an owned particle */
        } else if (k > 0 && keys[k].rank == keys[k - 1].rank &&
                   keys[k].index == keys[k - 1].index) {
            x->slot[gi] = x->slot[p->n_local + (size_t)keys[k - 1].ghost];
        } else {
            x->slot[gi] = (int32_t)gi;
        }
        x->shared[gi] = x->shared[x->slot[gi]] | (keys[k].rank != x->decomp.rank);
    }
    free(keys);
    return GF_OK;
}

/* Tells every owner which of its particles this rank holds as ghosts, in the order of the
 * ghost arrays grouped by owner, so that later exchanges need only values. */
static gf_status register_ghosts(gf_exchange *x, gf_particles *p) {
    int counts[28] = {0};
    for (size_t g = 0; g < p->n_ghost; ++g) {
        int k = nbr_slot(x, x->ghost_rank[g]);
        if (k < 0)
            return GF_ERROR(GF_ERR_STATE,
                            "ghost of particle %lld comes from rank %d, which is "
                            "not a neighbour",
                            (long long)p->id[p->n_local + g], x->ghost_rank[g]);
        counts[k]++;
    }
    x->recv_off[0] = 0;
    for (int k = 0; k < x->nnbr; ++k)
        x->recv_off[k + 1] = x->recv_off[k] + counts[k];
    if (p->n_ghost > x->cap_recv) {
        GF_TRY(gf_grow((void **)&x->recv_idx, p->n_ghost, sizeof *x->recv_idx));
        x->cap_recv = p->n_ghost;
    }
    int fill[28];
    memcpy(fill, x->recv_off, sizeof fill);
    for (size_t g = 0; g < p->n_ghost; ++g) {
        int k = nbr_slot(x, x->ghost_rank[g]);
        x->recv_idx[fill[k]++] = (int32_t)(p->n_local + g);
    }
    /* Counts, then the owner indices. */
    int sendc[27], recvc[27];
    MPI_Request req[54];
    int nreq = 0;
    for (int k = 0; k < x->nnbr; ++k) {
        sendc[k] = counts[k];
        MPI_TRY(MPI_Irecv(&recvc[k], 1, MPI_INT, x->nbr_rank[k], TAG_REG, x->cart, &req[nreq++]));
    }
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Isend(&sendc[k], 1, MPI_INT, x->nbr_rank[k], TAG_REG, x->cart, &req[nreq++]));
    MPI_TRY(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    x->send_off[0] = 0;
    for (int k = 0; k < x->nnbr; ++k)
        x->send_off[k + 1] = x->send_off[k] + recvc[k];
    size_t nsend = (size_t)x->send_off[x->nnbr];
    if (nsend > x->cap_send) {
        GF_TRY(gf_grow((void **)&x->send_idx, nsend ? nsend : 1, sizeof *x->send_idx));
        x->cap_send = nsend;
    }
    GF_TRY(scratch(x, p->n_ghost * sizeof(int32_t) + 16));
    int32_t *owner_idx = x->buf;
    for (int k = 0; k < x->nnbr; ++k)
        for (int i = x->recv_off[k]; i < x->recv_off[k + 1]; ++i)
            owner_idx[i] = x->ghost_index[x->recv_idx[i] - (int32_t)p->n_local];
    nreq = 0;
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Irecv(x->send_idx + x->send_off[k], recvc[k], MPI_INT32_T, x->nbr_rank[k],
                          TAG_REG + 1, x->cart, &req[nreq++]));
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Isend(owner_idx + x->recv_off[k], counts[k], MPI_INT32_T, x->nbr_rank[k],
                          TAG_REG + 1, x->cart, &req[nreq++]));
    MPI_TRY(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    for (size_t i = 0; i < nsend; ++i)
        if (x->send_idx[i] < 0 || (size_t)x->send_idx[i] >= p->n_local)
            return GF_ERROR(GF_ERR_STATE, "ghost registration names particle index %d of %zu",
                            x->send_idx[i], p->n_local);
    GF_TRY(assign_slots(x, p));
    return gf_exchange_mark(x, p);
}

gf_status gf_exchange_ghosts(gf_exchange *x, gf_particles *p, double range) {
    const gf_decomp *d = &x->decomp;
    gf_particles_clear_ghosts(p);
    bytes out[2] = {{0}}, in = {0};
    gf_status st = GF_OK;
    for (int a = 0; a < 3 && st == GF_OK; ++a) {
        if (d->dims[a] == 1 && !d->periodic[a])
            continue;
        int off[3] = {0, 0, 0};
        off[a] = -1;
        int left = gf_decomp_neighbor(d, off[0], off[1], off[2]);
        off[a] = 1;
        int right = gf_decomp_neighbor(d, off[0], off[1], off[2]);
        double L = d->hi[a] - d->lo[a];
        out[0].len = out[1].len = 0;
        /* Everything present so far (owned and the ghosts of earlier stages) is a candidate:
         * that is how edge and corner ghosts reach diagonal neighbours. */
        size_t n = p->n_local + p->n_ghost;
        for (size_t i = 0; i < n && st == GF_OK; ++i) {
            double xi = p->x[a][i];
            for (int dir = 0; dir < 2 && st == GF_OK; ++dir) {
                int near = dir == 0 ? xi < d->sub_lo[a] + range : xi >= d->sub_hi[a] - range;
                if (!near || (dir == 0 ? left : right) < 0)
                    continue;
                wire_ghost w;
                memset(&w, 0, sizeof w);
                gf_particles_get(p, i, &w.p);
                if (i < p->n_local) {
                    w.owner_rank = d->rank;
                    w.owner_index = (int32_t)i;
                } else {
                    w.owner_rank = x->ghost_rank[i - p->n_local];
                    w.owner_index = x->ghost_index[i - p->n_local];
                    memcpy(w.shift, x->ghost_shift + 3 * (i - p->n_local), sizeof w.shift);
                }
                /* Images across the periodic boundary are shifted by the box length (one
                 * addition, which gf_exchange_refresh repeats). */
                if (dir == 0 && d->coords[a] == 0) {
                    w.p.x[a] += L;
                    w.shift[a]++;
                }
                if (dir == 1 && d->coords[a] == d->dims[a] - 1) {
                    w.p.x[a] -= L;
                    w.shift[a]--;
                }
                st = bytes_push(&out[dir], &w, sizeof w);
            }
        }
        for (int dir = 1; dir >= 0 && st == GF_OK; --dir) {
            int to = dir ? right : left, from = dir ? left : right;
            st = sendrecv_bytes(x, &out[dir], to < 0 ? MPI_PROC_NULL : to, &in,
                                from < 0 ? MPI_PROC_NULL : from, TAG_GHOST + 10 * dir);
            size_t nin = in.len / sizeof(wire_ghost);
            if (st == GF_OK)
                st = ghost_meta_reserve(x, p->n_ghost + nin);
            for (size_t k = 0; k < nin && st == GF_OK; ++k) {
                wire_ghost w;
                memcpy(&w, in.data + k * sizeof w, sizeof w);
                x->ghost_rank[p->n_ghost] = w.owner_rank;
                x->ghost_index[p->n_ghost] = w.owner_index;
                memcpy(x->ghost_shift + 3 * p->n_ghost, w.shift, sizeof w.shift);
                st = gf_particles_add_ghost(p, &w.p);
            }
        }
    }
    free(out[0].data);
    free(out[1].data);
    free(in.data);
    if (st != GF_OK)
        return st;
    return register_ghosts(x, p);
}

/* A row of the refresh: position, orientation, velocities. */
#define REFRESH_ROW 13

gf_status gf_exchange_refresh(gf_exchange *x, gf_particles *p) {
    const gf_decomp *d = &x->decomp;
    int nrecv = x->recv_off[x->nnbr], nsend = x->send_off[x->nnbr];
    GF_TRY(scratch(x, REFRESH_ROW * (size_t)(nrecv + nsend) * sizeof(double) + 16));
    double *out = x->buf, *in = out + REFRESH_ROW * (size_t)nsend;
    for (int i = 0; i < nsend; ++i) {
        size_t li = (size_t)x->send_idx[i];
        double *r = out + REFRESH_ROW * (size_t)i;
        for (int a = 0; a < 3; ++a) {
            r[a] = p->x[a][li];
            r[7 + a] = p->v[a][li];
            r[10 + a] = p->w[a][li];
        }
        for (int k = 0; k < 4; ++k)
            r[3 + k] = p->q[k][li];
    }
    x->nreq = 0;
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Irecv(in + REFRESH_ROW * (size_t)x->recv_off[k],
                          REFRESH_ROW * (x->recv_off[k + 1] - x->recv_off[k]), MPI_DOUBLE,
                          x->nbr_rank[k], TAG_REFRESH, x->cart, &x->req[x->nreq++]));
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Isend(out + REFRESH_ROW * (size_t)x->send_off[k],
                          REFRESH_ROW * (x->send_off[k + 1] - x->send_off[k]), MPI_DOUBLE,
                          x->nbr_rank[k], TAG_REFRESH, x->cart, &x->req[x->nreq++]));
    int n = x->nreq;
    x->nreq = 0;
    MPI_TRY(MPI_Waitall(n, x->req, MPI_STATUSES_IGNORE));
    x->bytes_sent += (int64_t)REFRESH_ROW * nsend * (int64_t)sizeof(double);
    for (int i = 0; i < nrecv; ++i) {
        size_t gi = (size_t)x->recv_idx[i];
        const int8_t *shift = x->ghost_shift + 3 * (gi - p->n_local);
        const double *r = in + REFRESH_ROW * (size_t)i;
        for (int a = 0; a < 3; ++a) {
            double L = d->hi[a] - d->lo[a];
            /* The ghost build's single addition, so an image lands where a rebuild puts it. */
            p->x[a][gi] = shift[a] > 0 ? r[a] + L : (shift[a] < 0 ? r[a] - L : r[a]);
            p->v[a][gi] = r[7 + a];
            p->w[a][gi] = r[10 + a];
        }
        for (int k = 0; k < 4; ++k)
            p->q[k][gi] = r[3 + k];
    }
    return GF_OK;
}

static gf_status mark_ghosts(gf_exchange *x, const gf_particles *p) {
    if (p->n_ghost == 0)
        return GF_OK;
    if (p->n_ghost > x->cap_v0) {
        for (int k = 0; k < 6; ++k)
            GF_TRY(gf_grow((void **)&x->v0[k], p->n_ghost, sizeof *x->v0[k]));
        x->cap_v0 = p->n_ghost;
    }
    for (int k = 0; k < 3; ++k) {
        memcpy(x->v0[k], p->v[k] + p->n_local, p->n_ghost * sizeof(double));
        memcpy(x->v0[3 + k], p->w[k] + p->n_local, p->n_ghost * sizeof(double));
    }
    return GF_OK;
}

gf_status gf_exchange_mark(gf_exchange *x, const gf_particles *p) {
    /* The velocities changed here (new ghosts, a step's free velocities): the pipelined
     * messages send every row until a synchronisation tells what the neighbours hold. */
    x->held_valid = 0;
    return mark_ghosts(x, p);
}

/* The rows of a velocity message, six doubles each (v, w), for rows [from, to) of recv_idx (the
 * ghosts) or send_idx (the owned particles neighbours hold): the ghosts' changes since their
 * mark (and, with `mark`, marked again), the owners' velocities, the changes added onto the
 * owners, the owners' velocities set into the ghosts. Both the synchronisation and its
 * pipelined form are made of these. */
static inline void ghost_change_row(gf_exchange *x, const gf_particles *p, int i, double *out,
                                    int mark) {
    size_t gi = (size_t)x->recv_idx[i], g = gi - p->n_local;
    for (int d = 0; d < 3; ++d) {
        out[d] = p->v[d][gi] - x->v0[d][g];
        out[3 + d] = p->w[d][gi] - x->v0[3 + d][g];
        if (mark) {
            x->v0[d][g] = p->v[d][gi];
            x->v0[3 + d][g] = p->w[d][gi];
        }
    }
}

static inline void owner_value_row(const gf_exchange *x, const gf_particles *p, int i,
                                   double *out) {
    size_t li = (size_t)x->send_idx[i];
    for (int d = 0; d < 3; ++d) {
        out[d] = p->v[d][li];
        out[3 + d] = p->w[d][li];
    }
}

static inline void add_change_row(const gf_exchange *x, gf_particles *p, int i, const double *in) {
    size_t li = (size_t)x->send_idx[i];
    for (int d = 0; d < 3; ++d) {
        p->v[d][li] += in[d];
        p->w[d][li] += in[3 + d];
    }
}

static inline void set_ghost_row(gf_exchange *x, gf_particles *p, int i, const double *in,
                                 int mark) {
    size_t gi = (size_t)x->recv_idx[i], g = gi - p->n_local;
    for (int d = 0; d < 3; ++d) {
        p->v[d][gi] = in[d];
        p->w[d][gi] = in[3 + d];
        if (mark) {
            x->v0[d][g] = in[d];
            x->v0[3 + d][g] = in[3 + d];
        }
    }
}

/* A velocity message to or from neighbour k holds only the rows that say something: a count of
 * ghost changes and one of owner velocities, then an entry of 7 doubles per row (its place
 * among the rows of k, then v and w): the changes that are not zero, and the owned rows whose
 * velocities the neighbour does not hold yet (changed since they were last sent to it, or
 * changed by it). Late in a solve few bodies near the boundary still change, and short
 * messages travel eagerly where full ones wait for a rendezvous. Each neighbour's message has
 * room for all its rows, at the same place in the outgoing and incoming buffers. */
static size_t msg_offset(const gf_exchange *x, int k) {
    return 2 * (size_t)k + 7 * (size_t)(x->recv_off[k] + x->send_off[k]);
}

static int msg_capacity(const gf_exchange *x, int k) {
    return 2 + 7 * (x->recv_off[k + 1] - x->recv_off[k] + x->send_off[k + 1] - x->send_off[k]);
}

/* Doubles for the messages of every neighbour. */
static size_t msg_total(const gf_exchange *x) {
    return msg_offset(x, x->nnbr) + 1;
}

static inline double *msg_entry(double *e, int place, const double *values) {
    e[0] = (double)place;
    memcpy(e + 1, values, 6 * sizeof *values);
    return e + 7;
}

/* Writes neighbour k's message: the ghost changes (with `mark`, marked) and the owner
 * velocities it lacks (remembered as sent), as asked. Returns its length in doubles. */
static int msg_pack(gf_exchange *x, const gf_particles *p, int k, double *msg, int changes,
                    int values, int mark) {
    double *e = msg + 2, row[6];
    int nchange = 0, nvalue = 0;
    for (int i = x->recv_off[k]; changes && i < x->recv_off[k + 1]; ++i) {
        ghost_change_row(x, p, i, row, mark);
        /* A zero change (of either sign) adds nothing at the owner. */
        if (row[0] != 0.0 || row[1] != 0.0 || row[2] != 0.0 || row[3] != 0.0 || row[4] != 0.0 ||
            row[5] != 0.0) {
            e = msg_entry(e, i - x->recv_off[k], row);
            ++nchange;
        }
    }
    for (int i = x->send_off[k]; values && i < x->send_off[k + 1]; ++i) {
        double *sent = x->held + 6 * (size_t)i;
        owner_value_row(x, p, i, row);
        if (x->held_valid && memcmp(row, sent, sizeof row) == 0)
            continue;
        memcpy(sent, row, sizeof row);
        e = msg_entry(e, i - x->send_off[k], row);
        ++nvalue;
    }
    msg[0] = nchange;
    msg[1] = nvalue;
    return (int)(e - msg);
}

/* Applies neighbour k's message: its changes added onto the owned rows, its velocities set into
 * the ghosts (with `mark`, marked). */
static gf_status msg_unpack(gf_exchange *x, gf_particles *p, int k, const double *msg, int mark) {
    int nowned = x->send_off[k + 1] - x->send_off[k];
    int nghost = x->recv_off[k + 1] - x->recv_off[k];
    double nchange = msg[0], nvalue = msg[1];
    if (!(nchange >= 0.0 && nchange <= nowned && nvalue >= 0.0 && nvalue <= nghost))
        return GF_ERROR(GF_ERR_STATE,
                        "rank %d sent %g changes and %g velocities for %d and %d rows",
                        x->nbr_rank[k], nchange, nvalue, nowned, nghost);
    const double *e = msg + 2;
    for (int q = 0; q < (int)nchange; ++q, e += 7) {
        int i = x->send_off[k] + (int)e[0];
        add_change_row(x, p, i, e + 1);
        /* The neighbour changed its copy: it gets the sum back even if that rounds to the value
         * last sent (a NaN never compares equal). */
        x->held[6 * (size_t)i] = NAN;
    }
    for (int q = 0; q < (int)nvalue; ++q, e += 7)
        set_ghost_row(x, p, x->recv_off[k] + (int)e[0], e + 1, mark);
    return GF_OK;
}

static gf_status reserve_held(gf_exchange *x) {
    return gf_reserve((void **)&x->held, &x->cap_held, 6 * (size_t)x->send_off[x->nnbr] + 1,
                      sizeof(double));
}

/* One round of the synchronisation with every neighbour (this rank too, for its periodic
 * images): the messages asked for, posted into x->req; the incoming ones land in the second
 * half of x->buf. */
static gf_status sync_post(gf_exchange *x, const gf_particles *p, int changes, int tag) {
    double *out = x->buf, *in = out + msg_total(x);
    x->nreq = 0;
    for (int k = 0; k < x->nnbr; ++k)
        MPI_TRY(MPI_Irecv(in + msg_offset(x, k), msg_capacity(x, k), MPI_DOUBLE, x->nbr_rank[k],
                          tag, x->cart, &x->req[x->nreq++]));
    for (int k = 0; k < x->nnbr; ++k) {
        double *msg = out + msg_offset(x, k);
        int len = msg_pack(x, p, k, msg, changes, !changes, 0);
        MPI_TRY(MPI_Isend(msg, len, MPI_DOUBLE, x->nbr_rank[k], tag, x->cart, &x->req[x->nreq++]));
        x->bytes_sent += (int64_t)len * (int64_t)sizeof(double);
    }
    if (!changes)
        x->held_valid = 1;
    return GF_OK;
}

/* Waits for a round and applies what came. */
static gf_status sync_wait(gf_exchange *x, gf_particles *p) {
    int n = x->nreq;
    x->nreq = 0;
    MPI_TRY(MPI_Waitall(n, x->req, MPI_STATUSES_IGNORE));
    const double *in = (const double *)x->buf + msg_total(x);
    for (int k = 0; k < x->nnbr; ++k)
        GF_TRY(msg_unpack(x, p, k, in + msg_offset(x, k), 0));
    return GF_OK;
}

static gf_status pipe_wait_sends(gf_exchange *x);

gf_status gf_exchange_sync_begin(gf_exchange *x, gf_particles *p) {
    GF_TRY(pipe_wait_sends(x));
    GF_TRY(scratch(x, 2 * msg_total(x) * sizeof(double)));
    GF_TRY(reserve_held(x));
    /* 1: ghost velocity changes to the owners. */
    GF_TRY(sync_post(x, p, 1, TAG_CORR));
    GF_TRY(sync_wait(x, p));
    /* 2: the owners' velocities back to every ghost copy that lacks them, in flight until
     * _end. */
    return sync_post(x, p, 0, TAG_VEL);
}

gf_status gf_exchange_sync_end(gf_exchange *x, gf_particles *p) {
    GF_TRY(sync_wait(x, p));
    return mark_ghosts(x, p);
}

gf_status gf_exchange_sync(gf_exchange *x, gf_particles *p) {
    GF_TRY(gf_exchange_sync_begin(x, p));
    return gf_exchange_sync_end(x, p);
}

int gf_exchange_pipe_ready(const gf_exchange *x) {
    return x->ncolors == 2;
}

static gf_status pipe_wait_sends(gf_exchange *x) {
    int n = x->pipe_nsend;
    x->pipe_nsend = 0;
    MPI_TRY(MPI_Waitall(n, x->pipe_sreq, MPI_STATUSES_IGNORE));
    return GF_OK;
}

gf_status gf_exchange_pipe_post(gf_exchange *x, gf_particles *p) {
    GF_TRY(pipe_wait_sends(x)); /* the buffer is free again */
    GF_TRY(gf_reserve((void **)&x->pipe_out, &x->cap_pipe_out, msg_total(x), sizeof(double)));
    GF_TRY(reserve_held(x));
    for (int k = 0; k < x->nnbr; ++k) {
        if (x->nbr_rank[k] == x->decomp.rank)
            continue; /* periodic images here change nothing: their slot is the original's */
        double *msg = x->pipe_out + msg_offset(x, k);
        int len = msg_pack(x, p, k, msg, 1, 1, 1);
        MPI_TRY(MPI_Isend(msg, len, MPI_DOUBLE, x->nbr_rank[k], TAG_PIPE, x->cart,
                          &x->pipe_sreq[x->pipe_nsend++]));
        x->bytes_sent += (int64_t)len * (int64_t)sizeof(double);
    }
    x->held_valid = 1;
    return GF_OK;
}

gf_status gf_exchange_pipe_expect(gf_exchange *x) {
    if (x->pipe_nrecv > 0)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&x->pipe_in, &x->cap_pipe_in, msg_total(x), sizeof(double)));
    for (int k = 0; k < x->nnbr; ++k)
        if (x->nbr_rank[k] != x->decomp.rank)
            MPI_TRY(MPI_Irecv(x->pipe_in + msg_offset(x, k), msg_capacity(x, k), MPI_DOUBLE,
                              x->nbr_rank[k], TAG_PIPE, x->cart, &x->pipe_rreq[x->pipe_nrecv++]));
    /* A rank whose only neighbour is itself has nothing to receive, but a take still follows. */
    if (x->pipe_nrecv == 0)
        x->pipe_rreq[x->pipe_nrecv++] = MPI_REQUEST_NULL;
    return GF_OK;
}

gf_status gf_exchange_pipe_take(gf_exchange *x, gf_particles *p) {
    GF_TRY(reserve_held(x)); /* a change taken marks its row there */
    GF_TRY(gf_exchange_pipe_expect(x));
    int n = x->pipe_nrecv;
    x->pipe_nrecv = 0;
    MPI_TRY(MPI_Waitall(n, x->pipe_rreq, MPI_STATUSES_IGNORE));
    for (int k = 0; k < x->nnbr; ++k)
        if (x->nbr_rank[k] != x->decomp.rank)
            GF_TRY(msg_unpack(x, p, k, x->pipe_in + msg_offset(x, k), 1));
    return GF_OK;
}
