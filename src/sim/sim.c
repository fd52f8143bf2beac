#include "sim/sim.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/integrator.h"
#include "scenario/bodies.h"
#include "core/log.h"
#include "sim/particle_file.h"
#include "scenario/scenario.h"
#include "core/vec.h"
#include "report.h"

gf_status gf_sim_init(gf_sim *sim, const gf_par *par) {
    memset(sim, 0, sizeof *sim);
    sim->par = par;
    gf_particles_init(&sim->particles);
    gf_clumps_init(&sim->clumps);
    sim->particles.clumps = &sim->clumps;
    gf_walls_init(&sim->walls);
    gf_materials_init(&sim->materials);
    gf_contacts_init(&sim->contacts);
    gf_linkcells_init(&sim->cells);
    gf_warmstart_init(&sim->warm);
    gf_timers_reset(&sim->timers);
    sim->dt = 1e-4;
    sim->check_every = 100;
    sim->sort_every = GF_SIM_SORT_EVERY;
    sim->skin_fraction = GF_SIM_SKIN_FRACTION;
    sim->ghost_skin_fraction = GF_SIM_GHOST_SKIN_FRACTION;
    sim->per_pair = 1;
    sim->pipelined = 1;
    for (int d = 0; d < 3; ++d) {
        sim->lo[d] = -INFINITY;
        sim->hi[d] = INFINITY;
    }
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    return gf_sim_set_solver(sim, &prm);
}

void gf_sim_free(gf_sim *sim) {
    for (int d = 0; d < 3; ++d) {
        free(sim->ghost_ref[d]);
        free(sim->w_detect[d]);
    }
    gf_particles_free(&sim->particles);
    gf_clumps_free(&sim->clumps);
    gf_contacts_free(&sim->contacts);
    gf_linkcells_free(&sim->cells);
    gf_solver_free(&sim->solver);
    gf_warmstart_free(&sim->warm);
    gf_stages_free(&sim->stages);
    gf_walls_free(&sim->walls);
    if (sim->distributed)
        gf_exchange_free(&sim->xch);
    gf_balance_free(&sim->balance);
    free(sim->check_ids);
    free(sim->check_pos);
    sim->distributed = 0;
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

gf_status gf_sim_decompose(gf_sim *sim, const int dims_in[3], const int periodic[3],
                           const double lo[3], const double hi[3]) {
    if (!sim->par)
        return GF_ERROR(GF_ERR_STATE, "a decomposition needs MPI (gf_sim_init with a gf_par)");
    int dims[3] = {dims_in[0], dims_in[1], dims_in[2]};
    if (dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0) {
        double extent[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
        GF_TRY(gf_decomp_choose_dims(sim->par->size, extent, dims));
    }
    GF_TRY(gf_exchange_init(&sim->xch, sim->par, dims, periodic, lo, hi));
    sim->distributed = 1;
    gf_balance_free(&sim->balance);
    GF_TRY(gf_balance_init(&sim->balance, &sim->xch.decomp));
    for (int d = 0; d < 3; ++d) {
        sim->dims[d] = dims[d];
        sim->periodic[d] = periodic[d];
        sim->lo[d] = lo[d];
        sim->hi[d] = hi[d];
    }
    return GF_OK;
}

gf_status gf_sim_allocate_ids(gf_sim *sim, int64_t n, int64_t *first) {
    int64_t offset = 0, total = n;
    if (sim->par) {
        GF_TRY(gf_par_exscan_i64(sim->par, n, &offset));
        GF_TRY(gf_par_allreduce_i64(sim->par, &total, 1, GF_PAR_SUM));
    }
    *first = sim->next_id + offset;
    sim->next_id += total;
    sim->expected_particles += total;
    return GF_OK;
}

static gf_status read_decomposition(gf_config_block *root, int dims[3]) {
    gf_config_block *db = gf_config_section(root, "Domain");
    if (!db)
        return gf_error_status();
    static const double zero[3] = {0.0, 0.0, 0.0};
    double pr[3];
    GF_TRY(gf_config_get_vec3(db, "processes", zero, pr));
    int given = 0;
    for (int d = 0; d < 3; ++d) {
        if (pr[d] < 0 || pr[d] != floor(pr[d]) || pr[d] > 1e6) {
            char where[512];
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: Domain.processes must hold whole numbers (or be left out for an "
                            "automatic choice)",
                            gf_config_block_where(db, where, sizeof where));
        }
        dims[d] = (int)pr[d];
        given += dims[d] > 0;
    }
    if (given != 0 && given != 3) {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT, "%s: Domain.processes needs all three counts",
                        gf_config_block_where(db, where, sizeof where));
    }
    /* MPI numbers ranks with an int: beyond that no job can match, and products overflow. */
    int64_t total = (int64_t)dims[0] * dims[1] * dims[2];
    if (total > INT_MAX) {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Domain.processes %d x %d x %d asks for %lld ranks, more than MPI can "
                        "number (%d)",
                        gf_config_block_where(db, where, sizeof where), dims[0], dims[1], dims[2],
                        (long long)total, INT_MAX);
    }
    return GF_OK;
}

/* Adds the configured bodies this rank owns, after the lattice: their ids follow its ids. */
/* The Body blocks of cfg, each added on the rank that owns its centre: checked first against
 * every rank's owned particles and agreed (with nothing added when any is refused). Added alone
 * (by gf_sim_add_bodies, not with the configuration), the decomposition must also reach as far
 * as the largest of them (with the contact margin), and every key must have been read. */
static gf_status add_bodies(gf_sim *sim, gf_config *cfg, int alone) {
    gf_config_block *root = gf_config_root(cfg);
    gf_particles all;
    gf_particles_init(&all);
    all.clumps = &sim->clumps;
    int64_t n = 0;
    double rmax = 0.0;
    gf_status st = gf_bodies_configure(root, &sim->materials, &sim->clumps, &sim->walls, sim->lo,
                                       sim->hi, sim->periodic, sim->next_id, &all, &n, &rmax);
    if (st == GF_OK && alone && sim->distributed)
        st = gf_decomp_check_range(&sim->xch.decomp, (2.0 + sim->margin_fraction) * rmax);
    if (st == GF_OK && alone) /* a key no body read is a typo */
        st = gf_config_check_unused(cfg);
    if (st == GF_OK)
        st = gf_bodies_check_clear(&all, &sim->particles);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    for (size_t k = 0; k < all.n_local && st == GF_OK; ++k) {
        const double x[3] = {all.x[0][k], all.x[1][k], all.x[2][k]};
        if (!sim->distributed || gf_decomp_owns(&sim->xch.decomp, x)) {
            gf_particle rec;
            gf_particles_get(&all, k, &rec);
            st = gf_particles_add(&sim->particles, &rec);
        }
    }
    gf_particles_free(&all);
    if (st == GF_OK) { /* (refused, they take no ids) */
        sim->next_id += n;
        sim->expected_particles += n;
    }
    return st;
}

static gf_status exchange(gf_sim *sim, int changed);

gf_status gf_sim_add_bodies(gf_sim *sim, gf_config *cfg, int64_t *first_id, int64_t *count) {
    *first_id = sim->next_id;
    *count = 0;
    /* The owners take the new bodies with their ghosts set aside; the exchange makes them anew. */
    size_t n_ghost = sim->particles.n_ghost;
    int running = sim->ghosts_ready;
    gf_particles_clear_ghosts(&sim->particles);
    gf_status st = add_bodies(sim, cfg, 1);
    if (st != GF_OK) { /* nothing was added anywhere: the ghosts stand */
        sim->particles.n_ghost = n_ghost;
        return st;
    }
    *count = sim->next_id - *first_id;
    GF_TRY(count_global(sim));
    return running ? exchange(sim, 1) : GF_OK;
}

static gf_status read_stl_shared(const void *par, const char *path, double **corners, size_t *nt) {
    return gf_par_read_stl(par, path, corners, nt);
}

gf_status gf_sim_configure(gf_sim *sim, gf_config *cfg, int generate) {
    gf_config_block *root = gf_config_root(cfg);
    /* Mesh files are read by one rank for all. */
    if (sim->par) {
        sim->walls.stl_read = read_stl_shared;
        sim->walls.stl_ctx = sim->par;
    }
    GF_TRY(gf_materials_configure(&sim->materials, root));
    GF_TRY(
        gf_geometry_configure(&sim->walls, sim->lo, sim->hi, sim->periodic, root, &sim->materials));
    int dims[3];
    GF_TRY(read_decomposition(root, dims));
    gf_config_block *db = gf_config_section(root, "Domain");
    if (!db)
        return gf_error_status();
    GF_TRY(gf_config_get_long(db, "balance_every", 0, &sim->balance_every));
    GF_TRY(gf_config_check_range(db, "balance_every", (double)sim->balance_every, 0, 1e9));
    GF_TRY(gf_config_get_double(db, "ghost_skin_fraction", sim->ghost_skin_fraction,
                                &sim->ghost_skin_fraction));
    GF_TRY(gf_config_check_range(db, "ghost_skin_fraction", sim->ghost_skin_fraction, 0.0, 10.0));
    /* Clump templates first: the generators and the bodies may name them. */
    GF_TRY(gf_bodies_configure_clumps(&sim->clumps, root));
    GF_TRY(gf_inflow_configure(&sim->inflow, root, &sim->materials, &sim->clumps, &sim->walls,
                               sim->lo, sim->hi));
    GF_TRY(gf_outflow_configure(&sim->outflow, root, sim->lo, sim->hi, sim->periodic));
    GF_TRY(
        gf_inserts_configure(&sim->inserts, root, &sim->materials, &sim->clumps, sim->lo, sim->hi));
    GF_TRY(gf_outlets_configure(&sim->outlets, root));

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
    gf_stages_free(&sim->stages);
    GF_TRY(gf_stages_configure(&sim->stages, cfg));

    gf_config_block *cb = gf_config_section(root, "Contact");
    if (!cb)
        return gf_error_status();
    double frac = GF_SIM_MARGIN_FRACTION;
    GF_TRY(gf_config_get_double(cb, "margin_fraction", frac, &frac));
    GF_TRY(gf_config_check_range(cb, "margin_fraction", frac, 0.0, 10.0));
    GF_TRY(gf_config_get_long(cb, "sort_every", GF_SIM_SORT_EVERY, &sim->sort_every));
    GF_TRY(gf_config_get_bool(cb, "per_pair", sim->per_pair, &sim->per_pair));
    GF_TRY(gf_config_check_range(cb, "sort_every", (double)sim->sort_every, 0, 1e9));
    GF_TRY(gf_config_get_double(cb, "skin_fraction", sim->skin_fraction, &sim->skin_fraction));
    GF_TRY(gf_config_check_range(cb, "skin_fraction", sim->skin_fraction, 0.0, 10.0));

    gf_config_block *ob = gf_config_section(root, "Output");
    if (!ob)
        return gf_error_status();
    GF_TRY(gf_config_get_long(ob, "progress_every", 100, &sim->progress_every));
    GF_TRY(gf_config_check_range(ob, "progress_every", (double)sim->progress_every, 0, 1e15));
    GF_TRY(gf_config_get_long(ob, "check_every", 100, &sim->check_every));
    GF_TRY(gf_config_check_range(ob, "check_every", (double)sim->check_every, 0, 1e15));

    gf_lattice lat;
    GF_TRY(gf_lattice_configure(&lat, root, &sim->materials, &sim->clumps, sim->lo, sim->hi,
                                sim->periodic));
    int64_t nbodies = 0;
    double body_radius = 0.0;
    GF_TRY(gf_bodies_configure(root, &sim->materials, &sim->clumps, &sim->walls, sim->lo, sim->hi,
                               sim->periodic, 0, NULL, &nbodies, &body_radius));
    gf_particle_file pfile;
    GF_TRY(gf_particle_file_configure(&pfile, root, &sim->materials));
    /* In radii of the particles present (lattice, inflow, restart or particle file alike). */
    sim->margin_tolerance = 0.0;
    sim->margin_fraction = frac;
    double rmax =
        fmax(fmax(lat.enabled ? lat.radius : 0.0, sim->inflow.enabled ? sim->inflow.radius : 0.0),
             body_radius);
    rmax = fmax(rmax, sim->inserts.reach);

    /* Everything below is collective; the input checks above are the same on every rank. */
    if (sim->par && !sim->dry_run)
        GF_TRY(gf_sim_decompose(sim, dims, sim->periodic, sim->lo, sim->hi));
    /* A particle file's particles come first (not on a restart: the checkpoint holds them); its
     * largest body joins the interaction range. */
    if (generate && !sim->dry_run) {
        GF_TRY(gf_particle_file_load(&pfile, sim));
        rmax = fmax(rmax, pfile.max_radius);
    }
    if (sim->par && !sim->dry_run)
        GF_TRY(gf_decomp_check_range(&sim->xch.decomp, (2.0 + frac) * rmax));
    sim->lattice = lat;
    if (!generate)
        return GF_OK;
    /* Lattice ids are lattice indices: independent of the rank count. */
    lat.first_id = sim->next_id;
    sim->next_id += gf_lattice_size(&lat);
    int64_t skipped = 0;
    if (sim->check_only && (double)gf_lattice_size(&lat) > GF_LATTICE_VISIT) {
        /* placing it would take minutes and gigabytes and check nothing more */
        gf_log_info("Lattice: %lld sites not placed by --check (more than %.0e); --dry-run "
                    "estimates their memory per rank",
                    (long long)gf_lattice_size(&lat), GF_LATTICE_VISIT);
        lat.enabled = 0;
    }
    GF_TRY(gf_lattice_generate(&lat, &sim->materials, &sim->walls,
                               sim->distributed ? &sim->xch.decomp : NULL, &sim->particles,
                               &skipped));
    sim->expected_particles += lat.enabled ? gf_lattice_size(&lat) - skipped : 0;
    if (skipped > 0)
        gf_log_info(
            "Lattice: %lld of %lld particles left out: they would overlap a wall or obstacle",
            (long long)skipped, (long long)gf_lattice_size(&lat));
    GF_TRY(gf_particle_file_check_clear(&pfile, sim));
    GF_TRY(add_bodies(sim, cfg, 0));
    GF_TRY(count_global(sim));
    if (sim->global_particles != sim->expected_particles)
        return GF_ERROR(GF_ERR_STATE, "generated %lld particles instead of %lld",
                        (long long)sim->global_particles, (long long)sim->expected_particles);
    return GF_OK;
}

/* The interaction range of the next step: anything that can close within dt is a contact, and
 * ghosts must reach that far. Collective: every rank uses the same margin. With ghost lists
 * kept, also whether this step must build them anew: `*full` in, this rank's reasons (the
 * particle set changed, ...); out, the agreed decision, which adds the displacement test:
 * a pair within the range now was within the range plus twice the largest move (`moved`, this
 * rank's) when the ghosts were chosen. */
static gf_status update_margin(gf_sim *sim, double moved, int *full) {
    const gf_particles *p = &sim->particles;
    double m[4] = {0.0, 0.0, moved, *full}; /* max speed, max radius, move, rebuild due */
    double v2max = 0.0;                     /* of spheres: squared, one root at the end */
    for (size_t i = 0; i < p->n_local; ++i) {
        double v2 = p->v[0][i] * p->v[0][i] + p->v[1][i] * p->v[1][i] + p->v[2][i] * p->v[2][i];
        m[1] = p->radius[i] > m[1] ? p->radius[i] : m[1];
        if (p->shape[i] == GF_SHAPE_SPHERE) {
            v2max = v2 > v2max ? v2 : v2max;
            continue;
        }
        /* A spinning body's surface moves at up to |w| r beyond its centre (a sphere's surface
         * slides past its contacts instead). */
        double w2 = p->w[0][i] * p->w[0][i] + p->w[1][i] * p->w[1][i] + p->w[2][i] * p->w[2][i];
        double s = sqrt(v2) + sqrt(w2) * p->radius[i];
        m[0] = s > m[0] ? s : m[0];
    }
    m[0] = fmax(m[0], sqrt(v2max));
    if (sim->par)
        GF_TRY(gf_par_allreduce_double(sim->par, m, 4, GF_PAR_MAX));
    double vwall = gf_walls_max_speed(&sim->walls);
    double g = sqrt(sim->gravity[0] * sim->gravity[0] + sim->gravity[1] * sim->gravity[1] +
                    sim->gravity[2] * sim->gravity[2]);
    double v = m[0] + g * sim->dt;
    sim->margin = sim->margin_tolerance + sim->margin_fraction * m[1] + sim->dt * (2.0 * v + vwall);
    sim->max_radius = m[1];
    /* A rounding allowance on the test (the range is a sum of a few terms). */
    double reach = 2.0 * m[1] + sim->margin;
    *full = m[3] > 0.0 || !(2.0 * m[2] + reach < sim->ghost_range * (1.0 - 1e-12)); /* NaN too */
    double drift = *full ? 0.0 : m[2]; /* how far an owned particle may be from its subdomain */
    /* Displacement per step: beyond the box no step means anything; beyond half a radius the
     * contacts of a step are resolved from far-off positions (the margin keeps them, but the
     * result is coarse). From reduced maxima: every rank finds this alike. */
    double disp = sim->dt * v, extent = INFINITY;
    for (int d = 0; d < 3; ++d)
        extent = fmin(extent, sim->hi[d] - sim->lo[d]);
    if (disp > extent)
        return gf_error_everywhere(GF_ERROR(
            GF_ERR_INPUT,
            "at step %ld the fastest particle (%g m/s with a step's gravity) would move %g m in "
            "one step of %g s, more than the box (%g m): reduce Time.dt",
            sim->step, v, disp, sim->dt, extent));
    if (sim->dt * vwall > extent)
        return gf_error_everywhere(
            GF_ERROR(GF_ERR_INPUT,
                     "a wall moving at %g m/s would move %g m in one step of %g s, more than the "
                     "box (%g m): reduce its velocity or Time.dt",
                     vwall, sim->dt * vwall, sim->dt, extent));
    if (!sim->warned_displacement && m[1] > 0.0 && disp > 0.5 * m[1]) {
        sim->warned_displacement = 1;
        if (!sim->par || sim->par->rank == 0)
            gf_log_warn("at step %ld the fastest particle (%g m/s) moves %g m per step, %.2g "
                        "radii: contacts are resolved coarsely; a Time.dt below %g s keeps it "
                        "under half a radius (warned once)",
                        sim->step, v, disp, disp / m[1], 0.5 * m[1] / v);
    }
    if (sim->mesh_halo > 0.0 && m[1] + sim->margin + drift > sim->mesh_halo)
        return gf_error_everywhere(GF_ERROR(
            GF_ERR_UNSUPPORTED,
            "at step %ld particles reach %g m beyond their subdomain (radius %g m, margin %g m "
            "and %g m moved since the last migration, fastest particle %g m/s) but each rank "
            "holds only the mesh triangles within %g m of it: reduce Time.dt",
            sim->step, m[1] + sim->margin + drift, m[1], sim->margin, drift, m[0], sim->mesh_halo));
    if (sim->distributed) {
        /* From reduced maxima: every rank finds this alike. */
        GF_TRY(gf_error_everywhere(
            gf_error_context(gf_decomp_check_range(&sim->xch.decomp, 2.0 * m[1] + sim->margin),
                             "fastest particle %g m/s", m[0])));
    }
    return GF_OK;
}

/* The work of this step, counted for the balancing at its end when one is due: a unit per
 * owned particle and per contact this rank solves, at its owned particle (balance.h). Right
 * after the solve, while the contacts' particle indices are valid. */
static void count_work(gf_sim *sim) {
    if (!sim->distributed || sim->balance_every <= 0 || (sim->step + 1) % sim->balance_every != 0)
        return;
    gf_balance *b = &sim->balance;
    const gf_particles *p = &sim->particles;
    const gf_contacts *c = &sim->contacts;
    const gf_decomp *d = &sim->xch.decomp;
    gf_balance_clear(b);
    for (size_t i = 0; i < p->n_local; ++i) {
        const double x[3] = {p->x[0][i], p->x[1][i], p->x[2][i]};
        gf_balance_add(b, d, x, 1);
    }
    for (size_t j = 0; j < c->count; ++j) {
        size_t i = (size_t)c->i1[j];
        if (i >= p->n_local && c->i2[j] >= 0)
            i = (size_t)c->i2[j];
        const double x[3] = {p->x[0][i], p->x[1][i], p->x[2][i]};
        gf_balance_add(b, d, x, 1);
    }
    sim->balance_work = (int64_t)(p->n_local + c->count);
    sim->balance_pending = 1;
}

/* Moves the cuts to balance the work counted by count_work (collective). */
static gf_status rebalance(gf_sim *sim) {
    sim->balance_pending = 0;
    gf_balance *b = &sim->balance;
    int n = gf_balance_size(b);
    if (n == 0)
        return GF_OK;
    GF_TRY(gf_par_allreduce_i64(sim->par, b->bins, n, GF_PAR_SUM));
    int64_t most = sim->balance_work, total = 0;
    GF_TRY(gf_par_allreduce_i64(sim->par, &most, 1, GF_PAR_MAX));
    for (int a = 0; a < 3 && total == 0; ++a) /* each cut axis's bins hold the whole work */
        for (int k = 0; k < b->nbins[a]; ++k)
            total += b->count[a][k];
    if (total > 0) {
        double ratio = (double)most * sim->par->size / (double)total;
        sim->balance_ratio_last = ratio;
        sim->balance_ratio_sum += ratio;
        sim->balance_count++;
    }
    int moved = 0;
    double width = GF_SIM_BALANCE_ROOM * (2.0 * sim->max_radius + sim->margin);
    int blocked = gf_balance_blocked_axis(&sim->xch.decomp, width);
    if (blocked >= 0 && !sim->warned_balance) {
        sim->warned_balance = 1;
        const gf_decomp *d = &sim->xch.decomp;
        if (sim->par->rank == 0)
            gf_log_warn("at step %ld load balancing cannot move the cuts along %c: %d subdomains "
                        "of at least %g m (twice the interaction range) do not fit into %g m; "
                        "use fewer processes along %c (warned once)",
                        sim->step, "xyz"[blocked], d -> dims[blocked], width,
                        d -> hi[blocked] - d -> lo[blocked], "xyz"[blocked]);
    }
    gf_status st = gf_balance_apply(b, &sim->xch.decomp, width, &moved);
    GF_TRY(gf_par_agree(sim->par, st, NULL));
    sim->balance_moves += moved;
    return GF_OK;
}

/* The largest move of an owned particle since the ghosts were built (infinite if the owned
 * particles are no longer those of the build). */
static double ghost_moved(const gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    if (sim->ghost_range <= 0.0 || p->n_local != sim->ghost_nref)
        return INFINITY;
    double d2 = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        double dx = p->x[0][i] - sim->ghost_ref[0][i], dy = p->x[1][i] - sim->ghost_ref[1][i],
               dz = p->x[2][i] - sim->ghost_ref[2][i];
        double e = dx * dx + dy * dy + dz * dz;
        d2 = e > d2 ? e : d2;
    }
    return sqrt(d2);
}

/* Room for the positions the ghost lists are chosen from, n owned particles. */
static gf_status reserve_ghost_ref(gf_sim *sim, size_t n) {
    if (n > sim->ghost_capref) {
        for (int d = 0; d < 3; ++d)
            GF_TRY(gf_grow((void **)&sim->ghost_ref[d], n, sizeof(double)));
        sim->ghost_capref = n;
    }
    return GF_OK;
}

/* Builds the ghosts within the interaction range plus the skin (as far as the thinnest
 * subdomain allows) and remembers the owned positions they were chosen from. */
static gf_status build_ghosts(gf_sim *sim) {
    gf_particles *p = &sim->particles;
    double reach = 2.0 * sim->max_radius + sim->margin;
    double want = sim->ghost_skin_fraction * sim->max_radius;
    double skin = fmax(0.0, fmin(want, gf_decomp_reach(&sim->xch.decomp) - reach));
    if (skin < want && !sim->warned_ghost_skin) {
        sim->warned_ghost_skin = 1; /* from reduced maxima and the shared cuts: alike everywhere */
        if (sim->par->rank == 0)
            gf_log_warn("at step %ld the ghost lists' skin (Domain.ghost_skin_fraction %g, %g m) "
                        "is cut to %g m: the thinnest subdomain (%g m) holds no more beyond the "
                        "interaction range (%g m); use fewer processes or a smaller skin (warned "
                        "once)",
                        sim->step, sim->ghost_skin_fraction, want, skin,
                        gf_decomp_reach(&sim->xch.decomp), reach);
    }
    GF_TRY(gf_exchange_ghosts(&sim->xch, p, reach + skin));
    sim->ghost_range = skin > 0.0 ? reach + skin : 0.0; /* no skin: build every step */
    GF_TRY(reserve_ghost_ref(sim, p->n_local));
    for (int d = 0; d < 3; ++d)
        if (p->n_local > 0)
            memcpy(sim->ghost_ref[d], p->x[d], p->n_local * sizeof(double));
    sim->ghost_nref = p->n_local;
    return GF_OK;
}

/* Migration, the spatial sort and ghosts: the exchange phase of a step; `changed`: this rank's
 * particle set changed since the last one (ghosts cleared). With ghost lists kept, a step
 * without a reason to rebuild only refreshes the ghosts' values. The sort follows the step
 * count, so a run restarted from a checkpoint (which keeps the memory order) sorts at the same
 * steps and continues bit for bit; for the same reason sorts and balancings rebuild. */
static gf_status exchange(gf_sim *sim, int changed) {
    gf_particles *p = &sim->particles;
    double cell = 2.0 * sim->max_radius + sim->margin;
    int sort = sim->sort_every > 0 && sim->step % sim->sort_every == 0 && cell > 0.0;
    if (!sim->distributed) {
        gf_particles_clear_ghosts(p);
        if (sort)
            GF_TRY(gf_particles_sort(p, cell));
        int full = 1;
        GF_TRY(update_margin(sim, 0.0, &full));
        sim->ghosts_ready = 1;
        return GF_OK;
    }
    int full = changed || sort || sim->balance_pending || !sim->ghosts_ready;
    GF_TRY(update_margin(sim, full ? 0.0 : ghost_moved(sim), &full));
    if (!full) {
        sim->ghost_refreshes++;
        return gf_exchange_refresh(&sim->xch, p);
    }
    sim->ghost_builds++;
    gf_particles_clear_ghosts(p);
    if (sim->balance_pending)
        GF_TRY(rebalance(sim));
    /* The warm start's impulses travel with their particles. */
    gf_exchange_payload warm = {&sim->warm, gf_warmstart_pack, gf_warmstart_unpack};
    GF_TRY(gf_exchange_migrate(&sim->xch, p, sim->solver_params.warm_start ? &warm : NULL));
    /* Neighbours close in memory: detection and the integration then read the particle arrays
     * in runs (contacts come cell by cell whatever the order; a scrambled order makes a large
     * system's detection about twice as slow, bench_sweep). */
    if (sort)
        GF_TRY(gf_particles_sort(p, cell));
    GF_TRY(build_ghosts(sim));
    sim->ghosts_ready = 1;
    return GF_OK;
}

gf_status gf_sim_restore_ghost_lists(gf_sim *sim, const double *ref, double range) {
    const gf_particles *p = &sim->particles;
    if (p->n_ghost != 0 || !(range > 0.0) || !isfinite(range))
        return GF_ERROR(GF_ERR_STATE, "ghost lists restored with ghosts present or a range of %g m",
                        range);
    GF_TRY(reserve_ghost_ref(sim, p->n_local));
    for (size_t i = 0; i < p->n_local; ++i)
        for (int d = 0; d < 3; ++d)
            sim->ghost_ref[d][i] = ref[3 * i + d];
    sim->ghost_nref = p->n_local;
    sim->ghost_range = range;
    sim->ghost_restore = 1;
    return GF_OK;
}

gf_status gf_sim_refresh_ghosts(gf_sim *sim) {
    if (!sim->distributed || !sim->ghosts_ready)
        return GF_OK;
    return gf_exchange_refresh(&sim->xch, &sim->particles);
}

/* ------------------------------------------------------------------------------------------ */
/* Run state (checkpoints)                                                                    */

/* The simulation's own counters. Deletions not yet accounted globally are settled here. */
static gf_status counters_save(const gf_sim *sim, gf_state *s) {
    int64_t deleted = sim->deleted_local;
    double deleted_mass = sim->deleted_mass_local;
    if (sim->par) {
        GF_TRY(gf_par_allreduce_i64(sim->par, &deleted, 1, GF_PAR_SUM));
        GF_TRY(gf_par_allreduce_double(sim->par, &deleted_mass, 1, GF_PAR_SUM));
    }
    int64_t v[3] = {sim->next_id, sim->expected_particles - deleted, sim->created_inflow};
    GF_TRY(gf_state_put_int(s, "next_id", 1, &v[0]));
    GF_TRY(gf_state_put_int(s, "expected_particles", 1, &v[1]));
    /* The run's totals, so statistics continue across a restart. */
    GF_TRY(gf_state_put_int(s, "created_inflow", 1, &v[2]));
    return gf_state_put_real(s, "deleted_mass", 1, &deleted_mass);
}

static gf_status counters_restore(gf_sim *sim, const gf_state *s) {
    int64_t v[3];
    double deleted_mass;
    GF_TRY(gf_state_get_int(s, "next_id", 1, &v[0]));
    GF_TRY(gf_state_get_int(s, "expected_particles", 1, &v[1]));
    GF_TRY(gf_state_get_int(s, "created_inflow", 1, &v[2]));
    GF_TRY(gf_state_get_real(s, "deleted_mass", 1, &deleted_mass));
    sim->next_id = v[0];
    sim->expected_particles = v[1];
    sim->created_inflow = v[2];
    sim->deleted_local = 0;
    /* Only the sum over ranks means anything: rank 0 carries it. */
    sim->deleted_mass_local = !sim->par || sim->par->rank == 0 ? deleted_mass : 0.0;
    return GF_OK;
}

gf_status gf_sim_save_state(const gf_sim *sim, gf_state *s) {
    /* Every part is saved even after one failed on this rank: the parts' reductions must be
     * reached by every rank (each part reduces before it can fail alone). */
    gf_status st[5];
    st[0] = counters_save(sim, s);
    st[1] = gf_outlets_save(&sim->outlets, sim->par, s);
    st[2] = gf_inflow_save(&sim->inflow, s);
    st[3] = gf_inserts_save(&sim->inserts, s);
    st[4] = gf_walls_save(&sim->walls, s);
    for (int k = 0; k < 5; ++k)
        if (st[k] != GF_OK)
            return st[k];
    return GF_OK;
}

gf_status gf_sim_restore_state(gf_sim *sim, const gf_state *s) {
    GF_TRY(gf_walls_restore(&sim->walls, s));
    GF_TRY(gf_inflow_restore(&sim->inflow, s));
    GF_TRY(gf_inserts_restore(&sim->inserts, s));
    GF_TRY(gf_outlets_restore(&sim->outlets, sim->par, s));
    return counters_restore(sim, s);
}

/* Exchanges the owned particles' positions with `other` (not the arrays: ghosts may be
 * appended to them meanwhile). */
static void swap_positions(gf_particles *p, double *other[3]) {
    for (int d = 0; d < 3; ++d)
        for (size_t i = 0; i < p->n_local; ++i) {
            double t = p->x[d][i];
            p->x[d][i] = other[d][i];
            other[d][i] = t;
        }
}

/* The ghost lists of the checkpoint's writer (gf_sim_restore_ghost_lists): built from the
 * positions they were chosen from, as the writer built them (same owners, order and cuts), then
 * refreshed to the current positions, as the writer's last exchange left them, whether it
 * kept its lists or built them. No migration: the writer's particles have not migrated since.
 * Lists that do not cover this run's interaction range are built anew instead. */
static gf_status restore_ghosts(gf_sim *sim) {
    gf_particles *p = &sim->particles;
    sim->ghost_restore = 0;
    int full = 0;
    GF_TRY(update_margin(sim, ghost_moved(sim), &full));
    if (full) /* a restart forced with a wider margin: the lists do not reach far enough */
        return exchange(sim, 1);
    swap_positions(p, sim->ghost_ref); /* the build's positions in place for it */
    gf_status st = gf_exchange_ghosts(&sim->xch, p, sim->ghost_range);
    swap_positions(p, sim->ghost_ref);
    GF_TRY(st);
    GF_TRY(gf_exchange_refresh(&sim->xch, p));
    sim->ghosts_ready = 1;
    return GF_OK;
}

/* Each rank keeps the mesh triangles its particles can meet: within a halo of its subdomain.
 * When contacts are found, right after the migration, an owned particle's centre lies in its
 * subdomain (or beyond the domain's faces, where the region is unbounded), and its mesh
 * contacts lie within its bounding radius plus the margin: the halo must bound max_radius +
 * margin for the whole run. The margin is the speculative one, frac r + dt (2 v + v_wall); in
 * a run whose particles move at most half a radius per step (beyond that the time step is
 * warned of as coarse) it stays below (1 + frac) r + dt v_wall, so twice (2 + frac) r + dt
 * v_wall leaves room for particles three times as fast. update_margin checks it every step
 * (an agreed error, never a missed contact). Once, at the first start, after the generators
 * and bodies have been placed against the whole meshes (they test every site on every rank). */
static gf_status localize_meshes(gf_sim *sim) {
    /* Balancing moves the subdomains over the run: every rank keeps every triangle then. */
    if (!sim->distributed || sim->walls.nmesh == 0 || sim->mesh_halo > 0.0 ||
        sim->balance_every > 0)
        return GF_OK;
    double r = sim->max_radius;
    if (sim->lattice.enabled)
        r = fmax(r, sim->lattice.radius);
    if (sim->inflow.enabled)
        r = fmax(r, sim->inflow.radius);
    r = fmax(r, sim->inserts.reach);
    double vwall = gf_walls_max_speed(&sim->walls);
    for (size_t k = 0; k < sim->walls.nsched; ++k)
        vwall = fmax(vwall, gf_norm(sim->walls.sched_velocity[k]));
    double halo =
        2.0 * ((2.0 + sim->margin_fraction) * r + sim->dt * vwall) + sim->margin_tolerance;
    halo = fmax(halo, 2.0 * (sim->max_radius + sim->margin));
    if (!(halo > 0.0))
        return GF_OK; /* no particles ever: nothing to meet */
    double lo[3], hi[3];
    gf_walls_region(&sim->xch.decomp, halo, lo, hi);
    GF_TRY(gf_walls_localize_meshes(&sim->walls, lo, hi));
    sim->mesh_halo = halo;
    /* What the ranks hold, against the meshes' triangles. */
    int64_t held[3] = {0, 0, 0};
    for (size_t k = 0; k < sim->walls.nmesh; ++k) {
        held[0] += (int64_t)sim->walls.mesh[k]->nt;
        held[2] += (int64_t)sim->walls.mesh[k]->key_nt;
    }
    held[1] = -held[0];
    GF_TRY(gf_par_allreduce_i64(sim->par, held, 2, GF_PAR_MAX));
    if (sim->par->rank == 0)
        gf_log_info("Meshes: each rank holds %lld to %lld of their %lld triangles (within %.3g m "
                    "of its subdomain)",
                    (long long)-held[1], (long long)held[0], (long long)held[2], halo);
    return GF_OK;
}

static gf_status apply_stage(gf_sim *sim);

gf_status gf_sim_start(gf_sim *sim) {
    /* The stage in force at the start (or restart) time: the first step's margin and ghosts are
     * those of its time step, as in a run that went through that time. */
    GF_TRY(apply_stage(sim));
    /* The velocities of the scheduled geometry at the start (or restart) time. */
    gf_walls_apply_schedule(&sim->walls, sim->time, GF_SIM_SCHEDULE_TOLERANCE * sim->dt);
    if (sim->ghosts_ready)
        return localize_meshes(sim);
    if (sim->distributed && sim->ghost_restore)
        GF_TRY(restore_ghosts(sim));
    else
        GF_TRY(exchange(sim, 1));
    GF_TRY(localize_meshes(sim));
    GF_TRY(count_global(sim));
    if (sim->expected_particles == 0)
        sim->expected_particles = sim->global_particles;
    return GF_OK;
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

/* The solver's view of the exchange: velocity synchronisation and global maxima, each call's
 * time booked as communication rather than solving. */
#define COMM_TIMED(name, params, call)                                                             \
    static gf_status name params {                                                                 \
        gf_sim *sim = ctx;                                                                         \
        gf_timer_start(&sim->timers, GF_TIMER_COMM);                                               \
        gf_status st = call;                                                                       \
        gf_timer_stop(&sim->timers, GF_TIMER_COMM);                                                \
        return st;                                                                                 \
    }
COMM_TIMED(comm_sync, (void *ctx, gf_particles *p), gf_exchange_sync(&sim->xch, p))
COMM_TIMED(comm_sync_begin, (void *ctx, gf_particles *p), gf_exchange_sync_begin(&sim->xch, p))
COMM_TIMED(comm_sync_end, (void *ctx, gf_particles *p), gf_exchange_sync_end(&sim->xch, p))
COMM_TIMED(comm_pipe_expect, (void *ctx), gf_exchange_pipe_expect(&sim->xch))
COMM_TIMED(comm_pipe_post, (void *ctx, gf_particles *p), gf_exchange_pipe_post(&sim->xch, p))
COMM_TIMED(comm_pipe_take, (void *ctx, gf_particles *p), gf_exchange_pipe_take(&sim->xch, p))
COMM_TIMED(comm_max, (void *ctx, double *values, int n),
           gf_par_allreduce_double(sim->par, values, n, GF_PAR_MAX))
#undef COMM_TIMED

/* The angular velocities detection took for the step's turns, for gf_contact_recheck, which
 * reads them for non-spheres only: a step without any copies nothing. */
static gf_status keep_detected_turns(gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    size_t n = p->n_local + p->n_ghost, cap = sim->cap_w_detect;
    size_t i = 0;
    while (i < n && p->shape[i] == GF_SHAPE_SPHERE)
        ++i;
    if (i == n)
        return GF_OK;
    for (int d = 0; d < 3; ++d) {
        cap = sim->cap_w_detect;
        GF_TRY(gf_reserve((void **)&sim->w_detect[d], &cap, n, sizeof *sim->w_detect[d]));
        if (n > 0)
            memcpy(sim->w_detect[d], p->w[d], n * sizeof *sim->w_detect[d]);
    }
    sim->cap_w_detect = cap;
    return GF_OK;
}

/* The rounds of a step's solve after which the turning non-spheres are checked again. */
#define GF_SIM_RECHECKS 3

/* The solve, and the check that no near pair (per-pair speculation) and no point of a turning
 * non-spherical pair (gf_contact_recheck) closes at the solved velocities: those become contacts
 * and the sweeps continue (collective: every rank continues while any added a contact). */

static gf_status solve(gf_sim *sim, const gf_solver_comm *comm) {
    gf_particles *p = &sim->particles;
    gf_contacts *c = &sim->contacts;
    gf_solver_result *res = &sim->last_solve;
    GF_TRY(gf_solver_solve(&sim->solver, p, &sim->walls, c, sim->dt, comm, res));
    /* The resumed solves of a step share one more budget of Solver.max_iterations sweeps (a
     * gas at max_iterations 10 made 87 sweeps a step in resumes of 10 each); once it is spent a
     * resume still makes one sweep, which solves the added contacts' blocks. */
    const long budget = sim->solver.prm.max_iterations;
    long spent = 0;
    int rechecks = GF_SIM_RECHECKS; /* each round adds only points far from the pair's others */
    for (;;) {
        size_t added = 0, turned = 0;
        if (c->speculate)
            GF_TRY(gf_contact_promote(p, &sim->walls, &sim->materials, sim->dt, c, &added));
        if (rechecks-- > 0)
            GF_TRY(gf_contact_recheck(p, (const double *const *)sim->w_detect, &sim->walls,
                                      &sim->materials, sim->margin, sim->dt, &sim->cells, c,
                                      &turned));
        sim->rechecked_points += (int64_t)turned;
        added += turned;
        int64_t total = (int64_t)added;
        if (sim->distributed) {
            gf_timer_start(&sim->timers, GF_TIMER_COMM);
            gf_status st = gf_par_allreduce_i64(sim->par, &total, 1, GF_PAR_SUM);
            gf_timer_stop(&sim->timers, GF_TIMER_COMM);
            GF_TRY(st);
        }
        if (total == 0)
            return GF_OK;
        sim->promoted_contacts += (int64_t)(added - turned);
        gf_solver_result before = *res;
        GF_TRY(gf_solver_prepare(&sim->solver, p, c));
        sim->solver.prm.max_iterations = budget - spent > 1 ? budget - spent : 1;
        gf_status st = gf_solver_resume(&sim->solver, p, &sim->walls, c, sim->dt, comm, res);
        sim->solver.prm.max_iterations = budget;
        GF_TRY(st);
        spent += res->iterations;
        sim->resumed_iterations += res->iterations;
        res->iterations += before.iterations;
        res->blocks += before.blocks;
        res->slots += before.slots;
        res->joints += before.joints;
        res->fallbacks += before.fallbacks;
    }
}

/* The values of the stage due at the start of this step, when another was in force. */
static gf_status apply_stage(gf_sim *sim) {
    gf_stages *s = &sim->stages;
    if (s->count == 0) /* (a simulation set up without a configuration has none either) */
        return GF_OK;
    /* The configuration's own time step sets the tolerance: the same whichever is in force. */
    int k = gf_stages_due(s, sim->time, GF_SIM_SCHEDULE_TOLERANCE * s->base.dt);
    if (k == s->current)
        return GF_OK;
    const gf_stage *v = gf_stages_values(s, k);
    sim->materials = v->materials;
    /* The solver keeps its buffers when its settings stay. */
    if (memcmp(&sim->solver_params, &v->solver, sizeof v->solver) != 0)
        GF_TRY(gf_sim_set_solver(sim, &v->solver));
    memcpy(sim->gravity, v->gravity, sizeof sim->gravity);
    sim->dt = v->dt;
    for (int j = 0; j < sim->inserts.count; ++j) {
        sim->inserts.item[j].start = v->insert_start[j];
        sim->inserts.item[j].stop = v->insert_stop[j];
    }
    for (int j = 0; j < sim->outlets.count; ++j)
        sim->outlets.item[j].open = v->outlet_open[j];
    if (k >= 0 && (!sim->par || sim->par->rank == 0))
        gf_log_info("Stage %s (from t = %g s) in force from step %ld, t = %.9g s: %s", v->name,
                    v->time, sim->step + 1, sim->time, v->set);
    s->current = k;
    return GF_OK;
}

gf_status gf_sim_step(gf_sim *sim) {
    gf_timers *tm = &sim->timers;
    if (!sim->ghosts_ready)
        GF_TRY(gf_sim_start(sim));
    GF_TRY(apply_stage(sim));

    gf_timer_start(tm, GF_TIMER_DETECT);
    gf_contacts *c = &sim->contacts;
    c->speculate = sim->per_pair;
    c->spec_tolerance = sim->margin_tolerance + sim->margin_fraction * sim->max_radius;
    c->spec_dt = sim->dt;
    for (int d = 0; d < 3; ++d)
        c->spec_gdt[d] = sim->dt * sim->gravity[d];
    /* A resting contact approaches at |g| dt within a step: below twice that, no impact. */
    c->restitution_threshold =
        fmax(sim->materials.restitution_velocity, 2.0 * gf_norm(sim->gravity) * sim->dt);
    c->restitutive = gf_materials_restitutive(&sim->materials);
    c->cohesive = gf_materials_cohesive(&sim->materials);
    c->cohesion_per_radius = sim->materials.cohesion_per_radius;
    c->resistive = gf_materials_resistive(&sim->materials);
    sim->cells.skin = sim->skin_fraction * sim->max_radius;
    gf_status st = gf_contact_detect_step(&sim->particles, &sim->walls, &sim->materials,
                                          sim->margin, sim->dt, &sim->cells, c);
    if (st == GF_OK)
        st = keep_detected_turns(sim);
    gf_timer_stop(tm, GF_TIMER_DETECT);
    GF_TRY(st);

    gf_timer_start(tm, GF_TIMER_PREPARE);
    gf_integrate_free_velocity(&sim->particles, sim->gravity, sim->dt);
    /* Ghost corrections are measured from the free velocities, which owners compute alike. */
    st = sim->distributed ? gf_exchange_mark(&sim->xch, &sim->particles) : GF_OK;
    if (st == GF_OK)
        st = gf_solver_prepare(&sim->solver, &sim->particles, &sim->contacts);
    if (sim->solver_params.warm_start)
        gf_warmstart_apply(&sim->warm, &sim->particles, &sim->contacts);
    gf_timer_stop(tm, GF_TIMER_PREPARE);
    GF_TRY(st);

    gf_solver_comm comm = {.ctx = sim};
    if (sim->distributed) {
        comm.sync = comm_sync;
        comm.sync_begin = comm_sync_begin;
        comm.sync_end = comm_sync_end;
        if (sim->pipelined && gf_exchange_pipe_ready(&sim->xch)) {
            comm.pipe_expect = comm_pipe_expect;
            comm.pipe_post = comm_pipe_post;
            comm.pipe_take = comm_pipe_take;
        }
        comm.max = comm_max;
        comm.slot = sim->xch.slot;
        comm.nslot = sim->xch.nslot;
        comm.shared = sim->xch.shared;
        comm.color = sim->xch.color;
        comm.ncolors = sim->xch.ncolors;
    }
    double comm_before = tm->elapsed[GF_TIMER_COMM];
    gf_timer_start(tm, GF_TIMER_SOLVE);
    st = solve(sim, &comm);
    if (st == GF_OK && sim->solver_params.warm_start)
        st = gf_warmstart_store(&sim->warm, &sim->particles, &sim->contacts);
    gf_timer_stop(tm, GF_TIMER_SOLVE);
    tm->elapsed[GF_TIMER_SOLVE] -= tm->elapsed[GF_TIMER_COMM] - comm_before;
    GF_TRY(st);

    gf_sim_tally_step(sim);
    count_work(sim);

    gf_timer_start(tm, GF_TIMER_INTEGRATE);
    gf_integrate_positions(&sim->particles, sim->dt);
    gf_walls_advance(&sim->walls, sim->dt);
    sim->time += sim->dt;
    sim->step++;
    gf_walls_apply_schedule(&sim->walls, sim->time, GF_SIM_SCHEDULE_TOLERANCE * sim->dt);
    st = check_state(sim);
    gf_timer_stop(tm, GF_TIMER_INTEGRATE);
    GF_TRY(st);

    /* Outflow and inflow change the particle set before it is redistributed; the ghosts are
     * set aside for them and kept if nothing changed here. */
    size_t n_local = sim->particles.n_local, n_ghost = sim->particles.n_ghost;
    int64_t deleted = sim->deleted_local, created_before = sim->expected_particles;
    gf_particles_clear_ghosts(&sim->particles);
    gf_outflow_apply(&sim->outflow, &sim->particles, &sim->deleted_local, &sim->deleted_mass_local);
    gf_outlets_apply(&sim->outlets, &sim->particles, &sim->deleted_local, &sim->deleted_mass_local);
    int64_t created = 0;
    GF_TRY(gf_inflow_advance(&sim->inflow, &sim->walls, sim->dt,
                             sim->distributed ? &sim->xch.decomp : NULL,
                             sim->distributed ? sim->par : NULL, &sim->materials, &sim->particles,
                             &sim->next_id, &created));
    sim->expected_particles += created;
    sim->created_inflow += created;
    GF_TRY(gf_inserts_advance(&sim->inserts, sim->time, sim->step, sim->dt, &sim->walls,
                              sim->distributed ? &sim->xch.decomp : NULL,
                              sim->distributed ? sim->par : NULL, &sim->materials, &sim->particles,
                              &sim->next_id, &created));
    sim->expected_particles += created;

    int changed = sim->particles.n_local != n_local || sim->deleted_local != deleted ||
                  sim->expected_particles != created_before;
    if (!changed)
        sim->particles.n_ghost = n_ghost;

    gf_timer_start(tm, GF_TIMER_COMM);
    st = exchange(sim, changed);
    gf_timer_stop(tm, GF_TIMER_COMM);
    GF_TRY(st);

    if (sim->check_every > 0 && sim->step % sim->check_every == 0)
        GF_TRY(gf_sim_check_particles(sim));
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Accounting                                                                                 */

typedef struct {
    int64_t id;
    int32_t rank;
    double x[3];
} id_record;

static int cmp_record(const void *a, const void *b) {
    const id_record *p = a, *q = b;
    if (p->id != q->id)
        return p->id < q->id ? -1 : 1;
    return p->rank - q->rank;
}

static gf_status remember_ids(gf_sim *sim) {
    const gf_particles *p = &sim->particles;
    GF_TRY(gf_grow((void **)&sim->check_ids, p->n_local + 1, sizeof *sim->check_ids));
    GF_TRY(gf_grow((void **)&sim->check_pos, 3 * p->n_local + 1, sizeof *sim->check_pos));
    for (size_t i = 0; i < p->n_local; ++i) {
        sim->check_ids[i] = p->id[i];
        for (int d = 0; d < 3; ++d)
            sim->check_pos[3 * i + d] = p->x[d][i];
    }
    sim->check_n = p->n_local;
    return GF_OK;
}

gf_status gf_sim_check_particles(gf_sim *sim) {
    int64_t c[2] = {(int64_t)sim->particles.n_local, sim->deleted_local};
    if (sim->par)
        GF_TRY(gf_par_allreduce_i64(sim->par, c, 2, GF_PAR_SUM));
    int64_t n = c[0];
    sim->expected_particles -= c[1];
    sim->deleted_local = 0;
    sim->global_particles = n;
    if (n == sim->expected_particles)
        return remember_ids(sim);

    /* Something was lost or duplicated: find out what, on rank 0. */
    const gf_particles *p = &sim->particles;
    double *pos = gf_malloc(3 * p->n_local + 1, sizeof *pos);
    if (!pos)
        return gf_error_status();
    for (size_t i = 0; i < p->n_local; ++i)
        for (int d = 0; d < 3; ++d)
            pos[3 * i + d] = p->x[d][i];
    id_record *now = NULL, *before = NULL;
    size_t nnow = 0, nbefore = 0;
    size_t *off = NULL;
    gf_status st = GF_OK;
    /* Current and previous ownership, gathered with sizes so the counts are known. */
    id_record *mine = gf_malloc(p->n_local + 1, sizeof *mine);
    id_record *prev = gf_malloc(sim->check_n + 1, sizeof *prev);
    if (!mine || !prev) {
        free(pos);
        free(mine);
        free(prev);
        return gf_error_status();
    }
    int rank = sim->par ? sim->par->rank : 0;
    for (size_t i = 0; i < p->n_local; ++i) {
        mine[i].id = p->id[i];
        mine[i].rank = rank;
        memcpy(mine[i].x, pos + 3 * i, sizeof mine[i].x);
    }
    for (size_t i = 0; i < sim->check_n; ++i) {
        prev[i].id = sim->check_ids[i];
        prev[i].rank = rank;
        memcpy(prev[i].x, sim->check_pos + 3 * i, sizeof prev[i].x);
    }
    free(pos);
    if (sim->par) {
        void *a = NULL, *b = NULL;
        size_t *offb = NULL;
        st = gf_par_gather_bytes(sim->par, 0, mine, p->n_local * sizeof *mine, &a, &off);
        if (st == GF_OK)
            st = gf_par_gather_bytes(sim->par, 0, prev, sim->check_n * sizeof *prev, &b, &offb);
        if (st == GF_OK && rank == 0) {
            nnow = off[sim->par->size] / sizeof(id_record);
            nbefore = offb[sim->par->size] / sizeof(id_record);
        }
        now = a;
        before = b;
        free(off);
        free(offb);
        free(mine);
        free(prev);
    } else {
        now = mine;
        before = prev;
        nnow = p->n_local;
        nbefore = sim->check_n;
    }
    char detail[1024] = "";
    if (st == GF_OK && rank == 0) {
        qsort(now, nnow, sizeof *now, cmp_record);
        qsort(before, nbefore, sizeof *before, cmp_record);
        size_t len = 0, shown = 0;
        for (size_t i = 1; i < nnow && shown < 5; ++i)
            if (now[i].id == now[i - 1].id) {
                len += (size_t)snprintf(detail + len, sizeof detail - len,
                                        "; particle %lld is owned by ranks %d and %d",
                                        (long long)now[i].id, now[i - 1].rank, now[i].rank);
                shown++;
            }
        /* Ids present at the last check and missing now. */
        for (size_t i = 0, j = 0; i < nbefore && shown < 10 && len < sizeof detail; ++i) {
            while (j < nnow && now[j].id < before[i].id)
                ++j;
            if (j < nnow && now[j].id == before[i].id)
                continue;
            len += (size_t)snprintf(detail + len, sizeof detail - len,
                                    "; particle %lld vanished (last seen on rank %d at %g %g %g)",
                                    (long long)before[i].id, before[i].rank, before[i].x[0],
                                    before[i].x[1], before[i].x[2]);
            shown++;
        }
    }
    free(now);
    free(before);
    GF_TRY(st);
    /* Every rank finds the mismatch; rank 0's message has the details. */
    return gf_error_everywhere(
        GF_ERROR(GF_ERR_STATE,
                 "particle accounting failed at step %ld: %lld particles exist but %lld are "
                 "expected (created minus deleted)%s",
                 sim->step, (long long)n, (long long)sim->expected_particles, detail));
}

/* ------------------------------------------------------------------------------------------ */
/* Progress and summary                                                                       */

/* The run's bookkeeping, once: the clock of the progress lines and the summary, the step it
 * starts from, the particles it must keep. */
static gf_status run_begin(gf_sim *sim) {
    GF_TRY(gf_sim_start(sim));
    GF_TRY(remember_ids(sim));
    sim->start_wtime = gf_wtime();
    sim->progress_wtime = 0.0;
    sim->progress_done = 0;
    sim->first_step = sim->step;
    sim->run_begun = 1;
    return GF_OK;
}

gf_status gf_sim_run_to(gf_sim *sim, long last, gf_sim_observer observer, void *ctx) {
    if (!sim->run_begun)
        GF_TRY(run_begin(sim));
    gf_timer_start(&sim->timers, GF_TIMER_TOTAL);
    /* sim->steps is the run's last step (for the progress lines' ETA): a restarted run continues
     * where the checkpoint left off. */
    long first = sim->first_step, todo = sim->steps - first;
    int stop = 0;
    while (sim->step < last && !stop) {
        long step = sim->step + 1;
        double t = sim->time;
        GF_TRY(gf_error_context(gf_sim_step(sim), "step %ld (from t = %.9g s)", step, t));
        if (observer)
            GF_TRY(observer(ctx, sim, &stop));
        if (sim->progress_every > 0 &&
            (sim->step % sim->progress_every == 0 || sim->step == sim->steps || stop))
            GF_TRY(gf_sim_progress(sim, sim->step - first, todo));
    }
    gf_timer_stop(&sim->timers, GF_TIMER_TOTAL);
    return gf_sim_check_particles(sim);
}

gf_status gf_sim_run(gf_sim *sim, gf_sim_observer observer, void *ctx) {
    return gf_sim_run_to(sim, sim->steps, observer, ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Dry run                                                                                    */

gf_status gf_sim_dry_run(gf_sim *sim, gf_config *cfg, int nranks) {
    sim->dry_run = 1;
    GF_TRY(gf_sim_configure(sim, cfg, 0));
    int dims[3];
    GF_TRY(read_decomposition(gf_config_root(cfg), dims));
    if (dims[0] <= 0) {
        double extent[3] = {sim->hi[0] - sim->lo[0], sim->hi[1] - sim->lo[1],
                            sim->hi[2] - sim->lo[2]};
        GF_TRY(gf_decomp_choose_dims(nranks, extent, dims));
    }
    if (dims[0] * dims[1] * dims[2] != nranks)
        return GF_ERROR(GF_ERR_INPUT,
                        "Domain.processes %d x %d x %d needs %d ranks, not the %d of --ranks",
                        dims[0], dims[1], dims[2], dims[0] * dims[1] * dims[2], nranks);
    gf_decomp d;
    const int coords[3] = {0, 0, 0};
    gf_decomp_setup(&d, dims, sim->periodic, coords, sim->lo, sim->hi);
    d.rank_of = gf_malloc((size_t)nranks, sizeof *d.rank_of);
    int64_t *counts = gf_calloc((size_t)nranks, sizeof *counts);
    int64_t *layer = gf_calloc((size_t)nranks, sizeof *layer);
    if (!d.rank_of || !counts || !layer) {
        free(d.rank_of);
        free(counts);
        free(layer);
        return gf_error_status();
    }
    for (int r = 0; r < nranks; ++r)
        d.rank_of[r] = r;
    double r = fmax(sim->lattice.radius, sim->inflow.radius);
    double range = (2.0 + sim->margin_fraction) * r;
    /* Fast particles widen the range: assume the fastest moves at the inflow speed plus spread. */
    double vmax = sim->inflow.enabled
                      ? sim->inflow.speed + 2 * hypot(sim->inflow.spread[1], sim->inflow.spread[2])
                      : 1.0;
    range += 2.0 * vmax * sim->dt;
    gf_status st = gf_decomp_check_range(&d, range);
    int bound = 0;
    if (st == GF_OK)
        st = gf_lattice_count_owners(&sim->lattice, &sim->materials, &sim->walls, &d, counts,
                                     &bound);
    if (st == GF_OK) {
        gf_inflow_count_owners(&sim->inflow, &sim->walls, &d, layer);
        int64_t total = 0, ltotal = 0, cmax = 0, lmax = 0;
        int lranks = 0;
        for (int k = 0; k < nranks; ++k) {
            total += counts[k];
            ltotal += layer[k];
            cmax = counts[k] > cmax ? counts[k] : cmax;
            lmax = layer[k] > lmax ? layer[k] : lmax;
            lranks += layer[k] > 0;
        }
        double w[3], vsub = 1.0, vghost = 1.0;
        for (int a = 0; a < 3; ++a) {
            w[a] = (sim->hi[a] - sim->lo[a]) / dims[a];
            vsub *= w[a];
            vghost *= w[a] + ((dims[a] > 1 || sim->periodic[a]) ? 2.0 * range : 0.0);
        }
        double ghost_factor = vghost / vsub - 1.0;
        /* A dense random packing (volume fraction 0.64) is the most a subdomain can hold. */
        double vsphere = 4.0 / 3.0 * M_PI * r * r * r;
        double dense = 0.64 * vsub / vsphere;
        /* Bytes: particle state and solver/exchange workspace per particle; contact record,
         * Delassus block and warm start per contact, at 3 contacts per particle. */
        const double per_particle = 230.0, per_contact = 300.0, contacts_pp = 3.0;
        double mem_dense =
            dense * (1.0 + ghost_factor) * (per_particle + contacts_pp * per_contact);
        double mem_init =
            (double)cmax * (1.0 + ghost_factor) * (per_particle + contacts_pp * per_contact);
        gf_log_info("dry run for %d ranks: decomposition %d x %d x %d, subdomains %.4g x %.4g x "
                    "%.4g m, interaction range %.4g m: ok",
                    nranks, dims[0], dims[1], dims[2], w[0], w[1], w[2], range);
        gf_log_info(
            "  initial lattice: %s%lld particles, at most %lld on one rank (average %.1f)%s",
            bound ? "at most " : "", (long long)total, (long long)cmax, (double)total / nranks,
            bound ? " (counted by axis: sites in walls and obstacles not taken off)" : "");
        if (sim->inflow.enabled)
            gf_log_info("  first inflow layer: %lld particles on %d ranks (at most %lld on one); "
                        "one layer every %.4g s: %.4g particles/s enter",
                        (long long)ltotal, lranks, (long long)lmax,
                        sim->inflow.reset_distance / sim->inflow.speed,
                        (double)sim->inflow.per_layer * sim->inflow.speed /
                            sim->inflow.reset_distance);
        gf_log_info("  ghosts add %.0f%% to a subdomain's particles", 100.0 * ghost_factor);
        gf_log_info("  memory per rank: %.3g MiB for the initial state, at most %.3g MiB for a "
                    "dense packing (%.0f particles)",
                    mem_init / 1048576.0, mem_dense / 1048576.0, dense);
    }
    free(d.rank_of);
    free(counts);
    free(layer);
    return st;
}
