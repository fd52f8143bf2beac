/* Shapes and clump templates read from the configuration (Clump blocks and the shape keys of
 * Body, Lattice, Inflow and Insert blocks). */
#include "body/shape_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

#define CLUMP_NAME 64

gf_status gf_bodies_configure_clumps(gf_clumps *clumps, gf_config_block *root) {
    size_t n = gf_config_section_count(root, "Clump");
    for (size_t k = 0; k < n; ++k) {
        gf_config_block *b = gf_config_section_nth(root, "Clump", k);
        char where[512], name[CLUMP_NAME];
        gf_config_block_where(b, where, sizeof where);
        GF_TRY(gf_config_require_string(b, "name", name, sizeof name));
        /* Names are how bodies refer to templates: a second one of a name would never be used. */
        for (size_t j = 0; j < k; ++j) {
            char other[CLUMP_NAME], owhere[512];
            gf_config_block *ob = gf_config_section_nth(root, "Clump", j);
            if (gf_config_get_string(ob, "name", "", other, sizeof other) == GF_OK &&
                strcmp(other, name) == 0)
                return GF_ERROR(GF_ERR_INPUT, "%s: a second Clump named '%s' (the first is at %s)",
                                where, name, gf_config_block_where(ob, owhere, sizeof owhere));
        }
        size_t ns = gf_config_section_count(b, "Sphere");
        if (ns < 1 || ns > GF_CLUMP_MAX_MEMBERS)
            return GF_ERROR(GF_ERR_INPUT, "%s: Clump '%s' has %zu Sphere blocks, not 1 .. %d",
                            where, name, ns, GF_CLUMP_MAX_MEMBERS);
        double centre[GF_CLUMP_MAX_MEMBERS][3], radius[GF_CLUMP_MAX_MEMBERS];
        for (size_t s = 0; s < ns; ++s) {
            gf_config_block *sb = gf_config_section_nth(b, "Sphere", s);
            GF_TRY(gf_config_require_vec3(sb, "centre", centre[s]));
            GF_TRY(gf_config_require_double(sb, "radius", &radius[s]));
            GF_TRY(gf_config_check_range(sb, "radius", radius[s], 1e-300, 1e300));
        }
        gf_clump c;
        GF_TRY(gf_error_context(gf_clump_make((int)ns, centre, radius, &c), "%s: Clump '%s'", where,
                                name));
        int32_t index;
        GF_TRY(gf_clumps_add(clumps, &c, &index));
    }
    return GF_OK;
}

int32_t gf_bodies_clump_index(gf_config_block *root, const char *name) {
    size_t n = gf_config_section_count(root, "Clump");
    for (size_t k = 0; k < n; ++k) {
        char have[CLUMP_NAME];
        gf_config_block *b = gf_config_section_nth(root, "Clump", k);
        if (gf_config_get_string(b, "name", "", have, sizeof have) == GF_OK &&
            strcmp(have, name) == 0)
            return (int32_t)k;
    }
    return -1;
}

gf_status gf_bodies_read_shape(gf_config_block *b, gf_config_block *root, const gf_clumps *clumps,
                               const char *def, gf_shape *s) {
    char kind[32], where[512];
    const char *block = gf_config_block_name(b);
    gf_config_block_where(b, where, sizeof where);
    if (def)
        GF_TRY(gf_config_get_string(b, "shape", def, kind, sizeof kind));
    else
        GF_TRY(gf_config_require_string(b, "shape", kind, sizeof kind));
    int type = gf_shape_type_from_name(kind);
    double r = 0.0, h = 0.0, ext[3];
    switch (type) {
    case GF_SHAPE_SPHERE:
        GF_TRY(gf_config_require_double(b, "radius", &r));
        *s = gf_shape_sphere(r);
        break;
    case GF_SHAPE_BOX:
        GF_TRY(gf_config_require_vec3(b, "half_extents", ext));
        *s = gf_shape_box(ext[0], ext[1], ext[2]);
        break;
    case GF_SHAPE_CAPSULE:
    case GF_SHAPE_CYLINDER:
        GF_TRY(gf_config_require_double(b, "radius", &r));
        GF_TRY(gf_config_require_double(b, "half_length", &h));
        *s = type == GF_SHAPE_CAPSULE ? gf_shape_capsule(r, h) : gf_shape_cylinder(r, h);
        break;
    case GF_SHAPE_CLUMP: {
        char name[CLUMP_NAME];
        double scale = 1.0;
        GF_TRY(gf_config_require_string(b, "clump", name, sizeof name));
        GF_TRY(gf_config_get_double(b, "scale", 1.0, &scale));
        int32_t index = gf_bodies_clump_index(root, name);
        if (index < 0)
            return GF_ERROR(GF_ERR_INPUT, "%s: %s.clump '%s' names no Clump block", where, block,
                            name);
        *s = gf_shape_clump(index, scale);
        break;
    }
    default:
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: %s.shape '%s' is not one of sphere, box, capsule, cylinder, clump",
                        where, block, kind);
    }
    return gf_error_context(gf_shape_check(s, clumps), "%s: %s", where, block);
}
