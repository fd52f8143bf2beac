/* The angle of repose of a bed's free surface from particle positions, for gf-repose: in a
 * rotating drum (the dynamic angle of the surface in a cross-section) and of a heap poured on a
 * floor (the slope of its flank against the distance from its axis). Kept apart from the file
 * handling so the tests can check it on synthetic beds of known slope. */
#ifndef GF_TOOLS_REPOSE_H
#define GF_TOOLS_REPOSE_H

#include <stddef.h>

/* A straight line height = intercept + slope * position fitted by least squares, and what it
 * says as an angle. */
typedef struct {
    double slope, intercept, se_slope;
    double angle, se_angle; /* degrees */
    double from, to;        /* the positions the fitted bins span (m) */
    int bins;               /* bins that entered the fit */
    /* What the measurement took: the drum's radius; the heap's axis point (centre), floor and
     * height above the floor. */
    double radius, centre[3], floor, height;
} gf_repose_fit;

/* The surface profile: bin b covers [lo + b width, lo + (b + 1) width) of the position (across
 * the drum, or the distance from the heap's axis); top[b] is the highest particle top in it (NaN
 * when the bin is empty) and used[b] whether the bin entered the fit. */
typedef struct {
    int nbins;
    double lo, width;
    double *top;
    unsigned char *used;
} gf_repose_profile;

void gf_repose_profile_free(gf_repose_profile *p);

/* Least squares line through n points, with the standard error of the slope (0 for n = 2).
 * Returns -1 for fewer than two points or all x equal. */
int gf_repose_line(size_t n, const double *x, const double *y, double *slope, double *intercept,
                   double *se_slope);

/* The drum's cross-section: `up` is the part of -gravity perpendicular to the axis, `across`
 * is up x axis (unit vectors), so that (across, up, axis) is right-handed and the bottom of a
 * drum turning positively about the axis moves towards +across. Returns -1 if the axis is zero
 * or gravity has no part perpendicular to it. */
int gf_repose_drum_frame(const double axis[3], const double gravity[3], double across[3],
                         double up[3]);

typedef struct {
    double point[3], axis[3]; /* the drum's axis: a point on it and its direction */
    double gravity[3];
    double radius; /* the drum's inner radius; <= 0: the largest distance of a particle's
                      surface from the axis */
    double bin;    /* bin width (m); <= 0: the mean particle diameter */
    double keep;   /* the central fraction of the surface's chord that is fitted (0, 1] */
} gf_repose_drum_options;

/* The dynamic angle of repose of a bed in a drum. Particles are projected on the cross-section
 * (across, up) of gf_repose_drum_frame and binned across the drum over [-R, R]; each bin's top
 * is its highest particle top (centre + radius). A bin belongs to the free surface if its top
 * lies more than a mean diameter below the drum's wall at that bin (a column filled to the wall
 * has no free surface). The chord is where the free surface meets the wall: first guessed as
 * the span from the first to the last surface bin, then taken where the fitted line crosses the
 * circle of radius R, the bins whose centres lie in its central `keep` fraction fitted again,
 * until the fitted bins no longer change (empty bins are skipped). The
 * angle is atan(slope) in degrees: positive when the surface rises towards +across, which is
 * the sense a drum turning positively about the axis drags its bed. Returns 0, or -1 with a
 * message in err (no particles, a bad frame, fewer than three bins to fit, out of memory). */
int gf_repose_drum(size_t n, const double *x, const double *radius, const gf_repose_drum_options *o,
                   gf_repose_profile *profile, gf_repose_fit *fit, char *err, size_t errsize);

typedef struct {
    double gravity[3];
    double centre[3]; /* a point on the heap's vertical axis; NaN: the particles' centre of
                         mass (spheres of their radius and equal density) */
    double floor;     /* the floor's height along -gravity; NaN: the lowest particle bottom */
    double bin;       /* bin width (m); <= 0: the mean particle diameter */
    double lo, hi;    /* the fitted flank: bins whose top lies between lo and hi times the
                         heap's height above the floor (0 <= lo < hi <= 1) */
} gf_repose_heap_options;

/* The angle of a heap: heights along -gravity above the floor, distances from the vertical axis
 * through the centre binned from 0; each bin's top is its highest particle top; the heap's
 * height is the highest top; bins whose top lies in [lo, hi] of it (the flank, without the
 * plateau at the top and the foot of scattered beads) are fitted; the angle is atan(-slope) in
 * degrees (positive for a heap). Returns 0, or -1 with a message in err. */
int gf_repose_heap(size_t n, const double *x, const double *radius, const gf_repose_heap_options *o,
                   gf_repose_profile *profile, gf_repose_fit *fit, char *err, size_t errsize);

#endif
