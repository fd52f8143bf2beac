/* Restarts of the granflow program from damaged checkpoints, at 1 and 2 ranks (issue 16): each
 * must end with a clear error that names the checkpoint, or with a run equal to one restarted
 * from the undamaged checkpoint; never a hang, a crash, a sanitizer report or a run from altered
 * data.
 *
 * The damage is seeded and deterministic: single-bit flips at fixed places (the superblock's
 * signature, the middle, the last byte; bytes of metadata whose flips did harm), one in each kind
 * of structure the file holds (object headers and their datatype, dataspace, layout and filter
 * messages and attribute values; B-tree nodes of chunk indices and groups, symbol table nodes,
 * link names; checksummed data), truncations, a zeroed block and an appended tail. The map of
 * the structures is read from the file itself (in HDF5's original format and its newer one), so
 * that every case names what it damages and keeps its meaning when the layout moves. Each restart
 * runs as a child under a time limit this parent enforces; a table of the outcomes is printed, and
 * the test fails with the list of failing cases (their damaged copies are then kept).
 *
 * GF_DAMAGE_SEED=n in the environment draws other places (to explore; the default is fixed). */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define FIRST_STEPS 150 /* by then spheres touch: the checkpoint holds warm-start entries */
#define MORE_STEPS 20
/* Generous for a loaded 2-core machine under the sanitizers (a restart takes about 1 s there),
 * far below any hang. */
#define LIMIT_SECONDS 30
#define MAX_SPANS 1024
#define MAX_CASES 32

static char tmpdir[64];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the undamaged file and where its structures are ----------------------------------------- */

/* The map names the bytes of the file: the superblock, each object's header (version 1 or 2:
 * prefix, message headers, and the data of each message, attributes split into description and
 * value, also in the heap that holds many of an object's attributes in the newer format), the
 * B-trees, symbol table nodes and local heaps of groups and the B-trees of chunk indices in HDF5's
 * original format, and the (checksummed) data chunks. HDF5 gives the objects'
 * addresses and the chunks; the rest is read from the bytes (8-byte addresses and lengths).
 * Spans do not overlap; bytes in none are unused (padding, free entries, free space). */

typedef struct {
    size_t at, size;
    char what[112];
} span;

typedef struct {
    unsigned char *bytes;
    size_t size;
    span all[MAX_SPANS];
    int n;
} file_map;

static void add_span(file_map *m, size_t at, size_t size, const char *fmt, const char *a,
                     const char *b) {
    assert_true(m->n < MAX_SPANS);
    if (at >= m->size || size == 0)
        return;
    if (size > m->size - at)
        size = m->size - at;
    span *s = &m->all[m->n++];
    s->at = at;
    s->size = size;
    snprintf(s->what, sizeof s->what, fmt, a, b);
}

/* The n-byte little-endian number at `at`. */
static size_t le(const file_map *m, size_t at, int n) {
    if (at > m->size || (size_t)n > m->size - at)
        fail_msg("the map of the checkpoint leads past its end (at %zu)", at);
    size_t v = 0;
    for (int k = n - 1; k >= 0; --k)
        v = v << 8 | m->bytes[at + (size_t)k];
    return v;
}

static int signature_at(const file_map *m, size_t at, const char *sig) {
    return at <= m->size && m->size - at >= 4 && memcmp(m->bytes + at, sig, 4) == 0;
}

static size_t pad8(size_t n) {
    return (n + 7) & ~(size_t)7;
}

/* A B-tree of HDF5's original format ("TREE"): a group's (keys are 8-byte name offsets) or a
 * chunk index's (keys are a chunk's size, filter mask and `dims` offsets); the part in use of
 * each node. The leaves' children are symbol table nodes or chunks (HDF5 gives those). */
static void map_btree(file_map *m, size_t node, size_t key, const char *what, const char *path,
                      int depth) {
    if (!signature_at(m, node, "TREE") || depth > 8)
        fail_msg("no B-tree node at %zu in the checkpoint (%s %s)", node, what, path);
    size_t level = le(m, node + 5, 1), used = le(m, node + 6, 2);
    add_span(m, node, 24 + used * (key + 8) + key, "%s%s", what, path);
    for (size_t k = 0; k < used; ++k) {
        size_t child = le(m, node + 24 + key + k * (key + 8), 8);
        if (level > 0) {
            map_btree(m, child, key, what, path, depth + 1);
        } else if (key == 8) {
            if (!signature_at(m, child, "SNOD"))
                fail_msg("no symbol table node at %zu in the checkpoint", child);
            add_span(m, child, 8 + 40 * le(m, child + 6, 2), "symbol table node of group %s%s",
                     path, "");
        }
    }
}

static const char *message_name(size_t type) {
    switch (type) {
    case 0x1:
        return "dataspace message";
    case 0x2:
        return "link info message";
    case 0x3:
        return "datatype message";
    case 0x5:
        return "fill value message";
    case 0x6:
        return "link message";
    case 0x8:
        return "layout message";
    case 0xA:
        return "group info message";
    case 0xB:
        return "filter pipeline message";
    case 0x10:
        return "continuation message";
    case 0x11:
        return "symbol table message";
    case 0x12:
        return "modification time message";
    case 0x15:
        return "attribute info message";
    default:
        return "other message";
    }
}

/* The bytes of an attribute's value: its datatype's element size (bytes 4 to 7) times the number
 * of elements of its dataspace (a version-1 dataspace lists its dimensions from byte 8, a
 * version-2 one from byte 4; a version-2 null dataspace has none). */
static size_t value_bytes(const file_map *m, size_t dt, size_t ds) {
    size_t version = le(m, ds, 1), rank = le(m, ds + 1, 1), n = 1;
    if (version == 2 && le(m, ds + 3, 1) == 2)
        return 0;
    for (size_t k = 0; k < rank; ++k)
        n *= le(m, ds + (version == 1 ? 8 : 4) + 8 * k, 8);
    return n * le(m, dt + 4, 4);
}

/* An attribute message at `data` (of `size` bytes; 0: not known): its description (version,
 * sizes, name, datatype, dataspace), then its value. Version 1 pads the name, datatype and
 * dataspace to 8 bytes; version 3 has an encoding byte before the name. Returns its end. */
static size_t map_attribute(file_map *m, size_t data, size_t size, const char *path) {
    size_t version = le(m, data, 1), len = le(m, data + 2, 2), dt = le(m, data + 4, 2),
           ds = le(m, data + 6, 2);
    size_t name = data + 8 + (version == 3), type = name + (version == 1 ? pad8(len) : len);
    size_t space = type + (version == 1 ? pad8(dt) : dt);
    size_t value = space + (version == 1 ? pad8(ds) : ds);
    size_t end = size ? data + size : value + value_bytes(m, type, space);
    char text[64];
    le(m, name, 1);
    size_t shown = len && len - 1 < m->size - name ? len - 1 : 0;
    snprintf(text, sizeof text, "%.*s", (int)(shown < 63 ? shown : 63),
             (const char *)m->bytes + name);
    add_span(m, data, value - data, "attribute message '%s' of %s", text, path);
    if (value < end)
        add_span(m, value, end - value, "value of the attribute '%s' of %s", text, path);
    return end;
}

/* Attributes kept densely (HDF5's newer format, for objects with many): objects of a fractal heap
 * ("FRHP") whose root is a single direct block ("FHDB"; larger heaps are not followed). The
 * header gives the block's address (byte 132), size (112) and whether it is one (140: no rows
 * of indirect blocks); in it the attributes are found by their form, version-3 attribute
 * messages with a name of printable characters. */
static void map_dense_attributes(file_map *m, size_t heap, const char *path) {
    if (heap == (size_t)-1)
        return; /* none */
    if (!signature_at(m, heap, "FRHP"))
        fail_msg("no fractal heap at %zu in the checkpoint", heap);
    size_t block = le(m, heap + 132, 8), size = le(m, heap + 112, 8);
    if (le(m, heap + 140, 2) != 0 || !signature_at(m, block, "FHDB") || size > m->size - block)
        return;
    for (size_t at = block + 5; at + 10 < block + size;) {
        size_t len = le(m, at + 2, 2), k = 0;
        int ok = m->bytes[at] == 3 && m->bytes[at + 1] <= 3 && len >= 2 && len <= 64 &&
                 at + 9 + len <= block + size && m->bytes[at + 8 + len] == '\0';
        for (k = 0; ok && k + 1 < len; ++k)
            ok = m->bytes[at + 9 + k] >= 0x20 && m->bytes[at + 9 + k] < 0x7f;
        at = ok ? map_attribute(m, at, 0, path) : at + 1;
    }
}

/* The messages of one block of an object header, from `at` to `end`: version 1 message headers
 * are 8 bytes (type 2, size 2, flags 1, reserved 3), version 2 ones 4 (type 1, size 2, flags 1)
 * plus 2 for a creation order. Returns the number of messages read; continuation blocks are
 * queued in `more`. */
static size_t map_messages(file_map *m, size_t at, size_t end, size_t max, int v2, int order,
                           const char *path, size_t more[][2], size_t *nmore) {
    size_t count = 0;
    size_t head = v2 ? 4 + 2 * (size_t)order : 8;
    while (count < max && at + head <= end) {
        size_t type = le(m, at, v2 ? 1 : 2), size = le(m, at + (v2 ? 1 : 2), 2), data = at + head;
        add_span(m, at, head, "message header in the object header of %s%s", path, "");
        if (type == 0xC)
            map_attribute(m, data, size, path);
        else if (type == 0x15)
            map_dense_attributes(m, le(m, data + 2 + (le(m, data + 1, 1) & 1 ? 2 : 0), 8), path);
        if (type != 0 && type != 0xC)
            add_span(m, data, size, "%s of %s", message_name(type), path);
        if (type == 0x10 && *nmore < 16) {
            more[*nmore][0] = le(m, data, 8);
            more[*nmore][1] = le(m, data + 8, 8);
            ++*nmore;
        } else if (type == 0x11) {
            /* A group of the original format: its B-tree and local heap (of the link names). */
            size_t heap = le(m, data + 8, 8);
            if (!signature_at(m, heap, "HEAP"))
                fail_msg("no local heap at %zu in the checkpoint", heap);
            add_span(m, heap, 32, "local heap of group %s%s", path, "");
            add_span(m, le(m, heap + 24, 8), le(m, heap + 8, 8), "link names of group %s%s", path,
                     "");
            map_btree(m, le(m, data, 8), 8, "B-tree node of group ", path, 0);
        } else if (type == 0x8 && le(m, data, 1) == 3 && le(m, data + 1, 1) == 2 &&
                   le(m, data + 3, 8) != (size_t)-1) {
            /* A chunked layout of version 3: a B-tree indexes the chunks. */
            size_t dims = le(m, data + 2, 1);
            map_btree(m, le(m, data + 3, 8), 8 + 8 * dims, "chunk index (B-tree node) of ", path,
                      0);
        }
        at = data + size;
        count++;
    }
    return count;
}

/* An object header of version 1 (a 16-byte prefix with the message count) or 2 ("OHDR", flags,
 * optional times and attribute limits, the size of the first block; each block ends with a
 * checksum, continuation blocks start with "OCHK"). */
static void map_header(file_map *m, size_t addr, const char *path) {
    size_t more[16][2], nmore = 0;
    if (signature_at(m, addr, "OHDR")) {
        size_t flags = le(m, addr + 5, 1), at = addr + 6;
        at += (flags & 0x20 ? 16 : 0) + (flags & 0x10 ? 4 : 0);
        int width = 1 << (flags & 3);
        size_t size = le(m, at, width);
        at += (size_t)width;
        add_span(m, addr, at - addr, "object header prefix of %s%s", path, "");
        int order = (flags & 0x04) != 0;
        map_messages(m, at, at + size, (size_t)-1, 1, order, path, more, &nmore);
        add_span(m, at + size, 4, "object header checksum of %s%s", path, "");
        for (size_t k = 0; k < nmore; ++k) {
            size_t blk = more[k][0], len = more[k][1];
            if (!signature_at(m, blk, "OCHK"))
                fail_msg("no continuation block at %zu in the checkpoint", blk);
            add_span(m, blk, 4, "object header prefix of %s%s", path, "");
            map_messages(m, blk + 4, blk + len - 4, (size_t)-1, 1, order, path, more, &nmore);
            add_span(m, blk + len - 4, 4, "object header checksum of %s%s", path, "");
        }
        return;
    }
    if (le(m, addr, 1) != 1)
        fail_msg("the object header of %s is of no version this test knows", path);
    size_t left = le(m, addr + 2, 2), at = addr + 16;
    add_span(m, addr, 16, "object header prefix of %s%s", path, "");
    left -= map_messages(m, at, at + le(m, addr + 8, 4), left, 0, 0, path, more, &nmore);
    for (size_t k = 0; k < nmore && left > 0; ++k)
        left -=
            map_messages(m, more[k][0], more[k][0] + more[k][1], left, 0, 0, path, more, &nmore);
}

/* The address of the object `path` in the file. */
static size_t object_address(hid_t file, const char *path, H5O_type_t *type) {
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t info;
    haddr_t addr = HADDR_UNDEF;
    assert_true(H5Oget_info_by_name3(file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0);
    assert_true(H5VLnative_token_to_addr(file, info.token, &addr) >= 0);
#else
    H5O_info_t info;
    assert_true(H5Oget_info_by_name2(file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0);
    haddr_t addr = info.addr;
#endif
    *type = info.type;
    return (size_t)addr;
}

/* Every object under the group `path`, and the chunks of every dataset. */
static void map_objects(file_map *m, hid_t file, const char *path) {
    H5O_type_t type;
    map_header(m, object_address(file, path, &type), path);
    if (type == H5O_TYPE_DATASET) {
        hid_t d = H5Dopen2(file, path, H5P_DEFAULT), fs = H5Dget_space(d);
        hsize_t n = 0;
        assert_true(d >= 0 && H5Dget_num_chunks(d, fs, &n) >= 0);
        for (hsize_t c = 0; c < n; ++c) {
            hsize_t offset[2];
            unsigned mask = 0;
            haddr_t addr = HADDR_UNDEF;
            hsize_t size = 0;
            assert_true(H5Dget_chunk_info(d, fs, c, offset, &mask, &addr, &size) >= 0);
            add_span(m, (size_t)addr, (size_t)size, "data of %s%s", path, "");
        }
        H5Sclose(fs);
        H5Dclose(d);
        return;
    }
    if (type != H5O_TYPE_GROUP)
        return;
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    H5G_info_t info;
    assert_true(g >= 0 && H5Gget_info(g, &info) >= 0);
    for (hsize_t k = 0; k < info.nlinks; ++k) {
        char name[128], sub[256];
        assert_true(H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name,
                                       H5P_DEFAULT) > 0);
        snprintf(sub, sizeof sub, "%s/%s", strcmp(path, "/") ? path : "", name);
        map_objects(m, file, sub);
    }
    H5Gclose(g);
}

static void map_file(file_map *m, const char *path) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    m->size = (size_t)ftell(f);
    rewind(f);
    m->bytes = malloc(m->size);
    assert_int_equal(fread(m->bytes, 1, m->size, f), m->size);
    fclose(f);
    hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(h >= 0);
    H5F_info2_t info;
    assert_true(H5Fget_info2(h, &info) >= 0);
    add_span(m, 0, 8, "superblock signature%s%s", "", "");
    add_span(m, 8, (size_t)info.super.super_size - 8, "superblock%s%s", "", "");
    map_objects(m, h, "/");
    H5Fclose(h);
}

static const span *span_at(const file_map *m, size_t at) {
    for (int k = 0; k < m->n; ++k)
        if (at >= m->all[k].at && at - m->all[k].at < m->all[k].size)
            return &m->all[k];
    return NULL;
}

/* What the byte at `at` belongs to. */
static const char *region_of(const file_map *m, size_t at) {
    const span *s = span_at(m, at);
    return s ? s->what : "unused space";
}

/* ---- the damage ---------------------------------------------------------------------------- */

typedef enum { FLIP, TRUNCATE, ZERO, APPEND } damage_kind;

typedef struct {
    damage_kind kind;
    size_t at, len; /* FLIP: byte; TRUNCATE: new size; ZERO: block; APPEND: tail length */
    int bit;
    char name[24];
    char what[192];
} damage;

static int ncases;
static damage cases[MAX_CASES];

static damage *add_case(damage_kind kind, size_t at, size_t len, int bit) {
    assert_true(ncases < MAX_CASES);
    damage *d = &cases[ncases];
    *d = (damage){kind, at, len, bit, "", ""};
    snprintf(d->name, sizeof d->name, "d%02d.h5", ncases);
    ncases++;
    return d;
}

static void add_flip(const file_map *m, size_t at, int bit) {
    damage *d = add_case(FLIP, at, 0, bit);
    snprintf(d->what, sizeof d->what, "bit %d of byte %zu flipped (%s)", bit, at, region_of(m, at));
}

static size_t draw(uint64_t *seed, size_t n) {
    size_t k = (size_t)gf_test_uniform(seed, 0.0, (double)n);
    return k < n ? k : n - 1;
}

/* A seeded flip in a span whose description starts with `kind`. */
static void add_flip_in(const file_map *m, uint64_t *seed, const char *kind) {
    const span *pick[MAX_SPANS];
    int n = 0;
    for (int k = 0; k < m->n; ++k)
        if (strncmp(m->all[k].what, kind, strlen(kind)) == 0)
            pick[n++] = &m->all[k];
    if (n == 0) {
        /* Another format of the file (HDF5's newer one has no symbol tables, for instance). */
        printf("  (the checkpoint holds no %s: no case)\n", kind);
        return;
    }
    const span *s = pick[draw(seed, (size_t)n)];
    size_t at = s->at + draw(seed, s->size);
    add_flip(m, at, (int)draw(seed, 8));
}

/* A flip of `bit` of the byte `offset` into the span described as `what`. */
static void add_flip_of(const file_map *m, const char *what, size_t offset, int bit) {
    for (int k = 0; k < m->n; ++k)
        if (strcmp(m->all[k].what, what) == 0) {
            assert_true(offset < m->all[k].size);
            add_flip(m, m->all[k].at + offset, bit);
            return;
        }
    printf("  (the checkpoint holds no %s: no case)\n", what);
}

static void make_cases(const file_map *m, uint64_t seed) {
    size_t size = m->size;
    ncases = 0;
    add_flip(m, draw(&seed, 8), (int)draw(&seed, 8)); /* the signature */
    add_flip(m, size / 2, (int)draw(&seed, 8));
    add_flip(m, size - 1, (int)draw(&seed, 8));
    /* Metadata no checksum covers, each flip of which did harm: the element size of the ids'
     * type (8 -> 262152 bytes: HDF5 read past its buffer), the exponent bias of a double type
     * (other values, exit 0), the chunk shape of a dataset (3 -> 65539 columns: a read past the
     * chunk), the restart step (151) and time, the expected particle count (1025: an error only
     * after the run, naming no file), the place of a wall (by one unit in the last place: another
     * result, exit 0; with its sign flipped every sphere flew out of the box), the first row of
     * the velocities' chunk in their index (0 -> 4194304: HDF5 reads the missing rows as the fill
     * value, 0, exit 0). Offsets count from the start of a message's data (a datatype's
     * properties start 8 bytes into it) or of a B-tree node (its first key 24 bytes in: the
     * chunk's size and filter mask, 4 bytes each, then its offsets). */
    add_flip_of(m, "datatype message of /particles/id", 6, 2);
    add_flip_of(m, "datatype message of /particles/inverse_inertia", 8 + 10, 7);
    add_flip_of(m, "layout message of /particles/angular_velocity", 17, 0);
    add_flip_of(m, "value of the attribute 'step' of /", 0, 0);
    add_flip_of(m, "value of the attribute 'time' of /", 4, 6);
    add_flip_of(m, "value of the attribute 'expected_particles' of /state", 0, 0);
    add_flip_of(m, "value of the attribute 'wall_points' of /state", 8 * 3, 0);
    add_flip_of(m, "chunk index (B-tree node) of /particles/velocity", 24 + 8 + 2, 6);
    static const char *kinds[] = {"object header prefix of",
                                  "datatype message of",
                                  "dataspace message of",
                                  "layout message of",
                                  "filter pipeline message of",
                                  "value of the attribute",
                                  "chunk index",
                                  "B-tree node of group",
                                  "symbol table node of group",
                                  "link names of group",
                                  "data of"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k)
        add_flip_in(m, &seed, kinds[k]);
    const size_t cuts[4] = {0, size / 3, 2 * size / 3, size - 1};
    for (int k = 0; k < 4; ++k) {
        damage *d = add_case(TRUNCATE, cuts[k], 0, 0);
        snprintf(d->what, sizeof d->what, "truncated to %zu of %zu bytes", cuts[k], size);
    }
    damage *d = add_case(ZERO, size / 2 - 2048, 4096, 0);
    snprintf(d->what, sizeof d->what, "bytes %zu to %zu zeroed (%s)", d->at, d->at + d->len - 1,
             region_of(m, d->at));
    d = add_case(APPEND, size, 4096, 0);
    snprintf(d->what, sizeof d->what, "%zu bytes of garbage appended", d->len);
}

/* Writes the damaged copy; its seeded garbage tail depends on the case alone. */
static void write_copy(const file_map *m, const damage *d, const char *path) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char *b = malloc(m->size + d->len);
    memcpy(b, m->bytes, m->size);
    size_t n = m->size;
    if (d->kind == FLIP)
        b[d->at] ^= (unsigned char)(1u << d->bit);
    else if (d->kind == TRUNCATE)
        n = d->at;
    else if (d->kind == ZERO)
        memset(b + d->at, 0, d->len);
    uint64_t s = 0x9e3779b97f4a7c15ULL ^ d->at;
    for (size_t k = 0; d->kind == APPEND && k < d->len; ++k)
        b[n++] = (unsigned char)gf_test_uniform(&s, 0.0, 256.0);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(b);
}

/* ---- running the program ------------------------------------------------------------------- */

/* granflow restarted from `ckpt` on `ranks` ranks to FIRST_STEPS + MORE_STEPS, its end-of-run
 * checkpoint at `end`, under the time limit: timeout exits with 124 (137 if it had to kill). Each
 * rank has its own limit, so that none outlives a launcher killed by the outer one.
 * Returns the exit status; the output (malloc'd) and the wall time. */
static int restart(int ranks, const char *ckpt, const char *end, char **out, double *seconds) {
    char launcher[600] = "", cmd[4096];
    if (ranks > 1)
        snprintf(launcher, sizeof launcher, "timeout -k 10 %d %s -n %d --oversubscribe",
                 LIMIT_SECONDS + 30, GF_MPIEXEC, ranks);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s timeout -k 10 %d %s %s/configs/demo.cfg -Output.progress_every=0 "
             "-Output.directory=%s/out -Output.checkpoint=%s -Output.checkpoint_every=%d "
             "-Time.steps=%d --restart %s",
             tmpdir, launcher, LIMIT_SECONDS, GRANFLOW_EXE, GF_SOURCE_DIR, tmpdir, end, FIRST_STEPS,
             FIRST_STEPS + MORE_STEPS, ckpt);
    remove(end);
    double t0 = now();
    int rc = gf_test_run(cmd, out);
    *seconds = now() - t0;
    return rc;
}

/* The line of `text` that starts with `prefix` (a copy, without its newline), or "". */
static void line_with(const char *text, const char *prefix, char *line, size_t size) {
    const char *at = strstr(text, prefix);
    line[0] = '\0';
    if (at)
        snprintf(line, size, "%.*s", (int)strcspn(at, "\n"), at);
}

/* ---- comparing end states ------------------------------------------------------------------ */

/* A whole dataset in its own type (native byte order): rows of `*width` bytes. NULL if it cannot
 * be read. */
static unsigned char *read_dataset(hid_t f, const char *name, size_t *rows, size_t *width) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0)
        return NULL;
    hid_t sp = H5Dget_space(d), ft = H5Dget_type(d), type = H5Tget_native_type(ft, H5T_DIR_ASCEND);
    hsize_t dims[2] = {0, 1};
    int rank = H5Sget_simple_extent_dims(sp, dims, NULL);
    *rows = (size_t)dims[0];
    *width = (rank > 1 ? (size_t)dims[1] : 1) * H5Tget_size(type);
    unsigned char *buf = malloc(*rows * *width + 1);
    if (rank < 1 || rank > 2 || H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        buf = NULL;
    }
    H5Tclose(type);
    H5Tclose(ft);
    H5Sclose(sp);
    H5Dclose(d);
    return buf;
}

static int same_attribute(hid_t a, hid_t b, const char *name, hid_t type) {
    double x[2] = {0}, y[2] = {1};
    hid_t p = H5Aopen(a, name, H5P_DEFAULT), q = H5Aopen(b, name, H5P_DEFAULT);
    int ok = p >= 0 && q >= 0 && H5Aread(p, type, x) >= 0 && H5Aread(q, type, y) >= 0 &&
             memcmp(x, y, H5Tget_size(type)) == 0;
    if (p >= 0)
        H5Aclose(p);
    if (q >= 0)
        H5Aclose(q);
    return ok;
}

/* The datasets of the group `group` of `want` equal those of `got`: rows of a dataset with a row
 * per particle matched by id (`row`: the row in `want` of each id), other rows in order. */
static int same_group(hid_t got, hid_t want, const char *group, const int64_t *ids, size_t n,
                      const size_t *row, char *why, size_t size) {
    hid_t g = H5Gopen2(want, group, H5P_DEFAULT);
    H5G_info_t info;
    assert_true(g >= 0 && H5Gget_info(g, &info) >= 0);
    int ok = 1;
    for (hsize_t k = 0; ok && k < info.nlinks; ++k) {
        char name[128], path[300];
        assert_true(H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name,
                                       H5P_DEFAULT) > 0);
        snprintf(path, sizeof path, "%s/%s", group, name);
        size_t ra = 0, rb = 0, wa = 0, wb = 0;
        unsigned char *x = read_dataset(got, path, &ra, &wa);
        unsigned char *y = read_dataset(want, path, &rb, &wb);
        assert_non_null(y);
        ok = x && ra == rb && wa == wb;
        if (!ok)
            snprintf(why, size, "%.160s has another shape or cannot be read", path);
        for (size_t i = 0; ok && i < ra; ++i) {
            size_t j = ids && ra == n ? row[ids[i]] : i;
            ok = memcmp(x + i * wa, y + j * wb, wa) == 0;
            if (!ok)
                snprintf(why, size, "%.160s differs (row %zu)", path, i);
        }
        free(x);
        free(y);
    }
    H5Gclose(g);
    return ok;
}

/* 1 if the checkpoints `got` and `want` hold the same state to the last bit: step and time, every
 * particle column (rows matched by id) and the warm-start entries; else 0 and what differs. */
static int same_state(const char *got, const char *want, char *why, size_t size) {
    hid_t a = H5Fopen(got, H5F_ACC_RDONLY, H5P_DEFAULT),
          b = H5Fopen(want, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(b >= 0);
    int ok = a >= 0;
    snprintf(why, size, "its end checkpoint cannot be read");
    if (ok && !(same_attribute(a, b, "step", H5T_NATIVE_LLONG) &&
                same_attribute(a, b, "time", H5T_NATIVE_DOUBLE))) {
        ok = 0;
        snprintf(why, size, "it ended at another step or time");
    }
    size_t na = 0, nb = 0, wa = 0, wb = 0;
    int64_t *ida = ok ? (int64_t *)read_dataset(a, "/particles/id", &na, &wa) : NULL;
    int64_t *idb = (int64_t *)read_dataset(b, "/particles/id", &nb, &wb);
    assert_true(idb && wb == sizeof *idb);
    if (ok && (!ida || na != nb || wa != wb)) {
        ok = 0;
        snprintf(why, size, "it ended with %zu particles, not %zu", na, nb);
    }
    /* The row of each id in `want` (the demo's ids are 0 .. n-1). */
    size_t *row = malloc((nb + 1) * sizeof *row);
    for (size_t i = 0; i < nb; ++i) {
        assert_true(idb[i] >= 0 && (size_t)idb[i] < nb);
        row[idb[i]] = i;
    }
    for (size_t i = 0; ok && i < na; ++i)
        if (ida[i] < 0 || (size_t)ida[i] >= nb) {
            ok = 0;
            snprintf(why, size, "it ended with a particle of id %lld", (long long)ida[i]);
        }
    ok = ok && same_group(a, b, "/particles", ida, nb, row, why, size) &&
         same_group(a, b, "/warmstart", NULL, 0, NULL, why, size);
    free(ida);
    free(idb);
    free(row);
    if (a >= 0)
        H5Fclose(a);
    H5Fclose(b);
    return ok;
}

/* ---- the test ------------------------------------------------------------------------------ */

typedef struct {
    char summary[256]; /* the reference run's summary line */
    char end[512];     /* and its end-of-run checkpoint */
} reference;

/* A sanitizer's report in the output, whatever the exit status. */
static const char *sanitizer_report(const char *out) {
    static const char *marks[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                  ": runtime error: "};
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; ++k)
        if (strstr(out, marks[k]))
            return marks[k];
    return NULL;
}

/* The verdict on one restart: 1 if it passed; the outcome in `outcome`. */
static int judge(int rc, double seconds, const char *out, const char *copy, const char *end,
                 const reference *ref, char *outcome, size_t size) {
    const char *report = sanitizer_report(out);
    char line[512], want[600];
    if (rc == 124 || rc == 137 || seconds >= LIMIT_SECONDS) {
        snprintf(outcome, size, "no end within %d s, killed (a hang, or a run gone wrong)",
                 LIMIT_SECONDS);
        return 0;
    }
    if (rc == 86 || rc == 87 || report) {
        snprintf(outcome, size, "sanitizer report (exit %d): %s", rc,
                 report ? report : "exit status of a sanitizer");
        return 0;
    }
    if (rc == 1) {
        /* A clear error: a message that names the checkpoint. */
        for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
            snprintf(line, sizeof line, "%.*s", (int)strcspn(l, "\n"), l);
            if (strstr(line, "error:") && strstr(line, copy)) {
                const char *msg = strstr(line, "error:");
                snprintf(outcome, size, "refused: %s", msg);
                return 1;
            }
        }
        line_with(out, "[rank", line, sizeof line);
        snprintf(outcome, size, "exit 1 without an error naming the file: %s", line);
        return 0;
    }
    if (rc != 0) {
        if (rc > 128)
            snprintf(outcome, size, "killed by signal %d", rc - 128);
        else
            snprintf(outcome, size, "exit %d", rc);
        return 0;
    }
    snprintf(want, sizeof want, "restarted from %s at step %d", copy, FIRST_STEPS);
    line_with(out, "run summary:", line, sizeof line);
    if (!strstr(out, want) || strcmp(line, ref->summary) != 0) {
        snprintf(outcome, size, "exit 0, but '%.200s' instead of '%.200s'", line, ref->summary);
        return 0;
    }
    char why[256];
    if (!same_state(end, ref->end, why, sizeof why)) {
        snprintf(outcome, size, "exit 0 with another result: %s", why);
        return 0;
    }
    snprintf(outcome, size, "ran, same result as from the undamaged checkpoint");
    return 1;
}

/* The part of a crash's output worth reading: a sanitizer's report, an error, else the tail. */
static void print_excerpt(const char *out) {
    const char *from = NULL;
    static const char *marks[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                  "runtime error: ", "error:"};
    for (size_t k = 0; k < sizeof marks / sizeof marks[0] && !from; ++k)
        from = strstr(out, marks[k]);
    if (!from) {
        from = out + strlen(out);
        for (int lines = 0; from > out && lines < 12; lines += *from == '\n')
            --from;
    }
    while (from > out && from[-1] != '\n')
        --from;
    printf("%.*s\n", 2000, from);
}

static void test_restart_from_damaged_checkpoints(void **state) {
    (void)state;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a damaged file's errors are expected */
    /* A sanitizer's report must not pass for a clean error exit (1): they get their own. */
    char opts[1024];
    const char *asan = getenv("ASAN_OPTIONS"), *ubsan = getenv("UBSAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%sexitcode=86", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    snprintf(opts, sizeof opts, "%s%sexitcode=87", ubsan ? ubsan : "", ubsan && *ubsan ? ":" : "");
    setenv("UBSAN_OPTIONS", opts, 1);

    /* The undamaged checkpoint, at the end of a short run. */
    char good[512], cmd[4096], *out = NULL;
    snprintf(good, sizeof good, "%s/c.h5", tmpdir);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s %s/configs/demo.cfg -Output.progress_every=0 -Output.directory=%s/out "
             "-Output.checkpoint=%s -Output.checkpoint_every=%d -Time.steps=%d",
             tmpdir, GRANFLOW_EXE, GF_SOURCE_DIR, tmpdir, good, FIRST_STEPS, FIRST_STEPS);
    int rc = gf_test_run(cmd, &out);
    if (rc != 0)
        fail_msg("the run writing the checkpoint failed (%d):\n%s", rc, out);
    free(out);

    /* The references: restarts from the undamaged checkpoint on 1 and 2 ranks. */
    reference ref[2];
    for (int r = 0; r < 2; ++r) {
        double seconds;
        snprintf(ref[r].end, sizeof ref[r].end, "%s/reference_np%d.h5", tmpdir, r + 1);
        rc = restart(r + 1, good, ref[r].end, &out, &seconds);
        line_with(out, "run summary:", ref[r].summary, sizeof ref[r].summary);
        char want[128];
        snprintf(want, sizeof want, "run summary: %d steps (%d to %d, restarted)", MORE_STEPS,
                 FIRST_STEPS, FIRST_STEPS + MORE_STEPS);
        if (rc != 0 || strncmp(ref[r].summary, want, strlen(want)) != 0)
            fail_msg("the restart from the undamaged checkpoint on %d rank(s) failed (%d):\n%s",
                     r + 1, rc, out);
        free(out);
    }

    file_map map;
    map_file(&map, good);
    const char *env = getenv("GF_DAMAGE_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : 16;
    make_cases(&map, seed ? seed : 1);

    printf("restarts from %d damaged copies of a checkpoint of %zu bytes (step %d), seed %llu:\n",
           ncases, map.size, FIRST_STEPS, (unsigned long long)seed);
    static char failures[1 << 15], names[1 << 12];
    size_t at = 0, nat = 0;
    int nfail = 0;
    for (int k = 0; k < ncases; ++k) {
        char copy[512], end[512];
        snprintf(copy, sizeof copy, "%s/%s", tmpdir, cases[k].name);
        snprintf(end, sizeof end, "%s/end.h5", tmpdir);
        write_copy(&map, &cases[k], copy);
        printf("  %s: %s\n", cases[k].name, cases[k].what);
        int failed_before = nfail;
        for (int ranks = 1; ranks <= 2; ++ranks) {
            double seconds = 0.0;
            char outcome[700];
            rc = restart(ranks, copy, end, &out, &seconds);
            int ok = judge(rc, seconds, out, copy, end, &ref[ranks - 1], outcome, sizeof outcome);
            printf("      %d rank(s): exit %3d %5.1f s  %s  %s\n", ranks, rc, seconds,
                   ok ? "PASS" : "FAIL", outcome);
            if (!ok) {
                if (rc != 0 && rc != 1)
                    print_excerpt(out);
                nfail++;
                if (at < sizeof failures)
                    at += (size_t)snprintf(failures + at, sizeof failures - at,
                                           "  %s (%s) on %d rank(s): %s\n", cases[k].name,
                                           cases[k].what, ranks, outcome);
                if (nat < sizeof names)
                    nat += (size_t)snprintf(names + nat, sizeof names - nat, " %.3s/%d",
                                            cases[k].name, ranks);
            }
            free(out);
        }
        if (nfail == failed_before)
            remove(copy);
    }
    free(map.bytes);
    fflush(stdout);
    if (nfail) {
        /* The failing copies stay, with the undamaged checkpoint, to reproduce the failures. */
        char path[600];
        for (int r = 0; r < 2; ++r)
            remove(ref[r].end);
        snprintf(path, sizeof path, "%s/end.h5", tmpdir);
        remove(path);
        printf("%d of %d restarts from damaged checkpoints failed:\n%s", nfail, 2 * ncases,
               failures);
        printf("the failing damaged copies and the undamaged c.h5 are kept in %s\n", tmpdir);
        fflush(stdout);
        tmpdir[0] = '\0';
        fail_msg("%d of %d restarts from damaged checkpoints failed (copy/ranks):%s", nfail,
                 2 * ncases, names);
    }
}

int main(void) {
    if (gf_test_tmpdir(tmpdir, sizeof tmpdir, "restart_damaged"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_from_damaged_checkpoints),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (tmpdir[0] && gf_test_rmtree(tmpdir))
        return 1;
    return rc;
}
