#include "geometry/geometry_mesh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

void gf_geometry_mesh_init(gf_geometry_mesh *m) {
    memset(m, 0, sizeof *m);
}

void gf_geometry_mesh_free(gf_geometry_mesh *m) {
    free(m->points);
    free(m->conn);
    free(m->kind);
    free(m->body);
    gf_geometry_mesh_init(m);
}

static void add_point(gf_geometry_mesh *m, const double x[3]) {
    memcpy(&m->points[3 * m->npoints++], x, 3 * sizeof *x);
}

/* A cell of n points starting at point `first` (consecutive). */
static void add_cell(gf_geometry_mesh *m, int code, size_t first, int n, int kind, int body) {
    m->conn[m->nconn++] = code;
    if (code == GF_XDMF_POLYGON)
        m->conn[m->nconn++] = n;
    for (int k = 0; k < n; ++k)
        m->conn[m->nconn++] = (int64_t)(first + (size_t)k);
    m->kind[m->ncells] = kind;
    m->body[m->ncells++] = body;
}

/* The polygon where the plane through p with normal n cuts the box [lo, hi]: the points where
 * it crosses the 12 edges, in order around their centroid. Returns their number (0 if the plane
 * misses the box or only touches an edge or a corner). */
static int clip_plane(const double p[3], const double n[3], const double lo[3], const double hi[3],
                      double out[12][3]) {
    double size = 0.0;
    for (int d = 0; d < 3; ++d)
        size = fmax(size, hi[d] - lo[d]);
    const double tol = 1e-12 * size;
    int count = 0;
    for (int a = 0; a < 3; ++a) {
        /* The 4 edges along axis a: the other two coordinates at lo or hi. */
        int b = (a + 1) % 3, c = (a + 2) % 3;
        for (int e = 0; e < 4; ++e) {
            double x0[3], x1[3];
            x0[b] = x1[b] = e & 1 ? hi[b] : lo[b];
            x0[c] = x1[c] = e & 2 ? hi[c] : lo[c];
            x0[a] = lo[a];
            x1[a] = hi[a];
            double f0 = n[0] * (x0[0] - p[0]) + n[1] * (x0[1] - p[1]) + n[2] * (x0[2] - p[2]);
            double f1 = n[0] * (x1[0] - p[0]) + n[1] * (x1[1] - p[1]) + n[2] * (x1[2] - p[2]);
            if ((f0 > tol && f1 > tol) || (f0 < -tol && f1 < -tol) || fabs(f1 - f0) <= tol)
                continue; /* no crossing, or the edge lies in the plane (its ends are found) */
            double s = fmin(fmax(f0 / (f0 - f1), 0.0), 1.0), x[3];
            for (int d = 0; d < 3; ++d)
                x[d] = x0[d] + s * (x1[d] - x0[d]);
            int seen = 0;
            for (int k = 0; k < count && !seen; ++k)
                seen = fabs(out[k][0] - x[0]) <= tol && fabs(out[k][1] - x[1]) <= tol &&
                       fabs(out[k][2] - x[2]) <= tol;
            if (!seen && count < 12)
                memcpy(out[count++], x, sizeof out[0]);
        }
    }
    if (count < 3)
        return 0;
    double centre[3] = {0.0, 0.0, 0.0}, u[3], v[3], angle[12];
    for (int k = 0; k < count; ++k)
        for (int d = 0; d < 3; ++d)
            centre[d] += out[k][d] / count;
    gf_orthonormal(n, u);
    gf_cross(n, u, v);
    for (int k = 0; k < count; ++k) {
        double r[3] = {out[k][0] - centre[0], out[k][1] - centre[1], out[k][2] - centre[2]};
        angle[k] = atan2(gf_dot(r, v), gf_dot(r, u));
    }
    /* Insertion sort by angle: at most 6 points are distinct. */
    for (int i = 1; i < count; ++i)
        for (int j = i; j > 0 && angle[j - 1] > angle[j]; --j) {
            double t = angle[j], y[3];
            angle[j] = angle[j - 1];
            angle[j - 1] = t;
            memcpy(y, out[j], sizeof y);
            memcpy(out[j], out[j - 1], sizeof y);
            memcpy(out[j - 1], y, sizeof y);
        }
    return count;
}

gf_status gf_geometry_mesh_build(const gf_walls *w, const double lo[3], const double hi[3],
                                 gf_geometry_mesh *m) {
    return gf_geometry_mesh_build_share(w, lo, hi, NULL, m);
}

/* Mesh k's vertices at its present pose (world frame), nv x 3 (malloc'd). */
static double *posed_vertices(const gf_walls *w, size_t k) {
    const gf_trimesh *tm = w->mesh[k];
    double *y = gf_malloc(3 * tm->nv + 1, sizeof *y);
    if (!y)
        return NULL;
    for (size_t v = 0; v < tm->nv; ++v) {
        gf_quat_rotate(w->mesh_q[k], tm->v[v], &y[3 * v]);
        for (int d = 0; d < 3; ++d)
            y[3 * v + d] += w->mesh_x[k][d];
    }
    return y;
}

gf_status gf_geometry_mesh_build_share(const gf_walls *w, const double lo[3], const double hi[3],
                                       const gf_decomp *dec, gf_geometry_mesh *m) {
    gf_geometry_mesh_free(m);
    /* The walls and obstacles are rank 0's. */
    const int fixed = !dec || dec->rank == 0;
    const size_t nwall = fixed ? w->count : 0, nbox = fixed ? w->nbox : 0,
                 ncyl = fixed ? w->ncyl : 0;
    const int N = GF_MESH_CYLINDER_SIDES;
    size_t nv = 0, nt = 0;
    for (size_t k = 0; k < w->nmesh; ++k) {
        nv += w->mesh[k]->nv;
        nt += w->mesh[k]->nt;
    }
    size_t maxp = 12 * nwall + 8 * nbox + 2 * (size_t)N * ncyl + nv;
    size_t maxc = nwall + nbox + ((size_t)N + 2) * ncyl + nt;
    size_t maxconn = 14 * nwall + 9 * nbox + (5 * (size_t)N + 2 * ((size_t)N + 2)) * ncyl + 5 * nt;
    m->points = gf_malloc(3 * maxp + 1, sizeof *m->points);
    m->conn = gf_malloc(maxconn + 1, sizeof *m->conn);
    m->kind = gf_malloc(maxc + 1, sizeof *m->kind);
    m->body = gf_malloc(maxc + 1, sizeof *m->body);
    if (!m->points || !m->conn || !m->kind || !m->body) {
        gf_geometry_mesh_free(m);
        return gf_error_status();
    }
    for (size_t k = 0; k < nwall; ++k) {
        double poly[12][3];
        int n = clip_plane(w->point[k], w->normal[k], lo, hi, poly);
        size_t first = m->npoints;
        for (int i = 0; i < n; ++i)
            add_point(m, poly[i]);
        if (n >= 3)
            add_cell(m, GF_XDMF_POLYGON, first, n, GF_MESH_WALL, (int)k);
    }
    for (size_t b = 0; b < nbox; ++b) {
        const double *l = w->box_lo[b], *h = w->box_hi[b];
        /* VTK's hexahedron order: the bottom face counter-clockwise, then the top. */
        const double corner[8][3] = {{l[0], l[1], l[2]}, {h[0], l[1], l[2]}, {h[0], h[1], l[2]},
                                     {l[0], h[1], l[2]}, {l[0], l[1], h[2]}, {h[0], l[1], h[2]},
                                     {h[0], h[1], h[2]}, {l[0], h[1], h[2]}};
        size_t first = m->npoints;
        for (int i = 0; i < 8; ++i)
            add_point(m, corner[i]);
        add_cell(m, GF_XDMF_HEXAHEDRON, first, 8, GF_MESH_BOX, GF_BOX_BASE + (int)b);
    }
    for (size_t c = 0; c < ncyl; ++c) {
        const double *a = w->cyl_axis[c], *x = w->cyl_centre[c];
        double u[3], v[3], r = w->cyl_radius[c], hl = w->cyl_half_length[c];
        gf_orthonormal(a, u);
        gf_cross(a, u, v);
        size_t first = m->npoints;
        for (int end = -1; end <= 1; end += 2)
            for (int i = 0; i < N; ++i) {
                double phi = 2.0 * M_PI * i / N, y[3];
                for (int d = 0; d < 3; ++d)
                    y[d] = x[d] + end * hl * a[d] + r * (cos(phi) * u[d] + sin(phi) * v[d]);
                add_point(m, y);
            }
        int body = GF_CYL_BASE + (int)c;
        for (int i = 0; i < N; ++i) {
            int j = (i + 1) % N;
            m->conn[m->nconn++] = GF_XDMF_QUADRILATERAL;
            m->conn[m->nconn++] = (int64_t)(first + (size_t)i);
            m->conn[m->nconn++] = (int64_t)(first + (size_t)j);
            m->conn[m->nconn++] = (int64_t)(first + (size_t)(N + j));
            m->conn[m->nconn++] = (int64_t)(first + (size_t)(N + i));
            m->kind[m->ncells] = GF_MESH_CYLINDER;
            m->body[m->ncells++] = body;
        }
        add_cell(m, GF_XDMF_POLYGON, first, N, GF_MESH_CYLINDER, body);
        add_cell(m, GF_XDMF_POLYGON, first + (size_t)N, N, GF_MESH_CYLINDER, body);
    }
    /* Triangle meshes at their present pose, each triangle a polygon of 3 points: the points of
     * the triangles this share holds, in the mesh's order. */
    for (size_t k = 0; k < w->nmesh; ++k) {
        const gf_trimesh *tm = w->mesh[k];
        double *y = posed_vertices(w, k);
        int64_t *point = gf_malloc(tm->nv + 1, sizeof *point);
        unsigned char *mine = gf_malloc(tm->nt + 1, 1);
        if (!y || !point || !mine) {
            free(y);
            free(point);
            free(mine);
            gf_geometry_mesh_free(m);
            return gf_error_status();
        }
        for (size_t v = 0; v < tm->nv; ++v)
            point[v] = -1;
        for (size_t t = 0; t < tm->nt; ++t) {
            double c[3];
            for (int d = 0; d < 3; ++d)
                c[d] = (y[3 * tm->tri[t][0] + d] + y[3 * tm->tri[t][1] + d] +
                        y[3 * tm->tri[t][2] + d]) /
                       3.0;
            mine[t] = !dec || gf_walls_region_owner(dec, c) == dec->rank;
            for (int j = 0; j < 3 && mine[t]; ++j)
                point[tm->tri[t][j]] = 0;
        }
        for (size_t v = 0; v < tm->nv; ++v)
            if (point[v] == 0) {
                point[v] = (int64_t)m->npoints;
                add_point(m, &y[3 * v]);
            }
        for (size_t t = 0; t < tm->nt; ++t) {
            if (!mine[t])
                continue;
            m->conn[m->nconn++] = GF_XDMF_POLYGON;
            m->conn[m->nconn++] = 3;
            for (int c = 0; c < 3; ++c)
                m->conn[m->nconn++] = point[tm->tri[t][c]];
            m->kind[m->ncells] = GF_MESH_TRIANGLES;
            m->body[m->ncells++] = GF_MESH_BASE + (int)k;
        }
        free(y);
        free(point);
        free(mine);
    }
    return GF_OK;
}
