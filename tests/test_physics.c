/* The serial engine against analytic results: error reduction, head-on collisions, sliding to
 * rolling, inelastic landing and energy decay of a frictional gas (issue 2). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "granflow/integrator.h"
#include "granflow/log.h"
#include "granflow/sim.h"
#include "test_util.h"

static const gf_contact_model all_models[] = {GF_MODEL_FRICTIONLESS, GF_MODEL_COULOMB,
                                              GF_MODEL_MAXDISS};

static void setup_sim(gf_sim *sim, gf_contact_model model, double dt, long iterations, double erp) {
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.model = model;
    prm.max_iterations = iterations;
    prm.error_reduction = erp;
    prm.tolerance = 0.0;
    prm.warm_start = 0;
    GF_ASSERT_OK(gf_sim_set_solver(sim, &prm));
    sim->dt = dt;
    sim->gravity[0] = sim->gravity[1] = sim->gravity[2] = 0.0;
}

static void add_sphere(gf_sim *sim, int64_t id, double x, double y, double z, double r, double vx,
                       double vy, double vz) {
    gf_particle rec;
    const double c[3] = {x, y, z};
    gf_particle_make_sphere(&rec, id, c, r, 1000.0, 0);
    rec.v[0] = vx;
    rec.v[1] = vy;
    rec.v[2] = vz;
    GF_ASSERT_OK(gf_particles_add(&sim->particles, &rec));
}

static void add_plane(gf_sim *sim, double z) {
    const double p[3] = {0, 0, z}, n[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&sim->walls, p, n, NULL, 0));
}

/* A sphere of radius 1.1 sitting 0.1 deep in the plane z = 5: one step with dt = 1 removes
 * the share erp of the penetration, whatever its approach velocity. */
static void test_error_reduction(void **state) {
    (void)state;
    const double erps[3] = {1.0, 0.5, 0.0};
    const double z_expect[3] = {6.1, 6.05, 6.0};
    for (int m = 0; m < 3; ++m)
        for (int e = 0; e < 3; ++e)
            for (int v = 0; v < 2; ++v) {
                gf_sim sim;
                setup_sim(&sim, all_models[m], 1.0, 10, erps[e]);
                add_plane(&sim, 5.0);
                add_sphere(&sim, 1, 0, 0, 6.0, 1.1, 0, 0, v ? -1.0 : 0.0);
                GF_ASSERT_OK(gf_sim_step(&sim));
                GF_ASSERT_NEAR(sim.particles.x[2][0], z_expect[e], 1e-12);
                GF_ASSERT_NEAR(sim.particles.v[2][0], z_expect[e] - 6.0, 1e-12);
                GF_ASSERT_NEAR(sim.particles.x[0][0], 0.0, 1e-15);
                gf_sim_free(&sim);
            }
}

static void test_head_on(void **state) {
    (void)state;
    for (int m = 0; m < 3; ++m) {
        gf_sim sim;
        setup_sim(&sim, all_models[m], 1.0, 10, 1.0);
        add_sphere(&sim, 1, 0, 0, 0, 1.1, 1.0, 0, 0);
        add_sphere(&sim, 2, 2, 0, 0, 1.1, -1.0, 0, 0);
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_NEAR(sim.particles.x[0][0], -0.1, 1e-12);
        GF_ASSERT_NEAR(sim.particles.x[0][1], 2.1, 1e-12);
        GF_ASSERT_NEAR(sim.particles.v[0][0], -0.1, 1e-12);
        GF_ASSERT_NEAR(sim.particles.v[0][1], 0.1, 1e-12);
        int separated = 0;
        for (int k = 0; k < 10 && !separated; ++k) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            double gap = sim.particles.x[0][1] - sim.particles.x[0][0] - 2.2;
            separated = gap > 0.0 && sim.particles.v[0][1] > sim.particles.v[0][0];
        }
        assert_true(separated);
        gf_sim_free(&sim);
    }
}

/* A sphere launched sliding on a plane decelerates by friction until it rolls with
 * v = w r = 5/7 v0, then keeps rolling. */
static void test_slide_to_roll(void **state) {
    (void)state;
    const double r = 0.1, v0 = 5.0, mu = 0.2, g = 10.0, dt = 0.002;
    for (int m = 1; m < 3; ++m) {
        gf_sim sim;
        setup_sim(&sim, all_models[m], dt, 50, 0.1);
        sim.gravity[2] = -g;
        GF_ASSERT_OK(gf_materials_set_friction(&sim.materials, 0, 0, mu));
        add_plane(&sim, 0.0);
        add_sphere(&sim, 1, 0, 0, r, r, v0, 0, 0);
        double t_roll = 2.0 * v0 / (7.0 * mu * g);
        long n_roll = (long)(t_roll / dt);
        /* Still sliding half-way. */
        for (long k = 0; k < n_roll / 2; ++k)
            GF_ASSERT_OK(gf_sim_step(&sim));
        double slip = sim.particles.v[0][0] - sim.particles.w[1][0] * r;
        assert_true(slip > 1.0);
        GF_ASSERT_NEAR(sim.particles.v[0][0], v0 - mu * g * sim.time, 0.01);
        for (long k = n_roll / 2; k < n_roll + 20; ++k)
            GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_NEAR(sim.particles.v[0][0], 25.0 / 7.0, 0.01);
        GF_ASSERT_NEAR(sim.particles.w[1][0] * r, 25.0 / 7.0, 0.01);
        for (long k = 0; k < 500; ++k)
            GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_NEAR(sim.particles.v[0][0], 25.0 / 7.0, 0.01);
        GF_ASSERT_NEAR(sim.particles.w[1][0] * r, 25.0 / 7.0, 0.01);
        GF_ASSERT_NEAR(sim.particles.x[2][0], r, 1e-6 * r);
        GF_ASSERT_NEAR(sim.particles.v[2][0], 0.0, 1e-9);
        gf_sim_free(&sim);
    }
}

/* Dropped on a plane, a sphere lands without bouncing and stays at rest on the surface. */
static void test_drop_no_bounce(void **state) {
    (void)state;
    const double r = 0.01;
    for (int m = 0; m < 3; ++m) {
        gf_sim sim;
        setup_sim(&sim, all_models[m], 1e-4, 20, 0.1);
        sim.gravity[2] = -9.81;
        sim.margin_tolerance = 0.05 * r;
        GF_ASSERT_OK(gf_materials_set_friction(&sim.materials, 0, 0, 0.5));
        add_plane(&sim, 0.0);
        add_sphere(&sim, 1, 0, 0, 5 * r, r, 0.01, 0, 0);
        int landed = 0;
        for (int k = 0; k < 4000; ++k) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            double gap = sim.particles.x[2][0] - r;
            if (gap < 1e-9 * r)
                landed = 1;
            if (landed)
                assert_true(sim.particles.v[2][0] <= 1e-9); /* never moves up again */
            assert_true(gap >= -1e-6 * r);
        }
        assert_true(landed);
        GF_ASSERT_NEAR(sim.particles.v[2][0], 0.0, 1e-9);
        if (all_models[m] != GF_MODEL_FRICTIONLESS) {
            /* Friction turned the horizontal motion into rolling, then nothing slows a
             * rolling sphere on a plane: no creep, no energy gained. */
            GF_ASSERT_NEAR(sim.particles.v[0][0] - sim.particles.w[1][0] * r, 0.0, 1e-9);
        }
        gf_sim_free(&sim);
    }
}

/* Purely inelastic frictional contacts can only remove kinetic energy: each block update
 * lowers the energy the solver minimises, so the kinetic energy never increases between
 * steps, however many sweeps the solver makes. */
static void test_gas_energy_decay(void **state) {
    (void)state;
    for (int m = 1; m < 3; ++m) {
        gf_sim sim;
        setup_sim(&sim, all_models[m], 2e-4, 5, 0.0);
        GF_ASSERT_OK(gf_materials_set_friction(&sim.materials, 0, 0, 0.5));
        const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.1, 0.1};
        for (int d = 0; d < 3; ++d) {
            double n[3] = {0, 0, 0};
            n[d] = 1.0;
            GF_ASSERT_OK(gf_walls_add(&sim.walls, lo, n, NULL, 0));
            n[d] = -1.0;
            GF_ASSERT_OK(gf_walls_add(&sim.walls, hi, n, NULL, 0));
        }
        uint64_t rng = 99;
        const double r = 0.004;
        int64_t id = 0;
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 8; ++j)
                for (int k = 0; k < 8; ++k) {
                    add_sphere(&sim, id++, 0.01 + 0.011 * i, 0.01 + 0.011 * j, 0.01 + 0.011 * k, r,
                               gf_test_uniform(&rng, -1, 1), gf_test_uniform(&rng, -1, 1),
                               gf_test_uniform(&rng, -1, 1));
                    sim.particles.w[0][id - 1] = gf_test_uniform(&rng, -100, 100);
                }
        sim.margin_tolerance = 0.05 * r;
        double e_prev = gf_particles_kinetic_energy(&sim.particles);
        double e0 = e_prev;
        long contacts = 0;
        for (int k = 0; k < 400; ++k) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            contacts += (long)sim.contacts.count;
            double e = gf_particles_kinetic_energy(&sim.particles);
            if (e > e_prev * (1.0 + 1e-12))
                fail_msg("kinetic energy rose from %.17g to %.17g in step %d", e_prev, e, k);
            e_prev = e;
        }
        assert_true(contacts > 1000);   /* the gas did collide */
        assert_true(e_prev < 0.9 * e0); /* and dissipated */
        gf_sim_free(&sim);
    }
}

/* The gyroscopic term: a free asymmetric body conserves kinetic energy and angular momentum
 * up to the integration error, and its rotation axis precesses. */
static void test_gyroscopic(void **state) {
    (void)state;
    gf_particles p;
    gf_particles_init(&p);
    gf_particle rec;
    const double c[3] = {0, 0, 0};
    gf_particle_make_sphere(&rec, 1, c, 1.0, 1.0, 0);
    rec.inv_inertia[0] = 1.0;
    rec.inv_inertia[1] = 0.5;
    rec.inv_inertia[2] = 1.0 / 3.0;
    rec.w[0] = 0.1;
    rec.w[1] = 2.0;
    rec.w[2] = 0.1;
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    const double g[3] = {0, 0, 0};
    double e0 = gf_particles_kinetic_energy(&p);
    double w1_0 = p.w[1][0];
    for (int k = 0; k < 1000; ++k) {
        gf_integrate_free_velocity(&p, g, 1e-4);
        gf_integrate_positions(&p, 1e-4);
    }
    double e1 = gf_particles_kinetic_energy(&p);
    GF_ASSERT_NEAR(e1, e0, 1e-4 * e0);
    assert_true(fabs(p.w[1][0] - w1_0) > 1e-6); /* the torque-free body precesses */
    double qn = 0;
    for (int k = 0; k < 4; ++k)
        qn += p.q[k][0] * p.q[k][0];
    GF_ASSERT_NEAR(qn, 1.0, 1e-14);
    gf_particles_free(&p);
}

int main(void) {
    gf_log_set_quiet(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_reduction),  cmocka_unit_test(test_head_on),
        cmocka_unit_test(test_slide_to_roll),    cmocka_unit_test(test_drop_no_bounce),
        cmocka_unit_test(test_gas_energy_decay), cmocka_unit_test(test_gyroscopic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
