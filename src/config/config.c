/* The configuration language: a tree of blocks and keys read from text (name index, tree
 * building, lexer, parser), command-line overrides, typed access with range checks and the
 * report of keys never read. Over 1000 lines as one concept: every section works on the tree's
 * private node layout, which a split would have to export (issue 32 keeps it whole; the
 * schema and the comparison of two configurations are files of their own). */
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"

typedef enum { VAL_WORD, VAL_NUMBER, VAL_STRING, VAL_VECTOR } value_kind;

typedef struct {
    char *key;
    value_kind kind;
    char *text;      /* words and strings: the content; numbers: the literal; vectors: "<a,b,c>" */
    double num[4];   /* numbers and vectors (3 components, or 4 for quaternions) */
    int nvec;        /* number of vector components */
    int line, col;   /* of the value; 0 when from the command line or a default */
    int kline, kcol; /* of the key */
    int used;        /* read by a getter; a default entry that is not used was withdrawn */
    int is_default;  /* recorded by a getter, not present in the input */
} entry;

/* Maps names to positions in an array (the entries of a block, or the groups of its children)
 * so that files with a million keys in a block or 1e5 repeated blocks are read in linear time.
 * Arrays of up to INDEX_MIN names are scanned instead: the many small blocks of a file then cost
 * no index memory. Open addressing with linear probing, at most half full; the slots keep the
 * hash so that probing and growing touch the names only on a likely match. */
typedef struct {
    uint32_t pos; /* position + 1; 0 is an empty slot */
    uint32_t hash;
} index_slot;

typedef struct {
    index_slot *slot;
    size_t cap; /* a power of two, or 0 while the array is scanned */
} name_index;

#define INDEX_MIN 8

/* The children of one block that share a name, in file order: gf_config_section_nth is then a
 * direct access however many repeated blocks there are. */
typedef struct {
    const char *name; /* that of members[0] */
    struct gf_config_block **members;
    size_t n, cap;
    size_t nimplicit; /* members created by a getter (at most the single member in practice) */
} child_group;

struct gf_config_block {
    char *name;
    int line, col;
    int used;
    int implicit; /* created by a getter because the input did not have it */
    entry *entries;
    size_t nentries, capentries;
    name_index entry_index;
    struct gf_config_block **children; /* in file order, for the dump and the unused check */
    size_t nchildren, capchildren;
    child_group *groups;
    size_t ngroups, capgroups;
    name_index group_index;
    struct gf_config_block *parent;
    struct gf_config *cfg;
};

struct gf_config {
    char *filename;
    gf_config_block *root;
    gf_config_watcher watcher; /* see gf_config_watch */
    void *watcher_ctx;
};

/* ------------------------------------------------------------------------------------------ */
/* Name index                                                                                 */

typedef const char *(*name_at_fn)(const void *array, size_t i);

static const char *entry_name_at(const void *array, size_t i) {
    return ((const entry *)array)[i].key;
}

static const char *group_name_at(const void *array, size_t i) {
    return ((const child_group *)array)[i].name;
}

static uint32_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; ++s)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (uint32_t)(h ^ (h >> 32));
}

/* The position of `name` among the n names of the array, or SIZE_MAX. */
static size_t index_find(const name_index *ix, const void *array, size_t n, name_at_fn name_at,
                         const char *name) {
    if (ix->cap == 0) {
        for (size_t i = 0; i < n; ++i)
            if (strcmp(name_at(array, i), name) == 0)
                return i;
        return SIZE_MAX;
    }
    uint32_t hash = hash_name(name);
    for (size_t h = hash & (ix->cap - 1);; h = (h + 1) & (ix->cap - 1)) {
        const index_slot *s = &ix->slot[h];
        if (s->pos == 0)
            return SIZE_MAX;
        if (s->hash == hash && strcmp(name_at(array, s->pos - 1), name) == 0)
            return s->pos - 1;
    }
}

static void index_put(index_slot *slot, size_t cap, uint32_t hash, size_t pos) {
    size_t h = hash & (cap - 1);
    while (slot[h].pos != 0)
        h = (h + 1) & (cap - 1);
    slot[h].pos = (uint32_t)(pos + 1);
    slot[h].hash = hash;
}

/* Records that position n-1 of the array now holds a new name (absent from the index). */
static gf_status index_added(name_index *ix, const void *array, size_t n, name_at_fn name_at) {
    if (n >= UINT32_MAX)
        return GF_ERROR(GF_ERR_MEMORY, "more than %u names in one configuration block",
                        (unsigned)UINT32_MAX - 1);
    if (ix->cap == 0 && n <= INDEX_MIN)
        return GF_OK;
    if (2 * n <= ix->cap) {
        index_put(ix->slot, ix->cap, hash_name(name_at(array, n - 1)), n - 1);
        return GF_OK;
    }
    size_t cap = ix->cap ? 2 * ix->cap : 4 * INDEX_MIN;
    while (cap < 2 * n)
        cap *= 2;
    index_slot *slot = gf_calloc(cap, sizeof *slot);
    if (!slot)
        return gf_error_status();
    if (ix->cap == 0) {
        for (size_t i = 0; i < n; ++i)
            index_put(slot, cap, hash_name(name_at(array, i)), i);
    } else {
        for (size_t i = 0; i < ix->cap; ++i)
            if (ix->slot[i].pos != 0)
                index_put(slot, cap, ix->slot[i].hash, ix->slot[i].pos - 1);
        index_put(slot, cap, hash_name(name_at(array, n - 1)), n - 1);
    }
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Tree building                                                                              */

static char *dup_range(const char *s, size_t n) {
    char *d = gf_malloc(n + 1, 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *dup_str(const char *s) {
    return dup_range(s, strlen(s));
}

static child_group *find_group(const gf_config_block *parent, const char *name) {
    size_t i =
        index_find(&parent->group_index, parent->groups, parent->ngroups, group_name_at, name);
    return i == SIZE_MAX ? NULL : &parent->groups[i];
}

/* Appends child b (already in parent->children) to the group of its name. */
static gf_status group_add(gf_config_block *parent, gf_config_block *b) {
    child_group *g = find_group(parent, b->name);
    if (!g) {
        if (parent->ngroups == parent->capgroups) {
            size_t cap = parent->capgroups ? 2 * parent->capgroups : 2;
            GF_TRY(gf_grow((void **)&parent->groups, cap, sizeof *parent->groups));
            parent->capgroups = cap;
        }
        g = &parent->groups[parent->ngroups];
        memset(g, 0, sizeof *g);
        g->name = b->name;
        parent->ngroups++;
        GF_TRY(index_added(&parent->group_index, parent->groups, parent->ngroups, group_name_at));
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 1;
        GF_TRY(gf_grow((void **)&g->members, cap, sizeof *g->members));
        g->cap = cap;
    }
    g->members[g->n++] = b;
    if (b->implicit)
        g->nimplicit++;
    return GF_OK;
}

static void block_free(gf_config_block *b);

static gf_config_block *block_new(gf_config *cfg, gf_config_block *parent, const char *name,
                                  int line, int col, int implicit) {
    gf_config_block *b = gf_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->name = dup_str(name);
    if (!b->name) {
        free(b);
        return NULL;
    }
    b->line = line;
    b->col = col;
    b->implicit = implicit;
    b->parent = parent;
    b->cfg = cfg;
    if (parent) {
        if (parent->nchildren == parent->capchildren) {
            size_t cap = parent->capchildren ? 2 * parent->capchildren : 4;
            if (gf_grow((void **)&parent->children, cap, sizeof *parent->children) != GF_OK) {
                block_free(b);
                return NULL;
            }
            parent->capchildren = cap;
        }
        /* Listed among the children first: the parent then frees it whatever happens next. */
        parent->children[parent->nchildren++] = b;
        if (group_add(parent, b) != GF_OK)
            return NULL;
    }
    return b;
}

static void block_free(gf_config_block *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->nentries; ++i) {
        free(b->entries[i].key);
        free(b->entries[i].text);
    }
    free(b->entries);
    free(b->entry_index.slot);
    for (size_t i = 0; i < b->nchildren; ++i)
        block_free(b->children[i]);
    free(b->children);
    for (size_t i = 0; i < b->ngroups; ++i)
        free(b->groups[i].members);
    free(b->groups);
    free(b->group_index.slot);
    free(b->name);
    free(b);
}

static entry *find_entry(const gf_config_block *b, const char *key) {
    size_t i = index_find(&b->entry_index, b->entries, b->nentries, entry_name_at, key);
    return i == SIZE_MAX ? NULL : &b->entries[i];
}

/* A new entry for a key that is not in the block yet. */
static entry *add_entry(gf_config_block *b, const char *key) {
    if (b->nentries == b->capentries) {
        size_t cap = b->capentries ? 2 * b->capentries : 2;
        if (gf_grow((void **)&b->entries, cap, sizeof *b->entries) != GF_OK)
            return NULL;
        b->capentries = cap;
    }
    entry *e = &b->entries[b->nentries];
    memset(e, 0, sizeof *e);
    e->key = dup_str(key);
    if (!e->key)
        return NULL;
    b->nentries++;
    if (index_added(&b->entry_index, b->entries, b->nentries, entry_name_at) != GF_OK) {
        free(e->key);
        b->nentries--;
        return NULL;
    }
    return e;
}

/* ------------------------------------------------------------------------------------------ */
/* Lexer                                                                                      */

typedef enum {
    TOK_EOF,
    TOK_NAME, /* identifier: keys, block names, bare-word values */
    TOK_NUMBER,
    TOK_STRING,
    TOK_LBRACE,
    TOK_RBRACE,
    TOK_SEMI,
    TOK_LANGLE,
    TOK_RANGLE,
    TOK_COMMA
} tok_kind;

typedef struct {
    tok_kind kind;
    const char *start; /* into the source (names, numbers) */
    size_t len;
    char *str; /* unescaped string literal, owned by the lexer until taken */
    double num;
    int line, col;
} token;

typedef struct {
    const char *src;
    size_t len, pos;
    int line, col;
    int end_line, end_col; /* just after the last token: where a missing ';' belongs */
    const char *filename;
    /* The number of the last error when it was one out of the range of a double. */
    const char *range_error;
    size_t range_len;
    token tok;
} lexer;

static gf_status lex_error(const lexer *lx, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static gf_status lex_error(const lexer *lx, int line, int col, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return GF_ERROR(GF_ERR_INPUT, "%s:%d:%d: %s", lx->filename, line, col, msg);
}

static int peekc(const lexer *lx, size_t ahead) {
    return lx->pos + ahead < lx->len ? (unsigned char)lx->src[lx->pos + ahead] : -1;
}

/* Whether the byte at pos ends a line: '\n', or a '\r' not followed by '\n' (old Mac files);
 * in "\r\n" the '\n' ends the line. */
static int ends_line(const lexer *lx, size_t pos) {
    char c = lx->src[pos];
    return c == '\n' || (c == '\r' && (pos + 1 >= lx->len || lx->src[pos + 1] != '\n'));
}

static int is_line_break(int c) {
    return c == '\n' || c == '\r';
}

static void advance(lexer *lx) {
    if (ends_line(lx, lx->pos)) {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->pos++;
}

static int is_name_start(int c) {
    return isalpha(c) || c == '_';
}

static int is_name_char(int c) {
    return isalnum(c) || c == '_' || c == '-' || c == '.';
}

/* Skips white space and comments; rejects bytes that cannot appear in a text file. */
static gf_status skip_space(lexer *lx) {
    for (;;) {
        int c = peekc(lx, 0);
        if (c < 0)
            return GF_OK;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            advance(lx);
        } else if (c == '/' && peekc(lx, 1) == '/') {
            while (peekc(lx, 0) >= 0 && !is_line_break(peekc(lx, 0)))
                advance(lx);
        } else if (c == '/' && peekc(lx, 1) == '*') {
            int line = lx->line, col = lx->col;
            advance(lx);
            advance(lx);
            for (;;) {
                if (peekc(lx, 0) < 0)
                    return lex_error(lx, line, col, "comment opened here is never closed ('*/')");
                if (peekc(lx, 0) == '*' && peekc(lx, 1) == '/') {
                    advance(lx);
                    advance(lx);
                    break;
                }
                advance(lx);
            }
        } else {
            return GF_OK;
        }
    }
}

static gf_status lex_string(lexer *lx) {
    int line = lx->line, col = lx->col;
    advance(lx); /* opening quote */
    size_t cap = 32, n = 0;
    char *buf = gf_malloc(cap, 1);
    if (!buf)
        return gf_error_status();
    for (;;) {
        int c = peekc(lx, 0);
        if (c < 0 || is_line_break(c)) {
            free(buf);
            return lex_error(lx, line, col, "string opened here is not closed on the same line");
        }
        if (c == '"') {
            advance(lx);
            break;
        }
        if (c < 0x20 && c != '\t') {
            free(buf);
            return lex_error(lx, lx->line, lx->col, "control byte 0x%02x inside a string", c);
        }
        if (c == '\\') {
            int e = peekc(lx, 1);
            switch (e) {
            case '"':
            case '\\':
                c = e;
                break;
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            default:
                free(buf);
                return lex_error(lx, lx->line, lx->col,
                                 "unknown escape '\\%c' in a string (use \\\" \\\\ \\n \\t)",
                                 e > 0x20 && e < 0x7f ? e : '?');
            }
            advance(lx);
        }
        if (n + 1 >= cap) {
            cap *= 2;
            if (gf_grow((void **)&buf, cap, 1) != GF_OK) {
                free(buf);
                return gf_error_status();
            }
        }
        buf[n++] = (char)c;
        advance(lx);
    }
    buf[n] = '\0';
    lx->tok.kind = TOK_STRING;
    lx->tok.str = buf;
    lx->tok.line = line;
    lx->tok.col = col;
    return GF_OK;
}

static gf_status lex_number(lexer *lx) {
    int line = lx->line, col = lx->col;
    size_t start = lx->pos;
    /* The token runs to the next delimiter so that "1.2.3" or "12abc" is one bad number rather
     * than a number followed by something confusing. */
    while (peekc(lx, 0) >= 0 && (is_name_char(peekc(lx, 0)) || peekc(lx, 0) == '+'))
        advance(lx);
    size_t n = lx->pos - start;
    char buf[128];
    if (n >= sizeof buf)
        return lex_error(lx, line, col, "number too long");
    memcpy(buf, lx->src + start, n);
    buf[n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n || n == 0)
        return lex_error(lx, line, col, "bad number '%s'", buf);
    if (!isfinite(v) || errno == ERANGE) {
        lx->range_error = lx->src + start;
        lx->range_len = n;
        return lex_error(lx, line, col, "number '%s' is out of the range of a double", buf);
    }
    lx->tok.kind = TOK_NUMBER;
    lx->tok.start = lx->src + start;
    lx->tok.len = n;
    lx->tok.num = v;
    lx->tok.line = line;
    lx->tok.col = col;
    return GF_OK;
}

static gf_status lex_next(lexer *lx) {
    free(lx->tok.str);
    memset(&lx->tok, 0, sizeof lx->tok);
    lx->end_line = lx->line;
    lx->end_col = lx->col;
    GF_TRY(skip_space(lx));
    lx->tok.line = lx->line;
    lx->tok.col = lx->col;
    int c = peekc(lx, 0);
    if (c < 0) {
        lx->tok.kind = TOK_EOF;
        return GF_OK;
    }
    static const struct {
        char c;
        tok_kind k;
    } punct[] = {{'{', TOK_LBRACE}, {'}', TOK_RBRACE}, {';', TOK_SEMI},
                 {'<', TOK_LANGLE}, {'>', TOK_RANGLE}, {',', TOK_COMMA}};
    for (size_t i = 0; i < sizeof punct / sizeof punct[0]; ++i) {
        if (c == punct[i].c) {
            lx->tok.kind = punct[i].k;
            lx->tok.start = lx->src + lx->pos;
            lx->tok.len = 1;
            advance(lx);
            return GF_OK;
        }
    }
    if (c == '"')
        return lex_string(lx);
    if (isdigit(c) || c == '-' || c == '+' || c == '.')
        return lex_number(lx);
    if (is_name_start(c)) {
        size_t start = lx->pos;
        while (peekc(lx, 0) >= 0 && is_name_char(peekc(lx, 0)))
            advance(lx);
        lx->tok.kind = TOK_NAME;
        lx->tok.start = lx->src + start;
        lx->tok.len = lx->pos - start;
        if (lx->tok.len > 256)
            return lex_error(lx, lx->tok.line, lx->tok.col, "name longer than 256 characters");
        return GF_OK;
    }
    if (c < 0x20 || c == 0x7f)
        return lex_error(lx, lx->line, lx->col,
                         "unexpected control byte 0x%02x: is this a binary file rather than a "
                         "granflow configuration?",
                         c);
    if (c >= 0x80)
        return lex_error(lx, lx->line, lx->col,
                         "unexpected non-ASCII byte 0x%02x outside a string or comment", c);
    return lex_error(lx, lx->line, lx->col, "unexpected character '%c'", c);
}

static const char *tok_desc(const token *t, char *buf, size_t size) {
    switch (t->kind) {
    case TOK_EOF:
        return "the end of the file";
    case TOK_STRING:
        return "a string";
    default:
        snprintf(buf, size, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->start);
        return buf;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Parser                                                                                     */

static gf_status parse_value(lexer *lx, entry *e) {
    token *t = &lx->tok;
    e->line = t->line;
    e->col = t->col;
    char desc[64];
    switch (t->kind) {
    case TOK_NUMBER:
        e->kind = VAL_NUMBER;
        e->num[0] = t->num;
        e->text = dup_range(t->start, t->len);
        break;
    case TOK_NAME:
        e->kind = VAL_WORD;
        e->text = dup_range(t->start, t->len);
        break;
    case TOK_STRING:
        e->kind = VAL_STRING;
        e->text = t->str;
        t->str = NULL;
        break;
    case TOK_LANGLE: {
        e->kind = VAL_VECTOR;
        int open_line = t->line, open_col = t->col;
        for (;;) {
            GF_TRY(lex_next(lx));
            if (t->kind != TOK_NUMBER)
                return lex_error(lx, t->line, t->col,
                                 "expected a number in the vector opened at %d:%d, found %s",
                                 open_line, open_col, tok_desc(t, desc, sizeof desc));
            if (e->nvec == 4)
                return lex_error(lx, t->line, t->col,
                                 "vector opened at %d:%d has more than 4 components", open_line,
                                 open_col);
            e->num[e->nvec++] = t->num;
            GF_TRY(lex_next(lx));
            if (t->kind == TOK_RANGLE)
                break;
            if (t->kind != TOK_COMMA)
                return lex_error(lx, t->line, t->col,
                                 "expected ',' or '>' in the vector opened at %d:%d, found %s",
                                 open_line, open_col, tok_desc(t, desc, sizeof desc));
        }
        char buf[128];
        int n = snprintf(buf, sizeof buf, "< ");
        for (int i = 0; i < e->nvec; ++i) {
            n += snprintf(buf + n, sizeof buf - (size_t)n, i ? ", " : "");
            n += gf_config_format_double(e->num[i], buf + n, sizeof buf - (size_t)n);
        }
        snprintf(buf + n, sizeof buf - (size_t)n, " >");
        e->text = dup_str(buf);
        break;
    }
    default:
        return lex_error(lx, t->line, t->col, "expected a value for key '%s', found %s", e->key,
                         tok_desc(t, desc, sizeof desc));
    }
    if (!e->text)
        return gf_error_status();
    return lex_next(lx);
}

/* Parses the items of one block up to its closing brace (or EOF for the root). */
static gf_status parse_items(lexer *lx, gf_config_block *b, int depth) {
    token *t = &lx->tok;
    char desc[64];
    for (;;) {
        if (t->kind == TOK_EOF) {
            if (b->parent)
                return lex_error(lx, b->line, b->col,
                                 "block '%s' opened here is never closed (missing '}')", b->name);
            return GF_OK;
        }
        if (t->kind == TOK_RBRACE) {
            if (!b->parent)
                return lex_error(lx, t->line, t->col, "'}' without a matching '{'");
            return lex_next(lx);
        }
        if (t->kind != TOK_NAME)
            return lex_error(lx, t->line, t->col, "expected a key or a block name, found %s",
                             tok_desc(t, desc, sizeof desc));
        char name[260];
        memcpy(name, t->start, t->len);
        name[t->len] = '\0';
        int line = t->line, col = t->col;
        if (strchr(name, '.') || strchr(name, '-'))
            return lex_error(lx, line, col,
                             "'%s' is not a valid key or block name (letters, digits and '_')",
                             name);
        GF_TRY(lex_next(lx));
        if (t->kind == TOK_LBRACE) {
            if (depth + 1 >= GF_CONFIG_MAX_DEPTH)
                return lex_error(lx, line, col, "blocks nested more than %d deep",
                                 GF_CONFIG_MAX_DEPTH);
            gf_config_block *child = block_new(b->cfg, b, name, line, col, 0);
            if (!child)
                return gf_error_status();
            GF_TRY(lex_next(lx));
            GF_TRY(parse_items(lx, child, depth + 1));
            continue;
        }
        entry *prev = find_entry(b, name);
        if (prev)
            return lex_error(lx, line, col,
                             "duplicate key '%s' in block '%s' (first given at %d:%d)", name,
                             b->name, prev->line, prev->col);
        entry *e = add_entry(b, name);
        if (!e)
            return gf_error_status();
        e->kline = line;
        e->kcol = col;
        GF_TRY(parse_value(lx, e));
        if (t->kind != TOK_SEMI) {
            return lex_error(lx, lx->end_line, lx->end_col,
                             "expected ';' after the value of '%s', found %s", name,
                             tok_desc(t, desc, sizeof desc));
        }
        GF_TRY(lex_next(lx));
    }
}

gf_status gf_config_parse(const char *text, size_t len, const char *filename, gf_config **out) {
    *out = NULL;
    if (!filename)
        filename = "<config>";
    if (len > GF_CONFIG_MAX_BYTES)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: %zu bytes is too large for a configuration file (limit %u MiB)",
                        filename, len, GF_CONFIG_MAX_BYTES >> 20);
    gf_config *cfg = gf_calloc(1, sizeof *cfg);
    if (!cfg)
        return gf_error_status();
    cfg->filename = dup_str(filename);
    cfg->root = block_new(cfg, NULL, "", 0, 0, 0);
    if (!cfg->filename || !cfg->root) {
        gf_config_destroy(cfg);
        return gf_error_status();
    }
    lexer lx = {.src = text, .len = len, .line = 1, .col = 1, .filename = cfg->filename};
    gf_status st = lex_next(&lx);
    if (st == GF_OK)
        st = parse_items(&lx, cfg->root, 0);
    free(lx.tok.str);
    if (st != GF_OK) {
        gf_config_destroy(cfg);
        return st;
    }
    *out = cfg;
    return GF_OK;
}

void gf_config_destroy(gf_config *cfg) {
    if (!cfg)
        return;
    block_free(cfg->root);
    free(cfg->filename);
    free(cfg);
}

gf_status gf_config_read_file(const char *path, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    FILE *f = gf_file_open_input(path, "rb", "configuration file");
    if (!f)
        return gf_error_status();
    size_t cap = 4096, n = 0;
    char *buf = gf_malloc(cap, 1);
    if (!buf) {
        fclose(f);
        return gf_error_status();
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > GF_CONFIG_MAX_BYTES) {
                free(buf);
                fclose(f);
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: too large for a configuration file (limit %u MiB)", path,
                                GF_CONFIG_MAX_BYTES >> 20);
            }
            cap *= 2;
            if (gf_grow((void **)&buf, cap, 1) != GF_OK) {
                free(buf);
                fclose(f);
                return gf_error_status();
            }
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return GF_ERROR(GF_ERR_IO, "error while reading '%s'", path);
    }
    if (n > GF_CONFIG_MAX_BYTES) {
        free(buf);
        return GF_ERROR(GF_ERR_INPUT, "%s: too large for a configuration file (limit %u MiB)", path,
                        GF_CONFIG_MAX_BYTES >> 20);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Overrides                                                                                  */

/* Whether the n bytes at name make a key or block name of the file syntax. */
static int valid_name(const char *name, size_t n) {
    if (n == 0 || n > 256 || !is_name_start((unsigned char)name[0]))
        return 0;
    for (size_t i = 1; i < n; ++i)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return 0;
    return 1;
}

/* Marks a block the command line names as given, so that it counts among the repeated ones. */
static void make_explicit(gf_config_block *b) {
    if (!b->implicit || !b->parent)
        return;
    b->implicit = 0;
    child_group *g = find_group(b->parent, b->name);
    if (g)
        g->nimplicit--;
}

/* The first sub-block called `name`, made empty when absent; not marked read. */
static gf_config_block *section_find_or_make(gf_config_block *parent, const char *name) {
    child_group *g = find_group(parent, name);
    return g ? g->members[0] : block_new(parent->cfg, parent, name, 0, 0, 1);
}

/* A block component of a command-line path: `Name`, `Name[n]` (the n-th block of that name,
 * from 1) or `Name[label]` (the one whose `name` key is label). Splits [p, end) into the name
 * and the selector (sel_len 0: none); 0 if it is none of these. */
static int split_component(const char *p, const char *end, size_t *name_len, const char **sel,
                           size_t *sel_len) {
    const char *lb = memchr(p, '[', (size_t)(end - p));
    *sel = NULL;
    *sel_len = 0;
    *name_len = (size_t)((lb ? lb : end) - p);
    if (!valid_name(p, *name_len))
        return 0;
    if (!lb)
        return 1;
    if (end[-1] != ']' || end - lb < 3)
        return 0;
    *sel = lb + 1;
    *sel_len = (size_t)(end - 1 - *sel);
    int digits = 1;
    for (size_t i = 0; i < *sel_len; ++i)
        digits &= isdigit((unsigned char)(*sel)[i]) != 0;
    return (digits && *sel_len <= 9) || valid_name(*sel, *sel_len);
}

/* The block of the given name and selector under parent (see split_component): without a
 * selector the first one, made if there is none. */
static gf_config_block *override_block(gf_config_block *parent, const char *name, const char *sel,
                                       size_t sel_len, const char *arg) {
    if (sel_len == 0)
        return section_find_or_make(parent, name);
    child_group *g = find_group(parent, name);
    size_t given = g ? g->n - g->nimplicit : 0, k = 0;
    char label[260];
    memcpy(label, sel, sel_len);
    label[sel_len] = '\0';
    int by_index = isdigit((unsigned char)label[0]);
    long want = by_index ? atol(label) : 0;
    char names[512] = "";
    size_t used = 0;
    for (size_t i = 0; g && i < g->n; ++i) {
        gf_config_block *m = g->members[i];
        if (m->implicit)
            continue;
        ++k;
        const entry *e = find_entry(m, "name");
        if (by_index ? (long)k == want : (e && e->text && strcmp(e->text, label) == 0))
            return m;
        if (!by_index && e && e->text && used < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, " %s", e->text);
    }
    if (by_index)
        gf_error_set(GF_ERR_INPUT, __FILE__, __LINE__,
                     "command-line override '%s': there %s %zu %s block%s here, not %ld", arg,
                     given == 1 ? "is" : "are", given, name, given == 1 ? "" : "s", want);
    else
        gf_error_set(GF_ERR_INPUT, __FILE__, __LINE__,
                     "command-line override '%s': no %s block here is named '%s' (named:%s)", arg,
                     name, label, used ? names : " none");
    return NULL;
}

gf_status gf_config_override(gf_config *cfg, const char *arg) {
    const char *s = arg[0] == '-' ? arg + 1 : arg;
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        return GF_ERROR(GF_ERR_INPUT,
                        "command-line override '%s' is not of the form -Block.key=value", arg);
    const char *lastdot = NULL;
    for (const char *p = s; p < eq; ++p)
        if (*p == '.')
            lastdot = p;
    if (!lastdot)
        return GF_ERROR(GF_ERR_INPUT,
                        "command-line override '%s' names no block (use -Block.key=value)", arg);
    /* Every name is checked before any block is made, so a bad argument changes nothing. */
    int nblocks = 0;
    for (const char *p = s;;) {
        const char *end = p;
        while (end < eq && *end != '.')
            ++end;
        int is_key = end == eq;
        if (end == p)
            return GF_ERROR(GF_ERR_INPUT, "command-line override '%s' has an empty %s", arg,
                            is_key ? "key" : "block name");
        size_t name_len, sel_len;
        const char *sel;
        if (is_key ? !valid_name(p, (size_t)(end - p))
                   : !split_component(p, end, &name_len, &sel, &sel_len))
            return GF_ERROR(GF_ERR_INPUT,
                            "command-line override '%s': '%.*s' is not a valid %s (letters, "
                            "digits and '_', not starting with a digit%s)",
                            arg, (int)(end - p > 60 ? 60 : end - p), p,
                            is_key ? "key" : "block name",
                            is_key ? "" : "; Name[n] or Name[label] picks one of several");
        if (is_key)
            break;
        if (++nblocks >= GF_CONFIG_MAX_DEPTH)
            return GF_ERROR(GF_ERR_INPUT,
                            "command-line override '%s' nests blocks more than %d deep", arg,
                            GF_CONFIG_MAX_DEPTH);
        p = end + 1;
    }
    char key[260];
    size_t klen = (size_t)(eq - lastdot - 1);
    memcpy(key, lastdot + 1, klen);
    key[klen] = '\0';
    const char *val = eq + 1;
    /* As in a string of the file: the dump of the effective configuration must stay a file that
     * parses (and prints) cleanly. */
    for (const char *p = val; *p; ++p)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return GF_ERROR(GF_ERR_INPUT,
                            "command-line override '%s': control byte 0x%02x in the value", arg,
                            (unsigned char)*p);

    /* Parse the value with the file syntax so vectors and numbers keep their types; anything
     * that is not one clean value (a path, say) is taken as a string, but a number too large
     * for a double is an error as it is in the file. */
    lexer lx = {.src = val, .len = strlen(val), .line = 1, .col = 1, .filename = "command line"};
    entry tmp = {.key = key};
    gf_status st = lex_next(&lx);
    int numeric = lx.range_error || lx.tok.kind == TOK_NUMBER || lx.tok.kind == TOK_LANGLE;
    if (st == GF_OK && lx.tok.kind != TOK_EOF)
        st = parse_value(&lx, &tmp);
    int clean = (st == GF_OK && tmp.text && lx.tok.kind == TOK_EOF);
    free(lx.tok.str);
    if (!clean) {
        free(tmp.text);
        if (numeric && lx.range_error)
            return GF_ERROR(GF_ERR_INPUT,
                            "command-line override '%s': number '%.*s' is out of the range of "
                            "a double",
                            arg, (int)(lx.range_len > 60 ? 60 : lx.range_len), lx.range_error);
        gf_error_clear();
        memset(&tmp, 0, sizeof tmp);
        tmp.kind = VAL_STRING;
        tmp.text = dup_str(val);
        if (!tmp.text)
            return gf_error_status();
    }

    gf_config_block *b = cfg->root;
    for (const char *p = s; p < lastdot;) {
        const char *dot = memchr(p, '.', (size_t)(lastdot - p) + 1);
        char name[260];
        size_t n, sel_len;
        const char *sel;
        split_component(p, dot, &n, &sel, &sel_len); /* checked above */
        memcpy(name, p, n);
        name[n] = '\0';
        /* Naming a block on the command line is not reading it: a misspelt one stays unused
         * and is reported as an unknown block. */
        b = override_block(b, name, sel, sel_len, arg);
        if (!b) {
            free(tmp.text);
            return gf_error_status();
        }
        make_explicit(b);
        p = dot + 1;
    }
    entry *e = find_entry(b, key);
    if (!e) {
        e = add_entry(b, key);
        if (!e) {
            free(tmp.text);
            return gf_error_status();
        }
    } else {
        free(e->text);
    }
    e->kind = tmp.kind;
    e->text = tmp.text;
    memcpy(e->num, tmp.num, sizeof e->num);
    e->nvec = tmp.nvec;
    e->line = 0;
    e->col = 0;
    e->is_default = 0;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Access                                                                                     */

void gf_config_watch(gf_config *cfg, gf_config_watcher fn, void *ctx) {
    cfg->watcher = fn;
    cfg->watcher_ctx = ctx;
}

static size_t section_count(const gf_config_block *parent, const char *name);
static int has_key(const gf_config_block *b, const char *key);

/* "Domain/Wall": the names from the top level down to b (the top level's is empty). */
static size_t block_path(const gf_config_block *b, char *buf, size_t size) {
    if (!b->parent) {
        buf[0] = '\0';
        return 0;
    }
    size_t n = block_path(b->parent, buf, size);
    int k = snprintf(buf + n, size - n, "%s%s", n ? "/" : "", b->name);
    return k < 0 ? n : (n + (size_t)k < size ? n + (size_t)k : size - 1);
}

/* Tells the watcher, if any, of an access to b (or to its sub-block `child`). */
static void tell(const gf_config_block *b, const char *child, gf_config_access *a) {
    const gf_config *cfg = b->cfg;
    if (!cfg->watcher)
        return;
    char path[1024];
    size_t n = block_path(b, path, sizeof path);
    if (child)
        snprintf(path + n, sizeof path - n, "%s%s", n ? "/" : "", child);
    a->path = path;
    cfg->watcher(cfg->watcher_ctx, a);
}

static void tell_key(const gf_config_block *b, gf_config_access_kind kind, const char *key,
                     const char *def, int required) {
    if (!b->cfg->watcher)
        return;
    gf_config_access a = {
        .kind = kind, .key = key, .def = def, .required = required, .given = has_key(b, key)};
    tell(b, NULL, &a);
}

static void tell_block(gf_config_block *parent, const char *name, size_t index) {
    if (!parent->cfg->watcher)
        return;
    gf_config_access a = {.kind = GF_CONFIG_ACCESS_BLOCK,
                          .index = index,
                          .given = section_count(parent, name) > index};
    tell(parent, name, &a);
}

gf_config_block *gf_config_root(gf_config *cfg) {
    cfg->root->used = 1;
    return cfg->root;
}

const char *gf_config_block_name(const gf_config_block *b) {
    return b->name;
}

const char *gf_config_block_where(const gf_config_block *b, char *buf, size_t size) {
    if (b->line > 0)
        snprintf(buf, size, "%s:%d", b->cfg->filename, b->line);
    else
        snprintf(buf, size, "%s (block '%s' not in the file)", b->cfg->filename, b->name);
    return buf;
}

gf_config_block *gf_config_section(gf_config_block *parent, const char *name) {
    tell_block(parent, name, 0);
    gf_config_block *b = section_find_or_make(parent, name);
    if (b)
        b->used = 1;
    return b;
}

static size_t section_count(const gf_config_block *parent, const char *name) {
    const child_group *g = find_group(parent, name);
    return g ? g->n - g->nimplicit : 0;
}

size_t gf_config_section_count(gf_config_block *parent, const char *name) {
    tell_block(parent, name, 0);
    return section_count(parent, name);
}

gf_status gf_config_section_count_max(gf_config_block *parent, const char *name, size_t max,
                                      size_t *count) {
    *count = gf_config_section_count(parent, name);
    if (*count <= max)
        return GF_OK;
    char where[512];
    gf_config_block_where(gf_config_section_nth(parent, name, max), where, sizeof where);
    return GF_ERROR(GF_ERR_INPUT, "%s: %zu %s blocks, at most %zu are supported", where, *count,
                    name, max);
}

gf_config_block *gf_config_section_nth(gf_config_block *parent, const char *name, size_t k) {
    tell_block(parent, name, k);
    child_group *g = find_group(parent, name);
    if (!g || k >= g->n - g->nimplicit)
        return NULL;
    gf_config_block *c = NULL;
    if (g->nimplicit == 0) {
        c = g->members[k];
    } else {
        /* Only a block a getter made before any was given: a group of one. */
        for (size_t i = 0; i < g->n && !c; ++i)
            if (!g->members[i]->implicit && k-- == 0)
                c = g->members[i];
    }
    c->used = 1;
    return c;
}

static int has_key(const gf_config_block *b, const char *key) {
    const entry *e = find_entry(b, key);
    return e && !e->is_default;
}

int gf_config_has(const gf_config_block *b, const char *key) {
    tell_key(b, GF_CONFIG_ACCESS_HAS, key, NULL, 0);
    return has_key(b, key);
}

static void where_of(const gf_config_block *b, const entry *e, char *buf, size_t size) {
    if (e && e->line > 0)
        snprintf(buf, size, "%s:%d:%d", b->cfg->filename, e->line, e->col);
    else if (e && !e->is_default)
        snprintf(buf, size, "command line");
    else
        gf_config_block_where(b, buf, size);
}

static const char *kind_name(value_kind k) {
    switch (k) {
    case VAL_WORD:
        return "a word";
    case VAL_NUMBER:
        return "a number";
    case VAL_STRING:
        return "a string";
    case VAL_VECTOR:
        return "a vector";
    }
    return "?";
}

static gf_status type_error(const gf_config_block *b, const entry *e, const char *want) {
    char where[512];
    where_of(b, e, where, sizeof where);
    return GF_ERROR(GF_ERR_INPUT, "%s: '%s' in block '%s' must be %s, but is %s ('%s')", where,
                    e->key, b->name, want, kind_name(e->kind), e->text);
}

/* Looks a key up and marks it read; absent keys get a default entry so the effective
 * configuration lists them. Returns NULL for an absent key (after recording the default). */
static gf_status lookup(gf_config_block *b, const char *key, entry **found, entry **deflt) {
    *found = NULL;
    *deflt = NULL;
    entry *e = find_entry(b, key);
    if (e && !e->is_default) {
        e->used = 1;
        *found = e;
        return GF_OK;
    }
    if (!e) {
        e = add_entry(b, key);
        if (!e)
            return gf_error_status();
        e->is_default = 1;
    } else {
        free(e->text);
        e->text = NULL;
    }
    e->used = 1;
    *deflt = e;
    return GF_OK;
}

int gf_config_format_double(double x, char *buf, size_t size) {
    int n = 0;
    for (int digits = 1; digits <= 17; ++digits) {
        n = snprintf(buf, size, "%.*g", digits, x);
        if (!isfinite(x) || strtod(buf, NULL) == x)
            break;
    }
    return n;
}

static gf_status double_value(gf_config_block *b, const char *key, double def, double *out) {
    entry *e, *d;
    GF_TRY(lookup(b, key, &e, &d));
    if (d) {
        char buf[64];
        gf_config_format_double(def, buf, sizeof buf);
        d->kind = VAL_NUMBER;
        d->num[0] = def;
        d->text = dup_str(buf);
        *out = def;
        return d->text ? GF_OK : gf_error_status();
    }
    if (e->kind != VAL_NUMBER)
        return type_error(b, e, "a number");
    *out = e->num[0];
    return GF_OK;
}

static gf_status long_value(gf_config_block *b, const char *key, long def, long *out) {
    entry *e, *d;
    GF_TRY(lookup(b, key, &e, &d));
    if (d) {
        char buf[64];
        snprintf(buf, sizeof buf, "%ld", def);
        d->kind = VAL_NUMBER;
        d->num[0] = (double)def;
        d->text = dup_str(buf);
        *out = def;
        return d->text ? GF_OK : gf_error_status();
    }
    if (e->kind != VAL_NUMBER)
        return type_error(b, e, "a whole number");
    double v = e->num[0];
    if (v != floor(v) || fabs(v) > 9.0e15)
        return type_error(b, e, "a whole number");
    *out = (long)v;
    return GF_OK;
}

static gf_status bool_value(gf_config_block *b, const char *key, int def, int *out) {
    entry *e, *d;
    GF_TRY(lookup(b, key, &e, &d));
    if (d) {
        d->kind = VAL_WORD;
        d->text = dup_str(def ? "true" : "false");
        *out = def ? 1 : 0;
        return d->text ? GF_OK : gf_error_status();
    }
    if (e->kind == VAL_WORD && (strcmp(e->text, "true") == 0 || strcmp(e->text, "yes") == 0 ||
                                strcmp(e->text, "on") == 0)) {
        *out = 1;
        return GF_OK;
    }
    if (e->kind == VAL_WORD && (strcmp(e->text, "false") == 0 || strcmp(e->text, "no") == 0 ||
                                strcmp(e->text, "off") == 0)) {
        *out = 0;
        return GF_OK;
    }
    if (e->kind == VAL_NUMBER && (e->num[0] == 0.0 || e->num[0] == 1.0)) {
        *out = e->num[0] != 0.0;
        return GF_OK;
    }
    return type_error(b, e, "true or false");
}

static gf_status string_value(gf_config_block *b, const char *key, const char *def, char *out,
                              size_t size) {
    entry *e, *d;
    GF_TRY(lookup(b, key, &e, &d));
    const char *val;
    if (d) {
        d->kind = VAL_STRING;
        d->text = dup_str(def ? def : "");
        if (!d->text)
            return gf_error_status();
        val = d->text;
    } else {
        if (e->kind != VAL_WORD && e->kind != VAL_STRING)
            return type_error(b, e, "a word or a string");
        val = e->text;
    }
    if (strlen(val) >= size) {
        char where[512];
        where_of(b, d ? d : e, where, sizeof where);
        return GF_ERROR(GF_ERR_INPUT, "%s: value of '%s' is longer than %zu characters", where, key,
                        size - 1);
    }
    strcpy(out, val);
    return GF_OK;
}

/* "< 1, 0, 0 >", as in a file. */
static void format_vector(const double *v, int n, char *buf, size_t size) {
    int len = snprintf(buf, size, "< ");
    for (int i = 0; i < n; ++i) {
        len += snprintf(buf + len, size - (size_t)len, i ? ", " : "");
        len += gf_config_format_double(v[i], buf + len, size - (size_t)len);
    }
    snprintf(buf + len, size - (size_t)len, " >");
}

/* A vector of n components (3, or 4 for quaternions); `what` names the expected form. */
static gf_status get_vector(gf_config_block *b, const char *key, int n, const double *def,
                            double *out, const char *what) {
    entry *e, *d;
    GF_TRY(lookup(b, key, &e, &d));
    if (d) {
        char buf[160];
        format_vector(def, n, buf, sizeof buf);
        d->kind = VAL_VECTOR;
        d->nvec = n;
        memcpy(d->num, def, (size_t)n * sizeof *def);
        d->text = dup_str(buf);
        memcpy(out, def, (size_t)n * sizeof *def);
        return d->text ? GF_OK : gf_error_status();
    }
    if (e->kind == VAL_VECTOR && e->nvec != n) {
        char where[512];
        where_of(b, e, where, sizeof where);
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: '%s' in block '%s' must be %s of %d components, but has %d ('%s')",
                        where, key, b->name, what, n, e->nvec, e->text);
    }
    if (e->kind != VAL_VECTOR)
        return type_error(b, e, what);
    memcpy(out, e->num, (size_t)n * sizeof *out);
    return GF_OK;
}

/* The getters tell the watcher first: an access that fails was still asked for. */

gf_status gf_config_get_double(gf_config_block *b, const char *key, double def, double *out) {
    if (b->cfg->watcher) {
        char buf[64];
        gf_config_format_double(def, buf, sizeof buf);
        tell_key(b, GF_CONFIG_ACCESS_DOUBLE, key, buf, 0);
    }
    return double_value(b, key, def, out);
}

gf_status gf_config_get_long(gf_config_block *b, const char *key, long def, long *out) {
    if (b->cfg->watcher) {
        char buf[64];
        snprintf(buf, sizeof buf, "%ld", def);
        tell_key(b, GF_CONFIG_ACCESS_LONG, key, buf, 0);
    }
    return long_value(b, key, def, out);
}

gf_status gf_config_get_bool(gf_config_block *b, const char *key, int def, int *out) {
    tell_key(b, GF_CONFIG_ACCESS_BOOL, key, def ? "true" : "false", 0);
    return bool_value(b, key, def, out);
}

gf_status gf_config_get_string(gf_config_block *b, const char *key, const char *def, char *out,
                               size_t size) {
    tell_key(b, GF_CONFIG_ACCESS_STRING, key, def ? def : "", 0);
    return string_value(b, key, def, out, size);
}

gf_status gf_config_get_vec3(gf_config_block *b, const char *key, const double def[3],
                             double out[3]) {
    if (b->cfg->watcher) {
        char buf[160];
        format_vector(def, 3, buf, sizeof buf);
        tell_key(b, GF_CONFIG_ACCESS_VEC3, key, buf, 0);
    }
    return get_vector(b, key, 3, def, out, "a vector < x, y, z >");
}

gf_status gf_config_get_quat(gf_config_block *b, const char *key, const double def[4],
                             double out[4]) {
    if (b->cfg->watcher) {
        char buf[160];
        format_vector(def, 4, buf, sizeof buf);
        tell_key(b, GF_CONFIG_ACCESS_QUAT, key, buf, 0);
    }
    return get_vector(b, key, 4, def, out, "a quaternion < w, x, y, z >");
}

static gf_status missing(gf_config_block *b, const char *key, const char *what) {
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    /* An earlier getter may have recorded a default for the key: withdraw it so the dump does
     * not show it (the entry stays, unused, so the index of the block stays valid). */
    entry *e = find_entry(b, key);
    if (e && e->is_default)
        e->used = 0;
    return GF_ERROR(GF_ERR_INPUT, "%s: block '%s' needs the key '%s' (%s)", where, b->name, key,
                    what);
}

gf_status gf_config_require_double(gf_config_block *b, const char *key, double *out) {
    tell_key(b, GF_CONFIG_ACCESS_DOUBLE, key, NULL, 1);
    if (!has_key(b, key))
        return missing(b, key, "a number");
    return double_value(b, key, 0.0, out);
}

gf_status gf_config_require_string(gf_config_block *b, const char *key, char *out, size_t size) {
    tell_key(b, GF_CONFIG_ACCESS_STRING, key, NULL, 1);
    if (!has_key(b, key))
        return missing(b, key, "a word or a string");
    return string_value(b, key, "", out, size);
}

gf_status gf_config_require_vec3(gf_config_block *b, const char *key, double out[3]) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    tell_key(b, GF_CONFIG_ACCESS_VEC3, key, NULL, 1);
    if (!has_key(b, key))
        return missing(b, key, "a vector < x, y, z >");
    return get_vector(b, key, 3, zero, out, "a vector < x, y, z >");
}

gf_status gf_config_check_range(gf_config_block *b, const char *key, double value, double lo,
                                double hi) {
    if (b->cfg->watcher) {
        gf_config_access a = {.kind = GF_CONFIG_ACCESS_RANGE,
                              .key = key,
                              .given = has_key(b, key),
                              .lo = lo,
                              .hi = hi};
        tell(b, NULL, &a);
    }
    if (value >= lo && value <= hi)
        return GF_OK;
    char where[512], range[128];
    where_of(b, find_entry(b, key), where, sizeof where);
    /* Bounds at the ends of the doubles stand for "positive" and "no limit": say so. */
    int positive = lo > 0.0 && lo <= 1e-300, unbounded = hi >= 1e300;
    if (positive && unbounded)
        snprintf(range, sizeof range, "be positive");
    else if (positive)
        snprintf(range, sizeof range, "be positive and at most %g", hi);
    else if (lo == 0.0 && unbounded)
        snprintf(range, sizeof range, "not be negative");
    else if (unbounded)
        snprintf(range, sizeof range, "be at least %g", lo);
    else
        snprintf(range, sizeof range, "lie in [%g, %g]", lo, hi);
    return GF_ERROR(GF_ERR_INPUT, "%s: '%s' in block '%s' is %g but must %s", where, key, b->name,
                    value, range);
}

/* ------------------------------------------------------------------------------------------ */
/* Unused keys                                                                                */

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    size_t row[65];
    for (size_t j = 0; j <= lb; ++j)
        row[j] = j;
    for (size_t i = 1; i <= la; ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; ++j) {
            size_t up = row[j];
            size_t cost =
                tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void suggest(const char *name, const char **known, size_t nknown, char *buf, size_t size) {
    const char *best = NULL;
    size_t bestd = 99;
    for (size_t i = 0; i < nknown; ++i) {
        size_t d = edit_distance(name, known[i]);
        if (d < bestd) {
            bestd = d;
            best = known[i];
        }
    }
    size_t len = strlen(name);
    if (best && bestd <= (len < 4 ? 1 : len / 3 + 1))
        snprintf(buf, size, "; did you mean '%s'?", best);
    else if (nknown > 0) {
        size_t n = (size_t)snprintf(buf, size, "; known here:");
        for (size_t i = 0; i < nknown && n < size; ++i)
            n += (size_t)snprintf(buf + n, size - n, " %s", known[i]);
    } else {
        snprintf(buf, size, "; this block takes no keys");
    }
}

static gf_status check_block(const gf_config_block *b, size_t *nproblems, char *first,
                             size_t firstsize) {
    const char *known[256];
    size_t nknown = 0;
    for (size_t i = 0; i < b->nentries && nknown < 256; ++i)
        if (b->entries[i].used)
            known[nknown++] = b->entries[i].key;
    for (size_t i = 0; i < b->nentries; ++i) {
        const entry *e = &b->entries[i];
        if (e->used || e->is_default)
            continue;
        if ((*nproblems)++ == 0) {
            char where[512], hint[512];
            where_of(b, e, where, sizeof where);
            if (e->kline > 0)
                snprintf(where, sizeof where, "%s:%d:%d", b->cfg->filename, e->kline, e->kcol);
            suggest(e->key, known, nknown, hint, sizeof hint);
            snprintf(first, firstsize, "%s: unknown key '%s' in block '%s'%s", where, e->key,
                     b->name[0] ? b->name : "(top level)", hint);
        }
    }
    const char *kblocks[256];
    size_t nkb = 0;
    for (size_t i = 0; i < b->nchildren && nkb < 256; ++i)
        if (b->children[i]->used)
            kblocks[nkb++] = b->children[i]->name;
    for (size_t i = 0; i < b->nchildren; ++i) {
        const gf_config_block *c = b->children[i];
        if (!c->used) {
            if ((*nproblems)++ == 0) {
                char where[512], hint[512];
                /* An unread block not in the file was named by an override. */
                if (c->line > 0)
                    gf_config_block_where(c, where, sizeof where);
                else
                    snprintf(where, sizeof where, "command line");
                const gf_config_block *read = NULL;
                for (size_t j = 0; j < b->nchildren && !read; ++j)
                    if (b->children[j]->used && strcmp(b->children[j]->name, c->name) == 0)
                        read = b->children[j];
                if (read) {
                    char at[512];
                    gf_config_block_where(read, at, sizeof at);
                    snprintf(first, firstsize,
                             "%s: block '%s' is given again; it is not repeatable (the one at %s "
                             "is read): merge the two",
                             where, c->name, at);
                } else {
                    suggest(c->name, kblocks, nkb, hint, sizeof hint);
                    snprintf(first, firstsize, "%s: unknown block '%s'%s", where, c->name, hint);
                }
            }
            continue;
        }
        check_block(c, nproblems, first, firstsize);
    }
    return GF_OK;
}

gf_status gf_config_check_unused(gf_config *cfg) {
    size_t nproblems = 0;
    char first[1500] = "";
    check_block(cfg->root, &nproblems, first, sizeof first);
    if (nproblems == 0)
        return GF_OK;
    if (nproblems == 1)
        return GF_ERROR(GF_ERR_INPUT, "%s", first);
    return GF_ERROR(GF_ERR_INPUT, "%s (and %zu more unknown keys or blocks)", first, nproblems - 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Dump                                                                                       */

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(strbuf *sb, const char *fmt, ...) {
    if (sb->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            sb->failed = 1;
            return;
        }
        if ((size_t)n < sb->cap - sb->len) {
            sb->len += (size_t)n;
            return;
        }
        size_t cap = 2 * sb->cap + (size_t)n;
        if (gf_grow((void **)&sb->buf, cap, 1) != GF_OK) {
            sb->failed = 1;
            return;
        }
        sb->cap = cap;
    }
}

static void dump_string(strbuf *sb, const char *s) {
    sb_printf(sb, "\"");
    for (; *s; ++s) {
        if (*s == '"' || *s == '\\')
            sb_printf(sb, "\\%c", *s);
        else if (*s == '\n')
            sb_printf(sb, "\\n");
        else if (*s == '\t')
            sb_printf(sb, "\\t");
        else
            sb_printf(sb, "%c", *s);
    }
    sb_printf(sb, "\"");
}

/* Writes the keys read in b and its sub-blocks; returns whether it wrote anything. A sub-block
 * with nothing read is taken back out, which keeps the dump linear in the size of the tree. */
static int dump_block(strbuf *sb, const gf_config_block *b, int depth) {
    int wrote = 0;
    for (size_t i = 0; i < b->nentries; ++i) {
        const entry *e = &b->entries[i];
        if (!e->used)
            continue;
        sb_printf(sb, "%*s%s ", 4 * depth, "", e->key);
        if (e->kind == VAL_STRING)
            dump_string(sb, e->text);
        else
            sb_printf(sb, "%s", e->text);
        sb_printf(sb, ";%s\n", e->is_default ? " // default" : "");
        wrote = 1;
    }
    for (size_t i = 0; i < b->nchildren; ++i) {
        const gf_config_block *c = b->children[i];
        if (!c->used)
            continue;
        size_t mark = sb->len;
        sb_printf(sb, "%*s%s {\n", 4 * depth, "", c->name);
        if (dump_block(sb, c, depth + 1)) {
            sb_printf(sb, "%*s}\n", 4 * depth, "");
            wrote = 1;
        } else if (!sb->failed) {
            sb->len = mark;
            sb->buf[mark] = '\0';
        }
    }
    return wrote;
}

gf_status gf_config_dump(const gf_config *cfg, char **text) {
    strbuf sb = {0};
    sb.cap = 1024;
    sb.buf = gf_malloc(sb.cap, 1);
    if (!sb.buf)
        return gf_error_status();
    sb.buf[0] = '\0';
    dump_block(&sb, cfg->root, 0);
    if (sb.failed) {
        free(sb.buf);
        return GF_ERROR(GF_ERR_MEMORY, "could not format the effective configuration");
    }
    *text = sb.buf;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Visit                                                                                      */

static gf_status visit_block(const gf_config_block *b, char *path, size_t size,
                             gf_config_visitor fn, void *ctx) {
    strbuf sb = {0};
    gf_status st = GF_OK;
    for (size_t i = 0; i < b->nentries && st == GF_OK; ++i) {
        const entry *e = &b->entries[i];
        const char *value = e->text;
        if (e->kind == VAL_STRING) {
            sb.len = 0;
            if (sb.buf)
                sb.buf[0] = '\0';
            dump_string(&sb, e->text);
            if (sb.failed) {
                st = GF_ERROR(GF_ERR_MEMORY, "could not format a configuration value");
                break;
            }
            value = sb.buf;
        }
        st = fn(ctx, path, e->key, value);
    }
    free(sb.buf);
    size_t plen = strlen(path);
    for (size_t i = 0; i < b->nchildren && st == GF_OK; ++i) {
        const gf_config_block *c = b->children[i];
        size_t k = 1;
        for (size_t j = 0; j < i; ++j)
            k += strcmp(b->children[j]->name, c->name) == 0;
        int n = snprintf(path + plen, size - plen, "%s%s#%zu", plen ? "." : "", c->name, k);
        if (n < 0 || (size_t)n >= size - plen)
            st = GF_ERROR(GF_ERR_INPUT, "a configuration is nested too deeply");
        else
            st = visit_block(c, path, size, fn, ctx);
        path[plen] = '\0';
    }
    return st;
}

gf_status gf_config_visit(const gf_config *cfg, gf_config_visitor fn, void *ctx) {
    char path[4096] = "";
    return visit_block(cfg->root, path, sizeof path, fn, ctx);
}
