#include "h5/particle_rows.h"

#include <stdlib.h>
#include <string.h>

#include "h5/format.h"

void gf_h5_particle_rows_free(gf_h5_particle_rows *p) {
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

void gf_h5_read_particle_rows(gf_h5file *f, hid_t g, size_t first, size_t n, size_t N, int inverse,
                              gf_h5_particle_rows *p) {
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

gf_particle *gf_h5_particle_rows_records(const gf_h5_particle_rows *rows) {
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

gf_status gf_h5_read_particles(const gf_par *par, const char *path, gf_particle **recs,
                               double **mass, size_t *n) {
    *recs = NULL;
    *mass = NULL;
    *n = 0;
    gf_h5file f;
    GF_TRY(gf_h5_open(&f, par, path, 0));
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
    gf_h5_particle_rows rows;
    gf_h5_read_particle_rows(&f, g, first, rows_n, N, 0, &rows);
    if (g >= 0)
        H5Gclose(g);
    gf_status st = gf_h5_close(&f);
    if (st == GF_OK) {
        *recs = gf_h5_particle_rows_records(&rows);
        *mass = gf_malloc(rows_n + 1, sizeof **mass);
        if (!*recs || !*mass)
            st = gf_error_status();
        else
            memcpy(*mass, rows.mass, rows_n * sizeof **mass);
        if (par)
            st = gf_par_agree(par, st, NULL);
    }
    gf_h5_particle_rows_free(&rows);
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
