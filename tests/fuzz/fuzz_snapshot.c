/* libFuzzer target for the tools' snapshot reader, tools/lib/snapshot.c (issue 16).
 *
 * Structured: the input is not a file but a description of one. HDF5 1.10 itself crashes on many
 * byte-damaged files (known CVEs), so mutating raw bytes would fuzz HDF5, not the reader. Instead
 * the bytes decode into the objects of a snapshot as src/io/io_write.c lays it out (root
 * attributes, /particles and its datasets, the rank offsets, /contacts), each present or not, with
 * another type, shape, storage or values; the target writes that file with the HDF5 API, reads it
 * the way the tools do (gf_snapshot_open, gf_snapshot_scan in small chunks, gf_snapshot_read of
 * rows that are not there and of all rows at once, gf_snapshot_read_contacts of every column,
 * gf_snapshot_close) and checks the outcome against a model of what the reader must
 * accept: a file as the writer makes it must be read back exactly, a file with a defect the tools
 * cannot work with (a header or dataset of the wrong type or shape, particle counts that do not
 * agree, rank offsets out of order, a radius that is not finite and positive, a position or
 * velocity that is not finite, ...) must be refused with a message naming the file. Any crash,
 * sanitizer report, leak (memory, or an HDF5 object left open) or disagreement with the model
 * aborts, and libFuzzer keeps the input.
 *
 * Input layout (missing bytes read as 0, so the empty input is a valid snapshot without
 * particles, and every prefix decodes):
 *   byte 0  particles, mod 25
 *   byte 1  writing ranks - 1, mod 6
 *   byte 2  bit 0: a contact list; bit 1: no masses (files before 0.1); bit 2: the rank offsets
 *           as an attribute (earlier files); bit 3: neither rank_count nor rank offsets; bits 4-6:
 *           rows per chunk - 1 (GF_CHUNK_ROWS)
 *   byte 3  contacts, mod 13
 *   byte 4  a seed varying the values
 *   then 4-byte edits [object, what, a, b] applied in order (object mod NITEMS, see item_defs;
 *   what mod 7: remove; type a (b: string size - 1); shape (a: rank, b: extents); set value a to
 *   b (a value table below b < 24, small integers above); form (a: a group of that name, a
 *   dangling soft link, or an attribute, see item.form); layout; string content a).
 * tests/fuzz/make_snapshot_corpus.sh writes the seed corpus in this layout. */
#include <float.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXN 24    /* particles */
#define MAXVAL 512 /* values held per object; larger objects are created but not written */
#define ERRSIZE 256

/* A failed invariant is a crash for libFuzzer, which then keeps the input. */
static void require(int ok, const char *what, const char *err) {
    if (!ok) {
        fprintf(stderr, "fuzz_snapshot: %s (reader's message: %s)\n", what, err ? err : "");
        abort();
    }
}

/* ---- the objects of a snapshot ------------------------------------------------------------- */

enum {
    A_FORMAT,
    A_TIME,
    A_STEP,
    A_DT,
    A_BOX_MIN,
    A_BOX_MAX,
    A_PERIODIC,
    A_COUNT,
    A_RANK_COUNT,
    A_DECOMP,
    G_PARTICLES,
    D_ID,
    D_POS,
    D_VEL,
    D_ANGVEL,
    D_ORIENT,
    D_RADIUS,
    D_MATERIAL,
    D_OWNER,
    D_MASS,
    D_OFFSETS,
    G_CONTACTS,
    C_PAIR,
    C_NIMP,
    C_TIMP,
    C_GAP,
    C_NORMAL,
    NITEMS
};
enum { K_ATTR, K_DSET, K_GROUP };
/* Rows of an object as the writer makes it. */
enum { R_ONE, R_THREE, R_N, R_OFFSETS, R_CONTACTS };

typedef struct {
    const char *name; /* the attribute's name, or the path */
    int kind, real, cols, rows;
    int reader_int; /* an integer attribute the reader reads as int (else long long) */
} item_def;

static const item_def item_defs[NITEMS] = {
    [A_FORMAT] = {"format", K_ATTR, 0, 1, R_ONE, 0},
    [A_TIME] = {"time", K_ATTR, 1, 1, R_ONE, 0},
    [A_STEP] = {"step", K_ATTR, 0, 1, R_ONE, 0},
    [A_DT] = {"dt", K_ATTR, 1, 1, R_ONE, 0},
    [A_BOX_MIN] = {"box_min", K_ATTR, 1, 1, R_THREE, 0},
    [A_BOX_MAX] = {"box_max", K_ATTR, 1, 1, R_THREE, 0},
    [A_PERIODIC] = {"periodic", K_ATTR, 0, 1, R_THREE, 1},
    [A_COUNT] = {"particle_count", K_ATTR, 0, 1, R_ONE, 0},
    [A_RANK_COUNT] = {"rank_count", K_ATTR, 0, 1, R_ONE, 1},
    [A_DECOMP] = {"decomposition", K_ATTR, 0, 1, R_THREE, 1},
    [G_PARTICLES] = {"/particles", K_GROUP, 0, 0, R_ONE, 0},
    [D_ID] = {"/particles/id", K_DSET, 0, 1, R_N, 0},
    [D_POS] = {"/particles/position", K_DSET, 1, 3, R_N, 0},
    [D_VEL] = {"/particles/velocity", K_DSET, 1, 3, R_N, 0},
    [D_ANGVEL] = {"/particles/angular_velocity", K_DSET, 1, 3, R_N, 0},
    [D_ORIENT] = {"/particles/orientation", K_DSET, 1, 4, R_N, 0},
    [D_RADIUS] = {"/particles/radius", K_DSET, 1, 1, R_N, 0},
    [D_MATERIAL] = {"/particles/material", K_DSET, 0, 1, R_N, 0},
    [D_OWNER] = {"/particles/owner_rank", K_DSET, 0, 1, R_N, 0},
    [D_MASS] = {"/particles/mass", K_DSET, 1, 1, R_N, 0},
    [D_OFFSETS] = {"/particles/rank_offsets", K_DSET, 0, 1, R_OFFSETS, 0},
    [G_CONTACTS] = {"/contacts", K_GROUP, 0, 0, R_ONE, 0},
    [C_PAIR] = {"/contacts/pair", K_DSET, 0, 2, R_CONTACTS, 0},
    [C_NIMP] = {"/contacts/normal_impulse", K_DSET, 1, 1, R_CONTACTS, 0},
    [C_TIMP] = {"/contacts/tangential_impulse", K_DSET, 1, 1, R_CONTACTS, 0},
    [C_GAP] = {"/contacts/gap", K_DSET, 1, 1, R_CONTACTS, 0},
    [C_NORMAL] = {"/contacts/normal", K_DSET, 1, 3, R_CONTACTS, 0},
};

/* File types: the writer's (T_NATIVE: 64-bit little-endian float or integer, strings for the
 * format), others of the same class, and classes no snapshot has. */
enum {
    T_NATIVE,
    T_F64BE,
    T_F32,
    T_I64BE,
    T_I32,
    T_I8,
    T_U64,
    T_STR,
    T_VSTR,
    T_ARRAY,
    T_COMPOUND,
    T_OPAQUE,
    T_ENUM,
    NTYPES
};

typedef struct {
    int present;
    /* 0: as the writer makes it; 1: a group of that name; 2: a dangling soft link; 3: an
     * attribute of that name on the dataset's group (rank offsets: as earlier versions wrote
     * them; other datasets: in the wrong place), or on /particles for root attributes; groups:
     * 1-3 a dataset of that name. */
    int form;
    int type;
    size_t strsize;
    int rank; /* -1: null dataspace, 0: scalar */
    hsize_t dims[3];
    int layout; /* contiguous, chunked, chunked with checksums, compact */
    int str;    /* the string content (string types) */
    hsize_t npoints;
    int big; /* more than MAXVAL values: created, never written (fill values, zeros) */
    double d[MAXVAL];
    long long i[MAXVAL];
} item;

typedef struct {
    int n, nranks, contacts, no_mass, legacy_offsets, no_ranks, chunk, ncontacts, seed;
    item it[NITEMS];
} spec;

static const char *format_strings[] = {
    "granflow snapshot 1",
    "granflow checkpoint 1",
    "",
    "granflow",
    "granflow ",
    "Granflow snapshot 1",
    "granflow snapshot 1 with a very long tail of words beyond sixty-four",
    "granflow snapshot 1 exactly sixty-three characters long ......"};
#define NFORMATS (sizeof format_strings / sizeof *format_strings)

static hsize_t base_rows(const spec *s, int k) {
    switch (item_defs[k].rows) {
    case R_THREE:
        return 3;
    case R_N:
        return (hsize_t)s->n;
    case R_OFFSETS:
        return (hsize_t)s->nranks + 1;
    case R_CONTACTS:
        return (hsize_t)s->ncontacts;
    default:
        return 1;
    }
}

/* The first row of rank r's group when the writer splits n rows over the ranks. */
static long long rank_start(const spec *s, int r) {
    return (long long)r * s->n / s->nranks;
}

/* The value the writer would store at flat index j of object k (cols values per row). */
static void base_value(const spec *s, int k, size_t j, double *d, long long *iv) {
    int cols = item_defs[k].cols > 0 ? item_defs[k].cols : 1;
    size_t row = j / (size_t)cols, col = j % (size_t)cols;
    double sc = 1.0 + s->seed % 7;
    double box[3] = {1.0, 0.5, 0.25};
    *d = 0;
    *iv = 0;
    switch (k) {
    case A_TIME:
        *d = 0.25 * (1 + s->seed);
        break;
    case A_STEP:
        *iv = 100 + s->seed;
        break;
    case A_DT:
        *d = 1e-4;
        break;
    case A_BOX_MIN:
        *d = j == 2 ? -0.125 : 0.0;
        break;
    case A_BOX_MAX:
        *d = box[j % 3];
        break;
    case A_PERIODIC:
        *iv = j == 0 ? s->seed & 1 : 0;
        break;
    case A_COUNT:
        *iv = s->n;
        break;
    case A_RANK_COUNT:
        *iv = s->nranks;
        break;
    case A_DECOMP:
        *iv = j == 0 ? s->nranks : 1;
        break;
    case D_ID:
        *iv = 3 * (long long)row + 7;
        break;
    case D_POS:
        *d = (double)((row * 37 + col * 11) % 100) / 100.0 * box[col % 3];
        break;
    case D_VEL:
        *d = ((double)(row % 7) - 3.0) * 0.1 * sc * (col == 2 ? -1 : 1);
        break;
    case D_ANGVEL:
        *d = ((double)(row % 5) - 2.0) * 0.5 + (double)col;
        break;
    case D_ORIENT:
        *d = col == 0 ? 1.0 : 0.0;
        break;
    case D_RADIUS:
        *d = 0.005 + 0.001 * (double)(row % 4);
        break;
    case D_MATERIAL:
        *iv = (long long)(row % 2);
        break;
    case D_OWNER: {
        int r = 0;
        while (r + 1 < s->nranks && rank_start(s, r + 1) <= (long long)row)
            ++r;
        *iv = r;
        break;
    }
    case D_MASS:
        *d = 1e-3 * (double)(1 + row % 3) * sc;
        break;
    case D_OFFSETS:
        *iv = rank_start(s, (int)row);
        break;
    case C_PAIR:
        *iv = s->n < 2 ? (col == 0 ? 7 : -1) : 3 * (long long)((row + col) % (size_t)s->n) + 7;
        break;
    case C_NIMP:
        *d = 0.01 * (double)row;
        break;
    case C_TIMP:
        *d = 0.005 * (double)row;
        break;
    case C_GAP:
        *d = ((double)(row % 3) - 1.0) * 1e-4;
        break;
    case C_NORMAL:
        *d = col == 2 ? 1.0 : 0.0;
        break;
    }
}

static void fill_values(spec *s, int k) {
    item *it = &s->it[k];
    hsize_t np = 1;
    int over = 0;
    if (it->rank < 0)
        np = 0;
    for (int r = 0; r < it->rank; ++r) {
        if (it->dims[r] != 0 && np > (hsize_t)MAXVAL * 4 / it->dims[r])
            over = 1;
        np = over ? np : np * it->dims[r];
    }
    it->big = over || np > MAXVAL;
    it->npoints = it->big ? 0 : np;
    for (size_t j = 0; j < (it->big ? 0 : (size_t)np); ++j)
        base_value(s, k, j, &it->d[j], &it->i[j]);
}

/* The shape the writer gives object k: scalar attributes, [3] vectors, [rows] lists, [rows,
 * cols] tables. */
static void base_shape(spec *s, int k) {
    item *it = &s->it[k];
    const item_def *def = &item_defs[k];
    it->rank = def->kind == K_GROUP ? 0 : def->rows == R_ONE ? 0 : def->cols > 1 ? 2 : 1;
    it->dims[0] = base_rows(s, k);
    it->dims[1] = (hsize_t)def->cols;
    it->dims[2] = 1;
    fill_values(s, k);
}

/* ---- decoding ------------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *p;
    size_t n, at;
} bytes;

static unsigned take(bytes *b) {
    return b->at < b->n ? b->p[b->at++] : 0;
}

static const double real_values[24] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0,  -1.0, 1e308, -1e308, 5e-324, 1.5,   1e-300, 0.5,
    2.0, 1e20,     -1e-3,     3.0, 1e300, 0.25, 7.0,   -2.0,   1e-9,   100.0, 0.125,  1.0};

static long long int_value(const spec *s, unsigned b) {
    static const long long table[24] = {
        0,         -1,      1,         LLONG_MIN, LLONG_MAX,
        INT_MAX,   INT_MIN, 2,         3,         (long long)INT_MAX + 1,
        1LL << 53, -2,      4,         5,         6,
        7,         8,       1LL << 32, 1LL << 61, 1LL << 62,
        10,        12,      16,        24};
    if (b < 24)
        return table[b];
    /* Near the counts the checks compare with. */
    if (b < 48)
        return (long long)s->n + (long long)b - 36;
    return (long long)b - 48;
}

static void apply_edit(spec *s, unsigned k, unsigned what, unsigned a, unsigned b) {
    item *it = &s->it[k];
    const item_def *def = &item_defs[k];
    switch (what % 7) {
    case 0:
        it->present = 0;
        break;
    case 1:
        it->type = (int)(a % NTYPES);
        it->strsize = 1 + b % 80;
        break;
    case 2: {
        /* Extents near the right ones, zero, and beyond any allocation ((n + 1) * 8 overflows
         * from 2^61). */
        static const hsize_t far[3] = {1ULL << 61, 1ULL << 62, (1ULL << 61) + 7};
        hsize_t rows = base_rows(s, (int)k), cols = def->cols > 0 ? (hsize_t)def->cols : 1;
        hsize_t d0[8] = {rows, rows + 1, rows ? rows - 1 : 2, 0, 1, 2 * rows + 3, far[b % 3], 3};
        hsize_t d1[6] = {cols, cols + 1, cols - 1, 1, 0, (1ULL << 32) + cols};
        it->rank = (int)(a % 5) - 1;
        it->dims[0] = d0[b % 8];
        it->dims[1] = d1[(b / 8) % 6];
        it->dims[2] = 1 + (b / 48) % 3;
        if (def->kind == K_ATTR) /* attributes hold their values: no huge ones */
            for (int r = 0; r < 3; ++r)
                it->dims[r] = it->dims[r] > 16 ? 16 : it->dims[r];
        fill_values(s, (int)k);
        break;
    }
    case 3:
        if (it->npoints > 0) {
            size_t j = a % (size_t)it->npoints;
            it->d[j] = b < 24 ? real_values[b] : (double)b / 16.0 - 2.0;
            it->i[j] = int_value(s, b);
        }
        break;
    case 4:
        it->form = (int)(a % 4);
        break;
    case 5:
        it->layout = (int)(a % 4);
        break;
    default:
        it->str = (int)(a % NFORMATS);
        break;
    }
}

static void decode(spec *s, const uint8_t *data, size_t size) {
    bytes b = {data, size, 0};
    memset(s, 0, sizeof *s);
    s->n = (int)(take(&b) % (MAXN + 1));
    s->nranks = 1 + (int)(take(&b) % 6);
    unsigned flags = take(&b);
    s->contacts = flags & 1;
    s->no_mass = (flags >> 1) & 1;
    s->legacy_offsets = (flags >> 2) & 1;
    s->no_ranks = (flags >> 3) & 1;
    s->chunk = 1 + (int)((flags >> 4) & 7);
    s->ncontacts = s->contacts ? (int)(take(&b) % 13) : (take(&b), 0);
    s->seed = (int)take(&b);
    for (int k = 0; k < NITEMS; ++k) {
        item *it = &s->it[k];
        it->present = 1;
        it->type = T_NATIVE;
        it->strsize = strlen(format_strings[0]) + 1;
        it->layout = item_defs[k].kind == K_DSET && item_defs[k].rows != R_ONE ? 2 : 0;
        base_shape(s, k);
    }
    if (!s->contacts)
        for (int k = G_CONTACTS; k <= C_NORMAL; ++k)
            s->it[k].present = 0;
    if (s->no_mass)
        s->it[D_MASS].present = 0;
    if (s->legacy_offsets)
        s->it[D_OFFSETS].form = 3;
    if (s->no_ranks)
        s->it[D_OFFSETS].present = s->it[A_RANK_COUNT].present = 0;
    while (b.at < b.n) {
        unsigned k = take(&b) % NITEMS, what = take(&b), a = take(&b), c = take(&b);
        apply_edit(s, k, what, a, c);
    }
}

/* ---- writing the file ---------------------------------------------------------------------- */

/* The HDF5 class of an object's file type. */
static H5T_class_t type_class(const item *it, const item_def *def) {
    switch (it->type) {
    case T_NATIVE:
        return def->real ? H5T_FLOAT
                         : (def->name == item_defs[A_FORMAT].name ? H5T_STRING : H5T_INTEGER);
    case T_F64BE:
    case T_F32:
        return H5T_FLOAT;
    case T_I64BE:
    case T_I32:
    case T_I8:
    case T_U64:
        return H5T_INTEGER;
    case T_STR:
    case T_VSTR:
        return H5T_STRING;
    case T_ARRAY:
        return H5T_ARRAY;
    case T_COMPOUND:
        return H5T_COMPOUND;
    case T_OPAQUE:
        return H5T_OPAQUE;
    default:
        return H5T_ENUM;
    }
}

static hid_t file_type(const item *it, const item_def *def) {
    switch (it->type) {
    case T_NATIVE:
        if (def->name == item_defs[A_FORMAT].name) {
            hid_t t = H5Tcopy(H5T_C_S1);
            H5Tset_size(t, it->strsize);
            return t;
        }
        return H5Tcopy(def->real ? H5T_IEEE_F64LE : H5T_STD_I64LE);
    case T_F64BE:
        return H5Tcopy(H5T_IEEE_F64BE);
    case T_F32:
        return H5Tcopy(H5T_IEEE_F32LE);
    case T_I64BE:
        return H5Tcopy(H5T_STD_I64BE);
    case T_I32:
        return H5Tcopy(H5T_STD_I32LE);
    case T_I8:
        return H5Tcopy(H5T_STD_I8LE);
    case T_U64:
        return H5Tcopy(H5T_STD_U64LE);
    case T_STR: {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, it->strsize);
        return t;
    }
    case T_VSTR: {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        return t;
    }
    case T_ARRAY: {
        hsize_t three = 3;
        return H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &three);
    }
    case T_COMPOUND: {
        hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
        H5Tinsert(t, "value", 0, H5T_NATIVE_DOUBLE);
        return t;
    }
    case T_OPAQUE:
        return H5Tcreate(H5T_OPAQUE, 8);
    default: {
        hid_t t = H5Tenum_create(H5T_NATIVE_INT);
        int zero = 0, one = 1;
        H5Tenum_insert(t, "zero", &zero);
        H5Tenum_insert(t, "one", &one);
        return t;
    }
    }
}

static int is_format(const item_def *def) {
    return def->name == item_defs[A_FORMAT].name;
}

static double as_float(double v) {
    if (isnan(v) || isinf(v))
        return v;
    if (v > FLT_MAX)
        return INFINITY;
    if (v < -FLT_MAX)
        return -INFINITY;
    return (double)(float)v;
}

/* Integer range of an integer file type. */
static void int_range(int type, long long *lo, long long *hi) {
    *lo = LLONG_MIN;
    *hi = LLONG_MAX;
    if (type == T_I32) {
        *lo = INT_MIN;
        *hi = INT_MAX;
    } else if (type == T_I8) {
        *lo = -128;
        *hi = 127;
    } else if (type == T_U64) {
        *lo = 0;
    }
}

static long long clamp_ll(long long v, long long lo, long long hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

static long long real_to_ll(double v) {
    if (isnan(v))
        return 0;
    if (v >= 9.2e18)
        return LLONG_MAX;
    if (v <= -9.2e18)
        return LLONG_MIN;
    return (long long)v;
}

/* The value stored at j, as the class of the file type holds it (after the writer's own
 * conversion, so HDF5 converts nothing out of range). */
static double stored_real(const item *it, const item_def *def, size_t j) {
    double v = def->real ? it->d[j] : (double)it->i[j];
    return it->type == T_F32 ? as_float(v) : v;
}

static long long stored_int(const item *it, const item_def *def, size_t j) {
    long long lo, hi;
    int_range(it->type, &lo, &hi);
    return clamp_ll(def->real ? real_to_ll(it->d[j]) : it->i[j], lo, hi);
}

/* The string stored in slot j of a string object (the format, or a number). */
static void stored_string(const item *it, const item_def *def, size_t j, char *out, size_t size) {
    if (is_format(def) || it->str != 0)
        snprintf(out, size, "%s", format_strings[it->str]);
    else if (def->real)
        snprintf(out, size, "%g", it->d[j]);
    else
        snprintf(out, size, "%lld", it->i[j]);
}

/* The memory buffer and type of an object's values; *mem is closed by the caller. */
static void *value_buffer(const item *it, const item_def *def, hid_t ftype, hid_t *mem) {
    size_t n = (size_t)it->npoints;
    H5T_class_t cls = type_class(it, def);
    *mem = -1;
    if (cls == H5T_FLOAT) {
        if (it->type == T_F32) {
            float *buf = calloc(n + 1, sizeof *buf);
            for (size_t j = 0; buf && j < n; ++j)
                buf[j] = (float)stored_real(it, def, j);
            *mem = H5Tcopy(H5T_NATIVE_FLOAT);
            return buf;
        }
        double *buf = calloc(n + 1, sizeof *buf);
        for (size_t j = 0; buf && j < n; ++j)
            buf[j] = stored_real(it, def, j);
        *mem = H5Tcopy(H5T_NATIVE_DOUBLE);
        return buf;
    }
    if (cls == H5T_INTEGER) {
        long long *buf = calloc(n + 1, sizeof *buf);
        for (size_t j = 0; buf && j < n; ++j)
            buf[j] = stored_int(it, def, j);
        *mem = H5Tcopy(H5T_NATIVE_LLONG);
        return buf;
    }
    if (it->type == T_VSTR) {
        /* Pointers into one block of strings. */
        char **buf = calloc(n + 1, sizeof *buf + 80);
        char *text = buf ? (char *)(buf + n + 1) : NULL;
        for (size_t j = 0; buf && j < n; ++j) {
            buf[j] = text + 80 * j;
            stored_string(it, def, j, buf[j], 80);
        }
        *mem = H5Tcopy(ftype);
        return buf;
    }
    if (cls == H5T_STRING) {
        /* Exactly strsize bytes per slot, NUL-padded, possibly without a NUL. */
        char *buf = calloc(n + 1, it->strsize);
        for (size_t j = 0; buf && j < n; ++j) {
            char tmp[128];
            stored_string(it, def, j, tmp, sizeof tmp);
            size_t len = strlen(tmp) < it->strsize ? strlen(tmp) : it->strsize;
            memcpy(buf + j * it->strsize, tmp, len);
        }
        *mem = H5Tcopy(ftype);
        return buf;
    }
    if (cls == H5T_ARRAY) {
        double *buf = calloc(3 * n + 1, sizeof *buf);
        for (size_t j = 0; buf && j < 3 * n; ++j)
            buf[j] = stored_real(it, def, j / 3);
        *mem = H5Tcopy(ftype);
        return buf;
    }
    if (cls == H5T_ENUM) {
        int *buf = calloc(n + 1, sizeof *buf);
        for (size_t j = 0; buf && j < n; ++j)
            buf[j] = (def->real ? it->d[j] : (double)it->i[j]) != 0.0;
        *mem = H5Tcopy(ftype);
        return buf;
    }
    /* Compound of one double, or opaque 8 bytes: the doubles. */
    double *buf = calloc(n + 1, sizeof *buf);
    for (size_t j = 0; buf && j < n; ++j)
        buf[j] = stored_real(it, def, j);
    *mem = H5Tcopy(ftype);
    return buf;
}

static hid_t make_space(const item *it, int chunked) {
    if (it->rank < 0)
        return H5Screate(H5S_NULL);
    if (it->rank == 0)
        return H5Screate(H5S_SCALAR);
    hsize_t maxdims[3] = {H5S_UNLIMITED, H5S_UNLIMITED, H5S_UNLIMITED};
    return H5Screate_simple(it->rank, it->dims, chunked ? maxdims : NULL);
}

/* The parent group and the last path component of a dataset. */
static hid_t parent_of(hid_t file, const char *path, const char **leaf) {
    const char *slash = strrchr(path, '/');
    *leaf = slash + 1;
    char parent[64];
    snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
    return parent[0] ? H5Gopen2(file, parent, H5P_DEFAULT) : H5Gopen2(file, "/", H5P_DEFAULT);
}

/* Writes attribute `name` of loc from item it; returns 0 on success. */
static int write_attr(hid_t loc, const char *name, const item *it, const item_def *def) {
    hid_t t = file_type(it, def), sp = make_space(it, 0), mem = -1;
    void *buf = value_buffer(it, def, t, &mem);
    hid_t a = t >= 0 && sp >= 0 ? H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && buf && (it->npoints == 0 || H5Awrite(a, mem, buf) >= 0) ? 0 : -1;
    if (a >= 0)
        H5Aclose(a);
    free(buf);
    if (mem >= 0)
        H5Tclose(mem);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

static int write_dataset(hid_t loc, const char *name, const item *it, const item_def *def) {
    int layout = it->big ? 1 : it->layout;
    if (it->rank <= 0 && (layout == 1 || layout == 2))
        layout = 0;
    if (layout == 2 && it->type == T_VSTR) /* HDF5 filters no variable-length data */
        layout = 1;
    hid_t t = file_type(it, def), sp = make_space(it, layout == 1 || layout == 2), mem = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (layout == 1 || layout == 2) {
        hsize_t chunk[3];
        for (int r = 0; r < it->rank; ++r)
            chunk[r] = it->dims[r] == 0 ? 1 : it->dims[r] < 16 ? it->dims[r] : 16;
        H5Pset_chunk(dcpl, it->rank, chunk);
        if (layout == 2)
            H5Pset_fletcher32(dcpl);
    } else if (layout == 3) {
        H5Pset_layout(dcpl, H5D_COMPACT);
    }
    void *buf = it->big ? NULL : value_buffer(it, def, t, &mem);
    hid_t d = t >= 0 && sp >= 0 ? H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    int rc = d >= 0 && (it->big || (buf && (it->npoints == 0 || H5Dwrite(d, mem, H5S_ALL, H5S_ALL,
                                                                         H5P_DEFAULT, buf) >= 0)))
                 ? 0
                 : -1;
    if (d >= 0)
        H5Dclose(d);
    free(buf);
    if (mem >= 0)
        H5Tclose(mem);
    H5Pclose(dcpl);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

/* A dataset, group or link standing where object k is expected. */
static int write_object(hid_t file, const spec *s, int k) {
    const item *it = &s->it[k];
    const item_def *def = &item_defs[k];
    if (!it->present)
        return 0;
    if (def->kind == K_ATTR) {
        if (it->form != 3)
            return write_attr(file, def->name, it, def);
        if (!s->it[G_PARTICLES].present || s->it[G_PARTICLES].form != 0)
            return 0;
        hid_t g = H5Gopen2(file, "/particles", H5P_DEFAULT);
        int rc = g >= 0 ? write_attr(g, def->name, it, def) : -1;
        if (g >= 0)
            H5Gclose(g);
        return rc;
    }
    if (def->kind == K_GROUP) {
        if (it->form == 0) {
            hid_t g = H5Gcreate2(file, def->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            if (g < 0)
                return -1;
            H5Gclose(g);
            return 0;
        }
        item scalar = *it;
        scalar.rank = 0;
        scalar.type = T_NATIVE;
        scalar.npoints = 1;
        scalar.big = 0;
        scalar.i[0] = 1;
        return write_dataset(file, def->name, &scalar, &item_defs[A_STEP]);
    }
    /* A dataset: in its group, which must be there as a group. */
    int group = k < G_CONTACTS ? G_PARTICLES : G_CONTACTS;
    if (!s->it[group].present || s->it[group].form != 0)
        return 0;
    const char *leaf;
    hid_t g = parent_of(file, def->name, &leaf);
    if (g < 0)
        return -1;
    int rc = 0;
    if (it->form == 0) {
        rc = write_dataset(g, leaf, it, def);
    } else if (it->form == 1) {
        hid_t sub = H5Gcreate2(g, leaf, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        rc = sub >= 0 ? 0 : -1;
        if (sub >= 0)
            H5Gclose(sub);
    } else if (it->form == 2) {
        rc = H5Lcreate_soft("/nowhere/at/all", g, leaf, H5P_DEFAULT, H5P_DEFAULT) >= 0 ? 0 : -1;
    } else {
        rc = write_attr(g, leaf, it, def);
    }
    H5Gclose(g);
    return rc;
}

static int write_file(const spec *s, const char *path) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* In memory, written out once at the close. */
    H5Pset_fapl_core(fapl, 1 << 16, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0)
        return -1;
    int rc = 0;
    /* Groups first, then what goes in them. */
    static const int order[NITEMS] = {
        G_PARTICLES, G_CONTACTS, A_FORMAT, A_TIME,       A_STEP,     A_DT,    A_BOX_MIN,
        A_BOX_MAX,   A_PERIODIC, A_COUNT,  A_RANK_COUNT, A_DECOMP,   D_ID,    D_POS,
        D_VEL,       D_ANGVEL,   D_ORIENT, D_RADIUS,     D_MATERIAL, D_OWNER, D_MASS,
        D_OFFSETS,   C_PAIR,     C_NIMP,   C_TIMP,       C_GAP,      C_NORMAL};
    for (int k = 0; k < NITEMS; ++k)
        rc |= write_object(f, s, order[k]);
    if (H5Fclose(f) < 0)
        rc = -1;
    return rc;
}

/* ---- the model: what the reader must make of the file --------------------------------------- */

typedef struct {
    int ok; /* 1: the file must be read; 0: it must be refused; -1: not modelled */
    long long count;
    int nranks, has_mass, has_contacts;
    long long ncontacts, offsets[MAXVAL + 1];
    int column_ok[6]; /* read_contacts of each column in `columns`, if the file is read */
} model;

static const int columns[6] = {C_GAP, C_NIMP, C_TIMP, C_NORMAL, C_PAIR, -1};
static const char *column_names[6] = {"gap",    "normal_impulse", "tangential_impulse",
                                      "normal", "pair",           "no_such_column"};

/* A header attribute: n values of the class the writer uses, read into *d or *iv as the reader
 * does (every numeric type is modelled: the writer converted the values itself, into the range of
 * the type, and the reader's conversion narrows only integers it reads as int). Returns 1 if
 * usable, 0 if the reader must refuse it. */
static int header_attr(const spec *s, int k, hsize_t n, double *d, long long *iv) {
    const item *it = &s->it[k];
    const item_def *def = &item_defs[k];
    if (!it->present || it->form == 3)
        return 0;
    H5T_class_t want = def->real ? H5T_FLOAT : H5T_INTEGER;
    if (type_class(it, def) != want || it->npoints != n || it->big)
        return 0;
    for (size_t j = 0; j < n; ++j) {
        if (def->real) {
            d[j] = stored_real(it, def, j);
        } else {
            iv[j] = stored_int(it, def, j);
            if (def->reader_int)
                iv[j] = clamp_ll(iv[j], INT_MIN, INT_MAX);
        }
    }
    return 1;
}

/* A particle or contact dataset of `rows` x cols values the reader reads: 1 if it may be read, 0
 * if not (wrong kind, class or shape). */
static int table_ok(const spec *s, int k, long long rows, int cols, H5T_class_t want) {
    const item *it = &s->it[k];
    if (!it->present || it->form != 0 || type_class(it, &item_defs[k]) != want)
        return 0;
    if (it->rank == 1)
        return cols == 1 && (long long)it->dims[0] == rows && rows >= 0;
    if (it->rank == 2)
        return it->dims[0] == (hsize_t)rows && it->dims[1] == (hsize_t)cols;
    return 0;
}

/* Value j of a dataset as read (zero, HDF5's fill value, where nothing was written). */
static double value_at(const item *it, const item_def *def, size_t j) {
    return j < it->npoints ? stored_real(it, def, j) : 0.0;
}

static void predict(const spec *s, model *m) {
    memset(m, 0, sizeof *m);
    m->ok = 0;
    /* Header. */
    const item *fmt = &s->it[A_FORMAT];
    if (!fmt->present || fmt->form == 3 || fmt->type == T_VSTR ||
        type_class(fmt, &item_defs[A_FORMAT]) != H5T_STRING || fmt->npoints != 1 || fmt->big ||
        fmt->strsize >= 64 || fmt->strsize < 9 ||
        strncmp(format_strings[fmt->str], "granflow ", 9) != 0)
        return;
    double time = 0, box_min[3] = {0, 0, 0}, box_max[3] = {0, 0, 0};
    long long step = 0, count = 0, periodic[3] = {0, 0, 0};
    int h[6] = {
        header_attr(s, A_TIME, 1, &time, NULL),        header_attr(s, A_STEP, 1, NULL, &step),
        header_attr(s, A_BOX_MIN, 3, box_min, NULL),   header_attr(s, A_BOX_MAX, 3, box_max, NULL),
        header_attr(s, A_PERIODIC, 3, NULL, periodic), header_attr(s, A_COUNT, 1, NULL, &count)};
    for (int k = 0; k < 6; ++k)
        if (h[k] == 0)
            return;
    if (!isfinite(time) || step < 0 || count < 0)
        return;
    for (int k = 0; k < 3; ++k)
        if (!isfinite(box_min[k]) || !isfinite(box_max[k]) || !(box_max[k] > box_min[k]) ||
            !isfinite(box_max[k] - box_min[k]) || (periodic[k] != 0 && periodic[k] != 1))
            return;
    m->count = count;
    /* The particle datasets. */
    if (!s->it[G_PARTICLES].present || s->it[G_PARTICLES].form != 0)
        return;
    static const int need[5] = {D_ID, D_POS, D_VEL, D_ANGVEL, D_RADIUS};
    for (int k = 0; k < 5; ++k)
        if (!table_ok(s, need[k], count, item_defs[need[k]].cols,
                      need[k] == D_ID ? H5T_INTEGER : H5T_FLOAT))
            return;
    const item *mass = &s->it[D_MASS];
    m->has_mass = mass->present && mass->form != 3;
    if (m->has_mass && !table_ok(s, D_MASS, count, 1, H5T_FLOAT))
        return;
    /* Rank groups: the count of ranks, then their offsets if the file has them. */
    const item *rc = &s->it[A_RANK_COUNT];
    if (rc->present && rc->form != 3) {
        long long nranks = 0;
        if (!header_attr(s, A_RANK_COUNT, 1, NULL, &nranks) || nranks < 1)
            return;
        const item *off = &s->it[D_OFFSETS];
        if (off->present) {
            if (off->form == 1 || off->form == 2)
                return;
            if (type_class(off, &item_defs[D_OFFSETS]) != H5T_INTEGER || off->big ||
                off->npoints != (hsize_t)nranks + 1)
                return;
            for (long long r = 0; r <= nranks; ++r) {
                long long v = stored_int(off, &item_defs[D_OFFSETS], (size_t)r);
                if ((r == 0 && v != 0) || (r > 0 && v < m->offsets[r - 1]) ||
                    (r == nranks && v != count))
                    return;
                m->offsets[r] = v;
            }
            m->nranks = (int)nranks;
        }
    }
    /* The contact list, if /contacts/gap is there. */
    const item *gap = &s->it[C_GAP];
    if (s->it[G_CONTACTS].present && s->it[G_CONTACTS].form == 0 && gap->present &&
        gap->form != 3) {
        if (gap->form != 0 || gap->rank != 1)
            return;
        m->has_contacts = 1;
        m->ncontacts = (long long)gap->dims[0];
    }
    /* The values: finite, with radii > 0 and masses >= 0. Zeros where nothing was written (a
     * radius of 0 ends the loop at once for the huge extents). */
    for (long long i = 0; i < count; ++i) {
        for (int k = 0; k < 5; ++k) {
            int kk = need[k];
            if (kk == D_ID)
                continue;
            const item *it = &s->it[kk];
            for (int c = 0; c < item_defs[kk].cols; ++c) {
                double v = value_at(it, &item_defs[kk], (size_t)i * item_defs[kk].cols + c);
                if (!isfinite(v) || (kk == D_RADIUS && !(v > 0)))
                    return;
            }
        }
        if (m->has_mass) {
            double v = value_at(mass, &item_defs[D_MASS], (size_t)i);
            if (!isfinite(v) || v < 0)
                return;
        }
    }
    /* The columns, each read on its own. */
    for (int c = 0; c < 6; ++c) {
        int k = columns[c];
        const item *it = k >= 0 ? &s->it[k] : NULL;
        int ok = m->has_contacts && k >= 0 && it->present && it->form == 0 && it->rank == 1 &&
                 it->dims[0] == (hsize_t)m->ncontacts && !it->big &&
                 type_class(it, &item_defs[k]) == H5T_FLOAT;
        for (size_t j = 0; ok && j < it->npoints; ++j)
            ok = isfinite(stored_real(it, &item_defs[k], j));
        m->column_ok[c] = ok;
    }
    m->ok = 1;
}

/* ---- reading it back ----------------------------------------------------------------------- */

typedef struct {
    const spec *s;
    const model *m;
    const gf_snapshot *snap;
    long long next; /* the first row of the next chunk */
} scan_state;

static int visit(void *ctx, const gf_chunk *c) {
    scan_state *st = ctx;
    const gf_snapshot *snap = st->snap;
    require(c->n >= 1 && (long long)c->n <= snap->chunk, "a chunk of no rows or too many", NULL);
    require(st->next + (long long)c->n <= snap->count, "rows beyond the particle count", NULL);
    require((c->mass != NULL) == (snap->has_mass != 0), "masses without has_mass or vice versa",
            NULL);
    for (size_t i = 0; i < c->n; ++i) {
        require(isfinite(c->radius[i]) && c->radius[i] > 0, "a radius not finite or <= 0", NULL);
        require(!c->mass || (isfinite(c->mass[i]) && c->mass[i] >= 0), "a bad mass", NULL);
        for (int k = 0; k < 3; ++k)
            require(isfinite(c->x[3 * i + k]) && isfinite(c->v[3 * i + k]) &&
                        isfinite(c->w[3 * i + k]),
                    "a position or velocity not finite", NULL);
    }
    if (st->m->ok == 1) {
        /* A file as the writer makes it reads back exactly. */
        const spec *s = st->s;
        for (size_t i = 0; i < c->n; ++i) {
            size_t row = (size_t)st->next + i;
            require(c->id[i] == stored_int(&s->it[D_ID], &item_defs[D_ID], row), "id differs",
                    NULL);
            require(c->radius[i] == stored_real(&s->it[D_RADIUS], &item_defs[D_RADIUS], row),
                    "radius differs", NULL);
            if (c->mass)
                require(c->mass[i] == stored_real(&s->it[D_MASS], &item_defs[D_MASS], row),
                        "mass differs", NULL);
            for (int k = 0; k < 3; ++k) {
                size_t j = 3 * row + (size_t)k;
                require(c->x[3 * i + k] == stored_real(&s->it[D_POS], &item_defs[D_POS], j),
                        "position differs", NULL);
                require(c->v[3 * i + k] == stored_real(&s->it[D_VEL], &item_defs[D_VEL], j),
                        "velocity differs", NULL);
                require(c->w[3 * i + k] == stored_real(&s->it[D_ANGVEL], &item_defs[D_ANGVEL], j),
                        "angular velocity differs", NULL);
            }
        }
    }
    st->next += (long long)c->n;
    return 0;
}

/* A refusal comes with a message that names the file. */
static void check_refusal(const char *err, const char *path) {
    require(memchr(err, 0, ERRSIZE) != NULL, "unterminated message", NULL);
    require(strstr(err, path) != NULL, "a refusal whose message does not name the file", err);
}

static void read_back(const spec *s, const model *m, const char *path) {
    char err[ERRSIZE], why[ERRSIZE] = "";
    memset(err, 'x', sizeof err);
    err[sizeof err - 1] = '\0';
    gf_snapshot snap;
    int opened = gf_snapshot_open(&snap, path, err, sizeof err) == 0;
    int read = 0;
    if (opened) {
        require(snap.count >= 0 && snap.step >= 0 && isfinite(snap.time), "a bad header", NULL);
        for (int k = 0; k < 3; ++k)
            require(isfinite(snap.box_min[k]) && isfinite(snap.box_max[k]) &&
                        snap.box_max[k] > snap.box_min[k] &&
                        (snap.periodic[k] == 0 || snap.periodic[k] == 1),
                    "a bad box", NULL);
        require(snap.chunk == s->chunk, "GF_CHUNK_ROWS ignored", NULL);
        require((snap.nranks == 0) == (snap.rank_offsets == NULL), "nranks without offsets", NULL);
        for (int r = 0; r < snap.nranks; ++r)
            require(snap.rank_offsets[r] <= snap.rank_offsets[r + 1], "offsets not monotone", NULL);
        if (snap.nranks > 0)
            require(snap.rank_offsets[0] == 0 && snap.rank_offsets[snap.nranks] == snap.count,
                    "offsets not from 0 to the count", NULL);
        require(snap.ncontacts >= 0 && (snap.has_contacts || snap.ncontacts == 0),
                "a bad contact count", NULL);
        scan_state st = {s, m, &snap, 0};
        read = gf_snapshot_scan(&snap, visit, &st, err, sizeof err) == 0;
        if (read)
            require(st.next == snap.count, "the scan missed rows", NULL);
        else
            check_refusal(err, path);
        snprintf(why, sizeof why, "%s", read ? "" : err);
        /* Rows past the end, before the start, or more than there are. */
        gf_chunk c;
        require(gf_snapshot_read(&snap, snap.count, 1, &c, err, sizeof err) != 0,
                "a row past the end was read", NULL);
        require(gf_snapshot_read(&snap, -1, 1, &c, err, sizeof err) != 0,
                "a row before the start was read", NULL);
        require(gf_snapshot_read(&snap, 0, (size_t)snap.count + 1, &c, err, sizeof err) != 0,
                "more rows than there are were read", NULL);
        require(gf_snapshot_read(&snap, 0, SIZE_MAX / 2, &c, err, sizeof err) != 0,
                "an impossible number of rows was read", NULL);
        /* All rows at once, as a tool might: what the scan read, or refused when the buffers
         * cannot be allocated (not allocated with a size that wrapped around). */
        int whole = gf_snapshot_read(&snap, 0, (size_t)snap.count, &c, err, sizeof err) == 0;
        if (whole)
            gf_chunk_free(&c);
        require(whole == read || snap.count > MAXVAL, "the whole file read unlike the scan", err);
        for (int k = 0; k < 6; ++k) {
            double *col = NULL;
            int ok = gf_snapshot_read_contacts(&snap, column_names[k], &col, err, sizeof err) == 0;
            require(ok == (col != NULL), "a column without values or values without success", NULL);
            if (ok)
                for (long long j = 0; j < snap.ncontacts; ++j)
                    require(isfinite(col[j]), "a contact value not finite", NULL);
            else
                check_refusal(err, path);
            if (m->ok == 1 && read) {
                if (m->column_ok[k] != ok)
                    fprintf(stderr, "fuzz_snapshot: column %s: %s\n", column_names[k], err);
                require(m->column_ok[k] == ok, "contact column read against the model", err);
                int kk = columns[k];
                for (long long j = 0; ok && m->column_ok[k] && j < snap.ncontacts; ++j)
                    require(col[j] == stored_real(&s->it[kk], &item_defs[kk], (size_t)j),
                            "contact value differs", NULL);
            }
            free(col);
        }
        if (m->ok == 1) {
            require(snap.count == m->count && snap.has_mass == m->has_mass &&
                        snap.has_contacts == m->has_contacts && snap.ncontacts == m->ncontacts &&
                        snap.nranks == m->nranks,
                    "header read differs from the file", NULL);
            for (int r = 0; snap.nranks > 0 && r <= snap.nranks; ++r)
                require(snap.rank_offsets[r] == m->offsets[r], "offsets differ", NULL);
        }
        gf_snapshot_close(&snap);
    } else {
        check_refusal(err, path);
        snprintf(why, sizeof why, "%s", err);
    }
    /* Close must be safe twice, and must leave no HDF5 object open. */
    gf_snapshot_close(&snap);
    require(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0, "an HDF5 object left open", NULL);
    if (m->ok >= 0) {
        int accepted = opened && read;
        if (accepted != m->ok)
            fprintf(stderr, "fuzz_snapshot: the model %s the file, the reader %s it (%s)\n",
                    m->ok ? "accepts" : "refuses", accepted ? "accepts" : "refuses", why);
        require(accepted == m->ok, "the reader disagrees with the model", NULL);
    }
}

/* ---- the target ---------------------------------------------------------------------------- */

static char work_dir[256], work_file[300];

static void remove_work(void) {
    if (work_file[0])
        unlink(work_file);
    if (work_dir[0])
        rmdir(work_dir);
}

/* A directory of this process for the file (the reader takes a path). */
static const char *work_path(void) {
    if (!work_file[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(work_dir, sizeof work_dir, "%s/gf_fuzz_snapshot.XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        require(mkdtemp(work_dir) != NULL, "cannot create a temporary directory", NULL);
        snprintf(work_file, sizeof work_file, "%s/snapshot.h5", work_dir);
        atexit(remove_work);
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    }
    return work_file;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static spec s;
    const char *path = work_path();
    decode(&s, data, size);
    char rows[16];
    snprintf(rows, sizeof rows, "%d", s.chunk);
    setenv("GF_CHUNK_ROWS", rows, 1);
    model m;
    predict(&s, &m);
    if (write_file(&s, path) != 0) {
        /* HDF5 refused to make something (a huge compact dataset, ...): read what there is
         * without a model. */
        require(m.ok != 1 || size > 5, "a snapshot as the writer makes it could not be written",
                NULL);
        m.ok = -1;
    }
    read_back(&s, &m, path);
    unlink(path);
    return 0;
}
