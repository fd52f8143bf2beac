/* The channel-flow machinery at 1, 2 and 4 ranks (issue 6): inflow layers at the rate the setup
 * implies, with ids and random velocities independent of the rank count; outflow deleting exactly
 * the particles that pass the outlet; particle accounting through it all; obstacle contacts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/config.h"
#include "granflow/sim.h"
#include "test_util.h"

#define P gf_test_par

/* A channel 2 cm long, no gravity, no spread: nothing collides, so arrivals and departures are
 * known exactly. */
static const char *channel_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >;\n"
    "  wall_axes < 0, 1, 1 >; }\n"
    "Materials { Material { name glass; density 2650; } }\n"
    "Lattice { count < 10, 6, 4 >; origin < 0.0005, 0.0005, 0.0005 >;\n"
    "  spacing 0.001; radius 0.000235; material glass;\n"
    "  velocity < 1, 0, 0 >; }\n"
    "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
    "  material glass; particle_velocity < 1, 0, 0 >; seed 3; }\n"
    "Outflow { position 0.02; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 1e-5; steps 0; }\n"
    "Output { check_every 100; }\n";

static void make_channel(gf_sim *sim) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(channel_cfg, strlen(channel_cfg), "channel.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, 1));
    gf_config_destroy(cfg);
}

static int64_t global_count(const gf_sim *sim) {
    int64_t n = (int64_t)sim->particles.n_local;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
    return n;
}

static void test_inflow_and_outflow(void **state) {
    (void)state;
    gf_sim sim;
    make_channel(&sim);
    assert_int_equal(sim.inflow.per_layer, 6 * 4);
    assert_int_equal(global_count(&sim), 10 * 6 * 4);
    const int steps = 1500; /* 15 ms: 15 mm travelled; accounting checked every 100 steps */
    for (int s = 1; s <= steps; ++s)
        GF_ASSERT_OK(gf_sim_step(&sim));
    /* Layers: one per 0.47 mm of piston travel. */
    long layers = (long)floor(steps * 1e-5 / 0.00047 + 1e-9);
    assert_int_equal(sim.inflow.layers, layers);
    assert_int_equal(sim.created_inflow, layers * 24);
    /* Outflow: lattice column i (x = 0.5 + i mm) has left once x + t > 20 mm; inflow layer
     * k (released at t_k = (k + 1) 0.47 ms at x = 0.235 mm) once 0.235 mm + t - t_k > 20 mm. */
    double t = steps * 1e-5;
    long gone = 0;
    for (int i = 0; i < 10; ++i)
        gone += (0.0005 + 0.001 * i + t > 0.02) ? 24 : 0;
    for (long k = 0; k < layers; ++k)
        gone += (0.000235 + t - (k + 1) * 0.00047 > 0.02) ? 24 : 0;
    int64_t n = global_count(&sim);
    assert_int_equal(n, 240 + layers * 24 - gone);
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* The mass that left, over all ranks. */
    double mass = sim.deleted_mass_local;
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &mass, 1, GF_PAR_SUM));
    double m1 = 2650 * 4.0 / 3.0 * M_PI * pow(0.000235, 3);
    GF_ASSERT_NEAR(mass, gone * m1, 1e-9 * gone * m1);
    /* Every particle still moves at 1 m/s along x (nothing collided). */
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        GF_ASSERT_NEAR(sim.particles.v[0][i], 1.0, 1e-12);
    gf_sim_free(&sim);
}

/* The first layer alone: same ids and velocities on any rank count. */
static void test_first_layer_identical(void **state) {
    (void)state;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >; wall_axes < 0, 1, 1 >; }\n"
        "Materials { Material { name glass; density 2650; } }\n"
        "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
        "  material glass; spread < 0, 0.5, 0.5 >; seed 3; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Time { dt 1e-5; }\n";
    double sums[2] = {0, 0};
    for (int serial = 0; serial < 2; ++serial) {
        if (serial && P.rank != 0)
            continue;
        gf_par self = {MPI_COMM_SELF, 0, 1};
        const gf_par *par = serial ? &self : &P;
        gf_config *cfg = NULL;
        GF_ASSERT_OK(gf_config_parse(src, strlen(src), "inflow.cfg", &cfg));
        gf_sim sim;
        GF_ASSERT_OK(gf_sim_init(&sim, par));
        GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
        gf_config_destroy(cfg);
        /* Step until the first layer appears; it has not moved yet. */
        while (sim.inflow.layers == 0)
            GF_ASSERT_OK(gf_sim_step(&sim));
        double s = 0;
        for (size_t i = 0; i < sim.particles.n_local; ++i)
            s += sim.particles.id[i] * 1e-2 +
                 sim.particles.v[1][i] * (1 + sim.particles.id[i] % 11) +
                 sim.particles.v[2][i] * (1 + sim.particles.id[i] % 13);
        GF_ASSERT_OK(gf_par_allreduce_double(par, &s, 1, GF_PAR_SUM));
        sums[serial] = s;
        gf_sim_free(&sim);
    }
    MPI_Bcast(&sums[1], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    GF_ASSERT_NEAR(sums[0], sums[1], 1e-12 * fabs(sums[1]));
}

/* Spheres against the paper's obstacle: contact gaps and normals from the signed distance of a
 * box and a cylinder, checked against independent formulas. */
static void test_obstacle_contacts(void **state) {
    (void)state;
    gf_walls w;
    gf_walls_init(&w);
    const double c[3] = {0.04, 0.04, 0.01}, axis[3] = {0, 0, 2}, blo[3] = {0.04, 0.03, 0},
                 bhi[3] = {0.05, 0.05, 0.02};
    GF_ASSERT_OK(gf_walls_add_cylinder(&w, c, axis, 0.01, 0.02, 0));
    GF_ASSERT_OK(gf_walls_add_box(&w, blo, bhi, 0));
    uint64_t rng = 11;
    for (int t = 0; t < 20000; ++t) {
        double x[3] = {gf_test_uniform(&rng, 0.02, 0.07), gf_test_uniform(&rng, 0.02, 0.06),
                       gf_test_uniform(&rng, -0.01, 0.03)};
        double n[3];
        /* Cylinder: distance from the 2D (radial, axial) rectangle [0, R] x [-L, L]. */
        double dr = hypot(x[0] - 0.04, x[1] - 0.04) - 0.01, dz = fabs(x[2] - 0.01) - 0.01;
        double expect = (dr > 0 || dz > 0) ? hypot(fmax(dr, 0), fmax(dz, 0)) : fmax(dr, dz);
        double got = gf_walls_obstacle_distance(&w, GF_CYL_BASE, x, n);
        GF_ASSERT_NEAR(got, expect, 1e-15);
        GF_ASSERT_NEAR(n[0] * n[0] + n[1] * n[1] + n[2] * n[2], 1.0, 1e-12);
        /* Stepping along the normal changes the distance at unit rate (outside). */
        if (got > 1e-4) {
            double y[3] = {x[0] + 1e-6 * n[0], x[1] + 1e-6 * n[1], x[2] + 1e-6 * n[2]}, m[3];
            GF_ASSERT_NEAR(gf_walls_obstacle_distance(&w, GF_CYL_BASE, y, m) - got, 1e-6, 1e-12);
        }
        /* Box: the classic signed distance. */
        double q[3], out = 0, in = -INFINITY;
        for (int d = 0; d < 3; ++d) {
            q[d] = fmax(blo[d] - x[d], x[d] - bhi[d]);
            out += fmax(q[d], 0) * fmax(q[d], 0);
            in = fmax(in, q[d]);
        }
        double bexp = out > 0 ? sqrt(out) : in;
        GF_ASSERT_NEAR(gf_walls_obstacle_distance(&w, GF_BOX_BASE, x, n), bexp, 1e-15);
    }
    /* Detection: a sphere resting against the cylinder's left side and one on the box face. */
    gf_materials m;
    gf_materials_init(&m);
    gf_particles p;
    gf_particles_init(&p);
    gf_particle rec;
    const double a[3] = {0.04 - 0.01 - 0.001, 0.04, 0.01}, b[3] = {0.05 + 0.0009, 0.035, 0.01};
    gf_particle_make_sphere(&rec, 1, a, 0.001, 2650, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_particle_make_sphere(&rec, 2, b, 0.001, 2650, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_contacts cs;
    gf_contacts_init(&cs);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, 1e-5, &lc, &cs));
    assert_int_equal(cs.count, 2);
    for (size_t j = 0; j < cs.count; ++j) {
        if (cs.id1[j] == 1) {
            assert_int_equal(cs.id2[j], -1 - GF_CYL_BASE);
            GF_ASSERT_NEAR(cs.gap[j], 0.0, 1e-15);
            GF_ASSERT_NEAR(cs.n[0][j], -1.0, 1e-12);
        } else {
            assert_int_equal(cs.id2[j], -1 - GF_BOX_BASE);
            GF_ASSERT_NEAR(cs.gap[j], -0.0001, 1e-15);
            GF_ASSERT_NEAR(cs.n[0][j], 1.0, 1e-12);
        }
    }
    gf_contacts_free(&cs);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* A sphere thrown at the obstacle stops there (no tunnelling, no bounce) and its accounting
 * holds; run with the decomposition of the job. */
static void test_flow_past_obstacle(void **state) {
    (void)state;
    gf_sim sim;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >; wall_axes < 0, 1, 1 >;\n"
        "  Cylinder { centre < 0.01, 0.003, 0.002 >; radius 0.0015; length 0.004; } }\n"
        "Materials { friction 0.4; Material { name glass; density 2650; } }\n"
        "Lattice { count < 6, 6, 4 >; origin < 0.0005, 0.0005, 0.0005 >;\n"
        "  spacing 0.001; radius 0.000235; material glass; velocity < 1, 0, 0 >; }\n"
        "Outflow { position 0.02; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Time { dt 1e-5; }\n";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(src, strlen(src), "obstacle.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
    gf_config_destroy(cfg);
    for (int s = 0; s < 2000; ++s)
        GF_ASSERT_OK(gf_sim_step(&sim));
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* Nobody is inside the cylinder. */
    for (size_t i = 0; i < sim.particles.n_local; ++i) {
        double x[3] = {sim.particles.x[0][i], sim.particles.x[1][i], sim.particles.x[2][i]}, n[3];
        double d = gf_walls_obstacle_distance(&sim.walls, GF_CYL_BASE, x, n);
        assert_true(d > sim.particles.radius[i] * (1 - 0.05));
    }
    gf_sim_free(&sim);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_inflow_and_outflow),
    cmocka_unit_test(test_first_layer_identical),
    cmocka_unit_test(test_obstacle_contacts),
    cmocka_unit_test(test_flow_past_obstacle),
};

GF_TEST_MPI_MAIN(tests)
