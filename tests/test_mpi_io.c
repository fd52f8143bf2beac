/* Parallel HDF5 output at 1, 2 and 4 ranks (issue 5): snapshot and checkpoint round trips,
 * bit-for-bit restart equivalence, restart on a different rank count, and clear errors for
 * truncated, corrupt and foreign files. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config/config.h"
#include "io/io.h"
#include "sim/sim.h"
#include "lib/snapshot.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

static void path_of(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

/* A falling, colliding packing in a box periodic along x, cut into dims[] subdomains (0: any). */
static void make_sim_dims(gf_sim *sim, const gf_par *par, int generate, const int dims[3]) {
    GF_ASSERT_OK(gf_sim_init(sim, par));
    const double lo[3] = {0, 0, 0}, hi[3] = {0.1, 0.08, 0.1};
    const int per[3] = {1, 0, 0};
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

static void make_sim(gf_sim *sim, const gf_par *par, int generate) {
    const int any[3] = {0, 0, 0};
    make_sim_dims(sim, par, generate, any);
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
    /* The running table is in the contacts' order, the restarted one in key order. */
    GF_ASSERT_OK(gf_warmstart_sort(&a.warm));
    for (size_t k = 0; k < a.warm.n; ++k) {
        assert_true(a.warm.a[k] == b.warm.a[k] && a.warm.b[k] == b.warm.b[k]);
        for (int d = 0; d < 3; ++d)
            assert_true(a.warm.l[d][k] == b.warm.l[d][k]);
    }
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* Reads a whole double dataset of a serial file into buf (at most max values); returns the count.
 */
static size_t read_doubles(hid_t f, const char *name, double *buf, size_t max) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t sp = H5Dget_space(d);
    size_t n = (size_t)H5Sget_simple_extent_npoints(sp);
    assert_true(n <= max);
    assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Sclose(sp);
    H5Dclose(d);
    return n;
}

/* The contact list of a snapshot holds the friction impulse as a world vector: a sphere sliding
 * along (0.6, 0.8, 0) on a floor with friction 0.5 gets mu times its normal impulse m g dt,
 * against its sliding (both tangent directions carry a share). */
static void test_contact_impulse_vectors(void **state) {
    (void)state;
    if (P.rank != 0)
        return; /* a serial run of rank 0 */
    const double mu = 0.5, dt = 1e-3, r = 0.01, rho = 1000.0;
    gf_sim s;
    GF_ASSERT_OK(gf_sim_init(&s, NULL));
    const double o0[3] = {0, 0, 0}, up[3] = {0, 0, 1}, x0[3] = {0.1, 0.1, r};
    GF_ASSERT_OK(gf_walls_add(&s.walls, o0, up, NULL, 0));
    GF_ASSERT_OK(gf_materials_set_friction(&s.materials, 0, 0, mu));
    GF_ASSERT_OK(gf_materials_set_resistance(&s.materials, 0, 0, 0.03, 0.07));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.tolerance = 1e-12;
    GF_ASSERT_OK(gf_sim_set_solver(&s, &prm));
    s.dt = dt;
    s.gravity[2] = -9.81;
    for (int d = 0; d < 3; ++d) {
        s.lo[d] = 0.0;
        s.hi[d] = 0.2;
    }
    s.contacts.keep_points = 1; /* as gf_output_begin sets it for Output.contacts */
    gf_particle rec;
    gf_particle_make_sphere(&rec, 0, x0, r, rho, 0);
    rec.v[0] = 0.6;
    rec.v[1] = 0.8;
    GF_ASSERT_OK(gf_particles_add(&s.particles, &rec));
    GF_ASSERT_OK(gf_sim_start(&s));
    GF_ASSERT_OK(gf_sim_step(&s));
    gf_output o;
    memset(&o, 0, sizeof o);
    o.contacts = 1;
    char path[512];
    path_of(path, sizeof path, "slide.h5");
    GF_ASSERT_OK(gf_io_write_snapshot(&o, &s, path));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    double ln[4], lt[12], n[12];
    assert_int_equal(read_doubles(f, "/contacts/normal_impulse", ln, 4), 1);
    assert_int_equal(read_doubles(f, "/contacts/tangential_impulse", lt, 12), 3);
    assert_int_equal(read_doubles(f, "/contacts/normal", n, 12), 3);
    /* Its line (force chain): from the sphere's centre at detection (where it started) to the
     * contact point on the floor below it. */
    double ends[12];
    assert_int_equal(read_doubles(f, "/contacts/position", ends, 12), 6);
    for (int d = 0; d < 3; ++d)
        GF_ASSERT_NEAR(ends[d], x0[d], 1e-15);
    GF_ASSERT_NEAR(ends[3], x0[0], 1e-15);
    GF_ASSERT_NEAR(ends[4], x0[1], 1e-15);
    GF_ASSERT_NEAR(ends[5], 0.0, 1e-15);
    /* The material table: the one material, its density, friction, rolling and twisting
     * friction (a sliding sphere does not roll yet: its impulses stay those of friction). */
    double dens[2], fr[4];
    assert_int_equal(read_doubles(f, "/materials/density", dens, 2), 1);
    assert_int_equal(read_doubles(f, "/materials/friction", fr, 4), 1);
    GF_ASSERT_NEAR(dens[0], s.materials.density[0], 0.0);
    GF_ASSERT_NEAR(fr[0], mu, 0.0);
    assert_int_equal(read_doubles(f, "/materials/rolling_friction", fr, 4), 1);
    GF_ASSERT_NEAR(fr[0], 0.03, 0.0);
    assert_int_equal(read_doubles(f, "/materials/twisting_friction", fr, 4), 1);
    GF_ASSERT_NEAR(fr[0], 0.07, 0.0);
    hid_t d = H5Dopen2(f, "/materials/name", H5P_DEFAULT);
    hid_t ty = H5Dget_type(d);
    char name[2][GF_NAME_LEN];
    assert_int_equal(H5Tget_class(ty), H5T_STRING);
    assert_true(H5Dread(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, name) >= 0);
    assert_string_equal(name[0], s.materials.name[0]);
    H5Tclose(ty);
    H5Dclose(d);
    H5Fclose(f);
    const double m = rho * 4.0 / 3.0 * M_PI * r * r * r;
    GF_ASSERT_NEAR(n[2], 1.0, 1e-12);
    GF_ASSERT_NEAR(ln[0], m * 9.81 * dt, 1e-9 * m * 9.81 * dt);
    GF_ASSERT_NEAR(lt[0], -0.6 * mu * ln[0], 1e-9 * ln[0]);
    GF_ASSERT_NEAR(lt[1], -0.8 * mu * ln[0], 1e-9 * ln[0]);
    GF_ASSERT_NEAR(lt[2], 0.0, 1e-12 * ln[0]);
    gf_sim_free(&s);
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
        long long offs[64];
        hid_t od = H5Dopen2(f, "/particles/rank_offsets", H5P_DEFAULT);
        assert_true(od >= 0);
        assert_true(H5Dread(od, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, offs) >= 0);
        H5Dclose(od);
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
        /* One string, as HDF5 tools and h5py show it. */
        d = H5Dopen2(f, "/configuration", H5P_DEFAULT);
        hid_t ty = H5Dget_type(d);
        assert_int_equal(H5Tget_class(ty), H5T_STRING);
        assert_int_equal(H5Tget_size(ty), strlen("Time { dt 2e-4; }\n"));
        char text[64] = "";
        H5Dread(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
        H5Tclose(ty);
        H5Dclose(d);
        assert_string_equal(text, "Time { dt 2e-4; }\n");
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

/* With ghost lists kept between rebuilds (Domain.ghost_skin_fraction), a checkpoint written at
 * a step that kept them changes nothing in the run that writes it, and a restart from it builds
 * the same lists: a run without the checkpoint, the writer and the restart agree to the last
 * bit. Without sorts, which reorder the particles alike whenever they migrated, a migration one
 * step early would change the order of the Gauss-Seidel sweep for the rest of the run. */
static void test_restart_kept_ghosts(void **state) {
    (void)state;
    const int N = 120;
    gf_sim straight, first, second;
    make_sim(&straight, &P, 1);
    straight.ghost_skin_fraction = 1.0;
    straight.sort_every = 0; /* the memory order then keeps when each particle migrated */
    while (straight.step < N)
        GF_ASSERT_OK(gf_sim_step(&straight));
    make_sim(&first, &P, 1);
    first.ghost_skin_fraction = 1.0;
    first.sort_every = 0;
    /* Run to a step that kept the ghost lists (every rank decides alike). */
    for (int kept_last = 0; first.step < N / 2 || (first.distributed && !kept_last);) {
        long refreshes = first.ghost_refreshes;
        GF_ASSERT_OK(gf_sim_step(&first));
        kept_last = first.ghost_refreshes > refreshes;
    }
    long kept = first.ghost_refreshes, built = first.ghost_builds;
    if (first.distributed) /* periodic images are ghosts too, on one rank */
        assert_true(kept > first.step / 2);
    char path[512];
    path_of(path, sizeof path, "kept.ckpt.h5");
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &first, path));
    assert_int_equal(first.ghost_builds, built); /* the writer keeps its lists */
    make_sim(&second, &P, 0);
    second.ghost_skin_fraction = 1.0;
    second.sort_every = 0;
    GF_ASSERT_OK(gf_io_read_checkpoint(&second, path));
    assert_int_equal(second.step, first.step);
    assert_int_equal(second.ghost_restore, second.distributed);
    /* A checkpoint of the restart before it steps (a finished run continued by 0 steps) keeps
     * the lists too. */
    char again[512];
    path_of(again, sizeof again, "kept-again.ckpt.h5");
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &second, again));
    gf_sim third;
    make_sim(&third, &P, 0);
    third.ghost_skin_fraction = 1.0;
    third.sort_every = 0;
    GF_ASSERT_OK(gf_io_read_checkpoint(&third, again));
    assert_int_equal(third.ghost_restore, third.distributed);
    /* The same ghosts as the writer holds, in the same rows, to the last bit. */
    GF_ASSERT_OK(gf_sim_start(&second));
    const gf_particles *pa = &first.particles, *pb = &second.particles;
    assert_int_equal(pb->n_local, pa->n_local);
    assert_int_equal(pb->n_ghost, pa->n_ghost);
    for (size_t i = pa->n_local; i < pa->n_local + pa->n_ghost; ++i) {
        assert_int_equal(pb->id[i], pa->id[i]);
        for (int d = 0; d < 3; ++d) {
            assert_true(pb->x[d][i] == pa->x[d][i]);
            assert_true(pb->v[d][i] == pa->v[d][i]);
        }
    }
    /* A restart with a wider margin (forced) cannot use the writer's lists: built anew. */
    gf_sim wide;
    make_sim(&wide, &P, 0);
    wide.margin_tolerance = first.ghost_range;
    GF_ASSERT_OK(gf_io_read_checkpoint(&wide, path));
    GF_ASSERT_OK(gf_sim_start(&wide));
    assert_int_equal(wide.ghost_builds, wide.distributed);
    gf_sim_free(&wide);
    while (first.step < N)
        GF_ASSERT_OK(gf_sim_step(&first));
    while (second.step < N)
        GF_ASSERT_OK(gf_sim_step(&second));
    while (third.step < N)
        GF_ASSERT_OK(gf_sim_step(&third));
    if (second.distributed)
        assert_true(second.ghost_refreshes > 0);
    size_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    gf_particle *s0 = gather_all(&straight, &P, &n0);
    gf_particle *a = gather_all(&first, &P, &n1), *b = gather_all(&second, &P, &n2);
    gf_particle *c = gather_all(&third, &P, &n3);
    if (P.rank == 0) {
        assert_int_equal(n1, 336);
        assert_int_equal(n0, n1);
        assert_int_equal(n1, n2);
        assert_int_equal(n1, n3);
        assert_same_particles(s0, a, n1);
        assert_same_particles(a, b, n1);
        assert_same_particles(a, c, n1);
    }
    free(s0);
    free(a);
    free(b);
    free(c);
    gf_sim_free(&third);
    gf_sim_free(&straight);
    gf_sim_free(&first);
    gf_sim_free(&second);
}

/* Bodies of every shape falling onto each other and the floor, from the configuration; a margin
 * of 5% of a radius holds several points of the landing box at the checkpoint. */
static const char *shapes_cfg =
    "Domain { min <0,0,0>; max <0.2,0.2,0.2>; box_walls true; periodic <1,0,0>; }\n"
    "Contact { margin_fraction 0.05; }\n"
    "Materials { friction 0.4; Material { name wood; density 700; } }\n"
    "Clump { name trio; Sphere { centre <0,0,0>; radius 0.008; }\n"
    "        Sphere { centre <0.01,0,0>; radius 0.006; } Sphere { centre <0,0.012,0.003>; "
    "radius 0.005; } }\n"
    "Body { shape box; half_extents <0.02,0.01,0.006>; position <0.05,0.1,0.02>; axis <1,1,0>; "
    "angle 0.4; material wood; velocity <0.3,0,0>; }\n"
    "Body { shape capsule; radius 0.006; half_length 0.02; position <0.11,0.1,0.015>; "
    "axis <0,1,0>; angle 1.2; material wood; angular_velocity <0,0,3>; }\n"
    "Body { shape cylinder; radius 0.01; half_length 0.01; position <0.15,0.1,0.03>; "
    "axis <1,0,0>; angle 0.3; material wood; velocity <0.5,0,0>; }\n"
    "Body { shape clump; clump trio; position <0.06,0.1,0.06>; material wood; }\n"
    "Body { shape sphere; radius 0.01; position <0.1,0.1,0.06>; material wood; "
    "velocity <-0.2,0,-0.5>; }\n"
    "Body { shape box; half_extents <0.01,0.01,0.01>; position <0.185,0.1,0.05>; material wood; "
    "velocity <1,0,0>; }\n"
    "Time { dt 5e-4; steps 0; }\n";

/* The same, with rolling and twisting resistance where `resist`. */
static void make_shapes(gf_sim *sim, int generate, int resist) {
    char text[4096];
    const char *at = strstr(shapes_cfg, "friction 0.4;") + strlen("friction 0.4;");
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - shapes_cfg), shapes_cfg,
             resist ? " rolling_friction 0.05; twisting_friction 0.05;" : "", at);
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "shapes.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    GF_ASSERT_OK(gf_sim_configure(sim, cfg, generate));
    gf_config_destroy(cfg);
}

/* Restart is exact for every shape (issue 12), on every rank count: the shapes, dimensions and
 * the points of multi-point contacts (their warm-start entries) come back; with rolling and
 * twisting resistance, their torques too (issue 33). */
static void restart_shapes(int resist) {
    const int N = 200;
    gf_sim straight, first, second;
    make_shapes(&straight, 1, resist);
    for (int s = 0; s < N; ++s)
        GF_ASSERT_OK(gf_sim_step(&straight));
    make_shapes(&first, 1, resist);
    for (int s = 0; s < N / 2; ++s)
        GF_ASSERT_OK(gf_sim_step(&first));
    /* Contacts with several points exist, so the warm start's point keys are exercised; with
     * resistance, torques are held. */
    int64_t multi = 0, torques = 0;
    for (size_t j = 0; j < first.contacts.count; ++j) {
        multi += first.contacts.point[j] > 0;
        for (int d = 0; d < 3 && resist; ++d)
            torques += first.contacts.tau[d][j] != 0.0;
    }
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &multi, 1, GF_PAR_SUM));
    GF_ASSERT_OK(gf_par_allreduce_i64(&P, &torques, 1, GF_PAR_SUM));
    assert_true(multi > 0);
    assert_true(resist ? torques > 0 : torques == 0);
    char path[512];
    path_of(path, sizeof path, "shapes.ckpt.h5");
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &first, path));
    gf_sim_free(&first);
    make_shapes(&second, 0, resist);
    GF_ASSERT_OK(gf_io_read_checkpoint(&second, path));
    while (second.step < N)
        GF_ASSERT_OK(gf_sim_step(&second));
    size_t n1 = 0, n2 = 0;
    gf_particle *a = gather_all(&straight, &P, &n1), *b = gather_all(&second, &P, &n2);
    if (P.rank == 0) {
        assert_int_equal(n1, 6);
        assert_int_equal(n1, n2);
        assert_same_particles(a, b, n1);
        for (size_t i = 0; i < n1; ++i) {
            assert_int_equal(a[i].shape.type, b[i].shape.type);
            assert_int_equal(a[i].shape.clump, b[i].shape.clump);
            for (int d = 0; d < 3; ++d)
                assert_true(a[i].shape.dim[d] == b[i].shape.dim[d]);
        }
        /* Shapes as configured, in the order of the Body blocks. */
        const int want[6] = {GF_SHAPE_BOX,   GF_SHAPE_CAPSULE, GF_SHAPE_CYLINDER,
                             GF_SHAPE_CLUMP, GF_SHAPE_SPHERE,  GF_SHAPE_BOX};
        for (size_t i = 0; i < n1; ++i)
            assert_int_equal(a[i].shape.type, want[i]);
    }
    free(a);
    free(b);
    gf_sim_free(&straight);
    gf_sim_free(&second);
}

static void test_restart_shapes(void **state) {
    (void)state;
    restart_shapes(0);
    restart_shapes(1);
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
    /* It runs on (the warm-start entries are compared one by one in
     * test_warmstart_entries_after_restart). */
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

/* Rank 0: a copy of a checkpoint with one value of a dataset (row, column) replaced, or with
 * the root attribute `attr` set to v when dataset is NULL. */
static void damage(const char *from, const char *to, const char *dataset, int ncols, int row,
                   int col, double v, const char *attr) {
    if (P.rank != 0)
        return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(to, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    if (!dataset) { /* "name" of the file or "group/name" of a group */
        char obj[256] = ".";
        const char *slash = strrchr(attr, '/');
        if (slash)
            snprintf(obj, sizeof obj, "%.*s", (int)(slash - attr), attr);
        const char *name = slash ? slash + 1 : attr;
        /* Made anew: HDF5 1.10 cannot rewrite an attribute kept in dense storage. */
        assert_true(H5Adelete_by_name(f, obj, name, H5P_DEFAULT) >= 0);
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate_by_name(f, obj, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT,
                                    H5P_DEFAULT);
        assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0);
        H5Aclose(a);
        H5Sclose(sp);
        H5Fclose(f);
        return;
    }
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {(hsize_t)row, (hsize_t)col}, count[2] = {1, 1};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(ncols > 1 ? 2 : 1, count, NULL);
    assert_true(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

/* Damaged checkpoints (issue 16): values no run writes are refused, naming the particle and what
 * is wrong, on every rank count (the uniqueness of ids across ranks too); before, they restarted
 * with exit 0 and NaN orientations or vanished particles later. */
static void test_damaged_checkpoints(void **state) {
    (void)state;
    char good[512], bad[512];
    path_of(good, sizeof good, "undamaged.ckpt.h5");
    path_of(bad, sizeof bad, "damaged.ckpt.h5");
    gf_sim a;
    make_sim(&a, &P, 1);
    GF_ASSERT_OK(gf_sim_step(&a));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, good));
    gf_sim_free(&a);
    const struct {
        const char *dataset;
        int ncols, row, col;
        double value;
        const char *attr, *fragment;
    } cases[] = {
        {"/particles/id", 1, 7, 0, -5, NULL, "its id is outside"},
        {"/particles/id", 1, 7, 0, 1e12, NULL, "its id is outside"},
        {"/particles/radius", 1, 3, 0, 0.0, NULL, "radius 0"},
        {"/particles/radius", 1, 3, 0, NAN, NULL, "radius nan"},
        {"/particles/orientation", 4, 5, 0, 0.0, NULL, "quaternion of norm"},
        {"/particles/velocity", 3, 9, 1, NAN, NULL, "non-finite velocity"},
        {"/particles/position", 3, 2, 1, 0.5, NULL, "outside the box"},
        {"/particles/inverse_mass", 1, 4, 0, -1.0, NULL, "inverse mass -1"},
        {NULL, 0, 0, 0, NAN, "time", "invalid header"},
        {NULL, 0, 0, 0, 9e18, "step", "invalid header"}, /* near INT64_MAX */
    };
    /* The ghost lists a distributed writer kept (the reader checks them on its layout). */
    const size_t nghost = P.size > 1 ? 3 : 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0] + nghost; ++k) {
        if (k >= sizeof cases / sizeof cases[0]) {
            size_t j = k - sizeof cases / sizeof cases[0];
            const double value[3] = {NAN, -1.0, INFINITY};
            damage(good, bad, j == 0 ? "/particles/ghost_reference" : NULL, 3, 6, 2, value[j],
                   "particles/ghost_range");
            MPI_Barrier(MPI_COMM_WORLD);
            expect_restart_error(bad, "the ghost lists' range");
            continue;
        }
        damage(good, bad, cases[k].dataset, cases[k].ncols, cases[k].row, cases[k].col,
               cases[k].value, cases[k].attr);
        MPI_Barrier(MPI_COMM_WORLD);
        expect_restart_error(bad, cases[k].fragment);
    }
    /* Two particles with one id: rows 0 and 300 (on different ranks of the writer). */
    if (P.rank == 0) {
        hid_t f = H5Fopen(good, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t d = H5Dopen2(f, "/particles/id", H5P_DEFAULT);
        hid_t fs = H5Dget_space(d);
        hsize_t n = 0;
        H5Sget_simple_extent_dims(fs, &n, NULL);
        int64_t *id = malloc(n * sizeof *id);
        assert_true(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, id) >= 0);
        H5Sclose(fs);
        H5Dclose(d);
        H5Fclose(f);
        damage(good, bad, "/particles/position", 3, 0, 0, 0.05, NULL); /* any copy */
        f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
        d = H5Dopen2(f, "/particles/id", H5P_DEFAULT);
        id[n - 1] = id[0];
        assert_true(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, id) >= 0);
        H5Dclose(d);
        H5Fclose(f);
        free(id);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_restart_error(bad, "appears twice");
}

/* Rank 0: a copy of a checkpoint with the lowest bit of the value at `index` (in file order) of
 * a dataset's first chunk flipped on disk, behind HDF5's back: a change of one unit in the last
 * place that no plausibility check can see. */
static void flip_bit(const char *from, const char *to, const char *dataset, size_t index) {
    if (P.rank != 0)
        return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(to, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    assert_true(d >= 0);
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0, offset[2];
    unsigned mask = 0;
    hid_t fs = H5Dget_space(d);
    if (H5Dget_chunk_info(d, fs, 0, offset, &mask, &addr, &size) < 0)
        fail_msg("%s is not chunked: its values have no checksum", dataset);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
    assert_true(8 * index + 8 < size);
    FILE *io = fopen(to, "r+b");
    assert_non_null(io);
    assert_int_equal(fseek(io, (long)(addr + 8 * index), SEEK_SET), 0);
    int c = fgetc(io);
    assert_int_equal(fseek(io, (long)(addr + 8 * index), SEEK_SET), 0);
    fputc(c ^ 1, io);
    fclose(io);
}

/* A single flipped bit in the stored values is refused by the datasets' checksums (issue 16),
 * naming the file and the dataset. */
static void test_flipped_bits_refused(void **state) {
    (void)state;
    char good[512], bad[512];
    path_of(good, sizeof good, "sound.ckpt.h5");
    path_of(bad, sizeof bad, "flipped.ckpt.h5");
    gf_sim a;
    make_sim(&a, &P, 1);
    for (int s = 0; s < 3; ++s)
        GF_ASSERT_OK(gf_sim_step(&a));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, good));
    gf_sim_free(&a);
    const char *datasets[] = {"/particles/position", "/particles/velocity", "/particles/id",
                              "/particles/orientation"};
    for (size_t k = 0; k < sizeof datasets / sizeof datasets[0]; ++k) {
        flip_bit(good, bad, datasets[k], 5);
        MPI_Barrier(MPI_COMM_WORLD);
        expect_restart_error(bad, strrchr(datasets[k], '/') + 1);
        if (P.rank == 0 && !strstr(gf_error_message(), "flipped.ckpt.h5"))
            fail_msg("the message does not name the file: %s", gf_error_message());
        gf_error_clear();
    }
}

/* ---- warm-start entries across a restart (issue 11) ----------------------------------------- */

typedef struct {
    int64_t a, b;
    double l[3];
} ws_entry;

static int cmp_ws_entry(const void *x, const void *y) {
    const ws_entry *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

/* Every rank's warm-start entries on `par`'s rank 0, sorted by key (NULL elsewhere). */
static ws_entry *gather_warm(const gf_warmstart *ws, const gf_par *par, size_t *n) {
    ws_entry *mine = malloc((ws->n + 1) * sizeof *mine);
    for (size_t k = 0; k < ws->n; ++k) {
        mine[k].a = ws->a[k];
        mine[k].b = ws->b[k];
        for (int d = 0; d < 3; ++d)
            mine[k].l[d] = ws->l[d][k];
    }
    void *all = NULL;
    size_t *off = NULL;
    GF_ASSERT_OK(gf_par_gather_bytes(par, 0, mine, ws->n * sizeof *mine, &all, &off));
    free(mine);
    *n = 0;
    if (par->rank == 0) {
        *n = off[par->size] / sizeof(ws_entry);
        qsort(all, *n, sizeof(ws_entry), cmp_ws_entry);
    }
    free(off);
    return all;
}

/* The table's invariant, checked the way the solver uses it: strictly sorted by key, so that a
 * binary search finds every entry; and each entry's first id is a particle of this rank. */
static void assert_warm_usable(const gf_sim *sim) {
    const gf_warmstart *ws = &sim->warm;
    size_t found = 0;
    for (size_t k = 0; k < ws->n; ++k) {
        size_t lo = 0, hi = ws->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ws->a[mid] < ws->a[k] || (ws->a[mid] == ws->a[k] && ws->b[mid] < ws->b[k]))
                lo = mid + 1;
            else
                hi = mid;
        }
        found += lo == k;
        int owned = 0;
        for (size_t i = 0; i < sim->particles.n_local && !owned; ++i)
            owned = sim->particles.id[i] == ws->a[k];
        if (!owned)
            fail_msg("warm-start entry (%lld, %lld) is on a rank without particle %lld",
                     (long long)ws->a[k], (long long)ws->b[k], (long long)ws->a[k]);
    }
    if (found != ws->n)
        fail_msg("rank %d: binary search finds %zu of %zu warm-start entries", gf_test_par.rank,
                 found, ws->n);
}

/* The first `size` ranks of the job as their own communicator (MPI_COMM_NULL elsewhere). */
static MPI_Comm first_ranks(int size) {
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, P.rank < size ? 0 : MPI_UNDEFINED, P.rank, &c);
    return c;
}

/* A checkpoint written by `writers` ranks and read by `readers` ranks: every warm-start entry
 * (key and impulse) comes back exactly once, on the owner of its first particle, in a table the
 * solver can search. */
static void warm_round_trip(int writers, int readers, const char *name) {
    char path[512];
    path_of(path, sizeof path, name);
    ws_entry *ref = NULL;
    size_t nref = 0;
    MPI_Comm wc = first_ranks(writers);
    if (wc != MPI_COMM_NULL) {
        gf_par wp = {wc, 0, 0};
        MPI_Comm_rank(wc, &wp.rank);
        MPI_Comm_size(wc, &wp.size);
        /* Slabs along x: every rank holds ids from the whole range (they grow along x
         * fastest), so the file's rank groups interleave in key order. */
        const int slabs[3] = {writers, 1, 1};
        gf_sim w;
        make_sim_dims(&w, &wp, 1, slabs);
        for (int s = 0; s < 60; ++s)
            GF_ASSERT_OK(gf_sim_step(&w));
        GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &w, path));
        ref = gather_warm(&w.warm, &wp, &nref);
        gf_sim_free(&w);
        MPI_Comm_free(&wc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm rc = first_ranks(readers);
    if (rc != MPI_COMM_NULL) {
        gf_par rp = {rc, 0, 0};
        MPI_Comm_rank(rc, &rp.rank);
        MPI_Comm_size(rc, &rp.size);
        gf_sim r;
        make_sim(&r, &rp, 0);
        GF_ASSERT_OK(gf_io_read_checkpoint(&r, path));
        assert_warm_usable(&r);
        size_t n = 0;
        ws_entry *got = gather_warm(&r.warm, &rp, &n);
        if (rp.rank == 0) {
            assert_true(nref > 0);
            if (n != nref)
                fail_msg("%d -> %d ranks: %zu warm-start entries read, %zu written", writers,
                         readers, n, nref);
            for (size_t k = 0; k < n; ++k) {
                int same = got[k].a == ref[k].a && got[k].b == ref[k].b;
                for (int d = 0; d < 3; ++d)
                    same = same && got[k].l[d] == ref[k].l[d];
                if (!same)
                    fail_msg("%d -> %d ranks: entry %zu is (%lld, %lld) %.17g, written (%lld, "
                             "%lld) %.17g",
                             writers, readers, k, (long long)got[k].a, (long long)got[k].b,
                             got[k].l[0], (long long)ref[k].a, (long long)ref[k].b, ref[k].l[0]);
            }
        }
        /* The restarted run steps on with it. */
        GF_ASSERT_OK(gf_sim_step(&r));
        free(got);
        gf_sim_free(&r);
        MPI_Comm_free(&rc);
    }
    free(ref);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_warmstart_entries_after_restart(void **state) {
    (void)state;
    int half = P.size > 1 ? P.size / 2 : 1;
    warm_round_trip(P.size, P.size, "same.ckpt.h5");
    warm_round_trip(P.size, half, "fewer.ckpt.h5");
    warm_round_trip(half, P.size, "more.ckpt.h5");
    if (half > 1)
        warm_round_trip(1, P.size, "one.ckpt.h5");
}

/* ---- rank offsets as datasets (issue 11) ---------------------------------------------------- */

/* The exclusive prefix sums of every rank's count, and the total: the independent reference. */
static void prefix_of(int64_t mine, long long *offs) {
    long long c = mine, *counts = malloc((size_t)P.size * sizeof *counts);
    MPI_Allgather(&c, 1, MPI_LONG_LONG, counts, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    offs[0] = 0;
    for (int r = 0; r < P.size; ++r)
        offs[r + 1] = offs[r] + counts[r];
    free(counts);
}

/* `group`/rank_offsets of `path` is an int64 dataset of nranks + 1 values equal to `want`, and no
 * attribute of that name is left. */
static void assert_offsets_dataset(const char *path, const char *group, const long long *want) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
    assert_true(g >= 0);
    assert_int_equal(H5Aexists(g, "rank_offsets"), 0);
    /* Opening it as a dataset fails for anything else. */
    hid_t d = H5Dopen2(g, "rank_offsets", H5P_DEFAULT);
    if (d < 0)
        fail_msg("%s: %s/rank_offsets is not a dataset", path, group);
    hid_t t = H5Dget_type(d);
    assert_int_equal(H5Tget_class(t), H5T_INTEGER);
    assert_int_equal(H5Tget_size(t), 8);
    assert_int_equal(H5Tget_sign(t), H5T_SGN_2);
    H5Tclose(t);
    hid_t sp = H5Dget_space(d);
    hsize_t n = 0;
    assert_int_equal(H5Sget_simple_extent_ndims(sp), 1);
    H5Sget_simple_extent_dims(sp, &n, NULL);
    H5Sclose(sp);
    assert_int_equal(n, (hsize_t)P.size + 1);
    long long *got = malloc(n * sizeof *got);
    assert_true(H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
    for (int r = 0; r <= P.size; ++r)
        if (got[r] != want[r])
            fail_msg("%s: %s/rank_offsets[%d] = %lld, expected %lld", path, group, r, got[r],
                     want[r]);
    free(got);
    H5Dclose(d);
    H5Gclose(g);
    H5Fclose(f);
}

/* The post-processing tools' reader finds the same rank groups. */
static void assert_tools_offsets(const char *path, const long long *want) {
    gf_snapshot s;
    char err[512] = "";
    if (gf_snapshot_open(&s, path, err, sizeof err))
        fail_msg("gf_snapshot_open: %s", err);
    assert_int_equal(s.nranks, P.size);
    assert_non_null(s.rank_offsets);
    for (int r = 0; r <= P.size; ++r)
        assert_int_equal(s.rank_offsets[r], want[r]);
    gf_snapshot_close(&s);
}

/* A sim stepped 60 times (warm-start entries present), written as <tag>.h5 and <tag>.ckpt.h5;
 * returns the particle rank offsets expected of both files (malloc'd). */
static long long *written_state(gf_sim *a, const char *tag, char snap[512], char ckpt[512]) {
    make_sim(a, &P, 1);
    for (int s = 0; s < 60; ++s)
        GF_ASSERT_OK(gf_sim_step(a));
    char name[128];
    snprintf(name, sizeof name, "%s.h5", tag);
    path_of(snap, 512, name);
    snprintf(name, sizeof name, "%s.ckpt.h5", tag);
    path_of(ckpt, 512, name);
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, a, snap));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, a, ckpt));
    long long *poffs = malloc(((size_t)P.size + 1) * sizeof *poffs);
    prefix_of((int64_t)a->particles.n_local, poffs);
    return poffs;
}

static void test_rank_offsets_layout(void **state) {
    (void)state;
    gf_sim a;
    char snap[512], ckpt[512];
    long long *poffs = written_state(&a, "layout", snap, ckpt);
    long long *woffs = malloc(((size_t)P.size + 1) * sizeof *woffs);
    prefix_of((int64_t)a.warm.n, woffs);
    assert_true(woffs[P.size] > 0);
    if (P.rank == 0) {
        assert_offsets_dataset(snap, "particles", poffs);
        assert_offsets_dataset(ckpt, "particles", poffs);
        assert_offsets_dataset(ckpt, "warmstart", woffs);
        assert_tools_offsets(snap, poffs);
        assert_tools_offsets(ckpt, poffs);
        /* Offsets that do not end at the particle count: the tools refuse the file. */
        hid_t f = H5Fopen(snap, H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t d = H5Dopen2(f, "/particles/rank_offsets", H5P_DEFAULT);
        long long *bad = malloc(((size_t)P.size + 1) * sizeof *bad);
        memcpy(bad, poffs, ((size_t)P.size + 1) * sizeof *bad);
        bad[P.size] += 1;
        assert_true(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, bad) >= 0);
        H5Dclose(d);
        H5Fclose(f);
        free(bad);
        gf_snapshot s;
        char err[512] = "";
        assert_int_not_equal(gf_snapshot_open(&s, snap, err, sizeof err), 0);
        assert_non_null(strstr(err, "rank_offsets does not match"));
    }
    /* The restart finds every rank's rows through them. */
    gf_sim b;
    make_sim(&b, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&b, ckpt));
    assert_int_equal(b.particles.n_local, a.particles.n_local);
    for (size_t i = 0; i < a.particles.n_local; ++i)
        assert_true(a.particles.id[i] == b.particles.id[i]);
    assert_int_equal(b.warm.n, a.warm.n);
    /* Warm-start offsets that claim 2^50 entries (issue 36: the reader allocated for them, 24 TB)
     * are refused against the rows the file holds, before anything is allocated. */
    if (P.rank == 0) {
        hid_t f = H5Fopen(ckpt, H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t d = H5Dopen2(f, "/warmstart/rank_offsets", H5P_DEFAULT);
        long long *bad = malloc(((size_t)P.size + 1) * sizeof *bad);
        memcpy(bad, woffs, ((size_t)P.size + 1) * sizeof *bad);
        bad[P.size] = 1LL << 50;
        assert_true(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, bad) >= 0);
        H5Dclose(d);
        H5Fclose(f);
        free(bad);
    }
    GF_ASSERT_OK(gf_par_barrier(&P));
    gf_sim c;
    make_sim(&c, &P, 0);
    assert_int_equal(gf_io_read_checkpoint(&c, ckpt), GF_ERR_IO);
    assert_non_null(strstr(gf_error_message(), "inconsistent rank offsets"));
    gf_error_clear();
    gf_sim_free(&c);
    free(poffs);
    free(woffs);
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* Replaces the dataset group/rank_offsets by an attribute of the same values, as the previous
 * version wrote it. */
static void to_legacy_offsets(hid_t f, const char *group) {
    hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
    hid_t d = H5Dopen2(g, "rank_offsets", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(sp, &n, NULL);
    long long *v = malloc(n * sizeof *v);
    assert_true(H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    assert_true(H5Ldelete(g, "rank_offsets", H5P_DEFAULT) >= 0);
    hid_t at = H5Acreate2(g, "rank_offsets", H5T_NATIVE_LLONG, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(at >= 0 && H5Awrite(at, H5T_NATIVE_LLONG, v) >= 0);
    H5Aclose(at);
    H5Sclose(sp);
    H5Gclose(g);
    free(v);
}

/* Replaces /configuration by a character array of `text`, as earlier versions wrote it. */
static void to_legacy_configuration(hid_t f, const char *text) {
    if (H5Lexists(f, "configuration", H5P_DEFAULT) > 0)
        assert_true(H5Ldelete(f, "configuration", H5P_DEFAULT) >= 0);
    hsize_t n = strlen(text);
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t d =
        H5Dcreate2(f, "configuration", H5T_NATIVE_CHAR, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0 && H5Dwrite(d, H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
}

/* Files of the previous version (rank_offsets as attributes, the configuration as characters)
 * still restart and open. */
static void test_legacy_rank_offsets(void **state) {
    (void)state;
    gf_sim a;
    char snap[512], ckpt[512];
    long long *poffs = written_state(&a, "legacy", snap, ckpt);
    if (P.rank == 0) {
        hid_t f = H5Fopen(snap, H5F_ACC_RDWR, H5P_DEFAULT);
        to_legacy_offsets(f, "particles");
        H5Fclose(f);
        f = H5Fopen(ckpt, H5F_ACC_RDWR, H5P_DEFAULT);
        to_legacy_offsets(f, "particles");
        to_legacy_offsets(f, "warmstart");
        to_legacy_configuration(f, "Legacy { key 1; }\n");
        H5Fclose(f);
        assert_tools_offsets(snap, poffs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    gf_sim b;
    make_sim(&b, &P, 0);
    char *text = NULL;
    GF_ASSERT_OK(gf_io_read_configuration(&b, ckpt, &text));
    assert_string_equal(text, "Legacy { key 1; }\n");
    free(text);
    GF_ASSERT_OK(gf_io_read_checkpoint(&b, ckpt));
    assert_int_equal(b.particles.n_local, a.particles.n_local);
    for (size_t i = 0; i < a.particles.n_local; ++i) {
        gf_particle x, y;
        gf_particles_get(&a.particles, i, &x);
        gf_particles_get(&b.particles, i, &y);
        assert_same_particles(&x, &y, 1);
    }
    assert_int_equal(b.warm.n, a.warm.n);
    GF_ASSERT_OK(gf_warmstart_sort(&a.warm));
    for (size_t k = 0; k < a.warm.n; ++k)
        assert_true(a.warm.a[k] == b.warm.a[k] && a.warm.b[k] == b.warm.b[k] &&
                    a.warm.l[0][k] == b.warm.l[0][k]);
    free(poffs);
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* ---- checkpoint rotation (issue 11) --------------------------------------------------------- */

static long long step_of(const char *path) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        fail_msg("cannot open %s", path);
    long long step = -1;
    hid_t at = H5Aopen(f, "step", H5P_DEFAULT);
    H5Aread(at, H5T_NATIVE_LLONG, &step);
    H5Aclose(at);
    H5Fclose(f);
    return step;
}

/* Each checkpoint keeps the one before as <file>.prev, which restarts too. */
static void test_checkpoint_keeps_previous(void **state) {
    (void)state;
    gf_sim a;
    make_sim(&a, &P, 1);
    char path[512], prev[520], tmp[520];
    path_of(path, sizeof path, "rot.ckpt.h5");
    snprintf(prev, sizeof prev, "%s.prev", path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    for (int k = 1; k <= 3; ++k) {
        for (int s = 0; s < 5; ++s)
            GF_ASSERT_OK(gf_sim_step(&a));
        GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path));
        if (P.rank == 0) {
            assert_int_equal(step_of(path), 5 * k);
            assert_true(access(tmp, F_OK) != 0);
            if (k == 1)
                assert_true(access(prev, F_OK) != 0);
            else
                assert_int_equal(step_of(prev), 5 * (k - 1));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    gf_sim b;
    make_sim(&b, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&b, prev));
    assert_int_equal(b.step, 10);
    gf_sim_free(&a);
    gf_sim_free(&b);
}

/* A failure one rank meets alone before the collective open (here: the last rank is not empty)
 * is agreed: every rank returns it with the finder's message, none waits in the open. */
static void test_one_rank_failure_agreed(void **state) {
    (void)state;
    char path[512];
    path_of(path, sizeof path, "agree.ckpt.h5");
    gf_sim a;
    make_sim(&a, &P, 1);
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path));
    gf_sim_free(&a);
    gf_sim b;
    make_sim(&b, &P, 0);
    if (P.rank == P.size - 1) {
        const double x[3] = {0.5 * (b.xch.decomp.sub_lo[0] + b.xch.decomp.sub_hi[0]),
                             0.5 * (b.xch.decomp.sub_lo[1] + b.xch.decomp.sub_hi[1]),
                             0.5 * (b.xch.decomp.sub_lo[2] + b.xch.decomp.sub_hi[2])};
        gf_particle rec;
        gf_particle_make_sphere(&rec, 0, x, 0.004, 2500, 0);
        GF_ASSERT_OK(gf_particles_add(&b.particles, &rec));
    }
    gf_status st = gf_io_read_checkpoint(&b, path);
    assert_int_not_equal(st, GF_OK);
    if (P.size > 1)
        assert_true(gf_error_agreed());
    if (!strstr(gf_error_message(), "without particles"))
        fail_msg("rank %d: %s", P.rank, gf_error_message());
    gf_error_clear();
    gf_sim_free(&b);
}

/* A full disk in the middle of a checkpoint (a file size limit: the ranks that write fail, those
 * that do not carry on) is agreed on by every rank, reported naming the file, and leaves the
 * previous checkpoint intact. */
static void test_disk_full_checkpoint(void **state) {
    (void)state;
    char path[512];
    path_of(path, sizeof path, "full.ckpt.h5");
    gf_sim a;
    make_sim(&a, &P, 1);
    for (int s = 0; s < 3; ++s)
        GF_ASSERT_OK(gf_sim_step(&a));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path));
    for (int s = 0; s < 3; ++s)
        GF_ASSERT_OK(gf_sim_step(&a));
    /* Larger than the superblock, smaller than one dataset of the checkpoint. */
    struct rlimit old, full;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    full = old;
    full.rlim_cur = 3000;
    void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &full), 0);
    gf_status st = gf_io_write_checkpoint(NULL, &a, path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, handler);
    assert_int_equal(st, GF_ERR_IO);
    if (P.size > 1)
        assert_true(gf_error_agreed());
    if (!strstr(gf_error_message(), "full.ckpt.h5"))
        fail_msg("rank %d: the message does not name the file: %s", P.rank, gf_error_message());
    gf_error_clear();
    gf_sim b;
    make_sim(&b, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&b, path));
    assert_int_equal(b.step, 3);
    /* With space again the same run writes its checkpoint. */
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, path));
    gf_sim c;
    make_sim(&c, &P, 0);
    GF_ASSERT_OK(gf_io_read_checkpoint(&c, path));
    assert_int_equal(c.step, 6);
    gf_sim_free(&a);
    gf_sim_free(&b);
    gf_sim_free(&c);
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
    cmocka_unit_test_setup_teardown(test_contact_impulse_vectors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_equivalence, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_kept_ghosts, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_shapes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_restart_other_rank_count, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_checkpoints, setup, teardown),
    cmocka_unit_test_setup_teardown(test_damaged_checkpoints, setup, teardown),
    cmocka_unit_test_setup_teardown(test_flipped_bits_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(test_warmstart_entries_after_restart, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rank_offsets_layout, setup, teardown),
    cmocka_unit_test_setup_teardown(test_legacy_rank_offsets, setup, teardown),
    cmocka_unit_test_setup_teardown(test_checkpoint_keeps_previous, setup, teardown),
    cmocka_unit_test_setup_teardown(test_one_rank_failure_agreed, setup, teardown),
    cmocka_unit_test_setup_teardown(test_disk_full_checkpoint, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
