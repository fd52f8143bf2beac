/* Triangle meshes as geometry: a closed or open surface of triangles (two-sided: particles may
 * lie on either side of a triangle), in its own frame, with the adjacency that makes its contacts
 * exact and a uniform grid that finds the triangles near a point.
 *
 * Contacts with a mesh are the locally closest points of its surface: a point q of triangle t,
 * found by the closest-point test of t, is a contact only when every other triangle holding the
 * feature q lies on (the edge or vertex of t it lies on) has its own closest point at q too.
 * Otherwise a neighbour's surface comes closer, and that neighbour's point is the contact. So a
 * sphere over a flat part of a mesh touches one face, however the faces meet under it; over a
 * ridge it touches the ridge's edge once, not once per triangle; in a valley it touches both
 * sides; and a point shared by several triangles is reported once (keyed by the feature).
 *
 * The vertices of a mesh read from an STL file (a triangle soup) are welded when equal to
 * rounding (GF_TRIMESH_WELD of the mesh's size), so adjacency exists wherever the file's
 * triangles share corners. */
#ifndef GRANFLOW_TRIMESH_H
#define GRANFLOW_TRIMESH_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"

/* Vertices closer than this share one index (relative to the mesh's bounding-box diagonal). */
#define GF_TRIMESH_WELD 1e-9

/* The most triangles of one mesh. */
#define GF_TRIMESH_MAX_TRIANGLES 4000000

/* The most contacts one query returns: a sphere in a mesh corner touches a few faces. */
#define GF_TRIMESH_HITS_MAX 16

typedef struct {
    size_t nv, nt, ne;
    double (*v)[3];      /* vertices, mesh frame */
    int32_t (*tri)[3];   /* vertex indices, counter-clockwise about normal */
    double (*normal)[3]; /* unit face normals */
    int32_t (*edge)[3];  /* edge index of triangle edge k (from vertex k to vertex k + 1) */
    int32_t *edge_start, *edge_tri; /* triangles of each edge (CSR) */
    int32_t *vert_start, *vert_tri; /* triangles of each vertex (CSR) */
    double lo[3], hi[3];            /* bounding box */
    double size;                    /* its diagonal */
    /* Uniform grid over the bounding box: the triangles whose box meets each cell (CSR). */
    double cell;
    int ncell[3];
    int32_t *cell_start, *cell_tri;
    /* Feature keys are those of the whole mesh: a part of it (gf_trimesh_subset, what a rank
     * keeps under MPI) numbers its features as the whole does, through the global index of each
     * local triangle, edge and vertex (NULL for a whole mesh: the identity) and the whole mesh's
     * counts, so that a contact's warm-start key does not depend on the rank count. */
    int32_t *tri_id, *edge_id, *vert_id;
    size_t key_nt, key_ne;
} gf_trimesh;

/* A contact point of a query. */
typedef struct {
    double q[3]; /* the closest point of the surface (mesh frame) */
    double n[3]; /* unit, from the surface towards the query point */
    double dist; /* distance of the query point from q */
    int32_t key; /* the feature (whole-mesh numbering, see tri_id): a face t (t), an edge e
                  * (nt + e), a vertex v (nt + ne + v) */
    int32_t tri; /* a triangle holding the feature */
} gf_trimesh_hit;

void gf_trimesh_init(gf_trimesh *m);
void gf_trimesh_free(gf_trimesh *m);

/* Builds the mesh from nt triangles given by their corners (9 numbers each: x, y, z of three
 * corners): welds vertices, finds edges and adjacency, builds the grid. Refuses degenerate
 * (zero-area) and non-finite triangles, naming the first. */
gf_status gf_trimesh_build(gf_trimesh *m, size_t nt, const double *corners);

/* The part of `whole` made of the triangles flagged in keep[0 .. whole->nt) (any number, also
 * none), in their order, with the vertices and edges they use and the adjacency among them;
 * its features keep the whole mesh's keys, and its size (the rounding scale of queries) is the
 * whole mesh's, so that a query near kept triangles whose neighbours are kept too finds what
 * it finds in the whole mesh. */
gf_status gf_trimesh_subset(const gf_trimesh *whole, const unsigned char *keep, gf_trimesh *part);

/* The contacts of a point x (mesh frame) within distance `reach` of the surface: at most
 * GF_TRIMESH_HITS_MAX (the nearest), in hits[0 .. *count). Scratch: *buf of *cap ints, grown as
 * needed (the caller keeps it between calls and frees it). */
gf_status gf_trimesh_query(const gf_trimesh *m, const double x[3], double reach,
                           gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX], int *count, int32_t **buf,
                           size_t *cap);

/* Closest point of triangle t to x; returns the feature: 0 face, 1..3 edge k - 1 (from vertex
 * k - 1), 4..6 vertex k - 4. */
int gf_trimesh_closest(const gf_trimesh *m, size_t t, const double x[3], double q[3]);

/* The triangles whose grid cells a ball (x, reach) meets, each once (a superset of those within
 * reach), into (*buf)[0 .. *n); *buf of *cap grown as needed. */
gf_status gf_trimesh_candidates(const gf_trimesh *m, const double x[3], double reach, int32_t **buf,
                                size_t *cap, size_t *n);

/* The feature of triangle t farthest along the unit direction u (mesh frame): its face when its
 * corners are equally far, else an edge or a corner, each with the tolerance `slope` (the sine
 * of an angle) per unit of length between corners. Returns its key (as gf_trimesh_hit.key).
 * *surface tells whether it is a feature of the surface along u: no triangle sharing it reaches
 * farther along u (the contact through it is the surface's, not an artefact of the lone
 * triangle). */
int32_t gf_trimesh_extreme(const gf_trimesh *m, size_t t, const double u[3], double slope,
                           int *surface);

/* How deep a sphere at x (mesh frame) of radius r reaches into the surface: r less its distance
 * from the nearest triangle, 0 when clear. */
double gf_trimesh_depth(const gf_trimesh *m, const double x[3], double r);
/* Whether a sphere at x (mesh frame) of radius r overlaps the surface (touching is not
 * overlapping, up to rounding). */
int gf_trimesh_overlap(const gf_trimesh *m, const double x[3], double r);

/* Reads an STL file, ASCII or binary (told apart by the size a binary file of its triangle
 * count must have), into a triangle soup: *corners (9 per triangle, malloc'd) and *nt. Errors
 * name the file and, for ASCII, the line. */
gf_status gf_trimesh_read_stl(const char *path, double **corners, size_t *nt);

/* Triangle soups of simple surfaces (9 numbers per triangle, malloc'd), for finite walls, drums
 * and hoppers; `segments` around a circle. A rectangle of width w along `edge` and height h
 * along normal x edge, centred at c; a disc of radius r with a hole of radius `hole` (0: none);
 * a cone frustum (radius r1 at c - axis L/2, r2 at c + axis L/2; equal radii: a tube) with
 * optional caps. Lengths along the surfaces are cut into pieces no longer than about `piece`
 * (<= 0: no cuts), so that no triangle is much longer than it is wide. */
gf_status gf_trimesh_rectangle(const double c[3], const double normal[3], const double edge[3],
                               double w, double h, double piece, double **corners, size_t *nt);
gf_status gf_trimesh_disc(const double c[3], const double normal[3], double r, double hole,
                          int segments, double **corners, size_t *nt);
gf_status gf_trimesh_frustum(const double c[3], const double axis[3], double length, double r1,
                             double r2, int segments, int caps, double piece, double **corners,
                             size_t *nt);

#endif
