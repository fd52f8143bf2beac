#include "core/log.h"

#include <stdarg.h>

static int log_rank = 0;
static int log_quiet = 0;

void gf_log_set_rank(int rank) {
    log_rank = rank;
}

int gf_log_rank(void) {
    return log_rank;
}

void gf_log_set_quiet(int quiet) {
    log_quiet = quiet;
}

void gf_log_info(const char *fmt, ...) {
    if (log_rank != 0 || log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static void log_to_stderr(int rank, const char *kind, const char *fmt, va_list ap) {
    fprintf(stderr, "[rank %d] %s: ", rank, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void gf_log_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_to_stderr(log_rank, "error", fmt, ap);
    va_end(ap);
}

void gf_log_warn(const char *fmt, ...) {
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_to_stderr(log_rank, "warning", fmt, ap);
    va_end(ap);
}

void gf_log_error_from(int origin, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_to_stderr(origin >= 0 ? origin : log_rank, "error", fmt, ap);
    va_end(ap);
}
