/* Meshes under MPI at 1, 2 and 4 ranks: each rank keeps the triangles near its subdomain (with
 * their one ring), checked by brute force over the whole triangle soup; a turning mesh keeps
 * those whose body of revolution meets the region; the contacts of the particles a rank owns,
 * with their feature keys, are those the whole mesh gives; a snapshot's /geometry holds every
 * triangle once, as the whole mesh on one rank writes it. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry_mesh.h"
#include "io/io.h"
#include "sim/sim.h"
#include "test_util.h"

#define P gf_test_par

static const double LO[3] = {0.0, 0.0, 0.0}, HI[3] = {0.2, 0.2, 0.1};
static const double FLOOR_PIVOT[3] = {0.1, 0.1, 0.03};

/* A wavy floor over the domain: ridges, valleys and flat-ish parts, 800 triangles. */
static void wavy_floor(double **corners, size_t *nt) {
    const double n[3] = {0, 0, 1}, e[3] = {1, 0, 0};
    GF_ASSERT_OK(gf_trimesh_rectangle(FLOOR_PIVOT, n, e, 0.2, 0.2, 0.01, corners, nt));
    for (size_t c = 0; c < 3 * *nt; ++c) {
        double *x = &(*corners)[3 * c];
        x[2] += 0.01 * sin(40.0 * x[0]) * cos(30.0 * x[1]);
    }
}

static void make_sim(gf_sim *sim) {
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    const int dims[3] = {0, 0, 0}, per[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(sim, dims, per, LO, HI));
}

/* Whether the boxes [a0, a1] and [b0, b1] meet (closed). */
static int boxes_meet(const double a0[3], const double a1[3], const double b0[3],
                      const double b1[3]) {
    for (int d = 0; d < 3; ++d)
        if (a1[d] < b0[d] || a0[d] > b1[d])
            return 0;
    return 1;
}

static void tri_box(const double *c, double lo[3], double hi[3]) {
    for (int d = 0; d < 3; ++d) {
        lo[d] = fmin(fmin(c[d], c[3 + d]), c[6 + d]);
        hi[d] = fmax(fmax(c[d], c[3 + d]), c[6 + d]);
    }
}

static int share_corner(const double *a, const double *b) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (a[3 * i] == b[3 * j] && a[3 * i + 1] == b[3 * j + 1] &&
                a[3 * i + 2] == b[3 * j + 2])
                return 1;
    return 0;
}

/* The triangles a rank holds (flags over the soup, from the part's global indices). */
static unsigned char *held_flags(const gf_trimesh *m, size_t nt) {
    unsigned char *held = calloc(nt + 1, 1);
    assert_non_null(held);
    for (size_t t = 0; t < m->nt; ++t) {
        int32_t g = m->tri_id ? m->tri_id[t] : (int32_t)t;
        if (g < 0 || (size_t)g >= nt)
            fail_msg("triangle %zu has the whole mesh's number %d of %zu", t, (int)g, nt);
        else
            held[g] = 1;
    }
    return held;
}

/* Kept must be exactly `near` and the triangles sharing a corner with one of them. */
static void expect_near_and_ring(const double *corners, size_t nt, const unsigned char *near,
                                 const unsigned char *held) {
    for (size_t t = 0; t < nt; ++t) {
        int want = near[t];
        for (size_t u = 0; u < nt && !want; ++u)
            want = near[u] && share_corner(&corners[9 * t], &corners[9 * u]);
        if (want != held[t])
            fail_msg("rank %d: triangle %zu is %s but %s", P.rank, t,
                     near[t] ? "near" : (want ? "in the ring" : "far"),
                     held[t] ? "held" : "not held");
    }
}

static void test_static_floor_keeps_near_triangles(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    double *corners;
    size_t nt;
    wavy_floor(&corners, &nt);
    const double zero[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_walls_add_mesh(&sim.walls, nt, corners, FLOOR_PIVOT, zero, zero, 0));
    const double halo = 0.015;
    double lo[3], hi[3];
    gf_walls_region(&sim.xch.decomp, halo, lo, hi);
    GF_ASSERT_OK(gf_walls_localize_meshes(&sim.walls, lo, hi));
    const gf_trimesh *m = sim.walls.mesh[0];
    assert_int_equal(m->key_nt, nt);
    if (P.size > 1 && !(m->nt < nt))
        fail_msg("rank %d holds %zu of %zu triangles on %d ranks", P.rank, m->nt, nt, P.size);
    /* Brute force: the triangles whose box meets the subdomain grown by the halo (unbounded on
     * the domain's faces). */
    const gf_decomp *d = &sim.xch.decomp;
    double glo[3], ghi[3];
    for (int a = 0; a < 3; ++a) {
        glo[a] = d->sub_lo[a] <= LO[a] ? -INFINITY : d->sub_lo[a] - halo;
        ghi[a] = d->sub_hi[a] >= HI[a] ? INFINITY : d->sub_hi[a] + halo;
    }
    unsigned char *near = calloc(nt + 1, 1), *held = held_flags(m, nt);
    for (size_t t = 0; t < nt; ++t) {
        double tl[3], th[3];
        tri_box(&corners[9 * t], tl, th);
        near[t] = (unsigned char)boxes_meet(tl, th, glo, ghi);
    }
    expect_near_and_ring(corners, nt, near, held);
    free(near);
    free(held);
    free(corners);
    gf_sim_free(&sim);
}

/* 2D distance of the origin from the triangle (u, v) (a point inside: 0). */
static double origin_triangle_2d(const double u[3], const double v[3]) {
    double s[3], best = INFINITY;
    for (int k = 0; k < 3; ++k) {
        int j = (k + 1) % 3;
        s[k] = u[k] * v[j] - u[j] * v[k];
        double du = u[j] - u[k], dv = v[j] - v[k];
        double f = -(u[k] * du + v[k] * dv) / (du * du + dv * dv);
        f = fmin(fmax(f, 0.0), 1.0);
        best = fmin(best, hypot(u[k] + f * du, v[k] + f * dv));
    }
    if ((s[0] > 0 && s[1] > 0 && s[2] > 0) || (s[0] < 0 && s[1] < 0 && s[2] < 0))
        return 0.0;
    return best;
}

static void test_turning_mesh_keeps_swept_triangles(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    /* A tilted plate off the axis (z through the pivot), turning: its triangles sweep annuli
     * of many radii and heights. */
    const double c[3] = {0.13, 0.1, 0.05}, n[3] = {1, 0.3, 0.8}, e[3] = {0, 1, 0};
    const double pivot[3] = {0.1, 0.1, 0.05}, zero[3] = {0, 0, 0}, omega[3] = {0, 0, 5};
    double *corners;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 0.08, 0.06, 0.006, &corners, &nt));
    GF_ASSERT_OK(gf_walls_add_mesh(&sim.walls, nt, corners, pivot, zero, omega, 0));
    double axis[3];
    assert_int_equal(gf_walls_mesh_motion(&sim.walls, 0, axis), GF_MESH_FIXED_AXIS);
    const double halo = 0.01;
    double lo[3], hi[3];
    gf_walls_region(&sim.xch.decomp, halo, lo, hi);
    GF_ASSERT_OK(gf_walls_localize_meshes(&sim.walls, lo, hi));
    unsigned char *held = held_flags(sim.walls.mesh[0], nt), *near = calloc(nt + 1, 1);
    /* The region's range about the axis: the nearest point of its xy rectangle, the farthest
     * corner, its heights. */
    double qx = fmin(fmax(pivot[0], lo[0]), hi[0]), qy = fmin(fmax(pivot[1], lo[1]), hi[1]);
    double rmin = hypot(qx - pivot[0], qy - pivot[1]), rmax = 0.0;
    for (int k = 0; k < 4; ++k)
        rmax = fmax(rmax,
                    hypot((k & 1 ? hi[0] : lo[0]) - pivot[0], (k & 2 ? hi[1] : lo[1]) - pivot[1]));
    size_t kept = 0;
    for (size_t t = 0; t < nt; ++t) {
        const double *x = &corners[9 * t];
        double u[3], v[3], tmax = 0.0, zlo = INFINITY, zhi = -INFINITY;
        for (int k = 0; k < 3; ++k) {
            u[k] = x[3 * k] - pivot[0];
            v[k] = x[3 * k + 1] - pivot[1];
            tmax = fmax(tmax, hypot(u[k], v[k]));
            zlo = fmin(zlo, x[3 * k + 2]);
            zhi = fmax(zhi, x[3 * k + 2]);
        }
        double tmin = origin_triangle_2d(u, v);
        near[t] = tmin <= rmax && rmin <= tmax && zlo <= hi[2] && zhi >= lo[2];
        kept += near[t];
        /* What must be kept: the triangle turned to any of 90 angles meets the region. */
        for (int s = 0; s < 90 && !near[t]; ++s) {
            double a = 2.0 * M_PI * s / 90.0, ca = cos(a), sa = sin(a), rot[9], tl[3], th[3];
            for (int k = 0; k < 3; ++k) {
                rot[3 * k] = pivot[0] + ca * u[k] - sa * v[k];
                rot[3 * k + 1] = pivot[1] + sa * u[k] + ca * v[k];
                rot[3 * k + 2] = x[3 * k + 2];
            }
            tri_box(rot, tl, th);
            if (boxes_meet(tl, th, lo, hi))
                fail_msg("rank %d: triangle %zu turned by %g rad meets the region but is not near",
                         P.rank, t, a);
        }
    }
    expect_near_and_ring(corners, nt, near, held);
    /* Some triangles are far from some rank on 4 ranks (the plate lies off the axis). */
    if (P.size == 1)
        assert_int_equal(kept, nt);
    free(near);
    free(held);
    free(corners);
    gf_sim_free(&sim);
}

static int cmp_hit(const void *a, const void *b) {
    const gf_trimesh_hit *p = a, *q = b;
    return (p->key > q->key) - (p->key < q->key);
}

static void test_contacts_equal_whole_mesh(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    double *corners;
    size_t nt;
    wavy_floor(&corners, &nt);
    const double zero[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_walls_add_mesh(&sim.walls, nt, corners, FLOOR_PIVOT, zero, zero, 0));
    gf_walls whole;
    gf_walls_init(&whole);
    GF_ASSERT_OK(gf_walls_add_mesh(&whole, nt, corners, FLOOR_PIVOT, zero, zero, 0));
    const double halo = 0.015, reach = 0.014;
    double lo[3], hi[3];
    gf_walls_region(&sim.xch.decomp, halo, lo, hi);
    GF_ASSERT_OK(gf_walls_localize_meshes(&sim.walls, lo, hi));
    /* The same points on every rank; each rank queries those it owns, reaching almost as far
     * as the halo: contacts on features at the edge of what it holds. */
    uint64_t rng = 17;
    int32_t *buf = NULL, *wbuf = NULL;
    size_t cap = 0, wcap = 0;
    int64_t count[2] = {0, 0}, all = 0;
    for (int k = 0; k < 4000; ++k) {
        double x[3] = {gf_test_uniform(&rng, 0.0, 0.2), gf_test_uniform(&rng, 0.0, 0.2), 0.0};
        x[2] = FLOOR_PIVOT[2] + 0.01 * sin(40.0 * x[0]) * cos(30.0 * x[1]) +
               gf_test_uniform(&rng, -reach, reach);
        double local[3] = {x[0] - FLOOR_PIVOT[0], x[1] - FLOOR_PIVOT[1], x[2] - FLOOR_PIVOT[2]};
        gf_trimesh_hit want[GF_TRIMESH_HITS_MAX], got[GF_TRIMESH_HITS_MAX];
        int nw = 0, ng = 0;
        GF_ASSERT_OK(gf_trimesh_query(whole.mesh[0], local, reach, want, &nw, &wbuf, &wcap));
        all += nw;
        if (!gf_decomp_owns(&sim.xch.decomp, x))
            continue;
        GF_ASSERT_OK(gf_trimesh_query(sim.walls.mesh[0], local, reach, got, &ng, &buf, &cap));
        count[0] += ng;
        count[1] += 1;
        qsort(want, (size_t)nw, sizeof *want, cmp_hit);
        qsort(got, (size_t)ng, sizeof *got, cmp_hit);
        if (ng != nw)
            fail_msg("rank %d: point %d (%g, %g, %g) has %d contacts, the whole mesh %d", P.rank, k,
                     x[0], x[1], x[2], ng, nw);
        for (int h = 0; h < nw; ++h) {
            assert_int_equal(got[h].key, want[h].key);
            GF_ASSERT_NEAR(got[h].dist, want[h].dist, 1e-15);
        }
    }
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, count, 2, GF_PAR_SUM));
    assert_int_equal(count[1], 4000);
    assert_int_equal(count[0], all);
    assert_true(all > 4000);
    free(buf);
    free(wbuf);
    free(corners);
    gf_walls_free(&whole);
    gf_sim_free(&sim);
}

/* The triangles of /geometry (kind 3) as sorted corner triples, 9 doubles each. */
static int cmp_tri(const void *a, const void *b) {
    const double *p = a, *q = b;
    for (int k = 0; k < 9; ++k)
        if (p[k] != q[k])
            return p[k] < q[k] ? -1 : 1;
    return 0;
}

static double *triangles_of(const double *pts, const int64_t *conn, size_t nconn,
                            const int32_t *kind, size_t ncells, size_t *ntri, size_t *nother) {
    double *out = malloc(9 * ncells * sizeof *out + 1);
    *ntri = *nother = 0;
    size_t at = 0;
    for (size_t c = 0; c < ncells; ++c) {
        assert_true(at < nconn);
        int64_t code = conn[at], n = code == 3 ? conn[at + 1] : (code == 9 ? 8 : 4);
        at += code == 3 ? 2 : 1;
        if (kind[c] == GF_MESH_TRIANGLES) {
            assert_int_equal(n, 3);
            double *t = &out[9 * (*ntri)++];
            for (int k = 0; k < 3; ++k)
                memcpy(&t[3 * k], &pts[3 * conn[at + k]], 3 * sizeof *t);
        } else {
            (*nother)++;
        }
        at += (size_t)n;
    }
    qsort(out, *ntri, 9 * sizeof *out, cmp_tri);
    return out;
}

static void *read_dataset(hid_t f, const char *name, hid_t type, size_t elsize, size_t *n) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t s = H5Dget_space(d);
    hsize_t dims[2] = {0, 1};
    H5Sget_simple_extent_dims(s, dims, NULL);
    *n = (size_t)dims[0];
    void *buf =
        malloc((size_t)(dims[0] * (H5Sget_simple_extent_ndims(s) == 2 ? dims[1] : 1)) * elsize + 1);
    assert_true(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Sclose(s);
    H5Dclose(d);
    return buf;
}

static void test_snapshot_geometry_holds_every_triangle_once(void **state) {
    (void)state;
    char dir[256], path[512];
    assert_int_equal(gf_test_mpi_tmpdir(dir, sizeof dir, "mesh"), 0);
    snprintf(path, sizeof path, "%s/snap.h5", dir);
    gf_sim sim;
    make_sim(&sim);
    double *corners;
    size_t nt;
    wavy_floor(&corners, &nt);
    const double zero[3] = {0, 0, 0}, wn[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&sim.walls, LO, wn, NULL, 0));
    GF_ASSERT_OK(gf_walls_add_mesh(&sim.walls, nt, corners, FLOOR_PIVOT, zero, zero, 0));
    gf_walls whole;
    gf_walls_init(&whole);
    GF_ASSERT_OK(gf_walls_add(&whole, LO, wn, NULL, 0));
    GF_ASSERT_OK(gf_walls_add_mesh(&whole, nt, corners, FLOOR_PIVOT, zero, zero, 0));
    /* Beads above the floor: their radius sets the halo. */
    int64_t id = 0;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            double x[3] = {0.0125 + 0.025 * i, 0.0125 + 0.025 * j, 0.07};
            gf_particle rec;
            gf_particle_make_sphere(&rec, id++, x, 0.004, 2500, 0);
            if (gf_decomp_owns(&sim.xch.decomp, x))
                GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
        }
    sim.expected_particles = sim.next_id = id;
    sim.dt = 1e-4;
    sim.gravity[2] = -9.81;
    GF_ASSERT_OK(gf_sim_start(&sim));
    assert_true(sim.mesh_halo > 0.0 && sim.mesh_halo < 0.05);
    if (P.size > 1)
        assert_true(sim.walls.mesh[0]->nt < nt);
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &sim, path));
    if (P.rank == 0) {
        gf_geometry_mesh m;
        gf_geometry_mesh_init(&m);
        GF_ASSERT_OK(gf_geometry_mesh_build(&whole, LO, HI, &m));
        size_t wt, wo, ft, fo, np, nc, nk;
        double *want = triangles_of(m.points, m.conn, m.nconn, m.kind, m.ncells, &wt, &wo);
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f >= 0);
        double *pts = read_dataset(f, "/geometry/position", H5T_NATIVE_DOUBLE, 8, &np);
        int64_t *conn = read_dataset(f, "/geometry/topology", H5T_NATIVE_INT64, 8, &nc);
        int32_t *kind = read_dataset(f, "/geometry/kind", H5T_NATIVE_INT32, 4, &nk);
        for (size_t k = 0; k < nc; ++k)
            assert_true(conn[k] >= 0);
        double *got = triangles_of(pts, conn, nc, kind, nk, &ft, &fo);
        assert_int_equal(wt, nt);
        assert_int_equal(ft, wt);
        assert_int_equal(fo, wo);
        for (size_t t = 0; t < wt; ++t)
            if (cmp_tri(&got[9 * t], &want[9 * t]) != 0)
                fail_msg("triangle %zu of the snapshot's /geometry differs from the whole mesh's",
                         t);
        H5Fclose(f);
        free(pts);
        free(conn);
        free(kind);
        free(got);
        free(want);
        gf_geometry_mesh_free(&m);
    }
    free(corners);
    gf_walls_free(&whole);
    gf_sim_free(&sim);
    gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_static_floor_keeps_near_triangles),
    cmocka_unit_test(test_turning_mesh_keeps_swept_triangles),
    cmocka_unit_test(test_contacts_equal_whole_mesh),
    cmocka_unit_test(test_snapshot_geometry_holds_every_triangle_once),
};

GF_TEST_MPI_MAIN(tests)
