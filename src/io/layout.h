/* The layout of granflow's HDF5 files, shared by their writer (io_write.c) and their reader
 * (io_read.c); internal to src/io. */
#ifndef GF_IO_LAYOUT_H
#define GF_IO_LAYOUT_H

#include "geometry/geometry.h"
#include "geometry/geometry_mesh.h"
#include "body/particles.h"
#include "sim/sim.h"

#include "h5/format.h"

/* The root attributes of the decomposition's cuts along x, y and z. */
extern const char *const gf_io_layout_cuts[3];

/* The member spheres of the clumps among p's owned particles (rows of /clump_members). */
size_t gf_io_layout_members(const gf_particles *p);

/* The cells of /geometry this rank writes (gf_geometry_mesh_build_share) and their offsets and
 * totals over the ranks (points, cells, connectivity). Collective. */
gf_status gf_io_layout_geometry_share(const gf_sim *sim, gf_geometry_mesh *m, int64_t off[3],
                                      int64_t total[3]);

#endif
