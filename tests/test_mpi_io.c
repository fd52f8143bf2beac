/* Parallel HDF5 output at 1, 2 and 4 ranks (issue 5): snapshot and checkpoint round trips,
 * bit-for-bit restart equivalence, restart on a different rank count, and clear errors for
 * truncated, corrupt and foreign files. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "granflow/io.h"
#include "granflow/sim.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

static void path_of(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

/* A falling, colliding packing in a box periodic along x. */
static void make_sim(gf_sim *sim, const gf_par *par, int generate) {
    GF_ASSERT_OK(gf_sim_init(sim, par));
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.08, 0.1};
    const int per[3] = {1, 0, 0}, dims[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(sim, dims, per, lo, hi));
    for (int d = 1; d < 3; ++d) {
        double n[3] = {0, 0, 0};
        n[d] = 1;
        GF_ASSERT_OK(gf_walls_add(&sim->walls, lo, n, NULL, 0));
        n[d] = -1;
        GF_ASSERT_OK(gf_walls_add(&sim->walls, hi, n, NULL, 0));
    }
    /* A moving wall: its position is part of the state. */
    const double wp[3] = {0, 0, 0.002}, wn[3] = {0, 0, 1}, wv[3] = {0, 0, 0.01};
    GF_ASSERT_OK(gf_walls_add(&sim->walls, wp, wn, wv, 0));
    GF_ASSERT_OK(gf_materials_set_friction(&sim->materials, 0, 0, 0.4));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.max_iterations = 20;
    prm.tolerance = 1e-6;
    GF_ASSERT_OK(gf_sim_set_solver(sim, &prm));
    sim->dt = 2e-4;
    sim->gravity[2] = -9.81;
    const double r = 0.004;
    sim->margin_tolerance = 0.05 * r;
    if (!generate)
        return;
    uint64_t rng = 5;
    int64_t id = 0;
    for (int k = 0; k < 7; ++k)
        for (int j = 0; j < 6; ++j)
            for (int i = 0; i < 8; ++i) {
                double x[3] = {0.006 + 0.0122 * i, 0.007 + 0.0122 * j, 0.008 + 0.0122 * k};
                gf_particle rec;
                gf_particle_make_sphere(&rec, id++, x,
                                        r * (0.9 + 0.1 * gf_test_uniform(&rng, 0, 1)), 2500, 0);
                for (int a = 0; a < 3; ++a) {
                    rec.v[a] = gf_test_uniform(&rng, -0.5, 0.5);
                    rec.w[a] = gf_test_uniform(&rng, -50, 50);
                }
                if (!sim->distributed || gf_decomp_owns(&sim->xch.decomp, x))
                    GF_ASSERT_OK(gf_particles_add(&sim->particles, &rec));
            }
    sim->expected_particles = id;
    sim->next_id = id;
}

/* All particle records on rank 0 sorted by id (NULL elsewhere). */
static int cmp_rec(const void *a, const void *b) {
    const gf_particle *p = a, *q = b;
    return p->id < q->id ? -1 : (p->id > q->id);
}

static gf_particle *gather_all(const gf_sim *sim, const gf_par *par, size_t *n) {
    size_t nl = sim->particles.n_local;
    gf_particle *mine = malloc((nl + 1) * sizeof *mine);
    for (size_t i = 0; i < nl; ++i)
        gf_particles_get(&sim->particles, i, &mine[i]);
    void *all = NULL;
    size_t *off = NULL;
    GF_ASSERT_OK(gf_par_gather_bytes(par, 0, mine, nl * sizeof *mine, &all, &off));
    free(mine);
    *n = 0;
    if (par->rank == 0) {
        *n = off[par->size] / sizeof(gf_particle);
        qsort(all, *n, sizeof(gf_particle), cmp_rec);
    }
    free(off);
    return all;
}

/* Field by field (the records have padding), to the last bit. */
static void assert_same_particles(const gf_particle *a, const gf_particle *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        int same = a[i].id == b[i].id && a[i].radius == b[i].radius &&
                   a[i].inv_mass == b[i].inv_mass && a[i].material == b[i].material;
        for (int d = 0; d < 3; ++d)
            same = same && a[i].x[d] == b[i].x[d] && a[i].v[d] == b[i].v[d] &&
                   a[i].w[d] == b[i].w[d] && a[i].inv_inertia[d] == b[i].inv_inertia[d];
        for (int d = 0; d < 4; ++d)
            same = same && a[i].q[d] == b[i].q[d];
        if (!same)
            fail_msg("particle %lld differs (position %.17g %.17g %.17g vs %.17g %.17g %.17g)",
                     (long long)a[i].id, a[i].x[0], a[i].x[1], a[i].x[2], b[i].x[0], b[i].x[1],
                     b[i].x[2]);
    }
}

static void test_checkpoint_round_trip(void **state) {
    (void)state;
    gf_sim a, b;
    make_sim(&a, &P, 1);
    for (int s = 0; s < 60; ++s)
        GF_ASSERT_OK(gf_sim_step(&a));
    char path[512];
    path_of(path, sizeof path, "rt.ckpt.h5");
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path));
    /* The temporary file is gone, the checkpoint is there. */
    char tmp[520];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_true(access(path, R_OK) == 0 && access(tmp, F_OK) != 0);
    make_sim(&b, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&b, path));
    assert_int_equal(b.step, a.step);
    assert_true(b.time == a.time && b.next_id == a.next_id);
    assert_int_equal(b.expected_particles, a.expected_particles);
    for (size_t k = 0; k < a.walls.count; ++k)
        for (int d = 0; d < 3; ++d)
            assert_true(a.walls.point[k][d] == b.walls.point[k][d]);
    /* Same layout: every rank got back exactly its rows, in the same order. */
    assert_int_equal(a.particles.n_local, b.particles.n_local);
    for (size_t i = 0; i < a.particles.n_local; ++i) {
        gf_particle x, y;
        gf_particles_get(&a.particles, i, &x);
        gf_particles_get(&b.particles, i, &y);
        assert_same_particles(&x, &y, 1);
    }
    assert_int_equal(a.warm.n, b.warm.n);
    assert_true(a.warm.n > 0);
    for (size_t k = 0; k < a.warm.n; ++k) {
        assert_true(a.warm.a[k] == b.warm.a[k] && a.warm.b[k] == b.warm.b[k]);
        for (int d = 0; d < 3; ++d)
            assert_true(a.warm.l[d][k] == b.warm.l[d][k]);
    }
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* Snapshot datasets hold what the ranks had: read them back serially on rank 0. */
static void test_snapshot_round_trip(void **state) {
    (void)state;
    gf_sim a;
    make_sim(&a, &P, 1);
    for (int s = 0; s < 5; ++s)
        GF_ASSERT_OK(gf_sim_step(&a));
    gf_output o;
    memset(&o, 0, sizeof o);
    o.contacts = 1;
    GF_ASSERT_OK(gf_output_set_config_text(&o, "Time { dt 2e-4; }\n"));
    char path[512];
    path_of(path, sizeof path, "snap.h5");
    GF_ASSERT_OK(gf_io_write_snapshot(&o, &a, path));
    size_t n = 0;
    gf_particle *ref = gather_all(&a, &P, &n);
    int64_t ncontacts = (int64_t)a.contacts.count;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &ncontacts, 1, GF_PAR_SUM));
    if (P.rank == 0) {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f >= 0);
        long long count = 0;
        hid_t at = H5Aopen(f, "particle_count", H5P_DEFAULT);
        H5Aread(at, H5T_NATIVE_LLONG, &count);
        H5Aclose(at);
        assert_int_equal(count, (long long)n);
        int64_t *ids = malloc(n * sizeof *ids);
        double *x = malloc(3 * n * sizeof *x), *v = malloc(3 * n * sizeof *v),
               *w = malloc(3 * n * sizeof *w), *q = malloc(4 * n * sizeof *q),
               *r = malloc(n * sizeof *r);
        int32_t *mat = malloc(n * sizeof *mat), *owner = malloc(n * sizeof *owner);
        struct {
            const char *name;
            hid_t type;
            void *buf;
        } ds[] = {{"/particles/id", H5T_NATIVE_INT64, ids},
                  {"/particles/position", H5T_NATIVE_DOUBLE, x},
                  {"/particles/velocity", H5T_NATIVE_DOUBLE, v},
                  {"/particles/angular_velocity", H5T_NATIVE_DOUBLE, w},
                  {"/particles/orientation", H5T_NATIVE_DOUBLE, q},
                  {"/particles/radius", H5T_NATIVE_DOUBLE, r},
                  {"/particles/material", H5T_NATIVE_INT32, mat},
                  {"/particles/owner_rank", H5T_NATIVE_INT32, owner}};
        for (size_t k = 0; k < sizeof ds / sizeof ds[0]; ++k) {
            hid_t d = H5Dopen2(f, ds[k].name, H5P_DEFAULT);
            assert_true(d >= 0);
            assert_true(H5Dread(d, ds[k].type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds[k].buf) >= 0);
            assert_true(H5Aexists(d, "units") > 0 && H5Aexists(d, "description") > 0);
            H5Dclose(d);
        }
        /* Rows sorted by id within each rank's group: the groups from rank_offsets. */
        hid_t g = H5Gopen2(f, "particles", H5P_DEFAULT);
        long long offs[64];
        at = H5Aopen(g, "rank_offsets", H5P_DEFAULT);
        H5Aread(at, H5T_NATIVE_LLONG, offs);
        H5Aclose(at);
        H5Gclose(g);
        for (int rk = 0; rk < P.size; ++rk)
            for (long long i = offs[rk]; i < offs[rk + 1]; ++i) {
                assert_int_equal(owner[i], rk);
                if (i > offs[rk])
                    assert_true(ids[i] > ids[i - 1]);
            }
        /* Every field equals the gathered state of that id. */
        for (size_t i = 0; i < n; ++i) {
            size_t k = 0;
            while (ref[k].id != ids[i])
                ++k;
            for (int d = 0; d < 3; ++d) {
                assert_true(x[3 * i + d] == ref[k].x[d] && v[3 * i + d] == ref[k].v[d] &&
                            w[3 * i + d] == ref[k].w[d]);
            }
            for (int d = 0; d < 4; ++d)
                assert_true(q[4 * i + d] == ref[k].q[d]);
            assert_true(r[i] == ref[k].radius && mat[i] == ref[k].material);
        }
        /* The contact list and the configuration text. */
        hid_t d = H5Dopen2(f, "/contacts/pair", H5P_DEFAULT);
        assert_true(d >= 0);
        hid_t sp = H5Dget_space(d);
        hsize_t dims[2];
        H5Sget_simple_extent_dims(sp, dims, NULL);
        assert_int_equal((long long)dims[0], ncontacts);
        H5Sclose(sp);
        H5Dclose(d);
        d = H5Dopen2(f, "/configuration", H5P_DEFAULT);
        char text[64] = "";
        H5Dread(d, H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
        H5Dclose(d);
        assert_int_equal(strncmp(text, "Time { dt 2e-4; }", 17), 0);
        H5Fclose(f);
        free(ids);
        free(x);
        free(v);
        free(w);
        free(q);
        free(r);
        free(mat);
        free(owner);
    }
    free(ref);
    gf_output_free(&o);
    gf_sim_free(&a);
}

/* N steps straight equal N/2, checkpoint, restart, N/2, to the last bit. */
static void test_restart_equivalence(void **state) {
    (void)state;
    const int N = 120;
    gf_sim straight, first, second;
    make_sim(&straight, &P, 1);
    for (int s = 0; s < N; ++s)
        GF_ASSERT_OK(gf_sim_step(&straight));
    make_sim(&first, &P, 1);
    for (int s = 0; s < N / 2; ++s)
        GF_ASSERT_OK(gf_sim_step(&first));
    char path[512];
    path_of(path, sizeof path, "half.ckpt.h5");
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &first, path));
    gf_sim_free(&first);
    make_sim(&second, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&second, path));
    while (second.step < N)
        GF_ASSERT_OK(gf_sim_step(&second));
    size_t n1 = 0, n2 = 0;
    gf_particle *a = gather_all(&straight, &P, &n1), *b = gather_all(&second, &P, &n2);
    if (P.rank == 0) {
        assert_int_equal(n1, n2);
        assert_same_particles(a, b, n1);
    }
    assert_true(straight.time == second.time);
    free(a);
    free(b);
    gf_sim_free(&straight);
    gf_sim_free(&second);
}

/* A checkpoint written by one rank, read by all: every particle arrives once, intact. */
static void test_restart_other_rank_count(void **state) {
    (void)state;
    char path[512];
    path_of(path, sizeof path, "one.ckpt.h5");
    gf_particle *ref = NULL;
    size_t nref = 0;
    if (P.rank == 0) {
        gf_par self = {MPI_COMM_SELF, 0, 1};
        gf_sim one;
        make_sim(&one, &self, 1);
        for (int s = 0; s < 60; ++s)
            GF_ASSERT_OK(gf_sim_step(&one));
        GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &one, path));
        ref = gather_all(&one, &self, &nref);
        gf_sim_free(&one);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    gf_sim all;
    make_sim(&all, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&all, path));
    for (size_t i = 0; i < all.particles.n_local; ++i)
        assert_true(gf_decomp_owns(
            &all.xch.decomp,
            (double[3]){all.particles.x[0][i], all.particles.x[1][i], all.particles.x[2][i]}));
    size_t n = 0;
    gf_particle *got = gather_all(&all, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, nref);
        assert_same_particles(ref, got, n);
    }
    /* It runs on, and warm-start entries found their particles. */
    int64_t nws = (int64_t)all.warm.n;
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &nws, 1, GF_PAR_SUM));
    assert_true(nws > 0);
    for (int s = 0; s < 5; ++s)
        GF_ASSERT_OK(gf_sim_step(&all));
    GF_ASSERT_OK(gf_sim_check_particles(&all));
    free(ref);
    free(got);
    gf_sim_free(&all);
}

static void expect_restart_error(const char *path, const char *fragment) {
    gf_sim s;
    make_sim(&s, &P, 0);
    gf_status st = gf_io_read_checkpoint(&s, path);
    assert_int_not_equal(st, GF_OK);
    if (P.rank == 0 && !strstr(gf_error_message(), fragment))
        fail_msg("restart from %s: message lacks '%s': %s", path, fragment, gf_error_message());
    assert_int_equal(s.particles.n_local, 0);
    gf_sim_free(&s);
}

static void test_bad_checkpoints(void **state) {
    (void)state;
    char good[512], trunc[512], junk[512], foreign[512], snap[512], missing[512];
    path_of(good, sizeof good, "good.ckpt.h5");
    path_of(trunc, sizeof trunc, "trunc.ckpt.h5");
    path_of(junk, sizeof junk, "junk.h5");
    path_of(foreign, sizeof foreign, "foreign.h5");
    path_of(snap, sizeof snap, "snapshot.h5");
    path_of(missing, sizeof missing, "missing.h5");
    gf_sim a;
    make_sim(&a, &P, 1);
    GF_ASSERT_OK(gf_sim_step(&a));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, good));
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &a, snap));
    gf_sim_free(&a);
    if (P.rank == 0) {
        /* Truncated: the first half of a good checkpoint. */
        FILE *in = fopen(good, "rb"), *out = fopen(trunc, "wb");
        fseek(in, 0, SEEK_END);
        long size = ftell(in);
        fseek(in, 0, SEEK_SET);
        char *buf = malloc((size_t)size);
        assert_true(fread(buf, 1, (size_t)size, in) == (size_t)size);
        fwrite(buf, 1, (size_t)size / 2, out);
        fclose(in);
        fclose(out);
        /* Junk: random bytes. */
        out = fopen(junk, "wb");
        uint64_t rng = 3;
        for (int i = 0; i < 4096; ++i)
            fputc((int)gf_test_uniform(&rng, 0, 256), out);
        fclose(out);
        free(buf);
        /* Foreign: valid HDF5 with unrelated content. */
        hid_t f = H5Fcreate(foreign, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t d = 4;
        hid_t sp = H5Screate_simple(1, &d, NULL);
        hid_t ds =
            H5Dcreate2(f, "data", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        double v[4] = {1, 2, 3, 4};
        H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        H5Dclose(ds);
        H5Sclose(sp);
        H5Fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_restart_error(missing, "cannot open");
    expect_restart_error(junk, "cannot open");
    expect_restart_error(trunc, "trunc.ckpt.h5");
    expect_restart_error(foreign, "not a granflow");
    expect_restart_error(snap, "not a granflow checkpoint");
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "io");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_checkpoint_round_trip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_snapshot_round_trip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_equivalence, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_other_rank_count, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_checkpoints, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
