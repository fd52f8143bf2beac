#include "snapshot.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads an attribute of exactly n values of class cls (converted to type) into out: a foreign or
 * crafted file with another shape is refused rather than written past the end of out, and one
 * of another class (a string, or a float where a count is expected) rather than converted. */
static int attr(hid_t obj, const char *name, H5T_class_t cls, hid_t type, int n, void *out) {
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    hid_t sp = H5Aget_space(a), t = H5Aget_type(a);
    int rc = sp >= 0 && H5Sget_simple_extent_npoints(sp) == n && t >= 0 && H5Tget_class(t) == cls
                 ? 0
                 : -1;
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (rc == 0 && H5Aread(a, type, out) < 0)
        rc = -1;
    H5Aclose(a);
    return rc;
}

/* The format attribute: one fixed-length string shorter than out, read without conversion (out
 * is zeroed first, so it is terminated whatever the padding). An array of strings would be
 * written past the end of out. */
static void format_attr(hid_t f, char *out, size_t size) {
    memset(out, 0, size);
    if (H5Aexists(f, "format") <= 0)
        return;
    hid_t a = H5Aopen(f, "format", H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    size_t len = t >= 0 ? H5Tget_size(t) : 0;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
        len > 0 && len < size && H5Sget_simple_extent_npoints(sp) == 1 && H5Aread(a, t, out) < 0)
        memset(out, 0, size);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
}

/* The extent of a dataset of at most two dimensions (a crafted rank would overrun dims). */
static int extent2(hid_t space, hsize_t dims[2]) {
    int rank = H5Sget_simple_extent_ndims(space);
    dims[0] = 0;
    dims[1] = 1;
    if (rank < 1 || rank > 2)
        return -1;
    H5Sget_simple_extent_dims(space, dims, NULL);
    return rank;
}

/* Whether path is a dataset of class cls with rows x ncols values ([rows] or [rows, 1] for one
 * column, [rows, ncols] otherwise), so that every read of it fits the buffers. */
static int table(hid_t f, const char *path, H5T_class_t cls, int ncols, long long rows) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0)
        return 0;
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[2];
    int rank = sp >= 0 ? extent2(sp, dims) : -1;
    int ok = t >= 0 && H5Tget_class(t) == cls && rank > 0 && rows >= 0 &&
             dims[0] == (hsize_t)rows && dims[1] == (hsize_t)(rank == 1 ? 1 : ncols) &&
             (rank == 2 || ncols == 1);
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    H5Dclose(d);
    return ok;
}

/* The rank groups: the dataset /particles/rank_offsets (files of earlier granflow versions have
 * an attribute of that name), absent in files that do not record them, and ignored without the
 * root attribute rank_count. Returns 0 unless they are present but unreadable or inconsistent
 * with the particle count. */
static int read_rank_offsets(gf_snapshot *s, hid_t f) {
    if (H5Aexists(f, "rank_count") <= 0)
        return 0;
    int nranks = 0;
    if (attr(f, "rank_count", H5T_INTEGER, H5T_NATIVE_INT, 1, &nranks) || nranks < 1)
        return -1;
    hid_t g = H5Gopen2(f, "/particles", H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = 0;
    long long *offs = NULL;
    /* A link of that name that is no dataset (a group, a dangling link) is damage, not age. */
    int linked = H5Lexists(g, "rank_offsets", H5P_DEFAULT) > 0;
    hid_t d = linked ? H5Dopen2(g, "rank_offsets", H5P_DEFAULT) : H5I_INVALID_HID;
    hid_t a = !linked && H5Aexists(g, "rank_offsets") > 0 ? H5Aopen(g, "rank_offsets", H5P_DEFAULT)
                                                          : H5I_INVALID_HID;
    if (linked && d < 0)
        rc = -1;
    if (d >= 0 || a >= 0) {
        hid_t sp = d >= 0 ? H5Dget_space(d) : H5Aget_space(a);
        hid_t t = d >= 0 ? H5Dget_type(d) : H5Aget_type(a);
        hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
        int integer = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
        if (t >= 0)
            H5Tclose(t);
        if (sp >= 0)
            H5Sclose(sp);
        /* nranks + 1 in long long: rank_count may be INT_MAX. */
        offs = integer && n == (long long)nranks + 1 ? malloc((size_t)n * sizeof *offs) : NULL;
        if (!offs)
            rc = -1;
        else if (d >= 0)
            rc = H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, offs) < 0 ? -1 : 0;
        else
            rc = H5Aread(a, H5T_NATIVE_LLONG, offs) < 0 ? -1 : 0;
        for (int r = 0; r < nranks && rc == 0; ++r)
            if (offs[r] > offs[r + 1])
                rc = -1;
        if (rc == 0 && (offs[0] != 0 || offs[nranks] != s->count))
            rc = -1;
    }
    if (d >= 0)
        H5Dclose(d);
    if (a >= 0)
        H5Aclose(a);
    H5Gclose(g);
    if (rc == 0 && offs) {
        s->nranks = nranks;
        s->rank_offsets = offs;
    } else {
        free(offs);
    }
    return rc;
}

/* Refuses the file: the message (what is wrong, after the path), and the file closed. */
static int refuse(gf_snapshot *s, char *err, size_t errsize, const char *what) {
    snprintf(err, errsize, "%s: %s", s->path, what);
    gf_snapshot_close(s);
    return -1;
}

int gf_snapshot_open(gf_snapshot *s, const char *path, char *err, size_t errsize) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    s->chunk = GF_SNAPSHOT_CHUNK;
    const char *rows = getenv("GF_CHUNK_ROWS");
    if (rows && *rows) {
        char *end;
        s->chunk = strtoll(rows, &end, 10);
        if (*end || s->chunk < 1) {
            snprintf(err, errsize, "GF_CHUNK_ROWS='%s' is not a positive number of rows", rows);
            return -1;
        }
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        snprintf(err, errsize, "%s: %s", path, strerror(errno));
        return -1;
    }
    fclose(probe);
    if (H5Fis_hdf5(path) <= 0) {
        snprintf(err, errsize, "%s: not an HDF5 file", path);
        return -1;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        snprintf(err, errsize, "%s: cannot open", path);
        return -1;
    }
    s->hid = f;
    char format[64];
    format_attr(f, format, sizeof format);
    if (strncmp(format, "granflow ", 9) != 0)
        return refuse(s, err, errsize,
                      "not a granflow snapshot (no 'format' attribute naming one)");
    /* Each header value at the class and count the writer gives it. */
    const struct {
        const char *name;
        H5T_class_t cls;
        hid_t type;
        int n;
        void *out;
    } head[] = {{"time", H5T_FLOAT, H5T_NATIVE_DOUBLE, 1, &s->time},
                {"step", H5T_INTEGER, H5T_NATIVE_LLONG, 1, &s->step},
                {"box_min", H5T_FLOAT, H5T_NATIVE_DOUBLE, 3, s->box_min},
                {"box_max", H5T_FLOAT, H5T_NATIVE_DOUBLE, 3, s->box_max},
                {"periodic", H5T_INTEGER, H5T_NATIVE_INT, 3, s->periodic},
                {"particle_count", H5T_INTEGER, H5T_NATIVE_LLONG, 1, &s->count}};
    char what[256];
    for (size_t k = 0; k < sizeof head / sizeof head[0]; ++k)
        if (attr(f, head[k].name, head[k].cls, head[k].type, head[k].n, head[k].out)) {
            snprintf(what, sizeof what,
                     "the header attribute '%s' is missing or has the wrong shape or type (not "
                     "%d %s value(s); corrupt file?)",
                     head[k].name, head[k].n,
                     head[k].cls == H5T_INTEGER ? "integer" : "floating-point");
            return refuse(s, err, errsize, what);
        }
    /* The time step (of the last step before the snapshot): contact forces are impulses over it.
     * Files without it give 0. */
    if (attr(f, "dt", H5T_FLOAT, H5T_NATIVE_DOUBLE, 1, &s->dt) || !(s->dt > 0.0) ||
        !isfinite(s->dt))
        s->dt = 0.0;
    int sane = isfinite(s->time) && s->step >= 0 && s->count >= 0;
    for (int k = 0; k < 3; ++k)
        sane = sane && isfinite(s->box_min[k]) && isfinite(s->box_max[k]) &&
               s->box_max[k] > s->box_min[k] && isfinite(s->box_max[k] - s->box_min[k]) &&
               (s->periodic[k] == 0 || s->periodic[k] == 1);
    if (!sane) {
        snprintf(err, errsize,
                 "%s: the header holds impossible values (time %g, step %lld, %lld particles, a "
                 "box with max <= min or not finite, or periodic flags other than 0/1)",
                 path, s->time, s->step, s->count);
        gf_snapshot_close(s);
        return -1;
    }
    /* The columns the tools read, checked against the count here so that a damaged file is
     * refused before any work is done. */
    const struct {
        const char *name;
        H5T_class_t cls;
        int ncols;
    } cols[] = {
        {"/particles/id", H5T_INTEGER, 1},     {"/particles/position", H5T_FLOAT, 3},
        {"/particles/velocity", H5T_FLOAT, 3}, {"/particles/angular_velocity", H5T_FLOAT, 3},
        {"/particles/radius", H5T_FLOAT, 1},   {"/particles/mass", H5T_FLOAT, 1}};
    if (H5Lexists(f, "/particles", H5P_DEFAULT) <= 0)
        return refuse(s, err, errsize, "missing group /particles");
    hid_t g = H5Gopen2(f, "/particles", H5P_DEFAULT);
    if (g < 0)
        return refuse(s, err, errsize, "/particles is not a group (corrupt file?)");
    H5Gclose(g);
    s->has_mass = H5Lexists(f, "/particles/mass", H5P_DEFAULT) > 0;
    for (size_t k = 0; k < sizeof cols / sizeof cols[0] - !s->has_mass; ++k) {
        if (H5Lexists(f, cols[k].name, H5P_DEFAULT) <= 0) {
            snprintf(what, sizeof what, "missing dataset %s", cols[k].name);
            return refuse(s, err, errsize, what);
        }
        if (!table(f, cols[k].name, cols[k].cls, cols[k].ncols, s->count)) {
            snprintf(what, sizeof what,
                     "%s is not a dataset of %lld x %d %s values, one row per particle (corrupt "
                     "file?)",
                     cols[k].name, s->count, cols[k].ncols,
                     cols[k].cls == H5T_INTEGER ? "integer" : "floating-point");
            return refuse(s, err, errsize, what);
        }
    }
    if (read_rank_offsets(s, f))
        return refuse(s, err, errsize,
                      "/particles/rank_offsets does not match rank_count and particle_count, or "
                      "rank_count is not a positive count (corrupt file?)");
    if (H5Lexists(f, "/contacts", H5P_DEFAULT) > 0 &&
        H5Lexists(f, "/contacts/gap", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, "/contacts/gap", H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
        hsize_t dims[2];
        int rank = sp >= 0 ? extent2(sp, dims) : -1;
        if (sp >= 0)
            H5Sclose(sp);
        if (d >= 0)
            H5Dclose(d);
        if (rank != 1)
            return refuse(s, err, errsize, "/contacts/gap is not a list (corrupt file?)");
        s->has_contacts = 1;
        s->ncontacts = (long long)dims[0];
    }
    return 0;
}

void gf_snapshot_close(gf_snapshot *s) {
    if (s->hid > 0)
        H5Fclose((hid_t)s->hid);
    s->hid = 0;
    free(s->rank_offsets);
    s->rank_offsets = NULL;
    s->nranks = 0;
}

static int read_rows(const gf_snapshot *s, const char *name, hid_t type, int ncols, long long first,
                     size_t n, void *buf) {
    hid_t d = H5Dopen2((hid_t)s->hid, name, H5P_DEFAULT);
    if (d < 0)
        return -1;
    hid_t fs = H5Dget_space(d);
    hsize_t dims[2];
    int rank = extent2(fs, dims);
    int rc = -1;
    if (rank > 0 && dims[0] == (hsize_t)s->count && dims[1] == (hsize_t)(rank == 1 ? 1 : ncols) &&
        (rank == 2 || ncols == 1)) {
        hsize_t start[2] = {(hsize_t)first, 0}, count[2] = {(hsize_t)n, (hsize_t)ncols};
        hid_t ms = H5Screate_simple(rank, count, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        rc = (n == 0 || H5Dread(d, type, ms, fs, H5P_DEFAULT, buf) >= 0) ? 0 : -1;
        H5Sclose(ms);
    }
    H5Sclose(fs);
    H5Dclose(d);
    return rc;
}

int gf_snapshot_read(const gf_snapshot *s, long long first, size_t n, gf_chunk *c, char *err,
                     size_t errsize) {
    memset(c, 0, sizeof *c);
    /* Rows that exist, checked before allocating: n comes from the caller. */
    if (first < 0 || first > s->count || n > (unsigned long long)(s->count - first)) {
        snprintf(err, errsize, "%s: rows %lld + %zu are beyond the %lld particles", s->path, first,
                 n, s->count);
        return -1;
    }
    if (n > SIZE_MAX / (3 * sizeof(double)) - 1) {
        snprintf(err, errsize, "%s: %zu rows do not fit in memory", s->path, n);
        return -1;
    }
    c->n = n;
    c->id = malloc((n + 1) * sizeof *c->id);
    c->x = malloc((3 * n + 1) * sizeof *c->x);
    c->v = malloc((3 * n + 1) * sizeof *c->v);
    c->w = malloc((3 * n + 1) * sizeof *c->w);
    c->radius = malloc((n + 1) * sizeof *c->radius);
    c->mass = s->has_mass ? malloc((n + 1) * sizeof *c->mass) : NULL;
    if (!c->id || !c->x || !c->v || !c->w || !c->radius || (s->has_mass && !c->mass)) {
        snprintf(err, errsize, "%s: out of memory reading %zu particles", s->path, n);
        gf_chunk_free(c);
        return -1;
    }
    struct {
        const char *name;
        hid_t type;
        int ncols;
        void *buf;
    } ds[] = {{"/particles/id", H5T_NATIVE_INT64, 1, c->id},
              {"/particles/position", H5T_NATIVE_DOUBLE, 3, c->x},
              {"/particles/velocity", H5T_NATIVE_DOUBLE, 3, c->v},
              {"/particles/angular_velocity", H5T_NATIVE_DOUBLE, 3, c->w},
              {"/particles/radius", H5T_NATIVE_DOUBLE, 1, c->radius},
              {"/particles/mass", H5T_NATIVE_DOUBLE, 1, c->mass}};
    for (size_t k = 0; k < sizeof ds / sizeof ds[0] - !s->has_mass; ++k)
        if (read_rows(s, ds[k].name, ds[k].type, ds[k].ncols, first, n, ds[k].buf)) {
            snprintf(err, errsize, "%s: cannot read %s (wrong shape or truncated file)", s->path,
                     ds[k].name);
            gf_chunk_free(c);
            return -1;
        }
    /* The analyses divide by radii and bin positions: refuse what no run can have written. */
    for (size_t i = 0; i < n; ++i) {
        int ok = isfinite(c->radius[i]) && c->radius[i] > 0.0 &&
                 (!c->mass || (isfinite(c->mass[i]) && c->mass[i] >= 0.0));
        for (int k = 0; k < 3; ++k)
            ok = ok && isfinite(c->x[3 * i + k]) && isfinite(c->v[3 * i + k]) &&
                 isfinite(c->w[3 * i + k]);
        if (!ok) {
            snprintf(err, errsize,
                     "%s: particle %lld has a radius %g, mass, position or velocity that is not "
                     "finite (or a radius <= 0): corrupt file?",
                     s->path, (long long)c->id[i], c->radius[i]);
            gf_chunk_free(c);
            return -1;
        }
    }
    return 0;
}

void gf_chunk_free(gf_chunk *c) {
    free(c->id);
    free(c->x);
    free(c->v);
    free(c->w);
    free(c->radius);
    free(c->mass);
    memset(c, 0, sizeof *c);
}

int gf_snapshot_scan(const gf_snapshot *s, int (*visit)(void *ctx, const gf_chunk *c), void *ctx,
                     char *err, size_t errsize) {
    for (long long at = 0; at < s->count; at += s->chunk) {
        size_t n = (size_t)(s->count - at < s->chunk ? s->count - at : s->chunk);
        gf_chunk c;
        if (gf_snapshot_read(s, at, n, &c, err, errsize))
            return -1;
        int rc = visit(ctx, &c);
        gf_chunk_free(&c);
        if (rc)
            return -1;
    }
    return 0;
}

int gf_snapshot_read_contacts(const gf_snapshot *s, const char *column, double **out, char *err,
                              size_t errsize) {
    *out = NULL;
    if (!s->has_contacts) {
        snprintf(err, errsize, "%s has no contact list (write snapshots with Output.contacts true)",
                 s->path);
        return -1;
    }
    char name[128];
    snprintf(name, sizeof name, "/contacts/%s", column);
    hid_t d = H5Lexists((hid_t)s->hid, name, H5P_DEFAULT) > 0
                  ? H5Dopen2((hid_t)s->hid, name, H5P_DEFAULT)
                  : H5I_INVALID_HID;
    int rc = -1;
    if (d >= 0) {
        hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
        hsize_t n = 0;
        /* n + 1 doubles must not wrap around (a crafted extent), and the values must be
         * numbers the statistics can use. */
        if (sp >= 0 && t >= 0 && H5Tget_class(t) == H5T_FLOAT &&
            H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, &n, NULL) == 1 &&
            n == (hsize_t)s->ncontacts && n < SIZE_MAX / sizeof **out &&
            (*out = malloc((n + 1) * sizeof **out)) != NULL)
            rc = H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) >= 0 ? 0 : -1;
        for (hsize_t j = 0; rc == 0 && j < n; ++j)
            if (!isfinite((*out)[j]))
                rc = -1;
        if (t >= 0)
            H5Tclose(t);
        if (sp >= 0)
            H5Sclose(sp);
        H5Dclose(d);
    }
    if (rc) {
        free(*out);
        *out = NULL;
        snprintf(err, errsize,
                 "%s: missing or unreadable %s (not a list of %lld finite floating-point values)",
                 s->path, name, s->ncontacts);
    }
    return rc;
}

/* All of a geometry dataset of class cls with ncols values per row, converted to type (elsize
 * bytes): its rows in *rows, its values in a new *buf. */
static int read_table(hid_t f, const char *path, H5T_class_t cls, int ncols, hid_t type,
                      size_t elsize, size_t *rows, void **buf) {
    *rows = 0;
    *buf = NULL;
    hid_t d =
        H5Lexists(f, path, H5P_DEFAULT) > 0 ? H5Dopen2(f, path, H5P_DEFAULT) : H5I_INVALID_HID;
    if (d < 0)
        return -1;
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[2];
    int rank = sp >= 0 ? extent2(sp, dims) : -1;
    int rc = t >= 0 && H5Tget_class(t) == cls && rank > 0 &&
                     dims[1] == (hsize_t)(rank == 1 ? 1 : ncols) && (rank == 2 || ncols == 1) &&
                     dims[0] < SIZE_MAX / (elsize * (size_t)ncols) - 1
                 ? 0
                 : -1;
    if (rc == 0) {
        *buf = malloc(((size_t)dims[0] * ncols + 1) * elsize);
        rc = *buf && (dims[0] == 0 || H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *buf) >= 0)
                 ? 0
                 : -1;
        *rows = (size_t)dims[0];
    }
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    H5Dclose(d);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

size_t gf_snapshot_geometry_cell(const gf_snapshot_geometry *g, size_t at, int *code, size_t *n,
                                 size_t *first) {
    if (at >= g->nconn)
        return 0;
    int64_t c = g->conn[at], count;
    size_t start = at + 1;
    if (c == 3) {
        if (at + 1 >= g->nconn)
            return 0;
        count = g->conn[at + 1];
        start = at + 2;
    } else if (c == 5 || c == 9) {
        count = c == 5 ? 4 : 8;
    } else {
        return 0;
    }
    if (count < 1 || start > g->nconn || (uint64_t)count > g->nconn - start)
        return 0;
    for (size_t k = start; k < start + (size_t)count; ++k)
        if (g->conn[k] < 0 || (uint64_t)g->conn[k] >= g->npoints)
            return 0;
    *code = (int)c;
    *n = (size_t)count;
    *first = start;
    return start + (size_t)count;
}

int gf_snapshot_read_table(const gf_snapshot *s, const char *path, int integer, int ncols,
                           size_t *rows, void **buf, char *err, size_t errsize) {
    int rc = integer ? read_table((hid_t)s->hid, path, H5T_INTEGER, ncols, H5T_NATIVE_INT64,
                                  sizeof(int64_t), rows, buf)
                     : read_table((hid_t)s->hid, path, H5T_FLOAT, ncols, H5T_NATIVE_DOUBLE,
                                  sizeof(double), rows, buf);
    for (size_t k = 0; rc == 0 && !integer && k < *rows * (size_t)ncols; ++k)
        if (!isfinite(((const double *)*buf)[k]))
            rc = -1;
    if (rc) {
        free(*buf);
        *buf = NULL;
        snprintf(err, errsize, "%s: missing or unreadable %s (not a table of %d %s column(s))",
                 s->path, path, ncols, integer ? "integer" : "finite floating-point");
    }
    return rc;
}

int gf_snapshot_read_geometry(const gf_snapshot *s, gf_snapshot_geometry *g, char *err,
                              size_t errsize) {
    memset(g, 0, sizeof *g);
    hid_t f = (hid_t)s->hid;
    if (H5Lexists(f, "/geometry", H5P_DEFAULT) <= 0)
        return 0;
    size_t nkind = 0, nbody = 0;
    void *points = NULL, *conn = NULL, *kind = NULL, *body = NULL;
    int rc = read_table(f, "/geometry/position", H5T_FLOAT, 3, H5T_NATIVE_DOUBLE, sizeof(double),
                        &g->npoints, &points);
    rc = rc ? rc
            : read_table(f, "/geometry/topology", H5T_INTEGER, 1, H5T_NATIVE_INT64, sizeof(int64_t),
                         &g->nconn, &conn);
    rc = rc ? rc
            : read_table(f, "/geometry/kind", H5T_INTEGER, 1, H5T_NATIVE_INT32, sizeof(int32_t),
                         &nkind, &kind);
    rc = rc ? rc
            : read_table(f, "/geometry/body", H5T_INTEGER, 1, H5T_NATIVE_INT32, sizeof(int32_t),
                         &nbody, &body);
    g->points = points;
    g->conn = conn;
    g->kind = kind;
    g->body = body;
    if (rc) {
        snprintf(err, errsize,
                 "%s: /geometry lacks position, topology, kind or body, or one of them has the "
                 "wrong shape or type (corrupt file?)",
                 s->path);
        gf_snapshot_geometry_free(g);
        return -1;
    }
    for (size_t k = 0; k < 3 * g->npoints && rc == 0; ++k)
        rc = isfinite(g->points[k]) ? 0 : -1;
    size_t cells = 0;
    for (size_t at = 0; at < g->nconn && rc == 0; ++cells) {
        int code;
        size_t n, first;
        at = gf_snapshot_geometry_cell(g, at, &code, &n, &first);
        rc = at ? 0 : -1;
    }
    for (size_t c = 0; c < nkind && rc == 0; ++c)
        rc = g->kind[c] >= 0 && g->kind[c] <= 3 ? 0 : -1;
    if (rc || cells != nkind || nbody != nkind) {
        snprintf(err, errsize,
                 "%s: /geometry does not describe a mesh (an unknown cell type, a point index "
                 "out of range, points not finite, or not one kind and body per cell; corrupt "
                 "file?)",
                 s->path);
        gf_snapshot_geometry_free(g);
        return -1;
    }
    g->ncells = cells;
    return 0;
}

void gf_snapshot_geometry_free(gf_snapshot_geometry *g) {
    free(g->points);
    free(g->conn);
    free(g->kind);
    free(g->body);
    memset(g, 0, sizeof *g);
}
