/* The warm-start table is in key order after every operation that needs it (issue 11): entries
 * appended in any order, taken into a table that already holds entries, merged, and added in
 * bulk as rows from a file; a step's store keeps the contacts' order, and its lookups find every
 * entry all the same. A table that is not sorted makes the binary search miss entries, so each
 * check is also a lookup of every expected key. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contact/warmstart.h"
#include "test_util.h"

/* A reference entry: the key and an impulse and torque impulse that encode it, so a mixed-up
 * row shows. */
typedef struct {
    int64_t a, b;
} key;

static void impulse_of(key k, double l[GF_WARMSTART_NV]) {
    l[0] = (double)k.a + 0.25;
    l[1] = (double)k.b - 0.5;
    l[2] = (double)(k.a * 7 + k.b);
    l[3] = (double)k.a * 3.0 - 0.125;
    l[4] = (double)(k.b * 2 + 1);
    l[5] = (double)(k.a + k.b) + 0.375;
}

static int cmp_key(const void *x, const void *y) {
    const key *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

/* Binary search, as the solver looks entries up. */
static long lookup(const gf_warmstart *ws, key k) {
    size_t lo = 0, hi = ws->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ws->a[mid] < k.a || (ws->a[mid] == k.a && ws->b[mid] < k.b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ws->n && ws->a[lo] == k.a && ws->b[lo] == k.b ? (long)lo : -1;
}

/* The table holds exactly the keys `want` (any order), strictly sorted, each with its impulse
 * and found by binary search. */
static void assert_table(const gf_warmstart *ws, key *want, size_t n) {
    assert_int_equal(ws->n, n);
    for (size_t i = 1; i < ws->n; ++i)
        if (!(ws->a[i - 1] < ws->a[i] || (ws->a[i - 1] == ws->a[i] && ws->b[i - 1] < ws->b[i])))
            fail_msg("entries %zu and %zu out of order: (%lld, %lld) then (%lld, %lld)", i - 1, i,
                     (long long)ws->a[i - 1], (long long)ws->b[i - 1], (long long)ws->a[i],
                     (long long)ws->b[i]);
    qsort(want, n, sizeof *want, cmp_key);
    size_t found = 0;
    for (size_t i = 0; i < n; ++i) {
        long k = lookup(ws, want[i]);
        if (k < 0)
            continue;
        double l[GF_WARMSTART_NV];
        impulse_of(want[i], l);
        for (int d = 0; d < GF_WARMSTART_NV; ++d)
            assert_true(ws->l[d][k] == l[d]);
        found++;
    }
    if (found != n)
        fail_msg("binary search finds %zu of %zu entries", found, n);
}

/* n distinct keys in a scrambled order: particle pairs and particle-wall keys. */
static key *scrambled_keys(size_t n, uint64_t seed) {
    key *k = malloc(n * sizeof *k);
    for (size_t i = 0; i < n; ++i) {
        k[i].a = (int64_t)(i / 3);
        k[i].b = i % 3 == 2 ? -1 - (int64_t)(i % 5) : (int64_t)(i / 3 + 1 + i % 3);
    }
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)gf_test_uniform(&seed, 0, (double)i);
        key t = k[i - 1];
        k[i - 1] = k[j];
        k[j] = t;
    }
    return k;
}

static void add(gf_warmstart *ws, key k) {
    double l[GF_WARMSTART_NV];
    impulse_of(k, l);
    GF_ASSERT_OK(gf_warmstart_append(ws, k.a, k.b, 0, l, l + 3));
}

static void test_append_any_order(void **state) {
    (void)state;
    const size_t n = 512;
    key *k = scrambled_keys(n, 11);
    gf_warmstart ws;
    gf_warmstart_init(&ws);
    for (size_t i = 0; i < n; ++i)
        add(&ws, k[i]);
    assert_table(&ws, k, n);
    gf_warmstart_free(&ws);
    free(k);
}

/* Rows grouped by the rank that wrote them, each group sorted: what a checkpoint holds. */
static void test_insert_rows_of_a_file(void **state) {
    (void)state;
    const size_t n = 512, groups = 4;
    key *k = scrambled_keys(n, 5);
    /* Each group sorted on its own, the groups in file order. */
    for (size_t g = 0; g < groups; ++g)
        qsort(k + g * n / groups, n / groups, sizeof *k, cmp_key);
    int64_t *pair = malloc(2 * n * sizeof *pair);
    double *imp = malloc(3 * n * sizeof *imp), *torque = malloc(3 * n * sizeof *torque);
    for (size_t i = 0; i < n; ++i) {
        pair[2 * i] = k[i].a;
        pair[2 * i + 1] = k[i].b;
        double l[GF_WARMSTART_NV];
        impulse_of(k[i], l);
        memcpy(imp + 3 * i, l, 3 * sizeof *l);
        memcpy(torque + 3 * i, l + 3, 3 * sizeof *l);
    }
    gf_warmstart ws;
    gf_warmstart_init(&ws);
    /* Added in two calls, the second into a table that already holds entries. */
    GF_ASSERT_OK(gf_warmstart_insert(&ws, n / 2, pair, NULL, imp, torque));
    GF_ASSERT_OK(gf_warmstart_insert(&ws, n - n / 2, pair + n, NULL, imp + 3 * (n / 2),
                                     torque + 3 * (n / 2)));
    assert_table(&ws, k, n);
    gf_warmstart_free(&ws);
    free(pair);
    free(imp);
    free(torque);
    free(k);
}

/* Entries taken into a table that already holds some (as when entries of particles from two
 * neighbours arrive), and the rest left behind, both sorted. */
static void test_take_and_merge(void **state) {
    (void)state;
    const size_t n = 300;
    key *k = scrambled_keys(n, 7);
    gf_warmstart src, out, extra;
    gf_warmstart_init(&src);
    gf_warmstart_init(&out);
    gf_warmstart_init(&extra);
    /* Entries of first ids 0, 3, 6, ... go to `out`, which starts with keys of other first ids
     * interleaved with them. */
    key *taken = malloc(2 * n * sizeof *taken), *kept = malloc(n * sizeof *kept);
    size_t ntaken = 0, nkept = 0;
    int64_t ids[200];
    size_t nids = 0;
    for (int64_t a = 0; a < (int64_t)(n / 3); a += 3)
        ids[nids++] = a;
    for (size_t i = 0; i < n; ++i) {
        add(&src, k[i]);
        if (k[i].a % 3 == 0)
            taken[ntaken++] = k[i];
        else
            kept[nkept++] = k[i];
    }
    for (int64_t a = 1; a < (int64_t)(n / 3); a += 3) {
        key e = {a, 1000 + a};
        add(&out, e);
        taken[ntaken++] = e;
    }
    GF_ASSERT_OK(gf_warmstart_take(&src, ids, nids, &out));
    assert_table(&src, kept, nkept);
    assert_table(&out, taken, ntaken);
    /* Merging back restores the union. */
    for (int64_t a = 2; a < 40; a += 3) {
        key e = {a, 2000 + a};
        add(&extra, e);
        kept[nkept++] = e;
    }
    GF_ASSERT_OK(gf_warmstart_merge(&src, &extra));
    assert_table(&src, kept, nkept);
    gf_warmstart_free(&src);
    gf_warmstart_free(&out);
    gf_warmstart_free(&extra);
    free(taken);
    free(kept);
    free(k);
}

/* Lookup of every contact of a step: each contact whose key (smaller id first; a wall's id as
 * second; the point of the pair) is in the table gets its impulse, turned into the contact's
 * frame and sign; the others start at zero. 3000 entries, 6000 contacts in another order. */
static void test_apply_finds_every_entry(void **state) {
    (void)state;
    gf_warmstart ws;
    gf_warmstart_init(&ws);
    const int64_t n = 1000;
    for (int64_t a = 0; a < n; ++a)
        for (int32_t pt = 0; pt < 3; ++pt) {
            key k = {a, pt == 2 ? -1 - (a % 4) : a + 1 + pt}; /* two pairs and a wall */
            double l[GF_WARMSTART_NV];
            impulse_of(k, l);
            l[2] += pt; /* points of one pair differ */
            l[5] += pt;
            GF_ASSERT_OK(gf_warmstart_append(&ws, k.a, k.b, pt == 2 ? 0 : pt, l, l + 3));
        }
    gf_contacts c;
    gf_contacts_init(&c);
    const size_t m = 6000;
    c.count = m;
    c.i1 = calloc(m, sizeof *c.i1);
    c.i2 = calloc(m, sizeof *c.i2);
    c.id1 = calloc(m, sizeof *c.id1);
    c.id2 = calloc(m, sizeof *c.id2);
    c.point = calloc(m, sizeof *c.point);
    for (int d = 0; d < 3; ++d) {
        c.n[d] = calloc(m, sizeof(double));
        c.t[d] = calloc(m, sizeof(double));
        c.o[d] = calloc(m, sizeof(double));
        c.lambda[d] = calloc(m, sizeof(double));
        c.tau[d] = calloc(m, sizeof(double));
    }
    c.resistive = 1;
    uint64_t rng = 5;
    size_t expect_found = 0;
    double *expect = calloc(6 * m, sizeof *expect);
    for (size_t j = 0; j < m; ++j) {
        int64_t a = (int64_t)(gf_test_uniform(&rng, 0, 1.2 * (double)n)); /* some beyond */
        int kind = (int)(gf_test_uniform(&rng, 0, 3.999));
        int flip = gf_test_uniform(&rng, 0, 1) < 0.5;
        int64_t b = kind == 2 ? -1 - (a % 4) : a + 1 + (kind == 3 ? 5 : kind);
        c.i2[j] = kind == 2 ? (int32_t)b : 1;
        c.id1[j] = kind == 2 || !flip ? a : b;
        c.id2[j] = kind == 2 || !flip ? b : a;
        c.point[j] = kind == 1 ? 1 : 0;
        /* Frame: n, t, o a cyclic permutation of the axes. */
        int r = (int)(j % 3);
        c.n[r][j] = c.t[(r + 1) % 3][j] = c.o[(r + 2) % 3][j] = 1.0;
        int present = a < n && kind != 3;
        expect_found += present;
        double l[GF_WARMSTART_NV] = {0, 0, 0, 0, 0, 0};
        if (present) {
            impulse_of((key){a, b}, l);
            l[2] += kind == 2 ? 2 : kind;
            l[5] += kind == 2 ? 2 : kind;
            double sgn = kind != 2 && flip ? -1.0 : 1.0;
            for (int d = 0; d < GF_WARMSTART_NV; ++d)
                l[d] *= sgn;
        }
        /* the force and the torque in the contact's frame, as seen by its first body */
        double want[6] = {l[r],     l[(r + 1) % 3],     l[(r + 2) % 3],
                          l[3 + r], l[3 + (r + 1) % 3], l[3 + (r + 2) % 3]};
        if (want[0] < 0.0) /* a pull is not kept, nor its torque */
            want[0] = want[1] = want[2] = want[3] = want[4] = want[5] = 0.0;
        for (int d = 0; d < 3; ++d)
            c.lambda[d][j] = c.tau[d][j] = 1e6; /* overwritten by apply, also when absent */
        memcpy(expect + 6 * j, want, sizeof want);
    }
    assert_int_equal(gf_warmstart_apply(&ws, NULL, &c), expect_found);
    for (size_t j = 0; j < m; ++j)
        for (int d = 0; d < 3; ++d) {
            assert_true(c.lambda[d][j] == expect[6 * j + d]);
            assert_true(c.tau[d][j] == expect[6 * j + 3 + d]);
        }
    free(expect);
    gf_contacts_free(&c);
    gf_warmstart_free(&ws);
}

/* Contacts with the keys k[0..n) in that order, each in the world's frame (so the table holds
 * impulse_of(key) as it is), with the impulses impulse_of(key). */
static void contacts_of(gf_contacts *c, const key *k, size_t n) {
    gf_contacts_init(c);
    c->count = n;
    c->i1 = calloc(n, sizeof *c->i1);
    c->i2 = calloc(n, sizeof *c->i2);
    c->id1 = calloc(n, sizeof *c->id1);
    c->id2 = calloc(n, sizeof *c->id2);
    c->point = calloc(n, sizeof *c->point);
    for (int d = 0; d < 3; ++d) {
        c->n[d] = calloc(n, sizeof(double));
        c->t[d] = calloc(n, sizeof(double));
        c->o[d] = calloc(n, sizeof(double));
        c->lambda[d] = calloc(n, sizeof(double));
        c->tau[d] = calloc(n, sizeof(double));
    }
    c->resistive = 1;
    for (size_t j = 0; j < n; ++j) {
        c->id1[j] = k[j].a;
        c->id2[j] = k[j].b;
        c->i2[j] = k[j].b < 0 ? (int32_t)k[j].b : 1;
        c->n[0][j] = c->t[1][j] = c->o[2][j] = 1.0;
        double l[GF_WARMSTART_NV];
        impulse_of(k[j], l);
        for (int d = 0; d < 3; ++d) {
            c->lambda[d][j] = l[d];
            c->tau[d][j] = l[3 + d];
        }
    }
}

/* A step's store keeps the contacts' order; its lookups still find every impulse, and every
 * operation that needs the key order (take, and the merge into a table that holds entries, and
 * append) leaves both tables in it. */
static void test_store_then_key_order(void **state) {
    (void)state;
    const size_t n = 600;
    key *k = scrambled_keys(n, 23);
    gf_contacts c;
    contacts_of(&c, k, n);
    gf_warmstart ws;
    gf_warmstart_init(&ws);
    GF_ASSERT_OK(gf_warmstart_store(&ws, NULL, &c));
    assert_int_equal(ws.n, n);
    for (size_t j = 0; j < n; ++j)
        for (int d = 0; d < 3; ++d)
            c.lambda[d][j] = c.tau[d][j] = -1.0;
    assert_int_equal(gf_warmstart_apply(&ws, NULL, &c), n);
    for (size_t j = 0; j < n; ++j) {
        double l[GF_WARMSTART_NV];
        impulse_of(k[j], l);
        for (int d = 0; d < 3; ++d) {
            assert_true(c.lambda[d][j] == l[d]);
            assert_true(c.tau[d][j] == l[3 + d]);
        }
    }
    /* Take the entries of every third first id into a table that holds others already. */
    int64_t ids[200];
    size_t nids = 0;
    for (int64_t a = 0; a < 200; a += 3)
        ids[nids++] = a;
    gf_warmstart out;
    gf_warmstart_init(&out);
    key *moved = malloc(n * sizeof *moved), *kept = malloc(n * sizeof *kept);
    key extra = {1000, 1001};
    add(&out, extra);
    size_t nm = 0, nk = 0;
    moved[nm++] = extra;
    for (size_t j = 0; j < n; ++j) {
        if (k[j].a % 3 == 0)
            moved[nm++] = k[j];
        else
            kept[nk++] = k[j];
    }
    GF_ASSERT_OK(gf_warmstart_take(&ws, ids, nids, &out));
    assert_table(&out, moved, nm);
    assert_table(&ws, kept, nk);
    /* An append after a store. */
    GF_ASSERT_OK(gf_warmstart_store(&ws, NULL, &c));
    key late = {-5, 7};
    add(&ws, late);
    key *all = malloc((n + 1) * sizeof *all);
    memcpy(all, k, n * sizeof *k);
    all[n] = late;
    assert_table(&ws, all, n + 1);
    free(all);
    free(moved);
    free(kept);
    free(k);
    gf_warmstart_free(&out);
    gf_warmstart_free(&ws);
    gf_contacts_free(&c);
}

/* Migration: the entries of the ids that leave travel as bytes, impulses and torques alike, and
 * arrive merged into the receiver's table. */
static void test_pack_and_unpack(void **state) {
    (void)state;
    const size_t n = 240;
    key *k = scrambled_keys(n, 31);
    gf_warmstart from, to;
    gf_warmstart_init(&from);
    gf_warmstart_init(&to);
    key *moved = malloc(n * sizeof *moved), *kept = malloc(n * sizeof *kept);
    size_t nm = 0, nk = 0;
    int64_t ids[100];
    size_t nids = 0;
    for (int64_t a = 1; a < (int64_t)(n / 3); a += 2)
        ids[nids++] = a;
    for (size_t i = 0; i < n; ++i) {
        add(&from, k[i]);
        if (k[i].a % 2 == 1)
            moved[nm++] = k[i];
        else
            kept[nk++] = k[i];
    }
    void *data = NULL;
    size_t len = 0;
    GF_ASSERT_OK(gf_warmstart_pack(&from, ids, nids, &data, &len));
    assert_true(len > 0);
    GF_ASSERT_OK(gf_warmstart_unpack(&to, data, len));
    free(data);
    assert_table(&from, kept, nk);
    assert_table(&to, moved, nm);
    gf_warmstart_free(&from);
    gf_warmstart_free(&to);
    free(moved);
    free(kept);
    free(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_any_order),
        cmocka_unit_test(test_apply_finds_every_entry),
        cmocka_unit_test(test_insert_rows_of_a_file),
        cmocka_unit_test(test_take_and_merge),
        cmocka_unit_test(test_store_then_key_order),
        cmocka_unit_test(test_pack_and_unpack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
