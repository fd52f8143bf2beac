#include "core/state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gf_state_init(gf_state *s) {
    memset(s, 0, sizeof *s);
}

void gf_state_free(gf_state *s) {
    for (size_t k = 0; k < s->count; ++k) {
        free(s->item[k].i);
        free(s->item[k].r);
    }
    free(s->item);
    memset(s, 0, sizeof *s);
}

const gf_state_item *gf_state_find(const gf_state *s, const char *name) {
    for (size_t k = 0; k < s->count; ++k)
        if (strcmp(s->item[k].name, name) == 0)
            return &s->item[k];
    return NULL;
}

/* A fresh item `name` (an earlier one of that name emptied), its n values allocated. */
static gf_status put(gf_state *s, const char *name, gf_state_type type, size_t n,
                     gf_state_item **out) {
    if (strlen(name) >= GF_STATE_NAME)
        return GF_ERROR(GF_ERR_STATE, "state item name '%s' is too long", name);
    gf_state_item *it = (gf_state_item *)gf_state_find(s, name);
    if (!it) {
        if (s->count == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 16;
            GF_TRY(gf_grow((void **)&s->item, cap, sizeof *s->item));
            s->cap = cap;
        }
        it = &s->item[s->count++];
        memset(it, 0, sizeof *it);
        snprintf(it->name, sizeof it->name, "%s", name);
    }
    free(it->i);
    free(it->r);
    it->i = NULL;
    it->r = NULL;
    it->type = type;
    it->n = 0;
    void *data =
        type == GF_STATE_INT ? gf_malloc(n + 1, sizeof(int64_t)) : gf_malloc(n + 1, sizeof(double));
    if (!data)
        return gf_error_status();
    if (type == GF_STATE_INT)
        it->i = data;
    else
        it->r = data;
    it->n = n;
    *out = it;
    return GF_OK;
}

gf_status gf_state_put_int(gf_state *s, const char *name, size_t n, const int64_t *v) {
    gf_state_item *it = NULL;
    GF_TRY(put(s, name, GF_STATE_INT, n, &it));
    if (n)
        memcpy(it->i, v, n * sizeof *v);
    return GF_OK;
}

gf_status gf_state_put_real(gf_state *s, const char *name, size_t n, const double *v) {
    gf_state_item *it = NULL;
    GF_TRY(put(s, name, GF_STATE_REAL, n, &it));
    if (n)
        memcpy(it->r, v, n * sizeof *v);
    return GF_OK;
}

static gf_status lookup(const gf_state *s, const char *name, size_t n, const gf_state_item **it) {
    *it = gf_state_find(s, name);
    const char *src = s->source ? s->source : "the state";
    if (!*it)
        return GF_ERROR(GF_ERR_INPUT, "'%s' lacks the state item '%s' (a damaged checkpoint?)", src,
                        name);
    if ((*it)->n != n)
        return GF_ERROR(GF_ERR_INPUT,
                        "'%s': the state item '%s' has %zu values, this configuration needs %zu",
                        src, name, (*it)->n, n);
    return GF_OK;
}

gf_status gf_state_get_int(const gf_state *s, const char *name, size_t n, int64_t *v) {
    const gf_state_item *it;
    GF_TRY(lookup(s, name, n, &it));
    for (size_t k = 0; k < n; ++k) {
        if (it->type == GF_STATE_INT) {
            v[k] = it->i[k];
            continue;
        }
        double x = it->r[k];
        if (!(x == floor(x) && fabs(x) < 9.2e18))
            return GF_ERROR(GF_ERR_INPUT, "'%s': the state item '%s' holds %g, not a count",
                            s->source ? s->source : "the state", name, x);
        v[k] = (int64_t)x;
    }
    return GF_OK;
}

gf_status gf_state_get_real(const gf_state *s, const char *name, size_t n, double *v) {
    const gf_state_item *it;
    GF_TRY(lookup(s, name, n, &it));
    for (size_t k = 0; k < n; ++k)
        v[k] = it->type == GF_STATE_INT ? (double)it->i[k] : it->r[k];
    return GF_OK;
}
