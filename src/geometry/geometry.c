#include "geometry/geometry.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/vec.h"

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
        w->velocity[k][d] = w->base_velocity[k][d] = velocity ? velocity[d] : 0.0;
    }
    w->material[k] = material;
    return GF_OK;
}

gf_status gf_walls_add_box(gf_walls *w, const double lo[3], const double hi[3], int material) {
    if (w->nbox >= GF_MAX_OBSTACLES)
        return GF_ERROR(GF_ERR_INPUT, "at most %d boxes are supported", GF_MAX_OBSTACLES);
    for (int d = 0; d < 3; ++d)
        if (!(hi[d] > lo[d]))
            return GF_ERROR(GF_ERR_INPUT, "a box needs max > min on every axis");
    size_t b = w->nbox++;
    for (int d = 0; d < 3; ++d) {
        w->box_lo[b][d] = lo[d];
        w->box_hi[b][d] = hi[d];
        w->velocity[GF_BOX_BASE + b][d] = 0.0;
    }
    w->material[GF_BOX_BASE + b] = material;
    return GF_OK;
}

gf_status gf_walls_add_cylinder(gf_walls *w, const double centre[3], const double axis[3],
                                double radius, double length, int material) {
    if (w->ncyl >= GF_MAX_OBSTACLES)
        return GF_ERROR(GF_ERR_INPUT, "at most %d cylinders are supported", GF_MAX_OBSTACLES);
    double len = gf_norm(axis);
    if (!(len > 0.0) || !(radius > 0.0) || !(length > 0.0))
        return GF_ERROR(GF_ERR_INPUT,
                        "a cylinder needs a non-zero axis and a positive radius and length");
    size_t c = w->ncyl++;
    for (int d = 0; d < 3; ++d) {
        w->cyl_centre[c][d] = centre[d];
        w->cyl_axis[c][d] = axis[d] / len;
        w->velocity[GF_CYL_BASE + c][d] = 0.0;
    }
    w->cyl_radius[c] = radius;
    w->cyl_half_length[c] = 0.5 * length;
    w->material[GF_CYL_BASE + c] = material;
    return GF_OK;
}

static double box_distance(const gf_walls *w, size_t b, const double x[3], double n[3]) {
    const double *lo = w->box_lo[b], *hi = w->box_hi[b];
    double q[3], out2 = 0.0;
    int inside = 1;
    for (int d = 0; d < 3; ++d) {
        q[d] = x[d] < lo[d] ? lo[d] : (x[d] > hi[d] ? hi[d] : x[d]);
        double e = x[d] - q[d];
        out2 += e * e;
        inside = inside && x[d] > lo[d] && x[d] < hi[d];
    }
    if (!inside && out2 > 0.0) {
        double dist = sqrt(out2);
        for (int d = 0; d < 3; ++d)
            n[d] = (x[d] - q[d]) / dist;
        return dist;
    }
    /* Inside (or on the surface): the nearest face. */
    double best = INFINITY;
    for (int d = 0; d < 3; ++d)
        for (int side = 0; side < 2; ++side) {
            double depth = side ? hi[d] - x[d] : x[d] - lo[d];
            if (depth < best) {
                best = depth;
                n[0] = n[1] = n[2] = 0.0;
                n[d] = side ? 1.0 : -1.0;
            }
        }
    return -best;
}

static double cylinder_distance(const gf_walls *w, size_t c, const double x[3], double n[3]) {
    const double *a = w->cyl_axis[c];
    double rel[3] = {x[0] - w->cyl_centre[c][0], x[1] - w->cyl_centre[c][1],
                     x[2] - w->cyl_centre[c][2]};
    double h = gf_dot(rel, a);
    double rad[3] = {rel[0] - h * a[0], rel[1] - h * a[1], rel[2] - h * a[2]};
    double rho = gf_norm(rad), R = w->cyl_radius[c], L = w->cyl_half_length[c];
    double u[3];
    if (rho > 0.0) {
        for (int d = 0; d < 3; ++d)
            u[d] = rad[d] / rho;
    } else {
        gf_orthonormal(a, u); /* on the axis: any radial direction */
    }
    double dr = rho - R, dh = fabs(h) - L;
    double sgn = h >= 0.0 ? 1.0 : -1.0;
    if (dr <= 0.0 && dh <= 0.0) {
        /* Inside: leave through the side or through the nearer cap. */
        if (-dr < -dh) {
            memcpy(n, u, sizeof u);
            return dr;
        }
        for (int d = 0; d < 3; ++d)
            n[d] = sgn * a[d];
        return dh;
    }
    if (dh <= 0.0) { /* beside the mantle */
        memcpy(n, u, sizeof u);
        return dr;
    }
    if (dr <= 0.0) { /* above or below a cap */
        for (int d = 0; d < 3; ++d)
            n[d] = sgn * a[d];
        return dh;
    }
    /* Beyond the rim. */
    double dist = hypot(dr, dh);
    for (int d = 0; d < 3; ++d)
        n[d] = (dr * u[d] + dh * sgn * a[d]) / dist;
    return dist;
}

double gf_walls_obstacle_distance(const gf_walls *w, int body, const double x[3],
                                  double normal[3]) {
    if (body >= GF_CYL_BASE)
        return cylinder_distance(w, (size_t)(body - GF_CYL_BASE), x, normal);
    return box_distance(w, (size_t)(body - GF_BOX_BASE), x, normal);
}

int gf_walls_overlap(const gf_walls *w, const double x[3], double r) {
    double n[3], xs = fabs(x[0]) + fabs(x[1]) + fabs(x[2]) + r;
    for (size_t k = 0; k < w->count; ++k) {
        const double *p = w->point[k];
        double tol = gf_touch_tolerance(xs + fabs(p[0]) + fabs(p[1]) + fabs(p[2]));
        if (gf_walls_distance(w, k, x) < r - tol)
            return 1;
    }
    for (size_t b = 0; b < w->nbox; ++b) {
        double bs = 0.0;
        for (int d = 0; d < 3; ++d)
            bs += fmax(fabs(w->box_lo[b][d]), fabs(w->box_hi[b][d]));
        if (box_distance(w, b, x, n) < r - gf_touch_tolerance(xs + bs))
            return 1;
    }
    for (size_t c = 0; c < w->ncyl; ++c) {
        const double *cc = w->cyl_centre[c];
        double cs =
            fabs(cc[0]) + fabs(cc[1]) + fabs(cc[2]) + w->cyl_radius[c] + w->cyl_half_length[c];
        if (cylinder_distance(w, c, x, n) < r - gf_touch_tolerance(xs + cs))
            return 1;
    }
    for (size_t k = 0; k < w->nmesh; ++k)
        if (gf_walls_mesh_overlap(w, k, x, r))
            return 1;
    return 0;
}

void gf_walls_advance(gf_walls *w, double dt) {
    for (size_t k = 0; k < w->count; ++k)
        for (int d = 0; d < 3; ++d)
            w->point[k][d] += dt * w->velocity[k][d];
    for (size_t b = 0; b < w->nbox; ++b)
        for (int d = 0; d < 3; ++d) {
            double s = dt * w->velocity[GF_BOX_BASE + b][d];
            w->box_lo[b][d] += s;
            w->box_hi[b][d] += s;
        }
    for (size_t c = 0; c < w->ncyl; ++c)
        for (int d = 0; d < 3; ++d)
            w->cyl_centre[c][d] += dt * w->velocity[GF_CYL_BASE + c][d];
    gf_walls_advance_meshes(w, dt);
}

void gf_walls_set_velocity(gf_walls *w, int body, const double velocity[3]) {
    for (int d = 0; d < 3; ++d)
        w->velocity[body][d] = w->base_velocity[body][d] = velocity[d];
}

static gf_status add_entry(gf_walls *w, int body, double t, const double velocity[3],
                           const double omega[3]) {
    if (w->nsched >= GF_MAX_SCHEDULE)
        return GF_ERROR(GF_ERR_INPUT, "at most %d schedule entries are supported", GF_MAX_SCHEDULE);
    if (!isfinite(t) || !isfinite(velocity[0] + velocity[1] + velocity[2]) ||
        !isfinite(omega[0] + omega[1] + omega[2]))
        return GF_ERROR(GF_ERR_INPUT, "a schedule entry needs a finite time and velocity");
    for (size_t k = 0; k < w->nsched; ++k)
        if (w->sched_body[k] == body && !(t > w->sched_time[k]))
            return GF_ERROR(GF_ERR_INPUT,
                            "schedule times must increase: %g follows %g for the same body", t,
                            w->sched_time[k]);
    size_t k = w->nsched++;
    w->sched_body[k] = body;
    w->sched_time[k] = t;
    memcpy(w->sched_velocity[k], velocity, sizeof w->sched_velocity[k]);
    memcpy(w->sched_omega[k], omega, sizeof w->sched_omega[k]);
    return GF_OK;
}

static int scheduled(const gf_walls *w, int body) {
    for (size_t k = 0; k < w->nsched; ++k)
        if (w->sched_body[k] == body)
            return 1;
    return 0;
}

gf_status gf_walls_add_schedule(gf_walls *w, int body, double t, const double velocity[3]) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    if (body >= GF_MESH_BASE)
        return gf_walls_add_mesh_schedule(w, (size_t)(body - GF_MESH_BASE), t, velocity, zero);
    return add_entry(w, body, t, velocity, zero);
}

gf_status gf_walls_add_mesh_schedule(gf_walls *w, size_t k, double t, const double velocity[3],
                                     const double omega[3]) {
    if (k >= w->nmesh)
        return GF_ERROR(GF_ERR_INPUT, "a schedule for mesh %zu of %zu", k, w->nmesh);
    int body = GF_MESH_BASE + (int)k;
    /* The mesh's own motion is in force until its first entry: apply_schedule restores it. */
    if (!scheduled(w, body)) {
        memcpy(w->base_velocity[body], w->velocity[body], sizeof w->base_velocity[body]);
        memcpy(w->mesh_base_omega[k], w->mesh_omega[k], sizeof w->mesh_base_omega[k]);
    }
    return add_entry(w, body, t, velocity, omega);
}

void gf_walls_apply_schedule(gf_walls *w, double t, double tol) {
    for (size_t k = 0; k < w->nsched; ++k) {
        int b = w->sched_body[k];
        memcpy(w->velocity[b], w->base_velocity[b], sizeof w->velocity[0]);
        if (b >= GF_MESH_BASE)
            memcpy(w->mesh_omega[b - GF_MESH_BASE], w->mesh_base_omega[b - GF_MESH_BASE],
                   sizeof w->mesh_omega[0]);
    }
    /* A body's entries come in increasing time: the last one reached wins. */
    for (size_t k = 0; k < w->nsched; ++k) {
        if (!(w->sched_time[k] <= t + tol))
            continue;
        int b = w->sched_body[k];
        memcpy(w->velocity[b], w->sched_velocity[k], sizeof w->velocity[0]);
        if (b >= GF_MESH_BASE)
            memcpy(w->mesh_omega[b - GF_MESH_BASE], w->sched_omega[k], sizeof w->mesh_omega[0]);
    }
}

gf_mesh_motion gf_mesh_motion_classify(size_t n, const double (*v)[3], const double (*omega)[3],
                                       double axis[3]) {
    axis[0] = axis[1] = axis[2] = 0.0;
    const double *ref = NULL;
    for (size_t i = 0; i < n; ++i) {
        if (v[i][0] != 0.0 || v[i][1] != 0.0 || v[i][2] != 0.0)
            return GF_MESH_GENERAL;
        double len = gf_norm(omega[i]);
        if (len == 0.0)
            continue;
        if (!ref) {
            ref = omega[i];
            continue;
        }
        double c[3];
        gf_cross(ref, omega[i], c);
        if (gf_norm(c) > 1e-12 * gf_norm(ref) * len)
            return GF_MESH_GENERAL;
    }
    if (!ref)
        return GF_MESH_STATIC;
    double len = gf_norm(ref);
    for (int d = 0; d < 3; ++d)
        axis[d] = ref[d] / len;
    return GF_MESH_FIXED_AXIS;
}

gf_mesh_motion gf_walls_mesh_motion(const gf_walls *w, size_t k, double axis[3]) {
    double v[GF_MAX_SCHEDULE + 1][3], o[GF_MAX_SCHEDULE + 1][3];
    int body = GF_MESH_BASE + (int)k;
    int any = scheduled(w, body);
    /* Its motion before its first entry; without entries its only one. */
    memcpy(v[0], any ? w->base_velocity[body] : w->velocity[body], sizeof v[0]);
    memcpy(o[0], any ? w->mesh_base_omega[k] : w->mesh_omega[k], sizeof o[0]);
    size_t n = 1;
    for (size_t e = 0; e < w->nsched; ++e)
        if (w->sched_body[e] == body) {
            memcpy(v[n], w->sched_velocity[e], sizeof v[0]);
            memcpy(o[n], w->sched_omega[e], sizeof o[0]);
            ++n;
        }
    return gf_mesh_motion_classify(n, (const double(*)[3])v, (const double(*)[3])o, axis);
}

/* The velocity and the Schedule blocks of geometry body `body` configured by block b. */
static gf_status read_motion(gf_walls *w, gf_config_block *b, int body) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    double v[3];
    GF_TRY(gf_config_get_vec3(b, "velocity", zero, v));
    gf_walls_set_velocity(w, body, v);
    size_t ns = gf_config_section_count(b, "Schedule");
    for (size_t k = 0; k < ns; ++k) {
        gf_config_block *sb = gf_config_section_nth(b, "Schedule", k);
        double t, sv[3];
        GF_TRY(gf_config_require_double(sb, "time", &t));
        GF_TRY(gf_config_require_vec3(sb, "velocity", sv));
        char where[512];
        GF_TRY(gf_error_context(gf_walls_add_schedule(w, body, t, sv), "%s",
                                gf_config_block_where(sb, where, sizeof where)));
    }
    return GF_OK;
}

/* The Schedule blocks of the Mesh blocks: Mesh block k is mesh k. An entry gives the whole
 * motion from its time on: velocity and angular_velocity default to zero, not to the previous
 * phase's. */
static gf_status read_mesh_schedules(gf_walls *w, gf_config_block *db) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    size_t n = gf_config_section_count(db, "Mesh");
    if (n != w->nmesh)
        return GF_ERROR(GF_ERR_STATE, "%zu Mesh blocks made %zu meshes", n, w->nmesh);
    for (size_t k = 0; k < n; ++k) {
        gf_config_block *b = gf_config_section_nth(db, "Mesh", k);
        size_t ns = gf_config_section_count(b, "Schedule");
        for (size_t j = 0; j < ns; ++j) {
            gf_config_block *sb = gf_config_section_nth(b, "Schedule", j);
            double t, v[3], o[3];
            GF_TRY(gf_config_require_double(sb, "time", &t));
            GF_TRY(gf_config_get_vec3(sb, "velocity", zero, v));
            GF_TRY(gf_config_get_vec3(sb, "angular_velocity", zero, o));
            char where[512];
            GF_TRY(gf_error_context(gf_walls_add_mesh_schedule(w, k, t, v, o), "%s",
                                    gf_config_block_where(sb, where, sizeof where)));
        }
    }
    return GF_OK;
}

gf_status gf_geometry_configure(gf_walls *w, double lo[3], double hi[3], int periodic[3],
                                gf_config_block *root, const gf_materials *m) {
    /* The STL reader chosen by the caller (collective under MPI) outlives the reset. */
    gf_stl_reader read = w->stl_read;
    const void *ctx = w->stl_ctx;
    gf_walls_init(w);
    w->stl_read = read;
    w->stl_ctx = ctx;
    gf_config_block *db = gf_config_section(root, "Domain");
    if (!db)
        return gf_error_status();
    GF_TRY(gf_config_require_vec3(db, "min", lo));
    GF_TRY(gf_config_require_vec3(db, "max", hi));
    for (int d = 0; d < 3; ++d) {
        char where[512];
        if (!(hi[d] > lo[d]))
            return GF_ERROR(GF_ERR_INPUT, "%s: Domain.max must exceed Domain.min on every axis",
                            gf_config_block_where(db, where, sizeof where));
        /* Beyond this, cell counts, decompositions and positions lose meaning (1e308 overflows
         * the box's extent itself). */
        if (!(fabs(lo[d]) <= GF_DOMAIN_MAX_COORD && fabs(hi[d]) <= GF_DOMAIN_MAX_COORD))
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: the box [%g, %g] along %c reaches beyond +-%g m, the largest "
                            "coordinate granflow takes",
                            gf_config_block_where(db, where, sizeof where), lo[d], hi[d], "xyz"[d],
                            GF_DOMAIN_MAX_COORD);
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
    static const double ones[3] = {1.0, 1.0, 1.0};
    double axes[3];
    GF_TRY(gf_config_get_vec3(db, "wall_axes", ones, axes));
    GF_TRY(gf_materials_lookup(m, db, "wall_material", &mat));
    if (box) {
        for (int d = 0; d < 3; ++d) {
            if (periodic[d] || axes[d] == 0.0)
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
        double p[3], n[3];
        int wm;
        GF_TRY(gf_config_require_vec3(b, "point", p));
        GF_TRY(gf_config_require_vec3(b, "normal", n));
        GF_TRY(gf_materials_lookup(m, b, "material", &wm));
        char where[512];
        GF_TRY(gf_error_context(gf_walls_add(w, p, n, zero, wm), "%s",
                                gf_config_block_where(b, where, sizeof where)));
        GF_TRY(read_motion(w, b, (int)w->count - 1));
    }
    size_t nb = gf_config_section_count(db, "Box");
    for (size_t k = 0; k < nb; ++k) {
        gf_config_block *b = gf_config_section_nth(db, "Box", k);
        double lo_b[3], hi_b[3];
        int bm;
        GF_TRY(gf_config_require_vec3(b, "min", lo_b));
        GF_TRY(gf_config_require_vec3(b, "max", hi_b));
        GF_TRY(gf_materials_lookup(m, b, "material", &bm));
        char where[512];
        GF_TRY(gf_error_context(gf_walls_add_box(w, lo_b, hi_b, bm), "%s",
                                gf_config_block_where(b, where, sizeof where)));
        GF_TRY(read_motion(w, b, GF_BOX_BASE + (int)w->nbox - 1));
    }
    size_t nc = gf_config_section_count(db, "Cylinder");
    for (size_t k = 0; k < nc; ++k) {
        gf_config_block *b = gf_config_section_nth(db, "Cylinder", k);
        double c[3], a[3], radius, length;
        static const double z[3] = {0.0, 0.0, 1.0};
        int cm;
        GF_TRY(gf_config_require_vec3(b, "centre", c));
        GF_TRY(gf_config_get_vec3(b, "axis", z, a));
        GF_TRY(gf_config_require_double(b, "radius", &radius));
        GF_TRY(gf_config_require_double(b, "length", &length));
        GF_TRY(gf_materials_lookup(m, b, "material", &cm));
        char where[512];
        GF_TRY(gf_error_context(gf_walls_add_cylinder(w, c, a, radius, length, cm), "%s",
                                gf_config_block_where(b, where, sizeof where)));
        GF_TRY(read_motion(w, b, GF_CYL_BASE + (int)w->ncyl - 1));
    }
    GF_TRY(gf_geometry_configure_meshes(w, db, m, lo, hi));
    return read_mesh_schedules(w, db);
}

void gf_walls_body(const gf_walls *w, int body, gf_shape *shape, double x[3], double q[4]) {
    q[0] = 1.0;
    q[1] = q[2] = q[3] = 0.0;
    if (body < GF_BOX_BASE) {
        *shape = (gf_shape){GF_SHAPE_PLANE, -1, {0.0, 0.0, 0.0}};
        memcpy(x, w->point[body], 3 * sizeof *x);
        gf_quat_from_z(w->normal[body], q);
    } else if (body < GF_CYL_BASE) {
        int b = body - GF_BOX_BASE;
        *shape = gf_shape_box(0.5 * (w->box_hi[b][0] - w->box_lo[b][0]),
                              0.5 * (w->box_hi[b][1] - w->box_lo[b][1]),
                              0.5 * (w->box_hi[b][2] - w->box_lo[b][2]));
        for (int d = 0; d < 3; ++d)
            x[d] = 0.5 * (w->box_lo[b][d] + w->box_hi[b][d]);
    } else {
        int c = body - GF_CYL_BASE;
        *shape = gf_shape_cylinder(w->cyl_radius[c], w->cyl_half_length[c]);
        memcpy(x, w->cyl_centre[c], 3 * sizeof *x);
        gf_quat_from_z(w->cyl_axis[c], q);
    }
}

const char *gf_walls_describe(const gf_walls *w, int body, char *buf, size_t size) {
    if (body < GF_BOX_BASE)
        snprintf(buf, size, "wall %d (point %g %g %g, normal %g %g %g)", body, w->point[body][0],
                 w->point[body][1], w->point[body][2], w->normal[body][0], w->normal[body][1],
                 w->normal[body][2]);
    else if (body < GF_CYL_BASE)
        snprintf(buf, size, "obstacle box %d", body - GF_BOX_BASE);
    else if (body < GF_MESH_BASE)
        snprintf(buf, size, "obstacle cylinder %d", body - GF_CYL_BASE);
    else
        snprintf(buf, size, "mesh %d", body - GF_MESH_BASE);
    return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* Run state                                                                                  */

/* Box corners (lo, hi) then cylinder centres, as checkpoints store them. */
static size_t obstacle_positions(const gf_walls *w, double *buf) {
    size_t n = 0;
    for (size_t b = 0; b < w->nbox; ++b) {
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->box_lo[b][d];
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->box_hi[b][d];
    }
    for (size_t c = 0; c < w->ncyl; ++c)
        for (int d = 0; d < 3; ++d)
            buf[n++] = w->cyl_centre[c][d];
    return n;
}

gf_status gf_walls_save(const gf_walls *w, gf_state *s) {
    int64_t nw = (int64_t)w->count;
    GF_TRY(gf_state_put_int(s, "wall_count", 1, &nw));
    if (w->count > 0)
        GF_TRY(gf_state_put_real(s, "wall_points", 3 * w->count, &w->point[0][0]));
    if (w->nmesh > 0) {
        /* Each mesh's pose: its pivot's position and its orientation. */
        double pose[7 * GF_MAX_MESHES];
        for (size_t k = 0; k < w->nmesh; ++k) {
            memcpy(&pose[7 * k], w->mesh_x[k], 3 * sizeof *pose);
            memcpy(&pose[7 * k + 3], w->mesh_q[k], 4 * sizeof *pose);
        }
        GF_TRY(gf_state_put_real(s, "mesh_poses", 7 * w->nmesh, pose));
    }
    double obs[9 * GF_MAX_OBSTACLES];
    size_t nobs = obstacle_positions(w, obs);
    return nobs > 0 ? gf_state_put_real(s, "obstacle_positions", nobs, obs) : GF_OK;
}

gf_status gf_walls_restore(gf_walls *w, const gf_state *s) {
    int64_t nw = 0;
    GF_TRY(gf_state_get_int(s, "wall_count", 1, &nw));
    if (nw != (int64_t)w->count)
        return GF_ERROR(GF_ERR_INPUT, "'%s' has %lld walls, the configuration %zu",
                        s->source ? s->source : "the state", (long long)nw, w->count);
    double point[GF_MAX_WALLS][3], pose[7 * GF_MAX_MESHES], obs[9 * GF_MAX_OBSTACLES];
    if (w->count > 0)
        GF_TRY(gf_state_get_real(s, "wall_points", 3 * w->count, &point[0][0]));
    if (w->nmesh > 0)
        GF_TRY(gf_state_get_real(s, "mesh_poses", 7 * w->nmesh, pose));
    size_t nobs = obstacle_positions(w, obs);
    int moved = nobs > 0 && gf_state_find(s, "obstacle_positions");
    if (moved)
        GF_TRY(gf_state_get_real(s, "obstacle_positions", nobs, obs));
    /* Only once every item was found: a refused state leaves the geometry as configured. */
    memcpy(w->point, point, w->count * sizeof point[0]);
    for (size_t k = 0; k < w->nmesh; ++k) {
        memcpy(w->mesh_x[k], &pose[7 * k], 3 * sizeof *pose);
        memcpy(w->mesh_q[k], &pose[7 * k + 3], 4 * sizeof *pose);
    }
    if (moved) {
        size_t n = 0;
        for (size_t b = 0; b < w->nbox; ++b) {
            for (int d = 0; d < 3; ++d)
                w->box_lo[b][d] = obs[n++];
            for (int d = 0; d < 3; ++d)
                w->box_hi[b][d] = obs[n++];
        }
        for (size_t c = 0; c < w->ncyl; ++c)
            for (int d = 0; d < 3; ++d)
                w->cyl_centre[c][d] = obs[n++];
    }
    return GF_OK;
}
