/* Particle exchange between subdomains (part of the par module: MPI lives here).
 *
 * - Migration: a particle whose centre left the subdomain moves to the owner of its new
 *   position, in three axis stages (x, y, z) so that a particle crossing an edge or a corner
 *   is forwarded in the same call; periodic crossings wrap the position.
 * - Ghosts: copies of every particle within the interaction range of a neighbouring subdomain,
 *   again in three stages where each stage forwards the ghosts of the previous ones (faces, then
 *   edges, then corners), periodic images shifted by the box length. Each ghost knows its owner
 *   rank and index there; a registration round tells every owner which of its particles each
 *   neighbour holds, in which order.
 * - Velocity synchronisation for the solver: the velocity change of every ghost since the last
 *   synchronisation goes to its owner, which adds them all up, and the owners' new velocities go
 *   back to all ghost copies. Both are one non-blocking exchange with each neighbour rank, all
 *   ghosts of that rank in one message, which holds only the rows that say something: the
 *   changes that are not zero, the velocities the neighbour does not hold yet (after a
 *   synchronisation it holds those it was sent, until gf_exchange_mark). With two colours, the
 *   pipelined form: one message each way per neighbour and sweep.
 * - What the solver needs to sweep ranks in Gauss-Seidel order (solver.h): the velocity slot of
 *   every particle (copies of one body on this rank share one, so a periodic image here is its
 *   original), which slots other ranks also update, and a colouring of the ranks in which
 *   neighbours differ. */
#ifndef GRANFLOW_EXCHANGE_H
#define GRANFLOW_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "par/decomp.h"
#include "granflow/error.h"
#include "par/par.h"
#include "body/particles.h"

typedef struct {
    const gf_par *par;
    MPI_Comm cart;
    gf_decomp decomp;
    int nnbr; /* distinct ranks of the 3x3x3 neighbourhood (self included) */
    int nbr_rank[27];
    /* Per ghost: owner rank and index there, and the box lengths its position is shifted by
     * along each axis (a periodic image: +1, -1; 0 otherwise). */
    size_t capg;
    int32_t *ghost_rank, *ghost_index;
    int8_t *ghost_shift;
    /* Ghost indices grouped by owner neighbour (recv side of velocities), and my particle
     * indices grouped by the neighbour holding them as ghosts (send side). */
    int recv_off[28], send_off[28];
    int32_t *recv_idx, *send_idx;
    size_t cap_recv, cap_send;
    double *v0[6]; /* ghost velocities at the last synchronisation */
    size_t cap_v0;
    /* Per particle (owned and ghost): the slot whose velocity it uses (an owned particle its own
     * index; a periodic image of an owned particle that index; further copies of one ghost the
     * first), and whether another rank updates that body too (a ghost, or an owned particle with
     * copies on other ranks). Rebuilt with the ghosts, for nslot particles. */
    size_t cap_slot, nslot;
    int32_t *slot;
    uint8_t *shared;
    /* Colour of this rank and the number of colours: the parity of the grid coordinate along each
     * cut axis (a third colour for the last cell of an odd periodic axis), so no two neighbours,
     * diagonal and periodic ones included, have the same colour. */
    int color, ncolors;
    void *buf; /* scratch; during a synchronisation, its messages */
    size_t cap_buf;
    MPI_Request req[54]; /* a synchronisation's messages in flight */
    int nreq;
    /* The pipelined sweep's messages (gf_exchange_pipe_*), one per neighbour and direction:
     * ghost changes for the owner, then values of the owned rows the neighbour holds. */
    double *pipe_out, *pipe_in;
    size_t cap_pipe_out, cap_pipe_in;
    MPI_Request pipe_sreq[27], pipe_rreq[27];
    /* The owner velocities each neighbour holds of the rows it holds as ghosts (send_idx
     * order), valid after a synchronisation until gf_exchange_mark: a velocity message sends
     * only the rows that differ (a row a neighbour changed is forgotten, so it goes back). */
    double *held;
    size_t cap_held;
    int held_valid;
    int pipe_nsend, pipe_nrecv; /* in flight */
    int64_t bytes_sent;
} gf_exchange;

/* Sets up the Cartesian communicator and the decomposition (collective). */
gf_status gf_exchange_init(gf_exchange *x, const gf_par *par, const int dims[3],
                           const int periodic[3], const double lo[3], const double hi[3]);
void gf_exchange_free(gf_exchange *x);

/* The colour of the grid cell at coords (see gf_exchange.color) and the number of colours. */
int gf_exchange_color(const int dims[3], const int periodic[3], const int coords[3], int *ncolors);

/* Data of another module that travels with migrating particles, keyed by particle id (the warm
 * start's impulses): the exchange moves its bytes without knowing them. */
typedef struct {
    void *ctx;
    /* Removes the entries of the particles `ids` (sorted ascending) that leave this rank and
     * gives them as malloc'd bytes (*data NULL and *len 0 when there are none). */
    gf_status (*pack)(void *ctx, const int64_t *ids, size_t n, void **data, size_t *len);
    /* Takes the bytes of the particles arriving from one neighbour. */
    gf_status (*unpack)(void *ctx, const void *data, size_t len);
} gf_exchange_payload;

/* Moves owned particles to their owners (no ghosts may be present); the payload's entries of a
 * migrating particle travel with it (payload may be NULL). */
gf_status gf_exchange_migrate(gf_exchange *x, gf_particles *p, const gf_exchange_payload *payload);

/* Drops the old ghosts and builds the ghosts of every particle within `range` of a neighbour
 * subdomain, then registers them with their owners. */
gf_status gf_exchange_ghosts(gf_exchange *x, gf_particles *p, double range);

/* Sends every ghost its owner's current position, orientation and velocities (the same ghosts
 * as the last gf_exchange_ghosts, which the owners must still hold at the same indices): a
 * step that keeps the ghost lists. Periodic images are shifted as the ghost build shifts them,
 * bit for bit. */
gf_status gf_exchange_refresh(gf_exchange *x, gf_particles *p);

/* Remembers the ghosts' current velocities as the reference of the next synchronisation. */
gf_status gf_exchange_mark(gf_exchange *x, const gf_particles *p);

/* Ghost velocity changes summed onto the owners, new velocities back to the ghosts. */
gf_status gf_exchange_sync(gf_exchange *x, gf_particles *p);
/* The same in two halves: _begin sums the changes onto the owners and posts the owners' new
 * velocities to the ghosts; _end waits for them. Between the two the caller may work on bodies
 * that are neither ghosts nor shared (the solver's interior contacts), but must not touch the
 * exchange otherwise. */
gf_status gf_exchange_sync_begin(gf_exchange *x, gf_particles *p);
gf_status gf_exchange_sync_end(gf_exchange *x, gf_particles *p);

/* The pipelined synchronisation of the solver's two-colour sweep (solver.h): with two colours
 * every neighbour has the other one, and each rank alternates between taking the neighbours'
 * latest boundary results and posting its own, so one message each way per neighbour and sweep
 * replaces the two rounds of a synchronisation, and nobody waits for what it does not need yet.
 * _post sends each neighbour the velocity changes of its ghosts held here since the last
 * message (then marks them) and the velocities of the owned particles it holds as ghosts,
 * without waiting (only the rows that say something, as above); _expect posts the receipt of every
 * neighbour's next message (nothing if posted); _take waits for them (posting them first if need
 * be), adds the changes onto the owned particles and sets the ghosts to their owners' velocities.
 * Periodic images of this rank's own particles are left alone: the solver reads and writes their
 * originals (their velocity slot), and the synchronisation that ends a solve sets them. Only with
 * two colours (gf_exchange_pipe_ready). A synchronisation waits for the pipelined messages still
 * being sent. */
int gf_exchange_pipe_ready(const gf_exchange *x);
gf_status gf_exchange_pipe_post(gf_exchange *x, gf_particles *p);
gf_status gf_exchange_pipe_expect(gf_exchange *x);
gf_status gf_exchange_pipe_take(gf_exchange *x, gf_particles *p);

#endif
