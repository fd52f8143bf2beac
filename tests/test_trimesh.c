/* Triangle meshes: STL files read back (ASCII and binary), the contact points of a meshed cube
 * against the closed-form distance of a box (one contact per point, whatever the diagonals of
 * its faces), a flat mesh against its plane, a valley touched on both sides, the overlap test
 * against brute force, and the simple surfaces against their closed forms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "granflow/trimesh.h"
#include "core/vec.h"
#include "test_util.h"

/* The 12 triangles of the box [lo, hi], faces split along alternating diagonals. */
static void box_soup(const double lo[3], const double hi[3], double c[108]) {
    static const int quads[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                                    {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
    double v[8][3];
    for (int k = 0; k < 8; ++k)
        for (int d = 0; d < 3; ++d)
            v[k][d] = (k >> d) & 1 ? hi[d] : lo[d];
    int t = 0;
    for (int f = 0; f < 6; ++f) {
        const int *q = quads[f];
        int tri[2][3] = {{q[0], q[1], q[2]}, {q[0], q[2], q[3]}};
        if (f % 2) { /* the other diagonal */
            int alt[2][3] = {{q[0], q[1], q[3]}, {q[1], q[2], q[3]}};
            memcpy(tri, alt, sizeof tri);
        }
        for (int s = 0; s < 2; ++s, ++t)
            for (int k = 0; k < 3; ++k)
                memcpy(&c[9 * t + 3 * k], v[tri[s][k]], 3 * sizeof(double));
    }
}

/* The distance of x from the surface of the box and the outward normal there (x outside). */
static double box_distance(const double lo[3], const double hi[3], const double x[3], double n[3]) {
    double e[3], q2 = 0.0;
    for (int d = 0; d < 3; ++d) {
        double q = x[d] < lo[d] ? lo[d] : (x[d] > hi[d] ? hi[d] : x[d]);
        e[d] = x[d] - q;
        q2 += e[d] * e[d];
    }
    double dist = sqrt(q2);
    for (int d = 0; d < 3; ++d)
        n[d] = e[d] / dist;
    return dist;
}

static void write_ascii_stl(const char *path, size_t nt, const double *c) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "solid test cube\n");
    for (size_t t = 0; t < nt; ++t) {
        fprintf(f, "  facet normal 0 0 0\n    outer loop\n");
        for (int k = 0; k < 3; ++k)
            fprintf(f, "      vertex %.17g %.17g %.17g\n", c[9 * t + 3 * k], c[9 * t + 3 * k + 1],
                    c[9 * t + 3 * k + 2]);
        fprintf(f, "    endloop\n  endfacet\n");
    }
    fprintf(f, "endsolid test cube\n");
    fclose(f);
}

/* Little-endian, as the format says, whatever the host. */
static void put_float(FILE *f, float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 24)};
    fwrite(b, 1, 4, f);
}

static void write_binary_stl(const char *path, size_t nt, const double *c, const char *header) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char head[80] = {0};
    strncpy(head, header, sizeof head);
    fwrite(head, 1, sizeof head, f);
    unsigned char n[4] = {(unsigned char)nt, (unsigned char)(nt >> 8), (unsigned char)(nt >> 16),
                          (unsigned char)(nt >> 24)};
    fwrite(n, 1, 4, f);
    for (size_t t = 0; t < nt; ++t) {
        for (int d = 0; d < 3; ++d)
            put_float(f, 0.0f);
        for (int k = 0; k < 9; ++k)
            put_float(f, (float)c[9 * t + k]);
        unsigned char attr[2] = {0, 0};
        fwrite(attr, 1, 2, f);
    }
    fclose(f);
}

/* A closed cube: 8 vertices, 18 edges, each edge between exactly two triangles. */
static void assert_closed_cube(const gf_trimesh *m) {
    assert_int_equal(m->nt, 12);
    assert_int_equal(m->nv, 8);
    assert_int_equal(m->ne, 18);
    for (size_t e = 0; e < m->ne; ++e)
        assert_int_equal(m->edge_start[e + 1] - m->edge_start[e], 2);
}

static void test_stl_round_trip(void **state) {
    (void)state;
    char dir[256], path[512];
    assert_int_equal(gf_test_tmpdir(dir, sizeof dir, "stl"), 0);
    /* Coordinates that float32 holds exactly, so both formats give the same mesh. */
    const double lo[3] = {-0.5, 0.25, 1.0}, hi[3] = {0.5, 1.75, 2.5};
    double soup[108];
    box_soup(lo, hi, soup);
    for (int binary = 0; binary < 2; ++binary) {
        snprintf(path, sizeof path, "%s/cube.stl", dir);
        if (binary) /* a binary file whose header starts like an ASCII one */
            write_binary_stl(path, 12, soup, "solid but binary");
        else
            write_ascii_stl(path, 12, soup);
        double *c = NULL;
        size_t nt = 0;
        GF_ASSERT_OK(gf_trimesh_read_stl(path, &c, &nt));
        assert_int_equal(nt, 12);
        for (size_t k = 0; k < 108; ++k)
            assert_true(c[k] == soup[k]);
        gf_trimesh m;
        gf_trimesh_init(&m);
        GF_ASSERT_OK(gf_trimesh_build(&m, nt, c));
        assert_closed_cube(&m);
        gf_trimesh_free(&m);
        free(c);
    }
    /* Damaged files: named, with the line for ASCII. */
    double *c = NULL;
    size_t nt = 0;
    snprintf(path, sizeof path, "%s/bad.stl", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 zero\n");
    fclose(f);
    assert_int_equal(gf_trimesh_read_stl(path, &c, &nt), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "bad.stl:5"));
    assert_non_null(strstr(gf_error_message(), "'zero'"));
    write_binary_stl(path, 12, soup, "binary");
    assert_int_equal(truncate(path, 84 + 50 * 11), 0);
    assert_int_not_equal(gf_trimesh_read_stl(path, &c, &nt), GF_OK);
    assert_non_null(strstr(gf_error_message(), "not an STL file"));
    assert_int_not_equal(gf_trimesh_read_stl("/nonexistent/x.stl", &c, &nt), GF_OK);
    /* A number of 300 digits is refused, not cut to 255 and read (issue 36). */
    f = fopen(path, "w");
    fprintf(f, "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 1.");
    for (int k = 0; k < 300; ++k)
        fputc('5', f);
    fprintf(f, "\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid\n");
    fclose(f);
    assert_int_equal(gf_trimesh_read_stl(path, &c, &nt), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "bad.stl:4"));
    assert_non_null(strstr(gf_error_message(), "256 characters or more"));
    /* A binary file that begins with "solid" is quoted without its raw bytes. */
    f = fopen(path, "wb");
    fprintf(f, "solid \x01\x02\xff\xfe\n\x03\x04\xf0\xf1 more");
    fclose(f);
    assert_int_equal(gf_trimesh_read_stl(path, &c, &nt), GF_ERR_INPUT);
    for (const char *p = gf_error_message(); *p; ++p)
        assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
    assert_int_equal(gf_test_rmtree(dir), 0);
    /* A degenerate triangle is refused, naming it. */
    double flat[18] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 2, 2, 0};
    gf_trimesh m;
    gf_trimesh_init(&m);
    assert_int_equal(gf_trimesh_build(&m, 2, flat), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "triangle 2 is degenerate"));
}

/* Points all around a meshed box: exactly one contact each (a convex body has one closest
 * point), at the closed-form distance and normal, with the key of the feature it lies on. */
/* Input that is not a regular file is refused before it is opened (issue 36: a FIFO as mesh file
 * blocked even --check); so are configuration files. */
static void test_fifo_refused(void **state) {
    (void)state;
    char dir[128], fifo[256];
    assert_int_equal(gf_test_tmpdir(dir, sizeof dir, "fifo"), 0);
    snprintf(fifo, sizeof fifo, "%s/mesh.stl", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    double *corners = NULL;
    size_t nt = 0;
    assert_int_equal(gf_trimesh_read_stl(fifo, &corners, &nt), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "not a regular file"));
    assert_non_null(strstr(gf_error_message(), "FIFO"));
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(gf_config_read_file(fifo, &text, &len), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "mesh.stl"));
    assert_int_equal(gf_config_read_file(dir, &text, &len), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "directory"));
    gf_error_clear();
    gf_test_rmtree(dir);
}

/* Surfaces made in place that would exceed the triangle limit are refused before they are made
 * (issue 36: a drum of 100000 segments asked for 6.4e9 triangles first), at once. */
static void test_oversized_surfaces_refused(void **state) {
    (void)state;
    const double c[3] = {0, 0, 0}, z[3] = {0, 0, 1}, x[3] = {1, 0, 0};
    double *corners = NULL;
    size_t nt = 0;
    assert_int_equal(gf_trimesh_frustum(c, z, 1.0, 0.5, 0.5, 100000, 1, 1e-5, &corners, &nt),
                     GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "4000000"));
    assert_int_equal(gf_trimesh_rectangle(c, z, x, 1.0, 1.0, 1e-5, &corners, &nt), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "the rectangle would have 2e+10 triangles"));
    assert_int_equal(gf_trimesh_disc(c, z, 1.0, 0.0, 2100000000, &corners, &nt), GF_ERR_INPUT);
    assert_null(corners);
    /* Up to the limit they are made. */
    GF_ASSERT_OK(gf_trimesh_frustum(c, z, 1.0, 0.5, 0.5, 64, 1, 0.1, &corners, &nt));
    assert_int_equal(nt, 2 * 64 * 10 + 2 * 64);
    free(corners);
    gf_error_clear();
}

static void test_cube_contacts_match_the_box(void **state) {
    (void)state;
    const double lo[3] = {0.1, -0.2, 0.0}, hi[3] = {0.4, 0.3, 0.25};
    double soup[108];
    box_soup(lo, hi, soup);
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, 12, soup));
    int32_t *buf = NULL;
    size_t cap = 0;
    uint64_t rng = 12345;
    int kinds[3] = {0, 0, 0}; /* faces, edges, vertices */
    for (int trial = 0; trial < 20000; ++trial) {
        double x[3];
        for (int d = 0; d < 3; ++d)
            x[d] = gf_test_uniform(&rng, lo[d] - 0.1, hi[d] + 0.1);
        int inside = 1;
        for (int d = 0; d < 3; ++d)
            inside = inside && x[d] > lo[d] && x[d] < hi[d];
        if (inside)
            continue;
        double n[3];
        double dist = box_distance(lo, hi, x, n);
        if (dist < 1e-6)
            continue;
        gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX];
        int count = 0;
        GF_ASSERT_OK(gf_trimesh_query(&m, x, 0.2, hits, &count, &buf, &cap));
        if (count != 1)
            fail_msg("%d contacts at (%g, %g, %g), %g from the box", count, x[0], x[1], x[2], dist);
        GF_ASSERT_NEAR(hits[0].dist, dist, 1e-12);
        for (int d = 0; d < 3; ++d)
            GF_ASSERT_NEAR(hits[0].n[d], n[d], 1e-9);
        kinds[hits[0].key < (int32_t)m.nt ? 0 : (hits[0].key < (int32_t)(m.nt + m.ne) ? 1 : 2)]++;
    }
    /* Every kind of feature was met. */
    assert_true(kinds[0] > 100 && kinds[1] > 100 && kinds[2] > 100);
    /* Beyond reach: none. */
    gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX];
    int count = -1;
    const double far[3] = {1.0, 0.0, 0.1};
    GF_ASSERT_OK(gf_trimesh_query(&m, far, 0.5, hits, &count, &buf, &cap));
    assert_int_equal(count, 0);
    free(buf);
    gf_trimesh_free(&m);
}

/* A plane cut into many triangles: one contact above any point, on both sides, and the
 * distance to the plane; near the rim, the rim's edge. */
static void test_flat_mesh_is_its_plane(void **state) {
    (void)state;
    const double c[3] = {0.0, 0.0, 0.5}, n[3] = {0.0, 0.6, 0.8}, e[3] = {1.0, 0.0, 0.0};
    double *soup = NULL;
    size_t nt = 0;
    GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 1.0, 0.6, 0.07, &soup, &nt));
    assert_true(nt >= 2 * 15 * 9);
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, nt, soup));
    double f[3];
    gf_cross(n, e, f);
    int32_t *buf = NULL;
    size_t cap = 0;
    uint64_t rng = 99;
    for (int trial = 0; trial < 5000; ++trial) {
        double u = gf_test_uniform(&rng, -0.6, 0.6), v = gf_test_uniform(&rng, -0.4, 0.4);
        double h = gf_test_uniform(&rng, -0.05, 0.05);
        if (fabs(h) < 1e-6)
            continue;
        double x[3];
        for (int d = 0; d < 3; ++d)
            x[d] = c[d] + u * e[d] + v * f[d] + h * n[d];
        /* Closed form: the distance to the rectangle. */
        double du = fmax(fabs(u) - 0.5, 0.0), dv = fmax(fabs(v) - 0.3, 0.0);
        double dist = sqrt(du * du + dv * dv + h * h);
        gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX];
        int count = 0;
        GF_ASSERT_OK(gf_trimesh_query(&m, x, 0.06, hits, &count, &buf, &cap));
        if (dist >= 0.06) {
            assert_int_equal(count, 0);
            continue;
        }
        if (count != 1)
            fail_msg("%d contacts at u %g v %g h %g", count, u, v, h);
        GF_ASSERT_NEAR(hits[0].dist, dist, 1e-12);
        if (du == 0.0 && dv == 0.0)
            GF_ASSERT_NEAR(gf_dot(hits[0].n, n), h > 0 ? 1.0 : -1.0, 1e-12);
    }
    free(buf);
    free(soup);
    gf_trimesh_free(&m);
}

/* A valley of two faces at 90 degrees: a point above its middle touches both sides at equal
 * distance, a point right above the fold line touches the fold once. */
static void test_valley_touches_both_sides(void **state) {
    (void)state;
    /* Faces z = |x| for x in [-1, 1], y in [-1, 1]: the fold along y at x = 0. */
    double soup[36] = {
        0, -1, 0, -1, -1, 1, -1, 1, 1, 0, -1, 0, -1, 1, 1, 0, 1,  0, /* left */
        0, -1, 0, 0,  1,  0, 1,  1, 1, 0, -1, 0, 1,  1, 1, 1, -1, 1, /* right */
    };
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, 4, soup));
    int32_t *buf = NULL;
    size_t cap = 0;
    gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX];
    int count = 0;
    const double x[3] = {0.0, 0.1, 0.5};
    GF_ASSERT_OK(gf_trimesh_query(&m, x, 1.0, hits, &count, &buf, &cap));
    assert_int_equal(count, 2);
    GF_ASSERT_NEAR(hits[0].dist, 0.5 / sqrt(2.0), 1e-12);
    GF_ASSERT_NEAR(hits[1].dist, 0.5 / sqrt(2.0), 1e-12);
    GF_ASSERT_NEAR(hits[0].n[0] * hits[1].n[0], -0.5, 1e-12);
    /* Below the fold (outside the valley): the fold line once, straight below. */
    const double y[3] = {0.0, 0.2, -0.3};
    GF_ASSERT_OK(gf_trimesh_query(&m, y, 1.0, hits, &count, &buf, &cap));
    assert_int_equal(count, 1);
    GF_ASSERT_NEAR(hits[0].dist, 0.3, 1e-12);
    GF_ASSERT_NEAR(hits[0].n[2], -1.0, 1e-12);
    free(buf);
    gf_trimesh_free(&m);
}

/* gf_trimesh_overlap of `trials` random balls (centres in [lo, hi], radii in [rmin, rmax])
 * against the brute force over every triangle; returns how many overlap. */
static int overlaps_match_brute_force(const gf_trimesh *m, uint64_t rng, int trials,
                                      const double lo[3], const double hi[3], double rmin,
                                      double rmax) {
    int hits = 0;
    for (int trial = 0; trial < trials; ++trial) {
        double x[3], r = gf_test_uniform(&rng, rmin, rmax);
        for (int d = 0; d < 3; ++d)
            x[d] = gf_test_uniform(&rng, lo[d], hi[d]);
        double best = INFINITY;
        for (size_t t = 0; t < m->nt; ++t) {
            double q[3];
            gf_trimesh_closest(m, t, x, q);
            double e[3] = {x[0] - q[0], x[1] - q[1], x[2] - q[2]};
            best = fmin(best, gf_norm(e));
        }
        if (fabs(best - r) < 1e-9)
            continue;
        int want = best < r;
        hits += want;
        assert_int_equal(gf_trimesh_overlap(m, x, r), want);
    }
    return hits;
}

/* The overlap test against the brute force over every triangle. */
static void test_overlap_matches_brute_force(void **state) {
    (void)state;
    const double c[3] = {0.0, 0.0, 0.0}, axis[3] = {0.0, 0.3, 1.0};
    double *soup = NULL;
    size_t nt = 0;
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 0.5, 0.3, 0.1, 24, 1, 0.05, &soup, &nt));
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, nt, soup));
    const double lo[3] = {-0.4, -0.4, -0.4}, hi[3] = {0.4, 0.4, 0.4};
    int hits = overlaps_match_brute_force(&m, 7, 4000, lo, hi, 0.001, 0.05);
    assert_true(hits > 100);
    free(soup);
    gf_trimesh_free(&m);
}

/* A mesh of 52 000 slivers (1 m long, 1e-7 m wide: far longer than their mean area's width)
 * builds with bounded lists and answers overlaps as the brute force does. Its cells were sized
 * by the mean area, so each sliver lay in thousands of cells: the 32-bit list offsets overflowed
 * (a crash) and queries scanned long lists. */
static void test_sliver_mesh(void **state) {
    (void)state;
    const size_t nt = 52000;
    double *soup = malloc(9 * nt * sizeof *soup);
    assert_non_null(soup);
    for (size_t k = 0; k < nt; ++k) {
        double y = 2e-6 * (double)k, z = 1e-4 * (double)(k % 7);
        const double c[9] = {0.0, y, z, 1.0, y, z, 1.0, y + 1e-7, z};
        memcpy(soup + 9 * k, c, sizeof c);
    }
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, nt, soup));
    size_t ncells = (size_t)m.ncell[0] * (size_t)m.ncell[1] * (size_t)m.ncell[2];
    double entries = m.cell_start[ncells];
    if (!(entries <= 16.0 * (double)nt + 1024.0))
        fail_msg("the grid lists %g entries for %zu triangles", entries, nt);
    const double lo[3] = {-0.1, -0.01, -0.01}, hi[3] = {1.1, 0.11, 0.01};
    int hits = overlaps_match_brute_force(&m, 3, 300, lo, hi, 1e-4, 5e-3);
    assert_true(hits > 30);
    free(soup);
    gf_trimesh_free(&m);
}

/* The simple surfaces: a tube's vertices on its cylinder, a cone's on its cone, a disc with a
 * hole of the annulus's area (to the polygon's), a closed frustum with every edge shared by two
 * triangles. */
static void test_simple_surfaces(void **state) {
    (void)state;
    const double c[3] = {1.0, 2.0, 3.0}, axis[3] = {0.0, 0.0, 2.0};
    double *soup = NULL;
    size_t nt = 0;
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 0.4, 0.2, 0.2, 32, 0, 0.05, &soup, &nt));
    for (size_t k = 0; k < 3 * nt; ++k) {
        const double *p = &soup[3 * k];
        GF_ASSERT_NEAR(hypot(p[0] - c[0], p[1] - c[1]), 0.2, 1e-12);
        assert_true(fabs(p[2] - c[2]) <= 0.2 + 1e-12);
    }
    free(soup);
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 0.4, 0.3, 0.1, 32, 1, 0.0, &soup, &nt));
    for (size_t k = 0; k < 3 * nt; ++k) {
        const double *p = &soup[3 * k];
        double r = hypot(p[0] - c[0], p[1] - c[1]), z = p[2] - c[2];
        /* On the cone (radius 0.2 - 0.5 z) or on a cap. */
        assert_true(fabs(r - (0.2 - 0.5 * z)) < 1e-12 || fabs(fabs(z) - 0.2) < 1e-12);
    }
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, nt, soup));
    for (size_t e = 0; e < m.ne; ++e)
        assert_int_equal(m.edge_start[e + 1] - m.edge_start[e], 2);
    gf_trimesh_free(&m);
    free(soup);
    const double n[3] = {1.0, 1.0, 0.0};
    GF_ASSERT_OK(gf_trimesh_disc(c, n, 0.5, 0.2, 64, &soup, &nt));
    double area = 0.0;
    for (size_t t = 0; t < nt; ++t) {
        double a[3], b[3], x[3];
        for (int d = 0; d < 3; ++d) {
            a[d] = soup[9 * t + 3 + d] - soup[9 * t + d];
            b[d] = soup[9 * t + 6 + d] - soup[9 * t + d];
        }
        gf_cross(a, b, x);
        area += 0.5 * gf_norm(x);
        for (int k = 0; k < 3; ++k) {
            const double *p = &soup[9 * t + 3 * k];
            GF_ASSERT_NEAR((p[0] - c[0]) + (p[1] - c[1]), 0.0, 1e-12); /* in the plane */
        }
    }
    /* A regular 64-gon of circumradius r has area 32 r^2 sin(2 pi / 64). */
    GF_ASSERT_NEAR(area, 32.0 * (0.25 - 0.04) * sin(2.0 * M_PI / 64.0), 1e-12);
    free(soup);
    assert_int_equal(gf_trimesh_disc(c, n, 0.5, 0.6, 64, &soup, &nt), GF_ERR_INPUT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stl_round_trip),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_oversized_surfaces_refused),
        cmocka_unit_test(test_cube_contacts_match_the_box),
        cmocka_unit_test(test_flat_mesh_is_its_plane),
        cmocka_unit_test(test_valley_touches_both_sides),
        cmocka_unit_test(test_overlap_matches_brute_force),
        cmocka_unit_test(test_sliver_mesh),
        cmocka_unit_test(test_simple_surfaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
