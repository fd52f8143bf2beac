/* What a run reports: the tallies of each step, the progress line and the summary. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

/* The histogram bin of a step's residual against the tolerance (quarter decades from 1e-12 of
 * it; a residual of 0, or a tolerance of 0, is bin 0). */
static int residual_bin(double residual, double tolerance) {
    if (!(residual > 0.0) || !(tolerance > 0.0))
        return 0;
    double b = floor(4.0 * log10(residual / tolerance)) + 49.0;
    return b < 0.0 ? 0 : b > GF_SIM_RESIDUAL_BINS - 1 ? GF_SIM_RESIDUAL_BINS - 1 : (int)b;
}

/* The median residual / tolerance of the run's steps (the upper edge of its bin). */
static double residual_median(const gf_sim *sim) {
    long seen = 0;
    for (int k = 0; k < GF_SIM_RESIDUAL_BINS; ++k) {
        seen += sim->residual_hist[k];
        if (2 * seen >= sim->residual_steps)
            return pow(10.0, (k - 48) / 4.0);
    }
    return INFINITY;
}

void gf_sim_tally_step(gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    const gf_contacts *c = &sim->contacts;
    gf_contact_figures f = {(int64_t)c->count, 0, 0, 0.0, 0.0};
    for (size_t j = 0; j < c->count; ++j) {
        f.loaded += c->lambda[0][j] > 0.0;
        double pen = -c->gap[j];
        if (pen < 0.0)
            continue;
        f.touching++;
        double r = gf_particles_thickness(p, (size_t)c->i1[j]);
        if (c->i2[j] >= 0)
            r = fmin(r, gf_particles_thickness(p, (size_t)c->i2[j]));
        f.max_penetration = fmax(f.max_penetration, pen);
        f.max_penetration_rel = fmax(f.max_penetration_rel, pen / r);
        if (pen / r > sim->deepest.rel) {
            gf_deepest_contact *d = &sim->deepest;
            d->rel = pen / r;
            d->depth = pen;
            d->id1 = c->id1[j];
            d->id2 = c->id2[j];
            d->step = sim->step + 1; /* the step being made */
            d->shape1 = p->shape[c->i1[j]];
            d->shape2 = c->i2[j] >= 0 ? p->shape[c->i2[j]] : -1;
        }
    }
    sim->figures = f;
    gf_contact_figures *run = &sim->run_figures;
    run->solved += f.solved;
    run->touching += f.touching;
    run->loaded += f.loaded;
    run->max_penetration = fmax(run->max_penetration, f.max_penetration);
    run->max_penetration_rel = fmax(run->max_penetration_rel, f.max_penetration_rel);
    sim->stepped_particles += (int64_t)p->n_local;
    sim->total_iterations += sim->last_solve.iterations;
    sim->total_blocks[0] += sim->last_solve.blocks;
    sim->total_blocks[1] += sim->last_solve.slots;
    sim->total_joints[0] += sim->last_solve.joints;
    sim->total_joints[1] += sim->last_solve.fallbacks;
    sim->unconverged_steps += !sim->last_solve.converged;
    if (sim->last_solve.converged >= 0 && sim->last_solve.stalled) {
        sim->stalled_steps++;
        sim->stalled_max = fmax(sim->stalled_max, sim->last_solve.residual);
    } else if (sim->last_solve.converged >= 0 && isfinite(sim->last_solve.residual)) {
        sim->residual_sum += sim->last_solve.residual;
        sim->residual_max = fmax(sim->residual_max, sim->last_solve.residual);
        sim->residual_steps++;
        sim->residual_hist[residual_bin(sim->last_solve.residual, sim->solver_params.tolerance)]++;
    }
}

/* The summary's lines on load balancing (the figures are the same on every rank). */
static void log_balance(const gf_sim *sim) {
    gf_log_info("  load balancing every %ld steps: the largest rank's work (particles and "
                "contacts) over the mean was %.3g on average over %ld balancings, %.3g at the "
                "last; %ld moved a cut",
                sim->balance_every, sim->balance_ratio_sum / (double)sim->balance_count,
                sim->balance_count, sim->balance_ratio_last, sim->balance_moves);
    const gf_decomp *d = &sim->xch.decomp;
    for (int a = 0; a < 3; ++a) {
        if (d->dims[a] < 2)
            continue;
        char line[512];
        int len = snprintf(line, sizeof line, "  cuts along %c (m):", "xyz"[a]);
        for (int k = 0; k <= d->dims[a] && len < (int)sizeof line - 16; ++k)
            len += snprintf(line + len, sizeof line - (size_t)len, " %.6g", gf_decomp_cut(d, a, k));
        gf_log_info("%s%s", line, len >= (int)sizeof line - 16 ? " ..." : "");
    }
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

double gf_sim_eta(double wall_then, long done_then, double wall_now, long done, long todo) {
    if (done <= 0)
        return NAN;
    double rate = done > done_then && done_then > 0
                      ? (wall_now - wall_then) / (double)(done - done_then)
                      : wall_now / (double)done;
    return rate * (double)(todo - done);
}

gf_status gf_sim_progress(gf_sim *sim, long done, long todo) {
    const gf_contact_figures *f = &sim->figures;
    /* Counts summed over ranks; the sweeps and residual are the same on every rank. */
    int64_t n[4] = {(int64_t)sim->particles.n_local, f->solved, f->touching, f->loaded};
    double mx[2] = {(double)sim->last_solve.iterations, sim->last_solve.residual};
    if (sim->par) {
        GF_TRY(gf_par_allreduce_i64(sim->par, n, 4, GF_PAR_SUM));
        GF_TRY(gf_par_allreduce_double(sim->par, mx, 2, GF_PAR_MAX));
    }
    double wall = gf_wtime() - sim->start_wtime;
    double eta = gf_sim_eta(sim->progress_wtime, sim->progress_done, wall, done, todo);
    sim->progress_wtime = wall;
    sim->progress_done = done;
    char ws[32], es[32], unconv[64] = "", error[64];
    format_duration(wall, ws, sizeof ws);
    format_duration(eta, es, sizeof es);
    if (sim->unconverged_steps > 0)
        snprintf(unconv, sizeof unconv, "  unconverged %ld", sim->unconverged_steps);
    /* The step's estimated velocity error against what the tolerance allows (<= 1: converged);
     * without a tolerance the residual itself. `!`: the step ended at the sweep budget. */
    const double tol = sim->solver_params.tolerance;
    if (tol > 0.0 && sim->last_solve.stalled)
        snprintf(error, sizeof error, "not contracting, change %.2g x tol", mx[1] / tol);
    else if (tol > 0.0 && sim->last_solve.converged >= 0)
        snprintf(error, sizeof error, "error %.2g x tol", mx[1] / tol);
    else
        snprintf(error, sizeof error, "residual %.2e", mx[1]);
    gf_log_info("step %8ld  t %.6e s  particles %lld  contacts %lld (touching %lld, loaded "
                "%lld)  sweeps %3.0f%s  %s%s  wall %s  ETA %s",
                sim->step, sim->time, (long long)n[0], (long long)n[1], (long long)n[2],
                (long long)n[3], mx[0], sim->last_solve.converged ? "" : "!", error, unconv, ws,
                es);
    return GF_OK;
}

/* How far from converged the run's steps ended, and what to change where that is far. */
static void log_convergence(const gf_sim *sim, double steps) {
    const double tol = sim->solver_params.tolerance, median = residual_median(sim);
    const double worst = sim->residual_max / tol;
    const double share = (double)sim->unconverged_steps / steps;
    gf_log_info("  estimated velocity error over the steps, in units of what Solver.tolerance "
                "allows (tolerance x reference velocity): median %.2g, worst %.2g (<= 1: "
                "converged; a step marked `!` on the progress line stopped at "
                "Solver.max_iterations = %ld sweeps that far from converged)",
                median, worst, sim->solver_params.max_iterations);
    if (sim->stalled_steps > 0)
        gf_log_info("  %ld steps (%.2g%%) stopped with their sweeps no longer contracting (a cycle "
                    "of Gauss-Seidel): their error has no estimate and is not in the figures "
                    "above; their last sweep still changed the velocities by up to %.2g x the "
                    "tolerance; more sweeps do not end a cycle",
                    sim->stalled_steps, 100.0 * (double)sim->stalled_steps / steps,
                    sim->stalled_max / tol);
    if (share > 0.05 || median > 1.0)
        gf_log_info("  note: %.0f%% of the steps ended unconverged (median error %.2g x the "
                    "tolerance): raise Solver.max_iterations (now %ld) until they converge, or "
                    "set Solver.tolerance to the accuracy the study needs (the median step "
                    "reached %.2g); dense stacks and long force chains converge slowly under "
                    "Gauss-Seidel",
                    100.0 * share, median, sim->solver_params.max_iterations, median * tol);
}

/* "particle 17 (box)", or the geometry body as gf_walls_describe names it. */
static void body_name(const gf_sim *sim, int64_t id, int32_t shape, char *buf, size_t size) {
    if (id < 0)
        gf_walls_describe(&sim->walls, (int)(-1 - id), buf, size);
    else
        snprintf(buf, size, "particle %lld (%s)", (long long)id,
                 gf_shape_name((gf_shape_type)shape));
}

/* Collective: the deepest contact of all ranks on rank 0 (the others keep theirs). */
static gf_status deepest_of_all(const gf_sim *sim, gf_deepest_contact *d) {
    void *all = NULL;
    size_t *offsets = NULL;
    GF_TRY(gf_par_gather_bytes(sim->par, 0, d, sizeof *d, &all, &offsets));
    if (all) {
        const gf_deepest_contact *r = all;
        for (int k = 0; k < sim->par->size; ++k)
            if (r[k].rel > d->rel)
                *d = r[k];
    }
    free(all);
    free(offsets);
    return GF_OK;
}

void gf_sim_print_summary(gf_sim *sim) {
    const gf_timers *tm = &sim->timers;
    int nranks = sim->par ? sim->par->size : 1;
    double mn[GF_TIMER_COUNT], mx[GF_TIMER_COUNT], avg[GF_TIMER_COUNT];
    for (int k = 0; k < GF_TIMER_COUNT; ++k)
        mn[k] = mx[k] = avg[k] = tm->elapsed[k];
    const gf_contact_figures *rf = &sim->run_figures;
    int64_t counts[15] = {(int64_t)sim->particles.n_local,
                          sim->stepped_particles,
                          rf->solved,
                          rf->touching,
                          rf->loaded,
                          sim->outflow.left_box,
                          sim->promoted_contacts,
                          sim->total_blocks[0],
                          sim->total_blocks[1],
                          sim->cells.builds,
                          sim->cells.renames,
                          sim->cells.updates,
                          sim->total_joints[0],
                          sim->total_joints[1],
                          sim->rechecked_points};
    double pen[2] = {rf->max_penetration, rf->max_penetration_rel};
    gf_deepest_contact deepest = sim->deepest;
    if (sim->par && deepest_of_all(sim, &deepest) != GF_OK)
        return;
    if (sim->par) {
        /* Collective: every rank calls this. Failures only cost the report. */
        if (gf_par_allreduce_double(sim->par, mn, GF_TIMER_COUNT, GF_PAR_MIN) != GF_OK ||
            gf_par_allreduce_double(sim->par, mx, GF_TIMER_COUNT, GF_PAR_MAX) != GF_OK ||
            gf_par_allreduce_double(sim->par, avg, GF_TIMER_COUNT, GF_PAR_SUM) != GF_OK ||
            gf_par_allreduce_double(sim->par, pen, 2, GF_PAR_MAX) != GF_OK ||
            gf_par_allreduce_i64(sim->par, counts, 15, GF_PAR_SUM) != GF_OK)
            return;
        for (int k = 0; k < GF_TIMER_COUNT; ++k)
            avg[k] /= nranks;
    }
    int64_t outlet_n[GF_MAX_OUTLETS];
    double outlet_m[GF_MAX_OUTLETS];
    if (gf_outlets_totals(&sim->outlets, sim->par, outlet_n, outlet_m) != GF_OK)
        return;
    double total = avg[GF_TIMER_TOTAL];
    long run = sim->step - sim->first_step;
    if (sim->first_step > 0)
        gf_log_info("\nrun summary: %ld steps (%ld to %ld, restarted), t = %.6e s, %lld particles "
                    "on %d rank(s)",
                    run, sim->first_step, sim->step, sim->time, (long long)counts[0], nranks);
    else
        gf_log_info("\nrun summary: %ld steps, t = %.6e s, %lld particles on %d rank(s)", run,
                    sim->time, (long long)counts[0], nranks);
    gf_log_info("  %-12s %11s %11s %11s %8s", "phase", "min (s)", "avg (s)", "max (s)", "% total");
    /* On one rank the exchange sends nothing: it copies periodic images and keeps the ghost
     * bookkeeping, which "communicate" would misname. */
    for (int k = GF_TIMER_DETECT; k < GF_TIMER_COUNT; ++k)
        gf_log_info("  %-12s %11.4f %11.4f %11.4f %7.1f%%",
                    k == GF_TIMER_COMM && nranks == 1 ? "local copies"
                                                      : gf_timer_name((gf_timer_id)k),
                    mn[k], avg[k], mx[k], total > 0 ? 100.0 * avg[k] / total : 0.0);
    double other = total;
    for (int k = GF_TIMER_DETECT; k < GF_TIMER_COUNT; ++k)
        other -= avg[k];
    gf_log_info("  %-12s %11s %11.4f %11s %7.1f%%", "other", "", other, "",
                total > 0 ? 100.0 * other / total : 0.0);
    gf_log_info("  %-12s %11.4f %11.4f %11.4f", "total", mn[GF_TIMER_TOTAL], total,
                mx[GF_TIMER_TOTAL]);
    if (nranks == 1 && avg[GF_TIMER_COMM] > 0.0)
        gf_log_info("  (local copies: one rank's exchange, which sends no message: periodic images "
                    "and ghost bookkeeping)");
    if (counts[5] > 0)
        gf_log_info("  particles that left the box through open faces (deleted, counted as "
                    "outflow): %lld",
                    (long long)counts[5]);
    for (int k = 0; k < sim->inserts.count; ++k) {
        const gf_insertion *s = &sim->inserts.item[k];
        gf_log_info("  Insert %d (%s): %lld particles, %.6g kg inserted in %lld events since t = "
                    "0%s",
                    k + 1, s->where, (long long)s->inserted, s->mass, (long long)s->events,
                    s->carried > 0 ? "; particles due found no room at the last event" : "");
    }
    for (int k = 0; k < sim->outlets.count; ++k)
        gf_log_info("  Outlet %s: %lld particles, %.6g kg out since t = 0",
                    sim->outlets.item[k].name, (long long)outlet_n[k], outlet_m[k]);
    if (run <= 0)
        return;
    double steps = (double)run;
    if (total > 0)
        gf_log_info("  particle updates per second: %.4g total, %.4g per rank (%.4g particles "
                    "stepped per step on average)",
                    (double)counts[1] / total, (double)counts[1] / total / nranks,
                    (double)counts[1] / steps);
    gf_log_info("  contacts per step: %.1f solved, %.1f touching (gap <= 0), %.1f loaded "
                "(normal impulse > 0)",
                (double)counts[2] / steps, (double)counts[3] / steps, (double)counts[4] / steps);
    if (counts[11] > 0)
        gf_log_info("  candidate pairs (skin %.3g radii): the link cells searched at %.1f%% of "
                    "the steps; the list renamed after a change of the particle arrays at %.1f%% "
                    "(some of them searched after all)",
                    sim->skin_fraction, 100.0 * (double)counts[9] / (double)counts[11],
                    100.0 * (double)counts[10] / (double)counts[11]);
    long exchanges = sim->ghost_builds + sim->ghost_refreshes; /* the same on every rank */
    if (sim->distributed && exchanges > 0 && sim->ghost_skin_fraction > 0.0)
        gf_log_info("  ghost lists (skin %.3g radii): migrated and built at %.1f%% of the "
                    "exchanges, kept at the others (positions and velocities sent)",
                    sim->ghost_skin_fraction,
                    100.0 * (double)sim->ghost_builds / (double)exchanges);
    if (sim->per_pair)
        gf_log_info("  near pairs the solved velocities would close, added after the solve: %.3g "
                    "per step; the solves resumed for them: %.3g sweeps per step (together at "
                    "most Solver.max_iterations in a step, then one sweep each)",
                    (double)counts[6] / steps, (double)sim->resumed_iterations / steps);
    if (counts[14] > 0)
        gf_log_info("  points of turning non-spherical bodies that the solved motion would close, "
                    "added after the solve: %.3g per step (the pair found again with the solved "
                    "turns; its time counts in solve)",
                    (double)counts[14] / steps);
    gf_log_info("  solver sweeps per step: %.1f; steps that ended at max_iterations without "
                "converging: %ld (%.1f%%)",
                (double)sim->total_iterations / steps, sim->unconverged_steps,
                100.0 * (double)sim->unconverged_steps / steps);
    if (counts[8] > 0)
        gf_log_info("  blocks solved: %.4g per step, %.1f%% of contacts x sweeps (skipped: a block "
                    "whose bodies have not changed since it last changed nothing, an open contact "
                    "whose bodies have not moved by its slack)",
                    (double)counts[7] / steps, 100.0 * (double)counts[7] / (double)counts[8]);
    if (counts[12] > 0)
        gf_log_info("  contact manifolds solved jointly: %lld block solves, %lld of them (%.2g%%) "
                    "point by point where the joint kernel found no answer",
                    (long long)counts[12], (long long)counts[13],
                    100.0 * (double)counts[13] / (double)counts[12]);
    if (sim->residual_steps > 0)
        gf_log_info("  residual reached (estimated velocity error / reference velocity, tolerance "
                    "%g): mean %.3g, largest %.3g",
                    sim->solver_params.tolerance, sim->residual_sum / (double)sim->residual_steps,
                    sim->residual_max);
    if ((sim->residual_steps > 0 || sim->stalled_steps > 0) && sim->solver_params.tolerance > 0.0)
        log_convergence(sim, steps);
    gf_log_info("  max. penetration over every step of this run: %.4g m, %.3g%% of the thinner "
                "body's smallest half extent or radius",
                pen[0], 100.0 * pen[1]);
    if (deepest.rel > 0.0) {
        char b1[160], b2[160];
        body_name(sim, deepest.id1, deepest.shape1, b1, sizeof b1);
        body_name(sim, deepest.id2, deepest.shape2, b2, sizeof b2);
        gf_log_info("  the deepest relative to its pair: %s against %s in step %lld, %.4g m "
                    "(%.3g%% of the thinner body's smallest half extent or radius)",
                    b1, b2, (long long)deepest.step, deepest.depth, 100.0 * deepest.rel);
    }
    if (sim->balance_count > 0)
        log_balance(sim);
}
