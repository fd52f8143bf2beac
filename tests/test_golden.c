/* Golden results of the example configurations (issue 32): a short run of each configs/<name>.cfg
 * is compared with the results stored in tests/golden/examples_np<ranks>.txt, so that a change
 * meant to move code and not results (a refactoring) is checked by a test and not by hand.
 *
 * What is compared, over all particles of all ranks after the run's steps: the particle count
 * (exactly); the mass, the sums of m x, m v, m |v|^2, |w|^2, of id x (which changes when two
 * particles swap places) and of id q (orientations, q taken with w >= 0); the deepest penetration
 * of the last step. A sum passes when it is within 1e-9 of the sum of its terms' magnitudes
 * (stored with it; for a vector's component, the largest of its components') of the stored one:
 * rounding differences of a reordered reduction are ~1e-16 of it, while a changed result after
 * hundreds of steps of contact dynamics moves it by far more (a kernel's regularisation changed
 * from 1e-3 to 2e-3 moved mixed-pour's momentum by 3e-5 of itself).
 *
 * The stored results are this code's own (the test guards against unintended change, not for
 * correctness, which the physics tests do against closed forms). After an intended change of
 * results, regenerate them, check the difference is the intended one, and commit them:
 *
 *     GF_GOLDEN_WRITE=1 ctest -R test_golden        (writes tests/golden/examples_np*.txt)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "sim/sim.h"
#include "test_util.h"

/* The examples and their steps: enough for contacts to form and carry load in each. */
static const struct {
    const char *name;
    long steps;
} examples[] = {{"demo", 200},  {"channel-demo", 200}, {"box-tipping", 200}, {"mixed-pour", 600},
                {"drum", 200},  {"hopper", 800},       {"silo", 800},        {"funnel-heap", 600},
                {"chute", 200}, {"from-csv", 200},     {"reference", 600}};

#define GOLDEN_TOL 1e-9

enum {
    Q_N,
    Q_M,
    Q_MX,
    Q_MV = Q_MX + 3,
    Q_MV2 = Q_MV + 3,
    Q_W2,
    Q_IDX,
    Q_IDQ = Q_IDX + 3,
    Q_PEN = Q_IDQ + 4,
    Q_COUNT
};

static const char *const qname[Q_COUNT] = {
    "n",  "mass", "m_x",  "m_y",  "m_z",   "m_vx",  "m_vy",  "m_vz",  "m_v2",
    "w2", "id_x", "id_y", "id_z", "id_qw", "id_qx", "id_qy", "id_qz", "penetration"};

/* The run's figures: value and the sum of its terms' magnitudes (the scale of its rounding). */
typedef struct {
    double v[Q_COUNT], s[Q_COUNT];
} figures;

static void add(figures *f, int q, double term) {
    f->v[q] += term;
    f->s[q] += fabs(term);
}

static void run_example(const char *name, long steps, figures *f) {
    char path[512], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "configs/%s.cfg", name);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_read_file(path, &text, &len));
    GF_ASSERT_OK(gf_config_parse(text, len, path, &cfg));
    free(text);
    char arg[64];
    snprintf(arg, sizeof arg, "-Time.steps=%ld", steps);
    GF_ASSERT_OK(gf_config_override(cfg, arg));
    GF_ASSERT_OK(gf_config_override(cfg, "-Domain.processes=<0,0,0>"));
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &gf_test_par));
    gf_status st = gf_sim_configure(&sim, cfg, 1);
    if (st != GF_OK)
        fail_msg("%s: %s", path, gf_error_message());
    GF_ASSERT_OK(gf_sim_start(&sim));
    for (long k = 0; k < steps; ++k) {
        st = gf_sim_step(&sim);
        if (st != GF_OK)
            fail_msg("%s, step %ld: %s", path, k + 1, gf_error_message());
    }
    memset(f, 0, sizeof *f);
    const gf_particles *p = &sim.particles;
    for (size_t i = 0; i < p->n_local; ++i) {
        double m = p->inv_mass[i] > 0.0 ? 1.0 / p->inv_mass[i] : 0.0, id = (double)p->id[i];
        double v2 = 0.0, w2 = 0.0, sign = p->q[0][i] < 0.0 ? -1.0 : 1.0;
        add(f, Q_N, 1.0);
        add(f, Q_M, m);
        for (int d = 0; d < 3; ++d) {
            add(f, Q_MX + d, m * p->x[d][i]);
            add(f, Q_MV + d, m * p->v[d][i]);
            add(f, Q_IDX + d, id * p->x[d][i]);
            v2 += p->v[d][i] * p->v[d][i];
            w2 += p->w[d][i] * p->w[d][i];
        }
        for (int c = 0; c < 4; ++c)
            add(f, Q_IDQ + c, id * sign * p->q[c][i]);
        add(f, Q_MV2, m * v2);
        add(f, Q_W2, w2);
    }
    GF_ASSERT_OK(gf_par_allreduce_double(&gf_test_par, f->v, Q_PEN, GF_PAR_SUM));
    GF_ASSERT_OK(gf_par_allreduce_double(&gf_test_par, f->s, Q_PEN, GF_PAR_SUM));
    f->v[Q_PEN] = sim.figures.max_penetration;
    GF_ASSERT_OK(gf_par_allreduce_double(&gf_test_par, &f->v[Q_PEN], 1, GF_PAR_MAX));
    f->s[Q_PEN] = f->v[Q_PEN];
    gf_sim_free(&sim);
    gf_config_destroy(cfg);
}

static void golden_path(char *path, size_t size) {
    snprintf(path, size, "%s/tests/golden/examples_np%d.txt", GF_SOURCE_DIR, gf_test_par.size);
}

/* The stored value and scale of `quantity` of `name`, or 0 if the file has none. */
static int stored(FILE *in, const char *name, long steps, const char *quantity, double *value,
                  double *scale) {
    char line[512];
    rewind(in);
    while (fgets(line, sizeof line, in)) {
        char n[64], q[64];
        long k;
        if (line[0] == '#' || sscanf(line, "%63s %ld %63s %lf %lf", n, &k, q, value, scale) != 5)
            continue;
        if (strcmp(n, name) == 0 && strcmp(q, quantity) == 0 && k == steps)
            return 1;
    }
    return 0;
}

/* The components of a vector share a scale: a component that is zero but for rounding (the
 * sideways momentum of a symmetric case) is compared at the scale of the vector's largest. */
static double family_scale(FILE *in, const char *name, long steps, int q, double scale) {
    static const int first[] = {Q_MX, Q_MV, Q_IDX, Q_IDQ};
    static const int count[] = {3, 3, 3, 4};
    for (int f = 0; f < 4; ++f) {
        if (q < first[f] || q >= first[f] + count[f])
            continue;
        for (int c = first[f]; c < first[f] + count[f]; ++c) {
            double v, s;
            if (stored(in, name, steps, qname[c], &v, &s))
                scale = fmax(scale, s);
        }
    }
    return fmax(scale, 1e-300);
}

static void test_examples_match_golden(void **state) {
    (void)state;
    if (chdir(GF_SOURCE_DIR) != 0)
        fail_msg("cannot enter %s", GF_SOURCE_DIR);
    char path[1024];
    golden_path(path, sizeof path);
    int write = getenv("GF_GOLDEN_WRITE") != NULL;
    FILE *io = NULL;
    if (gf_test_par.rank == 0) {
        io = fopen(path, write ? "w" : "r");
        if (!io)
            fail_msg("cannot open %s%s", path,
                     write ? "" : " (made by GF_GOLDEN_WRITE=1 ctest -R test_golden)");
        if (write)
            fprintf(io,
                    "# granflow's golden results (tests/test_golden.c) at %d rank(s): example, "
                    "steps, quantity, value, sum of its terms' magnitudes\n",
                    gf_test_par.size);
    }
    int bad = 0;
    for (size_t e = 0; e < sizeof examples / sizeof examples[0]; ++e) {
        figures f;
        run_example(examples[e].name, examples[e].steps, &f);
        if (gf_test_par.rank != 0)
            continue;
        for (int q = 0; q < Q_COUNT; ++q) {
            if (write) {
                fprintf(io, "%s %ld %s %.17g %.17g\n", examples[e].name, examples[e].steps,
                        qname[q], f.v[q], f.s[q]);
                continue;
            }
            double want, scale;
            if (!stored(io, examples[e].name, examples[e].steps, qname[q], &want, &scale)) {
                fprintf(stderr, "%s: no %s after %ld steps in %s\n", examples[e].name, qname[q],
                        examples[e].steps, path);
                ++bad;
                continue;
            }
            double tol = q == Q_N ? 0.0
                                  : GOLDEN_TOL * family_scale(io, examples[e].name,
                                                              examples[e].steps, q, scale);
            if (!(fabs(f.v[q] - want) <= tol)) {
                fprintf(stderr,
                        "%s after %ld steps: %s is %.17g, stored %.17g (difference %.3g, "
                        "allowed %.3g)\n",
                        examples[e].name, examples[e].steps, qname[q], f.v[q], want, f.v[q] - want,
                        tol);
                ++bad;
            }
        }
    }
    if (io)
        fclose(io);
    if (bad)
        fail_msg("%d figures differ from %s: if the change of results is intended, regenerate it "
                 "(GF_GOLDEN_WRITE=1 ctest -R test_golden) and say why in the commit",
                 bad, path);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_examples_match_golden),
};

GF_TEST_MPI_MAIN(tests)
