#include "granflow/scenario.h"

#include <stdio.h>
#include <string.h>

#include "granflow/rng.h"

gf_status gf_lattice_configure(gf_lattice *l, gf_config_block *root, const gf_materials *m,
                               const double lo[3], const double hi[3]) {
    memset(l, 0, sizeof *l);
    if (gf_config_section_count(root, "Lattice") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Lattice");
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    l->enabled = 1;
    double count[3], zero[3] = {0.0, 0.0, 0.0};
    GF_TRY(gf_config_require_vec3(b, "count", count));
    for (int d = 0; d < 3; ++d) {
        if (count[d] < 1.0 || count[d] > 1e7 || count[d] != (double)(long)count[d])
            return GF_ERROR(GF_ERR_INPUT, "%s: Lattice.count must hold whole numbers in [1, 1e7]",
                            where);
        l->count[d] = (long)count[d];
    }
    GF_TRY(gf_config_require_double(b, "radius", &l->radius));
    GF_TRY(gf_config_check_range(b, "radius", l->radius, 1e-300, 1e300));
    GF_TRY(gf_config_get_double(b, "spacing", 2.0 * l->radius, &l->spacing));
    if (l->spacing < 2.0 * l->radius)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Lattice.spacing %g is below the diameter %g: the spheres would "
                        "start overlapping",
                        where, l->spacing, 2.0 * l->radius);
    double origin_def[3] = {lo[0] + l->spacing, lo[1] + l->spacing, lo[2] + l->spacing};
    GF_TRY(gf_config_get_vec3(b, "origin", origin_def, l->origin));
    GF_TRY(gf_materials_lookup(m, b, "material", &l->material));
    GF_TRY(gf_config_get_vec3(b, "velocity", zero, l->velocity));
    GF_TRY(gf_config_get_double(b, "velocity_spread", 0.0, &l->spread));
    GF_TRY(gf_config_check_range(b, "velocity_spread", l->spread, 0.0, 1e300));
    long seed = 0;
    GF_TRY(gf_config_get_long(b, "seed", 1, &seed));
    l->seed = (uint64_t)seed;
    for (int d = 0; d < 3; ++d) {
        double first = l->origin[d] - l->radius;
        double last = l->origin[d] + (double)(l->count[d] - 1) * l->spacing + l->radius;
        if (first < lo[d] || last > hi[d])
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: the lattice spans [%g, %g] along %c, outside the domain [%g, %g]",
                            where, first, last, "xyz"[d], lo[d], hi[d]);
    }
    return GF_OK;
}

int64_t gf_lattice_size(const gf_lattice *l) {
    return l->enabled ? (int64_t)l->count[0] * l->count[1] * l->count[2] : 0;
}

gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_decomp *decomp,
                              gf_particles *p) {
    if (!l->enabled)
        return GF_OK;
    for (long k = 0; k < l->count[2]; ++k)
        for (long j = 0; j < l->count[1]; ++j)
            for (long i = 0; i < l->count[0]; ++i) {
                double x[3] = {l->origin[0] + (double)i * l->spacing,
                               l->origin[1] + (double)j * l->spacing,
                               l->origin[2] + (double)k * l->spacing};
                if (decomp && !gf_decomp_owns(decomp, x))
                    continue;
                int64_t index = (k * l->count[1] + j) * l->count[0] + i;
                gf_particle rec;
                gf_particle_make_sphere(&rec, l->first_id + index, x, l->radius,
                                        m->density[l->material], l->material);
                for (int d = 0; d < 3; ++d)
                    rec.v[d] =
                        l->velocity[d] +
                        l->spread *
                            (2.0 * gf_rng_uniform(l->seed, (uint64_t)d, (uint64_t)index) - 1.0);
                GF_TRY(gf_particles_add(p, &rec));
            }
    return GF_OK;
}
