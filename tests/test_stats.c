/* The figures a run reports (issue 11): contacts counted as solved, touching and loaded; the
 * deepest penetration over every step, relative to the smaller radius of the pair and taken
 * before particles are reordered; the speculative margin of configurations without a lattice;
 * steps that end at max_iterations counted; particle updates from the particles stepped. Each
 * expected value follows from the construction of the case. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "sim/observer.h"
#include "sim/sim.h"
#include "diag/stats.h"
#include "test_util.h"

static char tmpdir[64];

/* A serial simulation with a floor at z = 0, no gravity unless set, frictionless. */
static void make_sim(gf_sim *sim) {
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    const double o[3] = {0, 0, 0}, up[3] = {0, 0, 1};
    GF_ASSERT_OK(gf_walls_add(&sim->walls, o, up, NULL, 0));
    sim->dt = 1e-4;
    sim->margin_tolerance = 0.0;
    sim->margin_fraction = 0.05;
    sim->check_every = 0;
}

static void add_sphere(gf_sim *sim, int64_t id, double x, double y, double z, double r) {
    gf_particle rec;
    const double c[3] = {x, y, z};
    gf_particle_make_sphere(&rec, id, c, r, 2500, 0);
    GF_ASSERT_OK(gf_particles_add(&sim->particles, &rec));
}

static void stats_every(gf_stats *st, const gf_sim *sim, long every, const char *name) {
    memset(st, 0, sizeof *st);
    st->every = every;
    for (int d = 0; d < 3; ++d) {
        st->region_lo[d] = -1.0;
        st->region_hi[d] = 1.0;
    }
    snprintf(st->file, sizeof st->file, "%s/%s", tmpdir, name);
    (void)sim;
}

/* The CSV field in column `name` of the last row. */
static double csv_last(const char *path, const char *name) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char hdr[1024], line[1024], last[1024] = "";
    assert_non_null(fgets(hdr, sizeof hdr, f));
    while (fgets(line, sizeof line, f))
        snprintf(last, sizeof last, "%s", line);
    fclose(f);
    int col = -1, k = 0;
    for (char *t = strtok(hdr, ",\n"); t; t = strtok(NULL, ",\n"), ++k)
        if (!strcmp(t, name))
            col = k;
    if (col < 0)
        fail_msg("no column %s in %s", name, path);
    char *c = last;
    for (; col > 0; --col)
        c = strchr(c, ',') + 1;
    return strtod(c, NULL);
}

/* A column of three spheres resting on the floor (three touching, loaded contacts under
 * gravity) and a fourth sphere hovering 1e-5 m above the floor, within the speculative margin
 * (5e-4 m) but not reached in one step (it falls g dt^2 = 1e-7 m): solved, not touching, not
 * loaded. */
static void test_contact_counts(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    sim.gravity[2] = -9.81;
    const double r = 0.01;
    /* Overlaps of 1 nm, so that rounding cannot open a gap. */
    add_sphere(&sim, 0, 0.0, 0.0, r - 1e-9, r);
    add_sphere(&sim, 1, 0.0, 0.0, 3 * r - 2e-9, r);
    add_sphere(&sim, 2, 0.0, 0.0, 5 * r - 3e-9, r);
    add_sphere(&sim, 3, 0.1, 0.0, r + 1e-5, r);
    gf_stats st;
    stats_every(&st, &sim, 1, "counts.csv");
    GF_ASSERT_OK(gf_sim_step(&sim));
    GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
    assert_int_equal(sim.figures.solved, 4);
    assert_int_equal(sim.figures.touching, 3);
    assert_int_equal(sim.figures.loaded, 3);
    char path[256];
    snprintf(path, sizeof path, "%s/counts.csv", tmpdir);
    gf_stats_finish(&st, &sim);
    assert_true(csv_last(path, "contacts_solved") == 4);
    assert_true(csv_last(path, "contacts_touching") == 3);
    assert_true(csv_last(path, "contacts_loaded") == 3);
    /* 2C/N: 2 * 3 / 4. */
    GF_ASSERT_NEAR(csv_last(path, "contacts_per_particle"), 1.5, 1e-12);
    GF_ASSERT_NEAR(csv_last(path, "loaded_contacts_per_particle"), 1.5, 1e-12);
    gf_sim_free(&sim);
}

/* A sphere starts 1% of its radius deep in the floor, without gravity; the first step gives it
 * the velocity that removes 10% of the penetration beyond the slop s a step, which it keeps, so
 * the deepest penetration is that of the first step, d = 1e-4 m, while the tenth step (the first
 * sampled) sees only d - 9 * 0.1 (d - s). */
static void test_penetration_of_every_step(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    const double r = 0.01, d = 0.01 * r;
    add_sphere(&sim, 0, 0.0, 0.0, r - d, r);
    gf_stats st;
    stats_every(&st, &sim, 10, "pen.csv");
    for (int s = 0; s < 10; ++s) {
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
    }
    char path[256];
    snprintf(path, sizeof path, "%s/pen.csv", tmpdir);
    gf_stats_finish(&st, &sim);
    GF_ASSERT_NEAR(csv_last(path, "max_penetration"), d, 1e-6 * d);
    GF_ASSERT_NEAR(csv_last(path, "max_penetration_rel"), d / r, 1e-6 * d / r);
    GF_ASSERT_NEAR(st.max_penetration, d, 1e-12 * d);
    GF_ASSERT_NEAR(sim.run_figures.max_penetration, d, 1e-12 * d);
    /* each step removes 10 % of what the penetration exceeds the slop by */
    const double slop = sim.solver_params.penetration_slop * r;
    GF_ASSERT_NEAR(sim.figures.max_penetration, 0.1 * d + 0.9 * slop, 1e-9 * d);
    gf_sim_free(&sim);
}

/* A small sphere (radius 2 mm) pressed 0.1 mm into a big one (20 mm, stored first, so the pair's
 * first body), and a medium sphere far away. The relative penetration is that of the small
 * radius, 5%, also when the big sphere is deleted after the step (as the outflow deletes
 * particles, moving the last one into its slot) before the statistics are taken. */
static void test_relative_penetration(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    const double R = 0.02, r = 0.002, d = 1e-4;
    add_sphere(&sim, 0, 0.0, 0.0, 0.5, R);
    add_sphere(&sim, 1, 0.0, 0.0, 0.5 + R + r - d, r);
    add_sphere(&sim, 2, 0.3, 0.0, 0.5, 0.005);
    gf_stats st;
    stats_every(&st, &sim, 1, "rel.csv");
    GF_ASSERT_OK(gf_sim_step(&sim));
    gf_particles_remove(&sim.particles, 0);
    GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
    char path[256];
    snprintf(path, sizeof path, "%s/rel.csv", tmpdir);
    gf_stats_finish(&st, &sim);
    GF_ASSERT_NEAR(csv_last(path, "max_penetration"), d, 1e-6 * d);
    GF_ASSERT_NEAR(csv_last(path, "max_penetration_rel"), d / r, 1e-6 * d / r);
    gf_sim_free(&sim);
}

/* Without a Lattice block (an inflow fills the box) the speculative margin still holds its share
 * of the radius: margin >= margin_fraction * r beyond the motion of a step. */
static void test_margin_without_lattice(void **state) {
    (void)state;
    static const char text[] = "Domain { min <0,0,0>; max <0.02,0.02,0.02>; }\n"
                               "Inflow { radius 0.001; speed 1; }\n"
                               "Contact { margin_fraction 0.2; }\n"
                               "Physics { gravity <0,0,0>; }\n"
                               "Time { dt 1e-5; steps 1000; }\n";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "inflow.cfg", &cfg));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, NULL));
    GF_ASSERT_OK(gf_sim_configure(&sim, cfg, 1));
    /* The first layer enters once the piston has moved two radii, after 200 steps. */
    for (int s = 0; s < 300 && sim.particles.n_local == 0; ++s)
        GF_ASSERT_OK(gf_sim_step(&sim));
    assert_true(sim.particles.n_local > 0);
    GF_ASSERT_OK(gf_sim_step(&sim));
    double vmax = 0.0;
    for (size_t i = 0; i < sim.particles.n_local; ++i)
        vmax = fmax(vmax, fabs(sim.particles.v[0][i]));
    assert_true(sim.margin >= 0.2 * 0.001 + 2.0 * vmax * sim.dt);
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* Ten touching spheres in a row, the first moving into the others: three sweeps cannot carry the
 * impulse down the chain, so the step ends unconverged and is counted; enough sweeps converge.
 * The particle updates count the particles each step stepped (one sphere deleted midway). */
/* The ETA of the progress line follows the recent rate: steps that grew from 0.02 s to 0.05 s
 * (a pile forming) leave 400 steps for 20 s, not the 10 s the average rate would promise. */
static void test_eta_from_recent_rate(void **state) {
    (void)state;
    GF_ASSERT_NEAR(gf_sim_eta(10.0, 500, 15.0, 600, 1000), 400 * 0.05, 1e-12);
    /* The first line has only the average; before the first step there is none. */
    GF_ASSERT_NEAR(gf_sim_eta(0.0, 0, 10.0, 500, 1000), 500 * 0.02, 1e-12);
    assert_true(isnan(gf_sim_eta(0.0, 0, 0.0, 0, 1000)));
}

static void test_unconverged_and_stepped(void **state) {
    (void)state;
    for (int sweeps = 3; sweeps <= 3000; sweeps *= 1000) {
        gf_sim sim;
        make_sim(&sim);
        gf_solver_params prm = sim.solver_params;
        prm.model = GF_MODEL_FRICTIONLESS;
        prm.max_iterations = sweeps;
        prm.warm_start = 0;
        GF_ASSERT_OK(gf_sim_set_solver(&sim, &prm));
        const double r = 0.01;
        for (int k = 0; k < 10; ++k)
            add_sphere(&sim, k, 2 * r * k, 0.0, 0.5, r);
        sim.particles.v[0][0] = 1.0;
        gf_stats st;
        stats_every(&st, &sim, 1, "unconv.csv");
        GF_ASSERT_OK(gf_sim_step(&sim));
        GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
        char path[256];
        snprintf(path, sizeof path, "%s/unconv.csv", tmpdir);
        if (sweeps == 3) {
            assert_int_equal(sim.unconverged_steps, 1);
            assert_true(csv_last(path, "unconverged_steps") == 1);
        } else {
            assert_int_equal(sim.unconverged_steps, 0);
            assert_true(csv_last(path, "unconverged_steps") == 0);
        }
        gf_particles_clear_ghosts(&sim.particles);
        gf_particles_remove(&sim.particles, 9);
        GF_ASSERT_OK(gf_sim_step(&sim));
        assert_int_equal(sim.stepped_particles, 10 + 9);
        gf_stats_finish(&st, &sim);
        gf_sim_free(&sim);
    }
}

/* A row that cannot be written (a full disk: /dev/full takes the open and refuses the data) is
 * an error naming the file, not a silent gap in the series. */
static void test_full_disk_reported(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    add_sphere(&sim, 0, 0.0, 0.0, 0.5, 0.01);
    gf_stats st;
    stats_every(&st, &sim, 1, "unused.csv");
    snprintf(st.file, sizeof st.file, "/dev/full");
    GF_ASSERT_OK(gf_sim_step(&sim));
    assert_int_equal(gf_stats_observe(&st, &sim, 0), GF_ERR_IO);
    if (!strstr(gf_error_message(), "/dev/full"))
        fail_msg("the message does not name the file: %s", gf_error_message());
    gf_error_clear();
    gf_stats_finish(&st, &sim);
    gf_sim_free(&sim);
}

static int setup(void **state) {
    (void)state;
    return gf_test_tmpdir(tmpdir, sizeof tmpdir, "stats");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_rmtree(tmpdir);
}

/* ------------------------------------------------------------------------------------------ */
/* The observer list (issue 32): registration order for steps, reverse order at the end         */

/* An observer that writes what happens to it into one log shared by all of them. */
typedef struct {
    char tag;
    long stop_at; /* asks to stop after this step (0: never) */
    int fail_check;
} probe;

static char probe_log[256];

static void probe_note(const probe *p, char what, long step) {
    size_t n = strlen(probe_log);
    snprintf(probe_log + n, sizeof probe_log - n, "%c%c%ld ", p->tag, what, step);
}

static gf_status probe_check(const void *self) {
    const probe *p = self;
    probe_note(p, 'c', 0);
    return p->fail_check ? GF_ERROR(GF_ERR_IO, "probe %c: cannot write", p->tag) : GF_OK;
}

static gf_status probe_start(void *self, gf_sim *sim, int restarted) {
    probe_note(self, 's', sim->step + restarted);
    return GF_OK;
}

static gf_status probe_observe(void *self, gf_sim *sim, int *stop) {
    probe *p = self;
    probe_note(p, 'o', sim->step);
    *stop = p->stop_at > 0 && sim->step >= p->stop_at;
    return GF_OK;
}

static gf_status probe_finish(void *self, gf_sim *sim) {
    probe_note(self, 'f', sim->step);
    return GF_OK;
}

static void probe_release(void *self) {
    probe_note(self, 'r', 0);
}

static const gf_observer_type probe_type = {
    .name = "probe",
    .size = sizeof(probe),
    .check = probe_check,
    .start = probe_start,
    .observe = probe_observe,
    .finish = probe_finish,
    .release = probe_release,
};

/* Steps reach the observers in the order they were added, each sees the step at which one asks
 * to stop (also those after it), and they finish and are released in reverse. */
static void test_observers_order_and_stop(void **state) {
    (void)state;
    gf_sim sim;
    make_sim(&sim);
    add_sphere(&sim, 1, 0, 0, 0.5, 0.1);
    sim.steps = 10;
    sim.progress_every = 0;
    gf_observers obs;
    gf_observers_init(&obs);
    probe *p[3];
    for (int k = 0; k < 3; ++k) {
        GF_ASSERT_OK(gf_observers_add(&obs, &probe_type, (void **)&p[k]));
        p[k]->tag = (char)('A' + k);
    }
    assert_ptr_equal(gf_observers_find(&obs, &probe_type), p[0]);
    p[1]->stop_at = 2;
    probe_log[0] = '\0';
    GF_ASSERT_OK(gf_observers_check(&obs, &sim));
    GF_ASSERT_OK(gf_observers_start(&obs, &sim, 0));
    GF_ASSERT_OK(gf_sim_run(&sim, gf_observers_observe, &obs));
    assert_int_equal(sim.step, 2);
    GF_ASSERT_OK(gf_observers_finish(&obs, &sim));
    gf_observers_free(&obs);
    assert_string_equal(probe_log, "Ac0 Bc0 Cc0 As0 Bs0 Cs0 Ao1 Bo1 Co1 Ao2 Bo2 Co2 Cf2 Bf2 Af2 "
                                   "Cr0 Br0 Ar0 ");
    /* A failing check is reported, and the checks after it are not made. */
    gf_observers_init(&obs);
    for (int k = 0; k < 2; ++k) {
        GF_ASSERT_OK(gf_observers_add(&obs, &probe_type, (void **)&p[k]));
        p[k]->tag = (char)('A' + k);
        p[k]->fail_check = 1;
    }
    probe_log[0] = '\0';
    assert_int_equal(gf_observers_check(&obs, &sim), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "probe A"));
    gf_observers_free(&obs);
    assert_string_equal(probe_log, "Ac0 Br0 Ar0 ");
    gf_sim_free(&sim);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contact_counts),
        cmocka_unit_test(test_penetration_of_every_step),
        cmocka_unit_test(test_relative_penetration),
        cmocka_unit_test(test_margin_without_lattice),
        cmocka_unit_test(test_eta_from_recent_rate),
        cmocka_unit_test(test_unconverged_and_stepped),
        cmocka_unit_test(test_full_disk_reported),
        cmocka_unit_test(test_observers_order_and_stop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
