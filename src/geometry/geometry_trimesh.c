/* Triangle meshes in the geometry: configuration, motion and surface velocity.
 *
 *  Mesh {                                     // in Domain, repeatable
 *      file "hopper.stl";  scale 0.001;  offset < 0, 0, 0.1 >;   // an STL file, or:
 *      shape rectangle;  centre < .. >;  normal < .. >;  edge < 1, 0, 0 >;  width;  height;
 *      shape disc;       centre;  normal;  radius;  hole 0;
 *      shape cylinder;   centre;  axis;  radius;  length;  caps false;
 *      shape cone;       centre;  axis;  radius;  radius_end;  length;  caps false;
 *      segments 48;                         // around circles
 *      pivot < .. >;                        // the point it turns about (default: centre, or
 *                                           // the origin for files)
 *      velocity < .. >;  angular_velocity < .. >;
 *      material steel;
 *  }
 *
 * A mesh keeps its triangles in its own frame (corners less the pivot at time 0) and moves as a
 * rigid body: the frame's origin at mesh_x, turned by mesh_q. Its pose advances exactly for a
 * constant angular velocity (a rotation by |omega| dt about omega each step), so a drum's
 * position after many turns has only the rounding of its quaternion's products. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry.h"
#include "core/log.h"
#include "core/vec.h"

void gf_walls_free(gf_walls *w) {
    for (size_t k = 0; k < w->nmesh; ++k) {
        gf_trimesh_free(w->mesh[k]);
        free(w->mesh[k]);
        w->mesh[k] = NULL;
    }
    w->nmesh = 0;
}

gf_status gf_walls_add_mesh(gf_walls *w, size_t nt, const double *corners, const double pivot[3],
                            const double velocity[3], const double omega[3], int material) {
    if (w->nmesh >= GF_MAX_MESHES)
        return GF_ERROR(GF_ERR_INPUT, "at most %d meshes are supported", GF_MAX_MESHES);
    for (int d = 0; d < 3; ++d)
        if (!isfinite(pivot[d]) || !isfinite(velocity[d]) || !isfinite(omega[d]))
            return GF_ERROR(GF_ERR_INPUT,
                            "a mesh's pivot, velocity and angular velocity must be finite");
    double *local = gf_malloc(9 * nt + 1, sizeof *local);
    gf_trimesh *m = gf_malloc(1, sizeof *m);
    if (!local || !m) {
        free(local);
        free(m);
        return gf_error_status();
    }
    for (size_t k = 0; k < 3 * nt; ++k)
        for (int d = 0; d < 3; ++d)
            local[3 * k + d] = corners[3 * k + d] - pivot[d];
    gf_trimesh_init(m);
    gf_status st = gf_trimesh_build(m, nt, local);
    free(local);
    if (st != GF_OK) {
        free(m);
        return st;
    }
    size_t k = w->nmesh++;
    w->mesh[k] = m;
    double reach = 0.0;
    for (size_t v = 0; v < m->nv; ++v)
        reach = fmax(reach, gf_norm(m->v[v]));
    w->mesh_reach[k] = reach;
    for (int d = 0; d < 3; ++d) {
        w->mesh_x[k][d] = pivot[d];
        w->mesh_omega[k][d] = omega[d];
        w->velocity[GF_MESH_BASE + k][d] = velocity[d];
    }
    w->mesh_q[k][0] = 1.0;
    w->mesh_q[k][1] = w->mesh_q[k][2] = w->mesh_q[k][3] = 0.0;
    w->material[GF_MESH_BASE + k] = material;
    return GF_OK;
}

int gf_walls_turning(const gf_walls *w, int body) {
    if (body < GF_MESH_BASE)
        return 0;
    const double *o = w->mesh_omega[body - GF_MESH_BASE];
    return o[0] != 0.0 || o[1] != 0.0 || o[2] != 0.0;
}

void gf_walls_angular_velocity(const gf_walls *w, int body, double omega[3]) {
    if (gf_walls_turning(w, body))
        memcpy(omega, w->mesh_omega[body - GF_MESH_BASE], 3 * sizeof *omega);
    else
        omega[0] = omega[1] = omega[2] = 0.0;
}

void gf_walls_surface_velocity(const gf_walls *w, int body, const double p[3], double v[3]) {
    memcpy(v, w->velocity[body], 3 * sizeof *v);
    if (!gf_walls_turning(w, body))
        return;
    size_t k = (size_t)(body - GF_MESH_BASE);
    double r[3], o[3];
    for (int d = 0; d < 3; ++d)
        r[d] = p[d] - w->mesh_x[k][d];
    gf_cross(w->mesh_omega[k], r, o);
    for (int d = 0; d < 3; ++d)
        v[d] += o[d];
}

double gf_walls_max_speed(const gf_walls *w) {
    double s = 0.0;
    for (size_t k = 0; k < GF_MAX_BODIES; ++k)
        s = fmax(s, gf_norm(w->velocity[k]));
    for (size_t k = 0; k < w->nmesh; ++k)
        s = fmax(s, gf_norm(w->velocity[GF_MESH_BASE + k]) +
                        gf_norm(w->mesh_omega[k]) * w->mesh_reach[k]);
    return s;
}

/* Mesh k's frame coordinates of the world point x. */
static void to_mesh(const gf_walls *w, size_t k, const double x[3], double local[3]) {
    double d[3];
    for (int i = 0; i < 3; ++i)
        d[i] = x[i] - w->mesh_x[k][i];
    gf_quat_rotate_inv(w->mesh_q[k], d, local);
}

int gf_walls_mesh_overlap(const gf_walls *w, size_t k, const double x[3], double r) {
    double local[3];
    to_mesh(w, k, x, local);
    return gf_trimesh_overlap(w->mesh[k], local, r);
}

double gf_walls_mesh_depth(const gf_walls *w, size_t k, const double x[3], double r) {
    double local[3];
    to_mesh(w, k, x, local);
    return gf_trimesh_depth(w->mesh[k], local, r);
}

void gf_walls_advance_meshes(gf_walls *w, double dt) {
    for (size_t k = 0; k < w->nmesh; ++k) {
        for (int d = 0; d < 3; ++d)
            w->mesh_x[k][d] += dt * w->velocity[GF_MESH_BASE + k][d];
        const double *o = w->mesh_omega[k];
        double rate = gf_norm(o);
        if (!(rate > 0.0))
            continue;
        double half = 0.5 * rate * dt, s = sin(half) / rate;
        const double turn[4] = {cos(half), s * o[0], s * o[1], s * o[2]};
        double q[4];
        gf_quat_mul(turn, w->mesh_q[k], q);
        double len = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int i = 0; i < 4; ++i)
            w->mesh_q[k][i] = q[i] / len;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                              */

static gf_status mesh_soup(const gf_walls *walls, gf_config_block *b, double **corners, size_t *nt,
                           double pivot[3]) {
    static const double zero[3] = {0.0, 0.0, 0.0}, ez[3] = {0.0, 0.0, 1.0}, ex[3] = {1.0, 0.0, 0.0};
    char file[1024], shape[32];
    GF_TRY(gf_config_get_string(b, "file", "", file, sizeof file));
    GF_TRY(gf_config_get_string(b, "shape", "", shape, sizeof shape));
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    if ((file[0] != '\0') == (shape[0] != '\0'))
        return GF_ERROR(GF_ERR_INPUT, "%s: a Mesh takes either a file or a shape", where);
    long segments;
    GF_TRY(gf_config_get_long(b, "segments", 48, &segments));
    GF_TRY(gf_config_check_range(b, "segments", (double)segments, 3, 100000));
    if (file[0]) {
        double scale, offset[3], axis[3], angle;
        GF_TRY(gf_config_get_double(b, "scale", 1.0, &scale));
        GF_TRY(gf_config_check_range(b, "scale", scale, 1e-12, 1e12));
        GF_TRY(gf_config_get_vec3(b, "offset", zero, offset));
        GF_TRY(gf_config_get_vec3(b, "rotation_axis", ez, axis));
        GF_TRY(gf_config_get_double(b, "rotation_angle", 0.0, &angle));
        GF_TRY(gf_config_check_range(b, "rotation_angle", angle, -1e6, 1e6));
        double len = gf_norm(axis);
        if (!(len > 0.0) || !isfinite(len))
            return GF_ERROR(GF_ERR_INPUT, "%s: Mesh.rotation_axis must be a nonzero finite vector",
                            where);
        const double s = sin(0.5 * angle) / len,
                     q[4] = {cos(0.5 * angle), s * axis[0], s * axis[1], s * axis[2]};
        gf_status read = walls->stl_read ? walls->stl_read(walls->stl_ctx, file, corners, nt)
                                         : gf_trimesh_read_stl(file, corners, nt);
        GF_TRY(gf_error_context(read, "%s", where));
        for (size_t k = 0; k < 3 * *nt; ++k) { /* scaled, turned, then moved */
            double *p = *corners + 3 * k, turned[3];
            const double scaled[3] = {scale * p[0], scale * p[1], scale * p[2]};
            gf_quat_rotate(q, scaled, turned);
            for (int d = 0; d < 3; ++d)
                p[d] = turned[d] + offset[d];
        }
        return gf_config_get_vec3(b, "pivot", zero, pivot);
    }
    double c[3];
    GF_TRY(gf_config_require_vec3(b, "centre", c));
    GF_TRY(gf_config_get_vec3(b, "pivot", c, pivot));
    gf_status st;
    if (strcmp(shape, "rectangle") == 0) {
        double n[3], e[3], w, h;
        GF_TRY(gf_config_require_vec3(b, "normal", n));
        GF_TRY(gf_config_get_vec3(b, "edge", ex, e));
        GF_TRY(gf_config_require_double(b, "width", &w));
        GF_TRY(gf_config_require_double(b, "height", &h));
        GF_TRY(gf_config_check_range(b, "width", w, 1e-300, 1e300));
        GF_TRY(gf_config_check_range(b, "height", h, 1e-300, 1e300));
        st = gf_trimesh_rectangle(c, n, e, w, h, 0.0, corners, nt);
    } else if (strcmp(shape, "disc") == 0) {
        double n[3], r, hole;
        GF_TRY(gf_config_require_vec3(b, "normal", n));
        GF_TRY(gf_config_require_double(b, "radius", &r));
        GF_TRY(gf_config_check_range(b, "radius", r, 0.0, 1e300));
        GF_TRY(gf_config_get_double(b, "hole", 0.0, &hole));
        GF_TRY(gf_config_check_range(b, "hole", hole, 0.0, 1e300));
        if (!(hole < r))
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: a disc's hole (%g m) must be smaller than its "
                            "radius (%g m)",
                            where, hole, r);
        st = gf_trimesh_disc(c, n, r, hole, (int)segments, corners, nt);
    } else if (strcmp(shape, "cylinder") == 0 || strcmp(shape, "cone") == 0) {
        double a[3], r, r2, length;
        int caps;
        GF_TRY(gf_config_get_vec3(b, "axis", ez, a));
        GF_TRY(gf_config_require_double(b, "radius", &r));
        GF_TRY(gf_config_require_double(b, "length", &length));
        GF_TRY(gf_config_check_range(b, "length", length, 1e-300, 1e300));
        GF_TRY(gf_config_check_range(b, "radius", r, 0.0, 1e300));
        r2 = r;
        if (shape[1] == 'o') { /* cone */
            GF_TRY(gf_config_require_double(b, "radius_end", &r2));
            GF_TRY(gf_config_check_range(b, "radius_end", r2, 0.0, 1e300));
        }
        GF_TRY(gf_config_get_bool(b, "caps", 0, &caps));
        /* Pieces about as long along the axis as around: no long thin triangles. */
        double piece = 2.0 * M_PI * fmax(r, r2) / (double)segments;
        st = gf_trimesh_frustum(c, a, length, r, r2, (int)segments, caps, piece, corners, nt);
    } else {
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: unknown mesh shape '%s' (rectangle, disc, cylinder or cone)", where,
                        shape);
    }
    return gf_error_context(st, "%s", where);
}

/* A mesh against the domain's box: wholly outside, no particle can ever touch it (an STL file in
 * millimetres read as metres is the usual cause), so it is refused unless it moves (it may move
 * in); reaching beyond the box, its part outside is inert, which is warned about. */
static gf_status mesh_in_box(gf_config_block *b, const double *corners, size_t nt, int moves,
                             const double lo[3], const double hi[3]) {
    double mlo[3] = {INFINITY, INFINITY, INFINITY}, mhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t k = 0; k < 3 * nt; ++k)
        for (int d = 0; d < 3; ++d) {
            mlo[d] = fmin(mlo[d], corners[3 * k + d]);
            mhi[d] = fmax(mhi[d], corners[3 * k + d]);
        }
    int outside = 0, beyond = 0;
    for (int d = 0; d < 3; ++d) {
        /* within rounding of the box's own coordinates counts as on it */
        double tol = 1e-9 * fmax(hi[d] - lo[d], fmax(fabs(lo[d]), fabs(hi[d])));
        outside |= mhi[d] < lo[d] - tol || mlo[d] > hi[d] + tol;
        beyond |= mlo[d] < lo[d] - tol || mhi[d] > hi[d] + tol;
    }
    if (!beyond || nt == 0)
        return GF_OK;
    char where[512], file[1024], extent[512];
    gf_config_block_where(b, where, sizeof where);
    GF_TRY(gf_config_get_string(b, "file", "", file, sizeof file));
    snprintf(extent, sizeof extent,
             "spans [%g, %g] x [%g, %g] x [%g, %g] m, the domain [%g, %g] x [%g, %g] x [%g, %g] m",
             mlo[0], mhi[0], mlo[1], mhi[1], mlo[2], mhi[2], lo[0], hi[0], lo[1], hi[1], lo[2],
             hi[2]);
    char name[1100] = "the mesh";
    if (file[0])
        snprintf(name, sizeof name, "the mesh '%s'", file);
    if (outside && !moves)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: %s lies wholly outside the domain, where no particle can touch it: it "
                        "%s (a file in other units needs Mesh.scale, 0.001 for millimetres)",
                        where, name, extent);
    if (gf_log_rank() == 0)
        gf_log_warn(
            "%s: %s %s: it %s%s", where, name,
            outside ? "starts wholly outside the domain" : "reaches beyond the domain", extent,
            outside ? " (it moves, and may come in)" : "; its part outside can touch no particle");
    return GF_OK;
}

gf_status gf_geometry_configure_meshes(gf_walls *w, gf_config_block *db, const gf_materials *m,
                                       const double lo[3], const double hi[3]) {
    static const double zero[3] = {0.0, 0.0, 0.0};
    size_t n = gf_config_section_count(db, "Mesh");
    for (size_t k = 0; k < n; ++k) {
        gf_config_block *b = gf_config_section_nth(db, "Mesh", k);
        double *corners = NULL, pivot[3], v[3], omega[3];
        size_t nt = 0;
        int mat;
        gf_status st = mesh_soup(w, b, &corners, &nt, pivot);
        if (st == GF_OK)
            st = gf_config_get_vec3(b, "velocity", zero, v);
        if (st == GF_OK)
            st = gf_config_get_vec3(b, "angular_velocity", zero, omega);
        if (st == GF_OK)
            st = gf_materials_lookup(m, b, "material", &mat);
        if (st == GF_OK) {
            int moves = gf_norm(v) > 0.0 || gf_norm(omega) > 0.0 ||
                        gf_config_section_count(b, "Schedule") > 0;
            st = mesh_in_box(b, corners, nt, moves, lo, hi);
        }
        if (st == GF_OK) {
            char where[512];
            st = gf_error_context(gf_walls_add_mesh(w, nt, corners, pivot, v, omega, mat), "%s",
                                  gf_config_block_where(b, where, sizeof where));
        }
        free(corners);
        GF_TRY(st);
    }
    return GF_OK;
}
