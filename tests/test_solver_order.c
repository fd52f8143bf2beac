/* The solver's body records (issue 13): a solve numbers them in the order its sweep first meets
 * the bodies, whatever the particles' memory order. The Gauss-Seidel result is defined by the
 * contacts' order and the bodies alone, so a permutation of the particle arrays must not change
 * one bit of it; copies of one body share its record; a body shared with another rank counts in
 * the stopping test even without a contact here, and a synchronisation that changes nothing
 * makes no block be solved again; the relaxation weight falls on the contacts with another
 * rank's particle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contact/contact.h"
#include "core/log.h"
#include "body/particles.h"
#include "solver/solver.h"
#include "test_util.h"

#define SIDE 6
#define NP (SIDE * SIDE * SIDE)

/* A jittered lattice of spheres of radius about R on a floor, most pressed into their neighbours,
 * moving at random; every seventh with an anisotropic inertia (the general kernel's path). */
static void make_pile(gf_test_row *s, double R) {
    gf_test_row_init(s);
    GF_ASSERT_OK(gf_materials_set_friction(&s->m, 0, 0, 0.4));
    const double o[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&s->w, o, up, NULL, 0));
    uint64_t rng = 7;
    for (int k = 0; k < NP; ++k) {
        const int ix = k % SIDE, iy = (k / SIDE) % SIDE, iz = k / (SIDE * SIDE);
        const double x[3] = {R + 1.98 * R * ix + gf_test_uniform(&rng, -0.01, 0.01) * R,
                             R + 1.98 * R * iy + gf_test_uniform(&rng, -0.01, 0.01) * R,
                             0.99 * R + 1.98 * R * iz};
        gf_particle rec;
        gf_particle_make_sphere(&rec, k, x, R * (1.0 + gf_test_uniform(&rng, -0.005, 0.005)),
                                2500.0, 0);
        for (int d = 0; d < 3; ++d) {
            rec.v[d] = gf_test_uniform(&rng, -0.05, 0.05);
            rec.w[d] = gf_test_uniform(&rng, -5.0, 5.0);
        }
        if (k % 7 == 3) {
            rec.inv_inertia[1] *= 1.5;
            rec.inv_inertia[2] *= 0.7;
        }
        GF_ASSERT_OK(gf_particles_add(&s->p, &rec));
    }
    GF_ASSERT_OK(gf_contact_detect(&s->p, &s->w, &s->m, 0.02 * R, &s->lc, &s->c));
}

/* Solves the scene's contacts from zero impulses with prm; velocities by id into v (6 per id),
 * impulses into lambda (3 per contact). */
static void solve_scene(gf_test_row *s, const gf_solver_params *prm, gf_solver_result *res,
                        double *v, double *lambda) {
    gf_solver sv;
    for (size_t j = 0; j < s->c.count; ++j)
        s->c.lambda[0][j] = s->c.lambda[1][j] = s->c.lambda[2][j] = 0.0;
    GF_ASSERT_OK(gf_solver_init(&sv, prm));
    GF_ASSERT_OK(gf_solver_prepare(&sv, &s->p, &s->c));
    GF_ASSERT_OK(gf_solver_solve(&sv, &s->p, &s->w, &s->c, 1e-4, NULL, res));
    gf_solver_free(&sv);
    for (size_t i = 0; i < s->p.n_local; ++i)
        for (int d = 0; d < 3; ++d) {
            v[6 * s->p.id[i] + d] = s->p.v[d][i];
            v[6 * s->p.id[i] + 3 + d] = s->p.w[d][i];
        }
    for (size_t j = 0; j < s->c.count; ++j)
        for (int d = 0; d < 3; ++d)
            lambda[3 * j + d] = s->c.lambda[d][j];
}

/* The same contacts, in the same order, on the same particles stored in a random order: the
 * velocities and impulses agree bit for bit (with the stopping test's measurements and with a
 * fixed sweep count). */
static void test_memory_order_indifferent(void **state) {
    (void)state;
    const double R = 0.001;
    for (int fixed = 0; fixed < 2; ++fixed) {
        gf_test_row s;
        make_pile(&s, R);
        size_t nc = s.c.count;
        assert_true(nc > 2 * NP); /* a dense pile: about three pairs a sphere */
        gf_solver_params prm;
        gf_solver_params_default(&prm);
        prm.tolerance = 1e-8;
        prm.sweeps = fixed ? 7 : 0;
        double *v0 = malloc(6 * NP * sizeof *v0), *v1 = malloc(6 * NP * sizeof *v1);
        double *l0 = malloc(3 * nc * sizeof *l0), *l1 = malloc(3 * nc * sizeof *l1);
        int32_t *where = malloc(NP * sizeof *where);
        assert_non_null(v0 && v1 && l0 && l1 && where);
        /* Keep the free velocities to start again from them. */
        gf_particle *free_rec = malloc(NP * sizeof *free_rec);
        assert_non_null(free_rec);
        for (size_t i = 0; i < NP; ++i)
            gf_particles_get(&s.p, i, &free_rec[i]);
        gf_solver_result r0, r1;
        solve_scene(&s, &prm, &r0, v0, l0);
        /* A random permutation: particle i goes to where[i]; the contacts follow by index. */
        for (int32_t i = 0; i < NP; ++i)
            where[i] = i;
        uint64_t rng = 99;
        for (int32_t i = NP - 1; i > 0; --i) {
            int32_t k = (int32_t)gf_test_uniform(&rng, 0.0, (double)(i + 1));
            int32_t t = where[i];
            where[i] = where[k];
            where[k] = t;
        }
        for (size_t i = 0; i < NP; ++i)
            gf_particles_set(&s.p, (size_t)where[i], &free_rec[i]);
        for (size_t j = 0; j < nc; ++j) {
            s.c.i1[j] = where[s.c.i1[j]];
            if (s.c.i2[j] >= 0)
                s.c.i2[j] = where[s.c.i2[j]];
        }
        solve_scene(&s, &prm, &r1, v1, l1);
        assert_int_equal(r0.iterations, r1.iterations);
        assert_int_equal(r0.blocks, r1.blocks);
        assert_true(r0.error == r1.error); /* the stopping test measured the same changes */
        assert_true(r0.iterations > 1);
        assert_memory_equal(v0, v1, 6 * NP * sizeof *v0);
        assert_memory_equal(l0, l1, 3 * nc * sizeof *l0);
        /* And the solve did something: most spheres' velocities changed. */
        int moved = 0;
        for (size_t i = 0; i < NP; ++i)
            moved += v0[6 * free_rec[i].id + 2] != free_rec[i].v[2];
        assert_true(moved > NP / 2);
        free(free_rec);
        free(where);
        free(v0);
        free(v1);
        free(l0);
        free(l1);
        gf_test_row_free(&s);
    }
}

/* The records themselves: on a pile stored in a random order, the owned bodies are numbered in
 * the order the sweep first meets them (so it streams through its records), and each record
 * names its particle. */
static void test_records_in_sweep_order(void **state) {
    (void)state;
    gf_test_row s;
    make_pile(&s, 0.001);
    uint64_t rng = 5;
    int32_t where[NP];
    for (int32_t i = 0; i < NP; ++i)
        where[i] = i;
    for (int32_t i = NP - 1; i > 0; --i) {
        int32_t k = (int32_t)gf_test_uniform(&rng, 0.0, (double)(i + 1)), t = where[i];
        where[i] = where[k];
        where[k] = t;
    }
    gf_particle rec[NP];
    for (size_t i = 0; i < NP; ++i)
        gf_particles_get(&s.p, i, &rec[i]);
    for (size_t i = 0; i < NP; ++i)
        gf_particles_set(&s.p, (size_t)where[i], &rec[i]);
    for (size_t j = 0; j < s.c.count; ++j) {
        s.c.i1[j] = where[s.c.i1[j]];
        if (s.c.i2[j] >= 0)
            s.c.i2[j] = where[s.c.i2[j]];
    }
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.sweeps = 2;
    gf_solver sv;
    GF_ASSERT_OK(gf_solver_init(&sv, &prm));
    GF_ASSERT_OK(gf_solver_prepare(&sv, &s.p, &s.c));
    gf_solver_result res;
    GF_ASSERT_OK(gf_solver_solve(&sv, &s.p, &s.w, &s.c, 1e-4, NULL, &res));
    assert_int_equal(sv.nown, NP);
    int32_t next = 0; /* the next record number a body met for the first time must get */
    for (size_t q = 0; q < sv.ncontact; ++q) {
        const gf_solver_contact *k = &sv.rec[q];
        const int32_t b[2] = {k->b1, k->b2};
        const int32_t part[2] = {s.c.i1[k->contact], s.c.i2[k->contact]};
        for (int e = 0; e < 2; ++e) {
            if (part[e] < 0)
                continue; /* the floor */
            assert_int_equal(sv.part_of[b[e]], part[e]);
            if (b[e] == next)
                ++next;
            else
                assert_true(b[e] < next);
        }
    }
    assert_int_equal(next, NP);
    gf_solver_free(&sv);
    gf_test_row_free(&s);
}

/* Spheres of radius 0.01 on the x axis at x moving at vx, the first n_owned owned, the rest
 * ghosts, with their single contact detected, solved once with prm and comm (may be NULL).
 * Returns the result; the owned spheres' velocities along x go to out, the normal impulse to
 * *lambda_n. */
static gf_solver_result solve_row(int n_owned, int n, const double *x, const double *vx,
                                  const gf_solver_params *prm, const gf_solver_comm *comm,
                                  double *out, double *lambda_n) {
    gf_test_row t;
    gf_test_row_solve(&t, n_owned, n, x, vx, 0.01, 1e-4, 1, prm, 1e-4, comm);
    for (int k = 0; k < n_owned; ++k)
        out[k] = t.p.v[0][k];
    *lambda_n = t.c.lambda[0][0];
    gf_test_row_free(&t);
    return t.res;
}

/* A periodic image: sphere 0 (owned, far left) hits sphere 1 through its ghost copy 2, which
 * shares its velocity slot. A perfectly inelastic impact of equal masses: both end at v / 2 (the
 * copy's change is sphere 0's). */
static void test_copies_share_a_record(void **state) {
    (void)state;
    const double r = 0.01, v = 0.3;
    const double x[3] = {-0.5, 0.0, -2 * r}, vx[3] = {v, 0.0, v};
    const int32_t slot[3] = {0, 1, 0};
    gf_solver_comm comm = {.max = gf_test_no_max, .slot = slot, .nslot = 3};
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.tolerance = 1e-12;
    double out[2], ln;
    solve_row(2, 3, x, vx, &prm, &comm, out, &ln);
    GF_ASSERT_NEAR(out[0], v / 2, 1e-12 * v);
    GF_ASSERT_NEAR(out[1], v / 2, 1e-12 * v);
}

/* Another rank keeps moving owned sphere 2, which it shares and which touches nothing here: the
 * stopping test sees it (its change is the solve's too) and runs to max_iterations; unshared,
 * the resting pair 0-1 stops at once. */
static gf_status kick_third(void *ctx, gf_particles *p) {
    p->v[1][2] += *(const double *)ctx;
    return GF_OK;
}

static void test_shared_body_without_contact_counted(void **state) {
    (void)state;
    for (int shared_far = 0; shared_far < 2; ++shared_far) {
        const double x[3] = {0.0, 0.02, 1.0}, vx[3] = {0.0, 0.0, 0.0};
        double kick = shared_far ? 1e-3 : 0.0;
        const uint8_t shared[3] = {0, 0, (uint8_t)shared_far};
        gf_solver_comm comm = {
            .ctx = &kick, .sync = kick_third, .max = gf_test_no_max, .shared = shared, .nslot = 3};
        gf_solver_params prm;
        gf_solver_params_default(&prm);
        prm.max_iterations = 25;
        double out[3], ln;
        gf_solver_result res = solve_row(3, 3, x, vx, &prm, &comm, out, &ln);
        assert_int_equal(res.converged, !shared_far);
        assert_int_equal(res.iterations, shared_far ? 25 : 1);
    }
}

/* A synchronisation that changes nothing changes no record: a resting pair whose body 1 another
 * rank shares (and leaves alone) is solved in the first sweep only, as without the sharing. */
static gf_status leave_alone(void *ctx, gf_particles *p) {
    (void)ctx;
    (void)p;
    return GF_OK;
}

static void test_unchanged_sync_skips(void **state) {
    (void)state;
    const double x[2] = {0.0, 0.02}, vx[2] = {0.0, 0.0};
    const uint8_t shared[2] = {0, 1};
    gf_solver_comm comm = {
        .sync = leave_alone, .max = gf_test_no_max, .shared = shared, .nslot = 2};
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.sweeps = 5;
    double out[2], ln;
    gf_solver_result res = solve_row(2, 2, x, vx, &prm, &comm, out, &ln);
    assert_int_equal(res.iterations, 5);
    assert_int_equal(res.blocks, 1);
}

/* The relaxation weight of Gauss-Seidel falls on a contact with another rank's particle (a
 * ghost), not on one between owned particles: one sweep over an owned sphere hitting a ghost at
 * rest (equal masses) carries the share w of the inelastic impulse m v / 2; the same sphere
 * hitting an owned one carries all of it. */
static void test_relaxation_on_ghost_contacts(void **state) {
    (void)state;
    const double v = 0.2, wgt = 0.6, mass = 1000.0 * 4.0 / 3.0 * M_PI * 1e-6;
    for (int ghost = 0; ghost < 2; ++ghost) {
        const double x[2] = {0.0, 0.02}, vx[2] = {v, 0.0};
        gf_solver_params prm;
        gf_solver_params_default(&prm);
        prm.sweeps = 1;
        prm.relaxation = wgt;
        double out[2], ln, share = ghost ? wgt : 1.0;
        solve_row(ghost ? 1 : 2, 2, x, vx, &prm, NULL, out, &ln);
        GF_ASSERT_NEAR(ln, share * mass * v / 2, 1e-12 * mass * v);
        GF_ASSERT_NEAR(out[0], v - share * v / 2, 1e-12 * v);
    }
}

int main(void) {
    gf_log_set_quiet(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_order_indifferent),
        cmocka_unit_test(test_records_in_sweep_order),
        cmocka_unit_test(test_copies_share_a_record),
        cmocka_unit_test(test_shared_body_without_contact_counted),
        cmocka_unit_test(test_unchanged_sync_skips),
        cmocka_unit_test(test_relaxation_on_ghost_contacts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
