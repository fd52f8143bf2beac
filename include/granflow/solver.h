/* The non-linear block Gauss-Seidel solver (paper section 3.1, Preclik & Rüde 2015): sweeps over
 * the contacts, each block solved exactly by the per-contact kernel given the current impulses
 * of all others. Body velocities are kept consistent with the impulses after every block so a
 * block sees its neighbours' newest reactions. */
#ifndef GRANFLOW_SOLVER_H
#define GRANFLOW_SOLVER_H

#include "granflow/config.h"
#include "granflow/contact.h"
#include "granflow/contact_kernel.h"
#include "granflow/error.h"
#include "granflow/geometry.h"
#include "granflow/particles.h"

typedef enum { GF_MODEL_FRICTIONLESS, GF_MODEL_COULOMB, GF_MODEL_MAXDISS } gf_contact_model;

typedef struct {
    gf_contact_model model;
    long max_iterations;
    double tolerance;       /* stop when max |d lambda| <= tolerance * max |lambda| over a sweep */
    double relaxation;      /* each block update is lambda += relaxation * (kernel - lambda) */
    double error_reduction; /* epsilon in [0, 1]: share of a penetration removed per step */
} gf_solver_params;

typedef struct {
    long iterations;
    double residual;
    int converged;
} gf_solver_result;

typedef struct {
    gf_solver_params prm;
    gf_contact_kernel_fn kernel;
    size_t capc;
    double *A[6]; /* Delassus block per contact in its frame: nn, nt, no, tt, to, oo */
    size_t capb;
    double *iI[6]; /* world-frame inverse inertia per body: xx, xy, xz, yy, yz, zz */
} gf_solver;

void gf_solver_params_default(gf_solver_params *prm);
const char *gf_solver_model_name(gf_contact_model model);
/*  Solver { model max_dissipation; max_iterations 100; tolerance 1e-6; relaxation 1;
 *           error_reduction 0.1; } */
gf_status gf_solver_configure(gf_solver_params *prm, gf_config_block *root);

gf_status gf_solver_init(gf_solver *s, const gf_solver_params *prm);
void gf_solver_free(gf_solver *s);

/* Computes the Delassus blocks of all contacts (step 2 of DESIGN.md). */
gf_status gf_solver_prepare(gf_solver *s, const gf_particles *p, const gf_contacts *c);

/* On entry the particle velocities are the free velocities of the step; on exit they are the
 * post-step velocities and c->lambda holds the impulses. Impulses already in c->lambda are the
 * starting guess (warm start); they must be zero otherwise. */
gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, gf_solver_result *res);

#endif
