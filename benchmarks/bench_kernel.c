/* Kernel microbenchmark (issue 3): nanoseconds per solve and worst objective error for
 *   - the analytic maximum-dissipation kernel (general 3x3 blocks),
 *   - its sphere fast path (blocks diag(a_n, a_t, a_t)),
 *   - a 20-step golden-section search over the boundary angle, as pe approximates the kernel
 *     (implemented here only as the baseline).
 * The problems are a fixed, seeded mix of separating, sticking and sliding contacts over many
 * magnitudes. Usage: bench_kernel [problems] [repeats] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/contact_kernel.h"
#include "core/timer.h"
#include "bench_util.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static double uniform(double lo, double hi) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return lo + (hi - lo) * (double)((x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

typedef struct {
    double A[9], b[3], mu;
} problem;

static void random_problem(problem *p, int sphere) {
    double sa = pow(10.0, uniform(-6, 6)), sb = pow(10.0, uniform(-8, 2));
    if (sphere) {
        double an = sa * uniform(0.5, 2), at = sa * uniform(0.5, 4);
        double A[9] = {an, 0, 0, 0, at, 0, 0, 0, at};
        memcpy(p->A, A, sizeof A);
    } else {
        double L[9] = {0};
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < i; ++j)
                L[3 * i + j] = uniform(-1, 1);
            L[3 * i + i] = uniform(0.1, 1.5);
        }
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                double v = 0;
                for (int k = 0; k < 3; ++k)
                    v += L[3 * i + k] * L[3 * j + k];
                p->A[3 * i + j] = sa * v;
            }
    }
    /* About 1/6 separating, the rest colliding; mu decides sticking or sliding. */
    p->b[0] = sb * uniform(-0.2, 1);
    p->b[1] = sb * uniform(-1, 1);
    p->b[2] = sb * uniform(-1, 1);
    p->mu = uniform(0.05, 1.5);
}

/* ---- the pe-style baseline ------------------------------------------------------------- */

static int solve3(const double A[9], const double b[3], double x[3]) {
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                 A[2] * (A[3] * A[7] - A[4] * A[6]);
    if (!(det > 0))
        return 0;
    x[0] = (b[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (b[1] * A[8] - A[5] * b[2]) +
            A[2] * (b[1] * A[7] - A[4] * b[2])) /
           det;
    x[1] = (A[0] * (b[1] * A[8] - A[5] * b[2]) - b[0] * (A[3] * A[8] - A[5] * A[6]) +
            A[2] * (A[3] * b[2] - b[1] * A[6])) /
           det;
    x[2] = (A[0] * (A[4] * b[2] - b[1] * A[7]) - A[1] * (A[3] * b[2] - b[1] * A[6]) +
            b[0] * (A[3] * A[7] - A[4] * A[6])) /
           det;
    return 1;
}

/* Same case analysis as the analytic kernel; the sliding case by 20 golden-section steps over
 * the admissible angles (pe's approach: exact only in the limit). */
static void kernel_golden(const double A[9], const double b[3], double mu, double x[3]) {
    x[0] = x[1] = x[2] = 0;
    if (b[0] <= 0)
        return;
    if (mu == 0) {
        x[0] = b[0] / A[0];
        return;
    }
    double x0[3];
    if (!solve3(A, b, x0))
        return;
    if (x0[0] >= 0 && hypot(x0[1], x0[2]) <= mu * x0[0]) {
        memcpy(x, x0, sizeof x0);
        return;
    }
    double Ann = A[0], Ant = A[1], Ano = A[2], bn = b[0];
    double Att = A[4] - Ant * Ant / Ann, Ato = A[5] - Ant * Ano / Ann, Aoo = A[8] - Ano * Ano / Ann;
    double bt = b[1] - Ant * bn / Ann, bo = b[2] - Ano * bn / Ann;
    double a3 = hypot(Ant, Ano), a0 = atan2(Ano, Ant);
    double lo = a0 - M_PI, hi = a0 + M_PI;
    if (Ann <= mu * a3) {
        double da = acos(-Ann / (mu * a3));
        lo = a0 - da;
        hi = a0 + da;
    }
#define FOBJ(a, out)                                                                               \
    do {                                                                                           \
        double c_ = cos(a), s_ = sin(a);                                                           \
        double fr_ = Ann + mu * (Ant * c_ + Ano * s_);                                             \
        double r_ = mu * bn / fr_;                                                                 \
        out = fr_ > 0 ? 0.5 * r_ * r_ * (Att * c_ * c_ + 2 * Ato * c_ * s_ + Aoo * s_ * s_) -      \
                            r_ * (bt * c_ + bo * s_)                                               \
                      : INFINITY;                                                                  \
    } while (0)
    const double gr = 0.6180339887498949;
    double c = hi - gr * (hi - lo), d = lo + gr * (hi - lo), fc, fd;
    FOBJ(c, fc);
    FOBJ(d, fd);
    for (int it = 0; it < 20; ++it) {
        if (fc < fd) {
            hi = d;
            d = c;
            fd = fc;
            c = hi - gr * (hi - lo);
            FOBJ(c, fc);
        } else {
            lo = c;
            c = d;
            fc = fd;
            d = lo + gr * (hi - lo);
            FOBJ(d, fd);
        }
    }
#undef FOBJ
    double a = 0.5 * (lo + hi), cs = cos(a), sn = sin(a);
    double r = mu * bn / (Ann + mu * (Ant * cs + Ano * sn));
    x[1] = r * cs;
    x[2] = r * sn;
    x[0] = (bn - Ant * x[1] - Ano * x[2]) / Ann;
}

static void kernel_golden_wrap(const double A[9], const double b[3], double mu, double x[3]) {
    kernel_golden(A, b, mu, x);
}

static void kernel_analytic(const double A[9], const double b[3], double mu, double x[3]) {
    (void)gf_contact_kernel_maxdiss(A, b, mu, x);
}

static void kernel_sphere(const double A[9], const double b[3], double mu, double x[3]) {
    (void)gf_contact_kernel_maxdiss_sphere(A, b, mu, x);
}

typedef void (*kernel_fn)(const double *, const double *, double, double *);

/* Nanoseconds per solve: the median over the repeats of the thread's CPU time. */
static double time_kernel(kernel_fn k, const problem *p, size_t n, int repeats, double *out) {
    double cpu[BENCH_MAX_REPEATS];
    repeats = repeats < BENCH_MAX_REPEATS ? repeats : BENCH_MAX_REPEATS;
    for (int r = 0; r < repeats; ++r) {
        double t0 = bench_thread_seconds();
        for (size_t i = 0; i < n; ++i)
            k(p[i].A, p[i].b, p[i].mu, out + 3 * i);
        cpu[r] = bench_thread_seconds() - t0;
    }
    return 1e9 * bench_median(cpu, repeats) / (double)n;
}

/* The largest (f - f_best) / |f_best| over the problems. */
static double worst_error(const problem *p, size_t n, const double *x, const double *fbest) {
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        double f = gf_contact_objective(p[i].A, p[i].b, x + 3 * i);
        double e = (f - fbest[i]) / fmax(fabs(fbest[i]), 1e-300);
        if (fbest[i] == 0 && f == 0)
            e = 0;
        worst = e > worst ? e : worst;
    }
    return worst;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 200000;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    problem *gen = malloc(n * sizeof *gen), *sph = malloc(n * sizeof *sph);
    double *xa = malloc(3 * n * sizeof *xa), *xg = malloc(3 * n * sizeof *xg),
           *xs = malloc(3 * n * sizeof *xs), *xsa = malloc(3 * n * sizeof *xsa),
           *xsg = malloc(3 * n * sizeof *xsg);
    double *fb = malloc(n * sizeof *fb), *fbs = malloc(n * sizeof *fbs);
    if (!gen || !sph || !xa || !xg || !xs || !xsa || !xsg || !fb || !fbs) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; ++i)
        random_problem(&gen[i], 0);
    for (size_t i = 0; i < n; ++i)
        random_problem(&sph[i], 1);

    double t_an = time_kernel(kernel_analytic, gen, n, repeats, xa);
    double t_go = time_kernel(kernel_golden_wrap, gen, n, repeats, xg);
    double t_sa = time_kernel(kernel_analytic, sph, n, repeats, xsa);
    double t_sf = time_kernel(kernel_sphere, sph, n, repeats, xs);
    double t_sg = time_kernel(kernel_golden_wrap, sph, n, repeats, xsg);

    size_t sliding = 0, sticking = 0, separating = 0;
    for (size_t i = 0; i < n; ++i) {
        double fa = gf_contact_objective(gen[i].A, gen[i].b, xa + 3 * i);
        double fg = gf_contact_objective(gen[i].A, gen[i].b, xg + 3 * i);
        fb[i] = fmin(fa, fg);
        if (gen[i].b[0] <= 0)
            separating++;
        else if (xa[3 * i + 0] * gen[i].mu > hypot(xa[3 * i + 1], xa[3 * i + 2]) * (1 + 1e-9))
            sticking++;
        else
            sliding++;
        double f1 = gf_contact_objective(sph[i].A, sph[i].b, xs + 3 * i);
        double f2 = gf_contact_objective(sph[i].A, sph[i].b, xsa + 3 * i);
        double f3 = gf_contact_objective(sph[i].A, sph[i].b, xsg + 3 * i);
        fbs[i] = fmin(f1, fmin(f2, f3));
    }
    printf("granflow kernel benchmark: %zu problems per set (%zu sliding, %zu sticking, %zu "
           "separating), median CPU time of the thread over %d runs\n",
           n, sliding, sticking, separating, repeats);
    printf("%-36s %12s %22s\n", "kernel", "ns/solve", "worst rel. obj. error");
    printf("%-36s %12.1f %22.3e\n", "analytic (general blocks)", t_an, worst_error(gen, n, xa, fb));
    printf("%-36s %12.1f %22.3e\n", "golden section, 20 steps (pe)", t_go,
           worst_error(gen, n, xg, fb));
    printf("%-36s %12.1f %22.3e\n", "sphere fast path (sphere blocks)", t_sf,
           worst_error(sph, n, xs, fbs));
    printf("%-36s %12.1f %22.3e\n", "analytic on sphere blocks", t_sa,
           worst_error(sph, n, xsa, fbs));
    printf("%-36s %12.1f %22.3e\n", "golden section on sphere blocks", t_sg,
           worst_error(sph, n, xsg, fbs));
    printf("ratio golden / analytic (general): %.2f  (target >= 1)\n", t_go / t_an);
    printf("ratio analytic / sphere fast path: %.2f\n", t_sa / t_sf);
    free(gen);
    free(sph);
    free(xa);
    free(xg);
    free(xs);
    free(xsa);
    free(xsg);
    free(fb);
    free(fbs);
    return 0;
}
