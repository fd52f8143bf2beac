/* Plots for the tools and benchmarks: line plots with axes, ticks, labels and a legend; heat
 * maps with a colour bar and outlines. Each is written as a PNG and, beside it, as an SVG of the
 * same drawing (figure.h), with the same stem. No dependency beyond zlib. */
#ifndef GF_TOOLS_PLOT_H
#define GF_TOOLS_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "figure.h"

/* A perceptually ordered colour map (viridis-like), t in [0, 1]. */
void gf_colormap(double t, uint8_t out[3]);

/* The colours of empty cells and of outlines in heat maps: a grey and a red, apart from each
 * other and from every colour of the map. */
extern const uint8_t gf_map_empty[3], gf_map_outline[3];

typedef struct {
    const char *label;
    const double *x, *y;
    size_t n;
} gf_series;

/* A line plot of several series (with markers) into a w x h PNG at path and the SVG beside it;
 * log_x/log_y choose log axes; hline, if not NULL, a dashed horizontal line. Returns 0 on
 * success. */
int gf_plot_lines(const char *path, int w, int h, const char *title, const char *xlabel,
                  const char *ylabel, const gf_series *series, size_t nseries, int log_x, int log_y,
                  const double *hline);

/* The ticks of a log axis over [lo, hi] (0 < lo < hi), at most max, in rising order: value[k],
 * and labelled[k] whether it carries a label. Spanning less than half a decade: the ticks of a
 * linear axis, all labelled. Up to 1.2 decades: 1, 2, ..., 9 times the powers of ten, all
 * labelled. Up to 3.2 decades: labels at 1, 2 and 5 times the powers of ten, unlabelled ticks at
 * the other multiples. Beyond: labels at the powers of ten (every second, third, ... when there
 * are more than 8), unlabelled ticks at 2 .. 9 times them up to 8 decades. Returns the count. */
int gf_plot_log_ticks(double lo, double hi, double *value, int *labelled, int max);

/* A polyline in a map's data coordinates. */
typedef struct {
    const double *x, *y;
    size_t n;
    int closed;
} gf_outline;

/* A heat map of nx x ny values (row-major, j = 0 at the bottom; NaN: empty, drawn in
 * gf_map_empty) over [x0, x1] x [y0, y1], with a colour bar from vmin to vmax (values beyond take
 * the end colours) and outlines drawn over it in gf_map_outline, clipped to the map. */
typedef struct {
    const char *title, *xlabel, *ylabel, *barlabel;
    const double *v;
    int nx, ny;
    double x0, x1, y0, y1, vmin, vmax;
    const gf_outline *outlines;
    size_t noutlines;
} gf_map;

/* The map's top-left pixel is (GF_HEATMAP_LEFT, GF_HEATMAP_TOP) and its size that of
 * gf_plot_heatmap_size; the image adds the colour bar on the right and 62 pixels below. A map
 * lower than the vertical labels beside it are long (12 pixels a character) moves down by half
 * the difference, with as much more room below. */
#define GF_HEATMAP_LEFT 100
#define GF_HEATMAP_TOP 40
/* The map's pixels for nx columns over a region width x height: a whole number of pixels per
 * column, at least 600 in all, and the region's aspect ratio (height clamped to 60 .. 1200). */
void gf_plot_heatmap_size(int nx, double width, double height, int *mw, int *mh);
/* Writes the PNG at path and the SVG beside it; returns 0 on success. */
int gf_plot_map(const char *path, const gf_map *m);
/* gf_plot_map without outlines. */
int gf_plot_heatmap(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const char *barlabel, const double *v, int nx, int ny, double x0, double x1,
                    double y0, double y1, double vmin, double vmax);

#endif
