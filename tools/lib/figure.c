#include "figure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "font5x7.h"
#include "png.h"

/* --- the raster ---------------------------------------------------------------------------- */

int gf_canvas_init(gf_canvas *c, int w, int h) {
    c->w = w;
    c->h = h;
    c->rgb = w > 0 && h > 0 ? malloc((size_t)w * h * 3) : NULL;
    if (!c->rgb)
        return -1;
    memset(c->rgb, 255, (size_t)w * h * 3);
    return 0;
}

void gf_canvas_free(gf_canvas *c) {
    free(c->rgb);
    c->rgb = NULL;
}

void gf_canvas_pixel(gf_canvas *c, int x, int y, const uint8_t col[3]) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h)
        return;
    memcpy(c->rgb + ((size_t)y * c->w + x) * 3, col, 3);
}

/* Bresenham's walk from (x0, y0) to (x1, y1), both ends included, calling plot at each pixel
 * (at most 100000 of them). */
static void line_walk(int x0, int y0, int x1, int y1, void (*plot)(void *, int, int), void *ctx) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (int guard = 0; guard < 100000; ++guard) {
        plot(ctx, x0, y0);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

typedef struct {
    gf_canvas *c;
    const uint8_t *col;
} canvas_pen;

static void canvas_plot(void *ctx, int x, int y) {
    const canvas_pen *pen = ctx;
    gf_canvas_pixel(pen->c, x, y, pen->col);
}

void gf_canvas_line(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]) {
    canvas_pen pen = {c, col};
    line_walk(x0, y0, x1, y1, canvas_plot, &pen);
}

void gf_canvas_rect(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]) {
    for (int y = y0 < 0 ? 0 : y0; y <= y1 && y < c->h; ++y)
        for (int x = x0 < 0 ? 0 : x0; x <= x1 && x < c->w; ++x)
            gf_canvas_pixel(c, x, y, col);
}

static int draw_text(gf_canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3],
                     int vertical) {
    int at = 0;
    for (; *s; ++s, at += 6 * scale) {
        int ch = (unsigned char)*s;
        const unsigned char *g = gf_font5x7[(ch < 32 || ch > 126 ? '?' : ch) - 32];
        for (int r = 0; r < 7; ++r)
            for (int k = 0; k < 5; ++k) {
                if (!(g[r] & (0x10 >> k)))
                    continue;
                if (vertical)
                    gf_canvas_rect(c, x + r * scale, y - at - (k + 1) * scale + 1,
                                   x + (r + 1) * scale - 1, y - at - k * scale, col);
                else
                    gf_canvas_rect(c, x + at + k * scale, y + r * scale,
                                   x + at + (k + 1) * scale - 1, y + (r + 1) * scale - 1, col);
            }
    }
    return at;
}

int gf_canvas_text(gf_canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3]) {
    return draw_text(c, x, y, s, scale, col, 0);
}

void gf_canvas_text_vertical(gf_canvas *c, int x, int y, const char *s, int scale,
                             const uint8_t col[3]) {
    draw_text(c, x, y, s, scale, col, 1);
}

int gf_canvas_write(const gf_canvas *c, const char *path) {
    return gf_png_write(path, c->w, c->h, c->rgb);
}

/* --- the display list ---------------------------------------------------------------------- */

typedef enum { ITEM_LINE, ITEM_RECT, ITEM_TEXT, ITEM_CELLS } item_kind;

typedef struct {
    item_kind kind;
    uint8_t col[3];
    int cls, clip; /* indices into the figure's tables, -1 for none */
    double box[4]; /* rect and cells: x0, y0, x1, y1; text: x, y */
    double width;  /* line width, text size */
    int closed, dashed, anchor, vertical, nx, ny;
    size_t n;   /* line points */
    double *xy; /* line points */
    char *text;
    uint8_t *rgb; /* cells */
} item;

struct gf_figure {
    int w, h, failed, cls, clip;
    item *items;
    size_t n, cap;
    char **classes;
    size_t nclasses;
    double (*clips)[4];
    size_t nclips;
};

gf_figure *gf_figure_new(int w, int h) {
    if (w < 1 || h < 1)
        return NULL;
    gf_figure *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->w = w;
    f->h = h;
    f->cls = f->clip = -1;
    return f;
}

void gf_figure_free(gf_figure *f) {
    if (!f)
        return;
    for (size_t k = 0; k < f->n; ++k) {
        free(f->items[k].xy);
        free(f->items[k].text);
        free(f->items[k].rgb);
    }
    for (size_t k = 0; k < f->nclasses; ++k)
        free(f->classes[k]);
    free(f->classes);
    free(f->clips);
    free(f->items);
    free(f);
}

void gf_figure_class(gf_figure *f, const char *cls) {
    f->cls = -1;
    if (!cls)
        return;
    for (size_t k = 0; k < f->nclasses; ++k)
        if (!strcmp(f->classes[k], cls)) {
            f->cls = (int)k;
            return;
        }
    char **grown = realloc(f->classes, (f->nclasses + 1) * sizeof *grown);
    char *copy = strdup(cls);
    if (!grown || !copy) {
        if (grown)
            f->classes = grown;
        free(copy);
        f->failed = 1;
        return;
    }
    f->classes = grown;
    f->classes[f->nclasses] = copy;
    f->cls = (int)f->nclasses++;
}

void gf_figure_clip(gf_figure *f, double x0, double y0, double x1, double y1) {
    double(*grown)[4] = realloc(f->clips, (f->nclips + 1) * sizeof *grown);
    if (!grown) {
        f->failed = 1;
        return;
    }
    f->clips = grown;
    f->clips[f->nclips][0] = x0;
    f->clips[f->nclips][1] = y0;
    f->clips[f->nclips][2] = x1;
    f->clips[f->nclips][3] = y1;
    f->clip = (int)f->nclips++;
}

void gf_figure_unclip(gf_figure *f) {
    f->clip = -1;
}

/* A new item of the present class and clip, or NULL (the figure then fails to write). */
static item *add_item(gf_figure *f, item_kind kind, const uint8_t col[3]) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        item *grown = realloc(f->items, cap * sizeof *grown);
        if (!grown) {
            f->failed = 1;
            return NULL;
        }
        f->items = grown;
        f->cap = cap;
    }
    item *it = &f->items[f->n++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    memcpy(it->col, col, 3);
    it->cls = f->cls;
    it->clip = f->clip;
    return it;
}

void gf_figure_polyline(gf_figure *f, const double *xy, size_t n, int closed, double width,
                        int dashed, const uint8_t col[3]) {
    if (n == 0)
        return;
    item *it = add_item(f, ITEM_LINE, col);
    if (!it)
        return;
    it->xy = malloc(2 * n * sizeof *it->xy);
    if (!it->xy) {
        f->n--;
        f->failed = 1;
        return;
    }
    memcpy(it->xy, xy, 2 * n * sizeof *xy);
    it->n = n;
    it->closed = closed;
    it->dashed = dashed;
    it->width = width;
}

void gf_figure_line(gf_figure *f, double x0, double y0, double x1, double y1, double width,
                    const uint8_t col[3]) {
    const double xy[4] = {x0, y0, x1, y1};
    gf_figure_polyline(f, xy, 2, 0, width, 0, col);
}

void gf_figure_rect(gf_figure *f, double x0, double y0, double x1, double y1,
                    const uint8_t col[3]) {
    item *it = add_item(f, ITEM_RECT, col);
    if (!it)
        return;
    it->box[0] = fmin(x0, x1);
    it->box[1] = fmin(y0, y1);
    it->box[2] = fmax(x0, x1);
    it->box[3] = fmax(y0, y1);
}

void gf_figure_text(gf_figure *f, double x, double y, const char *text, double size,
                    gf_anchor anchor, int vertical, const uint8_t col[3]) {
    if (!text || !*text)
        return;
    item *it = add_item(f, ITEM_TEXT, col);
    if (!it)
        return;
    it->text = strdup(text);
    if (!it->text) {
        f->n--;
        f->failed = 1;
        return;
    }
    it->box[0] = x;
    it->box[1] = y;
    it->width = size;
    it->anchor = (int)anchor;
    it->vertical = vertical;
}

void gf_figure_cells(gf_figure *f, double x, double y, double w, double h, int nx, int ny,
                     const uint8_t *rgb) {
    if (nx < 1 || ny < 1)
        return;
    static const uint8_t none[3] = {0, 0, 0};
    item *it = add_item(f, ITEM_CELLS, none);
    if (!it)
        return;
    it->rgb = malloc((size_t)nx * ny * 3);
    if (!it->rgb) {
        f->n--;
        f->failed = 1;
        return;
    }
    memcpy(it->rgb, rgb, (size_t)nx * ny * 3);
    it->box[0] = x;
    it->box[1] = y;
    it->box[2] = x + w;
    it->box[3] = y + h;
    it->nx = nx;
    it->ny = ny;
}

/* --- the PNG back end ---------------------------------------------------------------------- */

/* The canvas with the pixels an item may set: those whose centres are in its clip rectangle. */
typedef struct {
    gf_canvas *c;
    int x0, y0, x1, y1; /* inclusive */
} raster;

static void put(const raster *r, int x, int y, const uint8_t col[3]) {
    if (x >= r->x0 && x <= r->x1 && y >= r->y0 && y <= r->y1)
        gf_canvas_pixel(r->c, x, y, col);
}

/* The first and last pixel whose centres lie in [a, b). */
static void pixel_span(double a, double b, int *first, int *last) {
    *first = (int)ceil(a - 0.5);
    *last = (int)ceil(b - 0.5) - 1;
}

/* A square brush of `size` pixels from offset lo, dashed 4 on, 2 off as in the SVG. */
typedef struct {
    const raster *r;
    const item *it;
    int lo, size;
    long *step; /* along the whole line, for the dashes */
} brush_pen;

static void brush_plot(void *ctx, int x, int y) {
    const brush_pen *b = ctx;
    if (!b->it->dashed || *b->step % 6 < 4)
        for (int i = b->lo; i < b->lo + b->size; ++i)
            for (int j = b->lo; j < b->lo + b->size; ++j)
                put(b->r, x + i, y + j, b->it->col);
    ++*b->step;
}

static void raster_line(const raster *r, const item *it) {
    /* A square brush centred on the line as the SVG's stroke is: 2 pixels wide at y cover
     * y - 1 .. y + 1, the pixel rows floor(y) - 1 and floor(y). */
    int brush = it->width > 1.5 ? (int)lround(it->width) : 1, lo = -brush / 2;
    size_t segments = it->closed ? it->n : it->n - 1;
    if (it->n == 1)
        segments = 1;
    long step = 0; /* along the whole line, for the dashes (4 on, 2 off, as in the SVG) */
    for (size_t s = 0; s < segments; ++s) {
        const double *a = it->xy + 2 * s, *b = it->xy + 2 * ((s + 1) % it->n);
        int x0 = (int)floor(a[0]), y0 = (int)floor(a[1]), x1 = (int)floor(b[0]),
            y1 = (int)floor(b[1]);
        line_walk(x0, y0, x1, y1, brush_plot, &(brush_pen){r, it, lo, brush, &step});
    }
}

/* The characters the 5x7 font draws: one '?' per character beyond ASCII. */
static void ascii_of(const char *s, char *out, size_t size) {
    size_t n = 0;
    for (; *s && n + 1 < size; ++s) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x80 && ch < 0xc0)
            continue; /* a continuation byte of the character already shown */
        out[n++] = ch < 0x80 ? (char)ch : '?';
    }
    out[n] = '\0';
}

static void raster_text(const raster *r, const item *it) {
    char s[512];
    ascii_of(it->text, s, sizeof s);
    int scale = it->width >= 12 ? (int)lround(it->width / 8.0) : 1;
    int len = (int)strlen(s), width = len * 6 * scale - scale;
    int shift = it->anchor == GF_ANCHOR_MIDDLE ? width / 2
                : it->anchor == GF_ANCHOR_END  ? width
                                               : 0;
    int x = (int)lround(it->box[0]), y = (int)lround(it->box[1]);
    /* Drawn on a scratch canvas of the text's size, then copied through the clip. */
    gf_canvas t;
    int tw = it->vertical ? 7 * scale : width, th = it->vertical ? width : 7 * scale;
    if (gf_canvas_init(&t, tw, th))
        return;
    static const uint8_t ink[3] = {0, 0, 0};
    int ox, oy;
    if (it->vertical) {
        draw_text(&t, 0, th - 1, s, scale, ink, 1);
        ox = x - 7 * scale;
        oy = y + shift - th;
    } else {
        draw_text(&t, 0, 0, s, scale, ink, 0);
        ox = x - shift;
        oy = y - 7 * scale;
    }
    for (int j = 0; j < th; ++j)
        for (int i = 0; i < tw; ++i)
            if (t.rgb[((size_t)j * tw + i) * 3] == 0)
                put(r, ox + i, oy + j, it->col);
    gf_canvas_free(&t);
}

static void raster_cells(const raster *r, const item *it) {
    int px0, px1, py0, py1;
    pixel_span(it->box[0], it->box[2], &px0, &px1);
    pixel_span(it->box[1], it->box[3], &py0, &py1);
    double w = it->box[2] - it->box[0], h = it->box[3] - it->box[1];
    for (int py = py0; py <= py1; ++py) {
        int j = (int)floor((py + 0.5 - it->box[1]) / h * it->ny);
        j = j < 0 ? 0 : (j >= it->ny ? it->ny - 1 : j);
        for (int px = px0; px <= px1; ++px) {
            int i = (int)floor((px + 0.5 - it->box[0]) / w * it->nx);
            i = i < 0 ? 0 : (i >= it->nx ? it->nx - 1 : i);
            put(r, px, py, it->rgb + ((size_t)j * it->nx + i) * 3);
        }
    }
}

int gf_figure_write_png(const gf_figure *f, const char *path) {
    if (f->failed)
        return -1;
    gf_canvas c;
    if (gf_canvas_init(&c, f->w, f->h))
        return -1;
    for (size_t k = 0; k < f->n; ++k) {
        const item *it = &f->items[k];
        raster r = {&c, 0, 0, f->w - 1, f->h - 1};
        if (it->clip >= 0) {
            const double *b = f->clips[it->clip];
            int x0, x1, y0, y1;
            pixel_span(b[0], b[2], &x0, &x1);
            pixel_span(b[1], b[3], &y0, &y1);
            r.x0 = x0 > 0 ? x0 : 0;
            r.y0 = y0 > 0 ? y0 : 0;
            r.x1 = x1 < f->w - 1 ? x1 : f->w - 1;
            r.y1 = y1 < f->h - 1 ? y1 : f->h - 1;
        }
        switch (it->kind) {
        case ITEM_LINE:
            raster_line(&r, it);
            break;
        case ITEM_RECT: {
            int x0, x1, y0, y1;
            pixel_span(it->box[0], it->box[2], &x0, &x1);
            pixel_span(it->box[1], it->box[3], &y0, &y1);
            for (int y = y0; y <= y1; ++y)
                for (int x = x0; x <= x1; ++x)
                    put(&r, x, y, it->col);
            break;
        }
        case ITEM_TEXT:
            raster_text(&r, it);
            break;
        case ITEM_CELLS:
            raster_cells(&r, it);
            break;
        }
    }
    int rc = gf_canvas_write(&c, path);
    gf_canvas_free(&c);
    return rc;
}

/* --- the SVG back end ---------------------------------------------------------------------- */

/* A coordinate with at most 3 decimals and no trailing zeros. */
static const char *num(double v, char buf[32]) {
    if (!isfinite(v))
        v = 0.0;
    snprintf(buf, 32, "%.3f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    if (!strcmp(buf, "-0"))
        strcpy(buf, "0");
    return buf;
}

/* The length of the valid UTF-8 sequence at s, 0 if it is not one. */
static int utf8_length(const unsigned char *s) {
    int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (s[0] >= 0xf5)
        n = 0;
    for (int k = 1; k < n; ++k)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Text as XML character data: markup characters escaped, control characters and invalid UTF-8
 * (which would make the file unreadable) replaced. */
static void put_escaped(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '&')
            fputs("&amp;", out);
        else if (*p == '<')
            fputs("&lt;", out);
        else if (*p == '>')
            fputs("&gt;", out);
        else if (*p == '"')
            fputs("&quot;", out);
        else if (*p < 0x20)
            fputc(' ', out);
        else if (*p < 0x80)
            fputc(*p, out);
        else {
            int n = utf8_length(p);
            if (n == 0) {
                fputc('?', out);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, out);
                p += n;
            }
            continue;
        }
        p++;
    }
}

static void put_common(FILE *out, const gf_figure *f, const item *it) {
    if (it->cls >= 0) {
        fputs(" class=\"", out);
        put_escaped(out, f->classes[it->cls]);
        fputc('"', out);
    }
    if (it->clip >= 0)
        fprintf(out, " clip-path=\"url(#clip%d)\"", it->clip);
}

static void svg_line(FILE *out, const gf_figure *f, const item *it) {
    char a[32], b[32];
    fprintf(out, "<%s", it->closed ? "polygon" : "polyline");
    put_common(out, f, it);
    fprintf(out, " fill=\"none\" stroke=\"#%02x%02x%02x\" stroke-width=\"%s\"", it->col[0],
            it->col[1], it->col[2], num(it->width, a));
    if (it->dashed)
        fputs(" stroke-dasharray=\"4 2\"", out);
    fputs(" stroke-linejoin=\"round\" points=\"", out);
    for (size_t k = 0; k < it->n; ++k)
        fprintf(out, "%s%s,%s", k ? " " : "", num(it->xy[2 * k], a), num(it->xy[2 * k + 1], b));
    fputs("\"/>\n", out);
}

static void svg_text(FILE *out, const gf_figure *f, const item *it) {
    static const char *anchor[3] = {"start", "middle", "end"};
    char x[32], y[32], s[32];
    fprintf(out, "<text");
    put_common(out, f, it);
    fprintf(out,
            " x=\"%s\" y=\"%s\" font-family=\"sans-serif\" font-size=\"%s\" "
            "text-anchor=\"%s\" fill=\"#%02x%02x%02x\"",
            num(it->box[0], x), num(it->box[1], y), num(it->width, s), anchor[it->anchor],
            it->col[0], it->col[1], it->col[2]);
    if (it->vertical)
        fprintf(out, " transform=\"rotate(-90 %s %s)\"", x, y);
    fputc('>', out);
    put_escaped(out, it->text);
    fputs("</text>\n", out);
}

/* Cells in their own coordinates (one unit a cell, row 0 at the top): a rectangle per run of
 * equal colours along a row, crisp edges so that neighbours leave no hairline between them. */
static void svg_cells(FILE *out, const gf_figure *f, const item *it) {
    char a[32], b[32], c[32], d[32];
    fputs("<g", out);
    put_common(out, f, it);
    /* The scale to 9 digits: rounded to 3 decimals it would be off by up to half a pixel
     * after a thousand rows. */
    snprintf(c, sizeof c, "%.9g", (it->box[2] - it->box[0]) / it->nx);
    snprintf(d, sizeof d, "%.9g", (it->box[3] - it->box[1]) / it->ny);
    fprintf(out, " transform=\"translate(%s %s) scale(%s %s)\" shape-rendering=\"crispEdges\">\n",
            num(it->box[0], a), num(it->box[1], b), c, d);
    for (int j = 0; j < it->ny; ++j)
        for (int i = 0; i < it->nx;) {
            const uint8_t *col = it->rgb + ((size_t)j * it->nx + i) * 3;
            int run = 1;
            while (i + run < it->nx && !memcmp(col, col + 3 * run, 3))
                run++;
            fprintf(out,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"1\" fill=\"#%02x%02x%02x\"/>\n",
                    i, j, run, col[0], col[1], col[2]);
            i += run;
        }
    fputs("</g>\n", out);
}

int gf_figure_write_svg(const gf_figure *f, const char *path) {
    if (f->failed)
        return -1;
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    char a[32], b[32], c[32], d[32];
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%smm\" "
            "height=\"%smm\" viewBox=\"0 0 %d %d\">\n",
            num(f->w * GF_FIGURE_MM_PER_PX, a), num(f->h * GF_FIGURE_MM_PER_PX, b), f->w, f->h);
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", f->w, f->h);
    if (f->nclips) {
        fputs("<defs>\n", out);
        for (size_t k = 0; k < f->nclips; ++k)
            fprintf(out,
                    "<clipPath id=\"clip%zu\"><rect x=\"%s\" y=\"%s\" width=\"%s\" "
                    "height=\"%s\"/></clipPath>\n",
                    k, num(f->clips[k][0], a), num(f->clips[k][1], b),
                    num(f->clips[k][2] - f->clips[k][0], c),
                    num(f->clips[k][3] - f->clips[k][1], d));
        fputs("</defs>\n", out);
    }
    for (size_t k = 0; k < f->n; ++k) {
        const item *it = &f->items[k];
        switch (it->kind) {
        case ITEM_LINE:
            svg_line(out, f, it);
            break;
        case ITEM_RECT:
            fputs("<rect", out);
            put_common(out, f, it);
            fprintf(out, " x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#%02x%02x%02x\"/>\n",
                    num(it->box[0], a), num(it->box[1], b), num(it->box[2] - it->box[0], c),
                    num(it->box[3] - it->box[1], d), it->col[0], it->col[1], it->col[2]);
            break;
        case ITEM_TEXT:
            svg_text(out, f, it);
            break;
        case ITEM_CELLS:
            svg_cells(out, f, it);
            break;
        }
    }
    fputs("</svg>\n", out);
    int rc = ferror(out) ? -1 : 0;
    if (fclose(out) != 0)
        rc = -1;
    return rc;
}

void gf_figure_svg_path(const char *png, char *out, size_t size) {
    size_t len = strlen(png);
    int has_png = len >= 4 && !strcasecmp(png + len - 4, ".png");
    snprintf(out, size, "%.*s.svg", (int)(has_png ? len - 4 : len), png);
}

int gf_figure_write(const gf_figure *f, const char *png_path) {
    char svg[4096];
    gf_figure_svg_path(png_path, svg, sizeof svg);
    if (gf_figure_write_png(f, png_path))
        return -1;
    return gf_figure_write_svg(f, svg);
}
