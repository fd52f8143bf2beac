/* Warm start: the impulses of the previous step, reused as the starting guess for contacts that
 * persist. Entries are keyed by the global ids of the pair, (smaller id, larger id) for two
 * particles and (particle id, -1 - wall) for walls, so the key's first id is always the particle
 * whose owner solves the contact, and by the point of the pair's manifold (0 for spheres; a box
 * on a face has up to 4); entries travel with that particle when it migrates. Impulses
 * are kept in world coordinates (acting on the key's first particle) because the tangents of a
 * contact frame are not preserved from one step to the next. */
#ifndef GRANFLOW_WARMSTART_H
#define GRANFLOW_WARMSTART_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/contact.h"
#include "granflow/error.h"
#include "granflow/particles.h"

/* The table is sorted by key (a, b, pt) after every operation below, so that lookups are binary
 * searches. */
typedef struct {
    size_t n, cap;
    int64_t *a, *b; /* sorted by (a, b, pt) */
    int32_t *pt;    /* the point of the pair */
    double *l[3];   /* world-frame impulse on particle a */
} gf_warmstart;

void gf_warmstart_init(gf_warmstart *ws);
void gf_warmstart_free(gf_warmstart *ws);
/* Replaces the table by the impulses of the solved contacts. */
gf_status gf_warmstart_store(gf_warmstart *ws, const gf_particles *p, const gf_contacts *c);
/* Sets c->lambda from the table (zero for new contacts); returns how many were found. */
size_t gf_warmstart_apply(const gf_warmstart *ws, const gf_particles *p, gf_contacts *c);
/* Moves the entries whose first id is in `ids` (sorted ascending) into `out`, which may already
 * hold entries. */
gf_status gf_warmstart_take(gf_warmstart *ws, const int64_t *ids, size_t nids, gf_warmstart *out);
/* Adds the entries of `in` (a linear merge of the two sorted tables). */
gf_status gf_warmstart_merge(gf_warmstart *ws, const gf_warmstart *in);
/* Adds one entry at its place: O(1) when keys come in increasing order, O(n) otherwise (use
 * gf_warmstart_insert for many entries in no particular order). */
gf_status gf_warmstart_append(gf_warmstart *ws, int64_t a, int64_t b, int32_t pt,
                              const double l[3]);
/* Adds n entries given as rows in any order, e.g. as read from a file: keys pair[2k], pair[2k+1],
 * point[k] (point NULL: all 0), impulses impulse[3k .. 3k+2]. O(n log n). */
gf_status gf_warmstart_insert(gf_warmstart *ws, size_t n, const int64_t *pair, const int32_t *point,
                              const double *impulse);

#endif
