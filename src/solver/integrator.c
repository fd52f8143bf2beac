#include "solver/integrator.h"

#include <float.h>
#include <math.h>

#include "core/vec.h"

/* q' = exp(dt (0, w) / 2) * q: the exact solution of dq/dt = (0, w) * q / 2 for a constant
 * world-frame w, renormalised against the drift of rounding. */
static void rotate_orientation(const double q[4], const double w[3], double dt, double out[4]) {
    double w2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    double t2 = 0.25 * dt * dt * w2; /* th^2, th = dt |w| / 2: the half angle of the turn */
    /* s = sin(th) / |w| and c = cos(th). A step turns a particle by far less than 1/8 rad, where
     * the Taylor series to th^12 is exact to rounding (the first term left out is below 1e-20
     * of the sum) and costs less than the two libm calls; it needs no |w| (no root) and no 0/0
     * at rest. */
    double s, c;
    if (t2 < 0.125 * 0.125) {
        /* 1/(2k+1)! and 1/(2k)! with alternating signs, for k = 6 down to 0. */
        static const double sin_k[7] = {1.0 / 6227020800.0,
                                        -1.0 / 39916800.0,
                                        1.0 / 362880.0,
                                        -1.0 / 5040.0,
                                        1.0 / 120.0,
                                        -1.0 / 6.0,
                                        1.0};
        static const double cos_k[7] = {1.0 / 479001600.0,
                                        -1.0 / 3628800.0,
                                        1.0 / 40320.0,
                                        -1.0 / 720.0,
                                        1.0 / 24.0,
                                        -0.5,
                                        1.0};
        double sr = 0.0, cr = 0.0;
        for (int k = 0; k < 7; ++k) {
            sr = sr * t2 + sin_k[k];
            cr = cr * t2 + cos_k[k];
        }
        s = 0.5 * dt * sr;
        c = cr;
    } else {
        double n = sqrt(w2), th = 0.5 * dt * n;
        s = sin(th) / n;
        c = cos(th);
    }
    double n0 = c * q[0] - s * (w[0] * q[1] + w[1] * q[2] + w[2] * q[3]);
    double n1 = c * q[1] + s * (w[0] * q[0] + w[1] * q[3] - w[2] * q[2]);
    double n2 = c * q[2] + s * (w[1] * q[0] + w[2] * q[1] - w[0] * q[3]);
    double n3 = c * q[3] + s * (w[2] * q[0] + w[0] * q[2] - w[1] * q[1]);
    /* A unit quaternion turned by a unit one: its squared length is 1 + e with e a few
     * rounding errors, where 1 / sqrt(1 + e) = 1 - e / 2 to within 3 e^2 / 8 (1e-30 for such
     * an e, below rounding for any |e| < 1e-9): one multiply-add instead of a root and a
     * division. Anything further (an orientation given unnormalised) takes the root. */
    double len2 = n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3;
    double e = len2 - 1.0;
    double inv = fabs(e) < 1e-9 ? 1.0 - 0.5 * e : 1.0 / sqrt(len2);
    out[0] = n0 * inv;
    out[1] = n1 * inv;
    out[2] = n2 * inv;
    out[3] = n3 * inv;
}

/* The world angular velocity R I^-1 R^T L of the orientation q. */
static void velocity_of_momentum(const double q[4], const double d[3], const double L[3],
                                 double w[3]) {
    double Lb[3];
    gf_quat_rotate_inv(q, L, Lb);
    Lb[0] *= d[0];
    Lb[1] *= d[1];
    Lb[2] *= d[2];
    gf_quat_rotate(q, Lb, w);
}

void gf_integrate_free_velocity(gf_particles *p, const double gravity[3], double dt) {
    /* Ghosts too: they take part in the solve, and the same arithmetic on the same state gives
     * their owners' result without a message. */
    for (size_t i = 0; i < p->n_local + p->n_ghost; ++i) {
        if (p->inv_mass[i] == 0.0)
            continue; /* infinite mass: unaffected by forces */
        p->v[0][i] += dt * gravity[0];
        p->v[1][i] += dt * gravity[1];
        p->v[2][i] += dt * gravity[2];
        double d[3] = {p->inv_inertia[0][i], p->inv_inertia[1][i], p->inv_inertia[2][i]};
        if ((d[0] == d[1] && d[1] == d[2]) || d[0] == 0.0 || d[1] == 0.0 || d[2] == 0.0)
            continue; /* isotropic bodies have w x I w = 0: w stays */
        /* Torque-free rotation conserves the world angular momentum L = R I R^T w. The free
         * velocity is the w' that gives back this L at the orientation the position update will
         * make from it, q' = exp(dt w' / 2) q: a fixed point, found by iteration (a contraction
         * for dt |w| (anisotropy) < 1, converging to rounding in a few rounds). An explicit step
         * of the gyroscopic term instead makes |L| drift by O(dt^2 |w|^2) per step. */
        const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
        double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        double wb[3], L[3];
        gf_quat_rotate_inv(q, w, wb);
        wb[0] /= d[0];
        wb[1] /= d[1];
        wb[2] /= d[2];
        gf_quat_rotate(q, wb, L);
        double scale = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
        for (int it = 0; it < 50; ++it) {
            double qn[4], wn[3];
            rotate_orientation(q, w, dt, qn);
            velocity_of_momentum(qn, d, L, wn);
            double change = fabs(wn[0] - w[0]) + fabs(wn[1] - w[1]) + fabs(wn[2] - w[2]);
            w[0] = wn[0];
            w[1] = wn[1];
            w[2] = wn[2];
            if (!(change > 4.0 * DBL_EPSILON * scale))
                break; /* converged (or NaN, which check_state reports) */
        }
        p->w[0][i] = w[0];
        p->w[1][i] = w[1];
        p->w[2][i] = w[2];
    }
}

void gf_integrate_positions(gf_particles *p, double dt) {
    for (size_t i = 0; i < p->n_local; ++i) {
        p->x[0][i] += dt * p->v[0][i];
        p->x[1][i] += dt * p->v[1][i];
        p->x[2][i] += dt * p->v[2][i];
        const double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        if (w[0] == 0.0 && w[1] == 0.0 && w[2] == 0.0)
            continue;
        const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
        double qn[4];
        rotate_orientation(q, w, dt, qn);
        p->q[0][i] = qn[0];
        p->q[1][i] = qn[1];
        p->q[2][i] = qn[2];
        p->q[3][i] = qn[3];
    }
}
