/* The serial engine against analytic results: error reduction, head-on collisions, sliding to
 * rolling, inelastic landing and energy decay of a frictional gas (issue 2). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "solver/integrator.h"
#include "core/log.h"
#include "sim/sim.h"
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
    prm.penetration_slop = 0.0; /* the closed forms below are error_reduction's alone */
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

/* ---- free rigid bodies: references independent of the library's quaternion helpers ---- */

/* Rotation matrix of the unit quaternion (w, x, y, z), body to world. */
static void quat_matrix(const double q[4], double R[3][3]) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0][0] = 1 - 2 * (y * y + z * z);
    R[0][1] = 2 * (x * y - w * z);
    R[0][2] = 2 * (x * z + w * y);
    R[1][0] = 2 * (x * y + w * z);
    R[1][1] = 1 - 2 * (x * x + z * z);
    R[1][2] = 2 * (y * z - w * x);
    R[2][0] = 2 * (x * z - w * y);
    R[2][1] = 2 * (y * z + w * x);
    R[2][2] = 1 - 2 * (x * x + y * y);
}

static void quat_mul(const double a[4], const double b[4], double out[4]) {
    double r[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                   a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                   a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                   a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    memcpy(out, r, sizeof r);
}

/* Body-frame angular velocity, world angular momentum R I R^T w and kinetic energy of particle
 * 0 (principal moments `I`). */
static void body_state(const gf_particles *p, const double I[3], double wb[3], double L[3],
                       double *energy) {
    const double q[4] = {p->q[0][0], p->q[1][0], p->q[2][0], p->q[3][0]};
    const double w[3] = {p->w[0][0], p->w[1][0], p->w[2][0]};
    double R[3][3], Lb[3];
    quat_matrix(q, R);
    for (int k = 0; k < 3; ++k) {
        wb[k] = R[0][k] * w[0] + R[1][k] * w[1] + R[2][k] * w[2];
        Lb[k] = I[k] * wb[k];
    }
    for (int k = 0; k < 3; ++k)
        L[k] = R[k][0] * Lb[0] + R[k][1] * Lb[1] + R[k][2] * Lb[2];
    *energy = 0.5 * (wb[0] * Lb[0] + wb[1] * Lb[1] + wb[2] * Lb[2]);
}

/* One free body with principal moments I, orientation q and world angular velocity w. */
static void add_body(gf_particles *p, const double I[3], const double q[4], const double w[3]) {
    gf_particle rec;
    const double c[3] = {0, 0, 0};
    gf_particle_make_sphere(&rec, 1, c, 1.0, 1.0, 0);
    double len = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; ++k)
        rec.q[k] = q[k] / len;
    for (int k = 0; k < 3; ++k) {
        rec.inv_inertia[k] = 1.0 / I[k];
        rec.w[k] = w[k];
    }
    GF_ASSERT_OK(gf_particles_add(p, &rec));
}

static void free_step(gf_particles *p, double dt) {
    static const double g[3] = {0, 0, 0};
    gf_integrate_free_velocity(p, g, dt);
    gf_integrate_positions(p, dt);
}

/* A torque-free asymmetric body keeps its world angular momentum L = R I R^T w (to rounding,
 * not to the integration error), its energy stays bounded, and its angular velocity moves
 * (Euler's equations: the rotation axis precesses). */
static void test_free_body_angular_momentum(void **state) {
    (void)state;
    const double I[3] = {1.0, 2.0, 3.0}, q0[4] = {0.8, 0.1, -0.3, 0.5}, w0[3] = {0.7, -1.3, 0.9};
    const double dt = 1e-3;
    gf_particles p;
    gf_particles_init(&p);
    add_body(&p, I, q0, w0);
    double wb[3], L0[3], L[3], e0, e;
    body_state(&p, I, wb, L0, &e0);
    double n0 = sqrt(L0[0] * L0[0] + L0[1] * L0[1] + L0[2] * L0[2]);
    double worst_L = 0.0, rise = 0.0, loss = 0.0, moved = 0.0;
    const int steps = 5000;
    for (int k = 0; k < steps; ++k) {
        free_step(&p, dt);
        body_state(&p, I, wb, L, &e);
        double dL = sqrt((L[0] - L0[0]) * (L[0] - L0[0]) + (L[1] - L0[1]) * (L[1] - L0[1]) +
                         (L[2] - L0[2]) * (L[2] - L0[2]));
        worst_L = fmax(worst_L, dL / n0);
        rise = fmax(rise, (e - e0) / e0);
        loss = fmax(loss, (e0 - e) / e0);
        moved = fmax(moved,
                     fabs(p.w[0][0] - w0[0]) + fabs(p.w[1][0] - w0[1]) + fabs(p.w[2][0] - w0[2]));
    }
    if (!(worst_L < 1e-6))
        fail_msg("world angular momentum drifted by %g of |L|", worst_L);
    /* Energy: never gained; the scheme is first order (implicit in w), so the loss is bounded
     * by the order of dt |w| per unit of time |w| t. */
    double wn = sqrt(w0[0] * w0[0] + w0[1] * w0[1] + w0[2] * w0[2]);
    if (!(rise < 1e-12))
        fail_msg("kinetic energy rose by %g of its initial value", rise);
    if (!(loss < dt * wn * (steps * dt * wn)))
        fail_msg("kinetic energy fell by %g of its initial value", loss);
    assert_true(moved > 0.1);
    double qn = 0;
    for (int k = 0; k < 4; ++k)
        qn += p.q[k][0] * p.q[k][0];
    GF_ASSERT_NEAR(qn, 1.0, 1e-14);
    gf_particles_free(&p);
}

/* Spun about its intermediate principal axis with a small perturbation, a free body tumbles:
 * the body-frame angular velocity along that axis reverses (the tennis-racket theorem), while
 * the world angular momentum stays put. */
static void test_intermediate_axis(void **state) {
    (void)state;
    const double I[3] = {1.0, 2.0, 3.0}, q0[4] = {0.9, -0.2, 0.3, 0.1};
    const double dt = 1e-3;
    double R[3][3], qn[4];
    double len = sqrt(0.9 * 0.9 + 0.2 * 0.2 + 0.3 * 0.3 + 0.1 * 0.1);
    for (int k = 0; k < 4; ++k)
        qn[k] = q0[k] / len;
    quat_matrix(qn, R);
    const double wbody[3] = {1e-3, 2.0, 1e-3};
    double w[3];
    for (int k = 0; k < 3; ++k)
        w[k] = R[k][0] * wbody[0] + R[k][1] * wbody[1] + R[k][2] * wbody[2];
    gf_particles p;
    gf_particles_init(&p);
    add_body(&p, I, qn, w);
    double wb[3], L0[3], L[3], e;
    body_state(&p, I, wb, L0, &e);
    double n0 = sqrt(L0[0] * L0[0] + L0[1] * L0[1] + L0[2] * L0[2]);
    /* Growth rate of the perturbation: w2 sqrt((I2 - I1)(I3 - I2) / (I1 I3)) = 1.15 / s, so the
     * first flip comes after about ln(4 / 1e-3) / 1.15 = 7 s. */
    double min_w2 = INFINITY, worst_L = 0.0;
    for (int k = 0; k < 15000; ++k) {
        free_step(&p, dt);
        body_state(&p, I, wb, L, &e);
        min_w2 = fmin(min_w2, wb[1]);
        for (int d = 0; d < 3; ++d)
            worst_L = fmax(worst_L, fabs(L[d] - L0[d]) / n0);
    }
    if (!(min_w2 < -1.0))
        fail_msg("the intermediate axis did not flip: smallest body w2 %g", min_w2);
    assert_true(worst_L < 1e-6);
    gf_particles_free(&p);
}

/* Constant angular velocity (a sphere, or an asymmetric body spinning about a principal axis):
 * the orientation after N steps is the exact rotation by the angle N dt |w| about w. The step
 * turns by dt |w| = 0.013 rad, 0.247 and 0.26 rad: the integrator's series for the half angle
 * (below 1/8 rad), near its end, and libm beyond. */
static void test_orientation_exact(void **state) {
    (void)state;
    const double w[3] = {3.0, -4.0, 12.0}, steps_dt[3] = {1e-3, 0.019, 0.02}; /* |w| = 13 rad/s */
    double q0[4] = {0.5, 0.5, -0.5, 0.5};
    for (int run = 0; run < 6; ++run) {
        int body = run % 2;
        double dt = steps_dt[run / 2];
        const int steps = (int)lround(1.0 / dt); /* 1 s: 6.5 turns whatever the step */
        gf_particles p;
        gf_particles_init(&p);
        double I[3] = {2.0, 2.0, 2.0}, wv[3] = {w[0], w[1], w[2]};
        if (body) {
            /* w along the body's principal axis 3, R(q0) e3: a steady spin. */
            I[0] = 1.0;
            I[1] = 2.0;
            I[2] = 3.0;
            double R[3][3];
            quat_matrix(q0, R);
            for (int d = 0; d < 3; ++d)
                wv[d] = 13.0 * R[d][2];
        }
        add_body(&p, I, q0, wv);
        for (int k = 0; k < steps; ++k)
            free_step(&p, dt);
        double n = sqrt(wv[0] * wv[0] + wv[1] * wv[1] + wv[2] * wv[2]);
        double half = 0.5 * steps * dt * n, rot[4] = {cos(half), 0, 0, 0}, expect[4];
        for (int d = 0; d < 3; ++d)
            rot[d + 1] = sin(half) * wv[d] / n;
        quat_mul(rot, q0, expect);
        for (int k = 0; k < 4; ++k)
            GF_ASSERT_NEAR(p.q[k][0], expect[k], 1e-12);
        for (int d = 0; d < 3; ++d)
            GF_ASSERT_NEAR(p.w[d][0], wv[d], 1e-12 * n);
        gf_particles_free(&p);
    }
    /* An orientation given 1e-6 off unit length (through the API, which takes it as it is)
     * comes out of one step of unit length to rounding, turned as the unit one would be. */
    gf_particles p;
    gf_particles_init(&p);
    double I[3] = {2.0, 2.0, 2.0}, wv[3] = {w[0], w[1], w[2]}, qs[4], dt = 1e-3;
    for (int k = 0; k < 4; ++k)
        qs[k] = (1.0 + 1e-6) * q0[k];
    add_body(&p, I, q0, wv);
    for (int k = 0; k < 4; ++k)
        p.q[k][0] = qs[k]; /* add_body normalises */
    free_step(&p, dt);
    double n = 13.0, half = 0.5 * dt * n, rot[4] = {cos(half), 0, 0, 0}, expect[4], len2 = 0.0;
    for (int d = 0; d < 3; ++d)
        rot[d + 1] = sin(half) * wv[d] / n;
    quat_mul(rot, q0, expect);
    for (int k = 0; k < 4; ++k) {
        GF_ASSERT_NEAR(p.q[k][0], expect[k], 1e-15);
        len2 += p.q[k][0] * p.q[k][0];
    }
    GF_ASSERT_NEAR(len2, 1.0, 4 * DBL_EPSILON);
    gf_particles_free(&p);
}

/* A sphere hits a resting chain of two, the last 0.2 mm from a fourth sphere: at detection the
 * fourth and the chain do not approach each other, so per-pair speculation leaves that pair
 * out, but the impact pushes the chain at v/3 = 0.33 mm per step into it. The check after the
 * solve must add the pair (and the sweeps continue), so no pair ends the step overlapping. With
 * hard contacts the chain closes the gap within the step and pushes the fourth: momentum
 * 3 u + w = v with u - w = gap / dt, so u = (v + gap / dt) / 4 and the gap ends at 0. */
static void test_pushed_chain_meets_a_neighbour(void **state) {
    (void)state;
    for (int per_pair = 0; per_pair <= 1; ++per_pair) {
        gf_sim sim;
        setup_sim(&sim, GF_MODEL_MAXDISS, 1e-3, 200, 0.0);
        sim.per_pair = per_pair;
        sim.margin_fraction = 0.01; /* touching pairs are contacts; the gap of 0.02 r is not */
        const double r = 0.01, v = 1.0, gap = 2e-4;
        add_sphere(&sim, 0, 0.0, 0, 0, r, v, 0, 0);
        add_sphere(&sim, 1, 2 * r, 0, 0, r, 0, 0, 0);
        add_sphere(&sim, 2, 4 * r, 0, 0, r, 0, 0, 0);
        add_sphere(&sim, 3, 6 * r + gap, 0, 0, r, 0, 0, 0);
        GF_ASSERT_OK(gf_sim_step(&sim));
        const gf_particles *p = &sim.particles;
        double x[4], u[4];
        for (size_t i = 0; i < 4; ++i) {
            x[p->id[i]] = p->x[0][i];
            u[p->id[i]] = p->v[0][i];
        }
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(x[k + 1] - x[k] - 2 * r, 0.0, 1e-12);
        double uc = (v + gap / 1e-3) / 4;
        for (int k = 0; k < 3; ++k)
            GF_ASSERT_NEAR(u[k], uc, 1e-9);
        GF_ASSERT_NEAR(u[3], uc - gap / 1e-3, 1e-9);
        /* Per pair, the fourth sphere joined after the first solve; otherwise it was there. */
        assert_int_equal(sim.promoted_contacts, per_pair ? 1 : 0);
        gf_sim_free(&sim);
    }
}

int main(void) {
    gf_log_set_quiet(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pushed_chain_meets_a_neighbour),
        cmocka_unit_test(test_error_reduction),
        cmocka_unit_test(test_head_on),
        cmocka_unit_test(test_slide_to_roll),
        cmocka_unit_test(test_drop_no_bounce),
        cmocka_unit_test(test_gas_energy_decay),
        cmocka_unit_test(test_free_body_angular_momentum),
        cmocka_unit_test(test_intermediate_axis),
        cmocka_unit_test(test_orientation_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
