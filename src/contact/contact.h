/* Contacts: detection with link cells and the contact store.
 *
 * A contact j acts positively on body i1 and negatively on body i2; its normal n points from i2
 * towards i1 (the paper's convention), t and o complete a right-handed frame. i2 < 0 names the
 * wall -(i2 + 1). Contacts are kept when the gap is below a speculative margin so that fast
 * particles cannot tunnel through each other within a step. */
#ifndef GRANFLOW_CONTACT_H
#define GRANFLOW_CONTACT_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/collide.h"
#include "granflow/error.h"
#include "geometry/geometry.h"
#include "contact/linkcells.h"
#include "body/material.h"
#include "body/particles.h"

typedef struct {
    size_t count, capacity;
    int32_t *i1, *i2;
    int64_t *id1, *id2;         /* global ids (wall: -1 - wall), valid after the step too */
    int32_t *point;             /* which point of the pair's manifold (0 for spheres) */
    double *n[3], *t[3], *o[3]; /* contact frame */
    double *r1[3], *r2[3];      /* lever arms from the centres to the contact point */
    double *cp[3];              /* the contact point at detection (world frame), when kept */
    int keep_points;            /* keep cp: the output draws contacts (a cost of detection) */
    int any_immovable;          /* set by detection: bodies of infinite mass are present */
    double *gap;                /* signed distance, negative when penetrating */
    double *mu;
    double *e;  /* where `restitutive`: coefficient of restitution (Poisson's) */
    double *vn; /* where e > 0: the normal velocity before the step's impulses, set by the
                 * solver (NAN: not yet), which decides whether the contact is an impact */
    /* Where `restitutive`: an impact's restitution this step (docs/physics.md, "Restitution"),
     * kept by the solver through a resumed solve: rb[0] the fixed normal impulse (1 + e) times
     * the compression's (0: none yet), rb[1], rb[2] its tangential impulse in (t, o), bounded by
     * mu rb[0]. Both are part of lambda. */
    double *rb[3];
    /* Impacts approaching slower than this stay inelastic (set by the caller: the larger of
     * Materials.restitution_velocity and 2 |g| dt). */
    double restitution_threshold;
    /* Whether any pair of materials has restitution, or cohesion (set by the caller): then e,
     * or coh, holds each contact's law, else it is not written (nor read). */
    int restitutive, cohesive;
    /* Where cohesive: the pull of each contact, its pair's cohesion, times the pair's reduced
     * radius where cohesion_per_radius (set by the caller: Materials.cohesion_scaling). */
    int cohesion_per_radius;
    double *coh;
    /* Where `resistive` (any pair of materials has rolling or twisting resistance, set by the
     * caller): each contact's bounds per unit normal impulse (m), rolling_friction r and
     * twisting_friction r with r = r1 r2 / (r1 + r2) of the bodies' radii (r1 against the
     * geometry), and its torque impulse in the (n, t, o) frame (N m s), acting on i1 (minus it on
     * i2): tau[0] twists, tau[1] and tau[2] resist rolling. Else none is written (nor read). */
    int resistive;
    double *roll, *twist;
    double *tau[3];
    double *lambda[3]; /* impulse in the (n, t, o) frame, output of the solver */
    /* Per-pair speculation (set by the caller before detection; off when speculate is 0). A
     * pair of spheres, or a sphere and the geometry, within the margin is a contact only when
     * its gap can close within the step at the velocities of detection:
     *     gap < spec_tolerance + spec_dt * max(0, closing speed)
     * (the closing speed of a sphere and the geometry counts the step's gravity, spec_gdt = dt
     * g). The others are kept as near pairs; after the solve gf_contact_promote makes contacts
     * of those the solved velocities would close, so no pair penetrates unseen. */
    int speculate;
    double spec_tolerance, spec_dt, spec_gdt[3];
    size_t nnear, capnear;
    int32_t *near1, *near2; /* as i1, i2 */
    double *near_gap;
    double *near_n[3];
    /* gf_contact_recheck's index of the contacts by pair, kept between steps. */
    void *recheck_index;
    size_t cap_recheck_index;
} gf_contacts;

/* The contact law of a pair of materials. */
typedef struct {
    double mu, e, cohesion, rolling, twisting;
} gf_contact_law;

static inline gf_contact_law gf_contact_law_of(const gf_materials *m, int a, int b) {
    gf_contact_law law = {m->friction[a][b], m->restitution[a][b], m->cohesion[a][b],
                          m->rolling[a][b], m->twisting[a][b]};
    return law;
}

void gf_contacts_init(gf_contacts *c);
void gf_contacts_free(gf_contacts *c);
void gf_contacts_clear(gf_contacts *c);

/* Finds every contact among local and ghost particles and with the walls and obstacles with
 * gap < margin that this rank solves: pairs of two ghosts are skipped, and a pair of an owned
 * particle and a ghost is kept only when the owned one has the smaller global id. Spheres take
 * closed forms; any other shape the manifold of gf_collide (several points per pair). */
gf_status gf_contact_detect(const gf_particles *p, const gf_walls *w, const gf_materials *m,
                            double margin, gf_linkcells *lc, gf_contacts *out);
/* The same for a step of dt: a cylinder turning on a wall or on a flat face of a particle, and a
 * sphere beside a turning box, cylinder or capsule, also get the point that the turn brings
 * nearest by the step's end (gf_collide_turning; the angular velocities now taken for the
 * step's). */
gf_status gf_contact_detect_step(const gf_particles *p, const gf_walls *w, const gf_materials *m,
                                 double margin, double dt, gf_linkcells *lc, gf_contacts *out);

/* After a solve: the near pairs (see gf_contacts.speculate) whose gap the particles' velocities
 * would close within dt become contacts (with zero impulse), appended; *added counts them. For
 * two spheres moving straight the gap at the end of the step is at least gap - dt * closing
 * speed, so a near pair left alone cannot penetrate. */
gf_status gf_contact_promote(const gf_particles *p, const gf_walls *w, const gf_materials *m,
                             double dt, gf_contacts *c, size_t *added);

/* Contacts added after a solve by gf_contact_recheck carry point numbers from here on (a
 * manifold's start at 0), so they join no joint block and key no other point's warm start. */
#define GF_CONTACT_RECHECK_POINT (1 << 30)

/* After a solve, for the pairs with a body that is not a sphere whose solved turn differs from
 * the one detection took (angular velocities w0 then, per particle; NULL: none) by more than
 * 1e-3 of the smaller body at its surface (particle pairs of lc's list, particles against walls
 * and obstacles): the pair found again in the poses its solved turns bring it to
 * (gf_collide_turning with dt times the solved angular velocities), and
 * every point the solved velocities would take deeper than 1e-3 of the smaller body by the
 * step's end that lies farther than 5 % of that body from all of the pair's contacts becomes a
 * contact (zero impulse), appended; *added counts them. The step's detection took the turns
 * before the solve: an impact that tilts a disc's cap on a face within the step brings its rim
 * down between the manifold's points. */
gf_status gf_contact_recheck(const gf_particles *p, const double *const w0[3], const gf_walls *w,
                             const gf_materials *m, double margin, double dt, gf_linkcells *lc,
                             gf_contacts *c, size_t *added);

/* The same by checking all pairs: the reference for tests. */
gf_status gf_contact_detect_brute(const gf_particles *p, const gf_walls *w, const gf_materials *m,
                                  double margin, gf_contacts *out);

#endif
