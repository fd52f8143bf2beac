#include "scenario/scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"
#include "scenario/bodies.h"
#include "core/rng.h"

/* The random sequence of a generator's particle draws, apart from its velocity streams. */
static uint64_t mix_key(uint64_t seed, uint64_t layer) {
    return gf_rng_bits(seed, 0x6d69785f6b6579ULL, layer);
}

gf_status gf_lattice_configure(gf_lattice *l, gf_config_block *root, const gf_materials *m,
                               const gf_clumps *clumps, const double lo[3], const double hi[3],
                               const int periodic[3]) {
    memset(l, 0, sizeof *l);
    l->clumps = clumps;
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
    double total = count[0] * count[1] * count[2];
    if (total > GF_LATTICE_MAX)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Lattice.count %.0f x %.0f x %.0f is %.3g particles, more than "
                        "granflow places in one lattice (%.0e)",
                        where, count[0], count[1], count[2], total, GF_LATTICE_MAX);
    GF_TRY(gf_materials_lookup(m, b, "material", &l->material));
    GF_TRY(gf_shape_mix_configure(&l->mix, b, root, m, clumps, l->material));
    l->radius = l->mix.reach;
    double min_spacing = gf_shape_mix_min_spacing(&l->mix);
    GF_TRY(gf_config_get_double(b, "spacing", min_spacing, &l->spacing));
    if (l->spacing < min_spacing)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Lattice.spacing %g is below %s %g: the particles would start "
                        "overlapping",
                        where, l->spacing,
                        gf_shape_mix_is_uniform_spheres(&l->mix) ? "the diameter"
                        : l->mix.random_orientation
                            ? "the largest bounding diameter (random orientations)"
                            : "twice the largest half extent along an axis",
                        min_spacing);
    double origin_def[3] = {lo[0] + l->spacing, lo[1] + l->spacing, lo[2] + l->spacing};
    GF_TRY(gf_config_get_vec3(b, "origin", origin_def, l->origin));
    char motion[32];
    GF_TRY(gf_config_get_string(b, "motion", "dynamic", motion, sizeof motion));
    l->fixed = strcmp(motion, "fixed") == 0;
    if (!l->fixed && strcmp(motion, "dynamic") != 0)
        return GF_ERROR(GF_ERR_INPUT, "%s: Lattice.motion '%s' is not one of dynamic, fixed", where,
                        motion);
    GF_TRY(gf_config_get_vec3(b, "velocity", zero, l->velocity));
    GF_TRY(gf_config_get_vec3(b, "spread", zero, l->spread));
    for (int d = 0; d < 3; ++d)
        if (!(l->spread[d] >= 0.0))
            return GF_ERROR(GF_ERR_INPUT, "%s: Lattice.spread must not be negative", where);
    long seed = 0;
    GF_TRY(gf_config_get_long(b, "seed", 1, &seed));
    l->seed = (uint64_t)seed;
    for (int d = 0; d < 3; ++d) {
        /* How far a particle reaches from its site along d, whatever is drawn. */
        double e = l->mix.random_orientation ? l->mix.reach : l->mix.half_extent[d];
        double first = l->origin[d], last = l->origin[d] + (double)(l->count[d] - 1) * l->spacing;
        double tol = gf_touch_tolerance(fabs(lo[d]) + fabs(hi[d]) + fabs(first) + fabs(last) + e);
        if (periodic[d]) {
            /* Particles may cross the periodic faces; their centres are kept in [lo, hi) so that
             * each has one owner, and the last must clear the first one's image. */
            if (first < lo[d] || last >= hi[d])
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: the lattice sites span [%g, %g] along %c, outside the "
                                "periodic domain [%g, %g)",
                                where, first, last, "xyz"[d], lo[d], hi[d]);
            if (first + (hi[d] - lo[d]) - last < 2.0 * e - tol)
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: along the periodic axis %c the lattice's last particle (at "
                                "%g) overlaps the periodic image of its first (at %g): %ld sites "
                                "at spacing %g need a period of at least %g, the domain's is %g",
                                where, "xyz"[d], last, first + (hi[d] - lo[d]), l->count[d],
                                l->spacing, last - first + 2.0 * e, hi[d] - lo[d]);
            continue;
        }
        if (first - e < lo[d] - tol || last + e > hi[d] + tol)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: the lattice spans [%g, %g] along %c, outside the domain [%g, %g]",
                            where, first - e, last + e, "xyz"[d], lo[d], hi[d]);
    }
    return GF_OK;
}

int64_t gf_lattice_size(const gf_lattice *l) {
    return l->enabled ? (int64_t)l->count[0] * l->count[1] * l->count[2] : 0;
}

/* The particle drawn for a generator's grid point at x (id, velocity unset). */
static void draw_particle(const gf_shape_mix *mix, const gf_clumps *clumps, const gf_materials *m,
                          uint64_t key, uint64_t index, const double x[3], gf_particle *rec) {
    gf_shape shape;
    int32_t mat;
    double q[4];
    gf_shape_mix_draw(mix, key, index, &shape, &mat, q);
    gf_particle_make(rec, 0, x, &shape, clumps, m->density[mat], mat);
    memcpy(rec->q, q, sizeof rec->q);
}

/* Whether the site at x is blocked by a wall or an obstacle. Only a site the largest particle of
 * the mixture could reach from there needs its particle: then it is drawn into rec (*drawn 1),
 * so that the interior sites of a large lattice, which every rank visits, cost no draw. */
static int site_blocked(const gf_lattice *l, const gf_materials *m, const gf_walls *w, uint64_t key,
                        int64_t index, const double x[3], gf_particle *rec, int *drawn) {
    *drawn = 0;
    if (!gf_walls_overlap(w, x, l->radius))
        return 0;
    draw_particle(&l->mix, l->clumps, m, key, (uint64_t)index, x, rec);
    *drawn = 1;
    return gf_bodies_blocked(w, rec, l->clumps);
}

/* Visits the lattice sites clear of walls and obstacles (the domain's walls only touch the
 * lattice at most: gf_lattice_configure keeps it inside): their position x and index; `rec` is
 * their particle where `drawn` says so (see site_blocked). */
#define FOR_LATTICE(l, m, w, key, x, index, rec, drawn, BODY)                                      \
    do {                                                                                           \
        for (long k_ = 0; k_ < (l)->count[2]; ++k_)                                                \
            for (long j_ = 0; j_ < (l)->count[1]; ++j_)                                            \
                for (long i_ = 0; i_ < (l)->count[0]; ++i_) {                                      \
                    const double x[3] = {(l)->origin[0] + (double)i_ * (l)->spacing,               \
                                         (l)->origin[1] + (double)j_ * (l)->spacing,               \
                                         (l)->origin[2] + (double)k_ * (l)->spacing};              \
                    int64_t index = (k_ * (l)->count[1] + j_) * (l)->count[0] + i_;                \
                    gf_particle rec;                                                               \
                    int drawn;                                                                     \
                    if (site_blocked((l), (m), (w), (key), index, x, &rec, &drawn))                \
                        continue;                                                                  \
                    BODY                                                                           \
                }                                                                                  \
    } while (0)

/* A large lattice's sites per owner without visiting them: the cuts are planes normal to the
 * axes, so a site's cell along an axis depends on its coordinate there alone. The sites of each
 * axis are counted per cell, and each cell of the decomposition holds the product of its three
 * counts. Sites in walls and obstacles count too. */
static gf_status count_owners_by_axis(const gf_lattice *l, const gf_decomp *decomp,
                                      int64_t *counts) {
    int64_t *per[3] = {NULL, NULL, NULL};
    for (int a = 0; a < 3; ++a) {
        per[a] = gf_calloc((size_t)decomp->dims[a], sizeof *per[a]);
        if (!per[a]) {
            for (int b = 0; b < a; ++b)
                free(per[b]);
            return gf_error_status();
        }
        for (long i = 0; i < l->count[a]; ++i)
            per[a][gf_decomp_coord(decomp, a, l->origin[a] + (double)i * l->spacing)]++;
    }
    for (int z = 0; z < decomp->dims[2]; ++z)
        for (int y = 0; y < decomp->dims[1]; ++y)
            for (int x = 0; x < decomp->dims[0]; ++x)
                counts[decomp->rank_of[(z * decomp->dims[1] + y) * decomp->dims[0] + x]] +=
                    per[0][x] * per[1][y] * per[2][z];
    for (int a = 0; a < 3; ++a)
        free(per[a]);
    return GF_OK;
}

gf_status gf_lattice_count_owners(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                                  const gf_decomp *decomp, int64_t *counts, int *bound) {
    *bound = 0;
    if (!l->enabled)
        return GF_OK;
    if ((double)gf_lattice_size(l) > GF_LATTICE_VISIT) {
        *bound = 1;
        return count_owners_by_axis(l, decomp, counts);
    }
    const uint64_t key = mix_key(l->seed, 0);
    FOR_LATTICE(l, m, w, key, x, index, rec, drawn, {
        (void)index;
        (void)drawn;
        counts[gf_decomp_owner(decomp, x)]++;
    });
    return GF_OK;
}

gf_status gf_lattice_generate(const gf_lattice *l, const gf_materials *m, const gf_walls *w,
                              const gf_decomp *decomp, gf_particles *p, int64_t *skipped) {
    *skipped = 0;
    if (!l->enabled)
        return GF_OK;
    int64_t kept = 0;
    gf_status st = GF_OK;
    const uint64_t key = mix_key(l->seed, 0);
    FOR_LATTICE(l, m, w, key, x, index, rec, drawn, {
        kept++;
        if (st != GF_OK || (decomp && !gf_decomp_owns(decomp, x)))
            continue;
        if (!drawn)
            draw_particle(&l->mix, l->clumps, m, key, (uint64_t)index, x, &rec);
        rec.id = l->first_id + index;
        for (int d = 0; d < 3; ++d)
            rec.v[d] =
                l->velocity[d] +
                l->spread[d] * (2.0 * gf_rng_uniform(l->seed, (uint64_t)d, (uint64_t)index) - 1.0);
        if (l->fixed) {
            /* Infinite mass at rest, like Body motion fixed: nothing moves it. */
            rec.inv_mass = 0.0;
            for (int d = 0; d < 3; ++d)
                rec.inv_inertia[d] = rec.v[d] = rec.w[d] = 0.0;
        }
        st = gf_particles_add(p, &rec);
    });
    *skipped = gf_lattice_size(l) - kept;
    return st;
}

gf_status gf_inflow_configure(gf_inflow *in, gf_config_block *root, const gf_materials *m,
                              const gf_clumps *clumps, gf_walls *w, const double lo[3],
                              const double hi[3]) {
    memset(in, 0, sizeof *in);
    in->clumps = clumps;
    if (gf_config_section_count(root, "Inflow") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Inflow");
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    in->enabled = 1;
    GF_TRY(gf_config_get_double(b, "position", lo[0], &in->position));
    GF_TRY(gf_config_get_double(b, "speed", 1.0, &in->speed));
    GF_TRY(gf_config_check_range(b, "speed", in->speed, 1e-12, 1e6));
    GF_TRY(gf_materials_lookup(m, b, "material", &in->material));
    GF_TRY(gf_shape_mix_configure(&in->mix, b, root, m, clumps, in->material));
    in->radius = in->mix.reach;
    in->front = in->mix.random_orientation ? in->mix.reach : in->mix.half_extent[0];
    const int spheres = gf_shape_mix_is_uniform_spheres(&in->mix);
    GF_TRY(gf_config_get_double(b, "reset_distance", 2.0 * in->front, &in->reset_distance));
    GF_TRY(gf_config_check_range(b, "reset_distance", in->reset_distance, 1e-300, 1e300));
    /* The piston keeps the particles in front of it, so after a reset the previous layer is at
     * least reset_distance ahead of the new one: less than their extent along x puts particles
     * into particles. */
    if (in->reset_distance < 2.0 * in->front * (1.0 - 1e-12))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Inflow.reset_distance %g is below %s %g of the inflow particles: each "
                        "new layer would overlap the previous one by up to %g (%.0f%% of %g); use "
                        "at least %g",
                        where, in->reset_distance, spheres ? "the diameter" : "the extent along x",
                        2.0 * in->front, 2.0 * in->front - in->reset_distance,
                        100.0 * (2.0 * in->front - in->reset_distance) / in->front, in->front,
                        2.0 * in->front);
    double min_spacing = gf_shape_mix_min_spacing(&in->mix);
    GF_TRY(gf_config_get_double(b, "spacing", min_spacing, &in->spacing));
    if (in->spacing < min_spacing)
        return GF_ERROR(GF_ERR_INPUT, "%s: Inflow.spacing %g is below %s %g", where, in->spacing,
                        spheres ? "the diameter" : "the particles' extent", min_spacing);
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
    /* In double first: a tiny spacing would overflow the counts. */
    double ny = floor((in->hi[0] - in->lo[0]) / in->spacing),
           nz = floor((in->hi[1] - in->lo[1]) / in->spacing);
    if (ny * nz > GF_INFLOW_LAYER_MAX)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: the inflow grid would hold %.0f x %.0f = %.3g particles per layer, "
                        "more than granflow places (%.0e): is Inflow.spacing or radius a typo?",
                        where, ny, nz, ny * nz, GF_INFLOW_LAYER_MAX);
    in->ny = (long)ny;
    in->nz = (long)nz;
    if (in->ny < 1 || in->nz < 1)
        return GF_ERROR(GF_ERR_INPUT, "%s: no inflow grid point fits in the channel cross-section",
                        where);
    if (in->position < lo[0] || in->position + in->reset_distance + 2.0 * in->front > hi[0])
        return GF_ERROR(GF_ERR_INPUT, "%s: the inflow piston at x = %g lies outside the domain",
                        where, in->position);
    const double point[3] = {in->position, 0.0, 0.0}, normal[3] = {1.0, 0.0, 0.0},
                 vel[3] = {in->speed, 0.0, 0.0};
    in->wall = (int)w->count;
    GF_TRY(gf_walls_add(w, point, normal, vel, in->material));
    /* Grid points clear of the obstacles, for any particle drawn there (bounding spheres): a
     * fixed count per layer. */
    gf_walls obstacles = *w;
    obstacles.count = 0; /* planes are accounted for by the grid itself */
    for (long j = 0; j < in->ny; ++j)
        for (long k = 0; k < in->nz; ++k) {
            double x[3] = {in->position + in->front, in->lo[0] + (j + 0.5) * in->spacing,
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
            double x[3] = {in->position + in->front, in->lo[0] + (j + 0.5) * in->spacing,
                           in->lo[1] + (k + 0.5) * in->spacing};
            if (!gf_walls_overlap(&obstacles, x, in->radius))
                counts[gf_decomp_owner(decomp, x)]++;
        }
}

/* The centre of grid point (j, k) of a new layer. */
static void grid_point(const gf_inflow *in, long j, long k, double x[3]) {
    x[0] = in->position + in->front;
    x[1] = in->lo[0] + (j + 0.5) * in->spacing;
    x[2] = in->lo[1] + (k + 0.5) * in->spacing;
}

/* Whether particle i, shifted by `shift`, overlaps the particle of the new layer at grid point
 * (j, k) by more than GF_INFLOW_OVERLAP inflow radii; the bounding spheres have been found to do
 * so. Spheres are decided by their distance, other shapes exactly. */
static int occupies(const gf_inflow *in, const gf_particles *p, size_t i, const double shift[3],
                    long j, long k, const gf_materials *m, uint64_t key) {
    const int32_t si = p->shape[i];
    if (si == GF_SHAPE_SPHERE && gf_shape_mix_is_uniform_spheres(&in->mix))
        return 1;
    double x[3];
    grid_point(in, j, k, x);
    gf_particle rec;
    draw_particle(&in->mix, in->clumps, m, key, (uint64_t)(j * in->nz + k), x, &rec);
    gf_shape sa = gf_particles_shape(p, i);
    gf_body_pose a,
        b = {&rec.shape, in->clumps, {x[0], x[1], x[2]}, {rec.q[0], rec.q[1], rec.q[2], rec.q[3]}};
    gf_particles_pose(p, i, &sa, &a);
    for (int c = 0; c < 3; ++c)
        a.x[c] += shift[c];
    double depth;
    if (gf_collide_overlap(&a, &b, &depth) != GF_OK) {
        gf_error_clear(); /* undecided: leave the point empty */
        return 1;
    }
    return depth > GF_INFLOW_OVERLAP * in->radius;
}

/* Marks in occ[j * nz + k] the grid points of the new layer that particle i overlaps by more
 * than GF_INFLOW_OVERLAP radii, its periodic images included. */
static void mark_occupied(const gf_inflow *in, const gf_decomp *decomp, const gf_particles *p,
                          size_t i, const gf_materials *m, uint64_t key, int64_t *occ) {
    const double gx = in->position + in->front;
    const double reach = p->radius[i] + in->radius, need = reach - GF_INFLOW_OVERLAP * in->radius;
    double shift[3][3];
    int nshift[3];
    for (int a = 0; a < 3; ++a) {
        shift[a][0] = 0.0;
        nshift[a] = 1;
        if (decomp && decomp->periodic[a]) {
            double L = decomp->hi[a] - decomp->lo[a];
            shift[a][1] = -L;
            shift[a][2] = L;
            nshift[a] = 3;
        }
    }
    for (int sa = 0; sa < nshift[0]; ++sa) {
        double dx = p->x[0][i] + shift[0][sa] - gx;
        if (fabs(dx) >= need)
            continue;
        for (int sb = 0; sb < nshift[1]; ++sb)
            for (int sc = 0; sc < nshift[2]; ++sc) {
                double y = p->x[1][i] + shift[1][sb], z = p->x[2][i] + shift[2][sc];
                /* Grid points (j + 0.5) spacing from the layer's corner within `need`
                 * (clamped as doubles: a far particle must not overflow the conversion). */
                double j0 = fmax(0.0, ceil((y - need - in->lo[0]) / in->spacing - 0.5));
                double j1 = fmin(in->ny - 1.0, floor((y + need - in->lo[0]) / in->spacing - 0.5));
                double k0 = fmax(0.0, ceil((z - need - in->lo[1]) / in->spacing - 0.5));
                double k1 = fmin(in->nz - 1.0, floor((z + need - in->lo[1]) / in->spacing - 0.5));
                if (!(j0 <= j1 && k0 <= k1))
                    continue;
                const double s[3] = {shift[0][sa], shift[1][sb], shift[2][sc]};
                for (long j = (long)j0; j <= (long)j1; ++j)
                    for (long k = (long)k0; k <= (long)k1; ++k) {
                        double dy = y - (in->lo[0] + (j + 0.5) * in->spacing);
                        double dz = z - (in->lo[1] + (k + 0.5) * in->spacing);
                        if (!occ[j * in->nz + k] && dx * dx + dy * dy + dz * dz < need * need &&
                            occupies(in, p, i, s, j, k, m, key))
                            occ[j * in->nz + k] = 1;
                    }
            }
    }
}

gf_status gf_inflow_advance(gf_inflow *in, gf_walls *w, double dt, const gf_decomp *decomp,
                            const gf_par *par, const gf_materials *m, gf_particles *p,
                            int64_t *next_id, int64_t *created) {
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
    const uint64_t key = mix_key(in->seed, (uint64_t)in->layers + 1);
    /* Occupied grid points: each rank marks those its own particles overlap, and the union
     * over ranks (a particle may overlap a point another rank owns) decides on every rank
     * alike, whatever the decomposition. */
    size_t npts = (size_t)(in->ny * in->nz);
    int64_t *occ = gf_calloc(npts, sizeof *occ);
    if (!occ)
        return gf_error_status();
    for (size_t i = 0; i < p->n_local; ++i)
        mark_occupied(in, decomp, p, i, m, key, occ);
    /* Points the obstacles block, by the rank whose region holds them: under MPI each rank
     * keeps only the mesh triangles near its subdomain. */
    for (long j = 0; j < in->ny; ++j)
        for (long k = 0; k < in->nz; ++k) {
            double x[3];
            grid_point(in, j, k, x);
            if ((!par || !decomp || gf_walls_region_owner(decomp, x) == decomp->rank) &&
                gf_walls_overlap(&obstacles, x, in->radius))
                occ[j * in->nz + k] = 1;
        }
    gf_status st = GF_OK;
    if (par)
        st = gf_par_allreduce_i64(par, occ, (int)npts, GF_PAR_MAX);
    int64_t base = *next_id, made = 0;
    for (long j = 0; j < in->ny && st == GF_OK; ++j)
        for (long k = 0; k < in->nz && st == GF_OK; ++k) {
            double x[3];
            grid_point(in, j, k, x);
            int64_t index = j * in->nz + k;
            if (occ[index])
                continue;
            made++;
            if (decomp && !gf_decomp_owns(decomp, x))
                continue;
            gf_particle rec;
            draw_particle(&in->mix, in->clumps, m, key, (uint64_t)index, x, &rec);
            rec.id = base + index;
            for (int d = 0; d < 3; ++d)
                rec.v[d] =
                    in->velocity[d] +
                    in->spread[d] * (2.0 * gf_rng_uniform(in->seed, (uint64_t)(3 * in->layers + d),
                                                          (uint64_t)index) -
                                     1.0);
            st = gf_particles_add(p, &rec);
        }
    free(occ);
    GF_TRY(st);
    *next_id = base + in->ny * in->nz;
    *created = made;
    in->layers++;
    return GF_OK;
}

gf_status gf_outflow_configure(gf_outflow *out, gf_config_block *root, const double lo[3],
                               const double hi[3], const int periodic[3]) {
    memset(out, 0, sizeof *out);
    out->bounded = 1;
    for (int d = 0; d < 3; ++d) {
        out->lo[d] = lo[d];
        out->hi[d] = hi[d];
        out->periodic[d] = periodic[d];
    }
    if (gf_config_section_count(root, "Outflow") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Outflow");
    out->enabled = 1;
    GF_TRY(gf_config_require_double(b, "position", &out->position));
    if (!(out->position >= lo[0] && out->position <= hi[0])) {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Outflow.position %g lies outside the domain's x range [%g, %g]",
                        gf_config_block_where(b, where, sizeof where), out->position, lo[0], hi[0]);
    }
    return GF_OK;
}

/* Whether the centre x lies outside the box along an axis without periodicity. */
static int outside_box(const gf_outflow *out, const gf_particles *p, size_t i) {
    if (!out->bounded)
        return 0;
    for (int a = 0; a < 3; ++a)
        if (!out->periodic[a] && (p->x[a][i] < out->lo[a] || p->x[a][i] > out->hi[a]))
            return 1;
    return 0;
}

void gf_outflow_apply(gf_outflow *out, gf_particles *p, int64_t *deleted, double *mass) {
    for (size_t i = 0; i < p->n_local;) {
        int past = out->enabled && p->x[0][i] > out->position;
        int left = !past && outside_box(out, p, i);
        if (past || left) {
            if (p->inv_mass[i] > 0.0)
                *mass += 1.0 / p->inv_mass[i];
            (*deleted)++;
            out->left_box += left;
            gf_particles_remove(p, i); /* the last one moves into slot i: look at it next */
        } else {
            ++i;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Run state                                                                                  */

gf_status gf_inflow_save(const gf_inflow *in, gf_state *s) {
    int64_t layers = in->layers;
    GF_TRY(gf_state_put_int(s, "inflow_layers", 1, &layers));
    return gf_state_put_real(s, "inflow_moved", 1, &in->moved);
}

gf_status gf_inflow_restore(gf_inflow *in, const gf_state *s) {
    int64_t layers = 0;
    double moved = 0.0;
    GF_TRY(gf_state_get_int(s, "inflow_layers", 1, &layers));
    GF_TRY(gf_state_get_real(s, "inflow_moved", 1, &moved));
    in->layers = (long)layers;
    in->moved = moved;
    return GF_OK;
}
