/* Boxes, capsules and cylinders against triangle meshes (gf_collide_mesh), against references
 * that know nothing of meshes: the same body against a solid box (the closed-form separating
 * axes for box pairs, the general convex test for the others) when the mesh is that box's
 * surface; against the analytic planes when the mesh is the inside of a container or a flat
 * floor cut into many triangles. Bodies apart from the mesh and bodies pressed slightly into it
 * (the case where a lone triangle would push them sideways across a seam). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/collide.h"
#include "granflow/trimesh.h"
#include "core/vec.h"
#include "test_util.h"

#define MAX_POINTS 512

typedef struct {
    int count;
    gf_contact_point pt[MAX_POINTS];
    int32_t key[MAX_POINTS];
} gathered;

static gf_status gather(void *ctx, int32_t key, const gf_contact_point *p) {
    gathered *g = ctx;
    if (g->count == MAX_POINTS)
        return GF_ERROR(GF_ERR_STATE, "too many points");
    g->key[g->count] = key;
    g->pt[g->count++] = *p;
    return GF_OK;
}

static void mesh_points(const gf_body_pose *a, const gf_trimesh *m, double margin, gathered *g) {
    static const double zero[3] = {0.0, 0.0, 0.0}, id[4] = {1.0, 0.0, 0.0, 0.0};
    int32_t *tri = NULL;
    size_t cap = 0;
    g->count = 0;
    GF_ASSERT_OK(gf_collide_mesh(a, m, zero, id, margin, &tri, &cap, gather, g));
    free(tri);
}

/* The surface of the cube [-h, h]^3, each face cut into squares of side `piece` (two triangles
 * each), so that it has seams inside its faces as well as ridges. */
static void cube_mesh(double h, double piece, gf_trimesh *m) {
    double *all = NULL;
    size_t total = 0;
    for (int d = 0; d < 3; ++d)
        for (int s = -1; s <= 1; s += 2) {
            double c[3] = {0.0, 0.0, 0.0}, n[3] = {0.0, 0.0, 0.0}, e[3] = {0.0, 0.0, 0.0};
            c[d] = s * h;
            n[d] = s;
            e[(d + 1) % 3] = 1.0;
            double *soup;
            size_t nt;
            GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 2.0 * h, 2.0 * h, piece, &soup, &nt));
            all = realloc(all, 9 * (total + nt) * sizeof *all);
            memcpy(all + 9 * total, soup, 9 * nt * sizeof *all);
            total += nt;
            free(soup);
        }
    gf_trimesh_init(m);
    GF_ASSERT_OK(gf_trimesh_build(m, total, all));
    free(all);
}

static void random_quat(uint64_t *rng, double q[4]) {
    double len = 0.0;
    do {
        len = 0.0;
        for (int k = 0; k < 4; ++k) {
            q[k] = gf_test_uniform(rng, -1.0, 1.0);
            len += q[k] * q[k];
        }
    } while (len > 1.0 || len < 1e-4);
    len = sqrt(len);
    for (int k = 0; k < 4; ++k)
        q[k] /= len;
}

/* A box, capsule or cylinder of random proportions (bounding radius about 0.2 to 0.4). */
static gf_shape random_shape(uint64_t *rng, int kind) {
    switch (kind) {
    case 0:
        return gf_shape_box(gf_test_uniform(rng, 0.08, 0.25), gf_test_uniform(rng, 0.08, 0.25),
                            gf_test_uniform(rng, 0.08, 0.25));
    case 1:
        return gf_shape_capsule(gf_test_uniform(rng, 0.06, 0.15), gf_test_uniform(rng, 0.05, 0.25));
    default:
        return gf_shape_cylinder(gf_test_uniform(rng, 0.08, 0.2), gf_test_uniform(rng, 0.05, 0.2));
    }
}

static double min_gap(const gf_contact_point *p, int n) {
    double g = INFINITY;
    for (int k = 0; k < n; ++k)
        g = fmin(g, p[k].gap);
    return g;
}

/* Distance of point p from the cube [-h, h]^3. */
static double point_cube(const double p[3], const double hv[3]) {
    double s = 0.0;
    for (int d = 0; d < 3; ++d) {
        double e = fmax(fabs(p[d]) - hv[d], 0.0);
        s += e * e;
    }
    return sqrt(s);
}

/* Distance of segments p0 p1 and q0 q1: the distance from a point of the first to the second
 * segment is convex along the first, so a ternary search over it finds the minimum (to
 * rounding, parallel segments included). */
static double segment_segment(const double p0[3], const double p1[3], const double q0[3],
                              const double q1[3]) {
    double d2[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]}, e = gf_dot(d2, d2);
    double best = INFINITY;
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 200; ++it) {
        double s3[2] = {lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0}, f[2];
        for (int k = 0; k < 2; ++k) {
            double p[3], r[3];
            for (int d = 0; d < 3; ++d)
                p[d] = p0[d] + s3[k] * (p1[d] - p0[d]);
            for (int d = 0; d < 3; ++d)
                r[d] = p[d] - q0[d];
            double t = fmin(fmax(gf_dot(r, d2) / e, 0.0), 1.0);
            for (int d = 0; d < 3; ++d)
                r[d] -= t * d2[d];
            f[k] = gf_norm(r);
            best = fmin(best, f[k]);
        }
        if (f[0] < f[1])
            hi = s3[1];
        else
            lo = s3[0];
    }
    return best;
}

/* The distance between the box a and the cube [-h, h]^3, by their feature pairs: corners
 * against the other body and edges against edges (two convex polytopes apart are nearest at
 * one of those). */
static double box_cube_distance(const gf_body_pose *a, double h) {
    const double hv[3] = {h, h, h}, *ha = a->shape->dim;
    double va[8][3], vc[8][3];
    for (int k = 0; k < 8; ++k) {
        double l[3];
        for (int d = 0; d < 3; ++d) {
            l[d] = (k >> d) & 1 ? ha[d] : -ha[d];
            vc[k][d] = (k >> d) & 1 ? h : -h;
        }
        gf_quat_rotate(a->q, l, va[k]);
        for (int d = 0; d < 3; ++d)
            va[k][d] += a->x[d];
    }
    double best = INFINITY;
    for (int k = 0; k < 8; ++k) {
        best = fmin(best, point_cube(va[k], hv));
        double r[3] = {vc[k][0] - a->x[0], vc[k][1] - a->x[1], vc[k][2] - a->x[2]}, l[3];
        gf_quat_rotate_inv(a->q, r, l);
        best = fmin(best, point_cube(l, ha));
    }
    for (int i = 0; i < 8; ++i)
        for (int di = 0; di < 3; ++di) {
            if ((i >> di) & 1)
                continue;
            int i2 = i | 1 << di;
            for (int j = 0; j < 8; ++j)
                for (int dj = 0; dj < 3; ++dj) {
                    if ((j >> dj) & 1)
                        continue;
                    best = fmin(best, segment_segment(va[i], va[i2], vc[j], vc[j | 1 << dj]));
                }
        }
    return best;
}

static double capsule_cube_distance(const gf_body_pose *a, double h) {
    const double hv[3] = {h, h, h}, ez[3] = {0.0, 0.0, a->shape->dim[1]};
    double e[2][3], z[3];
    gf_quat_rotate(a->q, ez, z);
    for (int d = 0; d < 3; ++d) {
        e[0][d] = a->x[d] + z[d];
        e[1][d] = a->x[d] - z[d];
    }
    double best = fmin(point_cube(e[0], hv), point_cube(e[1], hv));
    for (int j = 0; j < 8; ++j)
        for (int dj = 0; dj < 3; ++dj) {
            if ((j >> dj) & 1)
                continue;
            double c0[3], c1[3];
            for (int d = 0; d < 3; ++d) {
                c0[d] = (j >> d) & 1 ? h : -h;
                c1[d] = ((j | 1 << dj) >> d) & 1 ? h : -h;
            }
            best = fmin(best, segment_segment(e[0], e[1], c0, c1));
        }
    return best - a->shape->dim[0];
}

/* Outside the meshed cube: the deepest point is the solid cube's, apart or pressed in. */
static void test_outside_a_convex_mesh(void **state) {
    (void)state;
    const double h = 0.5, margin = 0.05;
    gf_trimesh m;
    cube_mesh(h, 0.25, &m);
    gf_shape cube = gf_shape_box(h, h, h);
    gf_body_pose solid = {&cube, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
    uint64_t rng = 11;
    int apart = 0, pressed = 0, tries = 0;
    static gathered g;
    while ((apart < 300 || pressed < 150) && ++tries < 100000) {
        gf_shape s = random_shape(&rng, tries % 3);
        gf_body_pose a = {&s, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
        random_quat(&rng, a.q);
        for (int d = 0; d < 3; ++d)
            a.x[d] = gf_test_uniform(&rng, -1.0, 1.0);
        gf_contact_point ref[GF_MANIFOLD_MAX];
        int nref = 0;
        GF_ASSERT_OK(gf_collide(&a, &solid, margin, ref, GF_MANIFOLD_MAX, &nref));
        double size = gf_shape_bounding_radius(&s, NULL);
        double gref = min_gap(ref, nref);
        /* The separating axes of a box pair give its depth when pressed together, but bound
         * the distance from below only when apart; the distance is a feature pair's. */
        if (nref > 0 && s.type == GF_SHAPE_BOX && gref > 0.0)
            gref = box_cube_distance(&a, h);
        /* A capsule's distance is its axis segment's less its radius: against the cube's
         * corners, from its ends, or its edges. The convex test's manifold may place the
         * deepest point of a curved body a little short where the bodies' supporting points
         * do not face each other (1e-4 of the size): cylinders are held to that. */
        double tol = 1e-7 * size;
        if (nref > 0 && s.type == GF_SHAPE_CAPSULE && gref > 0.0)
            gref = capsule_cube_distance(&a, h);
        if (s.type == GF_SHAPE_CYLINDER)
            tol = 1e-3 * size;
        if (nref == 0 || gref >= margin || gref < -0.01 * size)
            continue;
        mesh_points(&a, &m, margin, &g);
        if (g.count == 0)
            fail_msg("a %s at (%g, %g, %g) %g from the cube (%d points): no mesh contact",
                     gf_shape_name(s.type), a.x[0], a.x[1], a.x[2], gref, nref);
        double gmesh = min_gap(g.pt, g.count);
        if (gref > 1e-6 * size) {
            ++apart;
            if (fabs(gmesh - gref) > tol)
                fail_msg("a %s %g apart: the mesh gives %.12g", gf_shape_name(s.type), gref, gmesh);
        } else {
            ++pressed;
            /* Pressed in, a surface has no single depth (a solid's is the shortest way out);
             * near a face they agree, near a ridge the mesh's is no deeper than the face
             * depths, and its normals never point into the cube's side. */
            if (!(gmesh >= -0.011 * size && gmesh <= 1e-9))
                fail_msg("a %s pressed %g in: the mesh gives %.12g", gf_shape_name(s.type), gref,
                         gmesh);
        }
        for (int k = 0; k < g.count; ++k) {
            /* every normal points out of the cube at its point */
            const double *p = g.pt[k].p, *n = g.pt[k].n;
            double out = 0.0;
            for (int d = 0; d < 3; ++d)
                if (fabs(p[d]) > h - 0.02)
                    out += n[d] * copysign(1.0, p[d]);
            assert_true(out > 0.0);
        }
    }
    assert_true(apart >= 300 && pressed >= 150);
    gf_trimesh_free(&m);
}

/* Inside the meshed cube as a container (its corners and edges are valleys): each point's
 * normal is one of the walls' and the deepest point against each wall is the plane's. */
static void test_inside_a_container(void **state) {
    (void)state;
    const double h = 0.5, margin = 0.05;
    gf_trimesh m;
    cube_mesh(h, 0.25, &m);
    uint64_t rng = 12;
    int checked = 0, tries = 0, corners = 0;
    static gathered g;
    while (checked < 400 && ++tries < 100000) {
        gf_shape s = random_shape(&rng, tries % 3);
        gf_body_pose a = {&s, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
        random_quat(&rng, a.q);
        for (int d = 0; d < 3; ++d)
            a.x[d] = gf_test_uniform(&rng, -0.4, 0.4);
        double size = gf_shape_bounding_radius(&s, NULL);
        /* The walls as planes, normals inwards. */
        double wall_gap[6];
        int near = 0, deep = 0;
        for (int w = 0; w < 6; ++w) {
            double n[3] = {0.0, 0.0, 0.0};
            n[w / 2] = w % 2 ? -1.0 : 1.0;
            gf_shape plane = {GF_SHAPE_PLANE, -1, {0.0, 0.0, 0.0}};
            gf_body_pose pl = {&plane, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
            pl.x[w / 2] = -h * n[w / 2];
            gf_quat_from_z(n, pl.q);
            gf_contact_point ref[GF_MANIFOLD_MAX];
            int nref = 0;
            GF_ASSERT_OK(gf_collide(&a, &pl, margin, ref, GF_MANIFOLD_MAX, &nref));
            wall_gap[w] = min_gap(ref, nref);
            near += nref > 0;
            deep |= nref > 0 && wall_gap[w] < -0.01 * size;
        }
        if (near == 0 || deep)
            continue;
        ++checked;
        corners += near > 1;
        mesh_points(&a, &m, margin, &g);
        double got[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
        for (int k = 0; k < g.count; ++k) {
            const double *n = g.pt[k].n;
            int w = -1;
            for (int c = 0; c < 6; ++c) {
                double e = n[c / 2] - (c % 2 ? -1.0 : 1.0);
                if (fabs(e) < 1e-9)
                    w = c;
            }
            if (w < 0)
                fail_msg("a %s in the container: a contact normal (%g, %g, %g) no wall has",
                         gf_shape_name(s.type), n[0], n[1], n[2]);
            got[w] = fmin(got[w], g.pt[k].gap);
        }
        for (int w = 0; w < 6; ++w) {
            if (!(fabs(got[w] - wall_gap[w]) <= 1e-9 * size) &&
                !(isinf(got[w]) && isinf(wall_gap[w])))
                fail_msg("a %s in the container: wall %d at %.12g, the mesh gives %.12g",
                         gf_shape_name(s.type), w, wall_gap[w], got[w]);
        }
    }
    assert_int_equal(checked, 400);
    assert_true(corners > 40);
    gf_trimesh_free(&m);
}

/* Bodies resting on a floor, apart from it or pressed in by up to 1 % of their size: every
 * contact pushes straight up and the deepest is the plane's. The floor is cut into triangles
 * much smaller than the bodies, so that they lie across many seams (a lone triangle would push
 * a body pressed in near its edge sideways, out across the seam); or it is one large triangle,
 * so that nothing but the face's own normal makes those of bodies lying flat on it exact. */
static void check_floor(const double *soup, size_t nt, double spread, uint64_t seed) {
    const double margin = 0.02;
    gf_trimesh m;
    gf_trimesh_init(&m);
    GF_ASSERT_OK(gf_trimesh_build(&m, nt, soup));
    gf_shape plane = {GF_SHAPE_PLANE, -1, {0.0, 0.0, 0.0}};
    gf_body_pose pl = {&plane, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
    uint64_t rng = seed;
    static gathered g;
    int pressed = 0;
    for (int trial = 0; trial < 600; ++trial) {
        gf_shape s = random_shape(&rng, trial % 3);
        gf_body_pose a = {&s, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
        random_quat(&rng, a.q);
        if (trial % 4 < 2) {
            /* lying nearly flat: faces and sides parallel to the floor */
            double tilt = gf_test_uniform(&rng, -0.02, 0.02), turn = gf_test_uniform(&rng, 0, 3);
            double q1[4] = {cos(tilt), sin(tilt), 0.0, 0.0}, q2[4] = {cos(turn), 0, 0, sin(turn)};
            double side[4] = {M_SQRT1_2, 0.0, M_SQRT1_2, 0.0}, q3[4];
            gf_quat_mul(q2, q1, q3);
            if (trial % 4 == 1 && s.type != GF_SHAPE_BOX)
                gf_quat_mul(q3, side, a.q); /* a capsule's or cylinder's side down */
            else
                memcpy(a.q, q3, sizeof q3);
        }
        a.x[0] = gf_test_uniform(&rng, -spread, spread);
        a.x[1] = gf_test_uniform(&rng, -spread, spread);
        /* the body's lowest point at the wanted height */
        double down[3] = {0.0, 0.0, -1.0}, u[3], low[3], lw[3];
        gf_quat_rotate_inv(a.q, down, u);
        gf_shape_support(&s, NULL, u, low);
        gf_quat_rotate(a.q, low, lw);
        double size = gf_shape_bounding_radius(&s, NULL);
        double want = gf_test_uniform(&rng, -0.01, 0.01) * size;
        a.x[2] = want - lw[2];
        pressed += want < 0.0;
        gf_contact_point ref[GF_MANIFOLD_MAX];
        int nref = 0;
        GF_ASSERT_OK(gf_collide(&a, &pl, margin, ref, GF_MANIFOLD_MAX, &nref));
        assert_true(nref > 0);
        mesh_points(&a, &m, margin, &g);
        assert_true(g.count > 0);
        for (int k = 0; k < g.count; ++k)
            if (!(fabs(g.pt[k].n[2] - 1.0) < 1e-12))
                fail_msg("a %s at %.3g: a contact normal (%g, %g, %g)", gf_shape_name(s.type), want,
                         g.pt[k].n[0], g.pt[k].n[1], g.pt[k].n[2]);
        double gm = min_gap(g.pt, g.count), gr = min_gap(ref, nref);
        if (!(fabs(gm - gr) <= 1e-9 * size))
            fail_msg("a %s at %.3g: the plane's deepest point %.12g, the mesh's %.12g",
                     gf_shape_name(s.type), want, gr, gm);
    }
    assert_true(pressed > 200);
    gf_trimesh_free(&m);
}

static void test_resting_on_a_floor(void **state) {
    (void)state;
    const double c[3] = {0.0, 0.0, 0.0}, up[3] = {0.0, 0.0, 1.0}, ex[3] = {1.0, 0.0, 0.0};
    double *soup;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_rectangle(c, up, ex, 2.0, 2.0, 0.07, &soup, &nt));
    check_floor(soup, nt, 0.5, 13);
    free(soup);
    const double lone[9] = {-3.0, -3.0, 0.0, 3.0, -3.0, 0.0, 0.0, 3.0, 0.0};
    check_floor(lone, 1, 0.5, 14);
}

/* A capsule lying along a ridge of the (uncut) cube, apart from it: the ridge's edge is shared
 * by two triangles, and the contact comes once: the two ends of the segment the capsule's axis
 * and the edge overlap in, as against the solid cube. */
static void test_a_ridge_gives_its_contact_once(void **state) {
    (void)state;
    const double h = 0.5;
    gf_trimesh m;
    cube_mesh(h, 0.0, &m);
    gf_shape cube = gf_shape_box(h, h, h), s = gf_shape_capsule(0.1, 0.2);
    gf_body_pose solid = {&cube, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
    /* axis along x, over the edge y = z = h, 0.01 apart along (0, 1, 1) / sqrt 2 */
    const double off = (0.1 + 0.01) / sqrt(2.0);
    const double ex[3] = {1.0, 0.0, 0.0};
    gf_body_pose a = {&s, NULL, {0.1, h + off, h + off}, {1.0, 0.0, 0.0, 0.0}};
    gf_quat_from_z(ex, a.q);
    gf_contact_point ref[GF_MANIFOLD_MAX];
    int nref = 0;
    GF_ASSERT_OK(gf_collide(&a, &solid, 0.05, ref, GF_MANIFOLD_MAX, &nref));
    assert_int_equal(nref, 2);
    static gathered g;
    mesh_points(&a, &m, 0.05, &g);
    assert_int_equal(g.count, 2);
    for (int k = 0; k < 2; ++k) {
        GF_ASSERT_NEAR(g.pt[k].gap, 0.01, 1e-12);
        GF_ASSERT_NEAR(g.pt[k].n[1], 1.0 / sqrt(2.0), 1e-12);
        GF_ASSERT_NEAR(g.pt[k].n[2], 1.0 / sqrt(2.0), 1e-12);
    }
    gf_trimesh_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outside_a_convex_mesh),
        cmocka_unit_test(test_inside_a_container),
        cmocka_unit_test(test_resting_on_a_floor),
        cmocka_unit_test(test_a_ridge_gives_its_contact_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
