#include "granflow/solver.h"

#include <float.h>
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
    prm->sweeps = 0;
    prm->tolerance = 1e-3;
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
    GF_TRY(gf_config_get_long(b, "sweeps", prm->sweeps, &prm->sweeps));
    GF_TRY(gf_config_check_range(b, "sweeps", (double)prm->sweeps, 0, 1e9));
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
    free(s->s1);
    free(s->s2);
    free(s->order);
    for (int k = 0; k < 6; ++k)
        free(s->snap[k]);
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

/* Applies the world impulse P at lever arm r to the body in velocity slot i with sign sgn. */
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

/* Relative velocity of the bodies of contact j at its point. */
static inline void contact_velocity(const gf_solver *s, const gf_particles *p, const gf_walls *w,
                                    const gf_contacts *c, size_t j, double dv[3]) {
    int32_t a = s->s1[j], bb = s->s2[j];
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
    dv[0] = va[0] - vb[0];
    dv[1] = va[1] - vb[1];
    dv[2] = va[2] - vb[2];
}

/* The normal velocity a contact must reach: minus the gap closed within the step, of a
 * penetration only the share error_reduction. */
static inline double gap_term(const gf_solver *s, const gf_contacts *c, size_t j, double inv_dt) {
    double gap = c->gap[j] * inv_dt;
    return gap < 0.0 ? s->prm.error_reduction * gap : gap;
}

/* The kernel's right-hand side, b = -(relative velocity without this contact's own reaction) -
 * gap term; returns the new block impulse in lk. */
static inline gf_status solve_block(const gf_solver *s, const gf_particles *p, const gf_walls *w,
                                    const gf_contacts *c, size_t j, double inv_dt, double lk[3]) {
    double dv[3];
    contact_velocity(s, p, w, c, j, dv);
    const double n[3] = {c->n[0][j], c->n[1][j], c->n[2][j]};
    const double t[3] = {c->t[0][j], c->t[1][j], c->t[2][j]};
    const double o[3] = {c->o[0][j], c->o[1][j], c->o[2][j]};
    const double A[9] = {s->A[0][j], s->A[1][j], s->A[2][j], s->A[1][j], s->A[3][j],
                         s->A[4][j], s->A[2][j], s->A[4][j], s->A[5][j]};
    const double l0[3] = {c->lambda[0][j], c->lambda[1][j], c->lambda[2][j]};
    double b[3];
    b[0] =
        -gf_dot(n, dv) + (A[0] * l0[0] + A[1] * l0[1] + A[2] * l0[2]) - gap_term(s, c, j, inv_dt);
    b[1] = -gf_dot(t, dv) + (A[3] * l0[0] + A[4] * l0[1] + A[5] * l0[2]);
    b[2] = -gf_dot(o, dv) + (A[6] * l0[0] + A[7] * l0[1] + A[8] * l0[2]);
    gf_status st = s->kernel(A, b, c->mu[j], lk);
    if (st != GF_OK) {
        int32_t bb = c->i2[j];
        return GF_ERROR(st, "contact between particles %lld and %lld (gap %g): %s",
                        (long long)p->id[c->i1[j]], bb >= 0 ? (long long)p->id[bb] : (long long)bb,
                        c->gap[j], gf_error_message());
    }
    return GF_OK;
}

/* Applies the impulse change dl (contact frame) of contact j to both bodies. */
static inline void apply_block(const gf_solver *s, gf_particles *p, const gf_contacts *c, size_t j,
                               const double dl[3]) {
    double P[3];
    for (int d = 0; d < 3; ++d)
        P[d] = dl[0] * c->n[d][j] + dl[1] * c->t[d][j] + dl[2] * c->o[d][j];
    const double r1[3] = {c->r1[0][j], c->r1[1][j], c->r1[2][j]};
    apply_impulse(p, s, s->s1[j], 1.0, P, r1);
    if (s->s2[j] >= 0) {
        const double r2[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
        apply_impulse(p, s, s->s2[j], -1.0, P, r2);
    }
}

/* Velocity slots of the contacts' bodies, and the sweep order: interior contacts first, then
 * those touching a body another rank updates too; returns how many are interior. */
static gf_status plan_sweeps(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                             const gf_solver_comm *comm, size_t *n_interior) {
    if (c->count > s->capo) {
        GF_TRY(gf_grow((void **)&s->s1, c->count, sizeof *s->s1));
        GF_TRY(gf_grow((void **)&s->s2, c->count, sizeof *s->s2));
        GF_TRY(gf_grow((void **)&s->order, c->count, sizeof *s->order));
        s->capo = c->count;
    }
    const int32_t *slot = comm ? comm->slot : NULL;
    const uint8_t *shared = comm ? comm->shared : NULL;
    if ((slot || shared) && comm->nslot != p->n_local + p->n_ghost)
        return GF_ERROR(GF_ERR_STATE,
                        "the solver's velocity slots describe %zu particles, but %zu are present "
                        "(the ghosts were not rebuilt after the particles changed)",
                        comm->nslot, p->n_local + p->n_ghost);
    size_t ni = 0;
    for (size_t j = 0; j < c->count; ++j) {
        int32_t a = c->i1[j], b = c->i2[j];
        s->s1[j] = slot ? slot[a] : a;
        s->s2[j] = b >= 0 && slot ? slot[b] : b;
        if (!shared || !(shared[a] || (b >= 0 && shared[b])))
            s->order[ni++] = (int32_t)j;
    }
    *n_interior = ni;
    if (!shared)
        return GF_OK;
    size_t k = ni;
    for (size_t j = 0; j < c->count; ++j)
        if (shared[c->i1[j]] || (c->i2[j] >= 0 && shared[c->i2[j]]))
            s->order[k++] = (int32_t)j;
    return GF_OK;
}

/* Velocity scale of the problem (see solver.h): the largest relative contact velocity plus
 * penetration recovery, before any reaction acts. */
static double reference_velocity(const gf_solver *s, const gf_particles *p, const gf_walls *w,
                                 const gf_contacts *c, double inv_dt) {
    double vref = 0.0;
    for (size_t j = 0; j < c->count; ++j) {
        double dv[3];
        contact_velocity(s, p, w, c, j, dv);
        double g = gap_term(s, c, j, inv_dt);
        double v = sqrt(gf_dot(dv, dv)) + (c->gap[j] < 0.0 ? -g : 0.0);
        vref = v > vref ? v : vref;
    }
    return vref;
}

/* The largest |v| + R |w| over the owned bodies. */
static double body_speed(const gf_particles *p) {
    double m = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        double v =
            sqrt(p->v[0][i] * p->v[0][i] + p->v[1][i] * p->v[1][i] + p->v[2][i] * p->v[2][i]);
        double w =
            sqrt(p->w[0][i] * p->w[0][i] + p->w[1][i] * p->w[1][i] + p->w[2][i] * p->w[2][i]);
        double u = v + p->radius[i] * w;
        m = u > m ? u : m;
    }
    return m;
}

static void snapshot(gf_solver *s, const gf_particles *p) {
    if (p->n_local == 0)
        return; /* nothing allocated, nothing to copy */
    for (int k = 0; k < 3; ++k) {
        memcpy(s->snap[k], p->v[k], p->n_local * sizeof(double));
        memcpy(s->snap[3 + k], p->w[k], p->n_local * sizeof(double));
    }
}

/* D of solver.h: the largest change of an owned body's surface velocity since the snapshot. */
static double velocity_change(const gf_solver *s, const gf_particles *p) {
    double m = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        double dv[3], dw[3];
        for (int k = 0; k < 3; ++k) {
            dv[k] = p->v[k][i] - s->snap[k][i];
            dw[k] = p->w[k][i] - s->snap[3 + k][i];
        }
        double u = sqrt(gf_dot(dv, dv)) + p->radius[i] * sqrt(gf_dot(dw, dw));
        m = u > m ? u : m;
    }
    return m;
}

/* One Gauss-Seidel pass over the contacts order[from .. to); *scale collects A_nn |lambda|. */
static gf_status sweep_gauss_seidel(gf_solver *s, gf_particles *p, const gf_walls *w,
                                    gf_contacts *c, size_t from, size_t to, double inv_dt,
                                    double *scale) {
    const double relax = s->prm.relaxation;
    const int32_t nlocal = (int32_t)p->n_local;
    for (size_t k = from; k < to; ++k) {
        size_t j = (size_t)s->order[k];
        double lk[3];
        GF_TRY(solve_block(s, p, w, c, j, inv_dt, lk));
        /* Updates of contacts with a body owned elsewhere may be damped (relaxation): the owner
         * adds them in full, so velocities and impulses stay consistent. */
        double wgt = (s->s1[j] >= nlocal || s->s2[j] >= nlocal) ? relax : 1.0;
        double dl[3];
        for (int d = 0; d < 3; ++d) {
            dl[d] = wgt * (lk[d] - c->lambda[d][j]);
            c->lambda[d][j] += dl[d];
        }
        apply_block(s, p, c, j, dl);
        double u = s->A[0][j] * fabs(c->lambda[0][j]);
        *scale = u > *scale ? u : *scale;
    }
    return GF_OK;
}

/* One Jacobi pass: every block from the velocities of the sweep's start, then all applied. */
static gf_status sweep_jacobi(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                              double inv_dt, double *scale) {
    const double relax = s->prm.relaxation;
    for (size_t j = 0; j < c->count; ++j) {
        double lk[3];
        GF_TRY(solve_block(s, p, w, c, j, inv_dt, lk));
        for (int d = 0; d < 3; ++d)
            s->dl[d][j] = relax * (lk[d] - c->lambda[d][j]);
    }
    for (size_t j = 0; j < c->count; ++j) {
        const double dl[3] = {s->dl[0][j], s->dl[1][j], s->dl[2][j]};
        for (int d = 0; d < 3; ++d)
            c->lambda[d][j] += dl[d];
        apply_block(s, p, c, j, dl);
        double u = s->A[0][j] * fabs(c->lambda[0][j]);
        *scale = u > *scale ? u : *scale;
    }
    return GF_OK;
}

/* Rounding level of the velocity changes, in units of the velocity scale of the step. */
#define GF_SOLVER_FLOOR (1000.0 * DBL_EPSILON)
/* Sweeps over which the mean contraction is measured. */
#define GF_SOLVER_WINDOW 10

gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, const gf_solver_comm *comm, gf_solver_result *res) {
    const int jacobi = s->prm.mode == GF_SWEEP_JACOBI;
    const double inv_dt = 1.0 / dt;
    const int parallel = comm && comm->sync;
    const int phases = parallel && !jacobi && comm->ncolors > 1 ? comm->ncolors : 1;
    const long fixed = s->prm.sweeps;
    const long nsweeps = fixed > 0 ? fixed : s->prm.max_iterations;
    const long every = s->prm.tolerance > 0.0 && s->prm.check_every > 0
                           ? s->prm.check_every
                           : (nsweeps > 0 ? nsweeps : 1);
    memset(res, 0, sizeof *res);
    res->converged = fixed > 0 ? -1 : 0;
    if ((!parallel && c->count == 0) || nsweeps <= 0) {
        res->converged = fixed > 0 ? -1 : c->count == 0;
        return GF_OK;
    }
    size_t n_interior = 0;
    GF_TRY(plan_sweeps(s, p, c, comm, &n_interior));
    if (fixed <= 0 && p->n_local > s->capv) {
        for (int k = 0; k < 6; ++k)
            GF_TRY(gf_grow((void **)&s->snap[k], p->n_local, sizeof(double)));
        s->capv = p->n_local;
    }
    /* Scales of the stopping test, from the free velocities. */
    double vref = 0.0, scale = 0.0;
    if (fixed <= 0) {
        vref = reference_velocity(s, p, w, c, inv_dt);
        scale = body_speed(p);
    }
    /* Warm-start impulses enter the velocities before the first sweep. */
    for (size_t j = 0; j < c->count; ++j) {
        const double l[3] = {c->lambda[0][j], c->lambda[1][j], c->lambda[2][j]};
        if (l[0] != 0.0 || l[1] != 0.0 || l[2] != 0.0)
            apply_block(s, p, c, j, l);
    }
    if (parallel)
        GF_TRY(comm->sync(comm->ctx, p));
    /* D of the last GF_SOLVER_WINDOW + 1 sweeps (D_k at hist[k % n]); -1: not measured. */
    double hist[GF_SOLVER_WINDOW + 1];
    const int nh = GF_SOLVER_WINDOW + 1;
    for (int h = 0; h < nh; ++h)
        hist[h] = -1.0;
    for (long k = 1; k <= nsweeps; ++k) {
        /* Sweeps are numbered from 1; tests after sweeps every, 2 every, ... and the last. */
        int test = fixed <= 0 && (k % every == 0 || k == nsweeps);
        int measure = fixed <= 0 && (s->prm.tolerance > 0.0 || k + nh > nsweeps);
        if (measure)
            snapshot(s, p);
        if (jacobi) {
            GF_TRY(sweep_jacobi(s, p, w, c, inv_dt, &scale));
            if (parallel)
                GF_TRY(comm->sync(comm->ctx, p));
        } else {
            /* Interior contacts share no body with another rank; then colour by colour. */
            GF_TRY(sweep_gauss_seidel(s, p, w, c, 0, n_interior, inv_dt, &scale));
            for (int col = 0; col < phases; ++col) {
                if (phases == 1 || col == comm->color)
                    GF_TRY(sweep_gauss_seidel(s, p, w, c, n_interior, c->count, inv_dt, &scale));
                if (parallel)
                    GF_TRY(comm->sync(comm->ctx, p));
            }
        }
        res->iterations = k;
        if (!measure)
            continue;
        hist[k % nh] = velocity_change(s, p);
        if (!test)
            continue;
        /* Every rank must stop after the same sweep: the decision is global. */
        long span = k - 1 < GF_SOLVER_WINDOW ? k - 1 : GF_SOLVER_WINDOW;
        double m[5] = {hist[k % nh], hist[(k - 1) % nh], hist[(k - span) % nh], vref, scale};
        if (comm && comm->max)
            GF_TRY(comm->max(comm->ctx, m, 5));
        /* The contraction: the slower of the last sweep's and the window's mean rate. */
        double rho = INFINITY;
        if (span > 0 && m[1] > 0.0 && m[2] > 0.0)
            rho = fmax(m[0] / m[1], pow(m[0] / m[2], 1.0 / (double)span));
        double floor = GF_SOLVER_FLOOR * fmax(m[3], m[4]);
        int done = m[0] <= floor || (rho < 1.0 && m[0] / (1.0 - rho) <= s->prm.tolerance * m[3]);
        res->reference = m[3];
        res->floor = floor;
        res->error = rho < 1.0 && m[0] > floor ? m[0] / (1.0 - rho) : m[0];
        res->residual = res->error == 0.0 ? 0.0 : (m[3] > 0.0 ? res->error / m[3] : INFINITY);
        res->converged = done;
        if (done && s->prm.tolerance > 0.0)
            break;
    }
    return GF_OK;
}
