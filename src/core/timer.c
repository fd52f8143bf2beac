#include "core/timer.h"

#include <string.h>
#include <time.h>

double gf_wtime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gf_timers_reset(gf_timers *t) {
    memset(t, 0, sizeof *t);
}

void gf_timer_start(gf_timers *t, gf_timer_id id) {
    t->start[id] = gf_wtime();
}

void gf_timer_stop(gf_timers *t, gf_timer_id id) {
    t->elapsed[id] += gf_wtime() - t->start[id];
}

const char *gf_timer_name(gf_timer_id id) {
    static const char *names[GF_TIMER_COUNT] = {"total",       "detect",    "prepare", "solve",
                                                "communicate", "integrate", "output"};
    return (id >= 0 && id < GF_TIMER_COUNT) ? names[id] : "?";
}
