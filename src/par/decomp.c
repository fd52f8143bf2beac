#include "par/decomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

gf_status gf_decomp_choose_dims(int nranks, const double extent[3], int dims[3]) {
    if (nranks < 1)
        return GF_ERROR(GF_ERR_INPUT, "the rank count must be positive, not %d", nranks);
    double best = INFINITY;
    int found = 0;
    for (int a = 1; a <= nranks; ++a) {
        if (nranks % a)
            continue;
        for (int b = 1; b <= nranks / a; ++b) {
            if ((nranks / a) % b)
                continue;
            int c = nranks / a / b;
            double sx = extent[0] / a, sy = extent[1] / b, sz = extent[2] / c;
            /* Surface of one subdomain: what each rank sends as ghosts. */
            double surface = sx * sy + sy * sz + sx * sz;
            if (surface < best * (1.0 - 1e-12)) {
                best = surface;
                dims[0] = a;
                dims[1] = b;
                dims[2] = c;
                found = 1;
            }
        }
    }
    return found ? GF_OK : GF_ERROR(GF_ERR_INPUT, "no decomposition for %d ranks", nranks);
}

void gf_decomp_setup(gf_decomp *d, const int dims[3], const int periodic[3], const int coords[3],
                     const double lo[3], const double hi[3]) {
    for (int a = 0; a < 3; ++a) {
        d->dims[a] = dims[a];
        d->periodic[a] = periodic[a];
        d->coords[a] = coords[a];
        d->lo[a] = lo[a];
        d->hi[a] = hi[a];
        double w = (hi[a] - lo[a]) / dims[a];
        d->sub_lo[a] = lo[a] + coords[a] * w;
        d->sub_hi[a] = coords[a] + 1 == dims[a] ? hi[a] : lo[a] + (coords[a] + 1) * w;
        d->cut[a] = NULL;
    }
}

void gf_decomp_free(gf_decomp *d) {
    free(d->rank_of);
    d->rank_of = NULL;
    for (int a = 0; a < 3; ++a) {
        free(d->cut[a]);
        d->cut[a] = NULL;
    }
}

double gf_decomp_cut(const gf_decomp *d, int a, int k) {
    if (d->cut[a])
        return d->cut[a][k];
    /* As gf_decomp_setup spaces them. */
    return k == d->dims[a] ? d->hi[a] : d->lo[a] + k * ((d->hi[a] - d->lo[a]) / d->dims[a]);
}

gf_status gf_decomp_set_cuts(gf_decomp *d, int a, const double *cuts) {
    int p = d->dims[a];
    int ok = cuts[0] == d->lo[a] && cuts[p] == d->hi[a];
    for (int k = 0; k < p && ok; ++k)
        ok = cuts[k] < cuts[k + 1];
    if (!ok)
        return GF_ERROR(GF_ERR_INPUT,
                        "the %d cuts along %c must increase from %g to %g (the box's ends)", p + 1,
                        "xyz"[a], d -> lo[a], d -> hi[a]);
    if (!d->cut[a]) {
        d->cut[a] = malloc((size_t)(p + 1) * sizeof *d->cut[a]);
        if (!d->cut[a])
            return GF_ERROR(GF_ERR_MEMORY, "%d cuts", p + 1);
    }
    memcpy(d->cut[a], cuts, (size_t)(p + 1) * sizeof *cuts);
    d->sub_lo[a] = cuts[d->coords[a]];
    d->sub_hi[a] = cuts[d->coords[a] + 1];
    return GF_OK;
}

int gf_decomp_slab(const gf_decomp *d, int axis, double x) {
    int p = d->dims[axis];
    const double *cut = d->cut[axis];
    if (cut) { /* the last slab whose lower cut is at or below x (0 below the box, and NaN) */
        int lo = 0, hi = p - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (x >= cut[mid])
                lo = mid;
            else
                hi = mid - 1;
        }
        return lo;
    }
    double c = floor((x - d->lo[axis]) / (d->hi[axis] - d->lo[axis]) * p);
    if (!(c >= 0)) /* also NaN */
        return 0;
    /* Also for x just below hi on a periodic axis, where the quotient may round up to p. */
    return c >= p ? p - 1 : (int)c;
}

int gf_decomp_coord(const gf_decomp *d, int axis, double x) {
    /* The cell of the wrapped position: a coordinate and its periodic image always agree, so
     * the rank a particle is sent to owns its wrapped position. */
    return gf_decomp_slab(d, axis, gf_decomp_wrap_axis(d, axis, x));
}

static int cell_rank(const gf_decomp *d, int cx, int cy, int cz) {
    return d->rank_of[(cz * d->dims[1] + cy) * d->dims[0] + cx];
}

int gf_decomp_owner(const gf_decomp *d, const double x[3]) {
    return cell_rank(d, gf_decomp_coord(d, 0, x[0]), gf_decomp_coord(d, 1, x[1]),
                     gf_decomp_coord(d, 2, x[2]));
}

int gf_decomp_owns(const gf_decomp *d, const double x[3]) {
    for (int a = 0; a < 3; ++a)
        if (gf_decomp_coord(d, a, x[a]) != d->coords[a])
            return 0;
    return 1;
}

int gf_decomp_neighbor(const gf_decomp *d, int dx, int dy, int dz) {
    int off[3] = {dx, dy, dz}, c[3];
    for (int a = 0; a < 3; ++a) {
        c[a] = d->coords[a] + off[a];
        if (c[a] < 0 || c[a] >= d->dims[a]) {
            if (!d->periodic[a])
                return -1;
            c[a] = (c[a] + d->dims[a]) % d->dims[a];
        }
    }
    return cell_rank(d, c[0], c[1], c[2]);
}

double gf_decomp_wrap_axis(const gf_decomp *d, int a, double x) {
    double lo = d->lo[a], hi = d->hi[a];
    if (!d->periodic[a] || (x >= lo && x < hi) || !isfinite(x))
        return x;
    double L = hi - lo;
    /* fmod is exact, so the only roundings are those of x - lo and of the two sums below. */
    double r = fmod(x - lo, L);
    if (r < 0.0)
        r += L;
    double y = lo + r;
    /* A remainder a hair below L (x a hair below lo, say) rounds to hi, which is lo again:
     * the seam has one representative, lo, so that the result always lies in [lo, hi). */
    return y < hi ? y : lo;
}

void gf_decomp_wrap(const gf_decomp *d, double x[3]) {
    for (int a = 0; a < 3; ++a)
        x[a] = gf_decomp_wrap_axis(d, a, x[a]);
}

/* The thinnest subdomain along axis a. */
static double thinnest(const gf_decomp *d, int a) {
    double w = (d->hi[a] - d->lo[a]) / d->dims[a];
    for (int k = 0; d->cut[a] && k < d->dims[a]; ++k) {
        double wk = d->cut[a][k + 1] - d->cut[a][k];
        w = wk < w ? wk : w;
    }
    return w;
}

double gf_decomp_reach(const gf_decomp *d) {
    double r = INFINITY;
    for (int a = 0; a < 3; ++a)
        if (d->dims[a] > 1 || d->periodic[a])
            r = fmin(r, thinnest(d, a));
    return r;
}

gf_status gf_decomp_check_range(const gf_decomp *d, double range) {
    for (int a = 0; a < 3; ++a) {
        double w = thinnest(d, a);
        if (w < range && (d->dims[a] > 1 || d->periodic[a]))
            return GF_ERROR(GF_ERR_INPUT,
                            "subdomains are %g m thick along %c (%d processes over %g m) but "
                            "particles interact over %g m: use fewer processes along %c",
                            w, "xyz"[a], d -> dims[a], d -> hi[a] - d -> lo[a], range, "xyz"[a]);
    }
    return GF_OK;
}
