/* Messages for users: collective information from rank 0, per-rank errors with a [rank N]
 * prefix. The rank is set once after MPI starts so that no module needs MPI to log. */
#ifndef GRANFLOW_LOG_H
#define GRANFLOW_LOG_H

#include <stdio.h>

void gf_log_set_rank(int rank);
int gf_log_rank(void);
/* Quiet mode drops info lines (tests); errors are always printed. */
void gf_log_set_quiet(int quiet);

/* Printed by rank 0 only, to stdout. */
void gf_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed by the calling rank, to stderr, prefixed with [rank N]. */
void gf_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gf_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error found by rank `origin` (printed by whichever rank reports it; origin < 0: this one). */
void gf_log_error_from(int origin, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
