/* Load balancing under MPI (Domain.balance_every) at 1, 2 and 4 ranks: a heap of colliding
 * spheres in the first quarter of a long box, cut along its length. Balanced, every rank ends
 * with a fair share of the particles (equal cuts would leave all on rank 0 at 2 and 4 ranks),
 * owns only particles inside its moved subdomain, and agrees with the others on the cuts; no
 * particle is lost, no contact is missed (the deepest penetration stays that of the run with
 * equal cuts), and a restart from a checkpoint with moved cuts continues bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "sim/sim.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

enum { NX = 10, NY = 8, NZ = 6, N_PARTICLES = NX * NY * NZ };
static const double R = 0.002;

/* The heap in a 0.2 m x 0.04 m x 0.04 m box with walls, cut into a slab per rank along x. */
static void make_heap(gf_sim *sim, long balance_every, int generate) {
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    const double lo[3] = {0, 0, 0}, hi[3] = {0.2, 0.04, 0.04};
    const int per[3] = {0, 0, 0}, dims[3] = {P.size, 1, 1};
    GF_ASSERT_OK(gf_sim_decompose(sim, dims, per, lo, hi));
    gf_test_box_walls(&sim->walls, lo, hi);
    GF_ASSERT_OK(gf_materials_set_friction(&sim->materials, 0, 0, 0.4));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.max_iterations = 30;
    prm.tolerance = 1e-5;
    GF_ASSERT_OK(gf_sim_set_solver(sim, &prm));
    sim->dt = 1e-4;
    sim->gravity[2] = -9.81;
    sim->margin_tolerance = 0.01 * R;
    sim->balance_every = balance_every;
    if (!generate)
        return;
    uint64_t rng = 11;
    int64_t id = 0;
    for (int k = 0; k < NZ; ++k)
        for (int j = 0; j < NY; ++j)
            for (int i = 0; i < NX; ++i) {
                const double x[3] = {0.0025 + 0.0045 * i, 0.0025 + 0.0045 * j, 0.0025 + 0.0045 * k};
                gf_particle rec;
                gf_particle_make_sphere(&rec, id++, x, R, 2500, 0);
                for (int a = 0; a < 3; ++a)
                    rec.v[a] = gf_test_uniform(&rng, -0.3, 0.3);
                if (gf_decomp_owns(&sim->xch.decomp, x))
                    GF_ASSERT_OK(gf_particles_add(&sim->particles, &rec));
            }
    sim->expected_particles = id;
    sim->next_id = id;
}

static double global_max(double v) {
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &v, 1, GF_PAR_MAX));
    return v;
}

static int64_t global_sum(int64_t v) {
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &v, 1, GF_PAR_SUM));
    return v;
}

static void test_balanced_heap(void **state) {
    (void)state;
    const int steps = 150;
    gf_sim even, bal;
    make_heap(&even, 0, 1);
    make_heap(&bal, 5, 1);
    for (int s = 0; s < steps; ++s) {
        GF_ASSERT_OK(gf_sim_step(&even));
        GF_ASSERT_OK(gf_sim_step(&bal));
    }
    const gf_decomp *d = &bal.xch.decomp;
    /* Every rank has the same cuts, increasing, slabs at least the interaction range thick. */
    for (int k = 0; k <= P.size; ++k) {
        double c = gf_decomp_cut(d, 0, k);
        assert_true(global_max(c) == c && -global_max(-c) == c);
    }
    double range = 2.0 * bal.max_radius + bal.margin;
    for (int k = 0; k < P.size; ++k)
        assert_true(gf_decomp_cut(d, 0, k + 1) - gf_decomp_cut(d, 0, k) >= range);
    /* Nothing lost; each owns what lies in its slab. */
    assert_int_equal(global_sum((int64_t)bal.particles.n_local), N_PARTICLES);
    for (size_t i = 0; i < bal.particles.n_local; ++i) {
        const double x[3] = {bal.particles.x[0][i], bal.particles.x[1][i], bal.particles.x[2][i]};
        assert_true(gf_decomp_owns(d, x));
    }
    /* A fair share each: within a quarter of the mean (equal cuts: all on rank 0). */
    double mean = (double)N_PARTICLES / P.size;
    assert_true(fabs((double)bal.particles.n_local - mean) <= 0.25 * mean);
    if (P.size > 1) {
        assert_true(bal.balance_moves > 0);
        assert_true(-global_max(-(double)even.particles.n_local) == 0.0);
    }
    /* No contact missed across moved cuts: the deepest penetration is the equal cuts' (both
     * decompositions solve the same contacts, in another order). */
    double pen_even = global_max(even.run_figures.max_penetration_rel);
    double pen_bal = global_max(bal.run_figures.max_penetration_rel);
    assert_true(pen_bal <= 1.5 * pen_even + 1e-4);
    gf_sim_free(&even);
    gf_sim_free(&bal);
}

/* All particle positions and velocities, ordered by id, on every rank. */
static double *state_by_id(const gf_sim *sim) {
    double *s = calloc(6 * N_PARTICLES, sizeof *s);
    assert_non_null(s);
    const gf_particles *p = &sim->particles;
    for (size_t i = 0; i < p->n_local; ++i)
        for (int a = 0; a < 3; ++a) {
            s[6 * p->id[i] + a] = p->x[a][i];
            s[6 * p->id[i] + 3 + a] = p->v[a][i];
        }
    /* Each entry is set by one rank, zero elsewhere: the sum is the value, exactly. */
    GF_ASSERT_OK(gf_par_allreduce_double(&P, s, 6 * N_PARTICLES, GF_PAR_SUM));
    return s;
}

static void test_restart_with_moved_cuts(void **state) {
    (void)state;
    const int N = 90;
    gf_sim straight, first, second;
    make_heap(&straight, 5, 1);
    for (int s = 0; s < N; ++s)
        GF_ASSERT_OK(gf_sim_step(&straight));
    make_heap(&first, 5, 1);
    for (int s = 0; s < N / 2 + 3; ++s) /* between two balancings */
        GF_ASSERT_OK(gf_sim_step(&first));
    if (P.size > 1)
        assert_true(first.xch.decomp.cut[0] != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/moved.ckpt.h5", dir);
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &first, path));
    make_heap(&second, 5, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&second, path));
    for (int k = 0; k <= P.size; ++k)
        assert_true(gf_decomp_cut(&second.xch.decomp, 0, k) ==
                    gf_decomp_cut(&first.xch.decomp, 0, k));
    gf_sim_free(&first);
    while (second.step < N)
        GF_ASSERT_OK(gf_sim_step(&second));
    double *a = state_by_id(&straight), *b = state_by_id(&second);
    for (int i = 0; i < 6 * N_PARTICLES; ++i)
        if (a[i] != b[i])
            fail_msg("particle %d, component %d: %.17g after the restart, %.17g straight", i / 6,
                     i % 6, b[i], a[i]);
    free(a);
    free(b);
    gf_sim_free(&straight);
    gf_sim_free(&second);
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "balance");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_balanced_heap),
    cmocka_unit_test_setup_teardown(test_restart_with_moved_cuts, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
