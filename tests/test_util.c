#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

int gf_test_run(const char *cmd, char **out) {
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    int status = pclose(f);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int gf_test_tmpdir(char *dir, size_t size, const char *tag) {
    snprintf(dir, size, "/tmp/gf_test_%s_XXXXXX", tag);
    return mkdtemp(dir) != NULL ? 0 : -1;
}

int gf_test_rmtree(const char *dir) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#include "core/log.h"

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

int gf_test_mpi_tmpdir(char *dir, size_t size, const char *tag) {
    int ok = gf_test_par.rank != 0 || gf_test_tmpdir(dir, size, tag) == 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(dir, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
    return ok ? 0 : -1;
}

int gf_test_mpi_rmdir(const char *dir) {
    MPI_Barrier(MPI_COMM_WORLD);
    return gf_test_par.rank != 0 ? 0 : gf_test_rmtree(dir);
}

gf_status gf_test_no_max(void *ctx, double *values, int n) {
    (void)ctx;
    (void)values;
    (void)n;
    return GF_OK;
}

void gf_test_row_init(gf_test_row *t) {
    gf_particles_init(&t->p);
    gf_walls_init(&t->w);
    gf_materials_init(&t->m);
    gf_contacts_init(&t->c);
    gf_linkcells_init(&t->lc);
    memset(&t->res, 0, sizeof t->res);
}

void gf_test_row_solve(gf_test_row *t, int n_owned, int n, const double *x, const double *vx,
                       double r, double margin, size_t contacts, const gf_solver_params *prm,
                       double dt, const gf_solver_comm *comm) {
    gf_test_row_init(t);
    for (int k = 0; k < n; ++k) {
        gf_particle rec;
        const double c[3] = {x[k], 0.0, 0.0};
        gf_particle_make_sphere(&rec, k, c, r, 1000.0, 0);
        rec.v[0] = vx ? vx[k] : 0.0;
        GF_ASSERT_OK(k < n_owned ? gf_particles_add(&t->p, &rec)
                                 : gf_particles_add_ghost(&t->p, &rec));
    }
    GF_ASSERT_OK(gf_contact_detect(&t->p, &t->w, &t->m, margin, &t->lc, &t->c));
    assert_int_equal(t->c.count, contacts);
    gf_solver s;
    GF_ASSERT_OK(gf_solver_init(&s, prm));
    GF_ASSERT_OK(gf_solver_prepare(&s, &t->p, &t->c));
    GF_ASSERT_OK(gf_solver_solve(&s, &t->p, &t->w, &t->c, dt, comm, &t->res));
    gf_solver_free(&s);
}

void gf_test_row_free(gf_test_row *t) {
    gf_linkcells_free(&t->lc);
    gf_contacts_free(&t->c);
    gf_walls_free(&t->w);
    gf_particles_free(&t->p);
}

void gf_test_sim_make(gf_sim *sim, const char *name, const char *text) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), name, &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, NULL));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, 1));
    gf_config_destroy(cfg);
    GF_ASSERT_OK(gf_sim_start(sim));
}

void gf_test_sim_run(gf_sim *sim, long steps) {
    for (long s = 0; s < steps; ++s)
        GF_ASSERT_OK(gf_sim_step(sim));
}

void gf_test_box_walls(gf_walls *w, const double lo[3], const double hi[3]) {
    for (int d = 0; d < 3; ++d) {
        double n[3] = {0, 0, 0};
        n[d] = 1;
        GF_ASSERT_OK(gf_walls_add(w, lo, n, NULL, 0));
        n[d] = -1;
        GF_ASSERT_OK(gf_walls_add(w, hi, n, NULL, 0));
    }
}
