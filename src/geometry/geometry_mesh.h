/* The static and kinematic geometry as a surface mesh for visualisation: each wall as the
 * polygon where its plane cuts the domain box, each box obstacle as a hexahedron, each cylinder
 * as a prism of GF_MESH_CYLINDER_SIDES quadrilaterals closed by two polygons, each triangle of a
 * triangle mesh as a polygon of three points. The cells are in
 * XDMF's mixed-topology layout, so the snapshot writer stores them as they are. */
#ifndef GRANFLOW_GEOMETRY_MESH_H
#define GRANFLOW_GEOMETRY_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"
#include "geometry/geometry.h"

#define GF_MESH_CYLINDER_SIDES 32

/* XDMF mixed-topology cell codes. */
#define GF_XDMF_POLYGON 3
#define GF_XDMF_QUADRILATERAL 5
#define GF_XDMF_HEXAHEDRON 9

enum { GF_MESH_WALL = 0, GF_MESH_BOX = 1, GF_MESH_CYLINDER = 2, GF_MESH_TRIANGLES = 3 };

typedef struct {
    size_t npoints, ncells, nconn;
    double *points; /* npoints x 3 */
    /* Per cell: its XDMF code, for polygons the number of points, then the point indices. */
    int64_t *conn;
    int32_t *kind; /* per cell: GF_MESH_WALL, GF_MESH_BOX, GF_MESH_CYLINDER, GF_MESH_TRIANGLES */
    int32_t *body; /* per cell: the geometry body (wall k, GF_BOX_BASE + b, GF_CYL_BASE + c) */
} gf_geometry_mesh;

void gf_geometry_mesh_init(gf_geometry_mesh *m);
void gf_geometry_mesh_free(gf_geometry_mesh *m);

/* The mesh of the walls (clipped to [lo, hi]; a wall that misses the box has no cell) and the
 * obstacles of `w` at their present positions. */
gf_status gf_geometry_mesh_build(const gf_walls *w, const double lo[3], const double hi[3],
                                 gf_geometry_mesh *m);
/* This rank's share of that mesh under the decomposition d (NULL: all of it), so that the
 * ranks' shares hold every cell once: rank 0 the walls and obstacles, each rank the triangles
 * whose centroid gf_walls_region_owner gives it (the rank holds the triangle), with the points
 * they use (a point shared by triangles of two ranks appears in both shares). */
gf_status gf_geometry_mesh_build_share(const gf_walls *w, const double lo[3], const double hi[3],
                                       const gf_decomp *d, gf_geometry_mesh *m);

#endif
