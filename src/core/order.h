/* The orders qsort and bsearch take, shared by every module that sorts ids. */
#ifndef GRANFLOW_ORDER_H
#define GRANFLOW_ORDER_H

#include <stdint.h>

/* Ascending int64_t values (or records whose first member is one). */
static inline int gf_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#endif
