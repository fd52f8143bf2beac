#include "test_util.h"

double gf_test_uniform(uint64_t *state, double lo, double hi) {
    /* xorshift64*: good enough for test inputs, and the same everywhere. */
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    double u = (double)((x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}

#include <stdlib.h>

#include "granflow/log.h"

gf_par gf_test_par;

int gf_test_mpi_run(int *argc, char ***argv, const char *name, const struct CMUnitTest *tests,
                    size_t ntests) {
    if (gf_par_init(argc, argv, &gf_test_par) != GF_OK)
        return 1;
    gf_log_set_rank(gf_test_par.rank);
    gf_log_set_quiet(1);
    int failed = _cmocka_run_group_tests(name, tests, ntests, NULL, NULL);
    /* A rank that failed without aborting must not leave the others waiting. */
    int any = failed;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    gf_par_finalize();
    return any ? 1 : 0;
}
