#include "granflow/integrator.h"

#include <math.h>

#include "granflow/vec.h"

void gf_integrate_free_velocity(gf_particles *p, const double gravity[3], double dt) {
    /* Ghosts too: they take part in the solve, and the same arithmetic on the same state gives
     * their owners' result without a message. */
    for (size_t i = 0; i < p->n_local + p->n_ghost; ++i) {
        if (p->inv_mass[i] == 0.0)
            continue; /* infinite mass: unaffected by forces */
        p->v[0][i] += dt * gravity[0];
        p->v[1][i] += dt * gravity[1];
        p->v[2][i] += dt * gravity[2];
        double d0 = p->inv_inertia[0][i], d1 = p->inv_inertia[1][i], d2 = p->inv_inertia[2][i];
        if ((d0 == d1 && d1 == d2) || d0 == 0.0 || d1 == 0.0 || d2 == 0.0)
            continue; /* isotropic bodies have w x I w = 0 */
        /* Gyroscopic torque in the body frame, where I is diagonal. */
        const double q[4] = {p->q[0][i], p->q[1][i], p->q[2][i], p->q[3][i]};
        const double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        double wb[3], Lb[3], tb[3], dwb[3], dw[3];
        gf_quat_rotate_inv(q, w, wb);
        Lb[0] = wb[0] / d0;
        Lb[1] = wb[1] / d1;
        Lb[2] = wb[2] / d2;
        gf_cross(Lb, wb, tb); /* -w x L = L x w */
        dwb[0] = dt * d0 * tb[0];
        dwb[1] = dt * d1 * tb[1];
        dwb[2] = dt * d2 * tb[2];
        gf_quat_rotate(q, dwb, dw);
        p->w[0][i] += dw[0];
        p->w[1][i] += dw[1];
        p->w[2][i] += dw[2];
    }
}

void gf_integrate_positions(gf_particles *p, double dt) {
    for (size_t i = 0; i < p->n_local; ++i) {
        p->x[0][i] += dt * p->v[0][i];
        p->x[1][i] += dt * p->v[1][i];
        p->x[2][i] += dt * p->v[2][i];
        double w0 = p->w[0][i], w1 = p->w[1][i], w2 = p->w[2][i];
        if (w0 == 0.0 && w1 == 0.0 && w2 == 0.0)
            continue;
        double q0 = p->q[0][i], q1 = p->q[1][i], q2 = p->q[2][i], q3 = p->q[3][i];
        /* dq/dt = 1/2 (0, w) * q for a world-frame angular velocity. */
        double h = 0.5 * dt;
        double n0 = q0 + h * (-w0 * q1 - w1 * q2 - w2 * q3);
        double n1 = q1 + h * (w0 * q0 + w1 * q3 - w2 * q2);
        double n2 = q2 + h * (w1 * q0 + w2 * q1 - w0 * q3);
        double n3 = q3 + h * (w2 * q0 + w0 * q2 - w1 * q1);
        double len = sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3);
        p->q[0][i] = n0 / len;
        p->q[1][i] = n1 / len;
        p->q[2][i] = n2 / len;
        p->q[3][i] = n3 / len;
    }
}
