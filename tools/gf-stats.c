/* gf-stats: the key figures of snapshots or runs, alone or side by side (paper Table 2).
 *
 *   gf-stats SNAPSHOT.h5 [SNAPSHOT2.h5 ...]   particle count, solid fraction of the box,
 *                                            contacts solved, touching and loaded, contacts per
 *                                            particle and maximum penetration (if the snapshot
 *                                            has its contact list), kinetic energy
 *   gf-stats RUN/stats.csv [RUN2/stats.csv]  the averages of a run's statistics time series
 *                                            (max for the penetrations), e.g. max_dissipation
 *                                            against coulomb
 * Snapshots are read in chunks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/snapshot.h"

#define MAXF 32
#define MAXCOL 8

static int die(const char *msg) {
    fprintf(stderr, "gf-stats: %s\n", msg);
    return 1;
}

typedef struct {
    char name[64];
    double value[MAXCOL];
    int have[MAXCOL];
} row;

static row rows[MAXF];
static int nrows = 0;

static void put(const char *name, int col, double v) {
    int k = 0;
    while (k < nrows && strcmp(rows[k].name, name))
        ++k;
    if (k == nrows) {
        if (nrows == MAXF)
            return;
        snprintf(rows[nrows++].name, sizeof rows[0].name, "%s", name);
    }
    rows[k].value[col] = v;
    rows[k].have[col] = 1;
}

typedef struct {
    double volume, energy;
} sums;

static int sum_chunk(void *ctx, const gf_chunk *c) {
    sums *t = ctx;
    for (size_t i = 0; i < c->n; ++i) {
        double r = c->radius[i], v2 = 0, w2 = 0;
        for (int d = 0; d < 3; ++d) {
            v2 += c->v[3 * i + d] * c->v[3 * i + d];
            w2 += c->w[3 * i + d] * c->w[3 * i + d];
        }
        t->volume += 4.0 / 3.0 * M_PI * r * r * r;
        /* Spheres: I = 2/5 m r^2. */
        t->energy += 0.5 * c->mass[i] * v2 + 0.5 * 0.4 * c->mass[i] * r * r * w2;
    }
    return 0;
}

static int snapshot_figures(const char *path, int col, char *err, size_t errsize) {
    gf_snapshot s;
    if (gf_snapshot_open(&s, path, err, errsize))
        return -1;
    /* Without masses the energy would rest on a guessed density: refuse. */
    sums t = {0, 0};
    if (!s.has_mass) {
        snprintf(err, errsize, "%s: missing dataset /particles/mass (needed for the energy)", path);
        gf_snapshot_close(&s);
        return -1;
    }
    if (gf_snapshot_scan(&s, sum_chunk, &t, err, errsize)) {
        gf_snapshot_close(&s);
        return -1;
    }
    double box = 1;
    for (int k = 0; k < 3; ++k)
        box *= s.box_max[k] - s.box_min[k];
    put("time (s)", col, s.time);
    put("particles", col, (double)s.count);
    put("solid fraction of the box", col, t.volume / box);
    put("kinetic energy (J)", col, t.energy);
    if (s.has_contacts) {
        double *gap = NULL, *impulse = NULL;
        if (gf_snapshot_read_contacts(&s, "gap", &gap, err, errsize) ||
            gf_snapshot_read_contacts(&s, "normal_impulse", &impulse, err, errsize)) {
            free(gap);
            gf_snapshot_close(&s);
            return -1;
        }
        double pen = 0;
        long long touching = 0, loaded = 0;
        for (long long j = 0; j < s.ncontacts; ++j) {
            pen = fmax(pen, -gap[j]);
            touching += gap[j] <= 0;
            loaded += impulse[j] > 0;
        }
        free(gap);
        free(impulse);
        double n = (double)s.count;
        /* Solved: every pair within the speculative margin; touching and loaded ones are what a
         * DEM coordination number and the paper's Table 2 count. */
        put("contacts solved", col, (double)s.ncontacts);
        put("contacts touching (gap <= 0)", col, (double)touching);
        put("contacts loaded (impulse > 0)", col, (double)loaded);
        put("contacts per particle (2C/N)", col, n > 0 ? 2.0 * touching / n : 0);
        put("loaded contacts per particle", col, n > 0 ? 2.0 * loaded / n : 0);
        put("max. penetration (m)", col, pen);
    }
    gf_snapshot_close(&s);
    return 0;
}

static int csv_figures(const char *path, int col, char *err, size_t errsize) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errsize, "cannot open %s", path);
        return -1;
    }
    char line[4096], *names[64];
    int nnames = 0;
    if (!fgets(line, sizeof line, f) || !strstr(line, "particles")) {
        fclose(f);
        snprintf(err, errsize, "%s is not a granflow statistics file (no header)", path);
        return -1;
    }
    char hdr[4096];
    snprintf(hdr, sizeof hdr, "%s", line);
    for (char *t = strtok(hdr, ",\n"); t && nnames < 64; t = strtok(NULL, ",\n"))
        names[nnames++] = t;
    double sum[64] = {0}, mx[64] = {0};
    long n = 0;
    while (fgets(line, sizeof line, f)) {
        int k = 0;
        for (char *t = strtok(line, ",\n"); t && k < nnames; t = strtok(NULL, ",\n"), ++k) {
            double v = atof(t);
            sum[k] += v;
            mx[k] = n == 0 ? v : fmax(mx[k], v);
        }
        n++;
    }
    fclose(f);
    if (n == 0) {
        snprintf(err, errsize, "%s has no samples", path);
        return -1;
    }
    put("samples", col, (double)n);
    for (int k = 0; k < nnames; ++k) {
        if (!strcmp(names[k], "step") || !strcmp(names[k], "time"))
            continue;
        char label[64];
        int is_max =
            strstr(names[k], "penetration") != NULL || !strcmp(names[k], "inflow_particles");
        snprintf(label, sizeof label, "%s %s", is_max ? "max." : "avg.", names[k]);
        put(label, col, is_max ? mx[k] : sum[k] / n);
    }
    return 0;
}

int main(int argc, char **argv) {
    static const char usage[] =
        "usage: gf-stats FILE [FILE ...]\n"
        "  the figures of up to 8 snapshots (.h5) or run statistics (stats.csv) side by side";
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        puts(usage);
        return 0;
    }
    if (argc < 2 || argc - 1 > MAXCOL)
        return die(usage);
    char err[1200];
    for (int k = 1; k < argc; ++k) {
        size_t len = strlen(argv[k]);
        int csv = len > 4 && !strcmp(argv[k] + len - 4, ".csv");
        if ((csv ? csv_figures : snapshot_figures)(argv[k], k - 1, err, sizeof err))
            return die(err);
    }
    printf("%-34s", "");
    for (int k = 1; k < argc; ++k) {
        /* The end of a long path names the run best. */
        size_t len = strlen(argv[k]);
        printf(" %22s", len > 22 ? argv[k] + len - 22 : argv[k]);
    }
    printf("\n");
    for (int r = 0; r < nrows; ++r) {
        printf("%-34s", rows[r].name);
        for (int k = 0; k < argc - 1; ++k) {
            if (rows[r].have[k])
                printf(" %22.6g", rows[r].value[k]);
            else
                printf(" %22s", "-");
        }
        printf("\n");
    }
    return 0;
}
