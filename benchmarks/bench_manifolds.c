/* Contact manifolds solved jointly against point by point (issue 31): the same scenes with
 * Solver.manifolds joint and pointwise, side by side, interleaved (joint, pointwise, joint, ...),
 * each timed in CPU time of this process. Per scene: CPU ms per step, sweeps per step, the
 * joint/pointwise time ratio, and the physics each gives: a cube sliding at 2 m/s (deceleration
 * in units of mu g; Coulomb's law says 1) and a tower of 8 boxes at the default Solver settings
 * (drift of its top box in 1 s). Usage: bench_manifolds [REPEATS] (3). Run at 1 rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "core/log.h"
#include "sim/sim.h"

#include "bench_util.h"

typedef struct {
    double ms_per_step, sweeps_per_step, figure;
} outcome;

#define DOMAIN "Domain { min <-1,-1,0>; max <1,1,1>; box_walls true; }\n"

/* A scene from configuration text with Solver.manifolds `mode`, run `steps` steps. figure: the
 * cube's deceleration / (mu g) (scene 0), or the tower's top box's drift in m (scene 1). */
static int run(const gf_par *par, int scene, const char *mode, long steps, outcome *o) {
    char text[4096];
    if (scene == 0)
        snprintf(text, sizeof text,
                 DOMAIN "Materials { friction 0.5; Material { name m; density 2500; } }\n"
                        "Body { shape box; half_extents <0.1,0.1,0.1>; position <-0.6,-0.6,0.1>; "
                        "velocity <2,0,0>; material m; }\n"
                        "Time { dt 1e-3; steps %ld; }\n"
                        "Solver { tolerance 1e-10; max_iterations 2000; manifolds %s; }\n",
                 steps, mode);
    else {
        int len = snprintf(text, sizeof text,
                           DOMAIN "Materials { friction 0.5; Material { name m; density 1000; } }\n"
                                  "Time { dt 1e-3; steps %ld; }\nSolver { manifolds %s; }\n",
                           steps, mode);
        for (int k = 0; k < 8; ++k)
            len += snprintf(text + len, sizeof text - (size_t)len,
                            "Body { shape box; half_extents <0.05,0.05,0.05>; "
                            "position <0,0,%.17g>; material m; }\n",
                            0.05 + 0.1 * k);
    }
    gf_config *cfg = NULL;
    gf_sim sim;
    if (gf_config_parse(text, strlen(text), "bench_manifolds", &cfg) != GF_OK ||
        gf_sim_init(&sim, par) != GF_OK || gf_sim_configure(&sim, cfg, 1) != GF_OK ||
        gf_sim_start(&sim) != GF_OK)
        return bench_fail("bench_manifolds", par, "set-up");
    gf_config_destroy(cfg);
    double v0 = 0.0, t0 = 0.0, sweeps = 0.0;
    for (long s = 0; s < steps; ++s) {
        if (s == 10) {
            v0 = sim.particles.v[0][0];
            t0 = bench_cpu_seconds();
            sweeps = 0.0;
        }
        if (gf_sim_step(&sim) != GF_OK)
            return bench_fail("bench_manifolds", par, "step");
        sweeps += (double)sim.last_solve.iterations;
    }
    o->ms_per_step = 1e3 * (bench_cpu_seconds() - t0) / (double)(steps - 10);
    o->sweeps_per_step = sweeps / (double)(steps - 10);
    if (scene == 0) {
        o->figure = (v0 - sim.particles.v[0][0]) / ((double)(steps - 10) * 1e-3) / (0.5 * 9.81);
    } else {
        o->figure = 0.0;
        for (size_t i = 0; i < sim.particles.n_local; ++i)
            if (sim.particles.id[i] == 7)
                o->figure = hypot(sim.particles.x[0][i], sim.particles.x[1][i]);
    }
    gf_sim_free(&sim);
    return 0;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK)
        return 1;
    gf_log_set_quiet(1);
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    const char *names[2] = {"sliding cube (200 steps, converged)", "tower of 8 boxes (1000 steps)"};
    const char *what[2] = {"deceleration / mu g", "top box drift (m)"};
    const long steps[2] = {210, 1010};
    printf("scene                                 manifolds  CPU ms/step  sweeps/step  %s\n",
           "physics");
    for (int scene = 0; scene < 2; ++scene) {
        outcome best[2] = {{INFINITY, 0, 0}, {INFINITY, 0, 0}};
        for (int r = 0; r < repeats; ++r)
            for (int m = 0; m < 2; ++m) {
                outcome o;
                if (run(&par, scene, m == 0 ? "joint" : "pointwise", steps[scene], &o))
                    return 1;
                if (o.ms_per_step < best[m].ms_per_step)
                    best[m] = o;
            }
        for (int m = 0; m < 2; ++m)
            printf("%-37s %-9s %12.3f %12.1f  %s %.6g\n", names[scene],
                   m == 0 ? "joint" : "pointwise", best[m].ms_per_step, best[m].sweeps_per_step,
                   what[scene], best[m].figure);
        printf("%-37s joint / pointwise CPU time: %.2fx\n", names[scene],
               best[0].ms_per_step / best[1].ms_per_step);
    }
    gf_par_finalize();
    return 0;
}
