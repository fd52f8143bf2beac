/* The channel-flow machinery at 1, 2 and 4 ranks (issue 6): inflow layers at the rate the setup
 * implies, with ids and random velocities independent of the rank count; outflow deleting exactly
 * the particles that pass the outlet; particle accounting through it all; obstacle contacts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sim/sim.h"
#include "test_util.h"

#define P gf_test_par

/* A channel 2 cm long, no gravity, no spread: nothing collides, so arrivals and departures are
 * known exactly. */
static const char *channel_cfg =
    "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >;\n"
    "  wall_axes < 0, 1, 1 >; }\n"
    "Materials { Material { name glass; density 2650; } }\n"
    "Lattice { count < 10, 6, 4 >; origin < 0.0005, 0.0005, 0.0005 >;\n"
    "  spacing 0.001; radius 0.000235; material glass;\n"
    "  velocity < 1, 0, 0 >; }\n"
    "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
    "  material glass; particle_velocity < 1, 0, 0 >; seed 3; }\n"
    "Outflow { position 0.02; }\n"
    "Physics { gravity < 0, 0, 0 >; }\n"
    "Time { dt 1e-5; steps 0; }\n"
    "Output { check_every 100; }\n";

static void make_channel(gf_sim *sim) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(channel_cfg, strlen(channel_cfg), "channel.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, 1));
    gf_config_destroy(cfg);
}

static int64_t global_count(const gf_sim *sim) {
    int64_t n = (int64_t)sim->particles.n_local;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
    return n;
}

static void test_inflow_and_outflow(void **state) {
    (void)state;
    gf_sim sim;
    make_channel(&sim);
    assert_int_equal(sim.inflow.per_layer, 6 * 4);
    assert_int_equal(global_count(&sim), 10 * 6 * 4);
    const int steps = 1500; /* 15 ms: 15 mm travelled; accounting checked every 100 steps */
    for (int s = 1; s <= steps; ++s)
        GF_ASSERT_OK(gf_sim_step(&sim));
    /* Layers: one per 0.47 mm of piston travel. */
    long layers = (long)floor(steps * 1e-5 / 0.00047 + 1e-9);
    assert_int_equal(sim.inflow.layers, layers);
    assert_int_equal(sim.created_inflow, layers * 24);
    /* Outflow: lattice column i (x = 0.5 + i mm) has left once x + t > 20 mm; inflow layer
     * k (released at t_k = (k + 1) 0.47 ms at x = 0.235 mm) once 0.235 mm + t - t_k > 20 mm. */
    double t = steps * 1e-5;
    long gone = 0;
    for (int i = 0; i < 10; ++i)
        gone += (0.0005 + 0.001 * i + t > 0.02) ? 24 : 0;
    for (long k = 0; k < layers; ++k)
        gone += (0.000235 + t - (k + 1) * 0.00047 > 0.02) ? 24 : 0;
    int64_t n = global_count(&sim);
    assert_int_equal(n, 240 + layers * 24 - gone);
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* The mass that left, over all ranks. */
    double mass = sim.deleted_mass_local;
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &mass, 1, GF_PAR_SUM));
    double m1 = 2650 * 4.0 / 3.0 * M_PI * pow(0.000235, 3);
    GF_ASSERT_NEAR(mass, gone * m1, 1e-9 * gone * m1);
    /* Every particle still moves at 1 m/s along x (nothing collided). */
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        GF_ASSERT_NEAR(sim.particles.v[0][i], 1.0, 1e-12);
    gf_sim_free(&sim);
}

/* The first layer alone: same ids and velocities on any rank count. */
static void test_first_layer_identical(void **state) {
    (void)state;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >; wall_axes < 0, 1, 1 >; }\n"
        "Materials { Material { name glass; density 2650; } }\n"
        "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
        "  material glass; spread < 0, 0.5, 0.5 >; seed 3; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Time { dt 1e-5; }\n";
    double sums[2] = {0, 0};
    for (int serial = 0; serial < 2; ++serial) {
        if (serial && P.rank != 0)
            continue;
        gf_par self = {MPI_COMM_SELF, 0, 1};
        const gf_par *par = serial ? &self : &P;
        gf_config *cfg = NULL;
        GF_ASSERT_OK(gf_config_parse(src, strlen(src), "inflow.cfg", &cfg));
        gf_sim sim;
        GF_ASSERT_OK(gf_sim_init(&sim, par));
        GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
        gf_config_destroy(cfg);
        /* Step until the first layer appears; it has not moved yet. */
        while (sim.inflow.layers == 0)
            GF_ASSERT_OK(gf_sim_step(&sim));
        double s = 0;
        for (size_t i = 0; i < sim.particles.n_local; ++i)
            s += sim.particles.id[i] * 1e-2 +
                 sim.particles.v[1][i] * (1 + sim.particles.id[i] % 11) +
                 sim.particles.v[2][i] * (1 + sim.particles.id[i] % 13);
        GF_ASSERT_OK(gf_par_allreduce_double(par, &s, 1, GF_PAR_SUM));
        sums[serial] = s;
        gf_sim_free(&sim);
    }
    MPI_Bcast(&sums[1], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    GF_ASSERT_NEAR(sums[0], sums[1], 1e-12 * fabs(sums[1]));
}

/* Spheres against the paper's obstacle: contact gaps and normals from the signed distance of a
 * box and a cylinder, checked against independent formulas. */
static void test_obstacle_contacts(void **state) {
    (void)state;
    gf_walls w;
    gf_walls_init(&w);
    const double c[3] = {0.04, 0.04, 0.01}, axis[3] = {0, 0, 2}, blo[3] = {0.04, 0.03, 0},
                 bhi[3] = {0.05, 0.05, 0.02};
    GF_ASSERT_OK(gf_walls_add_cylinder(&w, c, axis, 0.01, 0.02, 0));
    GF_ASSERT_OK(gf_walls_add_box(&w, blo, bhi, 0));
    uint64_t rng = 11;
    for (int t = 0; t < 20000; ++t) {
        double x[3] = {gf_test_uniform(&rng, 0.02, 0.07), gf_test_uniform(&rng, 0.02, 0.06),
                       gf_test_uniform(&rng, -0.01, 0.03)};
        double n[3];
        /* Cylinder: distance from the 2D (radial, axial) rectangle [0, R] x [-L, L]. */
        double dr = hypot(x[0] - 0.04, x[1] - 0.04) - 0.01, dz = fabs(x[2] - 0.01) - 0.01;
        double expect = (dr > 0 || dz > 0) ? hypot(fmax(dr, 0), fmax(dz, 0)) : fmax(dr, dz);
        double got = gf_walls_obstacle_distance(&w, GF_CYL_BASE, x, n);
        GF_ASSERT_NEAR(got, expect, 1e-15);
        GF_ASSERT_NEAR(n[0] * n[0] + n[1] * n[1] + n[2] * n[2], 1.0, 1e-12);
        /* Stepping along the normal changes the distance at unit rate (outside). */
        if (got > 1e-4) {
            double y[3] = {x[0] + 1e-6 * n[0], x[1] + 1e-6 * n[1], x[2] + 1e-6 * n[2]}, m[3];
            GF_ASSERT_NEAR(gf_walls_obstacle_distance(&w, GF_CYL_BASE, y, m) - got, 1e-6, 1e-12);
        }
        /* Box: the classic signed distance. */
        double q[3], out = 0, in = -INFINITY;
        for (int d = 0; d < 3; ++d) {
            q[d] = fmax(blo[d] - x[d], x[d] - bhi[d]);
            out += fmax(q[d], 0) * fmax(q[d], 0);
            in = fmax(in, q[d]);
        }
        double bexp = out > 0 ? sqrt(out) : in;
        GF_ASSERT_NEAR(gf_walls_obstacle_distance(&w, GF_BOX_BASE, x, n), bexp, 1e-15);
    }
    /* Detection: a sphere resting against the cylinder's left side and one on the box face. */
    gf_materials m;
    gf_materials_init(&m);
    gf_particles p;
    gf_particles_init(&p);
    gf_particle rec;
    const double a[3] = {0.04 - 0.01 - 0.001, 0.04, 0.01}, b[3] = {0.05 + 0.0009, 0.035, 0.01};
    gf_particle_make_sphere(&rec, 1, a, 0.001, 2650, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_particle_make_sphere(&rec, 2, b, 0.001, 2650, 0);
    GF_ASSERT_OK(gf_particles_add(&p, &rec));
    gf_contacts cs;
    gf_contacts_init(&cs);
    gf_linkcells lc;
    gf_linkcells_init(&lc);
    GF_ASSERT_OK(gf_contact_detect(&p, &w, &m, 1e-5, &lc, &cs));
    assert_int_equal(cs.count, 2);
    for (size_t j = 0; j < cs.count; ++j) {
        if (cs.id1[j] == 1) {
            assert_int_equal(cs.id2[j], -1 - GF_CYL_BASE);
            GF_ASSERT_NEAR(cs.gap[j], 0.0, 1e-15);
            GF_ASSERT_NEAR(cs.n[0][j], -1.0, 1e-12);
        } else {
            assert_int_equal(cs.id2[j], -1 - GF_BOX_BASE);
            GF_ASSERT_NEAR(cs.gap[j], -0.0001, 1e-15);
            GF_ASSERT_NEAR(cs.n[0][j], 1.0, 1e-12);
        }
    }
    gf_contacts_free(&cs);
    gf_linkcells_free(&lc);
    gf_particles_free(&p);
}

/* Distance of (x, y) from the segment (ax, ay)-(bx, by). */
static double segment_distance(double x, double y, double ax, double ay, double bx, double by) {
    double ux = bx - ax, uy = by - ay, len2 = ux * ux + uy * uy;
    double t = len2 > 0 ? ((x - ax) * ux + (y - ay) * uy) / len2 : 0.0;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return hypot(x - (ax + t * ux), y - (ay + t * uy));
}

/* Spheres thrown at the obstacle (a cylinder through the whole depth of the channel), on the
 * decomposition of the job, tracked every step by id:
 * - never inside: every centre stays R + r from the axis, less the penetration the solver leaves
 *   (hard contacts with speculative margins: none beyond its convergence, 1e-6 r allowed);
 * - no tunnelling: no centre's path within a step (a segment) passes closer than that either,
 *   so no sphere crosses from one side to the other through the obstacle;
 * - no bounce: wherever the obstacle pushes (a loaded contact), the sphere leaves it no faster
 *   than the error reduction allows, error_reduction * penetration / dt (purely inelastic), up
 *   to the solver's tolerance (1e-6 of the 1 m/s impact speed);
 * and the particle accounting holds. */
static void test_flow_past_obstacle(void **state) {
    (void)state;
    gf_sim sim;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.02, 0.006, 0.004 >; wall_axes < 0, 1, 1 >;\n"
        "  Cylinder { centre < 0.01, 0.003, 0.002 >; radius 0.0015; length 0.004; } }\n"
        "Materials { friction 0.4; Material { name glass; density 2650; } }\n"
        "Lattice { count < 6, 6, 4 >; origin < 0.0005, 0.0005, 0.0005 >;\n"
        "  spacing 0.001; radius 0.000235; material glass; velocity < 1, 0, 0 >; }\n"
        "Outflow { position 0.02; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Solver { tolerance 1e-6; max_iterations 200; }\n"
        "Time { dt 1e-5; }\n";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(src, strlen(src), "obstacle.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
    gf_config_destroy(cfg);
    enum { N = 6 * 6 * 4, F = 5 }; /* ids 0 .. N-1; per id: present, x, y, vx, vy */
    const double R = 0.0015, cx = 0.01, cy = 0.003, r = 0.000235, pen_tol = 1e-6 * r;
    const double erp = sim.solver_params.error_reduction, dt = sim.dt, v_tol = 1e-6;
    static double now[N * F], before[N * F];
    memset(before, 0, sizeof before);
    double closest = INFINITY, worst_bounce = -INFINITY;
    long loaded = 0;
    for (int s = 0; s < 2000; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        memset(now, 0, sizeof now);
        const gf_particles *p = &sim.particles;
        for (size_t i = 0; i < p->n_local; ++i) {
            double *row = now + F * p->id[i];
            row[0] = 1;
            row[1] = p->x[0][i];
            row[2] = p->x[1][i];
            row[3] = p->v[0][i];
            row[4] = p->v[1][i];
        }
        GF_ASSERT_OK(gf_par_allreduce_double(&P, now, N * F, GF_PAR_SUM));
        for (int id = 0; id < N; ++id) {
            const double *a = before + F * id, *b = now + F * id;
            if (b[0] != 1)
                continue; /* gone through the outflow */
            double d = hypot(b[1] - cx, b[2] - cy);
            if (a[0] == 1)
                d = fmin(d, segment_distance(cx, cy, a[1], a[2], b[1], b[2]));
            closest = fmin(closest, d - R - r);
            if (d < R + r - pen_tol)
                fail_msg("step %d: sphere %d came %g into the obstacle (path %g %g -> %g %g)", s,
                         id, R + r - d, a[1], a[2], b[1], b[2]);
        }
        /* The contacts this rank solved in this step, with the velocities after it. */
        const gf_contacts *c = &sim.contacts;
        for (size_t j = 0; j < c->count; ++j) {
            if (c->id2[j] != -1 - GF_CYL_BASE || !(c->lambda[0][j] > 0.0))
                continue;
            const double *b = now + F * c->id1[j];
            assert_true(b[0] == 1); /* nothing is deleted next to the obstacle */
            double vn = b[3] * c->n[0][j] + b[4] * c->n[1][j];
            double allowed = erp * fmax(0.0, -c->gap[j]) / dt;
            worst_bounce = fmax(worst_bounce, vn - allowed);
            loaded++;
            if (vn > allowed + v_tol)
                fail_msg("step %d: sphere %lld leaves the obstacle at %g m/s; the error "
                         "reduction of its penetration %g allows %g m/s",
                         s, (long long)c->id1[j], vn, -c->gap[j], allowed);
        }
        memcpy(before, now, sizeof now);
    }
    GF_ASSERT_OK(gf_sim_check_particles(&sim));
    /* The spheres did reach the obstacle and lean on it. */
    int64_t lean = loaded;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &lean, 1, GF_PAR_SUM));
    assert_true(lean > 100);
    assert_true(closest < 1e-3 * r);
    if (getenv("GF_TEST_VERBOSE"))
        printf("closest approach %g r, worst separation beyond the error reduction %g m/s, %lld "
               "loaded obstacle contacts\n",
               closest / r, worst_bounce, (long long)lean);
    gf_sim_free(&sim);
}

/* ---- issue 11 -------------------------------------------------------------------------- */

static gf_status configure_text(gf_sim *sim, const char *src, const char *name) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(src, strlen(src), name, &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    gf_status st = gf_sim_configure(sim, cfg, 1);
    gf_config_destroy(cfg);
    return st;
}

static int64_t sum_i64(int64_t v) {
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &v, 1, GF_PAR_SUM));
    return v;
}

/* Open faces: x has no walls. Rows of spheres move at +-1 m/s along x and leave through the
 * faces x = 0 and x = 10 mm (or, moving right, through an outflow at 8.7 mm when there is one):
 * every sphere whose centre left is deleted, counted with the outflow's mass, and those that
 * left the box are counted apart; the accounting holds on any rank count. */
static void test_open_faces(void **state) {
    (void)state;
    for (int with_outflow = 0; with_outflow < 2; ++with_outflow) {
        char src[1024];
        snprintf(src, sizeof src,
                 "Domain { min < 0, 0, 0 >; max < 0.01, 0.004, 0.001 >; wall_axes < 0, 1, 1 >; }\n"
                 "Materials { Material { name glass; density 2650; } }\n"
                 "Lattice { count < 8, 4, 1 >; origin < 0.001, 0.0005, 0.0005 >;\n"
                 "  spacing 0.001; radius 0.000235; material glass; }\n"
                 "%s"
                 "Physics { gravity < 0, 0, 0 >; }\n"
                 "Time { dt 1e-5; }\n"
                 "Output { check_every 50; }\n",
                 with_outflow ? "Outflow { position 0.0087; }\n" : "");
        gf_sim sim;
        GF_ASSERT_OK(configure_text(&sim, src, "open.cfg"));
        /* Rows y = 0.5, 2.5 mm move right, rows 1.5, 3.5 mm left: rows never meet. */
        for (size_t i = 0; i < sim.particles.n_local; ++i) {
            long row = lround((sim.particles.x[1][i] - 0.0005) / 0.001);
            sim.particles.v[0][i] = row % 2 ? -1.0 : 1.0;
        }
        const double m1 = 2650 * 4.0 / 3.0 * M_PI * pow(0.000235, 3);
        for (int s = 1; s <= 950; ++s) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            if (s % 100 != 50)
                continue; /* half-way between arrivals: no centre near a face or the outlet */
            double t = s * 1e-5;
            int64_t right_out = 0, left_out = 0;
            for (int i = 0; i < 8; ++i) {
                double x0 = 0.001 * (i + 1);
                right_out += 2 * (x0 + t > (with_outflow ? 0.0087 : 0.01));
                left_out += 2 * (x0 - t < 0.0);
            }
            assert_int_equal(global_count(&sim), 32 - right_out - left_out);
            int64_t box = sum_i64(sim.outflow.left_box);
            assert_int_equal(box, with_outflow ? left_out : right_out + left_out);
            double mass = sim.deleted_mass_local;
            GF_ASSERT_OK(gf_par_allreduce_double(&P, &mass, 1, GF_PAR_SUM));
            GF_ASSERT_NEAR(mass, (right_out + left_out) * m1, 1e-9 * m1);
        }
        GF_ASSERT_OK(gf_sim_check_particles(&sim));
        gf_sim_free(&sim);
    }
}

static const char *inflow_tail = "Physics { gravity < 0, 0, 0 >; }\n"
                                 "Time { dt 1e-5; }\n";

/* A reset distance under a diameter is refused, naming the file position and the numbers. */
static void test_inflow_reset_refused(void **state) {
    (void)state;
    char src[1024];
    snprintf(src, sizeof src,
             "Domain { min < 0, 0, 0 >; max < 0.01, 0.004, 0.002 >; wall_axes < 0, 1, 1 >; }\n"
             "Materials { Material { name glass; density 2650; } }\n"
             "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
             "  reset_distance 0.0003; material glass; }\n%s",
             inflow_tail);
    gf_sim sim;
    assert_int_equal(configure_text(&sim, src, "inflow.cfg"), GF_ERR_INPUT);
    const char *msg = gf_error_message();
    if (!strstr(msg, "inflow.cfg:3") || !strstr(msg, "reset_distance 0.0003") ||
        !strstr(msg, "diameter 0.00047"))
        fail_msg("unhelpful message: %s", msg);
    gf_sim_free(&sim);
    /* Exactly a diameter is fine. */
    snprintf(src, sizeof src,
             "Domain { min < 0, 0, 0 >; max < 0.01, 0.004, 0.002 >; wall_axes < 0, 1, 1 >; }\n"
             "Materials { Material { name glass; density 2650; } }\n"
             "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001;\n"
             "  reset_distance 0.00047; material glass; }\n%s",
             inflow_tail);
    GF_ASSERT_OK(configure_text(&sim, src, "inflow.cfg"));
    gf_sim_free(&sim);
}

/* Grid points of a new layer that particles overlap are left empty, whichever rank owns the
 * particle, the point, or the particle's periodic image. The layer: y = 0.5 .. 3.5 mm (j = 0..3,
 * periodic in y over 4 mm), z = 0.5, 1.5 mm (k = 0, 1), x = r = 0.235 mm; index j * 2 + k. */
static void test_inflow_skips_occupied(void **state) {
    (void)state;
    char src[1024];
    snprintf(src, sizeof src,
             "Domain { min < 0, 0, 0 >; max < 0.01, 0.004, 0.002 >; periodic < 0, 1, 0 >;\n"
             "  wall_axes < 0, 0, 1 >; }\n"
             "Materials { Material { name glass; density 2650; } }\n"
             "Inflow { position 0; speed 1; radius 0.000235; spacing 0.001; material glass; }\n%s",
             inflow_tail);
    gf_sim sim;
    GF_ASSERT_OK(configure_text(&sim, src, "inflow.cfg"));
    assert_int_equal(sim.inflow.ny * sim.inflow.nz, 8);
    const double r = 0.000235;
    const struct {
        double x, y, z, radius;
    } intruders[] = {
        {r, 0.0005, 0.0005, r},       /* on point (0, 0) */
        {r, 0.002, 0.0015, 0.0003},   /* 0.5 mm from (1, 1) and (2, 1): overlap 0.035 mm */
        {r, 0.00399, 0.0015, 0.0005}, /* 0.49 mm from (3, 1), 0.51 mm from (0, 1) by its image */
        {3 * r, 0.0025, 0.0005, r},   /* touching (2, 0): the previous layer's place */
        {3 * r - 0.005 * r, 0.0015, 0.0005, r}, /* (1, 0) by half a percent of r: tolerated */
    };
    const int n_intruders = sizeof intruders / sizeof intruders[0];
    for (int k = 0; k < n_intruders; ++k) {
        const double x[3] = {intruders[k].x, intruders[k].y, intruders[k].z};
        if (!gf_decomp_owns(&sim.xch.decomp, x))
            continue;
        gf_particle rec;
        gf_particle_make_sphere(&rec, 100 + k, x, intruders[k].radius, 2650, 0);
        GF_ASSERT_OK(gf_particles_add(&sim.particles, &rec));
    }
    int64_t next = 1000, created = -1;
    GF_ASSERT_OK(gf_inflow_advance(&sim.inflow, &sim.walls, 0.00047, &sim.xch.decomp, &P,
                                   &sim.materials, &sim.particles, &next, &created));
    assert_int_equal(sim.inflow.layers, 1);
    assert_int_equal(next, 1008);
    /* Free: (1, 0), (2, 0), (3, 0), that is indices 2, 4 and 6. */
    assert_int_equal(created, 3);
    int64_t found[2] = {0, 0}; /* count, sum of indices */
    for (size_t i = 0; i < sim.particles.n_local; ++i) {
        if (sim.particles.id[i] < 1000)
            continue;
        found[0]++;
        found[1] += sim.particles.id[i] - 1000;
        int64_t idx = sim.particles.id[i] - 1000;
        assert_true(idx == 2 || idx == 4 || idx == 6);
    }
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, found, 2, GF_PAR_SUM));
    assert_int_equal(found[0], 3);
    assert_int_equal(found[1], 12);
    gf_sim_free(&sim);
}

/* Lattice spheres that touch a surface exactly (in decimal) are kept, those that overlap a wall
 * or an obstacle are left out and counted. Spheres at x = 0.5 + i mm, y = 0.5 + j mm, z = 0.5
 * mm, r = 0.235 mm: the box [3.735, 5.265] mm in x touches columns 3 and 5 and holds column 4 (3
 * out); the cylinder of radius 0.765 mm around (12.5, 1.5) mm touches its four neighbours and
 * holds (12.5, 1.5) (1 out); the wall x < 18.5 mm cuts columns 18 and 19 (6 out); the ceiling
 * z < 0.735 mm touches all. */
static void test_lattice_touching_kept(void **state) {
    (void)state;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.02, 0.003, 0.001 >; wall_axes < 0, 1, 1 >;\n"
        "  Box { min < 0.003735, 0, 0 >; max < 0.005265, 0.003, 0.001 >; }\n"
        "  Cylinder { centre < 0.0125, 0.0015, 0.0005 >; radius 0.000765; length 0.001; }\n"
        "  Wall { point < 0.0185, 0, 0 >; normal < -1, 0, 0 >; }\n"
        "  Wall { point < 0, 0, 0.000735 >; normal < 0, 0, -1 >; } }\n"
        "Materials { Material { name glass; density 2650; } }\n"
        "Lattice { count < 20, 3, 1 >; origin < 0.0005, 0.0005, 0.0005 >;\n"
        "  spacing 0.001; radius 0.000235; material glass; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Time { dt 1e-5; }\n";
    gf_sim sim;
    GF_ASSERT_OK(configure_text(&sim, src, "touch.cfg"));
    assert_int_equal(global_count(&sim), 60 - 3 - 1 - 6);
    assert_int_equal(sim.expected_particles, 50);
    int64_t skipped = -1;
    gf_particles scratch;
    gf_particles_init(&scratch);
    GF_ASSERT_OK(
        gf_lattice_generate(&sim.lattice, &sim.materials, &sim.walls, NULL, &scratch, &skipped));
    assert_int_equal(skipped, 10);
    assert_int_equal(scratch.n_local, 50);
    gf_particles_free(&scratch);
    /* The allowance is rounding, not physics: a millionth of a radius into the box or the
     * cylinder is an overlap. */
    const double r = 0.000235, into_box[3] = {0.003735 - r + 1e-6 * r, 0.0015, 0.0005},
                 into_cyl[3] = {0.0125 - 0.000765 - r + 1e-6 * r, 0.0015, 0.0005};
    assert_true(gf_walls_overlap(&sim.walls, into_box, r));
    assert_true(gf_walls_overlap(&sim.walls, into_cyl, r));
    gf_sim_free(&sim);
}

/* A lattice crossing the periodic face x = 0: four spheres of r = 0.4 mm at x = 0, 1, 2, 3 mm
 * in a 4 mm periodic box. Sphere 0 (on the face) is sent left at 1 m/s, into sphere 3 across
 * the seam; the purely inelastic chain ends with all four at -0.25 m/s. Contacts across the seam
 * (ghost images, on any rank count) must keep every pair apart and conserve momentum; the
 * final velocities agree to 1e-5 m/s (the solver runs to a tolerance of 1e-9). */
static void test_lattice_periodic_crossing(void **state) {
    (void)state;
    const char *src =
        "Domain { min < 0, 0, 0 >; max < 0.004, 0.001, 0.001 >; periodic < 1, 0, 0 >; }\n"
        "Materials { Material { name glass; density 2650; } }\n"
        "Lattice { count < 4, 1, 1 >; origin < 0, 0.0005, 0.0005 >;\n"
        "  spacing 0.001; radius 0.0004; material glass; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Solver { tolerance 1e-9; max_iterations 200; }\n"
        "Time { dt 1e-5; }\n";
    gf_sim sim;
    GF_ASSERT_OK(configure_text(&sim, src, "periodic.cfg"));
    assert_int_equal(global_count(&sim), 4);
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        sim.particles.v[0][i] = sim.particles.id[i] == 0 ? -1.0 : 0.0;
    const double r = 0.0004, L = 0.004;
    double closest = INFINITY;
    for (int s = 0; s < 300; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        double xv[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* positions, velocities by id */
        for (size_t i = 0; i < sim.particles.n_local; ++i) {
            xv[sim.particles.id[i]] = sim.particles.x[0][i];
            xv[4 + sim.particles.id[i]] = sim.particles.v[0][i];
        }
        GF_ASSERT_OK(gf_par_allreduce_double(&P, xv, 8, GF_PAR_SUM));
        const double *xs = xv;
        GF_ASSERT_NEAR(xv[4] + xv[5] + xv[6] + xv[7], -1.0, 1e-12);
        for (int a = 0; a < 4; ++a)
            for (int b = a + 1; b < 4; ++b) {
                double d = xs[a] - xs[b];
                d -= L * round(d / L);
                closest = fmin(closest, fabs(d));
            }
    }
    /* The speculative contacts stop the spheres at contact to the solver's tolerance. */
    if (!(closest >= 2 * r * (1 - 1e-6)))
        fail_msg("spheres came %g apart, closer than the diameter %g", closest, 2 * r);
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        GF_ASSERT_NEAR(sim.particles.v[0][i], -0.25, 1e-5);
    gf_sim_free(&sim);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_inflow_and_outflow),
    cmocka_unit_test(test_first_layer_identical),
    cmocka_unit_test(test_obstacle_contacts),
    cmocka_unit_test(test_flow_past_obstacle),
    cmocka_unit_test(test_open_faces),
    cmocka_unit_test(test_inflow_reset_refused),
    cmocka_unit_test(test_inflow_skips_occupied),
    cmocka_unit_test(test_lattice_touching_kept),
    cmocka_unit_test(test_lattice_periodic_crossing),
};

GF_TEST_MPI_MAIN(tests)
