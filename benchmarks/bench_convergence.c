/* The solver's convergence against issue 31's targets, at 1 rank, CPU time of this process.
 *
 * 1. Stacks at the default Solver block (deliverable 2): a tower of 8 boxes, a 3-2-1 pyramid of
 *    boxes and a plank across two pillars (0.1 m cubes, mu 0.5, dt 1 ms) stand for 2 s; drift
 *    and rotation of the worst body (target: < 1e-6 m and < 1e-6 rad), sweeps per step, the
 *    share of steps ending unconverged, CPU ms per step. And the tower at tolerance 1e-6
 *    (deliverable 4: converged within 100 sweeps): the median and 95th percentile of its sweeps.
 * 2. The channel demo (configs/channel-demo.cfg, or the file given) with over-relaxation 1
 *    and 1.45, at its 20-sweep budget and at 500 sweeps, interleaved: sweeps per step, steps
 *    ending unconverged (target: <= 5 % at tolerance 1e-4), median estimated error in units of
 *    the tolerance, CPU s per simulated second.
 *
 * Usage: bench_convergence [CHANNEL_CFG] [STEPS] (configs/channel-demo.cfg, its 6000 steps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "core/log.h"
#include "sim/sim.h"

#include "bench_util.h"

static int make(const gf_par *par, gf_sim *sim, gf_config *cfg) {
    if (gf_sim_init(sim, par) != GF_OK || gf_sim_configure(sim, cfg, 1) != GF_OK ||
        gf_sim_start(sim) != GF_OK)
        return bench_fail("bench_convergence", par, "set-up");
    gf_config_destroy(cfg);
    return 0;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Scene 0: tower, 1: pyramid, 2: plank; `solver`: the Solver block's keys. */
static int stack(const gf_par *par, int scene, const char *solver, int quantiles) {
    char text[8192];
    int len = snprintf(text, sizeof text,
                       "Domain { min <-1,-1,0>; max <1,1,1>; box_walls true; }\n"
                       "Materials { friction 0.5; Material { name m; density 1000; } }\n"
                       "Time { dt 1e-3; steps 2001; }\nSolver { %s }\n",
                       solver);
    const char *cube = "shape box; half_extents <0.05,0.05,0.05>; material m;";
    if (scene == 0)
        for (int k = 0; k < 8; ++k)
            len += snprintf(text + len, sizeof text - (size_t)len,
                            "Body { %s position <0,0,%.17g>; }\n", cube, 0.05 + 0.1 * k);
    if (scene == 1)
        for (int row = 0, n = 3; n >= 1; --n, ++row)
            for (int i = 0; i < n; ++i)
                len += snprintf(text + len, sizeof text - (size_t)len,
                                "Body { %s position <%.17g,0,%.17g>; }\n", cube,
                                (i - (n - 1) / 2.0) * 0.1, 0.05 + 0.1 * row);
    if (scene == 2)
        snprintf(text + len, sizeof text - (size_t)len,
                 "Body { shape box; half_extents <0.05,0.05,0.1>; position <-0.3,0,0.1>; "
                 "material m; }\n"
                 "Body { shape box; half_extents <0.05,0.05,0.1>; position <0.3,0,0.1>; "
                 "material m; }\n"
                 "Body { shape box; half_extents <0.4,0.05,0.02>; position <0,0,0.22>; "
                 "material m; }\n");
    gf_config *cfg = NULL;
    gf_sim sim;
    if (gf_config_parse(text, strlen(text), "bench_convergence", &cfg) != GF_OK ||
        make(par, &sim, cfg))
        return bench_fail("bench_convergence", par, "stack");
    if (gf_sim_step(&sim) != GF_OK) /* the first, cold step */
        return bench_fail("bench_convergence", par, "step");
    enum { MAXB = 16, STEPS = 2000 };
    double x0[MAXB][3], q0[MAXB][4];
    size_t n = sim.particles.n_local;
    for (size_t i = 0; i < n; ++i) {
        int64_t id = sim.particles.id[i];
        for (int d = 0; d < 3; ++d)
            x0[id][d] = sim.particles.x[d][i];
        for (int d = 0; d < 4; ++d)
            q0[id][d] = sim.particles.q[d][i];
    }
    static long sweeps[STEPS];
    long unconverged = 0, total = 0;
    double t0 = bench_cpu_seconds();
    for (int s = 0; s < STEPS; ++s) {
        if (gf_sim_step(&sim) != GF_OK)
            return bench_fail("bench_convergence", par, "step");
        sweeps[s] = sim.last_solve.iterations;
        total += sweeps[s];
        unconverged += sim.last_solve.converged == 0;
    }
    double ms = 1e3 * (bench_cpu_seconds() - t0) / STEPS, drift = 0.0, turn = 0.0;
    for (size_t i = 0; i < n; ++i) {
        int64_t id = sim.particles.id[i];
        double dd = 0.0, dot = 0.0;
        for (int d = 0; d < 3; ++d)
            dd += pow(sim.particles.x[d][i] - x0[id][d], 2);
        for (int d = 0; d < 4; ++d)
            dot += sim.particles.q[d][i] * q0[id][d];
        drift = fmax(drift, sqrt(dd));
        turn = fmax(turn, 2.0 * acos(fmin(1.0, fabs(dot))));
    }
    const char *names[3] = {"tower of 8 boxes", "3-2-1 pyramid", "plank on pillars"};
    printf("%-17s %-32s %9.2e %9.2e %8.1f %7.1f%% %9.3f", names[scene],
           solver[0] ? solver : "(defaults)", drift, turn, (double)total / STEPS,
           100.0 * (double)unconverged / STEPS, ms);
    if (quantiles) {
        qsort(sweeps, STEPS, sizeof sweeps[0], cmp_long);
        printf("   sweeps: median %ld, 95th percentile %ld", sweeps[STEPS / 2],
               sweeps[STEPS * 95 / 100]);
    } else
        printf("   %s", drift < 1e-6 && turn < 1e-6 ? "stands" : "MOVES");
    printf("\n");
    gf_sim_free(&sim);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double sweeps, unconverged, median_error, cpu_per_second;
} flow;

/* The channel demo with over-relaxation omega and max_iterations budget, `steps` steps. */
static int channel(const gf_par *par, const char *path, double omega, long budget, long steps,
                   flow *o) {
    char *text = NULL, arg[128];
    size_t len = 0;
    gf_config *cfg = NULL;
    if (gf_config_read_file(path, &text, &len) != GF_OK ||
        gf_config_parse(text, len, path, &cfg) != GF_OK)
        return bench_fail("bench_convergence", par, path);
    free(text);
    const char *fixed[] = {"-Output.snapshot_every=0", "-Output.checkpoint_every=0",
                           "-Output.progress_every=0", "-Statistics.every=0"};
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; ++k)
        if (gf_config_override(cfg, fixed[k]) != GF_OK)
            return bench_fail("bench_convergence", par, fixed[k]);
    snprintf(arg, sizeof arg, "-Solver.over_relaxation=%g", omega);
    if (gf_config_override(cfg, arg) != GF_OK)
        return bench_fail("bench_convergence", par, arg);
    snprintf(arg, sizeof arg, "-Solver.max_iterations=%ld", budget);
    if (gf_config_override(cfg, arg) != GF_OK)
        return bench_fail("bench_convergence", par, arg);
    gf_sim sim;
    if (make(par, &sim, cfg))
        return 1;
    long total = 0, unconverged = 0;
    double *errors = malloc((size_t)steps * sizeof *errors);
    if (!errors)
        return bench_fail("bench_convergence", par, "memory");
    double t0 = bench_cpu_seconds(), tol = sim.solver_params.tolerance;
    for (long s = 0; s < steps; ++s) {
        if (gf_sim_step(&sim) != GF_OK)
            return bench_fail("bench_convergence", par, "channel step");
        total += sim.last_solve.iterations;
        unconverged += sim.last_solve.converged == 0;
        errors[s] = sim.last_solve.residual / tol;
    }
    double cpu = bench_cpu_seconds() - t0;
    qsort(errors, (size_t)steps, sizeof *errors, cmp_double);
    o->sweeps = (double)total / (double)steps;
    o->unconverged = 100.0 * (double)unconverged / (double)steps;
    o->median_error = errors[steps / 2];
    o->cpu_per_second = cpu / ((double)steps * sim.dt);
    free(errors);
    gf_sim_free(&sim);
    return 0;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK)
        return 1;
    gf_log_set_quiet(1);
    const char *path = argc > 1 ? argv[1] : "configs/channel-demo.cfg";
    long steps = argc > 2 ? atol(argv[2]) : 6000;
    printf("Stacks, 2 s (target: drift < 1e-6 m, rotation < 1e-6 rad at the defaults)\n");
    printf("%-17s %-32s %9s %9s %8s %8s %9s\n", "scene", "Solver", "drift m", "turn rad", "sweeps",
           "unconv", "ms/step");
    for (int scene = 0; scene < 3; ++scene)
        if (stack(&par, scene, "", 0))
            return 1;
    if (stack(&par, 0, "tolerance 1e-6; max_iterations 1000;", 1))
        return 1;
    printf("\nChannel demo (%s, %ld steps; target: <= 5 %% of the steps unconverged at its "
           "tolerance 1e-4 within the 20-sweep budget's CPU time)\n",
           path, steps);
    printf("%-6s %-7s %8s %10s %14s %14s\n", "omega", "budget", "sweeps", "unconv %",
           "median err/tol", "CPU s per s");
    const double omega[2] = {1.0, 1.45};
    const long budget[2] = {20, 500};
    for (int b = 0; b < 2; ++b)
        for (int o = 0; o < 2; ++o) {
            flow f;
            if (channel(&par, path, omega[o], budget[b], steps, &f))
                return 1;
            printf("%-6.2f %-7ld %8.1f %10.1f %14.2g %14.1f\n", omega[o], budget[b], f.sweeps,
                   f.unconverged, f.median_error, f.cpu_per_second);
        }
    gf_par_finalize();
    return 0;
}
