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

/* Gauss-Seidel: each block sees the newest impulses of the others on the same rank (ranks are
 * coupled Jacobi-style). Jacobi: every block of a sweep sees the velocities of the sweep's start,
 * on every rank alike, so results do not depend on the decomposition (slower to converge). */
typedef enum { GF_SWEEP_GAUSS_SEIDEL, GF_SWEEP_JACOBI } gf_sweep_mode;

typedef struct {
    gf_contact_model model;
    gf_sweep_mode mode;
    long max_iterations;
    double tolerance;       /* stop when max |d lambda| <= tolerance * max |lambda| over a sweep */
    double relaxation;      /* weight of the block updates that couple ranks (Gauss-Seidel)
                               or of every block update (Jacobi) */
    double error_reduction; /* epsilon in [0, 1]: share of a penetration removed per step */
    long check_every;       /* sweeps between global convergence checks */
    int warm_start;         /* start from the previous step's impulses */
} gf_solver_params;

/* How the solver talks to other ranks (NULL members: serial). */
typedef struct {
    void *ctx;
    /* After every sweep: ghost corrections to owners, owners' velocities back to ghosts. */
    gf_status (*sync)(void *ctx, gf_particles *p);
    /* Global maximum of n values. */
    gf_status (*max)(void *ctx, double *values, int n);
} gf_solver_comm;

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
    size_t capdl;
    double *dl[3]; /* Jacobi: the pending impulse change of each contact */
    size_t capb;
    double *iI[6]; /* world-frame inverse inertia per body: xx, xy, xz, yy, yz, zz */
} gf_solver;

void gf_solver_params_default(gf_solver_params *prm);
const char *gf_solver_model_name(gf_contact_model model);
/*  Solver { model max_dissipation; mode gauss_seidel; max_iterations 100; tolerance 1e-6;
 *           relaxation 1; error_reduction 0.1; check_every 1; warm_start true; } */
gf_status gf_solver_configure(gf_solver_params *prm, gf_config_block *root);

gf_status gf_solver_init(gf_solver *s, const gf_solver_params *prm);
void gf_solver_free(gf_solver *s);

/* Computes the Delassus blocks of all contacts (step 2 of DESIGN.md). */
gf_status gf_solver_prepare(gf_solver *s, const gf_particles *p, const gf_contacts *c);

/* On entry the particle velocities are the free velocities of the step; on exit they are the
 * post-step velocities and c->lambda holds the impulses. Impulses already in c->lambda are the
 * starting guess (warm start); they must be zero otherwise. */
gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, const gf_solver_comm *comm, gf_solver_result *res);

#endif
