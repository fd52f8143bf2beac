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
#include "h5file.h"
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
    GF_TRY(gf_h5_open(&f, sim, path, 0));
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
    if (f->local == GF_OK &&
        (h->count < 0 || h->nranks < 1 || h->step < 0 || !isfinite(h->time) || h->time < 0.0))
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

/* The particle columns of the rows this rank reads: the inverse mass and inertia of a checkpoint
 * (restart) or the mass every granflow file holds (particle files, which recompute the rest). */
typedef struct {
    size_t n;
    int64_t *id;
    double *x, *v, *w, *q, *r, *im, *ii, *mass, *dim;
    int32_t *mat, *shape, *clump;
} particle_rows;

static void particle_rows_free(particle_rows *p) {
    free(p->id);
    free(p->x);
    free(p->v);
    free(p->w);
    free(p->q);
    free(p->r);
    free(p->im);
    free(p->ii);
    free(p->mass);
    free(p->mat);
    free(p->dim);
    free(p->shape);
    free(p->clump);
    memset(p, 0, sizeof *p);
}

/* Rows first .. first + n - 1 of N; with `inverse` the inverse mass and inertia (checkpoints
 * only), else the mass (snapshots and checkpoints). */
static void read_particle_rows(gf_h5file *f, hid_t g, size_t first, size_t n, size_t N, int inverse,
                               particle_rows *p) {
    memset(p, 0, sizeof *p);
    if (f->st != GF_OK)
        return;
    p->n = n;
    p->id = gf_malloc(n + 1, sizeof *p->id);
    p->x = gf_malloc(3 * n + 1, sizeof *p->x);
    p->v = gf_malloc(3 * n + 1, sizeof *p->v);
    p->w = gf_malloc(3 * n + 1, sizeof *p->w);
    p->q = gf_malloc(4 * n + 1, sizeof *p->q);
    p->r = gf_malloc(n + 1, sizeof *p->r);
    if (inverse) {
        p->im = gf_malloc(n + 1, sizeof *p->im);
        p->ii = gf_malloc(3 * n + 1, sizeof *p->ii);
    } else {
        p->mass = gf_malloc(n + 1, sizeof *p->mass);
    }
    p->mat = gf_malloc(n + 1, sizeof *p->mat);
    p->dim = gf_calloc(3 * n + 1, sizeof *p->dim);
    p->shape = gf_calloc(n + 1, sizeof *p->shape);
    p->clump = gf_malloc(n + 1, sizeof *p->clump);
    if (!p->id || !p->x || !p->v || !p->w || !p->q || !p->r || (inverse && (!p->im || !p->ii)) ||
        (!inverse && !p->mass) || !p->mat || !p->dim || !p->shape || !p->clump)
        gf_h5_local(f, gf_error_status());
    gf_h5_agree(f);
    gf_h5_dset_read(f, g, "id", H5T_NATIVE_INT64, 1, n, first, N, p->id);
    gf_h5_dset_read(f, g, "position", H5T_NATIVE_DOUBLE, 3, n, first, N, p->x);
    gf_h5_dset_read(f, g, "velocity", H5T_NATIVE_DOUBLE, 3, n, first, N, p->v);
    gf_h5_dset_read(f, g, "angular_velocity", H5T_NATIVE_DOUBLE, 3, n, first, N, p->w);
    gf_h5_dset_read(f, g, "orientation", H5T_NATIVE_DOUBLE, 4, n, first, N, p->q);
    gf_h5_dset_read(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, first, N, p->r);
    if (inverse) {
        gf_h5_dset_read(f, g, "inverse_mass", H5T_NATIVE_DOUBLE, 1, n, first, N, p->im);
        gf_h5_dset_read(f, g, "inverse_inertia", H5T_NATIVE_DOUBLE, 3, n, first, N, p->ii);
    } else {
        gf_h5_dset_read(f, g, "mass", H5T_NATIVE_DOUBLE, 1, n, first, N, p->mass);
    }
    gf_h5_dset_read(f, g, "material", H5T_NATIVE_INT32, 1, n, first, N, p->mat);
    /* Checkpoints before granflow 0.2 hold spheres only, of the radius read. */
    if (f->st == GF_OK && H5Lexists(g, "shape", H5P_DEFAULT) > 0) {
        gf_h5_dset_read(f, g, "shape", H5T_NATIVE_INT32, 1, n, first, N, p->shape);
        gf_h5_dset_read(f, g, "dimensions", H5T_NATIVE_DOUBLE, 3, n, first, N, p->dim);
        gf_h5_dset_read(f, g, "clump", H5T_NATIVE_INT32, 1, n, first, N, p->clump);
    } else if (f->st == GF_OK) {
        for (size_t i = 0; i < n; ++i) {
            p->dim[3 * i] = p->r[i];
            p->clump[i] = -1;
        }
    }
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

/* The particles into the simulation: kept in file order when the layout is unchanged, else sent
 * to their owners. Collective; returns the agreed status. */
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

static int cmp_id(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

gf_status gf_io_check_unique_ids(const gf_sim *sim, const char *path, const char *hint) {
    const gf_particles *pp = &sim->particles;
    int P = sim->par ? sim->par->size : 1;
    size_t n = pp->n_local;
    int64_t *ids = NULL;
    size_t nin = 0;
    gf_status st = GF_OK;
    /* Each id goes to the rank id mod P, which sorts what it gets. */
    if (P == 1) {
        ids = gf_malloc(n + 1, sizeof *ids);
        if (!ids)
            st = gf_error_status();
        else
            memcpy(ids, pp->id, n * sizeof *ids);
        nin = n;
    } else {
        size_t *counts = gf_calloc((size_t)P, sizeof *counts);
        size_t *fill = gf_calloc((size_t)P + 1, sizeof *fill);
        int64_t *out = gf_malloc(n + 1, sizeof *out);
        if (!counts || !fill || !out)
            st = gf_error_status();
        for (size_t i = 0; st == GF_OK && i < n; ++i)
            counts[(uint64_t)pp->id[i] % (uint64_t)P]++;
        for (int k = 0; st == GF_OK && k < P; ++k)
            fill[k + 1] = fill[k] + counts[k];
        for (size_t i = 0; st == GF_OK && i < n; ++i)
            out[fill[(uint64_t)pp->id[i] % (uint64_t)P]++] = pp->id[i];
        for (int k = 0; st == GF_OK && k < P; ++k)
            counts[k] *= sizeof(int64_t);
        void *in = NULL;
        size_t inlen = 0;
        st = gf_par_agree(sim->par, st, NULL);
        if (st == GF_OK)
            st = gf_par_alltoallv_bytes(sim->par, out, counts, &in, &inlen);
        ids = in;
        nin = inlen / sizeof(int64_t);
        free(counts);
        free(fill);
        free(out);
    }
    if (st == GF_OK && nin > 1) {
        qsort(ids, nin, sizeof *ids, cmp_id);
        for (size_t i = 1; i < nin; ++i)
            if (ids[i] == ids[i - 1]) {
                st = GF_ERROR(GF_ERR_INPUT, "'%s': particle id %lld appears twice%s", path,
                              (long long)ids[i], hint ? hint : "");
                break;
            }
    }
    free(ids);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

gf_status gf_io_place_particles(gf_sim *sim, const gf_particle *recs, size_t n) {
    gf_status st = GF_OK;
    if (!sim->distributed) {
        for (size_t i = 0; i < n && st == GF_OK; ++i)
            st = gf_particles_add(&sim->particles, &recs[i]);
        if (sim->par)
            st = gf_par_agree(sim->par, st, NULL);
        return st;
    }
    int P = sim->par->size;
    size_t *counts = gf_calloc((size_t)P, sizeof *counts);
    size_t *fill = gf_calloc((size_t)P + 1, sizeof *fill);
    gf_particle *sendbuf = gf_malloc(n + 1, sizeof *sendbuf);
    if (!counts || !fill || !sendbuf)
        st = gf_error_status();
    for (size_t i = 0; i < n && st == GF_OK; ++i)
        counts[gf_decomp_owner(&sim->xch.decomp, recs[i].x)]++;
    for (int k = 0; k < P && st == GF_OK; ++k)
        fill[k + 1] = fill[k] + counts[k];
    for (size_t i = 0; i < n && st == GF_OK; ++i)
        sendbuf[fill[gf_decomp_owner(&sim->xch.decomp, recs[i].x)]++] = recs[i];
    for (int k = 0; k < P && st == GF_OK; ++k)
        counts[k] *= sizeof(gf_particle);
    /* The all-to-all is collective: every rank enters it or none does. */
    st = gf_par_agree(sim->par, st, NULL);
    void *in = NULL;
    size_t inlen = 0;
    if (st == GF_OK)
        st = gf_par_alltoallv_bytes(sim->par, sendbuf, counts, &in, &inlen);
    if (st == GF_OK)
        st = gf_particles_reserve(&sim->particles,
                                  sim->particles.n_local + inlen / sizeof(gf_particle));
    for (size_t k = 0; st == GF_OK && k < inlen / sizeof(gf_particle); ++k) {
        gf_particle pr;
        memcpy(&pr, (char *)in + k * sizeof pr, sizeof pr);
        st = gf_particles_add(&sim->particles, &pr);
    }
    free(in);
    free(counts);
    free(fill);
    free(sendbuf);
    return gf_par_agree(sim->par, st, NULL);
}

/* The rows as particle records: pose, velocities, shape and material as stored; the inverse mass
 * and inertia too when the rows hold them (checkpoints). */
static gf_particle *rows_to_records(const particle_rows *rows) {
    size_t n = rows->n;
    gf_particle *recs = gf_malloc(n + 1, sizeof *recs);
    for (size_t i = 0; recs && i < n; ++i) {
        gf_particle *p = &recs[i];
        memset(p, 0, sizeof *p);
        p->id = rows->id[i];
        for (int c = 0; c < 3; ++c) {
            p->x[c] = rows->x[3 * i + c];
            p->v[c] = rows->v[3 * i + c];
            p->w[c] = rows->w[3 * i + c];
            p->inv_inertia[c] = rows->ii ? rows->ii[3 * i + c] : 0.0;
        }
        for (int c = 0; c < 4; ++c)
            p->q[c] = rows->q[4 * i + c];
        p->radius = rows->r[i];
        p->shape.type = rows->shape[i];
        p->shape.clump = rows->clump[i];
        for (int c = 0; c < 3; ++c)
            p->shape.dim[c] = rows->dim[3 * i + c];
        p->inv_mass = rows->im ? rows->im[i] : 0.0;
        p->material = rows->mat[i];
    }
    return recs;
}

static gf_status place_particles(gf_sim *sim, const particle_rows *rows, int same, const char *path,
                                 int64_t next_id) {
    size_t n = rows->n;
    gf_particle *recs = rows_to_records(rows);
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
        st = gf_io_place_particles(sim, recs, n);
    }
    free(recs);
    return st;
}

gf_status gf_io_read_particles(const gf_sim *sim, const char *path, gf_particle **recs,
                               double **mass, size_t *n) {
    *recs = NULL;
    *mass = NULL;
    *n = 0;
    gf_h5file f;
    GF_TRY(gf_h5_open(&f, sim, path, 0));
    char format[64] = "";
    gf_h5_attr_read_string(&f, f.file, "format", format, sizeof format);
    if (f.local == GF_OK && strcmp(format, FORMAT_SNAPSHOT) != 0 &&
        strcmp(format, FORMAT_CHECKPOINT) != 0)
        H5_FAIL(&f, "'%s' is a '%s' file, not a granflow snapshot or checkpoint", path, format);
    long long count = 0;
    gf_h5_attr_read(&f, f.file, "particle_count", H5T_NATIVE_LLONG, 1, &count);
    if (f.local == GF_OK && count < 0)
        H5_FAIL(&f, "'%s' has a negative particle_count %lld", path, count);
    hid_t g = gf_h5_group_open(&f, "particles");
    gf_h5_agree(&f);
    /* An even slab of rows per rank, whatever the rank count that wrote the file. */
    size_t N = f.st == GF_OK ? (size_t)count : 0;
    size_t first = N * (size_t)f.rank / (size_t)f.size;
    size_t rows_n = N * (size_t)(f.rank + 1) / (size_t)f.size - first;
    particle_rows rows;
    read_particle_rows(&f, g, first, rows_n, N, 0, &rows);
    if (g >= 0)
        H5Gclose(g);
    gf_status st = gf_h5_close(&f);
    if (st == GF_OK) {
        *recs = rows_to_records(&rows);
        *mass = gf_malloc(rows_n + 1, sizeof **mass);
        if (!*recs || !*mass)
            st = gf_error_status();
        else
            memcpy(*mass, rows.mass, rows_n * sizeof **mass);
        if (sim->par)
            st = gf_par_agree(sim->par, st, NULL);
    }
    particle_rows_free(&rows);
    if (st != GF_OK) {
        free(*recs);
        free(*mass);
        *recs = NULL;
        *mass = NULL;
        return st;
    }
    *n = rows_n;
    return GF_OK;
}

/* The warm-start table from the rows read: all of them on an unchanged layout, else those whose
 * first id is a particle of this rank. Local. */
static gf_status place_warmstart(gf_sim *sim, size_t wn, const int64_t *wpair,
                                 const int32_t *wpoint, const double *wimp, int same) {
    gf_warmstart_free(&sim->warm);
    gf_warmstart_init(&sim->warm);
    if (same || !sim->distributed)
        return gf_warmstart_insert(&sim->warm, wn, wpair, wpoint, wimp);
    size_t nl = sim->particles.n_local;
    int64_t *ids = gf_malloc(nl + 1, sizeof *ids);
    if (!ids)
        return gf_error_status();
    for (size_t i = 0; i < nl; ++i)
        ids[i] = sim->particles.id[i];
    if (nl > 1)
        qsort(ids, nl, sizeof *ids, gf_io_layout_cmp_i64); /* for membership tests */
    gf_warmstart all;
    gf_warmstart_init(&all);
    gf_status st = gf_warmstart_insert(&all, wn, wpair, wpoint, wimp);
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
    GF_TRY(gf_h5_open(&f, sim, path, 0));
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
    particle_rows rows;
    read_particle_rows(&f, g, first, n, N, 1, &rows);
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
    gf_h5_read_rank_offsets(&f, wg, nranks, -1, woffs);
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
    if (!wpair || !wpoint || !wimp)
        gf_h5_local(&f, gf_error_status());
    gf_h5_agree(&f);
    gf_h5_dset_read(&f, wg, "pair", H5T_NATIVE_INT64, 2, wn, wfirst, (size_t)wN, wpair);
    /* Checkpoints of spheres only (before granflow 0.2) have one point per pair. */
    if (f.st == GF_OK && H5Lexists(wg, "point", H5P_DEFAULT) > 0)
        gf_h5_dset_read(&f, wg, "point", H5T_NATIVE_INT32, 1, wn, wfirst, (size_t)wN, wpoint);
    gf_h5_dset_read(&f, wg, "impulse", H5T_NATIVE_DOUBLE, 3, wn, wfirst, (size_t)wN, wimp);
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
        st = gf_io_check_unique_ids(sim, path, " (a damaged checkpoint?)");
    if (st == GF_OK)
        st = place_warmstart(sim, wn, wpair, wpoint, wimp, same);
    if (st == GF_OK && ghost_ref)
        st = gf_sim_restore_ghost_lists(sim, ghost_ref, ghost_range);
    if (st == GF_OK)
        st = gf_sim_restore_state(sim, &state);
    gf_state_free(&state);
    free(ghost_ref);
    particle_rows_free(&rows);
    free(offs);
    free(woffs);
    free(wpair);
    free(wpoint);
    free(wimp);
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
