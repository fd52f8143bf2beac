#include "contact/linkcells.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gf_linkcells_init(gf_linkcells *lc) {
    memset(lc, 0, sizeof *lc);
}

void gf_linkcells_free(gf_linkcells *lc) {
    free(lc->start);
    free(lc->item);
    free(lc->cell);
    free(lc->pos);
    free(lc->rank);
    free(lc->sorted);
    free(lc->hit);
    free(lc->pa);
    free(lc->pb);
    free(lc->ref_id);
    free(lc->ref);
    free(lc->now);
    free(lc->map);
    free(lc->points);
    free(lc->tri);
    gf_linkcells_init(lc);
}

/* Bins the first np particles into cells at least `h` wide, widened until there are at most
 * about `per` cells per particle, by a counting sort stable in the index, with a layer of empty
 * cells around the grid so that a cell's neighbours are fixed index offsets (no bounds tests in
 * the pair loop); notes each particle's place in that order (`rank`) and, if with_pos, copies
 * centres and radii in cell order (`pos`): the pair loop then reads a neighbour cell's
 * particles as one contiguous run instead of gathering them. The centres are finite
 * (gf_linkcells_update checked them). */
static gf_status bin(gf_linkcells *lc, const gf_cell_point *now, size_t np, double h, double per,
                     int with_pos) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < np; ++i)
        for (int d = 0; d < 3; ++d) {
            lo[d] = now[i].x[d] < lo[d] ? now[i].x[d] : lo[d];
            hi[d] = now[i].x[d] > hi[d] ? now[i].x[d] : hi[d];
        }
    /* The padded grid has at least 27 cells, which the constant term always allows. */
    double cap = per * (double)np + 64.0;
    if (!(h > 0.0) || !isfinite(h)) /* point particles without a margin: one cell is enough */
        h = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), fmax(hi[2] - lo[2], 1.0));
    size_t ncells = 1;
    for (;;) {
        double total = 1.0;
        for (int d = 0; d < 3; ++d) {
            double n = floor((hi[d] - lo[d]) / h);
            lc->dim[d] = n < 1.0 ? 1 : (n > 1e6 ? 1000000 : (int)n);
            total *= lc->dim[d] + 2;
        }
        if (total <= cap) {
            ncells = (size_t)total;
            break;
        }
        h *= 1.26;
    }
    if (ncells + 1 > lc->capcells) {
        GF_TRY(gf_grow((void **)&lc->start, ncells + 1, sizeof *lc->start));
        lc->capcells = ncells + 1;
    }
    if (np > lc->capitems) {
        GF_TRY(gf_grow((void **)&lc->item, np, sizeof *lc->item));
        GF_TRY(gf_grow((void **)&lc->cell, np, sizeof *lc->cell));
        GF_TRY(gf_grow((void **)&lc->pos, np, sizeof *lc->pos));
        GF_TRY(gf_grow((void **)&lc->rank, np, sizeof *lc->rank));
        lc->capitems = np;
    }
    const int px = lc->dim[0] + 2, pxy = px * (lc->dim[1] + 2);
    memset(lc->start, 0, (ncells + 1) * sizeof *lc->start);
    double inv_h = 1.0 / h;
    for (size_t i = 0; i < np; ++i) {
        int ci[3];
        for (int d = 0; d < 3; ++d) {
            int k = (int)((now[i].x[d] - lo[d]) * inv_h);
            ci[d] = 1 + (k < 0 ? 0 : (k >= lc->dim[d] ? lc->dim[d] - 1 : k));
        }
        int32_t c = (int32_t)(ci[2] * pxy + ci[1] * px + ci[0]);
        lc->cell[i] = c;
        lc->start[c + 1]++;
    }
    for (size_t c = 0; c < ncells; ++c)
        lc->start[c + 1] += lc->start[c];
    /* Shift the offsets up by one cell so start[c + 1] serves as the fill cursor of cell c;
     * after filling it has advanced to the end of c, which is where cell c + 1 begins. */
    for (size_t c = ncells; c > 0; --c)
        lc->start[c] = lc->start[c - 1];
    lc->start[0] = 0;
    for (size_t i = 0; i < np; ++i) {
        int32_t k = lc->start[lc->cell[i] + 1]++;
        lc->item[k] = (int32_t)i;
        lc->rank[i] = k;
    }
    if (with_pos)
        for (size_t k = 0; k < np; ++k)
            lc->pos[k] = now[lc->item[k]];
    return GF_OK;
}

/* The forward half of a cell's 26 neighbours (dz > 0, or dz = 0 and dy > 0, or dz = dy = 0 and
 * dx > 0) as offsets in the padded grid: with the cell itself, each unordered pair of
 * neighbouring cells is visited once. */
static void half_shell(const gf_linkcells *lc, int32_t off[13]) {
    const int px = lc->dim[0] + 2, pxy = px * (lc->dim[1] + 2);
    int k = 0;
    for (int dz = 0; dz <= 1; ++dz)
        for (int dy = (dz ? -1 : 0); dy <= 1; ++dy)
            for (int dx = ((dz || dy) ? -1 : 1); dx <= 1; ++dx)
                off[k++] = dz * pxy + dy * px + dx;
}

/* Sorts the pair list by a, then b: a counting sort by a (`count` has room for np + 1), then
 * each run of equal a (a few pairs) by insertion. */
static gf_status sort_pairs(gf_linkcells *lc, size_t np) {
    size_t n = lc->npair;
    GF_TRY(gf_reserve((void **)&lc->map, &lc->capmap, np + 1, sizeof *lc->map));
    GF_TRY(gf_reserve((void **)&lc->hit, &lc->caphit, n, sizeof *lc->hit));
    int32_t *count = lc->map, *sorted = lc->hit;
    memset(count, 0, (np + 1) * sizeof *count);
    for (size_t k = 0; k < n; ++k)
        count[lc->pa[k] + 1]++;
    for (size_t i = 0; i < np; ++i)
        count[i + 1] += count[i];
    for (size_t k = 0; k < n; ++k)
        sorted[count[lc->pa[k]]++] = lc->pb[k];
    /* count[i] is now the end of a = i's run. */
    size_t k = 0;
    for (size_t i = 0; i < np; ++i) {
        size_t end = (size_t)count[i];
        for (size_t j = k + 1; j < end; ++j) {
            int32_t b = sorted[j];
            size_t m = j;
            for (; m > k && sorted[m - 1] > b; --m)
                sorted[m] = sorted[m - 1];
            sorted[m] = b;
        }
        for (; k < end; ++k)
            lc->pa[k] = (int32_t)i;
    }
    /* The sorted b become the list; its old array is the next scratch. */
    int32_t *old = lc->pb;
    size_t cap = lc->cappb;
    lc->pb = sorted;
    lc->cappb = lc->caphit;
    lc->hit = old;
    lc->caphit = cap;
    return GF_OK;
}

static gf_status pairs_reserve(gf_linkcells *lc, size_t need) {
    GF_TRY(gf_reserve((void **)&lc->pa, &lc->cappa, need, sizeof *lc->pa));
    return gf_reserve((void **)&lc->pb, &lc->cappb, need, sizeof *lc->pb);
}

static double max_radius(const gf_cell_point *pt, size_t n) {
    double rmax = 0.0;
    for (size_t i = 0; i < n; ++i)
        rmax = pt[i].r > rmax ? pt[i].r : rmax;
    return rmax;
}

/* The list from scratch: every pair within r_a + r_b + range, found cell by cell, then sorted;
 * the particles' ids and this step's centres become the reference of the next updates. */
static gf_status build(gf_linkcells *lc, const gf_particles *p, size_t np, double range) {
    double rmax = max_radius(lc->now, np);
    lc->npair = 0;
    lc->built = 0;
    if (np > 0) {
        /* Never more cells than about 8 per particle: empty cells cost memory and a pass each in
         * sparse or spread-out systems, but cells wider than the range cost candidate pairs (2
         * per particle made the channel demo's detection 25% slower). */
        GF_TRY(bin(lc, lc->now, np, 2.0 * rmax + range, 8.0, 1));
        int32_t off[13];
        half_shell(lc, off);
        const int32_t *start = lc->start, *item = lc->item;
        const gf_cell_point *pos = lc->pos;
        /* Cell by occupied cell: the ranges of the occupied forward neighbours are found once per
         * cell and serve each of its particles, and a particle's hits are recorded without a
         * branch (most candidates miss, at random: a branch per candidate mispredicts often). */
        for (int32_t a0 = 0; a0 < (int32_t)np;) {
            int32_t c = lc->cell[item[a0]], a1 = start[c + 1];
            /* Range 0 is the rest of the cell itself (set per particle), then its neighbours. */
            int32_t rb[14][2], nr = 1;
            size_t len = (size_t)(a1 - a0);
            for (int k = 0; k < 13; ++k) {
                int32_t s0 = start[c + off[k]], s1 = start[c + off[k] + 1];
                rb[nr][0] = s0;
                rb[nr][1] = s1;
                nr += s0 < s1;
                len += (size_t)(s1 - s0);
            }
            GF_TRY(gf_reserve((void **)&lc->hit, &lc->caphit, len, sizeof *lc->hit));
            int32_t *hit = lc->hit;
            rb[0][1] = a1;
            for (int32_t a = a0; a < a1; ++a) {
                const gf_cell_point pa = pos[a];
                rb[0][0] = a + 1;
                size_t nh = 0;
                for (int32_t r = 0; r < nr; ++r)
                    for (int32_t b = rb[r][0]; b < rb[r][1]; ++b) {
                        double e0 = pa.x[0] - pos[b].x[0], e1 = pa.x[1] - pos[b].x[1],
                               e2 = pa.x[2] - pos[b].x[2], reach = pa.r + pos[b].r + range;
                        hit[nh] = b;
                        nh += e0 * e0 + e1 * e1 + e2 * e2 < reach * reach;
                    }
                GF_TRY(pairs_reserve(lc, lc->npair + nh));
                int32_t ia = item[a];
                for (size_t h = 0; h < nh; ++h) {
                    int32_t ib = item[hit[h]];
                    lc->pa[lc->npair] = ia < ib ? ia : ib;
                    lc->pb[lc->npair++] = ia < ib ? ib : ia;
                }
            }
            a0 = a1;
        }
        GF_TRY(sort_pairs(lc, np));
    }
    GF_TRY(gf_reserve((void **)&lc->ref_id, &lc->capref_id, np, sizeof *lc->ref_id));
    GF_TRY(gf_reserve((void **)&lc->ref, &lc->capref, np, sizeof *lc->ref));
    if (np > 0) {
        memcpy(lc->ref_id, p->id, np * sizeof *lc->ref_id);
        memcpy(lc->ref, lc->now, np * sizeof *lc->ref);
    }
    lc->nref = np;
    lc->built_range = range;
    lc->built = 1;
    lc->builds++;
    return GF_OK;
}

static inline size_t id_slot(int64_t id, size_t mask) {
    return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

/* New particles a renaming adds to the list itself (each tested against every particle); with
 * more a search is cheaper. */
#define GF_LINKCELLS_MAX_NEW 16

/* Adds the pairs of the new particles (isnew) to the list. The list must keep its promise: a
 * pair left out is still more than r_a + r_b + margin apart while no particle has moved by more
 * than dmax from its reference and 2 dmax + margin <= built_range. A new particle's reference is
 * where it is now; an old particle b has already moved by s_b = |x_b - ref_b|, so a pair of a
 * new a and an old b is left out only when it is at least r_a + r_b + built_range + s_b apart:
 * later its distance has shrunk by at most d_a + (d_b + s_b), and the promise holds. */
static gf_status add_new_pairs(gf_linkcells *lc, const gf_particles *p, size_t np,
                               const int32_t *fresh, int nfresh, const uint8_t *isnew) {
    const gf_cell_point *ref = lc->now; /* the renamed reference, not yet swapped in */
    const double range = lc->built_range;
    for (int f = 0; f < nfresh; ++f) {
        int32_t a = fresh[f];
        const gf_cell_point pa = ref[a];
        GF_TRY(pairs_reserve(lc, lc->npair + np));
        for (size_t b = 0; b < np; ++b) {
            if ((int32_t)b == a || (isnew[b] && (int32_t)b < a))
                continue;
            double xb[3] = {p->x[0][b], p->x[1][b], p->x[2][b]};
            double s0 = xb[0] - ref[b].x[0], s1 = xb[1] - ref[b].x[1], s2 = xb[2] - ref[b].x[2];
            double e0 = pa.x[0] - xb[0], e1 = pa.x[1] - xb[1], e2 = pa.x[2] - xb[2];
            double reach = pa.r + ref[b].r + range + sqrt(s0 * s0 + s1 * s1 + s2 * s2);
            if (e0 * e0 + e1 * e1 + e2 * e2 < reach * reach) {
                lc->pa[lc->npair] = a < (int32_t)b ? a : (int32_t)b;
                lc->pb[lc->npair++] = a < (int32_t)b ? (int32_t)b : a;
            }
        }
    }
    return GF_OK;
}

/* The particles are the list's, in another order, with some gone (removals, migration, a sort)
 * or a few new (inflow, a ghost that came into range): the list and its reference renamed to
 * the new indices, the pairs of the gone dropped and those of the new added. 0 (nothing
 * changed) when many are new or an id appears twice (periodic images of one particle on this
 * rank): then the list must be built. */
static gf_status rename_list(gf_linkcells *lc, const gf_particles *p, size_t np, int *renamed) {
    *renamed = 0;
    size_t nref = lc->nref;
    if (np > nref + GF_LINKCELLS_MAX_NEW)
        return GF_OK;
    size_t tsize = 16;
    while (tsize < 2 * nref)
        tsize *= 2;
    /* The id table, the new index of each old particle, and which particles are new. */
    size_t words = tsize + nref + (np + sizeof(int32_t) - 1) / sizeof(int32_t);
    GF_TRY(gf_reserve((void **)&lc->map, &lc->capmap, words, sizeof *lc->map));
    int32_t *table = lc->map, *newof = lc->map + tsize;
    uint8_t *isnew = (uint8_t *)(newof + nref);
    int32_t fresh[GF_LINKCELLS_MAX_NEW];
    int nfresh = 0;
    for (size_t s = 0; s < tsize; ++s)
        table[s] = -1;
    const size_t mask = tsize - 1;
    for (size_t o = 0; o < nref; ++o) {
        size_t s = id_slot(lc->ref_id[o], mask);
        for (; table[s] >= 0; s = (s + 1) & mask)
            if (lc->ref_id[table[s]] == lc->ref_id[o])
                return GF_OK;
        table[s] = (int32_t)o;
        newof[o] = -1;
    }
    /* The reference moves to the new order in `now` (filled again by the caller). */
    GF_TRY(gf_reserve((void **)&lc->now, &lc->capnow, np, sizeof *lc->now));
    for (size_t i = 0; i < np; ++i) {
        size_t s = id_slot(p->id[i], mask);
        for (; table[s] >= 0 && lc->ref_id[table[s]] != p->id[i]; s = (s + 1) & mask)
            ;
        int32_t o = table[s];
        isnew[i] = o < 0;
        if (o < 0) {
            if (nfresh == GF_LINKCELLS_MAX_NEW)
                return GF_OK;
            fresh[nfresh++] = (int32_t)i;
            lc->now[i] = (gf_cell_point){{p->x[0][i], p->x[1][i], p->x[2][i]}, p->radius[i]};
            continue;
        }
        if (newof[o] >= 0)
            return GF_OK;
        newof[o] = (int32_t)i;
        lc->now[i] = lc->ref[o];
    }
    size_t n = 0;
    for (size_t k = 0; k < lc->npair; ++k) {
        int32_t a = newof[lc->pa[k]], b = newof[lc->pb[k]];
        lc->pa[n] = a < b ? a : b;
        lc->pb[n] = a < b ? b : a;
        n += a >= 0 && b >= 0;
    }
    lc->npair = n;
    GF_TRY(add_new_pairs(lc, p, np, fresh, nfresh, isnew));
    gf_cell_point *ref = lc->ref;
    size_t cap = lc->capref;
    lc->ref = lc->now;
    lc->capref = lc->capnow;
    lc->now = ref;
    lc->capnow = cap;
    GF_TRY(gf_reserve((void **)&lc->ref_id, &lc->capref_id, np, sizeof *lc->ref_id));
    if (np > 0)
        memcpy(lc->ref_id, p->id, np * sizeof *lc->ref_id);
    lc->nref = np;
    GF_TRY(sort_pairs(lc, np));
    lc->renames++;
    *renamed = 1;
    return GF_OK;
}

gf_status gf_linkcells_update(gf_linkcells *lc, const gf_particles *p, double margin) {
    size_t np = p->n_local + p->n_ghost;
    lc->updates++;
    int usable = lc->built;
    const double skin = lc->skin > 0.0 && isfinite(lc->skin) ? lc->skin : 0.0;
    /* Without a skin only an unchanged system keeps the list: a renaming would be wasted. */
    if (usable && (np != lc->nref || memcmp(p->id, lc->ref_id, np * sizeof *p->id) != 0)) {
        usable = 0;
        if (skin > 0.0)
            GF_TRY(rename_list(lc, p, np, &usable));
    }
    GF_TRY(gf_reserve((void **)&lc->now, &lc->capnow, np, sizeof *lc->now));
    /* This step's centres, and how far they are from the reference: without an exit in the loop
     * (no branch per particle); x - x is NaN for an infinite or NaN x, and a NaN stays in the
     * sum. A changed radius (a reused workspace) counts as a move beyond any skin. */
    double bad = 0.0, d2max = 0.0, xmax = 0.0;
    int resized = 0;
    const gf_cell_point *ref = lc->ref;
    gf_cell_point *now = lc->now;
    for (size_t i = 0; i < np; ++i) {
        gf_cell_point c = {{p->x[0][i], p->x[1][i], p->x[2][i]}, p->radius[i]};
        now[i] = c;
        bad += (c.x[0] - c.x[0]) + (c.x[1] - c.x[1]) + (c.x[2] - c.x[2]);
        if (!usable)
            continue;
        double e0 = c.x[0] - ref[i].x[0], e1 = c.x[1] - ref[i].x[1], e2 = c.x[2] - ref[i].x[2];
        double d2 = e0 * e0 + e1 * e1 + e2 * e2;
        d2max = d2 > d2max ? d2 : d2max;
        double a = fabs(c.x[0]) + fabs(c.x[1]) + fabs(c.x[2]);
        xmax = a > xmax ? a : xmax;
        resized |= c.r != ref[i].r;
    }
    if (!isfinite(bad))
        for (size_t i = 0; i < np; ++i)
            if (!isfinite(p->x[0][i] + p->x[1][i] + p->x[2][i]))
                return GF_ERROR(GF_ERR_NUMERIC, "particle %lld has a non-finite position",
                                (long long)p->id[i]);
    /* After the centres, whose error says more when a speed ran away: a NaN or infinite margin
     * makes the mesh queries' boxes meaningless (it crashed one) and fails every reach test. */
    if (!(margin >= 0.0) || !isfinite(margin))
        return GF_ERROR(GF_ERR_INPUT, "the contact margin must be finite and not negative (%g)",
                        margin);
    /* A pair left out was at least r_a + r_b + built_range apart; each centre has moved by at
     * most dmax since, so it is still more than r_a + r_b + margin apart while 2 dmax + margin
     * <= built_range. The allowance covers the rounding of the distances (a few ulps of the
     * coordinates and of the range). */
    double slack = 0x1p-40 * xmax + 1e-9 * lc->built_range;
    if (usable && !resized && 2.0 * sqrt(d2max) + margin + slack <= lc->built_range)
        return GF_OK;
    return build(lc, p, np, margin + skin);
}

gf_status gf_linkcells_within(gf_linkcells *lc, size_t n, double margin, size_t *nhit) {
    *nhit = 0;
    if (n == 0)
        return GF_OK;
    if (!lc->built || n > lc->nref)
        return GF_ERROR(GF_ERR_STATE, "pairs of %zu particles asked of a list of %zu%s", n,
                        lc->nref, lc->built ? "" : " not built");
    /* Cells of the contact range, at most about one per particle: finer cells order a few
     * particles more closely but cost a pass over their counts each step. */
    GF_TRY(bin(lc, lc->now, n, 2.0 * max_radius(lc->now, n) + margin, 1.0, 0));
    /* The pairs within reach, in list order (by first index, then second), found without a
     * branch per pair (most of the skin's pairs miss, at random); pairs of two particles beyond
     * the first n (the list's tail, found by bisection) are not looked at. */
    size_t npair = 0;
    for (size_t hi = lc->npair; npair < hi;) {
        size_t mid = npair + (hi - npair) / 2;
        if ((size_t)lc->pa[mid] < n)
            npair = mid + 1;
        else
            hi = mid;
    }
    GF_TRY(gf_reserve((void **)&lc->hit, &lc->caphit, npair, sizeof *lc->hit));
    GF_TRY(gf_reserve((void **)&lc->sorted, &lc->capsorted, npair, sizeof *lc->sorted));
    GF_TRY(gf_reserve((void **)&lc->map, &lc->capmap, n + 1, sizeof *lc->map));
    const int32_t *pa = lc->pa, *pb = lc->pb, *rank = lc->rank;
    const gf_cell_point *now = lc->now;
    int32_t *hit = lc->hit;
    size_t nh = 0;
    for (size_t k = 0; k < npair; ++k) {
        const gf_cell_point a = now[pa[k]], b = now[pb[k]];
        double e0 = a.x[0] - b.x[0], e1 = a.x[1] - b.x[1], e2 = a.x[2] - b.x[2],
               reach = a.r + b.r + margin;
        hit[nh] = (int32_t)k;
        nh += e0 * e0 + e1 * e1 + e2 * e2 < reach * reach;
    }
    /* Then by the first particle's rank in the cell order: a counting sort, stable, so each
     * particle's pairs stay by second index. */
    int32_t *count = lc->map, *sorted = lc->sorted;
    memset(count, 0, (n + 1) * sizeof *count);
    for (size_t h = 0; h < nh; ++h)
        count[rank[pa[hit[h]]] + 1]++;
    for (size_t i = 0; i < n; ++i)
        count[i + 1] += count[i];
    for (size_t h = 0; h < nh; ++h)
        sorted[count[rank[pa[hit[h]]]]++] = hit[h];
    *nhit = nh;
    return GF_OK;
}
