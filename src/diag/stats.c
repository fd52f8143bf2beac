#include "diag/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/csv_series.h"
#include "io/io.h"
#include "core/log.h"

gf_status gf_stats_configure(gf_stats *st, gf_config_block *root, const gf_sim *sim) {
    memset(st, 0, sizeof *st);
    gf_config_block *b = gf_config_section(root, "Statistics");
    if (!b)
        return gf_error_status();
    GF_TRY(gf_config_get_long(b, "every", 0, &st->every));
    GF_TRY(gf_config_check_range(b, "every", (double)st->every, 0, 1e15));
    GF_TRY(gf_config_get_vec3(b, "region_min", sim->lo, st->region_lo));
    GF_TRY(gf_config_get_vec3(b, "region_max", sim->hi, st->region_hi));
    for (int d = 0; d < 3; ++d)
        if (!(st->region_hi[d] > st->region_lo[d])) {
            char where[512];
            return GF_ERROR(GF_ERR_INPUT, "%s: Statistics.region_max must exceed region_min",
                            gf_config_block_where(b, where, sizeof where));
        }
    char dir[900];
    gf_config_block *ob = gf_config_section(root, "Output");
    GF_TRY(gf_config_get_string(ob, "directory", "output", dir, sizeof dir));
    char def[1024];
    snprintf(def, sizeof def, "%s/stats.csv", dir);
    GF_TRY(gf_config_get_string(b, "file", def, st->file, sizeof st->file));
    size_t len = 0;
    for (int k = 0; k < sim->outlets.count; ++k)
        len += (size_t)snprintf(st->outlet_columns + len, sizeof st->outlet_columns - len,
                                ",outlet_%s_mass_rate", sim->outlets.item[k].name);
    return GF_OK;
}

static const char stats_header[] =
    "step,time,particles,contacts_solved,contacts_touching,contacts_loaded,"
    "contacts_per_particle,loaded_contacts_per_particle,solid_fraction,max_penetration,"
    "max_penetration_rel,kinetic_energy,potential_energy,outflow_mass_rate,inflow_particles,"
    "unconverged_steps";

/* The end of a row: the outlets' rates. Negative on a failed write. */
static int write_outlet_rates(FILE *csv, int n, const double *rate) {
    for (int k = 0; k < n; ++k)
        if (fprintf(csv, ",%.6g", rate[k]) < 0)
            return -1;
    return fputc('\n', csv) == EOF ? -1 : 0;
}

gf_status gf_stats_observe(gf_stats *st, gf_sim *sim, int force) {
    st->since_penetration = fmax(st->since_penetration, sim->figures.max_penetration);
    st->since_penetration_rel = fmax(st->since_penetration_rel, sim->figures.max_penetration_rel);
    st->since_unconverged += !sim->last_solve.converged;
    if (!force && (st->every <= 0 || sim->step % st->every != 0))
        return GF_OK;
    const gf_particles *p = &sim->particles;
    const gf_contact_figures *f = &sim->figures;
    /* Sums: particles, volume in region, kinetic energy, deleted mass, the step's contacts. */
    enum { N, VOL, KE, PE, MASS, SOLVED, TOUCHING, LOADED, NSUM };
    double sum[NSUM] = {(double)p->n_local,
                        0.0,
                        gf_particles_kinetic_energy(p),
                        gf_particles_potential_energy(p, sim->gravity),
                        sim->deleted_mass_local,
                        (double)f->solved,
                        (double)f->touching,
                        (double)f->loaded};
    for (size_t i = 0; i < p->n_local; ++i) {
        int in = 1;
        for (int d = 0; d < 3; ++d)
            in = in && p->x[d][i] >= st->region_lo[d] && p->x[d][i] < st->region_hi[d];
        if (in)
            sum[VOL] += 4.0 / 3.0 * M_PI * p->radius[i] * p->radius[i] * p->radius[i];
    }
    double mx[2] = {st->since_penetration, st->since_penetration_rel};
    if (sim->par) {
        GF_TRY(gf_par_allreduce_double(sim->par, sum, NSUM, GF_PAR_SUM));
        GF_TRY(gf_par_allreduce_double(sim->par, mx, 2, GF_PAR_MAX));
    }
    int64_t outlet_n[GF_MAX_OUTLETS];
    double outlet_m[GF_MAX_OUTLETS];
    GF_TRY(gf_outlets_totals(&sim->outlets, sim->par, outlet_n, outlet_m));
    st->since_penetration = st->since_penetration_rel = 0.0;
    long unconverged = st->since_unconverged;
    st->since_unconverged = 0;
    double vol = 1.0;
    for (int d = 0; d < 3; ++d)
        vol *= st->region_hi[d] - st->region_lo[d];
    double n = sum[N], fraction = sum[VOL] / vol;
    double cpp = n > 0 ? 2.0 * sum[TOUCHING] / n : 0.0, lpp = n > 0 ? 2.0 * sum[LOADED] / n : 0.0;
    double dt = sim->time - st->last_time;
    double rate = dt > 0 ? (sum[MASS] - st->last_mass) / dt : 0.0;
    double outlet_rate[GF_MAX_OUTLETS];
    for (int k = 0; k < sim->outlets.count; ++k) {
        outlet_rate[k] = dt > 0 ? (outlet_m[k] - st->last_outlet_mass[k]) / dt : 0.0;
        st->last_outlet_mass[k] = outlet_m[k];
    }
    st->last_time = sim->time;
    st->last_mass = sum[MASS];
    st->samples++;
    st->sum_particles += n;
    st->sum_fraction += fraction;
    st->sum_solved += sum[SOLVED];
    st->sum_touching += sum[TOUCHING];
    st->sum_loaded += sum[LOADED];
    st->sum_cpp += cpp;
    st->sum_lpp += lpp;
    st->sum_energy += sum[KE];
    st->sum_potential += sum[PE];
    st->sum_rate += rate;
    st->max_penetration = fmax(st->max_penetration, mx[0]);
    st->max_penetration_rel = fmax(st->max_penetration_rel, mx[1]);
    int root = !sim->par || sim->par->rank == 0;
    gf_status status = GF_OK;
    if (root) {
        if (!st->csv) {
            /* The outlets' columns follow the fixed ones. */
            char header[2048];
            snprintf(header, sizeof header, "%s%s\n", stats_header, st->outlet_columns);
            status =
                gf_csv_series_open(st->file, header, st->resume_step, "Statistics.file", &st->csv);
        }
        /* A row that does not reach the disk is an error, not a silent gap in the series. */
        if (status == GF_OK &&
            (fprintf(
                 st->csv,
                 "%ld,%.9g,%.0f,%.0f,%.0f,%.0f,%.6g,%.6g,%.6g,%.6g,%.6g,%.9g,%.9g,%.6g,%lld,%ld",
                 sim->step, sim->time, n, sum[SOLVED], sum[TOUCHING], sum[LOADED], cpp, lpp,
                 fraction, mx[0], mx[1], sum[KE], sum[PE], rate, (long long)sim->created_inflow,
                 unconverged) < 0 ||
             write_outlet_rates(st->csv, sim->outlets.count, outlet_rate) < 0 ||
             fflush(st->csv) != 0))
            status = GF_ERROR(GF_ERR_IO, "writing statistics to '%s' failed: %s", st->file,
                              strerror(errno));
    }
    if (sim->par)
        status = gf_par_agree(sim->par, status, NULL);
    return status;
}

gf_status gf_stats_start(gf_stats *st, const gf_sim *sim, int restarted) {
    double deleted = sim->deleted_mass_local;
    if (sim->par)
        GF_TRY(gf_par_allreduce_double(sim->par, &deleted, 1, GF_PAR_SUM));
    st->last_time = st->first_time = sim->time;
    st->last_mass = deleted;
    int64_t outlet_n[GF_MAX_OUTLETS];
    GF_TRY(gf_outlets_totals(&sim->outlets, sim->par, outlet_n, st->last_outlet_mass));
    st->first_created = sim->created_inflow;
    st->resume_step = restarted ? sim->step : 0;
    return GF_OK;
}

void gf_stats_finish(gf_stats *st, const gf_sim *sim) {
    /* The steps after the last sample count for the run's deepest penetration too. */
    double mx[2] = {fmax(st->max_penetration, st->since_penetration),
                    fmax(st->max_penetration_rel, st->since_penetration_rel)};
    if (sim->par && gf_par_allreduce_double(sim->par, mx, 2, GF_PAR_MAX) != GF_OK)
        mx[0] = mx[1] = NAN; /* only the report suffers */
    int root = !sim->par || sim->par->rank == 0;
    if (root && st->samples > 0) {
        double k = (double)st->samples, span = sim->time - st->first_time;
        gf_log_info("\nstatistics over %ld samples (every %ld steps), written to %s", st->samples,
                    st->every, st->file);
        gf_log_info("  %-46s %14.1f", "avg. number of particles", st->sum_particles / k);
        gf_log_info("  %-46s %13.2f%%", "solid volume fraction (region)",
                    100 * st->sum_fraction / k);
        gf_log_info("  %-46s %14.1f", "avg. contacts solved (within the margin)",
                    st->sum_solved / k);
        gf_log_info("  %-46s %14.1f", "avg. contacts touching (gap <= 0)", st->sum_touching / k);
        gf_log_info("  %-46s %14.1f", "avg. contacts loaded (normal impulse > 0)",
                    st->sum_loaded / k);
        gf_log_info("  %-46s %14.4f", "avg. contacts per particle (2C/N, touching)",
                    st->sum_cpp / k);
        gf_log_info("  %-46s %14.4f", "avg. loaded contacts per particle (2C/N)", st->sum_lpp / k);
        gf_log_info("  %-46s %14.4g", "max. penetration, every step (m)", mx[0]);
        gf_log_info("  %-46s %13.2f%%", "max. penetration, every step (% of radius)", 100 * mx[1]);
        gf_log_info("  %-46s %14.4g", "avg. kinetic energy (J)", st->sum_energy / k);
        gf_log_info("  %-46s %14.4g", "avg. potential energy (J, -m g.x)", st->sum_potential / k);
        gf_log_info("  %-46s %14.4g", "avg. outflow mass rate (kg/s)", st->sum_rate / k);
        if (span > 0 && sim->inflow.enabled)
            gf_log_info("  %-46s %14.4g", "inflow rate (particles/s)",
                        (double)(sim->created_inflow - st->first_created) / span);
        gf_log_info("  (averages over the sampled steps; the penetration over every step; "
                    "\"of radius\": of the thinner body's smallest half extent or radius)");
    }
    if (st->csv)
        fclose(st->csv);
    st->csv = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Statistics as an observer                                                                  */

static gf_status stats_configure(void *self, gf_config_block *root, const gf_sim *sim) {
    return gf_stats_configure(self, root, sim);
}

static gf_status stats_check(const void *self) {
    const gf_stats *st = self;
    return st->every > 0 ? gf_io_probe_location(st->file, "Statistics.file") : GF_OK;
}

static gf_status stats_start(void *self, gf_sim *sim, int restarted) {
    return gf_stats_start(self, sim, restarted);
}

static gf_status stats_observe(void *self, gf_sim *sim, int *stop) {
    (void)stop;
    return gf_stats_observe(self, sim, 0);
}

static gf_status stats_finish(void *self, gf_sim *sim) {
    gf_stats_finish(self, sim);
    return GF_OK;
}

static void stats_release(void *self) {
    gf_stats *st = self;
    if (st->csv)
        fclose(st->csv);
    st->csv = NULL;
}

const gf_observer_type gf_stats_observer_type = {
    .name = "Statistics",
    .size = sizeof(gf_stats),
    .configure = stats_configure,
    .check = stats_check,
    .start = stats_start,
    .observe = stats_observe,
    .finish = stats_finish,
    .release = stats_release,
};
