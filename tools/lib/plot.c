#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font5x7.h"
#include "png.h"

static const uint8_t BLACK[3] = {0, 0, 0}, GREY[3] = {200, 200, 200}, LIGHT[3] = {235, 235, 235};

int gf_canvas_init(gf_canvas *c, int w, int h) {
    c->w = w;
    c->h = h;
    c->rgb = malloc((size_t)w * h * 3);
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

void gf_canvas_line(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (int guard = 0; guard < 100000; ++guard) {
        gf_canvas_pixel(c, x0, y0, col);
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

void gf_canvas_rect(gf_canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3]) {
    for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x)
            gf_canvas_pixel(c, x, y, col);
}

/* Text along x, or rotated 90 degrees counter-clockwise reading bottom to top from (x, y).
 * Returns the length drawn. */
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

static const uint8_t palette[6][3] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},
                                      {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};

int gf_plot_lines(const char *path, int w, int h, const char *title, const char *xlabel,
                  const char *ylabel, const gf_series *series, size_t nseries, int log_x, int log_y,
                  const double *hline) {
    gf_canvas c;
    if (gf_canvas_init(&c, w, h))
        return -1;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t s = 0; s < nseries; ++s)
        for (size_t i = 0; i < series[s].n; ++i) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (log_x && x <= 0) || (log_y && y <= 0))
                continue;
            x = log_x ? log10(x) : x;
            y = log_y ? log10(y) : y;
            xmin = fmin(xmin, x);
            xmax = fmax(xmax, x);
            ymin = fmin(ymin, y);
            ymax = fmax(ymax, y);
        }
    if (hline) {
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
    int L = 90, R = w - 20, T = 40, B = h - 60;
    gf_canvas_text(&c, L, 12, title, 2, BLACK);
    /* Grid and ticks. */
    double xs = log_x ? 1 : tick_step(xmax - xmin, 6), ys = log_y ? 1 : tick_step(ymax - ymin, 6);
    char buf[64];
    for (double t = ceil(xmin / xs) * xs; t <= xmax + 1e-9 * xs; t += xs) {
        int px = L + (int)lround((t - xmin) / (xmax - xmin) * (R - L));
        gf_canvas_line(&c, px, T, px, B, LIGHT);
        gf_canvas_line(&c, px, B, px, B + 5, BLACK);
        format_tick(log_x ? pow(10, t) : t, log_x ? pow(10, t) : xs, buf, sizeof buf);
        gf_canvas_text(&c, px - 3 * (int)strlen(buf), B + 9, buf, 1, BLACK);
    }
    for (double t = ceil(ymin / ys) * ys; t <= ymax + 1e-9 * ys; t += ys) {
        int py = B - (int)lround((t - ymin) / (ymax - ymin) * (B - T));
        gf_canvas_line(&c, L, py, R, py, LIGHT);
        gf_canvas_line(&c, L - 5, py, L, py, BLACK);
        format_tick(log_y ? pow(10, t) : t, log_y ? pow(10, t) : ys, buf, sizeof buf);
        gf_canvas_text(&c, L - 8 - 6 * (int)strlen(buf), py - 3, buf, 1, BLACK);
    }
    gf_canvas_line(&c, L, B, R, B, BLACK);
    gf_canvas_line(&c, L, T, L, B, BLACK);
    gf_canvas_text(&c, (L + R) / 2 - 6 * (int)strlen(xlabel) / 2, h - 22, xlabel, 1, BLACK);
    gf_canvas_text_vertical(&c, 12, (T + B) / 2 + 3 * (int)strlen(ylabel), ylabel, 1, BLACK);
    if (hline) {
        double y = log_y ? log10(*hline) : *hline;
        int py = B - (int)lround((y - ymin) / (ymax - ymin) * (B - T));
        for (int x = L; x < R; x += 6)
            gf_canvas_line(&c, x, py, x + 3, py, BLACK);
    }
    for (size_t s = 0; s < nseries; ++s) {
        const uint8_t *col = palette[s % 6];
        int have = 0, lx = 0, ly = 0;
        for (size_t i = 0; i < series[s].n; ++i) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || (log_x && x <= 0) || (log_y && y <= 0)) {
                have = 0;
                continue;
            }
            x = log_x ? log10(x) : x;
            y = log_y ? log10(y) : y;
            int px = L + (int)lround((x - xmin) / (xmax - xmin) * (R - L));
            int py = B - (int)lround((y - ymin) / (ymax - ymin) * (B - T));
            if (have) {
                gf_canvas_line(&c, lx, ly, px, py, col);
                gf_canvas_line(&c, lx, ly + 1, px, py + 1, col);
            }
            if (series[s].n <= 64)
                gf_canvas_rect(&c, px - 2, py - 2, px + 2, py + 2, col);
            have = 1;
            lx = px;
            ly = py;
        }
        if (series[s].label) {
            int ly0 = T + 8 + 14 * (int)s;
            gf_canvas_rect(&c, R - 150, ly0, R - 138, ly0 + 6, col);
            gf_canvas_text(&c, R - 132, ly0, series[s].label, 1, BLACK);
        }
    }
    int rc = gf_canvas_write(&c, path);
    gf_canvas_free(&c);
    return rc;
}

void gf_plot_heatmap_size(int nx, double width, double height, int *mw, int *mh) {
    *mw = nx >= 600 ? nx : nx * ((600 + nx - 1) / nx);
    double aspect = width > 0 && height > 0 ? height / width : 1.0;
    long long want = llround(*mw * aspect);
    *mh = want < 60 ? 60 : (want > 1200 ? 1200 : (int)want);
}

int gf_plot_heatmap(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const char *barlabel, const double *v, int nx, int ny, double x0, double x1,
                    double y0, double y1, double vmin, double vmax) {
    int mw, mh;
    gf_plot_heatmap_size(nx, x1 - x0, y1 - y0, &mw, &mh);
    int L = GF_HEATMAP_LEFT, T = GF_HEATMAP_TOP, w = L + mw + 130, h = T + mh + 60;
    gf_canvas c;
    if (gf_canvas_init(&c, w, h))
        return -1;
    gf_canvas_text(&c, L, 12, title, 2, BLACK);
    if (!(vmax > vmin))
        vmax = vmin + 1;
    /* Pixel by pixel, so cells keep their true aspect whatever their number. */
    for (int py = 0; py < mh; ++py) {
        int j = ny - 1 - (int)((long long)py * ny / mh); /* y up */
        for (int px = 0; px < mw; ++px) {
            int i = (int)((long long)px * nx / mw);
            double val = v[(size_t)j * nx + i];
            uint8_t col[3];
            if (isfinite(val))
                gf_colormap((val - vmin) / (vmax - vmin), col);
            else
                memcpy(col, GREY, 3);
            gf_canvas_pixel(&c, L + px, T + py, col);
        }
    }
    gf_canvas_line(&c, L - 1, T - 1, L + mw, T - 1, BLACK);
    gf_canvas_line(&c, L - 1, T + mh, L + mw, T + mh, BLACK);
    gf_canvas_line(&c, L - 1, T - 1, L - 1, T + mh, BLACK);
    gf_canvas_line(&c, L + mw, T - 1, L + mw, T + mh, BLACK);
    char buf[64];
    double xs = tick_step(x1 - x0, 6), ys = tick_step(y1 - y0, 5);
    for (double t = ceil(x0 / xs) * xs; t <= x1 + 1e-9 * xs; t += xs) {
        int px = L + (int)lround((t - x0) / (x1 - x0) * mw);
        gf_canvas_line(&c, px, T + mh, px, T + mh + 5, BLACK);
        format_tick(t, xs, buf, sizeof buf);
        gf_canvas_text(&c, px - 3 * (int)strlen(buf), T + mh + 9, buf, 1, BLACK);
    }
    for (double t = ceil(y0 / ys) * ys; t <= y1 + 1e-9 * ys; t += ys) {
        int py = T + mh - (int)lround((t - y0) / (y1 - y0) * mh);
        gf_canvas_line(&c, L - 6, py, L - 1, py, BLACK);
        format_tick(t, ys, buf, sizeof buf);
        gf_canvas_text(&c, L - 9 - 6 * (int)strlen(buf), py - 3, buf, 1, BLACK);
    }
    gf_canvas_text(&c, L + mw / 2 - 3 * (int)strlen(xlabel), h - 22, xlabel, 1, BLACK);
    gf_canvas_text_vertical(&c, 12, T + mh / 2 + 3 * (int)strlen(ylabel), ylabel, 1, BLACK);
    /* Colour bar. */
    int bx = L + mw + 20, bw = 18;
    for (int y = 0; y < mh; ++y) {
        uint8_t col[3];
        gf_colormap(1.0 - (double)y / (mh > 1 ? mh - 1 : 1), col);
        gf_canvas_line(&c, bx, T + y, bx + bw, T + y, col);
    }
    gf_canvas_line(&c, bx - 1, T - 1, bx + bw + 1, T - 1, BLACK);
    gf_canvas_line(&c, bx - 1, T + mh, bx + bw + 1, T + mh, BLACK);
    double bs = tick_step(vmax - vmin, 5);
    for (double t = ceil(vmin / bs) * bs; t <= vmax + 1e-9 * bs; t += bs) {
        int py = T + mh - (int)lround((t - vmin) / (vmax - vmin) * mh);
        gf_canvas_line(&c, bx + bw + 1, py, bx + bw + 5, py, BLACK);
        format_tick(t, bs, buf, sizeof buf);
        gf_canvas_text(&c, bx + bw + 8, py - 3, buf, 1, BLACK);
    }
    gf_canvas_text_vertical(&c, w - 14, T + mh / 2 + 3 * (int)strlen(barlabel), barlabel, 1, BLACK);
    int rc = gf_canvas_write(&c, path);
    gf_canvas_free(&c);
    return rc;
}
