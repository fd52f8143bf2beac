/* The solver's side of the pipelined two-colour sweep (issue 13), against stand-ins for the
 * exchange: how the messages pair up between the colours, that the reply to the last post is
 * not lost, and that what a take brings counts in the stopping test's change. (That the
 * pipelined sweep gives the synchronised sweep's results bit for bit is test_mpi_solver's.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contact/contact.h"
#include "core/log.h"
#include "body/particles.h"
#include "solver/solver.h"
#include "test_util.h"

/* A stand-in for the other colour: each take brings a change `kick` of owned particle 2's
 * velocity (shared with the other rank, touching nothing here); the calls are logged, one
 * letter each: S sync, E expect, P post, T take. */
typedef struct {
    double kick;
    int takes;
    char log[256];
    size_t len;
} other;

static void note(other *o, char c) {
    if (o->len + 1 < sizeof o->log)
        o->log[o->len++] = c;
    o->log[o->len] = '\0';
}

static gf_status fake_sync(void *ctx, gf_particles *p) {
    (void)p;
    note(ctx, 'S');
    return GF_OK;
}

static gf_status fake_expect(void *ctx) {
    note(ctx, 'E');
    return GF_OK;
}

static gf_status fake_post(void *ctx, gf_particles *p) {
    (void)p;
    note(ctx, 'P');
    return GF_OK;
}

static gf_status fake_take(void *ctx, gf_particles *p) {
    other *o = ctx;
    note(o, 'T');
    o->takes++;
    p->v[1][2] += o->kick;
    return GF_OK;
}

/* A resting pair of spheres (0, 1) and sphere 2 far away, shared with the other rank; one
 * solve on a rank of `color` of two, with prm. */
static gf_solver_result solve_three(int color, const gf_solver_params *prm, other *o, double *v2) {
    const double x[3] = {0.0, 0.02, 1.0};
    const uint8_t shared[3] = {0, 0, 1};
    gf_solver_comm comm = {.ctx = o,
                           .sync = fake_sync,
                           .pipe_expect = fake_expect,
                           .pipe_post = fake_post,
                           .pipe_take = fake_take,
                           .max = gf_test_no_max,
                           .shared = shared,
                           .nslot = 3,
                           .color = color,
                           .ncolors = 2};
    gf_test_row t;
    gf_test_row_solve(&t, 3, 3, x, NULL, 0.01, 1e-4, 1, prm, 1e-4, &comm);
    *v2 = t.p.v[1][2];
    gf_test_row_free(&t);
    return t.res;
}

/* A fixed number of sweeps: one synchronisation before the first and one after the last; in
 * between colour 0 posts its boundary first and takes the reply before its next boundary and
 * once more at the end, colour 1 takes colour 0's post of the same sweep before its own. So the
 * k-th post of one colour meets the k-th take of the other, and every reply arrives: three
 * kicks in three sweeps. */
static void test_messages_pair_up(void **state) {
    (void)state;
    const char *want[2] = {"SPETPETPETS", "SETPETPETPS"};
    for (int color = 0; color < 2; ++color) {
        gf_solver_params prm;
        gf_solver_params_default(&prm);
        prm.sweeps = 3;
        other o = {.kick = 1e-3};
        double v2;
        gf_solver_result res = solve_three(color, &prm, &o, &v2);
        assert_int_equal(res.iterations, 3);
        assert_string_equal(o.log, want[color]);
        assert_int_equal(o.takes, 3);
        GF_ASSERT_NEAR(v2, 3e-3, 1e-15);
    }
}

/* What a take brings counts in the change of its sweep: the other rank keeps moving shared
 * sphere 2, so the stopping test never passes (25 sweeps, not converged), on either colour; with
 * nothing brought the resting pair stops after its first sweep. */
static void test_taken_changes_counted(void **state) {
    (void)state;
    for (int color = 0; color < 2; ++color)
        for (int kicked = 0; kicked < 2; ++kicked) {
            gf_solver_params prm;
            gf_solver_params_default(&prm);
            prm.max_iterations = 25;
            other o = {.kick = kicked ? 1e-3 : 0.0};
            double v2;
            gf_solver_result res = solve_three(color, &prm, &o, &v2);
            assert_int_equal(res.converged, !kicked);
            assert_int_equal(res.iterations, kicked ? 25 : 1);
            GF_ASSERT_NEAR(v2, o.takes * o.kick, 1e-15);
        }
}

int main(void) {
    gf_log_set_quiet(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_pair_up),
        cmocka_unit_test(test_taken_changes_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
