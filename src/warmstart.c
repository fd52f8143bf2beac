#include "granflow/warmstart.h"

#include <stdlib.h>
#include <string.h>

void gf_warmstart_init(gf_warmstart *ws) {
    memset(ws, 0, sizeof *ws);
}

void gf_warmstart_free(gf_warmstart *ws) {
    free(ws->a);
    free(ws->b);
    for (int k = 0; k < 3; ++k)
        free(ws->l[k]);
    gf_warmstart_init(ws);
}

static gf_status reserve(gf_warmstart *ws, size_t need) {
    if (need <= ws->cap)
        return GF_OK;
    size_t cap = ws->cap ? ws->cap : 256;
    while (cap < need)
        cap *= 2;
    GF_TRY(gf_grow((void **)&ws->a, cap, sizeof *ws->a));
    GF_TRY(gf_grow((void **)&ws->b, cap, sizeof *ws->b));
    for (int k = 0; k < 3; ++k)
        GF_TRY(gf_grow((void **)&ws->l[k], cap, sizeof *ws->l[k]));
    ws->cap = cap;
    return GF_OK;
}

gf_status gf_warmstart_append(gf_warmstart *ws, int64_t a, int64_t b, const double l[3]) {
    GF_TRY(reserve(ws, ws->n + 1));
    ws->a[ws->n] = a;
    ws->b[ws->n] = b;
    for (int k = 0; k < 3; ++k)
        ws->l[k][ws->n] = l[k];
    ws->n++;
    return GF_OK;
}

typedef struct {
    int64_t a, b;
    double l[3];
} entry;

static int cmp_entry(const void *x, const void *y) {
    const entry *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

/* Sorts the table by key through an array of records. */
static gf_status sort_table(gf_warmstart *ws) {
    if (ws->n < 2)
        return GF_OK;
    entry *e = gf_malloc(ws->n, sizeof *e);
    if (!e)
        return gf_error_status();
    for (size_t i = 0; i < ws->n; ++i) {
        e[i].a = ws->a[i];
        e[i].b = ws->b[i];
        for (int k = 0; k < 3; ++k)
            e[i].l[k] = ws->l[k][i];
    }
    qsort(e, ws->n, sizeof *e, cmp_entry);
    for (size_t i = 0; i < ws->n; ++i) {
        ws->a[i] = e[i].a;
        ws->b[i] = e[i].b;
        for (int k = 0; k < 3; ++k)
            ws->l[k][i] = e[i].l[k];
    }
    free(e);
    return GF_OK;
}

/* The key of contact j and the sign of its impulse as seen by the key's first particle. */
static void contact_key(const gf_particles *p, const gf_contacts *c, size_t j, int64_t *a,
                        int64_t *b, double *sign) {
    (void)p;
    int64_t id1 = c->id1[j], id2 = c->id2[j];
    if (c->i2[j] < 0 || id1 < id2) {
        *a = id1;
        *b = id2;
        *sign = 1.0;
    } else {
        *a = id2;
        *b = id1;
        *sign = -1.0;
    }
}

gf_status gf_warmstart_store(gf_warmstart *ws, const gf_particles *p, const gf_contacts *c) {
    ws->n = 0;
    GF_TRY(reserve(ws, c->count));
    for (size_t j = 0; j < c->count; ++j) {
        double ln = c->lambda[0][j], lt = c->lambda[1][j], lo = c->lambda[2][j];
        if (ln == 0.0 && lt == 0.0 && lo == 0.0)
            continue;
        int64_t a, b;
        double s;
        contact_key(p, c, j, &a, &b, &s);
        ws->a[ws->n] = a;
        ws->b[ws->n] = b;
        for (int k = 0; k < 3; ++k)
            ws->l[k][ws->n] = s * (ln * c->n[k][j] + lt * c->t[k][j] + lo * c->o[k][j]);
        ws->n++;
    }
    return sort_table(ws);
}

static long find(const gf_warmstart *ws, int64_t a, int64_t b) {
    size_t lo = 0, hi = ws->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ws->a[mid] < a || (ws->a[mid] == a && ws->b[mid] < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < ws->n && ws->a[lo] == a && ws->b[lo] == b) ? (long)lo : -1;
}

size_t gf_warmstart_apply(const gf_warmstart *ws, const gf_particles *p, gf_contacts *c) {
    size_t found = 0;
    for (size_t j = 0; j < c->count; ++j) {
        int64_t a, b;
        double s;
        contact_key(p, c, j, &a, &b, &s);
        long k = ws->n ? find(ws, a, b) : -1;
        if (k < 0) {
            c->lambda[0][j] = c->lambda[1][j] = c->lambda[2][j] = 0.0;
            continue;
        }
        double l[3] = {s * ws->l[0][k], s * ws->l[1][k], s * ws->l[2][k]};
        c->lambda[0][j] = l[0] * c->n[0][j] + l[1] * c->n[1][j] + l[2] * c->n[2][j];
        c->lambda[1][j] = l[0] * c->t[0][j] + l[1] * c->t[1][j] + l[2] * c->t[2][j];
        c->lambda[2][j] = l[0] * c->o[0][j] + l[1] * c->o[1][j] + l[2] * c->o[2][j];
        /* A contact that became separating keeps no pull; the solver does the rest. */
        if (c->lambda[0][j] < 0.0)
            c->lambda[0][j] = c->lambda[1][j] = c->lambda[2][j] = 0.0;
        found++;
    }
    return found;
}

gf_status gf_warmstart_take(gf_warmstart *ws, const int64_t *ids, size_t nids, gf_warmstart *out) {
    size_t keep = 0;
    for (size_t i = 0; i < ws->n; ++i) {
        /* Binary search of the entry's first id among the migrating ids. */
        size_t lo = 0, hi = nids;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ids[mid] < ws->a[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        double l[3] = {ws->l[0][i], ws->l[1][i], ws->l[2][i]};
        if (lo < nids && ids[lo] == ws->a[i]) {
            GF_TRY(gf_warmstart_append(out, ws->a[i], ws->b[i], l));
        } else {
            ws->a[keep] = ws->a[i];
            ws->b[keep] = ws->b[i];
            for (int k = 0; k < 3; ++k)
                ws->l[k][keep] = l[k];
            keep++;
        }
    }
    ws->n = keep;
    return GF_OK;
}

gf_status gf_warmstart_merge(gf_warmstart *ws, const gf_warmstart *in) {
    if (in->n == 0)
        return GF_OK;
    GF_TRY(reserve(ws, ws->n + in->n));
    for (size_t i = 0; i < in->n; ++i) {
        double l[3] = {in->l[0][i], in->l[1][i], in->l[2][i]};
        GF_TRY(gf_warmstart_append(ws, in->a[i], in->b[i], l));
    }
    return sort_table(ws);
}
