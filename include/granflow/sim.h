/* A simulation: the state of the engine and the time step of DESIGN.md (detect, prepare,
 * solve, integrate, exchange, observe). Built from a configuration by gf_sim_configure, or by
 * hand (tests) with gf_sim_init followed by adding particles and walls. */
#ifndef GRANFLOW_SIM_H
#define GRANFLOW_SIM_H

#include <stdint.h>

#include "granflow/config.h"
#include "granflow/contact.h"
#include "granflow/error.h"
#include "granflow/geometry.h"
#include "granflow/material.h"
#include "granflow/par.h"
#include "granflow/particles.h"
#include "granflow/solver.h"
#include "granflow/timer.h"

typedef struct {
    const gf_par *par;
    gf_particles particles;
    gf_walls walls;
    gf_materials materials;
    gf_contacts contacts;
    gf_linkcells cells;
    gf_solver_params solver_params;
    gf_solver solver;
    double lo[3], hi[3]; /* the domain box */
    double gravity[3];
    double dt;
    double time;
    long step;
    long steps;              /* steps to run */
    double margin_tolerance; /* speculative contact margin beyond the velocity term (m) */
    long progress_every;
    gf_timers timers;
    gf_solver_result last_solve;
    int64_t total_iterations;
    int64_t total_contacts;
    int64_t global_particles;
    double start_wtime;
} gf_sim;

/* Defaults: no particles, no walls, no gravity, dt = 1e-4, maximum-dissipation solver. */
gf_status gf_sim_init(gf_sim *sim, const gf_par *par);
void gf_sim_free(gf_sim *sim);
/* (Re)builds the solver after sim->solver_params changed. */
gf_status gf_sim_set_solver(gf_sim *sim, const gf_solver_params *prm);

/* Reads every block of the configuration and generates the initial particles. */
gf_status gf_sim_configure(gf_sim *sim, gf_config *cfg);

/* One time step. */
gf_status gf_sim_step(gf_sim *sim);
/* Runs sim->steps steps with progress lines, then the summary. */
gf_status gf_sim_run(gf_sim *sim);
void gf_sim_print_summary(gf_sim *sim);

#endif
