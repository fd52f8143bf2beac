/* Status codes and the last-error message.
 *
 * Library functions return a gf_status. On failure they record one message a user can act on
 * (with the source position of the cause) with gf_error_set(); the caller that decides to stop
 * prints gf_error_message(). Only main and the tests abort the job. */
#ifndef GRANFLOW_ERROR_H
#define GRANFLOW_ERROR_H

#include <stddef.h>

typedef enum {
    GF_OK = 0,
    GF_ERR_INPUT,   /* bad configuration or command line: the user can fix it */
    GF_ERR_IO,      /* a file could not be read or written */
    GF_ERR_MEMORY,  /* allocation failed */
    GF_ERR_NUMERIC, /* NaN/Inf or a solver breakdown */
    GF_ERR_STATE,   /* an invariant of the simulation was violated (lost particle, ...) */
    GF_ERR_MPI,     /* an MPI call failed */
    GF_ERR_UNSUPPORTED
} gf_status;

/* Records the message of the current failure and returns `status` so that callers can write
 * `return gf_error_set(GF_ERR_INPUT, __FILE__, __LINE__, "...")`. */
gf_status gf_error_set(gf_status status, const char *src_file, int src_line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define GF_ERROR(status, ...) gf_error_set((status), __FILE__, __LINE__, __VA_ARGS__)

/* For a failing status: puts "context: " in front of the recorded message (whose source position
 * stays that of the cause) and returns status; GF_OK passes through untouched. */
gf_status gf_error_context(gf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Propagates a failing status unchanged; the message of the first failure stays. */
#define GF_TRY(expr)                                                                               \
    do {                                                                                           \
        gf_status gf_try_status_ = (expr);                                                         \
        if (gf_try_status_ != GF_OK)                                                               \
            return gf_try_status_;                                                                 \
    } while (0)

const char *gf_error_message(void);
gf_status gf_error_status(void);
void gf_error_clear(void);

/* Whether every rank knows of the current failure (it was agreed collectively, see
 * gf_par_agree) and which rank found it. A failure no other rank knows of must end the job from
 * that rank (gf_par_fail_alone): the others may be waiting for it in a collective or an
 * exchange. gf_error_set starts a failure that is this rank's alone. */
int gf_error_agreed(void);
int gf_error_origin(void);
/* Marks a failing status as one that every rank meets alike at the same point (a check of
 * globally reduced values), so that it is reported once rather than ending the job from every
 * rank. Returns status. */
gf_status gf_error_everywhere(gf_status status);
/* Adopts the failure another rank found (the message it recorded) as agreed by all. */
void gf_error_adopt(gf_status status, const char *message, int origin);
const char *gf_status_name(gf_status status);

/* Allocation helpers that record a message on failure (n * size overflow checked). */
void *gf_malloc(size_t n, size_t size);
void *gf_calloc(size_t n, size_t size);
gf_status gf_grow(void **ptr, size_t n, size_t size);
/* Grows *ptr, of *cap elements of `size` bytes, to hold at least `need`, doubling (so that
 * arrays filled step by step reallocate rarely); *cap follows. */
gf_status gf_reserve(void **ptr, size_t *cap, size_t need, size_t size);

#endif
