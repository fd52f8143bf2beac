/* Warm start: the impulses of the previous step, reused as the starting guess for contacts that
 * persist. Entries are keyed by the global ids of the pair, (smaller id, larger id) for two
 * particles and (particle id, -1 - wall) for walls, so the key's first id is always the particle
 * whose owner solves the contact; entries travel with that particle when it migrates. Impulses
 * are kept in world coordinates (acting on the key's first particle) because the tangents of a
 * contact frame are not preserved from one step to the next. */
#ifndef GRANFLOW_WARMSTART_H
#define GRANFLOW_WARMSTART_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/contact.h"
#include "granflow/error.h"
#include "granflow/particles.h"

typedef struct {
    size_t n, cap;
    int64_t *a, *b; /* sorted by (a, b) */
    double *l[3];   /* world-frame impulse on particle a */
} gf_warmstart;

void gf_warmstart_init(gf_warmstart *ws);
void gf_warmstart_free(gf_warmstart *ws);
/* Replaces the table by the impulses of the solved contacts. */
gf_status gf_warmstart_store(gf_warmstart *ws, const gf_particles *p, const gf_contacts *c);
/* Sets c->lambda from the table (zero for new contacts); returns how many were found. */
size_t gf_warmstart_apply(const gf_warmstart *ws, const gf_particles *p, gf_contacts *c);
/* Moves the entries whose first id is in `ids` (sorted ascending) into `out` (appended). */
gf_status gf_warmstart_take(gf_warmstart *ws, const int64_t *ids, size_t nids, gf_warmstart *out);
/* Adds entries (keeping the table sorted). */
gf_status gf_warmstart_merge(gf_warmstart *ws, const gf_warmstart *in);
gf_status gf_warmstart_append(gf_warmstart *ws, int64_t a, int64_t b, const double l[3]);

#endif
