#include "contact/warmstart.h"

#include <stdlib.h>
#include <string.h>

void gf_warmstart_init(gf_warmstart *ws) {
    memset(ws, 0, sizeof *ws);
}

void gf_warmstart_free(gf_warmstart *ws) {
    free(ws->a);
    free(ws->b);
    free(ws->pt);
    for (int k = 0; k < GF_WARMSTART_NV; ++k)
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
    GF_TRY(gf_grow((void **)&ws->pt, cap, sizeof *ws->pt));
    for (int k = 0; k < GF_WARMSTART_NV; ++k)
        GF_TRY(gf_grow((void **)&ws->l[k], cap, sizeof *ws->l[k]));
    ws->cap = cap;
    return GF_OK;
}

/* Adds an entry at the end, whatever its key: only for building a table that is sorted before
 * it is handed out. */
static gf_status push(gf_warmstart *ws, int64_t a, int64_t b, int32_t pt,
                      const double l[GF_WARMSTART_NV]) {
    GF_TRY(reserve(ws, ws->n + 1));
    ws->a[ws->n] = a;
    ws->b[ws->n] = b;
    ws->pt[ws->n] = pt;
    for (int k = 0; k < GF_WARMSTART_NV; ++k)
        ws->l[k][ws->n] = l[k];
    ws->n++;
    return GF_OK;
}

typedef struct {
    int64_t a, b;
    int32_t pt;
} key;

static inline key key_at(const gf_warmstart *ws, size_t i) {
    return (key){ws->a[i], ws->b[i], ws->pt[i]};
}

static inline int key_less(key x, key y) {
    return x.a < y.a || (x.a == y.a && (x.b < y.b || (x.b == y.b && x.pt < y.pt)));
}

static inline int key_equal(key x, key y) {
    return x.a == y.a && x.b == y.b && x.pt == y.pt;
}

/* The first index whose key is not less than k. */
static size_t lower_bound(const gf_warmstart *ws, key k) {
    size_t lo = 0, hi = ws->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_less(key_at(ws, mid), k))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* An entry's values from its force and torque impulses (NULL: 0). */
static void entry_values(const double l[3], const double torque[3], double v[GF_WARMSTART_NV]) {
    for (int k = 0; k < 3; ++k) {
        v[k] = l[k];
        v[3 + k] = torque ? torque[k] : 0.0;
    }
}

gf_status gf_warmstart_append(gf_warmstart *ws, int64_t a, int64_t b, int32_t pt, const double l[3],
                              const double torque[3]) {
    double v[GF_WARMSTART_NV];
    entry_values(l, torque, v);
    GF_TRY(gf_warmstart_sort(ws));
    size_t n = ws->n;
    key k = {a, b, pt};
    /* Keys arriving in order (the common case) go to the end; others are inserted at their
     * place, after any equal key. */
    size_t at = n == 0 || !key_less(k, key_at(ws, n - 1)) ? n : lower_bound(ws, k);
    while (at < n && key_equal(key_at(ws, at), k))
        at++;
    GF_TRY(push(ws, a, b, pt, v));
    if (at == n)
        return GF_OK;
    memmove(ws->a + at + 1, ws->a + at, (n - at) * sizeof *ws->a);
    memmove(ws->b + at + 1, ws->b + at, (n - at) * sizeof *ws->b);
    memmove(ws->pt + at + 1, ws->pt + at, (n - at) * sizeof *ws->pt);
    for (int d = 0; d < GF_WARMSTART_NV; ++d)
        memmove(ws->l[d] + at + 1, ws->l[d] + at, (n - at) * sizeof *ws->l[d]);
    ws->a[at] = a;
    ws->b[at] = b;
    ws->pt[at] = pt;
    for (int d = 0; d < GF_WARMSTART_NV; ++d)
        ws->l[d][at] = v[d];
    return GF_OK;
}

/* A key and where its entry is, for sorting (the impulses follow by the permutation). */
typedef struct {
    key k;
    size_t at;
} sort_item;

static inline int item_less(const sort_item *x, const sort_item *y) {
    return key_less(x->k, y->k);
}

/* Runs shorter than this are sorted by insertion before the merges. */
#define SORT_RUN 16

/* A stable merge sort of n items (tmp: room for n more), bottom-up, with the comparison inline
 * (qsort's call per comparison cost more than the sort's moves). Returns where the sorted items
 * are (v or tmp). */
static sort_item *sort_items(sort_item *v, sort_item *tmp, size_t n) {
    for (size_t lo = 0; lo < n; lo += SORT_RUN) {
        size_t hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;
        for (size_t i = lo + 1; i < hi; ++i) {
            sort_item x = v[i];
            size_t j = i;
            for (; j > lo && item_less(&x, &v[j - 1]); --j)
                v[j] = v[j - 1];
            v[j] = x;
        }
    }
    sort_item *from = v, *to = tmp;
    for (size_t width = SORT_RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = item_less(&from[j], &from[i]) ? from[j++] : from[i++];
            while (i < mid)
                to[k++] = from[i++];
            while (j < hi)
                to[k++] = from[j++];
        }
        sort_item *t = from;
        from = to;
        to = t;
    }
    return from;
}

/* Sorts the table by key (stable). */
static gf_status sort_table(gf_warmstart *ws) {
    size_t n = ws->n;
    if (n < 2)
        return GF_OK;
    sort_item *items = gf_malloc(2 * n, sizeof *items);
    double *l = gf_malloc(GF_WARMSTART_NV * n, sizeof *l);
    if (!items || !l) {
        free(items);
        free(l);
        return gf_error_status();
    }
    for (size_t i = 0; i < n; ++i)
        items[i] = (sort_item){key_at(ws, i), i};
    const sort_item *sorted = sort_items(items, items + n, n);
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < GF_WARMSTART_NV; ++k)
            l[GF_WARMSTART_NV * i + k] = ws->l[k][sorted[i].at];
    for (size_t i = 0; i < n; ++i) {
        ws->a[i] = sorted[i].k.a;
        ws->b[i] = sorted[i].k.b;
        ws->pt[i] = sorted[i].k.pt;
        for (int k = 0; k < GF_WARMSTART_NV; ++k)
            ws->l[k][i] = l[GF_WARMSTART_NV * i + k];
    }
    free(items);
    free(l);
    return GF_OK;
}

gf_status gf_warmstart_sort(gf_warmstart *ws) {
    if (!ws->unsorted)
        return GF_OK;
    GF_TRY(sort_table(ws));
    ws->unsorted = 0;
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
        double tn = 0.0, tt = 0.0, to = 0.0;
        if (c->resistive) {
            tn = c->tau[0][j];
            tt = c->tau[1][j];
            to = c->tau[2][j];
        }
        if (ln == 0.0 && lt == 0.0 && lo == 0.0 && tn == 0.0 && tt == 0.0 && to == 0.0)
            continue;
        int64_t a, b;
        double s;
        contact_key(p, c, j, &a, &b, &s);
        ws->a[ws->n] = a;
        ws->b[ws->n] = b;
        ws->pt[ws->n] = c->point[j];
        for (int k = 0; k < 3; ++k) {
            ws->l[k][ws->n] = s * (ln * c->n[k][j] + lt * c->t[k][j] + lo * c->o[k][j]);
            ws->l[3 + k][ws->n] = s * (tn * c->n[k][j] + tt * c->t[k][j] + to * c->o[k][j]);
        }
        ws->n++;
    }
    ws->unsorted = ws->n > 1;
    return GF_OK;
}

/* Without the hash index (memory short): a binary search, or a scan of a table in contact
 * order. */
static long find(const gf_warmstart *ws, key k) {
    if (ws->unsorted) {
        for (size_t i = 0; i < ws->n; ++i)
            if (key_equal(key_at(ws, i), k))
                return (long)i;
        return -1;
    }
    size_t lo = lower_bound(ws, k);
    return (lo < ws->n && key_equal(key_at(ws, lo), k)) ? (long)lo : -1;
}

static inline uint64_t key_hash(key k) {
    uint64_t h = (uint64_t)k.a * 0x9e3779b97f4a7c15ULL;
    h ^= ((uint64_t)k.b + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;
    h ^= (uint64_t)(uint32_t)k.pt * 0x165667b19e3779f9ULL;
    return h ^ (h >> 29);
}

/* An open-addressing index of the table's entries (mask + 1 slots, -1 empty): it serves a table
 * in any order (after a store: the contacts'), and where a binary search of a table in key order
 * misses the cache at every level, a hash probe misses about once. NULL when memory is short
 * (then find(): a binary search, or a scan of a table not in key order). */
static int32_t *hash_build(const gf_warmstart *ws, size_t *mask) {
    size_t cap = 16;
    while (cap < 2 * ws->n)
        cap *= 2;
    int32_t *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return NULL;
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t i = 0; i < ws->n; ++i) {
        size_t h = (size_t)key_hash(key_at(ws, i)) & (cap - 1);
        while (slot[h] >= 0)
            h = (h + 1) & (cap - 1);
        slot[h] = (int32_t)i;
    }
    *mask = cap - 1;
    return slot;
}

static long hash_find(const gf_warmstart *ws, const int32_t *slot, size_t mask, key k) {
    for (size_t h = (size_t)key_hash(k) & mask; slot[h] >= 0; h = (h + 1) & mask)
        if (key_equal(key_at(ws, (size_t)slot[h]), k))
            return slot[h];
    return -1;
}

size_t gf_warmstart_apply(const gf_warmstart *ws, const gf_particles *p, gf_contacts *c) {
    size_t found = 0, mask = 0;
    int32_t *slot = ws->n ? hash_build(ws, &mask) : NULL;
    for (size_t j = 0; j < c->count; ++j) {
        int64_t a, b;
        double s;
        contact_key(p, c, j, &a, &b, &s);
        key want = {a, b, c->point[j]};
        long k = !ws->n ? -1 : (slot ? hash_find(ws, slot, mask, want) : find(ws, want));
        if (c->resistive)
            c->tau[0][j] = c->tau[1][j] = c->tau[2][j] = 0.0;
        if (k < 0) {
            c->lambda[0][j] = c->lambda[1][j] = c->lambda[2][j] = 0.0;
            continue;
        }
        double l[3] = {s * ws->l[0][k], s * ws->l[1][k], s * ws->l[2][k]};
        c->lambda[0][j] = l[0] * c->n[0][j] + l[1] * c->n[1][j] + l[2] * c->n[2][j];
        c->lambda[1][j] = l[0] * c->t[0][j] + l[1] * c->t[1][j] + l[2] * c->t[2][j];
        c->lambda[2][j] = l[0] * c->o[0][j] + l[1] * c->o[1][j] + l[2] * c->o[2][j];
        /* A contact that became separating keeps no pull; the solver does the rest. */
        if (c->lambda[0][j] < 0.0) {
            c->lambda[0][j] = c->lambda[1][j] = c->lambda[2][j] = 0.0;
        } else if (c->resistive) {
            const double m[3] = {s * ws->l[3][k], s * ws->l[4][k], s * ws->l[5][k]};
            c->tau[0][j] = m[0] * c->n[0][j] + m[1] * c->n[1][j] + m[2] * c->n[2][j];
            c->tau[1][j] = m[0] * c->t[0][j] + m[1] * c->t[1][j] + m[2] * c->t[2][j];
            c->tau[2][j] = m[0] * c->o[0][j] + m[1] * c->o[1][j] + m[2] * c->o[2][j];
        }
        found++;
    }
    free(slot);
    return found;
}

static int contains(const int64_t *ids, size_t nids, int64_t id) {
    size_t lo = 0, hi = nids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nids && ids[lo] == id;
}

gf_status gf_warmstart_take(gf_warmstart *ws, const int64_t *ids, size_t nids, gf_warmstart *out) {
    size_t count = 0;
    for (size_t i = 0; i < ws->n; ++i)
        count += contains(ids, nids, ws->a[i]);
    if (count == 0)
        return GF_OK;
    GF_TRY(gf_warmstart_sort(ws));
    /* Room first, so that nothing fails halfway: the taken entries leave as a sorted run, the
     * rest close up in order. */
    gf_warmstart run;
    gf_warmstart_init(&run);
    GF_TRY(reserve(&run, count));
    size_t keep = 0;
    for (size_t i = 0; i < ws->n; ++i) {
        double l[GF_WARMSTART_NV];
        for (int k = 0; k < GF_WARMSTART_NV; ++k)
            l[k] = ws->l[k][i];
        if (contains(ids, nids, ws->a[i])) {
            (void)push(&run, ws->a[i], ws->b[i], ws->pt[i], l); /* reserved: cannot fail */
        } else {
            ws->a[keep] = ws->a[i];
            ws->b[keep] = ws->b[i];
            ws->pt[keep] = ws->pt[i];
            for (int k = 0; k < GF_WARMSTART_NV; ++k)
                ws->l[k][keep] = l[k];
            keep++;
        }
    }
    ws->n = keep;
    gf_status st = gf_warmstart_merge(out, &run);
    if (st != GF_OK)
        (void)gf_warmstart_merge(ws, &run); /* back where they were: ws has the room */
    gf_warmstart_free(&run);
    return st;
}

gf_status gf_warmstart_merge(gf_warmstart *ws, const gf_warmstart *in) {
    if (in->n == 0)
        return GF_OK;
    if (in->unsorted)
        return GF_ERROR(GF_ERR_STATE, "warm start: a table to merge must be in key order");
    GF_TRY(gf_warmstart_sort(ws));
    size_t n = ws->n, m = in->n;
    GF_TRY(reserve(ws, n + m));
    /* Both sorted: merge from the back, in place; on equal keys ws's entries stay first. */
    size_t i = n, j = m, k = n + m;
    while (j > 0) {
        int from_ws = i > 0 && key_less(key_at(in, j - 1), key_at(ws, i - 1));
        --k;
        if (from_ws) {
            --i;
            ws->a[k] = ws->a[i];
            ws->b[k] = ws->b[i];
            ws->pt[k] = ws->pt[i];
            for (int d = 0; d < GF_WARMSTART_NV; ++d)
                ws->l[d][k] = ws->l[d][i];
        } else {
            --j;
            ws->a[k] = in->a[j];
            ws->b[k] = in->b[j];
            ws->pt[k] = in->pt[j];
            for (int d = 0; d < GF_WARMSTART_NV; ++d)
                ws->l[d][k] = in->l[d][j];
        }
    }
    ws->n = n + m;
    return GF_OK;
}

gf_status gf_warmstart_insert(gf_warmstart *ws, size_t n, const int64_t *pair, const int32_t *point,
                              const double *impulse, const double *torque) {
    if (n == 0)
        return GF_OK;
    gf_warmstart rows;
    gf_warmstart_init(&rows);
    gf_status st = reserve(&rows, n);
    for (size_t k = 0; k < n && st == GF_OK; ++k) {
        double v[GF_WARMSTART_NV];
        entry_values(impulse + 3 * k, torque ? torque + 3 * k : NULL, v);
        st = push(&rows, pair[2 * k], pair[2 * k + 1], point ? point[k] : 0, v);
    }
    if (st == GF_OK)
        st = sort_table(&rows);
    if (st == GF_OK)
        st = gf_warmstart_merge(ws, &rows);
    gf_warmstart_free(&rows);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Migration                                                                                  */

/* An entry as it travels between ranks. */
typedef struct {
    int64_t a, b;
    int32_t pt;
    double l[GF_WARMSTART_NV];
} wire_entry;

gf_status gf_warmstart_pack(void *ctx, const int64_t *ids, size_t n, void **data, size_t *len) {
    gf_warmstart *ws = ctx;
    *data = NULL;
    *len = 0;
    gf_warmstart moving;
    gf_warmstart_init(&moving);
    gf_status st = gf_warmstart_take(ws, ids, n, &moving);
    wire_entry *out = NULL;
    if (st == GF_OK && moving.n > 0) {
        out = gf_malloc(moving.n, sizeof *out);
        if (!out)
            st = gf_error_status();
    }
    for (size_t k = 0; st == GF_OK && k < moving.n; ++k) {
        memset(&out[k], 0, sizeof out[k]); /* no uninitialised padding on the wire */
        out[k].a = moving.a[k];
        out[k].b = moving.b[k];
        out[k].pt = moving.pt[k];
        for (int c = 0; c < GF_WARMSTART_NV; ++c)
            out[k].l[c] = moving.l[c][k];
    }
    if (st == GF_OK && out) {
        *data = out;
        *len = moving.n * sizeof *out;
    } else {
        free(out);
    }
    gf_warmstart_free(&moving);
    return st;
}

gf_status gf_warmstart_unpack(void *ctx, const void *data, size_t len) {
    gf_warmstart *ws = ctx;
    gf_warmstart incoming;
    gf_warmstart_init(&incoming);
    gf_status st = GF_OK;
    for (size_t k = 0; k < len / sizeof(wire_entry) && st == GF_OK; ++k) {
        wire_entry e;
        memcpy(&e, (const char *)data + k * sizeof e, sizeof e);
        st = gf_warmstart_append(&incoming, e.a, e.b, e.pt, e.l, e.l + 3);
    }
    if (st == GF_OK)
        st = gf_warmstart_merge(ws, &incoming);
    gf_warmstart_free(&incoming);
    return st;
}
