/* Insertion regions and outlets (issue 15) at 1, 2 and 4 ranks: the rate asked for, no overlap
 * at insertion, the same particles on any rank count, outlet counts against analytic
 * trajectories, the particle balance of a silo, and restarts that continue the counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/bodies.h"
#include "granflow/collide.h"
#include "config/config.h"
#include "io/io.h"
#include "core/log.h"
#include "sim/sim.h"
#include "diag/stats.h"
#include "test_util.h"

#define P gf_test_par

static void make_sim(gf_sim *sim, const gf_par *par, const char *src, int generate) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(src, strlen(src), "insertion.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, par));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, generate));
    gf_config_destroy(cfg);
}

static int cmp_id(const void *a, const void *b) {
    const gf_particle *p = a, *q = b;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* Every rank's owned particles, sorted by id, on every rank (*n of them). */
static gf_particle *gather_all(const gf_sim *sim, const gf_par *par, size_t *n) {
    const gf_particles *p = &sim->particles;
    gf_particle *mine = malloc((p->n_local + 1) * sizeof *mine);
    assert_non_null(mine);
    for (size_t i = 0; i < p->n_local; ++i)
        gf_particles_get(p, i, &mine[i]);
    void *all = NULL;
    size_t *off = NULL;
    GF_ASSERT_OK(gf_par_gather_bytes(par, 0, mine, p->n_local * sizeof *mine, &all, &off));
    free(mine);
    long long bytes = par->rank == 0 ? (long long)off[par->size] : 0;
    MPI_Bcast(&bytes, 1, MPI_LONG_LONG, 0, par->comm);
    if (par->rank != 0)
        all = malloc((size_t)bytes + 1);
    assert_non_null(all);
    MPI_Bcast(all, (int)bytes, MPI_BYTE, 0, par->comm);
    free(off);
    *n = (size_t)bytes / sizeof(gf_particle);
    qsort(all, *n, sizeof(gf_particle), cmp_id);
    return all;
}

static int64_t global_count(const gf_sim *sim) {
    int64_t n = (int64_t)sim->particles.n_local;
    GF_ASSERT_OK(gf_par_allreduce_i64(sim->par, &n, 1, GF_PAR_SUM));
    return n;
}

/* ------------------------------------------------------------------------------------------ */

/* Particles at rest without gravity stay where they were put: the region fills at the rate. */
static const char *rate_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.04, 0.04, 0.04 >; }\n"
    "Materials { Material { name glass; density 2500; } }\n"
    "Insert { region box; min < 0.005, 0.005, 0.005 >; max < 0.035, 0.035, 0.035 >;\n"
    "  rate 4000; start 0.01; stop 0.06; radius 0.0008; material glass; seed 5; every 3; }\n"
    "Insert { region cylinder; centre < 0.02, 0.02, 0.02 >; axis < 1, 1, 0 >;\n"
    "  cylinder_radius 0.004; length 0.04; mass_rate 0.003; size uniform; size_min 0.5;\n"
    "  size_max 1; radius 0.0004; seed 9; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 2e-4; }\n"
    "Output { check_every 50; }\n";

static void test_rate(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim, &P, rate_cfg, 1);
    const gf_insertion *a = &sim.inserts.item[0], *b = &sim.inserts.item[1];
    const int steps = 400; /* 0.08 s */
    double mass_due_mid = 0.0;
    for (int s = 1; s <= steps; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        if (s == 200)
            mass_due_mid = b->mass;
    }
    /* Rate: 4000/s from 0.01 to 0.06 s: 200 particles, whatever the events (every 3 steps). */
    double want = 4000 * (0.06 - 0.01);
    assert_true(fabs((double)a->inserted - want) <= 0.01 * want);
    assert_int_equal(a->inserted, 200);
    assert_int_equal(a->carried, 0);
    /* Mass rate: 3 g/s over 0.08 s, the masses of the particles drawn (uniform sizes). */
    double mwant = 0.003 * steps * 2e-4;
    assert_true(fabs(b->mass - mwant) <= 0.01 * mwant);
    assert_true(fabs(mass_due_mid - 0.5 * mwant) <= 0.01 * mwant);
    /* The particles drawn do differ in mass (the count is not the mass over one mass). */
    double m1 = 2500 * 4.0 / 3.0 * M_PI * pow(0.0004, 3);
    assert_true(b->inserted > (int64_t)(1.5 * mwant / m1));
    /* Every particle inserted is present (nothing left) and the accounting agrees. */
    assert_int_equal(global_count(&sim), a->inserted + b->inserted);
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    gf_sim_free(&sim);
}

/* ------------------------------------------------------------------------------------------ */

/* A dense insertion of boxes and capsules in random orientations among fixed spheres of a
 * lattice and an obstacle: after each event, no two bodies overlap and none overlaps a wall or
 * the obstacle, by brute force over all pairs with the exact shapes. */
static const char *dense_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.02, 0.02, 0.02 >;\n"
    "  Box { min < 0.008, 0.008, 0.0 >; max < 0.012, 0.012, 0.006 >; } }\n"
    "Materials { Material { name glass; density 2500; } }\n"
    "Lattice { count < 4, 4, 2 >; origin < 0.0025, 0.0025, 0.004 >; spacing 0.005;\n"
    "  radius 0.001; material glass; }\n"
    "Insert { region box; min < 0, 0, 0 >; max < 0.02, 0.02, 0.01 >;\n"
    "  volume_fraction 0.15; orientation random; seed 11;\n"
    "  Kind { shape box; half_extents < 0.0008, 0.0005, 0.0004 >; fraction 0.5; }\n"
    "  Kind { shape capsule; radius 0.0004; half_length 0.0006; fraction 0.5; } }\n"
    "Insert { region cylinder; centre < 0.01, 0.01, 0.015 >; cylinder_radius 0.01;\n"
    "  length 0.01; rate 20000; every 2; seed 12; orientation random;\n"
    "  shape box; half_extents < 0.001, 0.0005, 0.0005 >; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 1e-4; }\n"
    "Output { check_every 1; }\n";

static void assert_no_overlap(const gf_sim *sim) {
    size_t n;
    gf_particle *all = gather_all(sim, sim->par, &n);
    if (sim->par->rank == 0) {
        /* Exact shapes; spheres by their distance. */
        for (size_t i = 0; i < n; ++i) {
            gf_body_pose a = {&all[i].shape,
                              &sim->clumps,
                              {all[i].x[0], all[i].x[1], all[i].x[2]},
                              {all[i].q[0], all[i].q[1], all[i].q[2], all[i].q[3]}};
            double depth;
            int which;
            GF_ASSERT_OK(gf_bodies_wall_overlap(&a, &sim->walls, &depth, &which));
            if (depth > 1e-12)
                fail_msg("particle %lld overlaps geometry body %d by %g", (long long)all[i].id,
                         which, depth);
            for (size_t j = i + 1; j < n; ++j) {
                double d2 = 0.0;
                for (int d = 0; d < 3; ++d)
                    d2 += (all[i].x[d] - all[j].x[d]) * (all[i].x[d] - all[j].x[d]);
                double rr = all[i].radius + all[j].radius;
                if (d2 >= rr * rr)
                    continue;
                gf_body_pose b = {&all[j].shape,
                                  &sim->clumps,
                                  {all[j].x[0], all[j].x[1], all[j].x[2]},
                                  {all[j].q[0], all[j].q[1], all[j].q[2], all[j].q[3]}};
                GF_ASSERT_OK(gf_collide_overlap(&a, &b, &depth));
                if (depth > 0.0)
                    fail_msg("particles %lld and %lld overlap by %g", (long long)all[i].id,
                             (long long)all[j].id, depth);
            }
        }
    }
    free(all);
}

static void test_no_overlap(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim, &P, dense_cfg, 1);
    int events = 0;
    int64_t before = 0;
    for (int s = 1; s <= 8; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        int64_t now = sim.inserts.item[0].events + sim.inserts.item[1].events;
        if (now > before) {
            assert_no_overlap(&sim);
            events++;
        }
        before = now;
    }
    assert_true(events >= 4);
    /* The volume fraction was reached at the first event: 15% of the region is particles. */
    const gf_insertion *a = &sim.inserts.item[0];
    assert_int_equal(a->events, 1);
    assert_int_equal(a->carried, 0);
    assert_true(a->inserted > 500);
    assert_true(a->quantity >= 0.15 * 0.02 * 0.02 * 0.01);
    gf_sim_free(&sim);
}

/* An absurd amount into a small region: count 1e9 (and rate 1e15) of 1 mm spheres into a
 * 1 cm cube, which holds at most floor(1e-6 m^3 / (4/3 pi 1e-9 m^3)) = 238 of them. An event
 * wants no more than that, so it tries 20 candidates per particle that can fit, not per particle
 * due (2e10 attempts per event before: the run looked hung), places what fits and carries the
 * rest over with a warning. */
static void test_absurd_amount_bounded_by_capacity(void **state) {
    (void)state;
    const char *amounts[2] = {"count 1e9", "rate 1e15"};
    for (int k = 0; k < 2; ++k) {
        char text[2048];
        snprintf(text, sizeof text,
                 "Domain { min < 0, 0, 0 >; max < 0.04, 0.04, 0.04 >; }\n"
                 "Materials { Material { name glass; density 2500; } }\n"
                 "Insert { region box; min < 0.01, 0.01, 0.01 >; max < 0.02, 0.02, 0.02 >;\n"
                 "  %s; radius 0.001; material glass; seed 3; }\n"
                 "Physics { gravity < 0, 0, 0 >; }\n"
                 "Time { dt 2e-4; }\n",
                 amounts[k]);
        gf_sim sim;
        make_sim(&sim, &P, text, 1);
        const gf_insertion *a = &sim.inserts.item[0];
        assert_true(a->capacity == floor(1e-6 / (4.0 / 3.0 * M_PI * 1e-9)));
        gf_log_set_quiet(1);
        for (int s = 1; s <= 3; ++s)
            GF_ASSERT_OK(gf_sim_step(&sim));
        gf_log_set_quiet(0);
        assert_true(a->inserted > 0 && (double)a->inserted <= a->capacity);
        assert_true(a->carried > 0);
        assert_int_equal(global_count(&sim), a->inserted);
        gf_sim_free(&sim);
    }
}

/* ------------------------------------------------------------------------------------------ */

/* The same ids and positions on this job's ranks as in a serial run (bitwise: nothing moves). */
static void test_rank_independent(void **state) {
    (void)state;
    gf_particle *ref = NULL, *got = NULL;
    size_t nref = 0, ngot = 0;
    for (int serial = 0; serial < 2; ++serial) {
        if (serial && P.rank != 0)
            continue;
        gf_par self = {MPI_COMM_SELF, 0, 1};
        const gf_par *par = serial ? &self : &P;
        gf_sim sim;
        make_sim(&sim, par, dense_cfg, 1);
        for (int s = 1; s <= 6; ++s)
            GF_ASSERT_OK(gf_sim_step(&sim));
        size_t n;
        gf_particle *all = gather_all(&sim, par, &n);
        if (serial) {
            ref = all;
            nref = n;
        } else {
            got = all;
            ngot = n;
        }
        gf_sim_free(&sim);
    }
    if (P.rank == 0) {
        assert_int_equal(ngot, nref);
        assert_true(nref > 500);
        for (size_t i = 0; i < nref; ++i) {
            assert_int_equal(got[i].id, ref[i].id);
            for (int d = 0; d < 3; ++d)
                assert_true(got[i].x[d] == ref[i].x[d]);
            for (int c = 0; c < 4; ++c)
                assert_true(got[i].q[c] == ref[i].q[c]);
            assert_true(got[i].radius == ref[i].radius);
        }
    }
    free(ref);
    free(got);
}

/* ------------------------------------------------------------------------------------------ */

/* A wavy sheet of triangles across the whole domain (an STL file written here), inside an
 * insertion box that spans the domain: under MPI a rank keeps only the triangles near its
 * subdomain, so a candidate near a triangle it dropped is judged by the rank that holds it. No
 * particle overlaps the whole sheet (brute force over every triangle), and the particles are
 * those of a serial run. */
#define SHEET_N 20 /* cells along x and y: 2 SHEET_N^2 triangles */
#define SHEET_NT (2 * SHEET_N * SHEET_N)

static void sheet_point(int i, int j, double x[3]) {
    x[0] = 0.04 * i / SHEET_N;
    x[1] = 0.04 * j / SHEET_N;
    x[2] = 0.01 + 0.004 * sin(2 * M_PI * x[0] / 0.02) * cos(2 * M_PI * x[1] / 0.025);
}

static void sheet(double *c) {
    size_t t = 0;
    for (int i = 0; i < SHEET_N; ++i)
        for (int j = 0; j < SHEET_N; ++j) {
            double a[3], b[3], d[3], e[3];
            sheet_point(i, j, a);
            sheet_point(i + 1, j, b);
            sheet_point(i + 1, j + 1, d);
            sheet_point(i, j + 1, e);
            const double *tri[2][3] = {{a, b, d}, {a, d, e}};
            for (int h = 0; h < 2; ++h, ++t)
                for (int k = 0; k < 3; ++k)
                    memcpy(&c[9 * t + 3 * k], tri[h][k], 3 * sizeof(double));
        }
}

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Distance from p to the triangle (a, b, c): the closest point by the Voronoi regions of its
 * corners, edges and face (Ericson, Real-Time Collision Detection, 5.1.5). */
static double point_triangle_distance(const double p[3], const double *a, const double *b,
                                      const double *c) {
    double ab[3], ac[3], ap[3], bp[3], cp[3], q[3];
    for (int d = 0; d < 3; ++d) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = p[d] - a[d];
        bp[d] = p[d] - b[d];
        cp[d] = p[d] - c[d];
    }
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap), d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double va = d3 * d6 - d5 * d4, vb = d5 * d2 - d1 * d6, vc = d1 * d4 - d3 * d2;
    double u = 0.0, v = 0.0; /* q = a + u ab + v ac */
    if (d1 <= 0 && d2 <= 0) {
        /* corner a */
    } else if (d3 >= 0 && d4 <= d3) {
        u = 1;
    } else if (d6 >= 0 && d5 <= d6) {
        v = 1;
    } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        u = d1 / (d1 - d3);
    } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        v = d2 / (d2 - d6);
    } else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) {
        double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        u = 1 - w;
        v = w;
    } else {
        double den = 1 / (va + vb + vc);
        u = vb * den;
        v = vc * den;
    }
    for (int d = 0; d < 3; ++d)
        q[d] = p[d] - (a[d] + u * ab[d] + v * ac[d]);
    return sqrt(dot3(q, q));
}

static void test_beside_mesh(void **state) {
    (void)state;
    static double corners[9 * SHEET_NT];
    sheet(corners);
    char dir[256], stl[300], src[4096];
    assert_int_equal(gf_test_mpi_tmpdir(dir, sizeof dir, "insmesh"), 0);
    snprintf(stl, sizeof stl, "%s/sheet.stl", dir);
    if (P.rank == 0) {
        FILE *f = fopen(stl, "w");
        assert_non_null(f);
        fprintf(f, "solid sheet\n");
        for (size_t t = 0; t < SHEET_NT; ++t) {
            fprintf(f, " facet normal 0 0 1\n  outer loop\n");
            for (int k = 0; k < 3; ++k)
                fprintf(f, "   vertex %.17g %.17g %.17g\n", corners[9 * t + 3 * k],
                        corners[9 * t + 3 * k + 1], corners[9 * t + 3 * k + 2]);
            fprintf(f, "  endloop\n endfacet\n");
        }
        fprintf(f, "endsolid sheet\n");
        assert_int_equal(fclose(f), 0);
    }
    /* The file is read on rank 0 (and in the serial run, on rank 0). */
    snprintf(src, sizeof src,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.04, 0.02 >; Mesh { file \"%s\"; } }\n"
             "Materials { Material { name glass; density 2500; } }\n"
             "Insert { region box; min < 0, 0, 0.002 >; max < 0.04, 0.04, 0.018 >;\n"
             "  count 400; radius 0.0008; material glass; seed 21; }\n"
             "Physics { gravity < 0, 0, 0 >; }\n"
             "Time { dt 1e-4; }\n"
             "Output { check_every 1; }\n",
             stl);
    gf_particle *ref = NULL, *got = NULL;
    size_t nref = 0, ngot = 0;
    int partial = 0; /* whether some rank holds only part of the sheet */
    for (int serial = 0; serial < 2; ++serial) {
        if (serial && P.rank != 0)
            continue;
        gf_par self = {MPI_COMM_SELF, 0, 1};
        const gf_par *par = serial ? &self : &P;
        gf_sim sim;
        make_sim(&sim, par, src, 1);
        for (int s = 1; s <= 2; ++s)
            GF_ASSERT_OK(gf_sim_step(&sim));
        assert_int_equal(sim.inserts.item[0].inserted, 400);
        assert_int_equal(global_count(&sim), 400);
        GF_ASSERT_OK(gf_sim_check_particles(&sim));
        if (!serial) {
            int64_t held = (int64_t)sim.walls.mesh[0]->nt;
            GF_ASSERT_OK(gf_par_allreduce_i64(par, &held, 1, GF_PAR_MIN));
            partial = held < SHEET_NT;
        }
        size_t n;
        gf_particle *all = gather_all(&sim, par, &n);
        if (serial) {
            ref = all;
            nref = n;
        } else {
            got = all;
            ngot = n;
        }
        gf_sim_free(&sim);
    }
    /* With more than one rank the sheet is split (else this test would test nothing). */
    assert_true(partial == (P.size > 1));
    if (P.rank == 0) {
        assert_int_equal(ngot, nref);
        int close = 0; /* particles within a diameter of the sheet */
        for (size_t i = 0; i < ngot; ++i) {
            double dmin = INFINITY;
            for (size_t t = 0; t < SHEET_NT; ++t)
                dmin =
                    fmin(dmin, point_triangle_distance(got[i].x, &corners[9 * t],
                                                       &corners[9 * t + 3], &corners[9 * t + 6]));
            if (dmin < got[i].radius * (1 - 1e-9))
                fail_msg("particle %lld at (%g, %g, %g) is %g from the sheet, radius %g",
                         (long long)got[i].id, got[i].x[0], got[i].x[1], got[i].x[2], dmin,
                         got[i].radius);
            close += dmin < 2 * got[i].radius;
        }
        assert_true(close > 40); /* some 60 */
        for (size_t i = 0; i < nref; ++i) {
            assert_int_equal(got[i].id, ref[i].id);
            for (int d = 0; d < 3; ++d)
                assert_true(got[i].x[d] == ref[i].x[d]);
            assert_true(got[i].radius == ref[i].radius);
        }
    }
    free(ref);
    free(got);
    gf_test_mpi_rmdir(dir);
}

/* ------------------------------------------------------------------------------------------ */

/* Free particles (no gravity, apart enough never to meet) drift through a tilted plane outlet and
 * a box outlet upstream of it: each outlet deletes exactly the particles whose analytic
 * trajectory x0 + v t enters it at a step's end, and weighs them. */
static const char *drift_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.1, 0.06, 0.06 >; }\n"
    "Materials { Material { name glass; density 2500; } }\n"
    "Lattice { count < 6, 6, 6 >; origin < 0.01, 0.01, 0.01 >; spacing 0.008;\n"
    "  radius 0.001; material glass; velocity < 1, 0.2, 0 >; spread < 0.03, 0.03, 0.03 >;\n"
    "  size uniform; size_min 0.5; size_max 1; seed 4; }\n"
    "Outlet { name tilted; region plane; point < 0.05, 0.03, 0.03 >; normal < 1, 0.5, 0.3 >; }\n"
    "Outlet { region box; min < 0.03, 0.02, 0.02 >; max < 0.036, 0.04, 0.0345 >; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 1e-4; }\n"
    "Output { check_every 50; }\n";

static void test_outlets(void **state) {
    (void)state;
    char dir[256], src[4096];
    assert_int_equal(gf_test_mpi_tmpdir(dir, sizeof dir, "outlets"), 0);
    snprintf(src, sizeof src, "%sStatistics { every 50; file \"%s/stats.csv\"; }\n", drift_cfg,
             dir);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(src, strlen(src), "outlets.cfg", &cfg));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
    gf_stats stats;
    GF_ASSERT_OK(gf_stats_configure(&stats, gf_config_root(cfg), &sim));
    GF_ASSERT_OK(gf_stats_start(&stats, &sim, 0));
    size_t n;
    gf_particle *init = gather_all(&sim, &P, &n);
    assert_int_equal(n, 216);
    const int steps = 300;
    for (int s = 1; s <= steps; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_stats_observe(&stats, &sim, 0));
    }
    gf_log_set_quiet(1);
    gf_stats_finish(&stats, &sim);
    gf_log_set_quiet(0);
    const double nrm = sqrt(1 + 0.25 + 0.09), normal[3] = {1 / nrm, 0.5 / nrm, 0.3 / nrm};
    const double pt[3] = {0.05, 0.03, 0.03}, bl[3] = {0.03, 0.02, 0.02},
                 bh[3] = {0.036, 0.04, 0.0345};
    int64_t want_n[2] = {0, 0};
    double want_m[2] = {0, 0};
    for (size_t i = 0; i < n; ++i)
        for (int k = 1; k <= steps; ++k) {
            double x[3], s = 0.0;
            int inbox = 1;
            for (int d = 0; d < 3; ++d) {
                x[d] = init[i].x[d] + init[i].v[d] * (k * 1e-4);
                s += (x[d] - pt[d]) * normal[d];
                inbox = inbox && x[d] >= bl[d] && x[d] <= bh[d];
            }
            int which = s > 0.0 ? 0 : inbox ? 1 : -1;
            if (which >= 0) {
                want_n[which]++;
                want_m[which] += 1.0 / init[i].inv_mass;
                break;
            }
        }
    assert_true(want_n[0] > 20 && want_n[1] > 5);
    int64_t got_n[GF_MAX_OUTLETS];
    double got_m[GF_MAX_OUTLETS];
    GF_ASSERT_OK(gf_outlets_totals(&sim.outlets, &P, got_n, got_m));
    assert_string_equal(sim.outlets.item[0].name, "tilted");
    assert_string_equal(sim.outlets.item[1].name, "outlet2");
    for (int k = 0; k < 2; ++k) {
        assert_int_equal(got_n[k], want_n[k]);
        GF_ASSERT_NEAR(got_m[k], want_m[k], 1e-12 * want_m[k]);
    }
    assert_int_equal(global_count(&sim), 216 - want_n[0] - want_n[1]);
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* The statistics file's columns of the outlets: their rates over the sample intervals add up
     * to the mass out (to the 6 digits written). */
    if (P.rank == 0) {
        char file[400], line[4096];
        snprintf(file, sizeof file, "%s/stats.csv", dir);
        FILE *f = fopen(file, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof line, f));
        int col[2] = {-1, -1}, k = 0;
        for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), ++k) {
            if (!strcmp(tok, "outlet_tilted_mass_rate"))
                col[0] = k;
            if (!strcmp(tok, "outlet_outlet2_mass_rate"))
                col[1] = k;
        }
        assert_true(col[0] > 0 && col[1] > col[0]);
        double sum[2] = {0, 0}, last = 0.0;
        int rows = 0;
        while (fgets(line, sizeof line, f)) {
            double v[64];
            int nv = 0;
            for (char *tok = strtok(line, ",\n"); tok && nv < 64; tok = strtok(NULL, ",\n"))
                v[nv++] = strtod(tok, NULL);
            assert_true(nv > col[1]);
            for (int o = 0; o < 2; ++o)
                sum[o] += v[col[o]] * (v[1] - last);
            last = v[1];
            rows++;
        }
        fclose(f);
        assert_int_equal(rows, steps / 50);
        for (int o = 0; o < 2; ++o)
            GF_ASSERT_NEAR(sum[o], want_m[o], 1e-5 * want_m[o]);
    }
    free(init);
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
    gf_test_mpi_rmdir(dir);
}

/* ------------------------------------------------------------------------------------------ */

/* A silo: particles inserted at the top fall under gravity past an obstacle onto an outlet plane
 * below the open bottom of a funnel of walls; every particle inserted is either present or
 * counted out. */
static const char *silo_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.02, 0.02, 0.06 >; wall_axes < 1, 1, 0 >;\n"
    "  Box { min < 0.007, 0.007, 0.025 >; max < 0.013, 0.013, 0.03 >; } }\n"
    "Materials { friction 0.3; Material { name glass; density 2500; } }\n"
    "Insert { region box; min < 0.001, 0.001, 0.045 >; max < 0.019, 0.019, 0.059 >;\n"
    "  rate 20000; stop 0.04; radius 0.0008; size uniform; size_min 0.7; size_max 1;\n"
    "  material glass; velocity < 0, 0, -0.5 >; spread < 0.1, 0.1, 0 >; every 5; seed 2; }\n"
    "Outlet { name bottom; region plane; point < 0, 0, 0.01 >; normal < 0, 0, -1 >; }\n"
    "Physics { gravity < 0, 0, -9.81 >; }\n"
    "Time { dt 2e-4; }\n"
    "Output { check_every 25; }\n";

static void test_silo(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim, &P, silo_cfg, 1);
    for (int s = 1; s <= 600; ++s) /* 0.12 s */
        GF_ASSERT_OK(gf_sim_step(&sim));
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    const gf_insertion *in = &sim.inserts.item[0];
    int64_t out_n[GF_MAX_OUTLETS];
    double out_m[GF_MAX_OUTLETS];
    GF_ASSERT_OK(gf_outlets_totals(&sim.outlets, &P, out_n, out_m));
    int64_t left = sim.outflow.left_box;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &left, 1, GF_PAR_SUM));
    assert_int_equal(in->inserted, 800); /* 20000/s for 0.04 s */
    assert_int_equal(left, 0);
    assert_true(out_n[0] > 100); /* the first particles fell 4.5 cm in 0.12 s */
    assert_int_equal(in->inserted, out_n[0] + global_count(&sim));
    /* The mass balance too. */
    double m = 0.0;
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        m += 1.0 / sim.particles.inv_mass[i];
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &m, 1, GF_PAR_SUM));
    GF_ASSERT_NEAR(in->mass, out_m[0] + m, 1e-9 * in->mass);
    gf_sim_free(&sim);
}

/* ------------------------------------------------------------------------------------------ */

/* Checkpoints in the middle of the silo's filling and later while it drains: the restarted runs
 * insert and delete the same particles as the uninterrupted one and continue its counts. */
static void test_restart(void **state) {
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mpi_tmpdir(dir, sizeof dir, "insertion"), 0);
    char path[2][400];
    /* Step 145: between two events (every 5 steps), insertion under way, nothing out yet; step
     * 345: insertion over, particles leaving. */
    const int total = 450, at[2] = {145, 345};
    for (int c = 0; c < 2; ++c)
        snprintf(path[c], sizeof path[c], "%s/at%d.ckpt.h5", dir, at[c]);
    gf_sim a;
    make_sim(&a, &P, silo_cfg, 1);
    int64_t out_at[2];
    for (int s = 1; s <= total; ++s) {
        GF_ASSERT_OK(gf_sim_step(&a));
        for (int c = 0; c < 2; ++c)
            if (s == at[c]) {
                GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path[c]));
                double m[GF_MAX_OUTLETS];
                int64_t n[GF_MAX_OUTLETS];
                GF_ASSERT_OK(gf_outlets_totals(&a.outlets, &P, n, m));
                out_at[c] = n[0];
            }
    }
    assert_int_equal(out_at[0], 0);
    assert_true(out_at[1] > 0);
    int64_t na[GF_MAX_OUTLETS];
    double ma[GF_MAX_OUTLETS];
    GF_ASSERT_OK(gf_outlets_totals(&a.outlets, &P, na, ma));
    assert_true(na[0] > out_at[1]);
    size_t n1;
    gf_particle *p1 = gather_all(&a, &P, &n1);
    for (int c = 0; c < 2; ++c) {
        gf_sim b;
        make_sim(&b, &P, silo_cfg, 0);
        GF_ASSERT_OK(gf_io_read_checkpoint(&b, path[c]));
        while (b.step < total)
            GF_ASSERT_OK(gf_sim_step(&b));
        const gf_insertion *ia = &a.inserts.item[0], *ib = &b.inserts.item[0];
        assert_int_equal(ib->inserted, ia->inserted);
        assert_int_equal(ib->events, ia->events);
        assert_true(ib->mass == ia->mass);
        int64_t nb[GF_MAX_OUTLETS];
        double mb[GF_MAX_OUTLETS];
        GF_ASSERT_OK(gf_outlets_totals(&b.outlets, &P, nb, mb));
        assert_int_equal(nb[0], na[0]);
        GF_ASSERT_NEAR(mb[0], ma[0], 1e-12 * ma[0]);
        size_t n2;
        gf_particle *p2 = gather_all(&b, &P, &n2);
        assert_int_equal(n1, n2);
        for (size_t i = 0; i < n1; ++i) {
            assert_int_equal(p1[i].id, p2[i].id);
            for (int d = 0; d < 3; ++d)
                assert_true(p1[i].x[d] == p2[i].x[d]);
        }
        GF_ASSERT_OK(gf_sim_check_particles(&b));
        free(p2);
        gf_sim_free(&b);
    }
    free(p1);
    gf_sim_free(&a);
    gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rate),
    cmocka_unit_test(test_no_overlap),
    cmocka_unit_test(test_absurd_amount_bounded_by_capacity),
    cmocka_unit_test(test_rank_independent),
    cmocka_unit_test(test_beside_mesh),
    cmocka_unit_test(test_outlets),
    cmocka_unit_test(test_silo),
    cmocka_unit_test(test_restart),
};

GF_TEST_MPI_MAIN(tests)
