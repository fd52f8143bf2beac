#include "granflow/trimesh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

void gf_trimesh_init(gf_trimesh *m) {
    memset(m, 0, sizeof *m);
}

void gf_trimesh_free(gf_trimesh *m) {
    free(m->v);
    free(m->tri);
    free(m->normal);
    free(m->edge);
    free(m->edge_start);
    free(m->edge_tri);
    free(m->vert_start);
    free(m->vert_tri);
    free(m->cell_start);
    free(m->cell_tri);
    free(m->tri_id);
    free(m->edge_id);
    free(m->vert_id);
    gf_trimesh_init(m);
}

/* ---------------------------------------------------------------------------------------- */
/* Building                                                                                   */

typedef struct {
    double x[3];
    size_t corner;
} corner_rec;

static int cmp_corner(const void *a, const void *b) {
    const corner_rec *p = a, *q = b;
    for (int d = 0; d < 3; ++d)
        if (p->x[d] != q->x[d])
            return p->x[d] < q->x[d] ? -1 : 1;
    return p->corner < q->corner ? -1 : p->corner > q->corner;
}

/* Welds the corners: equal ones exactly by sorting, near ones (rounding in the file) through a
 * grid of cells of the weld tolerance, looking at the 27 cells around each corner. */
static gf_status weld(gf_trimesh *m, size_t nt, const double *corners, double tol) {
    size_t nc = 3 * nt;
    corner_rec *r = gf_malloc(nc, sizeof *r);
    int32_t *index = gf_malloc(nc, sizeof *index);
    m->v = gf_malloc(nc, sizeof *m->v);
    if (!r || !index || !m->v) {
        free(r);
        free(index);
        return gf_error_status();
    }
    /* Snapped to the tolerance's grid, corners that differ by rounding sort together (the rare
     * pair split by a grid line is compared across it below). */
    for (size_t c = 0; c < nc; ++c) {
        for (int d = 0; d < 3; ++d)
            r[c].x[d] = tol > 0.0 ? floor(corners[3 * c + d] / tol) : corners[3 * c + d];
        r[c].corner = c;
    }
    qsort(r, nc, sizeof *r, cmp_corner);
    size_t nv = 0;
    for (size_t k = 0; k < nc; ++k) {
        const double *x = &corners[3 * r[k].corner];
        int32_t found = -1;
        /* Vertices made from the last few sorted records: a neighbour in the snapped grid. */
        for (size_t back = 1; back <= k && back <= 64 && found < 0; ++back) {
            const corner_rec *o = &r[k - back];
            if (fabs(o->x[0] - r[k].x[0]) > 1.0)
                break;
            const double *y = &corners[3 * o->corner];
            if (fabs(x[0] - y[0]) <= tol && fabs(x[1] - y[1]) <= tol && fabs(x[2] - y[2]) <= tol)
                found = index[o->corner];
        }
        if (found < 0) {
            found = (int32_t)nv;
            memcpy(m->v[nv++], x, sizeof m->v[0]);
        }
        index[r[k].corner] = found;
    }
    m->nv = nv;
    for (size_t t = 0; t < nt; ++t)
        for (int k = 0; k < 3; ++k)
            m->tri[t][k] = index[3 * t + k];
    free(r);
    free(index);
    return GF_OK;
}

typedef struct {
    int32_t a, b; /* a < b */
    int32_t tri, k;
} edge_rec;

static int cmp_edge(const void *x, const void *y) {
    const edge_rec *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return p->tri < q->tri ? -1 : p->tri > q->tri;
}

static gf_status build_edges(gf_trimesh *m) {
    size_t n = 3 * m->nt;
    edge_rec *e = gf_malloc(n, sizeof *e);
    m->edge = gf_malloc(m->nt, sizeof *m->edge);
    m->edge_tri = gf_malloc(n, sizeof *m->edge_tri);
    m->edge_start = gf_malloc(n + 1, sizeof *m->edge_start);
    if (!e || !m->edge || !m->edge_tri || !m->edge_start) {
        free(e);
        return gf_error_status();
    }
    for (size_t t = 0; t < m->nt; ++t)
        for (int k = 0; k < 3; ++k) {
            int32_t a = m->tri[t][k], b = m->tri[t][(k + 1) % 3];
            e[3 * t + k] = (edge_rec){a < b ? a : b, a < b ? b : a, (int32_t)t, k};
        }
    qsort(e, n, sizeof *e, cmp_edge);
    size_t ne = 0;
    for (size_t k = 0; k < n; ++k) {
        if (k == 0 || e[k].a != e[k - 1].a || e[k].b != e[k - 1].b)
            m->edge_start[ne++] = (int32_t)k;
        m->edge_tri[k] = e[k].tri;
        m->edge[e[k].tri][e[k].k] = (int32_t)(ne - 1);
    }
    m->edge_start[ne] = (int32_t)n;
    m->ne = ne;
    free(e);
    return GF_OK;
}

static gf_status build_vertex_lists(gf_trimesh *m) {
    m->vert_start = gf_calloc(m->nv + 1, sizeof *m->vert_start);
    m->vert_tri = gf_malloc(3 * m->nt + 1, sizeof *m->vert_tri);
    if (!m->vert_start || !m->vert_tri)
        return gf_error_status();
    for (size_t t = 0; t < m->nt; ++t)
        for (int k = 0; k < 3; ++k)
            m->vert_start[m->tri[t][k] + 1]++;
    for (size_t v = 0; v < m->nv; ++v)
        m->vert_start[v + 1] += m->vert_start[v];
    int32_t *fill = gf_malloc(m->nv + 1, sizeof *fill);
    if (!fill)
        return gf_error_status();
    memcpy(fill, m->vert_start, m->nv * sizeof *fill);
    for (size_t t = 0; t < m->nt; ++t)
        for (int k = 0; k < 3; ++k)
            m->vert_tri[fill[m->tri[t][k]]++] = (int32_t)t;
    free(fill);
    return GF_OK;
}

static void tri_box(const gf_trimesh *m, size_t t, double lo[3], double hi[3]) {
    for (int d = 0; d < 3; ++d) {
        lo[d] = hi[d] = m->v[m->tri[t][0]][d];
        for (int k = 1; k < 3; ++k) {
            double x = m->v[m->tri[t][k]][d];
            lo[d] = x < lo[d] ? x : lo[d];
            hi[d] = x > hi[d] ? x : hi[d];
        }
    }
}

/* The grid cell (i, j, k) as an index of cell_start. */
static size_t cell_index(const gf_trimesh *m, int i, int j, int k) {
    return ((size_t)k * (size_t)m->ncell[1] + (size_t)j) * (size_t)m->ncell[0] + (size_t)i;
}

static int cell_of(const gf_trimesh *m, int d, double x) {
    double f = floor((x - m->lo[d]) / m->cell);
    return f < 0.0 ? 0 : (f >= m->ncell[d] ? m->ncell[d] - 1 : (int)f);
}

/* Entries the grid's triangle lists may hold per triangle. Cells are sized by the triangles'
 * mean area, so a sliver far longer than it is wide lies in a row of thousands of cells: 52 000
 * slivers of an STL file overflowed the 32-bit list offsets (a crash), and fewer made every
 * query scan long lists. Cells grow until the lists fit. */
#define GRID_ENTRIES_PER_TRIANGLE 16

/* The entries of the triangle lists of a grid of cell h over the mesh's box. */
static double grid_entries(const gf_trimesh *m, double h) {
    double total = 0.0;
    for (size_t t = 0; t < m->nt; ++t) {
        double lo[3], hi[3], cells = 1.0;
        tri_box(m, t, lo, hi);
        for (int d = 0; d < 3; ++d)
            cells *= floor((hi[d] - m->lo[d]) / h) - floor((lo[d] - m->lo[d]) / h) + 1.0;
        total += cells;
    }
    return total;
}

/* Cells about as large as the triangles (the cube root of the box per triangle would make cells
 * far larger than a surface's triangles), at most a few per triangle. */
static gf_status build_grid(gf_trimesh *m) {
    double ext[3], area = 0.0;
    for (int d = 0; d < 3; ++d)
        ext[d] = m->hi[d] - m->lo[d];
    for (size_t t = 0; t < m->nt; ++t) {
        double a[3], b[3], n[3];
        for (int d = 0; d < 3; ++d) {
            a[d] = m->v[m->tri[t][1]][d] - m->v[m->tri[t][0]][d];
            b[d] = m->v[m->tri[t][2]][d] - m->v[m->tri[t][0]][d];
        }
        gf_cross(a, b, n);
        area += 0.5 * gf_norm(n);
    }
    double h = sqrt(2.0 * area / (double)m->nt);
    for (;;) {
        double cells = 1.0;
        for (int d = 0; d < 3; ++d)
            cells *= fmax(1.0, ceil(ext[d] / h));
        if (cells <= 8.0 * (double)m->nt + 64.0)
            break;
        h *= 1.25;
    }
    while (grid_entries(m, h) > GRID_ENTRIES_PER_TRIANGLE * (double)m->nt + 1024.0)
        h *= 1.25;
    m->cell = h;
    size_t ncells = 1;
    for (int d = 0; d < 3; ++d) {
        m->ncell[d] = (int)fmax(1.0, ceil(ext[d] / h));
        ncells *= (size_t)m->ncell[d];
    }
    m->cell_start = gf_calloc(ncells + 1, sizeof *m->cell_start);
    if (!m->cell_start)
        return gf_error_status();
    /* Two passes: count, then fill. */
    for (int pass = 0; pass < 2; ++pass) {
        int32_t *fill = NULL;
        if (pass == 1) {
            for (size_t c = 0; c < ncells; ++c)
                m->cell_start[c + 1] += m->cell_start[c];
            m->cell_tri = gf_malloc((size_t)m->cell_start[ncells] + 1, sizeof *m->cell_tri);
            fill = gf_malloc(ncells + 1, sizeof *fill);
            if (!m->cell_tri || !fill) {
                free(fill);
                return gf_error_status();
            }
            memcpy(fill, m->cell_start, ncells * sizeof *fill);
        }
        for (size_t t = 0; t < m->nt; ++t) {
            double lo[3], hi[3];
            tri_box(m, t, lo, hi);
            int a[3], b[3];
            for (int d = 0; d < 3; ++d) {
                a[d] = cell_of(m, d, lo[d]);
                b[d] = cell_of(m, d, hi[d]);
            }
            for (int i = a[0]; i <= b[0]; ++i)
                for (int j = a[1]; j <= b[1]; ++j)
                    for (int k = a[2]; k <= b[2]; ++k) {
                        size_t c = cell_index(m, i, j, k);
                        if (pass == 0)
                            m->cell_start[c + 1]++;
                        else
                            m->cell_tri[fill[c]++] = (int32_t)t;
                    }
        }
        free(fill);
    }
    return GF_OK;
}

gf_status gf_trimesh_build(gf_trimesh *m, size_t nt, const double *corners) {
    gf_trimesh_free(m);
    if (nt == 0)
        return GF_ERROR(GF_ERR_INPUT, "a mesh needs at least one triangle");
    /* Feature keys (about 3.5 per triangle) times a clump's members must fit an int32. */
    if (nt > GF_TRIMESH_MAX_TRIANGLES)
        return GF_ERROR(GF_ERR_INPUT, "a mesh may have at most %d triangles (this one: %zu)",
                        GF_TRIMESH_MAX_TRIANGLES, nt);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t t = 0; t < nt; ++t) {
        const double *c = &corners[9 * t];
        double a[3], b[3], n[3];
        for (int d = 0; d < 3; ++d) {
            if (!isfinite(c[d]) || !isfinite(c[3 + d]) || !isfinite(c[6 + d]))
                return GF_ERROR(GF_ERR_INPUT, "mesh triangle %zu has a non-finite corner", t + 1);
            a[d] = c[3 + d] - c[d];
            b[d] = c[6 + d] - c[d];
            for (int k = 0; k < 3; ++k) {
                lo[d] = fmin(lo[d], c[3 * k + d]);
                hi[d] = fmax(hi[d], c[3 * k + d]);
            }
        }
        gf_cross(a, b, n);
        /* Zero area to rounding: its normal is undefined. */
        if (!(gf_norm(n) > 1e-12 * (gf_dot(a, a) + gf_dot(b, b))))
            return GF_ERROR(GF_ERR_INPUT,
                            "mesh triangle %zu is degenerate (zero area): corners (%g, %g, %g), "
                            "(%g, %g, %g), (%g, %g, %g)",
                            t + 1, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]);
    }
    m->nt = nt;
    memcpy(m->lo, lo, sizeof lo);
    memcpy(m->hi, hi, sizeof hi);
    double diag[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    m->size = gf_norm(diag);
    m->tri = gf_malloc(nt, sizeof *m->tri);
    m->normal = gf_malloc(nt, sizeof *m->normal);
    gf_status st = m->tri && m->normal ? GF_OK : gf_error_status();
    if (st == GF_OK)
        st = weld(m, nt, corners, GF_TRIMESH_WELD * m->size);
    for (size_t t = 0; st == GF_OK && t < nt; ++t) {
        const double *p0 = m->v[m->tri[t][0]], *p1 = m->v[m->tri[t][1]], *p2 = m->v[m->tri[t][2]];
        double a[3], b[3], n[3];
        for (int d = 0; d < 3; ++d) {
            a[d] = p1[d] - p0[d];
            b[d] = p2[d] - p0[d];
        }
        gf_cross(a, b, n);
        double len = gf_norm(n);
        if (!(len > 0.0) || m->tri[t][0] == m->tri[t][1] || m->tri[t][1] == m->tri[t][2] ||
            m->tri[t][0] == m->tri[t][2])
            st = GF_ERROR(GF_ERR_INPUT,
                          "mesh triangle %zu collapses when corners closer than %g m are merged",
                          t + 1, GF_TRIMESH_WELD * m->size);
        for (int d = 0; d < 3; ++d)
            m->normal[t][d] = n[d] / len;
    }
    if (st == GF_OK)
        st = build_edges(m);
    if (st == GF_OK)
        st = build_vertex_lists(m);
    if (st == GF_OK)
        st = build_grid(m);
    m->key_nt = m->nt;
    m->key_ne = m->ne;
    if (st != GF_OK)
        gf_trimesh_free(m);
    return st;
}

/* Numbers the flagged items of n in their order: map[i] the new index or -1; returns the count
 * and, in *ids (malloc'd), each new item's old index as the whole mesh numbers it (through
 * `old_ids` when the mesh is itself a part). */
static gf_status renumber(size_t n, const unsigned char *used, const int32_t *old_ids, int32_t *map,
                          int32_t **ids, size_t *count) {
    size_t c = 0;
    for (size_t i = 0; i < n; ++i)
        c += used[i] != 0;
    *ids = gf_malloc(c + 1, sizeof **ids);
    if (!*ids)
        return gf_error_status();
    c = 0;
    for (size_t i = 0; i < n; ++i) {
        map[i] = used[i] ? (int32_t)c : -1;
        if (used[i])
            (*ids)[c++] = old_ids ? old_ids[i] : (int32_t)i;
    }
    *count = c;
    return GF_OK;
}

/* A CSR list (start, items: triangles of the whole mesh) restricted to the kept items of the
 * kept rows, renumbered by row_map and tri_map, into *start / *items (malloc'd). */
static gf_status restrict_csr(size_t nrows, const int32_t *start, const int32_t *items,
                              const int32_t *row_map, size_t nrows_new, const int32_t *tri_map,
                              int32_t **new_start, int32_t **new_items) {
    *new_start = gf_calloc(nrows_new + 1, sizeof **new_start);
    size_t total = 0;
    for (size_t r = 0; r < nrows; ++r)
        if (row_map[r] >= 0)
            for (int32_t s = start[r]; s < start[r + 1]; ++s)
                total += tri_map[items[s]] >= 0;
    *new_items = gf_malloc(total + 1, sizeof **new_items);
    if (!*new_start || !*new_items)
        return gf_error_status();
    size_t at = 0;
    for (size_t r = 0; r < nrows; ++r) {
        if (row_map[r] < 0)
            continue;
        (*new_start)[row_map[r]] = (int32_t)at;
        for (int32_t s = start[r]; s < start[r + 1]; ++s)
            if (tri_map[items[s]] >= 0)
                (*new_items)[at++] = tri_map[items[s]];
    }
    (*new_start)[nrows_new] = (int32_t)at;
    return GF_OK;
}

gf_status gf_trimesh_subset(const gf_trimesh *whole, const unsigned char *keep, gf_trimesh *part) {
    gf_trimesh_free(part);
    size_t nt = whole->nt, nv = whole->nv, ne = whole->ne;
    int32_t *tmap = gf_malloc(nt + 1, sizeof *tmap), *vmap = gf_malloc(nv + 1, sizeof *vmap),
            *emap = gf_malloc(ne + 1, sizeof *emap);
    unsigned char *vused = gf_calloc(nv + 1, 1), *eused = gf_calloc(ne + 1, 1);
    gf_status st = tmap && vmap && emap && vused && eused ? GF_OK : gf_error_status();
    for (size_t t = 0; st == GF_OK && t < nt; ++t)
        if (keep[t])
            for (int k = 0; k < 3; ++k) {
                vused[whole->tri[t][k]] = 1;
                eused[whole->edge[t][k]] = 1;
            }
    if (st == GF_OK)
        st = renumber(nt, keep, whole->tri_id, tmap, &part->tri_id, &part->nt);
    if (st == GF_OK)
        st = renumber(nv, vused, whole->vert_id, vmap, &part->vert_id, &part->nv);
    if (st == GF_OK)
        st = renumber(ne, eused, whole->edge_id, emap, &part->edge_id, &part->ne);
    if (st == GF_OK) {
        part->v = gf_malloc(part->nv + 1, sizeof *part->v);
        part->tri = gf_malloc(part->nt + 1, sizeof *part->tri);
        part->normal = gf_malloc(part->nt + 1, sizeof *part->normal);
        part->edge = gf_malloc(part->nt + 1, sizeof *part->edge);
        if (!part->v || !part->tri || !part->normal || !part->edge)
            st = gf_error_status();
    }
    if (st == GF_OK) {
        for (int d = 0; d < 3; ++d) {
            part->lo[d] = INFINITY;
            part->hi[d] = -INFINITY;
        }
        for (size_t v = 0; v < nv; ++v)
            if (vmap[v] >= 0) {
                memcpy(part->v[vmap[v]], whole->v[v], sizeof part->v[0]);
                for (int d = 0; d < 3; ++d) {
                    part->lo[d] = fmin(part->lo[d], whole->v[v][d]);
                    part->hi[d] = fmax(part->hi[d], whole->v[v][d]);
                }
            }
        for (size_t t = 0; t < nt; ++t) {
            if (tmap[t] < 0)
                continue;
            for (int k = 0; k < 3; ++k) {
                part->tri[tmap[t]][k] = vmap[whole->tri[t][k]];
                part->edge[tmap[t]][k] = emap[whole->edge[t][k]];
            }
            memcpy(part->normal[tmap[t]], whole->normal[t], sizeof part->normal[0]);
        }
        /* The whole mesh's rounding scale: a part finds equal points equal alike. */
        part->size = whole->size;
        part->key_nt = whole->key_nt;
        part->key_ne = whole->key_ne;
        st = restrict_csr(ne, whole->edge_start, whole->edge_tri, emap, part->ne, tmap,
                          &part->edge_start, &part->edge_tri);
    }
    if (st == GF_OK)
        st = restrict_csr(nv, whole->vert_start, whole->vert_tri, vmap, part->nv, tmap,
                          &part->vert_start, &part->vert_tri);
    if (st == GF_OK && part->nt > 0)
        st = build_grid(part);
    if (st == GF_OK && part->nt == 0) {
        /* Nothing kept: an empty grid that no query enters (lo > hi). */
        part->cell = 1.0;
        part->ncell[0] = part->ncell[1] = part->ncell[2] = 1;
        part->cell_start = gf_calloc(2, sizeof *part->cell_start);
        part->cell_tri = gf_malloc(1, sizeof *part->cell_tri);
        if (!part->cell_start || !part->cell_tri)
            st = gf_error_status();
    }
    free(tmap);
    free(vmap);
    free(emap);
    free(vused);
    free(eused);
    if (st != GF_OK)
        gf_trimesh_free(part);
    return st;
}

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                    */

/* Ericson, Real-Time Collision Detection, 5.1.5, with the Voronoi region reported. */
int gf_trimesh_closest(const gf_trimesh *m, size_t t, const double x[3], double q[3]) {
    const double *a = m->v[m->tri[t][0]], *b = m->v[m->tri[t][1]], *c = m->v[m->tri[t][2]];
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int d = 0; d < 3; ++d) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = x[d] - a[d];
        bp[d] = x[d] - b[d];
        cp[d] = x[d] - c[d];
    }
    double d1 = gf_dot(ab, ap), d2 = gf_dot(ac, ap);
    if (d1 <= 0.0 && d2 <= 0.0) {
        memcpy(q, a, 3 * sizeof *q);
        return 4;
    }
    double d3 = gf_dot(ab, bp), d4 = gf_dot(ac, bp);
    if (d3 >= 0.0 && d4 <= d3) {
        memcpy(q, b, 3 * sizeof *q);
        return 5;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
        double s = d1 / (d1 - d3);
        for (int d = 0; d < 3; ++d)
            q[d] = a[d] + s * ab[d];
        return 1;
    }
    double d5 = gf_dot(ab, cp), d6 = gf_dot(ac, cp);
    if (d6 >= 0.0 && d5 <= d6) {
        memcpy(q, c, 3 * sizeof *q);
        return 6;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
        double s = d2 / (d2 - d6);
        for (int d = 0; d < 3; ++d)
            q[d] = a[d] + s * ac[d];
        return 3; /* edge c -> a */
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
        double s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int d = 0; d < 3; ++d)
            q[d] = b[d] + s * (c[d] - b[d]);
        return 2;
    }
    double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
    for (int d = 0; d < 3; ++d)
        q[d] = a[d] + v * ab[d] + w * ac[d];
    return 0;
}

/* The feature key and the triangles sharing it, for a closest point of triangle t in region f. */
static int32_t feature(const gf_trimesh *m, size_t t, int f, const int32_t **share, int *nshare) {
    if (f == 0) {
        *nshare = 0;
        return m->tri_id ? m->tri_id[t] : (int32_t)t;
    }
    if (f <= 3) {
        int32_t e = m->edge[t][f - 1];
        *share = &m->edge_tri[m->edge_start[e]];
        *nshare = m->edge_start[e + 1] - m->edge_start[e];
        return (int32_t)m->key_nt + (m->edge_id ? m->edge_id[e] : e);
    }
    int32_t v = m->tri[t][f - 4];
    *share = &m->vert_tri[m->vert_start[v]];
    *nshare = m->vert_start[v + 1] - m->vert_start[v];
    return (int32_t)(m->key_nt + m->key_ne) + (m->vert_id ? m->vert_id[v] : v);
}

gf_status gf_trimesh_candidates(const gf_trimesh *m, const double x[3], double reach, int32_t **buf,
                                size_t *cap, size_t *n) {
    *n = 0;
    int a[3], b[3];
    for (int d = 0; d < 3; ++d) {
        if (x[d] + reach < m->lo[d] || x[d] - reach > m->hi[d])
            return GF_OK;
        a[d] = cell_of(m, d, x[d] - reach);
        b[d] = cell_of(m, d, x[d] + reach);
    }
    for (int i = a[0]; i <= b[0]; ++i)
        for (int j = a[1]; j <= b[1]; ++j)
            for (int k = a[2]; k <= b[2]; ++k) {
                size_t c = cell_index(m, i, j, k);
                for (int32_t s = m->cell_start[c]; s < m->cell_start[c + 1]; ++s) {
                    int32_t t = m->cell_tri[s], seen = 0;
                    for (size_t u = 0; u < *n && !seen; ++u)
                        seen = (*buf)[u] == t;
                    if (seen)
                        continue;
                    if (*n == *cap) {
                        size_t nc = *cap ? 2 * *cap : 64;
                        GF_TRY(gf_grow((void **)buf, nc, sizeof **buf));
                        *cap = nc;
                    }
                    (*buf)[(*n)++] = t;
                }
            }
    return GF_OK;
}

gf_status gf_trimesh_query(const gf_trimesh *m, const double x[3], double reach,
                           gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX], int *count, int32_t **buf,
                           size_t *cap) {
    *count = 0;
    size_t n = 0;
    GF_TRY(gf_trimesh_candidates(m, x, reach, buf, cap, &n));
    /* Points equal to rounding of the mesh's size count as the same point. */
    const double same = 1e-12 * (m->size + fabs(x[0]) + fabs(x[1]) + fabs(x[2]));
    for (size_t u = 0; u < n; ++u) {
        size_t t = (size_t)(*buf)[u];
        double q[3];
        int f = gf_trimesh_closest(m, t, x, q);
        double d[3] = {x[0] - q[0], x[1] - q[1], x[2] - q[2]};
        double dist = gf_norm(d);
        if (!(dist < reach))
            continue;
        const int32_t *share = NULL;
        int nshare = 0;
        int32_t key = feature(m, t, f, &share, &nshare);
        int keep = 1;
        for (int s = 0; s < *count && keep; ++s)
            keep = hits[s].key != key;
        /* A feature's point is a contact only if no triangle holding it has a closer point. */
        for (int s = 0; s < nshare && keep; ++s) {
            size_t o = (size_t)share[s];
            if (o == t)
                continue;
            double qo[3];
            gf_trimesh_closest(m, o, x, qo);
            double e[3] = {qo[0] - q[0], qo[1] - q[1], qo[2] - q[2]};
            keep = gf_norm(e) <= same;
        }
        if (!keep)
            continue;
        gf_trimesh_hit h = {{q[0], q[1], q[2]}, {0, 0, 0}, dist, key, (int32_t)t};
        if (dist > same) {
            for (int k = 0; k < 3; ++k)
                h.n[k] = d[k] / dist;
        } else {
            /* On the surface: the face normal (an edge or vertex: the first face's). */
            memcpy(h.n, m->normal[t], sizeof h.n);
        }
        /* The nearest GF_TRIMESH_HITS_MAX, in order of distance. */
        int at = *count < GF_TRIMESH_HITS_MAX ? (*count)++ : GF_TRIMESH_HITS_MAX;
        if (at == GF_TRIMESH_HITS_MAX) {
            if (!(dist < hits[GF_TRIMESH_HITS_MAX - 1].dist))
                continue;
            at = GF_TRIMESH_HITS_MAX - 1;
        }
        while (at > 0 && hits[at - 1].dist > dist) {
            hits[at] = hits[at - 1];
            --at;
        }
        hits[at] = h;
    }
    return GF_OK;
}

int32_t gf_trimesh_extreme(const gf_trimesh *m, size_t t, const double u[3], double slope,
                           int *surface) {
    const int32_t *c = m->tri[t];
    double h[3];
    for (int k = 0; k < 3; ++k)
        h[k] = gf_dot(m->v[c[k]], u);
    int top = h[0] >= h[1] ? (h[0] >= h[2] ? 0 : 2) : (h[1] >= h[2] ? 1 : 2);
    const double *vt = m->v[c[top]];
    /* Corner k is as far as the top one when it lies below it by at most `slope` per length. */
    int level[3], nlevel = 0;
    for (int k = 0; k < 3; ++k) {
        double e[3] = {m->v[c[k]][0] - vt[0], m->v[c[k]][1] - vt[1], m->v[c[k]][2] - vt[2]};
        level[k] = h[top] - h[k] <= slope * gf_norm(e);
        nlevel += level[k];
    }
    /* The region as gf_trimesh_closest numbers it: 0 face, 1 + k edge from corner k, 4 + k. */
    int f = nlevel == 3 ? 0 : nlevel == 1 ? 4 + top : (level[0] && level[1] ? 1 : level[1] ? 2 : 3);
    const int32_t *share = NULL;
    int nshare = 0;
    int32_t key = feature(m, t, f, &share, &nshare);
    *surface = 1;
    for (int s = 0; s < nshare; ++s) {
        size_t o = (size_t)share[s];
        if (o == t)
            continue;
        for (int k = 0; k < 3; ++k) {
            const double *w = m->v[m->tri[o][k]];
            double e[3] = {w[0] - vt[0], w[1] - vt[1], w[2] - vt[2]};
            if (gf_dot(w, u) - h[top] > slope * gf_norm(e))
                *surface = 0;
        }
    }
    return key;
}

double gf_trimesh_depth(const gf_trimesh *m, const double x[3], double r) {
    for (int d = 0; d < 3; ++d)
        if (x[d] + r < m->lo[d] || x[d] - r > m->hi[d])
            return 0.0;
    int a[3], b[3];
    for (int d = 0; d < 3; ++d) {
        a[d] = cell_of(m, d, x[d] - r);
        b[d] = cell_of(m, d, x[d] + r);
    }
    double nearest = r;
    for (int i = a[0]; i <= b[0]; ++i)
        for (int j = a[1]; j <= b[1]; ++j)
            for (int k = a[2]; k <= b[2]; ++k) {
                size_t c = cell_index(m, i, j, k);
                for (int32_t s = m->cell_start[c]; s < m->cell_start[c + 1]; ++s) {
                    double q[3];
                    gf_trimesh_closest(m, (size_t)m->cell_tri[s], x, q);
                    double d[3] = {x[0] - q[0], x[1] - q[1], x[2] - q[2]};
                    nearest = fmin(nearest, gf_norm(d));
                }
            }
    return r - nearest;
}

int gf_trimesh_overlap(const gf_trimesh *m, const double x[3], double r) {
    double tol = gf_touch_tolerance(fabs(x[0]) + fabs(x[1]) + fabs(x[2]) + m->size + r);
    return gf_trimesh_depth(m, x, r) > tol;
}
