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

/* CPU seconds of the calling thread: a single-threaded timing the other sessions on the shared
 * cores do not inflate (they do inflate the wall clock). */
static inline double bench_thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The most repeats a benchmark keeps times of. */
#define BENCH_MAX_REPEATS 64

/* The median of n values (sorts them). */
static inline double bench_median(double *x, int n) {
    for (int i = 1; i < n; ++i) /* insertion sort: n is a handful of repeats */
        for (int j = i; j > 0 && x[j - 1] > x[j]; --j) {
            double t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Prints `what` and the library's message as `name: what: message`, and ends the job. */
static inline int bench_fail(const char *name, const gf_par *par, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", name, what, gf_error_message());
    gf_par_abort(par, 1);
    return 1;
}

#endif
