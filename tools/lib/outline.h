/* The walls and obstacles of a snapshot's geometry seen in a plane of the box, as outlines for
 * the heat maps of gf-velfield. */
#ifndef GF_TOOLS_OUTLINE_H
#define GF_TOOLS_OUTLINE_H

#include <stddef.h>

#include "snapshot.h"

/* Polylines in the plane's coordinates: outline k is points start[k] .. start[k + 1] - 1 of x
 * and y, closed (a polygon) or not (a segment). */
typedef struct {
    size_t n;
    size_t *start;
    int *closed;
    double *x, *y;
} gf_outlines;

/* The outlines of the mesh g in the plane of axes ax (across) and ay (up), the velocity field's
 * cells spanning the box's whole depth along the third axis: so each obstacle (box or cylinder)
 * is drawn as the outline of its projection along that axis, the convex hull of its points (for
 * an obstacle through the whole depth, its section). A wall parallel to the third axis is drawn
 * as the segment where it cuts the plane, unless it lies along the edge of the box's section
 * [lo[0], hi[0]] x [lo[1], hi[1]], which the frame shows; other walls would cover the map and
 * are left out. Returns 0 on success, -1 when out of memory. */
int gf_outlines_project(const gf_snapshot_geometry *g, int ax, int ay, const double lo[2],
                        const double hi[2], gf_outlines *o);
void gf_outlines_free(gf_outlines *o);

#endif
