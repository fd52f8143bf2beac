/* The HDF5 file layer of granflow's snapshots and checkpoints (module h5, below the simulation:
 * its writer and reader in io/ and the particle files of sim/ use it): a file
 * opened or created by every rank together through HDF5's MPI-IO driver, attributes, datasets
 * written and read in checksummed chunks by rows, and the agreement of all ranks on failures.
 * With the par module, the only place with MPI calls. */
#ifndef GF_H5_H5FILE_H
#define GF_H5_H5FILE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"
#include "par/par.h"
#include "core/state.h"

/* Datasets are written in chunks of about this size (each with its checksum). */
#define CHUNK_BYTES ((size_t)1 << 20)

/* Collective HDF5 calls (file open and close, dataset creation, reads and writes) must be entered
 * by every rank or by none. So a failure one rank meets alone (an allocation, a write error) is
 * only recorded in `local`; the helpers skip work only on `st`, the status all ranks agreed on
 * (gf_h5_agree), which every rank holds alike. Agreements come before each collective that depends
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
} gf_h5file;

/* Records this rank's failure (the first since the last agreement). */
#define H5_FAIL(f, ...)                                                                            \
    do {                                                                                           \
        if ((f)->st == GF_OK && (f)->local == GF_OK)                                               \
            (f)->local = GF_ERROR(GF_ERR_IO, __VA_ARGS__);                                         \
    } while (0)

/* Whether the writers fill their buffers: not in the layout pass, which only adds up sizes. */
static inline int gf_h5_packing(const gf_h5file *f) {
    return f->st == GF_OK && !f->counting;
}

void gf_h5_local(gf_h5file *f, gf_status st);

/* Collective: every rank takes the lowest failing rank's status and message. */
gf_status gf_h5_agree(gf_h5file *f);

/* Groups of a file being written; in the layout pass there is no file (-1 then). */
hid_t gf_h5_group_create(gf_h5file *f, const char *name);

void gf_h5_comm_of(const gf_par *par, MPI_Comm *comm, int *rank, int *size);

/* Opens `path` with the serial driver on this rank alone (file locking off: parallel file
 * systems often lack it), read-write or read-only; -1 if it is no readable HDF5 file. */
hid_t gf_h5_serial_open(const char *path, unsigned mode);

void gf_h5_init(gf_h5file *f, const gf_par *par, const char *path);

/* Collective; returns the agreed status. On failure nothing is left open. */
gf_status gf_h5_open(gf_h5file *f, const gf_par *par, const char *path, int create);

/* Collective; returns the agreed status of everything done with the file. */
gf_status gf_h5_close(gf_h5file *f);

/* Attributes are metadata that every rank writes alike: a local failure is recorded and the
 * following calls still made, so that all ranks make the same calls. */
void gf_h5_attr_write(gf_h5file *f, hid_t obj, const char *name, hid_t type, int n,
                      const void *data);

void gf_h5_attr_string(gf_h5file *f, hid_t obj, const char *name, const char *value);

/* The memory space of this rank's n rows, and their place in the file space: an empty selection
 * for a rank without rows, which still takes part in the collective transfer. */
hid_t gf_h5_select_rows(hid_t fspace, int rank, size_t offset, size_t n, int ncols);

/* Collective: writes a (global_n x ncols) dataset whose rows offset .. offset + n - 1 come from
 * this rank, and agrees on the outcome. */
void gf_h5_dset_write(gf_h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
                      size_t offset, size_t global_n, const void *buf, const char *units,
                      const char *desc);

/* Collective: reads rows offset .. offset + n - 1 of a (global_n x ncols) dataset, checking its
 * shape, and agrees on the outcome. */
void gf_h5_dset_read(gf_h5file *f, hid_t loc, const char *name, hid_t type, int ncols, size_t n,
                     size_t offset, size_t global_n, void *buf);

void gf_h5_attr_read(gf_h5file *f, hid_t obj, const char *name, hid_t type, int n, void *out);

/* Every item of `state` as an attribute of `obj` (integers as 64-bit integers, reals as
 * doubles), in the state's order. */
void gf_h5_attrs_write_state(gf_h5file *f, hid_t obj, const gf_state *state);
/* Every numeric attribute of `obj` into `state` (integer classes as integers, floating-point as
 * reals); local: the caller agrees. */
void gf_h5_attrs_read_state(gf_h5file *f, hid_t obj, gf_state *state);
void gf_h5_attr_read_string(gf_h5file *f, hid_t obj, const char *name, char *out, size_t size);

/* Opens a group for reading (no collective: reads of metadata are independent). */
hid_t gf_h5_group_open(gf_h5file *f, const char *name);

/* The rows of each rank in a group: `rank_offsets`, nranks + 1 non-decreasing values from 0 to
 * the number of rows (`rows`, if not negative). A dataset: files of earlier versions have an
 * attribute (limited to 64 KiB, so to about 8000 ranks), which is still read. Collective. */
/* The rows (first extent) of dataset `name` of group g, from its dataspace, nothing read; -1
 * with a local failure recorded if it is missing. */
int64_t gf_h5_dset_rows(gf_h5file *f, hid_t g, const char *name);
void gf_h5_read_rank_offsets(gf_h5file *f, hid_t g, int nranks, int64_t rows, int64_t *offs);

#endif
