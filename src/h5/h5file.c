/* The HDF5 file layer (h5file.h). */
#include "h5/h5file.h"

#include <stdlib.h>
#include <string.h>

void gf_h5_local(gf_h5file *f, gf_status st) {
    if (f->st == GF_OK && f->local == GF_OK && st != GF_OK)
        f->local = st;
}

gf_status gf_h5_agree(gf_h5file *f) {
    if (f->st == GF_OK) {
        f->st = f->local;
        if (f->par)
            f->st = gf_par_agree(f->par, f->st, NULL);
    }
    f->local = GF_OK;
    return f->st;
}

hid_t gf_h5_group_create(gf_h5file *f, const char *name) {
    if (f->counting || f->st != GF_OK)
        return -1;
    hid_t g = H5Gcreate2(f->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        H5_FAIL(f, "creating group /%s in '%s' failed", name, f->path);
    return g;
}

void gf_h5_comm_of(const gf_par *par, MPI_Comm *comm, int *rank, int *size) {
    if (par) {
        *comm = par->comm;
        *rank = par->rank;
        *size = par->size;
    } else {
        *comm = MPI_COMM_SELF;
        *rank = 0;
        *size = 1;
    }
}

hid_t gf_h5_serial_open(const char *path, unsigned mode) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    hid_t file = H5Fopen(path, mode, fapl);
    H5Pclose(fapl);
    return file;
}

void gf_h5_init(gf_h5file *f, const gf_par *par, const char *path) {
    memset(f, 0, sizeof *f);
    f->par = par;
    f->path = path;
    f->file = -1;
    f->dxpl = -1;
    gf_h5_comm_of(par, &f->comm, &f->rank, &f->size);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors become granflow messages */
}

gf_status gf_h5_open(gf_h5file *f, const gf_par *par, const char *path, int create) {
    gf_h5_init(f, par, path);
    /* In a collective open rank 0 reads the superblock and sends it to the others: a file it
     * cannot parse leaves them waiting. So rank 0 first opens the file alone, and all agree. */
    if (!create && f->rank == 0) {
        hid_t file = gf_h5_serial_open(path, H5F_ACC_RDONLY);
        if (file < 0 || H5Fclose(file) < 0)
            H5_FAIL(f, "cannot open '%s' as an HDF5 file (missing, truncated or not HDF5)", path);
    }
    if (gf_h5_agree(f) != GF_OK)
        return f->st;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, f->comm, MPI_INFO_NULL);
    /* The file format of HDF5 1.10 checksums its metadata too (object headers, attribute heaps,
     * chunk indices), so that a flipped bit there is refused like one in the data, instead of
     * crashing the reader or changing a type, a header value or a chunk's place. */
    if (create)
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);
    if (create)
        f->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    else
        f->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    /* Writes of checksummed chunks must be collective. Reads are independent: a checksum that
     * fails on one rank inside a collective read would leave the others waiting in it. */
    f->dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(f->dxpl, create ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    if (f->file < 0) {
        if (create)
            H5_FAIL(f, "cannot create '%s' (does the directory exist and is it writable?)", path);
        else
            H5_FAIL(f, "cannot open '%s' as an HDF5 file (missing, truncated or not HDF5)", path);
    }
    if (gf_h5_agree(f) != GF_OK) {
        if (f->file >= 0)
            H5Fclose(f->file);
        H5Pclose(f->dxpl);
        f->file = f->dxpl = -1;
    }
    return f->st;
}

gf_status gf_h5_close(gf_h5file *f) {
    if (f->dxpl >= 0)
        H5Pclose(f->dxpl);
    if (f->file >= 0 && H5Fclose(f->file) < 0)
        H5_FAIL(f, "closing '%s' failed", f->path);
    f->file = f->dxpl = -1;
    return gf_h5_agree(f);
}

void gf_h5_attr_write(gf_h5file *f, hid_t obj, const char *name, hid_t type, int n,
                      const void *data) {
    if (f->st != GF_OK)
        return;
    if (f->counting) {
        f->bytes += (double)n * (double)H5Tget_size(type) + 256.0;
        return;
    }
    hsize_t dims = (hsize_t)n;
    hid_t space = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dims, NULL);
    hid_t a = obj >= 0 ? H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (a < 0 || H5Awrite(a, type, data) < 0)
        H5_FAIL(f, "writing attribute '%s' to '%s' failed", name, f->path);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
}

void gf_h5_attr_string(gf_h5file *f, hid_t obj, const char *name, const char *value) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    gf_h5_attr_write(f, obj, name, t, 1, value);
    H5Tclose(t);
}

hid_t gf_h5_select_rows(hid_t fspace, int rank, size_t offset, size_t n, int ncols) {
    hsize_t start[2] = {(hsize_t)offset, 0}, count[2] = {(hsize_t)n, (hsize_t)ncols};
    hid_t mspace = H5Screate_simple(rank, count, NULL);
    if (n == 0) {
        H5Sselect_none(fspace);
        H5Sselect_none(mspace);
    } else {
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    }
    return mspace;
}

void gf_h5_dset_write(gf_h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
                      size_t offset, size_t global_n, const void *buf, const char *units,
                      const char *desc) {
    if (f->st != GF_OK)
        return;
    size_t row_bytes = (size_t)ncols * H5Tget_size(type);
    size_t chunk_rows = CHUNK_BYTES / row_bytes > 0 ? CHUNK_BYTES / row_bytes : 1;
    if (f->counting) {
        /* Data, its chunk index and checksums, the attributes and the object header (measured:
         * 500 to 620 bytes a dataset with its units and description). */
        size_t chunks = (global_n + chunk_rows - 1) / chunk_rows;
        f->bytes += (double)global_n * (double)row_bytes + 64.0 * (double)chunks + 1024.0;
        return;
    }
    hsize_t gdims[2] = {(hsize_t)global_n, (hsize_t)ncols};
    int rank = ncols > 1 ? 2 : 1;
    hid_t fspace = H5Screate_simple(rank, gdims, NULL);
    /* Chunks with Fletcher32 checksums, so that a damaged checkpoint or snapshot is refused
     * when read instead of restarting from altered data. */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (global_n > 0) {
        hsize_t chunk[2] = {(hsize_t)(chunk_rows < global_n ? chunk_rows : global_n),
                            (hsize_t)ncols};
        if (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_fletcher32(dcpl) < 0)
            H5_FAIL(f, "setting up the checksums of dataset '%s' in '%s' failed", name, f->path);
    }
    hid_t d = loc >= 0 && f->local == GF_OK
                  ? H5Dcreate2(loc, name, type, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                  : -1;
    H5Pclose(dcpl);
    if (d < 0)
        H5_FAIL(f, "creating dataset '%s' in '%s' failed", name, f->path);
    /* The write is collective: every rank has the dataset, or none writes. */
    if (gf_h5_agree(f) == GF_OK) {
        hid_t mspace = gf_h5_select_rows(fspace, rank, offset, n, ncols);
        /* An empty dataset has nothing to write (and HDF5 refuses the selection). */
        if (global_n > 0 && H5Dwrite(d, type, mspace, fspace, f->dxpl, buf) < 0)
            H5_FAIL(f, "writing dataset '%s' to '%s' failed", name, f->path);
        H5Sclose(mspace);
        if (units)
            gf_h5_attr_string(f, d, "units", units);
        if (desc)
            gf_h5_attr_string(f, d, "description", desc);
    }
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(fspace);
    gf_h5_agree(f);
}

void gf_h5_dset_read(gf_h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
                     size_t offset, size_t global_n, void *buf) {
    if (f->st != GF_OK)
        return;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t fspace = -1;
    int rank = 0;
    if (d < 0) {
        H5_FAIL(f, "'%s' has no dataset '%s': not a granflow checkpoint, or from another version",
                f->path, name);
    } else {
        fspace = H5Dget_space(d);
        hsize_t dims[2] = {0, 1};
        rank = H5Sget_simple_extent_ndims(fspace);
        H5Sget_simple_extent_dims(fspace, dims, NULL);
        if (rank != (ncols > 1 ? 2 : 1) || dims[0] != (hsize_t)global_n ||
            (ncols > 1 && dims[1] != (hsize_t)ncols))
            H5_FAIL(f, "dataset '%s' in '%s' has the wrong shape (%llu x %llu, expected %zu x %d)",
                    name, f->path, (unsigned long long)dims[0],
                    (unsigned long long)(rank > 1 ? dims[1] : 1), global_n, ncols);
    }
    /* The read is collective: every rank found the dataset as expected, or none reads. */
    if (gf_h5_agree(f) == GF_OK) {
        hid_t mspace = gf_h5_select_rows(fspace, rank, offset, n, ncols);
        if (global_n > 0 && H5Dread(d, type, mspace, fspace, f->dxpl, buf) < 0)
            H5_FAIL(f, "reading dataset '%s' from '%s' failed (truncated or corrupt file?)", name,
                    f->path);
        H5Sclose(mspace);
    }
    if (fspace >= 0)
        H5Sclose(fspace);
    if (d >= 0)
        H5Dclose(d);
    gf_h5_agree(f);
}

void gf_h5_attr_read(gf_h5file *f, hid_t obj, const char *name, hid_t type, int n, void *out) {
    if (f->st != GF_OK || f->local != GF_OK)
        return;
    hid_t a = obj >= 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
    if (a < 0) {
        H5_FAIL(f, "'%s' lacks the attribute '%s': not a granflow checkpoint", f->path, name);
        return;
    }
    hid_t space = H5Aget_space(a);
    hssize_t npts = H5Sget_simple_extent_npoints(space);
    if (npts != n)
        H5_FAIL(f, "attribute '%s' in '%s' has %lld values, expected %d", name, f->path,
                (long long)npts, n);
    else if (H5Aread(a, type, out) < 0)
        H5_FAIL(f, "reading attribute '%s' of '%s' failed", name, f->path);
    H5Sclose(space);
    H5Aclose(a);
}

void gf_h5_attrs_write_state(gf_h5file *f, hid_t obj, const gf_state *state) {
    for (size_t k = 0; k < state->count && f->st == GF_OK; ++k) {
        const gf_state_item *it = &state->item[k];
        if (it->type == GF_STATE_INT)
            gf_h5_attr_write(f, obj, it->name, H5T_NATIVE_INT64, (int)it->n, it->i);
        else
            gf_h5_attr_write(f, obj, it->name, H5T_NATIVE_DOUBLE, (int)it->n, it->r);
    }
}

/* One attribute into the state (H5Aiterate2's callback). */
static herr_t read_state_attr(hid_t obj, const char *name, const H5A_info_t *info, void *ctx) {
    (void)info;
    void **c = ctx;
    gf_h5file *f = c[0];
    gf_state *state = c[1];
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hid_t space = a >= 0 ? H5Aget_space(a) : -1;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    gf_status st = GF_OK;
    if (a < 0 || n < 0 || n > (1 << 24)) {
        H5_FAIL(f, "reading attribute '%s' of '%s' failed", name, f->path);
    } else if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
        int real = cls == H5T_FLOAT;
        void *buf = gf_malloc((size_t)n + 1, real ? sizeof(double) : sizeof(int64_t));
        if (!buf)
            st = gf_error_status();
        else if (H5Aread(a, real ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, buf) < 0)
            H5_FAIL(f, "reading attribute '%s' of '%s' failed", name, f->path);
        else if (real)
            st = gf_state_put_real(state, name, (size_t)n, buf);
        else
            st = gf_state_put_int(state, name, (size_t)n, buf);
        free(buf);
    }
    if (st != GF_OK)
        gf_h5_local(f, st);
    if (space >= 0)
        H5Sclose(space);
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
    return f->local == GF_OK ? 0 : -1;
}

void gf_h5_attrs_read_state(gf_h5file *f, hid_t obj, gf_state *state) {
    if (f->st != GF_OK || f->local != GF_OK)
        return;
    if (obj < 0) {
        H5_FAIL(f, "'%s' has no run state: not a granflow checkpoint", f->path);
        return;
    }
    void *ctx[2] = {f, state};
    hsize_t idx = 0;
    if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, read_state_attr, ctx) < 0)
        H5_FAIL(f, "reading the run state of '%s' failed", f->path);
}

void gf_h5_attr_read_string(gf_h5file *f, hid_t obj, const char *name, char *out, size_t size) {
    out[0] = '\0';
    if (f->st != GF_OK || f->local != GF_OK)
        return;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) {
        H5_FAIL(f, "'%s' lacks the attribute '%s': not a granflow file", f->path, name);
        return;
    }
    hid_t t = H5Aget_type(a);
    size_t len = H5Tget_size(t);
    if (H5Tget_class(t) != H5T_STRING || len >= size) {
        H5_FAIL(f, "attribute '%s' of '%s' is not a short string", name, f->path);
    } else {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, len);
        if (H5Aread(a, mt, out) < 0)
            H5_FAIL(f, "reading attribute '%s' of '%s' failed", name, f->path);
        out[len] = '\0';
        H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
}

hid_t gf_h5_group_open(gf_h5file *f, const char *name) {
    if (f->st != GF_OK)
        return -1;
    hid_t g = H5Gopen2(f->file, name, H5P_DEFAULT);
    if (g < 0)
        H5_FAIL(f, "'%s' has no /%s group", f->path, name);
    return g;
}

int64_t gf_h5_dset_rows(gf_h5file *f, hid_t g, const char *name) {
    if (f->st != GF_OK || f->local != GF_OK || g < 0)
        return -1;
    if (H5Lexists(g, name, H5P_DEFAULT) <= 0) {
        H5_FAIL(f, "'%s' has no dataset '%s': not a granflow checkpoint, or from another version",
                f->path, name);
        return -1;
    }
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    hid_t space = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[2] = {0, 0};
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank >= 1 && rank <= 2)
        H5Sget_simple_extent_dims(space, dims, NULL);
    else
        H5_FAIL(f, "reading the shape of dataset '%s' in '%s' failed", name, f->path);
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    return f->local == GF_OK ? (int64_t)dims[0] : -1;
}

void gf_h5_read_rank_offsets(gf_h5file *f, hid_t g, int nranks, int64_t rows, int64_t *offs) {
    if (f->st != GF_OK)
        return;
    if (H5Lexists(g, "rank_offsets", H5P_DEFAULT) > 0) {
        gf_h5_dset_read(f, g, "rank_offsets", H5T_NATIVE_INT64, 1, (size_t)nranks + 1, 0,
                        (size_t)nranks + 1, offs);
    } else {
        gf_h5_attr_read(f, g, "rank_offsets", H5T_NATIVE_INT64, nranks + 1, offs);
        gf_h5_agree(f);
    }
    if (f->st != GF_OK)
        return;
    int ok = offs[0] == 0 && (rows < 0 || offs[nranks] == rows);
    for (int r = 0; r < nranks && ok; ++r)
        ok = offs[r] <= offs[r + 1];
    if (!ok)
        H5_FAIL(f, "'%s' has inconsistent rank offsets (they end at %lld of %lld rows)", f->path,
                (long long)offs[nranks], (long long)rows);
    gf_h5_agree(f);
}
