#include "scenario/bodies.h"
#include "body/shape_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/collide.h"
#include "core/vec.h"

/* The orientation of the frame the user describes: a unit quaternion, or an angle about an axis. */
static gf_status read_orientation(gf_config_block *b, const char *where, double q[4]) {
    q[0] = 1.0;
    q[1] = q[2] = q[3] = 0.0;
    int has_q = gf_config_has(b, "orientation"), has_axis = gf_config_has(b, "axis");
    if (has_q && has_axis)
        return GF_ERROR(GF_ERR_INPUT, "%s: give Body.orientation or Body.axis and angle, not both",
                        where);
    if (has_axis) {
        double axis[3], angle = 0.0;
        GF_TRY(gf_config_require_vec3(b, "axis", axis));
        GF_TRY(gf_config_require_double(b, "angle", &angle));
        GF_TRY(gf_config_check_range(b, "angle", angle, -1e6, 1e6));
        double len = gf_norm(axis);
        if (!(len > 0.0) || !isfinite(len))
            return GF_ERROR(GF_ERR_INPUT, "%s: Body.axis must be a nonzero finite vector", where);
        double s = sin(0.5 * angle) / len;
        q[0] = cos(0.5 * angle);
        q[1] = s * axis[0];
        q[2] = s * axis[1];
        q[3] = s * axis[2];
        return GF_OK;
    }
    if (!has_q)
        return GF_OK;
    double v[4];
    GF_TRY(gf_config_get_quat(b, "orientation", q, v));
    double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
    if (!(fabs(len - 1.0) <= 1e-6))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Body.orientation has norm %g: a rotation is a unit quaternion", where,
                        len);
    for (int k = 0; k < 4; ++k)
        q[k] = v[k] / len;
    return GF_OK;
}

/* One Body block as a particle record (id not set). */
static gf_status read_body(gf_config_block *b, gf_config_block *root, const gf_materials *m,
                           const gf_clumps *clumps, gf_particle *rec, const char *where) {
    gf_shape s;
    GF_TRY(gf_bodies_read_shape(b, root, clumps, NULL, &s));
    double x[3], q[4], zero[3] = {0.0, 0.0, 0.0};
    GF_TRY(gf_config_require_vec3(b, "position", x));
    GF_TRY(read_orientation(b, where, q));
    int material = 0;
    GF_TRY(gf_materials_lookup(m, b, "material", &material));
    char motion[32];
    GF_TRY(gf_config_get_string(b, "motion", "dynamic", motion, sizeof motion));
    int dynamic = strcmp(motion, "dynamic") == 0;
    if (!dynamic && strcmp(motion, "fixed") != 0 && strcmp(motion, "kinematic") != 0)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Body.motion '%s' is not one of dynamic, fixed, kinematic", where,
                        motion);
    gf_particle_make(rec, 0, x, &s, clumps, dynamic ? m->density[material] : 0.0, material);
    if (s.type == GF_SHAPE_CLUMP) {
        /* The user placed the frame of the members: the centre of mass and principal frame
         * follow from the template. */
        const gf_clump *c = &clumps->item[s.clump];
        double com[3] = {c->com_input[0] * s.dim[0], c->com_input[1] * s.dim[0],
                         c->com_input[2] * s.dim[0]},
               off[3];
        gf_quat_rotate(q, com, off);
        for (int d = 0; d < 3; ++d)
            rec->x[d] = x[d] + off[d];
        gf_quat_mul(q, c->q_input, rec->q);
    } else {
        memcpy(rec->q, q, sizeof rec->q);
    }
    if (strcmp(motion, "fixed") != 0) {
        GF_TRY(gf_config_get_vec3(b, "velocity", zero, rec->v));
        GF_TRY(gf_config_get_vec3(b, "angular_velocity", zero, rec->w));
    }
    for (int d = 0; d < 3; ++d)
        if (!isfinite(rec->v[d]) || !isfinite(rec->w[d]) || !isfinite(rec->x[d]))
            return GF_ERROR(GF_ERR_INPUT, "%s: Body has a non-finite position or velocity", where);
    return GF_OK;
}

static void pose_of(const gf_particle *rec, const gf_clumps *clumps, gf_body_pose *pose) {
    pose->shape = &rec->shape;
    pose->clumps = clumps;
    memcpy(pose->x, rec->x, sizeof pose->x);
    memcpy(pose->q, rec->q, sizeof pose->q);
}

/* A body against the domain, the walls and the obstacles. */
static gf_status check_placement(const gf_particle *rec, const gf_clumps *clumps, const gf_walls *w,
                                 const double lo[3], const double hi[3], const int periodic[3],
                                 const char *where) {
    gf_body_pose pa;
    pose_of(rec, clumps, &pa);
    double tol =
        gf_touch_tolerance(fabs(rec->x[0]) + fabs(rec->x[1]) + fabs(rec->x[2]) + rec->radius);
    for (int d = 0; d < 3; ++d) {
        if (periodic[d]) {
            if (rec->x[d] < lo[d] || rec->x[d] >= hi[d])
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: the body's centre of mass %g along %c lies outside the "
                                "periodic domain [%g, %g)",
                                where, rec->x[d], "xyz"[d], lo[d], hi[d]);
            continue;
        }
        /* The body's extent along the axis: its support points in the body frame. */
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            double e[3] = {0.0, 0.0, 0.0}, eb[3], sp[3], sw[3];
            e[d] = sgn;
            gf_quat_rotate_inv(rec->q, e, eb);
            gf_shape_support(&rec->shape, clumps, eb, sp);
            gf_quat_rotate(rec->q, sp, sw);
            double reach = rec->x[d] + sw[d];
            if ((sgn < 0 && reach < lo[d] - tol) || (sgn > 0 && reach > hi[d] + tol))
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: the body reaches %g along %c, outside the domain [%g, %g]",
                                where, reach, "xyz"[d], lo[d], hi[d]);
        }
    }
    double depth;
    int k;
    GF_TRY(gf_bodies_wall_overlap(&pa, w, &depth, &k));
    if (depth > tol) {
        char what[256];
        return GF_ERROR(GF_ERR_INPUT, "%s: the body overlaps %s by %g m", where,
                        gf_walls_describe(w, k, what, sizeof what), depth);
    }
    return GF_OK;
}

/* The overlap of a body with mesh k: exact for spheres and clumps (their member spheres against
 * the surface), for other shapes that of the bounding sphere (they make no contacts with meshes,
 * so they must stay clear of them). */
static gf_status deepest(void *ctx, int32_t key, const gf_contact_point *p) {
    (void)key;
    double *depth = ctx;
    *depth = fmax(*depth, -p->gap);
    return GF_OK;
}

/* How deep the placed body reaches into mesh k: spheres and clumps by their spheres, other
 * shapes by their contacts with the mesh's triangles. */
static gf_status mesh_overlap(const gf_body_pose *pose, const gf_walls *w, size_t k, double r,
                              double *depth) {
    const gf_shape *s = pose->shape;
    *depth = 0.0;
    if (s->type == GF_SHAPE_SPHERE) {
        *depth = gf_walls_mesh_depth(w, k, pose->x, s->dim[0]);
        return GF_OK;
    }
    if (s->type != GF_SHAPE_CLUMP) {
        if (gf_walls_mesh_depth(w, k, pose->x, r) <= 0.0)
            return GF_OK; /* its bounding sphere is clear */
        int32_t *tri = NULL;
        size_t cap = 0;
        gf_status st = gf_collide_mesh(pose, w->mesh[k], w->mesh_x[k], w->mesh_q[k], 0.0, &tri,
                                       &cap, deepest, depth);
        free(tri);
        return st;
    }
    const gf_clump *cl = &pose->clumps->item[s->clump];
    for (int j = 0; j < cl->count; ++j) {
        double rel[3], off[3], c[3];
        for (int e = 0; e < 3; ++e)
            rel[e] = s->dim[0] * cl->centre[j][e];
        gf_quat_rotate(pose->q, rel, off);
        for (int e = 0; e < 3; ++e)
            c[e] = pose->x[e] + off[e];
        *depth = fmax(*depth, gf_walls_mesh_depth(w, k, c, s->dim[0] * cl->radius[j]));
    }
    return GF_OK;
}

gf_status gf_bodies_wall_overlap(const gf_body_pose *pose, const gf_walls *w, double *depth,
                                 int *which) {
    *depth = 0.0;
    *which = -1;
    const double r = gf_shape_bounding_radius(pose->shape, pose->clumps);
    for (size_t k = 0; k < w->count + w->nbox + w->ncyl; ++k) {
        int body = k < w->count             ? (int)k
                   : k < w->count + w->nbox ? GF_BOX_BASE + (int)(k - w->count)
                                            : GF_CYL_BASE + (int)(k - w->count - w->nbox);
        /* Its bounding sphere clear of the wall or obstacle: most bodies, at no cost. */
        double n[3];
        double dist = body < GF_BOX_BASE ? gf_walls_distance(w, k, pose->x)
                                         : gf_walls_obstacle_distance(w, body, pose->x, n);
        if (dist >= r)
            continue;
        gf_shape so;
        gf_body_pose pb = {&so, NULL, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
        gf_walls_body(w, body, &so, pb.x, pb.q);
        double d;
        GF_TRY(gf_collide_overlap(pose, &pb, &d));
        if (d > *depth) {
            *depth = d;
            *which = body;
        }
    }
    for (size_t k = 0; k < w->nmesh; ++k) {
        double d;
        GF_TRY(mesh_overlap(pose, w, k, r, &d));
        if (d > *depth) {
            *depth = d;
            *which = GF_MESH_BASE + (int)k;
        }
    }
    return GF_OK;
}

int gf_bodies_blocked(const gf_walls *w, const gf_particle *rec, const gf_clumps *clumps) {
    if (!gf_walls_overlap(w, rec->x, rec->radius))
        return 0;
    if (rec->shape.type == GF_SHAPE_SPHERE)
        return 1;
    gf_body_pose pose = {&rec->shape,
                         clumps,
                         {rec->x[0], rec->x[1], rec->x[2]},
                         {rec->q[0], rec->q[1], rec->q[2], rec->q[3]}};
    double depth;
    int which;
    if (gf_bodies_wall_overlap(&pose, w, &depth, &which) != GF_OK) {
        gf_error_clear(); /* undecided: blocked, alike on every rank */
        return 1;
    }
    return depth >
           gf_touch_tolerance(fabs(rec->x[0]) + fabs(rec->x[1]) + fabs(rec->x[2]) + rec->radius);
}

gf_status gf_bodies_configure(gf_config_block *root, const gf_materials *m, const gf_clumps *clumps,
                              const gf_walls *w, const double lo[3], const double hi[3],
                              const int periodic[3], int64_t first_id, gf_particles *out,
                              int64_t *count, double *max_radius) {
    size_t n = gf_config_section_count(root, "Body");
    *count = (int64_t)n;
    *max_radius = 0.0;
    if (n == 0)
        return GF_OK;
    gf_particle *recs = gf_malloc(n, sizeof *recs);
    char(*where)[512] = gf_malloc(n, sizeof *where);
    gf_status st = recs && where ? GF_OK : gf_error_status();
    for (size_t k = 0; k < n && st == GF_OK; ++k) {
        gf_config_block *b = gf_config_section_nth(root, "Body", k);
        gf_config_block_where(b, where[k], sizeof where[k]);
        st = read_body(b, root, m, clumps, &recs[k], where[k]);
        if (st == GF_OK) {
            recs[k].id = first_id + (int64_t)k;
            *max_radius = fmax(*max_radius, recs[k].radius);
            st = check_placement(&recs[k], clumps, w, lo, hi, periodic, where[k]);
        }
    }
    /* Every pair once: a handful of bodies is placed by hand. */
    for (size_t a = 0; a < n && st == GF_OK; ++a)
        for (size_t b = a + 1; b < n && st == GF_OK; ++b) {
            double d[3] = {recs[a].x[0] - recs[b].x[0], recs[a].x[1] - recs[b].x[1],
                           recs[a].x[2] - recs[b].x[2]};
            if (gf_norm(d) >= recs[a].radius + recs[b].radius)
                continue;
            gf_body_pose pa, pb;
            pose_of(&recs[a], clumps, &pa);
            pose_of(&recs[b], clumps, &pb);
            double depth;
            st = gf_collide_overlap(&pa, &pb, &depth);
            double tol = gf_touch_tolerance(gf_norm(recs[a].x) + gf_norm(recs[b].x) +
                                            recs[a].radius + recs[b].radius);
            if (st == GF_OK && depth > tol)
                st = GF_ERROR(GF_ERR_INPUT, "%s: the body overlaps the body of %s by %g m",
                              where[b], where[a], depth);
        }
    for (size_t k = 0; k < n && st == GF_OK && out; ++k)
        st = gf_particles_add(out, &recs[k]);
    free(recs);
    free(where);
    return st;
}

gf_status gf_bodies_check_clear(const gf_particles *bodies, const gf_particles *p) {
    for (size_t k = 0; k < bodies->n_local; ++k) {
        gf_shape sk = gf_particles_shape(bodies, k);
        for (size_t i = 0; i < p->n_local; ++i) {
            double d[3] = {bodies->x[0][k] - p->x[0][i], bodies->x[1][k] - p->x[1][i],
                           bodies->x[2][k] - p->x[2][i]};
            if (gf_norm(d) >= bodies->radius[k] + p->radius[i])
                continue;
            gf_shape si = gf_particles_shape(p, i);
            gf_body_pose a, b;
            gf_particles_pose(bodies, k, &sk, &a);
            gf_particles_pose(p, i, &si, &b);
            double depth;
            GF_TRY(gf_collide_overlap(&a, &b, &depth));
            double tol = gf_touch_tolerance(bodies->radius[k] + p->radius[i] + fabs(p->x[0][i]) +
                                            fabs(p->x[1][i]) + fabs(p->x[2][i]));
            if (depth > tol)
                return GF_ERROR(GF_ERR_INPUT,
                                "body %lld (a %s at %g %g %g) overlaps the %s %lld at %g %g %g "
                                "by %g m: move the body, or the lattice or particle file that "
                                "placed the %s",
                                (long long)bodies->id[k], gf_shape_name(sk.type), bodies->x[0][k],
                                bodies->x[1][k], bodies->x[2][k], gf_shape_name(si.type),
                                (long long)p->id[i], p->x[0][i], p->x[1][i], p->x[2][i], depth,
                                gf_shape_name(si.type));
        }
    }
    return GF_OK;
}
