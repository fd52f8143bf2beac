/* Parallel HDF5 snapshots and checkpoints. With the par module, the only place with MPI calls
 * (through HDF5's MPI-IO driver and the file-level collectives). */
#include "granflow/io.h"

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

#include "granflow/config_compare.h"
#include "granflow/geometry_mesh.h"
#include "granflow/log.h"
#include "granflow/vec.h"
#include "granflow/version.h"

#define FORMAT_SNAPSHOT "granflow snapshot 1"
#define FORMAT_CHECKPOINT "granflow checkpoint 1"
/* Datasets are written in chunks of about this size (each with its checksum). */
#define CHUNK_BYTES ((size_t)1 << 20)

static volatile sig_atomic_t checkpoint_requested = 0;

void gf_output_request_checkpoint(void) {
    checkpoint_requested = 1;
}

static void on_signal(int sig) {
    (void)sig;
    checkpoint_requested = 1;
}

void gf_output_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Configuration                                                                              */

gf_status gf_output_configure(gf_output *o, gf_config_block *root) {
    memset(o, 0, sizeof *o);
    gf_config_block *b = gf_config_section(root, "Output");
    if (!b)
        return gf_error_status();
    GF_TRY(gf_config_get_string(b, "directory", "output", o->directory, sizeof o->directory));
    GF_TRY(gf_config_get_string(b, "prefix", "run", o->prefix, sizeof o->prefix));
    GF_TRY(gf_config_get_long(b, "snapshot_every", 0, &o->snapshot_every));
    GF_TRY(gf_config_check_range(b, "snapshot_every", (double)o->snapshot_every, 0, 1e15));
    GF_TRY(gf_config_get_bool(b, "contacts", 0, &o->contacts));
    GF_TRY(gf_config_get_long(b, "checkpoint_every", 0, &o->checkpoint_every));
    GF_TRY(gf_config_check_range(b, "checkpoint_every", (double)o->checkpoint_every, 0, 1e15));
    GF_TRY(gf_config_get_double(b, "wall_limit", 0.0, &o->wall_limit));
    GF_TRY(gf_config_check_range(b, "wall_limit", o->wall_limit, 0.0, 1e12));
    char def[GF_IO_PATH + 160];
    snprintf(def, sizeof def, "%s/%s.ckpt.h5", o->directory, o->prefix);
    GF_TRY(gf_config_get_string(b, "checkpoint", def, o->checkpoint, sizeof o->checkpoint));
    o->start = gf_wtime();
    o->checkpoint_step = -1;
    return GF_OK;
}

void gf_output_free(gf_output *o) {
    free(o->config_text);
    free(o->snaps);
    memset(o, 0, sizeof *o);
}

gf_status gf_output_set_config_text(gf_output *o, const char *text) {
    free(o->config_text);
    size_t n = strlen(text);
    o->config_text = gf_malloc(n + 1, 1);
    if (!o->config_text)
        return gf_error_status();
    memcpy(o->config_text, text, n + 1);
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* HDF5 helpers                                                                               */

/* Collective HDF5 calls (file open and close, dataset creation, reads and writes) must be entered
 * by every rank or by none. So a failure one rank meets alone (an allocation, a write error) is
 * only recorded in `local`; the helpers skip work only on `st`, the status all ranks agreed on
 * (h5_agree), which every rank holds alike. Agreements come before each collective that depends
 * on what a rank may have failed alone. */
typedef struct {
    const gf_par *par;
    MPI_Comm comm;
    int rank, size;
    hid_t file, dxpl;
    const char *path;
    gf_status st;    /* agreed: the same on every rank; once failed, the helpers do nothing */
    gf_status local; /* this rank's first failure since the last agreement */
    int counting;    /* the layout pass: nothing is written, the bytes are added up */
    double bytes;    /* what the file will hold, from the layout pass */
} h5file;

/* Records this rank's failure (the first since the last agreement). */
#define H5_FAIL(f, ...)                                                                            \
    do {                                                                                           \
        if ((f)->st == GF_OK && (f)->local == GF_OK)                                               \
            (f)->local = GF_ERROR(GF_ERR_IO, __VA_ARGS__);                                         \
    } while (0)

static void h5_local(h5file *f, gf_status st) {
    if (f->st == GF_OK && f->local == GF_OK && st != GF_OK)
        f->local = st;
}

/* Collective: every rank takes the lowest failing rank's status and message. */
static gf_status h5_agree(h5file *f) {
    if (f->st == GF_OK) {
        f->st = f->local;
        if (f->par)
            f->st = gf_par_agree(f->par, f->st, NULL);
    }
    f->local = GF_OK;
    return f->st;
}

/* Whether the writers fill their buffers: not in the layout pass, which only adds up sizes. */
static inline int packing(const h5file *f) {
    return f->st == GF_OK && !f->counting;
}

/* Groups of a file being written; in the layout pass there is no file (-1 then). */
static hid_t group_create(h5file *f, const char *name) {
    if (f->counting || f->st != GF_OK)
        return -1;
    hid_t g = H5Gcreate2(f->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        H5_FAIL(f, "creating group /%s in '%s' failed", name, f->path);
    return g;
}

static void comm_of(const gf_sim *sim, MPI_Comm *comm, int *rank, int *size) {
    if (sim->par) {
        *comm = sim->par->comm;
        *rank = sim->par->rank;
        *size = sim->par->size;
    } else {
        *comm = MPI_COMM_SELF;
        *rank = 0;
        *size = 1;
    }
}

/* Opens `path` with the serial driver on this rank alone (file locking off: parallel file
 * systems often lack it), read-write or read-only; -1 if it is no readable HDF5 file. */
static hid_t serial_open(const char *path, unsigned mode) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    hid_t file = H5Fopen(path, mode, fapl);
    H5Pclose(fapl);
    return file;
}

static void h5file_init(h5file *f, const gf_sim *sim, const char *path) {
    memset(f, 0, sizeof *f);
    f->par = sim->par;
    f->path = path;
    f->file = -1;
    f->dxpl = -1;
    comm_of(sim, &f->comm, &f->rank, &f->size);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors become granflow messages */
}

/* Collective; returns the agreed status. On failure nothing is left open. */
static gf_status h5_open(h5file *f, const gf_sim *sim, const char *path, int create) {
    h5file_init(f, sim, path);
    /* In a collective open rank 0 reads the superblock and sends it to the others: a file it
     * cannot parse leaves them waiting. So rank 0 first opens the file alone, and all agree. */
    if (!create && f->rank == 0) {
        hid_t file = serial_open(path, H5F_ACC_RDONLY);
        if (file < 0 || H5Fclose(file) < 0)
            H5_FAIL(f, "cannot open '%s' as an HDF5 file (missing, truncated or not HDF5)", path);
    }
    if (h5_agree(f) != GF_OK)
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
    if (h5_agree(f) != GF_OK) {
        if (f->file >= 0)
            H5Fclose(f->file);
        H5Pclose(f->dxpl);
        f->file = f->dxpl = -1;
    }
    return f->st;
}

/* Collective; returns the agreed status of everything done with the file. */
static gf_status h5_close(h5file *f) {
    if (f->dxpl >= 0)
        H5Pclose(f->dxpl);
    if (f->file >= 0 && H5Fclose(f->file) < 0)
        H5_FAIL(f, "closing '%s' failed", f->path);
    f->file = f->dxpl = -1;
    return h5_agree(f);
}

/* Attributes are metadata that every rank writes alike: a local failure is recorded and the
 * following calls still made, so that all ranks make the same calls. */
static void attr_write(h5file *f, hid_t obj, const char *name, hid_t type, int n,
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

static void attr_string(h5file *f, hid_t obj, const char *name, const char *value) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    attr_write(f, obj, name, t, 1, value);
    H5Tclose(t);
}

/* The memory space of this rank's n rows, and their place in the file space: an empty selection
 * for a rank without rows, which still takes part in the collective transfer. */
static hid_t select_rows(hid_t fspace, int rank, size_t offset, size_t n, int ncols) {
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

/* Collective: writes a (global_n x ncols) dataset whose rows offset .. offset + n - 1 come from
 * this rank, and agrees on the outcome. */
static void dset_write(h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
                       size_t offset, size_t global_n, const void *buf, const char *units,
                       const char *desc) {
    if (f->st != GF_OK)
        return;
    size_t row_bytes = (size_t)ncols * H5Tget_size(type);
    size_t chunk_rows = CHUNK_BYTES / row_bytes > 0 ? CHUNK_BYTES / row_bytes : 1;
    if (f->counting) {
        /* Data, its chunk index and checksums, the attributes and the object header. */
        size_t chunks = (global_n + chunk_rows - 1) / chunk_rows;
        f->bytes += (double)global_n * (double)row_bytes + 64.0 * (double)chunks + 4096.0;
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
    if (h5_agree(f) == GF_OK) {
        hid_t mspace = select_rows(fspace, rank, offset, n, ncols);
        /* An empty dataset has nothing to write (and HDF5 refuses the selection). */
        if (global_n > 0 && H5Dwrite(d, type, mspace, fspace, f->dxpl, buf) < 0)
            H5_FAIL(f, "writing dataset '%s' to '%s' failed", name, f->path);
        H5Sclose(mspace);
        if (units)
            attr_string(f, d, "units", units);
        if (desc)
            attr_string(f, d, "description", desc);
    }
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(fspace);
    h5_agree(f);
}

/* Collective: reads rows offset .. offset + n - 1 of a (global_n x ncols) dataset, checking its
 * shape, and agrees on the outcome. */
static void dset_read(h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
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
    if (h5_agree(f) == GF_OK) {
        hid_t mspace = select_rows(fspace, rank, offset, n, ncols);
        if (global_n > 0 && H5Dread(d, type, mspace, fspace, f->dxpl, buf) < 0)
            H5_FAIL(f, "reading dataset '%s' from '%s' failed (truncated or corrupt file?)", name,
                    f->path);
        H5Sclose(mspace);
    }
    if (fspace >= 0)
        H5Sclose(fspace);
    if (d >= 0)
        H5Dclose(d);
    h5_agree(f);
}

static void attr_read(h5file *f, hid_t obj, const char *name, hid_t type, int n, void *out) {
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

static void attr_read_string(h5file *f, hid_t obj, const char *name, char *out, size_t size) {
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

/* Opens a group for reading (no collective: reads of metadata are independent). */
static hid_t group_open(h5file *f, const char *name) {
    if (f->st != GF_OK)
        return -1;
    hid_t g = H5Gopen2(f->file, name, H5P_DEFAULT);
    if (g < 0)
        H5_FAIL(f, "'%s' has no /%s group", f->path, name);
    return g;
}

/* The rows of each rank in a group: `rank_offsets`, nranks + 1 non-decreasing values from 0 to
 * the number of rows (`rows`, if not negative). A dataset: files of earlier versions have an
 * attribute (limited to 64 KiB, so to about 8000 ranks), which is still read. Collective. */
static void read_rank_offsets(h5file *f, hid_t g, int nranks, int64_t rows, int64_t *offs) {
    if (f->st != GF_OK)
        return;
    if (H5Lexists(g, "rank_offsets", H5P_DEFAULT) > 0) {
        dset_read(f, g, "rank_offsets", H5T_NATIVE_INT64, 1, (size_t)nranks + 1, 0,
                  (size_t)nranks + 1, offs);
    } else {
        attr_read(f, g, "rank_offsets", H5T_NATIVE_INT64, nranks + 1, offs);
        h5_agree(f);
    }
    if (f->st != GF_OK)
        return;
    int ok = offs[0] == 0 && (rows < 0 || offs[nranks] == rows);
    for (int r = 0; r < nranks && ok; ++r)
        ok = offs[r] <= offs[r + 1];
    if (!ok)
        H5_FAIL(f, "'%s' has inconsistent rank offsets (they end at %lld of %lld rows)", f->path,
                (long long)offs[nranks], (long long)rows);
    h5_agree(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Writing                                                                                    */

/* Local particle order sorted by id (rows are written sorted within each rank). */
static int cmp_by_id(const void *a, const void *b, void *ctx) {
    const int64_t *id = ctx;
    int64_t x = id[*(const size_t *)a], y = id[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static const int64_t *sort_ids_ctx;
static int cmp_idx(const void *a, const void *b) {
    return cmp_by_id(a, b, (void *)sort_ids_ctx);
}

static const char *const cut_names[3] = {"cuts_x", "cuts_y", "cuts_z"};

static void header(h5file *f, const gf_sim *sim, int64_t global_n, const char *format,
                   const char *config_text) {
    if (f->st != GF_OK)
        return;
    hid_t root = f->file;
    attr_string(f, root, "format", format);
    attr_write(f, root, "time", H5T_NATIVE_DOUBLE, 1, &sim->time);
    long long step = sim->step;
    attr_write(f, root, "step", H5T_NATIVE_LLONG, 1, &step);
    attr_write(f, root, "dt", H5T_NATIVE_DOUBLE, 1, &sim->dt);
    attr_write(f, root, "box_min", H5T_NATIVE_DOUBLE, 3, sim->lo);
    attr_write(f, root, "box_max", H5T_NATIVE_DOUBLE, 3, sim->hi);
    attr_write(f, root, "periodic", H5T_NATIVE_INT, 3, sim->periodic);
    long long n = global_n;
    attr_write(f, root, "particle_count", H5T_NATIVE_LLONG, 1, &n);
    attr_write(f, root, "rank_count", H5T_NATIVE_INT, 1, &f->size);
    int dims[3] = {sim->dims[0] ? sim->dims[0] : 1, sim->dims[1] ? sim->dims[1] : 1,
                   sim->dims[2] ? sim->dims[2] : 1};
    attr_write(f, root, "decomposition", H5T_NATIVE_INT, 3, dims);
    /* Cuts moved by load balancing (equally spaced ones are not written): a restart on the same
     * layout continues with them. The same on every rank. */
    for (int a = 0; a < 3 && sim->distributed; ++a)
        if (sim->xch.decomp.cut[a])
            attr_write(f, root, cut_names[a], H5T_NATIVE_DOUBLE, dims[a] + 1,
                       sim->xch.decomp.cut[a]);
    attr_string(f, root, "granflow_version", gf_version());
    attr_string(f, root, "git_revision", gf_git_revision());
    attr_string(f, root, "compiler", __VERSION__);
    char buf[256];
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, rel);
    attr_string(f, root, "hdf5_version", buf);
    char mpiv[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpiv, &len);
    char *nl = strchr(mpiv, '\n');
    if (nl)
        *nl = '\0';
    attr_string(f, root, "mpi_version", mpiv);
    /* The date is rank 0's, so every rank writes the same attribute value. */
    long long now = (long long)time(NULL);
    MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, f->comm);
    time_t tt = (time_t)now;
    struct tm tmv;
    gmtime_r(&tt, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    attr_string(f, root, "date", buf);
    /* The configuration as one string (a dataset: attributes are limited to 64 KiB), of
     * exactly its length (null-padded, so no terminator is stored); rank 0's copy is written,
     * the others take part with no rows. */
    const char *cfg = config_text ? config_text : "";
    size_t cfg_len = strlen(cfg);
    hid_t str = H5Tcopy(H5T_C_S1);
    if (H5Tset_size(str, cfg_len > 0 ? cfg_len : 1) < 0 || H5Tset_strpad(str, H5T_STR_NULLPAD) < 0)
        H5_FAIL(f, "setting up the configuration string of '%s' failed", f->path);
    dset_write(f, root, "configuration", str, 1, f->rank == 0 ? 1 : 0, 0, 1, cfg_len > 0 ? cfg : "",
               NULL, "the effective configuration of the run (defaults filled in)");
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
static void write_rank_offsets(h5file *f, hid_t g, int64_t offset, int64_t global) {
    int64_t v[2] = {offset, global};
    size_t n = f->rank == f->size - 1 ? 2 : 1;
    dset_write(f, g, "rank_offsets", H5T_NATIVE_INT64, 1, n, (size_t)f->rank, (size_t)f->size + 1,
               v, "1",
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

/* The member spheres of this rank's clumps. */
static size_t clump_member_count(const gf_particles *p) {
    size_t m = 0;
    for (size_t i = 0; i < p->n_local; ++i)
        if (p->shape[i] == GF_SHAPE_CLUMP && p->clumps && p->clump[i] >= 0 &&
            (size_t)p->clump[i] < p->clumps->count)
            m += (size_t)p->clumps->item[p->clump[i]].count;
    return m;
}

/* /clump_members: every member sphere of every clump in the world frame, for ParaView (a Glyph of
 * spheres scaled by `radius` shows the clumps as they are). Nothing when no rank has a clump. */
static void write_clump_members(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_particles *p = &sim->particles;
    size_t n = clump_member_count(p);
    int64_t offset = 0, global = 0;
    h5_local(f, row_range(sim, n, &offset, &global));
    if (h5_agree(f) != GF_OK || global == 0)
        return;
    size_t na = f->counting ? 0 : n;
    double *x = gf_malloc(3 * na + 1, sizeof *x), *r = gf_malloc(na + 1, sizeof *r);
    int64_t *id = gf_malloc(na + 1, sizeof *id);
    int32_t *vertex = gf_malloc(na + 1, sizeof *vertex);
    if (!x || !r || !id || !vertex)
        h5_local(f, gf_error_status());
    size_t m = 0;
    for (size_t i = 0; packing(f) && i < p->n_local; ++i) {
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
    hid_t g = h5_agree(f) == GF_OK ? group_create(f, "clump_members") : -1;
    size_t N = (size_t)global, off = (size_t)offset;
    dset_write(f, g, "position", H5T_NATIVE_DOUBLE, 3, n, off, N, x, "m", "member sphere centre");
    dset_write(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, off, N, r, "m", "member sphere radius");
    dset_write(f, g, "id", H5T_NATIVE_INT64, 1, n, off, N, id, "1", "id of the clump");
    for (size_t k = 0; packing(f) && k < n; ++k)
        vertex[k] = (int32_t)(off + k);
    dset_write(f, g, "vertex", H5T_NATIVE_INT32, 1, n, off, N, vertex, "1",
               "the row number: the connectivity of one vertex cell per sphere (XDMF)");
    if (g >= 0)
        H5Gclose(g);
    free(x);
    free(r);
    free(id);
    free(vertex);
}

/* Particle rows of this rank (sorted by id in snapshots) and the group offsets of all ranks. */
static void write_particles(h5file *f, const gf_sim *sim, int full, int64_t *global_out) {
    *global_out = 0;
    if (f->st != GF_OK)
        return;
    const gf_particles *p = &sim->particles;
    size_t n = p->n_local;
    int64_t offset = 0, global = 0;
    h5_local(f, row_range(sim, n, &offset, &global));
    *global_out = global;
    size_t na = f->counting ? 0 : n; /* the layout pass packs nothing */
    size_t *order = gf_malloc(na + 1, sizeof *order);
    double *buf = gf_malloc(4 * na + 1, sizeof *buf);
    int64_t *ibuf = gf_malloc(na + 1, sizeof *ibuf);
    int32_t *i32 = gf_malloc(na + 1, sizeof *i32);
    if (!order || !buf || !ibuf || !i32)
        h5_local(f, gf_error_status());
    hid_t g = -1;
    if (h5_agree(f) == GF_OK) {
        g = group_create(f, "particles");
        for (size_t i = 0; i < na; ++i)
            order[i] = i;
        /* A checkpoint keeps the in-memory order (bit-for-bit restart); snapshots sort by id. */
        if (!full) {
            sort_ids_ctx = p->id;
            qsort(order, na, sizeof *order, cmp_idx);
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    if (packing(f))
        for (size_t i = 0; i < n; ++i)
            ibuf[i] = p->id[order[i]];
    dset_write(f, g, "id", H5T_NATIVE_INT64, 1, n, off, N, ibuf, "1",
               "global particle id, unique for the run");
#define VEC(name, arr, k, units, desc)                                                             \
    do {                                                                                           \
        if (packing(f))                                                                            \
            for (size_t i = 0; i < n; ++i)                                                         \
                for (int c = 0; c < (k); ++c)                                                      \
                    buf[(size_t)(k)*i + c] = (arr)[c][order[i]];                                   \
        dset_write(f, g, name, H5T_NATIVE_DOUBLE, k, n, off, N, buf, units, desc);                 \
    } while (0)
#define SCALAR(expr)                                                                               \
    do {                                                                                           \
        if (packing(f))                                                                            \
            for (size_t i = 0; i < n; ++i)                                                         \
                expr;                                                                              \
    } while (0)
    VEC("position", p->x, 3, "m", "centre of mass");
    VEC("velocity", p->v, 3, "m/s", "linear velocity");
    VEC("angular_velocity", p->w, 3, "rad/s", "angular velocity in the world frame");
    VEC("orientation", p->q, 4, "1", "unit quaternion (w, x, y, z), body to world");
    SCALAR(buf[i] = p->radius[order[i]]);
    dset_write(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "m",
               "bounding radius around the centre of mass (a sphere's radius)");
    SCALAR(i32[i] = p->shape[order[i]]);
    dset_write(f, g, "shape", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
               "0 sphere, 1 box, 2 capsule, 3 cylinder, 4 clump");
    VEC("dimensions", p->dim, 3, "m",
        "sphere: radius; box: half extents along body x, y, z; capsule and cylinder: radius, "
        "half length along body z; clump: scale of its template (1)");
    SCALAR(i32[i] = p->clump[order[i]]);
    dset_write(f, g, "clump", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
               "template of a clump (in the order of the configuration), -1 for other shapes");
    if (!full) {
        double *axes = gf_malloc(9 * na + 1, sizeof *axes);
        if (!axes)
            h5_local(f, gf_error_status());
        for (size_t i = 0; packing(f) && i < n; ++i)
            glyph_axes(p, order[i], &axes[9 * i]);
        dset_write(f, g, "axes", H5T_NATIVE_DOUBLE, 9, n, off, N, axes, "m",
                   "the body's y, z and x axes scaled to its full size along each, in VTK's "
                   "column order: ParaView's Tensor Glyph (extract eigenvalues off) turns a unit "
                   "box, cylinder (along y) or sphere into the body");
        free(axes);
        /* XDMF 3 readers make cells only from an explicit connectivity. */
        SCALAR(i32[i] = (int32_t)(off + i));
        dset_write(f, g, "vertex", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
                   "the row number: the connectivity of one vertex cell per particle (XDMF)");
    }
    SCALAR(i32[i] = p->material[order[i]]);
    dset_write(f, g, "material", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
               "material index (see the configuration's Materials block)");
    SCALAR(i32[i] = f->rank);
    dset_write(f, g, "owner_rank", H5T_NATIVE_INT32, 1, n, off, N, i32, "1",
               "rank that owned the particle when the file was written");
    SCALAR(buf[i] = p->inv_mass[order[i]] > 0.0 ? 1.0 / p->inv_mass[order[i]] : 0.0);
    dset_write(f, g, "mass", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "kg", "mass (0: infinite)");
    if (full) {
        SCALAR(buf[i] = p->inv_mass[order[i]]);
        dset_write(f, g, "inverse_mass", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "1/kg",
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
            h5_local(f, GF_ERROR(GF_ERR_STATE, "ghost lists of %zu particles for %zu",
                                 sim->ghost_nref, n));
        for (size_t i = 0; packing(f) && sim->ghost_nref == n && i < n; ++i)
            for (int c = 0; c < 3; ++c)
                buf[3 * i + c] = sim->ghost_ref[c][order[i]];
        dset_write(f, g, "ghost_reference", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "m",
                   "position when the ghost lists were last built (Domain.ghost_skin_fraction): "
                   "a restart on the same layout builds the same lists from it");
        attr_write(f, g, "ghost_range", H5T_NATIVE_DOUBLE, 1, &sim->ghost_range);
    }
#undef VEC
#undef SCALAR
    /* Where each rank's rows start: the index for finding a particle by id. */
    write_rank_offsets(f, g, offset, global);
    if (f->st == GF_OK)
        attr_string(f, g, "order",
                    full ? "in memory order within each rank"
                         : "sorted by id within each rank's rows");
    if (g >= 0)
        H5Gclose(g);
    free(order);
    free(buf);
    free(ibuf);
    free(i32);
}

static void write_contacts(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_contacts *c = &sim->contacts;
    size_t n = c->count;
    int64_t offset = 0, global = 0;
    h5_local(f, row_range(sim, n, &offset, &global));
    size_t na = f->counting ? 0 : n;
    int64_t *ids = gf_malloc(2 * na + 1, sizeof *ids);
    double *buf = gf_malloc(6 * na + 1, sizeof *buf);
    if (!ids || !buf)
        h5_local(f, gf_error_status());
    hid_t g = -1;
    if (h5_agree(f) == GF_OK) {
        g = group_create(f, "contacts");
        for (size_t j = 0; j < na; ++j) {
            ids[2 * j] = c->id1[j];
            ids[2 * j + 1] = c->id2[j];
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    dset_write(f, g, "pair", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
               "global ids of the two particles (a wall k is -1 - k)");
    if (packing(f))
        for (size_t j = 0; j < n; ++j)
            buf[j] = c->lambda[0][j];
    dset_write(f, g, "normal_impulse", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "N s",
               "impulse along the normal of the last step");
    if (packing(f))
        for (size_t j = 0; j < n; ++j)
            for (int d = 0; d < 3; ++d)
                buf[3 * j + d] = c->lambda[1][j] * c->t[d][j] + c->lambda[2][j] * c->o[d][j];
    dset_write(f, g, "tangential_impulse", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "N s",
               "friction impulse of the last step on the first body (world frame)");
    if (packing(f))
        for (size_t j = 0; j < n; ++j)
            buf[j] = c->gap[j];
    dset_write(f, g, "gap", H5T_NATIVE_DOUBLE, 1, n, off, N, buf, "m",
               "signed distance at detection (negative: penetration)");
    if (packing(f))
        for (size_t j = 0; j < n; ++j)
            for (int d = 0; d < 3; ++d)
                buf[3 * j + d] = c->n[d][j];
    dset_write(f, g, "normal", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "1",
               "unit normal, from the second body towards the first");
    /* Force chains, where detection kept the contact points (the output asks for them): a
     * line per contact between the two bodies' centres as they stood at detection (the contact
     * point less each lever arm; the arrays have been redistributed since), or to the contact
     * point on a wall or obstacle; two points per contact. The same on every rank. */
    if (c->keep_points) {
        if (packing(f))
            for (size_t j = 0; j < n; ++j)
                for (int d = 0; d < 3; ++d) {
                    buf[6 * j + d] = c->cp[d][j] - c->r1[d][j];
                    buf[6 * j + 3 + d] = c->cp[d][j] - (c->i2[j] >= 0 ? c->r2[d][j] : 0.0);
                }
        dset_write(f, g, "position", H5T_NATIVE_DOUBLE, 3, 2 * n, 2 * off, 2 * N, buf, "m",
                   "ends of each contact's line: the two bodies' centres at detection (the second "
                   "end on a wall or obstacle: the contact point)");
        if (packing(f))
            for (size_t j = 0; j < 2 * n; ++j)
                ids[j] = (int64_t)(2 * off + j);
        dset_write(f, g, "vertex", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
                   "the connectivity of each contact's line (XDMF)");
    }
    if (g >= 0)
        H5Gclose(g);
    free(ids);
    free(buf);
}

static void write_warmstart(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_warmstart *ws = &sim->warm;
    size_t n = ws->n;
    int64_t offset = 0, global = 0;
    h5_local(f, row_range(sim, n, &offset, &global));
    size_t na = f->counting ? 0 : n;
    int64_t *ids = gf_malloc(2 * na + 1, sizeof *ids);
    double *buf = gf_malloc(6 * na + 1, sizeof *buf);
    if (!ids || !buf)
        h5_local(f, gf_error_status());
    hid_t g = -1;
    if (h5_agree(f) == GF_OK) {
        g = group_create(f, "warmstart");
        for (size_t k = 0; k < na; ++k) {
            ids[2 * k] = ws->a[k];
            ids[2 * k + 1] = ws->b[k];
            for (int d = 0; d < 3; ++d)
                buf[3 * k + d] = ws->l[d][k];
        }
    }
    size_t N = (size_t)global, off = (size_t)offset;
    dset_write(f, g, "pair", H5T_NATIVE_INT64, 2, n, off, N, ids, "1",
               "the contact's key: (smaller id, larger id) or (id, -1 - wall)");
    dset_write(f, g, "point", H5T_NATIVE_INT32, 1, n, off, N, ws->pt, "1",
               "the point of the pair's contact manifold (0 for spheres)");
    dset_write(f, g, "impulse", H5T_NATIVE_DOUBLE, 3, n, off, N, buf, "N s",
               "world-frame impulse on the first particle of the pair");
    write_rank_offsets(f, g, offset, global);
    if (g >= 0)
        H5Gclose(g);
    free(ids);
    free(buf);
}

/* The positions of the obstacles as /state stores them: each box's min and max corners, then
 * each cylinder's centre. Returns their number. */
static int obstacle_positions(const gf_walls *w, double *buf) {
    int n = 0;
    for (size_t b = 0; b < w->nbox; ++b) {
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->box_lo[b][d];
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->box_hi[b][d];
    }
    for (size_t c = 0; c < w->ncyl; ++c)
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->cyl_centre[c][d];
    return n;
}

static void set_obstacle_positions(gf_walls *w, const double *buf) {
    int n = 0;
    for (size_t b = 0; b < w->nbox; ++b) {
        for (int d = 0; d < 3; ++d)
            w->box_lo[b][d] = buf[n++];
        for (int d = 0; d < 3; ++d)
            w->box_hi[b][d] = buf[n++];
    }
    for (size_t c = 0; c < w->ncyl; ++c)
        for (int d = 0; d < 3; ++d)
            w->cyl_centre[c][d] = buf[n++];
}

/* The run's counters and the wall and obstacle positions (/state). */
static void write_state(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    /* Deletions not yet accounted globally are settled here. */
    int64_t deleted = sim->deleted_local;
    double deleted_mass = sim->deleted_mass_local;
    if (sim->par) {
        h5_local(f, gf_par_allreduce_i64(sim->par, &deleted, 1, GF_PAR_SUM));
        h5_local(f, gf_par_allreduce_double(sim->par, &deleted_mass, 1, GF_PAR_SUM));
    }
    int64_t outlet_n[GF_MAX_OUTLETS];
    double outlet_m[GF_MAX_OUTLETS];
    h5_local(f, gf_outlets_totals(&sim->outlets, sim->par, outlet_n, outlet_m));
    hid_t g = group_create(f, "state");
    long long v[2] = {sim->next_id, sim->expected_particles - deleted};
    long long created = sim->created_inflow;
    /* The run's totals, so statistics continue across a restart. */
    attr_write(f, g, "created_inflow", H5T_NATIVE_LLONG, 1, &created);
    attr_write(f, g, "deleted_mass", H5T_NATIVE_DOUBLE, 1, &deleted_mass);
    long long layers = sim->inflow.layers;
    attr_write(f, g, "inflow_layers", H5T_NATIVE_LLONG, 1, &layers);
    attr_write(f, g, "inflow_moved", H5T_NATIVE_DOUBLE, 1, &sim->inflow.moved);
    /* Insertions and outlets continue their counts (and an insertion its random streams). */
    const gf_inserts *ins = &sim->inserts;
    if (ins->count > 0) {
        long long cnt[3][GF_MAX_INSERTS];
        double qty[2][GF_MAX_INSERTS];
        for (int k = 0; k < ins->count; ++k) {
            cnt[0][k] = ins->item[k].inserted;
            cnt[1][k] = ins->item[k].events;
            cnt[2][k] = ins->item[k].carried;
            qty[0][k] = ins->item[k].quantity;
            qty[1][k] = ins->item[k].mass;
        }
        attr_write(f, g, "insert_inserted", H5T_NATIVE_LLONG, ins->count, cnt[0]);
        attr_write(f, g, "insert_events", H5T_NATIVE_LLONG, ins->count, cnt[1]);
        attr_write(f, g, "insert_carried", H5T_NATIVE_LLONG, ins->count, cnt[2]);
        attr_write(f, g, "insert_quantity", H5T_NATIVE_DOUBLE, ins->count, qty[0]);
        attr_write(f, g, "insert_mass", H5T_NATIVE_DOUBLE, ins->count, qty[1]);
    }
    if (sim->outlets.count > 0) {
        long long on[GF_MAX_OUTLETS];
        for (int k = 0; k < sim->outlets.count; ++k)
            on[k] = outlet_n[k];
        attr_write(f, g, "outlet_particles", H5T_NATIVE_LLONG, sim->outlets.count, on);
        attr_write(f, g, "outlet_mass", H5T_NATIVE_DOUBLE, sim->outlets.count, outlet_m);
    }
    attr_write(f, g, "next_id", H5T_NATIVE_LLONG, 1, &v[0]);
    attr_write(f, g, "expected_particles", H5T_NATIVE_LLONG, 1, &v[1]);
    int nw = (int)sim->walls.count;
    attr_write(f, g, "wall_count", H5T_NATIVE_INT, 1, &nw);
    if (nw > 0)
        attr_write(f, g, "wall_points", H5T_NATIVE_DOUBLE, 3 * nw, sim->walls.point);
    int nm = (int)sim->walls.nmesh;
    if (nm > 0) {
        /* Each mesh's pose: its pivot's position and its orientation. */
        double pose[7 * GF_MAX_MESHES];
        for (int k = 0; k < nm; ++k) {
            memcpy(&pose[7 * k], sim->walls.mesh_x[k], 3 * sizeof *pose);
            memcpy(&pose[7 * k + 3], sim->walls.mesh_q[k], 4 * sizeof *pose);
        }
        attr_write(f, g, "mesh_poses", H5T_NATIVE_DOUBLE, 7 * nm, pose);
    }
    /* Obstacles move too when they have a velocity or a schedule. */
    double obs[6 * GF_MAX_OBSTACLES + 3 * GF_MAX_OBSTACLES];
    int nobs = obstacle_positions(&sim->walls, obs);
    if (nobs > 0)
        attr_write(f, g, "obstacle_positions", H5T_NATIVE_DOUBLE, nobs, obs);
    if (g >= 0)
        H5Gclose(g);
    h5_agree(f);
}

typedef void (*file_writer)(h5file *f, const gf_output *o, const gf_sim *sim);

/* The cells of /geometry this rank writes (gf_geometry_mesh_build_share) and their offsets and
 * totals over the ranks (points, cells, connectivity). Collective. */
static gf_status geometry_share(const gf_sim *sim, gf_geometry_mesh *m, int64_t off[3],
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
static void write_geometry(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    int64_t off[3], total[3];
    gf_status st = geometry_share(sim, &m, off, total);
    if (st != GF_OK) {
        /* Collective already: every rank has the same failure. */
        f->st = st;
        gf_geometry_mesh_free(&m);
        return;
    }
    double *vel = gf_malloc(3 * m.ncells + 1, sizeof *vel);
    if (!vel)
        h5_local(f, gf_error_status());
    if (h5_agree(f) != GF_OK || total[1] == 0) {
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
    hid_t g = group_create(f, "geometry");
    dset_write(f, g, "position", H5T_NATIVE_DOUBLE, 3, m.npoints, (size_t)off[0], (size_t)total[0],
               m.points, "m", "mesh points of the walls (clipped to the box) and obstacles");
    dset_write(f, g, "topology", H5T_NATIVE_INT64, 1, m.nconn, (size_t)off[2], (size_t)total[2],
               m.conn, "1",
               "XDMF mixed topology: per cell its type (3 polygon, 5 quadrilateral, 9 "
               "hexahedron), for polygons the number of points, then the point indices");
    dset_write(f, g, "kind", H5T_NATIVE_INT32, 1, m.ncells, (size_t)off[1], (size_t)total[1],
               m.kind, "1", "per cell: 0 wall, 1 box, 2 cylinder");
    char desc[160];
    snprintf(desc, sizeof desc,
             "per cell: the wall index, %d + box index, %d + cylinder index (as in contacts)",
             GF_BOX_BASE, GF_CYL_BASE);
    dset_write(f, g, "body", H5T_NATIVE_INT32, 1, m.ncells, (size_t)off[1], (size_t)total[1],
               m.body, "1", desc);
    dset_write(f, g, "velocity", H5T_NATIVE_DOUBLE, 3, m.ncells, (size_t)off[1], (size_t)total[1],
               vel, "m/s", "per cell: the velocity of its wall or obstacle");
    if (g >= 0)
        H5Gclose(g);
    gf_geometry_mesh_free(&m);
    free(vel);
}

/* The material table: names, densities and the friction of every pair (rank 0's rows). */
static void write_materials(h5file *f, const gf_sim *sim) {
    if (f->st != GF_OK)
        return;
    const gf_materials *m = &sim->materials;
    size_t nm = (size_t)m->count, mine = f->rank == 0 ? nm : 0;
    hid_t g = group_create(f, "materials");
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, GF_NAME_LEN);
    dset_write(f, g, "name", str, 1, mine, 0, nm, m->name, NULL,
               "material names, in the order of the indices of /particles/material");
    H5Tclose(str);
    dset_write(f, g, "density", H5T_NATIVE_DOUBLE, 1, mine, 0, nm, m->density, "kg/m^3",
               "density of each material");
    double fr[GF_MAX_MATERIALS * GF_MAX_MATERIALS];
    for (size_t a = 0; a < nm; ++a)
        for (size_t b = 0; b < nm; ++b)
            fr[a * nm + b] = m->friction[a][b];
    dset_write(f, g, "friction", H5T_NATIVE_DOUBLE, (int)(nm > 0 ? nm : 1), mine, 0, nm, fr, "1",
               "friction coefficient of each pair of materials (symmetric)");
    if (g >= 0)
        H5Gclose(g);
}

static void snapshot_body(h5file *f, const gf_output *o, const gf_sim *sim) {
    int64_t n = 0;
    write_particles(f, sim, 0, &n);
    write_clump_members(f, sim);
    write_materials(f, sim);
    write_geometry(f, sim);
    header(f, sim, n, FORMAT_SNAPSHOT, o ? o->config_text : NULL);
    if (o && o->contacts)
        write_contacts(f, sim);
}

static void checkpoint_body(h5file *f, const gf_output *o, const gf_sim *sim) {
    int64_t n = 0;
    write_particles(f, sim, 1, &n);
    header(f, sim, n, FORMAT_CHECKPOINT, o ? o->config_text : NULL);
    write_warmstart(f, sim);
    write_state(f, sim);
}

/* Collective: the bytes `body` will write, from a pass that writes nothing, with room for the
 * superblock, the groups and HDF5's free-space slack. */
static gf_status layout_bytes(file_writer body, const gf_output *o, const gf_sim *sim,
                              double *bytes) {
    h5file f;
    h5file_init(&f, sim, "");
    f.counting = 1;
    body(&f, o, sim);
    *bytes = 1.05 * f.bytes + 65536.0;
    return h5_agree(&f);
}

/* Rank 0 reserves the file's space before anything is written. A full disk or an exhausted
 * quota is then found here, where every rank agrees on it, and not in HDF5's collective flush
 * at close, where the failing rank leaves the others waiting inside HDF5 for good. */
static void reserve(h5file *f, double bytes) {
    if (f->st == GF_OK && f->rank == 0) {
        int fd = open(f->path, O_WRONLY);
        int rc = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
        if (fd >= 0 && close(fd) != 0 && rc == 0)
            rc = errno;
        /* A file system that cannot reserve space is written without reservation. */
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
            H5_FAIL(f, "cannot reserve %.0f bytes for '%s': %s", bytes, f->path, strerror(rc));
    }
    h5_agree(f);
}

/* Rank 0, after the parallel close: opening the file once more with the serial driver checks that
 * it is complete, and closing it gives back the space reserved beyond its end. */
static gf_status read_back(const char *path) {
    hid_t file = serial_open(path, H5F_ACC_RDWR);
    if (file < 0 || H5Fclose(file) < 0)
        return GF_ERROR(GF_ERR_IO, "'%s' cannot be read back after writing it", path);
    return GF_OK;
}

/* Collective: writes `path` with `body`; a failed file is removed. */
static gf_status write_file(file_writer body, const gf_output *o, const gf_sim *sim,
                            const char *path) {
    double bytes = 0.0;
    GF_TRY(layout_bytes(body, o, sim, &bytes));
    h5file f;
    GF_TRY(h5_open(&f, sim, path, 1));
    reserve(&f, bytes);
    body(&f, o, sim);
    gf_status st = h5_close(&f);
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

/* ------------------------------------------------------------------------------------------ */
/* Reading a checkpoint                                                                       */

/* Checks the "format" attribute (local: the caller agrees). */
static void check_format(h5file *f, const char *want, const char *what) {
    char format[64] = "";
    attr_read_string(f, f->file, "format", format, sizeof format);
    if (f->local == GF_OK && strcmp(format, want) != 0)
        H5_FAIL(f, "'%s' is a '%s' file, not a granflow %s ('%s')", f->path, format, what, want);
}

gf_status gf_io_read_configuration(const gf_sim *sim, const char *path, char **text) {
    *text = NULL;
    h5file f;
    GF_TRY(h5_open(&f, sim, path, 0));
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
        h5_local(&f, gf_error_status());
    if (h5_agree(&f) == GF_OK && present) {
        if (str >= 0)
            dset_read(&f, f.file, "configuration", str, 1, 1, 0, 1, *text);
        else
            dset_read(&f, f.file, "configuration", H5T_NATIVE_CHAR, 1, len, 0, len, *text);
    }
    if (str >= 0)
        H5Tclose(str);
    if (*text)
        (*text)[f.st == GF_OK ? len : 0] = '\0';
    gf_status st = h5_close(&f);
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

static void read_header(h5file *f, const gf_sim *sim, ckpt_header *h) {
    memset(h, 0, sizeof *h);
    check_format(f, FORMAT_CHECKPOINT, "checkpoint");
    attr_read(f, f->file, "particle_count", H5T_NATIVE_LLONG, 1, &h->count);
    attr_read(f, f->file, "step", H5T_NATIVE_LLONG, 1, &h->step);
    attr_read(f, f->file, "time", H5T_NATIVE_DOUBLE, 1, &h->time);
    attr_read(f, f->file, "rank_count", H5T_NATIVE_INT, 1, &h->nranks);
    attr_read(f, f->file, "decomposition", H5T_NATIVE_INT, 3, h->dims);
    attr_read(f, f->file, "box_min", H5T_NATIVE_DOUBLE, 3, h->lo);
    attr_read(f, f->file, "box_max", H5T_NATIVE_DOUBLE, 3, h->hi);
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
    h5_agree(f);
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
static void read_particle_rows(h5file *f, hid_t g, size_t first, size_t n, size_t N, int inverse,
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
        h5_local(f, gf_error_status());
    h5_agree(f);
    dset_read(f, g, "id", H5T_NATIVE_INT64, 1, n, first, N, p->id);
    dset_read(f, g, "position", H5T_NATIVE_DOUBLE, 3, n, first, N, p->x);
    dset_read(f, g, "velocity", H5T_NATIVE_DOUBLE, 3, n, first, N, p->v);
    dset_read(f, g, "angular_velocity", H5T_NATIVE_DOUBLE, 3, n, first, N, p->w);
    dset_read(f, g, "orientation", H5T_NATIVE_DOUBLE, 4, n, first, N, p->q);
    dset_read(f, g, "radius", H5T_NATIVE_DOUBLE, 1, n, first, N, p->r);
    if (inverse) {
        dset_read(f, g, "inverse_mass", H5T_NATIVE_DOUBLE, 1, n, first, N, p->im);
        dset_read(f, g, "inverse_inertia", H5T_NATIVE_DOUBLE, 3, n, first, N, p->ii);
    } else {
        dset_read(f, g, "mass", H5T_NATIVE_DOUBLE, 1, n, first, N, p->mass);
    }
    dset_read(f, g, "material", H5T_NATIVE_INT32, 1, n, first, N, p->mat);
    /* Checkpoints before granflow 0.2 hold spheres only, of the radius read. */
    if (f->st == GF_OK && H5Lexists(g, "shape", H5P_DEFAULT) > 0) {
        dset_read(f, g, "shape", H5T_NATIVE_INT32, 1, n, first, N, p->shape);
        dset_read(f, g, "dimensions", H5T_NATIVE_DOUBLE, 3, n, first, N, p->dim);
        dset_read(f, g, "clump", H5T_NATIVE_INT32, 1, n, first, N, p->clump);
    } else if (f->st == GF_OK) {
        for (size_t i = 0; i < n; ++i) {
            p->dim[3 * i] = p->r[i];
            p->clump[i] = -1;
        }
    }
}

/* The counters and wall positions of /state (local reads: the caller agrees). */
typedef struct {
    long long next_id, expected, layers, created;
    double moved, deleted_mass;
    long long insert[3][GF_MAX_INSERTS];  /* inserted, events, carried */
    double insert_qty[2][GF_MAX_INSERTS]; /* quantity, mass */
    long long outlet_n[GF_MAX_OUTLETS];
    double outlet_m[GF_MAX_OUTLETS];
} ckpt_state;

static void read_state(h5file *f, gf_sim *sim, ckpt_state *s) {
    memset(s, 0, sizeof *s);
    hid_t sg = group_open(f, "state");
    int nw = 0;
    attr_read(f, sg, "next_id", H5T_NATIVE_LLONG, 1, &s->next_id);
    attr_read(f, sg, "expected_particles", H5T_NATIVE_LLONG, 1, &s->expected);
    attr_read(f, sg, "wall_count", H5T_NATIVE_INT, 1, &nw);
    attr_read(f, sg, "created_inflow", H5T_NATIVE_LLONG, 1, &s->created);
    attr_read(f, sg, "deleted_mass", H5T_NATIVE_DOUBLE, 1, &s->deleted_mass);
    attr_read(f, sg, "inflow_layers", H5T_NATIVE_LLONG, 1, &s->layers);
    attr_read(f, sg, "inflow_moved", H5T_NATIVE_DOUBLE, 1, &s->moved);
    int ni = sim->inserts.count, no = sim->outlets.count;
    if (ni > 0) {
        attr_read(f, sg, "insert_inserted", H5T_NATIVE_LLONG, ni, s->insert[0]);
        attr_read(f, sg, "insert_events", H5T_NATIVE_LLONG, ni, s->insert[1]);
        attr_read(f, sg, "insert_carried", H5T_NATIVE_LLONG, ni, s->insert[2]);
        attr_read(f, sg, "insert_quantity", H5T_NATIVE_DOUBLE, ni, s->insert_qty[0]);
        attr_read(f, sg, "insert_mass", H5T_NATIVE_DOUBLE, ni, s->insert_qty[1]);
    }
    if (no > 0) {
        attr_read(f, sg, "outlet_particles", H5T_NATIVE_LLONG, no, s->outlet_n);
        attr_read(f, sg, "outlet_mass", H5T_NATIVE_DOUBLE, no, s->outlet_m);
    }
    if (f->local == GF_OK && f->st == GF_OK && nw != (int)sim->walls.count)
        H5_FAIL(f, "'%s' has %d walls, the configuration %zu", f->path, nw, sim->walls.count);
    if (nw > 0)
        attr_read(f, sg, "wall_points", H5T_NATIVE_DOUBLE, 3 * nw, sim->walls.point);
    int nm = (int)sim->walls.nmesh;
    if (nm > 0) {
        double pose[7 * GF_MAX_MESHES];
        attr_read(f, sg, "mesh_poses", H5T_NATIVE_DOUBLE, 7 * nm, pose);
        for (int k = 0; k < nm && f->local == GF_OK && f->st == GF_OK; ++k) {
            memcpy(sim->walls.mesh_x[k], &pose[7 * k], 3 * sizeof *pose);
            memcpy(sim->walls.mesh_q[k], &pose[7 * k + 3], 4 * sizeof *pose);
        }
    }
    /* Checkpoints from before moving obstacles have none: theirs stayed where configured. */
    double obs[6 * GF_MAX_OBSTACLES + 3 * GF_MAX_OBSTACLES];
    int nobs = obstacle_positions(&sim->walls, obs);
    if (nobs > 0 && sg >= 0 && f->st == GF_OK && f->local == GF_OK &&
        H5Aexists(sg, "obstacle_positions") > 0) {
        attr_read(f, sg, "obstacle_positions", H5T_NATIVE_DOUBLE, nobs, obs);
        if (f->st == GF_OK && f->local == GF_OK)
            set_obstacle_positions(&sim->walls, obs);
    }
    if (sg >= 0)
        H5Gclose(sg);
    h5_agree(f);
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
    h5file f;
    GF_TRY(h5_open(&f, sim, path, 0));
    char format[64] = "";
    attr_read_string(&f, f.file, "format", format, sizeof format);
    if (f.local == GF_OK && strcmp(format, FORMAT_SNAPSHOT) != 0 &&
        strcmp(format, FORMAT_CHECKPOINT) != 0)
        H5_FAIL(&f, "'%s' is a '%s' file, not a granflow snapshot or checkpoint", path, format);
    long long count = 0;
    attr_read(&f, f.file, "particle_count", H5T_NATIVE_LLONG, 1, &count);
    if (f.local == GF_OK && count < 0)
        H5_FAIL(&f, "'%s' has a negative particle_count %lld", path, count);
    hid_t g = group_open(&f, "particles");
    h5_agree(&f);
    /* An even slab of rows per rank, whatever the rank count that wrote the file. */
    size_t N = f.st == GF_OK ? (size_t)count : 0;
    size_t first = N * (size_t)f.rank / (size_t)f.size;
    size_t rows_n = N * (size_t)(f.rank + 1) / (size_t)f.size - first;
    particle_rows rows;
    read_particle_rows(&f, g, first, rows_n, N, 0, &rows);
    if (g >= 0)
        H5Gclose(g);
    gf_status st = h5_close(&f);
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
        qsort(ids, nl, sizeof *ids, cmp_i64); /* for membership tests */
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
static void read_cuts(h5file *f, gf_sim *sim) {
    gf_decomp *d = &sim->xch.decomp;
    for (int a = 0; a < 3 && f->st == GF_OK && f->local == GF_OK; ++a) {
        htri_t has = H5Aexists(f->file, cut_names[a]);
        if (has < 0)
            H5_FAIL(f, "reading the attributes of '%s' failed", f->path);
        if (has <= 0)
            continue;
        double *cuts = gf_malloc((size_t)d->dims[a] + 1, sizeof *cuts);
        if (!cuts) {
            h5_local(f, gf_error_status());
            return;
        }
        attr_read(f, f->file, cut_names[a], H5T_NATIVE_DOUBLE, d->dims[a] + 1, cuts);
        if (f->local == GF_OK)
            h5_local(f, gf_error_context(gf_decomp_set_cuts(d, a, cuts),
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
    h5file f;
    GF_TRY(h5_open(&f, sim, path, 0));
    ckpt_header h;
    read_header(&f, sim, &h);
    int nranks = f.st == GF_OK ? h.nranks : 0;
    int64_t *offs = gf_malloc((size_t)nranks + 2, sizeof *offs);
    int64_t *woffs = gf_malloc((size_t)nranks + 2, sizeof *woffs);
    if (!offs || !woffs)
        h5_local(&f, gf_error_status());
    hid_t g = group_open(&f, "particles");
    h5_agree(&f);
    read_rank_offsets(&f, g, nranks, h.count, offs);
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
        attr_read(&f, g, "ghost_range", H5T_NATIVE_DOUBLE, 1, &ghost_range);
        ghost_ref = gf_malloc(3 * n + 1, sizeof *ghost_ref);
        if (!ghost_ref)
            h5_local(&f, gf_error_status());
        h5_agree(&f);
        dset_read(&f, g, "ghost_reference", H5T_NATIVE_DOUBLE, 3, n, first, N, ghost_ref);
        int finite = isfinite(ghost_range) && ghost_range > 0.0;
        for (size_t i = 0; f.st == GF_OK && i < 3 * n; ++i)
            finite = finite && isfinite(ghost_ref[i]);
        if (f.st == GF_OK && !finite)
            h5_local(&f, GF_ERROR(GF_ERR_INPUT,
                                  "'%s': the ghost lists' range (%g m) is not positive or a "
                                  "position they were chosen from is not finite (a damaged "
                                  "checkpoint?)",
                                  path, ghost_range));
        h5_agree(&f);
    }
    if (g >= 0)
        H5Gclose(g);

    /* Warm-start entries: a rank's own group on an unchanged layout, else every entry (each rank
     * keeps those of its particles). */
    hid_t wg = group_open(&f, "warmstart");
    h5_agree(&f);
    read_rank_offsets(&f, wg, nranks, -1, woffs);
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
        h5_local(&f, gf_error_status());
    h5_agree(&f);
    dset_read(&f, wg, "pair", H5T_NATIVE_INT64, 2, wn, wfirst, (size_t)wN, wpair);
    /* Checkpoints of spheres only (before granflow 0.2) have one point per pair. */
    if (f.st == GF_OK && H5Lexists(wg, "point", H5P_DEFAULT) > 0)
        dset_read(&f, wg, "point", H5T_NATIVE_INT32, 1, wn, wfirst, (size_t)wN, wpoint);
    dset_read(&f, wg, "impulse", H5T_NATIVE_DOUBLE, 3, wn, wfirst, (size_t)wN, wimp);
    if (wg >= 0)
        H5Gclose(wg);
    ckpt_state s;
    read_state(&f, sim, &s);
    st = h5_close(&f);

    if (st == GF_OK)
        st = place_particles(sim, &rows, same, path, (int64_t)s.next_id);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    if (st == GF_OK)
        st = gf_io_check_unique_ids(sim, path, " (a damaged checkpoint?)");
    if (st == GF_OK)
        st = place_warmstart(sim, wn, wpair, wpoint, wimp, same);
    if (st == GF_OK && ghost_ref)
        st = gf_sim_restore_ghost_lists(sim, ghost_ref, ghost_range);
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
    sim->next_id = s.next_id;
    sim->expected_particles = s.expected;
    sim->deleted_local = 0;
    sim->created_inflow = s.created;
    /* Only the sum over ranks means anything: rank 0 carries it. */
    sim->deleted_mass_local = !sim->par || sim->par->rank == 0 ? s.deleted_mass : 0.0;
    sim->inflow.layers = (long)s.layers;
    sim->inflow.moved = s.moved;
    for (int k = 0; k < sim->inserts.count; ++k) {
        gf_insertion *in = &sim->inserts.item[k];
        in->inserted = s.insert[0][k];
        in->events = s.insert[1][k];
        in->carried = s.insert[2][k];
        in->quantity = s.insert_qty[0][k];
        in->mass = s.insert_qty[1][k];
    }
    for (int k = 0; k < sim->outlets.count; ++k) {
        int root = !sim->par || sim->par->rank == 0;
        sim->outlets.item[k].count_local = root ? s.outlet_n[k] : 0;
        sim->outlets.item[k].mass_local = root ? s.outlet_m[k] : 0.0;
    }
    sim->ghosts_ready = 0;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* XDMF and the output schedule                                                               */

/* s with the characters XML reserves written as entities (a prefix may hold any of them). */
static void xml_escape(const char *s, char *out, size_t size) {
    size_t n = 0;
    for (; *s && n + 7 < size; ++s) {
        const char *e = *s == '&'    ? "&amp;"
                        : *s == '<'  ? "&lt;"
                        : *s == '>'  ? "&gt;"
                        : *s == '"'  ? "&quot;"
                        : *s == '\'' ? "&apos;"
                                     : NULL;
        if (e) {
            memcpy(out + n, e, strlen(e));
            n += strlen(e);
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* One attribute of a point grid. */
typedef struct {
    const char *name, *type; /* dataset, XDMF AttributeType */
    int ncols;
    const char *ntype; /* XDMF NumberType */
    int precision;
} xdmf_attr;

/* The attributes of a grid: datasets /group/name with `rows` rows, on its points ("Node") or
 * cells ("Cell"). */
static void xdmf_attributes(FILE *f, const char *file, const char *group, const char *center,
                            long long rows, const xdmf_attr *attrs, size_t nattrs) {
    for (size_t a = 0; a < nattrs; ++a) {
        fprintf(f, "    <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"%s\">\n",
                attrs[a].name, attrs[a].type, center);
        if (attrs[a].ncols > 1)
            fprintf(f, "     <DataItem Dimensions=\"%lld %d\"", rows, attrs[a].ncols);
        else
            fprintf(f, "     <DataItem Dimensions=\"%lld\"", rows);
        fprintf(f,
                " NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">%s:/%s/%s"
                "</DataItem>\n    </Attribute>\n",
                attrs[a].ntype, attrs[a].precision, file, group, attrs[a].name);
    }
}

/* One snapshot's point grid over the datasets of `group`: one vertex cell per row (explicit
 * connectivity, which the XDMF 3 reader needs), the positions and the attributes. */
static void xdmf_points(FILE *f, const char *file, const char *group, long long n, double t,
                        const xdmf_attr *attrs, size_t nattrs) {
    fprintf(f, "   <Grid Name=\"%s\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n", group,
            t);
    fprintf(f,
            "    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"1\">\n     <DataItem Dimensions=\"%lld\" NumberType=\"Int\" "
            "Precision=\"4\" Format=\"HDF\">%s:/%s/vertex</DataItem>\n    </Topology>\n",
            n, n, file, group);
    fprintf(f,
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/%s/position</DataItem>\n    </Geometry>\n",
            n, file, group);
    xdmf_attributes(f, file, group, "Node", n, attrs, nattrs);
    fprintf(f, "   </Grid>\n");
}

/* One snapshot's geometry mesh: mixed cells over /geometry, with cell attributes. */
static void xdmf_geometry(FILE *f, const char *file, const long long g[3], double t) {
    fprintf(f,
            "   <Grid Name=\"geometry\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n"
            "    <Topology TopologyType=\"Mixed\" NumberOfElements=\"%lld\">\n"
            "     <DataItem Dimensions=\"%lld\" NumberType=\"Int\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/topology</DataItem>\n    </Topology>\n"
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/position</DataItem>\n    </Geometry>\n",
            t, g[1], g[2], file, g[0], file);
    static const xdmf_attr cells[] = {{"kind", "Scalar", 1, "Int", 4},
                                      {"body", "Scalar", 1, "Int", 4},
                                      {"velocity", "Vector", 3, "Float", 8}};
    xdmf_attributes(f, file, "geometry", "Cell", g[1], cells, sizeof cells / sizeof *cells);
    fprintf(f, "   </Grid>\n");
}

/* One snapshot's contacts as lines (force chains) with their impulses as cell attributes. */
static void xdmf_contacts(FILE *f, const char *file, long long c, double t) {
    fprintf(f,
            "   <Grid Name=\"contacts\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n"
            "    <Topology TopologyType=\"Polyline\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"2\">\n     <DataItem Dimensions=\"%lld 2\" NumberType=\"Int\" "
            "Precision=\"8\" Format=\"HDF\">%s:/contacts/vertex</DataItem>\n    </Topology>\n"
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/contacts/position</DataItem>\n    </Geometry>\n",
            t, c, c, file, 2 * c, file);
    static const xdmf_attr cells[] = {{"normal_impulse", "Scalar", 1, "Float", 8},
                                      {"tangential_impulse", "Vector", 3, "Float", 8},
                                      {"normal", "Vector", 3, "Float", 8},
                                      {"gap", "Scalar", 1, "Float", 8}};
    xdmf_attributes(f, file, "contacts", "Cell", c, cells, sizeof cells / sizeof *cells);
    fprintf(f, "   </Grid>\n");
}

gf_status gf_io_write_xdmf(const gf_output *o) {
    char path[GF_IO_PATH + 160], tmp[GF_IO_PATH + 170];
    snprintf(path, sizeof path, "%s/%s.xmf", o->directory, o->prefix);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    fprintf(f, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
               "<Xdmf Version=\"3.0\">\n <Domain>\n");
    static const xdmf_attr bodies[] = {
        {"velocity", "Vector", 3, "Float", 8}, {"angular_velocity", "Vector", 3, "Float", 8},
        {"radius", "Scalar", 1, "Float", 8},   {"id", "Scalar", 1, "Int", 8},
        {"material", "Scalar", 1, "Int", 4},   {"owner_rank", "Scalar", 1, "Int", 4},
        {"shape", "Scalar", 1, "Int", 4},      {"dimensions", "Vector", 3, "Float", 8},
        {"axes", "Tensor", 9, "Float", 8}};
    static const xdmf_attr members[] = {{"radius", "Scalar", 1, "Float", 8},
                                        {"id", "Scalar", 1, "Int", 8}};
    /* A temporal collection each: the bodies, and the member spheres of clumps (at the steps
     * that have any), so that each is a block of its own for glyphs of its own. */
    /* The geometry (walls, boxes, cylinders) follows, where there is any. */
    int any[4] = {1, 0, 0, 0};
    for (size_t s = 0; s < o->nsnap; ++s) {
        any[1] |= o->snaps[s].members > 0;
        any[2] |= o->snaps[s].geometry[1] > 0;
        any[3] |= o->snaps[s].contacts > 0;
    }
    static const char *const collection[4] = {"particles", "clump_members", "geometry", "contacts"};
    for (int pass = 0; pass < 4; ++pass) {
        if (!any[pass])
            continue;
        fprintf(f, "  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
                collection[pass]);
        for (size_t s = 0; s < o->nsnap; ++s) {
            const gf_snapshot_entry *e = &o->snaps[s];
            char file[6 * sizeof e->file + 1];
            xml_escape(e->file, file, sizeof file);
            if (pass == 0)
                xdmf_points(f, file, "particles", e->particles, e->time, bodies,
                            sizeof bodies / sizeof *bodies);
            else if (pass == 1 && e->members > 0)
                xdmf_points(f, file, "clump_members", e->members, e->time, members,
                            sizeof members / sizeof *members);
            else if (pass == 2 && e->geometry[1] > 0)
                xdmf_geometry(f, file, e->geometry, e->time);
            else if (pass == 3 && e->contacts > 0)
                xdmf_contacts(f, file, e->contacts, e->time);
        }
        fprintf(f, "  </Grid>\n");
    }
    fprintf(f, " </Domain>\n</Xdmf>\n");
    /* A short write (a full disk) must not replace the previous file. */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return GF_OK;
}

static gf_status add_snapshot(gf_output *o, const gf_snapshot_entry *e) {
    /* The same file again (written anew) replaces its entry: each step is listed once. */
    if (o->nsnap > 0 && strcmp(o->snaps[o->nsnap - 1].file, e->file) == 0)
        o->nsnap--;
    if (o->nsnap == o->capsnap) {
        size_t cap = o->capsnap ? 2 * o->capsnap : 64;
        GF_TRY(gf_grow((void **)&o->snaps, cap, sizeof *o->snaps));
        o->capsnap = cap;
    }
    o->snaps[o->nsnap++] = *e;
    return GF_OK;
}

gf_status gf_io_mkdirs(const char *dir) {
    char buf[GF_IO_PATH];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; ++p) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0775) != 0 && errno != EEXIST)
                return GF_ERROR(GF_ERR_IO, "cannot create directory '%s': %s", buf,
                                strerror(errno));
            *p = c;
            if (c == '\0')
                return GF_OK;
        }
    }
}

static gf_status ensure_directory(const gf_sim *sim, const char *dir) {
    int rank = sim->par ? sim->par->rank : 0;
    gf_status st = rank == 0 ? gf_io_mkdirs(dir) : GF_OK;
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

/* Rank 0: the directory of a file that will be written exists (or is made) and takes a new
 * file. */
static gf_status probe_location(const char *file, const char *what) {
    char dir[GF_IO_PATH];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    GF_TRY(gf_error_context(gf_io_mkdirs(dir), "%s", what));
    char probe[GF_IO_PATH + 64];
    snprintf(probe, sizeof probe, "%s/.granflow_probe_%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "w");
    if (!f)
        return GF_ERROR(GF_ERR_IO, "%s: cannot write into the directory '%s': %s", what, dir,
                        strerror(errno));
    fclose(f);
    remove(probe);
    return GF_OK;
}

gf_status gf_output_check_locations(const gf_output *o, const gf_sim *sim, const char *stats_file) {
    gf_status st = GF_OK;
    if (!sim->par || sim->par->rank == 0) {
        char snap[GF_IO_PATH + 8];
        snprintf(snap, sizeof snap, "%s/x", o->directory);
        if (o->snapshot_every > 0)
            st = probe_location(snap, "Output.directory (snapshots)");
        if (st == GF_OK)
            st = probe_location(o->checkpoint, "Output.checkpoint");
        if (st == GF_OK && stats_file)
            st = probe_location(stats_file, "Statistics.file");
    }
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

static void snapshot_name(const gf_output *o, long step, char *name, size_t size) {
    snprintf(name, size, "%s_%09ld.h5", o->prefix, step);
}

static gf_status snapshot(gf_output *o, gf_sim *sim) {
    GF_TRY(ensure_directory(sim, o->directory));
    char name[256], path[GF_IO_PATH + 300];
    snapshot_name(o, sim->step, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", o->directory, name);
    GF_TRY(gf_io_write_snapshot(o, sim, path));
    int64_t n[3] = {(int64_t)sim->particles.n_local, (int64_t)clump_member_count(&sim->particles),
                    o->contacts && sim->contacts.keep_points ? (int64_t)sim->contacts.count : 0};
    if (sim->par)
        GF_TRY(gf_par_allreduce_i64(sim->par, n, 3, GF_PAR_SUM));
    /* The geometry's sizes: the ranks' shares together. */
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    int64_t goff[3], gtotal[3];
    gf_status st = geometry_share(sim, &m, goff, gtotal);
    gf_geometry_mesh_free(&m);
    GF_TRY(st);
    /* Rank 0 keeps the list and writes the XDMF file. */
    if (!sim->par || sim->par->rank == 0) {
        gf_snapshot_entry e = {
            .time = sim->time, .particles = n[0], .members = n[1], .contacts = n[2]};
        snprintf(e.file, sizeof e.file, "%s", name);
        if (gtotal[1] > 0) {
            e.geometry[0] = (long long)gtotal[0];
            e.geometry[1] = (long long)gtotal[1];
            e.geometry[2] = (long long)gtotal[2];
        }
        if (st == GF_OK)
            st = add_snapshot(o, &e);
        if (st == GF_OK)
            st = gf_io_write_xdmf(o);
    }
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

static gf_status checkpoint(gf_output *o, gf_sim *sim) {
    char dir[GF_IO_PATH];
    snprintf(dir, sizeof dir, "%s", o->checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        GF_TRY(ensure_directory(sim, dir));
    }
    GF_TRY(gf_io_write_checkpoint(o, sim, o->checkpoint));
    o->checkpoint_step = sim->step;
    return GF_OK;
}

gf_status gf_output_begin(gf_output *o, gf_sim *sim, int restarted) {
    /* Contacts drawn as lines need their points from detection. */
    sim->contacts.keep_points = o->contacts && o->snapshot_every > 0;
    gf_status st = GF_OK;
    /* Before the run's clock starts: the phases of the summary add up to its total. */
    if (!restarted && o->snapshot_every > 0 && sim->step == 0)
        st = snapshot(o, sim);
    /* The step time that plans the wall-limit checks counts stepping only: set-up and the
     * step-0 snapshot (seconds on a loaded machine) would make the first steps look slow and
     * stop the run at once. */
    o->loop_start = gf_wtime();
    o->first_step = sim->step;
    o->check_step = sim->step;
    o->check_elapsed = 0.0;
    o->next_check_step = sim->step + 1;
    return st;
}

/* Wall seconds between the collective checks of signals and the wall-time limit. */
#define GF_IO_CHECK_SECONDS 0.25
/* The least room kept before the wall-time limit beyond the steps to the next check: a loaded
 * machine can stall a process for a tenth of a second or more (ranks descheduled on shared
 * cores), which 2% of a short limit does not hold. */
#define GF_IO_LIMIT_MARGIN 0.25

gf_status gf_output_observe(gf_output *o, gf_sim *sim, int *stop) {
    *stop = 0;
    gf_timer_start(&sim->timers, GF_TIMER_OUTPUT);
    gf_status st = GF_OK;
    if (o->snapshot_every > 0 && sim->step % o->snapshot_every == 0)
        st = snapshot(o, sim);
    if (st == GF_OK && o->checkpoint_every > 0 && sim->step % o->checkpoint_every == 0)
        st = checkpoint(o, sim);
    /* Signals and the wall-time limit: one collective decision about every GF_IO_CHECK_SECONDS
     * of wall time, not every step (a reduction per step costs small steps dearly). The next
     * check's step comes from reduced figures, so every rank checks at the same step. */
    if (st != GF_OK || sim->step < o->next_check_step) {
        gf_timer_stop(&sim->timers, GF_TIMER_OUTPUT);
        return st;
    }
    double now = gf_wtime();
    long steps_done = sim->step - o->first_step;
    /* Elapsed since configuration (what the limit bounds) and since stepping began (what the
     * step time comes from), the slowest rank's. */
    double flags[3] = {checkpoint_requested ? 1.0 : 0.0, now - o->start, now - o->loop_start};
    if (sim->par)
        st = gf_par_allreduce_double(sim->par, flags, 3, GF_PAR_MAX);
    if (st == GF_OK) {
        /* The slower of the run's mean step and the steps since the last check: a machine
         * that gets busier must not outrun the limit between checks. */
        double per_step = steps_done > 0 ? flags[2] / (double)steps_done : 0.0;
        long recent = sim->step - o->check_step;
        if (recent > 0 && o->check_step > o->first_step)
            per_step = fmax(per_step, (flags[2] - o->check_elapsed) / (double)recent);
        o->check_step = sim->step;
        o->check_elapsed = flags[2];
        /* A short limit is checked more often: its margin (2%) is small beside a quarter
         * second of steps that may turn slower (a pour becomes ten times slower per step when
         * the particles land). */
        double seconds = GF_IO_CHECK_SECONDS;
        if (o->wall_limit > 0)
            seconds = fmin(seconds, 0.01 * o->wall_limit);
        double every = per_step > 0.0 ? floor(seconds / per_step) : 1.0;
        long interval = every < 1.0 ? 1 : (every > 1000.0 ? 1000 : (long)every);
        o->next_check_step = sim->step + interval;
        /* Leave room for the steps to the next check, a few more and the checkpoint itself. */
        double margin = fmax(0.02 * o->wall_limit, GF_IO_LIMIT_MARGIN);
        int near_limit = o->wall_limit > 0 &&
                         flags[1] + (double)(interval + 5) * per_step + margin >= o->wall_limit;
        if (flags[0] > 0 || near_limit) {
            st = checkpoint(o, sim);
            if (st == GF_OK) {
                gf_log_info("%s at step %ld (t = %.6e s, %.2f s of wall time): checkpoint "
                            "written to %s\nresume with: granflow <config> --restart %s",
                            flags[0] > 0 ? "signal received" : "wall-time limit near", sim->step,
                            sim->time, flags[1], o->checkpoint, o->checkpoint);
                *stop = 1;
            }
        }
    }
    gf_timer_stop(&sim->timers, GF_TIMER_OUTPUT);
    return st;
}

gf_status gf_output_finish(gf_output *o, gf_sim *sim) {
    if (sim->step == o->checkpoint_step)
        return GF_OK;
    /* Not timed: the run's timers (and its summary) ended with the last step. */
    gf_status st = checkpoint(o, sim);
    if (st == GF_OK)
        gf_log_info("final checkpoint at step %ld (t = %.6e s) written to %s\n"
                    "continue with: granflow <config> --restart %s -Time.steps=<last step>",
                    sim->step, sim->time, o->checkpoint, o->checkpoint);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Restart: the configuration check and the snapshot list                                     */

/* The step of a snapshot file name "<prefix>_<step>.h5", or -1. */
static long snapshot_step(const gf_output *o, const char *name) {
    size_t lp = strlen(o->prefix);
    if (strncmp(name, o->prefix, lp) != 0 || name[lp] != '_')
        return -1;
    const char *d = name + lp + 1, *e = d;
    while (*e >= '0' && *e <= '9')
        ++e;
    if (e - d < 9 || strcmp(e, ".h5") != 0)
        return -1;
    return strtol(d, NULL, 10);
}

typedef struct {
    long step;
    gf_snapshot_entry e;
} listed_snapshot;

static int cmp_listed(const void *a, const void *b) {
    const listed_snapshot *x = a, *y = b;
    return x->step < y->step ? -1 : (x->step > y->step);
}

/* Time and particle count of a snapshot (serial HDF5, rank 0); 0 if it is a readable granflow
 * snapshot. */
/* The first extent of dataset `name`, 0 if it is absent; -1 if it is not a dataset of one. */
static long long extent_of(hid_t f, const char *group, const char *name) {
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0)
        return 0;
    char path[128];
    snprintf(path, sizeof path, "%s/%s", group, name);
    hid_t d = H5Dopen(f, path, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dim[2] = {0, 0};
    long long n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) >= 1 &&
        H5Sget_simple_extent_dims(sp, dim, NULL) >= 0)
        n = (long long)dim[0];
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    return n;
}

static int snapshot_info(const char *path, gf_snapshot_entry *e) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
    char format[64] = "";
    int rc = -1;
    hid_t a = H5Aexists(f, "format") > 0 ? H5Aopen(f, "format", H5P_DEFAULT) : -1;
    if (a >= 0) {
        hid_t ty = H5Aget_type(a);
        size_t len = H5Tget_size(ty);
        if (H5Tget_class(ty) == H5T_STRING && len < sizeof format) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, len);
            if (H5Aread(a, mt, format) >= 0)
                format[len] = '\0';
            H5Tclose(mt);
        }
        H5Tclose(ty);
        H5Aclose(a);
    }
    if (strcmp(format, FORMAT_SNAPSHOT) == 0) {
        hid_t at = H5Aopen(f, "time", H5P_DEFAULT), ac = H5Aopen(f, "particle_count", H5P_DEFAULT);
        if (at >= 0 && ac >= 0 && H5Aread(at, H5T_NATIVE_DOUBLE, &e->time) >= 0 &&
            H5Aread(ac, H5T_NATIVE_LLONG, &e->particles) >= 0)
            rc = 0;
        if (at >= 0)
            H5Aclose(at);
        if (ac >= 0)
            H5Aclose(ac);
    }
    /* The member spheres of clumps and the geometry mesh: their extents, 0 without them. */
    e->members = rc == 0 ? extent_of(f, "clump_members", "radius") : 0;
    e->geometry[0] = rc == 0 ? extent_of(f, "geometry", "position") : 0;
    e->geometry[1] = rc == 0 ? extent_of(f, "geometry", "kind") : 0;
    e->geometry[2] = rc == 0 ? extent_of(f, "geometry", "topology") : 0;
    /* Contacts as lines only where the file has their ends (not before this version). */
    e->contacts =
        rc == 0 && extent_of(f, "contacts", "position") > 0 ? extent_of(f, "contacts", "gap") : 0;
    if (e->members < 0 || e->geometry[0] < 0 || e->geometry[1] < 0 || e->geometry[2] < 0 ||
        e->contacts < 0)
        rc = -1;
    H5Fclose(f);
    return rc;
}

/* Rank 0: the snapshot list of a restarted run, from the snapshot files in the output directory
 * up to the restart step (those after it are the interrupted run's, superseded: the restarted run
 * writes them again), in step order; then the XDMF file, if there is anything to list or a file
 * to correct. */
static gf_status rebuild_snapshot_list(gf_output *o, long step) {
    o->nsnap = 0;
    DIR *dir = opendir(o->directory);
    if (!dir)
        return GF_OK; /* no output yet */
    listed_snapshot *list = NULL;
    size_t n = 0, cap = 0;
    gf_status st = GF_OK;
    for (struct dirent *e = readdir(dir); e && st == GF_OK; e = readdir(dir)) {
        long s = snapshot_step(o, e->d_name);
        if (s < 0 || s > step || strlen(e->d_name) >= sizeof list[0].e.file)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            st = gf_grow((void **)&list, cap, sizeof *list);
            if (st != GF_OK)
                break;
        }
        char path[GF_IO_PATH + 300];
        snprintf(path, sizeof path, "%s/%s", o->directory, e->d_name);
        listed_snapshot *l = &list[n];
        memset(l, 0, sizeof *l);
        l->step = s;
        snprintf(l->e.file, sizeof l->e.file, "%s", e->d_name);
        if (snapshot_info(path, &l->e) == 0)
            n++;
        else
            gf_log_warn("%s is not a readable granflow snapshot: left out of %s.xmf", path,
                        o->prefix);
    }
    closedir(dir);
    if (n > 1)
        qsort(list, n, sizeof *list, cmp_listed);
    for (size_t k = 0; k < n && st == GF_OK; ++k)
        st = add_snapshot(o, &list[k].e);
    free(list);
    char xmf[GF_IO_PATH + 160];
    snprintf(xmf, sizeof xmf, "%s/%s.xmf", o->directory, o->prefix);
    if (st == GF_OK && (o->nsnap > 0 || access(xmf, F_OK) == 0))
        st = gf_io_write_xdmf(o);
    return st;
}

gf_status gf_output_restart(gf_output *o, gf_sim *sim, const char *path, int force) {
    int rank = sim->par ? sim->par->rank : 0;
    char *stored = NULL, *report = NULL;
    GF_TRY(gf_io_read_configuration(sim, path, &stored));
    int ndiff = 0;
    gf_status st = GF_OK;
    if (stored[0] == '\0') {
        if (rank == 0)
            gf_log_warn("'%s' records no configuration: it cannot be checked against this one",
                        path);
    } else {
        st = gf_config_compare(stored, o->config_text ? o->config_text : "", &report, &ndiff);
    }
    if (st == GF_OK && ndiff > 0) {
        if (!force)
            st = GF_ERROR(GF_ERR_INPUT,
                          "'%s' was written with a different configuration (restart with "
                          "--restart-force to continue anyway):\n%s",
                          path, report);
        else if (rank == 0)
            gf_log_warn("--restart-force: continuing from '%s', whose configuration differs:\n%s",
                        path, report);
    }
    free(stored);
    free(report);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    GF_TRY(st);
    GF_TRY(gf_io_read_checkpoint(sim, path));
    /* The state at this step is in a checkpoint already: the one just read. */
    o->checkpoint_step = sim->step;
    if (rank == 0)
        st = rebuild_snapshot_list(o, sim->step);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}
