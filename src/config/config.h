/* granflow's configuration files: waLBerla-style nested blocks.
 *
 *     Domain {
 *         min < 0, 0, 0 >;       // vectors
 *         max < 1, 1, 1 >;
 *         Wall { normal < 0, 0, 1 >; point < 0, 0, 0 >; }   // repeatable sub-blocks
 *     }
 *     Solver { model max_dissipation; max_iterations 100; tolerance 1e-6; }
 *     Output { directory "out/run 1"; }   /+ block comments +/ also work
 *
 * Values are numbers, strings, bare words (including true/false) or vectors. The program reads
 * keys through typed getters that record every key and the default used for absent ones, so the
 * effective configuration can be printed and keys nobody read are reported as errors (with the
 * closest known key). Command-line overrides `-Block.Sub.key=value` replace or add keys. */
#ifndef GRANFLOW_CONFIG_H
#define GRANFLOW_CONFIG_H

#include <stddef.h>

#include "granflow/error.h"

typedef struct gf_config gf_config;
typedef struct gf_config_block gf_config_block;

/* Hard limits so that hostile input cannot exhaust memory or the stack. */
#define GF_CONFIG_MAX_BYTES (16u << 20)
#define GF_CONFIG_MAX_DEPTH 32

/* Reads a whole file into a NUL-terminated buffer (refusing files over GF_CONFIG_MAX_BYTES). */
gf_status gf_config_read_file(const char *path, char **text, size_t *len);

/* Parses `len` bytes of text; `filename` is used in messages only. */
gf_status gf_config_parse(const char *text, size_t len, const char *filename, gf_config **out);
void gf_config_destroy(gf_config *cfg);

/* Applies `-Block.Sub.key=value` (the leading dash is optional). */
gf_status gf_config_override(gf_config *cfg, const char *arg);

gf_config_block *gf_config_root(gf_config *cfg);
const char *gf_config_block_name(const gf_config_block *b);
/* "file:line" of the block (or "command line"/"defaults" when it did not come from the file). */
const char *gf_config_block_where(const gf_config_block *b, char *buf, size_t size);

/* The first sub-block called `name`; created empty when absent so that the defaults read from
 * it are still recorded. Never NULL unless out of memory. */
gf_config_block *gf_config_section(gf_config_block *parent, const char *name);
/* Repeated sub-blocks (walls, materials): how many there are and the k-th one. */
size_t gf_config_section_count(gf_config_block *parent, const char *name);
gf_config_block *gf_config_section_nth(gf_config_block *parent, const char *name, size_t k);
/* The number of `name` blocks in parent, in *count; an error naming the first block past `max`
 * when there are more. */
gf_status gf_config_section_count_max(gf_config_block *parent, const char *name, size_t max,
                                      size_t *count);
/* Whether the key is present in the file or on the command line. */
int gf_config_has(const gf_config_block *b, const char *key);

/* Typed getters: the value, or `def` when absent. A present value of the wrong type or out of
 * range is an input error naming file:line:column. */
gf_status gf_config_get_double(gf_config_block *b, const char *key, double def, double *out);
gf_status gf_config_get_long(gf_config_block *b, const char *key, long def, long *out);
gf_status gf_config_get_bool(gf_config_block *b, const char *key, int def, int *out);
/* Strings and bare words; `out` gets at most size-1 bytes (longer values are an error). */
gf_status gf_config_get_string(gf_config_block *b, const char *key, const char *def, char *out,
                               size_t size);
gf_status gf_config_get_vec3(gf_config_block *b, const char *key, const double def[3],
                             double out[3]);
/* Required keys: absence is an input error naming the block. */
/* Four components < w, x, y, z >, for orientations. */
gf_status gf_config_get_quat(gf_config_block *b, const char *key, const double def[4],
                             double out[4]);
gf_status gf_config_require_double(gf_config_block *b, const char *key, double *out);
gf_status gf_config_require_string(gf_config_block *b, const char *key, char *out, size_t size);
gf_status gf_config_require_vec3(gf_config_block *b, const char *key, double out[3]);

/* Range checks with a message that names the key's position in the file. */
gf_status gf_config_check_range(gf_config_block *b, const char *key, double value, double lo,
                                double hi);

/* x in the shortest %g form that reads back as x (0.03, not 0.029999999999999999), as
 * snprintf: returns the length it wanted. */
int gf_config_format_double(double x, char *buf, size_t size);

/* What the program asks of a configuration, told to a watcher as it happens: the registry of
 * keys (config_schema.h) is checked against it by tests/test_config_schema.c, so that no key the
 * program reads goes undocumented and no documented default differs from the program's. */
typedef enum {
    GF_CONFIG_ACCESS_DOUBLE, /* the typed getters, gf_config_get_* and gf_config_require_* */
    GF_CONFIG_ACCESS_LONG,
    GF_CONFIG_ACCESS_BOOL,
    GF_CONFIG_ACCESS_STRING,
    GF_CONFIG_ACCESS_VEC3,
    GF_CONFIG_ACCESS_QUAT,
    GF_CONFIG_ACCESS_HAS,   /* gf_config_has */
    GF_CONFIG_ACCESS_RANGE, /* gf_config_check_range: lo and hi */
    GF_CONFIG_ACCESS_BLOCK  /* gf_config_section, _count and _nth: the block of `path` */
} gf_config_access_kind;

typedef struct {
    gf_config_access_kind kind;
    const char *path; /* of the block from the top level, "Domain/Wall" ("" the top level) */
    const char *key;  /* NULL for blocks */
    int required;     /* a gf_config_require_* getter */
    const char *def;  /* getters other than required ones: the default as the effective
                         configuration writes it ("< 0, 0, 1 >", "1e-05"; strings unquoted) */
    int given;        /* the key (or the asked-for block) is in the file or on the command line */
    double lo, hi;    /* ranges */
    size_t index;     /* blocks: the member gf_config_section_nth asks for, 0 otherwise */
} gf_config_access;

/* The strings of an access live until the watcher returns. */
typedef void (*gf_config_watcher)(void *ctx, const gf_config_access *access);
/* Calls fn(ctx, ...) for every access from now on; fn NULL stops it. */
void gf_config_watch(gf_config *cfg, gf_config_watcher fn, void *ctx);

/* After the program has read everything: keys and blocks nobody read are errors. */
gf_status gf_config_check_unused(gf_config *cfg);

/* The effective configuration (every key read, defaults marked) as config text; the caller
 * frees *text. */
gf_status gf_config_dump(const gf_config *cfg, char **text);

/* Calls fn for every key of the configuration as parsed (used or not), blocks depth first in
 * file order: `path` names the enclosing blocks with each one's occurrence among its equally
 * named siblings ("Materials#1.Material#2", "" at the top level), `value` is the value as
 * gf_config_dump writes it (strings quoted). A status other than GF_OK from fn stops the walk
 * and is returned. */
typedef gf_status (*gf_config_visitor)(void *ctx, const char *path, const char *key,
                                       const char *value);
gf_status gf_config_visit(const gf_config *cfg, gf_config_visitor fn, void *ctx);

#endif
