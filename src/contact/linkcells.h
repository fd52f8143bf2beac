/* Link cells and the candidate pair list of contact detection.
 *
 * The candidate pairs are found with link cells and kept in a list (a Verlet list) that holds
 * every pair of particles (owned and ghosts) whose bounding spheres are within the margin plus
 * a skin. While no particle has moved by more than half of what the skin and a margin that
 * shrank leave, every pair within the margin is still in the list, and the binning and the
 * cell search are skipped: a step only tests the listed pairs. A change of the particle arrays
 * (removals, a new order) keeps the list when every particle is still there, its indices
 * renamed, and a few new particles join it (more: a new search).
 *
 * The list is sorted by the pair's first index, then its second: detection takes the pairs within
 * reach in the cell order of this step's centres (gf_linkcells_within), so the pairs within reach
 * come out cell by cell, in an order that does not depend on what the list held, and detection, and
 * the simulation, give the same results, bit for bit, with any skin. */
#ifndef GRANFLOW_LINKCELLS_H
#define GRANFLOW_LINKCELLS_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/collide.h"
#include "granflow/error.h"
#include "body/particles.h"

/* A particle's centre and radius, copied for the pair tests. */
typedef struct {
    double x[3], r;
} gf_cell_point;

/* Detection workspace, kept between steps: the link cells, the pair list and buffers. The grid
 * of the last search has dim cells, inside a layer of empty cells (dim + 2 along each axis). */
typedef struct {
    int dim[3];
    size_t capcells, capitems;
    int32_t *start;     /* ncells + 1 offsets into item */
    int32_t *item;      /* particle indices sorted by cell */
    int32_t *cell;      /* cell of each particle */
    gf_cell_point *pos; /* centres and radii in item order */
    int32_t *rank;      /* place of each particle in item */
    int32_t *hit;       /* candidates within reach (indices into item, or into the pair list) */
    int32_t *sorted;    /* the pairs within reach in cell order (gf_linkcells_within) */
    size_t caphit, capsorted;
    /* The pair list: npair pairs a[k] < b[k] of particle indices, sorted by a, then b. */
    double skin; /* set by the caller: the skin of the next build (m) */
    size_t npair, cappa, cappb;
    int32_t *pa, *pb;
    /* At the last build, per particle: its id, radius and centre; and the margin plus skin the
     * list holds (reach = r_a + r_b + built_range). */
    size_t nref, capref, capref_id;
    int64_t *ref_id;
    gf_cell_point *ref;
    double built_range;
    int built;          /* a list exists */
    gf_cell_point *now; /* centres and radii of this step, in particle order */
    size_t capnow;
    int32_t *map; /* a renaming's scratch */
    size_t capmap;
    long builds, renames, updates; /* how often the list was built, renamed, asked for */
    /* Contact points of one pair of non-spherical bodies (gf_collide's buffer). */
    gf_contact_point *points;
    int cappoints;
    /* Candidate triangles of one mesh query. */
    int32_t *tri;
    size_t captri;
} gf_linkcells;

void gf_linkcells_init(gf_linkcells *lc);
void gf_linkcells_free(gf_linkcells *lc);

/* Makes the pair list hold every pair of the particles (owned and ghosts) whose bounding spheres
 * are within `margin` now (|x_a - x_b| < r_a + r_b + margin), building it when the last one
 * cannot vouch for that, and fills lc->now with this step's centres and radii. A non-finite
 * centre is an error naming the particle; a negative or non-finite margin is an error. */
gf_status gf_linkcells_update(gf_linkcells *lc, const gf_particles *p, double margin);

/* After gf_linkcells_update: the first n particles (the owned ones) ordered cell by cell of
 * this step's centres, lc->item[0 .. n - 1], and the listed pairs within r_a + r_b + margin
 * whose first particle is one of them in that order (then by second index), lc->sorted[0 ..
 * *nhit - 1] as indices into pa and pb. The cells are 2 r_max + margin wide (r_max of the n
 * particles), widened until there are at most about n + 64, over the n centres' bounding box,
 * numbered x fastest, then y, then z; within a cell by index. The order depends only on this
 * step's centres and radii, never on the pair list's skin. */
gf_status gf_linkcells_within(gf_linkcells *lc, size_t n, double margin, size_t *nhit);

#endif
