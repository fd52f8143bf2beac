/* Reading granflow snapshots for the post-processing tools: header and particle data in chunks,
 * so files larger than memory can be processed. Serial HDF5 (no MPI needed). */
#ifndef GF_TOOLS_SNAPSHOT_H
#define GF_TOOLS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    long long hid; /* hid_t of the open file */
    char path[1024];
    double time, box_min[3], box_max[3];
    double dt; /* the time step (s; 0 if the file does not say) */
    int periodic[3];
    long long step, count;
    int has_contacts, has_mass; /* mass: files before granflow 0.1 lack it */
    long long ncontacts;
    long long chunk; /* rows read at once */
    /* The rank groups of the rows: rows of rank r are rank_offsets[r] .. rank_offsets[r+1]-1,
     * sorted by id in a snapshot (nranks + 1 values; NULL and 0 if the file records none). */
    int nranks;
    long long *rank_offsets;
} gf_snapshot;

/* Rows per chunk unless the environment variable GF_CHUNK_ROWS says otherwise: 1e6 particles are
 * 120 MB of columns. */
#define GF_SNAPSHOT_CHUNK 1000000

/* Particle columns of one chunk (arrays of n, 3n for vectors). */
typedef struct {
    size_t n;
    int64_t *id;
    double *x, *v, *w, *radius;
    double *mass; /* NULL if the file has no masses */
} gf_chunk;

/* Opens and checks a snapshot (or checkpoint), with its rank groups (the dataset
 * /particles/rank_offsets, or the attribute of that name in files of earlier versions): the
 * header attributes at the count and class of values the writer gives them and with possible
 * values, the particle columns as datasets of one row per particle, the rank offsets rising from
 * 0 to the particle count. err gets a message naming the file on failure. Returns 0 on
 * success. */
int gf_snapshot_open(gf_snapshot *s, const char *path, char *err, size_t errsize);
void gf_snapshot_close(gf_snapshot *s);
/* Reads rows first .. first + n - 1 into c (allocating), refusing rows that are not in the file
 * and values no run writes (radii not finite and positive, masses not finite and >= 0, positions
 * and velocities not finite); returns 0 on success. */
int gf_snapshot_read(const gf_snapshot *s, long long first, size_t n, gf_chunk *c, char *err,
                     size_t errsize);
void gf_chunk_free(gf_chunk *c);
/* Calls visit on every chunk of at most s->chunk rows in order; stops at the first
 * non-zero return of visit (which must then have written err). Returns 0 on success. */
int gf_snapshot_scan(const gf_snapshot *s, int (*visit)(void *ctx, const gf_chunk *c), void *ctx,
                     char *err, size_t errsize);
/* One scalar contact column ("gap", "normal_impulse", ...) of s->ncontacts finite
 * floating-point values into a new array; returns 0 on success. */
int gf_snapshot_read_contacts(const gf_snapshot *s, const char *column, double **out, char *err,
                              size_t errsize);

/* A whole dataset of ncols columns (integer: as int64, else as finite doubles) into a new *buf,
 * its rows in *rows; returns 0 on success, else err names the file and dataset. */
int gf_snapshot_read_table(const gf_snapshot *s, const char *path, int integer, int ncols,
                           size_t *rows, void **buf, char *err, size_t errsize);

/* The walls (clipped to the box), obstacle boxes and cylinders of a snapshot as the surface mesh
 * the engine writes in /geometry (docs/output.md): points (npoints x 3, m), the cells in
 * XDMF's mixed topology (per cell its code, 3 polygon, 5 quadrilateral, 9 hexahedron; for
 * polygons the number of points; then the point indices), per cell its kind (0 wall, 1 box,
 * 2 cylinder) and body. */
typedef struct {
    size_t npoints, ncells, nconn;
    double *points;
    int64_t *conn;
    int32_t *kind, *body;
} gf_snapshot_geometry;

/* Reads /geometry into g; a file without it (written before granflow wrote the geometry, or of
 * a run without walls and obstacles) gives an empty mesh. Refuses a mesh whose cells do not
 * parse: an unknown code, a point index out of range, a cell count other than that of kinds,
 * points not finite. Returns 0 on success; on failure err names the file. */
int gf_snapshot_read_geometry(const gf_snapshot *s, gf_snapshot_geometry *g, char *err,
                              size_t errsize);
void gf_snapshot_geometry_free(gf_snapshot_geometry *g);
/* The cell starting at conn[at]: its code, number of points and first point index's position in
 * conn; returns the position of the next cell, or 0 if the cell is malformed. */
size_t gf_snapshot_geometry_cell(const gf_snapshot_geometry *g, size_t at, int *code, size_t *n,
                                 size_t *first);

#endif
