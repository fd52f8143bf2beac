/* Shapes (issue 12): names, containment, mass properties, bounding radius, support function and
 * clump templates. References are independent of the code under test: textbook inertia
 * formulas, midpoint-grid and Monte-Carlo integrals written here (membership tested with the
 * shape's defining inequalities, or with gf_shape_contains after checking it on hand-computed
 * points), the lens formula and 1D integrals of disc moments for two overlapping spheres, and
 * dense samples of each surface from its parametrisation. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "granflow/shape.h"
#include "core/vec.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLOWDOWN 5.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOWDOWN 5.0
#endif
#endif
#ifndef SLOWDOWN
#define SLOWDOWN 1.0
#endif

/* An arbitrary rotation for "any frame" cases. */
static void test_quat(double q[4]) {
    double n = sqrt(0.8 * 0.8 + 0.3 * 0.3 + 0.45 * 0.45 + 0.25 * 0.25);
    q[0] = 0.8 / n;
    q[1] = -0.3 / n;
    q[2] = 0.45 / n;
    q[3] = 0.25 / n;
}

static void test_names(void **state) {
    (void)state;
    for (int k = 0; k < GF_SHAPE_COUNT; ++k)
        assert_int_equal(gf_shape_type_from_name(gf_shape_name((gf_shape_type)k)), k);
    assert_string_equal(gf_shape_name(GF_SHAPE_CYLINDER), "cylinder");
    assert_int_equal(gf_shape_type_from_name("capsule"), GF_SHAPE_CAPSULE);
    assert_int_equal(gf_shape_type_from_name("plane"), GF_SHAPE_PLANE);
    assert_int_equal(gf_shape_type_from_name("cube"), -1);
    assert_int_equal(gf_shape_type_from_name(""), -1);
    gf_shape s = gf_shape_capsule(0.5, 2.0);
    assert_int_equal(s.type, GF_SHAPE_CAPSULE);
    assert_int_equal(s.clump, -1);
    assert_true(s.dim[0] == 0.5 && s.dim[1] == 2.0 && s.dim[2] == 0.0);
    s = gf_shape_clump(3, 1.5);
    assert_int_equal(s.type, GF_SHAPE_CLUMP);
    assert_int_equal(s.clump, 3);
    assert_true(s.dim[0] == 1.5);
}

typedef struct {
    double p[3];
    int inside;
} probe;

static void check_probes(const gf_shape *s, const gf_clumps *cl, const probe *pr, int n) {
    for (int k = 0; k < n; ++k)
        if (gf_shape_contains(s, cl, pr[k].p) != pr[k].inside)
            fail_msg("%s: point (%g, %g, %g) should be %s", gf_shape_name(s->type), pr[k].p[0],
                     pr[k].p[1], pr[k].p[2], pr[k].inside ? "inside" : "outside");
}

/* Points whose side was worked out by hand. */
static void test_contains_hand_points(void **state) {
    (void)state;
    gf_shape sphere = gf_shape_sphere(2.0);
    const probe ps[] = {{{1, 1, 1}, 1},       /* |p|^2 = 3 */
                        {{1.2, 1.2, 1.2}, 0}, /* 4.32 */
                        {{0, 0, -2}, 1},      /* on the surface */
                        {{0, 0, -2.001}, 0}};
    check_probes(&sphere, NULL, ps, 4);

    gf_shape box = gf_shape_box(1, 2, 3);
    const probe pb[] = {{{0.9, -1.9, 2.9}, 1}, {{1.1, 0, 0}, 0},  {{0, 0, -3.01}, 0},
                        {{-1, 2, -3}, 1},      {{0, 2.01, 0}, 0}, {{0.99, 1.99, 0}, 1}};
    check_probes(&box, NULL, pb, 6);

    gf_shape caps = gf_shape_capsule(1, 2);
    const probe pc[] = {{{0, 0, 2.9}, 1},                          /* 0.9 from the segment's end */
                        {{0, 0, 3.1}, 0},      {{0.8, 0, 2.5}, 1}, /* 0.64 + 0.25 */
                        {{0.8, 0, 2.7}, 0},                        /* 0.64 + 0.49 */
                        {{0.99, 0, -1.5}, 1},  {{1.01, 0, 0}, 0},
                        {{0, -0.6, -2.75}, 1}, /* 0.36 + 0.5625 */
                        {{0, -0.6, -2.85}, 0}};
    check_probes(&caps, NULL, pc, 8);

    gf_shape cyl = gf_shape_cylinder(1, 2);
    const probe py[] = {{{0.7, 0.7, 1.9}, 1}, /* 0.98 */
                        {{0.72, 0.72, 0}, 0}, /* 1.0368 */
                        {{0, 0, 2.1}, 0},     {{0.9, 0, -1.99}, 1},
                        {{0.8, 0, 2.5}, 0}, /* inside the capsule, not the cylinder */
                        {{0, 1, 2}, 1}};
    check_probes(&cyl, NULL, py, 6);

    gf_shape plane = {.type = GF_SHAPE_PLANE, .clump = -1};
    const probe pp[] = {{{5, 5, -0.1}, 1}, {{0, 0, 0.1}, 0}, {{-3, 1e6, 0}, 1}};
    check_probes(&plane, NULL, pp, 3);

    /* A clump of two spheres given along x: the template holds them in its principal frame,
     * so hand-picked input-frame points are carried there first. */
    const double c[2][3] = {{0, 0, 0}, {3, 0, 0}};
    const double r[2] = {1, 2};
    gf_clumps cl;
    gf_clumps_init(&cl);
    gf_clump t;
    GF_ASSERT_OK(gf_clump_make(2, c, r, &t));
    int32_t idx;
    GF_ASSERT_OK(gf_clumps_add(&cl, &t, &idx));
    const probe in[] = {{{0.5, 0.5, 0.5}, 1}, /* first sphere */
                        {{4.5, 1, 0.5}, 1},   /* 2.25 + 1 + 0.25 in the second */
                        {{1.2, 0, 0}, 1},     /* in the second only */
                        {{0.9, 0.9, 0}, 0},   /* 1.62 > 1 and 4.41 + 0.81 > 4 */
                        {{-1.01, 0, 0}, 0},   {{5.01, 0, 0}, 0}};
    for (double scale = 1.0; scale <= 2.0; scale += 1.0) {
        gf_shape s = gf_shape_clump(idx, scale);
        probe pr[6];
        for (int k = 0; k < 6; ++k) {
            double e[3];
            for (int a = 0; a < 3; ++a)
                e[a] = in[k].p[a] - t.com_input[a];
            gf_quat_rotate_inv(t.q_input, e, pr[k].p);
            for (int a = 0; a < 3; ++a)
                pr[k].p[a] *= scale;
            pr[k].inside = in[k].inside;
        }
        check_probes(&s, &cl, pr, 6);
    }
    gf_clumps_free(&cl);
}

/* Textbook formulas, written from the whole-body expressions (capsule: cylinder of height H
 * plus a sphere split into two hemispheres, each at 3r/8 + H/2 from the centre). */
static void test_mass_closed_forms(void **state) {
    (void)state;
    const double rho = 2500.0;
    double m, I[3];
    gf_shape s = gf_shape_sphere(0.3);
    gf_shape_mass_properties(&s, NULL, rho, &m, I);
    double ms = rho * 4.0 / 3.0 * M_PI * 0.027;
    GF_ASSERT_NEAR(m, ms, 1e-12 * ms);
    GF_ASSERT_NEAR(gf_shape_volume(&s, NULL), ms / rho, 1e-12 * ms / rho);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(I[k], 0.4 * ms * 0.09, 1e-12 * ms * 0.09);

    /* Box of edges a, b, c: I_x = m (b^2 + c^2) / 12. */
    double a = 0.2, b = 0.6, c = 1.0;
    s = gf_shape_box(a / 2, b / 2, c / 2);
    gf_shape_mass_properties(&s, NULL, rho, &m, I);
    double mb = rho * a * b * c;
    GF_ASSERT_NEAR(m, mb, 1e-12 * mb);
    GF_ASSERT_NEAR(I[0], mb * (b * b + c * c) / 12.0, 1e-12 * mb);
    GF_ASSERT_NEAR(I[1], mb * (a * a + c * c) / 12.0, 1e-12 * mb);
    GF_ASSERT_NEAR(I[2], mb * (a * a + b * b) / 12.0, 1e-12 * mb);

    /* Cylinder of radius r, height H: I_z = m r^2 / 2, I_x = m (3 r^2 + H^2) / 12. */
    double r = 0.25, H = 1.4;
    s = gf_shape_cylinder(r, H / 2);
    gf_shape_mass_properties(&s, NULL, rho, &m, I);
    double mc = rho * M_PI * r * r * H;
    GF_ASSERT_NEAR(m, mc, 1e-12 * mc);
    GF_ASSERT_NEAR(I[2], mc * r * r / 2, 1e-12 * mc);
    GF_ASSERT_NEAR(I[0], mc * (3 * r * r + H * H) / 12, 1e-12 * mc);
    GF_ASSERT_NEAR(I[1], I[0], 0.0);

    /* Capsule: hemisphere of mass m_h about its centroid 83/320 m_h r^2, centroid 3r/8 past the
     * flat face. */
    s = gf_shape_capsule(r, H / 2);
    gf_shape_mass_properties(&s, NULL, rho, &m, I);
    double mh = rho * 2.0 / 3.0 * M_PI * r * r * r;
    double arm = H / 2 + 3 * r / 8;
    GF_ASSERT_NEAR(m, mc + 2 * mh, 1e-12 * m);
    GF_ASSERT_NEAR(gf_shape_volume(&s, NULL), (mc + 2 * mh) / rho, 1e-12 * m / rho);
    double Ix = mc * (3 * r * r + H * H) / 12 + 2 * mh * (83.0 / 320.0 * r * r + arm * arm);
    double Iz = mc * r * r / 2 + 2 * mh * 2.0 / 5.0 * r * r;
    GF_ASSERT_NEAR(I[0], Ix, 1e-12 * Ix);
    GF_ASSERT_NEAR(I[1], Ix, 1e-12 * Ix);
    GF_ASSERT_NEAR(I[2], Iz, 1e-12 * Iz);
    /* A capsule of length 0 is a sphere. */
    s = gf_shape_capsule(r, 1e-300);
    gf_shape_mass_properties(&s, NULL, rho, &m, I);
    double msr = rho * 4.0 / 3.0 * M_PI * r * r * r;
    GF_ASSERT_NEAR(I[0], 0.4 * msr * r * r, 1e-12 * msr * r * r);
}

/* Mass, centre and full inertia tensor (about the origin) by the midpoint rule on an n^3 grid
 * over [-1, 1]^3, membership from gf_shape_contains (itself checked on hand points above). The
 * grid is turned by q, if given, and shifted off the body's centre so that round bodies do not
 * line up with it (a lattice aligned with a cylinder's axis counts its disc slices alike, and one
 * centred on a sphere its octants alike, adding up their errors). */
static void grid_moments(const gf_shape *s, const double *q, int n, double *vol, double first[3],
                         double tensor[3][3]) {
    double h = 2.0 / n, dv = h * h * h, v = 0, f[3] = {0}, t[3][3] = {{0}};
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < n; ++k) {
                double g[3] = {-1 + (i + 0.5) * h, -1 + (j + 0.5) * h, -1 + (k + 0.5) * h}, p[3];
                if (q) {
                    g[0] += 0.37 * h;
                    g[1] += 0.61 * h;
                    g[2] += 0.23 * h;
                    gf_quat_rotate(q, g, p);
                } else {
                    memcpy(p, g, sizeof p);
                }
                if (!gf_shape_contains(s, NULL, p))
                    continue;
                double p2 = gf_dot(p, p);
                v += dv;
                for (int a = 0; a < 3; ++a) {
                    f[a] += dv * p[a];
                    for (int b = 0; b < 3; ++b)
                        t[a][b] += dv * ((a == b ? p2 : 0.0) - p[a] * p[b]);
                }
            }
    *vol = v;
    memcpy(first, f, sizeof f);
    memcpy(tensor, t, sizeof t);
}

/* The box's faces lie on cell faces of an aligned grid (h = 0.02), so that it is counted
 * exactly; the round bodies are sampled by a turned grid. */
static void test_mass_grid(void **state) {
    (void)state;
    gf_shape shapes[4] = {gf_shape_sphere(0.9), gf_shape_box(0.36, 0.62, 0.84),
                          gf_shape_capsule(0.45, 0.4), gf_shape_cylinder(0.7, 0.55)};
    double q[4];
    test_quat(q);
    for (int k = 0; k < 4; ++k) {
        double R = gf_shape_bounding_radius(&shapes[k], NULL), v, f[3], t[3][3], m, I[3];
        assert_true(R < 0.95 || shapes[k].type == GF_SHAPE_BOX); /* inside the grid */
        grid_moments(&shapes[k], shapes[k].type == GF_SHAPE_BOX ? NULL : q, 100, &v, f, t);
        gf_shape_mass_properties(&shapes[k], NULL, 1.0, &m, I);
        double scale = m * R * R;
        print_message("%s: volume %.2e, moments %.2e %.2e %.2e relative\n",
                      gf_shape_name(shapes[k].type), v / m - 1, t[0][0] / I[0] - 1,
                      t[1][1] / I[1] - 1, t[2][2] / I[2] - 1);
        if (fabs(v - m) > 1e-3 * m)
            fail_msg("%s: grid volume %g, mass per density %g", gf_shape_name(shapes[k].type), v,
                     m);
        for (int a = 0; a < 3; ++a) {
            GF_ASSERT_NEAR(f[a], 0.0, 1e-3 * m * R);
            GF_ASSERT_NEAR(t[a][a], I[a], 2e-3 * I[a]);
            for (int b = 0; b < 3; ++b)
                if (b != a)
                    GF_ASSERT_NEAR(t[a][b], 0.0, 1e-3 * scale);
        }
    }
}

/* Volume, centre and inertia tensor (about the centre) of two overlapping spheres (radii r1,
 * r2, centres 0 and d on the axis): the union's slices are discs of the first sphere below the
 * plane z_p where the two spheres' slices are equal, of the second above it, so every moment is
 * a 1D integral of a polynomial, done exactly by 5-point Gauss-Legendre. */
static void two_sphere_reference(double r1, double r2, double d, double *vol, double *zc,
                                 double *axial, double *transverse) {
    static const double x5[5] = {-0.9061798459386640, -0.5384693101056831, 0.0, 0.5384693101056831,
                                 0.9061798459386640};
    static const double w5[5] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889,
                                 0.4786286704993665, 0.2369268850561891};
    double zp = (d * d + r1 * r1 - r2 * r2) / (2 * d);
    double lim[3] = {-r1, zp, d + r2}, cen[2] = {0.0, d}, rr[2] = {r1, r2};
    double m0 = 0, m1 = 0, m2 = 0, ax = 0, disc = 0;
    for (int piece = 0; piece < 2; ++piece) {
        double lo = lim[piece], hi = lim[piece + 1];
        for (int k = 0; k < 5; ++k) {
            double z = 0.5 * (lo + hi) + 0.5 * (hi - lo) * x5[k], w = 0.5 * (hi - lo) * w5[k];
            double u = z - cen[piece], rho2 = rr[piece] * rr[piece] - u * u;
            m0 += w * M_PI * rho2;
            m1 += w * M_PI * rho2 * z;
            m2 += w * M_PI * rho2 * z * z;
            ax += w * M_PI * rho2 * rho2 / 2;   /* disc: int (x^2 + y^2) dA */
            disc += w * M_PI * rho2 * rho2 / 4; /* disc: int x^2 dA */
        }
    }
    *vol = m0;
    *zc = m1 / m0;
    *axial = ax;
    *transverse = disc + (m2 - m1 * m1 / m0);
}

/* The inertia tensor of a template in the frame its members were given in, from its principal
 * moments and q_input: R diag(I) R^T. */
static void input_frame_tensor(const gf_clump *t, double out[3][3]) {
    double axis[3][3];
    for (int k = 0; k < 3; ++k) {
        double e[3] = {k == 0, k == 1, k == 2};
        gf_quat_rotate(t->q_input, e, axis[k]);
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            out[a][b] = 0;
            for (int k = 0; k < 3; ++k)
                out[a][b] += axis[k][a] * t->second_moment[k] * axis[k][b];
        }
}

static void test_clump_two_spheres(void **state) {
    (void)state;
    double q[4];
    test_quat(q);
    const double origin[3] = {0.7, -1.3, 2.2};
    const double cases[][3] = {{1.0, 1.0, 1.2},  {1.0, 1.0, 0.1},        {1.0, 1.0, 1.99},
                               {0.5, 1.2, 1.0},  {1.3, 0.4, 1.5},        {0.2, 2.0, 2.05},
                               {1.0, 1.0, 1e-9}, {1.0, 1.0 + 1e-9, 1e-6}};
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; ++n) {
        double r1 = cases[n][0], r2 = cases[n][1], d = cases[n][2];
        double axis[3], ez[3] = {0, 0, 1};
        gf_quat_rotate(q, ez, axis);
        double c[2][3], r[2] = {r1, r2};
        for (int a = 0; a < 3; ++a) {
            c[0][a] = origin[a];
            c[1][a] = origin[a] + d * axis[a];
        }
        gf_clump t;
        GF_ASSERT_OK(gf_clump_make(2, c, r, &t));
        double vol, zc, Ia, It;
        two_sphere_reference(r1, r2, d, &vol, &zc, &Ia, &It);
        /* Lens formula for the volume, independent of the slices. */
        double lens = M_PI * (r1 + r2 - d) * (r1 + r2 - d) *
                      (d * d + 2 * d * (r1 + r2) - 3 * (r1 - r2) * (r1 - r2)) / (12 * d);
        double lens_vol = 4.0 / 3.0 * M_PI * (r1 * r1 * r1 + r2 * r2 * r2) - lens;
        GF_ASSERT_NEAR(vol, lens_vol, 1e-12 * vol);
        GF_ASSERT_NEAR(t.volume, vol, 1e-12 * vol);
        double L = fmax(r1, r2);
        for (int a = 0; a < 3; ++a)
            GF_ASSERT_NEAR(t.com_input[a], origin[a] + zc * axis[a], 1e-12 * L);
        /* Principal moments ascending; the symmetry axis carries the axial one. */
        double I[3] = {Ia, It, It};
        if (Ia > It) {
            I[0] = It;
            I[2] = Ia;
        }
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(t.second_moment[k], I[k], 1e-12 * It);
        double J[3][3];
        input_frame_tensor(&t, J);
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                double ref = It * (a == b) + (Ia - It) * axis[a] * axis[b];
                GF_ASSERT_NEAR(J[a][b], ref, 1e-12 * It);
            }
        /* The members in the principal frame go back to where they were given. */
        for (int k = 0; k < 2; ++k) {
            double back[3];
            gf_quat_rotate(t.q_input, t.centre[k], back);
            for (int a = 0; a < 3; ++a)
                GF_ASSERT_NEAR(back[a] + t.com_input[a], c[k][a], 1e-12 * L);
            assert_true(t.radius[k] == r[k]);
        }
        double bound = fmax(fabs(zc) + r1, fabs(d - zc) + r2);
        GF_ASSERT_NEAR(t.bounding_radius, bound, 1e-12 * L);
    }
}

/* Separate spheres: sums of spheres moved by the parallel-axis theorem, exact. */
static void test_clump_separate_exact(void **state) {
    (void)state;
    const double c[3][3] = {{0, 0, 0}, {2.5, 0.5, 0}, {0.3, -0.2, 3.1}};
    const double r[3] = {1.0, 1.2, 0.8};
    gf_clump t;
    GF_ASSERT_OK(gf_clump_make(3, c, r, &t));
    double v = 0, m1[3] = {0}, vk[3];
    for (int k = 0; k < 3; ++k) {
        vk[k] = 4.0 / 3.0 * M_PI * r[k] * r[k] * r[k];
        v += vk[k];
        for (int a = 0; a < 3; ++a)
            m1[a] += vk[k] * c[k][a];
    }
    GF_ASSERT_NEAR(t.volume, v, 1e-14 * v);
    double com[3] = {m1[0] / v, m1[1] / v, m1[2] / v}, J[3][3] = {{0}}, T[3][3];
    for (int k = 0; k < 3; ++k) {
        double e[3] = {c[k][0] - com[0], c[k][1] - com[1], c[k][2] - com[2]};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                J[a][b] += vk[k] * ((a == b) * (0.4 * r[k] * r[k] + gf_dot(e, e)) - e[a] * e[b]);
    }
    for (int a = 0; a < 3; ++a)
        GF_ASSERT_NEAR(t.com_input[a], com[a], 1e-14 * 3);
    input_frame_tensor(&t, T);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            GF_ASSERT_NEAR(T[a][b], J[a][b], 1e-12 * J[0][0]);
    /* A sphere inside another, and a duplicate, change nothing. */
    const double c2[5][3] = {{0, 0, 0}, {2.5, 0.5, 0}, {0.3, -0.2, 3.1}, {0.2, 0.1, 0}, {0, 0, 0}};
    const double r2[5] = {1.0, 1.2, 0.8, 0.5, 1.0};
    gf_clump t2;
    GF_ASSERT_OK(gf_clump_make(5, c2, r2, &t2));
    GF_ASSERT_NEAR(t2.volume, v, 1e-14 * v);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(t2.second_moment[k], t.second_moment[k], 1e-12 * J[0][0]);
}

/* A Monte-Carlo estimate of the volume, first moments about `ref` and inertia tensor about
 * `ref` of a union of spheres, with the standard error of each. */
typedef struct {
    double v, f[3], t[3][3];
    double sv, sf[3], st[3][3];
} mc_result;

static void monte_carlo(int n, const double c[][3], const double r[], const double ref[3],
                        long samples, uint64_t seed, mc_result *out) {
    double lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
        lo[a] = INFINITY;
        hi[a] = -INFINITY;
        for (int k = 0; k < n; ++k) {
            lo[a] = fmin(lo[a], c[k][a] - r[k]);
            hi[a] = fmax(hi[a], c[k][a] + r[k]);
        }
    }
    double box = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
    double s1[13] = {0}, s2[13] = {0};
    for (long i = 0; i < samples; ++i) {
        double p[3];
        for (int a = 0; a < 3; ++a)
            p[a] = gf_test_uniform(&seed, lo[a], hi[a]);
        int in = 0;
        for (int k = 0; k < n && !in; ++k) {
            double e[3] = {p[0] - c[k][0], p[1] - c[k][1], p[2] - c[k][2]};
            in = gf_dot(e, e) <= r[k] * r[k];
        }
        if (!in)
            continue;
        double e[3] = {p[0] - ref[0], p[1] - ref[1], p[2] - ref[2]}, e2 = gf_dot(e, e);
        double f[13] = {1, e[0], e[1], e[2]};
        int m = 4;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
                f[m++] = (a == b) * e2 - e[a] * e[b];
        for (int k = 0; k < 13; ++k) {
            s1[k] += f[k];
            s2[k] += f[k] * f[k];
        }
    }
    double mean[13], err[13];
    for (int k = 0; k < 13; ++k) {
        mean[k] = s1[k] / samples;
        err[k] = box * sqrt(fmax(0.0, s2[k] / samples - mean[k] * mean[k]) / samples);
        mean[k] *= box;
    }
    out->v = mean[0];
    out->sv = err[0];
    for (int a = 0; a < 3; ++a) {
        out->f[a] = mean[1 + a];
        out->sf[a] = err[1 + a];
        for (int b = 0; b < 3; ++b) {
            out->t[a][b] = mean[4 + 3 * a + b];
            out->st[a][b] = err[4 + 3 * a + b];
        }
    }
}

static void check_against_monte_carlo(int n, const double c[][3], const double r[],
                                      const gf_clump *t, long samples, uint64_t seed) {
    mc_result mc;
    monte_carlo(n, c, r, t->com_input, samples, seed, &mc);
    const double z = 5.0; /* standard errors */
    if (fabs(t->volume - mc.v) > z * mc.sv)
        fail_msg("volume %g, Monte Carlo %g +- %g", t->volume, mc.v, mc.sv);
    for (int a = 0; a < 3; ++a)
        if (fabs(mc.f[a]) > z * mc.sf[a])
            fail_msg("first moment %d about the centre of mass: Monte Carlo %g +- %g", a, mc.f[a],
                     mc.sf[a]);
    double J[3][3];
    input_frame_tensor(t, J);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            if (fabs(J[a][b] - mc.t[a][b]) > z * mc.st[a][b])
                fail_msg("inertia [%d][%d] = %g, Monte Carlo %g +- %g", a, b, J[a][b], mc.t[a][b],
                         mc.st[a][b]);
}

/* Four overlapping spheres (pairwise lenses and triple overlaps) in an arbitrary frame. */
static void test_clump_monte_carlo(void **state) {
    (void)state;
    const double c[4][3] = {{0.1, 0.2, 0.3}, {0.9, 0.1, 0.4}, {0.5, 0.8, -0.2}, {0.4, 0.4, 0.9}};
    const double r[4] = {0.6, 0.5, 0.55, 0.45};
    gf_clump t;
    GF_ASSERT_OK(gf_clump_make(4, c, r, &t));
    assert_true(t.second_moment[0] <= t.second_moment[1]);
    assert_true(t.second_moment[1] <= t.second_moment[2]);
    check_against_monte_carlo(4, c, r, &t, 1L << 21, 12345);
    /* Right-handed principal frame: q_input is a unit quaternion, and it brings the members
     * back to their input positions. */
    double qn = sqrt(t.q_input[0] * t.q_input[0] + t.q_input[1] * t.q_input[1] +
                     t.q_input[2] * t.q_input[2] + t.q_input[3] * t.q_input[3]);
    GF_ASSERT_NEAR(qn, 1.0, 1e-14);
    double bound = 0.0;
    for (int k = 0; k < 4; ++k) {
        double back[3];
        gf_quat_rotate(t.q_input, t.centre[k], back);
        for (int a = 0; a < 3; ++a)
            GF_ASSERT_NEAR(back[a] + t.com_input[a], c[k][a], 1e-13);
        double e[3] = {c[k][0] - t.com_input[0], c[k][1] - t.com_input[1],
                       c[k][2] - t.com_input[2]};
        bound = fmax(bound, gf_norm(e) + r[k]);
    }
    GF_ASSERT_NEAR(t.bounding_radius, bound, 1e-13);
}

/* The same members given in another frame (turned and moved) make the same template: the
 * quadrature's polar axes and breakpoints change with the frame, its results must not. Also
 * a lattice of equal spheres, where many rims cross at common points. */
static void test_clump_frame_invariance(void **state) {
    (void)state;
    double q[4];
    test_quat(q);
    const double shift[3] = {-4.0, 2.5, 0.3};
    double c[9][3], r[9];
    const double c4[4][3] = {{0.1, 0.2, 0.3}, {0.9, 0.1, 0.4}, {0.5, 0.8, -0.2}, {0.4, 0.4, 0.9}};
    const double r4[4] = {0.6, 0.5, 0.55, 0.45};
    for (int set = 0; set < 2; ++set) {
        int n = set == 0 ? 4 : 9;
        for (int k = 0; k < n; ++k) {
            for (int a = 0; a < 3; ++a)
                c[k][a] = set == 0 ? c4[k][a] : 0.0;
            r[k] = set == 0 ? r4[k] : 0.5;
            if (set == 1) {
                c[k][0] = 0.5 * (k % 3);
                c[k][1] = 0.5 * (k / 3);
            }
        }
        double c2[9][3];
        for (int k = 0; k < n; ++k) {
            gf_quat_rotate(q, c[k], c2[k]);
            for (int a = 0; a < 3; ++a)
                c2[k][a] += shift[a];
        }
        gf_clump t1, t2;
        GF_ASSERT_OK(gf_clump_make(n, c, r, &t1));
        GF_ASSERT_OK(gf_clump_make(n, c2, r, &t2));
        GF_ASSERT_NEAR(t2.volume, t1.volume, 1e-13 * t1.volume);
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(t2.second_moment[k], t1.second_moment[k], 1e-13 * t1.second_moment[2]);
        double com[3], J1[3][3], J2[3][3];
        gf_quat_rotate(q, t1.com_input, com);
        for (int a = 0; a < 3; ++a)
            GF_ASSERT_NEAR(t2.com_input[a], com[a] + shift[a], 1e-13 * 5);
        input_frame_tensor(&t1, J1);
        input_frame_tensor(&t2, J2);
        double R[3][3];
        for (int k = 0; k < 3; ++k) {
            double e[3] = {k == 0, k == 1, k == 2}, col[3];
            gf_quat_rotate(q, e, col);
            for (int a = 0; a < 3; ++a)
                R[a][k] = col[a];
        }
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                double ref = 0;
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j)
                        ref += R[a][i] * J1[i][j] * R[b][j];
                GF_ASSERT_NEAR(J2[a][b], ref, 1e-12 * t1.second_moment[2]);
            }
        if (set == 1)
            check_against_monte_carlo(n, c2, r, &t2, 1L << 20, 31);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* 32 spheres packed densely (most overlapping most others), and a 32-sphere chain: made fast
 * and as accurate as a Monte-Carlo estimate can tell. */
static void test_clump_large(void **state) {
    (void)state;
    double c[32][3], r[32];
    uint64_t seed = 777;
    for (int k = 0; k < 32; ++k) {
        for (int a = 0; a < 3; ++a)
            c[k][a] = gf_test_uniform(&seed, -1.0, 1.0);
        r[k] = gf_test_uniform(&seed, 0.4, 1.0);
    }
    gf_clump t;
    double best = INFINITY;
    for (int rep = 0; rep < 3; ++rep) {
        double t0 = now();
        GF_ASSERT_OK(gf_clump_make(32, c, r, &t));
        best = fmin(best, now() - t0);
    }
    print_message("32-sphere blob template made in %.2f ms\n", 1e3 * best);
    if (best > 0.05 * SLOWDOWN)
        fail_msg("making a 32-sphere template took %g s", best);
    check_against_monte_carlo(32, c, r, &t, 1L << 20, 99);

    for (int k = 0; k < 32; ++k) {
        c[k][0] = 0.15 * k;
        c[k][1] = 0.05 * sin(k);
        c[k][2] = 0.03 * cos(0.7 * k);
        r[k] = 0.2 + 0.02 * (k % 3);
    }
    best = INFINITY;
    for (int rep = 0; rep < 3; ++rep) {
        double t0 = now();
        GF_ASSERT_OK(gf_clump_make(32, c, r, &t));
        best = fmin(best, now() - t0);
    }
    print_message("32-sphere chain template made in %.2f ms\n", 1e3 * best);
    if (best > 0.05 * SLOWDOWN)
        fail_msg("making a 32-sphere template took %g s", best);
    check_against_monte_carlo(32, c, r, &t, 1L << 20, 7);
}

/* Scaling a clump by s scales volume by s^3, moments by s^5, sizes by s: the same as a template
 * made from scaled members. */
static void test_clump_scale(void **state) {
    (void)state;
    const double c[3][3] = {{0, 0, 0}, {0.8, 0.2, 0}, {0.1, 0.9, 0.3}};
    const double r[3] = {0.5, 0.6, 0.4};
    double cs[3][3], rs[3], s = 2.5;
    for (int k = 0; k < 3; ++k) {
        rs[k] = s * r[k];
        for (int a = 0; a < 3; ++a)
            cs[k][a] = s * c[k][a];
    }
    gf_clumps cl;
    gf_clumps_init(&cl);
    gf_clump t, ts;
    GF_ASSERT_OK(gf_clump_make(3, c, r, &t));
    GF_ASSERT_OK(gf_clump_make(3, cs, rs, &ts));
    int32_t i0, i1;
    GF_ASSERT_OK(gf_clumps_add(&cl, &t, &i0));
    GF_ASSERT_OK(gf_clumps_add(&cl, &ts, &i1));
    gf_shape a = gf_shape_clump(i0, s), b = gf_shape_clump(i1, 1.0);
    double ma, mb, Ia[3], Ib[3];
    gf_shape_mass_properties(&a, &cl, 1200.0, &ma, Ia);
    gf_shape_mass_properties(&b, &cl, 1200.0, &mb, Ib);
    GF_ASSERT_NEAR(ma, mb, 1e-10 * mb);
    GF_ASSERT_NEAR(gf_shape_volume(&a, &cl), gf_shape_volume(&b, &cl), 1e-10 * mb / 1200.0);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(Ia[k], Ib[k], 1e-10 * Ib[2]);
    GF_ASSERT_NEAR(gf_shape_bounding_radius(&a, &cl), gf_shape_bounding_radius(&b, &cl), 1e-12);
    gf_clumps_free(&cl);
}

static void test_clumps_store(void **state) {
    (void)state;
    gf_clumps cl;
    gf_clumps_init(&cl);
    assert_int_equal(cl.count, 0);
    for (int k = 0; k < 5; ++k) {
        const double c[1][3] = {{k, 0, 0}};
        const double r[1] = {1.0 + k};
        gf_clump t;
        GF_ASSERT_OK(gf_clump_make(1, c, r, &t));
        int32_t idx = -7;
        GF_ASSERT_OK(gf_clumps_add(&cl, &t, &idx));
        assert_int_equal(idx, k);
    }
    assert_int_equal(cl.count, 5);
    for (int k = 0; k < 5; ++k) {
        double r = 1.0 + k;
        assert_true(cl.item[k].radius[0] == r);
        GF_ASSERT_NEAR(cl.item[k].volume, 4.0 / 3.0 * M_PI * r * r * r, 1e-14 * r * r * r);
        GF_ASSERT_NEAR(cl.item[k].com_input[0], k, 0.0);
        GF_ASSERT_NEAR(gf_norm(cl.item[k].centre[0]), 0.0, 0.0);
        GF_ASSERT_NEAR(cl.item[k].second_moment[1], 4.0 / 3.0 * M_PI * 0.4 * pow(r, 5),
                       1e-14 * pow(r, 5));
    }
    gf_clumps_free(&cl);
    assert_int_equal(cl.count, 0);
    assert_null(cl.item);
}

/* Dense surface samples of a shape from its parametrisation (body frame). */
static int surface_samples(const gf_shape *s, const gf_clumps *cl, double (*p)[3], int cap) {
    int n = 0;
    const int NA = 48, NB = 96;
#define PUT(x, y, z)                                                                               \
    do {                                                                                           \
        if (n < cap) {                                                                             \
            p[n][0] = (x);                                                                         \
            p[n][1] = (y);                                                                         \
            p[n][2] = (z);                                                                         \
            ++n;                                                                                   \
        }                                                                                          \
    } while (0)
    const double *d = s->dim;
    switch (s->type) {
    case GF_SHAPE_SPHERE:
    case GF_SHAPE_CAPSULE:
        for (int i = 0; i <= NA; ++i)
            for (int j = 0; j < NB; ++j) {
                double th = M_PI * i / NA, ph = 2 * M_PI * j / NB;
                double z = d[0] * cos(th);
                double off = s->type == GF_SHAPE_CAPSULE ? (z >= 0 ? d[1] : -d[1]) : 0.0;
                PUT(d[0] * sin(th) * cos(ph), d[0] * sin(th) * sin(ph), z + off);
                if (s->type == GF_SHAPE_CAPSULE && i == NA / 2)
                    for (int m = 0; m <= 16; ++m) /* the cylindrical side */
                        PUT(d[0] * cos(ph), d[0] * sin(ph), -d[1] + 2 * d[1] * m / 16);
            }
        break;
    case GF_SHAPE_BOX:
        for (int f = 0; f < 3; ++f)
            for (int sg = -1; sg <= 1; sg += 2)
                for (int i = 0; i <= 40; ++i)
                    for (int j = 0; j <= 40; ++j) {
                        double q[3];
                        int u = (f + 1) % 3, v = (f + 2) % 3;
                        q[f] = sg * d[f];
                        q[u] = d[u] * (-1 + 2.0 * i / 40);
                        q[v] = d[v] * (-1 + 2.0 * j / 40);
                        PUT(q[0], q[1], q[2]);
                    }
        break;
    case GF_SHAPE_CYLINDER:
        for (int j = 0; j < NB; ++j) {
            double ph = 2 * M_PI * j / NB;
            for (int m = 0; m <= 32; ++m) {
                PUT(d[0] * cos(ph), d[0] * sin(ph), -d[1] + 2 * d[1] * m / 32);
                double rr = d[0] * m / 32;
                PUT(rr * cos(ph), rr * sin(ph), d[1]);
                PUT(rr * cos(ph), rr * sin(ph), -d[1]);
            }
        }
        break;
    case GF_SHAPE_CLUMP: {
        const gf_clump *t = &cl->item[s->clump];
        for (int k = 0; k < t->count; ++k)
            for (int i = 0; i <= NA; ++i)
                for (int j = 0; j < NB; ++j) {
                    double th = M_PI * i / NA, ph = 2 * M_PI * j / NB, rr = t->radius[k];
                    PUT(d[0] * (t->centre[k][0] + rr * sin(th) * cos(ph)),
                        d[0] * (t->centre[k][1] + rr * sin(th) * sin(ph)),
                        d[0] * (t->centre[k][2] + rr * cos(th)));
                }
        break;
    }
    default:
        break;
    }
#undef PUT
    return n;
}

/* The point lies on the body's boundary: inside when pulled towards the centre by a hair,
 * outside when pushed out by a little more. */
static int on_boundary(const gf_shape *s, const gf_clumps *cl, const double p[3]) {
    double in[3], out[3];
    for (int a = 0; a < 3; ++a) {
        in[a] = p[a] * (1 - 1e-12);
        out[a] = p[a] * (1 + 1e-6);
    }
    return gf_shape_contains(s, cl, in) && !gf_shape_contains(s, cl, out);
}

static void test_support_and_bound(void **state) {
    (void)state;
    const double c[3][3] = {{0, 0, 0}, {0.9, 0.3, 0}, {0.2, -0.4, 0.8}};
    const double r[3] = {0.5, 0.4, 0.3};
    gf_clumps cl;
    gf_clumps_init(&cl);
    gf_clump t;
    GF_ASSERT_OK(gf_clump_make(3, c, r, &t));
    int32_t idx;
    GF_ASSERT_OK(gf_clumps_add(&cl, &t, &idx));
    gf_shape shapes[5] = {gf_shape_sphere(0.7), gf_shape_box(0.3, 0.5, 0.9),
                          gf_shape_capsule(0.35, 0.6), gf_shape_cylinder(0.45, 0.3),
                          gf_shape_clump(idx, 1.7)};
    enum { CAP = 20000 };
    static double pts[CAP][3];
    uint64_t seed = 2024;
    for (int k = 0; k < 5; ++k) {
        const gf_shape *s = &shapes[k];
        int n = surface_samples(s, &cl, pts, CAP);
        assert_true(n > 1000 && n < CAP);
        double R = gf_shape_bounding_radius(s, &cl), far = 0.0;
        for (int i = 0; i < n; ++i)
            far = fmax(far, gf_norm(pts[i]));
        if (!(far <= R * (1 + 1e-12) && far >= R * (1 - 1e-3)))
            fail_msg("%s: bounding radius %g, farthest sample %g", gf_shape_name(s->type), R, far);
        for (int dir = 0; dir < 206; ++dir) {
            double d[3];
            if (dir < 6) { /* along the axes, where faces and caps tie */
                d[0] = d[1] = d[2] = 0.0;
                d[dir / 2] = dir % 2 ? -2.0 : 0.5;
            } else {
                for (int a = 0; a < 3; ++a)
                    d[a] = gf_test_uniform(&seed, -1.0, 1.0);
            }
            double sp[3];
            gf_shape_support(s, &cl, d, sp);
            if (!on_boundary(s, &cl, sp))
                fail_msg("%s: support (%g, %g, %g) is not on the body", gf_shape_name(s->type),
                         sp[0], sp[1], sp[2]);
            double h = gf_dot(d, sp);
            for (int i = 0; i < n; ++i)
                if (gf_dot(d, pts[i]) > h + 1e-12 * R * gf_norm(d))
                    fail_msg("%s: sample (%g, %g, %g) beyond the support in direction "
                             "(%g, %g, %g)",
                             gf_shape_name(s->type), pts[i][0], pts[i][1], pts[i][2], d[0], d[1],
                             d[2]);
        }
    }
    gf_clumps_free(&cl);
}

/* A plane is static: unbounded, no finite mass (so that its inverse mass is 0), and its
 * support is finite only straight up, where the whole surface is extreme. */
static void test_plane(void **state) {
    (void)state;
    gf_shape p = {.type = GF_SHAPE_PLANE, .clump = -1};
    double m, I[3], s[3];
    assert_true(isinf(gf_shape_bounding_radius(&p, NULL)));
    assert_true(isinf(gf_shape_volume(&p, NULL)));
    gf_shape_mass_properties(&p, NULL, 1000.0, &m, I);
    assert_true(isinf(m) && m > 0 && isinf(I[0]) && isinf(I[1]) && isinf(I[2]));
    const double up[3] = {0, 0, 3}, down[3] = {0, 0, -1}, slant[3] = {1, 0, 1};
    gf_shape_support(&p, NULL, up, s);
    assert_true(s[0] == 0 && s[1] == 0 && s[2] == 0);
    gf_shape_support(&p, NULL, down, s);
    assert_true(isinf(s[2]) && s[2] < 0);
    gf_shape_support(&p, NULL, slant, s);
    assert_true(isinf(s[0]) && s[0] > 0 && s[2] == 0);
}

static void expect_refused(const gf_shape *s, const gf_clumps *cl, const char *needle) {
    gf_error_clear();
    gf_status st = gf_shape_check(s, cl);
    if (st != GF_ERR_INPUT)
        fail_msg("%s (%g, %g, %g) clump %d accepted", gf_shape_name(s->type), s->dim[0], s->dim[1],
                 s->dim[2], s->clump);
    if (!strstr(gf_error_message(), needle))
        fail_msg("message '%s' does not name '%s'", gf_error_message(), needle);
}

static void test_check(void **state) {
    (void)state;
    gf_clumps cl;
    gf_clumps_init(&cl);
    const double c[1][3] = {{0, 0, 0}};
    const double r1[1] = {1.0};
    gf_clump t;
    GF_ASSERT_OK(gf_clump_make(1, c, r1, &t));
    int32_t idx;
    GF_ASSERT_OK(gf_clumps_add(&cl, &t, &idx));

    gf_shape good[] = {gf_shape_sphere(0.1),       gf_shape_box(1, 2, 3),
                       gf_shape_capsule(0.5, 0.1), gf_shape_cylinder(0.5, 2),
                       gf_shape_clump(idx, 0.5),   {.type = GF_SHAPE_PLANE, .clump = -1}};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; ++k)
        GF_ASSERT_OK(gf_shape_check(&good[k], &cl));

    const double bad[] = {0.0, -1.0, NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 5; ++b) {
        double x = bad[b];
        char val[32];
        snprintf(val, sizeof val, "%g", x);
        gf_shape s = gf_shape_sphere(x);
        expect_refused(&s, &cl, val);
        expect_refused(&s, &cl, "radius");
        for (int a = 0; a < 3; ++a) {
            double h[3] = {1, 1, 1};
            h[a] = x;
            s = gf_shape_box(h[0], h[1], h[2]);
            expect_refused(&s, &cl, val);
            char dim[16];
            snprintf(dim, sizeof dim, "dim[%d]", a);
            expect_refused(&s, &cl, dim);
        }
        s = gf_shape_capsule(x, 1);
        expect_refused(&s, &cl, "radius");
        s = gf_shape_capsule(1, x);
        expect_refused(&s, &cl, "half length");
        s = gf_shape_cylinder(x, 1);
        expect_refused(&s, &cl, val);
        s = gf_shape_cylinder(1, x);
        expect_refused(&s, &cl, "half length");
        s = gf_shape_clump(idx, x);
        expect_refused(&s, &cl, "scale");
    }
    gf_shape s = gf_shape_clump(1, 1.0);
    expect_refused(&s, &cl, "clump template 1");
    s = gf_shape_clump(-1, 1.0);
    expect_refused(&s, &cl, "clump template -1");
    s = gf_shape_clump(0, 1.0);
    expect_refused(&s, NULL, "clump template 0");
    s = gf_shape_sphere(1.0);
    s.type = 17;
    expect_refused(&s, &cl, "17");

    /* Templates: member count and radii. */
    double cc[GF_CLUMP_MAX_MEMBERS + 1][3] = {{0}}, rr[GF_CLUMP_MAX_MEMBERS + 1];
    for (int k = 0; k <= GF_CLUMP_MAX_MEMBERS; ++k) {
        cc[k][0] = 3.0 * k;
        rr[k] = 1.0;
    }
    gf_error_clear();
    assert_int_equal(gf_clump_make(0, cc, rr, &t), GF_ERR_INPUT);
    assert_int_equal(gf_clump_make(GF_CLUMP_MAX_MEMBERS + 1, cc, rr, &t), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "33"));
    GF_ASSERT_OK(gf_clump_make(GF_CLUMP_MAX_MEMBERS, cc, rr, &t));
    rr[2] = -0.5;
    assert_int_equal(gf_clump_make(3, cc, rr, &t), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "-0.5"));
    rr[2] = NAN;
    assert_int_equal(gf_clump_make(3, cc, rr, &t), GF_ERR_INPUT);
    rr[2] = 1.0;
    cc[1][1] = NAN;
    assert_int_equal(gf_clump_make(3, cc, rr, &t), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "sphere 1"));
    gf_clumps_free(&cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_contains_hand_points),
        cmocka_unit_test(test_mass_closed_forms),
        cmocka_unit_test(test_mass_grid),
        cmocka_unit_test(test_clump_two_spheres),
        cmocka_unit_test(test_clump_separate_exact),
        cmocka_unit_test(test_clump_monte_carlo),
        cmocka_unit_test(test_clump_frame_invariance),
        cmocka_unit_test(test_clump_large),
        cmocka_unit_test(test_clump_scale),
        cmocka_unit_test(test_clumps_store),
        cmocka_unit_test(test_support_and_bound),
        cmocka_unit_test(test_plane),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
