/* Rigid bodies of other shapes than spheres in the engine (issue 12), set up from Body blocks of
 * the configuration, against the physics of the classic cases: a box at rest on a plane, on an
 * incline (holding iff mu >= tan(alpha), else sliding with a = g (sin alpha - mu cos alpha)),
 * sliding to a stop after v0^2 / (2 mu g), and tipping over an edge exactly past its balance
 * angle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/config.h"
#include "granflow/sim.h"
#include "test_util.h"

static const double g = 9.81;

/* A sim from configuration text, ready to step. */
static void make(gf_sim *sim, const char *text) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "bodies.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, 1));
    gf_config_destroy(cfg);
    GF_ASSERT_OK(gf_sim_start(sim));
}

/* The configuration must be refused with a message holding `fragment`. */
static void refused(const char *text, const char *fragment) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "bodies.cfg", &cfg));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, NULL));
    gf_status st = gf_sim_configure(&sim, cfg, 1);
    if (st == GF_OK)
        fail_msg("accepted, expected an error with '%s':\n%s", fragment, text);
    if (!strstr(gf_error_message(), fragment))
        fail_msg("message lacks '%s': %s", fragment, gf_error_message());
    gf_error_clear();
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* The rotation angle of a unit quaternion (rad). */
static double angle_of(const gf_sim *sim, size_t i) {
    double w = fabs(sim->particles.q[0][i]);
    return 2.0 * acos(w > 1.0 ? 1.0 : w);
}

static void run(gf_sim *sim, long steps) {
    for (long s = 0; s < steps; ++s)
        GF_ASSERT_OK(gf_sim_step(sim));
}

#define DOMAIN "Domain { min <0,0,0>; max <0.4,0.2,0.2>; box_walls true; }\n"
/* Sliding: solved to convergence, so that the Gauss-Seidel order leaves no yaw. */
#define TIGHT "Solver { tolerance 1e-10; max_iterations 1000; }\n"

/* A flat box on the floor for 10^4 steps: no creep, no rocking. */
static void test_box_at_rest(void **state) {
    (void)state;
    gf_sim sim;
    make(&sim, DOMAIN "Materials { friction 0.5; Material { name wood; density 700; } }\n"
                      "Body { shape box; half_extents <0.02,0.01,0.005>; "
                      "position <0.1,0.1,0.005>; material wood; }\n"
                      "Time { dt 1e-3; steps 10000; }\n");
    assert_int_equal(sim.particles.n_local, 1);
    assert_int_equal(sim.particles.shape[0], GF_SHAPE_BOX);
    run(&sim, 10000);
    /* 10 s: a drift of a micrometre or a micro-radian would be creep or rocking. */
    GF_ASSERT_NEAR(sim.particles.x[0][0], 0.1, 1e-6);
    GF_ASSERT_NEAR(sim.particles.x[1][0], 0.1, 1e-6);
    GF_ASSERT_NEAR(sim.particles.x[2][0], 0.005, 1e-6);
    assert_true(angle_of(&sim, 0) < 1e-6);
    assert_true(sim.contacts.count >= 4);
    for (int d = 0; d < 3; ++d) {
        GF_ASSERT_NEAR(sim.particles.v[d][0], 0.0, 1e-6);
        GF_ASSERT_NEAR(sim.particles.w[d][0], 0.0, 1e-4);
    }
    gf_sim_free(&sim);
}

/* An incline of angle alpha, as gravity tilted about y over a level floor. */
static void incline(double alpha, double mu, double *v_after, double *x_after, double t) {
    char text[2048];
    snprintf(text, sizeof text,
             DOMAIN "Materials { friction %.17g; Material { name wood; density 700; } }\n"
                    "Body { shape box; half_extents <0.02,0.01,0.005>; "
                    "position <0.05,0.1,0.005>; material wood; }\n"
                    "Physics { gravity <%.17g, 0, %.17g>; }\n"
                    "Time { dt 1e-3; steps 1000; }\n" TIGHT,
             mu, g * sin(alpha), -g * cos(alpha));
    gf_sim sim;
    make(&sim, text);
    run(&sim, lround(t / 1e-3));
    *v_after = sim.particles.v[0][0];
    *x_after = sim.particles.x[0][0] - 0.05;
    /* Sliding or not, the box stays flat on the floor. */
    GF_ASSERT_NEAR(sim.particles.x[2][0], 0.005, 1e-6);
    assert_true(angle_of(&sim, 0) < 1e-5);
    gf_sim_free(&sim);
}

static void test_box_on_incline(void **state) {
    (void)state;
    const double mu = 0.5, t = 0.3;
    double v, x;
    /* Below the friction angle atan(0.5) = 26.6 degrees the box holds. */
    incline(20.0 * M_PI / 180.0, mu, &v, &x, t);
    GF_ASSERT_NEAR(v, 0.0, 1e-6);
    GF_ASSERT_NEAR(x, 0.0, 1e-6);
    /* Just below it too. */
    incline(atan(mu) - 0.01, mu, &v, &x, t);
    GF_ASSERT_NEAR(x, 0.0, 1e-6);
    /* Above it the box slides with a = g (sin alpha - mu cos alpha). The friction of the four
     * corner contacts, each solved by the maximum-dissipation kernel given the others, leans
     * off the sliding direction where the corner's lever arm couples normal and tangent (a
     * share ~ hz/hx of it): the tolerance is 1 % of the friction force. */
    double alpha = 35.0 * M_PI / 180.0, a = g * (sin(alpha) - mu * cos(alpha));
    double tol = 0.01 * mu * g * cos(alpha);
    incline(alpha, mu, &v, &x, t);
    GF_ASSERT_NEAR(v / t, a, tol);
    GF_ASSERT_NEAR(2.0 * x / (t * t), a, tol + 2.0 * a * 1e-3 / t);
}

/* A box sliding at v0 on the floor stops after v0^2 / (2 mu g), without tipping. */
static void test_box_slides_to_a_stop(void **state) {
    (void)state;
    const double mu = 0.5, v0 = 1.0, dt = 1e-4;
    gf_sim sim;
    make(&sim, DOMAIN "Materials { friction 0.5; Material { name wood; density 700; } }\n"
                      "Body { shape box; half_extents <0.02,0.01,0.005>; "
                      "position <0.05,0.1,0.005>; velocity <1, 0, 0>; material wood; }\n"
                      "Time { dt 1e-4; steps 10000; }\n" TIGHT);
    double stop = v0 / (mu * g);
    run(&sim, lround(1.5 * stop / dt));
    GF_ASSERT_NEAR(sim.particles.v[0][0], 0.0, 1e-9);
    /* Within 1 % (see the incline) and the one step v0 dt in which the time stepping ends it. */
    double d = v0 * v0 / (2.0 * mu * g);
    GF_ASSERT_NEAR(sim.particles.x[0][0] - 0.05, d, 0.01 * d + v0 * dt);
    GF_ASSERT_NEAR(sim.particles.x[2][0], 0.005, 1e-6);
    assert_true(angle_of(&sim, 0) < 1e-5);
    gf_sim_free(&sim);
}

/* A tall box (2 hx wide, 2 hz tall) standing on one bottom edge at an angle theta: it falls
 * back onto its base below the balance angle atan(hx / hz) and tips over beyond it. Returns the
 * final rotation angle. */
static double tip(double theta) {
    const double hx = 0.01, hz = 0.03;
    /* The lowest edge on the floor: the centre at hx sin(theta) + hz cos(theta). */
    double z = hx * sin(theta) + hz * cos(theta);
    char text[2048];
    snprintf(text, sizeof text,
             DOMAIN "Materials { friction 0.9; Material { name wood; density 700; } }\n"
                    "Body { shape box; half_extents <%.17g,0.01,%.17g>; position <0.1,0.1,%.17g>; "
                    "axis <0,1,0>; angle %.17g; material wood; }\n"
                    "Time { dt 2e-4; steps 10000; }\n",
             hx, hz, z, theta);
    gf_sim sim;
    make(&sim, text);
    run(&sim, 10000);
    double angle = angle_of(&sim, 0);
    /* At rest at the end. */
    for (int d = 0; d < 3; ++d)
        GF_ASSERT_NEAR(sim.particles.w[d][0], 0.0, 1e-3);
    gf_sim_free(&sim);
    return angle;
}

static void test_box_tips_past_its_balance_angle(void **state) {
    (void)state;
    double balance = atan(0.01 / 0.03); /* 18.4 degrees */
    double back = tip(balance - 2.0 * M_PI / 180.0);
    if (!(back < 1e-3))
        fail_msg("below the balance angle the box should fall back flat, ends at %g degrees",
                 back * 180.0 / M_PI);
    double over = tip(balance + 2.0 * M_PI / 180.0);
    if (!(fabs(over - 0.5 * M_PI) < 1e-3))
        fail_msg("beyond the balance angle the box should tip onto its side (90 degrees), ends "
                 "at %g degrees",
                 over * 180.0 / M_PI);
}

/* Bodies are refused when they cannot be meant: overlapping each other, a wall or the domain,
 * unknown shapes and templates, bad dimensions and orientations. */
static void test_bad_bodies_refused(void **state) {
    (void)state;
    const char *mat = "Materials { Material { name wood; density 700; } }\n"
                      "Time { dt 1e-3; steps 1; }\n";
    char text[2048];
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape box; half_extents <0.02,0.01,0.005>; "
                    "position <0.1,0.1,0.004>; }\n",
             mat);
    refused(text, "outside the domain");
    snprintf(text, sizeof text,
             "Domain { min <0,0,0>; max <0.4,0.2,0.2>; box_walls true; Wall { point <0,0,0.1>; "
             "normal <0,0.6,0.8>; } }\n%s Body { shape box; half_extents <0.02,0.01,0.005>; "
             "position <0.2,0.1,0.02>; }\n",
             mat);
    refused(text, "overlaps wall 6");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape box; half_extents <0.02,0.01,0.005>; position <0.1,0.1,0.05>;"
                    " }\n Body { shape capsule; radius 0.01; half_length 0.02; "
                    "position <0.125,0.1,0.05>; }\n",
             mat);
    refused(text, "overlaps the body");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape cube; half_extents <0.02,0.01,0.005>; "
                    "position <0.1,0.1,0.05>; }\n",
             mat);
    refused(text, "'cube' is not one of");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape box; half_extents <0.02,-0.01,0.005>; "
                    "position <0.1,0.1,0.05>; }\n",
             mat);
    refused(text, "-0.01");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape box; half_extents <0.02,0.01,0.005>; "
                    "position <0.1,0.1,0.05>; orientation <1, 1, 0, 0>; }\n",
             mat);
    refused(text, "unit quaternion");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape clump; clump nothing; position <0.1,0.1,0.05>; }\n", mat);
    refused(text, "names no Clump");
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape cylinder; radius 0.01; half_length 0.02; "
                    "position <0.395,0.1,0.05>; }\n",
             mat);
    refused(text, "outside the domain");
    /* A box's key on a capsule is nobody's key. */
    snprintf(text, sizeof text,
             DOMAIN "%s Body { shape capsule; radius 0.01; half_length 0.02; "
                    "half_extents <1,1,1>; position <0.1,0.1,0.05>; }\n",
             mat);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "bodies.cfg", &cfg));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, NULL));
    GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
    assert_int_equal(gf_config_check_unused(cfg), GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "half_extents"));
    gf_error_clear();
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_at_rest),
        cmocka_unit_test(test_box_on_incline),
        cmocka_unit_test(test_box_slides_to_a_stop),
        cmocka_unit_test(test_box_tips_past_its_balance_angle),
        cmocka_unit_test(test_bad_bodies_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
