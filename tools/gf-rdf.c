/* gf-rdf: the radial distribution function g(r) of the particles of a region (paper Fig. 12).
 *
 *   gf-rdf [options] SNAPSHOT.h5
 *     -o PREFIX                 output prefix (default "rdf"): PREFIX.csv and PREFIX.png
 *     --region X0 X1 Y0 Y1 Z0 Z1   (m; default [0.12, 0.14] x [0, 0.065] x [0, 0.02] as in the
 *                               paper, clipped to the box)
 *     --rmax R                  largest distance in particle diameters (default 5)
 *     --bins N                  (default 100)
 *
 * r is in units of the particle diameter (of the first particle). g(r) = pair count in the
 * shell / (N rho V_shell f(r)): N the centres in the region, rho = N / V_region, f(r) the mean
 * fraction of a shell around a point of the region that lies inside it (the exact correction for
 * shells cut by the region's faces, walls included); along periodic axes of the snapshot that the
 * region spans completely, distances use the minimum image instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/analysis.h"
#include "lib/cli.h"
#include "lib/plot.h"
#include "lib/snapshot.h"

/* The centres inside [lo, hi), gathered chunk by chunk. */
typedef struct {
    double lo[3], hi[3], diameter, *x;
    size_t n, cap;
} selection;

static int select_chunk(void *ctx, const gf_chunk *c) {
    selection *sel = ctx;
    for (size_t i = 0; i < c->n; ++i) {
        if (sel->diameter == 0)
            sel->diameter = 2 * c->radius[i];
        int in = 1;
        for (int k = 0; k < 3; ++k)
            in = in && c->x[3 * i + k] >= sel->lo[k] && c->x[3 * i + k] < sel->hi[k];
        if (!in)
            continue;
        if (sel->n == sel->cap) {
            size_t cap = sel->cap ? 2 * sel->cap : 1024;
            double *x = realloc(sel->x, 3 * cap * sizeof *x);
            if (!x)
                return -1;
            sel->x = x;
            sel->cap = cap;
        }
        memcpy(sel->x + 3 * sel->n++, c->x + 3 * i, 3 * sizeof *sel->x);
    }
    return 0;
}

static const char usage[] =
    "usage: gf-rdf [-o PREFIX] [--region X0 X1 Y0 Y1 Z0 Z1] [--rmax R] [--bins N] SNAPSHOT.h5\n"
    "  g(r) of the centres in the region (default [0.12, 0.14] x [0, 0.065] x [0, 0.02] m),\n"
    "  r in diameters up to R (default 5) in N bins (default 100); writes PREFIX.csv and\n"
    "  PREFIX.png (default prefix rdf)";

static int die(const char *msg) {
    fprintf(stderr, "gf-rdf: %s\n", msg);
    return 1;
}

int main(int argc, char **argv) {
    const char *prefix = "rdf";
    double region[6] = {0.12, 0.14, 0.0, 0.065, 0.0, 0.02}, rmax_d = 5.0;
    int nbins = 100, first = 1;
    for (; first < argc && argv[first][0] == '-'; ++first) {
        const char *a = argv[first];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts(usage);
            return 0;
        } else if (!strcmp(a, "-o") && first + 1 < argc)
            prefix = argv[++first];
        else if (!strcmp(a, "--region")) {
            if (gf_cli_numbers("gf-rdf", argc, argv, &first, 6, region))
                return 1;
        } else if (!strcmp(a, "--rmax")) {
            if (gf_cli_numbers("gf-rdf", argc, argv, &first, 1, &rmax_d))
                return 1;
        } else if (!strcmp(a, "--bins")) {
            if (gf_cli_int("gf-rdf", argc, argv, &first, &nbins))
                return 1;
        } else {
            fprintf(stderr, "gf-rdf: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (first + 1 != argc)
        return die(usage);
    if (nbins < 1 || nbins > 1000000 || !(rmax_d > 0))
        return die("--bins must be between 1 and 1000000 and --rmax positive");
    char err[1200];
    gf_snapshot s;
    if (gf_snapshot_open(&s, argv[first], err, sizeof err))
        return die(err);
    selection sel = {.n = 0};
    double *lo = sel.lo, *hi = sel.hi;
    int periodic[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = fmax(region[2 * k], s.box_min[k]);
        hi[k] = fmin(region[2 * k + 1], s.box_max[k]);
        if (!(hi[k] > lo[k]))
            return die("the region does not intersect the snapshot's box");
        periodic[k] = s.periodic[k] && lo[k] <= s.box_min[k] && hi[k] >= s.box_max[k];
    }
    snprintf(err, sizeof err, "out of memory"); /* select_chunk's only failure */
    if (gf_snapshot_scan(&s, select_chunk, &sel, err, sizeof err))
        return die(err);
    gf_snapshot_close(&s);
    size_t n = sel.n;
    double *x = sel.x, diameter = sel.diameter;
    if (n < 2)
        return die("fewer than two particles in the region");
    double *r = malloc(nbins * sizeof *r), *g = malloc(nbins * sizeof *g);
    if (gf_rdf(n, x, lo, hi, periodic, rmax_d * diameter, nbins, r, g))
        return die("rmax exceeds half a periodic length, or out of memory");
    char path[1100];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *out = fopen(path, "w");
    if (!out)
        return die("cannot write the CSV file");
    fprintf(out,
            "# gf-rdf: %zu centres in [%g, %g] x [%g, %g] x [%g, %g] m, diameter %g m, "
            "edge-corrected%s\n",
            n, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], diameter,
            periodic[0] || periodic[1] || periodic[2] ? ", minimum image on periodic axes" : "");
    fprintf(out, "r_over_d,g\n");
    double *rd = malloc(nbins * sizeof *rd);
    for (int b = 0; b < nbins; ++b) {
        rd[b] = r[b] / diameter;
        fprintf(out, "%.6g,%.6g\n", rd[b], g[b]);
    }
    fclose(out);
    snprintf(path, sizeof path, "%s.png", prefix);
    gf_series ser = {"g(r)", rd, g, (size_t)nbins};
    double one = 1.0;
    if (gf_plot_lines(path, 800, 500, "radial distribution function", "r / d", "g(r)", &ser, 1, 0,
                      0, &one))
        return die("cannot write the PNG");
    printf("%s.csv, %s.png: %zu centres, %d bins up to %g diameters\n", prefix, prefix, n, nbins,
           rmax_d);
    free(x);
    free(r);
    free(g);
    free(rd);
    return 0;
}
