/* The documentation of the configuration cannot drift from the program (issue 14). The program's
 * reads are watched (gf_config_watch) while it sets up every configuration of configs/: each
 * block and key it reads must be registered in src/config/config_schema.c with the type it reads,
 * the default it passes and the range it checks. configs/reference.cfg must set every registered
 * key and run. docs/configuration.md must hold the registry's table, and `granflow --help-config`
 * must print the registry. The literal defaults of the registry are read back through the
 * configuration parser, an independent reader of values. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_schema.h"
#include "core/log.h"
#include "diag/run_observers.h"
#include "sim/sim.h"
#include "test_util.h"

/* ------------------------------------------------------------------------------------------ */
/* Recording what the program reads                                                           */

/* An access with its strings copied (the watcher's live only during the call); view() gives it
 * back as an access. */
typedef struct {
    gf_config_access a;
    char path[256], key[128], def[256];
    int has_key, has_def;
} record;

static gf_config_access view(const record *r) {
    gf_config_access a = r->a;
    a.path = r->path;
    a.key = r->has_key ? r->key : NULL;
    a.def = r->has_def ? r->def : NULL;
    return a;
}

typedef struct {
    record *r;
    size_t n, cap;
} recorder;

static void remember(void *ctx, const gf_config_access *a) {
    recorder *rec = ctx;
    if (rec->n == rec->cap) {
        rec->cap = rec->cap ? 2 * rec->cap : 256;
        rec->r = realloc(rec->r, rec->cap * sizeof *rec->r);
        assert_non_null(rec->r);
    }
    record *r = &rec->r[rec->n++];
    r->a = *a;
    snprintf(r->path, sizeof r->path, "%s", a->path);
    r->has_key = a->key != NULL;
    snprintf(r->key, sizeof r->key, "%s", a->key ? a->key : "");
    r->has_def = a->def != NULL;
    snprintf(r->def, sizeof r->def, "%s", a->def ? a->def : "");
}

/* Every read must agree with the registry; all disagreements are listed, then the test fails. */
static void check_reads(const recorder *rec, const char *what) {
    size_t bad = 0;
    char first[4096] = "";
    for (size_t i = 0; i < rec->n; ++i) {
        gf_config_access a = view(&rec->r[i]);
        if (gf_config_schema_check(&a) == GF_OK)
            continue;
        if (bad++ < 8) {
            size_t len = strlen(first);
            snprintf(first + len, sizeof first - len, "\n  %s", gf_error_message());
        }
    }
    if (bad)
        fail_msg("%s: %zu reads disagree with the registry:%s", what, bad, first);
}

/* Sets a configuration up as `granflow --check` does (as `--dry-run` does when !generate: no
 * particles made, no file read), with the reads recorded; with `steps`, runs that many steps. */
static void set_up(const char *path, int generate, int steps, recorder *rec) {
    char *text = NULL;
    size_t len = 0;
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_read_file(path, &text, &len));
    GF_ASSERT_OK(gf_config_parse(text, len, path, &cfg));
    free(text);
    gf_config_watch(cfg, remember, rec);
    gf_sim sim;
    gf_observers obs;
    GF_ASSERT_OK(gf_run_observers_add(&obs));
    GF_ASSERT_OK(gf_sim_init(&sim, NULL));
    sim.dry_run = !generate;
    gf_status st = gf_sim_configure(&sim, cfg, generate);
    if (st == GF_OK)
        st = gf_observers_configure(&obs, gf_config_root(cfg), &sim);
    if (st == GF_OK)
        st = gf_config_check_unused(cfg);
    if (st != GF_OK)
        fail_msg("%s: %s", path, gf_error_message());
    if (steps > 0) {
        GF_ASSERT_OK(gf_sim_start(&sim));
        for (int k = 0; k < steps; ++k)
            GF_ASSERT_OK(gf_sim_step(&sim));
    }
    gf_observers_free(&obs);
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

/* ------------------------------------------------------------------------------------------ */
/* The watcher and the checker                                                                */

/* The first recorded access of this kind to the key (NULL: the block) of `path`, or NULL. */
static const gf_config_access *find_access(const recorder *rec, gf_config_access_kind kind,
                                           const char *path, const char *key,
                                           gf_config_access *out) {
    for (size_t i = 0; i < rec->n; ++i) {
        *out = view(&rec->r[i]);
        if (out->kind == kind && strcmp(out->path, path) == 0 &&
            (key ? out->key && strcmp(out->key, key) == 0 : !out->key))
            return out;
    }
    return NULL;
}

/* Each kind of access reaches the watcher with its block path, key, default and presence. */
static void test_watcher_sees_every_access(void **state) {
    (void)state;
    const char *text = "A { x 1; B { y < 1, 2, 3 >; } B { } }";
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "w.cfg", &cfg));
    recorder rec = {0};
    gf_config_watch(cfg, remember, &rec);
    gf_config_block *a = gf_config_section(gf_config_root(cfg), "A");
    double x, v[3], q[4];
    long n;
    int flag;
    char s[16];
    static const double q_def[4] = {1, 0, 0, 0};
    GF_ASSERT_OK(gf_config_get_double(a, "x", 2.5, &x));
    GF_ASSERT_OK(gf_config_get_long(a, "n", 7, &n));
    GF_ASSERT_OK(gf_config_get_bool(a, "f", 1, &flag));
    GF_ASSERT_OK(gf_config_get_string(a, "s", "hi", s, sizeof s));
    GF_ASSERT_OK(gf_config_get_quat(a, "q", q_def, q));
    GF_ASSERT_OK(gf_config_check_range(a, "x", x, 0.0, 1e300));
    assert_true(gf_config_has(a, "x"));
    assert_int_equal(gf_config_section_count(a, "B"), 2);
    gf_config_block *b = gf_config_section_nth(a, "B", 1);
    assert_non_null(b);
    assert_int_equal(gf_config_require_vec3(gf_config_section_nth(a, "B", 0), "y", v), GF_OK);
    assert_int_equal(gf_config_require_double(b, "z", &x), GF_ERR_INPUT);
    assert_int_equal(gf_config_section_count(a, "C"), 0);

    gf_config_access found;
    const gf_config_access *r = find_access(&rec, GF_CONFIG_ACCESS_DOUBLE, "A", "x", &found);
    assert_non_null(r);
    assert_string_equal(r->def, "2.5");
    assert_true(r->given && !r->required);
    r = find_access(&rec, GF_CONFIG_ACCESS_LONG, "A", "n", &found);
    assert_non_null(r);
    assert_string_equal(r->def, "7");
    assert_false(r->given);
    r = find_access(&rec, GF_CONFIG_ACCESS_BOOL, "A", "f", &found);
    assert_non_null(r);
    assert_string_equal(r->def, "true");
    r = find_access(&rec, GF_CONFIG_ACCESS_STRING, "A", "s", &found);
    assert_non_null(r);
    assert_string_equal(r->def, "hi");
    r = find_access(&rec, GF_CONFIG_ACCESS_QUAT, "A", "q", &found);
    assert_non_null(r);
    assert_string_equal(r->def, "< 1, 0, 0, 0 >");
    r = find_access(&rec, GF_CONFIG_ACCESS_RANGE, "A", "x", &found);
    assert_non_null(r);
    assert_true(r->lo == 0.0 && r->hi == 1e300);
    assert_non_null(find_access(&rec, GF_CONFIG_ACCESS_HAS, "A", "x", &found));
    r = find_access(&rec, GF_CONFIG_ACCESS_VEC3, "A/B", "y", &found);
    assert_non_null(r);
    assert_true(r->required && r->given && r->def == NULL);
    r = find_access(&rec, GF_CONFIG_ACCESS_DOUBLE, "A/B", "z", &found);
    assert_non_null(r);
    assert_true(r->required && !r->given);
    /* Blocks: the top level's child A, the second B, and C that is not there. */
    assert_non_null(find_access(&rec, GF_CONFIG_ACCESS_BLOCK, "A", NULL, &found));
    int second = 0;
    for (size_t i = 0; i < rec.n; ++i)
        second |= rec.r[i].a.kind == GF_CONFIG_ACCESS_BLOCK && rec.r[i].a.index == 1 &&
                  strcmp(rec.r[i].path, "A/B") == 0 && rec.r[i].a.given;
    assert_true(second);
    r = find_access(&rec, GF_CONFIG_ACCESS_BLOCK, "A/C", NULL, &found);
    assert_non_null(r);
    assert_false(r->given);
    /* Unwatched, nothing more is told. */
    size_t before = rec.n;
    gf_config_watch(cfg, NULL, NULL);
    GF_ASSERT_OK(gf_config_get_double(a, "x", 2.5, &x));
    assert_int_equal(rec.n, before);
    free(rec.r);
    gf_config_destroy(cfg);
}

static gf_config_access getter(gf_config_access_kind kind, const char *path, const char *key,
                               const char *def) {
    gf_config_access a = {.kind = kind, .path = path, .key = key, .def = def, .given = 1};
    return a;
}

/* The checker refuses each kind of disagreement with the registry and accepts agreement. */
static void test_checker_finds_disagreements(void **state) {
    (void)state;
    gf_config_access a = getter(GF_CONFIG_ACCESS_DOUBLE, "Solver", "tolerance", "1e-05");
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.def = "0.002"; /* another default */
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    assert_non_null(strstr(gf_error_message(), "Solver.tolerance"));
    a = getter(GF_CONFIG_ACCESS_LONG, "Solver", "tolerance", "0"); /* another type */
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a = getter(GF_CONFIG_ACCESS_DOUBLE, "Solver", "tolerancy", "0.001"); /* unregistered */
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    assert_non_null(strstr(gf_error_message(), "tolerancy"));
    a = getter(GF_CONFIG_ACCESS_DOUBLE, "Solver", "tolerance", NULL); /* required */
    a.required = 1;
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a = getter(GF_CONFIG_ACCESS_DOUBLE, "Time", "dt", "0"); /* a default for a required key */
    a.given = 0;
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a.given = 1; /* unused when the key is given: allowed */
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a = getter(GF_CONFIG_ACCESS_VEC3, "Physics", "gravity", "< 0, 0, -9.81 >");
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.def = "< 0, 0, -9.8 >";
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a = getter(GF_CONFIG_ACCESS_STRING, "Output", "directory", "output");
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.def = "out";
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a = getter(GF_CONFIG_ACCESS_RANGE, "Solver", "tolerance", NULL);
    a.lo = 0.0;
    a.hi = 1.0;
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.hi = 2.0;
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a = getter(GF_CONFIG_ACCESS_BLOCK, "Domain/Wall", NULL, NULL);
    a.index = 3;
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.path = "Solver"; /* not repeatable */
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    a.path = "Domain/Door";
    a.index = 0;
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
    /* A key shared by several blocks is registered for each of them. */
    a = getter(GF_CONFIG_ACCESS_LONG, "Inflow", "seed", "1");
    GF_ASSERT_OK(gf_config_schema_check(&a));
    a.path = "Body";
    assert_int_equal(gf_config_schema_check(&a), GF_ERR_STATE);
}

/* The registry's form of the ranges gf_config_check_range checks. */
static void test_range_text(void **state) {
    (void)state;
    struct {
        double lo, hi;
        const char *text;
    } cases[] = {{1e-300, 1e300, "> 0"},    {0.0, 1e15, "[0, 1e15]"},    {1e-3, 1.0, "[0.001, 1]"},
                 {0.0, 1e300, ">= 0"},      {-1e6, 1e6, "[-1e6, 1e6]"},  {1e-6, 3.0, "[1e-6, 3]"},
                 {1e-300, 0.5, "(0, 0.5]"}, {1e-12, 1e6, "[1e-12, 1e6]"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char buf[64];
        gf_config_schema_range_text(cases[i].lo, cases[i].hi, buf, sizeof buf);
        assert_string_equal(buf, cases[i].text);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The registry itself                                                                        */

/* Whether `word` is one of the ", "-separated words of list. */
static int listed(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, word, n) == 0)
            return 1;
        p += len;
        p += strspn(p, ", ");
    }
    return 0;
}

/* Whether a text would break docs/configuration.md's table: a '|', a line break, or '<' and a
 * letter (Markdown takes that for an HTML tag and hides it). */
static int breaks_markdown(const char *s) {
    for (; *s; ++s)
        if (*s == '|' || *s == '\n' || (*s == '<' && ((s[1] | 32) >= 'a' && (s[1] | 32) <= 'z')))
            return 1;
    return 0;
}

/* Every row names registered blocks, no key is registered twice for a block, no text breaks the
 * Markdown table, and every literal default is a value the configuration parser reads as the
 * key's type (words: one of the listed words). */
static void test_registry_is_consistent(void **state) {
    (void)state;
    size_t nk, nb;
    const gf_config_key *keys = gf_config_schema_keys(&nk);
    const gf_config_block_info *blocks = gf_config_schema_blocks(&nb);
    assert_true(nk > 50 && nb > 10);
    for (size_t i = 0; i < nb; ++i) {
        assert_true(blocks[i].help[0] != '\0');
        if (breaks_markdown(blocks[i].help))
            fail_msg("block %s: its text would break docs/configuration.md's table",
                     blocks[i].path);
        int used = 0;
        for (size_t j = 0; j < nk && !used; ++j)
            used = gf_config_schema_in_blocks(&keys[j], blocks[i].path);
        if (!used)
            fail_msg("block %s has no registered key", blocks[i].path);
    }
    for (size_t j = 0; j < nk; ++j) {
        const gf_config_key *k = &keys[j];
        if (breaks_markdown(k->help) || breaks_markdown(k->range) ||
            (k->def && breaks_markdown(k->def)) || !k->help[0])
            fail_msg("%s.%s: no help, or a text that would break docs/configuration.md's table",
                     k->blocks, k->key);
        char path[128];
        for (const char *p = k->blocks; *p;) {
            size_t len = strcspn(p, " ");
            snprintf(path, sizeof path, "%.*s", (int)len, p);
            if (!gf_config_schema_find_block(path))
                fail_msg("%s.%s: block %s is not registered", k->blocks, k->key, path);
            if (gf_config_schema_find(path, k->key) != k)
                fail_msg("%s.%s is registered twice", path, k->key);
            p += len;
            p += strspn(p, " ");
        }
        if (k->type == GF_KEY_WORD && !k->range[0])
            fail_msg("%s.%s: a word key needs its words", k->blocks, k->key);
        if (!k->def || k->def[0] == '(')
            continue;
        /* Read the default back as a file would hold it. */
        char text[512];
        snprintf(text, sizeof text, "T { %s %s; }", k->key, k->def);
        gf_config *cfg = NULL;
        if (gf_config_parse(text, strlen(text), "default", &cfg) != GF_OK)
            fail_msg("%s.%s: default %s does not parse: %s", k->blocks, k->key, k->def,
                     gf_error_message());
        gf_config_block *t = gf_config_section(gf_config_root(cfg), "T");
        double x, v[4];
        long n;
        int b;
        char s[256];
        static const double zero[4] = {0, 0, 0, 0};
        gf_status st = GF_OK;
        switch (k->type) {
        case GF_KEY_NUMBER:
            st = gf_config_get_double(t, k->key, 0.0, &x);
            break;
        case GF_KEY_INTEGER:
            st = gf_config_get_long(t, k->key, 0, &n);
            break;
        case GF_KEY_BOOL:
            st = gf_config_get_bool(t, k->key, 0, &b);
            break;
        case GF_KEY_STRING:
            st = k->def[0] == '"' ? gf_config_get_string(t, k->key, "", s, sizeof s)
                                  : GF_ERR_INPUT; /* strings are quoted in the registry */
            break;
        case GF_KEY_WORD:
            st = gf_config_get_string(t, k->key, "", s, sizeof s);
            if (st == GF_OK && !listed(k->range, s))
                fail_msg("%s.%s: default %s is not one of %s", k->blocks, k->key, s, k->range);
            break;
        case GF_KEY_VECTOR:
            st = gf_config_get_vec3(t, k->key, zero, v);
            break;
        case GF_KEY_QUATERNION:
            st = gf_config_get_quat(t, k->key, zero, v);
            break;
        }
        if (st != GF_OK)
            fail_msg("%s.%s: default %s is not a %s: %s", k->blocks, k->key, k->def,
                     gf_config_schema_type_name(k->type), gf_error_message());
        gf_config_destroy(cfg);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The program against the registry                                                           */

/* Whether some read of the key of row k in one of its blocks found it given. */
static int key_given(const recorder *rec, const gf_config_key *k) {
    for (size_t i = 0; i < rec->n; ++i) {
        const record *r = &rec->r[i];
        if (r->has_key && r->a.kind <= GF_CONFIG_ACCESS_QUAT && r->a.given &&
            strcmp(r->key, k->key) == 0 && gf_config_schema_in_blocks(k, r->path))
            return 1;
    }
    return 0;
}

static int read_again(const recorder *rec, const char *path) {
    for (size_t i = 0; i < rec->n; ++i) {
        const record *r = &rec->r[i];
        if (r->a.kind == GF_CONFIG_ACCESS_BLOCK && r->a.index > 0 && r->a.given &&
            strcmp(r->path, path) == 0)
            return 1;
    }
    return 0;
}

/* configs/reference.cfg sets every registered key, gives every repeatable block at least twice
 * (or, for one whose keys are all shared with another repeatable block, that one), passes the
 * check for unused keys, and runs; every read of its set-up and steps agrees with the registry. */
static void test_reference_sets_every_key(void **state) {
    (void)state;
    recorder rec = {0};
    set_up("configs/reference.cfg", 1, 5, &rec);
    check_reads(&rec, "configs/reference.cfg");
    size_t nk, nb;
    const gf_config_key *keys = gf_config_schema_keys(&nk);
    const gf_config_block_info *blocks = gf_config_schema_blocks(&nb);
    size_t missing = 0;
    char list[2048] = "";
    for (size_t j = 0; j < nk; ++j)
        if (!key_given(&rec, &keys[j])) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, " %s.%s", keys[j].blocks, keys[j].key);
            missing++;
        }
    if (missing)
        fail_msg("configs/reference.cfg does not set %zu registered keys:%s", missing, list);
    for (size_t i = 0; i < nb; ++i) {
        if (!blocks[i].repeatable || read_again(&rec, blocks[i].path))
            continue;
        /* Each of its keys must then be shared with a repeatable block given twice. */
        for (size_t j = 0; j < nk; ++j) {
            if (!gf_config_schema_in_blocks(&keys[j], blocks[i].path))
                continue;
            int shown = 0;
            for (size_t m = 0; m < nb && !shown; ++m)
                shown = blocks[m].repeatable &&
                        gf_config_schema_in_blocks(&keys[j], blocks[m].path) &&
                        read_again(&rec, blocks[m].path);
            if (!shown)
                fail_msg("configs/reference.cfg does not show that %s is repeatable: give it "
                         "twice",
                         blocks[i].path);
        }
    }
    free(rec.r);
}

/* Every example configuration reads only registered keys and blocks, as registered. */
static void test_examples_read_registered_keys(void **state) {
    (void)state;
    DIR *d = opendir("configs");
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".cfg") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "configs/%s", e->d_name);
        recorder rec = {0};
        set_up(path, 0, 0, &rec);
        check_reads(&rec, path);
        free(rec.r);
        n++;
    }
    closedir(d);
    assert_true(n >= 7);
}

/* ------------------------------------------------------------------------------------------ */
/* docs/configuration.md and the program's help */

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The cells of a Markdown table row, trimmed; returns how many (at most max). */
static int cells(const char *line, size_t len, char cell[][1024], int max) {
    int n = 0;
    const char *p = line, *end = line + len;
    if (p < end && *p == '|')
        ++p;
    while (p < end && n < max) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            break;
        const char *a = p, *b = bar;
        while (a < b && *a == ' ')
            ++a;
        while (b > a && b[-1] == ' ')
            --b;
        snprintf(cell[n++], 1024, "%.*s", (int)(b - a), a);
        p = bar + 1;
    }
    return n;
}

/* The row of docs/configuration.md's table with these block and key cells, or NULL. */
static const char *readme_row(const char *region, const char *blocks, const char *key,
                              size_t *len) {
    char c[6][1024];
    for (const char *p = region; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 0 && *p == '|' && cells(p, n, c, 6) == 6 && strcmp(c[0], blocks) == 0 &&
            strcmp(c[1], key) == 0) {
            *len = n;
            return p;
        }
        p += n + (p[n] == '\n');
    }
    return NULL;
}

/* docs/configuration.md's table is the registry's: each key's row with the same type, default,
 * range and meaning, no row the registry lacks, and the whole part between the markers as `granflow
 * --help-config markdown` prints it. */
static void test_readme_table_is_the_registry(void **state) {
    (void)state;
    char *readme = read_all(GF_CONFIG_DOC);
    char *md = NULL;
    GF_ASSERT_OK(gf_config_schema_markdown(&md));
    char *begin = strstr(readme, GF_CONFIG_SCHEMA_MARK_BEGIN);
    char *end = begin ? strstr(begin, GF_CONFIG_SCHEMA_MARK_END) : NULL;
    if (!begin || !end)
        fail_msg(
            "docs/configuration.md lacks the markers of the table made by granflow --help-config "
            "markdown");
    end += strlen(GF_CONFIG_SCHEMA_MARK_END);
    *end = '\0';
    const char *fix = "(replace it with the output of `granflow --help-config markdown`)";
    /* Row by row first, for messages that name the key. */
    char want[6][1024], have[6][1024];
    static const char *const column[6] = {"block", "key", "type", "default", "range", "meaning"};
    for (const char *p = md; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 0 && *p == '|' && cells(p, n, want, 6) == 6 && want[1][0] == '`') {
            size_t len;
            const char *row = readme_row(begin, want[0], want[1], &len);
            if (!row)
                fail_msg("docs/configuration.md has no row for %s %s %s", want[0], want[1], fix);
            cells(row, len, have, 6);
            for (int c = 2; c < 6; ++c)
                if (strcmp(want[c], have[c]) != 0)
                    fail_msg("docs/configuration.md: %s %s has the %s '%s', the registry '%s' %s",
                             want[0], want[1], column[c], have[c], want[c], fix);
        }
        p += n + (p[n] == '\n');
    }
    for (const char *p = begin; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 0 && *p == '|' && cells(p, n, have, 6) == 6 && have[1][0] == '`') {
            size_t len;
            if (!readme_row(md, have[0], have[1], &len))
                fail_msg(
                    "docs/configuration.md documents %s %s, which the registry does not have %s",
                    have[0], have[1], fix);
        }
        p += n + (p[n] == '\n');
    }
    /* Then everything, block notes and order included. */
    size_t mdlen = strlen(md);
    while (mdlen > 0 && md[mdlen - 1] == '\n')
        md[--mdlen] = '\0';
    if (strcmp(begin, md) != 0) {
        size_t line = 1, i = 0;
        while (begin[i] && begin[i] == md[i])
            line += begin[i++] == '\n';
        fail_msg(
            "docs/configuration.md's generated part differs from the registry at its line %zu %s",
            line, fix);
    }
    free(md);
    free(readme);
}

static void expect_run(const char *cmd, int want_status, char **out) {
    int rc = gf_test_run(cmd, out);
    if (rc != want_status)
        fail_msg("'%s' exited with %d, not %d:\n%s", cmd, rc, want_status, *out);
}

/* `granflow --help-config` prints every registered block with exactly its keys; with a block,
 * that block and its sub-blocks; `markdown` gives docs/configuration.md's table; an unknown block
 * is a usage error; --help mentions the option. */
static void test_help_config(void **state) {
    (void)state;
    size_t nk, nb;
    const gf_config_key *keys = gf_config_schema_keys(&nk);
    const gf_config_block_info *blocks = gf_config_schema_blocks(&nb);
    char *out = NULL, cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --help-config", GRANFLOW_EXE);
    expect_run(cmd, 0, &out);
    /* Split the output into blocks (unindented lines) and their keys ("  key: type; ..."). */
    size_t nkeys_seen = 0;
    const gf_config_block_info *current = NULL;
    int seen[256] = {0};
    assert_true(nb <= 256);
    for (const char *p = out; *p;) {
        size_t n = strcspn(p, "\n");
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        p += n + (p[n] == '\n');
        if (n == 0)
            continue;
        if (line[0] != ' ') {
            char *sp = strchr(line, ' ');
            /* "Domain/Wall (repeatable)", "Output (may change at a restart)". */
            if (sp && sp[1] == '(')
                *sp = '\0';
            current = gf_config_schema_find_block(line);
            if (current)
                seen[current - blocks]++;
            continue;
        }
        char key[128], type[32];
        if (!current || sscanf(line, "  %127[a-z_]: %31[a-z];", key, type) != 2 ||
            strncmp(line, "   ", 3) == 0)
            continue;
        const gf_config_key *k = gf_config_schema_find(current->path, key);
        if (!k || strcmp(type, gf_config_schema_type_name(k->type)) != 0)
            fail_msg("--help-config prints '%s' under %s, which the registry lacks", line,
                     current->path);
        nkeys_seen++;
    }
    size_t nkeys_want = 0;
    for (size_t i = 0; i < nb; ++i) {
        if (seen[i] != 1)
            fail_msg("--help-config prints block %s %d times", blocks[i].path, seen[i]);
        for (size_t j = 0; j < nk; ++j)
            nkeys_want += gf_config_schema_in_blocks(&keys[j], blocks[i].path);
    }
    assert_int_equal(nkeys_seen, nkeys_want);
    free(out);

    snprintf(cmd, sizeof cmd, "%s --help-config Domain.Wall", GRANFLOW_EXE);
    expect_run(cmd, 0, &out);
    assert_non_null(strstr(out, "Domain/Wall (repeatable)\n"));
    assert_non_null(strstr(out, "  point: vector; required\n"));
    assert_null(strstr(out, "Domain/Box"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --help-config Lattice", GRANFLOW_EXE);
    expect_run(cmd, 0, &out);
    assert_non_null(strstr(out, "\nLattice/Kind (repeatable)\n"));
    assert_non_null(strstr(out, "  size_sigma: number; required for lognormal; [1e-6, 3]\n"));
    assert_null(strstr(out, "\nInflow"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --help-config Lattic", GRANFLOW_EXE);
    expect_run(cmd, 2, &out);
    assert_non_null(strstr(out, "no block 'Lattic'"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --help", GRANFLOW_EXE);
    expect_run(cmd, 0, &out);
    assert_non_null(strstr(out, "--help-config [BLOCK]"));
    free(out);
    char *md = NULL;
    GF_ASSERT_OK(gf_config_schema_markdown(&md));
    snprintf(cmd, sizeof cmd, "%s --help-config markdown", GRANFLOW_EXE);
    expect_run(cmd, 0, &out);
    assert_string_equal(out, md);
    free(md);
    free(out);
}

/* The reference configuration runs as users run it, on one rank and on two. */
static void test_reference_runs(void **state) {
    (void)state;
    char dir[64], cmd[2048], *out = NULL;
    assert_int_equal(gf_test_tmpdir(dir, sizeof dir, "reference"), 0);
    const char *runs[] = {"", GF_MPIEXEC " -n 2 --oversubscribe "};
    for (int r = 0; r < 2; ++r) {
        snprintf(cmd, sizeof cmd,
                 "%s%s configs/reference.cfg -Time.steps=40 -Output.directory=%s/%d "
                 "-Output.checkpoint=%s/%d/c.h5 -Statistics.file=%s/%d/stats.csv "
                 "-Forces.file=%s/%d/forces.csv -Tracks.file=%s/%d/tracks.csv",
                 runs[r], GRANFLOW_EXE, dir, r, dir, r, dir, r, dir, r, dir, r);
        expect_run(cmd, 0, &out);
        if (!strstr(out, "run summary: 40 steps"))
            fail_msg("'%s' did not finish:\n%s", cmd, out);
        free(out);
    }
    gf_test_rmtree(dir);
}

int main(void) {
    gf_log_set_quiet(1);
    /* The example configurations name their files relative to the repository's root. */
    if (chdir(GF_SOURCE_DIR) != 0) {
        perror(GF_SOURCE_DIR);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watcher_sees_every_access),
        cmocka_unit_test(test_checker_finds_disagreements),
        cmocka_unit_test(test_range_text),
        cmocka_unit_test(test_registry_is_consistent),
        cmocka_unit_test(test_reference_sets_every_key),
        cmocka_unit_test(test_examples_read_registered_keys),
        cmocka_unit_test(test_readme_table_is_the_registry),
        cmocka_unit_test(test_help_config),
        cmocka_unit_test(test_reference_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
