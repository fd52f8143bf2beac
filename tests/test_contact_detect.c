/* Link-cell detection finds exactly the contacts an all-pairs search finds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contact/contact.h"
#include "core/vec.h"
#include "geometry/geometry.h"
#include "granflow/trimesh.h"
#include "test_util.h"

typedef struct {
    int64_t a, b;
    double gap, n[3];
} pair;

static int cmp_pair(const void *x, const void *y) {
    const pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return 0;
}

/* Contacts as (id1, id2) pairs with walls as negative ids, sorted. */
static pair *collect(const gf_particles *p, const gf_contacts *c) {
    pair *out = malloc((c->count + 1) * sizeof *out);
    for (size_t j = 0; j < c->count; ++j) {
        int64_t a = p->id[c->i1[j]];
        int64_t b = c->i2[j] >= 0 ? p->id[c->i2[j]] : (int64_t)c->i2[j];
        out[j].a = a < b ? a : b;
        out[j].b = a < b ? b : a;
        out[j].gap = c->gap[j];
        for (int d = 0; d < 3; ++d)
            out[j].n[d] = c->n[d][j] * (a < b ? 1.0 : -1.0);
    }
    qsort(out, c->count, sizeof *out, cmp_pair);
    return out;
}

static void check_same(const gf_particles *p, gf_contacts *fast, gf_contacts *slow) {
    assert_int_equal(fast->count, slow->count);
    pair *x = collect(p, fast), *y = collect(p, slow);
    for (size_t j = 0; j < fast->count; ++j) {
        assert_true(x[j].a == y[j].a && x[j].b == y[j].b);
        assert_true(x[j].gap == y[j].gap);
        for (int d = 0; d < 3; ++d)
            assert_true(x[j].n[d] == y[j].n[d]);
    }
    /* No pair twice. */
    for (size_t j = 1; j < fast->count; ++j)
        assert_true(cmp_pair(&x[j - 1], &x[j]) != 0);
    free(x);
    free(y);
}

static void random_system(gf_particles *p, uint64_t seed, size_t n, size_t nghost, double box,
                          double rmin, double rmax) {
    gf_particles_init(p);
    uint64_t rng = seed;
    for (size_t i = 0; i < n + nghost; ++i) {
        gf_particle rec;
        double x[3] = {gf_test_uniform(&rng, 0, box), gf_test_uniform(&rng, 0, box),
                       gf_test_uniform(&rng, 0, box)};
        gf_particle_make_sphere(&rec, (int64_t)i, x, gf_test_uniform(&rng, rmin, rmax), 1000.0, 0);
        if (i < n)
            GF_ASSERT_OK(gf_particles_add(p, &rec));
        else
            GF_ASSERT_OK(gf_particles_add_ghost(p, &rec));
    }
}

static void test_matches_brute_force(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, n[3] = {0, 0, 1}, nx[3] = {-1, 0, 0};
    GF_ASSERT_OK(gf_walls_add(&w, lo, n, NULL, 0));
    GF_ASSERT_OK(gf_walls_add(&w, hi, nx, NULL, 0));
    const struct {
        size_t n, ghosts;
        double box, rmin, rmax, margin;
    } cases[] = {
        {2000, 0, 1.0, 0.01, 0.03, 0.0},    /* sparse */
        {3000, 500, 1.0, 0.02, 0.05, 0.01}, /* dense, polydisperse, with ghosts */
        {500, 100, 1.0, 0.001, 0.2, 0.005}, /* wide size range */
        {50, 0, 100.0, 0.5, 0.5, 1.0},      /* dilute and spread out: few cells */
        {1, 0, 1.0, 0.1, 0.1, 0.0},         /* a single particle */
    };
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        gf_particles p;
        random_system(&p, 1000 + k, cases[k].n, cases[k].ghosts, cases[k].box, cases[k].rmin,
                      cases[k].rmax);
        gf_contacts fast, slow;
        gf_contacts_init(&fast);
        gf_contacts_init(&slow);
        GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, cases[k].margin, &lc, &fast));
        GF_ASSERT_OK(gf_contact_detect_brute(&p, &w, &m, cases[k].margin, &slow));
        if (k == 1)
            assert_true(fast.count > 1000); /* the dense case really is dense */
        check_same(&p, &fast, &slow);
        /* Ghost-ghost pairs are the owners' business. */
        for (size_t j = 0; j < fast.count; ++j)
            assert_true((size_t)fast.i1[j] < p.n_local ||
                        (fast.i2[j] >= 0 && (size_t)fast.i2[j] < p.n_local));
        gf_contacts_free(&fast);
        gf_contacts_free(&slow);
        gf_particles_free(&p);
    }
    gf_linkcells_free(&lc);
}

/* A non-finite centre (NaN or infinite, in any coordinate) stops detection with an error that
 * names the particle, before any geometry query meets it (a mesh's grid cannot place it); finite
 * ones pass. */
static void test_nonfinite_position(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double lo[3] = {0, 0, 0}, up[3] = {0, 0, 1}, ex[3] = {1, 0, 0}, zero[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_walls_add(&w, lo, up, NULL, 0));
    const double mid[3] = {0.5, 0.5, 0.0};
    double *corners = NULL;
    size_t nt = 0;
    GF_ASSERT_OK(gf_trimesh_rectangle(mid, up, ex, 1.0, 1.0, 0.1, &corners, &nt));
    GF_ASSERT_OK(gf_walls_add_mesh(&w, nt, corners, mid, zero, zero, 0));
    free(corners);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    const double bad[] = {NAN, INFINITY, -INFINITY, 0.5};
    for (int d = 0; d < 3; ++d)
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
            gf_particles p;
            random_system(&p, 7, 40, 0, 1.0, 0.01, 0.02);
            p.x[d][17] = bad[k];
            gf_contacts c;
            gf_contacts_init(&c);
            gf_status st = gf_contact_detect(&p, &w, &m, 0.001, &lc, &c);
            if (isfinite(bad[k])) {
                GF_ASSERT_OK(st);
            } else {
                assert_int_equal(st, GF_ERR_NUMERIC);
                assert_non_null(strstr(gf_error_message(), "particle 17 has a non-finite"));
                gf_error_clear();
            }
            gf_contacts_free(&c);
            gf_particles_free(&p);
        }
    /* So is a margin that is not a distance: no reach test could pass it. */
    const double bad_margin[] = {NAN, INFINITY, -1e-3};
    for (size_t k = 0; k < sizeof bad_margin / sizeof bad_margin[0]; ++k) {
        gf_particles p;
        random_system(&p, 7, 40, 0, 1.0, 0.01, 0.02);
        gf_contacts c;
        gf_contacts_init(&c);
        assert_int_equal(gf_contact_detect(&p, &w, &m, bad_margin[k], &lc, &c), GF_ERR_INPUT);
        assert_non_null(strstr(gf_error_message(), "contact margin"));
        gf_error_clear();
        gf_contacts_free(&c);
        gf_particles_free(&p);
    }
    gf_linkcells_free(&lc);
    gf_walls_free(&w);
}

/* The contact frame (n, t, o) is right-handed and orthonormal to rounding for normals in every
 * direction: random ones, the poles and their neighbourhood (where a tangent construction
 * divides by small numbers), and the axes. Pairs of unit spheres touching along each. */
static void test_frame_every_direction(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    uint64_t rng = 99;
    for (int k = 0; k < 2000; ++k) {
        double d[3];
        if (k < 6) { /* the axes, both ways */
            d[0] = d[1] = d[2] = 0.0;
            d[k / 2] = k % 2 ? -1.0 : 1.0;
        } else if (k < 40) { /* near the poles */
            double e = pow(10.0, -(double)(k % 17));
            d[0] = e * gf_test_uniform(&rng, -1, 1);
            d[1] = e * gf_test_uniform(&rng, -1, 1);
            d[2] = k % 2 ? -1.0 : 1.0;
        } else {
            for (int a = 0; a < 3; ++a)
                d[a] = gf_test_uniform(&rng, -1, 1);
        }
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        gf_particles p;
        gf_particles_init(&p);
        gf_particle rec;
        const double c1[3] = {0, 0, 0},
                     c2[3] = {1.99 * d[0] / len, 1.99 * d[1] / len, 1.99 * d[2] / len};
        gf_particle_make_sphere(&rec, 1, c1, 1.0, 1000, 0);
        GF_ASSERT_OK(gf_particles_add(&p, &rec));
        gf_particle_make_sphere(&rec, 2, c2, 1.0, 1000, 0);
        GF_ASSERT_OK(gf_particles_add(&p, &rec));
        gf_contacts c;
        gf_contacts_init(&c);
        GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, 0.0, &lc, &c));
        assert_int_equal(c.count, 1);
        double n[3] = {c.n[0][0], c.n[1][0], c.n[2][0]}, t[3] = {c.t[0][0], c.t[1][0], c.t[2][0]},
               o[3] = {c.o[0][0], c.o[1][0], c.o[2][0]};
        GF_ASSERT_NEAR(t[0] * t[0] + t[1] * t[1] + t[2] * t[2], 1.0, 1e-15);
        GF_ASSERT_NEAR(o[0] * o[0] + o[1] * o[1] + o[2] * o[2], 1.0, 1e-15);
        GF_ASSERT_NEAR(n[0] * t[0] + n[1] * t[1] + n[2] * t[2], 0.0, 1e-15);
        GF_ASSERT_NEAR(n[0] * o[0] + n[1] * o[1] + n[2] * o[2], 0.0, 1e-15);
        GF_ASSERT_NEAR(t[0] * o[0] + t[1] * o[1] + t[2] * o[2], 0.0, 1e-15);
        /* Right-handed: n x t = o. */
        GF_ASSERT_NEAR(n[1] * t[2] - n[2] * t[1], o[0], 1e-15);
        GF_ASSERT_NEAR(n[2] * t[0] - n[0] * t[2], o[1], 1e-15);
        GF_ASSERT_NEAR(n[0] * t[1] - n[1] * t[0], o[2], 1e-15);
        gf_contacts_free(&c);
        gf_particles_free(&p);
    }
    gf_linkcells_free(&lc);
}

/* Geometry of one sphere-sphere and one sphere-wall contact. */
static void test_contact_frame(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    int glass;
    GF_ASSERT_OK(gf_materials_add(&m, "glass", 2500, 0.3, &glass));
    GF_ASSERT_OK(gf_materials_set_friction(&m, 0, glass, 0.7));
    gf_walls w;
    gf_walls_init(&w);
    const double p0[3] = {0, 0, 0}, nz[3] = {0, 0, 2};
    GF_ASSERT_OK(gf_walls_add(&w, p0, nz, NULL, 0));
    gf_particles p;
    gf_particles_init(&p);
    gf_particle rec;
    const double c1[3] = {0, 0, 0.9}, c2[3] = {0, 1.9, 0.9};
    gf_particle_make_sphere(&rec, 7, c1, 1.0, 2500, glass);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_particle_make_sphere(&rec, 8, c2, 1.0, 2500, glass);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_contacts c;
    gf_contacts_init(&c);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, 0.0, &lc, &c));
    assert_int_equal(c.count, 3);
    for (size_t j = 0; j < c.count; ++j) {
        double n[3] = {c.n[0][j], c.n[1][j], c.n[2][j]}, t[3] = {c.t[0][j], c.t[1][j], c.t[2][j]},
               o[3] = {c.o[0][j], c.o[1][j], c.o[2][j]};
        /* Right-handed orthonormal frame. */
        GF_ASSERT_NEAR(n[0] * n[0] + n[1] * n[1] + n[2] * n[2], 1.0, 1e-15);
        GF_ASSERT_NEAR(n[0] * t[0] + n[1] * t[1] + n[2] * t[2], 0.0, 1e-15);
        GF_ASSERT_NEAR(n[1] * t[2] - n[2] * t[1], o[0], 1e-15);
        if (c.i2[j] < 0) {
            GF_ASSERT_NEAR(c.gap[j], -0.1, 1e-15);
            GF_ASSERT_NEAR(n[2], 1.0, 1e-15);
            GF_ASSERT_NEAR(c.mu[j], 0.7, 0);
            /* The contact point is mid-way through the overlap: z = -0.05. */
            GF_ASSERT_NEAR(p.x[2][c.i1[j]] + c.r1[2][j], -0.05, 1e-15);
        } else {
            GF_ASSERT_NEAR(c.gap[j], -0.1, 1e-15);
            GF_ASSERT_NEAR(c.mu[j], 0.3, 0);
            /* The normal points from body 2 to body 1. */
            double d = p.x[1][c.i1[j]] - p.x[1][c.i2[j]];
            GF_ASSERT_NEAR(n[1], d > 0 ? 1.0 : -1.0, 1e-15);
            GF_ASSERT_NEAR(c.r1[1][j] - c.r2[1][j], p.x[1][c.i2[j]] - p.x[1][c.i1[j]], 1e-15);
        }
    }
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* Per-pair speculation splits the pairs within the margin into contacts (gap < tolerance + dt
 * times the closing speed at detection, gravity's step counted against the geometry) and near
 * pairs (the others), each found once, the contacts as without speculation. */
static void test_speculation_partition(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double lo[3] = {0, 0, 0}, nz[3] = {0, 0, 1}, vw[3] = {0.3, 0, 0.2};
    const double bl[3] = {0.4, 0.4, 0.4}, bh[3] = {0.6, 0.6, 0.6}, cc[3] = {0.2, 0.8, 0.5};
    GF_ASSERT_OK(gf_walls_add(&w, lo, nz, vw, 0)); /* a moving floor */
    GF_ASSERT_OK(gf_walls_add_box(&w, bl, bh, 0));
    GF_ASSERT_OK(gf_walls_add_cylinder(&w, cc, nz, 0.1, 0.5, 0));
    gf_particles p;
    random_system(&p, 4242, 3000, 300, 1.0, 0.01, 0.03);
    uint64_t rng = 99;
    size_t np = p.n_local + p.n_ghost;
    for (size_t i = 0; i < np; ++i)
        for (int d = 0; d < 3; ++d)
            p.v[d][i] = gf_test_uniform(&rng, -1.0, 1.0);
    const double margin = 0.02, tol = 0.002, dt = 0.01, g[3] = {0, 0, -9.81};
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    gf_contacts all, spec;
    gf_contacts_init(&all);
    gf_contacts_init(&spec);
    spec.speculate = 1;
    spec.spec_tolerance = tol;
    spec.spec_dt = dt;
    for (int d = 0; d < 3; ++d)
        spec.spec_gdt[d] = dt * g[d];
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &all));
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &spec));
    assert_true(spec.count > 100 && spec.nnear > 100); /* both kinds really occur */
    assert_int_equal(spec.count + spec.nnear, all.count);
    /* The closing speed of every pair of the full set decides where it went. */
    size_t ncontact = 0, nnear = 0;
    for (size_t j = 0; j < all.count; ++j) {
        int32_t a = all.i1[j], b = all.i2[j];
        double va[3], vb[3];
        for (int d = 0; d < 3; ++d) {
            va[d] = p.v[d][a] + (b < 0 ? dt * g[d] : 0.0);
            vb[d] = b >= 0 ? p.v[d][b] : w.velocity[-1 - b][d];
        }
        double closing = 0.0;
        for (int d = 0; d < 3; ++d)
            closing -= (va[d] - vb[d]) * all.n[d][j];
        int contact = all.gap[j] < tol + dt * fmax(closing, 0.0);
        /* Find it in the one set it belongs to (by bodies; spheres have one point per pair). */
        size_t found = 0;
        if (contact) {
            for (size_t q = 0; q < spec.count; ++q)
                if (spec.i1[q] == a && spec.i2[q] == b) {
                    found++;
                    assert_true(spec.gap[q] == all.gap[j]);
                    for (int d = 0; d < 3; ++d)
                        assert_true(spec.n[d][q] == all.n[d][j] && spec.r1[d][q] == all.r1[d][j]);
                }
            ncontact++;
        } else {
            for (size_t q = 0; q < spec.nnear; ++q)
                if (spec.near1[q] == a && spec.near2[q] == b) {
                    found++;
                    assert_true(spec.near_gap[q] == all.gap[j]);
                }
            nnear++;
        }
        assert_int_equal(found, 1);
    }
    assert_int_equal(ncontact, spec.count);
    assert_int_equal(nnear, spec.nnear);
    gf_contacts_free(&all);
    gf_contacts_free(&spec);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* The spatial sort keeps every particle as it was and orders them by cell, x fastest, then y,
 * then z (the order in which detection visits its cells), by id within a cell. */
static void test_spatial_sort(void **state) {
    (void)state;
    gf_particles p, ref;
    const size_t n = 3000;
    const double cell = 0.07;
    random_system(&p, 77, n, 0, 1.0, 0.005, 0.03);
    random_system(&ref, 77, n, 0, 1.0, 0.005, 0.03);
    for (size_t i = 0; i < n; ++i) { /* distinct values: every array must travel */
        p.v[i % 3][i] = ref.v[i % 3][i] = (double)i;
        p.material[i] = ref.material[i] = (int32_t)(i % 7);
        p.shape[i] = ref.shape[i] = (int32_t)(i % 5);
        p.clump[i] = ref.clump[i] = (int32_t)i;
    }
    GF_ASSERT_OK(gf_particles_sort(&p, cell));
    assert_int_equal(p.n_local, n);
    double lo[3] = {INFINITY, INFINITY, INFINITY};
    for (int d = 0; d < 3; ++d)
        for (size_t i = 0; i < n; ++i)
            lo[d] = fmin(lo[d], ref.x[d][i]);
    long prev[3] = {-1, -1, -1};
    int64_t prev_id = -1;
    char *seen = calloc(n, 1);
    for (size_t i = 0; i < n; ++i) {
        int64_t id = p.id[i];
        assert_true(id >= 0 && (size_t)id < n && !seen[id]);
        seen[id] = 1;
        gf_particle a, b;
        memset(&a, 0, sizeof a); /* padding too: compared as memory */
        memset(&b, 0, sizeof b);
        gf_particles_get(&p, i, &a);
        gf_particles_get(&ref, (size_t)id, &b); /* random_system gives particle i the id i */
        assert_memory_equal(&a, &b, sizeof a);
        long c[3];
        for (int d = 0; d < 3; ++d)
            c[d] = (long)floor((p.x[d][i] - lo[d]) / cell);
        /* Lexicographic in (z, y, x), then by id. */
        int order = 0;
        for (int d = 2; d >= 0 && order == 0; --d)
            order = (c[d] > prev[d]) - (c[d] < prev[d]);
        assert_true(order > 0 || (order == 0 && id > prev_id));
        memcpy(prev, c, sizeof c);
        prev_id = id;
    }
    free(seen);
    /* Ghosts' places are the exchange's: a sort with ghosts present is refused. */
    gf_particle g;
    gf_particles_get(&ref, 0, &g);
    GF_ASSERT_OK(gf_particles_add_ghost(&p, &g));
    assert_int_equal(gf_particles_sort(&p, cell), GF_ERR_STATE);
    gf_particles_free(&p);
    gf_particles_free(&ref);
}

/* The cell of a centre in the grid gf_linkcells_order promises: cells 2 r_max + margin wide
 * from the owned particles' lowest corner, as many whole cells along each axis as fit (at least
 * one; beyond the last, the last), numbered x fastest, then y, then z. */
static long cell_key(const double x[3], const double lo[3], const double hi[3], double h) {
    long key = 0;
    for (int d = 2; d >= 0; --d) {
        long dim = (long)floor((hi[d] - lo[d]) / h);
        dim = dim < 1 ? 1 : dim;
        long k = (long)floor((x[d] - lo[d]) / h);
        key = key * dim + (k < dim ? k : dim - 1);
    }
    return key;
}

/* Contacts follow space whatever the particles' memory order (random here: random_system
 * places particle i anywhere): first the walls' contacts, then the pairs, each cell by cell of
 * the owned particle with the smaller index (within a cell by that index, then by the other),
 * so a Gauss-Seidel sweep meets bodies near the ones it has just read. */
static void test_contacts_follow_space(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double lo_wall[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&w, lo_wall, up, NULL, 0));
    gf_particles p;
    const double margin = 0.01;
    random_system(&p, 2024, 3000, 400, 1.0, 0.02, 0.05);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double rmax = 0.0;
    for (size_t i = 0; i < p.n_local; ++i) {
        rmax = fmax(rmax, p.radius[i]);
        for (int d = 0; d < 3; ++d) {
            lo[d] = fmin(lo[d], p.x[d][i]);
            hi[d] = fmax(hi[d], p.x[d][i]);
        }
    }
    const double h = 2.0 * rmax + margin;
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    lc.skin = 0.02;
    gf_contacts c;
    gf_contacts_init(&c);
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    size_t walls = 0, changes = 0, jumps = 0;
    long prev[3] = {-1, -1, -1}; /* cell, smaller index, larger index of the last contact */
    int in_pairs = 0;
    for (size_t j = 0; j < c.count; ++j) {
        int32_t a = c.i1[j], b = c.i2[j];
        if (b < 0) {
            assert_false(in_pairs); /* every wall contact before the pairs */
            ++walls;
        } else if (!in_pairs) {
            in_pairs = 1;
            prev[0] = prev[1] = prev[2] = -1;
        }
        int32_t first = b >= 0 && b < a ? b : a, second = b >= 0 && b < a ? a : b;
        assert_true((size_t)first < p.n_local);
        const double x[3] = {p.x[0][first], p.x[1][first], p.x[2][first]};
        long now[3] = {cell_key(x, lo, hi, h), first, second};
        int order = 0;
        for (int k = 0; k < 3 && order == 0; ++k)
            order = (now[k] > prev[k]) - (now[k] < prev[k]);
        assert_true(order >= 0); /* equal: more points of one pair */
        /* The next first particle: mostly far away in memory (the input is scrambled). */
        changes += j > 0 && now[1] != prev[1];
        jumps += j > 0 && labs(now[1] - prev[1]) > 100;
        memcpy(prev, now, sizeof now);
    }
    assert_true(walls > 20 && c.count > 3000 + walls);
    assert_true(jumps > changes / 2); /* the input really is scrambled */
    /* Pairs asked of a list never built, or of more particles than it holds: an error, not an
     * empty answer. */
    gf_linkcells fresh;
    gf_linkcells_init(&fresh);
    size_t nh = 1;
    assert_int_equal(gf_linkcells_within(&fresh, 10, margin, &nh), GF_ERR_STATE);
    assert_int_equal(nh, 0);
    assert_int_equal(gf_linkcells_within(&lc, lc.nref + 1, margin, &nh), GF_ERR_STATE);
    gf_error_clear();
    gf_linkcells_free(&fresh);
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* The contacts of two detections, the same in content and order, bit for bit. */
static void check_identical(const gf_contacts *x, const gf_contacts *y) {
    assert_int_equal(x->count, y->count);
    for (size_t j = 0; j < x->count; ++j) {
        assert_int_equal(x->i1[j], y->i1[j]);
        assert_int_equal(x->i2[j], y->i2[j]);
        assert_true(x->gap[j] == y->gap[j]);
        for (int d = 0; d < 3; ++d)
            assert_true(x->n[d][j] == y->n[d][j]);
    }
}

/* A pair list kept between detections (with a skin) gives what a search from scratch gives,
 * in the same order, while the particles random-walk, now and then some leave (the last
 * particle takes a leaver's place) and the particles are sorted anew: every step the same
 * contacts as a fresh workspace without skin and as the all-pairs search. The list is searched
 * again only every few steps and renamed after removals and sorts. */
static void test_pair_list_reuse(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    gf_particles p;
    const double rmax = 0.03, margin = 0.004;
    random_system(&p, 4242, 2500, 0, 1.0, 0.01, rmax);
    gf_linkcells kept;
    gf_linkcells_init(&kept);
    kept.skin = 0.5 * rmax;
    gf_contacts a, b, c;
    gf_contacts_init(&a);
    gf_contacts_init(&b);
    gf_contacts_init(&c);
    uint64_t rng = 99;
    int64_t next_id = 100000;
    const int steps = 60;
    for (int step = 0; step < steps; ++step) {
        gf_linkcells fresh;
        gf_linkcells_init(&fresh);
        GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &kept, &a));
        GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &fresh, &b));
        GF_ASSERT_OK(gf_contact_detect_brute(&p, &w, &m, margin, &c));
        assert_true(a.count > 500);
        check_identical(&a, &b);
        check_same(&p, &a, &c);
        gf_linkcells_free(&fresh);
        /* A random walk of up to a tenth of the skin per step and axis. */
        for (size_t i = 0; i < p.n_local; ++i)
            for (int d = 0; d < 3; ++d)
                p.x[d][i] += gf_test_uniform(&rng, -0.05, 0.05) * rmax;
        if (step % 7 == 3)
            for (int k = 0; k < 5; ++k)
                gf_particles_remove(&p, (size_t)gf_test_uniform(&rng, 0, (double)p.n_local - 1));
        if (step % 20 == 10)
            GF_ASSERT_OK(gf_particles_sort(&p, 2.0 * rmax));
        /* Newcomers: two touching each other now and then (renamed in), twenty once (a
         * search). */
        int come = step % 5 == 1 ? 2 : (step == 33 ? 20 : 0);
        double x[3];
        for (int k = 0; k < come; ++k) {
            gf_particle rec;
            for (int d = 0; d < 3; ++d)
                x[d] = k % 2 ? x[d] + (d == 0 ? 1.9 * rmax : 0.0) : gf_test_uniform(&rng, 0, 1);
            gf_particle_make_sphere(&rec, next_id++, x,
                                    k % 2 ? rmax : gf_test_uniform(&rng, 0.01, rmax), 1000.0, 0);
            GF_ASSERT_OK(gf_particles_add(&p, &rec));
        }
    }
    assert_true(kept.builds > 2 && kept.builds < steps / 3);
    assert_true(kept.renames >= 8);
    assert_int_equal(kept.updates, steps);
    gf_contacts_free(&a);
    gf_contacts_free(&b);
    gf_contacts_free(&c);
    gf_linkcells_free(&kept);
    gf_particles_free(&p);
}

/* Two spheres approaching head-on, each by a quarter of the skin per step, starting just
 * beyond the list's reach: the pair must be a contact as soon as its gap is within the margin,
 * although neither sphere alone has moved by the skin yet (both moves count), and a new
 * particle is found at once. */
static void test_pair_list_head_on(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double r = 0.01, margin = 0.001, skin = 0.004, step = 0.25 * skin;
    gf_particles p;
    gf_particles_init(&p);
    double gap0 = margin + skin + 1e-6;
    for (int k = 0; k < 2; ++k) {
        gf_particle rec;
        double x[3] = {k ? r + 0.5 * gap0 : -r - 0.5 * gap0, 0.0, 0.0};
        gf_particle_make_sphere(&rec, k, x, r, 1000.0, 0);
        GF_ASSERT_OK(gf_particles_add(&p, &rec));
    }
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    lc.skin = skin;
    gf_contacts c;
    gf_contacts_init(&c);
    int found = 0;
    for (int k = 0; k < 8; ++k) {
        double gap = p.x[0][1] - p.x[0][0] - 2.0 * r;
        GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
        assert_int_equal(c.count, gap < margin ? 1 : 0);
        found += (int)c.count;
        p.x[0][0] += step;
        p.x[0][1] -= step;
    }
    assert_true(found > 0);
    /* A third sphere touching the first: a new particle, found although nothing moved, by the
     * renaming (no search). */
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c)); /* the last move's list */
    gf_particle rec;
    double x[3] = {p.x[0][0], 2.0 * r, 0.0};
    gf_particle_make_sphere(&rec, 7, x, r, 1000.0, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    long builds = lc.builds, renames = lc.renames;
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    gf_contacts ref;
    gf_contacts_init(&ref);
    GF_ASSERT_OK(gf_contact_detect_brute(&p, &w, &m, margin, &ref));
    check_same(&p, &c, &ref);
    assert_int_equal(lc.builds, builds);
    assert_int_equal(lc.renames, renames + 1);
    /* A workspace reused for particles of other sizes (same ids, same places) searches again:
     * a far sphere grown to reach the others is in contact with them. */
    double far[3] = {0.0, 20.0 * r, 0.0};
    gf_particle_make_sphere(&rec, 8, far, r, 1000.0, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    p.radius[3] = 20.0 * r;
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    GF_ASSERT_OK(gf_contact_detect_brute(&p, &w, &m, margin, &ref));
    assert_true(ref.count > 2);
    check_same(&p, &c, &ref);
    gf_contacts_free(&ref);
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* A particle that comes while the list is kept (inflow, a ghost coming into range) joins it
 * with every pair it may form before the next search: here an old sphere first moved away from
 * where the new one appears, just beyond the list's reach of it, then both move towards each
 * other as far as the list allows. They meet within the margin, and the contact is found. */
static void test_pair_list_new_particle(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    const double r = 0.01, margin = 0.001, skin = 0.004, s = 0.45 * skin;
    gf_particles p;
    gf_particles_init(&p);
    gf_particle rec;
    const double o[3] = {0.0, 0.0, 0.0}, far[3] = {0.0, 100.0 * r, 0.0};
    gf_particle_make_sphere(&rec, 0, o, r, 1000.0, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_particle_make_sphere(&rec, 1, far, r, 1000.0, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    lc.skin = skin;
    gf_contacts c, ref;
    gf_contacts_init(&c);
    gf_contacts_init(&ref);
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    p.x[0][0] = -s;
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    const double x[3] = {-s + 2.0 * r + margin + skin + 1e-7, 0.0, 0.0};
    gf_particle_make_sphere(&rec, 2, x, r, 1000.0, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    assert_int_equal(c.count, 0);
    p.x[0][0] = s;
    p.x[0][2] -= s;
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, margin, &lc, &c));
    GF_ASSERT_OK(gf_contact_detect_brute(&p, &w, &m, margin, &ref));
    assert_int_equal(ref.count, 1);
    check_same(&p, &c, &ref);
    assert_int_equal(lc.builds, 1); /* all of it with the first list */
    gf_contacts_free(&ref);
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* A capsule tilted over the floor, its lower end resting on it and its upper end 0.4 mm up
 * (beyond the step's margin), is set spinning within the step (as an impact would) so that its
 * upper end comes down through the floor by the step's end. Detection before the spin holds the
 * lower end only; gf_contact_recheck with the spin adds the upper end: its point is the
 * capsule's material point that ends lowest, where it is now, its gap the end's less the turn's
 * linear part (closed form from the turned axis), and nothing once that point is held. A spin
 * that lifts the upper end adds nothing, nor does one that detection took already. */
static void test_recheck_turning(void **state) {
    (void)state;
    gf_materials m;
    gf_materials_init(&m);
    int steel;
    GF_ASSERT_OK(gf_materials_add(&m, "steel", 7800, 0.3, &steel));
    gf_walls w;
    gf_walls_init(&w);
    const double p0[3] = {0, 0, 0}, nz[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&w, p0, nz, NULL, 0));
    const double r = 0.002, half = 0.01, tilt = 0.02, dt = 1e-3, margin = 1e-4;
    const gf_shape cap = gf_shape_capsule(r, half);
    /* the axis (cos tilt, 0, sin tilt), the lower end at (x - half axis) resting on the floor */
    const double ax[3] = {cos(tilt), 0.0, sin(tilt)};
    const double x[3] = {0.0, 0.0, r + half * ax[2]};
    gf_particle rec;
    gf_particle_make(&rec, 1, x, &cap, NULL, 7800, steel);
    const double half_tilt = 0.5 * (M_PI / 2 - tilt); /* the body z axis onto ax: about y */
    rec.q[0] = cos(half_tilt);
    rec.q[1] = 0.0;
    rec.q[2] = sin(half_tilt);
    rec.q[3] = 0.0;
    gf_particles p;
    gf_particles_init(&p);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_body_pose pose;
    gf_shape sh = gf_particles_shape(&p, 0);
    gf_particles_pose(&p, 0, &sh, &pose);
    double axis[3];
    gf_quat_rotate(pose.q, (double[]){0, 0, 1}, axis);
    for (int k = 0; k < 3; ++k)
        GF_ASSERT_NEAR(axis[k], ax[k], 1e-12);
    gf_contacts c;
    gf_contacts_init(&c);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    GF_ASSERT_OK(gf_contact_detect_step(&p, &w, &m, margin, dt, &lc, &c));
    assert_int_equal(c.count, 1); /* the lower end */
    GF_ASSERT_NEAR(c.gap[0], 0.0, 1e-15);
    /* the solve spun it about y so that the upper end comes down 0.6 mm within the step */
    const double wy = 6e-4 / (half * dt);
    size_t added = 0;
    p.w[1][0] = -wy; /* lifts the upper end */
    GF_ASSERT_OK(gf_contact_recheck(&p, NULL, &w, &m, margin, dt, &lc, &c, &added));
    assert_int_equal(added, 0);
    p.w[1][0] = wy;
    /* a spin detection took already (w0, its angular velocities then): left to detection */
    const double *const w0[3] = {p.w[0], p.w[1], p.w[2]};
    GF_ASSERT_OK(gf_contact_recheck(&p, w0, &w, &m, margin, dt, &lc, &c, &added));
    assert_int_equal(added, 0);
    GF_ASSERT_OK(gf_contact_recheck(&p, NULL, &w, &m, margin, dt, &lc, &c, &added));
    assert_int_equal(added, 1);
    assert_int_equal(c.count, 2);
    assert_true(c.point[1] >= GF_CONTACT_RECHECK_POINT);
    /* closed form: the upper end's centre turned by theta = wy dt about y (from x) */
    const double th = wy * dt, up[3] = {half * ax[0], 0.0, half * ax[2]};
    const double ue[3] = {cos(th) * up[0] + sin(th) * up[2], 0.0,
                          -sin(th) * up[0] + cos(th) * up[2]};
    const double g_end = x[2] + ue[2] - r;
    assert_true(g_end < -1e-4);
    /* the material point r below the upper end's centre at the end, turned back */
    const double me[3] = {ue[0], 0.0, ue[2] - r};
    const double mn[3] = {cos(th) * me[0] - sin(th) * me[2], 0.0,
                          sin(th) * me[0] + cos(th) * me[2]};
    const double lin_z = -(th * mn[0]); /* (0, th, 0) x mn, its z */
    GF_ASSERT_NEAR(c.gap[1], g_end - lin_z, 1e-12);
    GF_ASSERT_NEAR(c.n[2][1], 1.0, 1e-12);
    /* on the capsule's material point (it turns, the floor does not) */
    GF_ASSERT_NEAR(c.r1[0][1], mn[0], 1e-12);
    GF_ASSERT_NEAR(c.r1[2][1] + 0.5 * c.gap[1], mn[2], 1e-12);
    /* held now: nothing more */
    GF_ASSERT_OK(gf_contact_recheck(&p, NULL, &w, &m, margin, dt, &lc, &c, &added));
    assert_int_equal(added, 0);
    gf_contacts_free(&c);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spatial_sort),           cmocka_unit_test(test_speculation_partition),
        cmocka_unit_test(test_matches_brute_force),    cmocka_unit_test(test_contact_frame),
        cmocka_unit_test(test_nonfinite_position),     cmocka_unit_test(test_frame_every_direction),
        cmocka_unit_test(test_pair_list_reuse),        cmocka_unit_test(test_pair_list_head_on),
        cmocka_unit_test(test_pair_list_new_particle), cmocka_unit_test(test_contacts_follow_space),
        cmocka_unit_test(test_recheck_turning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
