/* Meshes in the engine: a sphere rolling in a turning drum against the closed form, spheres on a
 * meshed box and a meshed floor against the same box and floor in closed form, no escape from a
 * closed mesh, a mesh from an STL file through the configuration, clumps against a mesh, a drum
 * that starts turning on its schedule, and the kinds of a mesh's motion over a run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/bodies.h"
#include "sim/sim.h"
#include "granflow/trimesh.h"
#include "core/vec.h"
#include "test_util.h"

static void setup_sim(gf_sim *sim, double dt, double mu) {
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.model = GF_MODEL_MAXDISS;
    prm.max_iterations = 100;
    prm.tolerance = 1e-8;
    GF_ASSERT_OK(gf_sim_set_solver(sim, &prm));
    sim->dt = dt;
    sim->gravity[0] = sim->gravity[1] = 0.0;
    sim->gravity[2] = -9.81;
    GF_ASSERT_OK(gf_materials_set_friction(&sim->materials, 0, 0, mu));
}

static void add_sphere(gf_sim *sim, int64_t id, const double x[3], double r, const double v[3],
                       const double w[3]) {
    gf_particle rec;
    gf_particle_make_sphere(&rec, id, x, r, 2500.0, 0);
    for (int d = 0; d < 3; ++d) {
        rec.v[d] = v[d];
        rec.w[d] = w[d];
    }
    GF_ASSERT_OK(gf_particles_add(&sim->particles, &rec));
}

static void add_soup(gf_sim *sim, double *soup, size_t nt, const double pivot[3],
                     const double omega[3]) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    GF_ASSERT_OK(gf_walls_add_mesh(&sim->walls, nt, soup, pivot, zero, omega, 0));
    free(soup);
}

/* A sphere in a drum turning at a constant rate rolls without slipping: the contact point
 * moves with the drum's surface, (R - r) phi' - r w = -Omega R, and the angle phi from the
 * bottom obeys phi'' = -5 g sin(phi) / (7 (R - r)), whatever Omega: small oscillations about
 * the bottom of period 2 pi sqrt(7 (R - r) / (5 g)). Without the drum's surface velocity the
 * sphere, spun to match it, would slip and be carried up the side. */
static void test_sphere_rolls_in_a_turning_drum(void **state) {
    (void)state;
    const double R = 0.1, r = 0.01, Omega = 2.0, g = 9.81, phi0 = 0.1, dt = 5e-4;
    const double c[3] = {0.0, 0.0, 0.0}, axis[3] = {0.0, 1.0, 0.0};
    gf_sim sim;
    setup_sim(&sim, dt, 0.8);
    double *soup;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 0.05, R, R, 512, 1, 0.01, &soup, &nt));
    const double omega[3] = {0.0, Omega, 0.0};
    add_soup(&sim, soup, nt, c, omega);
    /* The faceted drum's inscribed radius: the sphere rolls on the facets' middles. */
    const double Rf = R * cos(M_PI / 512.0), L = Rf - r;
    const double x[3] = {L * sin(phi0), 0.0, -L * cos(phi0)}, v[3] = {0, 0, 0},
                 w[3] = {0.0, Omega * Rf / r, 0.0};
    add_sphere(&sim, 1, x, r, v, w);
    GF_ASSERT_OK(gf_sim_start(&sim));
    const double T = 2.0 * M_PI * sqrt(7.0 * L / (5.0 * g)) * (1.0 + phi0 * phi0 / 16.0);
    double prev = phi0, crossings[3];
    int nc = 0;
    double slip_max = 0.0;
    long steps = (long)(1.6 * T / dt);
    for (long k = 0; k < steps; ++k) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        const gf_particles *p = &sim.particles;
        double px = p->x[0][0], pz = p->x[2][0];
        double phi = atan2(px, -pz);
        double tang[3] = {cos(phi), 0.0, sin(phi)};
        double rate = (p->v[0][0] * tang[0] + p->v[2][0] * tang[2]) / L;
        /* Rolling: the sphere's contact point moves as the drum's surface. */
        double slip = L * rate - r * p->w[1][0] + Omega * Rf;
        slip_max = fmax(slip_max, fabs(slip));
        /* Stays on the drum: between the facets' middles and their edges (the facets turn
         * within a step, which the solver's linear motion of the contact point leaves as
         * overlaps of order (Omega dt)^2 r, removed at error_reduction / dt). */
        double dist = hypot(px, pz);
        if (!(dist > L - 2e-5 * r && dist < R - r + 2e-5 * r))
            fail_msg("step %ld: %.12g from the axis, not in [%.12g, %.12g]", k, dist, L, R - r);
        if (nc < 3 && (prev > 0.0) != (phi > 0.0)) {
            /* Linear interpolation of the crossing time. */
            crossings[nc++] = sim.time - dt * phi / (phi - prev);
        }
        prev = phi;
    }
    assert_int_equal(nc, 3);
    /* Crossings at T/4, 3T/4, 5T/4. */
    GF_ASSERT_NEAR(crossings[2] - crossings[0], T, 0.01 * T);
    GF_ASSERT_NEAR(crossings[0], 0.25 * T, 0.01 * T);
    /* A sliding sphere's slip would be of the order of Omega R = 0.2 m/s. */
    assert_true(slip_max < 1e-3 * Omega * R);
    gf_sim_free(&sim);
}

/* The 12 triangles of the box [lo, hi]. */
static double *box_soup(const double lo[3], const double hi[3], size_t *nt) {
    static const int quads[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                                    {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
    double *c = malloc(108 * sizeof *c);
    double v[8][3];
    for (int k = 0; k < 8; ++k)
        for (int d = 0; d < 3; ++d)
            v[k][d] = (k >> d) & 1 ? hi[d] : lo[d];
    for (int f = 0; f < 6; ++f) {
        const int *q = quads[f];
        const int tri[2][3] = {{q[0], q[1], q[2]}, {q[0], q[2], q[3]}};
        for (int s = 0; s < 2; ++s)
            for (int k = 0; k < 3; ++k)
                memcpy(&c[9 * (2 * f + s) + 3 * k], v[tri[s][k]], 3 * sizeof(double));
    }
    *nt = 12;
    return c;
}

/* Spheres thrown at a box obstacle and a floor: with the box and the floor as meshes the
 * trajectories are those with the closed-form box and the plane wall (contact by contact the
 * same points and normals; the solver then does the same arithmetic up to the rounding of the
 * mesh's closest points). */
static void test_meshes_match_closed_form_geometry(void **state) {
    (void)state;
    const double lo[3] = {-0.05, -0.05, 0.0}, hi[3] = {0.05, 0.05, 0.04};
    gf_sim a, b;
    for (int which = 0; which < 2; ++which) {
        gf_sim *s = which ? &b : &a;
        setup_sim(s, 1e-4, 0.4);
        if (which == 0) {
            const double p[3] = {0, 0, 0}, n[3] = {0, 0, 1};
            GF_ASSERT_OK(gf_walls_add(&s->walls, p, n, NULL, 0));
            GF_ASSERT_OK(gf_walls_add_box(&s->walls, lo, hi, 0));
        } else {
            const double c[3] = {0, 0, 0}, n[3] = {0, 0, 1}, e[3] = {1, 0, 0}, zero[3] = {0};
            double *floor;
            size_t nt;
            GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 0.6, 0.6, 0.1, &floor, &nt));
            add_soup(s, floor, nt, c, zero);
            double *box = box_soup(lo, hi, &nt);
            add_soup(s, box, nt, c, zero);
        }
        uint64_t rng = 2024;
        for (int k = 0; k < 30; ++k) {
            double x[3] = {gf_test_uniform(&rng, -0.12, 0.12), gf_test_uniform(&rng, -0.12, 0.12),
                           gf_test_uniform(&rng, 0.06, 0.2)};
            double v[3] = {-3.0 * x[0], -3.0 * x[1], gf_test_uniform(&rng, -1.0, 0.0)};
            double w[3] = {gf_test_uniform(&rng, -5, 5), gf_test_uniform(&rng, -5, 5), 0.0};
            x[2] += 0.025 * k; /* apart at the start */
            add_sphere(s, k + 1, x, 0.01, v, w);
        }
        GF_ASSERT_OK(gf_sim_start(s));
    }
    int touched = 0;
    for (long step = 0; step < 3000; ++step) {
        GF_ASSERT_OK(gf_sim_step(&a));
        GF_ASSERT_OK(gf_sim_step(&b));
        touched = touched || a.figures.touching > 5;
    }
    assert_true(touched);
    assert_int_equal(a.particles.n_local, b.particles.n_local);
    for (size_t i = 0; i < a.particles.n_local; ++i)
        for (int d = 0; d < 3; ++d) {
            GF_ASSERT_NEAR(b.particles.x[d][i], a.particles.x[d][i], 1e-9);
            GF_ASSERT_NEAR(b.particles.v[d][i], a.particles.v[d][i], 1e-7);
        }
    /* Some came to rest on the box's top. */
    int on_top = 0;
    for (size_t i = 0; i < b.particles.n_local; ++i)
        on_top += fabs(b.particles.x[2][i] - (hi[2] + 0.01)) < 1e-5 &&
                  fabs(b.particles.x[0][i]) < hi[0] && fabs(b.particles.x[1][i]) < hi[1];
    assert_true(on_top > 0);
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* Spheres, clumps, boxes, capsules and cylinders shaken hard in a closed, fast-turning drum stay
 * inside it. */
static void test_nothing_escapes_a_closed_mesh(void **state) {
    (void)state;
    const double R = 0.05, half = 0.02, r = 0.004;
    const double c[3] = {0.0, 0.0, 0.0}, axis[3] = {0.0, 1.0, 0.0}, omega[3] = {0.0, 40.0, 0.0};
    gf_sim sim;
    setup_sim(&sim, 1e-4, 0.5);
    gf_solver_params prm = sim.solver_params;
    prm.tolerance = 1e-3;
    prm.max_iterations = 30;
    GF_ASSERT_OK(gf_sim_set_solver(&sim, &prm));
    double *soup;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 2.0 * half, R, R, 48, 1, 0.0, &soup, &nt));
    add_soup(&sim, soup, nt, c, omega);
    /* A dumbbell clump among the spheres. */
    const double centres[2][3] = {{-0.003, 0.0, 0.0}, {0.003, 0.0, 0.0}};
    const double radii[2] = {0.003, 0.003};
    gf_clump cl;
    GF_ASSERT_OK(gf_clump_make(2, centres, radii, &cl));
    int32_t ci;
    GF_ASSERT_OK(gf_clumps_add(&sim.clumps, &cl, &ci));
    sim.particles.clumps = &sim.clumps;
    uint64_t rng = 5;
    int64_t id = 1;
    for (int i = -3; i <= 3; ++i)
        for (int j = -1; j <= 1; ++j)
            for (int k = -3; k <= 3; ++k) {
                double x[3] = {0.01 * i, 0.01 * j, 0.01 * k};
                if (hypot(x[0], x[2]) > R - 0.012)
                    continue;
                double v[3], w[3] = {0, 0, 0};
                for (int d = 0; d < 3; ++d)
                    v[d] = gf_test_uniform(&rng, -2.0, 2.0);
                if ((i + j + k) % 4 == 0 || (i + j + k) % 4 == 1) {
                    /* a clump, or a box, a capsule or a cylinder in turn */
                    const gf_shape convex[3] = {gf_shape_box(0.004, 0.003, 0.0025),
                                                gf_shape_capsule(0.003, 0.003),
                                                gf_shape_cylinder(0.0035, 0.003)};
                    gf_particle rec;
                    const gf_shape s =
                        (i + j + k) % 4 == 0 ? gf_shape_clump(ci, 1.0) : convex[id % 3];
                    gf_particle_make(&rec, id++, x, &s, &sim.clumps, 2500.0, 0);
                    memcpy(rec.v, v, sizeof v);
                    GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
                } else {
                    add_sphere(&sim, id++, x, r, v, w);
                }
            }
    size_t n0 = sim.particles.n_local;
    assert_true(n0 > 60);
    GF_ASSERT_OK(gf_sim_start(&sim));
    for (long step = 0; step < 2500; ++step)
        GF_ASSERT_OK(gf_sim_step(&sim));
    assert_int_equal(sim.particles.n_local, n0);
    /* Every body's centre lies at least its smallest half size (2.5 mm) inside the walls, the
     * spheres' their radius (4 mm): half of that holds with room for the solver's overlaps. */
    int kinds[GF_SHAPE_COUNT] = {0};
    for (size_t i = 0; i < n0; ++i) {
        const gf_particles *p = &sim.particles;
        double in = p->shape[i] == GF_SHAPE_SPHERE ? 0.5 * r : 0.5 * 0.0025;
        kinds[p->shape[i]]++;
        assert_true(hypot(p->x[0][i], p->x[2][i]) < R - in);
        assert_true(fabs(p->x[1][i]) < half - in);
    }
    for (int k = 0; k <= GF_SHAPE_CLUMP; ++k)
        assert_true(kinds[k] >= 4);
    /* The drum carried them round: their mean rate about its axis, (z v_x - x v_z) / (x^2 +
     * z^2), is a good part of the drum's (at 40 rad/s it throws them against its wall). */
    const gf_particles *p = &sim.particles;
    double rate = 0.0;
    for (size_t i = 0; i < n0; ++i) {
        double x = p->x[0][i], z = p->x[2][i];
        rate += (z * p->v[0][i] - x * p->v[2][i]) / (x * x + z * z) / (double)n0;
    }
    assert_true(rate > 0.5 * omega[1]);
    gf_sim_free(&sim);
}

/* A box slides and a cylinder and a capsule roll down a floor meshed into many triangles,
 * under gravity tilted by theta, as on the plane in closed form: the box at
 * g (sin theta - mu cos theta), the round bodies without slipping at g sin theta / (1 + k),
 * k = I / (m r^2) about their axis (1/2 for the cylinder; for the capsule its cylinder's and its
 * two half spheres' moments); all three stay on the floor, crossing the seams without a jolt. */
static void test_bodies_on_a_meshed_incline(void **state) {
    (void)state;
    const double theta = 25.0 * M_PI / 180.0, g = 9.81, dt = 2e-4, T = 0.15;
    for (int kind = 0; kind < 3; ++kind) {
        const double mu = kind == 0 ? 0.2 : 0.6;
        gf_sim sim;
        setup_sim(&sim, dt, mu);
        sim.gravity[0] = g * sin(theta);
        sim.gravity[2] = -g * cos(theta);
        const double c[3] = {0.4, 0.0, 0.0}, n[3] = {0, 0, 1}, e[3] = {1, 0, 0}, zero[3] = {0};
        double *floor;
        size_t nt;
        GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 1.0, 0.3, 0.013, &floor, &nt));
        add_soup(&sim, floor, nt, c, zero);
        const double r = 0.01, half = 0.015;
        gf_shape s = kind == 0   ? gf_shape_box(0.02, 0.015, 0.01)
                     : kind == 1 ? gf_shape_cylinder(r, half)
                                 : gf_shape_capsule(r, half);
        double k = 0.5;
        if (kind == 2) {
            double vc = 2.0 * half, vs = 4.0 / 3.0 * r; /* volumes / (pi r^2) */
            k = (0.5 * vc + 0.4 * vs) / (vc + vs);
        }
        const double a_ref =
            kind == 0 ? g * (sin(theta) - mu * cos(theta)) : g * sin(theta) / (1 + k);
        /* lying on its face, or on its side with its axis along y */
        const double x0[3] = {0.1, 0.0037, 0.01};
        gf_particle rec;
        gf_particle_make(&rec, 1, x0, &s, NULL, 2500.0, 0);
        if (kind > 0) {
            const double q[4] = {M_SQRT1_2, M_SQRT1_2, 0.0, 0.0};
            memcpy(rec.q, q, sizeof q);
        }
        GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
        GF_ASSERT_OK(gf_sim_start(&sim));
        double zmin = INFINITY, zmax = -INFINITY;
        long steps = (long)(T / dt + 0.5);
        for (long j = 0; j < steps; ++j) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            zmin = fmin(zmin, sim.particles.x[2][0]);
            zmax = fmax(zmax, sim.particles.x[2][0]);
        }
        const gf_particles *p = &sim.particles;
        double t = sim.time;
        if (fabs(p->x[0][0] - x0[0] - 0.5 * a_ref * t * t) > 0.01 * 0.5 * a_ref * t * t ||
            fabs(p->v[0][0] - a_ref * t) > 0.01 * a_ref * t)
            fail_msg("a %s: x %g v %g, the plane gives %g and %g", gf_shape_name(s.type),
                     p->x[0][0] - x0[0], p->v[0][0], 0.5 * a_ref * t * t, a_ref * t);
        if (kind > 0) /* rolling: the contact point at rest, v = w r */
            GF_ASSERT_NEAR(p->w[1][0] * r, p->v[0][0], 1e-3 * a_ref * t);
        /* straight down the slope (a box's normal forces spread over the seams' points as the
         * solver leaves them: their friction turns it by a trace, as the spread is undecided) */
        GF_ASSERT_NEAR(p->x[1][0], x0[1], 1e-3 * (p->x[0][0] - x0[0]));
        /* on the floor: within the solver's tolerance of its resting height */
        assert_true(zmin > x0[2] - 1e-6 && zmax < x0[2] + 1e-6);
        gf_sim_free(&sim);
    }
}

/* Generators leave out particles overlapping a mesh, and only those: spheres and clumps by their
 * spheres, other shapes by their contacts with the mesh's triangles. */
static void test_placements_clear_of_meshes(void **state) {
    (void)state;
    gf_walls w;
    gf_walls_init(&w);
    const double c[3] = {0, 0, 0}, n[3] = {0, 0, 1}, e[3] = {1, 0, 0}, zero[3] = {0, 0, 0};
    double *soup;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 1.0, 1.0, 0.25, &soup, &nt));
    GF_ASSERT_OK(gf_walls_add_mesh(&w, nt, soup, c, zero, zero, 0));
    free(soup);
    gf_clumps clumps;
    gf_clumps_init(&clumps);
    const double centres[2][3] = {{-0.01, 0.0, 0.0}, {0.01, 0.0, 0.0}};
    const double radii[2] = {0.005, 0.005};
    gf_clump cl;
    GF_ASSERT_OK(gf_clump_make(2, centres, radii, &cl));
    int32_t ci;
    GF_ASSERT_OK(gf_clumps_add(&clumps, &cl, &ci));
    gf_particle rec;
    /* A sphere 4.9 mm above the plate (radius 5 mm) overlaps it; 5.1 mm above does not. */
    const double lo[3] = {0.1, 0.1, 0.0049}, hi[3] = {0.1, 0.1, 0.0051};
    gf_particle_make_sphere(&rec, 1, lo, 0.005, 1000.0, 0);
    assert_true(gf_bodies_blocked(&w, &rec, &clumps));
    gf_particle_make_sphere(&rec, 1, hi, 0.005, 1000.0, 0);
    assert_false(gf_bodies_blocked(&w, &rec, &clumps));
    /* A dumbbell tilted 45 degrees about y: its lower sphere reaches 0.00707 below its centre. */
    const gf_shape s = gf_shape_clump(ci, 1.0);
    const double x1[3] = {0.2, 0.2, 0.0120}, x2[3] = {0.2, 0.2, 0.0122};
    const double q[4] = {cos(M_PI / 8.0), 0.0, sin(M_PI / 8.0), 0.0};
    gf_particle_make(&rec, 2, x1, &s, &clumps, 1000.0, 0);
    memcpy(rec.q, q, sizeof q);
    assert_true(gf_bodies_blocked(&w, &rec, &clumps));
    gf_particle_make(&rec, 2, x2, &s, &clumps, 1000.0, 0);
    memcpy(rec.q, q, sizeof q);
    assert_false(gf_bodies_blocked(&w, &rec, &clumps));
    /* A flat box lying 0.1 mm above the plate (its bounding sphere reaches into it) is clear;
     * 0.1 mm into it, it is not; so with a tilted capsule whose lower end reaches 0.1 mm in. */
    const gf_shape b = gf_shape_box(0.02, 0.02, 0.002);
    const double xb[3] = {0.0, 0.0, 0.0021}, xb2[3] = {0.0, 0.0, 0.0019};
    gf_particle_make(&rec, 3, xb, &b, &clumps, 1000.0, 0);
    assert_false(gf_bodies_blocked(&w, &rec, &clumps));
    gf_particle_make(&rec, 3, xb2, &b, &clumps, 1000.0, 0);
    assert_true(gf_bodies_blocked(&w, &rec, &clumps));
    const gf_shape cap = gf_shape_capsule(0.004, 0.01);
    const double xc[3] = {-0.2, 0.3, 0.004 + 0.01 * M_SQRT1_2 - 1e-4};
    gf_particle_make(&rec, 4, xc, &cap, &clumps, 1000.0, 0);
    memcpy(rec.q, q, sizeof q);
    assert_true(gf_bodies_blocked(&w, &rec, &clumps));
    rec.x[2] += 2e-4;
    assert_false(gf_bodies_blocked(&w, &rec, &clumps));
    gf_clumps_free(&clumps);
    gf_walls_free(&w);
}

/* A drum at rest until ts = 20 ms, then on its schedule turning at Omega about its axis (y),
 * with a sphere resting on its lowest facet (gravity turned to point straight at that facet's
 * middle, direction nf, so that the sphere lies still). Until ts the sphere stays at rest and
 * the drum's surface is static (the speculative margin sees no motion: gf_walls_max_speed is
 * 0); from ts its surface at the contact moves at Omega e_y x Rf nf, along s = e_y x nf
 * (max_speed: Omega times the farthest vertex, hypot(R, L/2)) and the drum's pose turns by
 * Omega (t - ts) about y. The sphere first slips: friction mu m g accelerates its centre,
 * v.s = mu g tau (tau = t - ts), and spins it, so that its contact point moves at 7/2 mu g tau
 * along s, until that equals the surface's Omega Rf, at tau = 2 Omega Rf / (7 mu g) = 11.6 ms;
 * from then on it rolls with the drum's surface: its contact point's velocity v + w x (p - x)
 * along the surface equals the surface's Omega e_y x (p - c) there (across the facets the
 * contact point's radial velocity differs from the radial model by the facets' tilt). */
static void test_drum_starts_turning_on_schedule(void **state) {
    (void)state;
    const double R = 0.1, half = 0.025, r = 0.01, Omega = 2.0, g = 9.81, mu = 0.5, dt = 5e-4;
    const double ts = 0.02, c[3] = {0.0, 0.0, 0.0}, axis[3] = {0.0, 1.0, 0.0},
                 zero[3] = {0.0, 0.0, 0.0}, omega[3] = {0.0, Omega, 0.0};
    gf_sim sim;
    setup_sim(&sim, dt, mu);
    double *soup;
    size_t nt;
    GF_ASSERT_OK(gf_trimesh_frustum(c, axis, 2.0 * half, R, R, 512, 1, 0.01, &soup, &nt));
    /* The lowest facet of the mantle: the middle of its two edges' directions. */
    double nf[3] = {0.0, 0.0, 0.0};
    for (size_t k = 0; k < nt; ++k) {
        const double *q = &soup[9 * k];
        int mantle = 1, other = -1;
        for (int j = 0; j < 3; ++j) {
            mantle = mantle && hypot(q[3 * j], q[3 * j + 2]) > 0.5 * R;
            if (j > 0 && hypot(q[3 * j] - q[0], q[3 * j + 2] - q[2]) > 1e-6 * R)
                other = j;
        }
        if (!mantle || other < 0)
            continue;
        double m[3] = {q[0] + q[3 * other], 0.0, q[2] + q[3 * other + 2]};
        double len = hypot(m[0], m[2]);
        if (m[2] / len < nf[2]) {
            nf[0] = m[0] / len;
            nf[2] = m[2] / len;
        }
    }
    assert_true(nf[2] < -0.9999);
    for (int d = 0; d < 3; ++d)
        sim.gravity[d] = g * nf[d];
    add_soup(&sim, soup, nt, c, zero);
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&sim.walls, 0, ts, zero, omega));
    const double Rf = R * cos(M_PI / 512.0);
    double x0[3], sdir[3];
    for (int d = 0; d < 3; ++d)
        x0[d] = (Rf - r) * nf[d];
    gf_cross(axis, nf, sdir);
    add_sphere(&sim, 1, x0, r, zero, zero);
    GF_ASSERT_OK(gf_sim_start(&sim));
    const gf_particles *p = &sim.particles;
    int checked_slip = 0, checked_roll = 0;
    for (int n = 1; n <= 120; ++n) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        double t = n * dt, tau = t - ts;
        double speed = gf_walls_max_speed(&sim.walls);
        const double x[3] = {p->x[0][0], p->x[1][0], p->x[2][0]},
                     v[3] = {p->v[0][0], p->v[1][0], p->v[2][0]},
                     w[3] = {p->w[0][0], p->w[1][0], p->w[2][0]};
        if (tau < -1e-9) {
            assert_true(speed == 0.0);
            assert_true(sim.walls.mesh_q[0][0] == 1.0 && sim.walls.mesh_q[0][2] == 0.0);
            if (gf_norm(v) > 1e-9 || gf_norm(w) > 1e-9)
                fail_msg("t = %g: the sphere moves before the drum turns: v %g %g %g, w %g %g %g",
                         t, v[0], v[1], v[2], w[0], w[1], w[2]);
            continue;
        }
        GF_ASSERT_NEAR(speed, Omega * hypot(R, half), 1e-12);
        GF_ASSERT_NEAR(sim.walls.mesh_q[0][0], cos(0.5 * Omega * tau), 1e-12);
        GF_ASSERT_NEAR(sim.walls.mesh_q[0][2], sin(0.5 * Omega * tau), 1e-12);
        /* The sphere's contact point: r from its centre, away from the axis. */
        double rho = hypot(x[0], x[2]), arm[3] = {r * x[0] / rho, 0.0, r * x[2] / rho}, pc[3],
               wr[3], surf[3];
        for (int d = 0; d < 3; ++d)
            pc[d] = x[d] + arm[d] - c[d];
        gf_cross(w, arm, wr);
        gf_cross(omega, pc, surf);
        if (fabs(tau - 0.005) < 1e-9) { /* slipping */
            double vs = gf_dot(v, sdir), cs = vs + gf_dot(wr, sdir);
            GF_ASSERT_NEAR(vs, mu * g * tau, 0.03 * mu * g * tau);
            GF_ASSERT_NEAR(cs, 3.5 * mu * g * tau, 0.03 * 3.5 * mu * g * tau);
            assert_true(cs < 0.9 * Omega * Rf);
            checked_slip = 1;
        }
        if (tau > 0.02) { /* rolling with the surface, along it (and not along the axis) */
            double u[3] = {arm[0] / r, 0.0, arm[2] / r}, along[3], cp[3];
            gf_cross(axis, u, along);
            for (int d = 0; d < 3; ++d)
                cp[d] = v[d] + wr[d];
            GF_ASSERT_NEAR(gf_dot(cp, along), gf_dot(surf, along), 1e-3 * Omega * R);
            GF_ASSERT_NEAR(cp[1], 0.0, 1e-9);
            checked_roll = 1;
        }
    }
    assert_true(checked_slip && checked_roll);
    gf_sim_free(&sim);
}

/* How a mesh moves over a run, for a filter of its triangles: static; about one axis through
 * its pivot in every phase (either way, or still), with no translation; anything else. */
static void test_mesh_motion_kinds(void **state) {
    (void)state;
    gf_walls w;
    gf_walls_init(&w);
    const double c[3] = {0, 0, 0}, n[3] = {0, 0, 1}, e[3] = {1, 0, 0}, zero[3] = {0, 0, 0};
    const double oy[3] = {0, 2, 0}, back[3] = {0, -3, 0}, ox[3] = {1, 0, 0}, vx[3] = {0.1, 0, 0};
    for (int k = 0; k < 3; ++k) {
        double *soup;
        size_t nt;
        GF_ASSERT_OK(gf_trimesh_rectangle(c, n, e, 1.0, 1.0, 0.0, &soup, &nt));
        GF_ASSERT_OK(gf_walls_add_mesh(&w, nt, soup, c, zero, k == 2 ? oy : zero, 0));
        free(soup);
    }
    double a[3];
    assert_int_equal(gf_walls_mesh_motion(&w, 0, a), GF_MESH_STATIC);
    assert_true(a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0);
    /* Mesh 0: still, then turning about +y, then back about -y, then still. */
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 0, 0.1, zero, oy));
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 0, 0.2, zero, back));
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 0, 0.3, zero, zero));
    /* Mesh 1: turning about y, then about x. Mesh 2: turning about y, then also moving. */
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 1, 0.1, zero, oy));
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 1, 0.2, zero, ox));
    GF_ASSERT_OK(gf_walls_add_mesh_schedule(&w, 2, 0.1, vx, oy));
    for (int pass = 0; pass < 2; ++pass) {
        /* The same whatever phase is in force. */
        gf_walls_apply_schedule(&w, pass ? 0.25 : 0.0, 0.0);
        assert_int_equal(gf_walls_mesh_motion(&w, 0, a), GF_MESH_FIXED_AXIS);
        assert_true(a[0] == 0.0 && a[1] == 1.0 && a[2] == 0.0);
        assert_int_equal(gf_walls_mesh_motion(&w, 1, a), GF_MESH_GENERAL);
        assert_int_equal(gf_walls_mesh_motion(&w, 2, a), GF_MESH_GENERAL);
    }
    /* Directly from phases: a slightly tilted axis is another axis. */
    const double v2[2][3] = {{0, 0, 0}, {0, 0, 0}};
    const double o_same[2][3] = {{0, 0, 2}, {0, 0, -1e-3}},
                 o_tilt[2][3] = {{0, 0, 1}, {1e-9, 0, 1}};
    assert_int_equal(gf_mesh_motion_classify(2, v2, o_same, a), GF_MESH_FIXED_AXIS);
    assert_true(a[2] == 1.0);
    assert_int_equal(gf_mesh_motion_classify(2, v2, o_tilt, a), GF_MESH_GENERAL);
    gf_walls_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_rolls_in_a_turning_drum),
        cmocka_unit_test(test_meshes_match_closed_form_geometry),
        cmocka_unit_test(test_nothing_escapes_a_closed_mesh),
        cmocka_unit_test(test_placements_clear_of_meshes),
        cmocka_unit_test(test_bodies_on_a_meshed_incline),
        cmocka_unit_test(test_drum_starts_turning_on_schedule),
        cmocka_unit_test(test_mesh_motion_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
