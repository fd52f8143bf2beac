#include "granflow/geometry.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "granflow/vec.h"

void gf_walls_init(gf_walls *w) {
    memset(w, 0, sizeof *w);
}

gf_status gf_walls_add(gf_walls *w, const double point[3], const double normal[3],
                       const double velocity[3], int material) {
    if (w->count >= GF_MAX_WALLS)
        return GF_ERROR(GF_ERR_INPUT, "at most %d walls are supported", GF_MAX_WALLS);
    double len = gf_norm(normal);
    if (!(len > 0.0) || !isfinite(len))
        return GF_ERROR(GF_ERR_INPUT, "a wall normal must be a non-zero finite vector");
    size_t k = w->count++;
    for (int d = 0; d < 3; ++d) {
        w->point[k][d] = point[d];
        w->normal[k][d] = normal[d] / len;
        w->velocity[k][d] = velocity ? velocity[d] : 0.0;
    }
    w->material[k] = material;
    return GF_OK;
}

double gf_walls_distance(const gf_walls *w, size_t k, const double x[3]) {
    return (x[0] - w->point[k][0]) * w->normal[k][0] + (x[1] - w->point[k][1]) * w->normal[k][1] +
           (x[2] - w->point[k][2]) * w->normal[k][2];
}

void gf_walls_advance(gf_walls *w, double dt) {
    for (size_t k = 0; k < w->count; ++k)
        for (int d = 0; d < 3; ++d)
            w->point[k][d] += dt * w->velocity[k][d];
}

gf_status gf_geometry_configure(gf_walls *w, double lo[3], double hi[3], int periodic[3],
                                gf_config_block *root, const gf_materials *m) {
    gf_walls_init(w);
    gf_config_block *db = gf_config_section(root, "Domain");
    if (!db)
        return gf_error_status();
    GF_TRY(gf_config_require_vec3(db, "min", lo));
    GF_TRY(gf_config_require_vec3(db, "max", hi));
    for (int d = 0; d < 3; ++d)
        if (!(hi[d] > lo[d])) {
            char where[512];
            return GF_ERROR(GF_ERR_INPUT, "%s: Domain.max must exceed Domain.min on every axis",
                            gf_config_block_where(db, where, sizeof where));
        }
    static const double zero[3] = {0.0, 0.0, 0.0};
    double per[3];
    GF_TRY(gf_config_get_vec3(db, "periodic", zero, per));
    for (int d = 0; d < 3; ++d) {
        if (per[d] != 0.0 && per[d] != 1.0) {
            char where[512];
            return GF_ERROR(GF_ERR_INPUT, "%s: Domain.periodic takes 0 or 1 per axis",
                            gf_config_block_where(db, where, sizeof where));
        }
        periodic[d] = per[d] == 1.0;
    }
    int box = 1, mat = 0;
    GF_TRY(gf_config_get_bool(db, "box_walls", 1, &box));
    GF_TRY(gf_materials_lookup(m, db, "wall_material", &mat));
    if (box) {
        for (int d = 0; d < 3; ++d) {
            if (periodic[d])
                continue;
            double n[3] = {0.0, 0.0, 0.0};
            n[d] = 1.0;
            GF_TRY(gf_walls_add(w, lo, n, NULL, mat));
            n[d] = -1.0;
            GF_TRY(gf_walls_add(w, hi, n, NULL, mat));
        }
    }
    size_t nw = gf_config_section_count(db, "Wall");
    for (size_t k = 0; k < nw; ++k) {
        gf_config_block *b = gf_config_section_nth(db, "Wall", k);
        double p[3], n[3], v[3];
        int wm;
        GF_TRY(gf_config_require_vec3(b, "point", p));
        GF_TRY(gf_config_require_vec3(b, "normal", n));
        GF_TRY(gf_config_get_vec3(b, "velocity", zero, v));
        GF_TRY(gf_materials_lookup(m, b, "material", &wm));
        if (gf_walls_add(w, p, n, v, wm) != GF_OK) {
            char where[512], msg[1024];
            snprintf(msg, sizeof msg, "%s", gf_error_message());
            return GF_ERROR(GF_ERR_INPUT, "%s: %s", gf_config_block_where(b, where, sizeof where),
                            msg);
        }
    }
    return GF_OK;
}
