#include "par/balance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

gf_status gf_balance_init(gf_balance *b, const gf_decomp *d) {
    memset(b, 0, sizeof *b);
    size_t total = 0;
    for (int a = 0; a < 3; ++a) {
        b->nbins[a] = d->dims[a] < 2 ? 0 : GF_BALANCE_BINS_PER_SLAB * d->dims[a];
        total += (size_t)b->nbins[a];
    }
    if (total == 0)
        return GF_OK;
    b->bins = calloc(total, sizeof *b->bins);
    if (!b->bins) {
        memset(b, 0, sizeof *b);
        return GF_ERROR(GF_ERR_MEMORY, "a load-balancing histogram of %zu bins", total);
    }
    int64_t *next = b->bins;
    for (int a = 0; a < 3; ++a) {
        b->count[a] = b->nbins[a] > 0 ? next : NULL;
        next += b->nbins[a];
    }
    return GF_OK;
}

void gf_balance_free(gf_balance *b) {
    free(b->bins);
    memset(b, 0, sizeof *b);
}

void gf_balance_clear(gf_balance *b) {
    if (b->bins)
        memset(b->bins, 0, (size_t)gf_balance_size(b) * sizeof *b->bins);
}

void gf_balance_add(gf_balance *b, const gf_decomp *d, const double x[3], int64_t work) {
    for (int a = 0; a < 3; ++a) {
        int n = b->nbins[a];
        if (n == 0)
            continue;
        double y = gf_decomp_wrap_axis(d, a, x[a]);
        double f = floor((y - d->lo[a]) / (d->hi[a] - d->lo[a]) * n);
        int k = !(f >= 0.0) ? 0 : (f >= n ? n - 1 : (int)f); /* NaN: bin 0 */
        b->count[a][k] += work;
    }
}

int gf_balance_size(const gf_balance *b) {
    return b->nbins[0] + b->nbins[1] + b->nbins[2];
}

int gf_balance_cuts(const int64_t *count, int nbins, double lo, double hi, int parts,
                    const double *old, double min_width, double *cuts) {
    memcpy(cuts, old, (size_t)(parts + 1) * sizeof *cuts);
    int64_t total = 0;
    for (int k = 0; k < nbins; ++k)
        total += count[k];
    if (total <= 0 || parts < 2 || (double)parts * min_width > hi - lo)
        return 0;
    const double bw = (hi - lo) / nbins;
    /* Where the work below reaches k / parts of the total, uniform within a bin, at most half
     * way into either old neighbour slab. */
    int64_t below = 0;
    int bin = 0;
    for (int k = 1; k < parts; ++k) {
        double target = (double)total * k / parts;
        while (bin < nbins - 1 && (double)(below + count[bin]) < target)
            below += count[bin++];
        double frac = count[bin] > 0 ? (target - (double)below) / (double)count[bin] : 0.0;
        double x = lo + bw * (bin + fmin(fmax(frac, 0.0), 1.0));
        cuts[k] = fmin(fmax(x, 0.5 * (old[k - 1] + old[k])), 0.5 * (old[k] + old[k + 1]));
    }
    /* min_width apart: pushed up from below, then down from above. */
    for (int k = 1; k < parts; ++k)
        cuts[k] = fmax(cuts[k], cuts[k - 1] + min_width);
    for (int k = parts - 1; k >= 1; --k)
        cuts[k] = fmin(cuts[k], cuts[k + 1] - min_width);
    /* The pushes may break the half-way rule, or not fit: then nothing moves. */
    int ok = 1, moved = 0;
    for (int k = 1; k < parts && ok; ++k)
        ok = cuts[k] >= 0.5 * (old[k - 1] + old[k]) && cuts[k] <= 0.5 * (old[k] + old[k + 1]);
    for (int k = 0; k < parts && ok; ++k)
        ok = cuts[k + 1] - cuts[k] >= min_width * (1.0 - 1e-12);
    for (int k = 1; k < parts; ++k)
        moved |= cuts[k] != old[k];
    if (!(ok && moved))
        memcpy(cuts, old, (size_t)(parts + 1) * sizeof *cuts);
    return ok && moved;
}

int gf_balance_blocked_axis(const gf_decomp *d, double min_width) {
    for (int a = 0; a < 3; ++a)
        if (d->dims[a] > 1 && (double)d->dims[a] * min_width > d->hi[a] - d->lo[a])
            return a;
    return -1;
}

gf_status gf_balance_apply(const gf_balance *b, gf_decomp *d, double min_width, int *moved) {
    *moved = 0;
    for (int a = 0; a < 3; ++a) {
        if (b->nbins[a] == 0)
            continue;
        int p = d->dims[a];
        double *old = malloc(2 * (size_t)(p + 1) * sizeof *old);
        if (!old)
            return GF_ERROR(GF_ERR_MEMORY, "%d cuts", p + 1);
        double *cuts = old + p + 1;
        for (int k = 0; k <= p; ++k)
            old[k] = gf_decomp_cut(d, a, k);
        gf_status st = GF_OK;
        if (gf_balance_cuts(b->count[a], b->nbins[a], d->lo[a], d->hi[a], p, old, min_width,
                            cuts)) {
            st = gf_decomp_set_cuts(d, a, cuts);
            *moved = 1;
        }
        free(old);
        GF_TRY(st);
    }
    return GF_OK;
}
