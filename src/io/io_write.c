/* Writing granflow's HDF5 snapshots and checkpoints: a layout pass that adds up the bytes, the
 * space reserved, then the header, particles, contacts, warm start, state, geometry and materials
 * written by all ranks together (h5file.h). */
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config_compare.h"
#include "geometry/geometry_mesh.h"
#include "core/log.h"
#include "core/vec.h"
#include "granflow/version.h"
#include "h5/h5file.h"
#include "layout.h"
/* ------------------------------------------------------------------------------------------ */
/* Writing                                                                                    */

/* Local particle order sorted by id (rows are written sorted within each rank). */
static int cmp_by_id(const void *a, const void *b, void *ctx) {
    const int64_t *id = ctx;
    int64_t x = id[*(const size_t *)a], y = id[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

static const int64_t *sort_ids_ctx;
static int cmp_idx(const void *a, const void *b) {
    return cmp_by_id(a, b, (void *)sort_ids_ctx);
}

const char *const gf_io_layout_cuts[3] = {"cuts_x", "cuts_y", "cuts_z"};

static void header(gf_h5file *f, const gf_sim *sim, int64_t global_n, const char *format,
                   const char *config_text) {
    if (f->st != GF_OK)
        return;
    hid_t root = f->file;
    gf_h5_attr_string(f, root, "format", format);
    gf_h5_attr_write(f, root, "time", H5T_NATIVE_DOUBLE, 1, &sim->time);
    long long step = sim->step;
    gf_h5_attr_write(f, root, "step", H5T_NATIVE_LLONG, 1, &step);
    gf_h5_attr_write(f, root, "dt", H5T_NATIVE_DOUBLE, 1, &sim->dt);
    gf_h5_attr_write(f, root, "box_min", H5T_NATIVE_DOUBLE, 3, sim->lo);
    gf_h5_attr_write(f, root, "box_max", H5T_NATIVE_DOUBLE, 3, sim->hi);
    gf_h5_attr_write(f, root, "periodic", H5T_NATIVE_INT, 3, sim->periodic);
    long long n = global_n;
    gf_h5_attr_write(f, root, "particle_count", H5T_NATIVE_LLONG, 1, &n);
    gf_h5_attr_write(f, root, "rank_count", H5T_NATIVE_INT, 1, &f->size);
    int dims[3] = {sim->dims[0] ? sim->dims[0] : 1, sim->dims[1] ? sim->dims[1] : 1,
                   sim->dims[2] ? sim->dims[2] : 1};
    gf_h5_attr_write(f, root, "decomposition", H5T_NATIVE_INT, 3, dims);
    /* Cuts moved by load balancing (equally spaced ones are not written): a restart on the same
     * layout continues with them. The same on every rank. */
    for (int a = 0; a < 3 && sim->distributed; ++a)
        if (sim->xch.decomp.cut[a])
            gf_h5_attr_write(f, root, gf_io_layout_cuts[a], H5T_NATIVE_DOUBLE, dims[a] + 1,
                             sim->xch.decomp.cut[a]);
    gf_h5_attr_string(f, root, "granflow_version", gf_version());
    gf_h5_attr_string(f, root, "git_revision", gf_git_revision());
    gf_h5_attr_string(f, root, "compiler", __VERSION__);
    char buf[256];
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, rel);
    gf_h5_attr_string(f, root, "hdf5_version", buf);
    char mpiv[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpiv, &len);
    char *nl = strchr(mpiv, '\n');
    if (nl)
        *nl = '\0';
    gf_h5_attr_string(f, root, "mpi_version", mpiv);
    /* The date is rank 0's, so every rank writes the same attribute value. */
    long long now = (long long)time(NULL);
    MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, f->comm);
    time_t tt = (time_t)now;
    struct tm tmv;
    gmtime_r(&tt, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    gf_h5_attr_string(f, root, "date", buf);
    /* The configuration as one string (a dataset: attributes are limited to 64 KiB), of
     * exactly its length (null-padded, so no terminator is stored); rank 0's copy is written,
     * the others take part with no rows. */
    const char *cfg = config_text ? config_text : "";
    size_t cfg_len = strlen(cfg);
    hid_t str = H5Tcopy(H5T_C_S1);
    if (H5Tset_size(str, cfg_len > 0 ? cfg_len : 1) < 0 || H5Tset_strpad(str, H5T_STR_NULLPAD) < 0)
        H5_FAIL(f, "setting up the configuration string of '%s' failed", f->path);
    gf_h5_dset_write(f, root, "configuration", str, 1, f->rank == 0 ? 1 : 0, 0, 1,
                     cfg_len > 0 ? cfg : "", NULL,
                     "the effective configuration of the run (defaults filled in)");
    H5Tclose(str);
}

/* Where this rank's n rows start in a dataset, and the rows of all ranks. */
static gf_status row_range(const gf_sim *sim, size_t n, int64_t *offset, int64_t *global) {
    *offset = 0;
    *global = (int64_t)n;
    if (sim->par) {
        GF_TRY(gf_par_exscan_i64(sim->par, (int64_t)n, offset));
        GF_TRY(gf_par_allreduce_i64(sim->par, global, 1, GF_PAR_SUM));
    }
    return GF_OK;
}

/* The index that finds a rank's rows: rank r's first row at r, the total at nranks. A dataset:
 * an attribute is limited to 64 KiB, about 8000 ranks. Rank r writes entry r, the last rank also
 * the total. */
static void write_rank_offsets(gf_h5file *f, hid_t g, int64_t offset, int64_t global) {
    int64_t v[2] = {offset, global};
    size_t n = f->rank == f->size - 1 ? 2 : 1;
    gf_h5_dset_write(
        f, g, "rank_offsets", H5T_NATIVE_INT64, 1, n, (size_t)f->rank, (size_t)f->size + 1, v, "1",
        "rows of rank r are rank_offsets[r] .. rank_offsets[r+1]-1; the last value is the "
        "number of rows");
}

/* Particle i's body y, z and x axes (world frame) scaled to its full extent along each: the
 * columns of the tensor that maps a unit glyph centred at the origin onto the body (VTK stores a
 * tensor's columns one after the other). The cyclic order keeps the handedness and puts the
 * symmetry axis of capsules and cylinders (body z) along the cylinder glyph's axis (y). */
static void glyph_axes(const gf_particles *p, size_t i, double out[9]) {
    const double r = p->dim[0][i];
    double half[3];
    switch (p->shape[i]) {
    case GF_SHAPE_BOX:
        half[0] = p->dim[0][i];
        half[1] = p->dim[1][i];
        half[2] = p->dim[2][i];
        break;
    case GF_SHAPE_CAPSULE:
    case GF_SHAPE_CYLINDER:
        half[0] = half[1] = r;
        half[2] = p->dim[1][i] + (p->shape[i] == GF_SHAPE_CAPSULE ? r : 0.0);
        break;
    default: /* spheres, and clumps by their bounding sphere (their members: /clump_members) */
        half[0] = half[1] = half[2] = p->radius[i];
    }
    const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
    static const int body_axis[3] = {1, 2, 0};
    for (int c = 0; c < 3; ++c) {
        double e[3] = {0.0, 0.0, 0.0}, w[3];
        e[body_axis[c]] = 2.0 * half[body_axis[c]];
        gf_quat_rotate(q, e, w);
        for (int k = 0; k < 3; ++k)
            out[3 * c + k] = w[k];
    }
}

size_t gf_io_layout_members(const gf_particles *p) {
    size_t m = 0;
    for (size_t i = 0; i < p->n_local; ++i)
        if (p->shape[i] == GF_SHAPE_CLUMP && p->clumps && p->clump[i] >= 0 &&
            (size_t)p->clump[i] < p->clumps->count)
            m += (size_t)p->clumps->item[p->clump[i]].count;
    return m;
}

/* /clump_members: every member sphere of every clump in the world frame, for ParaView (a Glyph of
 * spheres scaled by `radius` shows the clumps as they are). Nothing when no rank has a clump. */
static void write_clump_members(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_particles *p = &sim->particles;
    size_t n = gf_io_layout_members(p);
    int64_t offset = 0, global = 0;
    gf_h5_local(f, row_range(sim, n, &offset, &global));
    if (gf_h5_agree(f) != GF_OK || global == 0)
        return;
    size_t na = f->counting ? 0 : n;
    double *x = gf_malloc(3 * na + 1, sizeof *x), *r = gf_malloc(na + 1, sizeof *r);
    int64_t *id = gf_malloc(na + 1, sizeof *id);
    int32_t *vertex = gf_malloc(na + 1, sizeof *vertex);
    if (!x || !r || !id || !vertex)
        gf_h5_local(f, gf_error_status());
    size_t m = 0;
    for (size_t i = 0; gf_h5_packing(f) && i < p->n_local; ++i) {
        if (p->shape[i] != GF_SHAPE_CLUMP || !p->clumps || p->clump[i] < 0 ||
            (size_t)p->clump[i] >= p->clumps->count)
            continue;
        const gf_clump *c = &p->clumps->item[p->clump[i]];
        const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]}, s = p->dim[0][i];
        for (int k = 0; k < c->count; ++k, ++m) {
            const double b[3] = {s * c->centre[k][0], s * c->centre[k][1], s * c->centre[k][2]};
            double w[3];
            gf_quat_rotate(q, b, w);
            for (int d = 0; d < 3; ++d)
                x[3 * m + d] = p->x[d][i] + w[d];
            r[m] = s * c->radius[k];
            id[m] = p->id[i];
        }
    }
    hid_t g = gf_h5_agree(f) == GF_OK ? gf_h5_group_create(f, "clump_members") : -1;
    size_t N = (size_t)global, off = (size_t)offset;
    gf_h5_dset_write(f, g, "position", H5T_NATIVE_DOUBLE, 3, n, off, N, x, "m",
                     "member sphere centre");
    gf_h5_dset_write(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, off, N, r, "m",
                     "member sphere radius");
    gf_h5_dset_write(f, g, "id", H5T_NATIVE_INT64, 1, n, off, N, id, "1", "id of the clump");
    for (size_t k = 0; gf_h5_packing(f) && k < n; ++k)
        vertex[k] = (int32_t)(off + k);
    gf_h5_dset_write(f, g, "vertex", H5T_NATIVE_INT32, 1, n, off, N, vertex, "1",
                     "the row number: the connectivity of one vertex cell per sphere (XDMF)");
    if (g >= 0)
        H5Gclose(g);
    free(x);
    free(r);
    free(id);
    free(vertex);
}

/* Particle rows of this rank (sorted by id in snapshots) and the group offsets of all ranks. */
static void write_particles(gf_h5file *f, const gf_sim *sim, int full, int64_t *global_out) {
    *global_out = 0;
    if (f->st != GF_OK)
        return;
    const gf_particles *p = &sim->particles;
    size_t n = p->n_local;
    int64_t offset = 0, global = 0;
    gf_h5_local(f, row_range(sim, n, &offset, &global));
    *global_out = global;
    size_t na = f->counting ? 0 : n; /* the layout pass packs nothing */
    size_t *order = gf_malloc(na + 1, sizeof *order);
    double *buf = gf_malloc(4 * na + 1, sizeof *buf);
    int64_t *ibuf = gf_malloc(na + 1, sizeof *ibuf);
    int32_t *i32 = gf_malloc(na + 1, sizeof *i32);
    if (!order || !buf || !ibuf || !i32)
        gf_h5_local(f, gf_error_status());
    hid_t g = -1;
    if (gf_h5_agree(f) == GF_OK) {
        g = gf_h5_group_create(f, "particles");
        for (size_t i = 0; i < na; ++i)
            order[i] = i;
        /* A checkpoint keeps the in-memory order (bit-for-bit restart); snapshots sort by id. */
        if (!full) {
            sort_ids_ctx = p->id;
            qsort(order, na, sizeof *order, cmp_idx);
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    if (gf_h5_packing(f))
        for (size_t i = 0; i < n; ++i)
            ibuf[i] = p->id[order[i]];
    gf_h5_dset_write(f, g, "id", H5T_NATIVE_INT64, 1, n, off, N, ibuf, "1",
                     "global particle id, unique for the run");
#define VEC(name, arr, k, units, desc)                                                             \
    do {                                                                                           \
        if (gf_h5_packing(f))                                                                      \
            for (size_t i = 0; i < n; ++i)                                                         \
                for (int c = 0; c < (k); ++c)                                                      \
                    buf[(size_t)(k)*i + c] = (arr)[c][order[i]];                                   \
        gf_h5_dset_write(f, g, name, H5T_NATIVE_DOUBLE, k, n, off, N, buf, units, desc);           \
    } while (0)
#define SCALAR(expr)                                                                               \
    do {                                                                                           \
        if (gf_h5_packing(f))                                                                      \
            for (size_t i = 0; i < n; ++i)                                                         \
                expr;                                                                              \
    } while (0)
    VEC("position", p->x, 3, "m", "centre of mass");
    VEC("velocity", p->v, 3, "m/s", "linear velocity");
    VEC("angular_velocity", p->w, 3, "rad/s", "angular velocity in the world frame");
    VEC("orientation", p->q, 4, "1", "unit quaternion (w, x, y, z), body to world");
    SCALAR(buf[i] = p->radius[order[i]]);
    gf_h5_dset_write(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "m",
                     "bounding radius around the centre of mass (a sphere's radius)");
    SCALAR(i32[i] = p->shape[order[i]]);
    gf_h5_dset_write(f, g, "shape", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
                     "0 sphere, 1 box, 2 capsule, 3 cylinder, 4 clump");
    VEC("dimensions", p->dim, 3, "m",
        "sphere: radius; box: half extents along body x, y, z; capsule and cylinder: radius, "
        "half length along body z; clump: scale of its template (1)");
    SCALAR(i32[i] = p->clump[order[i]]);
    gf_h5_dset_write(
        f, g, "clump", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
        "template of a clump (in the order of the configuration), -1 for other shapes");
    if (!full) {
        double *axes = gf_malloc(9 * na + 1, sizeof *axes);
        if (!axes)
            gf_h5_local(f, gf_error_status());
        for (size_t i = 0; gf_h5_packing(f) && i < n; ++i)
            glyph_axes(p, order[i], &axes[9 * i]);
        gf_h5_dset_write(
            f, g, "axes", H5T_NATIVE_DOUBLE, 9, n, off, N, axes, "m",
            "the body's y, z and x axes scaled to its full size along each, in VTK's "
            "column order: ParaView's Tensor Glyph (extract eigenvalues off) turns a unit "
            "box, cylinder (along y) or sphere into the body");
        free(axes);
        /* XDMF 3 readers make cells only from an explicit connectivity. */
        SCALAR(i32[i] = (int32_t)(off + i));
        gf_h5_dset_write(f, g, "vertex", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
                         "the row number: the connectivity of one vertex cell per particle (XDMF)");
    }
    SCALAR(i32[i] = p->material[order[i]]);
    gf_h5_dset_write(f, g, "material", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
                     "material index (see the configuration's Materials block)");
    SCALAR(i32[i] = f->rank);
    gf_h5_dset_write(f, g, "owner_rank", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
                     "rank that owned the particle when the file was written");
    SCALAR(buf[i] = p->inv_mass[order[i]] > 0.0 ? 1.0 / p->inv_mass[order[i]] : 0.0);
    gf_h5_dset_write(f, g, "mass", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "kg",
                     "mass (0: infinite)");
    if (full) {
        SCALAR(buf[i] = p->inv_mass[order[i]]);
        gf_h5_dset_write(f, g, "inverse_mass", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "1/kg",
                         "inverse mass (0: infinite)");
        VEC("inverse_inertia", p->inv_inertia, 3, "1/(kg m^2)",
            "principal inverse moments of inertia, body frame");
    }
    if (full && sim->distributed && (sim->ghosts_ready || sim->ghost_restore) &&
        sim->ghost_range > 0.0) {
        /* The ghost lists as the last build chose them, or as a restart not yet stepped holds
         * them (agreed: the range and these flags are alike on every rank), so a restart on
         * this layout continues with the same lists. */
        if (sim->ghost_nref != n) /* written anyway, empty: every rank makes the same calls */
            gf_h5_local(f, GF_ERROR(GF_ERR_STATE, "ghost lists of %zu particles for %zu",
                                    sim->ghost_nref, n));
        for (size_t i = 0; gf_h5_packing(f) && sim->ghost_nref == n && i < n; ++i)
            for (int c = 0; c < 3; ++c)
                buf[3 * i + c] = sim->ghost_ref[c][order[i]];
        gf_h5_dset_write(
            f, g, "ghost_reference", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "m",
            "position when the ghost lists were last built (Domain.ghost_skin_fraction): "
            "a restart on the same layout builds the same lists from it");
        gf_h5_attr_write(f, g, "ghost_range", H5T_NATIVE_DOUBLE, 1, &sim->ghost_range);
    }
#undef VEC
#undef SCALAR
    /* Where each rank's rows start: the index for finding a particle by id. */
    write_rank_offsets(f, g, offset, global);
    if (f->st == GF_OK)
        gf_h5_attr_string(f, g, "order",
                          full ? "in memory order within each rank"
                               : "sorted by id within each rank's rows");
    if (g >= 0)
        H5Gclose(g);
    free(order);
    free(buf);
    free(ibuf);
    free(i32);
}

static void write_contacts(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_contacts *c = &sim->contacts;
    size_t n = c->count;
    int64_t offset = 0, global = 0;
    gf_h5_local(f, row_range(sim, n, &offset, &global));
    size_t na = f->counting ? 0 : n;
    int64_t *ids = gf_malloc(2 * na + 1, sizeof *ids);
    double *buf = gf_malloc(6 * na + 1, sizeof *buf);
    if (!ids || !buf)
        gf_h5_local(f, gf_error_status());
    hid_t g = -1;
    if (gf_h5_agree(f) == GF_OK) {
        g = gf_h5_group_create(f, "contacts");
        for (size_t j = 0; j < na; ++j) {
            ids[2 * j] = c->id1[j];
            ids[2 * j + 1] = c->id2[j];
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    gf_h5_dset_write(f, g, "pair", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
                     "global ids of the two particles (a wall k is -1 - k)");
    if (gf_h5_packing(f))
        for (size_t j = 0; j < n; ++j)
            buf[j] = c->lambda[0][j];
    gf_h5_dset_write(f, g, "normal_impulse", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "N s",
                     "impulse along the normal of the last step");
    if (gf_h5_packing(f))
        for (size_t j = 0; j < n; ++j)
            for (int d = 0; d < 3; ++d)
                buf[3 * j + d] = c->lambda[1][j] * c->t[d][j] + c->lambda[2][j] * c->o[d][j];
    gf_h5_dset_write(f, g, "tangential_impulse", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "N s",
                     "friction impulse of the last step on the first body (world frame)");
    if (gf_h5_packing(f))
        for (size_t j = 0; j < n; ++j)
            buf[j] = c->gap[j];
    gf_h5_dset_write(f, g, "gap", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "m",
                     "signed distance at detection (negative: penetration)");
    if (gf_h5_packing(f))
        for (size_t j = 0; j < n; ++j)
            for (int d = 0; d < 3; ++d)
                buf[3 * j + d] = c->n[d][j];
    gf_h5_dset_write(f, g, "normal", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "1",
                     "unit normal, from the second body towards the first");
    /* Force chains, where detection kept the contact points (the output asks for them): a
     * line per contact between the two bodies' centres as they stood at detection (the contact
     * point less each lever arm; the arrays have been redistributed since), or to the contact
     * point on a wall or obstacle; two points per contact. The same on every rank. */
    if (c->keep_points) {
        if (gf_h5_packing(f))
            for (size_t j = 0; j < n; ++j)
                for (int d = 0; d < 3; ++d) {
                    buf[6 * j + d] = c->cp[d][j] - c->r1[d][j];
                    buf[6 * j + 3 + d] = c->cp[d][j] - (c->i2[j] >= 0 ? c->r2[d][j] : 0.0);
                }
        gf_h5_dset_write(
            f, g, "position", H5T_NATIVE_DOUBLE, 3, 2 * n, 2 * off, 2 * N, buf, "m",
            "ends of each contact's line: the two bodies' centres at detection (the second "
            "end on a wall or obstacle: the contact point)");
        if (gf_h5_packing(f))
            for (size_t j = 0; j < 2 * n; ++j)
                ids[j] = (int64_t)(2 * off + j);
        gf_h5_dset_write(f, g, "vertex", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
                         "the connectivity of each contact's line (XDMF)");
    }
    if (g >= 0)
        H5Gclose(g);
    free(ids);
    free(buf);
}

static void write_warmstart(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_warmstart *ws = &sim->warm;
    size_t n = ws->n;
    int64_t offset = 0, global = 0;
    gf_h5_local(f, row_range(sim, n, &offset, &global));
    size_t na = f->counting ? 0 : n;
    int64_t *ids = gf_malloc(2 * na + 1, sizeof *ids);
    double *buf = gf_malloc(6 * na + 1, sizeof *buf);
    if (!ids || !buf)
        gf_h5_local(f, gf_error_status());
    /* The torques of rolling and twisting resistance only where a pair of materials has them
     * (the same on every rank): other checkpoints stay as they were. */
    const int torques = gf_materials_resistive(&sim->materials);
    hid_t g = -1;
    if (gf_h5_agree(f) == GF_OK) {
        g = gf_h5_group_create(f, "warmstart");
        for (size_t k = 0; k < na; ++k) {
            ids[2 * k] = ws->a[k];
            ids[2 * k + 1] = ws->b[k];
            for (int d = 0; d < 3; ++d) {
                buf[3 * k + d] = ws->l[d][k];
                buf[3 * (na + k) + d] = ws->l[3 + d][k];
            }
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    gf_h5_dset_write(f, g, "pair", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
                     "the contact's key: (smaller id, larger id) or (id, -1 - wall)");
    gf_h5_dset_write(f, g, "point", H5T_NATIVE_INT32, 1, n, off, N, ws->pt, "1",
                     "the point of the pair's contact manifold (0 for spheres)");
    gf_h5_dset_write(f, g, "impulse", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "N s",
                     "world-frame impulse on the first particle of the pair");
    if (torques)
        gf_h5_dset_write(f, g, "torque", H5T_NATIVE_DOUBLE, 3, n, off, N, buf + 3 * na, "N m s",
                         "world-frame torque impulse of rolling and twisting resistance on the "
                         "first particle of the pair");
    write_rank_offsets(f, g, offset, global);
    if (g >= 0)
        H5Gclose(g);
    free(ids);
    free(buf);
}

/* The run state of the simulation's modules (/state): each module says what it keeps
 * (gf_sim_save_state); this writes its items as attributes. */
static void write_state(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    gf_state state;
    gf_state_init(&state);
    gf_h5_local(f, gf_sim_save_state(sim, &state));
    gf_h5_agree(f);
    hid_t g = gf_h5_group_create(f, "state");
    gf_h5_attrs_write_state(f, g, &state);
    if (g >= 0)
        H5Gclose(g);
    gf_state_free(&state);
    gf_h5_agree(f);
}

typedef void (*file_writer)(gf_h5file *f, const gf_output *o, const gf_sim *sim);

gf_status gf_io_layout_geometry_share(const gf_sim *sim, gf_geometry_mesh *m, int64_t off[3],
                                      int64_t total[3]) {
    const gf_decomp *d = sim->distributed ? &sim->xch.decomp : NULL;
    gf_status st = gf_geometry_mesh_build_share(&sim->walls, sim->lo, sim->hi, d, m);
    int64_t n[4] = {(int64_t)m->npoints, (int64_t)m->ncells, (int64_t)m->nconn, 0};
    for (size_t k = 0; k < m->ncells; ++k)
        n[3] += m->kind[k] == GF_MESH_TRIANGLES;
    for (int k = 0; k < 3; ++k)
        off[k] = 0;
    if (sim->par) {
        st = gf_par_agree(sim->par, st, NULL);
        for (int k = 0; k < 3 && st == GF_OK; ++k)
            st = gf_par_exscan_i64(sim->par, n[k], &off[k]);
        if (st == GF_OK)
            st = gf_par_allreduce_i64(sim->par, n, 4, GF_PAR_SUM);
    }
    GF_TRY(st);
    memcpy(total, n, 3 * sizeof *total);
    /* Every triangle once: the rank writing it holds it (see gf_walls_region). */
    int64_t want = 0;
    for (size_t k = 0; k < sim->walls.nmesh; ++k)
        want += (int64_t)sim->walls.mesh[k]->key_nt;
    if (n[3] != want)
        return gf_error_everywhere(GF_ERROR(GF_ERR_STATE,
                                            "the ranks hold %lld of the meshes' %lld triangles "
                                            "for the snapshot's geometry",
                                            (long long)n[3], (long long)want));
    return GF_OK;
}

/* /geometry: the walls (clipped to the box), boxes and cylinders at the snapshot's time as a
 * surface mesh in XDMF's mixed topology, with each cell's kind, body and velocity: rank 0's
 * walls and obstacles, then each rank's share of the mesh triangles at offsets, its points'
 * indices shifted by the points before its own. */
static void write_geometry(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    int64_t off[3], total[3];
    gf_status st = gf_io_layout_geometry_share(sim, &m, off, total);
    if (st != GF_OK) {
        /* Collective already: every rank has the same failure. */
        f->st = st;
        gf_geometry_mesh_free(&m);
        return;
    }
    double *vel = gf_malloc(3 * m.ncells + 1, sizeof *vel);
    if (!vel)
        gf_h5_local(f, gf_error_status());
    if (gf_h5_agree(f) != GF_OK || total[1] == 0) {
        gf_geometry_mesh_free(&m);
        free(vel);
        return;
    }
    for (size_t k = 0; k < m.ncells; ++k)
        memcpy(&vel[3 * k], sim->walls.velocity[m.body[k]], 3 * sizeof *vel);
    for (size_t at = 0; at < m.nconn;) {
        int64_t n = m.conn[at] == GF_XDMF_POLYGON      ? m.conn[at + 1]
                    : m.conn[at] == GF_XDMF_HEXAHEDRON ? 8
                                                       : 4;
        at += m.conn[at] == GF_XDMF_POLYGON ? 2 : 1;
        for (int64_t j = 0; j < n; ++j)
            m.conn[at++] += off[0];
    }
    hid_t g = gf_h5_group_create(f, "geometry");
    gf_h5_dset_write(f, g, "position", H5T_NATIVE_DOUBLE, 3, m.npoints, (size_t)off[0],
                     (size_t)total[0], m.points, "m",
                     "mesh points of the walls (clipped to the box) and obstacles");
    gf_h5_dset_write(f, g, "topology", H5T_NATIVE_INT64, 1, m.nconn, (size_t)off[2],
                     (size_t)total[2], m.conn, "1",
                     "XDMF mixed topology: per cell its type (3 polygon, 5 quadrilateral, 9 "
                     "hexahedron), for polygons the number of points, then the point indices");
    gf_h5_dset_write(f, g, "kind", H5T_NATIVE_INT32, 1, m.ncells, (size_t)off[1], (size_t)total[1],
                     m.kind, "1", "per cell: 0 wall, 1 box, 2 cylinder");
    char desc[160];
    snprintf(desc, sizeof desc,
             "per cell: the wall index, %d + box index, %d + cylinder index (as in contacts)",
             GF_BOX_BASE, GF_CYL_BASE);
    gf_h5_dset_write(f, g, "body", H5T_NATIVE_INT32, 1, m.ncells, (size_t)off[1], (size_t)total[1],
                     m.body, "1", desc);
    gf_h5_dset_write(f, g, "velocity", H5T_NATIVE_DOUBLE, 3, m.ncells, (size_t)off[1],
                     (size_t)total[1], vel, "m/s",
                     "per cell: the velocity of its wall or obstacle");
    if (g >= 0)
        H5Gclose(g);
    gf_geometry_mesh_free(&m);
    free(vel);
}

/* The material table: names, densities, the friction, restitution, cohesion, rolling and twisting
 * resistance of every pair (rank 0's rows) and the restitution threshold. */
static void write_materials(gf_h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_materials *m = &sim->materials;
    size_t nm = (size_t)m->count, mine = f->rank == 0 ? nm : 0;
    hid_t g = gf_h5_group_create(f, "materials");
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, GF_NAME_LEN);
    gf_h5_dset_write(f, g, "name", str, 1, mine, 0, nm, m->name, NULL,
                     "material names, in the order of the indices of /particles/material");
    H5Tclose(str);
    gf_h5_dset_write(f, g, "density", H5T_NATIVE_DOUBLE, 1, mine, 0, nm, m->density, "kg/m^3",
                     "density of each material");
    /* the laws of every pair: symmetric nm x nm tables */
    const struct {
        const char *name, *unit, *what;
        const double (*table)[GF_MAX_MATERIALS];
    } laws[] = {
        {"friction", "1", "friction coefficient of each pair of materials (symmetric)",
         m->friction},
        {"restitution", "1",
         "Poisson's coefficient of restitution of each pair of materials (symmetric)",
         m->restitution},
        {"cohesion", m->cohesion_per_radius ? "N/m" : "N",
         m->cohesion_per_radius
             ? "the pull a touching contact point of each pair of materials can hold, per metre of "
               "the pair's reduced radius r1 r2 / (r1 + r2) (Materials.cohesion_scaling radius)"
             : "the pull a touching contact point of each pair of materials can hold",
         m->cohesion},
        {"rolling_friction", "1",
         "rolling resistance of each pair of materials: the rolling torque is at most this times "
         "r1 r2 / (r1 + r2) times the normal force (symmetric)",
         m->rolling},
        {"twisting_friction", "1",
         "twisting resistance of each pair of materials: the twisting torque is at most this "
         "times r1 r2 / (r1 + r2) times the normal force (symmetric)",
         m->twisting},
    };
    for (size_t l = 0; l < sizeof laws / sizeof laws[0]; ++l) {
        double fr[GF_MAX_MATERIALS * GF_MAX_MATERIALS];
        for (size_t a = 0; a < nm; ++a)
            for (size_t b = 0; b < nm; ++b)
                fr[a * nm + b] = laws[l].table[a][b];
        gf_h5_dset_write(f, g, laws[l].name, H5T_NATIVE_DOUBLE, (int)(nm > 0 ? nm : 1), mine, 0, nm,
                         fr, laws[l].unit, laws[l].what);
    }
    if (g >= 0)
        gf_h5_attr_write(f, g, "restitution_velocity", H5T_NATIVE_DOUBLE, 1,
                         &m->restitution_velocity);
    if (g >= 0)
        H5Gclose(g);
}

static void snapshot_body(gf_h5file *f, const gf_output *o, const gf_sim *sim) {
    int64_t n = 0;
    write_particles(f, sim, 0, &n);
    write_clump_members(f, sim);
    write_materials(f, sim);
    write_geometry(f, sim);
    header(f, sim, n, FORMAT_SNAPSHOT, o ? o->config_text : NULL);
    if (o && o->contacts)
        write_contacts(f, sim);
}

static void checkpoint_body(gf_h5file *f, const gf_output *o, const gf_sim *sim) {
    int64_t n = 0;
    write_particles(f, sim, 1, &n);
    header(f, sim, n, FORMAT_CHECKPOINT, o ? o->config_text : NULL);
    write_warmstart(f, sim);
    write_state(f, sim);
}

/* Collective: the bytes `body` will write, from a pass that writes nothing, with room for the
 * superblock, the groups and HDF5's free-space slack: 1.1 to 1.2 times the files written (the
 * demo's snapshot 268 KB, its checkpoint 245 KB, the channel demo's snapshot 387 KB), so that a
 * limit on a file's size refuses only files that would not fit. */
static gf_status layout_bytes(file_writer body, const gf_output *o, const gf_sim *sim,
                              double *bytes) {
    gf_h5file f;
    gf_h5_init(&f, sim->par, "");
    f.counting = 1;
    body(&f, o, sim);
    *bytes = 1.05 * f.bytes + 16384.0;
    return gf_h5_agree(&f);
}

/* Reserves [0, bytes) of the open file fd by writing zeros where the file does not reach yet:
 * for file systems that refuse posix_fallocate (some parallel and network ones). Returns 0 or
 * the error (ENOSPC, EDQUOT, EFBIG under a file size limit: granflow ignores SIGXFSZ, see
 * gf_output_install_signal_handlers). */
static int reserve_by_writing(int fd, off_t bytes) {
    static const char zeros[65536];
    struct stat st;
    if (fstat(fd, &st) != 0)
        return errno;
    for (off_t at = st.st_size; at < bytes;) {
        size_t n = bytes - at < (off_t)sizeof zeros ? (size_t)(bytes - at) : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, n, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        at += w;
    }
    return fsync(fd) != 0 && errno != EINVAL ? errno : 0;
}

/* Rank 0 reserves the file's space before anything is written. A full disk, an exhausted quota
 * or a file size limit is then found here, where every rank agrees on it, and not in HDF5's
 * collective flush at close, where the failing rank leaves the others waiting inside HDF5 for
 * good. Where the file system refuses posix_fallocate the space is reserved by writing zeros
 * (the file is then written twice; HDF5 overwrites them). */
static void reserve(gf_h5file *f, double bytes) {
    if (f->st == GF_OK && f->rank == 0) {
        int fd = open(f->path, O_WRONLY);
        int rc = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
        if (fd >= 0 && (rc == EOPNOTSUPP || rc == EINVAL || rc == ENOSYS))
            rc = reserve_by_writing(fd, (off_t)bytes);
        if (fd >= 0 && close(fd) != 0 && rc == 0)
            rc = errno;
        if (rc != 0)
            H5_FAIL(f, "cannot reserve %.0f bytes for '%s' (the file's estimated size): %s", bytes,
                    f->path, strerror(rc));
    }
    gf_h5_agree(f);
}

/* Rank 0, after the parallel close: opening the file once more with the serial driver checks that
 * it is complete, and closing it gives back the space reserved beyond its end. */
static gf_status read_back(const char *path) {
    hid_t file = gf_h5_serial_open(path, H5F_ACC_RDWR);
    if (file < 0 || H5Fclose(file) < 0)
        return GF_ERROR(GF_ERR_IO, "'%s' cannot be read back after writing it", path);
    return GF_OK;
}

/* Collective: writes `path` with `body`; a failed file is removed. */
static gf_status write_file(file_writer body, const gf_output *o, const gf_sim *sim,
                            const char *path) {
    double bytes = 0.0;
    GF_TRY(layout_bytes(body, o, sim, &bytes));
    gf_h5file f;
    GF_TRY(gf_h5_open(&f, sim->par, path, 1));
    reserve(&f, bytes);
    body(&f, o, sim);
    gf_status st = gf_h5_close(&f);
    if (f.rank == 0) {
        if (st == GF_OK)
            st = read_back(path);
        if (st != GF_OK)
            unlink(path);
    }
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

gf_status gf_io_write_snapshot(const gf_output *o, const gf_sim *sim, const char *path) {
    return write_file(snapshot_body, o, sim, path);
}

/* Rank 0, after every rank wrote its part: the complete file replaces the checkpoint, which is
 * kept as <path>.prev (so that a checkpoint damaged afterwards still has a predecessor). */
static gf_status install_checkpoint(const char *tmp, const char *path) {
    char prev[GF_IO_PATH + 8];
    snprintf(prev, sizeof prev, "%s.prev", path);
    if (access(path, F_OK) == 0 && rename(path, prev) != 0)
        return GF_ERROR(GF_ERR_IO, "cannot rename '%s' to '%s': %s", path, prev, strerror(errno));
    if (rename(tmp, path) != 0)
        return GF_ERROR(GF_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
    return GF_OK;
}

gf_status gf_io_write_checkpoint(const gf_output *o, const gf_sim *sim, const char *path) {
    char tmp[GF_IO_PATH + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    gf_status st = write_file(checkpoint_body, o, sim, tmp);
    /* Only a file every rank completed replaces the previous checkpoint. */
    int rank = sim->par ? sim->par->rank : 0;
    if (st == GF_OK && rank == 0)
        st = install_checkpoint(tmp, path);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}
