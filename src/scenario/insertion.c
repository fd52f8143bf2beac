#include "scenario/insertion.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/bodies.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/vec.h"

/* ------------------------------------------------------------------------------------------ */
/* Regions                                                                                    */

static gf_status unit_vector(gf_config_block *b, const char *key, const double v[3], double u[3],
                             const char *where) {
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (!(n > 0.0) || !isfinite(n))
        return GF_ERROR(GF_ERR_INPUT, "%s: %s.%s must be a nonzero vector", where,
                        gf_config_block_name(b), key);
    for (int d = 0; d < 3; ++d)
        u[d] = v[d] / n;
    return GF_OK;
}

gf_status gf_region_configure(gf_region *r, gf_config_block *b, int allow_plane) {
    memset(r, 0, sizeof *r);
    char where[512], kind[32];
    gf_config_block_where(b, where, sizeof where);
    const char *block = gf_config_block_name(b);
    GF_TRY(gf_config_require_string(b, "region", kind, sizeof kind));
    if (strcmp(kind, "box") == 0) {
        r->kind = GF_REGION_BOX;
        GF_TRY(gf_config_require_vec3(b, "min", r->min));
        GF_TRY(gf_config_require_vec3(b, "max", r->max));
        for (int d = 0; d < 3; ++d)
            if (!(r->max[d] > r->min[d]))
                return GF_ERROR(GF_ERR_INPUT, "%s: %s.max must exceed min on every axis", where,
                                block);
    } else if (strcmp(kind, "cylinder") == 0) {
        r->kind = GF_REGION_CYLINDER;
        static const double z[3] = {0.0, 0.0, 1.0};
        double axis[3], length;
        GF_TRY(gf_config_require_vec3(b, "centre", r->centre));
        GF_TRY(gf_config_get_vec3(b, "axis", z, axis));
        GF_TRY(unit_vector(b, "axis", axis, r->axis, where));
        GF_TRY(gf_config_require_double(b, "cylinder_radius", &r->radius));
        GF_TRY(gf_config_check_range(b, "cylinder_radius", r->radius, 1e-300, 1e300));
        GF_TRY(gf_config_require_double(b, "length", &length));
        GF_TRY(gf_config_check_range(b, "length", length, 1e-300, 1e300));
        r->half_length = 0.5 * length;
        gf_orthonormal(r->axis, r->e1);
        gf_cross(r->axis, r->e1, r->e2);
    } else if (strcmp(kind, "plane") == 0 && allow_plane) {
        r->kind = GF_REGION_PLANE;
        double normal[3];
        GF_TRY(gf_config_require_vec3(b, "point", r->point));
        GF_TRY(gf_config_require_vec3(b, "normal", normal));
        GF_TRY(unit_vector(b, "normal", normal, r->normal, where));
    } else {
        return GF_ERROR(GF_ERR_INPUT, "%s: %s.region '%s' is not one of %s", where, block, kind,
                        allow_plane ? "plane, box, cylinder" : "box, cylinder");
    }
    return GF_OK;
}

/* Coordinates of x in a cylinder's frame: along the axis, and the squared distance from it. */
static void cylinder_coords(const gf_region *r, const double x[3], double *along, double *r2) {
    double d[3] = {x[0] - r->centre[0], x[1] - r->centre[1], x[2] - r->centre[2]};
    *along = d[0] * r->axis[0] + d[1] * r->axis[1] + d[2] * r->axis[2];
    double a = d[0] * r->e1[0] + d[1] * r->e1[1] + d[2] * r->e1[2];
    double c = d[0] * r->e2[0] + d[1] * r->e2[1] + d[2] * r->e2[2];
    *r2 = a * a + c * c;
}

int gf_region_contains(const gf_region *r, const double x[3]) {
    switch (r->kind) {
    case GF_REGION_BOX:
        for (int d = 0; d < 3; ++d)
            if (!(x[d] >= r->min[d] && x[d] <= r->max[d]))
                return 0;
        return 1;
    case GF_REGION_CYLINDER: {
        double along, r2;
        cylinder_coords(r, x, &along, &r2);
        return fabs(along) <= r->half_length && r2 <= r->radius * r->radius;
    }
    default: {
        double s = 0.0;
        for (int d = 0; d < 3; ++d)
            s += (x[d] - r->point[d]) * r->normal[d];
        return s > 0.0;
    }
    }
}

int gf_region_contains_sphere(const gf_region *r, const double x[3], double rad) {
    if (r->kind == GF_REGION_BOX) {
        for (int d = 0; d < 3; ++d)
            if (!(x[d] - rad >= r->min[d] && x[d] + rad <= r->max[d]))
                return 0;
        return 1;
    }
    if (r->kind == GF_REGION_CYLINDER) {
        double along, r2, rr = r->radius - rad;
        cylinder_coords(r, x, &along, &r2);
        return fabs(along) + rad <= r->half_length && rr >= 0.0 && r2 <= rr * rr;
    }
    return 0;
}

double gf_region_volume(const gf_region *r) {
    if (r->kind == GF_REGION_BOX)
        return (r->max[0] - r->min[0]) * (r->max[1] - r->min[1]) * (r->max[2] - r->min[2]);
    if (r->kind == GF_REGION_CYLINDER)
        return M_PI * r->radius * r->radius * 2.0 * r->half_length;
    return INFINITY;
}

void gf_region_bounds(const gf_region *r, double lo[3], double hi[3]) {
    for (int d = 0; d < 3; ++d) {
        if (r->kind == GF_REGION_BOX) {
            lo[d] = r->min[d];
            hi[d] = r->max[d];
        } else if (r->kind == GF_REGION_CYLINDER) {
            /* The caps' rims reach radius * sin(angle to axis d) across. */
            double a = fabs(r->axis[d]);
            double e = r->half_length * a + r->radius * sqrt(fmax(0.0, 1.0 - a * a));
            lo[d] = r->centre[d] - e;
            hi[d] = r->centre[d] + e;
        } else {
            lo[d] = -INFINITY;
            hi[d] = INFINITY;
        }
    }
}

void gf_region_sample(const gf_region *r, double inset, const double u[3], double x[3]) {
    if (r->kind == GF_REGION_BOX) {
        for (int d = 0; d < 3; ++d) {
            double a = r->min[d] + inset, b = r->max[d] - inset;
            x[d] = a + u[d] * (b - a);
        }
        return;
    }
    /* Uniform in the disc's area: the radius goes as the square root. */
    double rr = (r->radius - inset) * sqrt(u[0]), phi = 2.0 * M_PI * u[1];
    double h = r->half_length - inset, along = -h + 2.0 * h * u[2];
    double c = rr * cos(phi), s = rr * sin(phi);
    for (int d = 0; d < 3; ++d)
        x[d] = r->centre[d] + along * r->axis[d] + c * r->e1[d] + s * r->e2[d];
}

/* ------------------------------------------------------------------------------------------ */
/* Configuration of Insert blocks                                                             */

/* The streams of an insertion: candidates of an event, particle velocities, the mean draw. */
static uint64_t candidate_key(const gf_insertion *s, int64_t event) {
    return gf_rng_bits(s->seed, 0x696e7365727400ULL + (uint64_t)s->index, (uint64_t)event);
}
static uint64_t velocity_key(const gf_insertion *s) {
    return gf_rng_bits(s->seed, 0x76656c6f63697400ULL + (uint64_t)s->index, 0);
}
enum { STREAM_POS = 16 }; /* above gf_shape_mix_draw's streams of the same key */

/* A candidate: particle `attempt` of the candidate stream `key`, at rest, its bounding sphere
 * inside the region. */
static void draw_candidate(const gf_insertion *s, const gf_materials *m, uint64_t key,
                           uint64_t attempt, gf_particle *rec) {
    gf_shape shape;
    int32_t mat;
    double q[4];
    const double zero[3] = {0.0, 0.0, 0.0};
    gf_shape_mix_draw(&s->mix, key, attempt, &shape, &mat, q);
    gf_particle_make(rec, 0, zero, &shape, s->clumps, m->density[mat], mat);
    memcpy(rec->q, q, sizeof rec->q);
    double u[3];
    for (int d = 0; d < 3; ++d)
        u[d] = gf_rng_uniform(key, STREAM_POS + (uint64_t)d, attempt);
    gf_region_sample(&s->region, rec->radius, u, rec->x);
}

/* What `amount` counts of one particle. */
static double quantity_of(const gf_insertion *s, const gf_particle *rec) {
    if (s->mode == GF_INSERT_MASS_RATE)
        return rec->inv_mass > 0.0 ? 1.0 / rec->inv_mass : 0.0;
    if (s->mode == GF_INSERT_VOLUME_FRACTION)
        return gf_shape_volume(&rec->shape, s->clumps);
    return 1.0;
}

static gf_status configure_one(gf_insertion *s, gf_config_block *b, gf_config_block *root,
                               const gf_materials *m, const gf_clumps *clumps, const double lo[3],
                               const double hi[3]) {
    const char *where = s->where;
    s->clumps = clumps;
    GF_TRY(gf_region_configure(&s->region, b, 0));
    GF_TRY(gf_materials_lookup(m, b, "material", &s->material));
    GF_TRY(gf_shape_mix_configure(&s->mix, b, root, m, clumps, s->material));
    static const char *const modes[] = {"rate", "mass_rate", "count", "volume_fraction"};
    int given = 0;
    for (int k = 0; k < 4; ++k)
        if (gf_config_has(b, modes[k])) {
            s->mode = (gf_insert_mode)k;
            given++;
        }
    if (given != 1)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Insert needs exactly one of rate, mass_rate, count and "
                        "volume_fraction (%d given)",
                        where, given);
    const char *key = modes[s->mode];
    GF_TRY(gf_config_require_double(b, key, &s->amount));
    if (s->mode == GF_INSERT_COUNT) {
        GF_TRY(gf_config_check_range(b, key, s->amount, 1.0, 1e9));
        if (s->amount != floor(s->amount))
            return GF_ERROR(GF_ERR_INPUT, "%s: Insert.count must be a whole number", where);
    } else if (s->mode == GF_INSERT_VOLUME_FRACTION) {
        GF_TRY(gf_config_check_range(b, key, s->amount, 1e-300, 1.0));
    } else {
        GF_TRY(gf_config_check_range(b, key, s->amount, 1e-300, 1e300));
    }
    GF_TRY(gf_insertion_read_times(b, &s->start, &s->stop));
    long max_count = 0;
    GF_TRY(gf_config_get_long(b, "max_count", 0, &max_count));
    GF_TRY(gf_config_check_range(b, "max_count", (double)max_count, 0.0, 1e15));
    s->max_count = max_count > 0 ? (int64_t)max_count : INT64_MAX;
    GF_TRY(gf_config_get_long(b, "every", 1, &s->every));
    GF_TRY(gf_config_check_range(b, "every", (double)s->every, 1.0, 1e9));
    const double zero[3] = {0.0, 0.0, 0.0};
    GF_TRY(gf_config_get_vec3(b, "velocity", zero, s->velocity));
    GF_TRY(gf_config_get_vec3(b, "spread", zero, s->spread));
    for (int d = 0; d < 3; ++d)
        if (!(s->spread[d] >= 0.0))
            return GF_ERROR(GF_ERR_INPUT, "%s: Insert.spread must not be negative", where);
    GF_TRY(gf_config_get_vec3(b, "angular_velocity", zero, s->angular_velocity));
    long seed = 1;
    GF_TRY(gf_config_get_long(b, "seed", 1, &seed));
    s->seed = (uint64_t)seed;

    double blo[3], bhi[3];
    gf_region_bounds(&s->region, blo, bhi);
    for (int d = 0; d < 3; ++d) {
        double tol = gf_touch_tolerance(fabs(lo[d]) + fabs(hi[d]) + fabs(blo[d]) + fabs(bhi[d]));
        if (blo[d] < lo[d] - tol || bhi[d] > hi[d] + tol)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: the insertion region spans [%g, %g] along %c, outside the "
                            "domain [%g, %g]",
                            where, blo[d], bhi[d], "xyz"[d], lo[d], hi[d]);
    }
    double reach = s->mix.reach, room = INFINITY;
    if (s->region.kind == GF_REGION_BOX)
        for (int d = 0; d < 3; ++d)
            room = fmin(room, 0.5 * (s->region.max[d] - s->region.min[d]));
    else
        room = fmin(s->region.radius, s->region.half_length);
    if (!(room > reach))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: the insertion region is too small for its particles: their largest "
                        "bounding radius %g does not fit in it (half its narrowest width %g)",
                        where, reach, room);
    /* Only sizes the batches of candidates: the quantities inserted are those of the particles
     * drawn. */
    const int ndraw = 1000;
    double sum = 0.0;
    for (int k = 0; k < ndraw; ++k) {
        gf_particle rec;
        draw_candidate(s, m, gf_rng_bits(s->seed, 0x6d65616eULL, (uint64_t)s->index), (uint64_t)k,
                       &rec);
        sum += quantity_of(s, &rec);
    }
    s->mean_quantity = sum / ndraw;
    double vmin = INFINITY;
    for (int k = 0; k < s->mix.nkinds; ++k)
        vmin = fmin(vmin, gf_shape_volume(&s->mix.kind[k], clumps));
    vmin *= s->mix.size_min * s->mix.size_min * s->mix.size_min;
    s->capacity = fmax(1.0, floor(gf_region_volume(&s->region) / vmin));
    return GF_OK;
}

gf_status gf_insertion_read_times(gf_config_block *b, double *start, double *stop) {
    GF_TRY(gf_config_get_double(b, "start", 0.0, start));
    GF_TRY(gf_config_check_range(b, "start", *start, 0.0, 1e300));
    *stop = INFINITY;
    if (gf_config_has(b, "stop")) {
        GF_TRY(gf_config_require_double(b, "stop", stop));
        if (!(*stop > *start)) {
            char where[512];
            gf_config_block_where(b, where, sizeof where);
            return GF_ERROR(GF_ERR_INPUT, "%s: Insert.stop %g must come after start %g", where,
                            *stop, *start);
        }
    }
    return GF_OK;
}

gf_status gf_inserts_configure(gf_inserts *in, gf_config_block *root, const gf_materials *m,
                               const gf_clumps *clumps, const double lo[3], const double hi[3]) {
    memset(in, 0, sizeof *in);
    size_t n;
    GF_TRY(gf_config_section_count_max(root, "Insert", GF_MAX_INSERTS, &n));
    for (size_t k = 0; k < n; ++k) {
        gf_insertion *s = &in->item[k];
        gf_config_block *b = gf_config_section_nth(root, "Insert", k);
        s->index = (int)k;
        gf_config_block_where(b, s->where, sizeof s->where);
        GF_TRY(configure_one(s, b, root, m, clumps, lo, hi));
        in->reach = fmax(in->reach, s->mix.reach);
        in->count++;
    }
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* A grid of placed bodies near a region, for the overlap tests of candidates                 */

typedef struct {
    double x[3], q[4], radius;
    gf_shape shape;
} placed;

typedef struct {
    double lo[3], cell[3];
    int dims[3];
    int *head; /* first body of each cell, -1 none */
    int *next; /* the next body of the same cell */
    placed *body;
    size_t n, cap;
} body_grid;

/* Cells at least `reach` wide over [lo, hi], at most about `want` of them. */
static gf_status grid_init(body_grid *g, const double lo[3], const double hi[3], double reach,
                           size_t want) {
    memset(g, 0, sizeof *g);
    size_t total = 1;
    for (int d = 0; d < 3; ++d) {
        double n = floor((hi[d] - lo[d]) / reach);
        g->dims[d] = (int)fmax(1.0, fmin(n, 1024.0));
    }
    for (;;) {
        total = (size_t)g->dims[0] * (size_t)g->dims[1] * (size_t)g->dims[2];
        if (total <= want + 64)
            break;
        for (int d = 0; d < 3; ++d)
            g->dims[d] = g->dims[d] > 1 ? (g->dims[d] + 1) / 2 : 1;
    }
    for (int d = 0; d < 3; ++d) {
        g->lo[d] = lo[d];
        g->cell[d] = (hi[d] - lo[d]) / g->dims[d];
    }
    g->head = gf_malloc(total, sizeof *g->head);
    if (!g->head)
        return gf_error_status();
    for (size_t c = 0; c < total; ++c)
        g->head[c] = -1;
    return GF_OK;
}

static void grid_free(body_grid *g) {
    free(g->head);
    free(g->next);
    free(g->body);
    memset(g, 0, sizeof *g);
}

/* The cell coordinate of x along d, clamped to the grid: a body outside the grid lands in an
 * edge cell no farther (in cells) from any point inside than its own position is. */
static int grid_coord(const body_grid *g, int d, double x) {
    double c = floor((x - g->lo[d]) / g->cell[d]);
    return (int)fmax(0.0, fmin(c, g->dims[d] - 1.0));
}

static gf_status grid_add(body_grid *g, const placed *b) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        GF_TRY(gf_grow((void **)&g->body, cap, sizeof *g->body));
        GF_TRY(gf_grow((void **)&g->next, cap, sizeof *g->next));
        g->cap = cap;
    }
    int c[3];
    for (int d = 0; d < 3; ++d)
        c[d] = grid_coord(g, d, b->x[d]);
    size_t cell = ((size_t)c[2] * (size_t)g->dims[1] + (size_t)c[1]) * (size_t)g->dims[0] + c[0];
    g->body[g->n] = *b;
    g->next[g->n] = g->head[cell];
    g->head[cell] = (int)g->n;
    g->n++;
    return GF_OK;
}

/* Adds b and, along periodic axes of `decomp`, its images whose bounding sphere reaches into
 * [lo, hi]. */
static gf_status grid_add_images(body_grid *g, const placed *b, const gf_decomp *decomp,
                                 const double lo[3], const double hi[3]) {
    double shift[3][3];
    int ns[3];
    for (int a = 0; a < 3; ++a) {
        shift[a][0] = 0.0;
        ns[a] = 1;
        if (decomp && decomp->periodic[a]) {
            double L = decomp->hi[a] - decomp->lo[a];
            shift[a][1] = -L;
            shift[a][2] = L;
            ns[a] = 3;
        }
    }
    for (int i = 0; i < ns[0]; ++i)
        for (int j = 0; j < ns[1]; ++j)
            for (int k = 0; k < ns[2]; ++k) {
                placed c = *b;
                const double s[3] = {shift[0][i], shift[1][j], shift[2][k]};
                int near = 1;
                for (int a = 0; a < 3; ++a) {
                    c.x[a] += s[a];
                    near = near && c.x[a] + c.radius > lo[a] && c.x[a] - c.radius < hi[a];
                }
                if (near)
                    GF_TRY(grid_add(g, &c));
            }
    return GF_OK;
}

static int bodies_overlap(const gf_particle *a, const placed *b, const gf_clumps *clumps) {
    double d2 = 0.0, rr = a->radius + b->radius;
    for (int d = 0; d < 3; ++d)
        d2 += (a->x[d] - b->x[d]) * (a->x[d] - b->x[d]);
    if (d2 >= rr * rr)
        return 0;
    if (a->shape.type == GF_SHAPE_SPHERE && b->shape.type == GF_SHAPE_SPHERE)
        return 1;
    gf_body_pose pa = {
        &a->shape, clumps, {a->x[0], a->x[1], a->x[2]}, {a->q[0], a->q[1], a->q[2], a->q[3]}};
    gf_body_pose pb = {
        &b->shape, clumps, {b->x[0], b->x[1], b->x[2]}, {b->q[0], b->q[1], b->q[2], b->q[3]}};
    double depth;
    if (gf_collide_overlap(&pa, &pb, &depth) != GF_OK) {
        gf_error_clear(); /* undecided: the candidate is refused, alike on every rank */
        return 1;
    }
    return depth > 0.0;
}

/* Whether a candidate overlaps a body of the grid. `reach` bounds the bounding radii of the
 * grid's bodies and the candidate together: the cells are at least that wide. */
static int grid_overlaps(const body_grid *g, const gf_particle *a, const gf_clumps *clumps) {
    int c[3];
    for (int d = 0; d < 3; ++d)
        c[d] = grid_coord(g, d, a->x[d]);
    for (int k = c[2] - 1; k <= c[2] + 1; ++k) {
        if (k < 0 || k >= g->dims[2])
            continue;
        for (int j = c[1] - 1; j <= c[1] + 1; ++j) {
            if (j < 0 || j >= g->dims[1])
                continue;
            for (int i = c[0] - 1; i <= c[0] + 1; ++i) {
                if (i < 0 || i >= g->dims[0])
                    continue;
                size_t cell = ((size_t)k * (size_t)g->dims[1] + (size_t)j) * (size_t)g->dims[0] + i;
                for (int b = g->head[cell]; b >= 0; b = g->next[b])
                    if (bodies_overlap(a, &g->body[b], clumps))
                        return 1;
            }
        }
    }
    return 0;
}

/* This rank's owned particles whose bounding sphere (periodic images included) reaches into the
 * region's bounds. */
static gf_status near_particles(const gf_insertion *s, const gf_decomp *decomp,
                                const gf_particles *p, body_grid *g) {
    double lo[3], hi[3], rmax = 0.0;
    gf_region_bounds(&s->region, lo, hi);
    size_t count = 0;
    for (size_t i = 0; i < p->n_local; ++i) {
        int near = 1;
        for (int a = 0; a < 3 && near; ++a) {
            double x = p->x[a][i], r = p->radius[i];
            near = (x + r > lo[a] && x - r < hi[a]) || (decomp && decomp->periodic[a]);
        }
        if (near) {
            rmax = fmax(rmax, p->radius[i]);
            count++;
        }
    }
    GF_TRY(grid_init(g, lo, hi, rmax + s->mix.reach, 2 * count));
    for (size_t i = 0; i < p->n_local; ++i) {
        placed b = {{p->x[0][i], p->x[1][i], p->x[2][i]},
                    {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]},
                    p->radius[i],
                    gf_particles_shape(p, i)};
        GF_TRY(grid_add_images(g, &b, decomp, lo, hi));
    }
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static double due_by(const gf_insertion *s, double time) {
    switch (s->mode) {
    case GF_INSERT_RATE:
    case GF_INSERT_MASS_RATE:
        return s->amount * fmax(0.0, fmin(time, s->stop) - s->start);
    case GF_INSERT_COUNT:
        return s->amount;
    default:
        return s->amount * gf_region_volume(&s->region);
    }
}

/* Particles wanted to reach `due` (at least 1), at most those max_count leaves and the region
 * can hold. */
static int64_t wanted(const gf_insertion *s, double due) {
    double n = ceil((due - s->quantity) / s->mean_quantity);
    n = fmax(1.0, fmin(fmin(n, (double)(s->max_count - s->inserted)), s->capacity));
    return (int64_t)fmin(n, 1e12);
}

/* Whether what is due is in. The rounding of the time's sum must not add a particle: 4000/s
 * over a time that sums to 0.05 + 1e-17 s is 200 particles, not 201. */
static int satisfied(const gf_insertion *s, double due) {
    return s->quantity >= due * (1.0 - 1e-9) || s->inserted >= s->max_count;
}

static gf_status event(gf_insertion *s, double time, double due, const gf_walls *w,
                       const gf_decomp *decomp, const gf_par *par, const gf_materials *m,
                       gf_particles *p, int64_t *next_id, int64_t *created) {
    const uint64_t key = candidate_key(s, s->events), vkey = velocity_key(s);
    const int64_t budget = GF_INSERT_ATTEMPTS * wanted(s, due);
    double lo[3], hi[3];
    gf_region_bounds(&s->region, lo, hi);
    body_grid near, accepted;
    memset(&accepted, 0, sizeof accepted);
    gf_status st = near_particles(s, decomp, p, &near);
    if (st == GF_OK)
        st = grid_init(&accepted, lo, hi, 2.0 * s->mix.reach, 2 * (size_t)fmin(budget, 1e7));
    gf_particle *cand = NULL;
    int64_t *flag = NULL;
    int64_t used = 0, placed_now = 0;
    /* Rounds of candidates, a few more than still wanted, until enough are placed or the
     * attempts run out; every rank goes through the same rounds. */
    while (st == GF_OK && !satisfied(s, due) && used < budget) {
        int64_t batch = 2 * wanted(s, due) + 8;
        batch = batch < budget - used ? batch : budget - used;
        batch = batch < 65536 ? batch : 65536;
        st = gf_grow((void **)&cand, (size_t)batch, sizeof *cand);
        if (st == GF_OK)
            st = gf_grow((void **)&flag, (size_t)batch, sizeof *flag);
        if (st != GF_OK)
            break;
        for (int64_t c = 0; c < batch; ++c) {
            draw_candidate(s, m, key, (uint64_t)(used + c), &cand[c]);
            flag[c] = grid_overlaps(&near, &cand[c], s->clumps);
            /* The geometry too, by the rank whose region holds the candidate: under MPI each
             * rank keeps only the mesh triangles near its subdomain, the union decides. */
            if (!flag[c] &&
                (!par || !decomp || gf_walls_region_owner(decomp, cand[c].x) == decomp->rank))
                flag[c] = gf_bodies_blocked(w, &cand[c], s->clumps);
        }
        if (par)
            st = gf_par_allreduce_i64(par, flag, (int)batch, GF_PAR_MAX);
        for (int64_t c = 0; c < batch && st == GF_OK && !satisfied(s, due); ++c) {
            gf_particle *rec = &cand[c];
            if (flag[c] || grid_overlaps(&accepted, rec, s->clumps))
                continue;
            placed b = {{rec->x[0], rec->x[1], rec->x[2]},
                        {rec->q[0], rec->q[1], rec->q[2], rec->q[3]},
                        rec->radius,
                        rec->shape};
            st = grid_add_images(&accepted, &b, decomp, lo, hi);
            rec->id = *next_id + placed_now;
            for (int d = 0; d < 3; ++d) {
                double u = gf_rng_uniform(vkey, (uint64_t)d, (uint64_t)s->inserted);
                rec->v[d] = s->velocity[d] + s->spread[d] * (2.0 * u - 1.0);
                rec->w[d] = s->angular_velocity[d];
            }
            placed_now++;
            s->inserted++;
            s->quantity += quantity_of(s, rec);
            s->mass += rec->inv_mass > 0.0 ? 1.0 / rec->inv_mass : 0.0;
            if (st == GF_OK && (!decomp || gf_decomp_owns(decomp, rec->x)))
                st = gf_particles_add(p, rec);
        }
        used += batch;
    }
    free(cand);
    free(flag);
    grid_free(&near);
    grid_free(&accepted);
    GF_TRY(st);
    s->events++;
    *next_id += placed_now;
    *created += placed_now;
    s->carried = satisfied(s, due) ? 0 : wanted(s, due);
    if (s->carried > 0 && !s->warned) {
        s->warned = 1;
        double outstanding = ceil((due - s->quantity) / s->mean_quantity);
        char beyond[160] = "";
        if (outstanding > s->capacity)
            snprintf(beyond, sizeof beyond,
                     "; about %.3g are due in all, but the region holds at most %.0f at once",
                     outstanding, s->capacity);
        if (!par || par->rank == 0)
            gf_log_warn(
                "%s: the insertion region is too full: %lld particle(s) due by t = "
                "%g s found no free place in %lld attempts and are carried over to the next "
                "event%s (warned once)",
                s->where, (long long)s->carried, time, (long long)budget, beyond);
    }
    return GF_OK;
}

gf_status gf_inserts_advance(gf_inserts *in, double time, long step, double dt, const gf_walls *w,
                             const gf_decomp *decomp, const gf_par *par, const gf_materials *m,
                             gf_particles *p, int64_t *next_id, int64_t *created) {
    *created = 0;
    for (int k = 0; k < in->count; ++k) {
        gf_insertion *s = &in->item[k];
        /* Events on every `every`-th step from start on; the first at or after stop still
         * places what was due by stop. */
        if (step % s->every != 0 || time < s->start - 1e-9 * dt ||
            time - (double)s->every * dt >= s->stop)
            continue;
        double due = due_by(s, time);
        if (satisfied(s, due))
            continue;
        GF_TRY(event(s, time, due, w, decomp, par, m, p, next_id, created));
    }
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Outlets                                                                                    */

gf_status gf_outlets_configure(gf_outlets *o, gf_config_block *root) {
    memset(o, 0, sizeof *o);
    size_t n;
    GF_TRY(gf_config_section_count_max(root, "Outlet", GF_MAX_OUTLETS, &n));
    char where[512];
    for (size_t k = 0; k < n; ++k) {
        gf_outlet *t = &o->item[k];
        gf_config_block *b = gf_config_section_nth(root, "Outlet", k);
        gf_config_block_where(b, where, sizeof where);
        char def[32];
        snprintf(def, sizeof def, "outlet%zu", k + 1);
        GF_TRY(gf_config_get_string(b, "name", def, t->name, sizeof t->name));
        /* The name heads a column of the statistics file. */
        int ok = t->name[0] != '\0';
        for (const char *c = t->name; *c && ok; ++c)
            ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 *c == '_' || *c == '-';
        if (!ok)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: Outlet.name '%s' may hold letters, digits, '_' and '-' only",
                            where, t->name);
        for (size_t j = 0; j < k; ++j)
            if (strcmp(o->item[j].name, t->name) == 0)
                return GF_ERROR(GF_ERR_INPUT, "%s: a second Outlet named '%s'", where, t->name);
        GF_TRY(gf_region_configure(&t->region, b, 1));
        GF_TRY(gf_config_get_bool(b, "open", 1, &t->open));
        o->count++;
    }
    return GF_OK;
}

void gf_outlets_apply(gf_outlets *o, gf_particles *p, int64_t *deleted, double *mass) {
    if (o->count == 0)
        return;
    for (size_t i = 0; i < p->n_local;) {
        const double x[3] = {p->x[0][i], p->x[1][i], p->x[2][i]};
        int k = 0;
        while (k < o->count && !(o->item[k].open && gf_region_contains(&o->item[k].region, x)))
            ++k;
        if (k == o->count) {
            ++i;
            continue;
        }
        double mi = p->inv_mass[i] > 0.0 ? 1.0 / p->inv_mass[i] : 0.0;
        o->item[k].count_local++;
        o->item[k].mass_local += mi;
        (*deleted)++;
        *mass += mi;
        gf_particles_remove(p, i); /* the last one moves into slot i: look at it next */
    }
}

gf_status gf_outlets_totals(const gf_outlets *o, const gf_par *par, int64_t *count, double *mass) {
    for (int k = 0; k < o->count; ++k) {
        count[k] = o->item[k].count_local;
        mass[k] = o->item[k].mass_local;
    }
    if (par && o->count > 0) {
        GF_TRY(gf_par_allreduce_i64(par, count, o->count, GF_PAR_SUM));
        GF_TRY(gf_par_allreduce_double(par, mass, o->count, GF_PAR_SUM));
    }
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Run state                                                                                  */

gf_status gf_inserts_save(const gf_inserts *in, gf_state *s) {
    if (in->count == 0)
        return GF_OK;
    int64_t cnt[3][GF_MAX_INSERTS];
    double qty[2][GF_MAX_INSERTS];
    for (int k = 0; k < in->count; ++k) {
        cnt[0][k] = in->item[k].inserted;
        cnt[1][k] = in->item[k].events;
        cnt[2][k] = in->item[k].carried;
        qty[0][k] = in->item[k].quantity;
        qty[1][k] = in->item[k].mass;
    }
    size_t n = (size_t)in->count;
    GF_TRY(gf_state_put_int(s, "insert_inserted", n, cnt[0]));
    GF_TRY(gf_state_put_int(s, "insert_events", n, cnt[1]));
    GF_TRY(gf_state_put_int(s, "insert_carried", n, cnt[2]));
    GF_TRY(gf_state_put_real(s, "insert_quantity", n, qty[0]));
    return gf_state_put_real(s, "insert_mass", n, qty[1]);
}

gf_status gf_inserts_restore(gf_inserts *in, const gf_state *s) {
    if (in->count == 0)
        return GF_OK;
    int64_t cnt[3][GF_MAX_INSERTS];
    double qty[2][GF_MAX_INSERTS];
    size_t n = (size_t)in->count;
    GF_TRY(gf_state_get_int(s, "insert_inserted", n, cnt[0]));
    GF_TRY(gf_state_get_int(s, "insert_events", n, cnt[1]));
    GF_TRY(gf_state_get_int(s, "insert_carried", n, cnt[2]));
    GF_TRY(gf_state_get_real(s, "insert_quantity", n, qty[0]));
    GF_TRY(gf_state_get_real(s, "insert_mass", n, qty[1]));
    for (int k = 0; k < in->count; ++k) {
        gf_insertion *it = &in->item[k];
        it->inserted = cnt[0][k];
        it->events = cnt[1][k];
        it->carried = cnt[2][k];
        it->quantity = qty[0][k];
        it->mass = qty[1][k];
    }
    return GF_OK;
}

gf_status gf_outlets_save(const gf_outlets *o, const gf_par *par, gf_state *s) {
    int64_t count[GF_MAX_OUTLETS];
    double mass[GF_MAX_OUTLETS];
    GF_TRY(gf_outlets_totals(o, par, count, mass));
    if (o->count == 0)
        return GF_OK;
    GF_TRY(gf_state_put_int(s, "outlet_particles", (size_t)o->count, count));
    return gf_state_put_real(s, "outlet_mass", (size_t)o->count, mass);
}

gf_status gf_outlets_restore(gf_outlets *o, const gf_par *par, const gf_state *s) {
    if (o->count == 0)
        return GF_OK;
    int64_t count[GF_MAX_OUTLETS];
    double mass[GF_MAX_OUTLETS];
    GF_TRY(gf_state_get_int(s, "outlet_particles", (size_t)o->count, count));
    GF_TRY(gf_state_get_real(s, "outlet_mass", (size_t)o->count, mass));
    /* Only the sum over ranks means anything: the first rank carries it. */
    int root = !par || par->rank == 0;
    for (int k = 0; k < o->count; ++k) {
        o->item[k].count_local = root ? count[k] : 0;
        o->item[k].mass_local = root ? mass[k] : 0.0;
    }
    return GF_OK;
}
