#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t BLACK[3] = {0, 0, 0}, LIGHT[3] = {230, 230, 230}, WHITE[3] = {255, 255, 255};
const uint8_t gf_map_empty[3] = {200, 200, 200}, gf_map_outline[3] = {228, 26, 28};

/* The PNG's 5x7 font at twice its size: the widest the text of a label can be, for margins. */
#define CHAR_W 12.0

void gf_colormap(double t, uint8_t out[3]) {
    /* Viridis sampled at 9 points, linearly interpolated. */
    static const double cm[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                    {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                    {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    double f = t * 8;
    int i = (int)f;
    if (i >= 8)
        i = 7;
    f -= i;
    for (int k = 0; k < 3; ++k)
        out[k] = (uint8_t)lround(cm[i][k] * (1 - f) + cm[i + 1][k] * f);
}

/* --- ticks --------------------------------------------------------------------------------- */

/* "Nice" tick spacing for a range. */
static double tick_step(double span, int target) {
    double raw = span / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    double nice = r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10;
    return nice * mag;
}

static void format_tick(double v, double step, char *buf, size_t size) {
    if (fabs(v) < 1e-9 * step)
        v = 0.0; /* a tick reached by adding steps lands on -1e-17, not on "-0" */
    if (v == 0 || (fabs(v) >= 1e-3 && fabs(v) < 1e5)) {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, size, "%.*f", dec > 6 ? 6 : dec, v);
    } else {
        snprintf(buf, size, "%.2g", v);
    }
}

/* A log tick's label: plain between 1e-3 and 1e5, else as "2e-5". */
static void format_log_tick(double v, char *buf, size_t size) {
    if (v >= 1e-3 && v < 1e5) {
        snprintf(buf, size, "%.6g", v);
        return;
    }
    int e = (int)floor(log10(v) + 1e-9);
    double m = v / pow(10, e);
    snprintf(buf, size, "%.3ge%d", m, e);
}

/* The linear ticks of [lo, hi]: multiples of a nice step. Returns the count and the step. */
static int linear_ticks(double lo, double hi, int target, double *value, int max, double *step) {
    double s = tick_step(hi - lo, target);
    *step = s;
    int n = 0;
    for (double k = ceil(lo / s - 1e-9); n < max && k * s <= hi + 1e-9 * s; ++k)
        value[n++] = k * s;
    return n;
}

int gf_plot_log_ticks(double lo, double hi, double *value, int *labelled, int max) {
    if (!(lo > 0) || !(hi > lo) || !isfinite(hi))
        return 0;
    double decades = log10(hi) - log10(lo);
    int n = 0;
    if (decades < 0.5) {
        double step;
        n = linear_ticks(lo, hi, 5, value, max, &step);
        for (int k = 0; k < n; ++k)
            labelled[k] = 1;
        return n;
    }
    int every = decades > 8 ? (int)ceil(decades / 8) : 1;
    int e0 = (int)floor(log10(lo)) - 1, e1 = (int)ceil(log10(hi)) + 1;
    for (int e = e0; e <= e1; ++e) {
        double p = pow(10, e);
        for (int m = 1; m <= 9; ++m) {
            double v = m * p;
            if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9) || n == max)
                continue;
            int label = decades <= 1.2   ? 1
                        : decades <= 3.2 ? (m == 1 || m == 2 || m == 5)
                                         : (m == 1 && e % every == 0);
            if (!label && m > 1 && decades > 8)
                continue; /* minor ticks would crowd */
            value[n] = v;
            labelled[n++] = label;
        }
    }
    return n;
}

/* The ticks of an axis over [lo, hi] (log10 of the values for a log axis): positions in axis
 * units (log10 for a log axis), whether labelled, and the labels. */
typedef struct {
    int n;
    double at[64];
    int labelled[64];
    char label[64][32];
} ticks;

static void axis_ticks(double lo, double hi, int log_axis, int target, ticks *t) {
    double value[64];
    if (log_axis) {
        t->n = gf_plot_log_ticks(pow(10, lo), pow(10, hi), value, t->labelled, 64);
        double decades = hi - lo, step = 0.0;
        if (decades < 0.5)
            step = tick_step(pow(10, hi) - pow(10, lo), 5);
        for (int k = 0; k < t->n; ++k) {
            t->at[k] = log10(value[k]);
            if (decades < 0.5)
                format_tick(value[k], step, t->label[k], sizeof t->label[k]);
            else
                format_log_tick(value[k], t->label[k], sizeof t->label[k]);
        }
    } else {
        double step;
        t->n = linear_ticks(lo, hi, target, value, 64, &step);
        for (int k = 0; k < t->n; ++k) {
            t->at[k] = value[k];
            t->labelled[k] = 1;
            format_tick(value[k], step, t->label[k], sizeof t->label[k]);
        }
    }
}

static size_t longest_label(const ticks *t) {
    size_t n = 0;
    for (int k = 0; k < t->n; ++k)
        if (t->labelled[k] && strlen(t->label[k]) > n)
            n = strlen(t->label[k]);
    return n;
}

/* Ticks below a horizontal axis at y from x = px(at): marks, labels, optional grid up to top. */
static void draw_x_ticks(gf_figure *f, const ticks *t, double x0, double x1, double lo, double hi,
                         double y, double grid_top) {
    for (int k = 0; k < t->n; ++k) {
        double px = x0 + (t->at[k] - lo) / (hi - lo) * (x1 - x0);
        if (t->labelled[k] && grid_top < y) {
            gf_figure_class(f, "grid");
            gf_figure_line(f, px, grid_top, px, y, 1, LIGHT);
        }
        gf_figure_class(f, t->labelled[k] ? "xtick" : "xminor");
        gf_figure_line(f, px, y, px, y + (t->labelled[k] ? 6 : 3), 1, BLACK);
        if (t->labelled[k]) {
            gf_figure_class(f, "xticklabel");
            gf_figure_text(f, px, y + 24, t->label[k], GF_FIGURE_TICK_SIZE, GF_ANCHOR_MIDDLE, 0,
                           BLACK);
        }
    }
}

/* Ticks on a vertical axis at x, pointing left (dir -1) or right (dir 1) from it. */
static void draw_y_ticks(gf_figure *f, const ticks *t, double y0, double y1, double lo, double hi,
                         double x, int dir, double grid_to, const char *cls) {
    char mark[32], label[48];
    snprintf(mark, sizeof mark, "%stick", cls);
    snprintf(label, sizeof label, "%sticklabel", cls);
    for (int k = 0; k < t->n; ++k) {
        double py = y0 - (t->at[k] - lo) / (hi - lo) * (y0 - y1);
        if (t->labelled[k] && grid_to > x) {
            gf_figure_class(f, "grid");
            gf_figure_line(f, x, py, grid_to, py, 1, LIGHT);
        }
        gf_figure_class(f, t->labelled[k] ? mark : "yminor");
        gf_figure_line(f, x, py, x + dir * (t->labelled[k] ? 6 : 3), py, 1, BLACK);
        if (t->labelled[k]) {
            gf_figure_class(f, label);
            gf_figure_text(f, x + dir * 9, py + 6, t->label[k], GF_FIGURE_TICK_SIZE,
                           dir < 0 ? GF_ANCHOR_END : GF_ANCHOR_START, 0, BLACK);
        }
    }
}

/* --- line plots ---------------------------------------------------------------------------- */

static const uint8_t palette[6][3] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},
                                      {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};

static int usable(double x, double y, int log_x, int log_y) {
    return isfinite(x) && isfinite(y) && (!log_x || x > 0) && (!log_y || y > 0);
}

/* How much of the series a legend box [x0, x0 + w] x [y0, y0 + h] would hide: the points of
 * their segments (8 along each) inside it. */
static double legend_crossings(const gf_series *series, size_t nseries, int log_x, int log_y,
                               double xmin, double xmax, double ymin, double ymax, double L,
                               double R, double T, double B, double x0, double y0, double w,
                               double h) {
    double hidden = 0;
    for (size_t s = 0; s < nseries; ++s) {
        double px = 0, py = 0;
        int have = 0;
        for (size_t i = 0; i < series[s].n; ++i) {
            if (!usable(series[s].x[i], series[s].y[i], log_x, log_y)) {
                have = 0;
                continue;
            }
            double x = log_x ? log10(series[s].x[i]) : series[s].x[i];
            double y = log_y ? log10(series[s].y[i]) : series[s].y[i];
            double qx = L + (x - xmin) / (xmax - xmin) * (R - L);
            double qy = B - (y - ymin) / (ymax - ymin) * (B - T);
            for (int k = have ? 1 : 8; k <= 8; ++k) {
                double sx = px + (qx - px) * k / 8.0, sy = py + (qy - py) * k / 8.0;
                hidden += sx >= x0 && sx <= x0 + w && sy >= y0 && sy <= y0 + h;
            }
            px = qx;
            py = qy;
            have = 1;
        }
    }
    return hidden;
}

int gf_plot_lines(const char *path, int w, int h, const char *title, const char *xlabel,
                  const char *ylabel, const gf_series *series, size_t nseries, int log_x, int log_y,
                  const double *hline) {
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t s = 0; s < nseries; ++s)
        for (size_t i = 0; i < series[s].n; ++i) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!usable(x, y, log_x, log_y))
                continue;
            x = log_x ? log10(x) : x;
            y = log_y ? log10(y) : y;
            xmin = fmin(xmin, x);
            xmax = fmax(xmax, x);
            ymin = fmin(ymin, y);
            ymax = fmax(ymax, y);
        }
    int have_hline = hline && isfinite(*hline) && (!log_y || *hline > 0);
    if (have_hline) {
        double y = log_y ? log10(*hline) : *hline;
        ymin = fmin(ymin, y);
        ymax = fmax(ymax, y);
    }
    if (!(xmin <= xmax)) {
        xmin = 0;
        xmax = 1;
    }
    if (!(ymin <= ymax)) {
        ymin = 0;
        ymax = 1;
    }
    if (xmax == xmin) {
        xmin -= 0.5;
        xmax += 0.5;
    }
    if (ymax == ymin) {
        ymin -= 0.5 * (fabs(ymin) + 1);
        ymax += 0.5 * (fabs(ymax) + 1);
    }
    double pad = 0.05 * (ymax - ymin);
    ymin -= pad;
    ymax += pad;
    ticks xt, yt;
    axis_ticks(xmin, xmax, log_x, 6, &xt);
    axis_ticks(ymin, ymax, log_y, 6, &yt);
    /* Left: the rotated y label, a gap, the widest tick label, the tick marks. */
    double L = fmax(70, 24 + 12 + CHAR_W * longest_label(&yt) + 10), R = w - 24, T = 40, B = h - 62;
    gf_figure *f = gf_figure_new(w, h);
    if (!f)
        return -1;
    if (!(R > L + 10 && B > T + 10)) {
        gf_figure_free(f);
        return -1;
    }
    gf_figure_class(f, "title");
    gf_figure_text(f, L, 26, title, GF_FIGURE_TITLE_SIZE, GF_ANCHOR_START, 0, BLACK);
    draw_x_ticks(f, &xt, L, R, xmin, xmax, B + 0.5, T);
    draw_y_ticks(f, &yt, B, T, ymin, ymax, L - 0.5, -1, R, "y");
    gf_figure_class(f, "axis");
    gf_figure_line(f, L - 0.5, B + 0.5, R, B + 0.5, 1, BLACK);
    gf_figure_line(f, L - 0.5, T, L - 0.5, B + 0.5, 1, BLACK);
    gf_figure_class(f, "xlabel");
    gf_figure_text(f, (L + R) / 2, h - 12, xlabel, GF_FIGURE_LABEL_SIZE, GF_ANCHOR_MIDDLE, 0,
                   BLACK);
    gf_figure_class(f, "ylabel");
    gf_figure_text(f, 24, (T + B) / 2, ylabel, GF_FIGURE_LABEL_SIZE, GF_ANCHOR_MIDDLE, 1, BLACK);
    if (have_hline) {
        double y = log_y ? log10(*hline) : *hline, py = B - (y - ymin) / (ymax - ymin) * (B - T);
        const double xy[4] = {L, py, R, py};
        gf_figure_class(f, "hline");
        gf_figure_polyline(f, xy, 2, 0, 1, 1, BLACK);
    }
    size_t most = 0;
    for (size_t s = 0; s < nseries; ++s)
        most = series[s].n > most ? series[s].n : most;
    double *xy = malloc((2 * most + 1) * sizeof *xy);
    if (!xy) {
        gf_figure_free(f);
        return -1;
    }
    size_t nlegend = 0, legend_len = 0;
    for (size_t s = 0; s < nseries; ++s) {
        const uint8_t *col = palette[s % 6];
        size_t run = 0;
        /* A polyline per run of usable points; markers where the points are few. */
        for (size_t i = 0; i <= series[s].n; ++i) {
            int ok = i < series[s].n && usable(series[s].x[i], series[s].y[i], log_x, log_y);
            if (ok) {
                double x = log_x ? log10(series[s].x[i]) : series[s].x[i];
                double y = log_y ? log10(series[s].y[i]) : series[s].y[i];
                xy[2 * run] = L + (x - xmin) / (xmax - xmin) * (R - L);
                xy[2 * run + 1] = B - (y - ymin) / (ymax - ymin) * (B - T);
                run++;
                continue;
            }
            if (run > 1) {
                gf_figure_class(f, "series");
                gf_figure_polyline(f, xy, run, 0, 2, 0, col);
            }
            if (series[s].n <= 64) {
                gf_figure_class(f, "marker");
                for (size_t k = 0; k < run; ++k)
                    gf_figure_rect(f, xy[2 * k] - 2.5, xy[2 * k + 1] - 2.5, xy[2 * k] + 2.5,
                                   xy[2 * k + 1] + 2.5, col);
            }
            run = 0;
        }
        if (series[s].label) {
            nlegend++;
            legend_len =
                strlen(series[s].label) > legend_len ? strlen(series[s].label) : legend_len;
        }
    }
    free(xy);
    if (nlegend) {
        /* On white, in the corner of the plot the data cross least: a line of each series'
         * colour, then its label. */
        double lw = CHAR_W * legend_len + 46, lh = 22.0 * nlegend + 6, best = INFINITY;
        double x0 = R - 4 - lw, y0 = T + 4;
        for (int corner = 0; corner < 4; ++corner) {
            double cx = corner % 2 ? L + 6 : R - 4 - lw, cy = corner / 2 ? B - 4 - lh : T + 4;
            double crossed = legend_crossings(series, nseries, log_x, log_y, xmin, xmax, ymin, ymax,
                                              L, R, T, B, cx, cy, lw, lh);
            if (crossed < best) {
                best = crossed;
                x0 = cx;
                y0 = cy;
            }
        }
        gf_figure_class(f, "legend");
        gf_figure_rect(f, x0, y0, x0 + lw, y0 + lh, WHITE);
        size_t row = 0;
        for (size_t s = 0; s < nseries; ++s) {
            if (!series[s].label)
                continue;
            double y = y0 + 18 + 22 * row++;
            gf_figure_line(f, x0 + 6, y - 6, x0 + 30, y - 6, 2, palette[s % 6]);
            gf_figure_text(f, x0 + 38, y, series[s].label, GF_FIGURE_TICK_SIZE, GF_ANCHOR_START, 0,
                           BLACK);
        }
    }
    int rc = gf_figure_write(f, path);
    gf_figure_free(f);
    return rc;
}

/* --- heat maps ----------------------------------------------------------------------------- */

void gf_plot_heatmap_size(int nx, double width, double height, int *mw, int *mh) {
    *mw = nx >= 600 ? nx : nx * ((600 + nx - 1) / nx);
    double aspect = width > 0 && height > 0 ? height / width : 1.0;
    long long want = llround(*mw * aspect);
    *mh = want < 60 ? 60 : (want > 1200 ? 1200 : (int)want);
}

int gf_plot_map(const char *path, const gf_map *m) {
    if (m->nx < 1 || m->ny < 1 || !(m->x1 > m->x0) || !(m->y1 > m->y0))
        return -1;
    double vmin = m->vmin, vmax = m->vmax > m->vmin ? m->vmax : m->vmin + 1;
    int mw, mh;
    gf_plot_heatmap_size(m->nx, m->x1 - m->x0, m->y1 - m->y0, &mw, &mh);
    /* A tick label every 40 pixels at most up the map, 100 across it. */
    int across = mw / 100 < 2 ? 2 : (mw / 100 > 6 ? 6 : mw / 100);
    int up = mh / 40 < 2 ? 2 : (mh / 40 > 5 ? 5 : mh / 40);
    ticks xt, yt, bt;
    axis_ticks(m->x0, m->x1, 0, across, &xt);
    axis_ticks(m->y0, m->y1, 0, up, &yt);
    axis_ticks(vmin, vmax, 0, up, &bt);
    /* Room above and below a low map for the vertical labels beside it. */
    size_t longest = strlen(m->ylabel ? m->ylabel : "");
    if (m->barlabel && strlen(m->barlabel) > longest)
        longest = strlen(m->barlabel);
    double pad = fmax(0.0, ceil((CHAR_W * longest + 8 - mh) / 2));
    const double L = GF_HEATMAP_LEFT, T = GF_HEATMAP_TOP + pad;
    /* Right of the map: a gap, the bar, its tick marks and labels, the rotated bar label. */
    double bx = L + mw + 16, bw = 18, barlabel_x = bx + bw + 9 + CHAR_W * longest_label(&bt) + 26;
    int w = (int)ceil(barlabel_x + 10), h = (int)(T + mh + fmax(62, pad + 8));
    size_t cells = (size_t)m->nx * m->ny;
    uint8_t *rgb = malloc(3 * cells), bar[3 * 256];
    gf_figure *f = gf_figure_new(w, h);
    if (!rgb || !f) {
        free(rgb);
        gf_figure_free(f);
        return -1;
    }
    /* Row 0 of the cells is the top: j = ny - 1. */
    for (int j = 0; j < m->ny; ++j)
        for (int i = 0; i < m->nx; ++i) {
            double val = m->v[(size_t)j * m->nx + i];
            uint8_t *col = rgb + 3 * ((size_t)(m->ny - 1 - j) * m->nx + i);
            if (isfinite(val))
                gf_colormap((val - vmin) / (vmax - vmin), col);
            else
                memcpy(col, gf_map_empty, 3);
        }
    gf_figure_class(f, "title");
    gf_figure_text(f, L, 26, m->title, GF_FIGURE_TITLE_SIZE, GF_ANCHOR_START, 0, BLACK);
    gf_figure_class(f, "cells");
    gf_figure_cells(f, L, T, mw, mh, m->nx, m->ny, rgb);
    free(rgb);
    gf_figure_clip(f, L, T, L + mw, T + mh);
    for (size_t k = 0; k < m->noutlines; ++k) {
        const gf_outline *o = &m->outlines[k];
        double *xy = malloc((2 * o->n + 1) * sizeof *xy);
        if (!xy) {
            gf_figure_free(f);
            return -1;
        }
        for (size_t p = 0; p < o->n; ++p) {
            xy[2 * p] = L + (o->x[p] - m->x0) / (m->x1 - m->x0) * mw;
            xy[2 * p + 1] = T + mh - (o->y[p] - m->y0) / (m->y1 - m->y0) * mh;
        }
        gf_figure_class(f, "outline");
        gf_figure_polyline(f, xy, o->n, o->closed, 2, 0, gf_map_outline);
        free(xy);
    }
    gf_figure_unclip(f);
    const double frame[8] = {L - 0.5,      T - 0.5,      L + mw + 0.5, T - 0.5,
                             L + mw + 0.5, T + mh + 0.5, L - 0.5,      T + mh + 0.5};
    gf_figure_class(f, "axis");
    gf_figure_polyline(f, frame, 4, 1, 1, 0, BLACK);
    draw_x_ticks(f, &xt, L, L + mw, m->x0, m->x1, T + mh + 0.5, T + mh + 0.5);
    draw_y_ticks(f, &yt, T + mh, T, m->y0, m->y1, L - 0.5, -1, L - 0.5, "y");
    gf_figure_class(f, "xlabel");
    gf_figure_text(f, L + mw / 2.0, T + mh + 50, m->xlabel, GF_FIGURE_LABEL_SIZE, GF_ANCHOR_MIDDLE,
                   0, BLACK);
    gf_figure_class(f, "ylabel");
    gf_figure_text(f, 24, T + mh / 2.0, m->ylabel, GF_FIGURE_LABEL_SIZE, GF_ANCHOR_MIDDLE, 1,
                   BLACK);
    /* The colour bar: 256 steps from vmax at the top to vmin at the bottom. */
    for (int k = 0; k < 256; ++k)
        gf_colormap(1.0 - (k + 0.5) / 256.0, bar + 3 * k);
    gf_figure_class(f, "bar");
    gf_figure_cells(f, bx, T, bw, mh, 1, 256, bar);
    const double bar_frame[8] = {bx - 0.5,      T - 0.5,      bx + bw + 0.5, T - 0.5,
                                 bx + bw + 0.5, T + mh + 0.5, bx - 0.5,      T + mh + 0.5};
    gf_figure_polyline(f, bar_frame, 4, 1, 1, 0, BLACK);
    draw_y_ticks(f, &bt, T + mh, T, vmin, vmax, bx + bw + 0.5, 1, 0, "bar");
    gf_figure_class(f, "barlabel");
    gf_figure_text(f, barlabel_x, T + mh / 2.0, m->barlabel, GF_FIGURE_LABEL_SIZE, GF_ANCHOR_MIDDLE,
                   1, BLACK);
    int rc = gf_figure_write(f, path);
    gf_figure_free(f);
    return rc;
}

int gf_plot_heatmap(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const char *barlabel, const double *v, int nx, int ny, double x0, double x1,
                    double y0, double y1, double vmin, double vmax) {
    const gf_map m = {.title = title,
                      .xlabel = xlabel,
                      .ylabel = ylabel,
                      .barlabel = barlabel,
                      .v = v,
                      .nx = nx,
                      .ny = ny,
                      .x0 = x0,
                      .x1 = x1,
                      .y0 = y0,
                      .y1 = y1,
                      .vmin = vmin,
                      .vmax = vmax};
    return gf_plot_map(path, &m);
}
