/* Dense packings of one shape each (issue 12): spheres, boxes, capsules, cylinders and clumps of
 * equal bounding radius, each on a lattice whose spacing along each axis is the shape's extent
 * plus 2% (so neighbours are 2% of their size apart: faces on faces for boxes), turned by up to
 * 2 degrees at random, with random velocities, in a periodic box without gravity. For each shape,
 * per step: the contact points found, the time of detection per contact point, the contact
 * iterations (points x sweeps, a fixed 20 sweeps) per second of solve, the share of them whose
 * block was solved rather than skipped and the rate of those, the share of contact blocks that
 * take the general maximum-dissipation kernel (the others are sphere blocks, whose closed form the
 * sweep inlines) and the CPU time of the thread per step (the phase timers are wall clocks).
 * Rates relative to spheres close each line (solve: of the blocks solved, skipping aside).
 * Usage: bench_shapes
 * [SIDE [STEPS]] (SIDE^3 bodies, 12; 30 steps). Run at 1 rank for per-core rates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/rng.h"
#include "sim/sim.h"
#include "bench_util.h"

static int fail(const gf_par *par, const char *what) {
    fprintf(stderr, "bench_shapes: %s: %s\n", what, gf_error_message());
    gf_par_abort(par, 1);
    return 1;
}

/* A shape of bounding radius R. */
static gf_shape shape_of(int type, double R) {
    switch (type) {
    case GF_SHAPE_BOX: {
        double a = R / sqrt(1.0 + 0.49 + 0.25);
        return gf_shape_box(a, 0.7 * a, 0.5 * a);
    }
    case GF_SHAPE_CAPSULE:
        return gf_shape_capsule(0.4 * R, 0.6 * R);
    case GF_SHAPE_CYLINDER:
        return gf_shape_cylinder(0.6 * R, 0.8 * R);
    case GF_SHAPE_CLUMP:
        return gf_shape_clump(0, 1.0);
    default:
        return gf_shape_sphere(R);
    }
}

typedef struct {
    double points, detect_per_point, iterations_per_s, general_share;
    double solved_share; /* of the contact iterations, those whose block was solved */
    double cpu_per_step; /* CPU seconds of the thread */
} result;

static int run(const gf_par *par, int type, long side, long steps, result *out) {
    const double R = 0.001;
    gf_sim sim;
    if (gf_sim_init(&sim, par) != GF_OK)
        return fail(par, "setup");
    /* Three spheres scaled so the clump's bounding radius is R. */
    const double centre[3][3] = {{0, 0, 0}, {0.5, 0, 0}, {0, 0.45, 0.2}};
    const double radius[3] = {0.45, 0.35, 0.3};
    gf_clump clump;
    int32_t index;
    if (gf_clump_make(3, centre, radius, &clump) != GF_OK)
        return fail(par, "clump");
    double scale = R / clump.bounding_radius, sc[3][3], sr[3];
    for (int m = 0; m < 3; ++m) {
        for (int d = 0; d < 3; ++d)
            sc[m][d] = centre[m][d] * scale;
        sr[m] = radius[m] * scale;
    }
    if (gf_clump_make(3, sc, sr, &clump) != GF_OK ||
        gf_clumps_add(&sim.clumps, &clump, &index) != GF_OK)
        return fail(par, "clump");
    gf_shape shape = shape_of(type, R);
    /* The extent of the shape along each axis, either way: the lattice spacing. */
    double below[3], spacing[3], lo[3] = {0, 0, 0}, hi[3];
    for (int d = 0; d < 3; ++d) {
        double e[3] = {0, 0, 0}, sp[3];
        e[d] = 1.0;
        gf_shape_support(&shape, &sim.clumps, e, sp);
        spacing[d] = sp[d];
        e[d] = -1.0;
        gf_shape_support(&shape, &sim.clumps, e, sp);
        below[d] = -sp[d];
        spacing[d] = 1.02 * (spacing[d] + below[d]);
        hi[d] = side * spacing[d];
    }
    int dims[3] = {1, 1, 1};
    const int periodic[3] = {1, 1, 1};
    if (gf_sim_decompose(&sim, dims, periodic, lo, hi) != GF_OK)
        return fail(par, "decomposition");
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.sweeps = 20;
    if (gf_sim_set_solver(&sim, &prm) != GF_OK ||
        gf_materials_set_friction(&sim.materials, 0, 0, 0.4) != GF_OK)
        return fail(par, "solver");
    sim.dt = 2e-5;
    sim.gravity[2] = 0.0;
    sim.margin_tolerance = 0.05 * R;
    sim.check_every = 0;
    for (long k = 0; k < side; ++k)
        for (long j = 0; j < side; ++j)
            for (long i = 0; i < side; ++i) {
                double x[3] = {below[0] + 0.01 * spacing[0] + i * spacing[0],
                               below[1] + 0.01 * spacing[1] + j * spacing[1],
                               below[2] + 0.01 * spacing[2] + k * spacing[2]};
                uint64_t id = (uint64_t)((k * side + j) * side + i);
                gf_particle rec;
                gf_particle_make(&rec, (int64_t)id, x, &shape, &sim.clumps, 2500, 0);
                /* Up to 2 degrees about a random axis. */
                double ax[3], n = 0.0, angle = 0.035 * gf_rng_uniform(11, 3, id);
                for (int a = 0; a < 3; ++a) {
                    ax[a] = 2.0 * gf_rng_uniform(11, (uint64_t)a, id) - 1.0;
                    n += ax[a] * ax[a];
                }
                rec.q[0] = cos(0.5 * angle);
                for (int a = 0; a < 3; ++a)
                    rec.q[a + 1] = sin(0.5 * angle) * ax[a] / sqrt(n);
                for (int a = 0; a < 3; ++a)
                    rec.v[a] = 0.2 * (2 * gf_rng_uniform(7, (uint64_t)a, id) - 1);
                if (gf_particles_add(&sim.particles, &rec) != GF_OK)
                    return fail(par, "particles");
            }
    sim.expected_particles = side * side * side;
    for (int s = 0; s < 5; ++s) /* warm-up: first-touch allocation, link-cell sizing */
        if (gf_sim_step(&sim) != GF_OK)
            return fail(par, "step");
    gf_timers_reset(&sim.timers);
    double points = 0, work = 0, general = 0, blocks = 0, slots = 0;
    const double cpu0 = bench_thread_seconds();
    for (long s = 0; s < steps; ++s) {
        if (gf_sim_step(&sim) != GF_OK)
            return fail(par, "step");
        points += (double)sim.contacts.count;
        work += (double)sim.contacts.count * (double)sim.last_solve.iterations;
        general += (double)gf_solver_general_count(&sim.solver);
        blocks += (double)sim.last_solve.blocks;
        slots += (double)sim.last_solve.slots;
    }
    out->cpu_per_step = (bench_thread_seconds() - cpu0) / (double)steps;
    out->solved_share = slots > 0 ? blocks / slots : 0.0;
    out->points = points / (double)steps;
    out->detect_per_point = sim.timers.elapsed[GF_TIMER_DETECT] / points;
    out->iterations_per_s = work / sim.timers.elapsed[GF_TIMER_SOLVE];
    out->general_share = points > 0 ? general / points : 0.0;
    gf_sim_free(&sim);
    return 0;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK)
        return 1;
    long side = argc > 1 ? atol(argv[1]) : 12, steps = argc > 2 ? atol(argv[2]) : 30;
    const int types[] = {GF_SHAPE_SPHERE, GF_SHAPE_BOX, GF_SHAPE_CAPSULE, GF_SHAPE_CYLINDER,
                         GF_SHAPE_CLUMP};
    result r[5];
    printf("%ld bodies per shape, %ld steps, 20 sweeps per step, 1 rank\n", side * side * side,
           steps);
    printf("shape     points/step  detect ns/point  contact iterations/s  solved  solved blocks/s  "
           "general kernel  CPU ms/step  detect vs spheres  solve vs spheres\n");
    for (int k = 0; k < 5; ++k) {
        if (run(&par, types[k], side, steps, &r[k]))
            return 1;
        printf("%-9s %11.0f %16.1f %21.3e %6.1f%% %16.3e %14.1f%% %12.2f %17.2fx %16.2fx\n",
               gf_shape_name(types[k]), r[k].points, 1e9 * r[k].detect_per_point,
               r[k].iterations_per_s, 100.0 * r[k].solved_share,
               r[k].iterations_per_s * r[k].solved_share, 100.0 * r[k].general_share,
               1e3 * r[k].cpu_per_step, r[k].detect_per_point / r[0].detect_per_point,
               (r[0].iterations_per_s * r[0].solved_share) /
                   (r[k].iterations_per_s * r[k].solved_share));
    }
    gf_par_finalize();
    return 0;
}
