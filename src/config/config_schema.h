/* The registry of every configuration block and key: its type, default, range and a sentence.
 * `granflow --help-config` prints it, README.md's table of keys is its Markdown form, and
 * tests/test_config_schema.c checks it against the program: every key and block the program
 * reads (seen through gf_config_watch) must be registered with the right type, default and
 * range check; configs/reference.cfg must set every registered key; README.md must hold the
 * table as gf_config_schema_markdown writes it.
 *
 * A new key is one line in src/config/config_schema.c; then a line in configs/reference.cfg and the
 * README table replaced by the output of `granflow --help-config markdown`. */
#ifndef GRANFLOW_CONFIG_SCHEMA_H
#define GRANFLOW_CONFIG_SCHEMA_H

#include <stddef.h>

#include "config/config.h"
#include "granflow/error.h"

typedef enum {
    GF_KEY_NUMBER,  /* gf_config_get_double */
    GF_KEY_INTEGER, /* gf_config_get_long */
    GF_KEY_BOOL,
    GF_KEY_STRING, /* a name or a path: a bare word or a quoted string */
    GF_KEY_WORD,   /* one of the words listed in `range` */
    GF_KEY_VECTOR, /* < x, y, z > */
    GF_KEY_QUATERNION
} gf_key_type;

typedef struct {
    /* The paths of the blocks that read the key with the same code, separated by spaces
     * ("Lattice Inflow"): the key is registered once for all of them. */
    const char *blocks;
    const char *key;
    gf_key_type type;
    /* NULL: required. In parentheses: worked out from other keys, or required in some cases,
     * in words ("(Domain.min x)"). Otherwise the value as a file writes it ("1e-3",
     * "< 0, 0, -9.81 >", "\"output\""), which must be the program's default. */
    const char *def;
    /* Words: the accepted words, ", " between them. Otherwise what the program checks, or "";
     * a range the program checks with gf_config_check_range comes first, as "[lo, hi]",
     * ">= lo", "> 0" or "(0, hi]" (gf_config_schema_range_text), then "; " and more words. */
    const char *range;
    const char *help; /* what the key does, for users */
} gf_config_key;

typedef struct {
    const char *path; /* "Domain/Wall" */
    int repeatable;   /* may be given several times */
    const char *help;
} gf_config_block_info;

/* The registry, in the order it is printed. */
const gf_config_key *gf_config_schema_keys(size_t *n);
const gf_config_block_info *gf_config_schema_blocks(size_t *n);

/* The registered key of a block (NULL if none), and a registered block (NULL if none). */
const gf_config_key *gf_config_schema_find(const char *path, const char *key);
const gf_config_block_info *gf_config_schema_find_block(const char *path);
/* The registered key named as on the command line ("Domain.Wall.normal"), or NULL; `path` gets
 * its block path ("Domain/Wall"; "" without a block). */
const gf_config_key *gf_config_schema_find_dotted(const char *key, char *path, size_t size);
/* Whether `path` is one of the blocks of k->blocks. */
int gf_config_schema_in_blocks(const gf_config_key *k, const char *path);

/* Whether the key may differ on a restart: `key` as "Block.Sub.key" (the command line's form,
 * "Solver.tolerance"), its own flag or its block's. Every other key, registered or not, must
 * match the checkpoint's. */
int gf_config_schema_restart_free(const char *key);
/* Whether a Stage may set the key, named as on the command line with or without selectors
 * ("Insert[feed].stop"): a registered key of the contact laws, gravity, the time step, the
 * solver, inserts' start and stop, outlets' open. These may differ on a restart too. */
int gf_config_schema_stage_free(const char *key);
/* The keys that may differ on a restart, for messages: "Time.steps, ..., Output.*, ...". */
void gf_config_schema_restart_free_list(char *buf, size_t size);

const char *gf_config_schema_type_name(gf_key_type type);
/* "required", or the default as registered. */
const char *gf_config_schema_default_text(const gf_config_key *k);
/* How the registry writes the range lo .. hi that gf_config_check_range checks (bounds at the
 * ends of the doubles stand for "positive" and "no limit", as in its message). */
void gf_config_schema_range_text(double lo, double hi, char *buf, size_t size);

/* Whether an access the program made agrees with the registry: a registered block or key of
 * the registered type whose literal default is the program's, required keys registered
 * without a literal default, range checks as registered. An error (GF_ERR_STATE) names the
 * access and the disagreement. */
gf_status gf_config_schema_check(const gf_config_access *a);

/* The registry as text for `granflow --help-config`: every block (or only `block` and its
 * sub-blocks; an unknown block is an input error naming the known ones) with its keys. The
 * caller frees *text. */
gf_status gf_config_schema_help(const char *block, char **text);
/* The registry as the Markdown of README.md's table, with the marker lines around it. */
gf_status gf_config_schema_markdown(char **text);
#define GF_CONFIG_SCHEMA_MARK_BEGIN                                                                \
    "<!-- Made by `granflow --help-config markdown` from src/config/config_schema.c; "             \
    "tests/test_config_schema.c checks it. -->"
#define GF_CONFIG_SCHEMA_MARK_END "<!-- End of the table made by granflow --help-config. -->"

#endif
