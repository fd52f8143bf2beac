/* Phase timers in the style of CoMD: a fixed set of named phases, each accumulating wall time
 * between start and stop, cheap enough to wrap every phase of every step. */
#ifndef GRANFLOW_TIMER_H
#define GRANFLOW_TIMER_H

typedef enum {
    GF_TIMER_TOTAL,
    GF_TIMER_DETECT,
    GF_TIMER_PREPARE,
    GF_TIMER_SOLVE,
    GF_TIMER_COMM,
    GF_TIMER_INTEGRATE,
    GF_TIMER_OUTPUT,
    GF_TIMER_COUNT
} gf_timer_id;

typedef struct {
    double start[GF_TIMER_COUNT];
    double elapsed[GF_TIMER_COUNT];
} gf_timers;

double gf_wtime(void);
void gf_timers_reset(gf_timers *t);
void gf_timer_start(gf_timers *t, gf_timer_id id);
void gf_timer_stop(gf_timers *t, gf_timer_id id);
const char *gf_timer_name(gf_timer_id id);

#endif
