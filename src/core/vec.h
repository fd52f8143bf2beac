/* Small fixed-size vector and quaternion helpers, header-only so the hot loops inline them.
 * Vectors are double[3]; quaternions double[4] as (w, x, y, z). */
#ifndef GRANFLOW_VEC_H
#define GRANFLOW_VEC_H

#include <float.h>
#include <math.h>

static inline double gf_dot(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void gf_cross(const double a[3], const double b[3], double out[3]) {
    double c0 = a[1] * b[2] - a[2] * b[1];
    double c1 = a[2] * b[0] - a[0] * b[2];
    double c2 = a[0] * b[1] - a[1] * b[0];
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
}

static inline double gf_norm(const double a[3]) {
    return sqrt(gf_dot(a, a));
}

static inline void gf_axpy(double alpha, const double x[3], double y[3]) {
    y[0] += alpha * x[0];
    y[1] += alpha * x[1];
    y[2] += alpha * x[2];
}

/* A unit vector orthogonal to the unit vector n, chosen continuously away from the poles:
 * crossing with the axis least aligned with n keeps the result well conditioned. */
static inline void gf_orthonormal(const double n[3], double t[3]) {
    double ax = fabs(n[0]), ay = fabs(n[1]), az = fabs(n[2]);
    double e[3] = {0.0, 0.0, 0.0};
    if (ax <= ay && ax <= az)
        e[0] = 1.0;
    else if (ay <= az)
        e[1] = 1.0;
    else
        e[2] = 1.0;
    gf_cross(n, e, t);
    double len = gf_norm(t);
    t[0] /= len;
    t[1] /= len;
    t[2] /= len;
}

/* Rotates v by the unit quaternion q: q v q*. */
static inline void gf_quat_rotate(const double q[4], const double v[3], double out[3]) {
    const double u[3] = {q[1], q[2], q[3]};
    double t[3];
    gf_cross(u, v, t);
    t[0] *= 2.0;
    t[1] *= 2.0;
    t[2] *= 2.0;
    double ut[3];
    gf_cross(u, t, ut);
    out[0] = v[0] + q[0] * t[0] + ut[0];
    out[1] = v[1] + q[0] * t[1] + ut[1];
    out[2] = v[2] + q[0] * t[2] + ut[2];
}

/* Rotates v by the inverse of the unit quaternion q: q* v q. */
static inline void gf_quat_rotate_inv(const double q[4], const double v[3], double out[3]) {
    const double qc[4] = {q[0], -q[1], -q[2], -q[3]};
    gf_quat_rotate(qc, v, out);
}

/* The product a b: the rotation b followed by a. */
static inline void gf_quat_mul(const double a[4], const double b[4], double out[4]) {
    double w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    double x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    double y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    double z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    out[0] = w;
    out[1] = x;
    out[2] = y;
    out[3] = z;
}

/* The unit quaternion of the shortest rotation taking +z to the unit vector n (the body frame of
 * a plane or a cylinder's axis placed along n). */
static inline void gf_quat_from_z(const double n[3], double q[4]) {
    /* Half-way vector between z and n: q = (1 + n_z, -n_y, n_x, 0) normalised. */
    double w = 1.0 + n[2];
    if (w < 1e-12) { /* n = -z: half a turn about x */
        q[0] = 0.0;
        q[1] = 1.0;
        q[2] = 0.0;
        q[3] = 0.0;
        return;
    }
    double len = sqrt(w * w + n[0] * n[0] + n[1] * n[1]);
    q[0] = w / len;
    q[1] = -n[1] / len;
    q[2] = n[0] / len;
    q[3] = 0.0;
}

/* The rounding allowance of a distance computed from coordinates of total magnitude `scale`:
 * coordinates written as decimals are rounded to binary, and a distance computed from them
 * carries a few rounding errors of their magnitude, so a sphere placed exactly touching a surface
 * (in decimal) lands within this of touching, either side. */
static inline double gf_touch_tolerance(double scale) {
    return 16.0 * DBL_EPSILON * scale;
}

#endif
