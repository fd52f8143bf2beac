/* The non-linear block Gauss-Seidel solver (paper section 3.1, Preclik & Rüde 2015): sweeps over
 * the contacts, each block solved exactly by the per-contact kernel given the current impulses
 * of all others. Body velocities are kept consistent with the impulses after every block so a
 * block sees its neighbours' newest reactions. */
#ifndef GRANFLOW_SOLVER_H
#define GRANFLOW_SOLVER_H

#include <stdint.h>

#include "config/config.h"
#include "contact/contact.h"
#include "granflow/contact_kernel.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "body/particles.h"

typedef enum { GF_MODEL_FRICTIONLESS, GF_MODEL_COULOMB, GF_MODEL_MAXDISS } gf_contact_model;

/* Gauss-Seidel: each block sees the newest impulses of all others, also across ranks (see
 * gf_solver_comm). Jacobi: every block of a sweep sees the velocities of the sweep's start, on
 * every rank alike, so results do not depend on the decomposition (slower to converge). */
typedef enum { GF_SWEEP_GAUSS_SEIDEL, GF_SWEEP_JACOBI } gf_sweep_mode;

/* Stopping test. The quantity that converges is the body velocities (impulses need not: in a
 * static frictional packing they are indeterminate and drift while the velocities stay put), so
 * at each test sweep k (every check_every sweeps) the solver measures
 *     D_k = max over bodies of |dv| + R |dw|
 * the largest change of a body's velocity at its surface (R its radius) during that sweep (and
 * during the sweep before), and the contraction rho, the larger of D_k / D_(k-1) and the mean
 * rate (D_k / D_(k-m))^(1/m) back to the oldest earlier test sweep within the last
 * max(10, check_every) sweeps (m = k - that sweep). If the error keeps shrinking at that rate, the
 * velocities are within E = D_k / (1 - rho) of the converged ones. The solve stops when E <=
 * tolerance * v_ref    (rho < 1)    or    D_k <= floor v_ref: the largest relative velocity at a
 * contact of the free velocities (before any contact reaction), plus the penetration-recovery speed
 * error_reduction * (depth - slop) / dt; in a resting pile this is g * dt (the floor contact), in
 * an impact the approach speed. floor: 1000 machine epsilons of the velocity scale of the step
 * (v_ref, the bodies' free speeds and the velocity change a contact's impulse makes, A_nn
 * |lambda|): changes at rounding level. Bodies at rest with zero impulses change by exactly 0 and
 * stop after the first sweep. E is an estimate: a slow mode hidden under faster ones during the
 * first sweeps (dense frictional packings) is not yet seen in rho, and E can then be smaller than
 * the true error. */
typedef struct {
    gf_contact_model model;
    gf_sweep_mode mode;
    long max_iterations;
    long sweeps;             /* > 0: exactly this many sweeps, no stopping test and no reductions
                                (benchmarking); max_iterations and tolerance are then unused */
    double tolerance;        /* E <= tolerance * v_ref (above); 0: never stop early */
    double relaxation;       /* weight of the updates of contacts with a particle owned by another
                                rank (Gauss-Seidel), or of every update (Jacobi) */
    double error_reduction;  /* epsilon in [0, 1]: share of a penetration removed per step */
    double penetration_slop; /* penetrations shallower than this share of the smaller body's radius
                                are left alone (a rigid packing cannot always separate every
                                overlap at once: with friction its impulses would grow without
                                bound trying) */
    double over_relaxation;  /* omega of the Gauss-Seidel sweep's one-point blocks from its second
                                sweep on (1: none); a step whose sweeps stop contracting falls
                                back to 1 (README, "The stopping test of the solver") */
    long check_every;        /* sweeps between stopping tests (each a global reduction of six
                                numbers); D is measured at each test sweep and the sweep
                                before it */
    double quiet;            /* a block whose relative velocity changed by less than this share
                                of what the tolerance allows since its last solve is not solved
                                again (gf_solver.quiet); GF_SOLVER_QUIET, 0: every block */
    double quiet_share;      /* quiet blocks stop for the rest of a step when fewer than this
                                share of the blocks tested between two stopping tests were quiet
                                (GF_SOLVER_QUIET_SHARE; 0: never) */
    int warm_start;          /* start from the previous step's impulses */
    int joint_manifolds;     /* the points of one pair's manifold as one block (README) */
} gf_solver_params;

/* How the solver talks to other ranks (NULL/0 members: serial).
 *
 * A Gauss-Seidel sweep is made the same on any number of ranks: contacts that touch no body
 * another rank also updates ("interior") are swept first, on all ranks at once (they share no
 * body); then the other ("boundary") contacts colour by colour: the ranks of colour c sweep
 * theirs, and a synchronisation brings every copy of every body up to date before colour c + 1.
 * Neighbouring ranks have different colours, so no body is updated by two ranks in one phase and
 * each block sees the newest velocities, as on one rank. A sweep costs ncolors synchronisations
 * (2 for cuts along one axis, 4 along two, 8 along three). */
typedef struct {
    void *ctx;
    /* Ghost velocity changes to owners, owners' velocities back to ghosts. */
    gf_status (*sync)(void *ctx, gf_particles *p);
    /* Optional, both or neither: the same in two halves, the owners' velocities travelling to
     * the ghosts between them; the solver sweeps its interior contacts meanwhile. */
    gf_status (*sync_begin)(void *ctx, gf_particles *p);
    gf_status (*sync_end)(void *ctx, gf_particles *p);
    /* Optional, all three or none, used with two colours (cuts along one axis, where every
     * neighbour has the other colour): the pipelined sweep. Each rank sweeps its interior, takes
     * its neighbours' latest boundary results, sweeps its boundary and posts its own, so one
     * message each way per neighbour and sweep replaces the two synchronisations, and a rank's
     * interior overlaps the other colour's boundary. The blocks are solved in the same order and
     * from the same velocities as with the synchronisations: the results are the same, bit for
     * bit. _expect posts the receipt of the next message, _take waits for it (see
     * gf_exchange_pipe_*). */
    gf_status (*pipe_expect)(void *ctx);
    gf_status (*pipe_post)(void *ctx, gf_particles *p);
    gf_status (*pipe_take)(void *ctx, gf_particles *p);
    /* Global maximum of n values. */
    gf_status (*max)(void *ctx, double *values, int n);
    /* Per particle, the slot holding its velocity (copies of one body on this rank share one);
     * NULL: every particle its own. Built for nslot particles (owned and ghosts). */
    const int32_t *slot;
    size_t nslot;
    /* Per particle: another rank updates this body too. NULL: none. */
    const uint8_t *shared;
    int color, ncolors; /* this rank's colour, and how many (0 or 1: one phase) */
} gf_solver_comm;

/* The same on every rank. */
typedef struct {
    long iterations; /* sweeps made */
    /* Blocks solved (this rank), and contacts times sweeps: Gauss-Seidel skips a block whose
     * bodies have not changed since it last changed nothing, and an open contact whose bodies
     * have not moved by its slack (either would give the same impulse). A joint block of k
     * points counts k. */
    int64_t blocks, slots;
    /* Solves of joint blocks (a pair's manifold, README "Contact manifolds"), and of those the
     * ones solved point by point because the joint kernel found no answer (this rank). */
    int64_t joints, fallbacks;
    /* 1: the stopping test passed; 0: it did not by max_iterations (with tolerance 0: the last
     * sweep still changed the velocities by more than the floor); -1: no test was made (a fixed
     * number of sweeps). */
    int converged;
    /* 1: the sweeps had stopped contracting at the last test (rate >= GF_SOLVER_STALL): error is
     * then D_k, the last sweep's change, and there is no estimate of the distance to the
     * answer (a cycle of Gauss-Seidel, which more sweeps do not end). */
    int stalled;
    double error;     /* E of the last test (m/s); D_k when the sweeps did not contract */
    double reference; /* v_ref (m/s) */
    double floor;     /* (m/s) */
    double residual;  /* error / reference: compare with the tolerance (0 when error is 0) */
} gf_solver_result;

/* The default quiet share (gf_solver_params.quiet): it adds at most 1e-3 of the tolerance to a
 * block's error, and spares most of a dense flow's late solves (docs/physics.md, "Quiet
 * blocks"). */
#define GF_SOLVER_QUIET 1e-3
/* The default least share of quiet blocks (gf_solver_params.quiet_share): measured, 60 % in
 * the converging channel demo, where quiet blocks take a fifth off the solve, a few % in the
 * hopper and the drum at their 100-sweep budgets, where the test alone cost 14 % and 22 %. */
#define GF_SOLVER_QUIET_SHARE 0.25

/* Sweeps whose change shrinks by less than this factor per sweep have stopped contracting:
 * D_k / (1 - rate) would extrapolate a rate that is no rate (a cycle gave 3e16 times the
 * tolerance), so such a step reports its last change and no estimate. */
#define GF_SOLVER_STALL 0.999

/* A body as the sweep reads it: one cache line. Copies of a body on this rank share one record
 * (its velocity slot). A solve numbers the records in the order the sweep first meets the
 * bodies, owned ones first, so that the sweep streams them whatever the particles' memory order;
 * geometry body k (walls, obstacles) follows them as record nrec + k, of infinite mass and moving
 * at its velocity, so every contact has two bodies and the sweep no branch. */
typedef struct {
    double v[3], w[3];
    double im; /* inverse mass */
    double ii; /* inverse moment of inertia of an isotropic body (a sphere); 0 otherwise */
} gf_solver_body;

/* A contact as the sweep reads it, in sweep order. For two spheres (or a sphere and the
 * geometry) the lever arms lie along the normal, r1 = -rho1 n and r2 = rho2 n, so the relative
 * velocity and the impulse's effect follow from n, t (o = n x t) and the two lengths, and the
 * Delassus block is diag(a_n, a_t, a_t): the maximum-dissipation kernel is a closed form, the
 * same as Coulomb's (frictionless: mu 0). Other contacts have a gf_solver_general record. */
/* Cohesion holds a contact whose gap is below this share of its first body's bounding radius:
 * touching, to more than the drift of a held contact between steps (the solver's tolerance on
 * its normal velocity, times dt, summed over many steps), and far below any distance at which a
 * separated pair could be pulled back. */
#define GF_SOLVER_COHESION_RANGE 1e-6

typedef struct {
    int32_t b1, b2;  /* body records */
    int32_t general; /* -1: a sphere block; otherwise its gf_solver_general record */
    int32_t contact; /* the contact's index in gf_contacts */
    double n[3], t[3];
    double rho1, rho2;
    double an, inv_an, inv_at;
    double lambda[3];
    double bias; /* the normal velocity that closes the gap within the step (or recovers the
                    error_reduction share of a penetration beyond the slop), subtracted from
                    b_n */
    double mu;
} gf_solver_contact;

/* The rest of a contact that is not a sphere block: the rows r_b x e_k (e = n, t, o) of each
 * body's angular Jacobian, the same rows times the body's world-frame inverse inertia, and the
 * Delassus block (nn, nt, no, tt, to, oo). The points of one pair's manifold follow each other
 * and are one joint block (README, "Contact manifolds"): the first says how many (`points`, 1:
 * a block of its own, 0: a later point of a joint block) and where their Delassus matrix lies
 * (`joint`: 3 points x 3 points doubles at gf_solver.joint + joint). */
typedef struct {
    double R1[3][3], R2[3][3];
    double M1[3][3], M2[3][3];
    double A[6];
    double y; /* the multiplier of this point's normal condition in its joint block's last solve */
    int32_t points, joint;
    int32_t pointwise; /* the joint kernel found no answer for this block: point by point for the
                          rest of the solve */
} gf_solver_general;

/* The torque block of a contact with rolling or twisting resistance (docs/physics.md, "Rolling
 * and twisting resistance"), by contact index. The torque impulse tau (components about n, t, o)
 * acts on body 1 and minus it on body 2; W1[k] and W2[k] are the bodies' world inverse inertia
 * times e_k (e = n, t, o; zero for the geometry), B the block's Delassus matrix e_k . (W1[l] +
 * W2[l]) (nn, nt, no, tt, to, oo), w0 the angular velocity of a turning mesh (else 0). */
typedef struct {
    double tau[3];
    double roll, twist; /* the bounds per unit normal impulse (m) */
    double reach;       /* r1 r2 / (r1 + r2): the rolling speed of a spin |w| is reach |w| */
    double W1[3][3], W2[3][3];
    double B[6];
    double w0[3];
} gf_solver_resist;

/* An impact's restitution phase (docs/physics.md, "Restitution"), by contact index: the fixed
 * normal impulse N = (1 + e) lambda_c,n of its compression lambda_c (0: no impact restituted),
 * and its tangential impulse rho, solved by maximum dissipation within |rho| <= mu N after the
 * contact's block in each visit. The block's own impulse is then what the contact takes beyond
 * these. */
typedef struct {
    double N, rho[2];
} gf_solver_rebound;

/* The part of a contact record a sweep reads to decide whether to solve it (gf_solver.head):
 * its bodies and whether it is a sphere block, in a compact array of its own, so that the
 * blocks a sweep skips (most of them, late in a solve) do not stream the whole records. */
typedef struct {
    int32_t b1, b2, general, pad;
} gf_solver_head;

typedef struct {
    gf_solver_params prm;
    gf_contact_kernel_fn kernel; /* of the general blocks */
    size_t ncontact, capc;
    gf_solver_contact *rec; /* in contact order after prepare, in sweep order during a solve */
    gf_solver_head *head;   /* rec's bodies and kinds, in sweep order during a solve */
    size_t caphead;
    gf_solver_contact *tmp; /* the permutation's target */
    size_t captmp;
    size_t ngeneral, capg;
    gf_solver_general *gen;
    size_t njoint, capjoint;
    double *joint;            /* the joint blocks' Delassus matrices */
    int64_t joints, fallback; /* joint block solves, and point by point ones, this solve */
    double omega;             /* the over-relaxation of the current sweep (prm's, or 1) */
    size_t nbody;             /* particles (owned and ghosts) prepared for */
    size_t nrec, nown;        /* body records of particles in a solve; the first nown are owned */
    size_t capb;              /* records: nrec of particles, GF_MAX_BODIES geometry bodies, then
                                 turning mesh surfaces */
    gf_solver_body *body;
    int32_t *rec_of;  /* per particle: its body record (-1: none in this solve) */
    int32_t *part_of; /* per body record of a particle: that particle */
    size_t cap_of, cap_part;
    size_t capdl;
    double *dl;    /* Jacobi: the pending impulse change of each contact, 3 per contact */
    int32_t *edge; /* records whose velocities the synchronisation reads or writes */
    size_t nedge, cape;
    /* A measured sweep keeps each owned body's velocities from before its first change in the
     * sweep (6 per body, in `saved` order): the change D of solver.h is then taken over the
     * bodies that changed, instead of a copy and a comparison of every body per measurement. */
    double *snap;
    int32_t *saved;        /* the bodies kept, in the order of their first change */
    uint32_t *saved_epoch; /* per owned body record: the measurement that kept it */
    uint32_t epoch;        /* the current or last measurement */
    int measuring;
    size_t nsaved, capv;
    /* Gauss-Seidel skips a block whose last solve changed nothing while neither of its bodies
     * has changed since: it would give the same impulse again. `tick` counts the changes of a
     * solve; stamp[i] is the tick of body record i's last change, seen[q] the tick at which
     * record q last changed nothing (0: not since the solve began). */
    uint32_t tick;
    uint32_t *stamp, *seen;
    /* It also skips an open sphere block without impulse while its bodies' linear velocities
     * have changed by less than its slack u_n + bias: drift[i] bounds the total change of body
     * record i's velocity in this solve, slack[q] (0: none) and slack_ref[q] are record q's
     * slack and its bodies' drift when it was found. */
    double *drift, *slack, *slack_ref;
    size_t capdrift, capslack;
    /* And a quiet sphere block: one whose relative velocity u has changed by less than
     * `quiet` (in |.|_1, with the distance its last solve left it from its own answer) since
     * that solve (quiet_u[4 q .. 4 q + 3]: that u and that distance, record q). Its solve would
     * change the velocities by less than `quiet`: set, after the first stopping test, to
     * prm.quiet times what the tolerance allows, and added to the estimated error. 0: no block
     * is quiet (tolerance 0, a fixed number of sweeps, the sweeps before the first test).
     * Gauss-Seidel's late sweeps otherwise solve most blocks again for changes of a few ulps
     * that spread through the whole packing (docs/physics.md, "Quiet blocks"). */
    double quiet, *quiet_u;
    size_t capquiet;
    int64_t quiet_tests, quiet_skips; /* since the last stopping test */
    int64_t blocks;                   /* blocks solved in this solve */
    size_t capstamp, capseen;
    /* Cohesion (docs/physics.md, "Cohesion"): where `cohesive`, kappa[j] is the pull contact j
     * can hold within the step, cohesion dt for a touching contact (gap <= GF_SOLVER_COHESION_RANGE
     * of its first body's bounding radius), else 0. A block solves for its impulse plus kappa
     * e_n, which the kernels keep non-negative and in the cone. */
    int cohesive;
    double *kappa;
    size_t capkappa;
    /* Rolling and twisting resistance, where `resistive` (gf_contacts.resistive): each
     * contact's torque block, solved after its force block in the same visit; dtau the pending
     * torque changes of a Jacobi sweep. */
    int resistive;
    gf_solver_resist *resist;
    size_t capresist;
    double *dtau;
    size_t capdtau;
    /* Restitution's phase after the compression, where `rebounding` (some contact has N > 0);
     * drho the pending tangential changes of a Jacobi sweep. */
    int rebounding;
    gf_solver_rebound *rebound;
    size_t caprebound;
    double *drho;
    size_t capdrho;
} gf_solver;

void gf_solver_params_default(gf_solver_params *prm);
const char *gf_solver_model_name(gf_contact_model model);
/*  Solver { model max_dissipation; manifolds joint; mode gauss_seidel; max_iterations 100;
 *           tolerance 1e-3;
 *           sweeps 0; relaxation 1; error_reduction 0.1; penetration_slop 1e-6; check_every 1;
 *           warm_start true; } */
gf_status gf_solver_configure(gf_solver_params *prm, gf_config_block *root);

gf_status gf_solver_init(gf_solver *s, const gf_solver_params *prm);
void gf_solver_free(gf_solver *s);
/* The bytes a Gauss-Seidel sweep reads per contact iteration of two spheres: the contact's
 * record and its two bodies', with the state of the rules that skip blocks (for benchmarks). */
size_t gf_solver_bytes_per_iteration(void);
/* How many of the prepared contacts take the general kernel (the others are sphere blocks). */
size_t gf_solver_general_count(const gf_solver *s);

/* Computes the Delassus blocks of all contacts and the sweep's records (step 2 of DESIGN.md);
 * the particles' velocities may still change before the solve, their masses and orientations
 * not. */
gf_status gf_solver_prepare(gf_solver *s, const gf_particles *p, const gf_contacts *c);

/* On entry the particle velocities are the free velocities of the step; on exit they are the
 * post-step velocities and c->lambda holds the impulses. Impulses already in c->lambda are the
 * starting guess (warm start); they must be zero otherwise. */
gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, const gf_solver_comm *comm, gf_solver_result *res);
/* Continues a solve after contacts were added (with zero impulse) and the solver prepared
 * again: the velocities already hold the impulses in c->lambda. */
gf_status gf_solver_resume(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                           double dt, const gf_solver_comm *comm, gf_solver_result *res);

#endif
