/* A simulation: the state of the engine and the time step of DESIGN.md (detect, prepare,
 * solve, integrate, exchange, observe). Built from a configuration by gf_sim_configure, or by
 * hand (tests) with gf_sim_init followed by adding particles and walls. */
#ifndef GRANFLOW_SIM_H
#define GRANFLOW_SIM_H

#include <stdint.h>

#include "config/config.h"
#include "contact/contact.h"
#include "granflow/error.h"
#include "par/exchange.h"
#include "geometry/geometry.h"
#include "scenario/insertion.h"
#include "body/material.h"
#include "par/par.h"
#include "body/particles.h"
#include "scenario/scenario.h"
#include "solver/solver.h"
#include "core/state.h"
#include "par/balance.h"
#include "core/timer.h"
#include "contact/warmstart.h"
#include "sim/stage.h"

/* The contacts of a step on this rank: the solved set (speculative pairs within the margin
 * included), those touching (gap <= 0 at detection), those loaded (positive normal impulse),
 * and the deepest penetration, in metres and relative to the thinner body's smallest half extent
 * or radius (gf_particles_thickness). Taken
 * right after the solve, while the pairs' particle indices are still valid. */
/* Load balancing keeps the subdomains this many interaction ranges (2 r + margin) thick: room
 * for the margin to grow between balancings. */
#define GF_SIM_BALANCE_ROOM 2.0
/* Steps between spatial sorts by default (Contact.sort_every). */
#define GF_SIM_SORT_EVERY 20
/* Default of Contact.margin_fraction: the speculative tolerance in radii of the largest particle,
 * beyond the motion of a step at the fastest particle's speed. Per pair (Contact.per_pair, the
 * default) it only has to hold the pairs a solve closes, and those it misses are added after the
 * solve: 0.01 keeps the additions near zero in the channel demo, where 0.05 solved 43% more
 * contacts for the same penetrations. Without per-pair speculation nothing is added after the
 * solve, and the motion term is what keeps pairs in the margin. */
#define GF_SIM_MARGIN_FRACTION 0.01
/* Default of Contact.skin_fraction: the pair list's skin in radii of the largest particle. In
 * the channel demo, 3000 steps on one rank, detection took 0.47 s with 1 (a search at 11% of the
 * steps), 0.51 s with 0.5, 0.53 s with 2 and 0.76 s with none. */
#define GF_SIM_SKIN_FRACTION 1.0
/* Default of Domain.ghost_skin_fraction: the ghost lists' skin in radii of the largest
 * particle (MPI runs): migration and the ghost lists wait until a particle has moved by half of
 * it, steps in between send only the ghosts' positions and velocities. Checkpoints keep the
 * positions the lists were chosen from, so restarts stay exact. Channel demo, 6000 steps on 2
 * ranks, alternating runs: 4.13 / 4.06 s without, 3.94 / 3.88 s with 0.5, 4.03 / 3.98 s with 1,
 * 4.16 / 4.06 s with 2 (the outflow and inflow force a rebuild at most steps with a change);
 * the drum and the demo 1-2% faster with 0.5. */
#define GF_SIM_GHOST_SKIN_FRACTION 0.5
/* A scheduled velocity change at time T applies from the first step starting at or after T, up
 * to this share of dt (the time is summed step by step and carries rounding). */
#define GF_SIM_SCHEDULE_TOLERANCE 1e-6
/* Bins of the run's histogram of residual / tolerance (quarter decades, 1e-12 to 1e12). */
#define GF_SIM_RESIDUAL_BINS 98

typedef struct {
    int64_t solved, touching, loaded;
    double max_penetration, max_penetration_rel;
} gf_contact_figures;

/* The contact of a run's deepest penetration relative to its pair's thickness (this
 * rank): the bodies' global ids (geometry body k: -1 - k), their shapes (geometry: -1), the
 * step. */
typedef struct {
    double rel, depth;
    int64_t id1, id2, step;
    int32_t shape1, shape2;
} gf_deepest_contact;

typedef struct {
    const gf_par *par;
    gf_particles particles;
    gf_walls walls;
    gf_materials materials;
    gf_clumps clumps; /* clump templates; particles.clumps points here */
    gf_contacts contacts;
    gf_linkcells cells;
    gf_solver_params solver_params;
    gf_solver solver;
    gf_warmstart warm;
    gf_inflow inflow;
    gf_lattice lattice; /* the initial lattice as configured */
    int dry_run;        /* configure only: no decomposition, no particles */
    int check_only;     /* granflow --check: a lattice of more than GF_LATTICE_VISIT sites is
                           not placed */
    gf_outflow outflow;
    int64_t deleted_local;     /* deleted here since the last accounting check */
    double deleted_mass_local; /* mass deleted here, for the outflow rate (never reset) */
    int64_t created_inflow;    /* particles the inflow created since the run began (global) */
    gf_inserts inserts;        /* Insert blocks (their counts are checkpointed) */
    gf_outlets outlets;        /* Outlet blocks */
    gf_stages stages;          /* Stage blocks: the values of each, the one in force */
    /* Decomposition and exchange: set up by gf_sim_decompose (always with a gf_par). */
    int distributed;
    gf_exchange xch;
    /* Load balancing (Domain.balance_every, 0: the cuts stay equally spaced): the work of the
     * step before each balancing is counted into `balance` and the cuts are moved in the
     * exchange that ends the step. */
    long balance_every;
    gf_balance balance;
    int balance_pending;  /* `balance` holds this step's counts */
    int64_t balance_work; /* this rank's work in the counted step */
    long balance_moves;   /* balancings of this run that moved a cut */
    long balance_count;   /* balancings of this run */
    int warned_balance;   /* the warning that the cuts of an axis cannot move was given */
    /* The largest rank's work over the mean in the counted steps: the last, and their sum. */
    double balance_ratio_last, balance_ratio_sum;
    int periodic[3];
    int dims[3];
    double lo[3], hi[3]; /* the domain box */
    double gravity[3];
    double dt;
    double time;
    long step;
    long steps;                /* steps to run */
    double margin_tolerance;   /* speculative contact margin beyond the velocity term (m) */
    double margin_fraction;    /* ... plus this share of the largest radius present */
    long sort_every;           /* steps between spatial sorts of the owned particles (0: never) */
    double skin_fraction;      /* the pair list's skin in radii of the largest particle */
    int per_pair;              /* speculative contacts per pair (gf_contacts.speculate) */
    int pipelined;             /* 1 (default): with two colours, the solver's pipelined sweep
                                  (gf_solver_comm.pipe_*); 0: its two synchronisations per
                                  sweep, which give the same results (for comparison) */
    int64_t promoted_contacts; /* near pairs made contacts after a solve (this rank) */
    int64_t rechecked_points;  /* points of turning non-spheres added after a solve (this rank) */
    double margin;             /* the margin of the current step (contact detection and ghosts) */
    double max_radius;         /* the largest radius present (global), with the margin */
    int warned_displacement;   /* the warning of a coarse time step was given */
    int ghosts_ready;
    /* Ghost lists kept between rebuilds (Domain.ghost_skin_fraction): built with the
     * interaction range plus a skin, `ghost_range` in all, from the owned positions then
     * (`ghost_ref`); a step whose particles have not moved by half of the skin, with the same
     * particle set and no sort or balancing due, refreshes the ghosts' values instead of
     * migrating and building them anew. */
    double ghost_skin_fraction;
    double ghost_range; /* of the last build (0: none yet) */
    double *ghost_ref[3];
    /* The angular velocities detection took for this step's turns (gf_contact_recheck). */
    double *w_detect[3];
    size_t cap_w_detect;
    size_t ghost_nref, ghost_capref;
    int ghost_restore;                  /* gf_sim_start builds the lists from ghost_ref */
    long ghost_builds, ghost_refreshes; /* exchanges of this run of either kind */
    int warned_ghost_skin;              /* the warning that the subdomains cut the skin was given */
    double mesh_halo; /* how far beyond its subdomain a rank keeps mesh triangles (0: all) */
    long progress_every;
    long check_every; /* steps between global particle-count checks */
    gf_timers timers;
    gf_solver_result last_solve;
    gf_contact_figures figures; /* of the last step */
    /* Over the steps of this run (local): sums of the figures' counts, their deepest
     * penetrations, the particles stepped (for rates), and the sweeps. */
    gf_contact_figures run_figures;
    gf_deepest_contact deepest;
    int64_t stepped_particles;
    int64_t total_iterations;
    int64_t resumed_iterations; /* of those, the sweeps of solves resumed after near pairs were
                                   added (the same on every rank) */
    int64_t total_blocks[2];    /* blocks solved, contacts x sweeps (gf_solver_result) */
    int64_t total_joints[2];    /* joint block solves, those solved point by point */
    long unconverged_steps; /* steps whose solve ended at max_iterations (the same on all ranks) */
    double residual_sum, residual_max; /* of the solves' residuals reached (global) */
    long residual_steps;
    /* Steps whose sweeps had stopped contracting (gf_solver_result.stalled): no estimate, kept
     * out of the residuals above; the largest last change over the reference velocity. */
    long stalled_steps;
    double stalled_max;
    /* The steps' residual / tolerance in quarter decades from 1e-12 (bin 0: below, last: 1e12
     * and above), for the median of the summary (tolerance > 0). */
    long residual_hist[GF_SIM_RESIDUAL_BINS];
    int64_t global_particles;
    int64_t expected_particles; /* initial + created - deleted, for the accounting check */
    int64_t next_id;            /* the next unused global id (the same on every rank) */
    int64_t *check_ids;         /* ids and positions at the last accounting check */
    double *check_pos;
    size_t check_n;
    double start_wtime;
    long first_step; /* the step this run started from (non-zero after a restart) */
    int run_begun;   /* gf_sim_run_to has begun the run's bookkeeping */
    /* Wall time and steps done at the previous progress line: the ETA follows the recent rate. */
    double progress_wtime;
    long progress_done;
} gf_sim;

/* Seconds to go for `todo` steps in all after `done`: at the rate of the steps since the previous
 * progress line (done_then steps at wall time wall_then), the rate that predicts a run whose
 * steps grow dearer (a pile forming, an inflow filling the channel); at the average rate when
 * there is no previous line. NAN before the first step. */
double gf_sim_eta(double wall_then, long done_then, double wall_now, long done, long todo);

/* Defaults: no particles, no walls, no gravity, dt = 1e-4, maximum-dissipation solver. */
gf_status gf_sim_init(gf_sim *sim, const gf_par *par);
void gf_sim_free(gf_sim *sim);
/* Splits the domain [lo, hi] over the ranks of sim->par (dims[k] = 0: chosen automatically);
 * owned particles are then those whose centre is in this rank's subdomain. Collective. */
gf_status gf_sim_decompose(gf_sim *sim, const int dims[3], const int periodic[3],
                           const double lo[3], const double hi[3]);
/* Reserves n consecutive global ids per rank (collective): *first is this rank's first id. */
gf_status gf_sim_allocate_ids(gf_sim *sim, int64_t n, int64_t *first);
/* Makes the particle set consistent before stepping: owners, ghosts, margin (collective). */
gf_status gf_sim_start(gf_sim *sim);
/* Global particle count against creations and deletions; on a mismatch an error naming the
 * step, ranks, ids and last positions involved (collective). */
gf_status gf_sim_check_particles(gf_sim *sim);
/* The ghost lists a checkpoint recorded, for a restart on the writer's layout (each rank its
 * own particles in the written order): `ref`, 3 per owned particle, the positions the lists
 * were chosen from, and their range. gf_sim_start builds the same lists from them and
 * refreshes them to the current positions, so the run continues as the writer's did, which
 * may have kept its lists through the checkpoint's step. */
gf_status gf_sim_restore_ghost_lists(gf_sim *sim, const double *ref, double range);

/* (Re)builds the solver after sim->solver_params changed. */
gf_status gf_sim_set_solver(gf_sim *sim, const gf_solver_params *prm);

/* Reads every block of the configuration and, if `generate`, creates the initial particles
 * (a restart loads them instead). */
gf_status gf_sim_configure(gf_sim *sim, gf_config *cfg, int generate);

/* One time step. */
gf_status gf_sim_step(gf_sim *sim);
/* Prints what a run on `nranks` ranks would look like without running it: the decomposition,
 * its check against the interaction range, the particles of the initial lattice and of the
 * first inflow layer per rank, and a memory estimate per rank. Needs no MPI job of that size. */
gf_status gf_sim_dry_run(gf_sim *sim, gf_config *cfg, int nranks);

/* The run state a checkpoint keeps besides the particles, the warm start and the ghost lists:
 * the simulation's counters (next id, particles expected, created and deleted so far) and the
 * state of each module that has one (geometry, inflow, inserts, outlets), each saved and
 * restored by its module (gf_state). Saving is collective (totals over the ranks); restoring
 * needs the configured simulation. The checkpoint writer stores the items, the reader gives them
 * back: a module with new state adds it here, not in io/. */
gf_status gf_sim_save_state(const gf_sim *sim, gf_state *s);

/* Collective: adds the records each rank holds to the rank owning their centre (all to this rank
 * without a decomposition). Positions must lie in the box (periodic ones wrapped). */
gf_status gf_sim_place_particles(gf_sim *sim, const gf_particle *recs, size_t n);
/* Collective: no id is held twice among the owned particles of all ranks; otherwise an input
 * error "'path': particle id N appears twice" followed by `hint` (may be NULL). */
gf_status gf_sim_check_unique_ids(const gf_sim *sim, const char *path, const char *hint);
/* Collective: the ghosts take their owners' current state again, after a program changed the
 * owned particles between steps (gf_run_set_velocities). */
/* Adds the Body blocks of cfg (which holds nothing else) between steps, as the configuration's
 * Body blocks are added: ids from *first_id on (*count of them, the same on every rank), each
 * on the rank that owns its centre; a body that overlaps a particle, lies outside the box, is
 * too large for the decomposition or has a key no body reads is refused with nothing added.
 * Collective. */
gf_status gf_sim_add_bodies(gf_sim *sim, gf_config *cfg, int64_t *first_id, int64_t *count);
gf_status gf_sim_refresh_ghosts(gf_sim *sim);
gf_status gf_sim_restore_state(gf_sim *sim, const gf_state *s);

/* Called after every step (output, checkpoints); setting *stop ends the run early. */
typedef gf_status (*gf_sim_observer)(void *ctx, gf_sim *sim, int *stop);

/* Runs until step sim->steps with progress lines (observer may be NULL). */
gf_status gf_sim_run(gf_sim *sim, gf_sim_observer observer, void *ctx);
/* Runs until step `last` (or until the observer asks to stop: sim->step < last then); may be
 * called again to go on. The first call starts the run's clock and counts, so the progress lines
 * and the summary cover every part, and their ETA aims at sim->steps. */
gf_status gf_sim_run_to(gf_sim *sim, long last, gf_sim_observer observer, void *ctx);
void gf_sim_print_summary(gf_sim *sim);

#endif
