/* gf-rdf: the radial distribution function g(r) of the particles of a region (paper Fig. 12).
 *
 *   gf-rdf [options] SNAPSHOT.h5 [SNAPSHOT.h5 ...]
 *     -o PREFIX                 output prefix (default "rdf"): PREFIX.csv (the plot:
 *                               python3 -m granflow.figures rdf PREFIX)
 *     --region X0 X1 Y0 Y1 Z0 Z1   (m; default the whole box; clipped to the box). The paper's
 *                               region of the channel is 0.12 0.14 0 0.065 0 0.02
 *     --rmax R                  largest distance in particle diameters (default 5)
 *     --bins N                  (default 100, at most 10000)
 *     --normalisation edge|plain   edge-corrected (default) or the paper's plain one
 *
 * r is in units of the particle diameter (of the first particle). g(r) = pair count in the
 * shell / (N rho V_shell f(r)): N the centres in the region, rho = N / V_region, f(r) the mean
 * fraction of a shell around a point of the region that lies inside it (the exact correction for
 * shells cut by the region's faces, walls included; 1 with the plain normalisation, which then
 * falls below 1 with r); along periodic axes of the snapshot that the region spans completely,
 * distances use the minimum image instead. With several snapshots g is their mean. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/analysis.h"
#include "lib/cli.h"
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
    "usage: gf-rdf [-o PREFIX] [--region X0 X1 Y0 Y1 Z0 Z1] [--rmax R] [--bins N]\n"
    "              [--normalisation edge|plain] SNAPSHOT.h5 [SNAPSHOT.h5 ...]\n"
    "  g(r) of the centres in the region (default the whole box; the paper's region of the\n"
    "  channel is 0.12 0.14 0 0.065 0 0.02), averaged over the snapshots, r in diameters up to R\n"
    "  (default 5) in N bins (default 100, at most 10000), edge-corrected (default) or with the "
    "paper's plain\n"
    "  normalisation; writes PREFIX.csv (default prefix rdf); the plot: python3 -m\n"
    "  granflow.figures rdf PREFIX";

static int die(const char *msg) {
    fprintf(stderr, "gf-rdf: %s\n", msg);
    return 1;
}

/* g(r) of one snapshot's region into g; the region (clipped), centre count and diameter out. */
static int rdf_of(const char *file, const double region[6], double rmax_d, int nbins, int edge,
                  double *r, double *g, double lo[3], double hi[3], size_t *n, double *diameter,
                  int *minimum_image) {
    char err[1200];
    gf_snapshot s;
    if (gf_snapshot_open(&s, file, err, sizeof err))
        return die(err);
    selection sel = {.n = 0};
    int periodic[3];
    for (int k = 0; k < 3; ++k) {
        sel.lo[k] = isnan(region[2 * k]) ? s.box_min[k] : fmax(region[2 * k], s.box_min[k]);
        sel.hi[k] = isnan(region[2 * k + 1]) ? s.box_max[k] : fmin(region[2 * k + 1], s.box_max[k]);
        if (!(sel.hi[k] > sel.lo[k])) {
            gf_snapshot_close(&s);
            return die("the region does not intersect the snapshot's box");
        }
        periodic[k] = s.periodic[k] && sel.lo[k] <= s.box_min[k] && sel.hi[k] >= s.box_max[k];
        *minimum_image |= periodic[k];
        lo[k] = sel.lo[k];
        hi[k] = sel.hi[k];
    }
    snprintf(err, sizeof err, "out of memory"); /* select_chunk's only failure */
    int rc = gf_snapshot_scan(&s, select_chunk, &sel, err, sizeof err);
    gf_snapshot_close(&s);
    if (rc) {
        free(sel.x);
        return die(err);
    }
    *n = sel.n;
    *diameter = sel.diameter;
    if (sel.n < 2) {
        free(sel.x);
        fprintf(stderr, "gf-rdf: %s: fewer than two particles in the region\n", file);
        return 1;
    }
    rc = gf_rdf(sel.n, sel.x, lo, hi, periodic, rmax_d * sel.diameter, nbins, edge, r, g);
    free(sel.x);
    if (rc)
        return die("rmax exceeds half a periodic length, or out of memory");
    return 0;
}

int main(int argc, char **argv) {
    const char *prefix = "rdf";
    double region[6] = {NAN, NAN, NAN, NAN, NAN, NAN}, rmax_d = 5.0;
    int nbins = 100, first = 1, edge = 1;
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
            if (!(region[1] > region[0]) || !(region[3] > region[2]) || !(region[5] > region[4]))
                return die("--region X0 X1 Y0 Y1 Z0 Z1 needs X1 > X0, Y1 > Y0 and Z1 > Z0");
        } else if (!strcmp(a, "--rmax")) {
            if (gf_cli_positive("gf-rdf", argc, argv, &first, &rmax_d))
                return 1;
        } else if (!strcmp(a, "--bins")) {
            if (gf_cli_int_in("gf-rdf", argc, argv, &first, 1, 10000, &nbins))
                return 1;
        } else if (!strcmp(a, "--normalisation") && first + 1 < argc) {
            const char *v = argv[++first];
            if (!strcmp(v, "edge") || !strcmp(v, "plain"))
                edge = !strcmp(v, "edge");
            else {
                fprintf(stderr, "gf-rdf: --normalisation expects edge or plain, got '%s'\n", v);
                return 1;
            }
        } else {
            fprintf(stderr, "gf-rdf: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (first >= argc)
        return die(usage);
    int nsnap = argc - first;
    double *r = malloc(nbins * sizeof *r), *g = calloc(nbins, sizeof *g),
           *gs = malloc(nbins * sizeof *gs), *rd = malloc(nbins * sizeof *rd);
    if (!r || !g || !gs || !rd)
        return die("out of memory");
    double lo[3], hi[3], diameter = 0.0;
    size_t ntotal = 0;
    int minimum_image = 0;
    for (int k = 0; k < nsnap; ++k) {
        size_t n;
        double d;
        if (rdf_of(argv[first + k], region, rmax_d, nbins, edge, r, gs, lo, hi, &n, &d,
                   &minimum_image))
            return 1;
        if (k == 0)
            diameter = d;
        else if (d != diameter)
            return die("the snapshots' particle diameters differ: r / d would mean different "
                       "things");
        ntotal += n;
        for (int b = 0; b < nbins; ++b)
            g[b] += gs[b] / nsnap;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *out = fopen(path, "w");
    if (!out)
        return die("cannot write the CSV file");
    fprintf(out,
            "# gf-rdf: %zu centres in [%g, %g] x [%g, %g] x [%g, %g] m over %d snapshot%s, "
            "diameter %g m, %s%s\n",
            ntotal, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], nsnap, nsnap > 1 ? "s" : "", diameter,
            edge ? "edge-corrected" : "plain normalisation (the paper's)",
            minimum_image ? ", minimum image on periodic axes" : "");
    fprintf(out, "r_over_d,g\n");
    for (int b = 0; b < nbins; ++b) {
        rd[b] = r[b] / diameter;
        fprintf(out, "%.6g,%.6g\n", rd[b], g[b]);
    }
    fclose(out);
    printf("%s.csv: %zu centres in %d snapshot%s, %d bins up to %g diameters (the plot: python3 "
           "-m granflow.figures rdf %s)\n",
           prefix, ntotal, nsnap, nsnap > 1 ? "s" : "", nbins, rmax_d, prefix);
    free(r);
    free(g);
    free(gs);
    free(rd);
    return 0;
}
