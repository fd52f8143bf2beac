#include "outline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int add_outline(gf_outlines *o, const double *xy, size_t n, int closed) {
    size_t total = o->n ? o->start[o->n] : 0;
    size_t *start = realloc(o->start, (o->n + 2) * sizeof *start);
    if (start)
        o->start = start;
    int *cl = realloc(o->closed, (o->n + 1) * sizeof *cl);
    if (cl)
        o->closed = cl;
    double *x = realloc(o->x, (total + n) * sizeof *x);
    if (x)
        o->x = x;
    double *y = realloc(o->y, (total + n) * sizeof *y);
    if (y)
        o->y = y;
    if (!start || !cl || !x || !y)
        return -1;
    for (size_t k = 0; k < n; ++k) {
        o->x[total + k] = xy[2 * k];
        o->y[total + k] = xy[2 * k + 1];
    }
    o->start[0] = 0;
    o->start[o->n + 1] = total + n;
    o->closed[o->n++] = closed;
    return 0;
}

static int by_x_then_y(const void *a, const void *b) {
    const double *p = a, *q = b;
    return p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : (p[1] < q[1] ? -1 : p[1] > q[1] ? 1 : 0);
}

static double turn(const double *o, const double *a, const double *b) {
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* The convex hull of n points (x, y pairs, sorted in place), counter-clockwise, into out (room
 * for n + 1 points); returns its size. Andrew's monotone chain. */
static size_t convex_hull(double *p, size_t n, double *out) {
    qsort(p, n, 2 * sizeof *p, by_x_then_y);
    if (n < 3) {
        memcpy(out, p, 2 * n * sizeof *p);
        return n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        while (k >= 2 && turn(out + 2 * (k - 2), out + 2 * (k - 1), p + 2 * i) <= 0)
            k--;
        memcpy(out + 2 * k++, p + 2 * i, 2 * sizeof *p);
    }
    for (size_t i = n - 1, low = k + 1; i-- > 0;) {
        while (k >= low && turn(out + 2 * (k - 2), out + 2 * (k - 1), p + 2 * i) <= 0)
            k--;
        memcpy(out + 2 * k++, p + 2 * i, 2 * sizeof *p);
    }
    return k - 1; /* the last point is the first again */
}

/* A wall cell's segment in the plane, or 0 if the wall is not parallel to the third axis or lies
 * along the edge of the box's section. */
static int wall_segment(const gf_snapshot_geometry *g, size_t first, size_t n, int ax, int ay,
                        const double lo[2], const double hi[2], double seg[4]) {
    int az = 3 - ax - ay;
    double normal[3] = {0, 0, 0};
    seg[0] = seg[1] = seg[2] = seg[3] = 0.0;
    for (size_t k = 0; k < n; ++k) { /* Newell's method: exact for a planar polygon */
        const double *a = g->points + 3 * g->conn[first + k];
        const double *b = g->points + 3 * g->conn[first + (k + 1) % n];
        for (int d = 0; d < 3; ++d) {
            int e = (d + 1) % 3, f = (d + 2) % 3;
            normal[d] += (a[e] - b[e]) * (a[f] + b[f]);
        }
    }
    double len = sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]);
    if (!(len > 0) || fabs(normal[az]) > 1e-6 * len)
        return 0;
    /* Along the wall in the plane: perpendicular to the normal's in-plane part. */
    double dir[2] = {-normal[ay], normal[ax]}, tmin = INFINITY, tmax = -INFINITY;
    for (size_t k = 0; k < n; ++k) {
        const double *p = g->points + 3 * g->conn[first + k];
        double t = p[ax] * dir[0] + p[ay] * dir[1];
        if (t < tmin) {
            tmin = t;
            seg[0] = p[ax];
            seg[1] = p[ay];
        }
        if (t > tmax) {
            tmax = t;
            seg[2] = p[ax];
            seg[3] = p[ay];
        }
    }
    double tol = 1e-9 * fmax(hi[0] - lo[0], hi[1] - lo[1]);
    for (int d = 0; d < 2; ++d) {
        double a = seg[d], b = seg[2 + d];
        if ((fabs(a - lo[d]) <= tol && fabs(b - lo[d]) <= tol) ||
            (fabs(a - hi[d]) <= tol && fabs(b - hi[d]) <= tol))
            return 0;
    }
    return 1;
}

int gf_outlines_project(const gf_snapshot_geometry *g, int ax, int ay, const double lo[2],
                        const double hi[2], gf_outlines *o) {
    memset(o, 0, sizeof *o);
    double *pts = malloc((2 * g->nconn + 2) * sizeof *pts);
    double *hull = malloc((2 * g->nconn + 4) * sizeof *hull);
    int32_t *done = calloc(g->ncells + 1, sizeof *done);
    if (!pts || !hull || !done) {
        free(pts);
        free(hull);
        free(done);
        return -1;
    }
    int rc = 0;
    size_t at = 0;
    for (size_t c = 0; c < g->ncells && rc == 0; ++c) {
        int code;
        size_t n, first;
        size_t next = gf_snapshot_geometry_cell(g, at, &code, &n, &first);
        if (!next)
            break;
        if (g->kind[c] == 0) {
            double seg[4];
            if (wall_segment(g, first, n, ax, ay, lo, hi, seg))
                rc = add_outline(o, seg, 2, 0);
        } else if (!done[c]) {
            /* Every point of every cell of this obstacle, projected. */
            size_t np = 0, at2 = at;
            for (size_t c2 = c; c2 < g->ncells; ++c2) {
                size_t n2, first2;
                int code2;
                size_t next2 = gf_snapshot_geometry_cell(g, at2, &code2, &n2, &first2);
                if (!next2)
                    break;
                if (g->kind[c2] != 0 && g->body[c2] == g->body[c]) {
                    done[c2] = 1;
                    for (size_t k = 0; k < n2; ++k) {
                        const double *p = g->points + 3 * g->conn[first2 + k];
                        pts[2 * np] = p[ax];
                        pts[2 * np++ + 1] = p[ay];
                    }
                }
                at2 = next2;
            }
            size_t nh = convex_hull(pts, np, hull);
            if (nh >= 2)
                rc = add_outline(o, hull, nh, nh >= 3);
        }
        at = next;
    }
    free(pts);
    free(hull);
    free(done);
    if (rc)
        gf_outlines_free(o);
    return rc;
}

void gf_outlines_free(gf_outlines *o) {
    free(o->start);
    free(o->closed);
    free(o->x);
    free(o->y);
    memset(o, 0, sizeof *o);
}
