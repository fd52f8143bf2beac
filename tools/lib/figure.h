/* A figure as a list of drawing items (lines, filled rectangles, text, grids of coloured cells),
 * written by two back ends from the same list: a PNG raster and an SVG vector file, so the two
 * cannot disagree. Coordinates are pixels of the PNG from its top-left corner, which are the
 * SVG's user units; the SVG's nominal size is GF_FIGURE_MM_PER_PX millimetres per pixel, the
 * size at which the text sizes below read as points (9-11 pt). */
#ifndef GF_TOOLS_FIGURE_H
#define GF_TOOLS_FIGURE_H

#include <stddef.h>
#include <stdint.h>

/* An 800-pixel-wide plot prints 16 cm wide. */
#define GF_FIGURE_MM_PER_PX 0.2

/* Text sizes in pixels (SVG font-size): 9.1, 9.6 and 10.8 pt at the nominal size. The PNG draws
 * them with the 5x7 font at twice its size (14-pixel capitals). */
#define GF_FIGURE_TICK_SIZE 16.0
#define GF_FIGURE_LABEL_SIZE 17.0
#define GF_FIGURE_TITLE_SIZE 19.0

/* The raster the PNG back end draws into (8-bit RGB, row-major). */
typedef struct {
    int w, h;
    uint8_t *rgb;
} gf_canvas;

int gf_canvas_init(gf_canvas *c, int w, int h);
void gf_canvas_free(gf_canvas *c);
void gf_canvas_pixel(gf_canvas *c, int x, int y, const uint8_t col[3]);
void gf_canvas_line(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]);
/* Fills x0 .. x1, y0 .. y1 inclusive. */
void gf_canvas_rect(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]);
/* Text with the 5x7 font magnified by `scale`, its top-left corner at (x, y); returns the width
 * drawn. */
int gf_canvas_text(gf_canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3]);
/* The same turned 90 degrees counter-clockwise, reading upwards from (x, y). */
void gf_canvas_text_vertical(gf_canvas *c, int x, int y, const char *s, int scale,
                             const uint8_t col[3]);
int gf_canvas_write(const gf_canvas *c, const char *path);

typedef enum { GF_ANCHOR_START, GF_ANCHOR_MIDDLE, GF_ANCHOR_END } gf_anchor;

typedef struct gf_figure gf_figure;

/* A w x h figure on white; NULL when out of memory. */
gf_figure *gf_figure_new(int w, int h);
void gf_figure_free(gf_figure *f);

/* The class (SVG class attribute) of the items added from now on; NULL for none. It names what
 * an item shows ("xtick", "series", ...), for style sheets and for the tests. */
void gf_figure_class(gf_figure *f, const char *cls);
/* Items added from now on are clipped to [x0, x1] x [y0, y1]; gf_figure_unclip ends that. */
void gf_figure_clip(gf_figure *f, double x0, double y0, double x1, double y1);
void gf_figure_unclip(gf_figure *f);

/* n points (x, y pairs), joined; closed joins the last to the first. width in pixels. */
void gf_figure_polyline(gf_figure *f, const double *xy, size_t n, int closed, double width,
                        int dashed, const uint8_t col[3]);
void gf_figure_line(gf_figure *f, double x0, double y0, double x1, double y1, double width,
                    const uint8_t col[3]);
/* The filled rectangle [x0, x1) x [y0, y1) (a PNG pixel is in when its centre is). */
void gf_figure_rect(gf_figure *f, double x0, double y0, double x1, double y1, const uint8_t col[3]);
/* Text (UTF-8; the PNG shows characters beyond ASCII as '?') with its baseline through (x, y),
 * anchored there at its start, middle or end; vertical turns it 90 degrees counter-clockwise
 * about (x, y), to read upwards. size in pixels. */
void gf_figure_text(gf_figure *f, double x, double y, const char *text, double size,
                    gf_anchor anchor, int vertical, const uint8_t col[3]);
/* A grid of nx x ny cells (rgb: 3 bytes per cell, row 0 at the top) covering [x, x + w) x
 * [y, y + h). The PNG gives each pixel the colour of the cell its centre lies in; the SVG writes
 * each run of equal colours along a row as one rectangle. */
void gf_figure_cells(gf_figure *f, double x, double y, double w, double h, int nx, int ny,
                     const uint8_t *rgb);

/* Returns 0 on success, -1 if an item could not be stored or the file not written. */
int gf_figure_write_png(const gf_figure *f, const char *path);
int gf_figure_write_svg(const gf_figure *f, const char *path);
/* The SVG beside a PNG: path with its ".png" replaced by ".svg" (appended if it has none). */
void gf_figure_svg_path(const char *png, char *out, size_t size);
/* Both: the PNG at png_path and the SVG beside it. */
int gf_figure_write(const gf_figure *f, const char *png_path);

#endif
