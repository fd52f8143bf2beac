/* gf-velfield: the velocity field of granflow snapshots in a plane (paper Figs. 10, 11: x-y).
 *
 *   gf-velfield [options] SNAPSHOT.h5 [MORE.h5 ...]
 *     -o PREFIX     output prefix (default "velfield"): PREFIX.csv and PREFIX_outlines.csv
 *     --plane xy|xz|yz   the plane (default xy); each cell spans the box along the third axis
 *     --nx N --ny N cells along the plane's first and second axes (default: square cells, 150
 *                   along the longer side of the region; one of them alone: the other from the
 *                   region's aspect ratio)
 *     --cell SIZE   cells about SIZE (m) wide instead
 *     --range A0 A1 B0 B1   binned region along the plane's axes (default: the snapshot's box)
 *
 * Several snapshots are averaged. Particles are read in chunks, so files need not fit in
 * memory. Per cell the CSV holds the mean velocity, its magnitude, the mean angular-velocity
 * magnitude, the particle count and the solid fraction (sphere volume over cell volume, the
 * cell spanning the box's full extent along the third axis). The outlines file holds the walls
 * and obstacles of the first snapshot as seen in the plane (outline.h says how). The heat maps:
 * python3 -m granflow.figures velfield PREFIX (matplotlib). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/analysis.h"
#include "lib/cli.h"
#include "lib/outline.h"
#include "lib/snapshot.h"

#define MAX_CELLS 100000

static int add_chunk(void *ctx, const gf_chunk *c) {
    gf_field_add(ctx, c->n, c->x, c->v, c->w, c->radius);
    return 0;
}

static const char usage[] =
    "usage: gf-velfield [-o PREFIX] [--plane xy|xz|yz] [--nx N] [--ny N] [--cell SIZE]\n"
    "                   [--range A0 A1 B0 B1] SNAPSHOT.h5 [...]\n"
    "  bins particles in a plane (default x-y; each cell spans the box along the third axis),\n"
    "  averaged over the snapshots; writes PREFIX.csv (per cell: the mean velocity and speed,\n"
    "  the mean angular speed, the count, the solid fraction) and PREFIX_outlines.csv (the walls\n"
    "  and obstacles in the plane: the projection of each obstacle along the third axis)\n"
    "  (default prefix velfield). Cells: square, 150 along the longer side of the region (the\n"
    "  box, or --range along the plane's two axes, in m); --nx/--ny set their numbers (one\n"
    "  alone: the other keeps them square), --cell their size in m. The heat maps:\n"
    "  python3 -m granflow.figures velfield PREFIX [--vmax V ...]. GF_CHUNK_ROWS sets the rows\n"
    "  read at once.";

static int die(const char *msg) {
    fprintf(stderr, "gf-velfield: %s\n", msg);
    return 1;
}

int main(int argc, char **argv) {
    const char *prefix = "velfield";
    int nx = 0, ny = 0, have_range = 0, ax = 0, ay = 1;
    double range[4] = {0, 0, 0, 0}, cell = 0;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; ++first) {
        const char *a = argv[first];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts(usage);
            return 0;
        } else if (!strcmp(a, "-o") && first + 1 < argc)
            prefix = argv[++first];
        else if (!strcmp(a, "--plane") && first + 1 < argc) {
            const char *p = argv[++first];
            if (strlen(p) != 2 || !strchr("xyz", p[0]) || !strchr("xyz", p[1]) || p[0] >= p[1]) {
                fprintf(stderr, "gf-velfield: --plane expects xy, xz or yz, got '%s'\n", p);
                return 1;
            }
            ax = p[0] - 'x';
            ay = p[1] - 'x';
        } else if (!strcmp(a, "--nx")) {
            if (gf_cli_int_in("gf-velfield", argc, argv, &first, 1, MAX_CELLS, &nx))
                return 1;
        } else if (!strcmp(a, "--ny")) {
            if (gf_cli_int_in("gf-velfield", argc, argv, &first, 1, MAX_CELLS, &ny))
                return 1;
        } else if (!strcmp(a, "--cell")) {
            if (gf_cli_positive("gf-velfield", argc, argv, &first, &cell))
                return 1;
        } else if (!strcmp(a, "--range")) {
            if (gf_cli_numbers("gf-velfield", argc, argv, &first, 4, range))
                return 1;
            if (!(range[1] > range[0]) || !(range[3] > range[2]))
                return die("--range A0 A1 B0 B1 needs A1 > A0 and B1 > B0");
            have_range = 1;
        } else {
            fprintf(stderr, "gf-velfield: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (first >= argc)
        return die(usage);
    if (cell > 0 && (nx || ny))
        return die("--cell and --nx/--ny exclude each other");
    const char axis_name[3] = {'x', 'y', 'z'};
    int az = 3 - ax - ay;
    gf_field f;
    gf_outlines outlines = {0};
    int initialised = 0, nsnap = 0;
    double depth[2] = {0, 0};
    char err[1200];
    for (int k = first; k < argc; ++k) {
        gf_snapshot s;
        if (gf_snapshot_open(&s, argv[k], err, sizeof err))
            return die(err);
        if (!initialised) {
            if (!have_range) {
                range[0] = s.box_min[ax];
                range[1] = s.box_max[ax];
                range[2] = s.box_min[ay];
                range[3] = s.box_max[ay];
            }
            double width = range[1] - range[0], height = range[3] - range[2];
            if (cell > 0) {
                if (gf_field_cell_grid(width, height, cell, MAX_CELLS, &nx, &ny))
                    return die("--cell is so small that a side would have more than 100000 cells");
            } else if (nx && !ny) {
                double n = fmax(1.0, round(nx * height / width));
                if (n > MAX_CELLS)
                    return die("--ny from the aspect ratio would exceed 100000: give it too");
                ny = (int)n;
            } else if (ny && !nx) {
                double n = fmax(1.0, round(ny * width / height));
                if (n > MAX_CELLS)
                    return die("--nx from the aspect ratio would exceed 100000: give it too");
                nx = (int)n;
            } else if (!nx && !ny) {
                gf_field_fit_grid(width, height, 150, &nx, &ny);
            }
            depth[0] = s.box_min[az];
            depth[1] = s.box_max[az];
            if (gf_field_init_plane(&f, ax, ay, nx, ny, range[0], range[1], range[2], range[3],
                                    depth[1] - depth[0]))
                return die("invalid range (or out of memory)");
            gf_snapshot_geometry g;
            if (gf_snapshot_read_geometry(&s, &g, err, sizeof err))
                return die(err);
            const double lo[2] = {s.box_min[ax], s.box_min[ay]},
                         hi[2] = {s.box_max[ax], s.box_max[ay]};
            int rc = gf_outlines_project(&g, ax, ay, lo, hi, &outlines);
            gf_snapshot_geometry_free(&g);
            if (rc)
                return die("out of memory");
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
    char A = axis_name[ax], B = axis_name[ay], Z = axis_name[az];
    fprintf(out,
            "# gf-velfield: %d snapshot(s), %d x %d cells in the %c-%c plane over %c [%g, %g] "
            "%c [%g, %g] m, each through %c [%g, %g] m\n",
            nsnap, nx, ny, A, B, A, range[0], range[1], B, range[2], range[3], Z, depth[0],
            depth[1]);
    fprintf(out, "i,j,%c,%c,vx,vy,vz,v,omega,count,solid_fraction\n", A, B);
    double vmax = 0;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            size_t c = (size_t)j * nx + i;
            double xc = range[0] + (i + 0.5) * (range[1] - range[0]) / nx;
            double yc = range[2] + (j + 0.5) * (range[3] - range[2]) / ny;
            fprintf(out, "%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", i, j, xc, yc,
                    vx[c], vy[c], vz[c], vm[c], wm[c], cnt[c], fr[c]);
            if (isfinite(vm[c]))
                vmax = fmax(vmax, vm[c]);
        }
    fclose(out);
    /* The outlines as data, for figures drawn elsewhere (python3 -m granflow.figures): a row
     * per point of each polyline, in m. */
    snprintf(path, sizeof path, "%s_outlines.csv", prefix);
    out = fopen(path, "w");
    if (!out)
        return die("cannot write the outlines' CSV file");
    fprintf(out, "# gf-velfield: the walls and obstacles in the %c-%c plane, a polyline each\n", A,
            B);
    fprintf(out, "outline,closed,%c,%c\n", A, B);
    for (size_t k = 0; k < outlines.n; ++k)
        for (size_t q = outlines.start[k]; q < outlines.start[k + 1]; ++q)
            fprintf(out, "%zu,%d,%.9g,%.9g\n", k, outlines.closed[k], outlines.x[q], outlines.y[q]);
    if (fclose(out) != 0)
        return die("cannot write the outlines' CSV file");
    printf("%s.csv, %s_outlines.csv: %d x %d cells in the %c-%c plane from %d snapshot(s), %zu "
           "outline(s), peak mean speed %.4g m/s (the heat maps: python3 -m granflow.figures "
           "velfield %s)\n",
           prefix, prefix, nx, ny, A, B, nsnap, outlines.n, vmax, prefix);
    gf_field_free(&f);
    gf_outlines_free(&outlines);
    free(vx);
    free(vy);
    free(vz);
    free(vm);
    free(wm);
    free(cnt);
    free(fr);
    return 0;
}
