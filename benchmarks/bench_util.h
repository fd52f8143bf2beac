/* What the benchmark drivers share: CPU time of this process, and the end of a run on failure. */
#ifndef GF_BENCH_UTIL_H
#define GF_BENCH_UTIL_H

#include <stdio.h>
#include <time.h>

#include "granflow/error.h"
#include "par/par.h"

/* CPU seconds of this process (user + system): the machine's cores are shared. */
static inline double bench_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Prints `what` and the library's message as `name: what: message`, and ends the job. */
static inline int bench_fail(const char *name, const gf_par *par, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", name, what, gf_error_message());
    gf_par_abort(par, 1);
    return 1;
}

#endif
