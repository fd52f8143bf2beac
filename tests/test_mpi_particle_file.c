/* Particle files (issue 12) at 1, 2 and 4 ranks: a mixed-shape snapshot read back through a
 * Particles block equals the particles written, whatever rank count wrote or reads it; a CSV
 * file's particles have the closed-form masses of their shapes and run like Body blocks; every
 * malformed CSV or HDF5 file is refused naming the file and the line or particle, leaving no
 * particle behind. */
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "io/io.h"
#include "core/log.h"
#include "sim/particle_file.h"
#include "sim/sim.h"
#include "core/vec.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

static void path_of(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

/* A walled box, periodic along x, with three materials and two clump templates: "duo" of two
 * disjoint spheres (so its volume is theirs) and "trio" of overlapping ones. */
#define DOMAIN "Domain { min <0,0,0>; max <0.2,0.2,0.2>; box_walls true; periodic <1,0,0>; }\n"
#define MATERIALS                                                                                  \
    "Materials { friction 0.4; Material { name glass; density 2500; }\n"                           \
    "            Material { name wood; density 700; } }\n"
#define CLUMPS                                                                                     \
    "Clump { name duo; Sphere { centre <0,0,0>; radius 0.006; }\n"                                 \
    "        Sphere { centre <0.014,0,0>; radius 0.005; } }\n"                                     \
    "Clump { name trio; Sphere { centre <0,0,0>; radius 0.006; }\n"                                \
    "        Sphere { centre <0.006,0,0>; radius 0.005; } Sphere { centre <0,0.007,0.002>; "       \
    "radius 0.004; } }\n"
#define TIME "Time { dt 1e-3; steps 0; }\n"
#define BASE DOMAIN MATERIALS CLUMPS TIME

static const double R1 = 0.006, R2 = 0.005, DUO_OFFSET = 0.014; /* the duo template */

/* Configures `sim` on `par` from `text`; returns the status (the configuration is freed). */
static gf_status configure(gf_sim *sim, const gf_par *par, const char *text, int generate) {
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, strlen(text), "pf.cfg", &cfg));
    GF_ASSERT_OK(gf_sim_init(sim, par));
    gf_status st = gf_sim_configure(sim, cfg, generate);
    if (st == GF_OK)
        GF_ASSERT_OK(gf_config_check_unused(cfg));
    gf_config_destroy(cfg);
    return st;
}

/* BASE (or `base`) with a Particles block for `file` and `extra` keys in it. */
static void with_file(char *text, size_t size, const char *base, const char *file,
                      const char *extra) {
    int len =
        snprintf(text, size, "%sParticles { file \"%s\"; %s }\n", base, file, extra ? extra : "");
    assert_true(len > 0 && (size_t)len < size);
}

/* Rank 0 writes `content` to the file `name` in the test directory; every rank gets its path. */
static void write_file(const char *name, const char *content, char *path, size_t size) {
    path_of(path, size, name);
    if (P.rank == 0) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int cmp_rec(const void *a, const void *b) {
    const gf_particle *p = a, *q = b;
    return p->id < q->id ? -1 : (p->id > q->id);
}

/* All particles of `sim` on rank 0 of `par`, sorted by id (NULL elsewhere); every particle must
 * sit on the rank owning its centre. */
static gf_particle *gather_all(const gf_sim *sim, const gf_par *par, size_t *n) {
    size_t nl = sim->particles.n_local;
    gf_particle *mine = calloc(nl + 1, sizeof *mine);
    for (size_t i = 0; i < nl; ++i) {
        gf_particles_get(&sim->particles, i, &mine[i]);
        if (sim->distributed)
            assert_true(gf_decomp_owns(&sim->xch.decomp, mine[i].x));
    }
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

/* Field by field, to the last bit (records have padding). */
static void assert_same(const gf_particle *a, const gf_particle *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        int same = a[i].id == b[i].id && a[i].radius == b[i].radius &&
                   a[i].inv_mass == b[i].inv_mass && a[i].material == b[i].material &&
                   a[i].shape.type == b[i].shape.type && a[i].shape.clump == b[i].shape.clump;
        for (int d = 0; d < 3; ++d)
            same = same && a[i].x[d] == b[i].x[d] && a[i].v[d] == b[i].v[d] &&
                   a[i].w[d] == b[i].w[d] && a[i].inv_inertia[d] == b[i].inv_inertia[d] &&
                   a[i].shape.dim[d] == b[i].shape.dim[d];
        for (int d = 0; d < 4; ++d)
            same = same && a[i].q[d] == b[i].q[d];
        if (!same)
            fail_msg("particle %lld differs: %s %.17g %.17g %.17g 1/m %.17g vs particle %lld: %s "
                     "%.17g %.17g %.17g 1/m %.17g",
                     (long long)a[i].id, gf_shape_name((gf_shape_type)a[i].shape.type), a[i].x[0],
                     a[i].x[1], a[i].x[2], a[i].inv_mass, (long long)b[i].id,
                     gf_shape_name((gf_shape_type)b[i].shape.type), b[i].x[0], b[i].x[1], b[i].x[2],
                     b[i].inv_mass);
    }
}

static void refused(const char *text, const char *const *fragments);

/* ------------------------------------------------------------------------------------------ */
/* HDF5                                                                                       */

#define NMIX 63 /* so that even slabs differ: 31 and 32 rows at 2 ranks */

/* The mixed-shape set, the same on every rank: spheres, boxes, capsules, cylinders, clumps of
 * both templates, fixed boxes and kinematic spheres, on 63 sites of a jittered 4 x 4 x 4 grid
 * (apart from each other and the walls), turned at random, with random velocities, materials and
 * ids. */
static void mixed_set(const gf_sim *sim, gf_particle *recs) {
    uint64_t rng = 12345;
    for (int k = 0; k < NMIX; ++k) {
        double x[3];
        int g[3] = {k % 4, (k / 4) % 4, k / 16};
        for (int d = 0; d < 3; ++d)
            x[d] = 0.03 + 0.045 * g[d] + gf_test_uniform(&rng, -0.003, 0.003);
        gf_shape s;
        switch (k % 8) {
        case 0:
            s = gf_shape_sphere(gf_test_uniform(&rng, 0.008, 0.012));
            break;
        case 1:
        case 6: /* fixed */
            s = gf_shape_box(gf_test_uniform(&rng, 0.004, 0.009),
                             gf_test_uniform(&rng, 0.004, 0.009),
                             gf_test_uniform(&rng, 0.004, 0.009));
            break;
        case 2:
            s = gf_shape_capsule(gf_test_uniform(&rng, 0.004, 0.007),
                                 gf_test_uniform(&rng, 0.004, 0.009));
            break;
        case 3:
            s = gf_shape_cylinder(gf_test_uniform(&rng, 0.005, 0.009),
                                  gf_test_uniform(&rng, 0.004, 0.008));
            break;
        case 4:
            s = gf_shape_clump(0, gf_test_uniform(&rng, 0.8, 1.2));
            break;
        case 5:
            s = gf_shape_clump(1, gf_test_uniform(&rng, 0.8, 1.2));
            break;
        default: /* kinematic */
            s = gf_shape_sphere(gf_test_uniform(&rng, 0.008, 0.012));
            break;
        }
        int material = (int)gf_test_uniform(&rng, 0, 3);
        int infinite = k % 8 == 6 || k % 8 == 7;
        /* Ids unrelated to the place, so that rows in id order are spread over the ranks. */
        gf_particle_make(&recs[k], 1000 + 7 * (int64_t)((37 * k) % NMIX), x, &s, &sim->clumps,
                         infinite ? 0.0 : sim->materials.density[material], material);
        double q[4], qn = 0.0;
        for (int c = 0; c < 4; ++c) {
            q[c] = gf_test_uniform(&rng, -1, 1);
            qn += q[c] * q[c];
        }
        for (int c = 0; c < 4; ++c)
            recs[k].q[c] = q[c] / sqrt(qn);
        for (int d = 0; d < 3 && k % 8 != 6; ++d) {
            recs[k].v[d] = gf_test_uniform(&rng, -1, 1);
            recs[k].w[d] = gf_test_uniform(&rng, -20, 20);
        }
    }
    qsort(recs, NMIX, sizeof *recs, cmp_rec);
}

/* A simulation of BASE on `par` holding the mixed set (each rank its own particles). */
static void make_mixed(gf_sim *sim, const gf_par *par, gf_particle *recs) {
    GF_ASSERT_OK(configure(sim, par, BASE, 1));
    assert_int_equal(sim->clumps.count, 2);
    mixed_set(sim, recs);
    for (int k = 0; k < NMIX; ++k)
        if (!sim->distributed || gf_decomp_owns(&sim->xch.decomp, recs[k].x))
            GF_ASSERT_OK(gf_particles_add(&sim->particles, &recs[k]));
    sim->next_id = 1000 + 7 * NMIX;
}

/* Reads `file` through a Particles block on `par` and compares with the set written. */
static void read_back(const gf_par *par, const char *file, const char *extra,
                      const gf_particle *want) {
    char text[4096];
    with_file(text, sizeof text, BASE, file, extra);
    gf_sim b;
    GF_ASSERT_OK(configure(&b, par, text, 1));
    /* Ids go on after the file's largest. */
    assert_int_equal(b.next_id, 1000 + 7 * (NMIX - 1) + 1);
    assert_int_equal(b.expected_particles, NMIX);
    size_t n = 0;
    gf_particle *got = gather_all(&b, par, &n);
    if (par->rank == 0) {
        assert_int_equal(n, NMIX);
        assert_same(want, got, n);
        int kinds[GF_SHAPE_COUNT] = {0}, infinite = 0;
        for (size_t i = 0; i < n; ++i) {
            kinds[got[i].shape.type]++;
            infinite += got[i].inv_mass == 0.0;
        }
        for (int t = GF_SHAPE_SPHERE; t <= GF_SHAPE_CLUMP; ++t)
            assert_true(kinds[t] > 0);
        assert_true(infinite > 0);
    }
    free(got);
    /* It steps. */
    GF_ASSERT_OK(gf_sim_step(&b));
    GF_ASSERT_OK(gf_sim_check_particles(&b));
    gf_sim_free(&b);
}

/* A snapshot and a checkpoint written at this rank count read back exactly; so do a snapshot
 * written by one rank alone, read by all, and one written by all, read by one rank alone. */
static void test_hdf5_round_trip(void **state) {
    (void)state;
    gf_particle want[NMIX];
    gf_sim a;
    make_mixed(&a, &P, want);
    char snap[512], ckpt[512], one[512];
    path_of(snap, sizeof snap, "mixed.h5");
    path_of(ckpt, sizeof ckpt, "mixed.ckpt.h5");
    path_of(one, sizeof one, "one.h5");
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &a, snap));
    GF_ASSERT_OK(gf_io_write_checkpoint(NULL, &a, ckpt));
    gf_sim_free(&a);
    gf_par self = {MPI_COMM_SELF, 0, 1};
    if (P.rank == 0) {
        gf_particle ref[NMIX];
        gf_sim s;
        make_mixed(&s, &self, ref);
        GF_ASSERT_OK(gf_io_write_snapshot(NULL, &s, one));
        gf_sim_free(&s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    read_back(&P, snap, NULL, want);
    read_back(&P, ckpt, NULL, want);
    /* In rounds of the fewest rows a rank reads: the ranks with one row more take two rounds,
     * the others must take part in the second too. */
    char rows[32];
    snprintf(rows, sizeof rows, "%d", NMIX / P.size);
    setenv("GF_CHUNK_ROWS", rows, 1);
    read_back(&P, one, "format hdf5;", want);
    unsetenv("GF_CHUNK_ROWS");
    if (P.rank == 0)
        read_back(&self, snap, NULL, want);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Writes a snapshot of one wooden box with id `id` at x from a simulation of `cfg`. */
static void write_one_box(const char *cfg, int64_t id, const double x[3], const char *path) {
    gf_sim a;
    GF_ASSERT_OK(configure(&a, &P, cfg, 1));
    gf_shape s = gf_shape_box(0.01, 0.02, 0.005);
    gf_particle rec;
    gf_particle_make(&rec, id, x, &s, &a.clumps, 700, 2);
    if (gf_decomp_owns(&a.xch.decomp, x))
        GF_ASSERT_OK(gf_particles_add(&a.particles, &rec));
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &a, path));
    gf_sim_free(&a);
}

/* A file of a larger box: periodic positions are wrapped into the box; one outside it along a
 * walled axis is refused naming the file and the particle. */
static void test_hdf5_other_box(void **state) {
    (void)state;
    char path[512], text[4096];
    path_of(path, sizeof path, "big.h5");
    const char *big = "Domain { min <0,0,0>; max <0.4,0.2,0.2>; box_walls true; "
                      "periodic <1,0,0>; }\n" MATERIALS CLUMPS TIME;
    /* x = 0.33 lies beyond the configured box's 0.2: wrapped to 0.33 - 0.2 (exact). */
    write_one_box(big, 3, (const double[3]){0.33, 0.1, 0.1}, path);
    with_file(text, sizeof text, BASE, path, NULL);
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    size_t n = 0;
    gf_particle *got = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 1);
        assert_true(got[0].x[0] == 0.33 - 0.2);
        assert_true(got[0].x[1] == 0.1 && got[0].x[2] == 0.1);
    }
    free(got);
    gf_sim_free(&b);
    /* y = 0.1 beyond a box 0.09 high along the walled y. */
    write_one_box(big, 4, (const double[3]){0.1, 0.1, 0.1}, path);
    with_file(text, sizeof text,
              "Domain { min <0,0,0>; max <0.2,0.09,0.2>; box_walls true; periodic <1,0,0>; "
              "}\n" MATERIALS CLUMPS TIME,
              path, NULL);
    refused(text, (const char *const[]){path, "particle 4", "y = 0.1", "outside the domain", NULL});
}

/* `text` must be refused with a message holding every fragment (NULL-terminated), on every rank;
 * with `clean`, leaving no particle behind. */
static void refused_as(const char *text, const char *const *fragments, int clean) {
    gf_sim b;
    gf_status st = configure(&b, &P, text, 1);
    if (st == GF_OK)
        fail_msg("accepted, expected an error with '%s'", fragments[0]);
    const char *msg = gf_error_message();
    for (const char *const *f = fragments; *f; ++f)
        if (!strstr(msg, *f))
            fail_msg("the message lacks '%s': %s", *f, msg);
    if (clean && b.particles.n_local != 0)
        fail_msg("%zu particles left behind after: %s", b.particles.n_local, msg);
    gf_error_clear();
    gf_sim_free(&b);
}

static void refused(const char *text, const char *const *fragments) {
    refused_as(text, fragments, 1);
}

/* Snapshots that do not fit the configuration: a clump index beyond its Clump blocks, a
 * material index beyond its materials, a particle in a wall, an id held twice; files that are
 * not granflow snapshots. */
static void test_hdf5_refused(void **state) {
    (void)state;
    char path[512], text[4096];
    path_of(path, sizeof path, "bad.h5");
    /* Four particles: a "trio" clump (template 1), a sphere of material 2, a box reaching 5 mm
     * below the floor (written from a box without walls), and id 9 twice. */
    const char *open_box =
        "Domain { min <0,0,0>; max <0.2,0.2,0.2>; box_walls false; }\n" MATERIALS CLUMPS TIME;
    static const char *const what[4][4] = {
        {"clump template 1", "1 Clump block", "particle 7", NULL},
        {"particle 8", "material 2", "defines 1 material", NULL},
        {"particle 5", "overlaps wall", "0.005", NULL},
        {"particle id 9 appears twice", NULL, NULL, NULL}};
    for (int k = 0; k < 4; ++k) {
        gf_sim a;
        GF_ASSERT_OK(configure(&a, &P, open_box, 1));
        gf_particle rec[2];
        const double x0[3] = {0.05, 0.05, 0.05}, x1[3] = {0.15, 0.15, 0.15},
                     xf[3] = {0.1, 0.1, 0.005};
        gf_shape s;
        int n = 1;
        switch (k) {
        case 0:
            s = gf_shape_clump(1, 1.0);
            gf_particle_make(&rec[0], 7, x0, &s, &a.clumps, 700, 0);
            break;
        case 1:
            s = gf_shape_sphere(0.01);
            gf_particle_make(&rec[0], 8, x0, &s, &a.clumps, 700, 2);
            break;
        case 2:
            s = gf_shape_box(0.02, 0.02, 0.01);
            gf_particle_make(&rec[0], 5, xf, &s, &a.clumps, 700, 0);
            break;
        default:
            s = gf_shape_sphere(0.01);
            gf_particle_make(&rec[0], 9, x0, &s, &a.clumps, 700, 0);
            gf_particle_make(&rec[1], 9, x1, &s, &a.clumps, 700, 0);
            n = 2;
        }
        for (int i = 0; i < n; ++i)
            if (gf_decomp_owns(&a.xch.decomp, rec[i].x))
                GF_ASSERT_OK(gf_particles_add(&a.particles, &rec[i]));
        GF_ASSERT_OK(gf_io_write_snapshot(NULL, &a, path));
        gf_sim_free(&a);
        const char *base = k == 0 ? DOMAIN MATERIALS
                               "Clump { name one; Sphere { centre <0,0,0>; radius 0.01; } }\n" TIME
                           : k == 1 ? DOMAIN TIME
                                    : BASE;
        with_file(text, sizeof text, base, path, NULL);
        const char *f[6] = {path, what[k][0], what[k][1], what[k][2], NULL, NULL};
        refused(text, f);
    }
    /* Not HDF5 at all, and HDF5 but no granflow file. */
    write_file("text.h5", "id,x,y,z\n", path, sizeof path);
    with_file(text, sizeof text, BASE, path, NULL);
    refused(text, (const char *const[]){path, "not HDF5", NULL});
    path_of(path, sizeof path, "foreign.h5");
    if (P.rank == 0) {
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hid_t sp = H5Screate(H5S_SCALAR), t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 8);
        hid_t at = H5Acreate2(f, "format", t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, "netcdf4");
        H5Aclose(at);
        H5Tclose(t);
        H5Sclose(sp);
        H5Fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    with_file(text, sizeof text, BASE, path, NULL);
    refused(text, (const char *const[]){path, "not a granflow snapshot or checkpoint", NULL});
    /* A restart reads the checkpoint, not the particle file (which need not exist). */
    with_file(text, sizeof text, BASE, "no/such/file.h5", NULL);
    gf_sim r;
    GF_ASSERT_OK(configure(&r, &P, text, 0));
    assert_int_equal(r.particles.n_local, 0);
    gf_sim_free(&r);
    with_file(text, sizeof text, BASE, "no/such/file.h5", NULL);
    refused(text, (const char *const[]){"no/such/file.h5", "cannot open", NULL});
}

/* ------------------------------------------------------------------------------------------ */
/* CSV                                                                                        */

/* Known values in every column, in an unusual order, with comments, blank lines and spaces. */
static const char *values_csv =
    "# written by hand\n"
    "\n"
    "  z , y, x, shape, radius, hx, hy, hz, half_length, clump, scale, material, motion, vx, vy, "
    "vz, wx, wy, wz, qw, qx, qy, qz, id\n"
    "# id 5: a glass sphere\n"
    "0.05, 0.05, 0.05, sphere, 0.01, , , , , , , glass, , 0.1, -0.2, 0.3, 1, 2, 3, , , , , 5\n"
    "0.05, 0.15, 0.05, box, , 0.02, 0.01, 0.005, , , , wood, dynamic, , , , , , , "
    "0.5, 0.5, 0.5, 0.5000001, 6\n"
    "0.05, 0.1, 0.1, capsule, 0.006, , , , 0.02, , , , , , , , , , , , , , , 7\n"
    "0.15, 0.05, 0.15, cylinder, 0.01, , , , 0.008, , , glass, fixed, 0, 0, 0, , , , , , , , 8\n"
    "0.15, 0.15, 0.15, clump, , , , , , duo, 2, wood, , , , , , , , , , , , 9\n"
    "\t0.12 ,0.1,0.15,sphere,0.01,,,,,,,,kinematic,0,0,-0.5,,,,,,,, 10\n";

static double rel(double a, double b) {
    return fabs(a - b) / fabs(b);
}

static void test_csv_values(void **state) {
    (void)state;
    char path[512], text[4096];
    write_file("values.csv", values_csv, path, sizeof path);
    /* Rows go to their owners in rounds of 2. */
    setenv("GF_CHUNK_ROWS", "2", 1);
    with_file(text, sizeof text, BASE, path, "material glass;");
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    unsetenv("GF_CHUNK_ROWS");
    assert_int_equal(b.next_id, 11);
    size_t n = 0;
    gf_particle *p = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 6);
        const double glass = 2500, wood = 700;
        /* 5: a glass sphere of radius 1 cm, moving and turning, identity orientation. */
        assert_int_equal(p[0].id, 5);
        assert_int_equal(p[0].shape.type, GF_SHAPE_SPHERE);
        assert_true(rel(1.0 / p[0].inv_mass, glass * 4.0 / 3.0 * M_PI * 1e-6) < 1e-14);
        assert_true(rel(1.0 / p[0].inv_inertia[0], 0.4 / p[0].inv_mass * 1e-4) < 1e-14);
        assert_true(p[0].x[0] == 0.05 && p[0].x[1] == 0.05 && p[0].x[2] == 0.05);
        assert_true(p[0].v[0] == 0.1 && p[0].v[1] == -0.2 && p[0].v[2] == 0.3);
        assert_true(p[0].w[0] == 1 && p[0].w[1] == 2 && p[0].w[2] == 3);
        assert_true(p[0].q[0] == 1 && p[0].q[1] == 0 && p[0].q[2] == 0 && p[0].q[3] == 0);
        assert_int_equal(p[0].material, 1);
        /* 6: a wooden box, its orientation normalised; x, y, z read by name, not by place. */
        assert_int_equal(p[1].shape.type, GF_SHAPE_BOX);
        double m = wood * 8 * 0.02 * 0.01 * 0.005;
        assert_true(rel(1.0 / p[1].inv_mass, m) < 1e-14);
        assert_true(rel(1.0 / p[1].inv_inertia[0], m * (1e-4 + 25e-6) / 3) < 1e-14);
        assert_true(rel(1.0 / p[1].inv_inertia[1], m * (4e-4 + 25e-6) / 3) < 1e-14);
        assert_true(rel(1.0 / p[1].inv_inertia[2], m * (4e-4 + 1e-4) / 3) < 1e-14);
        assert_true(p[1].x[0] == 0.05 && p[1].x[1] == 0.15 && p[1].x[2] == 0.05);
        double qn = sqrt(0.75 + 0.5000001 * 0.5000001);
        for (int c = 0; c < 3; ++c)
            GF_ASSERT_NEAR(p[1].q[c], 0.5 / qn, 4e-16);
        GF_ASSERT_NEAR(p[1].q[3], 0.5000001 / qn, 4e-16);
        assert_int_equal(p[1].material, 2);
        /* 7: a capsule of the block's material (glass). */
        assert_int_equal(p[2].shape.type, GF_SHAPE_CAPSULE);
        assert_int_equal(p[2].material, 1);
        double rc = 0.006, hc = 0.02;
        assert_true(rel(1.0 / p[2].inv_mass, glass * M_PI * rc * rc * (2 * hc + 4.0 / 3.0 * rc)) <
                    1e-14);
        /* 8: a fixed cylinder: infinite mass and inertia, at rest. */
        assert_int_equal(p[3].shape.type, GF_SHAPE_CYLINDER);
        assert_true(p[3].inv_mass == 0.0);
        for (int d = 0; d < 3; ++d)
            assert_true(p[3].inv_inertia[d] == 0.0 && p[3].v[d] == 0.0 && p[3].w[d] == 0.0);
        assert_true(rel(p[3].radius, hypot(0.01, 0.008)) < 1e-15);
        /* 9: a duo clump at scale 2: the volume of its two disjoint spheres; its row placed the
         * frame of the members, so the centre of mass lies on the line to the second. */
        assert_int_equal(p[4].shape.type, GF_SHAPE_CLUMP);
        assert_int_equal(p[4].shape.clump, 0);
        double s3 = 8.0, v1 = R1 * R1 * R1, v2 = R2 * R2 * R2;
        assert_true(rel(1.0 / p[4].inv_mass, wood * 4.0 / 3.0 * M_PI * (v1 + v2) * s3) < 1e-9);
        GF_ASSERT_NEAR(p[4].x[0], 0.15 + 2 * DUO_OFFSET * v2 / (v1 + v2), 1e-12);
        GF_ASSERT_NEAR(p[4].x[1], 0.15, 1e-12);
        GF_ASSERT_NEAR(p[4].x[2], 0.15, 1e-12);
        /* 10: kinematic: infinite mass, moving at its velocity. */
        assert_true(p[5].inv_mass == 0.0 && p[5].v[2] == -0.5);
        assert_true(p[5].x[0] == 0.15 && p[5].x[1] == 0.1 && p[5].x[2] == 0.12);
    }
    free(p);
    gf_sim_free(&b);

    /* Without an id column a row's id is its index among the data rows. */
    write_file("noid.csv", "x,y,z,radius\n0.05,0.05,0.05,0.01\n# skipped\n0.1,0.1,0.1,0.01\n", path,
               sizeof path);
    with_file(text, sizeof text, BASE, path, NULL);
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    p = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 2);
        assert_int_equal(p[0].id, 0);
        assert_int_equal(p[1].id, 1);
        assert_true(p[1].x[0] == 0.1);
        assert_int_equal(p[0].material, 0); /* the first material */
    }
    assert_int_equal(b.next_id, 2);
    free(p);
    gf_sim_free(&b);
}

/* A box dropped from a CSV file, tilted, lands on an edge and falls flat: at rest on the floor
 * with its centre hz above it. */
static void test_csv_box_drop(void **state) {
    (void)state;
    char path[512], text[4096];
    const double hz = 0.01, a = 0.3;
    char csv[512];
    snprintf(csv, sizeof csv,
             "shape,hx,hy,hz,x,y,z,qw,qx,qy,qz,material\n"
             "box,0.02,0.015,%.17g,0.1,0.1,0.04,%.17g,%.17g,0,0,wood\n",
             hz, cos(0.5 * a), sin(0.5 * a));
    write_file("drop.csv", csv, path, sizeof path);
    with_file(text, sizeof text,
              DOMAIN MATERIALS "Time { dt 1e-3; steps 0; }\n"
                               "Solver { tolerance 1e-8; max_iterations 500; }\n",
              path, NULL);
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    GF_ASSERT_OK(gf_sim_start(&b));
    for (int s = 0; s < 600; ++s)
        GF_ASSERT_OK(gf_sim_step(&b));
    size_t n = 0;
    gf_particle *p = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 1);
        GF_ASSERT_NEAR(p[0].x[2], hz, 1e-6);
        double up[3] = {0, 0, 1}, bz[3];
        gf_quat_rotate(p[0].q, up, bz);
        GF_ASSERT_NEAR(fabs(bz[2]), 1.0, 1e-9);
        for (int d = 0; d < 3; ++d) {
            GF_ASSERT_NEAR(p[0].v[d], 0.0, 1e-6);
            GF_ASSERT_NEAR(p[0].w[d], 0.0, 1e-4);
        }
    }
    free(p);
    gf_sim_free(&b);
}

/* Each malformed CSV file is refused with file:line and the column. */
static void test_csv_errors(void **state) {
    (void)state;
    static const struct {
        const char *csv;
        const char *line;
        const char *what[3];
    } cases[] = {
        {"# c\nid,x,y,z,vq\n", ":2:", {"unknown column 'vq'", NULL, NULL}},
        {"x,y,z,radius,x\n", ":1:", {"column 'x' appears twice", NULL, NULL}},
        {"x,y,radius\n0.1,0.1,0.01\n", ":1:", {"lacks column 'z'", NULL, NULL}},
        {"x,y,z,qw,qx\n", ":1:", {"qw, qx, qy, qz", NULL, NULL}},
        {"x,y,z,radius,vx\n0.1,0.1,0.1,0.01,0\n0.1,0.15,0.1,0.01,fast\n",
         ":3:",
         {"column vx", "'fast' is not a number", NULL}},
        {"x,y,z,radius\n0.1,0.1,0.1,0.01\n\n0.1,0.15,0.1\n",
         ":4:",
         {"3 fields", "4 columns", NULL}},
        {"x,y,z,shape,radius\n0.1,0.1,0.1,cube,0.01\n", ":2:", {"column shape", "'cube'", NULL}},
        {"x,y,z,radius,material\n0.1,0.1,0.1,0.01,steel\n",
         ":2:",
         {"column material", "'steel'", "glass"}},
        {"x,y,z,shape,clump\n0.1,0.1,0.1,clump,quartet\n",
         ":2:",
         {"column clump", "'quartet' names no Clump", NULL}},
        {"x,y,z,shape,hx,hy\n0.1,0.1,0.1,box,0.01,0.01\n",
         ":2:",
         {"a box needs a value in column hz", NULL, NULL}},
        {"x,y,z,shape,hx,hy,hz\n0.1,0.1,0.1,box,0.01,0.01,\n",
         ":2:",
         {"a box needs a value in column hz", NULL, NULL}},
        {"x,y,z,radius\n0.1,0.1,0.1,-0.01\n", ":2:", {"column radius", "not a positive", NULL}},
        {"x,y,z,radius,hx\n0.1,0.1,0.1,0.01,0.02\n",
         ":2:",
         {"column hx is no dimension of a sphere", NULL, NULL}},
        {"id,x,y,z,radius\n3,0.05,0.05,0.05,0.01\n4,0.1,0.1,0.1,0.01\n3,0.15,0.15,0.15,0.01\n",
         ":4:",
         {"id 3", "line 2", NULL}},
        {"id,x,y,z,radius\n-3,0.05,0.05,0.05,0.01\n", ":2:", {"column id", "'-3'", NULL}},
        {"x,y,z,radius\n0.1,0.25,0.1,0.01\n", ":2:", {"y = 0.25", "outside the domain", NULL}},
        {"x,y,z,radius\n0.1,0.1,0.1,nan\n", ":2:", {"column radius", "not a finite", NULL}},
        {"x,y,z,radius,wz\n0.1,0.1,0.1,0.01,1e999\n", ":2:", {"column wz", "not a finite", NULL}},
        {"x,y,z,radius,qw,qx,qy,qz\n0.1,0.1,0.1,0.01,0,0,0,0\n",
         ":2:",
         {"qw, qx, qy, qz", "norm 0", NULL}},
        {"x,y,z,radius,qw,qx,qy,qz\n0.1,0.1,0.1,0.01,1,0.1,0,0\n",
         ":2:",
         {"norm 1.00499", "unit quaternion", NULL}},
        {"x,y,z,radius,motion,vz\n0.1,0.1,0.1,0.01,fixed,1\n",
         ":2:",
         {"fixed", "motion kinematic", NULL}},
        {"x,y,z,radius,motion\n0.1,0.1,0.1,0.01,frozen\n",
         ":2:",
         {"column motion", "'frozen'", NULL}},
        {"x,y,z,shape,hx,hy,hz\n0.1,0.1,0.01,box,0.02,0.02,0.015\n",
         ":2:",
         {"overlaps wall 2 (point 0 0 0, normal 0 0 1)", "by 0.005 m", NULL}},
        {"# nothing\n\n", "", {"no header line", NULL, NULL}},
        /* A radius whose mass underflows (issue 36): refused, not made a body of infinite mass. */
        {"x,y,z,radius\n0.1,0.1,0.1,1e-110\n", ":2:", {"too small", "mass", NULL}},
    };
    char path[512], text[4096];
    setenv("GF_CHUNK_ROWS", "1", 1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        write_file("bad.csv", cases[k].csv, path, sizeof path);
        with_file(text, sizeof text, BASE, path, NULL);
        char where[600];
        snprintf(where, sizeof where, "%s%s", path, cases[k].line);
        const char *f[5] = {where, cases[k].what[0], cases[k].what[1], cases[k].what[2], NULL};
        refused(text, f);
    }
    unsetenv("GF_CHUNK_ROWS");
    /* The format comes from the name or the block. */
    write_file("pack.txt", "x,y,z,radius\n0.1,0.1,0.1,0.01\n", path, sizeof path);
    with_file(text, sizeof text, BASE, path, NULL);
    refused(text, (const char *const[]){"pf.cfg:", "Particles.format", NULL});
    with_file(text, sizeof text, BASE, path, "format csv;");
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    gf_sim_free(&b);
    with_file(text, sizeof text, BASE, path, "format csv; material lead;");
    refused(text, (const char *const[]){"pf.cfg:", "lead", NULL});
}

/* Captures what rank 0 writes to stderr while `text` is configured (warnings on). */
static char *configure_capturing(const char *text) {
    char log[512];
    path_of(log, sizeof log, "stderr.txt");
    int saved = -1;
    if (P.rank == 0) {
        fflush(stderr);
        saved = dup(2);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        close(fd);
    }
    gf_log_set_quiet(0);
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    gf_log_set_quiet(1);
    gf_sim_free(&b);
    char *out = NULL;
    if (P.rank == 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        FILE *f = fopen(log, "r");
        out = calloc(4096, 1);
        size_t len = fread(out, 1, 4095, f);
        out[len] = '\0';
        fclose(f);
    }
    return out;
}

/* Overlapping file particles are warned about (deepest pair, beyond 1% of the smaller radius),
 * found across subdomain faces; particles the lattice or a Body block would put into a file
 * particle are refused naming both; a file particle too large for the subdomains is refused. */
/* Lines may end in LF, CRLF or a lone CR (issue 36: CR-only files were read as one line); a NUL
 * byte is refused naming its line instead of cutting the row short. */
static void test_csv_line_ends(void **state) {
    (void)state;
    const char *ends[3] = {"\n", "\r\n", "\r"};
    char path[512], text[4096];
    for (int e = 0; e < 3; ++e) {
        char csv[512];
        snprintf(csv, sizeof csv,
                 "# three spheres%sx,y,z,radius%s0.05,0.05,0.05,0.01%s%s"
                 "0.1,0.1,0.1,0.01%s0.15,0.15,0.15,0.01",
                 ends[e], ends[e], ends[e], ends[e], ends[e]);
        write_file("ends.csv", csv, path, sizeof path);
        with_file(text, sizeof text, BASE, path, NULL);
        gf_sim sim;
        GF_ASSERT_OK(configure(&sim, &P, text, 1));
        int64_t n = (int64_t)sim.particles.n_local;
        GF_ASSERT_OK(gf_par_allreduce_i64(&P, &n, 1, GF_PAR_SUM));
        if (n != 3)
            fail_msg("line ends %d: %lld particles, not 3", e, (long long)n);
        gf_sim_free(&sim);
    }
    path_of(path, sizeof path, "nul.csv");
    if (P.rank == 0) {
        static const char nul[] = "x,y,z,radius\n0.05,0.05,0.05,0.01\n0.1,0.1\0,0.1,0.01\n";
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(nul, 1, sizeof nul - 1, f);
        fclose(f);
    }
    GF_ASSERT_OK(gf_par_barrier(&P));
    with_file(text, sizeof text, BASE, path, NULL);
    char where[600];
    snprintf(where, sizeof where, "%s:3:", path);
    const char *f[3] = {where, "NUL byte", NULL};
    refused(text, f);
}

static void test_overlaps(void **state) {
    (void)state;
    char path[512], text[4096], base[2048], csv[512];
    /* Cut along x only, so the pair below straddles the faces between ranks. */
    snprintf(base, sizeof base,
             "Domain { min <0,0,0>; max <0.2,0.2,0.2>; box_walls true; periodic <1,0,0>; "
             "processes <%d,1,1>; }\n" MATERIALS CLUMPS TIME,
             P.size);
    for (int deep = 0; deep < 2; ++deep) {
        /* Radii 0.01 and 0.02 across the face x = 0.1: an overlap of 2% (deep) or 0.5% of the
         * smaller one, 0.2 mm or 0.05 mm; two of radius 0.01 across the periodic face x = 0,
         * three quarters of that. */
        double ov = deep ? 2e-4 : 5e-5, x1 = 0.1 - 0.01 + ov / 2, x2 = 0.1 + 0.02 - ov / 2;
        snprintf(csv, sizeof csv,
                 "id,x,y,z,radius\n1,%.17g,0.1,0.1,0.01\n2,%.17g,0.1,0.1,0.02\n"
                 "3,0.004,0.05,0.05,0.01\n4,%.17g,0.05,0.05,0.01\n",
                 x1, x2, 0.2 - 0.016 + 0.75 * ov);
        write_file("pair.csv", csv, path, sizeof path);
        with_file(text, sizeof text, base, path, NULL);
        char *err = configure_capturing(text);
        if (P.rank == 0) {
            int warned = strstr(err, "overlap by more than 1%") != NULL;
            if (warned != deep)
                fail_msg("overlap %g: warning expected %d, stderr: %s", ov, deep, err);
            if (deep && (!strstr(err, "2 pairs") || !strstr(err, "particles 1 and 2") ||
                         !strstr(err, "0.0002 m")))
                fail_msg("unexpected warning: %s", err);
        }
        free(err);
    }
    /* The lattice's sphere 12 (centre 0.1, 0.1, 0.1 after 10 file ids) and a Body overlap file
     * particles. */
    write_file("one.csv", "id,x,y,z,radius\n9,0.105,0.1,0.1,0.01\n", path, sizeof path);
    char text2[2048];
    snprintf(text2, sizeof text2,
             "%sLattice { count <3,3,3>; origin <0.05,0.05,0.05>; spacing 0.05; radius 0.01; }\n",
             BASE);
    with_file(text, sizeof text, text2, path, NULL);
    refused(text, (const char *const[]){"particle 23", "Lattice", "particle 9", path, NULL});
    snprintf(text2, sizeof text2,
             "%sBody { shape box; half_extents <0.01,0.01,0.01>; position <0.09,0.1,0.1>; }\n",
             BASE);
    with_file(text, sizeof text, text2, path, NULL);
    /* The bodies module refuses it (the configuration is refused as a whole). */
    refused_as(text, (const char *const[]){"body 10", "overlaps", "9", NULL}, 0);
    /* Ids follow the file's: the lattice's from 10, then the body's. */
    snprintf(text2, sizeof text2,
             "%sLattice { count <2,1,1>; origin <0.05,0.05,0.05>; spacing 0.05; radius 0.01; }\n"
             "Body { shape sphere; radius 0.01; position <0.15,0.15,0.15>; }\n",
             BASE);
    with_file(text, sizeof text, text2, path, NULL);
    gf_sim b;
    GF_ASSERT_OK(configure(&b, &P, text, 1));
    size_t n = 0;
    gf_particle *p = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 4);
        const int64_t ids[4] = {9, 10, 11, 12};
        for (int k = 0; k < 4; ++k)
            assert_int_equal(p[k].id, ids[k]);
    }
    free(p);
    gf_sim_free(&b);
    /* A sphere of radius 5 cm needs subdomains (2 + margin_fraction) x 5 cm thick: 10 cm at 2
     * ranks is not. */
    write_file("big.csv", "x,y,z,radius\n0.1,0.1,0.1,0.05\n", path, sizeof path);
    with_file(text, sizeof text, base, path, NULL);
    if (P.size > 1) {
        char range[64];
        snprintf(range, sizeof range, "particles interact over %g m",
                 (2.0 + GF_SIM_MARGIN_FRACTION) * 0.05);
        refused_as(text, (const char *const[]){range, NULL}, 0);
    } else {
        GF_ASSERT_OK(configure(&b, &P, text, 1));
        gf_sim_free(&b);
    }
}

/* The example configs/from-csv.cfg: the first domino of its CSV file topples the row. */
static void test_example(void **state) {
    (void)state;
    char path[1024], override[1200];
    snprintf(path, sizeof path, "%s/configs/from-csv.cfg", GF_SOURCE_DIR);
    snprintf(override, sizeof override, "-Particles.file=%s/configs/pack.csv", GF_SOURCE_DIR);
    char *text = NULL;
    size_t len = 0;
    GF_ASSERT_OK(gf_config_read_file(path, &text, &len));
    gf_config *cfg = NULL;
    GF_ASSERT_OK(gf_config_parse(text, len, path, &cfg));
    free(text);
    GF_ASSERT_OK(gf_config_override(cfg, override));
    gf_sim b;
    GF_ASSERT_OK(gf_sim_init(&b, &P));
    GF_ASSERT_OK(gf_sim_configure(&b, cfg, 1));
    gf_output out;
    GF_ASSERT_OK(gf_output_configure(&out, gf_config_root(cfg)));
    gf_output_free(&out);
    GF_ASSERT_OK(gf_config_check_unused(cfg));
    gf_config_destroy(cfg);
    GF_ASSERT_OK(gf_sim_start(&b));
    for (int s = 0; s < 3000; ++s)
        GF_ASSERT_OK(gf_sim_step(&b));
    size_t n = 0;
    gf_particle *p = gather_all(&b, &P, &n);
    if (P.rank == 0) {
        assert_int_equal(n, 11);
        /* Dominoes 1 .. 8 (half extents 4, 20, 25 mm) all lean forward, about y. */
        for (int k = 0; k < 8; ++k) {
            assert_int_equal(p[k].shape.type, GF_SHAPE_BOX);
            double up[3] = {0, 0, 1}, axis[3];
            gf_quat_rotate(p[k].q, up, axis);
            if (!(axis[0] > sin(0.5)))
                fail_msg("domino %lld stands (its axis %g %g %g)", (long long)p[k].id, axis[0],
                         axis[1], axis[2]);
        }
    }
    free(p);
    gf_sim_free(&b);
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "pf");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_hdf5_round_trip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_hdf5_other_box, setup, teardown),
    cmocka_unit_test_setup_teardown(test_hdf5_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(test_csv_values, setup, teardown),
    cmocka_unit_test_setup_teardown(test_csv_box_drop, setup, teardown),
    cmocka_unit_test_setup_teardown(test_csv_errors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_csv_line_ends, setup, teardown),
    cmocka_unit_test_setup_teardown(test_overlaps, setup, teardown),
    cmocka_unit_test_setup_teardown(test_example, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
