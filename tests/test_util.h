/* Helpers shared by the tests. */
#ifndef GF_TEST_UTIL_H
#define GF_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "granflow/error.h"

/* Fails the test with the library's message when a call does not return GF_OK. */
#define GF_ASSERT_OK(expr)                                                                         \
    do {                                                                                           \
        gf_status st_ = (expr);                                                                    \
        if (st_ != GF_OK)                                                                          \
            fail_msg("%s returned %s: %s", #expr, gf_status_name(st_), gf_error_message());        \
    } while (0)

#define GF_ASSERT_NEAR(a, b, tol)                                                                  \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol)))                                                             \
            fail_msg("%s = %.17g, expected %.17g (tolerance %g)", #a, a_, b_, (double)(tol));      \
    } while (0)

/* A reproducible uniform number in [lo, hi) from a 64-bit state. */
double gf_test_uniform(uint64_t *state, double lo, double hi);

/* Runs a shell command; returns its exit status and (in *out, malloc'd) stdout and stderr. */
int gf_test_run(const char *cmd, char **out);

/* A fresh directory /tmp/gf_test_<tag>_XXXXXX, its name in dir; and its removal with all it
 * holds. Return 0 on success. */
int gf_test_tmpdir(char *dir, size_t size, const char *tag);
int gf_test_rmtree(const char *dir);

/* A solver's global maximum on one rank: the values are already the maximum (gf_solver_comm). */
gf_status gf_test_no_max(void *ctx, double *values, int n);

/* A row of spheres on the x axis for the solver tests: ids 0 .. n-1 at x[k] moving at vx[k]
 * along x (vx NULL: at rest), radius r, the first n_owned owned and the rest ghosts; its contacts
 * within `margin` detected (asserted: exactly `contacts` of them) and solved once for a step dt
 * with prm and comm (NULL: one rank). The scene stays for inspection until gf_test_row_free.
 * gf_test_row_init: an empty scene (for tests that fill it themselves). */
#include "contact/contact.h"
#include "solver/solver.h"
typedef struct {
    gf_particles p;
    gf_walls w;
    gf_materials m;
    gf_contacts c;
    gf_linkcells lc;
    gf_solver_result res;
} gf_test_row;
void gf_test_row_solve(gf_test_row *t, int n_owned, int n, const double *x, const double *vx,
                       double r, double margin, size_t contacts, const gf_solver_params *prm,
                       double dt, const gf_solver_comm *comm);
void gf_test_row_init(gf_test_row *t);
void gf_test_row_free(gf_test_row *t);

/* A one-rank sim from configuration text (`name`: its file name in messages), started; and `steps`
 * steps of it. */
#include "sim/sim.h"
void gf_test_sim_make(gf_sim *sim, const char *name, const char *text);
void gf_test_sim_run(gf_sim *sim, long steps);

/* Walls on the six faces of the box [lo, hi] (material 0), normals inwards. */
#include "geometry/geometry.h"
void gf_test_box_walls(gf_walls *w, const double lo[3], const double hi[3]);

/* MPI tests: the communicator of the test job (set by gf_test_mpi_run). */
#include "par/par.h"
extern gf_par gf_test_par;
/* Starts MPI, runs the cmocka tests on every rank (quietly on all but rank 0), finalises. */
int gf_test_mpi_run(int *argc, char ***argv, const char *name, const struct CMUnitTest *tests,
                    size_t ntests);
/* Collective: a fresh directory made by rank 0, its name on every rank; and its removal after a
 * barrier. Return 0 on success. */
int gf_test_mpi_tmpdir(char *dir, size_t size, const char *tag);
int gf_test_mpi_rmdir(const char *dir);
#define GF_TEST_MPI_MAIN(tests)                                                                    \
    int main(int argc, char **argv) {                                                              \
        return gf_test_mpi_run(&argc, &argv, __FILE__, tests, sizeof tests / sizeof tests[0]);     \
    }

#endif
