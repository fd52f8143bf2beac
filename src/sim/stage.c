/* Stages: each stage's values, worked out once from the configuration with the stages'
 * overrides applied in order. */
#include "sim/stage.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_schema.h"

static char *dup_text(const char *s) {
    char *d = gf_malloc(strlen(s) + 1, 1);
    if (d)
        memcpy(d, s, strlen(s) + 1);
    return d;
}

/* The values of every key a stage may change, as the modules read them from `root`. */
static gf_status read_values(gf_config_block *root, gf_stage *v) {
    GF_TRY(gf_materials_configure(&v->materials, root));
    GF_TRY(gf_solver_configure(&v->solver, root));
    gf_config_block *pb = gf_config_section(root, "Physics");
    gf_config_block *tb = gf_config_section(root, "Time");
    if (!pb || !tb)
        return gf_error_status();
    static const double g_def[3] = {0.0, 0.0, -9.81};
    GF_TRY(gf_config_get_vec3(pb, "gravity", g_def, v->gravity));
    GF_TRY(gf_config_require_double(tb, "dt", &v->dt));
    GF_TRY(gf_config_check_range(tb, "dt", v->dt, 1e-300, 1e300));
    size_t n;
    GF_TRY(gf_config_section_count_max(root, "Insert", GF_MAX_INSERTS, &n));
    for (size_t k = 0; k < n; ++k)
        GF_TRY(gf_insertion_read_times(gf_config_section_nth(root, "Insert", k),
                                       &v->insert_start[k], &v->insert_stop[k]));
    GF_TRY(gf_config_section_count_max(root, "Outlet", GF_MAX_OUTLETS, &n));
    for (size_t k = 0; k < n; ++k)
        GF_TRY(gf_config_get_bool(gf_config_section_nth(root, "Outlet", k), "open", 1,
                                  &v->outlet_open[k]));
    return GF_OK;
}

/* s without the blanks at its ends, in place. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        ++s;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Applies one stage's overrides ("Key = value; ...") to cfg, each checked to be one a stage may
 * make. */
static gf_status apply_overrides(gf_config *cfg, const char *set, const char *where) {
    char *text = dup_text(set);
    if (!text)
        return gf_error_status();
    gf_status st = GF_OK;
    int any = 0;
    for (char *save = NULL, *e = strtok_r(text, ";", &save); e && st == GF_OK;
         e = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(e, '=');
        if (!eq) {
            if (trim(e)[0] != '\0')
                st = GF_ERROR(GF_ERR_INPUT, "%s: Stage.set: '%s' is not Block.key = value", where,
                              trim(e));
            continue;
        }
        *eq = '\0';
        char *key = trim(e), *value = trim(eq + 1);
        if (!gf_config_schema_stage_free(key)) {
            st = GF_ERROR(GF_ERR_INPUT,
                          "%s: Stage.set: '%s' is not a key a stage may change (contact laws of "
                          "Materials, Physics.gravity, Time.dt, Solver.*, Insert.start, "
                          "Insert.stop, Outlet.open)",
                          where, key);
            continue;
        }
        size_t len = strlen(key) + strlen(value) + 3;
        char *arg = gf_malloc(len, 1);
        if (!arg) {
            st = gf_error_status();
            continue;
        }
        snprintf(arg, len, "-%s=%s", key, value);
        st = gf_error_context(gf_config_override(cfg, arg), "%s: Stage.set", where);
        free(arg);
        any = 1;
    }
    if (st == GF_OK && !any)
        st = GF_ERROR(GF_ERR_INPUT, "%s: Stage.set changes nothing", where);
    free(text);
    return st;
}

gf_status gf_stages_configure(gf_stages *s, gf_config *cfg_in) {
    memset(s, 0, sizeof *s);
    s->current = -1;
    /* A copy of the configuration takes each stage's overrides on top of the last's. */
    char *text = NULL;
    gf_config *cfg = NULL;
    GF_TRY(gf_config_dump(cfg_in, &text));
    gf_status st = gf_config_parse(text, strlen(text), "(stages)", &cfg);
    free(text);
    GF_TRY(st);
    gf_config_block *root = gf_config_root(cfg);
    /* The original's Stage blocks: read there, so that their keys count as read and errors
     * name the file's lines. */
    gf_config_block *oroot = gf_config_root(cfg_in);
    size_t n = gf_config_section_count(oroot, "Stage");
    st = read_values(root, &s->base);
    if (st == GF_OK && n > 0) {
        s->stage = gf_malloc(n, sizeof *s->stage);
        st = s->stage ? GF_OK : gf_error_status();
        if (s->stage)
            memset(s->stage, 0, n * sizeof *s->stage);
    }
    for (size_t k = 0; k < n && st == GF_OK; ++k) {
        gf_config_block *b = gf_config_section_nth(oroot, "Stage", k);
        gf_stage *v = &s->stage[k];
        char where[512], def[32], set[4096];
        gf_config_block_where(b, where, sizeof where);
        snprintf(def, sizeof def, "stage%zu", k + 1);
        st = gf_config_get_string(b, "name", def, v->name, sizeof v->name);
        if (st == GF_OK)
            st = gf_config_require_double(b, "time", &v->time);
        if (st == GF_OK)
            st = gf_config_check_range(b, "time", v->time, 0.0, 1e300);
        if (st == GF_OK && k > 0 && !(v->time > s->stage[k - 1].time))
            st = GF_ERROR(GF_ERR_INPUT, "%s: Stage.time %g must come after the previous stage's %g",
                          where, v->time, s->stage[k - 1].time);
        if (st == GF_OK)
            st = gf_config_require_string(b, "set", set, sizeof set);
        if (st == GF_OK && !(v->set = dup_text(set)))
            st = gf_error_status();
        if (st == GF_OK)
            st = apply_overrides(cfg, set, where);
        if (st == GF_OK)
            st = gf_error_context(read_values(root, v), "%s: Stage %s", where, v->name);
        s->count = (int)k + 1;
    }
    gf_config_destroy(cfg);
    if (st != GF_OK)
        gf_stages_free(s);
    return st;
}

void gf_stages_free(gf_stages *s) {
    for (int k = 0; k < s->count; ++k)
        free(s->stage[k].set);
    free(s->stage);
    memset(s, 0, sizeof *s);
    s->current = -1;
}

int gf_stages_due(const gf_stages *s, double time, double tol) {
    int k = -1;
    while (k + 1 < s->count && s->stage[k + 1].time <= time + tol)
        ++k;
    return k;
}

const gf_stage *gf_stages_values(const gf_stages *s, int k) {
    return k < 0 ? &s->base : &s->stage[k];
}
