#include "granflow/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "granflow/integrator.h"
#include "granflow/log.h"
#include "granflow/scenario.h"

gf_status gf_sim_init(gf_sim *sim, const gf_par *par) {
    memset(sim, 0, sizeof *sim);
    sim->par = par;
    gf_particles_init(&sim->particles);
    gf_walls_init(&sim->walls);
    gf_materials_init(&sim->materials);
    gf_contacts_init(&sim->contacts);
    gf_linkcells_init(&sim->cells);
    gf_timers_reset(&sim->timers);
    sim->dt = 1e-4;
    sim->steps = 0;
    sim->margin_tolerance = 0.0;
    sim->progress_every = 0;
    for (int d = 0; d < 3; ++d) {
        sim->lo[d] = -INFINITY;
        sim->hi[d] = INFINITY;
    }
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    return gf_sim_set_solver(sim, &prm);
}

void gf_sim_free(gf_sim *sim) {
    gf_particles_free(&sim->particles);
    gf_contacts_free(&sim->contacts);
    gf_linkcells_free(&sim->cells);
    gf_solver_free(&sim->solver);
}

gf_status gf_sim_set_solver(gf_sim *sim, const gf_solver_params *prm) {
    gf_solver_free(&sim->solver);
    sim->solver_params = *prm;
    return gf_solver_init(&sim->solver, prm);
}

static gf_status count_global(gf_sim *sim) {
    int64_t n = (int64_t)sim->particles.n_local;
    if (sim->par)
        GF_TRY(gf_par_allreduce_i64(sim->par, &n, 1, GF_PAR_SUM));
    sim->global_particles = n;
    return GF_OK;
}

gf_status gf_sim_configure(gf_sim *sim, gf_config *cfg) {
    if (sim->par && sim->par->size > 1)
        return GF_ERROR(GF_ERR_UNSUPPORTED,
                        "this build runs on one MPI rank only (%d requested): the domain "
                        "decomposition is not part of it yet",
                        sim->par->size);
    gf_config_block *root = gf_config_root(cfg);
    GF_TRY(gf_materials_configure(&sim->materials, root));
    GF_TRY(gf_geometry_configure(&sim->walls, sim->lo, sim->hi, root, &sim->materials));

    gf_config_block *tb = gf_config_section(root, "Time");
    if (!tb)
        return gf_error_status();
    GF_TRY(gf_config_require_double(tb, "dt", &sim->dt));
    GF_TRY(gf_config_check_range(tb, "dt", sim->dt, 1e-300, 1e300));
    GF_TRY(gf_config_get_long(tb, "steps", 1000, &sim->steps));
    GF_TRY(gf_config_check_range(tb, "steps", (double)sim->steps, 0, 1e15));

    gf_config_block *pb = gf_config_section(root, "Physics");
    if (!pb)
        return gf_error_status();
    static const double g_def[3] = {0.0, 0.0, -9.81};
    GF_TRY(gf_config_get_vec3(pb, "gravity", g_def, sim->gravity));

    gf_solver_params prm;
    GF_TRY(gf_solver_configure(&prm, root));
    GF_TRY(gf_sim_set_solver(sim, &prm));

    gf_config_block *cb = gf_config_section(root, "Contact");
    if (!cb)
        return gf_error_status();
    double frac = 0.05;
    GF_TRY(gf_config_get_double(cb, "margin_fraction", frac, &frac));
    GF_TRY(gf_config_check_range(cb, "margin_fraction", frac, 0.0, 10.0));

    gf_config_block *ob = gf_config_section(root, "Output");
    if (!ob)
        return gf_error_status();
    GF_TRY(gf_config_get_long(ob, "progress_every", 100, &sim->progress_every));
    GF_TRY(gf_config_check_range(ob, "progress_every", (double)sim->progress_every, 0, 1e15));

    gf_lattice lat;
    GF_TRY(gf_lattice_configure(&lat, root, &sim->materials, sim->lo, sim->hi));
    GF_TRY(gf_lattice_generate(&lat, &sim->materials, sim->lo, sim->hi, &sim->particles));
    sim->margin_tolerance = frac * lat.radius;
    return count_global(sim);
}

/* The speculative margin of this step: anything that can close within dt is a contact. */
static double step_margin(const gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    double vmax2 = 0.0;
    for (size_t i = 0; i < p->n_local + p->n_ghost; ++i) {
        double v2 = p->v[0][i] * p->v[0][i] + p->v[1][i] * p->v[1][i] + p->v[2][i] * p->v[2][i];
        vmax2 = v2 > vmax2 ? v2 : vmax2;
    }
    double vwall = 0.0;
    for (size_t k = 0; k < sim->walls.count; ++k) {
        double s = sqrt(sim->walls.velocity[k][0] * sim->walls.velocity[k][0] +
                        sim->walls.velocity[k][1] * sim->walls.velocity[k][1] +
                        sim->walls.velocity[k][2] * sim->walls.velocity[k][2]);
        vwall = s > vwall ? s : vwall;
    }
    double g = sqrt(sim->gravity[0] * sim->gravity[0] + sim->gravity[1] * sim->gravity[1] +
                    sim->gravity[2] * sim->gravity[2]);
    double v = sqrt(vmax2) + g * sim->dt;
    return sim->margin_tolerance + sim->dt * (2.0 * v + vwall);
}

static gf_status check_state(const gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    for (size_t i = 0; i < p->n_local; ++i) {
        double s = p->x[0][i] + p->x[1][i] + p->x[2][i] + p->v[0][i] + p->v[1][i] + p->v[2][i] +
                   p->w[0][i] + p->w[1][i] + p->w[2][i];
        if (!isfinite(s))
            return GF_ERROR(GF_ERR_NUMERIC,
                            "particle %lld has a non-finite state after step %ld (position %g %g "
                            "%g, velocity %g %g %g)",
                            (long long)p->id[i], sim->step, p->x[0][i], p->x[1][i], p->x[2][i],
                            p->v[0][i], p->v[1][i], p->v[2][i]);
    }
    return GF_OK;
}

gf_status gf_sim_step(gf_sim *sim) {
    gf_timers *tm = &sim->timers;

    gf_timer_start(tm, GF_TIMER_DETECT);
    gf_status st = gf_contact_detect(&sim->particles, &sim->walls, &sim->materials,
                                     step_margin(sim), &sim->cells, &sim->contacts);
    gf_timer_stop(tm, GF_TIMER_DETECT);
    GF_TRY(st);

    gf_timer_start(tm, GF_TIMER_PREPARE);
    gf_integrate_free_velocity(&sim->particles, sim->gravity, sim->dt);
    st = gf_solver_prepare(&sim->solver, &sim->particles, &sim->contacts);
    gf_timer_stop(tm, GF_TIMER_PREPARE);
    GF_TRY(st);

    gf_timer_start(tm, GF_TIMER_SOLVE);
    st = gf_solver_solve(&sim->solver, &sim->particles, &sim->walls, &sim->contacts, sim->dt,
                         &sim->last_solve);
    gf_timer_stop(tm, GF_TIMER_SOLVE);
    if (st != GF_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s", gf_error_message());
        return GF_ERROR(st, "step %ld: %s", sim->step, msg);
    }

    gf_timer_start(tm, GF_TIMER_INTEGRATE);
    gf_integrate_positions(&sim->particles, sim->dt);
    gf_walls_advance(&sim->walls, sim->dt);
    sim->time += sim->dt;
    sim->step++;
    st = check_state(sim);
    gf_timer_stop(tm, GF_TIMER_INTEGRATE);
    GF_TRY(st);

    sim->total_iterations += sim->last_solve.iterations;
    sim->total_contacts += (int64_t)sim->contacts.count;
    return GF_OK;
}

static void format_duration(double s, char *buf, size_t size) {
    if (!isfinite(s) || s < 0)
        snprintf(buf, size, "?");
    else if (s < 120)
        snprintf(buf, size, "%.1fs", s);
    else if (s < 7200)
        snprintf(buf, size, "%.1fmin", s / 60);
    else
        snprintf(buf, size, "%.1fh", s / 3600);
}

static gf_status progress(gf_sim *sim, long done) {
    double vals[3] = {(double)sim->contacts.count, (double)sim->last_solve.iterations,
                      sim->last_solve.residual};
    int64_t n = (int64_t)sim->particles.n_local;
    if (sim->par) {
        GF_TRY(gf_par_allreduce_double(sim->par, vals, 1, GF_PAR_SUM));
        GF_TRY(gf_par_allreduce_double(sim->par, vals + 1, 2, GF_PAR_MAX));
        GF_TRY(gf_par_allreduce_i64(sim->par, &n, 1, GF_PAR_SUM));
    }
    double wall = gf_wtime() - sim->start_wtime;
    double eta = done > 0 ? wall / (double)done * (double)(sim->steps - done) : NAN;
    char ws[32], es[32];
    format_duration(wall, ws, sizeof ws);
    format_duration(eta, es, sizeof es);
    gf_log_info("step %8ld  t %.6e s  particles %lld  contacts %.0f  iterations %3.0f  "
                "residual %.2e  wall %s  ETA %s",
                sim->step, sim->time, (long long)n, vals[0], vals[1], vals[2], ws, es);
    return GF_OK;
}

gf_status gf_sim_run(gf_sim *sim) {
    sim->start_wtime = gf_wtime();
    gf_timer_start(&sim->timers, GF_TIMER_TOTAL);
    for (long k = 0; k < sim->steps; ++k) {
        GF_TRY(gf_sim_step(sim));
        if (sim->progress_every > 0 && ((k + 1) % sim->progress_every == 0 || k + 1 == sim->steps))
            GF_TRY(progress(sim, k + 1));
    }
    gf_timer_stop(&sim->timers, GF_TIMER_TOTAL);
    return count_global(sim);
}

void gf_sim_print_summary(gf_sim *sim) {
    const gf_timers *tm = &sim->timers;
    double total = tm->elapsed[GF_TIMER_TOTAL];
    gf_log_info("\nrun summary: %ld steps, t = %.6e s, %lld particles", sim->step, sim->time,
                (long long)sim->global_particles);
    gf_log_info("  %-12s %12s %8s", "phase", "time (s)", "%");
    for (int k = GF_TIMER_DETECT; k < GF_TIMER_COUNT; ++k)
        gf_log_info("  %-12s %12.4f %7.1f%%", gf_timer_name((gf_timer_id)k), tm->elapsed[k],
                    total > 0 ? 100.0 * tm->elapsed[k] / total : 0.0);
    gf_log_info("  %-12s %12.4f", "total", total);
    if (total > 0 && sim->step > 0) {
        double updates = (double)sim->global_particles * (double)sim->step;
        gf_log_info("  particle updates per second: %.4g", updates / total);
        gf_log_info("  mean contacts per step: %.1f, mean solver sweeps per step: %.1f",
                    (double)sim->total_contacts / (double)sim->step,
                    (double)sim->total_iterations / (double)sim->step);
    }
}
