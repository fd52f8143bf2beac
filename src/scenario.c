#include "granflow/scenario.h"

#include <stdio.h>
#include <string.h>

#include "granflow/rng.h"
#include <math.h>

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
    GF_TRY(gf_config_get_vec3(b, "spread", zero, l->spread));
    for (int d = 0; d < 3; ++d)
        if (!(l->spread[d] >= 0.0))
            return GF_ERROR(GF_ERR_INPUT, "%s: Lattice.spread must not be negative", where);
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

/* Visits the lattice positions clear of obstacles. */
#define FOR_LATTICE(l, w, x, index, BODY)                                                          \
    do {                                                                                           \
        gf_walls obstacles_ = *(w);                                                                \
        obstacles_.count = 0; /* the domain walls bound the lattice by construction */             \
        for (long k_ = 0; k_ < (l)->count[2]; ++k_)                                                \
            for (long j_ = 0; j_ < (l)->count[1]; ++j_)                                            \
                for (long i_ = 0; i_ < (l)->count[0]; ++i_) {                                      \
                    double x[3] = {(l)->origin[0] + (double)i_ * (l)->spacing,                     \
                                   (l)->origin[1] + (double)j_ * (l)->spacing,                     \
                                   (l)->origin[2] + (double)k_ * (l)->spacing};                    \
                    int64_t index = (k_ * (l)->count[1] + j_) * (l)->count[0] + i_;                \
                    if (gf_walls_overlap(&obstacles_, x, (l)->radius))                             \
                        continue;                                                                  \
                    BODY                                                                           \
                }                                                                                  \
    } while (0)

void gf_lattice_count_owners(const gf_lattice *l, const gf_walls *w, const gf_decomp *decomp,
                             int64_t *counts) {
    if (!l->enabled)
        return;
    FOR_LATTICE(l, w, x, index, {
        (void)index;
        counts[gf_decomp_owner(decomp, x)]++;
    });
}

gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                              const gf_decomp *decomp, gf_particles *p, int64_t *skipped) {
    *skipped = 0;
    if (!l->enabled)
        return GF_OK;
    int64_t kept = 0;
    gf_status st = GF_OK;
    FOR_LATTICE(l, w, x, index, {
        kept++;
        if (st != GF_OK || (decomp && !gf_decomp_owns(decomp, x)))
            continue;
        gf_particle rec;
        gf_particle_make_sphere(&rec, l->first_id + index, x, l->radius, m->density[l->material],
                                l->material);
        for (int d = 0; d < 3; ++d)
            rec.v[d] =
                l->velocity[d] +
                l->spread[d] * (2.0 * gf_rng_uniform(l->seed, (uint64_t)d, (uint64_t)index) - 1.0);
        st = gf_particles_add(p, &rec);
    });
    *skipped = gf_lattice_size(l) - kept;
    return st;
}

gf_status gf_inflow_configure(gf_inflow *in, gf_config_block *root, const gf_materials *m,
                              gf_walls *w, const double lo[3], const double hi[3]) {
    memset(in, 0, sizeof *in);
    if (gf_config_section_count(root, "Inflow") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Inflow");
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    in->enabled = 1;
    GF_TRY(gf_config_get_double(b, "position", lo[0], &in->position));
    GF_TRY(gf_config_get_double(b, "speed", 1.0, &in->speed));
    GF_TRY(gf_config_check_range(b, "speed", in->speed, 1e-12, 1e6));
    GF_TRY(gf_config_require_double(b, "radius", &in->radius));
    GF_TRY(gf_config_check_range(b, "radius", in->radius, 1e-300, 1e300));
    GF_TRY(gf_config_get_double(b, "reset_distance", 2.0 * in->radius, &in->reset_distance));
    GF_TRY(gf_config_check_range(b, "reset_distance", in->reset_distance, 1e-300, 1e300));
    GF_TRY(gf_config_get_double(b, "spacing", 2.0 * in->radius, &in->spacing));
    if (in->spacing < 2.0 * in->radius)
        return GF_ERROR(GF_ERR_INPUT, "%s: Inflow.spacing %g is below the diameter %g", where,
                        in->spacing, 2.0 * in->radius);
    GF_TRY(gf_materials_lookup(m, b, "material", &in->material));
    const double vdef[3] = {in->speed, 0.0, 0.0}, zero[3] = {0.0, 0.0, 0.0};
    GF_TRY(gf_config_get_vec3(b, "particle_velocity", vdef, in->velocity));
    GF_TRY(gf_config_get_vec3(b, "spread", zero, in->spread));
    long seed;
    GF_TRY(gf_config_get_long(b, "seed", 1, &seed));
    in->seed = (uint64_t)seed;
    for (int a = 0; a < 2; ++a) {
        in->lo[a] = lo[a + 1];
        in->hi[a] = hi[a + 1];
    }
    in->ny = (long)floor((in->hi[0] - in->lo[0]) / in->spacing);
    in->nz = (long)floor((in->hi[1] - in->lo[1]) / in->spacing);
    if (in->ny < 1 || in->nz < 1)
        return GF_ERROR(GF_ERR_INPUT, "%s: no inflow grid point fits in the channel cross-section",
                        where);
    if (in->position < lo[0] || in->position + in->reset_distance + 2.0 * in->radius > hi[0])
        return GF_ERROR(GF_ERR_INPUT, "%s: the inflow piston at x = %g lies outside the domain",
                        where, in->position);
    const double point[3] = {in->position, 0.0, 0.0}, normal[3] = {1.0, 0.0, 0.0},
                 vel[3] = {in->speed, 0.0, 0.0};
    in->wall = (int)w->count;
    GF_TRY(gf_walls_add(w, point, normal, vel, in->material));
    /* Grid points clear of the obstacles: a fixed count per layer. */
    gf_walls obstacles = *w;
    obstacles.count = 0; /* planes are accounted for by the grid itself */
    for (long j = 0; j < in->ny; ++j)
        for (long k = 0; k < in->nz; ++k) {
            double x[3] = {in->position + in->radius, in->lo[0] + (j + 0.5) * in->spacing,
                           in->lo[1] + (k + 0.5) * in->spacing};
            in->per_layer += !gf_walls_overlap(&obstacles, x, in->radius);
        }
    return GF_OK;
}

void gf_inflow_count_owners(const gf_inflow *in, const gf_walls *w, const gf_decomp *decomp,
                            int64_t *counts) {
    if (!in->enabled)
        return;
    gf_walls obstacles = *w;
    obstacles.count = 0;
    for (long j = 0; j < in->ny; ++j)
        for (long k = 0; k < in->nz; ++k) {
            double x[3] = {in->position + in->radius, in->lo[0] + (j + 0.5) * in->spacing,
                           in->lo[1] + (k + 0.5) * in->spacing};
            if (!gf_walls_overlap(&obstacles, x, in->radius))
                counts[gf_decomp_owner(decomp, x)]++;
        }
}

gf_status gf_inflow_advance(gf_inflow *in, gf_walls *w, double dt, const gf_decomp *decomp,
                            const gf_materials *m, gf_particles *p, int64_t *next_id,
                            int64_t *created) {
    *created = 0;
    if (!in->enabled)
        return GF_OK;
    in->moved += in->speed * dt;
    /* Rounding of the sum must not delay a reset by a whole step. */
    if (in->moved < in->reset_distance * (1.0 - 1e-9))
        return GF_OK;
    in->moved = 0.0;
    w->point[in->wall][0] = in->position;
    gf_walls obstacles = *w;
    obstacles.count = 0;
    int64_t base = *next_id;
    for (long j = 0; j < in->ny; ++j)
        for (long k = 0; k < in->nz; ++k) {
            double x[3] = {in->position + in->radius, in->lo[0] + (j + 0.5) * in->spacing,
                           in->lo[1] + (k + 0.5) * in->spacing};
            if (gf_walls_overlap(&obstacles, x, in->radius))
                continue;
            int64_t index = j * in->nz + k;
            if (decomp && !gf_decomp_owns(decomp, x))
                continue;
            gf_particle rec;
            gf_particle_make_sphere(&rec, base + index, x, in->radius, m->density[in->material],
                                    in->material);
            for (int d = 0; d < 3; ++d)
                rec.v[d] =
                    in->velocity[d] +
                    in->spread[d] * (2.0 * gf_rng_uniform(in->seed, (uint64_t)(3 * in->layers + d),
                                                          (uint64_t)index) -
                                     1.0);
            GF_TRY(gf_particles_add(p, &rec));
        }
    *next_id = base + in->ny * in->nz;
    *created = in->per_layer;
    in->layers++;
    return GF_OK;
}

gf_status gf_outflow_configure(gf_outflow *out, gf_config_block *root) {
    memset(out, 0, sizeof *out);
    if (gf_config_section_count(root, "Outflow") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Outflow");
    out->enabled = 1;
    return gf_config_require_double(b, "position", &out->position);
}

void gf_outflow_apply(const gf_outflow *out, gf_particles *p, int64_t *deleted, double *mass) {
    if (!out->enabled)
        return;
    for (size_t i = 0; i < p->n_local;) {
        if (p->x[0][i] > out->position) {
            if (p->inv_mass[i] > 0.0)
                *mass += 1.0 / p->inv_mass[i];
            (*deleted)++;
            gf_particles_remove(p, i); /* the last one moves into slot i: look at it next */
        } else {
            ++i;
        }
    }
}
