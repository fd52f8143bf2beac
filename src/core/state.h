/* A module's run state as named arrays of numbers: what a checkpoint keeps of each module
 * besides the particles (an inflow's layer count, an insertion's counters and random streams'
 * positions, the walls' positions). Each module saves into one and restores from one by names it
 * chooses (gf_sim_save_state walks the modules); the checkpoint writer stores every item as an
 * attribute of /state and the reader gives them back, knowing nothing of what they mean. This
 * is granflow's form of LAMMPS' write_restart/read_restart per style and SWIFT's struct_dump. */
#ifndef GRANFLOW_STATE_H
#define GRANFLOW_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "granflow/error.h"

#define GF_STATE_NAME 48

typedef enum { GF_STATE_INT, GF_STATE_REAL } gf_state_type;

typedef struct {
    char name[GF_STATE_NAME];
    gf_state_type type;
    size_t n;
    int64_t *i; /* GF_STATE_INT */
    double *r;  /* GF_STATE_REAL */
} gf_state_item;

typedef struct {
    gf_state_item *item;
    size_t count, cap;
    const char *source; /* for messages: the checkpoint read, or NULL */
} gf_state;

void gf_state_init(gf_state *s);
void gf_state_free(gf_state *s);

/* Adds (or replaces) an item of n values. Names are unique within a state. */
gf_status gf_state_put_int(gf_state *s, const char *name, size_t n, const int64_t *v);
gf_status gf_state_put_real(gf_state *s, const char *name, size_t n, const double *v);

/* The item `name`, or NULL. */
const gf_state_item *gf_state_find(const gf_state *s, const char *name);
/* The n values of item `name` (integers are converted to reals and reals that are whole numbers
 * to integers). A missing item or one of another length is an input error naming the item and
 * s->source (a damaged or foreign checkpoint). */
gf_status gf_state_get_int(const gf_state *s, const char *name, size_t n, int64_t *v);
gf_status gf_state_get_real(const gf_state *s, const char *name, size_t n, double *v);

#endif
