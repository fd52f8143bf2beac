/* Materials and the tables of their pairs' contact laws: friction, restitution, cohesion, rolling
 * and twisting resistance. Both are
 * properties of a pair of materials, so each is a symmetric table with a default for pairs not
 * listed (pe averages two per-material values, which has no physical basis). */
#ifndef GRANFLOW_MATERIAL_H
#define GRANFLOW_MATERIAL_H

#include "config/config.h"
#include "granflow/error.h"

#define GF_MAX_MATERIALS 16
#define GF_NAME_LEN 64

typedef struct {
    int count;
    char name[GF_MAX_MATERIALS][GF_NAME_LEN];
    double density[GF_MAX_MATERIALS]; /* kg/m^3 */
    double friction[GF_MAX_MATERIALS][GF_MAX_MATERIALS];
    /* Poisson's coefficient of restitution in [0, 1] (docs/physics.md, "Restitution"), and the
     * approach speed (m/s) below which impacts stay purely inelastic. */
    double restitution[GF_MAX_MATERIALS][GF_MAX_MATERIALS];
    double restitution_velocity;
    /* The pull (N) a touching contact point can hold (docs/physics.md, "Cohesion"); where
     * cohesion_per_radius, per metre of the pair's reduced radius r1 r2 / (r1 + r2) (N/m). */
    double cohesion[GF_MAX_MATERIALS][GF_MAX_MATERIALS];
    int cohesion_per_radius;
    /* Rolling and twisting resistance, dimensionless (docs/physics.md, "Rolling and twisting
     * resistance"): a contact's torque impulse about its tangents is at most rolling r lambda_n,
     * about its normal at most twisting r lambda_n, r = r1 r2 / (r1 + r2) of the bodies' radii. */
    double rolling[GF_MAX_MATERIALS][GF_MAX_MATERIALS];
    double twisting[GF_MAX_MATERIALS][GF_MAX_MATERIALS];
} gf_materials;

/* One material called "default" (density 1000), every law's coefficient 0. */
void gf_materials_init(gf_materials *m);
/* Adds a material; its friction with every other one starts at `default_friction`. */
gf_status gf_materials_add(gf_materials *m, const char *name, double density,
                           double default_friction, int *index);
gf_status gf_materials_set_friction(gf_materials *m, int a, int b, double mu);
gf_status gf_materials_set_restitution(gf_materials *m, int a, int b, double e);
gf_status gf_materials_set_cohesion(gf_materials *m, int a, int b, double c);
gf_status gf_materials_set_resistance(gf_materials *m, int a, int b, double rolling,
                                      double twisting);
/* Whether any pair has restitution, cohesion, or rolling or twisting resistance. */
int gf_materials_restitutive(const gf_materials *m);
int gf_materials_cohesive(const gf_materials *m);
int gf_materials_resistive(const gf_materials *m);
/* Index of a material by name, or -1. */
int gf_materials_find(const gf_materials *m, const char *name);

/*  Materials {
 *      friction 0.4;                           // default for every pair
 *      restitution 0.5;                        // default for every pair
 *      restitution_velocity 0.01;              // slower impacts stay inelastic (m/s)
 *      Material { name glass; density 2650; }  // repeatable
 *      cohesion 0.01;                          // pull a touching point holds (N)
 *      rolling_friction 0.05;                  // rolling torque <= 0.05 r lambda_n
 *      twisting_friction 0.05;                 // twisting torque <= 0.05 r lambda_n
 *      Pair { a glass; b steel; friction 0.2; restitution 0.8; cohesion 0;
 *             rolling_friction 0.1; twisting_friction 0; } // repeatable
 *  }
 */
gf_status gf_materials_configure(gf_materials *m, gf_config_block *root);
/* The upper bound of a contact law's key (friction, restitution, cohesion, rolling_friction,
 * twisting_friction, restitution_velocity; each from 0), or -1 for any other key. */
double gf_materials_law_bound(const char *key);

/* Looks up a material name read from key `key` of block `b` (a clear error if unknown). */
gf_status gf_materials_lookup(const gf_materials *m, gf_config_block *b, const char *key,
                              int *index);

#endif
