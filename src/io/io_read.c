/* Reading granflow's HDF5 files: a checkpoint's configuration, header and state for a restart,
 * and particles from a snapshot or checkpoint named by a Particles block. */
#include "io/io.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_compare.h"
#include "geometry/geometry_mesh.h"
#include "core/log.h"
#include "core/vec.h"
#include "granflow/version.h"
#include "h5/h5file.h"
#include "core/order.h"
#include "h5/particle_rows.h"
#include "layout.h"

/* Checks the "format" attribute (local: the caller agrees). */
static void check_format(gf_h5file *f, const char *want, const char *what) {
    char format[64] = "";
    gf_h5_attr_read_string(f, f->file, "format", format, sizeof format);
    if (f->local == GF_OK && strcmp(format, want) != 0)
        H5_FAIL(f, "'%s' is a '%s' file, not a granflow %s ('%s')", f->path, format, what, want);
}

gf_status gf_io_read_configuration(const gf_sim *sim, const char *path, char **text) {
    *text = NULL;
    gf_h5file f;
    GF_TRY(gf_h5_open(&f, sim->par, path, 0));
    check_format(&f, FORMAT_CHECKPOINT, "checkpoint");
    size_t len = 0;
    int present = 0;
    hid_t str = -1; /* the string type of one string; -1: a character array (earlier versions) */
    if (f.local == GF_OK && H5Lexists(f.file, "configuration", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f.file, "configuration", H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hid_t ty = d >= 0 ? H5Dget_type(d) : -1;
        hssize_t npts = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
        if (npts < 0 || ty < 0) {
            H5_FAIL(&f, "cannot read the configuration stored in '%s'", path);
        } else if (H5Tget_class(ty) == H5T_STRING) {
            len = H5Tget_size(ty);
            if (npts != 1 || H5Tis_variable_str(ty) > 0 || len == 0) {
                H5_FAIL(&f, "the configuration stored in '%s' is not one string", path);
            } else {
                str = H5Tcopy(H5T_C_S1);
                H5Tset_size(str, len);
                H5Tset_strpad(str, H5T_STR_NULLPAD);
            }
        } else {
            len = (size_t)npts;
        }
        present = 1;
        if (ty >= 0)
            H5Tclose(ty);
        if (sp >= 0)
            H5Sclose(sp);
        if (d >= 0)
            H5Dclose(d);
    }
    *text = gf_malloc(len + 1, 1);
    if (!*text)
        gf_h5_local(&f, gf_error_status());
    if (gf_h5_agree(&f) == GF_OK && present) {
        if (str >= 0)
            gf_h5_dset_read(&f, f.file, "configuration", str, 1, 1, 0, 1, *text);
        else
            gf_h5_dset_read(&f, f.file, "configuration", H5T_NATIVE_CHAR, 1, len, 0, len, *text);
    }
    if (str >= 0)
        H5Tclose(str);
    if (*text)
        (*text)[f.st == GF_OK ? len : 0] = '\0';
    gf_status st = gf_h5_close(&f);
    if (st != GF_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

/* What the header says about the rows. */
typedef struct {
    long long count, step;
    int nranks, dims[3];
    double time, lo[3], hi[3];
} ckpt_header;

/* The largest step a run reaches (Time.steps' bound): a header beyond it is damaged, and a step
 * near INT64_MAX would overflow the run's arithmetic (the step to run to). */
#define MAX_STEP 1000000000000000LL

static void read_header(gf_h5file *f, const gf_sim *sim, ckpt_header *h) {
    memset(h, 0, sizeof *h);
    check_format(f, FORMAT_CHECKPOINT, "checkpoint");
    gf_h5_attr_read(f, f->file, "particle_count", H5T_NATIVE_LLONG, 1, &h->count);
    gf_h5_attr_read(f, f->file, "step", H5T_NATIVE_LLONG, 1, &h->step);
    gf_h5_attr_read(f, f->file, "time", H5T_NATIVE_DOUBLE, 1, &h->time);
    gf_h5_attr_read(f, f->file, "rank_count", H5T_NATIVE_INT, 1, &h->nranks);
    gf_h5_attr_read(f, f->file, "decomposition", H5T_NATIVE_INT, 3, h->dims);
    gf_h5_attr_read(f, f->file, "box_min", H5T_NATIVE_DOUBLE, 3, h->lo);
    gf_h5_attr_read(f, f->file, "box_max", H5T_NATIVE_DOUBLE, 3, h->hi);
    if (f->local == GF_OK && (h->count < 0 || h->nranks < 1 || h->step < 0 || h->step > MAX_STEP ||
                              !isfinite(h->time) || h->time < 0.0))
        H5_FAIL(f,
                "'%s' has an invalid header (particle_count %lld, rank_count %d, step %lld, time "
                "%g): a damaged checkpoint?",
                f->path, h->count, h->nranks, h->step, h->time);
    for (int a = 0; a < 3 && f->local == GF_OK; ++a)
        if (h->lo[a] != sim->lo[a] || h->hi[a] != sim->hi[a])
            H5_FAIL(f,
                    "'%s' was written for the box [%g, %g] along %c, the configuration has "
                    "[%g, %g]",
                    f->path, h->lo[a], h->hi[a], "xyz"[a], sim -> lo[a], sim -> hi[a]);
    gf_h5_agree(f);
}

/* The items of /state, each module's run state (gf_sim_restore_state gives them meaning);
 * local reads: the caller agrees. */
static void read_state(gf_h5file *f, gf_state *s) {
    hid_t sg = gf_h5_group_open(f, "state");
    gf_h5_attrs_read_state(f, sg, s);
    if (sg >= 0)
        H5Gclose(sg);
    gf_h5_agree(f);
}

/* What no run writes into a checkpoint: NULL if the particle is plausible, else what is wrong
 * with it (a bit flip or a foreign writer). */
static const char *implausible(const gf_sim *sim, const gf_particle *p, int64_t next_id, char *why,
                               size_t size) {
    double qn = 0.0;
    for (int c = 0; c < 4; ++c)
        qn += p->q[c] * p->q[c];
    if (p->id < 0 || p->id >= next_id)
        snprintf(why, size, "its id is outside [0, %lld), the ids given so far",
                 (long long)next_id);
    else if (!(isfinite(p->radius) && p->radius > 0.0))
        snprintf(why, size, "radius %g", p->radius);
    else if (p->shape.type < 0 || p->shape.type >= GF_SHAPE_COUNT ||
             gf_shape_is_static(p->shape.type) ||
             gf_shape_check(&p->shape, &sim->clumps) != GF_OK) {
        snprintf(why, size, "an invalid shape (%s)",
                 p->shape.type >= 0 && p->shape.type < GF_SHAPE_COUNT ? gf_error_message()
                                                                      : "unknown shape type");
        gf_error_clear();
    } else if (fabs(gf_shape_bounding_radius(&p->shape, &sim->clumps) - p->radius) >
               1e-12 * p->radius)
        snprintf(why, size, "bounding radius %g, its shape has %g", p->radius,
                 gf_shape_bounding_radius(&p->shape, &sim->clumps));
    else if (!(isfinite(p->inv_mass) && p->inv_mass >= 0.0))
        snprintf(why, size, "inverse mass %g", p->inv_mass);
    else if (!(fabs(sqrt(qn) - 1.0) <= 1e-6))
        snprintf(why, size, "an orientation quaternion of norm %g", sqrt(qn));
    else {
        why[0] = '\0';
        for (int c = 0; c < 3 && !why[0]; ++c) {
            if (!(isfinite(p->inv_inertia[c]) && p->inv_inertia[c] >= 0.0))
                snprintf(why, size, "inverse inertia %g", p->inv_inertia[c]);
            else if (!isfinite(p->v[c]) || !isfinite(p->w[c]))
                snprintf(why, size, "a non-finite velocity");
            else if (!(p->x[c] >= sim->lo[c] && p->x[c] <= sim->hi[c]))
                snprintf(why, size, "position %g along %c, outside the box [%g, %g]", p->x[c],
                         "xyz"[c], sim -> lo[c], sim -> hi[c]);
        }
        if (!why[0])
            return NULL;
    }
    return why;
}

/* The particles into the simulation: kept in file order when the layout is unchanged, else sent
 * to their owners. Collective; returns the agreed status. */
static gf_status place_particles(gf_sim *sim, const gf_h5_particle_rows *rows, int same,
                                 const char *path, int64_t next_id) {
    size_t n = rows->n;
    gf_particle *recs = gf_h5_particle_rows_records(rows);
    gf_status st = recs ? GF_OK : gf_error_status();
    for (size_t i = 0; st == GF_OK && i < n; ++i) {
        gf_particle *p = &recs[i];
        char why[160];
        if (p->material < 0 || p->material >= sim->materials.count)
            st = GF_ERROR(GF_ERR_INPUT,
                          "'%s': particle %lld has material %d, the configuration "
                          "defines %d",
                          path, (long long)p->id, p->material, sim->materials.count);
        else if (implausible(sim, p, next_id, why, sizeof why))
            st = GF_ERROR(GF_ERR_INPUT,
                          "'%s': particle %lld is implausible: %s (a damaged checkpoint?)", path,
                          (long long)p->id, why);
    }
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    if (st == GF_OK && same) {
        /* Each rank's own rows, in the order written: the run continues bit for bit. */
        for (size_t i = 0; i < n && st == GF_OK; ++i)
            st = gf_particles_add(&sim->particles, &recs[i]);
        if (sim->par)
            st = gf_par_agree(sim->par, st, NULL);
    } else if (st == GF_OK) {
        st = gf_sim_place_particles(sim, recs, n);
    }
    free(recs);
    return st;
}

/* The warm-start table from the rows read: all of them on an unchanged layout, else those whose
 * first id is a particle of this rank. Local. */
static gf_status place_warmstart(gf_sim *sim, size_t wn, const int64_t *wpair,
                                 const int32_t *wpoint, const double *wimp, const double *wtorque,
                                 int same) {
    gf_warmstart_free(&sim->warm);
    gf_warmstart_init(&sim->warm);
    if (same || !sim->distributed)
        return gf_warmstart_insert(&sim->warm, wn, wpair, wpoint, wimp, wtorque);
    size_t nl = sim->particles.n_local;
    int64_t *ids = gf_malloc(nl + 1, sizeof *ids);
    if (!ids)
        return gf_error_status();
    for (size_t i = 0; i < nl; ++i)
        ids[i] = sim->particles.id[i];
    if (nl > 1)
        qsort(ids, nl, sizeof *ids, gf_cmp_i64); /* for membership tests */
    gf_warmstart all;
    gf_warmstart_init(&all);
    gf_status st = gf_warmstart_insert(&all, wn, wpair, wpoint, wimp, wtorque);
    if (st == GF_OK)
        st = gf_warmstart_take(&all, ids, nl, &sim->warm);
    gf_warmstart_free(&all);
    free(ids);
    return st;
}

/* The cuts a load-balanced run wrote (see header), for a restart on the same layout: its
 * particles are where those cuts put them. */
static void read_cuts(gf_h5file *f, gf_sim *sim) {
    gf_decomp *d = &sim->xch.decomp;
    for (int a = 0; a < 3 && f->st == GF_OK && f->local == GF_OK; ++a) {
        htri_t has = H5Aexists(f->file, gf_io_layout_cuts[a]);
        if (has < 0)
            H5_FAIL(f, "reading the attributes of '%s' failed", f->path);
        if (has <= 0)
            continue;
        double *cuts = gf_malloc((size_t)d->dims[a] + 1, sizeof *cuts);
        if (!cuts) {
            gf_h5_local(f, gf_error_status());
            return;
        }
        gf_h5_attr_read(f, f->file, gf_io_layout_cuts[a], H5T_NATIVE_DOUBLE, d->dims[a] + 1, cuts);
        if (f->local == GF_OK)
            gf_h5_local(f, gf_error_context(gf_decomp_set_cuts(d, a, cuts),
                                            "'%s' (a damaged checkpoint?)", f->path));
        free(cuts);
    }
}

gf_status gf_io_read_checkpoint(gf_sim *sim, const char *path) {
    gf_status st = GF_OK;
    if (sim->particles.n_local != 0)
        st = GF_ERROR(GF_ERR_STATE, "restart needs a simulation without particles");
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    GF_TRY(st);
    gf_h5file f;
    GF_TRY(gf_h5_open(&f, sim->par, path, 0));
    ckpt_header h;
    read_header(&f, sim, &h);
    int nranks = f.st == GF_OK ? h.nranks : 0;
    int64_t *offs = gf_malloc((size_t)nranks + 2, sizeof *offs);
    int64_t *woffs = gf_malloc((size_t)nranks + 2, sizeof *woffs);
    if (!offs || !woffs)
        gf_h5_local(&f, gf_error_status());
    hid_t g = gf_h5_group_open(&f, "particles");
    gf_h5_agree(&f);
    gf_h5_read_rank_offsets(&f, g, nranks, h.count, offs);
    int same = f.st == GF_OK && nranks == f.size;
    for (int a = 0; a < 3; ++a)
        same = same && (!sim->distributed || h.dims[a] == sim->dims[a]);
    /* This rank's rows: its own group when the layout is unchanged, else an even slab. */
    size_t N = (size_t)h.count, first = 0, n = 0;
    if (f.st == GF_OK && same) {
        first = (size_t)offs[f.rank];
        n = (size_t)(offs[f.rank + 1] - offs[f.rank]);
    } else if (f.st == GF_OK) {
        first = N * (size_t)f.rank / (size_t)f.size;
        n = N * (size_t)(f.rank + 1) / (size_t)f.size - first;
    }
    if (same && sim->distributed)
        read_cuts(&f, sim);
    gf_h5_particle_rows rows;
    gf_h5_read_particle_rows(&f, g, first, n, N, 1, &rows);
    /* The ghost lists the writer kept, rebuilt only on its layout (its owners and order). */
    double ghost_range = 0.0, *ghost_ref = NULL;
    if (f.st == GF_OK && same && sim->distributed &&
        H5Lexists(g, "ghost_reference", H5P_DEFAULT) > 0) {
        gf_h5_attr_read(&f, g, "ghost_range", H5T_NATIVE_DOUBLE, 1, &ghost_range);
        ghost_ref = gf_malloc(3 * n + 1, sizeof *ghost_ref);
        if (!ghost_ref)
            gf_h5_local(&f, gf_error_status());
        gf_h5_agree(&f);
        gf_h5_dset_read(&f, g, "ghost_reference", H5T_NATIVE_DOUBLE, 3, n, first, N, ghost_ref);
        int finite = isfinite(ghost_range) && ghost_range > 0.0;
        for (size_t i = 0; f.st == GF_OK && i < 3 * n; ++i)
            finite = finite && isfinite(ghost_ref[i]);
        if (f.st == GF_OK && !finite)
            gf_h5_local(&f, GF_ERROR(GF_ERR_INPUT,
                                     "'%s': the ghost lists' range (%g m) is not positive or a "
                                     "position they were chosen from is not finite (a damaged "
                                     "checkpoint?)",
                                     path, ghost_range));
        gf_h5_agree(&f);
    }
    if (g >= 0)
        H5Gclose(g);

    /* Warm-start entries: a rank's own group on an unchanged layout, else every entry (each rank
     * keeps those of its particles). */
    hid_t wg = gf_h5_group_open(&f, "warmstart");
    gf_h5_agree(&f);
    /* The offsets must end at the rows the file holds: a damaged offset must not size an
     * allocation (a huge one asked for 24 TB). */
    int64_t wrows = gf_h5_dset_rows(&f, wg, "pair");
    gf_h5_agree(&f);
    gf_h5_read_rank_offsets(&f, wg, nranks, wrows, woffs);
    int64_t wN = f.st == GF_OK ? woffs[nranks] : 0;
    size_t wfirst = 0, wn = 0;
    if (f.st == GF_OK && same) {
        wfirst = (size_t)woffs[f.rank];
        wn = (size_t)(woffs[f.rank + 1] - woffs[f.rank]);
    } else if (f.st == GF_OK) {
        wn = (size_t)wN;
    }
    int64_t *wpair = gf_malloc(2 * wn + 1, sizeof *wpair);
    int32_t *wpoint = gf_calloc(wn + 1, sizeof *wpoint);
    double *wimp = gf_malloc(3 * wn + 1, sizeof *wimp);
    double *wtorque = gf_calloc(3 * wn + 1, sizeof *wtorque);
    if (!wpair || !wpoint || !wimp || !wtorque)
        gf_h5_local(&f, gf_error_status());
    gf_h5_agree(&f);
    gf_h5_dset_read(&f, wg, "pair", H5T_NATIVE_INT64, 2, wn, wfirst, (size_t)wN, wpair);
    /* Checkpoints of spheres only (before granflow 0.2) have one point per pair. */
    if (f.st == GF_OK && H5Lexists(wg, "point", H5P_DEFAULT) > 0)
        gf_h5_dset_read(&f, wg, "point", H5T_NATIVE_INT32, 1, wn, wfirst, (size_t)wN, wpoint);
    gf_h5_dset_read(&f, wg, "impulse", H5T_NATIVE_DOUBLE, 3, wn, wfirst, (size_t)wN, wimp);
    /* Torques of rolling and twisting resistance: only in checkpoints of runs that have it. */
    if (f.st == GF_OK && H5Lexists(wg, "torque", H5P_DEFAULT) > 0)
        gf_h5_dset_read(&f, wg, "torque", H5T_NATIVE_DOUBLE, 3, wn, wfirst, (size_t)wN, wtorque);
    if (wg >= 0)
        H5Gclose(wg);
    gf_state state;
    gf_state_init(&state);
    state.source = path;
    read_state(&f, &state);
    st = gf_h5_close(&f);

    /* The id every particle must lie below, before the state is restored into the modules. */
    int64_t next_id = 0;
    if (st == GF_OK)
        st = gf_state_get_int(&state, "next_id", 1, &next_id);
    if (st == GF_OK)
        st = place_particles(sim, &rows, same, path, next_id);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    if (st == GF_OK)
        st = gf_sim_check_unique_ids(sim, path, " (a damaged checkpoint?)");
    if (st == GF_OK)
        st = place_warmstart(sim, wn, wpair, wpoint, wimp, wtorque, same);
    if (st == GF_OK && ghost_ref)
        st = gf_sim_restore_ghost_lists(sim, ghost_ref, ghost_range);
    if (st == GF_OK)
        st = gf_sim_restore_state(sim, &state);
    gf_state_free(&state);
    free(ghost_ref);
    gf_h5_particle_rows_free(&rows);
    free(offs);
    free(woffs);
    free(wpair);
    free(wpoint);
    free(wimp);
    free(wtorque);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    if (st != GF_OK) {
        /* A refused checkpoint leaves nothing of itself behind. */
        gf_particles_free(&sim->particles);
        gf_warmstart_free(&sim->warm);
        gf_warmstart_init(&sim->warm);
        sim->ghost_restore = 0;
        return st;
    }
    sim->step = (long)h.step;
    sim->time = h.time;
    sim->ghosts_ready = 0;
    return GF_OK;
}
