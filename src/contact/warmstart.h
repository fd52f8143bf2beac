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

#include "contact/contact.h"
#include "granflow/error.h"
#include "body/particles.h"

/* The table is in key order (a, b, pt) after every operation below but gf_warmstart_store, which
 * leaves it in the order of the contacts: the step's lookups (gf_warmstart_apply) go through a
 * hash index, and the operations that need the key order (take, merge, append, insert, sort)
 * sort it first, so a run on one rank never sorts it. */
#define GF_WARMSTART_NV 6

typedef struct {
    size_t n, cap;
    int64_t *a, *b; /* keyed by (a, b, pt) */
    int32_t *pt;    /* the point of the pair */
    /* world-frame impulse on particle a: the force's (N s) in l[0..2], the torque's of rolling
     * and twisting resistance (N m s) in l[3..5] */
    double *l[GF_WARMSTART_NV];
    int unsorted; /* not in key order (after gf_warmstart_store) */
} gf_warmstart;

void gf_warmstart_init(gf_warmstart *ws);
void gf_warmstart_free(gf_warmstart *ws);
/* Replaces the table by the impulses of the solved contacts (in their order; the torques where
 * c->resistive). */
gf_status gf_warmstart_store(gf_warmstart *ws, const gf_particles *p, const gf_contacts *c);
/* Puts the table in key order (a no-op when it is). */
gf_status gf_warmstart_sort(gf_warmstart *ws);
/* Sets c->lambda, and c->tau where c->resistive, from the table (zero for new contacts); returns
 * how many were found. */
size_t gf_warmstart_apply(const gf_warmstart *ws, const gf_particles *p, gf_contacts *c);
/* Moves the entries whose first id is in `ids` (sorted ascending) into `out`, which may already
 * hold entries. */
gf_status gf_warmstart_take(gf_warmstart *ws, const int64_t *ids, size_t nids, gf_warmstart *out);
/* Adds the entries of `in`, which must be in key order (a linear merge of the two tables). */
gf_status gf_warmstart_merge(gf_warmstart *ws, const gf_warmstart *in);
/* The table's side of migration (par/exchange.h's gf_exchange_payload, ctx a gf_warmstart):
 * the entries whose first id is in `ids` (sorted ascending) leave the table as bytes, and bytes
 * received are merged in. */
gf_status gf_warmstart_pack(void *ws, const int64_t *ids, size_t n, void **data, size_t *len);
gf_status gf_warmstart_unpack(void *ws, const void *data, size_t len);
/* Adds one entry at its place: O(1) when keys come in increasing order, O(n) otherwise (use
 * gf_warmstart_insert for many entries in no particular order). */
gf_status gf_warmstart_append(gf_warmstart *ws, int64_t a, int64_t b, int32_t pt, const double l[3],
                              const double torque[3] /* NULL: 0 */);
/* Adds n entries given as rows in any order, e.g. as read from a file: keys pair[2k], pair[2k+1],
 * point[k] (point NULL: all 0), impulses impulse[3k .. 3k+2] and torque[3k .. 3k+2] (NULL: 0).
 * O(n log n). */
gf_status gf_warmstart_insert(gf_warmstart *ws, size_t n, const int64_t *pair, const int32_t *point,
                              const double *impulse, const double *torque);

#endif
