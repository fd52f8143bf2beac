#include "body/particles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

#define FOR_EACH_DOUBLE_ARRAY(p, DO)                                                               \
    do {                                                                                           \
        for (int k_ = 0; k_ < 3; ++k_) {                                                           \
            DO((p)->x[k_]);                                                                        \
            DO((p)->v[k_]);                                                                        \
            DO((p)->w[k_]);                                                                        \
            DO((p)->inv_inertia[k_]);                                                              \
        }                                                                                          \
        for (int k_ = 0; k_ < 4; ++k_)                                                             \
            DO((p)->q[k_]);                                                                        \
        for (int k_ = 0; k_ < 3; ++k_)                                                             \
            DO((p)->dim[k_]);                                                                      \
        DO((p)->radius);                                                                           \
        DO((p)->inv_mass);                                                                         \
    } while (0)

void gf_particles_init(gf_particles *p) {
    memset(p, 0, sizeof *p);
}

void gf_particles_free(gf_particles *p) {
#define FREE_ARRAY(a) free(a)
    FOR_EACH_DOUBLE_ARRAY(p, FREE_ARRAY);
#undef FREE_ARRAY
    free(p->id);
    free(p->material);
    free(p->shape);
    free(p->clump);
    const gf_clumps *clumps = p->clumps; /* not owned: the storage stays usable */
    gf_particles_init(p);
    p->clumps = clumps;
}

gf_status gf_particles_reserve(gf_particles *p, size_t capacity) {
    if (capacity <= p->capacity)
        return GF_OK;
    size_t cap = p->capacity ? p->capacity : 64;
    while (cap < capacity)
        cap *= 2;
    gf_status st = GF_OK;
#define GROW_ARRAY(a)                                                                              \
    if (st == GF_OK)                                                                               \
    st = gf_grow((void **)&(a), cap, sizeof *(a))
    FOR_EACH_DOUBLE_ARRAY(p, GROW_ARRAY);
    GROW_ARRAY(p->id);
    GROW_ARRAY(p->material);
    GROW_ARRAY(p->shape);
    GROW_ARRAY(p->clump);
#undef GROW_ARRAY
    if (st == GF_OK)
        p->capacity = cap;
    return st;
}

typedef struct {
    uint64_t key;
    int64_t id;
    size_t index;
} sort_entry;

static int cmp_sort_entry(const void *a, const void *b) {
    const sort_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Moves the elements of array a (of `size` bytes each) into the order `from`: element i takes
 * the one at from[i]. */
static void permute(void *a, size_t size, const sort_entry *from, size_t n, void *tmp) {
    char *src = a, *dst = tmp;
    for (size_t i = 0; i < n; ++i)
        memcpy(dst + i * size, src + from[i].index * size, size);
    memcpy(a, tmp, n * size);
}

gf_status gf_particles_sort(gf_particles *p, double cell) {
    size_t n = p->n_local;
    if (p->n_ghost != 0)
        return GF_ERROR(GF_ERR_STATE, "particles are sorted only without ghosts (%zu present)",
                        p->n_ghost);
    if (n < 2)
        return GF_OK;
    if (!(cell > 0.0) || !isfinite(cell))
        return GF_ERROR(GF_ERR_INPUT, "the cell size of the spatial sort must be positive (%g)",
                        cell);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int d = 0; d < 3; ++d)
        for (size_t i = 0; i < n; ++i) {
            lo[d] = fmin(lo[d], p->x[d][i]);
            hi[d] = fmax(hi[d], p->x[d][i]);
        }
    /* Cells at least `cell` wide, at most 2^21 along an axis (a key's share of 63 bits). */
    double h[3];
    for (int d = 0; d < 3; ++d)
        h[d] = fmax(cell, (hi[d] - lo[d]) / 2097151.0);
    sort_entry *e = malloc(n * sizeof *e);
    void *tmp = malloc(n * sizeof(double));
    if (!e || !tmp) {
        free(e);
        free(tmp);
        return GF_ERROR(GF_ERR_MEMORY, "spatial sort of %zu particles", n);
    }
    for (size_t i = 0; i < n; ++i) {
        uint64_t key = 0;
        for (int d = 0; d < 3; ++d) {
            double c = floor((p->x[d][i] - lo[d]) / h[d]);
            uint64_t k = c > 0.0 ? (c < 2097151.0 ? (uint64_t)c : 2097151u) : 0u;
            key |= k << (21 * d);
        }
        e[i] = (sort_entry){key, p->id[i], i};
    }
    qsort(e, n, sizeof *e, cmp_sort_entry);
#define PERMUTE_ARRAY(a) permute((a), sizeof *(a), e, n, tmp)
    FOR_EACH_DOUBLE_ARRAY(p, PERMUTE_ARRAY);
    PERMUTE_ARRAY(p->id);
    PERMUTE_ARRAY(p->material);
    PERMUTE_ARRAY(p->shape);
    PERMUTE_ARRAY(p->clump);
#undef PERMUTE_ARRAY
    free(e);
    free(tmp);
    return GF_OK;
}

void gf_particles_set(gf_particles *p, size_t i, const gf_particle *r) {
    p->id[i] = r->id;
    for (int k = 0; k < 3; ++k) {
        p->x[k][i] = r->x[k];
        p->v[k][i] = r->v[k];
        p->w[k][i] = r->w[k];
        p->inv_inertia[k][i] = r->inv_inertia[k];
    }
    for (int k = 0; k < 4; ++k)
        p->q[k][i] = r->q[k];
    p->radius[i] = r->radius;
    p->inv_mass[i] = r->inv_mass;
    p->material[i] = r->material;
    p->shape[i] = r->shape.type;
    p->clump[i] = r->shape.clump;
    for (int k = 0; k < 3; ++k)
        p->dim[k][i] = r->shape.dim[k];
}

void gf_particles_get(const gf_particles *p, size_t i, gf_particle *r) {
    r->id = p->id[i];
    for (int k = 0; k < 3; ++k) {
        r->x[k] = p->x[k][i];
        r->v[k] = p->v[k][i];
        r->w[k] = p->w[k][i];
        r->inv_inertia[k] = p->inv_inertia[k][i];
    }
    for (int k = 0; k < 4; ++k)
        r->q[k] = p->q[k][i];
    r->radius = p->radius[i];
    r->inv_mass = p->inv_mass[i];
    r->material = p->material[i];
    r->shape = gf_particles_shape(p, i);
}

void gf_particles_pose(const gf_particles *p, size_t i, const gf_shape *shape, gf_body_pose *pose) {
    pose->shape = shape;
    pose->clumps = p->clumps;
    for (int d = 0; d < 3; ++d)
        pose->x[d] = p->x[d][i];
    for (int d = 0; d < 4; ++d)
        pose->q[d] = p->q[d][i];
}

gf_shape gf_particles_shape(const gf_particles *p, size_t i) {
    gf_shape s;
    s.type = p->shape[i];
    s.clump = p->clump[i];
    for (int k = 0; k < 3; ++k)
        s.dim[k] = p->dim[k][i];
    return s;
}

gf_status gf_particles_add(gf_particles *p, const gf_particle *rec) {
    if (p->n_ghost != 0)
        return GF_ERROR(GF_ERR_STATE, "cannot add an owned particle while ghosts are present");
    GF_TRY(gf_particles_reserve(p, p->n_local + 1));
    gf_particles_set(p, p->n_local++, rec);
    return GF_OK;
}

gf_status gf_particles_add_ghost(gf_particles *p, const gf_particle *rec) {
    GF_TRY(gf_particles_reserve(p, p->n_local + p->n_ghost + 1));
    gf_particles_set(p, p->n_local + p->n_ghost++, rec);
    return GF_OK;
}

void gf_particles_clear_ghosts(gf_particles *p) {
    p->n_ghost = 0;
}

void gf_particles_remove(gf_particles *p, size_t i) {
    size_t last = p->n_local - 1;
    if (i != last) {
        gf_particle r;
        gf_particles_get(p, last, &r);
        gf_particles_set(p, i, &r);
    }
    p->n_local--;
}

void gf_particle_make_sphere(gf_particle *rec, int64_t id, const double x[3], double radius,
                             double density, int32_t material) {
    memset(rec, 0, sizeof *rec);
    rec->id = id;
    memcpy(rec->x, x, sizeof rec->x);
    rec->q[0] = 1.0;
    rec->radius = radius;
    double mass = density * 4.0 / 3.0 * M_PI * radius * radius * radius;
    double inertia = 0.4 * mass * radius * radius;
    rec->inv_mass = 1.0 / mass;
    for (int k = 0; k < 3; ++k)
        rec->inv_inertia[k] = 1.0 / inertia;
    rec->material = material;
    rec->shape = gf_shape_sphere(radius);
}

void gf_particle_make(gf_particle *rec, int64_t id, const double x[3], const gf_shape *shape,
                      const gf_clumps *clumps, double density, int32_t material) {
    memset(rec, 0, sizeof *rec);
    rec->id = id;
    memcpy(rec->x, x, sizeof rec->x);
    rec->q[0] = 1.0;
    rec->shape = *shape;
    rec->material = material;
    rec->radius = gf_shape_bounding_radius(shape, clumps);
    if (density <= 0.0)
        return; /* infinite mass: inverse mass and inertia 0 */
    double mass, inertia[3];
    gf_shape_mass_properties(shape, clumps, density, &mass, inertia);
    rec->inv_mass = 1.0 / mass;
    for (int k = 0; k < 3; ++k)
        rec->inv_inertia[k] = 1.0 / inertia[k];
}

void gf_particles_inv_inertia_world(const gf_particles *p, size_t i, double out[6]) {
    double d[3] = {p->inv_inertia[0][i], p->inv_inertia[1][i], p->inv_inertia[2][i]};
    if (d[0] == d[1] && d[1] == d[2]) {
        /* Isotropic bodies (spheres): the rotation drops out. */
        out[0] = out[3] = out[5] = d[0];
        out[1] = out[2] = out[4] = 0.0;
        return;
    }
    const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
    /* Columns of the rotation matrix are the rotated body axes: I^-1 = R diag(d) R^T. */
    double c[3][3];
    for (int k = 0; k < 3; ++k) {
        double e[3] = {0.0, 0.0, 0.0};
        e[k] = 1.0;
        gf_quat_rotate(q, e, c[k]);
    }
    int idx = 0;
    for (int r = 0; r < 3; ++r)
        for (int s = r; s < 3; ++s) {
            double sum = 0.0;
            for (int k = 0; k < 3; ++k)
                sum += c[k][r] * d[k] * c[k][s];
            out[idx++] = sum;
        }
}

double gf_particles_kinetic_energy(const gf_particles *p) {
    double e = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        if (p->inv_mass[i] == 0.0)
            continue;
        double v2 = p->v[0][i] * p->v[0][i] + p->v[1][i] * p->v[1][i] + p->v[2][i] * p->v[2][i];
        e += 0.5 * v2 / p->inv_mass[i];
        /* Rotational energy in the body frame, where the inertia is diagonal. */
        const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
        const double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        double wb[3];
        gf_quat_rotate_inv(q, w, wb);
        for (int k = 0; k < 3; ++k)
            if (p->inv_inertia[k][i] > 0.0)
                e += 0.5 * wb[k] * wb[k] / p->inv_inertia[k][i];
    }
    return e;
}

double gf_particles_potential_energy(const gf_particles *p, const double gravity[3]) {
    double e = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        if (p->inv_mass[i] == 0.0)
            continue;
        double gx = gravity[0] * p->x[0][i] + gravity[1] * p->x[1][i] + gravity[2] * p->x[2][i];
        e -= gx / p->inv_mass[i];
    }
    return e;
}

double gf_particles_thickness(const gf_particles *p, size_t i) {
    const double a = p->dim[0][i], b = p->dim[1][i], c = p->dim[2][i];
    switch (p->shape[i]) {
    case GF_SHAPE_SPHERE:
    case GF_SHAPE_CAPSULE:
        return a;
    case GF_SHAPE_BOX:
        return fmin(a, fmin(b, c));
    case GF_SHAPE_CYLINDER:
        return fmin(a, b);
    case GF_SHAPE_CLUMP:
        if (p->clumps && p->clump[i] >= 0 && (size_t)p->clump[i] < p->clumps->count) {
            const gf_clump *t = &p->clumps->item[p->clump[i]];
            double r = INFINITY;
            for (int k = 0; k < t->count; ++k)
                r = fmin(r, t->radius[k]);
            return a * r;
        }
        return p->radius[i];
    default:
        return p->radius[i];
    }
}
