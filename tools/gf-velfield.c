/* gf-velfield: the velocity field of granflow snapshots in the x-y plane (paper Figs. 10, 11).
 *
 *   gf-velfield [options] SNAPSHOT.h5 [MORE.h5 ...]
 *     -o PREFIX     output prefix (default "velfield"): PREFIX.csv, PREFIX_velocity.png,
 *                   PREFIX_angular.png
 *     --nx N --ny N cells (default 150 x 65)
 *     --range X0 X1 Y0 Y1   binned region (default: the snapshot's box)
 *     --vmin V --vmax V --wmin W --wmax W   colour ranges of the speed and the angular speed
 *                   (default 0 .. the largest): the same for two runs shows them on one scale
 *
 * Several snapshots are averaged. Particles are read in chunks, so files need not fit in
 * memory. Per cell the CSV holds the mean velocity, its magnitude, the mean angular-velocity
 * magnitude, the particle count and the solid fraction (sphere volume over cell volume, the
 * cell spanning the box's full z extent). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/analysis.h"
#include "lib/cli.h"
#include "lib/plot.h"
#include "lib/snapshot.h"

static int add_chunk(void *ctx, const gf_chunk *c) {
    gf_field_add(ctx, c->n, c->x, c->v, c->w, c->radius);
    return 0;
}

static const char usage[] =
    "usage: gf-velfield [-o PREFIX] [--nx N] [--ny N] [--range X0 X1 Y0 Y1] [--vmin V]\n"
    "                   [--vmax V] [--wmin W] [--wmax W] SNAPSHOT.h5 [...]\n"
    "  bins particles in the x-y plane, averaged over the snapshots; writes PREFIX.csv,\n"
    "  PREFIX_velocity.png and PREFIX_angular.png (default prefix velfield, 150 x 65 cells over\n"
    "  the box; GF_CHUNK_ROWS sets the rows read at once). The colour ranges of the speed (m/s)\n"
    "  and the angular speed (rad/s) default to 0 .. the largest; give them to show two runs\n"
    "  on one scale (values beyond take the end colours)";

static int die(const char *msg) {
    fprintf(stderr, "gf-velfield: %s\n", msg);
    return 1;
}

int main(int argc, char **argv) {
    const char *prefix = "velfield";
    int nx = 150, ny = 65, have_range = 0;
    double range[4] = {0, 0, 0, 0};
    /* The colour ranges: NAN for the data's own (0 .. the largest). */
    double vlim[2] = {NAN, NAN}, wlim[2] = {NAN, NAN};
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; ++first) {
        const char *a = argv[first];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts(usage);
            return 0;
        } else if (!strcmp(a, "-o") && first + 1 < argc)
            prefix = argv[++first];
        else if (!strcmp(a, "--nx")) {
            if (gf_cli_int("gf-velfield", argc, argv, &first, &nx))
                return 1;
        } else if (!strcmp(a, "--ny")) {
            if (gf_cli_int("gf-velfield", argc, argv, &first, &ny))
                return 1;
        } else if (!strcmp(a, "--range")) {
            if (gf_cli_numbers("gf-velfield", argc, argv, &first, 4, range))
                return 1;
            have_range = 1;
        } else if (!strcmp(a, "--vmin") || !strcmp(a, "--vmax") || !strcmp(a, "--wmin") ||
                   !strcmp(a, "--wmax")) {
            double *lim = !strcmp(a, "--vmin")   ? &vlim[0]
                          : !strcmp(a, "--vmax") ? &vlim[1]
                          : !strcmp(a, "--wmin") ? &wlim[0]
                                                 : &wlim[1];
            if (gf_cli_numbers("gf-velfield", argc, argv, &first, 1, lim))
                return 1;
        } else {
            fprintf(stderr, "gf-velfield: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (first >= argc)
        return die(usage);
    if (nx < 1 || ny < 1 || nx > 100000 || ny > 100000)
        return die("--nx and --ny must be between 1 and 100000");
    if ((!isnan(vlim[0]) && !isnan(vlim[1]) && !(vlim[1] > vlim[0])) ||
        (!isnan(wlim[0]) && !isnan(wlim[1]) && !(wlim[1] > wlim[0])))
        return die("a colour range needs its maximum above its minimum");
    gf_field f;
    int initialised = 0, nsnap = 0;
    char err[1200];
    for (int k = first; k < argc; ++k) {
        gf_snapshot s;
        if (gf_snapshot_open(&s, argv[k], err, sizeof err))
            return die(err);
        if (!initialised) {
            if (!have_range) {
                range[0] = s.box_min[0];
                range[1] = s.box_max[0];
                range[2] = s.box_min[1];
                range[3] = s.box_max[1];
            }
            if (gf_field_init(&f, nx, ny, range[0], range[1], range[2], range[3],
                              s.box_max[2] - s.box_min[2]))
                return die("invalid range (or out of memory)");
            initialised = 1;
        }
        if (gf_snapshot_scan(&s, add_chunk, &f, err, sizeof err))
            return die(err);
        gf_snapshot_close(&s);
        nsnap++;
    }
    size_t cells = (size_t)nx * ny;
    double *vx = malloc(cells * sizeof *vx), *vy = malloc(cells * sizeof *vy),
           *vz = malloc(cells * sizeof *vz), *vm = malloc(cells * sizeof *vm),
           *wm = malloc(cells * sizeof *wm), *cnt = malloc(cells * sizeof *cnt),
           *fr = malloc(cells * sizeof *fr);
    if (!vx || !vy || !vz || !vm || !wm || !cnt || !fr)
        return die("out of memory");
    gf_field_result(&f, nsnap, vx, vy, vz, vm, wm, cnt, fr);
    char path[1100];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *out = fopen(path, "w");
    if (!out)
        return die("cannot write the CSV file");
    fprintf(out, "# gf-velfield: %d snapshot(s), %d x %d cells over x [%g, %g] y [%g, %g] m\n",
            nsnap, nx, ny, range[0], range[1], range[2], range[3]);
    fprintf(out, "i,j,x,y,vx,vy,vz,v,omega,count,solid_fraction\n");
    double vmax = 0, wmax = 0;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            size_t c = (size_t)j * nx + i;
            double xc = range[0] + (i + 0.5) * (range[1] - range[0]) / nx;
            double yc = range[2] + (j + 0.5) * (range[3] - range[2]) / ny;
            fprintf(out, "%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", i, j, xc, yc,
                    vx[c], vy[c], vz[c], vm[c], wm[c], cnt[c], fr[c]);
            if (isfinite(vm[c]))
                vmax = fmax(vmax, vm[c]);
            if (isfinite(wm[c]))
                wmax = fmax(wmax, wm[c]);
        }
    fclose(out);
    /* Heat maps in cm, as the paper plots them. */
    double xr[2] = {range[0] * 100, range[1] * 100}, yr[2] = {range[2] * 100, range[3] * 100};
    double v0 = isnan(vlim[0]) ? 0.0 : vlim[0], w0 = isnan(wlim[0]) ? 0.0 : wlim[0];
    double v1 = isnan(vlim[1]) ? (vmax > v0 ? vmax : v0 + 1.0) : vlim[1];
    double w1 = isnan(wlim[1]) ? (wmax > w0 ? wmax : w0 + 1.0) : wlim[1];
    if (!(v1 > v0) || !(w1 > w0))
        return die("a colour range needs its maximum above its minimum (the data's largest "
                   "value is below the minimum given)");
    snprintf(path, sizeof path, "%s_velocity.png", prefix);
    if (gf_plot_heatmap(path, "mean velocity magnitude", "x (cm)", "y (cm)", "|v| (m/s)", vm, nx,
                        ny, xr[0], xr[1], yr[0], yr[1], v0, v1))
        return die("cannot write the velocity PNG");
    snprintf(path, sizeof path, "%s_angular.png", prefix);
    if (gf_plot_heatmap(path, "mean angular velocity magnitude", "x (cm)", "y (cm)",
                        "|omega| (rad/s)", wm, nx, ny, xr[0], xr[1], yr[0], yr[1], w0, w1))
        return die("cannot write the angular-velocity PNG");
    printf("%s.csv, %s_velocity.png, %s_angular.png: %d x %d cells from %d snapshot(s), "
           "peak mean speed %.4g m/s\n",
           prefix, prefix, prefix, nx, ny, nsnap, vmax);
    gf_field_free(&f);
    free(vx);
    free(vy);
    free(vz);
    free(vm);
    free(wm);
    free(cnt);
    free(fr);
    return 0;
}
