#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gf_field_init(gf_field *f, int nx, int ny, double x0, double x1, double y0, double y1,
                  double depth) {
    return gf_field_init_plane(f, 0, 1, nx, ny, x0, x1, y0, y1, depth);
}

void gf_field_fit_grid(double width, double height, int cells, int *nx, int *ny) {
    int wide = width >= height;
    double other = llround(cells * (wide ? height / width : width / height));
    int n = other < 1 ? 1 : (other > cells ? cells : (int)other);
    *nx = wide ? cells : n;
    *ny = wide ? n : cells;
}

int gf_field_cell_grid(double width, double height, double size, int max, int *nx, int *ny) {
    double a = round(width / size), b = round(height / size);
    if (!(size > 0) || !(a <= max) || !(b <= max))
        return -1;
    *nx = a < 1 ? 1 : (int)a;
    *ny = b < 1 ? 1 : (int)b;
    return 0;
}

int gf_field_init_plane(gf_field *f, int ax, int ay, int nx, int ny, double x0, double x1,
                        double y0, double y1, double depth) {
    memset(f, 0, sizeof *f);
    if (nx < 1 || ny < 1 || !(x1 > x0) || !(y1 > y0) || !(depth > 0) || ax < 0 || ax > 2 ||
        ay < 0 || ay > 2 || ax == ay)
        return -1;
    f->axis[0] = ax;
    f->axis[1] = ay;
    f->nx = nx;
    f->ny = ny;
    f->x0 = x0;
    f->x1 = x1;
    f->y0 = y0;
    f->y1 = y1;
    f->depth = depth;
    size_t n = (size_t)nx * ny;
    for (int k = 0; k < 3; ++k)
        f->sum_v[k] = calloc(n, sizeof(double));
    f->sum_w = calloc(n, sizeof(double));
    f->volume = calloc(n, sizeof(double));
    f->count = calloc(n, sizeof(long long));
    if (!f->sum_v[0] || !f->sum_v[1] || !f->sum_v[2] || !f->sum_w || !f->volume || !f->count) {
        gf_field_free(f);
        return -1;
    }
    return 0;
}

void gf_field_free(gf_field *f) {
    for (int k = 0; k < 3; ++k)
        free(f->sum_v[k]);
    free(f->sum_w);
    free(f->volume);
    free(f->count);
    memset(f, 0, sizeof *f);
}

void gf_field_add(gf_field *f, size_t n, const double *x, const double *v, const double *w,
                  const double *radius) {
    for (size_t p = 0; p < n; ++p) {
        double fx = (x[3 * p + f->axis[0]] - f->x0) / (f->x1 - f->x0) * f->nx;
        double fy = (x[3 * p + f->axis[1]] - f->y0) / (f->y1 - f->y0) * f->ny;
        if (!(fx >= 0 && fx < f->nx && fy >= 0 && fy < f->ny))
            continue;
        size_t c = (size_t)((int)fy * f->nx + (int)fx);
        for (int k = 0; k < 3; ++k)
            f->sum_v[k][c] += v[3 * p + k];
        f->sum_w[c] +=
            sqrt(w[3 * p] * w[3 * p] + w[3 * p + 1] * w[3 * p + 1] + w[3 * p + 2] * w[3 * p + 2]);
        f->volume[c] += 4.0 / 3.0 * M_PI * radius[p] * radius[p] * radius[p];
        f->count[c]++;
    }
}

void gf_field_result(const gf_field *f, int snapshots, double *vx, double *vy, double *vz,
                     double *vmag, double *wmag, double *count, double *fraction) {
    double cell = (f->x1 - f->x0) / f->nx * (f->y1 - f->y0) / f->ny * f->depth;
    for (size_t c = 0; c < (size_t)f->nx * f->ny; ++c) {
        long long k = f->count[c];
        count[c] = (double)k / snapshots;
        fraction[c] = f->volume[c] / snapshots / cell;
        if (k == 0) {
            vx[c] = vy[c] = vz[c] = vmag[c] = wmag[c] = NAN;
            continue;
        }
        vx[c] = f->sum_v[0][c] / k;
        vy[c] = f->sum_v[1][c] / k;
        vz[c] = f->sum_v[2][c] / k;
        vmag[c] = sqrt(vx[c] * vx[c] + vy[c] * vy[c] + vz[c] * vz[c]);
        wmag[c] = f->sum_w[c] / k;
    }
}

double gf_rdf_edge_factor(double r, const double len[3], const int periodic[3]) {
    /* Mean over directions u of prod_k max(0, 1 - r |u_k| / L_k): a Fibonacci lattice of
     * directions on the sphere (symmetric, so one octant's worth of accuracy is ample). */
    const int m = 4000;
    const double golden = M_PI * (3.0 - sqrt(5.0));
    double sum = 0.0;
    for (int i = 0; i < m; ++i) {
        double z = 1.0 - (2.0 * i + 1.0) / m, s = sqrt(1.0 - z * z), phi = golden * i;
        double u[3] = {s * cos(phi), s * sin(phi), z};
        double prod = 1.0;
        for (int k = 0; k < 3 && prod > 0; ++k)
            if (!periodic[k])
                prod *= fmax(0.0, 1.0 - r * fabs(u[k]) / len[k]);
        sum += prod;
    }
    return sum / m;
}

int gf_rdf(size_t n, const double *x, const double lo[3], const double hi[3], const int periodic[3],
           double rmax, int nbins, int edge_correct, double *r_mid, double *g) {
    double len[3], vol = 1.0;
    int nc[3];
    for (int k = 0; k < 3; ++k) {
        len[k] = hi[k] - lo[k];
        vol *= len[k];
        if (!(len[k] > 0) || (periodic[k] && rmax > 0.5 * len[k]))
            return -1;
        nc[k] = (int)floor(len[k] / rmax);
        nc[k] = nc[k] < 1 ? 1 : (nc[k] > 512 ? 512 : nc[k]);
    }
    double *hist = calloc((size_t)nbins, sizeof *hist);
    size_t ncell = (size_t)nc[0] * nc[1] * nc[2];
    size_t *start = calloc(ncell + 1, sizeof *start), *item = malloc((n + 1) * sizeof *item);
    int *cell = malloc((n + 1) * sizeof *cell);
    if (!hist || !start || !item || !cell) {
        free(hist);
        free(start);
        free(item);
        free(cell);
        return -1;
    }
    /* Counting sort of the points into cells at least rmax wide. */
    for (size_t i = 0; i < n; ++i) {
        int ci[3];
        for (int k = 0; k < 3; ++k) {
            int c = (int)((x[3 * i + k] - lo[k]) / len[k] * nc[k]);
            ci[k] = c < 0 ? 0 : (c >= nc[k] ? nc[k] - 1 : c);
        }
        cell[i] = (ci[2] * nc[1] + ci[1]) * nc[0] + ci[0];
        start[cell[i] + 1]++;
    }
    for (size_t c = 0; c < ncell; ++c)
        start[c + 1] += start[c];
    size_t *fill = malloc((ncell + 1) * sizeof *fill);
    memcpy(fill, start, (ncell + 1) * sizeof *fill);
    for (size_t i = 0; i < n; ++i)
        item[fill[cell[i]]++] = i;
    free(fill);
    double dr = rmax / nbins, r2max = rmax * rmax;
    for (size_t i = 0; i < n; ++i) {
        int c = cell[i], cz = c / (nc[0] * nc[1]), cy = (c / nc[0]) % nc[1], cx = c % nc[0];
        /* The distinct neighbour cells (with few cells on a periodic axis, wrapped offsets
         * can name the same cell twice). */
        size_t nb[27];
        int nnb = 0;
        for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    int q[3] = {cx + dx, cy + dy, cz + dz}, skip = 0;
                    for (int k = 0; k < 3; ++k)
                        if (q[k] < 0 || q[k] >= nc[k]) {
                            if (!periodic[k])
                                skip = 1;
                            q[k] = (q[k] + nc[k]) % nc[k];
                        }
                    if (skip)
                        continue;
                    size_t qc = (size_t)((q[2] * nc[1] + q[1]) * nc[0] + q[0]);
                    int seen = 0;
                    for (int t = 0; t < nnb; ++t)
                        seen |= nb[t] == qc;
                    if (!seen)
                        nb[nnb++] = qc;
                }
        for (int t = 0; t < nnb; ++t) {
            size_t qc = nb[t];
            for (size_t a = start[qc]; a < start[qc + 1]; ++a) {
                size_t j = item[a];
                if (j <= i)
                    continue;
                double d2 = 0.0;
                for (int k = 0; k < 3; ++k) {
                    double d = x[3 * j + k] - x[3 * i + k];
                    if (periodic[k])
                        d -= len[k] * round(d / len[k]);
                    d2 += d * d;
                }
                if (d2 >= r2max || d2 == 0.0)
                    continue;
                int bin = (int)(sqrt(d2) / dr);
                if (bin < nbins)
                    hist[bin] += 2.0; /* each pair for both of its points */
            }
        }
    }
    double rho = (double)n / vol;
    for (int b = 0; b < nbins; ++b) {
        double r0 = b * dr, r1 = (b + 1) * dr;
        r_mid[b] = 0.5 * (r0 + r1);
        double shell = 4.0 / 3.0 * M_PI * (r1 * r1 * r1 - r0 * r0 * r0);
        double f = edge_correct ? gf_rdf_edge_factor(r_mid[b], len, periodic) : 1.0;
        g[b] = (n > 0 && f > 0) ? hist[b] / ((double)n * rho * shell * f) : NAN;
    }
    free(hist);
    free(start);
    free(item);
    free(cell);
    return 0;
}
