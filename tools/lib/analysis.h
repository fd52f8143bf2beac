/* The computations behind the post-processing tools, separate from file handling so the tests
 * can check them on synthetic data. */
#ifndef GF_TOOLS_ANALYSIS_H
#define GF_TOOLS_ANALYSIS_H

#include <stddef.h>

/* Particles binned into nx x ny cells over [x0, x1] x [y0, y1] of a plane: coordinates along
 * axis[0] across and axis[1] up (x-y unless set otherwise), the third axis ignored. */
typedef struct {
    int nx, ny, axis[2];
    double x0, x1, y0, y1,
        depth; /* depth: the extent along the third axis, for the solid fraction */
    double *sum_v[3], *sum_w, *volume;
    long long *count;
} gf_field;

int gf_field_init(gf_field *f, int nx, int ny, double x0, double x1, double y0, double y1,
                  double depth);
/* The same in the plane of axes ax and ay (0 x, 1 y, 2 z; distinct). */
int gf_field_init_plane(gf_field *f, int ax, int ay, int nx, int ny, double x0, double x1,
                        double y0, double y1, double depth);
/* A grid for a width x height region: square cells, `cells` along the longer side and as many
 * along the other as keep them square (at least 1). */
void gf_field_fit_grid(double width, double height, int cells, int *nx, int *ny);
/* A grid of cells about size wide: the nearest whole number along each side (at least 1).
 * Returns -1 if that exceeds max along a side. */
int gf_field_cell_grid(double width, double height, double size, int max, int *nx, int *ny);
void gf_field_free(gf_field *f);
/* Adds particles (positions, velocities, angular velocities as n x 3, radii). */
void gf_field_add(gf_field *f, size_t n, const double *x, const double *v, const double *w,
                  const double *radius);
/* Per cell (index j * nx + i): mean velocity components and magnitude (of the mean vector),
 * mean angular-velocity magnitude, count and solid fraction; NaN where a cell is empty.
 * `snapshots` divides counts and volumes when several snapshots were added. */
void gf_field_result(const gf_field *f, int snapshots, double *vx, double *vy, double *vz,
                     double *vmag, double *wmag, double *count, double *fraction);

/* The radial distribution function of n points in the box [lo, hi] (periodic[k]: minimum image
 * along k, the box being the whole periodic length), for r in (0, rmax] in nbins bins:
 * g[b] = pairs in shell b / (n rho V_shell f(r)), with rho = n / V and f(r) the mean fraction of
 * a shell of radius r around a point of the box that lies in the box (exact for a box, computed
 * by quadrature over directions), so an ideal gas gives g = 1 up to noise, also near the walls.
 * With edge_correct 0, f = 1: the plain normalisation of the paper, which falls below 1 with r
 * as shells leave the region. r_mid gets the bin centres. Returns 0 on success. */
int gf_rdf(size_t n, const double *x, const double lo[3], const double hi[3], const int periodic[3],
           double rmax, int nbins, int edge_correct, double *r_mid, double *g);

/* The edge-correction factor f(r) used by gf_rdf. */
double gf_rdf_edge_factor(double r, const double len[3], const int periodic[3]);

#endif
