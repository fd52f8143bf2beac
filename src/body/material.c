#include "body/material.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gf_materials_init(gf_materials *m) {
    memset(m, 0, sizeof *m);
    m->count = 1;
    snprintf(m->name[0], GF_NAME_LEN, "default");
    m->density[0] = 1000.0;
}

gf_status gf_materials_add(gf_materials *m, const char *name, double density,
                           double default_friction, int *index) {
    if (gf_materials_find(m, name) >= 0)
        return GF_ERROR(GF_ERR_INPUT, "material '%s' is defined twice", name);
    if (m->count >= GF_MAX_MATERIALS)
        return GF_ERROR(GF_ERR_INPUT, "at most %d materials are supported", GF_MAX_MATERIALS);
    if (strlen(name) >= GF_NAME_LEN)
        return GF_ERROR(GF_ERR_INPUT, "material name '%s' is too long", name);
    if (!(density > 0.0))
        return GF_ERROR(GF_ERR_INPUT, "material '%s' needs a positive density, not %g", name,
                        density);
    int k = m->count++;
    snprintf(m->name[k], GF_NAME_LEN, "%s", name);
    m->density[k] = density;
    for (int j = 0; j < m->count; ++j)
        m->friction[k][j] = m->friction[j][k] = default_friction;
    if (index)
        *index = k;
    return GF_OK;
}

gf_status gf_materials_set_restitution(gf_materials *m, int a, int b, double e) {
    if (a < 0 || b < 0 || a >= m->count || b >= m->count)
        return GF_ERROR(GF_ERR_INPUT, "restitution pair (%d, %d) names an unknown material", a, b);
    if (!(e >= 0.0 && e <= 1.0))
        return GF_ERROR(GF_ERR_INPUT, "coefficient of restitution must be in [0, 1], not %g", e);
    m->restitution[a][b] = m->restitution[b][a] = e;
    return GF_OK;
}

gf_status gf_materials_set_cohesion(gf_materials *m, int a, int b, double c) {
    if (a < 0 || b < 0 || a >= m->count || b >= m->count)
        return GF_ERROR(GF_ERR_INPUT, "cohesion pair (%d, %d) names an unknown material", a, b);
    if (!(c >= 0.0 && isfinite(c)))
        return GF_ERROR(GF_ERR_INPUT, "cohesion must be finite and >= 0, not %g", c);
    m->cohesion[a][b] = m->cohesion[b][a] = c;
    return GF_OK;
}

gf_status gf_materials_set_resistance(gf_materials *m, int a, int b, double rolling,
                                      double twisting) {
    if (a < 0 || b < 0 || a >= m->count || b >= m->count)
        return GF_ERROR(GF_ERR_INPUT, "resistance pair (%d, %d) names an unknown material", a, b);
    if (!(rolling >= 0.0 && isfinite(rolling) && twisting >= 0.0 && isfinite(twisting)))
        return GF_ERROR(GF_ERR_INPUT,
                        "rolling and twisting friction must be finite and >= 0, not %g and %g",
                        rolling, twisting);
    m->rolling[a][b] = m->rolling[b][a] = rolling;
    m->twisting[a][b] = m->twisting[b][a] = twisting;
    return GF_OK;
}

static int any_positive(const gf_materials *m, const double t[GF_MAX_MATERIALS][GF_MAX_MATERIALS]) {
    for (int a = 0; a < m->count; ++a)
        for (int b = 0; b < m->count; ++b)
            if (t[a][b] > 0.0)
                return 1;
    return 0;
}

int gf_materials_restitutive(const gf_materials *m) {
    return any_positive(m, m->restitution);
}

int gf_materials_cohesive(const gf_materials *m) {
    return any_positive(m, m->cohesion);
}

int gf_materials_resistive(const gf_materials *m) {
    return any_positive(m, m->rolling) || any_positive(m, m->twisting);
}

gf_status gf_materials_set_friction(gf_materials *m, int a, int b, double mu) {
    if (a < 0 || b < 0 || a >= m->count || b >= m->count)
        return GF_ERROR(GF_ERR_INPUT, "friction pair (%d, %d) names an unknown material", a, b);
    if (!(mu >= 0.0))
        return GF_ERROR(GF_ERR_INPUT, "friction coefficient must be >= 0, not %g", mu);
    m->friction[a][b] = m->friction[b][a] = mu;
    return GF_OK;
}

int gf_materials_find(const gf_materials *m, const char *name) {
    for (int k = 0; k < m->count; ++k)
        if (strcmp(m->name[k], name) == 0)
            return k;
    return -1;
}

gf_status gf_materials_lookup(const gf_materials *m, gf_config_block *b, const char *key,
                              int *index) {
    char name[GF_NAME_LEN];
    GF_TRY(gf_config_get_string(b, key, "default", name, sizeof name));
    *index = gf_materials_find(m, name);
    if (*index >= 0)
        return GF_OK;
    char where[512], known[512] = "";
    size_t n = 0;
    for (int k = 0; k < m->count && n < sizeof known; ++k)
        n += (size_t)snprintf(known + n, sizeof known - n, " %s", m->name[k]);
    return GF_ERROR(GF_ERR_INPUT, "%s: block '%s' uses unknown material '%s' (defined:%s)",
                    gf_config_block_where(b, where, sizeof where), gf_config_block_name(b), name,
                    known);
}

/* The keys of the contact laws of a pair and their upper bounds (all from 0), in the order of
 * the tables below; restitution_velocity, for every pair at once, last. */
static const struct {
    const char *key;
    double hi;
} law_bounds[] = {{"friction", 1e6},          {"restitution", 1.0},
                  {"cohesion", 1e12},         {"rolling_friction", 1e3},
                  {"twisting_friction", 1e3}, {"restitution_velocity", 1e6}};

double gf_materials_law_bound(const char *key) {
    for (size_t l = 0; l < sizeof law_bounds / sizeof law_bounds[0]; ++l)
        if (strcmp(law_bounds[l].key, key) == 0)
            return law_bounds[l].hi;
    return -1.0;
}

/* The contact laws a Materials block sets for every pair (friction: with the materials, below)
 * and a Pair block for one pair: each key's range and table. */
typedef struct {
    const char *key;
    double hi;
    double (*table)[GF_MAX_MATERIALS];
} pair_law;

gf_status gf_materials_configure(gf_materials *m, gf_config_block *root) {
    gf_materials_init(m);
    gf_config_block *mb = gf_config_section(root, "Materials");
    if (!mb)
        return gf_error_status();
    double mu = 0.0;
    GF_TRY(gf_config_get_double(mb, "friction", 0.0, &mu));
    GF_TRY(gf_config_check_range(mb, "friction", mu, 0.0, 1e6));
    for (int j = 0; j < m->count; ++j)
        m->friction[0][j] = m->friction[j][0] = mu;
    size_t nmat = gf_config_section_count(mb, "Material");
    for (size_t k = 0; k < nmat; ++k) {
        gf_config_block *b = gf_config_section_nth(mb, "Material", k);
        char name[GF_NAME_LEN];
        double density;
        GF_TRY(gf_config_require_string(b, "name", name, sizeof name));
        GF_TRY(gf_config_require_double(b, "density", &density));
        char where[512];
        GF_TRY(gf_error_context(gf_materials_add(m, name, density, mu, NULL), "%s",
                                gf_config_block_where(b, where, sizeof where)));
    }
    const pair_law laws[] = {{law_bounds[0].key, law_bounds[0].hi, m->friction},
                             {law_bounds[1].key, law_bounds[1].hi, m->restitution},
                             {law_bounds[2].key, law_bounds[2].hi, m->cohesion},
                             {law_bounds[3].key, law_bounds[3].hi, m->rolling},
                             {law_bounds[4].key, law_bounds[4].hi, m->twisting}};
    const int nlaws = (int)(sizeof laws / sizeof laws[0]);
    for (int l = 1; l < nlaws; ++l) { /* every pair's default */
        double v = 0.0;
        GF_TRY(gf_config_get_double(mb, laws[l].key, 0.0, &v));
        GF_TRY(gf_config_check_range(mb, laws[l].key, v, 0.0, laws[l].hi));
        for (int a = 0; a < m->count; ++a)
            for (int c = 0; c < m->count; ++c)
                laws[l].table[a][c] = v;
    }
    char scaling[64];
    GF_TRY(gf_config_get_string(mb, "cohesion_scaling", "none", scaling, sizeof scaling));
    if (strcmp(scaling, "none") != 0 && strcmp(scaling, "radius") != 0) {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Materials.cohesion_scaling '%s' is unknown (none, radius)",
                        gf_config_block_where(mb, where, sizeof where), scaling);
    }
    m->cohesion_per_radius = strcmp(scaling, "radius") == 0;
    GF_TRY(gf_config_get_double(mb, "restitution_velocity", 0.0, &m->restitution_velocity));
    GF_TRY(gf_config_check_range(mb, "restitution_velocity", m->restitution_velocity, 0.0,
                                 law_bounds[5].hi));
    size_t npair = gf_config_section_count(mb, "Pair");
    for (size_t k = 0; k < npair; ++k) {
        gf_config_block *b = gf_config_section_nth(mb, "Pair", k);
        int ia, ib;
        GF_TRY(gf_materials_lookup(m, b, "a", &ia));
        GF_TRY(gf_materials_lookup(m, b, "b", &ib));
        int any = 0;
        for (int l = 0; l < nlaws; ++l)
            any = any || gf_config_has(b, laws[l].key);
        if (!any) {
            char where[512];
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: a Pair block sets one or more of friction, restitution, "
                            "cohesion, rolling_friction and twisting_friction",
                            gf_config_block_where(b, where, sizeof where));
        }
        for (int l = 0; l < nlaws; ++l) { /* the pair's own value, where given */
            double v = laws[l].table[ia][ib];
            GF_TRY(gf_config_get_double(b, laws[l].key, v, &v));
            GF_TRY(gf_config_check_range(b, laws[l].key, v, 0.0, laws[l].hi));
            laws[l].table[ia][ib] = laws[l].table[ib][ia] = v;
        }
    }
    return GF_OK;
}
