/* gf-plot: line plots of CSV columns as PNG, with an SVG of the same plot beside it.
 *
 *   gf-plot data.csv out.png --x COL --y COL[,COL...] [--group COL] [--title T]
 *           [--xlabel L] [--ylabel L] [--logx] [--logy] [--hline V]
 *
 * One series per y column, or per distinct value of the group column. Lines starting with '#'
 * are comments; the first other line is the header. Fields that are not numbers leave a gap. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/plot.h"

#define MAXCOL 64
#define MAXSER 16

static int die(const char *msg, const char *arg) {
    fprintf(stderr, "gf-plot: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 1;
}

static int split(char *line, char **fields) {
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, ",\n\r", &save); t && n < MAXCOL;
         t = strtok_r(NULL, ",\n\r", &save))
        fields[n++] = t;
    return n;
}

static int find(char **hdr, int n, const char *name) {
    for (int i = 0; i < n; ++i)
        if (strcmp(hdr[i], name) == 0)
            return i;
    return -1;
}

/* A field's number; NaN (a gap in the line) for anything else. */
static double number(const char *field) {
    char *end;
    double v = strtod(field, &end);
    while (*end == ' ' || *end == '\t')
        ++end;
    return end == field || *end ? NAN : v;
}

static const char usage[] =
    "usage: gf-plot data.csv out.png --x COL --y COL[,COL] [--group COL] [--title T]\n"
    "               [--xlabel L] [--ylabel L] [--logx] [--logy] [--hline V]\n"
    "  line plots of CSV columns as out.png and out.svg (the same plot; the SVG's text is 9-11 pt\n"
    "  at its nominal 16 x 10 cm): one series per y column, or per value of the group column;\n"
    "  lines starting with '#' are comments, the first other line is the header; fields that\n"
    "  are not numbers leave a gap. Give labels with units, e.g. --xlabel \"time (s)\"\n";

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    if (argc < 3) {
        fprintf(stderr, "gf-plot: %s", usage);
        return 1;
    }
    const char *in = argv[1], *out = argv[2], *xcol = NULL, *ycols = NULL, *group = NULL;
    const char *title = "", *xlabel = NULL, *ylabel = NULL;
    int logx = 0, logy = 0, has_hline = 0;
    double hline = 0;
    for (int i = 3; i < argc; ++i) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--logx"))
            logx = 1;
        else if (!strcmp(a, "--logy"))
            logy = 1;
        else if (!next)
            return die("option needs a value", a);
        else if (!strcmp(a, "--x"))
            xcol = argv[++i];
        else if (!strcmp(a, "--y"))
            ycols = argv[++i];
        else if (!strcmp(a, "--group"))
            group = argv[++i];
        else if (!strcmp(a, "--title"))
            title = argv[++i];
        else if (!strcmp(a, "--xlabel"))
            xlabel = argv[++i];
        else if (!strcmp(a, "--ylabel"))
            ylabel = argv[++i];
        else if (!strcmp(a, "--hline")) {
            if (gf_cli_numbers("gf-plot", argc, argv, &i, 1, &hline) != 0)
                return 1;
            has_hline = 1;
        } else
            return die("unknown option", a);
    }
    if (!xcol || !ycols)
        return die("--x and --y are required", NULL);
    FILE *f = fopen(in, "r");
    if (!f)
        return die("cannot open", in);
    char line[4096], hdrline[4096];
    char *hdr[MAXCOL];
    int nh = 0;
    while (fgets(hdrline, sizeof hdrline, f))
        if (hdrline[0] != '#' && hdrline[0] != '\n') {
            nh = split(hdrline, hdr);
            break;
        }
    int xi = find(hdr, nh, xcol), gi = group ? find(hdr, nh, group) : -1;
    if (xi < 0)
        return die("no such column", xcol);
    if (group && gi < 0)
        return die("no such column", group);
    char ybuf[512];
    snprintf(ybuf, sizeof ybuf, "%s", ycols);
    char *yname[MAXSER];
    int yi[MAXSER], ny = 0;
    char *save = NULL;
    for (char *t = strtok_r(ybuf, ",", &save); t && ny < MAXSER; t = strtok_r(NULL, ",", &save)) {
        yname[ny] = t;
        yi[ny] = find(hdr, nh, t);
        if (yi[ny] < 0)
            return die("no such column", t);
        ny++;
    }
    /* Series: per y column, or per group value (of the first y column). */
    size_t cap = 1024;
    double *xs[MAXSER], *ys[MAXSER];
    size_t ns[MAXSER] = {0};
    char glabel[MAXSER][64];
    int nser = group ? 0 : ny;
    for (int s = 0; s < MAXSER; ++s) {
        xs[s] = malloc(cap * sizeof(double));
        ys[s] = malloc(cap * sizeof(double));
    }
    size_t caps[MAXSER];
    for (int s = 0; s < MAXSER; ++s)
        caps[s] = cap;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *fld[MAXCOL];
        int n = split(line, fld);
        if (n < nh)
            continue;
        for (int k = 0; k < (group ? 1 : ny); ++k) {
            int s = k;
            if (group) {
                s = -1;
                for (int q = 0; q < nser; ++q)
                    if (!strcmp(glabel[q], fld[gi]))
                        s = q;
                if (s < 0) {
                    if (nser == MAXSER)
                        continue;
                    s = nser++;
                    snprintf(glabel[s], sizeof glabel[s], "%s", fld[gi]);
                }
            }
            if (ns[s] == caps[s]) {
                caps[s] *= 2;
                xs[s] = realloc(xs[s], caps[s] * sizeof(double));
                ys[s] = realloc(ys[s], caps[s] * sizeof(double));
            }
            xs[s][ns[s]] = number(fld[xi]);
            ys[s][ns[s]] = number(fld[yi[k]]);
            ns[s]++;
        }
    }
    fclose(f);
    gf_series ser[MAXSER];
    for (int s = 0; s < nser; ++s) {
        ser[s].label = group ? glabel[s] : yname[s];
        ser[s].x = xs[s];
        ser[s].y = ys[s];
        ser[s].n = ns[s];
    }
    int rc = gf_plot_lines(out, 800, 500, title, xlabel ? xlabel : xcol, ylabel ? ylabel : yname[0],
                           ser, (size_t)nser, logx, logy, has_hline ? &hline : NULL);
    for (int s = 0; s < MAXSER; ++s) {
        free(xs[s]);
        free(ys[s]);
    }
    if (rc)
        return die("cannot write the PNG or the SVG beside it", out);
    return 0;
}
