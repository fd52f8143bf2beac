/* Cohesion (issue 33, deliverable 3): a touching contact point can pull with up to the
 * cohesion of its pair of materials (its normal impulse down to -c dt), and its friction bound
 * counts that pull, mu (lambda_n + c dt). Against closed forms: a sphere hangs under a ceiling
 * iff m g < c; on a vertical wall it rolls or slides down as the friction of the pull allows; a
 * box hangs under a ceiling by its four corners iff m g < 4 c, and on a wall iff m g < 4 mu c;
 * an overhanging box stands iff cohesion holds its tipping moment.
 * Results without cohesion are the paper's (the golden tests). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "test_util.h"

static const double g = 9.81, rho = 2500.0, r = 0.01;
/* More keys of the Materials block (set by a test, reset after it). */
static const char *materials_extra = "";

/* A body touching the domain's ceiling (z = 1) or its wall x = 1 (or another body, given after
 * it), the given cohesion and friction, `steps` steps of 1 ms. Returns how far its centre
 * moved. */
static double run_for(const char *body, double cohesion, double mu, long steps) {
    char text[4096];
    snprintf(
        text, sizeof text,
        "Domain { min <-1,-1,0>; max <1,1,1>; box_walls true; }\n"
        "Materials { friction %.17g; cohesion %.17g; %s Material { name m; density %.17g; } }\n"
        "Physics { gravity <0,0,%.17g>; }\n"
        "%s"
        "Time { dt 1e-3; steps 1000; }\n",
        mu, cohesion, materials_extra, rho, -g, body);
    gf_sim sim;
    gf_test_sim_make(&sim, "cohesion.cfg", text);
    const gf_particles *p = &sim.particles;
    double x0[3] = {p->x[0][0], p->x[1][0], p->x[2][0]};
    gf_test_sim_run(&sim, steps);
    double d = sqrt((p->x[0][0] - x0[0]) * (p->x[0][0] - x0[0]) +
                    (p->x[1][0] - x0[1]) * (p->x[1][0] - x0[1]) +
                    (p->x[2][0] - x0[2]) * (p->x[2][0] - x0[2]));
    gf_sim_free(&sim);
    return d;
}

static double run(const char *body, double cohesion, double mu) {
    return run_for(body, cohesion, mu, 500);
}

static void test_sphere_hangs_iff_mg_below_c(void **state) {
    (void)state;
    const double mg = rho * 4.0 / 3.0 * M_PI * r * r * r * g;
    char body[256];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m; }\n", r, 1 - r);
    /* 0.5 s of free fall is 1.2 m: it leaves the ceiling at once; holding, it stays within the
     * solver's tolerance of it */
    double held = run(body, 1.02 * mg, 0.5), fell = run(body, 0.98 * mg, 0.5);
    if (!(held < 1e-6))
        fail_msg("c = 1.02 m g: the sphere moved %g m from the ceiling", held);
    if (!(fell > 1e-3))
        fail_msg("c = 0.98 m g: the sphere stayed (%g m)", fell);
    /* without cohesion it falls */
    assert_true(run(body, 0.0, 0.5) > 1e-3);
}

/* On a vertical wall the pull is the only normal load, so friction can give up to mu c. A
 * sphere there rolls down without slipping at (5/7) g while mu c >= (2/7) m g (the friction
 * rolling needs), and slides at g - mu c / m below that; without cohesion it falls freely. A box
 * flat against the wall (four corner points) holds iff m g < 4 mu c. */
static void test_bodies_on_a_wall(void **state) {
    (void)state;
    const double m = rho * 4.0 / 3.0 * M_PI * r * r * r, mu = 0.4, t = 0.3;
    char body[256];
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <%.17g,0,0.5>; material m; }\n", r,
             1 - r);
    const double share[3] = {0.5, 0.2, 0.0}; /* mu c / (m g) */
    for (int k = 0; k < 3; ++k) {
        double a = share[k] >= 2.0 / 7.0 ? 5.0 / 7.0 * g : g * (1.0 - share[k]);
        double drop = 0.5 * a * t * t, got = run_for(body, share[k] * m * g / mu, mu, 300);
        if (!(fabs(got - drop) < 1e-2 * drop))
            fail_msg("mu c = %g m g: the sphere dropped %g m down the wall, closed form %g",
                     share[k], got, drop);
    }
    const double h[3] = {0.01, 0.02, 0.015}, mb = rho * 8.0 * h[0] * h[1] * h[2];
    snprintf(body, sizeof body,
             "Body { shape box; half_extents <%g,%g,%g>; position <%.17g,0,0.5>; material m; }\n",
             h[0], h[1], h[2], 1 - h[0]);
    double held = run(body, 1.02 * mb * g / (4.0 * mu), mu);
    double slid = run(body, 0.98 * mb * g / (4.0 * mu), mu);
    if (!(held < 1e-6))
        fail_msg("4 mu c = 1.02 m g: the box slid %g m down the wall", held);
    if (!(slid > 1e-3))
        fail_msg("4 mu c = 0.98 m g: the box stayed on the wall (%g m)", slid);
}

/* A box flat under the ceiling touches it at four corner points, each holding c. */
static void test_box_hangs_by_four_points(void **state) {
    (void)state;
    const double h[3] = {0.02, 0.015, 0.01}, mg = rho * 8.0 * h[0] * h[1] * h[2] * g;
    char body[256];
    snprintf(body, sizeof body,
             "Body { shape box; half_extents <%g,%g,%g>; position <0,0,%.17g>; material m; }\n",
             h[0], h[1], h[2], 1 - h[2]);
    double held = run(body, 1.02 * mg / 4.0, 0.5), fell = run(body, 0.98 * mg / 4.0, 0.5);
    if (!(held < 1e-6))
        fail_msg("4 c = 1.02 m g: the box moved %g m from the ceiling", held);
    if (!(fell > 1e-3))
        fail_msg("4 c = 0.98 m g: the box stayed (%g m)", fell);
}

/* A cohesive overhang stands where a cohesionless one topples: a box (half extents 0.02, 0.02,
 * 0.01) on a fixed one of the same size, shifted by 0.03 along x, so that its centre lies 0.01
 * beyond the edge it would tip over and the two corner points of the contact patch 0.01 behind
 * that edge must pull. Moments about the edge: it stands iff 2 c 0.01 >= m g 0.01, c >= m g / 2. */
static void test_overhang_stands_iff_c_holds_the_moment(void **state) {
    (void)state;
    const double mg = rho * 8.0 * 0.02 * 0.02 * 0.01 * g;
    const double cs[3] = {1.02 * 0.5 * mg, 0.98 * 0.5 * mg, 0.0};
    for (int k = 0; k < 3; ++k) {
        char text[4096];
        snprintf(text, sizeof text,
                 "Domain { min <-1,-1,0>; max <1,1,1>; box_walls true; }\n"
                 "Materials { friction 0.8; cohesion %.17g; "
                 "Material { name m; density %.17g; } }\n"
                 "Physics { gravity <0,0,%.17g>; }\n"
                 "Body { shape box; half_extents <0.02,0.02,0.01>; position <0,0,0.5>; "
                 "motion fixed; material m; }\n"
                 "Body { shape box; half_extents <0.02,0.02,0.01>; position <0.03,0,0.52>; "
                 "material m; }\n"
                 "Time { dt 1e-3; steps 1000; }\n",
                 cs[k], rho, -g);
        gf_sim sim;
        gf_test_sim_make(&sim, "overhang.cfg", text);
        const gf_particles *p = &sim.particles;
        size_t i = p->inv_mass[0] > 0.0 ? 0 : 1;
        const double x0[3] = {p->x[0][i], p->x[1][i], p->x[2][i]};
        gf_test_sim_run(&sim, 500);
        i = p->inv_mass[0] > 0.0 ? 0 : 1;
        double moved = sqrt((p->x[0][i] - x0[0]) * (p->x[0][i] - x0[0]) +
                            (p->x[1][i] - x0[1]) * (p->x[1][i] - x0[1]) +
                            (p->x[2][i] - x0[2]) * (p->x[2][i] - x0[2]));
        if (k == 0 && !(moved < 1e-6))
            fail_msg("c = 1.02 m g / 2: the overhang moved %g m", moved);
        if (k > 0 && !(x0[2] - p->x[2][i] > 0.1))
            fail_msg("c = %g m g / 2: the overhang stood (moved %g m)", k == 1 ? 0.98 : 0.0, moved);
        gf_sim_free(&sim);
    }
}

/* Materials.cohesion_scaling radius: the pull is c times the pair's reduced radius r1 r2 /
 * (r1 + r2), the body's own against the geometry. A sphere of radius r hangs under the ceiling
 * iff m g < c r, so with one c the smaller of two spheres hangs and the larger falls (m grows as
 * r^3, the pull as r); under a fixed sphere of radius R it hangs iff m g < c r R / (r + R). */
static void test_cohesion_scaled_by_radius(void **state) {
    (void)state;
    materials_extra = "cohesion_scaling radius;";
    const double c = rho * 4.0 / 3.0 * M_PI * r * r * g; /* N/m: holds exactly radius r */
    char body[512];
    for (int k = 0; k < 2; ++k) {
        double rk = k == 0 ? 0.97 * r : 1.03 * r;
        snprintf(body, sizeof body,
                 "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m; }\n", rk,
                 1 - rk);
        double moved = run(body, c, 0.5);
        if (k == 0 ? !(moved < 1e-6) : !(moved > 1e-3))
            fail_msg("radius %g (holds up to %g): the sphere moved %g m from the ceiling", rk, r,
                     moved);
    }
    /* under a fixed sphere of radius R = 3 r: the reduced radius is 3 r / 4, and a sphere of
     * radius r hangs iff c >= m g / (3 r / 4) */
    const double R = 3.0 * r, m = rho * 4.0 / 3.0 * M_PI * r * r * r, need = m * g / (0.75 * r);
    snprintf(body, sizeof body,
             "Body { shape sphere; radius %.17g; position <0,0,%.17g>; material m; }\n"
             "Body { shape sphere; radius %.17g; position <0,0,0.5>; motion fixed; material m; }\n",
             r, 0.5 - R - r, R);
    double held = run(body, 1.02 * need, 0.5), fell = run(body, 0.98 * need, 0.5);
    if (!(held < 1e-6 && fell > 1e-3))
        fail_msg("under a sphere: c 1.02 and 0.98 times m g / r_eff moved it %g and %g m", held,
                 fell);
    materials_extra = "";
    /* an unknown scaling is refused, naming file, line and the choices */
    const char *text = "Materials {\n  cohesion 1;\n  cohesion_scaling diameter;\n"
                       "  Material { name m; density 1000; }\n}\n";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "bad.cfg", &cfg));
    gf_materials mat;
    assert_int_equal(gf_materials_configure(&mat, gf_config_root(cfg)), GF_ERR_INPUT);
    if (!strstr(gf_error_message(), "bad.cfg:1") ||
        !strstr(gf_error_message(), "cohesion_scaling 'diameter' is unknown (none, radius)"))
        fail_msg("message: %s", gf_error_message());
    gf_error_clear();
    gf_config_destroy(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sphere_hangs_iff_mg_below_c),
        cmocka_unit_test(test_bodies_on_a_wall),
        cmocka_unit_test(test_box_hangs_by_four_points),
        cmocka_unit_test(test_overhang_stands_iff_c_holds_the_moment),
        cmocka_unit_test(test_cohesion_scaled_by_radius),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
