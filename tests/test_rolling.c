/* Rolling and twisting resistance (issue 33, deliverable 1): a contact's torque impulse about
 * its tangents is at most rolling_friction r lambda_n and about its normal at most
 * twisting_friction r lambda_n, r = r1 r2 / (r1 + r2) (the body's own radius against the
 * geometry), and takes the value that dissipates most within that bound. Against closed forms
 * (docs/physics.md, "Rolling and twisting resistance"), with mu the sliding friction:
 * - a sphere rolling on a plane decelerates at (5/7) mu_r g and stays at rest once stopped;
 * - on an incline of angle alpha it rests iff tan(alpha) <= mu_r, else rolls at
 *   (5/7) g (sin(alpha) - mu_r cos(alpha));
 * - a sphere spinning about the normal of a floor stops at (5/2) mu_s g / r; on a fixed sphere of
 *   the same radius (r = r1 / 2) at half that; on a turntable it spins up at that rate until it
 *   turns with the table;
 * - a cube spinning on a floor stops at (3/2) (sqrt(2) mu + sqrt(3) mu_s) g / h (its four corner
 *   points' friction and twisting torques, r its bounding radius sqrt(3) h);
 * - a cylinder rolling on its side (the manifold's two points, an anisotropic torque block)
 *   decelerates at mu_r R g / (3/2 r), R its bounding radius.
 * Kinetic energy never rises. Results without these laws are the paper's (the golden tests). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "test_util.h"

static const double g = 9.81, rho = 2500.0, r = 0.01;

/* A run of one body (and the given extra bodies) on the floor z = 0 of a closed box, friction
 * mu, rolling and twisting friction mr and ms, gravity g (sin a, 0, -cos a), dt 1 ms, the
 * solver converged tightly so that the closed forms hold to 1e-6. */
static void make(gf_sim *sim, const char *bodies, double mu, double mr, double ms, double a) {
    char text[4096];
    snprintf(text, sizeof text,
             "Domain { min <-2,-2,0>; max <2,2,1>; box_walls true; }\n"
             "Materials { friction %.17g; rolling_friction %.17g; twisting_friction %.17g;\n"
             "            Material { name m; density %.17g; } }\n"
             "Physics { gravity <%.17g,0,%.17g>; }\n"
             "Solver { tolerance 1e-12; max_iterations 1000; }\n"
             "%s"
             "Time { dt 1e-3; steps 1000; }\n",
             mu, mr, ms, rho, g * sin(a), -g * cos(a), bodies);
    gf_test_sim_make(sim, "rolling.cfg", text);
}

static double kinetic_energy(const gf_particles *p) {
    double e = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        double m = 1.0 / p->inv_mass[i];
        for (int d = 0; d < 3; ++d)
            e += 0.5 * m * p->v[d][i] * p->v[d][i];
        /* rotational energy in the world frame: 1/2 w . I w, I from the body's inverse */
        double iI[6], w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        gf_particles_inv_inertia_world(p, i, iI);
        /* solve iI x = w for x = I w (a symmetric 3x3 by Cramer's rule) */
        const double a11 = iI[0], a12 = iI[1], a13 = iI[2], a22 = iI[3], a23 = iI[4], a33 = iI[5];
        double det = a11 * (a22 * a33 - a23 * a23) - a12 * (a12 * a33 - a23 * a13) +
                     a13 * (a12 * a23 - a22 * a13);
        double x[3] = {(w[0] * (a22 * a33 - a23 * a23) - a12 * (w[1] * a33 - a23 * w[2]) +
                        a13 * (w[1] * a23 - a22 * w[2])) /
                           det,
                       (a11 * (w[1] * a33 - a23 * w[2]) - w[0] * (a12 * a33 - a23 * a13) +
                        a13 * (a12 * w[2] - w[1] * a13)) /
                           det,
                       (a11 * (a22 * w[2] - w[1] * a23) - a12 * (a12 * w[2] - w[1] * a13) +
                        w[0] * (a12 * a23 - a22 * a13)) /
                           det};
        e += 0.5 * (w[0] * x[0] + w[1] * x[1] + w[2] * x[2]);
    }
    return e;
}

/* Runs `steps` steps, failing if the kinetic energy (less the work of gravity) ever rises by
 * more than rounding (1e-12 of m g times the body's radius). */
static void run_dissipating(gf_sim *sim, long steps) {
    const gf_particles *p = &sim->particles;
    double prev = kinetic_energy(p);
    double pot = 0.0; /* the potential energy, to the start */
    double x0[3] = {p->x[0][0], p->x[1][0], p->x[2][0]};
    for (long s = 0; s < steps; ++s) {
        GF_ASSERT_OK(gf_sim_step(sim));
        double m = 1.0 / p->inv_mass[0];
        pot =
            -m * (sim->gravity[0] * (p->x[0][0] - x0[0]) + sim->gravity[1] * (p->x[1][0] - x0[1]) +
                  sim->gravity[2] * (p->x[2][0] - x0[2]));
        double e = kinetic_energy(p) + pot;
        if (!(e <= prev + 1e-12 * m * g * p->radius[0]))
            fail_msg("step %ld: the energy rose from %.17g to %.17g J", s + 1, prev, e);
        prev = e;
    }
}

/* A sphere rolling on the floor at v0 without slipping: v(t) = v0 - (5/7) mu_r g t until it
 * stops, then at rest; the contact point does not slip. */
static void test_sphere_rolls_to_a_stop(void **state) {
    (void)state;
    const double v0 = 0.3, mr = 0.02, a = 5.0 / 7.0 * mr * g, stop = v0 / a;
    char body[512];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m;\n"
             "       velocity <%.17g,0,0>; angular_velocity <0,%.17g,0>; }\n",
             r, r, v0, v0 / r);
    gf_sim sim;
    make(&sim, body, 0.5, mr, 0.0, 0.0);
    const gf_particles *p = &sim.particles;
    run_dissipating(&sim, 1000);
    double want = v0 - a * 1.0, got = p->v[0][0];
    if (!(fabs(got - want) < 1e-6 * v0))
        fail_msg("after 1 s the sphere rolls at %.12g m/s, closed form %.12g", got, want);
    double slip = p->v[0][0] - r * p->w[1][0];
    if (!(fabs(slip) < 1e-9))
        fail_msg("the contact point slips at %g m/s", slip);
    /* past the stop: at rest, no creep back */
    gf_test_sim_run(&sim, (long)(1000.0 * (stop - 1.0)) + 500);
    if (!(fabs(p->v[0][0]) < 1e-9 && fabs(p->w[1][0]) < 1e-7))
        fail_msg("0.5 s after it should have stopped the sphere moves at %g m/s, %g rad/s",
                 p->v[0][0], p->w[1][0]);
    double x = p->x[0][0], want_x = 0.5 * v0 * stop;
    if (!(fabs(x - want_x) < 1e-3 * want_x))
        fail_msg("it stopped after %.9g m, closed form %.9g", x, want_x);
    gf_sim_free(&sim);
    /* without rolling resistance it keeps rolling */
    make(&sim, body, 0.5, 0.0, 0.0, 0.0);
    gf_test_sim_run(&sim, 1000);
    if (!(fabs(sim.particles.v[0][0] - v0) < 1e-9))
        fail_msg("without rolling friction the sphere slowed to %g m/s", sim.particles.v[0][0]);
    gf_sim_free(&sim);
}

/* On an incline of angle alpha (gravity tilted): at rest iff tan(alpha) <= mu_r, rolling at
 * (5/7) g (sin alpha - mu_r cos alpha) beyond. mu = 0.5 holds the contact point throughout. */
static void test_sphere_on_an_incline(void **state) {
    (void)state;
    const double mr = 0.1;
    char body[512];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m; }\n", r, r);
    const double share[3] = {0.9, 0.999, 1.1};
    for (int k = 0; k < 3; ++k) {
        const double alpha = atan(share[k] * mr);
        gf_sim sim;
        make(&sim, body, 0.5, mr, 0.0, alpha);
        run_dissipating(&sim, 1000);
        double v = sim.particles.v[0][0];
        double want = share[k] <= 1.0 ? 0.0 : 5.0 / 7.0 * g * (sin(alpha) - mr * cos(alpha));
        if (!(fabs(v - want) < 1e-6 * fmax(want, 1e-3)))
            fail_msg("tan(alpha) = %g mu_r: after 1 s the sphere rolls at %.12g m/s, closed form "
                     "%.12g",
                     share[k], v, want);
        gf_sim_free(&sim);
    }
}

/* A sphere spinning about the floor's normal: w(t) = w0 - (5/2) mu_s g / r t, then 0. Sliding
 * friction has no part (the contact point's velocity is zero). On a fixed sphere of its own
 * radius the pair's r is r / 2: half the rate. */
static void test_spin_stops(void **state) {
    (void)state;
    const double w0 = 20.0, ms = 0.1, rate = 2.5 * ms * g / r;
    char body[1024];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m;\n"
             "       angular_velocity <0,0,%.17g>; }\n",
             r, r, w0);
    gf_sim sim;
    make(&sim, body, 0.5, 0.0, ms, 0.0);
    run_dissipating(&sim, 50);
    const gf_particles *p = &sim.particles;
    double want = w0 - rate * 0.05;
    if (!(fabs(p->w[2][0] - want) < 1e-6 * w0))
        fail_msg("after 50 ms the sphere spins at %.12g rad/s, closed form %.12g", p->w[2][0],
                 want);
    gf_test_sim_run(&sim, 100);
    if (!(fabs(p->w[2][0]) < 1e-9 && fabs(p->w[0][0]) + fabs(p->w[1][0]) < 1e-9 &&
          fabs(p->v[0][0]) + fabs(p->v[1][0]) < 1e-12))
        fail_msg("after the stop: w = %g %g %g rad/s, v = %g %g m/s", p->w[0][0], p->w[1][0],
                 p->w[2][0], p->v[0][0], p->v[1][0]);
    gf_sim_free(&sim);
    /* on a fixed sphere of the same radius, twisting_friction r/2 */
    snprintf(
        body, sizeof body,
        "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m; motion fixed; }\n"
        "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m;\n"
        "       angular_velocity <0,0,%.17g>; }\n",
        r, r, r, 3 * r, w0);
    make(&sim, body, 0.5, 0.0, ms, 0.0);
    gf_test_sim_run(&sim, 50);
    int top = p->x[2][0] > p->x[2][1] ? 0 : 1;
    want = w0 - 0.5 * rate * 0.05;
    if (!(fabs(p->w[2][top] - want) < 1e-6 * w0))
        fail_msg("on a sphere after 50 ms it spins at %.12g rad/s, closed form %.12g", p->w[2][top],
                 want);
    gf_sim_free(&sim);
}

/* A sphere at rest on the centre of a turntable (a disc mesh turning at W about the vertical
 * through the contact point, whose surface there does not move): only twisting acts, against
 * the spin relative to the table, so the sphere spins up at (5/2) mu_s g / r until it turns with
 * the table, then keeps turning with it. Without the table's spin subtracted it would not spin
 * up at all. */
static void test_turntable_spins_a_sphere_up(void **state) {
    (void)state;
    const double W = 5.0, ms = 0.1, rate = 2.5 * ms * g / r, t = 0.01;
    char body[1024];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0.3,0.3,%.17g>; material m; }\n", r,
             0.1 + r);
    char text[4096];
    snprintf(text, sizeof text,
             "Domain { min <-2,-2,0>; max <2,2,1>; box_walls true;\n"
             "         Mesh { shape disc; centre <0.3,0.3,0.1>; normal <0,0,1>; radius 0.2;\n"
             "                pivot <0.3,0.3,0.1>; angular_velocity <0,0,%.17g>; } }\n"
             "Materials { friction 0.5; twisting_friction %.17g;\n"
             "            Material { name m; density %.17g; } }\n"
             "Physics { gravity <0,0,%.17g>; }\n"
             "Solver { tolerance 1e-12; max_iterations 1000; }\n"
             "%s"
             "Time { dt 1e-3; steps 1000; }\n",
             W, ms, rho, -g, body);
    gf_sim sim;
    gf_test_sim_make(&sim, "turntable.cfg", text);
    const gf_particles *p = &sim.particles;
    gf_test_sim_run(&sim, (long)(t * 1000));
    double want = rate * t; /* 2.45 rad/s after 10 ms */
    if (!(fabs(p->w[2][0] - want) < 1e-6 * W))
        fail_msg("after %g s on the turntable the sphere spins at %.12g rad/s, closed form %.12g",
                 t, p->w[2][0], want);
    gf_test_sim_run(&sim, 100); /* it catches up at 20 ms */
    if (!(fabs(p->w[2][0] - W) < 1e-6 * W))
        fail_msg("the sphere spins at %.12g rad/s, the table at %g", p->w[2][0], W);
    gf_sim_free(&sim);
}

/* A cube (half edge h) spinning flat on the floor: its four corner points slide on circles of
 * radius sqrt(2) h, each under m g / 4, and twist against bounds mu_s sqrt(3) h m g / 4 (the
 * cube's bounding radius sqrt(3) h). I = (2/3) m h^2, so w falls at
 * (3/2) (sqrt(2) mu + sqrt(3) mu_s) g / h. The joint block of the four points, then their torque
 * blocks. */
static void test_cube_spin_stops(void **state) {
    (void)state;
    const double h = 0.01, w0 = 30.0, t = 0.02;
    char body[512];
    snprintf(body, sizeof body,
             "Body { shape box; half_extents <%.17g,%.17g,%.17g>; position <0,0,%.17g>;\n"
             "       material m; angular_velocity <0,0,%.17g>; }\n",
             h, h, h, h, w0);
    const double mus[2] = {0.3, 0.0}, mss[2] = {0.2, 0.4};
    for (int k = 0; k < 2; ++k) {
        gf_sim sim;
        make(&sim, body, mus[k], 0.0, mss[k], 0.0);
        run_dissipating(&sim, (long)(t * 1000));
        double rate = 1.5 * (sqrt(2.0) * mus[k] + sqrt(3.0) * mss[k]) * g / h;
        double want = w0 - rate * t, got = sim.particles.w[2][0];
        if (!(fabs(got - want) < 1e-6 * w0))
            fail_msg("mu %g, mu_s %g: after %g s the cube spins at %.12g rad/s, closed form %.12g",
                     mus[k], mss[k], t, got, want);
        gf_sim_free(&sim);
    }
}

/* A cylinder (radius a, half length b) rolling on its side along x, its axis along y: the
 * manifold's two end points each resist with mu_r R lambda_i (R = sqrt(a^2 + b^2) its bounding
 * radius), so m a_x (1 + I / (m a^2)) = mu_r R m g / a with I = m a^2 / 2. Its torque block is
 * anisotropic (the inertia about the axis differs from the others'). */
static void test_cylinder_rolls_to_a_stop(void **state) {
    (void)state;
    const double a = 0.01, b = 0.02, v0 = 0.3, mr = 0.02, R = sqrt(a * a + b * b);
    const double dec = mr * R * g / (1.5 * a);
    char body[512];
    snprintf(body, sizeof body,
             "Body { shape cylinder; radius %.17g; half_length %.17g; position <0,0,%.17g>;\n"
             "       axis <1,0,0>; angle %.17g; material m;\n"
             "       velocity <%.17g,0,0>; angular_velocity <0,%.17g,0>; }\n",
             a, b, a, M_PI / 2, v0, v0 / a);
    gf_sim sim;
    make(&sim, body, 0.5, mr, 0.0, 0.0);
    run_dissipating(&sim, 200);
    double want = v0 - dec * 0.2, got = sim.particles.v[0][0];
    if (!(fabs(got - want) < 1e-5 * v0))
        fail_msg("after 0.2 s the cylinder rolls at %.12g m/s, closed form %.12g", got, want);
    if (!(fabs(sim.particles.v[1][0]) < 1e-9 && fabs(sim.particles.w[2][0]) < 1e-7))
        fail_msg("the cylinder veers: v_y %g m/s, w_z %g rad/s", sim.particles.v[1][0],
                 sim.particles.w[2][0]);
    gf_sim_free(&sim);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_rolls_to_a_stop),
        cmocka_unit_test(test_sphere_on_an_incline),
        cmocka_unit_test(test_spin_stops),
        cmocka_unit_test(test_cube_spin_stops),
        cmocka_unit_test(test_turntable_spins_a_sphere_up),
        cmocka_unit_test(test_cylinder_rolls_to_a_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
