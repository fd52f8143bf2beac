/* Cartesian domain decomposition: the box is cut into dims[0] x dims[1] x dims[2] subdomains,
 * one per rank; a particle belongs to the subdomain containing its centre. The cuts are equally
 * spaced unless set (gf_decomp_set_cuts, the load balancing): then they are still planes across
 * the whole box, one set per axis (a rectilinear grid), so the grid's neighbours stay the same
 * ranks and two neighbours always agree on the face between them.
 *
 * Ownership is decided everywhere by one function, gf_decomp_coord, so that a centre exactly
 * on a boundary, or rounding in a periodic wrap, can never make two ranks (or none) claim a
 * particle. No MPI here: the rank of each grid cell comes from the par module. */
#ifndef GRANFLOW_DECOMP_H
#define GRANFLOW_DECOMP_H

#include "granflow/error.h"

typedef struct {
    int dims[3];
    int periodic[3];
    int coords[3]; /* this rank's cell */
    int rank;
    double lo[3], hi[3];         /* the whole domain */
    double sub_lo[3], sub_hi[3]; /* this rank's subdomain */
    int *rank_of;                /* rank of cell (x, y, z) at (z * dims[1] + y) * dims[0] + x */
    double *cut[3]; /* NULL: equal spacing; else dims[a] + 1 positions, cut[a][0] = lo[a] and
                       cut[a][dims[a]] = hi[a] */
} gf_decomp;

/* The factorisation of nranks into dims that minimises the total subdomain surface for a box of
 * the given extent (the communication volume), preferring cuts across the longest axes. */
gf_status gf_decomp_choose_dims(int nranks, const double extent[3], int dims[3]);

/* Fills geometry from dims/periodic/coords/lo/hi, equally spaced; rank_of must be set by the
 * caller. */
void gf_decomp_setup(gf_decomp *d, const int dims[3], const int periodic[3], const int coords[3],
                     const double lo[3], const double hi[3]);
void gf_decomp_free(gf_decomp *d);

/* Grid coordinate along `axis` of the cell owning position x, always in [0, dims[axis]): that of
 * gf_decomp_wrap_axis(x) on periodic axes (a position and its wrap have one owner), clamped on
 * the others (a centre a hair outside the box stays with the edge rank). */
int gf_decomp_coord(const gf_decomp *d, int axis, double x);
/* The same for x as it is (not wrapped): the slab holding it, clamped to [0, dims[axis]). */
int gf_decomp_slab(const gf_decomp *d, int axis, double x);
/* Cuts along `axis` (dims[axis] + 1 increasing positions from lo to hi): the same on every
 * rank, or ranks disagree about owners. Refused (nothing changed) unless increasing with the
 * box's ends. */
gf_status gf_decomp_set_cuts(gf_decomp *d, int axis, const double *cuts);
/* Position of cut k (0 .. dims[axis]) along `axis`. */
double gf_decomp_cut(const gf_decomp *d, int axis, int k);
/* Rank owning position x. */
int gf_decomp_owner(const gf_decomp *d, const double x[3]);
int gf_decomp_owns(const gf_decomp *d, const double x[3]);
/* Rank of the cell at offset (dx, dy, dz) from this rank's cell, or -1 past a walled edge. */
int gf_decomp_neighbor(const gf_decomp *d, int dx, int dy, int dz);
/* Periodic images: moves x into [lo, hi) along periodic axes (or along one axis), exactly: the
 * result is never hi, also where rounding of x + k L would give it (x = -1e-19 on [0, 0.1]
 * gives 0); positions already in [lo, hi) are returned unchanged, non-finite ones too. */
void gf_decomp_wrap(const gf_decomp *d, double x[3]);
double gf_decomp_wrap_axis(const gf_decomp *d, int axis, double x);
/* Input check: every subdomain (every slab along each cut axis) at least `range` thick. */
gf_status gf_decomp_check_range(const gf_decomp *d, double range);
/* The largest range ghosts can have: the thinnest subdomain along a cut or periodic axis
 * (infinite without one). */
double gf_decomp_reach(const gf_decomp *d);

#endif
