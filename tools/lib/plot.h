/* Small raster plots for the tools and benchmarks: line plots with axes, ticks, labels and a
 * legend; heat maps with a colour bar. Written as PNG. No dependency beyond zlib. */
#ifndef GF_TOOLS_PLOT_H
#define GF_TOOLS_PLOT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int w, h;
    uint8_t *rgb;
} gf_canvas;

int gf_canvas_init(gf_canvas *c, int w, int h);
void gf_canvas_free(gf_canvas *c);
void gf_canvas_pixel(gf_canvas *c, int x, int y, const uint8_t col[3]);
void gf_canvas_line(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]);
void gf_canvas_rect(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]);
/* Text with the 5x7 font magnified by `scale`; returns the width drawn. */
int gf_canvas_text(gf_canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3]);
void gf_canvas_text_vertical(gf_canvas *c, int x, int y, const char *s, int scale,
                             const uint8_t col[3]);
int gf_canvas_write(const gf_canvas *c, const char *path);

/* A perceptually ordered colour map (viridis-like), t in [0, 1]. */
void gf_colormap(double t, uint8_t out[3]);

typedef struct {
    const char *label;
    const double *x, *y;
    size_t n;
} gf_series;

/* A line plot of several series (with markers) into a w x h PNG; log_x/log_y choose log axes.
 * Returns 0 on success. */
int gf_plot_lines(const char *path, int w, int h, const char *title, const char *xlabel,
                  const char *ylabel, const gf_series *series, size_t nseries, int log_x, int log_y,
                  const double *hline);

/* A heat map of nx x ny values (row-major, y up, NaN drawn grey) over [x0, x1] x [y0, y1],
 * with a colour bar from vmin to vmax. The map's top-left pixel is (GF_HEATMAP_LEFT,
 * GF_HEATMAP_TOP) and its size that of gf_plot_heatmap_size; the image adds 130 pixels on the
 * right (colour bar) and 60 below (axis). */
#define GF_HEATMAP_LEFT 80
#define GF_HEATMAP_TOP 40
/* The map's pixels for nx columns over a region width x height: a whole number of pixels per
 * column, at least 600 in all, and the region's aspect ratio (height clamped to 60 .. 1200). */
void gf_plot_heatmap_size(int nx, double width, double height, int *mw, int *mh);
int gf_plot_heatmap(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const char *barlabel, const double *v, int nx, int ny, double x0, double x1,
                    double y0, double y1, double vmin, double vmax);

#endif
