/* Comparing effective configurations, for restarts: the text gf_config_dump writes is parsed
 * into "Block.key value" items and two of them compared key by key. */
#include "config/config_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_schema.h"

/* One "key value;" of an effective configuration, its key with the enclosing blocks. A block's
 * component carries its occurrence among equally named siblings ("Materials#1.Material#2"), so
 * that repeated blocks compare in order. */
typedef struct {
    char *key, *value;
} cfg_item;

typedef struct {
    cfg_item *item;
    size_t n, cap;
} cfg_items;

static void cfg_items_free(cfg_items *c) {
    for (size_t i = 0; i < c->n; ++i) {
        free(c->item[i].key);
        free(c->item[i].value);
    }
    free(c->item);
    memset(c, 0, sizeof *c);
}

static char *dup_range(const char *s, size_t n) {
    char *d = gf_malloc(n + 1, 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static gf_status cfg_add(cfg_items *c, const char *path, const char *key, size_t klen,
                         const char *value, size_t vlen) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        GF_TRY(gf_grow((void **)&c->item, cap, sizeof *c->item));
        c->cap = cap;
    }
    size_t plen = strlen(path);
    char *k = gf_malloc(plen + klen + 2, 1);
    char *v = dup_range(value, vlen);
    if (!k || !v) {
        free(k);
        free(v);
        return gf_error_status();
    }
    if (plen)
        snprintf(k, plen + klen + 2, "%s.%.*s", path, (int)klen, key);
    else
        snprintf(k, klen + 1, "%.*s", (int)klen, key);
    c->item[c->n].key = k;
    c->item[c->n].value = v;
    c->n++;
    return GF_OK;
}

static gf_status cfg_visit(void *ctx, const char *path, const char *key, const char *value) {
    return cfg_add(ctx, path, key, strlen(key), value, strlen(value));
}

/* The keys of an effective configuration, read by the configuration parser. */
static gf_status cfg_parse(const char *text, cfg_items *out) {
    memset(out, 0, sizeof *out);
    gf_config *cfg = NULL;
    GF_TRY(gf_error_context(gf_config_parse(text, strlen(text), "(stored configuration)", &cfg),
                            "a stored configuration"));
    gf_status st = gf_config_visit(cfg, cfg_visit, out);
    gf_config_destroy(cfg);
    if (st != GF_OK)
        cfg_items_free(out);
    return st;
}

/* A number, or a vector "< a, b, c >": the count of values, or -1 for anything else. */
static int cfg_numbers(const char *v, double *x, int max) {
    int vector = *v == '<', n = 0;
    const char *p = vector ? v + 1 : v;
    for (;;) {
        char *end;
        while (*p == ' ')
            ++p;
        if (n == max)
            return -1;
        x[n] = strtod(p, &end);
        if (end == p)
            return -1;
        ++n;
        p = end;
        while (*p == ' ')
            ++p;
        if (vector && *p == ',') {
            ++p;
            continue;
        }
        if (vector ? strcmp(p, ">") == 0 : *p == '\0')
            return n;
        return -1;
    }
}

/* Equal values: numbers and vectors by value ("1e-4" is "0.0001"), anything else as text. */
static int cfg_same_value(const char *a, const char *b) {
    double x[4], y[4];
    int nx = cfg_numbers(a, x, 4), ny = cfg_numbers(b, y, 4);
    if (nx > 0 && nx == ny) {
        for (int k = 0; k < nx; ++k)
            if (x[k] != y[k])
                return 0;
        return 1;
    }
    return strcmp(a, b) == 0;
}

/* The key without block occurrences ("Materials.Material.density"). */
static void cfg_plain_key(const char *key, char *out, size_t size) {
    size_t o = 0;
    for (const char *p = key; *p && o + 1 < size; ++p) {
        if (*p == '#') {
            while (p[1] >= '0' && p[1] <= '9')
                ++p;
            continue;
        }
        out[o++] = *p;
    }
    out[o] = '\0';
}

/* Keys that may differ on a restart are flagged in the registry (config_schema.c), next to
 * each key's documentation: how long the run goes, what it writes, how it reports, how hard the
 * solver tries (not what it solves), and how the domain is cut into processes (a restart may
 * use any rank count, with or without load balancing). Everything else describes the physics
 * and must match. */

static const cfg_item *cfg_find(const cfg_items *c, const char *key) {
    for (size_t i = 0; i < c->n; ++i)
        if (strcmp(c->item[i].key, key) == 0)
            return &c->item[i];
    return NULL;
}

/* Whether either configuration has a second block where `key` has the first one, `at` being
 * the position of that "#1". */
static int cfg_repeated(const cfg_items *a, const cfg_items *b, const char *key, size_t at) {
    char probe[2100];
    snprintf(probe, sizeof probe, "%.*s#2.", (int)at, key);
    size_t n = strlen(probe);
    for (int s = 0; s < 2; ++s) {
        const cfg_items *c = s ? b : a;
        for (size_t i = 0; i < c->n; ++i)
            if (strncmp(c->item[i].key, probe, n) == 0)
                return 1;
    }
    return 0;
}

/* The key as users write it: "Materials.Material[2].density", a block's number only where the
 * block is repeated. */
static void cfg_display_key(const cfg_items *a, const cfg_items *b, const char *key, char *out,
                            size_t size) {
    size_t o = 0;
    for (const char *p = key; *p && o + 12 < size; ++p) {
        if (*p != '#') {
            out[o++] = *p;
            continue;
        }
        long k = strtol(p + 1, NULL, 10);
        size_t at = (size_t)(p - key);
        while (p[1] >= '0' && p[1] <= '9')
            ++p;
        if (k > 1 || cfg_repeated(a, b, key, at)) {
            int w = snprintf(out + o, size - o, "[%ld]", k);
            if (w < 0 || (size_t)w >= size - o)
                break;
            o += (size_t)w;
        }
    }
    out[o] = '\0';
}

/* A number as written, or in its shortest exact form when that is shorter (a stored
 * configuration of an earlier version holds "0.050000000000000003" for 0.05). */
static void cfg_number_text(const char *literal, size_t len, double x, char *out, size_t size) {
    char s[64];
    gf_config_format_double(x, s, sizeof s);
    if (strlen(s) < len)
        snprintf(out, size, "%s", s);
    else
        snprintf(out, size, "%.*s", (int)len, literal);
}

/* A value for the report: numbers and vectors as short as they are exact, others as they are. */
static void cfg_display_value(const char *v, char *out, size_t size) {
    double x[4];
    int n = cfg_numbers(v, x, 4);
    if (n < 1 || (*v != '<' && n != 1)) {
        snprintf(out, size, "%.80s", v);
        return;
    }
    if (*v != '<') {
        cfg_number_text(v, strlen(v), x[0], out, size);
        return;
    }
    size_t o = (size_t)snprintf(out, size, "<");
    const char *p = v + 1;
    for (int k = 0; k < n && o < size; ++k) {
        while (*p == ' ')
            ++p;
        char *end;
        strtod(p, &end);
        char num[64];
        cfg_number_text(p, (size_t)(end - p), x[k], num, sizeof num);
        o += (size_t)snprintf(out + o, size - o, "%s %s", k ? "," : "", num);
        p = end;
        while (*p == ' ' || *p == ',')
            ++p;
    }
    if (o < size)
        snprintf(out + o, size - o, " >");
}

/* Appends one report line. */
static gf_status cfg_report(char **report, size_t *len, const char *key, const char *was,
                            const char *now) {
    char line[400], w[128] = "absent", c[128] = "absent";
    if (was)
        cfg_display_value(was, w, sizeof w);
    if (now)
        cfg_display_value(now, c, sizeof c);
    int n = snprintf(line, sizeof line, "  %s: %s in the checkpoint, %s now\n", key, w, c);
    if (n < 0)
        return GF_OK;
    size_t add = strlen(line);
    GF_TRY(gf_grow((void **)report, *len + add + 1, 1));
    memcpy(*report + *len, line, add + 1);
    *len += add;
    return GF_OK;
}

/* Whether a key the stored configuration lacks, in a block it has, holds its registered default
 * now: a key a later version added (a new feature, off by default) is no change of what the
 * checkpoint's run did. A block the stored configuration lacks altogether (an Inflow added) is a
 * change, whatever its keys. */
static int cfg_new_at_default(const cfg_items *stored, const char *key, const char *plain,
                              const char *value) {
    const char *last = strrchr(key, '.');
    if (!last)
        return 0;
    size_t blen = (size_t)(last - key) + 1; /* "Block#1.Sub#2." */
    int block_stored = 0;
    for (size_t i = 0; i < stored->n && !block_stored; ++i)
        block_stored = strncmp(stored->item[i].key, key, blen) == 0;
    if (!block_stored)
        return 0;
    char path[2100];
    const gf_config_key *k = gf_config_schema_find_dotted(plain, path, sizeof path);
    if (!k || !k->def || k->def[0] == '(')
        return 0;
    /* A word may be written as a string ("sphere" for sphere): compare without the quotes. */
    char v[256], d[256];
    snprintf(v, sizeof v, "%s", value);
    snprintf(d, sizeof d, "%s", k->def);
    for (char *t = v; t; t = t == v ? d : NULL) {
        size_t n = strlen(t);
        if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
            memmove(t, t + 1, n - 2);
            t[n - 2] = '\0';
        }
    }
    return cfg_same_value(v, d);
}

/* Ends a report: "  and N more" past the lines shown, no final newline. */
static gf_status cfg_report_end(char **report, size_t len, int count, int shown) {
    gf_status st = GF_OK;
    if (count > shown) {
        char more[64];
        snprintf(more, sizeof more, "  and %d more\n", count - shown);
        size_t add = strlen(more);
        st = gf_grow((void **)report, len + add + 1, 1);
        if (st == GF_OK) {
            memcpy(*report + len, more, add + 1);
            len += add;
        }
    }
    if (st == GF_OK && len > 0)
        (*report)[len - 1] = '\0';
    return st;
}

gf_status gf_config_compare(const char *stored, const char *current, char **report, int *ndiff) {
    return gf_config_compare_changes(stored, current, report, ndiff, NULL);
}

gf_status gf_config_compare_changes(const char *stored, const char *current, char **report,
                                    int *ndiff, char **changed) {
    *report = NULL;
    *ndiff = 0;
    if (changed)
        *changed = NULL;
    size_t clen = 0;
    int nchanged = 0;
    cfg_items a, b;
    GF_TRY(cfg_parse(stored, &a));
    gf_status st = cfg_parse(current, &b);
    if (st != GF_OK) {
        cfg_items_free(&a);
        return st;
    }
    size_t len = 0;
    /* A message must stay readable (and fit the error message): the first keys, then a count. */
    const int shown = 12;
    for (int pass = 0; pass < 2 && st == GF_OK; ++pass) {
        const cfg_items *from = pass ? &b : &a, *other = pass ? &a : &b;
        for (size_t i = 0; i < from->n && st == GF_OK; ++i) {
            const cfg_item *x = &from->item[i], *y = cfg_find(other, x->key);
            char plain[2100], shown_key[2200];
            cfg_plain_key(x->key, plain, sizeof plain);
            /* Keys in both are compared once, in the first pass. */
            if ((pass && y) || (y && cfg_same_value(x->value, y->value)) ||
                (pass && cfg_new_at_default(other, x->key, plain, x->value)))
                continue;
            if (gf_config_schema_restart_free(plain)) {
                /* What a stage may change is a change of physics a restart may make: said. */
                if (changed && gf_config_schema_stage_free(plain) && ++nchanged <= shown) {
                    cfg_display_key(&a, &b, x->key, shown_key, sizeof shown_key);
                    st = cfg_report(changed, &clen, shown_key, pass ? NULL : x->value,
                                    pass ? x->value : (y ? y->value : NULL));
                }
                continue;
            }
            if (++*ndiff > shown)
                continue;
            cfg_display_key(&a, &b, x->key, shown_key, sizeof shown_key);
            const char *was = pass ? NULL : x->value,
                       *now = pass ? x->value : (y ? y->value : NULL);
            st = cfg_report(report, &len, shown_key, was, now);
        }
    }
    if (st == GF_OK)
        st = cfg_report_end(report, len, *ndiff, shown);
    if (st == GF_OK && changed)
        st = cfg_report_end(changed, clen, nchanged, shown);
    if (st != GF_OK) {
        free(*report);
        *report = NULL;
        if (changed) {
            free(*changed);
            *changed = NULL;
        }
    }
    cfg_items_free(&a);
    cfg_items_free(&b);
    return st;
}
