/* The solver's hot loop (issue 13): contact iterations per second on one core for a dense
 * touching packing of spheres, in three memory orders of the same particles:
 *   lattice    the order they were generated in (neighbours close in memory);
 *   scrambled  a random permutation: the order a long flow leaves behind without re-sorting
 *              (swap removal, migration and inflow move particles anywhere in memory);
 *              detection still lists the contacts cell by cell (gf_linkcells_within), so the
 *              sweep's records, numbered in the order it meets them, stay close in space;
 *   re-sorted  the scrambled particles after the engine's spatial sort (gf_particles_sort),
 *              as a run re-sorts them every Contact.sort_every steps.
 * The packing: a simple cubic lattice of spheres of 0.5 mm touching their 6 neighbours, on a
 * floor, under gravity, with random velocities of up to 1 cm/s and friction 0.5 (a mix of
 * sticking, sliding and separating contacts). Each order is detected and prepared once, then solved
 * with a fixed number of sweeps several times from the same free velocities; the median counts,
 * in CPU time of the thread (the cores are shared) with the wall clock beside it.
 * Printed: contacts, ns per contact iteration, contact iterations per second, the bytes the sweep
 * streams per contact iteration (the solver's contact record and two body records), each
 * order's rate relative to the lattice's, and the share of the iterations whose block was
 * solved (Gauss-Seidel skips a block whose bodies have not changed since it last changed
 * nothing: the raw rate counts contacts x sweeps, so the rate of blocks solved is printed beside
 * it), and the median CPU time of a detection that keeps its pair list (the path of most steps of a
 * run; it includes putting the contacts in cell order). Usage: bench_sweep [SIDE [SWEEPS
 * [REPEATS]]]  (SIDE^3 spheres, 59: 2.05e5; 20; 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contact/contact.h"
#include "solver/integrator.h"
#include "body/material.h"
#include "body/particles.h"
#include "core/rng.h"
#include "solver/solver.h"
#include "core/timer.h"
#include "bench_util.h"

static int fail(const char *what) {
    fprintf(stderr, "bench_sweep: %s: %s\n", what, gf_error_message());
    return 1;
}

typedef struct {
    size_t contacts;
    double seconds; /* median solve, CPU time of the thread */
    double wall;    /* median solve, wall clock */
    double solved;  /* share of the contact iterations whose block was solved, not skipped */
    double detect;  /* median detection with the pair list kept (a step's path), CPU seconds */
} result;

static gf_status solve_order(gf_particles *p, const gf_walls *w, const gf_materials *m, long sweeps,
                             int repeats, result *out) {
    const double dt = 1e-4, g[3] = {0.0, 0.0, -9.81};
    gf_linkcells lc;
    gf_contacts c;
    gf_solver s;
    gf_linkcells_init(&lc);
    gf_contacts_init(&c);
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.sweeps = sweeps;
    gf_status st = gf_solver_init(&s, &prm);
    size_t n = p->n_local;
    double *v0 = malloc(6 * n * sizeof *v0);
    if (!v0)
        st = GF_ERROR(GF_ERR_MEMORY, "velocities");
    if (st == GF_OK)
        st = gf_contact_detect(p, w, m, 1e-5, &lc, &c);
    double cpu[BENCH_MAX_REPEATS], wall[BENCH_MAX_REPEATS];
    for (int r = 0; r < repeats && st == GF_OK; ++r) {
        double t0 = bench_thread_seconds();
        st = gf_contact_detect(p, w, m, 1e-5, &lc, &c);
        cpu[r] = bench_thread_seconds() - t0;
    }
    out->detect = st == GF_OK ? bench_median(cpu, repeats) : INFINITY;
    if (st == GF_OK) {
        gf_integrate_free_velocity(p, g, dt);
        for (int k = 0; k < 3; ++k) {
            memcpy(v0 + k * n, p->v[k], n * sizeof *v0);
            memcpy(v0 + (3 + k) * n, p->w[k], n * sizeof *v0);
        }
        st = gf_solver_prepare(&s, p, &c);
    }
    out->contacts = c.count;
    for (int r = 0; r < repeats && st == GF_OK; ++r) {
        for (int k = 0; k < 3; ++k) {
            memcpy(p->v[k], v0 + k * n, n * sizeof *v0);
            memcpy(p->w[k], v0 + (3 + k) * n, n * sizeof *v0);
        }
        for (size_t j = 0; j < c.count; ++j)
            c.lambda[0][j] = c.lambda[1][j] = c.lambda[2][j] = 0.0;
        gf_solver_result res;
        double t0 = bench_thread_seconds(), w0 = gf_wtime();
        st = gf_solver_solve(&s, p, w, &c, dt, NULL, &res);
        cpu[r] = bench_thread_seconds() - t0;
        wall[r] = gf_wtime() - w0;
        out->solved = res.slots > 0 ? (double)res.blocks / (double)res.slots : 0.0;
    }
    out->seconds = st == GF_OK ? bench_median(cpu, repeats) : INFINITY;
    out->wall = st == GF_OK ? bench_median(wall, repeats) : INFINITY;
    /* Back to the velocities of the packing, for the next order. */
    for (int k = 0; k < 3 && v0; ++k) {
        memcpy(p->v[k], v0 + k * n, n * sizeof *v0);
        memcpy(p->w[k], v0 + (3 + k) * n, n * sizeof *v0);
        for (size_t i = 0; i < n; ++i)
            p->v[k][i] -= g[k] * dt;
    }
    free(v0);
    gf_solver_free(&s);
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    return st;
}

/* A random permutation of the particles (Fisher-Yates, seeded). */
static gf_status scramble(gf_particles *p) {
    size_t n = p->n_local;
    for (size_t i = n - 1; i > 0; --i) {
        size_t k = (size_t)(gf_rng_uniform(12345, 0, i) * (double)(i + 1));
        k = k > i ? i : k;
        gf_particle a, b;
        gf_particles_get(p, i, &a);
        gf_particles_get(p, k, &b);
        gf_particles_set(p, i, &b);
        gf_particles_set(p, k, &a);
    }
    return GF_OK;
}

int main(int argc, char **argv) {
    long side = argc > 1 ? atol(argv[1]) : 59, sweeps = argc > 2 ? atol(argv[2]) : 20;
    int repeats = argc > 3 ? atoi(argv[3]) : 3;
    if (side < 2 || sweeps < 1 || repeats < 1 || repeats > BENCH_MAX_REPEATS) {
        fprintf(stderr, "usage: bench_sweep [SIDE>=2 [SWEEPS>=1 [REPEATS in 1..%d]]]\n",
                BENCH_MAX_REPEATS);
        return 2;
    }
    const double R = 0.0005, density = 2650.0;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    gf_particles p;
    gf_particles_init(&p);
    const double floor_point[3] = {0, 0, 0}, up[3] = {0, 0, 1}, zero[3] = {0, 0, 0};
    if (gf_materials_set_friction(&m, 0, 0, 0.5) != GF_OK ||
        gf_walls_add(&w, floor_point, up, zero, 0) != GF_OK ||
        gf_particles_reserve(&p, (size_t)(side * side * side)) != GF_OK)
        return fail("setup");
    int64_t id = 0;
    for (long k = 0; k < side; ++k)
        for (long j = 0; j < side; ++j)
            for (long i = 0; i < side; ++i) {
                const double x[3] = {R + 2 * R * (double)i, R + 2 * R * (double)j,
                                     R + 2 * R * (double)k};
                gf_particle rec;
                gf_particle_make_sphere(&rec, id++, x, R, density, 0);
                for (int d = 0; d < 3; ++d)
                    rec.v[d] = 0.01 * (2.0 * gf_rng_uniform(1, (uint64_t)d, (uint64_t)id) - 1.0);
                if (gf_particles_add(&p, &rec) != GF_OK)
                    return fail("particles");
            }
    const char *names[3] = {"lattice", "scrambled", "re-sorted"};
    result res[3];
    int have_sort = 0;
    /* One untimed pass first: glibc maps the first large buffers afresh (mmap) and keeps later
     * ones on its heap once such a buffer was freed; without it the lattice's detection timed
     * twice as slow as the same order's run second, as a run's first step but not its others. */
    if (solve_order(&p, &w, &m, 1, 1, &res[0]) != GF_OK)
        return fail("warm-up");
    for (int o = 0; o < 3; ++o) {
        if (o == 1 && scramble(&p) != GF_OK)
            return fail("scramble");
        if (o == 2) {
            if (gf_particles_sort(&p, 2.0 * R) != GF_OK)
                return fail("sort");
            have_sort = 1;
        }
        if (solve_order(&p, &w, &m, sweeps, repeats, &res[o]) != GF_OK)
            return fail(names[o]);
    }
    size_t bytes = gf_solver_bytes_per_iteration();
    printf("bench_sweep: %ld spheres, %ld sweeps, median of %d solves, 1 core; CPU time of the "
           "thread (wall clock beside)\n",
           side * side * side, sweeps, repeats);
    printf("%-10s %9s %8s %9s %11s %8s %11s %9s %10s %10s\n", "order", "contacts", "ns/iter",
           "wall ns", "iter/s", "solved", "solved/s", "bytes/it", "vs lattice", "detect_ms");
    for (int o = 0; o < 2 + have_sort; ++o) {
        double iters = (double)res[o].contacts * (double)sweeps;
        double rate = iters / res[o].seconds;
        double base = (double)res[0].contacts * (double)sweeps / res[0].seconds;
        printf("%-10s %9zu %8.1f %9.1f %11.3e %7.1f%% %11.3e %9zu %9.2fx %10.2f\n", names[o],
               res[o].contacts, 1e9 * res[o].seconds / iters, 1e9 * res[o].wall / iters, rate,
               100.0 * res[o].solved, rate * res[o].solved, bytes, rate / base,
               1e3 * res[o].detect);
    }
    gf_particles_free(&p);
    return 0;
}
