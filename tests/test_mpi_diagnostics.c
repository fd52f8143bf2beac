/* Diagnostics, scheduled boundaries and fixed particles (issue 15) at 1, 2 and 4 ranks: the force
 * the particles exert on the geometry against their weight and against Coulomb's law, the
 * potential energy of a falling sphere, the track of a free particle crossing rank boundaries, a
 * gate that opens on schedule, an obstacle moving on schedule, and a fixed lattice that a sphere
 * comes to rest on; meshes: a meshed floor's force and torque, a meshed gate pushing on its
 * schedule, and a restart across a mesh's schedule. Each expected value is a closed form or follows
 * from the construction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "diag/forces.h"
#include "io/io.h"
#include "sim/sim.h"
#include "diag/stats.h"
#include "diag/tracks.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

/* A simulation from configuration text; *cfg stays for the observers to read. */
static void make_sim(gf_sim *sim, const char *text, gf_config **cfg) {
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "diag.cfg", cfg));
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    GF_ASSERT_OK(gf_sim_configure(sim, *cfg, 1));
    GF_ASSERT_OK(gf_sim_start(sim));
}

/* Rows of a CSV file (rank 0): the header's column of `name`, and the values of row r. */
typedef struct {
    int ncol, nrow;
    char names[64][32];
    double *v; /* nrow x ncol */
} csv_table;

static void csv_read(const char *path, csv_table *t) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char line[65536];
    assert_non_null(fgets(line, sizeof line, f));
    for (char *s = strtok(line, ",\n"); s; s = strtok(NULL, ",\n")) {
        assert_true(t->ncol < 64);
        snprintf(t->names[t->ncol++], sizeof t->names[0], "%s", s);
    }
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        if ((size_t)(t->nrow + 1) * (size_t)t->ncol > cap) {
            cap = 2 * (size_t)(t->nrow + 1) * (size_t)t->ncol;
            t->v = realloc(t->v, cap * sizeof *t->v);
            assert_non_null(t->v);
        }
        char *s = line;
        for (int c = 0; c < t->ncol; ++c) {
            t->v[t->nrow * t->ncol + c] = strtod(s, &s);
            if (*s == ',')
                ++s;
        }
        t->nrow++;
    }
    fclose(f);
}

static double csv_at(const csv_table *t, int row, const char *name) {
    for (int c = 0; c < t->ncol; ++c)
        if (!strcmp(t->names[c], name))
            return t->v[row * t->ncol + c];
    fail_msg("no column %s", name);
    return NAN;
}

static double global_sum(double x) {
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &x, 1, GF_PAR_SUM));
    return x;
}

/* Runs `text` for 30 steps as a, checkpoints it to dir/name, restarts b from the checkpoint,
 * and steps both 30 more: b should be where a is. */
static void run_and_restart(const char *text, const char *name, gf_sim *a, gf_config **ca,
                            gf_sim *b, gf_config **cb) {
    make_sim(a, text, ca);
    for (int s = 0; s < 30; ++s)
        GF_ASSERT_OK(gf_sim_step(a));
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, a, path));
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "diag.cfg", cb));
    GF_ASSERT_OK(gf_sim_init(b, &P));
    GF_ASSERT_OK(gf_sim_configure(b, *cb, 0));
    GF_ASSERT_OK(gf_io_read_checkpoint(b, path));
    for (int s = 0; s < 30; ++s) {
        GF_ASSERT_OK(gf_sim_step(a));
        GF_ASSERT_OK(gf_sim_step(b));
    }
}

/* Runs the configuration `text` for 100 steps with its Forces block observing; returns the
 * particles' total weight (all ranks). */
static double observe_forces(const char *text, gf_sim *sim, gf_config **cfg) {
    make_sim(sim, text, cfg);
    gf_forces fo;
    GF_ASSERT_OK(gf_forces_configure(&fo, gf_config_root(*cfg)));
    GF_ASSERT_OK(gf_forces_start(&fo, sim, 0));
    for (int s = 0; s < 100; ++s) {
        GF_ASSERT_OK(gf_sim_step(sim));
        GF_ASSERT_OK(gf_forces_observe(&fo, sim, 0));
    }
    gf_forces_finish(&fo);
    double mass = 0.0;
    for (size_t i = 0; i < sim->particles.n_local; ++i)
        mass += 1.0 / sim->particles.inv_mass[i];
    return global_sum(mass) * 9.81;
}

/* Two layers of 8 x 2 touching spheres resting on the floor of a box 4 cm long (cut along x on
 * 2 and 4 ranks): after the first steps the floor carries their weight, sum m g, and the side
 * walls nothing. A contact counted on two ranks would double the force. */
static void test_floor_carries_weight(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.02 >; }\n"
             "Materials { friction 0.3; Material { name glass; density 2500; } }\n"
             "Lattice { count < 8, 2, 2 >; origin < 0.0025, 0.0025, 0.0025 >; spacing 0.005;\n"
             "  radius 0.0025; material glass; }\n"
             "Physics { gravity < 0, 0, -9.81 >; }\n"
             "Solver { tolerance 1e-9; max_iterations 1000; }\n"
             "Time { dt 1e-4; steps 0; }\n"
             "Forces { every 20; file \"%s/forces.csv\"; torque_point < 0.02, 0.005, 0 >; }\n",
             dir);
    gf_sim sim;
    gf_config *cfg;
    double weight = observe_forces(text, &sim, &cfg);
    if (P.rank == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/forces.csv", dir);
        csv_table t;
        csv_read(path, &t);
        assert_int_equal(t.nrow, 5);
        assert_string_equal(t.names[2], "wall0_fx");
        /* Walls: x lo, x hi, y lo, y hi, z lo (the floor: wall4), z hi. */
        for (int r = 1; r < t.nrow; ++r) {
            GF_ASSERT_NEAR(csv_at(&t, r, "time"), 0.002 * (r + 1), 1e-12);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_fz"), -weight, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_fx"), 0.0, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall5_fz"), 0.0, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall0_fx"), 0.0, 1e-3 * weight);
            /* Symmetric about the torque point: the weight's torque vanishes. */
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_ty"), 0.0, 1e-3 * weight * 0.02);
        }
        free(t.v);
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A sphere sliding along the floor (x) with friction mu: while it slides the floor takes the
 * normal force m g and the friction force mu m g along the sliding direction. Sliding lasts
 * 2 v0 / (7 mu g) = 58 ms for v0 = 1 m/s, mu = 0.5; the test looks at the first 10 ms. */
static void test_sliding_friction(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.01 >; }\n"
             "Materials { friction 0.5; }\n"
             "Body { shape sphere; radius 0.002; position < 0.01, 0.005, 0.002 >;\n"
             "  velocity < 1, 0, 0 >; }\n"
             "Physics { gravity < 0, 0, -9.81 >; }\n"
             "Solver { tolerance 1e-10; max_iterations 1000; }\n"
             "Time { dt 1e-4; steps 0; }\n"
             "Forces { every 25; file \"%s/slide.csv\"; }\n",
             dir);
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    gf_forces fo;
    GF_ASSERT_OK(gf_forces_configure(&fo, gf_config_root(cfg)));
    GF_ASSERT_OK(gf_forces_start(&fo, &sim, 0));
    for (int s = 0; s < 100; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_forces_observe(&fo, &sim, 0));
    }
    gf_forces_finish(&fo);
    double m = 1000.0 * 4.0 / 3.0 * M_PI * 0.002 * 0.002 * 0.002, w = m * 9.81;
    if (P.rank == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/slide.csv", dir);
        csv_table t;
        csv_read(path, &t);
        assert_int_equal(t.nrow, 4);
        for (int r = 0; r < t.nrow; ++r) {
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_fz"), -w, 1e-6 * w);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_fx"), 0.5 * w, 1e-6 * w);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall4_fy"), 0.0, 1e-9 * w);
        }
        free(t.v);
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A sphere falling freely: the statistics' kinetic and potential energy at each sample are
 * those of the integrator's closed form, v_n = v0 + n g dt, z_n = z0 + n v0 dt + n (n + 1) g
 * dt^2 / 2 (semi-implicit Euler: the sum drifts by -m g^2 dt^2 / 2 a step, which the test sees). */
static void test_potential_energy(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.05 >; }\n"
             "Body { shape sphere; radius 0.001; position < 0.011, 0.005, 0.025 >;\n"
             "  velocity < 0.5, 0, 0.3 >; }\n"
             "Physics { gravity < 0, 0, -9.81 >; }\n"
             "Time { dt 1e-4; steps 0; }\n"
             "Statistics { every 10; file \"%s/energy.csv\"; }\n",
             dir);
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    gf_stats st;
    GF_ASSERT_OK(gf_stats_configure(&st, gf_config_root(cfg), &sim));
    GF_ASSERT_OK(gf_stats_start(&st, &sim, 0));
    for (int s = 0; s < 200; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
    }
    gf_stats_finish(&st, &sim);
    double m = 1000.0 * 4.0 / 3.0 * M_PI * 1e-9, g = 9.81, dt = 1e-4;
    if (P.rank == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/energy.csv", dir);
        csv_table t;
        csv_read(path, &t);
        assert_int_equal(t.nrow, 20);
        double e0 = 0.5 * m * (0.25 + 0.09) + m * g * 0.025;
        for (int r = 0; r < t.nrow; ++r) {
            double n = csv_at(&t, r, "step");
            double vz = 0.3 - n * g * dt,
                   z = 0.025 + n * 0.3 * dt - 0.5 * n * (n + 1) * g * dt * dt;
            double ke = 0.5 * m * (0.25 + vz * vz), pe = m * g * z;
            GF_ASSERT_NEAR(csv_at(&t, r, "kinetic_energy"), ke, 1e-8 * e0);
            GF_ASSERT_NEAR(csv_at(&t, r, "potential_energy"), pe, 1e-8 * e0);
            /* The sum: constant but for the integrator's drift. */
            GF_ASSERT_NEAR(csv_at(&t, r, "kinetic_energy") + csv_at(&t, r, "potential_energy"),
                           e0 - n * 0.5 * m * g * g * dt * dt, 1e-8 * e0);
        }
        free(t.v);
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A free particle (id 3 of a lattice of 4 far apart) flies along x through the box, crossing
 * the cuts of 2 and 4 ranks: its track is x0 + v0 t + g dt^2 n (n + 1) / 2 at every sampled
 * step n (the integrator's closed form; the continuous one plus g t dt / 2), with nothing
 * missing where it changes rank. Ids not present (99) are left out. */
static void test_track_crosses_ranks(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.01 >; }\n"
             "Lattice { count < 1, 1, 4 >; origin < 0.004, 0.005, 0.0015 >; spacing 0.0022;\n"
             "  radius 0.001; velocity < 2, 0, 0.1 >; }\n"
             "Physics { gravity < 0, 0, -9.81 >; }\n"
             "Time { dt 1e-4; steps 0; }\n"
             "Tracks { ids \"3, 99\"; every 10; file \"%s/tracks.csv\"; }\n",
             dir);
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    gf_tracks tr;
    GF_ASSERT_OK(gf_tracks_configure(&tr, gf_config_root(cfg)));
    assert_int_equal(tr.nids, 2);
    GF_ASSERT_OK(gf_tracks_start(&tr, &sim, 0));
    int ranks_seen = 0;
    for (int s = 0; s < 150; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_tracks_observe(&tr, &sim, 0));
        for (size_t i = 0; i < sim.particles.n_local; ++i)
            if (sim.particles.id[i] == 3)
                ranks_seen |= 1 << P.rank;
    }
    gf_tracks_free(&tr);
    int64_t seen = ranks_seen;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &seen, 1, GF_PAR_SUM));
    if (P.size > 1)
        assert_int_equal(seen, (1 << P.size) - 1); /* it visited every rank */
    if (P.rank == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/tracks.csv", dir);
        csv_table t;
        csv_read(path, &t);
        assert_int_equal(t.nrow, 15);
        double dt = 1e-4, g = -9.81, z0 = 0.0015 + 3 * 0.0022;
        for (int r = 0; r < t.nrow; ++r) {
            double n = 10.0 * (r + 1), tn = n * dt;
            assert_true(csv_at(&t, r, "step") == n);
            assert_true(csv_at(&t, r, "id") == 3);
            GF_ASSERT_NEAR(csv_at(&t, r, "time"), tn, 1e-15);
            GF_ASSERT_NEAR(csv_at(&t, r, "x"), 0.004 + 2.0 * tn, 1e-14);
            GF_ASSERT_NEAR(csv_at(&t, r, "y"), 0.005, 1e-15);
            GF_ASSERT_NEAR(csv_at(&t, r, "z"), z0 + 0.1 * tn + g * dt * dt * n * (n + 1) / 2,
                           1e-14);
            GF_ASSERT_NEAR(csv_at(&t, r, "vx"), 2.0, 1e-14);
            GF_ASSERT_NEAR(csv_at(&t, r, "vz"), 0.1 + g * tn, 1e-13);
            assert_true(csv_at(&t, r, "wx") == 0.0);
        }
        free(t.v);
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A gate: a wall at x = 0.02 (normal -x) holding a row of spheres that gravity (along +x)
 * presses against it; from t = 5 ms it moves away at 0.5 m/s. Its position is 0.02 until then
 * and 0.02 + 0.5 (t - 0.005) after; until it opens it carries the row's weight and no sphere
 * passes it; after, the spheres follow it. A box obstacle on its own schedule moves likewise. */
static void test_gate_opens_on_schedule(void **state) {
    (void)state;
    const char *text =
        "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.01 >; wall_axes < 1, 0, 0 >;\n"
        "  Wall { point < 0.02, 0, 0 >; normal < -1, 0, 0 >;\n"
        "    Schedule { time 0.005; velocity < 0.5, 0, 0 >; } }\n"
        "  Box { min < 0.001, 0.001, 0.008 >; max < 0.002, 0.002, 0.009 >;\n"
        "    velocity < 0, 0.1, 0 >; Schedule { time 0.002; velocity < 0, 0, 0 >; }\n"
        "    Schedule { time 0.004; velocity < 0, 0, -0.2 >; } }\n"
        "}\n"
        "Lattice { count < 4, 1, 1 >; origin < 0.013, 0.005, 0.005 >; spacing 0.002;\n"
        "  radius 0.001; }\n"
        "Physics { gravity < 9.81, 0, 0 >; }\n"
        "Solver { tolerance 1e-9; max_iterations 1000; }\n"
        "Time { dt 1e-4; steps 0; }\n";
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    /* Walls: x lo (0), x hi (1), the gate (2). */
    assert_int_equal(sim.walls.count, 3);
    const double r = 0.001, t_open = 0.005;
    double maxx_before = -1.0;
    for (int s = 1; s <= 300; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        double t = s * 1e-4;
        double gate = t <= t_open + 1e-9 ? 0.02 : 0.02 + 0.5 * (t - t_open);
        GF_ASSERT_NEAR(sim.walls.point[2][0], gate, 1e-12);
        /* The box: +y at 0.1 m/s for 2 ms, still until 4 ms, then -z at 0.2 m/s. */
        double by = 0.001 + 0.1 * fmin(t, 0.002), bz = 0.008 - 0.2 * fmax(0.0, t - 0.004);
        GF_ASSERT_NEAR(sim.walls.box_lo[0][1], by, 1e-12);
        GF_ASSERT_NEAR(sim.walls.box_lo[0][2], bz, 1e-12);
        GF_ASSERT_NEAR(sim.walls.box_hi[0][2], bz + 0.001, 1e-12);
        if (t <= t_open + 1e-9)
            for (size_t i = 0; i < sim.particles.n_local; ++i)
                maxx_before = fmax(maxx_before, sim.particles.x[0][i] + r);
    }
    double mx[1] = {maxx_before};
    GF_ASSERT_OK(gf_par_allreduce_double(&P, mx, 1, GF_PAR_MAX));
    /* Held: the front sphere touches the gate, within the solver's penetration. */
    assert_true(mx[0] <= 0.02 + 1e-3 * r);
    assert_true(mx[0] >= 0.02 - 1e-3 * r);
    /* Released: 250 steps of free acceleration from rest move each sphere g dt^2 n (n + 1) / 2
     * = 3 mm (the integrator's closed form). */
    double minx = INFINITY;
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        minx = fmin(minx, sim.particles.x[0][i]);
    GF_ASSERT_OK(gf_par_allreduce_double(&P, &minx, 1, GF_PAR_MIN));
    GF_ASSERT_NEAR(minx, 0.013 + 9.81 * 1e-8 * 250 * 251 / 2, 1e-3 * r);
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A fixed lattice (a row of touching spheres of infinite mass, Lattice.motion fixed) under
 * gravity and the impact of a sphere dropped onto the gap between two of them: the lattice
 * keeps its positions exactly, and the sphere comes to rest touching both, its centre sqrt(3) r
 * above theirs. */
static void test_fixed_lattice(void **state) {
    (void)state;
    const char *text =
        "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.02 >; }\n"
        "Lattice { count < 8, 1, 1 >; origin < 0.0035, 0.005, 0.004 >; spacing 0.004;\n"
        "  radius 0.002; motion fixed; velocity < 1, 0, 0 >; }\n"
        "Body { shape sphere; radius 0.002; position < 0.0175, 0.005, 0.012 >; }\n"
        "Physics { gravity < 0, 0, -9.81 >; }\n"
        "Solver { tolerance 1e-9; max_iterations 1000; }\n"
        "Time { dt 1e-4; steps 0; }\n";
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    const double r = 0.002;
    for (int s = 0; s < 600; ++s)
        GF_ASSERT_OK(gf_sim_step(&sim));
    double z = 0.0, v = 0.0;
    for (size_t i = 0; i < sim.particles.n_local; ++i) {
        const gf_particles *p = &sim.particles;
        if (p->id[i] < 8) {
            assert_true(p->inv_mass[i] == 0.0);
            assert_true(p->x[0][i] == 0.0035 + 0.004 * (double)p->id[i]);
            assert_true(p->x[1][i] == 0.005 && p->x[2][i] == 0.004);
            assert_true(p->v[0][i] == 0.0 && p->v[1][i] == 0.0 && p->v[2][i] == 0.0);
        } else {
            z = p->x[2][i];
            v = fabs(p->v[0][i]) + fabs(p->v[1][i]) + fabs(p->v[2][i]);
            assert_true(fabs(p->x[0][i] - 0.0175) < 1e-9);
        }
    }
    z = global_sum(z);
    v = global_sum(v);
    GF_ASSERT_NEAR(z, 0.004 + sqrt(3.0) * r, 1e-3 * r);
    assert_true(v < 1e-6);
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A restart keeps what the configuration alone cannot give back: the positions a moving box
 * reached (on its schedule) and the fixed lattice's infinite mass. The restarted run then goes
 * on exactly as the uninterrupted one. */
static void test_restart_keeps_motion(void **state) {
    (void)state;
    const char *text =
        "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.02 >;\n"
        "  Box { min < 0.03, 0.001, 0.015 >; max < 0.031, 0.002, 0.016 >;\n"
        "    velocity < 0, 0.1, 0 >; Schedule { time 0.002; velocity < -0.3, 0, 0 >; } } }\n"
        "Lattice { count < 8, 1, 1 >; origin < 0.0035, 0.005, 0.004 >; spacing 0.004;\n"
        "  radius 0.002; motion fixed; }\n"
        "Body { shape sphere; radius 0.002; position < 0.0175, 0.005, 0.012 >; }\n"
        "Physics { gravity < 0, 0, -9.81 >; }\n"
        "Time { dt 1e-4; steps 0; }\n";
    gf_sim a, b;
    gf_config *ca, *cb;
    run_and_restart(text, "motion.ckpt.h5", &a, &ca, &b, &cb);
    /* 2 ms at 0.1 m/s along y, then 4 ms at -0.3 m/s along x. */
    GF_ASSERT_NEAR(b.walls.box_lo[0][0], 0.03 - 0.3 * 0.004, 1e-12);
    GF_ASSERT_NEAR(b.walls.box_lo[0][1], 0.001 + 0.1 * 0.002, 1e-12);
    for (int d = 0; d < 3; ++d) {
        assert_true(b.walls.box_lo[0][d] == a.walls.box_lo[0][d]);
        assert_true(b.walls.box_hi[0][d] == a.walls.box_hi[0][d]);
    }
    for (size_t i = 0; i < b.particles.n_local; ++i)
        if (b.particles.id[i] < 8) {
            assert_true(b.particles.inv_mass[i] == 0.0);
            assert_true(b.particles.x[0][i] == 0.0035 + 0.004 * (double)b.particles.id[i]);
            assert_true(b.particles.x[2][i] == 0.004);
        }
    gf_sim_free(&a);
    gf_sim_free(&b);
    gf_config_destroy(ca);
    gf_config_destroy(cb);
}

/* The spheres of test_floor_carries_weight on a meshed floor (a rectangle at z = 0, no wall
 * below): the mesh's columns carry their weight, sum m g; about a point at x = 0 its torque is
 * that of the weight at the lattice's centre, x = 0.02: ty = 0.02 sum m g (the contact points
 * make the lever arms). A contact counted on two ranks would double the force. */
static void test_mesh_floor_carries_weight(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.02 >; wall_axes < 1, 1, 0 >;\n"
             "  Mesh { shape rectangle; centre < 0.02, 0.005, 0 >; normal < 0, 0, 1 >;\n"
             "    width 0.06; height 0.03; } }\n"
             "Materials { friction 0.3; Material { name glass; density 2500; } }\n"
             "Lattice { count < 8, 2, 2 >; origin < 0.0025, 0.0025, 0.0025 >; spacing 0.005;\n"
             "  radius 0.0025; material glass; }\n"
             "Physics { gravity < 0, 0, -9.81 >; }\n"
             "Solver { tolerance 1e-9; max_iterations 1000; }\n"
             "Time { dt 1e-4; steps 0; }\n"
             "Forces { every 20; file \"%s/mforces.csv\"; torque_point < 0, 0.005, 0 >; }\n",
             dir);
    gf_sim sim;
    gf_config *cfg;
    double weight = observe_forces(text, &sim, &cfg);
    assert_int_equal(sim.walls.nmesh, 1);
    if (P.rank == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/mforces.csv", dir);
        csv_table t;
        csv_read(path, &t);
        assert_int_equal(t.nrow, 5);
        /* Walls: x lo, x hi, y lo, y hi; then the mesh, force and torque. */
        assert_int_equal(t.ncol, 2 + 5 * 6);
        assert_string_equal(t.names[2 + 4 * 6], "mesh0_fx");
        assert_string_equal(t.names[2 + 4 * 6 + 5], "mesh0_tz");
        for (int r = 1; r < t.nrow; ++r) {
            GF_ASSERT_NEAR(csv_at(&t, r, "mesh0_fz"), -weight, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "mesh0_fx"), 0.0, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "mesh0_fy"), 0.0, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "wall0_fx"), 0.0, 1e-3 * weight);
            GF_ASSERT_NEAR(csv_at(&t, r, "mesh0_ty"), 0.02 * weight, 1e-3 * weight * 0.02);
            GF_ASSERT_NEAR(csv_at(&t, r, "mesh0_tx"), 0.0, 1e-3 * weight * 0.02);
        }
        free(t.v);
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* A meshed plate (x = 0.009, normal +x) touching a sphere at rest (x = 0.01, radius 1 mm), no
 * gravity: still until t = 2 ms, then on its schedule at 0.3 m/s along x until 4 ms, then still
 * again. The sphere stays exactly where it is until 2 ms; then the plate pushes it (a hard,
 * inelastic contact): it moves with the plate at 0.3 m/s, x = 0.01 + 0.3 (t - 0.002), and keeps
 * that speed when the plate stops. On 2 and 4 ranks it crosses the cuts. */
static void test_mesh_gate_pushes_on_schedule(void **state) {
    (void)state;
    const char *text =
        "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.01 >; box_walls false;\n"
        "  Mesh { shape rectangle; centre < 0.009, 0.005, 0.005 >; normal < 1, 0, 0 >;\n"
        "    edge < 0, 1, 0 >; width 0.008; height 0.008;\n"
        "    Schedule { time 0.002; velocity < 0.3, 0, 0 >; }\n"
        "    Schedule { time 0.004; } } }\n"
        "Body { shape sphere; radius 0.001; position < 0.01, 0.005, 0.005 >; }\n"
        "Physics { gravity < 0, 0, 0 >; }\n"
        "Solver { tolerance 1e-12; max_iterations 1000; }\n"
        "Time { dt 1e-4; steps 0; }\n";
    gf_sim sim;
    gf_config *cfg;
    make_sim(&sim, text, &cfg);
    const double ts = 0.002, te = 0.004;
    for (int s = 1; s <= 80; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        double t = s * 1e-4, moved = fmin(fmax(t - ts, 0.0), te - ts);
        GF_ASSERT_NEAR(sim.walls.mesh_x[0][0], 0.009 + 0.3 * moved, 1e-12);
        double x = 0.0, vx = 0.0, other = 0.0;
        for (size_t i = 0; i < sim.particles.n_local; ++i) {
            const gf_particles *p = &sim.particles;
            x = p->x[0][i];
            vx = p->v[0][i];
            other = fabs(p->v[1][i]) + fabs(p->v[2][i]) + fabs(p->w[0][i]) + fabs(p->w[1][i]) +
                    fabs(p->w[2][i]);
        }
        x = global_sum(x);
        vx = global_sum(vx);
        other = global_sum(other);
        assert_true(other < 1e-12);
        if (t <= ts + 1e-9) {
            assert_true(x == 0.01 && vx == 0.0);
        } else {
            GF_ASSERT_NEAR(vx, 0.3, 1e-9);
            GF_ASSERT_NEAR(x, 0.01 + 0.3 * (t - ts), 1e-11);
        }
    }
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* The values of each particle by id (zero where absent on this rank), summed over the ranks:
 * each id's owner alone contributes, so the sums are its values exactly. */
static void by_id(const gf_sim *sim, int n, double *out) {
    memset(out, 0, (size_t)n * 9 * sizeof *out);
    const gf_particles *p = &sim->particles;
    for (size_t i = 0; i < p->n_local; ++i) {
        int64_t id = p->id[i];
        assert_true(id >= 0 && id < n);
        for (int d = 0; d < 3; ++d) {
            out[9 * id + d] = p->x[d][i];
            out[9 * id + 3 + d] = p->v[d][i];
            out[9 * id + 6 + d] = p->w[d][i];
        }
    }
    GF_ASSERT_OK(gf_par_allreduce_double(&P, out, n * 9, GF_PAR_SUM));
}

/* A restart across a mesh's schedule: a meshed floor under spheres starts moving along x and
 * turning about z at 2 ms, turns back from 4 ms; checkpointed at 3 ms and restarted (the
 * schedule comes again from the configuration), it goes on exactly as the uninterrupted run:
 * pose and particles bit for bit, the pose also against the closed form. */
static void test_restart_across_mesh_schedule(void **state) {
    (void)state;
    const char *text =
        "Domain { min < 0, 0, 0 >; max < 0.04, 0.01, 0.02 >; wall_axes < 1, 1, 0 >;\n"
        "  Mesh { shape rectangle; centre < 0.02, 0.005, 0 >; normal < 0, 0, 1 >;\n"
        "    width 0.06; height 0.03;\n"
        "    Schedule { time 0.002; velocity < 0.1, 0, 0 >; angular_velocity < 0, 0, 5 >; }\n"
        "    Schedule { time 0.004; angular_velocity < 0, 0, -3 >; } } }\n"
        "Materials { friction 0.5; }\n"
        "Lattice { count < 4, 2, 1 >; origin < 0.008, 0.0025, 0.0025 >; spacing 0.005;\n"
        "  radius 0.0025; }\n"
        "Physics { gravity < 0, 0, -9.81 >; }\n"
        "Time { dt 1e-4; steps 0; }\n";
    gf_sim a, b;
    gf_config *ca, *cb;
    run_and_restart(text, "msched.ckpt.h5", &a, &ca, &b, &cb);
    /* 2 ms at 0.1 m/s; 2 ms at 5 rad/s, then 2 ms at -3 rad/s about z. */
    GF_ASSERT_NEAR(b.walls.mesh_x[0][0], 0.02 + 0.1 * 0.002, 1e-12);
    double half = 0.5 * (5.0 * 0.002 - 3.0 * 0.002);
    GF_ASSERT_NEAR(b.walls.mesh_q[0][0], cos(half), 1e-12);
    GF_ASSERT_NEAR(b.walls.mesh_q[0][3], sin(half), 1e-12);
    for (int d = 0; d < 3; ++d)
        assert_true(b.walls.mesh_x[0][d] == a.walls.mesh_x[0][d]);
    for (int d = 0; d < 4; ++d)
        assert_true(b.walls.mesh_q[0][d] == a.walls.mesh_q[0][d]);
    double sa[8 * 9], sb[8 * 9];
    by_id(&a, 8, sa);
    by_id(&b, 8, sb);
    for (int k = 0; k < 8 * 9; ++k)
        if (sa[k] != sb[k])
            fail_msg("particle %d, value %d: %.17g restarted, %.17g uninterrupted", k / 9, k % 9,
                     sb[k], sa[k]);
    /* The floor dragged them along x (friction, about 9 micrometres): it did touch them. */
    assert_true(sa[0] - 0.008 > 1e-6);
    gf_sim_free(&a);
    gf_sim_free(&b);
    gf_config_destroy(ca);
    gf_config_destroy(cb);
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "diag");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_floor_carries_weight, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sliding_friction, setup, teardown),
    cmocka_unit_test_setup_teardown(test_potential_energy, setup, teardown),
    cmocka_unit_test_setup_teardown(test_track_crosses_ranks, setup, teardown),
    cmocka_unit_test_setup_teardown(test_gate_opens_on_schedule, setup, teardown),
    cmocka_unit_test_setup_teardown(test_fixed_lattice, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_keeps_motion, setup, teardown),
    cmocka_unit_test_setup_teardown(test_mesh_floor_carries_weight, setup, teardown),
    cmocka_unit_test_setup_teardown(test_mesh_gate_pushes_on_schedule, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_across_mesh_schedule, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
