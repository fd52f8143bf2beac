/* Coarse-grained continuum fields of a granular assembly (Goldhirsch 2010; Weinhart, Thornton,
 * Luding and Bokhove 2012, as MercuryCG computes them): at a point r, with the Gaussian
 * coarse-graining function psi of width w,
 *
 *   density          rho(r)   = sum_i m_i psi(r - x_i)
 *   solid fraction   phi(r)   = sum_i V_i psi(r - x_i)
 *   velocity         V(r)     = sum_i m_i v_i psi(r - x_i) / rho(r)
 *   kinetic stress   sk(r)    = sum_i m_i v'_i (x) v'_i psi(r - x_i),  v'_i = v_i - V(r)
 *   contact stress   sc(r)    = sum_c f_c (x) b_c  int_0^1 psi(r - x_c1 + s b_c) ds
 *
 * with f_c the force on the contact's first body and b_c the branch from its second end (the
 * other body's centre, or the contact point on a wall) to the first body's centre: stresses are
 * positive in compression, so that trace(sk + sc)/3 is the pressure. These fields satisfy the
 * continuum balances exactly, for any w: in static equilibrium d(sigma_zz)/dz = -rho g.
 *
 * psi is a Gaussian along the resolved axes (one for a profile, two for a plane averaged through
 * the box, three for a plane at a given depth) and uniform over the box along the others, cut
 * off beyond `cutoff` widths; periodic axes wrap. The line integral is exact (error functions).
 * Sums over several snapshots give time averages (velocity fluctuations then relative to the
 * time-averaged mean). */
#ifndef GF_TOOLS_CG_H
#define GF_TOOLS_CG_H

#include <stddef.h>

typedef struct {
    int resolved[3]; /* 1: Gaussian along the axis; 0: uniform over the box */
    double width, cutoff;
    double lo[3], hi[3]; /* the box */
    int periodic[3];
    int n[3];           /* points along each axis (1 along the others) */
    double g0[3], h[3]; /* the first point and the spacing along each axis */
    size_t npoints;
    /* Sums per point, index (k2 * n[1] + k1) * n[0] + k0. */
    double *mass, *volume, *momentum /* 3 per point */, *second /* sum m v v psi: 9 */,
        *contact /* 9 */;
    int samples; /* snapshots added */
} gf_cg;

/* A grid of n[a] points along each resolved axis a at the centres of n[a] equal cells of
 * [from[a], to[a]] (from == to: one point there); the box [lo, hi] averages the other axes and
 * wraps the periodic ones. Returns 0, or -1 (arguments out of range, out of memory). */
int gf_cg_init(gf_cg *c, const int resolved[3], const int n[3], const double from[3],
               const double to[3], const double lo[3], const double hi[3], const int periodic[3],
               double width, double cutoff);
void gf_cg_free(gf_cg *c);
/* Adds n bodies: positions and velocities (n x 3), masses and volumes. */
void gf_cg_add_bodies(gf_cg *c, size_t n, const double *x, const double *v, const double *mass,
                      const double *volume);
/* Adds n contacts: the first body's centre x1, the second end x2 and the force on the first
 * body f (each n x 3). */
void gf_cg_add_contacts(gf_cg *c, size_t n, const double *x1, const double *x2, const double *f);
/* The coordinates of point k. */
void gf_cg_point(const gf_cg *c, size_t k, double r[3]);
/* The fields at point k, averaged over the samples: density, solid fraction, velocity (NaN where
 * no mass reaches), kinetic and contact stress (row-major 3 x 3, [3 i + j] = i j component). */
void gf_cg_result(const gf_cg *c, size_t k, double *rho, double *phi, double v[3], double sk[9],
                  double sc[9]);
/* The exact integral over s in [0, 1] of the resolved part of psi at e - s b (e: the first end
 * minus the point), times the uniform part; exported for the tests. */
double gf_cg_line_weight(const gf_cg *c, const double e[3], const double b[3]);

#endif
