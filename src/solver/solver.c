/* The contact solver: the records of a solve (contacts in sweep order, body records, joint
 * blocks of contact manifolds), the Gauss-Seidel and Jacobi sweeps with the rules that skip
 * blocks whose answer cannot change, the parallel phases (colours, pipelining), and the
 * stopping test. Over 1000 lines as one concept: the hot loop, its skipping state and the
 * stopping test's measurement share the records' layout and are tuned together (docs/physics.md,
 * "The stopping test of the solver"); the kernels are files of their own. */
#include "solver/solver.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/contact_kernel.h"
#include "granflow/manifold_kernel.h"
#include "core/vec.h"

_Static_assert(GF_MANIFOLD_MAX <= GF_MANIFOLD_KERNEL_MAX,
               "a collision query's manifold must fit one joint block");

void gf_solver_params_default(gf_solver_params *prm) {
    /* Whole, padding included: settings compare by memcmp (a stage keeps the solver's buffers
     * when its settings are the same). */
    memset(prm, 0, sizeof *prm);
    prm->model = GF_MODEL_MAXDISS;
    prm->mode = GF_SWEEP_GAUSS_SEIDEL;
    prm->check_every = 1;
    prm->warm_start = 1;
    prm->max_iterations = 200;
    prm->sweeps = 0;
    prm->tolerance = 1e-5;
    prm->relaxation = 1.0;
    prm->error_reduction = 0.1;
    prm->penetration_slop = 1e-6;
    prm->over_relaxation = 1.0;
    prm->quiet = GF_SOLVER_QUIET;
    prm->quiet_share = GF_SOLVER_QUIET_SHARE;
    prm->joint_manifolds = 1;
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
    char manifolds[64];
    GF_TRY(gf_config_get_string(b, "manifolds", "joint", manifolds, sizeof manifolds));
    if (strcmp(manifolds, "joint") == 0 || strcmp(manifolds, "pointwise") == 0)
        prm->joint_manifolds = strcmp(manifolds, "joint") == 0;
    else {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT, "%s: Solver.manifolds '%s' is unknown (joint, pointwise)",
                        gf_config_block_where(b, where, sizeof where), manifolds);
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
    GF_TRY(
        gf_config_get_double(b, "penetration_slop", prm->penetration_slop, &prm->penetration_slop));
    GF_TRY(gf_config_check_range(b, "penetration_slop", prm->penetration_slop, 0.0, 0.1));
    GF_TRY(gf_config_get_double(b, "over_relaxation", prm->over_relaxation, &prm->over_relaxation));
    GF_TRY(gf_config_check_range(b, "over_relaxation", prm->over_relaxation, 0.5, 1.9));
    return GF_OK;
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
        s->kernel = gf_contact_kernel_maxdiss;
        break;
    }
    return GF_OK;
}

size_t gf_solver_bytes_per_iteration(void) {
    /* The record, its skip state (seen, slack and its reference), two bodies and theirs (the
     * tick of the last change and the drift). */
    return sizeof(gf_solver_contact) + sizeof(uint32_t) + 2 * sizeof(double) +
           2 * (sizeof(gf_solver_body) + sizeof(uint32_t) + sizeof(double));
}

size_t gf_solver_general_count(const gf_solver *s) {
    return s->ngeneral;
}

void gf_solver_free(gf_solver *s) {
    free(s->rec);
    free(s->tmp);
    free(s->gen);
    free(s->joint);
    free(s->body);
    free(s->rec_of);
    free(s->part_of);
    free(s->dl);
    free(s->kappa);
    free(s->resist);
    free(s->dtau);
    free(s->rebound);
    free(s->drho);
    free(s->edge);
    free(s->snap);
    free(s->saved);
    free(s->saved_epoch);
    free(s->stamp);
    free(s->seen);
    free(s->drift);
    free(s->slack);
    free(s->slack_ref);
    free(s->quiet_u);
    free(s->head);
    memset(s, 0, sizeof *s);
}

static void sym_mul(const double S[6], const double x[3], double y[3]) {
    y[0] = S[0] * x[0] + S[1] * x[1] + S[2] * x[2];
    y[1] = S[1] * x[0] + S[3] * x[1] + S[4] * x[2];
    y[2] = S[2] * x[0] + S[4] * x[1] + S[5] * x[2];
}

/* A body whose inverse inertia is a multiple of the identity: its world frame is its own. */
static inline int isotropic(const gf_particles *p, size_t i) {
    return p->inv_inertia[0][i] == p->inv_inertia[1][i] &&
           p->inv_inertia[1][i] == p->inv_inertia[2][i];
}

/* Body i's rows r x e_k and inverse inertia times them (geometry: r only, no inertia). */
static void general_rows(const gf_particles *p, int32_t i, const double r[3],
                         const double *const e[3], double R[3][3], double M[3][3]) {
    double iI[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (i >= 0)
        gf_particles_inv_inertia_world(p, (size_t)i, iI);
    for (int k = 0; k < 3; ++k) {
        gf_cross(r, e[k], R[k]);
        sym_mul(iI, R[k], M[k]);
    }
}

/* The joint blocks: the points of one manifold of a pair of bodies (one collision query's
 * points 0, 1, ..., which detection lists one after the other; a mesh gives one manifold per
 * triangle, a clump one point per member), up to GF_MANIFOLD_MAX, with friction (without, the
 * points' blocks are those of a convex problem with separate constraints, whose Gauss-Seidel fixed
 * point is the joint answer already). Each gets its 3k x 3k Delassus matrix: A_(i,a),(l,c) = e_ia .
 * e_lc (im1 + im2) + (r1_i x e_ia) . iI1 (r1_l x e_lc) + the same for body 2. */
static gf_status joint_blocks(gf_solver *s, const gf_particles *p, const gf_contacts *c) {
    s->njoint = 0;
    if (s->prm.model == GF_MODEL_FRICTIONLESS || !s->prm.joint_manifolds)
        return GF_OK;
    for (size_t j = 0; j < c->count;) {
        const gf_solver_contact *r = &s->rec[j];
        size_t k = 1;
        if (r->general >= 0 && r->mu > 0.0 && c->point[j] == 0)
            while (j + k < c->count && k < GF_MANIFOLD_MAX && s->rec[j + k].general >= 0 &&
                   c->i1[j + k] == c->i1[j] && c->i2[j + k] == c->i2[j] &&
                   c->point[j + k] == (int32_t)k && s->rec[j + k].mu == r->mu)
                ++k;
        if (k < 2) {
            ++j;
            continue;
        }
        const int m3 = 3 * (int)k;
        GF_TRY(gf_reserve((void **)&s->joint, &s->capjoint, s->njoint + (size_t)(m3 * m3),
                          sizeof *s->joint));
        double *A = s->joint + s->njoint;
        gf_solver_general *g0 = &s->gen[r->general];
        g0->points = (int32_t)k;
        g0->joint = (int32_t)s->njoint;
        s->njoint += (size_t)(m3 * m3);
        int32_t a = c->i1[j], b = c->i2[j];
        double im = p->inv_mass[a] + (b >= 0 ? p->inv_mass[b] : 0.0);
        for (size_t i = 0; i < k; ++i) {
            const gf_solver_general *gi = &s->gen[r->general + (int32_t)i];
            if (i > 0)
                s->gen[r->general + (int32_t)i].points = 0;
            size_t ji = j + i;
            const double ei[3][3] = {{c->n[0][ji], c->n[1][ji], c->n[2][ji]},
                                     {c->t[0][ji], c->t[1][ji], c->t[2][ji]},
                                     {c->o[0][ji], c->o[1][ji], c->o[2][ji]}};
            for (size_t l = 0; l < k; ++l) {
                const gf_solver_general *gl = &s->gen[r->general + (int32_t)l];
                size_t jl = j + l;
                const double el[3][3] = {{c->n[0][jl], c->n[1][jl], c->n[2][jl]},
                                         {c->t[0][jl], c->t[1][jl], c->t[2][jl]},
                                         {c->o[0][jl], c->o[1][jl], c->o[2][jl]}};
                for (int ai = 0; ai < 3; ++ai)
                    for (int cl = 0; cl < 3; ++cl)
                        A[(3 * (int)i + ai) * m3 + 3 * (int)l + cl] =
                            im * gf_dot(ei[ai], el[cl]) + gf_dot(gi->R1[ai], gl->M1[cl]) +
                            gf_dot(gi->R2[ai], gl->M2[cl]);
            }
        }
        j += k;
    }
    return GF_OK;
}

/* The torque blocks of rolling and twisting resistance (gf_solver_resist), where the contacts
 * have it; their impulses and the geometry's turning are the solve's. */
static gf_status resist_blocks(gf_solver *s, const gf_particles *p, const gf_contacts *c) {
    s->resistive = c->resistive;
    if (!s->resistive)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&s->resist, &s->capresist, c->count, sizeof *s->resist));
    for (size_t j = 0; j < c->count; ++j) {
        gf_solver_resist *r = &s->resist[j];
        memset(r, 0, sizeof *r);
        r->roll = c->roll[j];
        r->twist = c->twist[j];
        if (r->roll == 0.0 && r->twist == 0.0)
            continue; /* a pair without resistance (its torque, warm started, goes to 0) */
        int32_t a = c->i1[j], b = c->i2[j];
        double ra = p->radius[a], rb = b >= 0 ? p->radius[b] : 0.0;
        r->reach = b >= 0 ? ra * rb / (ra + rb) : ra;
        const double e[3][3] = {{c->n[0][j], c->n[1][j], c->n[2][j]},
                                {c->t[0][j], c->t[1][j], c->t[2][j]},
                                {c->o[0][j], c->o[1][j], c->o[2][j]}};
        double I1[6], I2[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        gf_particles_inv_inertia_world(p, (size_t)a, I1);
        if (b >= 0)
            gf_particles_inv_inertia_world(p, (size_t)b, I2);
        for (int k = 0; k < 3; ++k) {
            sym_mul(I1, e[k], r->W1[k]);
            sym_mul(I2, e[k], r->W2[k]);
        }
        if (isotropic(p, (size_t)a) && (b < 0 || isotropic(p, (size_t)b))) {
            /* exactly isotropic (spheres, cubes): the block's closed form applies */
            r->B[0] = r->B[3] = r->B[5] =
                p->inv_inertia[0][a] + (b >= 0 ? p->inv_inertia[0][b] : 0.0);
        } else {
            int idx = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = k; l < 3; ++l)
                    r->B[idx++] = gf_dot(e[k], r->W1[l]) + gf_dot(e[k], r->W2[l]);
        }
        if (!(isfinite(r->B[0] + r->B[3] + r->B[5]) && r->roll >= 0.0 && r->twist >= 0.0))
            return GF_ERROR(GF_ERR_NUMERIC,
                            "contact between particles %lld and %lld: its torque block is invalid "
                            "(B = %g %g %g, rolling bound %g m, twisting bound %g m)",
                            (long long)p->id[a], b >= 0 ? (long long)p->id[b] : (long long)b,
                            r->B[0], r->B[3], r->B[5], r->roll, r->twist);
    }
    return GF_OK;
}

gf_status gf_solver_prepare(gf_solver *s, const gf_particles *p, const gf_contacts *c) {
    size_t nb = p->n_local + p->n_ghost;
    GF_TRY(gf_reserve((void **)&s->body, &s->capb, nb + GF_MAX_BODIES, sizeof *s->body));
    GF_TRY(gf_reserve((void **)&s->rec, &s->capc, c->count, sizeof *s->rec));
    s->nbody = nb;
    s->ncontact = c->count;
    s->ngeneral = 0;
    for (size_t j = 0; j < c->count; ++j) {
        gf_solver_contact *r = &s->rec[j];
        int32_t a = c->i1[j], b = c->i2[j];
        const double n[3] = {c->n[0][j], c->n[1][j], c->n[2][j]};
        const double t[3] = {c->t[0][j], c->t[1][j], c->t[2][j]};
        const double o[3] = {c->o[0][j], c->o[1][j], c->o[2][j]};
        r->contact = (int32_t)j;
        r->mu = s->prm.model == GF_MODEL_FRICTIONLESS ? 0.0 : c->mu[j];
        for (int d = 0; d < 3; ++d) {
            r->n[d] = n[d];
            r->t[d] = t[d];
        }
        const double r1[3] = {c->r1[0][j], c->r1[1][j], c->r1[2][j]};
        const double r2[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
        int sphere1 = p->shape[a] == GF_SHAPE_SPHERE && isotropic(p, (size_t)a);
        int sphere2 = b < 0 || (p->shape[b] == GF_SHAPE_SPHERE && isotropic(p, (size_t)b));
        double im1 = p->inv_mass[a], im2 = b >= 0 ? p->inv_mass[b] : 0.0;
        double an, at, A[6];
        if (sphere1 && sphere2) {
            r->general = -1;
            r->rho1 = -gf_dot(r1, n);
            r->rho2 = b >= 0 ? gf_dot(r2, n) : 0.0;
            double ii1 = p->inv_inertia[0][a], ii2 = b >= 0 ? p->inv_inertia[0][b] : 0.0;
            an = im1 + im2;
            at = an + ii1 * r->rho1 * r->rho1 + ii2 * r->rho2 * r->rho2;
            A[0] = an;
        } else {
            GF_TRY(gf_reserve((void **)&s->gen, &s->capg, s->ngeneral + 1, sizeof *s->gen));
            gf_solver_general *g = &s->gen[s->ngeneral];
            r->general = (int32_t)s->ngeneral++;
            g->points = 1;
            g->joint = -1;
            g->y = 0.0;
            g->pointwise = 0;
            r->rho1 = r->rho2 = 0.0;
            const double *e[3] = {n, t, o};
            general_rows(p, a, r1, e, g->R1, g->M1);
            general_rows(p, b, r2, e, g->R2, g->M2);
            /* A_kl = e_k . e_l (im1 + im2) + (r1 x e_k) . iI1 (r1 x e_l) + the same for body 2. */
            int idx = 0;
            for (int k = 0; k < 3; ++k)
                for (int l = k; l < 3; ++l) {
                    double sum = (k == l ? im1 + im2 : 0.0) + gf_dot(g->R1[k], g->M1[l]);
                    if (b >= 0)
                        sum += gf_dot(g->R2[k], g->M2[l]);
                    A[idx++] = sum;
                }
            memcpy(g->A, A, sizeof A);
            an = A[0];
            at = A[3];
        }
        if (!(an > 0.0) || !isfinite(an) || !isfinite(at) || !(r->mu >= 0.0))
            return GF_ERROR(GF_ERR_NUMERIC,
                            "contact between particles %lld and %lld (gap %g): its Delassus block "
                            "is invalid (A_nn = %g must be finite and > 0, mu = %g >= 0): a body "
                            "of infinite mass against another or a non-finite state",
                            (long long)p->id[a], b >= 0 ? (long long)p->id[b] : (long long)b,
                            c->gap[j], an, r->mu);
        r->an = an;
        r->inv_an = 1.0 / an;
        r->inv_at = 1.0 / at;
    }
    GF_TRY(resist_blocks(s, p, c));
    return joint_blocks(s, p, c);
}

/* Relative velocity of contact k's bodies at its point, in its frame (n, t, o). */
static inline void relative_velocity(const gf_solver *s, const gf_solver_contact *k, double u[3]) {
    const gf_solver_body *b1 = &s->body[k->b1], *b2 = &s->body[k->b2];
    double o[3], du[3];
    gf_cross(k->n, k->t, o);
    for (int d = 0; d < 3; ++d)
        du[d] = b1->v[d] - b2->v[d];
    if (k->general < 0) {
        double W[3];
        for (int d = 0; d < 3; ++d)
            W[d] = k->rho1 * b1->w[d] + k->rho2 * b2->w[d];
        u[0] = gf_dot(du, k->n);
        u[1] = gf_dot(du, k->t) - gf_dot(W, o);
        u[2] = gf_dot(du, o) + gf_dot(W, k->t);
        return;
    }
    const gf_solver_general *g = &s->gen[k->general];
    const double *e[3] = {k->n, k->t, o};
    for (int m = 0; m < 3; ++m)
        u[m] = gf_dot(e[m], du) + gf_dot(g->R1[m], b1->w) - gf_dot(g->R2[m], b2->w);
}

/* Applies the impulse change d (contact frame) of contact k to both bodies. */
static inline void apply_change(gf_solver *s, const gf_solver_contact *k, const double d[3]) {
    gf_solver_body *b1 = &s->body[k->b1], *b2 = &s->body[k->b2];
    double o[3], P[3];
    gf_cross(k->n, k->t, o);
    for (int m = 0; m < 3; ++m)
        P[m] = d[0] * k->n[m] + d[1] * k->t[m] + d[2] * o[m];
    for (int m = 0; m < 3; ++m) {
        b1->v[m] += b1->im * P[m];
        b2->v[m] -= b2->im * P[m];
    }
    /* A bound on each body's change of velocity: |P| <= |d|_1 in the orthonormal frame, and
     * the rounding of the update, below eps |v|_1 (many updates of one body add up to more
     * than any fixed allowance could hold). */
    double size = fabs(d[0]) + fabs(d[1]) + fabs(d[2]);
    s->drift[k->b1] +=
        b1->im * size + DBL_EPSILON * (fabs(b1->v[0]) + fabs(b1->v[1]) + fabs(b1->v[2]));
    s->drift[k->b2] +=
        b2->im * size + DBL_EPSILON * (fabs(b2->v[0]) + fabs(b2->v[1]) + fabs(b2->v[2]));
    if (k->general < 0) {
        /* r x P for r along n: n x P = d_t o - d_o t. */
        double T[3], g1 = b1->ii * k->rho1, g2 = b2->ii * k->rho2;
        for (int m = 0; m < 3; ++m) {
            T[m] = d[1] * o[m] - d[2] * k->t[m];
            b1->w[m] -= g1 * T[m];
            b2->w[m] -= g2 * T[m];
        }
        return;
    }
    const gf_solver_general *g = &s->gen[k->general];
    for (int m = 0; m < 3; ++m) {
        b1->w[m] += d[0] * g->M1[0][m] + d[1] * g->M1[1][m] + d[2] * g->M1[2][m];
        b2->w[m] -= d[0] * g->M2[0][m] + d[1] * g->M2[1][m] + d[2] * g->M2[2][m];
    }
}

/* The new impulse of a general block: the model's kernel for b = -u + A lambda - bias e_n. */
static gf_status solve_general(const gf_solver *s, const gf_particles *p, const gf_contacts *c,
                               const gf_solver_contact *k, const double u[3], double x[3]) {
    const double *a = s->gen[k->general].A;
    const double A[9] = {a[0], a[1], a[2], a[1], a[3], a[4], a[2], a[4], a[5]};
    const double *l = k->lambda;
    double b[3];
    /* with cohesion, for the impulse plus kappa e_n */
    const double kap = s->cohesive ? s->kappa[k->contact] : 0.0;
    for (int m = 0; m < 3; ++m)
        b[m] = -u[m] + (A[3 * m] * (l[0] + kap) + A[3 * m + 1] * l[1] + A[3 * m + 2] * l[2]);
    b[0] -= k->bias;
    gf_status st = s->kernel(A, b, k->mu, x);
    x[0] -= kap;
    if (st != GF_OK) {
        size_t j = (size_t)k->contact;
        int32_t bb = c->i2[j];
        return GF_ERROR(st, "contact between particles %lld and %lld (gap %g): %s",
                        (long long)p->id[c->i1[j]], bb >= 0 ? (long long)p->id[bb] : (long long)bb,
                        c->gap[j], gf_error_message());
    }
    return GF_OK;
}

/* x = (xn, xt, xo) brought into the friction cone: no impulse for xn <= 0, else the tangential
 * part scaled down to mu xn where it exceeds it (the projection onto the disc of radius mu xn,
 * which is the maximum-dissipation friction of a sphere block). */
static inline void into_cone(double mu, double xn, double xt, double xo, double x[3]) {
    if (!(xn > 0.0)) {
        x[0] = x[1] = x[2] = 0.0;
        return;
    }
    double len2 = xt * xt + xo * xo, lim = mu * xn;
    if (len2 > lim * lim) {
        double f = lim / sqrt(len2);
        xt *= f;
        xo *= f;
    }
    x[0] = xn;
    x[1] = xt;
    x[2] = xo;
}

/* The new impulse of a sphere block (the closed form of gf_contact_kernel_maxdiss_sphere):
 * the normal impulse that stops the approach, the sticking tangential impulse projected onto
 * the friction disc. */
static inline void solve_sphere(const gf_solver_contact *k, const double u[3], double x[3]) {
    const double *l = k->lambda;
    double xn = l[0] - (u[0] + k->bias) * k->inv_an;
    into_cone(k->mu, xn, l[1] - u[1] * k->inv_at, l[2] - u[2] * k->inv_at, x);
}

/* The same with cohesion: for the impulse plus kap e_n (kap = kappa of the contact). */
static inline void solve_sphere_cohesive(const gf_solver_contact *k, const double u[3], double kap,
                                         double x[3]) {
    const double *l = k->lambda;
    double xn = l[0] - (u[0] + k->bias) * k->inv_an;
    into_cone(k->mu, xn + kap, l[1] - u[1] * k->inv_at, l[2] - u[2] * k->inv_at, x);
    x[0] -= kap;
}

/* The new impulse x of contact k at its relative velocity u (the model's kernel). */
static inline gf_status solve_at(const gf_solver *s, const gf_particles *p, const gf_contacts *c,
                                 const gf_solver_contact *k, const double u[3], double x[3]) {
    if (k->general >= 0)
        return solve_general(s, p, c, k, u, x);
    if (s->cohesive)
        solve_sphere_cohesive(k, u, s->kappa[k->contact], x);
    else
        solve_sphere(k, u, x);
    return GF_OK;
}

/* The same from the current velocities; *sum collects the relative velocities (a non-finite
 * number shows there, checked once per sweep). */
static inline gf_status solve_block(const gf_solver *s, const gf_particles *p, const gf_contacts *c,
                                    const gf_solver_contact *k, double u[3], double x[3],
                                    double *sum) {
    relative_velocity(s, k, u);
    *sum += u[0] + u[1] + u[2];
    return solve_at(s, p, c, k, u, x);
}

/* The new impulses x of the m points of the joint block at record q (docs/physics.md, "Contact
 * manifolds"): the joint kernel for b_i = -u_i + sum_l A_il lambda_l - bias_i e_n, one proximal
 * step from the current impulses (the sweeps iterate to the problem's own answer). *ok = 0 where
 * the kernel found no answer: the caller then solves the points one by one. */
static void solve_joint(gf_solver *s, size_t q, int m, double *x, double *sum, int *ok) {
    ++s->joints;
    const gf_solver_contact *k0 = &s->rec[q];
    const double *A = s->joint + s->gen[k0->general].joint;
    const int m3 = 3 * m;
    double u[3 * GF_MANIFOLD_KERNEL_MAX], b[3 * GF_MANIFOLD_KERNEL_MAX],
        lam[3 * GF_MANIFOLD_KERNEL_MAX], mu[GF_MANIFOLD_KERNEL_MAX], y[GF_MANIFOLD_KERNEL_MAX];
    gf_solver_general *g = &s->gen[k0->general];
    for (int i = 0; i < m; ++i) {
        const gf_solver_contact *k = &s->rec[q + (size_t)i];
        relative_velocity(s, k, u + 3 * i);
        *sum += u[3 * i] + u[3 * i + 1] + u[3 * i + 2];
        memcpy(lam + 3 * i, k->lambda, sizeof k->lambda);
        if (s->cohesive) /* for the impulses plus kappa e_n */
            lam[3 * i] += s->kappa[k->contact];
        mu[i] = k->mu;
        y[i] = g[i].y;
    }
    for (int r = 0; r < m3; ++r) {
        double v = -u[r];
        for (int l = 0; l < m3; ++l)
            v += A[r * m3 + l] * lam[l];
        b[r] = v;
    }
    for (int i = 0; i < m; ++i)
        b[3 * i] -= s->rec[q + (size_t)i].bias;
    gf_status st = s->prm.model == GF_MODEL_COULOMB
                       ? gf_manifold_kernel_coulomb(m, A, b, mu, lam, 0, x)
                       : gf_manifold_kernel_maxdiss(m, A, b, mu, lam, y, 0, x);
    *ok = st == GF_OK;
    if (s->cohesive)
        for (int i = 0; i < m; ++i)
            x[3 * i] -= s->kappa[s->rec[q + (size_t)i].contact];
    for (int i = 0; i < m; ++i)
        g[i].y = *ok ? y[i] : 0.0;
    g->pointwise = !*ok;
    if (!*ok)
        gf_error_clear();
}

/* The points of a joint block at record q (k->general >= 0 only), or 1; 1 also for a block the
 * joint kernel found no answer for in this solve (it is solved point by point from then on: a
 * failed joint solve costs tens of Newton steps, and the next sweep's would most likely fail
 * again). */
static inline int joint_points(const gf_solver *s, const gf_solver_contact *k) {
    if (k->general < 0)
        return 1;
    const gf_solver_general *g = &s->gen[k->general];
    return g->pointwise ? 1 : g->points;
}

/* A contact whose block met a non-finite number in a sweep, named (the sweep checks once). */
static gf_status non_finite(const gf_solver *s, const gf_particles *p, const gf_contacts *c) {
    for (size_t q = 0; q < s->ncontact; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        double u[3];
        relative_velocity(s, k, u);
        if (isfinite(u[0] + u[1] + u[2] + k->bias + k->lambda[0] + k->lambda[1] + k->lambda[2]))
            continue;
        size_t j = (size_t)k->contact;
        int32_t bb = c->i2[j];
        return GF_ERROR(GF_ERR_NUMERIC,
                        "contact between particles %lld and %lld (gap %g): contact kernel input "
                        "is not finite (relative velocity %g %g %g)",
                        (long long)p->id[c->i1[j]], bb >= 0 ? (long long)p->id[bb] : (long long)bb,
                        c->gap[j], u[0], u[1], u[2]);
    }
    return GF_ERROR(GF_ERR_NUMERIC, "the solver met a non-finite number");
}

/* The sweep order: interior contacts first, then those touching a body another rank updates
 * too; the records are permuted into it. Returns how many contacts are interior. */
static gf_status order_sweeps(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                              const uint8_t *shared, size_t *n_interior) {
    size_t nb = p->n_local + p->n_ghost;
    *n_interior = c->count;
    if (!shared)
        return GF_OK;
    /* A stable partition, by the contacts' own bodies (the records may be in sweep order of an
     * earlier solve already); none to make when no particle is shared (a rank alone). */
    int any_shared = 0;
    for (size_t i = 0; i < nb && !any_shared; ++i)
        any_shared = shared[i];
    if (!any_shared)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&s->tmp, &s->captmp, c->count, sizeof *s->tmp));
    size_t ni = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t q = 0; q < c->count; ++q) {
            size_t j = (size_t)s->rec[q].contact;
            int32_t a = c->i1[j], b = c->i2[j];
            int boundary = shared[a] || (b >= 0 && shared[b]);
            if (boundary == pass)
                s->tmp[ni++] = s->rec[q];
        }
        if (pass == 0)
            *n_interior = ni;
    }
    gf_solver_contact *t = s->rec;
    s->rec = s->tmp;
    s->tmp = t;
    size_t cap = s->capc;
    s->capc = s->captmp;
    s->captmp = cap;
    return GF_OK;
}

/* Particle i's body record, numbered next if it has none yet. */
static inline void number_body(gf_solver *s, int32_t i) {
    if (s->rec_of[i] >= 0)
        return;
    s->rec_of[i] = (int32_t)s->nrec;
    s->part_of[s->nrec++] = i;
}

/* The body records of a solve, in the order the sweep first meets their particles, so the sweep
 * streams its records whatever the particles' memory order (detection lists the contacts cell
 * by cell: bench_sweep's scrambled order runs within 10% of the lattice's). Owned particles
 * come first, then ghosts;
 * copies of a body share its slot's record; a particle no contact touches gets none, unless the
 * synchronisation reads or writes it (shared owned ones: their changes by other ranks count in
 * the stopping test). Then each contact's two records and the synchronised ones (`edge`). */
static gf_status number_bodies(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                               const int32_t *slot, const uint8_t *shared) {
    size_t nb = p->n_local + p->n_ghost;
    const int32_t nlocal = (int32_t)p->n_local;
    GF_TRY(gf_reserve((void **)&s->rec_of, &s->cap_of, nb, sizeof *s->rec_of));
    GF_TRY(gf_reserve((void **)&s->part_of, &s->cap_part, nb, sizeof *s->part_of));
    GF_TRY(gf_reserve((void **)&s->head, &s->caphead, c->count, sizeof *s->head));
    for (size_t i = 0; i < nb; ++i)
        s->rec_of[i] = -1;
    s->nrec = 0;
    for (int owned = 1; owned >= 0; --owned) {
        for (size_t q = 0; q < c->count; ++q) {
            size_t j = (size_t)s->rec[q].contact;
            int32_t a = slot ? slot[c->i1[j]] : c->i1[j], b = c->i2[j];
            if ((a < nlocal) == owned)
                number_body(s, a);
            b = b >= 0 && slot ? slot[b] : b;
            if (b >= 0 && (b < nlocal) == owned)
                number_body(s, b);
        }
        if (owned && shared)
            for (int32_t i = 0; i < nlocal; ++i)
                if (shared[i])
                    number_body(s, i);
        if (owned)
            s->nown = s->nrec;
    }
    const int32_t geometry = (int32_t)s->nrec;
    for (size_t q = 0; q < c->count; ++q) {
        gf_solver_contact *k = &s->rec[q];
        size_t j = (size_t)k->contact;
        int32_t a = c->i1[j], b = c->i2[j];
        k->b1 = s->rec_of[slot ? slot[a] : a];
        k->b2 = b < 0 ? geometry + (-1 - b) : s->rec_of[slot ? slot[b] : b];
        s->head[q] = (gf_solver_head){k->b1, k->b2, k->general, 0};
    }
    s->nedge = 0;
    if (!shared)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&s->edge, &s->cape, s->nrec, sizeof *s->edge));
    for (size_t r = 0; r < s->nrec; ++r) {
        int32_t i = s->part_of[r];
        if (i >= nlocal || shared[i])
            s->edge[s->nedge++] = (int32_t)r;
    }
    return GF_OK;
}

/* The sweep order and the body records (above), checked against the particles present. */
static gf_status plan_sweeps(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                             const gf_solver_comm *comm, size_t *n_interior) {
    const int32_t *slot = comm ? comm->slot : NULL;
    const uint8_t *shared = comm ? comm->shared : NULL;
    size_t nb = p->n_local + p->n_ghost;
    if ((slot || shared) && comm->nslot != nb)
        return GF_ERROR(GF_ERR_STATE,
                        "the solver's velocity slots describe %zu particles, but %zu are present "
                        "(the ghosts were not rebuilt after the particles changed)",
                        comm->nslot, nb);
    if (s->nbody != nb || s->ncontact != c->count)
        return GF_ERROR(GF_ERR_STATE,
                        "the solver was prepared for %zu particles and %zu contacts, but %zu and "
                        "%zu are present",
                        s->nbody, s->ncontact, nb, c->count);
    GF_TRY(order_sweeps(s, p, c, shared, n_interior));
    return number_bodies(s, p, c, slot, shared);
}

/* Keeps owned body i's velocities before its first change in a measured sweep. */
static inline void keep_before_change(gf_solver *s, int32_t i) {
    if ((size_t)i >= s->nown || s->saved_epoch[i] == s->epoch)
        return;
    s->saved_epoch[i] = s->epoch;
    double *to = s->snap + 6 * s->nsaved;
    memcpy(to, s->body[i].v, 3 * sizeof(double));
    memcpy(to + 3, s->body[i].w, 3 * sizeof(double));
    s->saved[s->nsaved++] = i;
}

/* ------------------------------------------------------------------------------------------ */
/* Rolling and twisting resistance (docs/physics.md, "Rolling and twisting resistance")        */

/* The relative angular velocity w1 - w2 of contact k's bodies (less a turning mesh's), in its
 * frame (n, t, o). */
static inline void spin(const gf_solver *s, const gf_solver_contact *k, const gf_solver_resist *r,
                        double W[3]) {
    const double *w1 = s->body[k->b1].w, *w2 = s->body[k->b2].w;
    double o[3], dw[3];
    gf_cross(k->n, k->t, o);
    for (int d = 0; d < 3; ++d)
        dw[d] = w1[d] - w2[d] - r->w0[d];
    W[0] = gf_dot(dw, k->n);
    W[1] = gf_dot(dw, k->t);
    W[2] = gf_dot(dw, o);
}

/* Applies the torque impulse change d (components about n, t, o) of contact k to its bodies. */
static inline void apply_torque(gf_solver *s, const gf_solver_contact *k, const gf_solver_resist *r,
                                const double d[3]) {
    if (s->measuring) {
        keep_before_change(s, k->b1);
        keep_before_change(s, k->b2);
    }
    gf_solver_body *b1 = &s->body[k->b1], *b2 = &s->body[k->b2];
    for (int m = 0; m < 3; ++m) {
        b1->w[m] += d[0] * r->W1[0][m] + d[1] * r->W1[1][m] + d[2] * r->W1[2][m];
        b2->w[m] -= d[0] * r->W2[0][m] + d[1] * r->W2[1][m] + d[2] * r->W2[2][m];
    }
}

/* The new rolling torque (t, o) and twisting torque (n) of a torque block under the normal load
 * `load` (the normal impulse, with cohesion's pull), from the spin W: each part's exact
 * minimiser of the relative rotational energy given the other (the maximum-dissipation torque
 * within its bound). */
static inline void roll_target(const gf_solver_resist *r, const double W[3], double load,
                               double x[3]) {
    const double M[3] = {r->B[3], r->B[4], r->B[5]};
    const double g[2] = {M[0] * r->tau[1] + M[1] * r->tau[2] - W[1],
                         M[1] * r->tau[1] + M[2] * r->tau[2] - W[2]};
    gf_contact_kernel_disc(M, g, r->roll * load, x + 1);
}

static inline double twist_target(const gf_solver_resist *r, const double W[3], double load) {
    const double S = r->twist * load;
    if (!(S > 0.0) || !(r->B[0] > 0.0))
        return 0.0;
    double x = r->tau[0] - W[0] / r->B[0];
    return x > S ? S : (x < -S ? -S : x);
}

/* The load of contact k: its normal impulse plus cohesion's pull and an impact's restitution,
 * not below 0. */
static inline double resist_load(const gf_solver *s, const gf_solver_contact *k, double ln) {
    double load = ln + (s->cohesive ? s->kappa[k->contact] : 0.0) +
                  (s->rebounding ? s->rebound[k->contact].N : 0.0);
    return load > 0.0 ? load : 0.0;
}

/* Gauss-Seidel: contact k's torque block after its force block, rolling then twisting, each
 * from the velocities the other left (update weight wgt). Returns whether anything changed. */
static int resist_block(gf_solver *s, const gf_solver_contact *k, double wgt) {
    gf_solver_resist *r = &s->resist[k->contact];
    const double load = resist_load(s, k, k->lambda[0]);
    int changed = 0;
    double W[3], x[3];
    if (r->roll > 0.0 || r->tau[1] != 0.0 || r->tau[2] != 0.0) {
        spin(s, k, r, W);
        roll_target(r, W, load, x);
        double d[3] = {0.0, wgt * (x[1] - r->tau[1]), wgt * (x[2] - r->tau[2])};
        if (d[1] != 0.0 || d[2] != 0.0) {
            r->tau[1] += d[1];
            r->tau[2] += d[2];
            apply_torque(s, k, r, d);
            changed = 1;
        }
    }
    if (r->twist > 0.0 || r->tau[0] != 0.0) {
        spin(s, k, r, W);
        double d[3] = {wgt * (twist_target(r, W, load) - r->tau[0]), 0.0, 0.0};
        if (d[0] != 0.0) {
            r->tau[0] += d[0];
            apply_torque(s, k, r, d);
            changed = 1;
        }
    }
    return changed;
}

/* ------------------------------------------------------------------------------------------ */
/* Restitution's phase after the compression (docs/physics.md, "Restitution")                 */

/* Contact k's restitution state, if it is an impact in its restitution phase. */
static inline gf_solver_rebound *rebound_of(const gf_solver *s, const gf_solver_contact *k) {
    if (!s->rebounding)
        return NULL;
    gf_solver_rebound *b = &s->rebound[k->contact];
    return b->N > 0.0 ? b : NULL;
}

/* The tangential impulse of an impact's restitution phase from the relative velocity u: the
 * exact minimiser of the kinetic energy over |rho| <= mu N given every other impulse (maximum
 * dissipation under the fixed normal impulse N). */
static inline void rebound_target(const gf_solver *s, const gf_solver_contact *k,
                                  const gf_solver_rebound *b, const double u[3], double x[2]) {
    const double R = k->mu * b->N;
    if (k->general >= 0) {
        const double *a = s->gen[k->general].A;
        const double M[3] = {a[3], a[4], a[5]};
        const double g[2] = {M[0] * b->rho[0] + M[1] * b->rho[1] - u[1],
                             M[1] * b->rho[0] + M[2] * b->rho[1] - u[2]};
        gf_contact_kernel_disc(M, g, R, x);
        return;
    }
    x[0] = b->rho[0] - u[1] * k->inv_at;
    x[1] = b->rho[1] - u[2] * k->inv_at;
    double len2 = x[0] * x[0] + x[1] * x[1];
    if (len2 > R * R) {
        double f = R > 0.0 ? R / sqrt(len2) : 0.0;
        x[0] *= f;
        x[1] *= f;
    }
}

/* Applies the tangential change (d[1], d[2]) of an impact's restitution impulse. */
static inline void rebound_change(gf_solver *s, const gf_solver_contact *k, gf_solver_rebound *b,
                                  const double d[3]) {
    b->rho[0] += d[1];
    b->rho[1] += d[2];
    if (s->measuring) {
        keep_before_change(s, k->b1);
        keep_before_change(s, k->b2);
    }
    apply_change(s, k, d);
}

/* Gauss-Seidel: an impact's restitution impulse after its block (update weight wgt). Returns
 * whether it changed. */
static int rebound_block(gf_solver *s, const gf_solver_contact *k, double wgt) {
    gf_solver_rebound *b = rebound_of(s, k);
    if (!b)
        return 0;
    double u[3], x[2];
    relative_velocity(s, k, u);
    rebound_target(s, k, b, u, x);
    const double d[3] = {0.0, wgt * (x[0] - b->rho[0]), wgt * (x[1] - b->rho[1])};
    if (d[1] == 0.0 && d[2] == 0.0)
        return 0;
    rebound_change(s, k, b, d);
    return 1;
}

/* Whether contact k's torque impulse is zero (or it has none). */
static inline int torque_free(const gf_solver *s, const gf_solver_contact *k) {
    if (!s->resistive)
        return 1;
    const double *t = s->resist[k->contact].tau;
    return t[0] == 0.0 && t[1] == 0.0 && t[2] == 0.0;
}

/* Body records -> particle arrays, for the listed records or all (list NULL). */
static void bodies_to_particles(const gf_solver *s, gf_particles *p, const int32_t *list,
                                size_t n) {
    for (size_t q = 0; q < n; ++q) {
        size_t r = list ? (size_t)list[q] : q, i = (size_t)s->part_of[r];
        const gf_solver_body *b = &s->body[r];
        for (int d = 0; d < 3; ++d) {
            p->v[d][i] = b->v[d];
            p->w[d][i] = b->w[d];
        }
    }
}

/* Every copy of a body on this rank (a periodic image of an owned particle, or of a ghost) takes
 * the velocities of its slot, which the records were written to: what follows the solve (the
 * promotion of near pairs) must see one velocity per body, as it would with the copies on
 * different ranks. */
static void copies_from_slots(gf_particles *p, const gf_solver_comm *comm) {
    if (!comm || !comm->slot)
        return;
    for (size_t i = 0; i < comm->nslot; ++i) {
        size_t k = (size_t)comm->slot[i];
        if (k == i)
            continue;
        for (int d = 0; d < 3; ++d) {
            p->v[d][i] = p->v[d][k];
            p->w[d][i] = p->w[d][k];
        }
    }
}

/* The synchronised velocities into the records. Only a record whose velocities changed (in any
 * bit) counts as changed: its blocks are solved again, and an owned one is kept first in a
 * measured sweep; the others' blocks may still be skipped (late in a solve most bodies near
 * the boundary no longer change). */
static void bodies_from_sync(gf_solver *s, const gf_particles *p) {
    for (size_t q = 0; q < s->nedge; ++q) {
        int32_t r = s->edge[q];
        size_t i = (size_t)s->part_of[r];
        gf_solver_body *b = &s->body[r];
        const double now[6] = {p->v[0][i], p->v[1][i], p->v[2][i],
                               p->w[0][i], p->w[1][i], p->w[2][i]};
        if (memcmp(now, b->v, sizeof b->v) == 0 && memcmp(now + 3, b->w, sizeof b->w) == 0)
            continue;
        if (s->measuring)
            keep_before_change(s, r);
        s->drift[r] += fabs(now[0] - b->v[0]) + fabs(now[1] - b->v[1]) + fabs(now[2] - b->v[2]);
        memcpy(b->v, now, 3 * sizeof *now);
        memcpy(b->w, now + 3, 3 * sizeof *now);
        s->stamp[r] = s->tick;
    }
    ++s->tick;
}

/* The synchronisation of the velocities with other ranks, on the particle arrays. */
static gf_status sync_bodies(gf_solver *s, gf_particles *p, const gf_solver_comm *comm) {
    bodies_to_particles(s, p, s->edge, s->nedge);
    GF_TRY(comm->sync(comm->ctx, p));
    bodies_from_sync(s, p);
    return GF_OK;
}

/* Its halves (comm->sync_begin and _end), or the whole at _begin without them. */
static gf_status sync_begin(gf_solver *s, gf_particles *p, const gf_solver_comm *comm) {
    if (!comm->sync_begin)
        return sync_bodies(s, p, comm);
    bodies_to_particles(s, p, s->edge, s->nedge);
    return comm->sync_begin(comm->ctx, p);
}

static gf_status sync_end(gf_solver *s, gf_particles *p, const gf_solver_comm *comm) {
    if (!comm->sync_begin)
        return GF_OK;
    GF_TRY(comm->sync_end(comm->ctx, p));
    bodies_from_sync(s, p);
    return GF_OK;
}

/* The pipelined synchronisation's halves (gf_solver_comm.pipe_*), on the particle arrays. */
static gf_status pipe_post(gf_solver *s, gf_particles *p, const gf_solver_comm *comm) {
    bodies_to_particles(s, p, s->edge, s->nedge);
    return comm->pipe_post(comm->ctx, p);
}

static gf_status pipe_take(gf_solver *s, gf_particles *p, const gf_solver_comm *comm) {
    GF_TRY(comm->pipe_take(comm->ctx, p));
    bodies_from_sync(s, p);
    return GF_OK;
}

/* The normal velocity a contact must reach: minus the gap closed within the step; of a
 * penetration the share error_reduction of its depth beyond the slop, none within it
 * (docs/physics.md, "Penetrations"). */
static inline double gap_term(const gf_solver *s, double gap, double slop, double inv_dt) {
    if (gap >= 0.0)
        return gap * inv_dt;
    return gap < -slop ? s->prm.error_reduction * (gap + slop) * inv_dt : 0.0;
}

/* Whether contact j (record k) is an impact (docs/physics.md, "Restitution"): approaching
 * faster than the threshold before the step's impulses, and closing its gap within the step (a
 * speculative contact further away is not hit yet). vn is measured from the free velocities,
 * or, for a contact added during the step, from the velocities when it joins the solve. */
static int impact(const gf_solver *s, const gf_solver_contact *k, gf_contacts *c, size_t j,
                  double dt) {
    if (isnan(c->vn[j])) {
        double u[3];
        relative_velocity(s, k, u);
        c->vn[j] = u[0];
    }
    double vn = c->vn[j];
    return vn < -c->restitution_threshold && c->gap[j] + dt * vn <= 0.0;
}

/* Reads the impacts' restitution state of this step (kept through a resumed solve). */
static gf_status rebound_read(gf_solver *s, const gf_contacts *c) {
    s->rebounding = 0;
    if (!c->restitutive)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&s->rebound, &s->caprebound, c->count, sizeof *s->rebound));
    if (s->prm.mode == GF_SWEEP_JACOBI)
        GF_TRY(gf_reserve((void **)&s->drho, &s->capdrho, c->count, 2 * sizeof *s->drho));
    for (size_t j = 0; j < c->count; ++j) {
        gf_solver_rebound *b = &s->rebound[j];
        b->N = c->rb[0][j];
        b->rho[0] = c->rb[1][j];
        b->rho[1] = c->rb[2][j];
        s->rebounding |= b->N > 0.0;
    }
    return GF_OK;
}

/* Velocity scale of the problem (see solver.h): the largest relative contact velocity plus
 * penetration recovery, before any reaction acts. */
static double reference_velocity(const gf_solver *s) {
    double vref = 0.0;
    for (size_t q = 0; q < s->ncontact; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        double u[3];
        relative_velocity(s, k, u);
        double v = sqrt(gf_dot(u, u)) + (k->bias < 0.0 ? -k->bias : 0.0);
        const gf_solver_resist *r = s->resistive ? &s->resist[k->contact] : NULL;
        if (r && (r->roll > 0.0 || r->twist > 0.0)) { /* the spin its torques stop */
            double W[3];
            spin(s, k, r, W);
            v += r->reach * sqrt(gf_dot(W, W));
        }
        vref = v > vref ? v : vref;
    }
    return vref;
}

/* The largest |v| + R |w| over the owned particles (with or without contacts). */
static double body_speed(const gf_particles *p) {
    double m = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        const double v[3] = {p->v[0][i], p->v[1][i], p->v[2][i]};
        const double w[3] = {p->w[0][i], p->w[1][i], p->w[2][i]};
        double u = sqrt(gf_dot(v, v)) + p->radius[i] * sqrt(gf_dot(w, w));
        m = u > m ? u : m;
    }
    return m;
}

/* The start of a measured sweep: no body kept yet. */
static void begin_measure(gf_solver *s) {
    if (++s->epoch == 0 && s->capv > 0) { /* wrapped: no body may look kept already */
        memset(s->saved_epoch, 0, s->capv * sizeof *s->saved_epoch);
        s->epoch = 1;
    }
    s->nsaved = 0;
    s->measuring = 1;
}

/* D of solver.h: the largest change of an owned body's surface velocity in the measured sweep
 * (a body not kept did not change); ends the measurement. */
static double velocity_change(gf_solver *s, const gf_particles *p) {
    double m = 0.0;
    for (size_t a = 0; a < s->nsaved; ++a) {
        size_t i = (size_t)s->saved[a];
        double dv[3], dw[3];
        for (int k = 0; k < 3; ++k) {
            dv[k] = s->body[i].v[k] - s->snap[6 * a + k];
            dw[k] = s->body[i].w[k] - s->snap[6 * a + 3 + k];
        }
        double u = sqrt(gf_dot(dv, dv)) + p->radius[s->part_of[i]] * sqrt(gf_dot(dw, dw));
        m = u > m ? u : m;
    }
    s->nsaved = 0;
    s->measuring = 0;
    return m;
}

/* Relative rounding allowances of the slack test (far above the few ulps of the sums
 * involved, far below any slack that matters). */
#define GF_SOLVER_SLACK_REL 1e-9
#define GF_SOLVER_SLACK_ROUND 1e-12

/* An open sphere block without impulse (its normal velocity u_n + bias >= 0) stays open while its
 * bodies' linear velocities change by less than u_n + bias in total: its normal velocity depends
 * on nothing else. The slack keeps a rounding allowance of the sums that gave it, so the skipped
 * solve would have given exactly zero; its reference is the two bodies' drift now. A slack
 * needs no reset when the block later takes an impulse: that needs a drift beyond the slack
 * first, and the drift only grows. */
static inline void open_slack(gf_solver *s, const gf_solver_contact *k, size_t q, double un) {
    const double *v1 = s->body[k->b1].v, *v2 = s->body[k->b2].v;
    double size = fabs(v1[0]) + fabs(v1[1]) + fabs(v1[2]) + fabs(v2[0]) + fabs(v2[1]) +
                  fabs(v2[2]) + fabs(k->bias);
    s->slack[q] = un + k->bias - GF_SOLVER_SLACK_ROUND * size;
    s->slack_ref[q] = s->drift[k->b1] + s->drift[k->b2];
}

/* Every block is solved in the next sweep. */
static void forget_changes(gf_solver *s) {
    memset(s->stamp, 0, s->capb * sizeof *s->stamp);
    if (s->ncontact > 0) /* without contacts nothing was allocated */
        memset(s->seen, 0, s->ncontact * sizeof *s->seen);
    s->tick = 1;
}

/* The weight of a block's impulse change: updates of contacts with a body owned elsewhere may
 * be damped (relaxation); the owner adds them in full, so velocities and impulses stay
 * consistent. */
static inline double update_weight(const gf_solver *s, const gf_solver_contact *k) {
    const int32_t nown = (int32_t)s->nown, nrec = (int32_t)s->nrec;
    return (k->b1 >= nown || (k->b2 >= nown && k->b2 < nrec)) ? s->prm.relaxation : 1.0;
}

/* Adds the impulse change d to contact k and its bodies (kept first for a measured sweep);
 * *top collects A_nn |lambda|. */
static inline void add_change(gf_solver *s, gf_solver_contact *k, const double d[3], double *top) {
    for (int m = 0; m < 3; ++m)
        k->lambda[m] += d[m];
    if (s->measuring) {
        keep_before_change(s, k->b1);
        keep_before_change(s, k->b2);
    }
    apply_change(s, k, d);
    double v = k->an * fabs(k->lambda[0]);
    *top = v > *top ? v : *top;
}

/* After a Gauss-Seidel block at record q of `points` records: a block that changed nothing is
 * skipped until a body changes; a change marks its bodies. */
static void settle(gf_solver *s, size_t q, int points, int changed) {
    if (!changed) {
        s->seen[q] = s->tick;
        return;
    }
    for (int i = 0; i < points; ++i) {
        const gf_solver_contact *k = &s->rec[q + (size_t)i];
        s->stamp[k->b1] = s->stamp[k->b2] = s->tick;
    }
    ++s->tick;
}

/* Applies the new impulses x of the joint block of `points` records at q (Gauss-Seidel: the
 * bodies change at once), then the points' torque blocks; *top collects A_nn |lambda|. */
static void joint_update(gf_solver *s, size_t q, int points, const double *x, double *top) {
    const double wgt = update_weight(s, &s->rec[q]); /* one pair of bodies */
    int changed = 0;
    for (int i = 0; i < points; ++i) {
        gf_solver_contact *k = &s->rec[q + (size_t)i];
        double d[3];
        for (int a = 0; a < 3; ++a)
            d[a] = wgt * (x[3 * i + a] - k->lambda[a]);
        if (d[0] == 0.0 && d[1] == 0.0 && d[2] == 0.0)
            continue;
        changed = 1;
        add_change(s, k, d, top);
    }
    s->blocks += points;
    for (int i = 0; i < points && s->resistive; ++i)
        changed |= resist_block(s, &s->rec[q + (size_t)i], wgt);
    for (int i = 0; i < points && s->rebounding; ++i)
        changed |= rebound_block(s, &s->rec[q + (size_t)i], wgt);
    settle(s, q, points, changed);
}

/* Over-relaxation of a one-point block (Solver.over_relaxation = omega): its new impulse x
 * moved on to lambda + omega (x - lambda), then brought back into the cone (a non-negative
 * normal impulse, a tangential one within mu times it). A fixed point of the relaxed sweep is
 * one of the plain sweep (x = lambda), so the solution is the same; the sweeps to reach it are
 * fewer where Gauss-Seidel crawls along force chains (docs/physics.md, "The stopping test of the
 * solver"). */
static inline void over_relax(const gf_solver_contact *k, double omega, double kap, double x[3]) {
    const double *l = k->lambda;
    into_cone(k->mu, l[0] + kap + omega * (x[0] - l[0]), l[1] + omega * (x[1] - l[1]),
              l[2] + omega * (x[2] - l[2]), x);
    x[0] -= kap;
}

/* The over-relaxed sphere block with one projection: the unconstrained new impulse of
 * solve_sphere moved on to lambda + omega (y - lambda), then brought into the cone. Its fixed
 * points are over_relax's (x = lambda: y_n <= 0 where lambda_n = 0, and the tangential step's
 * projection leaves lambda_t in place exactly where the disc's projection of y_t is lambda_t),
 * and it saves the first projection's square root and division, a fifth of a sphere sweep. */
static inline void sphere_relaxed(const gf_solver_contact *k, const double u[3], double omega,
                                  double kap, double x[3]) {
    const double *l = k->lambda;
    double dn = -(u[0] + k->bias) * k->inv_an, dt = -u[1] * k->inv_at, dot = -u[2] * k->inv_at;
    into_cone(k->mu, l[0] + kap + omega * dn, l[1] + omega * dt, l[2] + omega * dot, x);
    x[0] -= kap;
}

/* Whether the point block k is quiet (gf_solver.quiet; `last`: its 4 quiet_u), u its relative
 * velocity now. A plain solve now would move its impulse from the plain answer at its last
 * solve by at most |u - u_last| (in velocity units: a sphere block's Delassus matrix is
 * diagonal and its projection non-expansive), and that answer lies within r_last of the impulse
 * the last solve left (r_last = 0 for a plain, unweighted solve; an over-relaxed or damped one
 * stops short of it or beyond). Only sphere blocks: a general block's coupled Delassus matrix
 * can turn a small change of u into a larger one of the velocities (a box on a meshed incline
 * drifted sideways past its test's bound), and a block with torques or a rebound has inputs
 * beyond u. */
static inline int quiet_block(const gf_solver *s, const gf_solver_contact *k, const double last[4],
                              double u[3]) {
    relative_velocity(s, k, u);
    return fabs(u[0] - last[0]) + fabs(u[1] - last[1]) + fabs(u[2] - last[2]) + last[3] <
               s->quiet &&
           k->general < 0 && torque_free(s, k) && !rebound_of(s, k);
}

/* After a solve of point block k whose plain answer was xp: its relative velocity (u if the
 * solve changed nothing) and the distance, in velocity units, between xp and the impulse it was
 * left with (quiet_block). */
static inline void quiet_keep(const gf_solver *s, const gf_solver_contact *k, const double xp[3],
                              const double *u, double last[4]) {
    if (u)
        memcpy(last, u, 3 * sizeof *u);
    else
        relative_velocity(s, k, last);
    const double *l = k->lambda;
    double dn = fabs(xp[0] - l[0]), dt = fabs(xp[1] - l[1]) + fabs(xp[2] - l[2]);
    if (dn == 0.0 && dt == 0.0) {
        last[3] = 0.0;
        return;
    }
    last[3] = k->an * dn + dt / k->inv_at;
}

/* Unchanged since it last changed nothing (most open contacts of a sparse flow): the block at
 * record q would give the same impulse. */
static inline int unchanged(const gf_solver *s, size_t q) {
    uint32_t since = s->seen[q];
    const gf_solver_head *h = &s->head[q];
    return s->stamp[h->b1] < since && s->stamp[h->b2] < since;
}

/* One Gauss-Seidel block of one point at record q; *sum collects the relative velocities, *top
 * A_nn |lambda|. Inlined into the sweep, where nearly every block is one of these. */
static inline __attribute__((always_inline)) gf_status point_block(gf_solver *s,
                                                                   const gf_particles *p,
                                                                   const gf_contacts *c, size_t q,
                                                                   double *sum, double *top) {
    if (unchanged(s, q))
        return GF_OK;
    /* An open contact whose bodies' velocities have not changed by its slack since: it is
     * still open, and would stay without impulse. */
    if (s->slack[q] > 0.0) {
        double moved = s->drift[s->head[q].b1] + s->drift[s->head[q].b2];
        if ((moved - s->slack_ref[q]) * (1.0 + GF_SOLVER_SLACK_REL) + GF_SOLVER_SLACK_REL * moved <
            s->slack[q])
            return GF_OK;
    }
    gf_solver_contact *k = &s->rec[q];
    double u[3], x[3], xp[3] = {0.0, 0.0, 0.0};
    const int quiet = s->quiet > 0.0;
    double *last = s->quiet_u + 4 * q;
    if (quiet) {
        ++s->quiet_tests;
        if (quiet_block(s, k, last, u)) {
            ++s->quiet_skips;
            return GF_OK;
        }
    }
    ++s->blocks;
    if (!quiet) /* else quiet_block took it */
        relative_velocity(s, k, u);
    *sum += u[0] + u[1] + u[2];
    const double kap = s->cohesive ? s->kappa[k->contact] : 0.0;
    if (k->general < 0 && s->omega != 1.0 && !quiet) {
        sphere_relaxed(k, u, s->omega, kap, x);
    } else {
        GF_TRY(solve_at(s, p, c, k, u, x));
        memcpy(xp, x, sizeof x);
        if (s->omega != 1.0)
            over_relax(k, s->omega, kap, x);
    }
    const double wgt = update_weight(s, k);
    double d[3] = {wgt * (x[0] - k->lambda[0]), wgt * (x[1] - k->lambda[1]),
                   wgt * (x[2] - k->lambda[2])};
    int changed = d[0] != 0.0 || d[1] != 0.0 || d[2] != 0.0;
    if (changed)
        add_change(s, k, d, top);
    if (quiet && k->general < 0)
        quiet_keep(s, k, xp, changed ? NULL : u, last);
    if (s->resistive)
        changed |= resist_block(s, k, wgt);
    if (s->rebounding)
        changed |= rebound_block(s, k, wgt);
    if (!changed) {
        s->seen[q] = s->tick; /* a separating contact stays open: nothing changes */
        if (k->general < 0 && k->lambda[0] == 0.0 && k->lambda[1] == 0.0 && k->lambda[2] == 0.0 &&
            torque_free(s, k) && !rebound_of(s, k))
            open_slack(s, k, q, u[0]);
        return GF_OK;
    }
    s->stamp[k->b1] = s->stamp[k->b2] = s->tick++;
    return GF_OK;
}

/* One Gauss-Seidel joint block of `points` records at q (a contact manifold), or its points one
 * by one once the joint solve has failed; *sum and *top as above. */
static gf_status joint_block(gf_solver *s, const gf_particles *p, const gf_contacts *c, size_t q,
                             int points, double *sum, double *top) {
    if (unchanged(s, q))
        return GF_OK;
    double x[3 * GF_MANIFOLD_KERNEL_MAX];
    int ok;
    solve_joint(s, q, points, x, sum, &ok);
    if (ok) {
        joint_update(s, q, points, x, top);
        return GF_OK;
    }
    ++s->fallback; /* its points one by one, from now on */
    for (int i = 0; i < points; ++i)
        GF_TRY(point_block(s, p, c, q + (size_t)i, sum, top));
    return GF_OK;
}

/* One Gauss-Seidel pass over the records [from, to); *scale collects A_nn |lambda|. Non-finite
 * input shows in the sum of the relative velocities, checked once per pass. */
static gf_status sweep_gauss_seidel(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                                    size_t from, size_t to, double *scale) {
    double sum = 0.0, top = *scale;
    if (s->tick > UINT32_MAX / 2) /* a pass adds fewer ticks than that: the count cannot wrap */
        forget_changes(s);
    for (size_t q = from; q < to;) {
        /* 0 points: a later point of a block solved one by one */
        int points = s->head[q].general < 0 ? 1 : joint_points(s, &s->rec[q]);
        if (points > 1) {
            GF_TRY(joint_block(s, p, c, q, points, &sum, &top));
            q += (size_t)points;
        } else {
            GF_TRY(point_block(s, p, c, q, &sum, &top));
            ++q;
        }
    }
    *scale = top;
    return isfinite(sum) ? GF_OK : non_finite(s, p, c);
}

/* One Jacobi pass: every block from the velocities of the sweep's start, then all applied. */
static gf_status sweep_jacobi(gf_solver *s, const gf_particles *p, const gf_contacts *c,
                              double *scale) {
    const double relax = s->prm.relaxation;
    double sum = 0.0;
    s->blocks += (int64_t)s->ncontact;
    for (size_t q = 0; q < s->ncontact; ++q) {
        gf_solver_contact *k = &s->rec[q];
        const int points = joint_points(s, k);
        if (points > 1) {
            double x[3 * GF_MANIFOLD_KERNEL_MAX];
            int ok;
            solve_joint(s, q, points, x, &sum, &ok);
            if (ok) {
                for (int i = 0; i < points; ++i)
                    for (int m = 0; m < 3; ++m)
                        s->dl[3 * (q + (size_t)i) + (size_t)m] =
                            relax * (x[3 * i + m] - s->rec[q + (size_t)i].lambda[m]);
                q += (size_t)points - 1;
                continue;
            }
            ++s->fallback;
        }
        double u[3], x[3];
        GF_TRY(solve_block(s, p, c, k, u, x, &sum));
        for (int m = 0; m < 3; ++m)
            s->dl[3 * q + m] = relax * (x[m] - k->lambda[m]);
    }
    if (!isfinite(sum))
        return non_finite(s, p, c);
    /* The torque blocks from the same velocities, under their contacts' new normal impulses. */
    for (size_t q = 0; q < s->ncontact && s->resistive; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        gf_solver_resist *r = &s->resist[k->contact];
        double W[3], x[3];
        spin(s, k, r, W);
        double load = resist_load(s, k, k->lambda[0] + s->dl[3 * q]);
        roll_target(r, W, load, x);
        x[0] = twist_target(r, W, load);
        for (int m = 0; m < 3; ++m)
            s->dtau[3 * q + (size_t)m] = relax * (x[m] - r->tau[m]);
    }
    /* Impacts' restitution impulses from the same velocities. */
    for (size_t q = 0; q < s->ncontact && s->rebounding; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        gf_solver_rebound *b = rebound_of(s, k);
        double u[3], x[2] = {0.0, 0.0};
        if (b) {
            relative_velocity(s, k, u);
            rebound_target(s, k, b, u, x);
        }
        s->drho[2 * q] = b ? relax * (x[0] - b->rho[0]) : 0.0;
        s->drho[2 * q + 1] = b ? relax * (x[1] - b->rho[1]) : 0.0;
    }
    for (size_t q = 0; q < s->ncontact; ++q) {
        gf_solver_contact *k = &s->rec[q];
        add_change(s, k, s->dl + 3 * q, scale);
        gf_solver_rebound *b = rebound_of(s, k);
        if (b) {
            const double d[3] = {0.0, s->drho[2 * q], s->drho[2 * q + 1]};
            rebound_change(s, k, b, d);
        }
        if (s->resistive) {
            gf_solver_resist *r = &s->resist[k->contact];
            const double *d = s->dtau + 3 * q;
            for (int m = 0; m < 3; ++m)
                r->tau[m] += d[m];
            apply_torque(s, k, r, d);
        }
    }
    return GF_OK;
}

/* One pipelined Gauss-Seidel sweep (two colours): the interior, the neighbours' latest boundary
 * results, the boundary, then this rank's results posted. Colour 0's boundary comes first in
 * the sweep: it needs the reply to its last post (*owed) before its next boundary, and takes it
 * at once after a measured sweep, whose change it belongs to. Colour 1 takes what colour 0 posts
 * in the same sweep. Either way each block sees what it would see after the synchronisations
 * of the coloured sweep. */
static gf_status sweep_pipelined(gf_solver *s, gf_particles *p, const gf_contacts *c,
                                 const gf_solver_comm *comm, size_t n_interior, int measure,
                                 int *owed, double *scale) {
    const int first = comm->color == 0;
    if (!first)
        GF_TRY(comm->pipe_expect(comm->ctx));
    GF_TRY(sweep_gauss_seidel(s, p, c, 0, n_interior, scale));
    if (!first || *owed)
        GF_TRY(pipe_take(s, p, comm));
    *owed = 0;
    GF_TRY(sweep_gauss_seidel(s, p, c, n_interior, s->ncontact, scale));
    GF_TRY(pipe_post(s, p, comm));
    if (first) {
        GF_TRY(comm->pipe_expect(comm->ctx));
        *owed = 1;
        if (measure) {
            GF_TRY(pipe_take(s, p, comm));
            *owed = 0;
        }
    }
    return GF_OK;
}

/* Rounding level of the velocity changes, in units of the velocity scale of the step. */
#define GF_SOLVER_FLOOR (1000.0 * DBL_EPSILON)
/* Sweeps over which the mean contraction is measured. */
#define GF_SOLVER_WINDOW 10

/* The sweeps and the stopping test, on the records; `applied`: the impulses are already in the
 * velocities. */
static gf_status iterate(gf_solver *s, gf_particles *p, const gf_contacts *c,
                         const gf_solver_comm *comm, size_t n_interior, int applied,
                         gf_solver_result *res) {
    const int jacobi = s->prm.mode == GF_SWEEP_JACOBI;
    const int parallel = comm && comm->sync;
    const int phases = parallel && !jacobi && comm->ncolors > 1 ? comm->ncolors : 1;
    const int pipelined = phases == 2 && comm->pipe_expect && comm->pipe_post && comm->pipe_take;
    const long fixed = s->prm.sweeps;
    const long nsweeps = fixed > 0 ? fixed : s->prm.max_iterations;
    const long every = s->prm.tolerance > 0.0 && s->prm.check_every > 0
                           ? s->prm.check_every
                           : (nsweeps > 0 ? nsweeps : 1);
    /* Scales of the stopping test, from the free velocities. */
    double vref = 0.0, scale = 0.0;
    s->measuring = 0;
    if (fixed <= 0) {
        vref = reference_velocity(s);
        scale = body_speed(p);
    }
    GF_TRY(gf_reserve((void **)&s->stamp, &s->capstamp, s->capb, sizeof *s->stamp));
    GF_TRY(gf_reserve((void **)&s->drift, &s->capdrift, s->capb, sizeof *s->drift));
    GF_TRY(gf_reserve((void **)&s->seen, &s->capseen, s->ncontact, sizeof *s->seen));
    size_t capslack = s->capslack;
    GF_TRY(gf_reserve((void **)&s->slack, &capslack, s->ncontact, sizeof *s->slack));
    GF_TRY(gf_reserve((void **)&s->slack_ref, &s->capslack, s->ncontact, sizeof *s->slack_ref));
    forget_changes(s);
    memset(s->drift, 0, s->capb * sizeof *s->drift);
    s->quiet = 0.0;
    s->quiet_tests = s->quiet_skips = 0;
    int quiet_on = !jacobi && fixed <= 0 && s->prm.tolerance > 0.0 && s->prm.quiet > 0.0;
    if (quiet_on) {
        GF_TRY(gf_reserve((void **)&s->quiet_u, &s->capquiet, 4 * s->ncontact, sizeof *s->quiet_u));
        for (size_t q = 0; q < 4 * s->ncontact; ++q) /* no block solved yet: none quiet */
            s->quiet_u[q] = INFINITY;
    }
    if (s->ncontact > 0) /* without contacts nothing was allocated */
        memset(s->slack, 0, s->ncontact * sizeof *s->slack);
    s->blocks = 0;
    s->fallback = 0;
    s->joints = 0;
    s->omega = 1.0; /* the first sweep plain: it solves an isolated contact exactly */
    /* Warm-start impulses enter the velocities before the first sweep. */
    for (size_t q = 0; q < s->ncontact && !applied; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        if (k->lambda[0] != 0.0 || k->lambda[1] != 0.0 || k->lambda[2] != 0.0)
            apply_change(s, k, k->lambda);
        if (!torque_free(s, k))
            apply_torque(s, k, &s->resist[k->contact], s->resist[k->contact].tau);
    }
    if (parallel)
        GF_TRY(sync_bodies(s, p, comm));
    /* D is measured where a test needs it: at each test sweep and the sweep before. The tests
     * of the last GF_SOLVER_WINDOW sweeps (at least the last test) give the mean rate. */
    struct {
        long k;
        double d;
    } tests[GF_SOLVER_WINDOW + 1];
    int ntests = 0;
    double before = -1.0; /* D of the sweep before a test sweep; -1: not measured */
    /* The last synchronisation of a sweep completes during the next sweep's interior contacts
     * (they touch no ghost or shared body), unless the sweep is measured. */
    int pending = 0;
    int owed = 0; /* pipelined, colour 0: the reply to its last post is still to take */
    for (long k = 1; k <= nsweeps; ++k) {
        /* Sweeps are numbered from 1; tests after sweeps every, 2 every, ... and the last. */
        int test = fixed <= 0 && (k % every == 0 || k == nsweeps);
        int next_test = fixed <= 0 && k < nsweeps && ((k + 1) % every == 0 || k + 1 == nsweeps);
        int measure = test || next_test;
        if (measure && pending) { /* or the last sweep's changes would count in this one's D */
            GF_TRY(sync_end(s, p, comm));
            pending = 0;
        }
        if (measure && owed) { /* the same */
            GF_TRY(pipe_take(s, p, comm));
            owed = 0;
        }
        if (k == 2 && !jacobi)
            s->omega = s->prm.over_relaxation;
        if (measure)
            begin_measure(s);
        if (jacobi) {
            GF_TRY(sweep_jacobi(s, p, c, &scale));
            if (parallel)
                GF_TRY(sync_bodies(s, p, comm));
        } else if (pipelined) {
            GF_TRY(sweep_pipelined(s, p, c, comm, n_interior, measure, &owed, &scale));
        } else {
            /* Interior contacts share no body with another rank; then colour by colour. */
            GF_TRY(sweep_gauss_seidel(s, p, c, 0, n_interior, &scale));
            if (pending)
                GF_TRY(sync_end(s, p, comm));
            pending = 0;
            for (int col = 0; col < phases; ++col) {
                if (phases == 1 || col == comm->color)
                    GF_TRY(sweep_gauss_seidel(s, p, c, n_interior, s->ncontact, &scale));
                if (!parallel)
                    continue;
                if (col == phases - 1 && !measure && k < nsweeps) {
                    GF_TRY(sync_begin(s, p, comm));
                    pending = 1;
                } else
                    GF_TRY(sync_bodies(s, p, comm));
            }
        }
        res->iterations = k;
        res->blocks = s->blocks;
        res->fallbacks = s->fallback;
        res->joints = s->joints;
        res->slots = (int64_t)s->ncontact * k;
        if (!measure)
            continue;
        double dk = velocity_change(s, p), prev = before;
        before = dk; /* a test sweep can be the sweep before the next test (every 1) */
        if (!test)
            continue;
        /* The oldest remembered test within the window (or the last test, if further). */
        long reach = every > GF_SOLVER_WINDOW ? every : GF_SOLVER_WINDOW;
        int old = -1;
        for (int q = 0; q < ntests; ++q)
            if (k - tests[q].k <= reach) {
                old = q;
                break;
            }
        if (old < 0 && ntests > 0)
            old = ntests - 1;
        long span = old >= 0 ? k - tests[old].k : 0;
        /* Every rank must stop after the same sweep: the decision is global. */
        /* Quiet blocks pay where a good share of the blocks tested are quiet (a converging
         * dense flow); where few are (steps far from converged, every block still moving) the
         * test only costs: then no more for this step, on any rank once on none they paid. */
        const int useful = s->quiet == 0.0 || s->quiet_skips >= s->prm.quiet_share * s->quiet_tests;
        s->quiet_tests = s->quiet_skips = 0;
        double m[6] = {dk,    k > 1 ? prev : -1.0, old >= 0 ? tests[old].d : -1.0, vref,
                       scale, useful ? 1.0 : 0.0};
        if (comm && comm->max)
            GF_TRY(comm->max(comm->ctx, m, 6));
        quiet_on = quiet_on && m[5] > 0.0;
        if (ntests == GF_SOLVER_WINDOW + 1) {
            memmove(tests, tests + 1, GF_SOLVER_WINDOW * sizeof tests[0]);
            --ntests;
        }
        tests[ntests].k = k;
        tests[ntests].d = m[0];
        ++ntests;
        /* The contraction: the slower of the last sweep's and the window's mean rate. */
        double rho = INFINITY;
        if (m[1] > 0.0)
            rho = m[0] / m[1];
        if (rho < INFINITY && span > 0 && m[2] > 0.0)
            rho = fmax(rho, pow(m[0] / m[2], 1.0 / (double)span));
        /* Relaxed sweeps contract by no less than |1 - omega| (their iteration matrix's
         * determinant is (1 - omega)^n), however fast two sweeps seem to. */
        if (s->omega != 1.0)
            rho = fmax(rho, fabs(1.0 - s->omega));
        /* Quiet blocks left unsolved may each be up to `quiet` from their own answer: a
         * change the sweeps would have made, added to D. */
        double floor = GF_SOLVER_FLOOR * fmax(m[3], m[4]), dq = m[0] + s->quiet;
        int done = m[0] <= floor || (rho < 1.0 && dq / (1.0 - rho) <= s->prm.tolerance * m[3]);
        res->reference = m[3];
        res->floor = floor;
        res->stalled = !done && m[0] > floor && !(rho < GF_SOLVER_STALL);
        res->error = !res->stalled && m[0] > floor ? dq / (1.0 - rho) : fmax(m[0], s->quiet);
        res->residual = res->error == 0.0 ? 0.0 : (m[3] > 0.0 ? res->error / m[3] : INFINITY);
        res->converged = done;
        if (done && s->prm.tolerance > 0.0)
            break;
        /* From the first test on, v_ref is the same on every rank. */
        s->quiet = quiet_on ? s->prm.quiet * s->prm.tolerance * m[3] : 0.0;
        /* Over-relaxed sweeps that stopped contracting (friction's non-smooth cone can make
         * them overshoot to and fro): plain ones for the rest of the step. */
        if (s->omega != 1.0 && m[1] > 0.0 && m[0] > m[1])
            s->omega = 1.0;
    }
    /* Pipelined: the last reply, then every copy of every body as the synchronisation leaves
     * them after the last sweep. */
    if (owed)
        GF_TRY(pipe_take(s, p, comm));
    if (pipelined)
        GF_TRY(sync_bodies(s, p, comm));
    return GF_OK;
}

/* Whether contact j (record k) is an impact not yet restituted that took a compression
 * impulse. */
static inline int to_restitute(const gf_solver *s, const gf_solver_contact *k, gf_contacts *c,
                               size_t j, double dt) {
    return c->e[j] > 0.0 && s->rebound[j].N == 0.0 && k->lambda[0] > 0.0 && impact(s, k, c, j, dt);
}

/* Poisson's restitution (docs/physics.md, "Restitution"): after the compression solve, each
 * impact that took a compression impulse lambda_c gets e lambda_c more, its normal impulse is
 * fixed at N = (1 + e) lambda_c,n and its tangential one becomes the variable rho of its
 * restitution block (|rho| <= mu N); then the sweeps go on from there, every block taking what
 * it needs beyond that. Every rank takes part when any has an impact. */
static gf_status restitute(gf_solver *s, gf_particles *p, gf_contacts *c,
                           const gf_solver_comm *comm, size_t n_interior, double dt,
                           gf_solver_result *res) {
    double any = 0.0;
    for (size_t q = 0; q < s->ncontact && any == 0.0; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        size_t j = (size_t)k->contact;
        any = to_restitute(s, k, c, j, dt);
    }
    if (comm && comm->max)
        GF_TRY(comm->max(comm->ctx, &any, 1));
    if (!(any > 0.0))
        return GF_OK;
    for (size_t q = 0; q < s->ncontact; ++q) {
        gf_solver_contact *k = &s->rec[q];
        size_t j = (size_t)k->contact;
        gf_solver_rebound *b = &s->rebound[j];
        if (!to_restitute(s, k, c, j, dt))
            continue;
        const double e = c->e[j];
        const double d[3] = {e * k->lambda[0], e * k->lambda[1], e * k->lambda[2]};
        apply_change(s, k, d);
        b->N = (1.0 + e) * k->lambda[0];
        b->rho[0] = (1.0 + e) * k->lambda[1];
        b->rho[1] = (1.0 + e) * k->lambda[2];
        k->lambda[0] = k->lambda[1] = k->lambda[2] = 0.0;
        s->rebounding = 1;
    }
    /* The two phases share the step's budget of sweeps, the second getting at least half
     * of it to settle the rebounds (an unconverged compression leaves it no more). */
    gf_solver_result compression = *res;
    const long budget = s->prm.max_iterations, floor = (budget + 1) / 2;
    if (s->prm.sweeps <= 0)
        s->prm.max_iterations =
            budget - compression.iterations > floor ? budget - compression.iterations : floor;
    gf_status st = iterate(s, p, c, comm, n_interior, 1, res);
    s->prm.max_iterations = budget;
    GF_TRY(st);
    res->iterations += compression.iterations;
    res->blocks += compression.blocks;
    res->slots += compression.slots;
    res->joints += compression.joints;
    res->fallbacks += compression.fallbacks;
    return GF_OK;
}

/* Contacts with a turning mesh: its surface moves at v + omega x (p - pivot), different at each
 * contact point, so each such contact gets a body record of its own moving at that velocity (of
 * infinite mass, like every geometry body: the sweep needs no other change). */
static gf_status turning_surfaces(gf_solver *s, const gf_walls *w, const gf_contacts *c) {
    size_t nb = s->nrec, extra = 0;
    for (size_t q = 0; q < c->count; ++q) {
        int32_t b = c->i2[s->rec[q].contact];
        extra += b < 0 && gf_walls_turning(w, -1 - b);
    }
    if (extra == 0)
        return GF_OK;
    GF_TRY(gf_reserve((void **)&s->body, &s->capb, nb + GF_MAX_BODIES + extra, sizeof *s->body));
    size_t next = nb + GF_MAX_BODIES;
    for (size_t q = 0; q < c->count; ++q) {
        size_t j = (size_t)s->rec[q].contact;
        int32_t b = c->i2[j];
        if (b >= 0 || !gf_walls_turning(w, -1 - b))
            continue;
        /* A geometry contact's second lever arm is the contact point itself. */
        const double point[3] = {c->r2[0][j], c->r2[1][j], c->r2[2][j]};
        gf_solver_body *g = &s->body[next];
        memset(g, 0, sizeof *g);
        gf_walls_surface_velocity(w, -1 - b, point, g->v);
        s->rec[q].b2 = s->head[q].b2 = (int32_t)next++;
    }
    return GF_OK;
}

/* Contact j's penetration slop: a share of its smaller body's (bounding) radius. */
static inline double slop_of(const gf_solver *s, const gf_particles *p, const gf_contacts *c,
                             size_t j) {
    double r = p->radius[c->i1[j]];
    if (c->i2[j] >= 0)
        r = fmin(r, p->radius[c->i2[j]]);
    return s->prm.penetration_slop * r;
}

static gf_status solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c, double dt,
                       const gf_solver_comm *comm, int applied, gf_solver_result *res) {
    const int parallel = comm && comm->sync;
    const long fixed = s->prm.sweeps;
    const long nsweeps = fixed > 0 ? fixed : s->prm.max_iterations;
    memset(res, 0, sizeof *res);
    res->converged = fixed > 0 ? -1 : 0;
    if ((!parallel && c->count == 0) || nsweeps <= 0) {
        res->converged = fixed > 0 ? -1 : c->count == 0;
        return GF_OK;
    }
    size_t n_interior = 0;
    GF_TRY(plan_sweeps(s, p, c, comm, &n_interior));
    if (fixed <= 0 && p->n_local > s->capv) {
        size_t cap = s->capv;
        GF_TRY(gf_reserve((void **)&s->snap, &cap, p->n_local, 6 * sizeof *s->snap));
        GF_TRY(gf_grow((void **)&s->saved, cap, sizeof *s->saved));
        GF_TRY(gf_grow((void **)&s->saved_epoch, cap, sizeof *s->saved_epoch));
        memset(s->saved_epoch, 0, cap * sizeof *s->saved_epoch);
        s->epoch = 0;
        s->capv = cap;
    }
    if (s->prm.mode == GF_SWEEP_JACOBI)
        GF_TRY(gf_reserve((void **)&s->dl, &s->capdl, c->count, 3 * sizeof *s->dl));
    if (s->prm.mode == GF_SWEEP_JACOBI && s->resistive)
        GF_TRY(gf_reserve((void **)&s->dtau, &s->capdtau, c->count, 3 * sizeof *s->dtau));
    /* The step's part of the records: bodies, geometry motion, impulses, gap terms. */
    size_t nb = s->nrec;
    for (size_t r = 0; r < nb; ++r) {
        size_t i = (size_t)s->part_of[r];
        gf_solver_body *g = &s->body[r];
        for (int d = 0; d < 3; ++d) {
            g->v[d] = p->v[d][i];
            g->w[d] = p->w[d][i];
        }
        g->im = p->inv_mass[i];
        g->ii = isotropic(p, i) ? p->inv_inertia[0][i] : 0.0;
    }
    for (size_t k = 0; k < GF_MAX_BODIES; ++k) {
        memset(&s->body[nb + k], 0, sizeof s->body[nb + k]);
        memcpy(s->body[nb + k].v, w->velocity[k], sizeof w->velocity[k]);
    }
    if (w->nmesh > 0)
        GF_TRY(turning_surfaces(s, w, c));
    const double inv_dt = 1.0 / dt;
    GF_TRY(rebound_read(s, c));
    for (size_t q = 0; q < c->count; ++q) {
        gf_solver_contact *k = &s->rec[q];
        size_t j = (size_t)k->contact;
        for (int m = 0; m < 3; ++m)
            k->lambda[m] = c->lambda[m][j];
        k->bias = gap_term(s, c->gap[j], slop_of(s, p, c, j), inv_dt);
        if (!c->restitutive || !(c->e[j] > 0.0))
            continue;
        const gf_solver_rebound *b = &s->rebound[j];
        if (b->N > 0.0) { /* restituted: the block's own impulse is the rest */
            k->lambda[0] -= b->N;
            k->lambda[1] -= b->rho[0];
            k->lambda[2] -= b->rho[1];
        } else if (impact(s, k, c, j, dt)) {
            k->bias = fmin(k->bias, 0.0); /* the compression ends the approach within the step */
        }
    }
    s->cohesive = c->cohesive;
    if (s->cohesive) {
        GF_TRY(gf_reserve((void **)&s->kappa, &s->capkappa, c->count, sizeof *s->kappa));
        for (size_t j = 0; j < c->count; ++j) {
            double touch = GF_SOLVER_COHESION_RANGE * p->radius[c->i1[j]];
            s->kappa[j] = c->gap[j] <= touch ? c->coh[j] * dt : 0.0;
        }
    }
    for (size_t j = 0; j < c->count && s->resistive; ++j) {
        gf_solver_resist *r = &s->resist[j];
        for (int m = 0; m < 3; ++m)
            r->tau[m] = c->tau[m][j];
        if (c->i2[j] < 0)
            gf_walls_angular_velocity(w, -1 - c->i2[j], r->w0);
    }
    gf_status st = iterate(s, p, c, comm, n_interior, applied, res);
    if (st == GF_OK && c->restitutive)
        st = restitute(s, p, c, comm, n_interior, dt, res);
    for (size_t q = 0; q < c->count; ++q) {
        const gf_solver_contact *k = &s->rec[q];
        size_t j = (size_t)k->contact;
        for (int m = 0; m < 3; ++m)
            c->lambda[m][j] = k->lambda[m];
        if (!c->restitutive)
            continue;
        const gf_solver_rebound *b = &s->rebound[j];
        c->rb[0][j] = b->N;
        c->rb[1][j] = b->rho[0];
        c->rb[2][j] = b->rho[1];
        c->lambda[0][j] += b->N;
        c->lambda[1][j] += b->rho[0];
        c->lambda[2][j] += b->rho[1];
    }
    for (size_t j = 0; j < c->count && s->resistive; ++j)
        for (int m = 0; m < 3; ++m)
            c->tau[m][j] = s->resist[j].tau[m];
    bodies_to_particles(s, p, NULL, nb);
    copies_from_slots(p, comm);
    return st;
}

gf_status gf_solver_solve(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                          double dt, const gf_solver_comm *comm, gf_solver_result *res) {
    return solve(s, p, w, c, dt, comm, 0, res);
}

gf_status gf_solver_resume(gf_solver *s, gf_particles *p, const gf_walls *w, gf_contacts *c,
                           double dt, const gf_solver_comm *comm, gf_solver_result *res) {
    return solve(s, p, w, c, dt, comm, 1, res);
}
