/* Weak- and strong-scaling driver (issues 4, 13): a dense, colliding packing of spheres in a
 * periodic box, N steps, one CSV line on stdout (rank 0):
 *   mode,ranks,cores,particles,steps,seconds,updates_per_s,contact_iterations_per_s_per_rank,
 *   comm_share,comm_share_max,cpu_seconds_per_rank
 * seconds is the wall time of the timed steps; cpu_seconds_per_rank the CPU time (user + system)
 * the ranks spent in them, averaged (on shared or oversubscribed cores the two part).
 * comm_share is the share of the timed steps' wall time a rank spends in the "communicate"
 * phase (GF_TIMER_COMM: the solver's synchronisations and maxima, the ghost exchange and
 * migration), averaged over the ranks; comm_share_max that of the rank with the most. Beyond
 * one rank that time is mostly waiting, for messages and for slower ranks; at one rank it is
 * the copying of the periodic images.
 * Run by benchmarks/run-scaling.sh at 1, 2, 4, 8 ranks, which adds the parallel efficiency and
 * plots. Usage: bench_scaling weak|strong PARTICLES [STEPS]
 *   weak: PARTICLES per rank; strong: PARTICLES in total. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/rng.h"
#include "sim/sim.h"
#include "core/timer.h"
#include "bench_util.h"

static int fail(const gf_par *par, const char *what) {
    if (par->rank == 0)
        fprintf(stderr, "bench_scaling: %s: %s\n", what, gf_error_message());
    gf_par_abort(par, 1);
    return 1;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK)
        return 1;
    gf_log_set_rank(par.rank);
    if (argc < 3 || (strcmp(argv[1], "weak") && strcmp(argv[1], "strong"))) {
        if (par.rank == 0)
            fprintf(stderr, "usage: bench_scaling weak|strong PARTICLES [STEPS]\n");
        gf_par_finalize();
        return 2;
    }
    int weak = strcmp(argv[1], "weak") == 0;
    long n_arg = atol(argv[2]), steps = argc > 3 ? atol(argv[3]) : 40;
    long total = weak ? n_arg * par.size : n_arg;

    /* A cubic lattice of spheres, 2% apart, in a periodic box decomposed automatically (weak:
     * the box grows with the rank count along the axes the decomposition cuts). */
    const double r = 0.001, spacing = 2.04 * r;
    int dims[3] = {0, 0, 0};
    const double unit[3] = {1, 1, 1};
    if (gf_decomp_choose_dims(par.size, unit, dims) != GF_OK)
        return fail(&par, "decomposition");
    long per_axis[3];
    if (weak) {
        long side = (long)ceil(cbrt((double)n_arg));
        for (int a = 0; a < 3; ++a)
            per_axis[a] = side * dims[a];
    } else {
        long side = (long)ceil(cbrt((double)n_arg));
        for (int a = 0; a < 3; ++a)
            per_axis[a] = side;
    }
    total = per_axis[0] * per_axis[1] * per_axis[2];
    double lo[3] = {0, 0, 0}, hi[3];
    for (int a = 0; a < 3; ++a)
        hi[a] = per_axis[a] * spacing;

    gf_sim sim;
    const int periodic[3] = {1, 1, 1};
    if (gf_sim_init(&sim, &par) != GF_OK || gf_sim_decompose(&sim, dims, periodic, lo, hi) != GF_OK)
        return fail(&par, "setup");
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.sweeps = 20; /* a fixed amount of work per step, comparable across rank counts */
    if (gf_sim_set_solver(&sim, &prm) != GF_OK ||
        gf_materials_set_friction(&sim.materials, 0, 0, 0.4) != GF_OK)
        return fail(&par, "solver");
    sim.dt = 2e-5;
    sim.gravity[2] = 0.0;
    sim.margin_tolerance = 0.05 * r;
    sim.check_every = 0;
    for (long k = 0; k < per_axis[2]; ++k)
        for (long j = 0; j < per_axis[1]; ++j)
            for (long i = 0; i < per_axis[0]; ++i) {
                double x[3] = {(i + 0.5) * spacing, (j + 0.5) * spacing, (k + 0.5) * spacing};
                if (!gf_decomp_owns(&sim.xch.decomp, x))
                    continue;
                int64_t id = (k * per_axis[1] + j) * per_axis[0] + i;
                gf_particle rec;
                gf_particle_make_sphere(&rec, id, x, r, 2500, 0);
                for (int a = 0; a < 3; ++a)
                    rec.v[a] = 0.2 * (2 * gf_rng_uniform(7, (uint64_t)a, (uint64_t)id) - 1);
                if (gf_particles_add(&sim.particles, &rec) != GF_OK)
                    return fail(&par, "particles");
            }
    sim.expected_particles = total;
    /* Warm-up steps are not timed: first-touch allocation, link-cell sizing. */
    for (int s = 0; s < 5; ++s)
        if (gf_sim_step(&sim) != GF_OK)
            return fail(&par, "step");
    gf_par_barrier(&par);
    double t0 = gf_wtime(), cpu0 = bench_cpu_seconds();
    /* The step timers run since the warm-up: only the timed steps' share counts. */
    double comm0 = sim.timers.elapsed[GF_TIMER_COMM];
    double work = 0; /* contacts x sweeps */
    for (long s = 0; s < steps; ++s) {
        if (gf_sim_step(&sim) != GF_OK)
            return fail(&par, "step");
        work += (double)sim.contacts.count * (double)sim.last_solve.iterations;
    }
    double comm = sim.timers.elapsed[GF_TIMER_COMM] - comm0;
    double cpu = bench_cpu_seconds() - cpu0;
    gf_par_barrier(&par);
    double t = gf_wtime() - t0;
    double sums[3] = {work, comm, cpu}, most[1] = {comm};
    if (gf_par_allreduce_double(&par, sums, 3, GF_PAR_SUM) != GF_OK ||
        gf_par_allreduce_double(&par, most, 1, GF_PAR_MAX) != GF_OK)
        return fail(&par, "reduction");
    if (gf_sim_check_particles(&sim) != GF_OK)
        return fail(&par, "accounting");
    if (par.rank == 0)
        printf("%s,%d,%ld,%ld,%ld,%.6f,%.6e,%.6e,%.4f,%.4f,%.6f\n", weak ? "weak" : "strong",
               par.size, sysconf(_SC_NPROCESSORS_ONLN), (long)total, steps, t,
               (double)total * steps / t, sums[0] / t / par.size, sums[1] / par.size / t,
               most[0] / t, sums[2] / par.size);
    gf_sim_free(&sim);
    gf_par_finalize();
    return 0;
}
