/* Stages (issue 34, deliverable 4): from a Stage block's time on, the run goes on with other
 * contact laws, gravity, time step, solver settings, inserts' times and outlets, each stage on
 * top of those before it. Against closed forms: a sphere sliding without friction keeps its
 * speed exactly, and from the stage that gives it friction decelerates at mu g; a falling
 * sphere's speed and the time follow the two stages' gravity and time step; an insert stopped by
 * a stage has placed rate x stop particles; a body in a closed outlet stays until a stage opens
 * it. Bad stages stop the set-up naming the block and the override. (Restarts across a stage:
 * test_app, test_stages_restart_exactly.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "test_util.h"

static const double g = 9.81;

/* A sphere sliding along the floor at 1 m/s without spin, frictionless until t = 0.1 s; then
 * mu = 0.4. Sliding, the friction impulse is mu times the normal one, m g dt a step: the speed
 * falls by mu g per second until rolling sets in at 2 v0 / (7 mu g) = 73 ms. */
static void test_friction_from_a_stage(void **state) {
    (void)state;
    const double mu = 0.4, r = 0.01;
    char text[2048];
    snprintf(text, sizeof text,
             "Domain { min <-1,-1,0>; max <1,1,1>; box_walls true; }\n"
             "Materials { friction 0; Material { name m; density 2500; } }\n"
             "Physics { gravity <0,0,%.17g>; }\n"
             "Body { shape sphere; radius %.17g; position <-0.5,0,%.17g>; velocity <1,0,0>; "
             "material m; }\n"
             "Time { dt 1e-3; steps 1000; }\n"
             "Stage { name rough; time 0.1; set \"Materials.friction = %.17g\"; }\n",
             -g, r, r, mu);
    gf_sim sim;
    gf_test_sim_make(&sim, "stages.cfg", text);
    const gf_particles *p = &sim.particles;
    gf_test_sim_run(&sim, 100);
    if (fabs(p->v[0][0] - 1.0) > 1e-12)
        fail_msg("frictionless until t = 0.1 s, the sphere slowed to %.15g m/s", p->v[0][0]);
    gf_test_sim_run(&sim, 50);
    double want = 1.0 - mu * g * 0.05;
    if (fabs(p->v[0][0] - want) > 1e-9)
        fail_msg("50 ms into the stage the sphere moves at %.12g m/s; mu g t says %.12g",
                 p->v[0][0], want);
    assert_int_equal(sim.stages.current, 0);
    gf_sim_free(&sim);
}

/* A sphere falling freely: dt 1 ms and g = 9.81 for 50 steps, then a stage halves the time step
 * and sets g = 1 m/s^2. The velocity is then exact after each step: -9.81 x 0.05 - 1 x n dt'. */
static void test_time_step_and_gravity_from_stages(void **state) {
    (void)state;
    const char *text =
        "Domain { min <-1,-1,-100>; max <1,1,1>; box_walls false; }\n"
        "Materials { Material { name m; density 2500; } }\n"
        "Physics { gravity <0,0,-9.81>; }\n"
        "Body { shape sphere; radius 0.01; position <0,0,0>; material m; }\n"
        "Time { dt 1e-3; steps 1000; }\n"
        "Stage { time 0.05; set \"Time.dt = 5e-4; Physics.gravity = <0, 0, -1>\"; }\n"
        "Stage { time 0.07; set \"Time.dt = 2e-3\"; }\n";
    gf_sim sim;
    gf_test_sim_make(&sim, "stages.cfg", text);
    const gf_particles *p = &sim.particles;
    gf_test_sim_run(&sim, 50);
    assert_true(fabs(sim.time - 0.05) < 1e-15);
    gf_test_sim_run(&sim, 40); /* 40 x 0.5 ms: to 0.07 s, then the second stage */
    if (fabs(sim.time - 0.07) > 1e-15 || fabs(p->v[2][0] - (-9.81 * 0.05 - 1.0 * 0.02)) > 1e-12)
        fail_msg("after the first stage: t = %.17g s (0.07), v = %.17g m/s (%.17g)", sim.time,
                 p->v[2][0], -9.81 * 0.05 - 0.02);
    gf_test_sim_run(&sim, 5); /* the second stage keeps g = 1, doubles dt */
    if (fabs(sim.time - 0.08) > 1e-15 || fabs(p->v[2][0] - (-9.81 * 0.05 - 0.03)) > 1e-12)
        fail_msg("after the second stage: t = %.17g s (0.08), v = %.17g m/s", sim.time, p->v[2][0]);
    assert_int_equal(sim.stages.current, 1);
    gf_sim_free(&sim);
}

/* Without gravity: an insert at 1000 particles per second from t = 0, stopped by a stage at
 * t = 0.02 s, has placed 20 by t = 0.05 s (50 without the stage); a body inside a closed outlet
 * stays until the stage at t = 0.03 s opens it. */
static void test_inserts_and_outlets_from_stages(void **state) {
    (void)state;
    const char *base = "Domain { min <0,0,0>; max <1,1,1>; box_walls true; }\n"
                       "Materials { Material { name m; density 2500; } }\n"
                       "Physics { gravity <0,0,0>; }\n"
                       "Insert { region box; min <0.1,0.1,0.1>; max <0.5,0.5,0.5>; "
                       "rate 1000; shape sphere; radius 0.005; seed 3; }\n"
                       "Body { shape sphere; radius 0.01; position <0.8,0.8,0.8>; material m; }\n"
                       "Outlet { name hole; region box; min <0.7,0.7,0.7>; max <0.9,0.9,0.9>; "
                       "open false; }\n"
                       "Time { dt 1e-3; steps 1000; }\n";
    for (int staged = 0; staged < 2; ++staged) {
        char text[4096];
        snprintf(text, sizeof text, "%s%s", base,
                 staged ? "Stage { time 0.02; set \"Insert[1].stop = 0.02\"; }\n"
                          "Stage { time 0.03; set \"Outlet[hole].open = true\"; }\n"
                        : "");
        gf_sim sim;
        gf_test_sim_make(&sim, "stages.cfg", text);
        gf_test_sim_run(&sim, 30);
        /* the body, in the closed outlet, and the 30 inserted by t = 0.03 s (20 staged) */
        size_t at30 = sim.particles.n_local;
        gf_test_sim_run(&sim, 20);
        size_t at50 = sim.particles.n_local;
        if (staged && (at30 != 21 || at50 != 20))
            fail_msg("with the stages: %zu bodies at t = 0.03 s (21: the body and 20 inserted), "
                     "%zu at 0.05 s (20: the outlet opened)",
                     at30, at50);
        if (!staged && (at30 != 31 || at50 != 51))
            fail_msg("without stages: %zu bodies at t = 0.03 s (31), %zu at 0.05 s (51)", at30,
                     at50);
        gf_sim_free(&sim);
    }
}

/* A configuration whose stages must be refused before any step: the status and the message's
 * words. */
static void refused(const char *stage, const char *words) {
    char text[2048];
    snprintf(text, sizeof text,
             "Domain { min <0,0,0>; max <1,1,1>; box_walls true; }\n"
             "Materials { Material { name m; density 2500; } }\n"
             "Insert { region box; min <0.1,0.1,0.1>; max <0.5,0.5,0.5>; "
             "rate 1000; shape sphere; radius 0.005; }\n"
             "Time { dt 1e-3; steps 10; }\n%s",
             stage);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "bad.cfg", &cfg));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, NULL));
    gf_status st = gf_sim_configure(&sim, cfg, 1);
    gf_config_destroy(cfg);
    gf_sim_free(&sim);
    if (st != GF_ERR_INPUT || !strstr(gf_error_message(), "bad.cfg:5") ||
        !strstr(gf_error_message(), words))
        fail_msg("stage '%s': status %d, message '%s' (wanted bad.cfg:5 and '%s')", stage, st,
                 gf_error_message(), words);
    gf_error_clear();
}

static void test_bad_stages_refused(void **state) {
    (void)state;
    refused("Stage { time 0.1; set \"Domain.min = <0, 0, 0>\"; }",
            "'Domain.min' is not a key a stage may change");
    refused("Stage { time 0.1; set \"Materials.Material[m].density = 100\"; }",
            "'Materials.Material[m].density' is not a key a stage may change");
    refused("Stage { time 0.1; set \"Insert[1].rate = 10\"; }", "is not a key a stage may");
    refused("Stage { time 0.1; set \"Materials.frction = 1\"; }", "is not a key a stage may");
    refused("Stage { time 0.1; set \"Materials.friction = -1\"; }", "friction");
    refused("Stage { time 0.1; set \"Time.dt = 0\"; }", "'dt' in block 'Time' is 0");
    refused("Stage { time 0.1; set \"Insert[1].stop = 0\"; }", "must come after start");
    refused("Stage { time 0.1; set \"Insert[2].stop = 1\"; }", "Insert");
    refused("Stage { time 0.1; set \"Materials.friction 0.2\"; }", "is not Block.key = value");
    refused("Stage { time 0.1; set \" ; \"; }", "changes nothing");
    refused("Stage { time 0.1; set \"Solver.model = newton\"; }", "newton");
    refused("Stage { time 0.2; set \"Materials.friction = 1\"; } "
            "Stage { time 0.1; set \"Materials.friction = 2\"; }",
            "must come after the previous stage's");
    refused("Stage { set \"Materials.friction = 1\"; }", "time");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_friction_from_a_stage),
        cmocka_unit_test(test_time_step_and_gravity_from_stages),
        cmocka_unit_test(test_inserts_and_outlets_from_stages),
        cmocka_unit_test(test_bad_stages_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
