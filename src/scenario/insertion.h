/* Insertion regions and outlets anywhere in the domain.
 *
 * An Insert block adds particles at random positions inside a box or a cylinder, at a rate
 * (particles or kilograms per second) or all at once (a count or a volume fraction of the
 * region), each clear of every other particle, wall and obstacle. The decision is the same on any
 * rank count: the candidates of an event are drawn from counter-based streams keyed by (seed,
 * insertion, event, attempt); every rank tests them against the particles it owns, the "blocked"
 * flags are OR-ed over the ranks, then every rank accepts the same candidates in the same order
 * (each clear also of those accepted before it) and adds those whose centre it owns.
 *
 *  Insert { region box; min < .. >; max < .. >;            // or: region cylinder; centre < .. >;
 *           rate 2000;                                     //   axis < .. >; cylinder_radius ..;
 *           start 0; stop 0.5; max_count 1000; every 10;   //   length ..;
 *           radius 0.001; material glass; velocity < 0, 0, -1 >; spread < .1, .1, 0 >;
 *           angular_velocity < 0, 0, 0 >; seed 3; }
 * with the particle keys of gf_shape_mix (shape, Kind blocks, size, orientation). Exactly one
 * of rate (1/s), mass_rate (kg/s), count and volume_fraction.
 *
 * An Outlet block deletes the particles whose centre enters a region: a half-space (`region
 * plane`: the side its normal points to), a box or a cylinder; it counts them and their mass.
 *
 *  Outlet { name bottom; region plane; point < 0, 0, 0.01 >; normal < 0, 0, -1 >; } */
#ifndef GRANFLOW_INSERTION_H
#define GRANFLOW_INSERTION_H

#include <stdint.h>

#include "config/config.h"
#include "par/decomp.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "body/material.h"
#include "par/par.h"
#include "body/particles.h"
#include "body/shape_mix.h"
#include "core/state.h"

#define GF_MAX_INSERTS 16
#define GF_MAX_OUTLETS 16
/* Candidate positions tried per particle wanted at an event before the rest is carried over. */
#define GF_INSERT_ATTEMPTS 20

typedef enum { GF_REGION_BOX, GF_REGION_CYLINDER, GF_REGION_PLANE } gf_region_kind;

typedef struct {
    gf_region_kind kind;
    double min[3], max[3];                          /* box */
    double centre[3], axis[3], radius, half_length; /* cylinder (axis unit) */
    double e1[3], e2[3];        /* cylinder: unit, normal to axis and each other */
    double point[3], normal[3]; /* plane: the half-space `normal` points into */
} gf_region;

/* Reads `region` (box, cylinder, and with allow_plane plane) and its keys from block b. */
gf_status gf_region_configure(gf_region *r, gf_config_block *b, int allow_plane);
/* Whether the point x lies in the region (on its surface counts as inside). */
int gf_region_contains(const gf_region *r, const double x[3]);
/* Whether the sphere at x of radius rad lies entirely in the region (box or cylinder). */
int gf_region_contains_sphere(const gf_region *r, const double x[3], double rad);
double gf_region_volume(const gf_region *r);
/* The axis-aligned bounds of a box or cylinder. */
void gf_region_bounds(const gf_region *r, double lo[3], double hi[3]);
/* The point of the region shrunk by `inset` on every side that three uniforms in [0, 1) map to,
 * uniformly distributed in volume (box or cylinder; the shrunk region must be non-empty). */
void gf_region_sample(const gf_region *r, double inset, const double u[3], double x[3]);

typedef enum {
    GF_INSERT_RATE,           /* particles per second */
    GF_INSERT_MASS_RATE,      /* kilograms per second */
    GF_INSERT_COUNT,          /* particles at once */
    GF_INSERT_VOLUME_FRACTION /* particle volume over region volume, at once */
} gf_insert_mode;

typedef struct {
    int index; /* in the configuration: separates the random streams of the blocks */
    char where[256];
    gf_region region;
    gf_insert_mode mode;
    double amount; /* the value of rate, mass_rate, count or volume_fraction */
    double start, stop;
    int64_t max_count;
    long every;
    int material;
    gf_shape_mix mix;
    const gf_clumps *clumps;
    double velocity[3], spread[3], angular_velocity[3];
    uint64_t seed;
    double mean_quantity; /* the mean of what `amount` counts per particle (1, kg, m^3) */
    /* The most particles the region can hold at once: its volume over the smallest particle's
     * (each lies inside the region, none overlaps another). An event wants no more than that,
     * so a count of 1e9 or a rate of 1e15 into a small region costs its attempts for what can
     * fit, not 20 per particle due (2e13 placements per event, on every rank). */
    double capacity;
    /* State (checkpointed). */
    int64_t inserted; /* particles inserted in all */
    double quantity;  /* what `amount` counts, inserted in all (particles, kg or m^3) */
    double mass;      /* kg inserted in all */
    int64_t events;   /* events that tried to place particles */
    int64_t carried;  /* particles due that the last event could not place (carried over) */
    int warned;       /* a region found too full was reported */
} gf_insertion;

typedef struct {
    int count;
    double reach; /* the largest bounding radius any of them inserts */
    gf_insertion item[GF_MAX_INSERTS];
} gf_inserts;

/* An Insert block's start and stop (s; INFINITY without stop), checked: what a Stage may change. */
gf_status gf_insertion_read_times(gf_config_block *b, double *start, double *stop);
/* Reads the Insert blocks: each region must lie in the box [lo, hi] and hold its largest
 * particle. */
gf_status gf_inserts_configure(gf_inserts *in, gf_config_block *root, const gf_materials *m,
                               const gf_clumps *clumps, const double lo[3], const double hi[3]);

/* The particles due by `time` (the end of step `step`, of length dt): inserts those events on this
 * step place, adding those this rank owns (all with decomp NULL) to p, which holds no ghosts. Ids
 * start at *next_id, which advances past those placed; *created is their global number (the same on
 * every rank). Collective over `par` at an event (every rank reaches it alike); par NULL with
 * decomp NULL for a serial run. */
gf_status gf_inserts_advance(gf_inserts *in, double time, long step, double dt, const gf_walls *w,
                             const gf_decomp *decomp, const gf_par *par, const gf_materials *m,
                             gf_particles *p, int64_t *next_id, int64_t *created);
/* The inserts' run state for a checkpoint: each one's counts and amounts so far, from which its
 * next event and its random stream continue. */
gf_status gf_inserts_save(const gf_inserts *in, gf_state *s);
gf_status gf_inserts_restore(gf_inserts *in, const gf_state *s);

typedef struct {
    char name[64];
    gf_region region;
    int open; /* deletes what enters it (a Stage may open or close it) */
    /* Deleted here (cumulative; after a restart rank 0 also carries the totals before it). */
    int64_t count_local;
    double mass_local;
} gf_outlet;

typedef struct {
    int count;
    gf_outlet item[GF_MAX_OUTLETS];
} gf_outlets;

/* Reads the Outlet blocks (names unique, letters, digits, '_' and '-'; default outlet<k>, k from
 * 1). */
gf_status gf_outlets_configure(gf_outlets *o, gf_config_block *root);
/* Deletes the owned particles (no ghosts present) whose centre lies in an outlet's region (the
 * first outlet that holds it counts it): adds their number and mass to *deleted and *mass. */
void gf_outlets_apply(gf_outlets *o, gf_particles *p, int64_t *deleted, double *mass);
/* Collective: every outlet's particles and mass out so far, summed over the ranks. */
gf_status gf_outlets_totals(const gf_outlets *o, const gf_par *par, int64_t *count, double *mass);
/* The outlets' run state for a checkpoint: collective, the totals over the ranks. Restored, the
 * first rank of `par` (or the only one) carries them. */
gf_status gf_outlets_save(const gf_outlets *o, const gf_par *par, gf_state *s);
gf_status gf_outlets_restore(gf_outlets *o, const gf_par *par, const gf_state *s);

#endif
