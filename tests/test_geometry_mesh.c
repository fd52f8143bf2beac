/* The geometry's surface mesh for visualisation: wall polygons against the closed-form sections
 * of a cube (rectangle, face, triangle, regular hexagon), box hexahedra, cylinder prisms. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry_mesh.h"
#include "core/vec.h"
#include "test_util.h"

static const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};

/* The mesh of one wall through p with normal n in the unit cube: checks every point lies on the
 * plane and in the cube and the polygon is convex in order; returns its area (0: no cell). */
static double wall_area(const double p[3], const double n_in[3], int *npoints) {
    gf_walls w;
    gf_walls_init(&w);
    GF_ASSERT_OK(gf_walls_add(&w, p, n_in, NULL, 0));
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    GF_ASSERT_OK(gf_geometry_mesh_build(&w, lo, hi, &m));
    *npoints = (int)m.npoints;
    if (m.ncells == 0) {
        gf_geometry_mesh_free(&m);
        return 0.0;
    }
    assert_int_equal(m.ncells, 1);
    assert_int_equal(m.conn[0], GF_XDMF_POLYGON);
    int n = (int)m.conn[1];
    assert_int_equal(n, m.npoints);
    assert_int_equal(m.nconn, 2 + (size_t)n);
    const double *nn = w.normal[0];
    double area[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
        const double *a = &m.points[3 * m.conn[2 + i]], *b = &m.points[3 * m.conn[2 + (i + 1) % n]],
                     *c = &m.points[3 * m.conn[2 + (i + 2) % n]];
        double d[3] = {a[0] - p[0], a[1] - p[1], a[2] - p[2]};
        GF_ASSERT_NEAR(gf_dot(d, nn), 0.0, 1e-14);
        for (int k = 0; k < 3; ++k)
            assert_true(a[k] >= -1e-14 && a[k] <= 1 + 1e-14);
        /* Convex and in order: every turn the same way round the normal. */
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
               e2[3] = {c[0] - b[0], c[1] - b[1], c[2] - b[2]}, t[3], x[3];
        gf_cross(e1, e2, t);
        assert_true(gf_dot(t, nn) > 0 || gf_dot(t, nn) < 0);
        if (i > 0) {
            double prev[3];
            const double *z = &m.points[3 * m.conn[2 + (i + n - 1) % n]];
            double f1[3] = {a[0] - z[0], a[1] - z[1], a[2] - z[2]};
            gf_cross(f1, e1, prev);
            assert_true(gf_dot(prev, nn) * gf_dot(t, nn) > 0);
        }
        gf_cross(a, b, x);
        for (int k = 0; k < 3; ++k)
            area[k] += 0.5 * x[k];
    }
    gf_geometry_mesh_free(&m);
    return gf_norm(area);
}

static void test_wall_sections(void **state) {
    (void)state;
    int np;
    const double mid[3] = {0.5, 0.5, 0.5};
    /* x + z = 1: a rectangle of sides 1 and sqrt 2. */
    const double n1[3] = {1, 0, 1};
    GF_ASSERT_NEAR(wall_area(mid, n1, &np), sqrt(2.0), 1e-14);
    assert_int_equal(np, 4);
    /* A face: its four corners once each. */
    const double o[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    GF_ASSERT_NEAR(wall_area(o, up, &np), 1.0, 1e-14);
    assert_int_equal(np, 4);
    /* x + y + z = 1/2 cuts a corner: a triangle of side sqrt(2)/2, area sqrt(3)/8. */
    const double diag[3] = {1, 1, 1}, p1[3] = {0.5, 0, 0};
    GF_ASSERT_NEAR(wall_area(p1, diag, &np), sqrt(3.0) / 8.0, 1e-14);
    assert_int_equal(np, 3);
    /* x + y + z = 3/2: the regular hexagon of side sqrt(2)/2, area 3 sqrt(3)/4. */
    GF_ASSERT_NEAR(wall_area(mid, diag, &np), 3.0 * sqrt(3.0) / 4.0, 1e-14);
    assert_int_equal(np, 6);
    /* A wall beyond the box has no cell. */
    const double far[3] = {0, 0, 2};
    GF_ASSERT_NEAR(wall_area(far, up, &np), 0.0, 0.0);
    assert_int_equal(np, 0);
}

static void test_obstacles(void **state) {
    (void)state;
    gf_walls w;
    gf_walls_init(&w);
    const double blo[3] = {0.1, 0.2, 0.3}, bhi[3] = {0.4, 0.6, 0.9};
    GF_ASSERT_OK(gf_walls_add_box(&w, blo, bhi, 0));
    const double c[3] = {0.5, 0.5, 0.5}, axis[3] = {1, 2, 2};
    GF_ASSERT_OK(gf_walls_add_cylinder(&w, c, axis, 0.1, 0.3, 0));
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    GF_ASSERT_OK(gf_geometry_mesh_build(&w, lo, hi, &m));
    const int N = GF_MESH_CYLINDER_SIDES;
    assert_int_equal(m.npoints, 8 + 2 * (size_t)N);
    assert_int_equal(m.ncells, 1 + (size_t)N + 2);
    /* The hexahedron: the box's corners, bottom face then top, x varying first round each. */
    assert_int_equal(m.conn[0], GF_XDMF_HEXAHEDRON);
    const int bits[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                            {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
    for (int i = 0; i < 8; ++i)
        for (int d = 0; d < 3; ++d)
            GF_ASSERT_NEAR(m.points[3 * m.conn[1 + i] + d], bits[i][d] ? bhi[d] : blo[d], 0.0);
    assert_int_equal(m.kind[0], GF_MESH_BOX);
    assert_int_equal(m.body[0], GF_BOX_BASE);
    /* The cylinder (length 0.3: half length 0.15): every point on the rim circles. */
    const double a[3] = {1.0 / 3, 2.0 / 3, 2.0 / 3};
    for (size_t i = 8; i < m.npoints; ++i) {
        double r[3] = {m.points[3 * i] - c[0], m.points[3 * i + 1] - c[1],
                       m.points[3 * i + 2] - c[2]};
        double along = gf_dot(r, a), radial[3];
        for (int d = 0; d < 3; ++d)
            radial[d] = r[d] - along * a[d];
        GF_ASSERT_NEAR(fabs(along), 0.15, 1e-14);
        GF_ASSERT_NEAR(gf_norm(radial), 0.1, 1e-14);
    }
    for (size_t k = 1; k < m.ncells; ++k) {
        assert_int_equal(m.kind[k], GF_MESH_CYLINDER);
        assert_int_equal(m.body[k], GF_CYL_BASE);
    }
    gf_geometry_mesh_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wall_sections),
        cmocka_unit_test(test_obstacles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
