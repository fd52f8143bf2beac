/* A run from a configuration file (run.h): the set-up, restart and run loop of the `granflow`
 * program, for any program. */
#include "granflow/run.h"
#include "core/order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "io/io.h"
#include "core/log.h"
#include "par/par.h"
#include "diag/run_observers.h"
#include "sim/sim.h"
#include "body/material.h"
#include "granflow/version.h"

struct gf_run {
    gf_par par;
    gf_config *cfg;
    gf_sim sim;
    int sim_ready; /* gf_sim_init succeeded */
    gf_observers obs;
    gf_output *out;
    int restarted;
    int started; /* observers checked and started */
    int finished;
};

/* Reads and parses the configuration on rank 0, then gives every rank the same text. */
static gf_status load_config(const gf_par *par, const gf_run_options *o, gf_config **cfg) {
    char *text = NULL;
    size_t len = 0;
    gf_status st = GF_OK;
    *cfg = NULL;
    if (par->rank == 0) {
        st = gf_config_read_file(o->config_path, &text, &len);
        if (st == GF_OK)
            st = gf_config_parse(text, len, o->config_path, cfg);
    }
    gf_status all = gf_par_agree(par, st, NULL);
    if (all != GF_OK) {
        free(text);
        gf_config_destroy(*cfg);
        *cfg = NULL;
        return all;
    }
    GF_TRY(gf_par_bcast_text(par, 0, &text, &len));
    if (par->rank != 0)
        st = gf_config_parse(text, len, o->config_path, cfg);
    free(text);
    for (int i = 0; st == GF_OK && i < o->noverrides; ++i)
        st = gf_config_override(*cfg, o->overrides[i]);
    return gf_par_agree(par, st, NULL);
}

/* The configuration into the simulation and the observers; every key must be used. */
static gf_status configure(gf_run *r, const gf_run_options *o) {
    r->sim.check_only = o->check;
    gf_status st = gf_sim_configure(&r->sim, r->cfg, o->restart == NULL);
    if (st == GF_OK)
        st = gf_observers_configure(&r->obs, gf_config_root(r->cfg), &r->sim);
    if (st == GF_OK)
        st = gf_config_check_unused(r->cfg);
    char *eff = NULL;
    if (st == GF_OK)
        st = gf_config_dump(r->cfg, &eff);
    if (st == GF_OK)
        st = gf_output_set_config_text(r->out, eff);
    st = gf_par_agree(&r->par, st, NULL);
    if (st == GF_OK && !o->quiet)
        gf_log_info("%s\n%d rank(s); effective configuration of %s:\n%s", gf_version_string(),
                    r->par.size, o->config_path, eff);
    free(eff);
    return st;
}

gf_status gf_run_create(const gf_run_options *o, gf_run **out) {
    *out = NULL;
    if (!o || !o->config_path)
        return GF_ERROR(GF_ERR_INPUT, "a run needs a configuration file");
    gf_run *r = gf_calloc(1, sizeof *r);
    if (!r)
        return gf_error_status();
    gf_status st = gf_par_init(NULL, NULL, &r->par);
    /* Messages for everyone come from rank 0 alone. */
    if (st == GF_OK)
        gf_log_set_rank(r->par.rank);
    if (st == GF_OK)
        st = gf_run_observers_add(&r->obs);
    r->out = gf_observers_find(&r->obs, &gf_output_observer_type);
    if (st == GF_OK)
        st = load_config(&r->par, o, &r->cfg);
    if (st == GF_OK) {
        st = gf_sim_init(&r->sim, &r->par);
        r->sim_ready = st == GF_OK;
        st = gf_par_agree(&r->par, st, NULL);
    }
    if (st == GF_OK)
        st = configure(r, o);
    if (st == GF_OK && o->restart) {
        st = gf_output_restart(r->out, &r->sim, o->restart, o->restart_force);
        r->restarted = st == GF_OK;
        if (st == GF_OK && !o->quiet)
            gf_log_info("restarted from %s at step %ld (t = %.6e s)", o->restart, r->sim.step,
                        r->sim.time);
    }
    int64_t n = 0;
    if (st == GF_OK)
        st = gf_run_global_count(r, &n);
    if (st != GF_OK) {
        gf_run_destroy(r);
        return st;
    }
    const gf_sim *s = &r->sim;
    if (!o->quiet)
        gf_log_info("%lld particles, %zu walls, %d x %d x %d processes, solver %s, dt %g s, "
                    "steps %ld to %ld",
                    (long long)n, s->walls.count, s->dims[0], s->dims[1], s->dims[2],
                    gf_solver_model_name(s->solver_params.model), s->dt, s->step, s->steps);
    *out = r;
    return GF_OK;
}

gf_status gf_run_dry(const gf_run_options *o, int nranks) {
    if (!o || !o->config_path)
        return GF_ERROR(GF_ERR_INPUT, "a run needs a configuration file");
    gf_par par;
    GF_TRY(gf_par_init(NULL, NULL, &par));
    gf_config *cfg = NULL;
    GF_TRY(load_config(&par, o, &cfg));
    gf_status st = GF_OK;
    /* Rank 0 alone: a dry run needs no job of the size it describes. */
    if (par.rank == 0) {
        gf_sim sim;
        gf_observers obs;
        st = gf_sim_init(&sim, &par);
        if (st == GF_OK) {
            st = gf_run_observers_add(&obs);
            if (st == GF_OK)
                st = gf_sim_dry_run(&sim, cfg, nranks > 0 ? nranks : par.size);
            if (st == GF_OK)
                st = gf_observers_configure(&obs, gf_config_root(cfg), &sim);
            if (st == GF_OK)
                st = gf_config_check_unused(cfg);
            gf_observers_free(&obs);
            gf_sim_free(&sim);
        }
    }
    gf_config_destroy(cfg);
    return gf_par_agree(&par, st, NULL);
}

void gf_run_end_job(void) {
    gf_par_finalize();
}

static gf_status start(gf_run *r) {
    GF_TRY(gf_observers_check(&r->obs, &r->sim));
    GF_TRY(gf_observers_start(&r->obs, &r->sim, r->restarted));
    r->started = 1;
    return GF_OK;
}

gf_status gf_run_advance(gf_run *r, long steps, int *stopped) {
    if (stopped)
        *stopped = 0;
    if (steps < 0 || r->finished)
        return GF_ERROR(GF_ERR_INPUT, "%s", r->finished ? "the run has finished" : "steps < 0");
    /* Time.steps' bound, which also keeps the step to run to from overflowing */
    if (steps > 1000000000000000L - r->sim.step)
        return GF_ERROR(GF_ERR_INPUT, "%ld more steps after step %ld pass the bound of 1e15 steps",
                        steps, r->sim.step);
    if (!r->started)
        GF_TRY(start(r));
    long last = r->sim.step + steps;
    if (last > r->sim.steps)
        r->sim.steps = last;
    GF_TRY(gf_sim_run_to(&r->sim, last, gf_observers_observe, &r->obs));
    if (stopped)
        *stopped = r->sim.step < last;
    return GF_OK;
}

gf_status gf_run_finish(gf_run *r) {
    if (r->finished)
        return GF_OK;
    if (!r->started)
        GF_TRY(start(r));
    r->finished = 1;
    GF_TRY(gf_observers_finish(&r->obs, &r->sim));
    gf_sim_print_summary(&r->sim);
    return GF_OK;
}

void gf_run_destroy(gf_run *r) {
    if (!r)
        return;
    gf_observers_free(&r->obs);
    if (r->sim_ready)
        gf_sim_free(&r->sim);
    gf_config_destroy(r->cfg);
    free(r);
}

void gf_run_handle_signals(void) {
    gf_output_install_signal_handlers();
}

int gf_run_api(void) {
    return GF_RUN_API;
}

long gf_run_step(const gf_run *r) {
    return r->sim.step;
}
long gf_run_last_step(const gf_run *r) {
    return r->sim.steps;
}
double gf_run_time(const gf_run *r) {
    return r->sim.time;
}
int gf_run_rank(const gf_run *r) {
    return r->par.rank;
}
int gf_run_size(const gf_run *r) {
    return r->par.size;
}
size_t gf_run_local_count(const gf_run *r) {
    return r->sim.particles.n_local;
}

gf_status gf_run_global_count(const gf_run *r, int64_t *n) {
    *n = (int64_t)r->sim.particles.n_local;
    return gf_par_allreduce_i64(&r->par, n, 1, GF_PAR_SUM);
}

gf_status gf_run_local_particles(const gf_run *r, int64_t *id, double *x, double *v, double *w) {
    const gf_particles *p = &r->sim.particles;
    for (size_t i = 0; i < p->n_local; ++i) {
        if (id)
            id[i] = p->id[i];
        for (int d = 0; d < 3; ++d) {
            if (x)
                x[3 * i + d] = p->x[d][i];
            if (v)
                v[3 * i + d] = p->v[d][i];
            if (w)
                w[3 * i + d] = p->w[d][i];
        }
    }
    return GF_OK;
}

gf_status gf_run_set_velocities(gf_run *r, size_t n, const int64_t *id, const double *v,
                                int64_t *found) {
    /* The given ids with their rows, sorted: each owned particle looks itself up. */
    int64_t *key = gf_malloc(2 * n + 1, sizeof *key);
    gf_status st = key ? GF_OK : gf_error_status();
    int64_t hits = 0;
    if (st == GF_OK) {
        for (size_t k = 0; k < n; ++k) {
            key[2 * k] = id[k];
            key[2 * k + 1] = (int64_t)k;
        }
        qsort(key, n, 2 * sizeof *key, gf_cmp_i64);
        gf_particles *p = &r->sim.particles;
        for (size_t i = 0; i < p->n_local; ++i) {
            const int64_t *at = bsearch(&p->id[i], key, n, 2 * sizeof *key, gf_cmp_i64);
            if (!at)
                continue;
            for (int d = 0; d < 3; ++d)
                p->v[d][i] = v[3 * at[1] + d];
            ++hits;
        }
    }
    free(key);
    st = gf_par_agree(&r->par, st, NULL);
    if (st == GF_OK)
        st = gf_sim_refresh_ghosts(&r->sim);
    if (st == GF_OK)
        st = gf_par_allreduce_i64(&r->par, &hits, 1, GF_PAR_SUM);
    if (found)
        *found = hits;
    return st;
}

/* After a key changed between steps (st: how that went on this rank): the effective
 * configuration that snapshots and checkpoints record, and every rank's agreement. */
static gf_status record_change(gf_run *r, gf_status st) {
    char *eff = NULL;
    if (st == GF_OK)
        st = gf_config_dump(r->cfg, &eff);
    if (st == GF_OK)
        st = gf_output_set_config_text(r->out, eff);
    free(eff);
    return gf_par_agree(&r->par, st, NULL);
}

gf_status gf_run_set_material(gf_run *r, const char *key, double value) {
    const char *last = strrchr(key, '.');
    last = last ? last + 1 : key;
    double hi = gf_materials_law_bound(last);
    int pair = strncmp(key, "Pair[", 5) == 0 && last != key;
    gf_status st = GF_OK;
    if (hi < 0.0 || (last != key && !pair) || (pair && strcmp(last, "restitution_velocity") == 0))
        st = GF_ERROR(GF_ERR_INPUT,
                      "set_material: '%s' is not a contact law's key of the Materials block "
                      "(friction, restitution, cohesion, rolling_friction, twisting_friction, "
                      "restitution_velocity, or Pair[n].<one of the first five>)",
                      key);
    else if (!(value >= 0.0 && value <= hi))
        st = GF_ERROR(GF_ERR_INPUT, "set_material: %s must lie in [0, %g], not %g", key, hi, value);
    /* Checked before the configuration changes; a Pair that is not there fails in the override,
     * before any block is made. */
    /* The shortest decimal that reads back as the value: what the recorded configuration shows. */
    char arg[600];
    snprintf(arg, sizeof arg, "-Materials.%s=%.15g", key, value);
    if (strtod(strchr(arg, '=') + 1, NULL) != value)
        snprintf(arg, sizeof arg, "-Materials.%s=%.17g", key, value);
    if (st == GF_OK)
        st = gf_config_override(r->cfg, arg);
    gf_materials m;
    if (st == GF_OK)
        st = gf_materials_configure(&m, gf_config_root(r->cfg));
    st = record_change(r, st);
    if (st == GF_OK)
        r->sim.materials = m;
    return st;
}

gf_status gf_run_set_gravity(gf_run *r, const double g[3]) {
    char arg[200];
    snprintf(arg, sizeof arg, "-Physics.gravity=<%.17g,%.17g,%.17g>", g[0], g[1], g[2]);
    gf_status st = gf_config_override(r->cfg, arg);
    /* Read back as the set-up reads it: checked, and part of the effective configuration. */
    double now[3];
    static const double none[3] = {0.0, 0.0, 0.0};
    gf_config_block *phys =
        st == GF_OK ? gf_config_section(gf_config_root(r->cfg), "Physics") : NULL;
    if (st == GF_OK)
        st = phys ? gf_config_get_vec3(phys, "gravity", none, now) : gf_error_status();
    st = record_change(r, st);
    if (st == GF_OK)
        memcpy(r->sim.gravity, now, sizeof now);
    return st;
}

/* A top-level key of an added configuration: none may stand outside a Body block. */
static gf_status body_key(void *ctx, const char *path, const char *key, const char *value) {
    (void)ctx;
    (void)value;
    if (strncmp(path, "Body#", 5) != 0)
        return GF_ERROR(GF_ERR_INPUT,
                        "add_bodies: '%s%s%s' is not in a Body block (only Body blocks are added)",
                        path, path[0] ? "." : "", key);
    return GF_OK;
}

gf_status gf_run_add_bodies(gf_run *r, const char *text, int64_t *first_id, int64_t *count) {
    *first_id = -1;
    *count = 0;
    gf_config *cfg = NULL;
    gf_status st = gf_config_parse(text, strlen(text), "(added bodies)", &cfg);
    if (st == GF_OK)
        st = gf_config_visit(cfg, body_key, NULL);
    if (st == GF_OK && gf_config_section_count(gf_config_root(cfg), "Body") == 0)
        st = GF_ERROR(GF_ERR_INPUT, "add_bodies: no Body block in '%.80s'", text);
    st = gf_par_agree(&r->par, st, NULL);
    if (st == GF_OK)
        st = gf_sim_add_bodies(&r->sim, cfg, first_id, count);
    gf_config_destroy(cfg);
    return st;
}

gf_status gf_run_write_snapshot(gf_run *r, const char *path) {
    return gf_io_write_snapshot(r->out, &r->sim, path);
}

gf_status gf_run_write_checkpoint(gf_run *r, const char *path) {
    return gf_io_write_checkpoint(r->out, &r->sim, path);
}
