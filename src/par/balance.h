/* Load balancing of the decomposition: the cuts of each axis cut into several subdomains move
 * so that the slabs between them carry equal work.
 *
 * Work is counted, not timed: a particle is one unit and each of its contacts one more (the
 * detection's and the solve's cost grow with both). Counts are whole numbers, so their global
 * sums are exact and every rank finds the same cuts from them, and a run restarted from a
 * checkpoint balances as the uninterrupted run did. Each axis is balanced by its own histogram
 * of the work along it (the cuts are planes across the whole box, see decomp.h), so a
 * decomposition cut along several axes is balanced slab by slab, not cell by cell.
 *
 * A cut moves at most half way to its neighbours per balancing, so a particle changes owner to a
 * direct neighbour only (migration moves particles one subdomain), and the balance settles
 * without oscillating; no slab becomes thinner than the given width (the interaction range with
 * room to grow). */
#ifndef GRANFLOW_BALANCE_H
#define GRANFLOW_BALANCE_H
#include <stdint.h>

#include "par/decomp.h"
#include "granflow/error.h"

/* Histogram bins per subdomain along an axis: the resolution of a cut is a 1/32 of a slab. */
#define GF_BALANCE_BINS_PER_SLAB 32

typedef struct {
    int nbins[3];  /* 0 along an axis that is not cut */
    int64_t *bins; /* every axis's bins in one array (x's first), for one global sum */
    int64_t
        *count[3]; /* an axis's bins within `bins`: the work in each, this rank's until summed */
} gf_balance;

/* Histograms for the cut axes of d (every rank alike). */
gf_status gf_balance_init(gf_balance *b, const gf_decomp *d);
void gf_balance_free(gf_balance *b);
void gf_balance_clear(gf_balance *b);
/* Adds `work` units at position x (wrapped on periodic axes, clamped to the box). */
void gf_balance_add(gf_balance *b, const gf_decomp *d, const double x[3], int64_t work);
/* The number of bins of all axes together (of b->bins). */
int gf_balance_size(const gf_balance *b);

/* The new cuts of one axis from its histogram `count` (nbins equal bins over [lo, hi]) for
 * `parts` slabs, from the current cuts `old` (parts + 1): each at the position where the work
 * below it is its share of the total (interpolated within a bin), then moved by at most half of
 * each adjacent old slab, then kept min_width apart (and from the ends). When that cannot hold
 * (the box is under parts x min_width long), or the histogram is empty, the old cuts are kept.
 * Returns 1 when a cut moved, else 0. */
int gf_balance_cuts(const int64_t *count, int nbins, double lo, double hi, int parts,
                    const double *old, double min_width, double *cuts);

/* The first cut axis of d along which dims slabs of min_width do not fit into the box (no
 * balancing can move its cuts), or -1. */
int gf_balance_blocked_axis(const gf_decomp *d, double min_width);

/* Sets the cuts of every cut axis of d from the summed histograms; *moved: 1 when any moved. */
gf_status gf_balance_apply(const gf_balance *b, gf_decomp *d, double min_width, int *moved);

#endif
