/* Decomposition and exchange on 1, 2, 4 and 8 ranks (issue 4): migration across every face,
 * edge and corner (periodic and walled) with the state intact, particles exactly on a boundary,
 * the global contact set against a serial search, unique ids, particle accounting, and the
 * pipelined velocity messages against the sums they stand for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/collide.h"
#include "contact/contact.h"
#include "par/decomp.h"
#include "par/exchange.h"
#include "sim/sim.h"
#include "test_util.h"

#define P gf_test_par

/* Gathers an array of fixed-size records on rank 0 (count returned there). */
static void *gather(const void *data, size_t n, size_t size, size_t *total) {
    void *all = NULL;
    size_t *off = NULL;
    GF_ASSERT_OK(gf_par_gather_bytes(&P, 0, data, n * size, &all, &off));
    *total = P.rank == 0 ? off[P.size] / size : 0;
    free(off);
    return all;
}

static void test_choose_dims(void **state) {
    (void)state;
    int d[3];
    const double cube[3] = {1, 1, 1}, slab[3] = {4, 1, 1}, channel[3] = {15, 6.5, 2};
    GF_ASSERT_OK(gf_decomp_choose_dims(8, cube, d));
    assert_true(d[0] == 2 && d[1] == 2 && d[2] == 2);
    GF_ASSERT_OK(gf_decomp_choose_dims(4, slab, d));
    assert_true(d[0] == 4 && d[1] == 1 && d[2] == 1);
    GF_ASSERT_OK(gf_decomp_choose_dims(640, channel, d));
    assert_int_equal(d[0] * d[1] * d[2], 640);
    assert_true(d[0] >= d[1] && d[1] >= d[2]); /* longest axis cut most */
    GF_ASSERT_OK(gf_decomp_choose_dims(7, cube, d));
    assert_int_equal(d[0] * d[1] * d[2], 7);
}

/* Every rank's particle, placed near a face, edge or corner, steps across it. */
static void migration_case(int periodic) {
    gf_exchange x;
    int dims[3] = {0, 0, 0}, per[3] = {periodic, periodic, periodic};
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1.5, 2};
    const double ext[3] = {1, 1.5, 2};
    GF_ASSERT_OK(gf_decomp_choose_dims(P.size, ext, dims));
    GF_ASSERT_OK(gf_exchange_init(&x, &P, dims, per, lo, hi));
    const gf_decomp *d = &x.decomp;
    double w[3], centre[3];
    for (int a = 0; a < 3; ++a) {
        w[a] = (hi[a] - lo[a]) / dims[a];
        centre[a] = 0.5 * (d->sub_lo[a] + d->sub_hi[a]);
    }
    int k = 0;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                if (!dx && !dy && !dz)
                    continue;
                int dir[3] = {dx, dy, dz};
                gf_particles p;
                gf_particles_init(&p);
                gf_particle rec;
                double pos[3];
                /* Walled: a step out of the domain is not a migration, stay inside. */
                int leaves = 0;
                for (int a = 0; a < 3; ++a) {
                    int c = d->coords[a] + dir[a];
                    if (!periodic && (c < 0 || c >= dims[a]))
                        leaves = 1;
                }
                for (int a = 0; a < 3; ++a)
                    pos[a] = centre[a] + (leaves ? 0.0 : 0.4 * w[a] * dir[a]);
                gf_particle_make_sphere(&rec, 1000 * P.rank + k, pos, 0.01 + 0.001 * P.rank,
                                        2000 + P.rank, P.rank % 3);
                for (int a = 0; a < 3; ++a) {
                    rec.v[a] = P.rank + 0.1 * a;
                    rec.w[a] = -P.rank - 0.2 * a;
                }
                rec.q[0] = 0.5;
                rec.q[1] = rec.q[2] = rec.q[3] = 0.5;
                GF_ASSERT_OK(gf_particles_add(&p, &rec));
                /* The step: 0.2 w along dir, so the centre ends 0.6 w into the neighbour. */
                gf_particle expect = rec;
                for (int a = 0; a < 3; ++a) {
                    double step = leaves ? 0.0 : 0.2 * w[a] * dir[a];
                    p.x[a][0] += step;
                    expect.x[a] += step;
                }
                gf_decomp_wrap(d, expect.x);
                GF_ASSERT_OK(gf_exchange_migrate(&x, &p, NULL));
                /* Exactly one particle per rank in total, each where it belongs, intact. */
                size_t total = 0;
                gf_particle *all = gather(&expect, 1, sizeof expect, &total);
                int64_t n = (int64_t)p.n_local;
                GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
                assert_int_equal(n, P.size);
                for (size_t i = 0; i < p.n_local; ++i) {
                    assert_true(gf_decomp_owns(d, (double[3]){p.x[0][i], p.x[1][i], p.x[2][i]}));
                    assert_int_equal(p.id[i] % 1000, k);
                }
                /* Each rank checks its arrivals against the expected records of rank 0's
                 * gather, broadcast back as a flat list. */
                size_t nall = (size_t)P.size;
                gf_particle *exp_all = malloc(nall * sizeof *exp_all);
                if (P.rank == 0)
                    memcpy(exp_all, all, nall * sizeof *exp_all);
                MPI_Bcast(exp_all, (int)(nall * sizeof *exp_all), MPI_BYTE, 0, MPI_COMM_WORLD);
                for (size_t i = 0; i < p.n_local; ++i) {
                    gf_particle got;
                    gf_particles_get(&p, i, &got);
                    const gf_particle *e = &exp_all[got.id / 1000];
                    assert_true(e->id == got.id);
                    for (int a = 0; a < 3; ++a) {
                        GF_ASSERT_NEAR(got.x[a], e->x[a], 1e-12);
                        assert_true(got.v[a] == e->v[a] && got.w[a] == e->w[a]);
                        assert_true(got.inv_inertia[a] == e->inv_inertia[a]);
                    }
                    for (int a = 0; a < 4; ++a)
                        assert_true(got.q[a] == e->q[a]);
                    assert_true(got.radius == e->radius && got.inv_mass == e->inv_mass &&
                                got.material == e->material);
                }
                free(exp_all);
                free(all);
                gf_particles_free(&p);
                k++;
            }
    gf_exchange_free(&x);
}

static void test_migration_periodic(void **state) {
    (void)state;
    migration_case(1);
}

static void test_migration_walled(void **state) {
    (void)state;
    migration_case(0);
}

/* Centres exactly on subdomain boundaries (and on the periodic seam) have exactly one owner. */
static void test_on_boundary(void **state) {
    (void)state;
    gf_exchange x;
    int dims[3] = {0, 0, 0}, per[3] = {1, 0, 1};
    const double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1}, ext[3] = {2, 2, 2};
    GF_ASSERT_OK(gf_decomp_choose_dims(P.size, ext, dims));
    GF_ASSERT_OK(gf_exchange_init(&x, &P, dims, per, lo, hi));
    gf_particles p;
    gf_particles_init(&p);
    /* Rank 0 makes particles on every grid plane intersection, including the domain faces;
     * they travel to their owners in one migration (at most one subdomain away from rank 0's
     * cell only when dims <= 2 per axis, which holds for up to 8 ranks). */
    int64_t id = 0;
    if (P.rank == 0) {
        for (int i = 0; i <= dims[0]; ++i)
            for (int j = 0; j <= dims[1]; ++j)
                for (int kk = 0; kk <= dims[2]; ++kk) {
                    double pos[3] = {lo[0] + i * 2.0 / dims[0], lo[1] + j * 2.0 / dims[1],
                                     lo[2] + kk * 2.0 / dims[2]};
                    if (pos[0] >= x.decomp.sub_hi[0] + 1e-9 ||
                        pos[1] >= x.decomp.sub_hi[1] + 1e-9 || pos[2] >= x.decomp.sub_hi[2] + 1e-9)
                        continue; /* beyond one hop from rank 0 */
                    gf_particle rec;
                    gf_particle_make_sphere(&rec, id++, pos, 0.01, 1000, 0);
                    GF_ASSERT_OK(gf_particles_add(&p, &rec));
                }
    }
    int64_t made = id;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &made, 1, GF_PAR_MAX));
    GF_ASSERT_OK(gf_exchange_migrate(&x, &p, NULL));
    int64_t n = (int64_t)p.n_local;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
    assert_int_equal(n, made);
    for (size_t i = 0; i < p.n_local; ++i)
        assert_true(gf_decomp_owns(&x.decomp, (double[3]){p.x[0][i], p.x[1][i], p.x[2][i]}));
    size_t total = 0;
    int64_t *ids = gather(p.id, p.n_local, sizeof *p.id, &total);
    if (P.rank == 0) {
        char *seen = calloc((size_t)made, 1);
        for (size_t i = 0; i < total; ++i) {
            assert_true(ids[i] >= 0 && ids[i] < made);
            assert_int_equal(seen[ids[i]], 0);
            seen[ids[i]] = 1;
        }
        free(seen);
    }
    free(ids);
    gf_particles_free(&p);
    gf_exchange_free(&x);
}

/* ---- periodic wrap at the ends of the box (issue 11) ------------------------------------- */

/* Adversarial positions on a periodic axis: a wrapped coordinate lies in [lo, hi), is a fixed
 * point of the wrap, is periodically equal to the input (to rounding of the input's size), and
 * gf_decomp_coord gives the same valid cell for a position and its wrap. */
static void test_wrap_adversarial(void **state) {
    (void)state;
    const double boxes[][2] = {{0, 0.1}, {0.1, 0.3}, {-1, 1}, {-0.3, -0.1}, {1e6, 1e6 + 0.1}};
    const int dims_list[] = {1, 2, 3, 4, 7};
    for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; ++b)
        for (size_t k = 0; k < sizeof dims_list / sizeof dims_list[0]; ++k) {
            const double lo[3] = {boxes[b][0], 0, 0}, hi[3] = {boxes[b][1], 1, 1};
            const int dims[3] = {dims_list[k], 1, 1}, per[3] = {1, 0, 0}, coords[3] = {0, 0, 0};
            gf_decomp d;
            gf_decomp_setup(&d, dims, per, coords, lo, hi);
            double L = hi[0] - lo[0];
            double xs[] = {-1e-19,
                           -0.0,
                           0.0,
                           lo[0],
                           hi[0],
                           nextafter(hi[0], -INFINITY),
                           nextafter(hi[0], INFINITY),
                           nextafter(lo[0], -INFINITY),
                           nextafter(lo[0], INFINITY),
                           lo[0] - 1e-19,
                           hi[0] + 1e-19,
                           hi[0] - 1e-19,
                           lo[0] - L,
                           lo[0] - 3 * L,
                           lo[0] - 1000 * L,
                           hi[0] + L,
                           hi[0] + 7 * L,
                           lo[0] + 0.5 * L,
                           lo[0] - 0.5 * L,
                           nextafter(lo[0] - L, -INFINITY),
                           nextafter(hi[0] + L, INFINITY),
                           lo[0] + L / dims[0],
                           nextafter(lo[0] + L / dims[0], -INFINITY)};
            for (size_t i = 0; i < sizeof xs / sizeof xs[0]; ++i) {
                double x = xs[i], y = gf_decomp_wrap_axis(&d, 0, x);
                if (!(y >= lo[0] && y < hi[0]))
                    fail_msg("wrap(%.17g) = %.17g outside [%.17g, %.17g)", x, y, lo[0], hi[0]);
                assert_true(gf_decomp_wrap_axis(&d, 0, y) == y);
                /* Periodically the same point: the difference is a whole number of periods. */
                double turns = (x - y) / L;
                double slack = 4e-16 * (fabs(x) + fabs(lo[0]) + fabs(hi[0])) / L;
                if (!(fabs(turns - round(turns)) <= slack + 1e-12))
                    fail_msg("wrap(%.17g) = %.17g is %.17g periods away", x, y, turns);
                int cx = gf_decomp_coord(&d, 0, x), cy = gf_decomp_coord(&d, 0, y);
                assert_true(cy >= 0 && cy < dims[0]);
                if (cx != cy)
                    fail_msg("cell of %.17g is %d, of its wrap %.17g %d", x, cx, y, cy);
                /* The cell holds the wrapped position (up to rounding at its faces). */
                double w = L / dims[0], clo = lo[0] + cy * w, chi = lo[0] + (cy + 1) * w;
                double eps = 4e-16 * (fabs(lo[0]) + fabs(hi[0]));
                assert_true(y >= clo - eps && y <= chi + eps);
            }
        }
}

/* A particle a hair below lo (or exactly at hi, or just below hi) of a periodic axis migrates
 * to exactly one owner, wherever the seam falls in the decomposition. */
static void test_migrate_seam(void **state) {
    (void)state;
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.1, 0.1};
    const int dims[3] = {P.size, 1, 1}, per[3] = {1, 1, 1};
    gf_exchange x;
    GF_ASSERT_OK(gf_exchange_init(&x, &P, dims, per, lo, hi));
    const double cases[] = {-1e-19, -0.0, 0.1, nextafter(0.1, 0.0), -5e-17, 0.1 + 1e-17};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        gf_particles p;
        gf_particles_init(&p);
        /* Placed on the rank whose subdomain it sits next to: rank 0 for positions below lo,
         * the last rank along x for those at or just below hi. */
        int near_hi = cases[c] > 0.05;
        if (x.decomp.coords[0] == (near_hi ? P.size - 1 : 0)) {
            gf_particle rec;
            const double pos[3] = {cases[c], 0.05, 0.05};
            gf_particle_make_sphere(&rec, 7, pos, 0.001, 1000, 0);
            GF_ASSERT_OK(gf_particles_add(&p, &rec));
        }
        GF_ASSERT_OK(gf_exchange_migrate(&x, &p, NULL));
        int64_t n = (int64_t)p.n_local;
        GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
        assert_int_equal(n, 1);
        for (size_t i = 0; i < p.n_local; ++i) {
            const double pos[3] = {p.x[0][i], p.x[1][i], p.x[2][i]};
            assert_true(gf_decomp_owns(&x.decomp, pos));
            /* Still the same point of the periodic box. */
            double dd = pos[0] - cases[c];
            dd -= 0.1 * round(dd / 0.1);
            GF_ASSERT_NEAR(dd, 0.0, 1e-16);
        }
        gf_particles_free(&p);
    }
    gf_exchange_free(&x);
}

/* ---- the global contact set equals the serial one ---------------------------------------- */

typedef struct {
    int64_t a, b;
} pair;

static int cmp_pair(const void *x, const void *y) {
    const pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

static void random_sphere(uint64_t *rng, int64_t id, const double lo[3], const double hi[3],
                          gf_particle *rec) {
    double pos[3];
    for (int a = 0; a < 3; ++a)
        pos[a] = gf_test_uniform(rng, lo[a], hi[a]);
    gf_particle_make_sphere(rec, id, pos, gf_test_uniform(rng, 0.02, 0.04), 1000, 0);
    for (int a = 0; a < 3; ++a)
        rec->v[a] = gf_test_uniform(rng, -1, 1);
}

/* The serial reference: every pair of the n particles (indexed by id) within the sum of their
 * radii plus the margin, with the minimum image on periodic axes; sorted as cmp_pair sorts. */
static pair *serial_pairs(const gf_particle *all, int n, int periodic, const double lo[3],
                          const double hi[3], double margin, size_t *count) {
    size_t cap = 1024, m = 0;
    pair *ref = malloc(cap * sizeof *ref);
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            double d2 = 0;
            for (int a = 0; a < 3; ++a) {
                double dd = all[i].x[a] - all[j].x[a];
                if (periodic)
                    dd -= (hi[a] - lo[a]) * round(dd / (hi[a] - lo[a]));
                d2 += dd * dd;
            }
            double reach = all[i].radius + all[j].radius + margin;
            if (d2 < reach * reach) {
                if (m == cap)
                    ref = realloc(ref, (cap *= 2) * sizeof *ref);
                ref[m].a = i;
                ref[m++].b = j;
            }
        }
    *count = m;
    return ref;
}

static void contact_set_case(int periodic) {
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const int N = 3000;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int dims[3] = {0, 0, 0}, per[3] = {periodic, periodic, periodic};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.dt = 1e-3;
    sim.margin_tolerance = 0.002;
    uint64_t rng = 4242;
    gf_particle *all = malloc(N * sizeof *all);
    for (int i = 0; i < N; ++i) {
        random_sphere(&rng, i, lo, hi, &all[i]);
        if (gf_decomp_owns(&sim.xch.decomp, all[i].x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &all[i]));
    }
    GF_ASSERT_OK(gf_sim_start(&sim));
    GF_ASSERT_OK(gf_contact_detect(&sim.particles, &sim.walls, &sim.materials, sim.margin,
                                   &sim.cells, &sim.contacts));
    pair *mine = malloc((sim.contacts.count + 1) * sizeof *mine);
    for (size_t j = 0; j < sim.contacts.count; ++j) {
        int64_t a = sim.particles.id[sim.contacts.i1[j]], b = sim.particles.id[sim.contacts.i2[j]];
        mine[j].a = a < b ? a : b;
        mine[j].b = a < b ? b : a;
    }
    size_t total = 0;
    pair *got = gather(mine, sim.contacts.count, sizeof *mine, &total);
    if (P.rank == 0) {
        size_t n = 0;
        pair *ref = serial_pairs(all, N, periodic, lo, hi, sim.margin, &n);
        qsort(got, total, sizeof *got, cmp_pair);
        assert_true(n > 500);
        if (total != n)
            fail_msg("%zu contacts on %d ranks, %zu in the serial search", total, P.size, n);
        for (size_t i = 0; i < n; ++i)
            assert_true(got[i].a == ref[i].a && got[i].b == ref[i].b);
        free(ref);
    }
    free(got);
    free(mine);
    free(all);
    gf_sim_free(&sim);
}

/* Ghost lists kept between rebuilds (Domain.ghost_skin_fraction): a gas of spheres moving a
 * tenth of a radius per step, colliding, for 60 steps; before every step the contacts the ranks
 * find are the serial search's on the gathered positions (every pair within the margin: no
 * per-pair speculation), though most steps only refreshed the ghosts. */
static void kept_ghosts_case(int periodic) {
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const int N = 1500, steps = 60;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int dims[3] = {0, 0, 0}, per[3] = {periodic, periodic, periodic};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.dt = 1e-3;
    sim.margin_tolerance = 0.002;
    sim.per_pair = 0;
    sim.ghost_skin_fraction = 3.0; /* lists kept for about ten steps */
    uint64_t rng = 777;
    for (int i = 0; i < N; ++i) {
        gf_particle rec;
        random_sphere(&rng, i, lo, hi, &rec);
        for (int a = 0; a < 3; ++a)
            rec.v[a] *= 3.0; /* up to 3 m/s: a tenth of a radius per step */
        if (gf_decomp_owns(&sim.xch.decomp, rec.x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    }
    sim.expected_particles = N;
    GF_ASSERT_OK(gf_sim_start(&sim));
    gf_linkcells cells;
    gf_linkcells_init(&cells);
    gf_contacts found;
    gf_contacts_init(&found);
    for (int s = 0; s < steps; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        const gf_particles *p = &sim.particles;
        GF_ASSERT_OK(gf_contact_detect(p, &sim.walls, &sim.materials, sim.margin, &cells, &found));
        pair *mine = malloc((found.count + 1) * sizeof *mine);
        size_t m = 0;
        for (size_t j = 0; j < found.count; ++j) {
            if (found.i2[j] < 0)
                continue;
            int64_t a = p->id[found.i1[j]], b = p->id[found.i2[j]];
            mine[m].a = a < b ? a : b;
            mine[m++].b = a < b ? b : a;
        }
        size_t total = 0, n = 0;
        pair *got = gather(mine, m, sizeof *mine, &total);
        gf_particle *own = malloc((p->n_local + 1) * sizeof *own);
        for (size_t i = 0; i < p->n_local; ++i)
            gf_particles_get(p, i, &own[i]);
        gf_particle *all = gather(own, p->n_local, sizeof *own, &n);
        if (P.rank == 0) {
            assert_int_equal(n, N);
            gf_particle *by_id = malloc(N * sizeof *by_id);
            for (size_t i = 0; i < n; ++i)
                by_id[all[i].id] = all[i];
            size_t nref = 0;
            pair *ref = serial_pairs(by_id, N, periodic, lo, hi, sim.margin, &nref);
            qsort(got, total, sizeof *got, cmp_pair);
            if (total != nref)
                fail_msg("%s, step %ld on %d ranks: %zu contacts, %zu in the serial search",
                         periodic ? "periodic" : "walled", sim.step, P.size, total, nref);
            for (size_t i = 0; i < nref; ++i)
                assert_true(got[i].a == ref[i].a && got[i].b == ref[i].b);
            free(ref);
            free(by_id);
        }
        free(all);
        free(own);
        free(got);
        free(mine);
    }
    /* Most steps kept the lists (a rebuild at sorts and after half a skin of motion). */
    if (P.size > 1 || periodic) {
        assert_int_equal(sim.ghost_builds + sim.ghost_refreshes, steps + 1);
        assert_true(sim.ghost_refreshes > steps / 2);
    }
    gf_contacts_free(&found);
    gf_linkcells_free(&cells);
    gf_sim_free(&sim);
}

static void test_kept_ghosts_walled(void **state) {
    (void)state;
    kept_ghosts_case(0);
}

static void test_kept_ghosts_periodic(void **state) {
    (void)state;
    kept_ghosts_case(1);
}

/* The kept lists' displacement test counts both particles of a pair: two spheres approach each
 * other head-on across the first cut, each by an eighth of the skin per step, the far one from
 * just beyond the ghosts' range. The lists must be rebuilt before the pair comes within reach
 * (after half a skin of motion each), or the owner of the smaller id misses the contact. */
static void test_kept_ghosts_head_on(void **state) {
    (void)state;
    if (P.size < 2)
        return;
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, r = 0.02;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int dims[3] = {P.size, 1, 1}, per[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.dt = 1e-3;
    sim.margin_tolerance = 0.002;
    sim.margin_fraction = 0.01;
    sim.per_pair = 0;
    sim.ghost_skin_fraction = 2.0;
    const double skin = 2.0 * r, u = skin / 8.0, cut = 1.0 / P.size;
    /* The margin and range the first exchange will find (fastest particle u / dt). */
    double margin = sim.margin_tolerance + sim.margin_fraction * r + 2.0 * u;
    double range = 2.0 * r + margin + skin;
    gf_particle rec[2];
    const double xa[3] = {cut - 0.001, 0.5, 0.5}, xb[3] = {cut + range + 0.002, 0.5, 0.5};
    gf_particle_make_sphere(&rec[0], 0, xa, r, 1000, 0);
    gf_particle_make_sphere(&rec[1], 1, xb, r, 1000, 0);
    rec[0].v[0] = u / sim.dt;
    rec[1].v[0] = -u / sim.dt;
    for (int k = 0; k < 2; ++k)
        if (gf_decomp_owns(&sim.xch.decomp, rec[k].x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec[k]));
    sim.expected_particles = 2;
    GF_ASSERT_OK(gf_sim_start(&sim));
    assert_true(fabs(sim.margin - margin) < 1e-12);
    gf_linkcells cells;
    gf_linkcells_init(&cells);
    gf_contacts found;
    gf_contacts_init(&found);
    int touched = 0;
    for (int s = 0; s < 8 && !touched; ++s) {
        /* Within reach at this step's positions? (gathered: one particle per owner) */
        double x[2] = {0, 0};
        for (size_t i = 0; i < sim.particles.n_local; ++i)
            x[sim.particles.id[i]] = sim.particles.x[0][i];
        GF_ASSERT_OK(gf_par_allreduce_double(&P, x, 2, GF_PAR_SUM));
        int near = x[1] - x[0] < 2.0 * r + sim.margin;
        GF_ASSERT_OK(gf_contact_detect(&sim.particles, &sim.walls, &sim.materials, sim.margin,
                                       &cells, &found));
        int64_t pairs = 0;
        for (size_t j = 0; j < found.count; ++j)
            pairs += found.i2[j] >= 0;
        GF_ASSERT_OK(gf_par_allreduce_i64(&P, &pairs, 1, GF_PAR_SUM));
        if (pairs != near)
            fail_msg("step %ld: the spheres are %.6g m apart (reach %.6g m) and %lld ranks found "
                     "their contact",
                     sim.step, x[1] - x[0], 2.0 * r + sim.margin, (long long)pairs);
        touched = near;
        GF_ASSERT_OK(gf_sim_step(&sim));
    }
    assert_true(touched);
    assert_true(sim.ghost_refreshes >= 2);
    gf_contacts_free(&found);
    gf_linkcells_free(&cells);
    gf_sim_free(&sim);
}

/* A skin wider than the subdomains leave beyond the interaction range is cut to what they hold
 * (ghosts are forwarded one subdomain deep), with a warning. */
static void test_kept_ghosts_thin(void **state) {
    (void)state;
    if (P.size < 2)
        return;
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1 * P.size, 1, 1}, r = 0.02;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int dims[3] = {P.size, 1, 1}, per[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.ghost_skin_fraction = 10.0; /* 0.2 m, in slabs 0.1 m thick */
    const double x[3] = {0.05, 0.5, 0.5};
    gf_particle rec;
    gf_particle_make_sphere(&rec, 0, x, r, 1000, 0);
    if (gf_decomp_owns(&sim.xch.decomp, rec.x))
        GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    sim.expected_particles = 1;
    GF_ASSERT_OK(gf_sim_start(&sim));
    assert_true(sim.warned_ghost_skin);
    assert_true(fabs(sim.ghost_range - 0.1) < 1e-12);
    gf_sim_free(&sim);
}

static void test_contact_set_walled(void **state) {
    (void)state;
    contact_set_case(0);
}

static void test_contact_set_periodic(void **state) {
    (void)state;
    contact_set_case(1);
}

/* ---- contact sets of bodies of every shape ------------------------------------------------ */

typedef struct {
    int64_t a, b; /* smaller id, larger id */
    double gap;
} point_entry;

static int cmp_point_entry(const void *x, const void *y) {
    const point_entry *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return p->gap < q->gap ? -1 : (p->gap > q->gap);
}

/* Body i: a sphere, box, capsule, cylinder or clump (by i mod 5), random size, orientation and
 * place. */
static void random_body(uint64_t *rng, int64_t id, const gf_clumps *clumps, gf_particle *rec) {
    double pos[3], s = gf_test_uniform(rng, 0.015, 0.03);
    for (int a = 0; a < 3; ++a)
        pos[a] = gf_test_uniform(rng, 0.0, 1.0);
    gf_shape shape;
    switch (id % 5) {
    case 0:
        shape = gf_shape_sphere(s);
        break;
    case 1:
        shape = gf_shape_box(s, 0.6 * s, 0.3 * s);
        break;
    case 2:
        shape = gf_shape_capsule(0.4 * s, s);
        break;
    case 3:
        shape = gf_shape_cylinder(0.6 * s, 0.5 * s);
        break;
    default:
        shape = gf_shape_clump(0, s / 0.02);
        break;
    }
    gf_particle_make(rec, id, pos, &shape, clumps, 1000, 0);
    double n = 0.0;
    for (int k = 0; k < 4; ++k) {
        rec->q[k] = gf_test_uniform(rng, -1, 1);
        n += rec->q[k] * rec->q[k];
    }
    for (int k = 0; k < 4; ++k)
        rec->q[k] /= sqrt(n);
    for (int a = 0; a < 3; ++a)
        rec->v[a] = gf_test_uniform(rng, -1, 1);
}

/* The contact points of a random mixed-shape set, found on this rank count with link cells,
 * ghosts and the ownership rule, are those of an all-pairs search on one rank (minimum image on
 * periodic axes), point for point. */
static void contact_set_shapes_case(int periodic) {
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    const int N = 1500;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    const double centre[3][3] = {{0, 0, 0}, {0.012, 0, 0}, {0, 0.011, 0.004}};
    const double radius[3] = {0.01, 0.008, 0.007};
    gf_clump clump;
    GF_ASSERT_OK(gf_clump_make(3, centre, radius, &clump));
    int32_t index;
    GF_ASSERT_OK(gf_clumps_add(&sim.clumps, &clump, &index));
    int dims[3] = {0, 0, 0}, per[3] = {periodic, periodic, periodic};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.dt = 1e-3;
    sim.margin_tolerance = 0.002;
    uint64_t rng = 777;
    gf_particle *all = malloc(N * sizeof *all);
    for (int i = 0; i < N; ++i) {
        random_body(&rng, i, &sim.clumps, &all[i]);
        if (gf_decomp_owns(&sim.xch.decomp, all[i].x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &all[i]));
    }
    GF_ASSERT_OK(gf_sim_start(&sim));
    GF_ASSERT_OK(gf_contact_detect(&sim.particles, &sim.walls, &sim.materials, sim.margin,
                                   &sim.cells, &sim.contacts));
    point_entry *mine = malloc((sim.contacts.count + 1) * sizeof *mine);
    size_t nmine = 0;
    for (size_t j = 0; j < sim.contacts.count; ++j) {
        if (sim.contacts.i2[j] < 0)
            continue; /* walls: not part of this comparison */
        int64_t a = sim.contacts.id1[j], b = sim.contacts.id2[j];
        mine[nmine++] = (point_entry){a < b ? a : b, a < b ? b : a, sim.contacts.gap[j]};
    }
    size_t total = 0;
    point_entry *got = gather(mine, nmine, sizeof *mine, &total);
    if (P.rank == 0) {
        size_t cap = 1024, n = 0;
        point_entry *ref = malloc(cap * sizeof *ref);
        gf_contact_point pts[GF_CLUMP_MAX_MEMBERS * GF_CLUMP_MAX_MEMBERS];
        for (int i = 0; i < N; ++i)
            for (int j = i + 1; j < N; ++j) {
                double xb[3], d2 = 0.0;
                for (int a = 0; a < 3; ++a) {
                    double dd = all[j].x[a] - all[i].x[a];
                    if (periodic)
                        dd -= (hi[a] - lo[a]) * round(dd / (hi[a] - lo[a]));
                    xb[a] = all[i].x[a] + dd;
                    d2 += dd * dd;
                }
                double reach = all[i].radius + all[j].radius + sim.margin;
                if (d2 >= reach * reach)
                    continue;
                gf_body_pose pa = {&all[i].shape, &sim.clumps, {0}, {0}},
                             pb = {&all[j].shape, &sim.clumps, {0}, {0}};
                memcpy(pa.x, all[i].x, sizeof pa.x);
                memcpy(pa.q, all[i].q, sizeof pa.q);
                memcpy(pb.x, xb, sizeof pb.x);
                memcpy(pb.q, all[j].q, sizeof pb.q);
                int count = 0;
                GF_ASSERT_OK(gf_collide(&pa, &pb, sim.margin, pts,
                                        (int)(sizeof pts / sizeof pts[0]), &count));
                for (int k = 0; k < count; ++k) {
                    if (n == cap)
                        ref = realloc(ref, (cap *= 2) * sizeof *ref);
                    ref[n++] = (point_entry){i, j, pts[k].gap};
                }
            }
        qsort(got, total, sizeof *got, cmp_point_entry);
        qsort(ref, n, sizeof *ref, cmp_point_entry);
        assert_true(n > 100);
        if (total != n)
            fail_msg("%zu contact points on %d ranks, %zu in the serial search", total, P.size, n);
        for (size_t k = 0; k < n; ++k)
            if (got[k].a != ref[k].a || got[k].b != ref[k].b ||
                !(fabs(got[k].gap - ref[k].gap) <= 1e-9))
                fail_msg("point %zu: pair %lld-%lld gap %.17g on %d ranks, pair %lld-%lld gap "
                         "%.17g serially",
                         k, (long long)got[k].a, (long long)got[k].b, got[k].gap, P.size,
                         (long long)ref[k].a, (long long)ref[k].b, ref[k].gap);
        free(ref);
    }
    free(got);
    free(mine);
    free(all);
    gf_sim_free(&sim);
}

static void test_contact_set_shapes_walled(void **state) {
    (void)state;
    contact_set_shapes_case(0);
}

static void test_contact_set_shapes_periodic(void **state) {
    (void)state;
    contact_set_shapes_case(1);
}

/* ---- ids and accounting -------------------------------------------------------------------- */

static void test_unique_ids(void **state) {
    (void)state;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int64_t total_made = 0;
    for (int round = 0; round < 3; ++round) {
        int64_t n = (P.rank * 7 + round * 3) % 5, first = -1;
        GF_ASSERT_OK(gf_sim_allocate_ids(&sim, n, &first));
        int64_t *ids = malloc((size_t)(n + 1) * sizeof *ids);
        for (int64_t i = 0; i < n; ++i)
            ids[i] = first + i;
        size_t total = 0;
        int64_t *all = gather(ids, (size_t)n, sizeof *ids, &total);
        int64_t sum = n;
        GF_ASSERT_OK(gf_par_allreduce_i64(&P, &sum, 1, GF_PAR_SUM));
        if (P.rank == 0) {
            /* Contiguous and unique: exactly total_made .. total_made + sum - 1. */
            assert_int_equal((int64_t)total, sum);
            char *seen = calloc((size_t)sum + 1, 1);
            for (size_t i = 0; i < total; ++i) {
                int64_t k = all[i] - total_made;
                assert_true(k >= 0 && k < sum && !seen[k]);
                seen[k] = 1;
            }
            free(seen);
        }
        total_made += sum;
        assert_int_equal(sim.next_id, total_made);
        free(all);
        free(ids);
    }
    gf_sim_free(&sim);
}

static void test_accounting(void **state) {
    (void)state;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    int dims[3] = {0, 0, 0}, per[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    uint64_t rng = 7;
    for (int i = 0; i < 200; ++i) {
        gf_particle rec;
        random_sphere(&rng, i, lo, hi, &rec);
        if (gf_decomp_owns(&sim.xch.decomp, rec.x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    }
    sim.expected_particles = 200;
    GF_ASSERT_OK(gf_sim_start(&sim));
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* The last rank loses its first particle behind the engine's back. */
    int64_t lost = -1;
    gf_particles_clear_ghosts(&sim.particles);
    if (P.rank == P.size - 1 && sim.particles.n_local > 0) {
        lost = sim.particles.id[0];
        gf_particles_remove(&sim.particles, 0);
    }
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &lost, 1, GF_PAR_MAX));
    gf_status st = gf_sim_check_particles(&sim);
    assert_int_equal(st, GF_ERR_STATE);
    if (P.rank == 0) {
        char want[128];
        snprintf(want, sizeof want, "particle %lld vanished (last seen on rank %d", (long long)lost,
                 P.size - 1);
        if (!strstr(gf_error_message(), want) || !strstr(gf_error_message(), "199 particles"))
            fail_msg("message lacks '%s': %s", want, gf_error_message());
    }
    gf_sim_free(&sim);
}

/* ---- the pipelined velocity messages -------------------------------------------------------- */

typedef struct {
    int64_t id;
    int32_t ghost;    /* 0 owned, 1 ghost of another rank's particle */
    int32_t shared;   /* owned and held as a ghost elsewhere */
    double v[6], mod; /* velocities; the change this rank made to v[0] */
} pipe_row;

/* The velocity messages send only rows that say something, yet after a round each way (the
 * pipelined form) or a synchronisation every ghost holds its owner's velocity bit for bit, and
 * every owner the sum of all changes made to it and its copies, as sending every row would
 * leave them. The changes are dyadic, so the sums are exact in any order; one kind is made to
 * cancel: colour 0 lowers some shared velocities by an ulp (pipelined: after posting), colour 1
 * raises its copies by the same, and the owner's sum comes back to the value it last sent,
 * which the neighbour must get again all the same (its copy differs). Walled and periodic, cut
 * along x (two colours). */
static void pipe_rows_case(int periodic, int pipelined) {
    if (P.size < 2)
        return; /* one colour: no pipeline */
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, ulp = 0x1p-52;
    const int N = 1500;
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    int dims[3] = {P.size, 1, 1}, per[3] = {periodic, periodic, periodic};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    sim.gravity[2] = 0;
    sim.dt = 1e-3;
    sim.margin_tolerance = 0.002;
    uint64_t rng = 99;
    for (int i = 0; i < N; ++i) {
        gf_particle rec;
        random_sphere(&rng, i, lo, hi, &rec);
        rec.v[0] = 1.0;
        rec.v[1] = 0.5 + (double)i * 0x1p-12;
        rec.v[2] = 0.0;
        for (int a = 0; a < 3; ++a)
            rec.w[a] = (double)(a + 1) * 0.125;
        if (gf_decomp_owns(&sim.xch.decomp, rec.x))
            GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    }
    GF_ASSERT_OK(gf_sim_start(&sim));
    gf_exchange *x = &sim.xch;
    gf_particles *p = &sim.particles;
    assert_int_equal(x->ncolors, 2);
    assert_true(gf_exchange_pipe_ready(x));
    size_t n = p->n_local + p->n_ghost;
    double *mod = calloc(n + 1, sizeof *mod);
    /* A ghost of this rank's own particle (a periodic image) is not the pipeline's. */
#define OTHERS(i) ((i) >= p->n_local && x->ghost_rank[(i)-p->n_local] != P.rank)
#define CHANGE(i, by) (p->v[0][i] += (by), mod[i] += (by))
    GF_ASSERT_OK(gf_exchange_mark(x, p));
    GF_ASSERT_OK(gf_exchange_sync(x, p));
    if (!pipelined) { /* the same changes, then one synchronisation */
        for (size_t i = 0; i < n; ++i) {
            if (x->color == 0 && OTHERS(i) && p->id[i] % 4 == 2)
                CHANGE(i, 0.5);
            if (x->color == 0 && i < p->n_local && x->shared[i] && p->id[i] % 4 == 3)
                CHANGE(i, -ulp);
            if (x->color == 1 && OTHERS(i) && p->id[i] % 4 == 3)
                CHANGE(i, ulp);
            if (x->color == 1 && OTHERS(i) && p->id[i] % 4 == 1)
                CHANGE(i, 0.25);
        }
        GF_ASSERT_OK(gf_exchange_sync(x, p));
    } else if (x->color == 0) {
        for (size_t i = 0; i < n; ++i)
            if (OTHERS(i) && p->id[i] % 4 == 2)
                CHANGE(i, 0.5);
        GF_ASSERT_OK(gf_exchange_pipe_post(x, p));
        for (size_t i = 0; i < p->n_local; ++i)
            if (x->shared[i] && p->id[i] % 4 == 3)
                CHANGE(i, -ulp);
        GF_ASSERT_OK(gf_exchange_pipe_take(x, p));
        GF_ASSERT_OK(gf_exchange_pipe_post(x, p));
    } else {
        GF_ASSERT_OK(gf_exchange_pipe_take(x, p));
        for (size_t i = 0; i < n; ++i) {
            if (OTHERS(i) && p->id[i] % 4 == 3)
                CHANGE(i, ulp);
            if (OTHERS(i) && p->id[i] % 4 == 1)
                CHANGE(i, 0.25);
        }
        GF_ASSERT_OK(gf_exchange_pipe_post(x, p));
        GF_ASSERT_OK(gf_exchange_pipe_take(x, p));
    }
#undef CHANGE
    pipe_row *mine = calloc(n + 1, sizeof *mine);
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        if (i >= p->n_local && !OTHERS(i))
            continue;
        pipe_row *r = &mine[m++];
        r->id = p->id[i];
        r->ghost = i >= p->n_local;
        r->shared = i < p->n_local && x->shared[i];
        for (int a = 0; a < 3; ++a) {
            r->v[a] = p->v[a][i];
            r->v[3 + a] = p->w[a][i];
        }
        r->mod = mod[i];
    }
#undef OTHERS
    size_t total = 0;
    pipe_row *all = gather(mine, m, sizeof *mine, &total);
    if (P.rank == 0) {
        pipe_row *owner = calloc(N, sizeof *owner);
        double *sum = calloc(N, sizeof *sum);
        int *copies = calloc(N, sizeof *copies);
        for (size_t k = 0; k < total; ++k) {
            const pipe_row *r = &all[k];
            if (!r->ghost)
                owner[r->id] = *r;
            sum[r->id] += r->mod;
            copies[r->id] += r->ghost;
        }
        int ghosts = 0, cancelled = 0;
        for (size_t k = 0; k < total; ++k) {
            const pipe_row *r = &all[k];
            const pipe_row *o = &owner[r->id];
            if (r->ghost) {
                ++ghosts;
                if (memcmp(r->v, o->v, sizeof r->v) != 0)
                    fail_msg("%s, %s, %d ranks: the ghost of particle %lld holds v %.17g, its "
                             "owner %.17g",
                             pipelined ? "pipelined" : "synchronised",
                             periodic ? "periodic" : "walled", P.size, (long long)r->id, r->v[0],
                             o->v[0]);
                continue;
            }
            double want[6] = {
                1.0 + sum[r->id], 0.5 + (double)r->id * 0x1p-12, 0.0, 0.125, 0.25, 0.375};
            if (memcmp(r->v, want, sizeof want) != 0)
                fail_msg("%s, %s, %d ranks: particle %lld has v %.17g %.17g, the changes made "
                         "to it sum to %.17g %.17g",
                         pipelined ? "pipelined" : "synchronised", periodic ? "periodic" : "walled",
                         P.size, (long long)r->id, r->v[0], r->v[1], want[0], want[1]);
            cancelled += r->shared && r->id % 4 == 3 && copies[r->id] == 1 && r->v[0] == 1.0;
        }
        assert_true(ghosts > 100);
        assert_true(cancelled > 5); /* the case that needs the value sent again happened */
        free(owner);
        free(sum);
        free(copies);
    }
    GF_ASSERT_OK(gf_exchange_sync(x, p)); /* waits for the last messages */
    free(all);
    free(mine);
    free(mod);
    gf_sim_free(&sim);
}

static void test_pipe_rows_walled(void **state) {
    (void)state;
    pipe_rows_case(0, 1);
    pipe_rows_case(0, 0);
}

static void test_pipe_rows_periodic(void **state) {
    (void)state;
    pipe_rows_case(1, 1);
    pipe_rows_case(1, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_choose_dims),
    cmocka_unit_test(test_migration_periodic),
    cmocka_unit_test(test_migration_walled),
    cmocka_unit_test(test_on_boundary),
    cmocka_unit_test(test_contact_set_walled),
    cmocka_unit_test(test_contact_set_periodic),
    cmocka_unit_test(test_kept_ghosts_walled),
    cmocka_unit_test(test_kept_ghosts_periodic),
    cmocka_unit_test(test_kept_ghosts_head_on),
    cmocka_unit_test(test_kept_ghosts_thin),
    cmocka_unit_test(test_contact_set_shapes_walled),
    cmocka_unit_test(test_contact_set_shapes_periodic),
    cmocka_unit_test(test_unique_ids),
    cmocka_unit_test(test_accounting),
    cmocka_unit_test(test_wrap_adversarial),
    cmocka_unit_test(test_migrate_seam),
    cmocka_unit_test(test_pipe_rows_walled),
    cmocka_unit_test(test_pipe_rows_periodic),
};

GF_TEST_MPI_MAIN(tests)
