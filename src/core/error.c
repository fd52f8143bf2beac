#include "granflow/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char last_message[2048];
static gf_status last_status = GF_OK;
static int last_agreed = 0;
static int last_origin = -1;

gf_status gf_error_set(gf_status status, const char *src_file, int src_line, const char *fmt, ...) {
    char text[1800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* Only the file name of the source position: full build paths are noise for users. */
    const char *base = strrchr(src_file, '/');
    snprintf(last_message, sizeof last_message, "%s (%s:%d)", text, base ? base + 1 : src_file,
             src_line);
    last_status = status;
    last_agreed = 0;
    last_origin = -1;
    return status;
}

gf_status gf_error_context(gf_status status, const char *fmt, ...) {
    if (status == GF_OK)
        return GF_OK;
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Shift the cause right and write "prefix: " before it (prefix < half the buffer). */
    size_t np = strlen(prefix) + 2;
    memmove(last_message + np, last_message, sizeof last_message - np - 1);
    memcpy(last_message, prefix, np - 2);
    memcpy(last_message + np - 2, ": ", 2);
    last_message[sizeof last_message - 1] = '\0';
    last_status = status;
    return status;
}

const char *gf_error_message(void) {
    return last_message;
}

gf_status gf_error_status(void) {
    return last_status;
}

void gf_error_clear(void) {
    last_message[0] = '\0';
    last_status = GF_OK;
    last_agreed = 0;
    last_origin = -1;
}

int gf_error_agreed(void) {
    return last_agreed;
}

int gf_error_origin(void) {
    return last_origin;
}

gf_status gf_error_everywhere(gf_status status) {
    if (status != GF_OK) {
        last_agreed = 1;
        last_origin = 0;
    }
    return status;
}

void gf_error_adopt(gf_status status, const char *message, int origin) {
    if (message != last_message)
        snprintf(last_message, sizeof last_message, "%s", message);
    last_status = status;
    last_agreed = 1;
    last_origin = origin;
}

const char *gf_status_name(gf_status status) {
    switch (status) {
    case GF_OK:
        return "ok";
    case GF_ERR_INPUT:
        return "input error";
    case GF_ERR_IO:
        return "I/O error";
    case GF_ERR_MEMORY:
        return "out of memory";
    case GF_ERR_NUMERIC:
        return "numerical error";
    case GF_ERR_STATE:
        return "inconsistent state";
    case GF_ERR_MPI:
        return "MPI error";
    case GF_ERR_UNSUPPORTED:
        return "unsupported";
    }
    return "unknown status";
}

void *gf_malloc(size_t n, size_t size) {
    if (size != 0 && n > SIZE_MAX / size) {
        GF_ERROR(GF_ERR_MEMORY, "allocation of %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    void *p = malloc((n != 0 && size != 0) ? n * size : 1);
    if (!p)
        GF_ERROR(GF_ERR_MEMORY, "could not allocate %zu bytes", n * size);
    return p;
}

void *gf_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        GF_ERROR(GF_ERR_MEMORY, "could not allocate %zu x %zu bytes", n, size);
    return p;
}

gf_status gf_reserve(void **ptr, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return GF_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    GF_TRY(gf_grow(ptr, c, size));
    *cap = c;
    return GF_OK;
}

gf_status gf_grow(void **ptr, size_t n, size_t size) {
    if (size != 0 && n > SIZE_MAX / size)
        return GF_ERROR(GF_ERR_MEMORY, "allocation of %zu x %zu bytes overflows", n, size);
    void *p = realloc(*ptr, (n != 0 && size != 0) ? n * size : 1);
    if (!p)
        return GF_ERROR(GF_ERR_MEMORY, "could not grow an array to %zu bytes", n * size);
    *ptr = p;
    return GF_OK;
}
