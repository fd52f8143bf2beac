#include "granflow/solver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/vec.h"

void gf_solver_params_default(gf_solver_params *prm) {
    prm->model = GF_MODEL_MAXDISS;
    prm->mode = GF_SWEEP_GAUSS_SEIDEL;
    prm->check_every = 1;
    prm->warm_start = 1;
    prm->max_iterations = 100;
    prm->tolerance = 1e-6;
    prm->relaxation = 1.0;
    prm->error_reduction = 0.1;
}

const char *gf_solver_model_name(gf_contact_model model) {
    switch (model) {
    case GF_MODEL_FRICTIONLESS:
        return "frictionless";
    case GF_MODEL_COULOMB:
        return "coulomb";
    case GF_MODEL_MAXDISS:
        return "max_dissipation";
    }
    return "?";
}

gf_status gf_solver_configure(gf_solver_params *prm, gf_config_block *root) {
    gf_solver_params_default(prm);
    gf_config_block *b = gf_config_section(root, "Solver");
    if (!b)
        return gf_error_status();
    char model[64];
    GF_TRY(gf_config_get_string(b, "model", gf_solver_model_name(prm->model), model, sizeof model));
    if (strcmp(model, "frictionless") == 0)
        prm->model = GF_MODEL_FRICTIONLESS;
    else if (strcmp(model, "coulomb") == 0)
        prm->model = GF_MODEL_COULOMB;
    else if (strcmp(model, "max_dissipation") == 0)
        prm->model = GF_MODEL_MAXDISS;
    else {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: Solver.model '%s' is unknown (frictionless, coulomb, max_dissipation)",
                        gf_config_block_where(b, where, sizeof where), model);
    }
    char mode[64];
    GF_TRY(gf_config_get_string(b, "mode", "gauss_seidel", mode, sizeof mode));
    if (strcmp(mode, "gauss_seidel") == 0)
        prm->mode = GF_SWEEP_GAUSS_SEIDEL;
    else if (strcmp(mode, "jacobi") == 0)
        prm->mode = GF_SWEEP_JACOBI;
    else {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT, "%s: Solver.mode '%s' is unknown (gauss_seidel, jacobi)",
                        gf_config_block_where(b, where, sizeof where), mode);
    }
    GF_TRY(gf_config_get_long(b, "check_every", prm->check_every, &prm->check_every));
    GF_TRY(gf_config_check_range(b, "check_every", (double)prm->check_every, 1, 1e9));
    GF_TRY(gf_config_get_bool(b, "warm_start", prm->warm_start, &prm->warm_start));
    GF_TRY(gf_config_get_long(b, "max_iterations", prm->max_iterations, &prm->max_iterations));
    GF_TRY(gf_config_check_range(b, "max_iterations", (double)prm->max_iterations, 1, 1e9));
    GF_TRY(gf_config_get_double(b, "tolerance", prm->tolerance, &prm->tolerance));
    GF_TRY(gf_config_check_range(b, "tolerance", prm->tolerance, 0.0, 1.0));
    GF_TRY(gf_config_get_double(b, "relaxation", prm->relaxation, &prm->relaxation));
    GF_TRY(gf_config_check_range(b, "relaxation", prm->relaxation, 1e-3, 1.0));
    GF_TRY(gf_config_get_double(b, "error_reduction", prm->error_reduction, &prm->error_reduction));
    GF_TRY(gf_config_check_range(b, "error_reduction", prm->error_reduction, 0.0, 1.0));
    return GF_OK;
}

/* Sphere-sphere and sphere-wall blocks are diag(a_n, a_t, a_t) up to rounding; the kernel then
 * has a closed form. */
static gf_status kernel_maxdiss_auto(const double A[9], const double b[3], double mu, double x[3]) {
    double tol = 1e-12 * A[0];
    if (fabs(A[1]) <= tol && fabs(A[2]) <= tol && fabs(A[5]) <= tol &&
        fabs(A[4] - A[8]) <= 1e-12 * A[4])
        return gf_contact_kernel_maxdiss_sphere(A, b, mu, x);
    return gf_contact_kernel_maxdiss(A, b, mu, x);
}

gf_status gf_solver_init(gf_solver *s, const gf_solver_params *prm) {
    memset(s, 0, sizeof *s);
    s->prm = *prm;
    switch (prm->model) {
    case GF_MODEL_FRICTIONLESS:
        s->kernel = gf_contact_kernel_frictionless;
        break;
    case GF_MODEL_COULOMB:
        s->kernel = gf_contact_kernel_coulomb;
        break;
    case GF_MODEL_MAXDISS:
        s->kernel = kernel_maxdiss_auto;
        break;
    }
    return GF_OK;
}

void gf_solver_free(gf_solver *s) {
    for (int k = 0; k < 6; ++k) {
        free(s->A[k]);
        free(s->iI[k]);
    }
    for (int k = 0; k < 3; ++k)
        free(s->dl[k]);
    memset(s, 0, sizeof *s);
}

static void sym_mul(const double S[6], const double x[3], double y[3]) {
    y[0] = S[0] * x[0] + S[1] * x[1] + S[2] * x[2];
    y[1] = S[1] * x[0] + S[3] * x[1] + S[4] * x[2];
    y[2] = S[2] * x[0] + S[4] * x[1] + S[5] * x[2];
}

/* Adds the world-frame block  m^-1 E - [r]x I^-1 [r]x  of one body at lever arm r to K. */
static void add_body_block(double K[3][3], double im, const double iI[6], const double r[3]) {
    for (int c = 0; c < 3; ++c) {
        double e[3] = {0.0, 0.0, 0.0};
        e[c] = 1.0;
        /* Column c: m^-1 e_c + (I^-1 (r x e_c)) x r. */
        double rxe[3], t[3], col[3];
        gf_cross(r, e, rxe);
        sym_mul(iI, rxe, t);
        gf_cross(t, r, col);
        for (int i = 0; i < 3; ++i)
            K[i][c] += col[i] + (i == c ? im : 0.0);
    }
}

static gf_status reserve(double **arr, int n, size_t *cap, size_t need) {
    if (need <= *cap)
        return GF_OK;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    for (int k = 0; k < n; ++k)
        GF_TRY(gf_grow((void **)&arr[k], c, sizeof **arr));
    *cap = c;
    return GF_OK;
}

gf_status gf_solver_prepare(gf_solver *s, const gf_particles *p, const gf_contacts *c) {
    size_t nb = p->n_local + p->n_ghost;
    GF_TRY(reserve(s->iI, 6, &s->capb, nb));
    GF_TRY(reserve(s->A, 6, &s->capc, c->count));
    if (s->prm.mode == GF_SWEEP_JACOBI)
        GF_TRY(reserve(s->dl, 3, &s->capdl, c->count));
    for (size_t i = 0; i < nb; ++i) {
        double m[6];
        gf_particles_inv_inertia_world(p, i, m);
        for (int k = 0; k < 6; ++k)
            s->iI[k][i] = m[k];
    }
    for (size_t j = 0; j < c->count; ++j) {
        double K[3][3] = {{0}};
        int32_t a = c->i1[j], b = c->i2[j];
        double iIa[6], iIb[6];
        for (int k = 0; k < 6; ++k)
            iIa[k] = s->iI[k][a];
        const double ra[3] = {c->r1[0][j], c->r1[1][j], c->r1[2][j]};
        add_body_block(K, p->inv_mass[a], iIa, ra);
        if (b >= 0) {
            for (int k = 0; k < 6; ++k)
                iIb[k] = s->iI[k][b];
            const double rb[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
            add_body_block(K, p->inv_mass[b], iIb, rb);
        }
        const double *axes[3];
        double n[3] = {c->n[0][j], c->n[1][j], c->n[2][j]};
        double t[3] = {c->t[0][j], c->t[1][j], c->t[2][j]};
        double o[3] = {c->o[0][j], c->o[1][j], c->o[2][j]};
        axes[0] = n;
        axes[1] = t;
        axes[2] = o;
        /* Q^T K Q with Q = [n t o]; symmetric, store the upper triangle. */
        double Kq[3][3];
        for (int r = 0; r < 3; ++r)
            for (int col = 0; col < 3; ++col) {
                double sum = 0.0;
                for (int i = 0; i < 3; ++i)
                    for (int k = 0; k < 3; ++k)
                        sum += axes[r][i] * K[i][k] * axes[col][k];
                Kq[r][col] = sum;
            }
        s->A[0][j] = Kq[0][0];
        s->A[1][j] = 0.5 * (Kq[0][1] + Kq[1][0]);
        s->A[2][j] = 0.5 * (Kq[0][2] + Kq[2][0]);
        s->A[3][j] = Kq[1][1];
        s->A[4][j] = 0.5 * (Kq[1][2] + Kq[2][1]);
        s->A[5][j] = Kq[2][2];
    }
    return GF_OK;
}

/* Applies the world impulse P at lever arm r to body i with sign sgn. */
static inline void apply_impulse(gf_particles *p, const gf_solver *s, int32_t i, double sgn,
                                 const double P[3], const double r[3]) {
    double im = sgn * p->inv_mass[i];
    p->v[0][i] += im * P[0];
    p->v[1][i] += im * P[1];
    p->v[2][i] += im * P[2];
    double L[3], dw[3];
    gf_cross(r, P, L);
    const double iI[6] = {s->iI[0][i], s->iI[1][i], s->iI[2][i],
                          s->iI[3][i], s->iI[4][i], s->iI[5][i]};
    sym_mul(iI, L, dw);
    p->w[0][i] += sgn * dw[0];
    p->w[1][i] += sgn * dw[1];
    p->w[2][i] += sgn * dw[2];
}

static inline void point_velocity(const gf_particles *p, int32_t i, const double r[3],
                                  double out[3]) {
    const double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
    gf_cross(w, r, out);
    out[0] += p->v[0][i];
    out[1] += p->v[1][i];
    out[2] += p->v[2][i];
}

/* Relative velocity at contact j and the kernel's right-hand side, b = -(relative velocity
 * without this contact's own reaction) - gap term; returns the new block impulse in lk. */
static inline gf_status solve_block(const gf_solver *s, const gf_particles *p, const gf_walls *w,
                                    const gf_contacts *c, size_t j, double inv_dt, double lk[3]) {
    int32_t a = c->i1[j], bb = c->i2[j];
    const double r1[3] = {c->r1[0][j], c->r1[1][j], c->r1[2][j]};
    double va[3], vb[3];
    point_velocity(p, a, r1, va);
    if (bb >= 0) {
        const double r2[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
        point_velocity(p, bb, r2, vb);
    } else {
        const double *wv = w->velocity[-1 - bb];
        vb[0] = wv[0];
        vb[1] = wv[1];
        vb[2] = wv[2];
    }
    double dv[3] = {va[0] - vb[0], va[1] - vb[1], va[2] - vb[2]};
    const double n[3] = {c->n[0][j], c->n[1][j], c->n[2][j]};
    const double t[3] = {c->t[0][j], c->t[1][j], c->t[2][j]};
    const double o[3] = {c->o[0][j], c->o[1][j], c->o[2][j]};
    const double A[9] = {s->A[0][j], s->A[1][j], s->A[2][j], s->A[1][j], s->A[3][j],
                         s->A[4][j], s->A[2][j], s->A[4][j], s->A[5][j]};
    const double l0[3] = {c->lambda[0][j], c->lambda[1][j], c->lambda[2][j]};
    double gap = c->gap[j] * inv_dt;
    double gap_term = gap < 0.0 ? s->prm.error_reduction * gap : gap;
    double b[3];
    b[0] = -gf_dot(n, dv) + (A[0] * l0[0] + A[1] * l0[1] + A[2] * l0[2]) - gap_term;
    b[1] = -gf_dot(t, dv) + (A[3] * l0[0] + A[4] * l0[1] + A[5] * l0[2]);
    b[2] = -gf_dot(o, dv) + (A[6] * l0[0] + A[7] * l0[1] + A[8] * l0[2]);
    gf_status st = s->kernel(A, b, c->mu[j], lk);
    if (st != GF_OK)
        return GF_ERROR(st, "contact between particles %lld and %lld (gap %g): %s",
                        (long long)p->id[a], bb >= 0 ? (long long)p->id[bb] : (long long)bb,
                        c->gap[j], gf_error_message());
    return GF_OK;
}

/* Applies the impulse change dl (contact frame) of contact j to both bodies. */
static inline void apply_block(const gf_solver *s, gf_particles *p, const gf_contacts *c, size_t j,
                               const double dl[3]) {
    double P[3];
    for (int d = 0; d < 3; ++d)
        P[d] = dl[0] * c->n[d][j] + dl[1] * c->t[d][j] + dl[2] * c->o[d][j];
    const double r1[3] = {c->r1[0][j], c->r1[1][j], c->r1[2][j]};
    apply_impulse(p, s, c->i1[j], 1.0, P, r1);
    if (c->i2[j] >= 0) {
        const double r2[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
        apply_impulse(p, s, c->i2[j], -1.0, P, r2);
    }
}

gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, const gf_solver_comm *comm, gf_solver_result *res) {
    const int jacobi = s->prm.mode == GF_SWEEP_JACOBI;
    const double relax = s->prm.relaxation, inv_dt = 1.0 / dt;
    const int parallel = comm && comm->sync;
    const size_t nlocal = p->n_local;
    res->iterations = 0;
    res->residual = 0.0;
    res->converged = 0;
    /* Warm-start impulses enter the velocities before the first sweep. */
    for (size_t j = 0; j < c->count; ++j) {
        const double l[3] = {c->lambda[0][j], c->lambda[1][j], c->lambda[2][j]};
        if (l[0] != 0.0 || l[1] != 0.0 || l[2] != 0.0)
            apply_block(s, p, c, j, l);
    }
    if (parallel)
        GF_TRY(comm->sync(comm->ctx, p));
    double max_dl = 0.0, max_l = 0.0;
    for (long it = 0; it < s->prm.max_iterations; ++it) {
        if (it % s->prm.check_every == 0)
            max_dl = max_l = 0.0;
        for (size_t j = 0; j < c->count; ++j) {
            double lk[3];
            GF_TRY(solve_block(s, p, w, c, j, inv_dt, lk));
            /* Relaxation: every update in Jacobi mode; in Gauss-Seidel mode the updates of
             * contacts with a ghost, whose owner sums them with those of other ranks computed
             * from the same old velocity (block Jacobi across ranks). Relaxing here rather
             * than at the owner keeps velocities and impulses consistent. */
            int couples = c->i1[j] >= (int32_t)nlocal || c->i2[j] >= (int32_t)nlocal;
            double wgt = (jacobi || couples) ? relax : 1.0;
            double dl[3];
            for (int d = 0; d < 3; ++d)
                dl[d] = wgt * (lk[d] - c->lambda[d][j]);
            if (jacobi) {
                for (int d = 0; d < 3; ++d)
                    s->dl[d][j] = dl[d];
            } else {
                for (int d = 0; d < 3; ++d)
                    c->lambda[d][j] += dl[d];
                apply_block(s, p, c, j, dl);
            }
            double ndl = fabs(dl[0]) + fabs(dl[1]) + fabs(dl[2]);
            double nl = fabs(lk[0]) + fabs(lk[1]) + fabs(lk[2]);
            max_dl = ndl > max_dl ? ndl : max_dl;
            max_l = nl > max_l ? nl : max_l;
        }
        if (jacobi)
            for (size_t j = 0; j < c->count; ++j) {
                const double dl[3] = {s->dl[0][j], s->dl[1][j], s->dl[2][j]};
                for (int d = 0; d < 3; ++d)
                    c->lambda[d][j] += dl[d];
                apply_block(s, p, c, j, dl);
            }
        if (parallel)
            GF_TRY(comm->sync(comm->ctx, p));
        res->iterations = it + 1;
        if ((it + 1) % s->prm.check_every != 0 && it + 1 < s->prm.max_iterations)
            continue;
        /* Every rank must stop after the same sweep: the decision is global. */
        double m[2] = {max_dl, max_l};
        if (comm && comm->max)
            GF_TRY(comm->max(comm->ctx, m, 2));
        res->residual = m[1] > 0.0 ? m[0] / m[1] : 0.0;
        if (res->residual <= s->prm.tolerance) {
            res->converged = 1;
            break;
        }
    }
    if (s->prm.max_iterations == 0 || c->count == 0)
        res->converged = 1;
    return GF_OK;
}
