/* Where a mesh's triangles come from: STL files and simple surfaces made in place. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"

#include "granflow/trimesh.h"
#include "core/vec.h"

/* A growing triangle soup. */
typedef struct {
    double *c;
    size_t n, cap;
} soup;

static gf_status soup_add(soup *s, const double a[3], const double b[3], const double c[3]) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        GF_TRY(gf_grow((void **)&s->c, 9 * cap, sizeof *s->c));
        s->cap = cap;
    }
    double *o = &s->c[9 * s->n++];
    memcpy(o, a, 3 * sizeof *o);
    memcpy(o + 3, b, 3 * sizeof *o);
    memcpy(o + 6, c, 3 * sizeof *o);
    return GF_OK;
}

static gf_status soup_quad(soup *s, const double a[3], const double b[3], const double c[3],
                           const double d[3]) {
    GF_TRY(soup_add(s, a, b, c));
    return soup_add(s, a, c, d);
}

static gf_status soup_done(soup *s, gf_status st, double **corners, size_t *nt) {
    if (st != GF_OK) {
        free(s->c);
        return st;
    }
    *corners = s->c;
    *nt = s->n;
    return GF_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* STL                                                                                        */

static float le_float(const unsigned char *b) {
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static gf_status read_binary(FILE *f, const char *path, size_t nt, soup *s) {
    unsigned char rec[50];
    for (size_t t = 0; t < nt; ++t) {
        if (fread(rec, 1, sizeof rec, f) != sizeof rec)
            return GF_ERROR(GF_ERR_IO, "%s: binary STL ends in triangle %zu of %zu", path, t + 1,
                            nt);
        double x[3][3];
        for (int k = 0; k < 3; ++k)
            for (int d = 0; d < 3; ++d)
                x[k][d] = (double)le_float(rec + 12 + 12 * k + 4 * d);
        GF_TRY(soup_add(s, x[0], x[1], x[2]));
    }
    return GF_OK;
}

/* The next whitespace-separated word of the file, counting lines; 0 at the end, -1 when the word
 * is longer than size - 1 (no STL word is: a number has at most a few dozen characters). Bytes
 * that are not printable ASCII become '?', so that a message quoting the word (a binary file
 * that begins with "solid") prints no raw bytes. */
static int next_word(FILE *f, char *w, size_t size, long *line) {
    int ch;
    while ((ch = fgetc(f)) != EOF && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'))
        *line += ch == '\n';
    if (ch == EOF)
        return 0;
    size_t n = 0;
    int longer = 0;
    do {
        if (n + 1 < size)
            w[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        else
            longer = 1;
    } while ((ch = fgetc(f)) != EOF && !(ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'));
    if (ch == '\n')
        ungetc(ch, f);
    w[n] = '\0';
    return longer ? -1 : 1;
}

/* next_word's verdict as a status: a word too long is an error naming its start. */
static gf_status word_status(int got, const char *path, long line, const char *w) {
    if (got < 0)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: a word of 256 characters or more ('%.40s...'): "
                        "not an STL file?",
                        path, line, w);
    return GF_OK;
}

static gf_status expect(FILE *f, const char *path, const char *want, long *line) {
    char w[256];
    int got = next_word(f, w, sizeof w, line);
    if (!got)
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: the file ends where '%s' was expected", path, *line,
                        want);
    GF_TRY(word_status(got, path, *line, w));
    if (strcmp(w, want) != 0)
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: '%s' where '%s' was expected", path, *line, w, want);
    return GF_OK;
}

static gf_status read_number(FILE *f, const char *path, long *line, double *x) {
    char w[256], *end;
    int got = next_word(f, w, sizeof w, line);
    if (!got)
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: the file ends inside a facet", path, *line);
    GF_TRY(word_status(got, path, *line, w));
    errno = 0;
    *x = strtod(w, &end);
    if (end == w || *end != '\0' || errno == ERANGE || !isfinite(*x))
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: '%s' is not a finite number", path, *line, w);
    return GF_OK;
}

static gf_status read_ascii(FILE *f, const char *path, soup *s) {
    long line = 1;
    char w[256];
    GF_TRY(expect(f, path, "solid", &line));
    /* The solid's name: the rest of the line. */
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n')
        ;
    line += ch == '\n';
    for (;;) {
        int got = next_word(f, w, sizeof w, &line);
        if (!got)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: the file ends without 'endsolid'", path, line);
        GF_TRY(word_status(got, path, line, w));
        if (strcmp(w, "endsolid") == 0)
            break;
        if (strcmp(w, "facet") != 0)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: '%s' where 'facet' or 'endsolid' was expected",
                            path, line, w);
        GF_TRY(expect(f, path, "normal", &line));
        double x[3][3], ignored;
        for (int d = 0; d < 3; ++d)
            GF_TRY(read_number(f, path, &line, &ignored));
        GF_TRY(expect(f, path, "outer", &line));
        GF_TRY(expect(f, path, "loop", &line));
        for (int k = 0; k < 3; ++k) {
            GF_TRY(expect(f, path, "vertex", &line));
            for (int d = 0; d < 3; ++d)
                GF_TRY(read_number(f, path, &line, &x[k][d]));
        }
        GF_TRY(expect(f, path, "endloop", &line));
        GF_TRY(expect(f, path, "endfacet", &line));
        GF_TRY(soup_add(s, x[0], x[1], x[2]));
    }
    if (s->n == 0)
        return GF_ERROR(GF_ERR_INPUT, "%s: the STL file has no facets", path);
    return GF_OK;
}

gf_status gf_trimesh_read_stl(const char *path, double **corners, size_t *nt) {
    FILE *f = gf_file_open_input(path, "rb", "STL file");
    if (!f)
        return gf_error_status();
    soup s = {0};
    unsigned char head[84];
    size_t got = fread(head, 1, sizeof head, f);
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    gf_status st = GF_OK;
    /* Binary files may begin with "solid" too: the size decides. */
    uint32_t count = got == sizeof head ? (uint32_t)head[80] | (uint32_t)head[81] << 8 |
                                              (uint32_t)head[82] << 16 | (uint32_t)head[83] << 24
                                        : 0;
    if (got == sizeof head && size == 84 + 50 * (long)count && count > 0) {
        if (fseek(f, 84, SEEK_SET) != 0)
            st = GF_ERROR(GF_ERR_IO, "%s: cannot seek", path);
        else
            st = read_binary(f, path, count, &s);
    } else if (got >= 5 && memcmp(head, "solid", 5) == 0) {
        rewind(f);
        st = read_ascii(f, path, &s);
    } else {
        st = GF_ERROR(GF_ERR_INPUT,
                      "%s is not an STL file: not ASCII (no 'solid' at the start) and not binary "
                      "(%ld bytes where a binary STL of %u triangles has %ld)",
                      path, size, count, 84 + 50 * (long)count);
    }
    fclose(f);
    return soup_done(&s, st, corners, nt);
}

/* ---------------------------------------------------------------------------------------- */
/* Simple surfaces                                                                            */

static gf_status unit(const double v[3], const char *what, double u[3]) {
    double len = gf_norm(v);
    if (!(len > 0.0) || !isfinite(len))
        return GF_ERROR(GF_ERR_INPUT, "a mesh's %s must be a non-zero finite vector", what);
    for (int d = 0; d < 3; ++d)
        u[d] = v[d] / len;
    return GF_OK;
}

/* A surface made in place is refused before it is made when it would have more triangles than a
 * mesh may (issue 36: 100000 segments asked for 6.4e9 triangles, 4 GB, before the limit was
 * checked). */
static gf_status check_triangles(double n, const char *what) {
    if (n > (double)GF_TRIMESH_MAX_TRIANGLES)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s would have %.4g triangles, more than the %d a mesh may have (fewer "
                        "segments, or a larger piece length)",
                        what, n, GF_TRIMESH_MAX_TRIANGLES);
    return GF_OK;
}

/* Pieces of about `piece` along a length (at least one). */
static long pieces(double length, double piece) {
    if (!(piece > 0.0))
        return 1;
    double n = ceil(length / piece - 1e-9);
    return n < 1.0 ? 1 : (n > 1e5 ? 100000 : (long)n);
}

gf_status gf_trimesh_rectangle(const double c[3], const double normal[3], const double edge[3],
                               double w, double h, double piece, double **corners, size_t *nt) {
    double n[3], e[3], f[3];
    GF_TRY(unit(normal, "normal", n));
    GF_TRY(unit(edge, "edge", e));
    /* The edge direction within the plane. */
    double en = gf_dot(e, n);
    for (int d = 0; d < 3; ++d)
        e[d] -= en * n[d];
    GF_TRY(unit(e, "edge (within the plane)", e));
    gf_cross(n, e, f);
    if (!(w > 0.0) || !(h > 0.0))
        return GF_ERROR(GF_ERR_INPUT, "a rectangle needs a positive width and height");
    long nu = pieces(w, piece), nv = pieces(h, piece);
    GF_TRY(check_triangles(2.0 * (double)nu * (double)nv, "the rectangle"));
    soup s = {0};
    gf_status st = GF_OK;
    for (long i = 0; i < nu && st == GF_OK; ++i)
        for (long j = 0; j < nv && st == GF_OK; ++j) {
            double p[4][3];
            for (int k = 0; k < 4; ++k) {
                double u = -0.5 * w + w * (double)(i + (k == 1 || k == 2)) / (double)nu;
                double v = -0.5 * h + h * (double)(j + (k >= 2)) / (double)nv;
                for (int d = 0; d < 3; ++d)
                    p[k][d] = c[d] + u * e[d] + v * f[d];
            }
            st = soup_quad(&s, p[0], p[1], p[2], p[3]);
        }
    return soup_done(&s, st, corners, nt);
}

/* The point at angle a on a circle of radius r about c in the plane of (e, f), plus an offset
 * along the axis. */
static void circle_point(const double c[3], const double e[3], const double f[3],
                         const double axis[3], double r, double a, double along, double p[3]) {
    double ca = cos(a), sa = sin(a);
    for (int d = 0; d < 3; ++d)
        p[d] = c[d] + r * (ca * e[d] + sa * f[d]) + along * axis[d];
}

gf_status gf_trimesh_disc(const double c[3], const double normal[3], double r, double hole,
                          int segments, double **corners, size_t *nt) {
    double n[3], e[3], f[3];
    GF_TRY(unit(normal, "normal", n));
    if (!(r > 0.0) || !(hole >= 0.0) || !(hole < r))
        return GF_ERROR(GF_ERR_INPUT, "a disc needs 0 <= hole < radius (radius %g, hole %g)", r,
                        hole);
    if (segments < 3)
        return GF_ERROR(GF_ERR_INPUT, "a disc needs at least 3 segments");
    GF_TRY(check_triangles(2.0 * segments, "the disc"));
    gf_orthonormal(n, e);
    gf_cross(n, e, f);
    soup s = {0};
    gf_status st = GF_OK;
    const double step = 2.0 * M_PI / segments;
    for (int k = 0; k < segments && st == GF_OK; ++k) {
        double a0 = k * step, a1 = (k + 1 == segments) ? 0.0 : (k + 1) * step;
        double p0[3], p1[3], q0[3], q1[3];
        circle_point(c, e, f, n, r, a0, 0.0, p0);
        circle_point(c, e, f, n, r, a1, 0.0, p1);
        if (hole > 0.0) {
            circle_point(c, e, f, n, hole, a0, 0.0, q0);
            circle_point(c, e, f, n, hole, a1, 0.0, q1);
            st = soup_quad(&s, q0, p0, p1, q1);
        } else {
            st = soup_add(&s, c, p0, p1);
        }
    }
    return soup_done(&s, st, corners, nt);
}

gf_status gf_trimesh_frustum(const double c[3], const double axis[3], double length, double r1,
                             double r2, int segments, int caps, double piece, double **corners,
                             size_t *nt) {
    double a[3], e[3], f[3];
    GF_TRY(unit(axis, "axis", a));
    if (!(length > 0.0) || !(r1 >= 0.0) || !(r2 >= 0.0) || !(r1 + r2 > 0.0))
        return GF_ERROR(GF_ERR_INPUT,
                        "a cone or tube needs a positive length and radii >= 0, not both 0");
    if (segments < 3)
        return GF_ERROR(GF_ERR_INPUT, "a cone or tube needs at least 3 segments");
    gf_orthonormal(a, e);
    gf_cross(a, e, f);
    double slant = hypot(length, r2 - r1);
    long nl = pieces(slant, piece);
    GF_TRY(check_triangles(2.0 * segments * ((double)nl + (caps ? 1.0 : 0.0)), "the cone or tube"));
    soup s = {0};
    gf_status st = GF_OK;
    const double step = 2.0 * M_PI / segments;
    for (int k = 0; k < segments && st == GF_OK; ++k) {
        double a0 = k * step, a1 = (k + 1 == segments) ? 0.0 : (k + 1) * step;
        for (long j = 0; j < nl && st == GF_OK; ++j) {
            double s0 = (double)j / (double)nl, s1 = (double)(j + 1) / (double)nl;
            double ra = r1 + (r2 - r1) * s0, rb = r1 + (r2 - r1) * s1;
            double za = -0.5 * length + length * s0, zb = -0.5 * length + length * s1;
            double p00[3], p01[3], p10[3], p11[3];
            circle_point(c, e, f, a, ra, a0, za, p00);
            circle_point(c, e, f, a, ra, a1, za, p01);
            circle_point(c, e, f, a, rb, a0, zb, p10);
            circle_point(c, e, f, a, rb, a1, zb, p11);
            /* A zero radius (a cone's tip) gives triangles, not quads. */
            if (ra == 0.0)
                st = soup_add(&s, p00, p11, p10);
            else if (rb == 0.0)
                st = soup_add(&s, p00, p01, p10);
            else
                st = soup_quad(&s, p00, p01, p11, p10);
        }
        for (int end = 0; end < 2 && caps && st == GF_OK; ++end) {
            double r = end ? r2 : r1, z = end ? 0.5 * length : -0.5 * length;
            if (r == 0.0)
                continue;
            double o[3], p0[3], p1[3];
            circle_point(c, e, f, a, 0.0, 0.0, z, o);
            circle_point(c, e, f, a, r, a0, z, p0);
            circle_point(c, e, f, a, r, a1, z, p1);
            st = soup_add(&s, o, p1, p0);
        }
    }
    return soup_done(&s, st, corners, nt);
}
