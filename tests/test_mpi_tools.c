/* The post-processing programs (issue 7) as a user runs them, on snapshots written by 1, 2 and 4
 * ranks: gf-velfield reproduces a known velocity field and draws it, gf-rdf finds the shells of a
 * simple-cubic lattice through the periodic boundaries, gf-stats reports a snapshot's and a run's
 * figures as the engine computed them, and all three fail clearly on wrong input. The tools run
 * on rank 0 while the other ranks wait. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"
#include "sim/sim.h"
#include "diag/stats.h"
#include "lib/analysis.h"
#include "test_util.h"

#define P gf_test_par

static char dir[256];

static void path_of(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

/* Runs a tool with arguments on rank 0; returns its exit status, output in *out. */
static int tool(const char *exe, const char *args, char **out) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", exe, args);
    return gf_test_run(cmd, out);
}

static void tool_ok(const char *exe, const char *args, const char *fragment) {
    char *out = NULL;
    if (tool(exe, args, &out) != 0 || (fragment && !strstr(out, fragment)))
        fail_msg("'%s %s' failed or did not say '%s':\n%s", exe, args, fragment ? fragment : "",
                 out);
    free(out);
}

/* Opens PREFIX.csv, checks its comment line holds `fragment` and its column line is `columns`. */
static FILE *open_csv(const char *prefix, const char *fragment, const char *columns) {
    char path[600], line[1024];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    if (line[0] != '#' || !strstr(line, fragment))
        fail_msg("%s: comment line '%s' lacks '%s'", path, line, fragment);
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    assert_string_equal(line, columns);
    return f;
}

static void expect_failure(const char *exe, const char *args, const char *fragment) {
    char *out = NULL;
    int rc = tool(exe, args, &out);
    if (rc != 1 || !strstr(out, fragment))
        fail_msg("'%s %s' exited with %d, expected a failure (exit status 1) saying '%s':\n%s", exe,
                 args, rc, fragment, out);
    free(out);
}

static void add_if_owned(gf_sim *sim, const gf_particle *rec) {
    if (!sim->distributed || gf_decomp_owns(&sim->xch.decomp, rec->x))
        GF_ASSERT_OK(gf_particles_add(&sim->particles, rec));
}

/* --- a known velocity field ------------------------------------------------------------------ */

/* The channel of the paper, 15 x 6.5 cm, 1 cm deep; the field is binned on 15 x 13 cells of
 * 1 x 0.5 cm holding 2 x 2 particles placed symmetrically about the centre, so the cell mean of
 * the linear field below is its value at the cell centre. Some cells stay empty. */
enum { FNX = 15, FNY = 13 };
static const double field_hi[3] = {0.15, 0.065, 0.01};
static const double field_r = 0.0005, field_density = 2500;

static int empty_cell(int i, int j) {
    return (i + 2 * j) % 7 == 0;
}

static void field_at(double x, double y, double scale, double v[3], double w[3]) {
    v[0] = scale * (1.0 + 20.0 * y);
    v[1] = scale * -5.0 * x;
    v[2] = scale * 0.3;
    w[0] = 0.0;
    w[1] = 0.0;
    w[2] = scale * 100.0 * x;
}

static void field_particle(int64_t id, double pos[3]) {
    int64_t cell = id / 4, s = id % 4;
    int i = (int)(cell % FNX), j = (int)(cell / FNX);
    pos[0] = 0.005 + 0.01 * i + (s & 1 ? 0.0025 : -0.0025);
    pos[1] = 0.0025 + 0.005 * j + (s & 2 ? 0.00125 : -0.00125);
    pos[2] = 0.005;
}

static void write_field_snapshot(const char *path, double scale) {
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    const double lo[3] = {0, 0, 0};
    const int per[3] = {0, 0, 0}, dims[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, field_hi));
    int64_t placed = 0;
    for (int64_t k = 0; k < 4 * FNX * FNY; ++k) {
        if (empty_cell((int)(k / 4 % FNX), (int)(k / 4 / FNX)))
            continue;
        placed++;
        gf_particle rec;
        double x[3];
        field_particle(k, x);
        gf_particle_make_sphere(&rec, k, x, field_r, field_density, 0);
        field_at(x[0], x[1], scale, rec.v, rec.w);
        add_if_owned(&sim, &rec);
    }
    sim.expected_particles = placed;
    sim.next_id = 4 * FNX * FNY;
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &sim, path));
    gf_sim_free(&sim);
}

static double csv_field(char **cursor) {
    char *end;
    double v = strtod(*cursor, &end);
    if (end == *cursor)
        fail_msg("not a number in the CSV at '%.20s'", *cursor);
    *cursor = *end == ',' ? end + 1 : end;
    return v;
}

/* Two snapshots (the field and twice the field) average to 1.5 times the field, cell by cell. */
static void check_field_csv(const char *prefix) {
    FILE *f = open_csv(prefix, "2 snapshot(s)", "i,j,x,y,vx,vy,vz,v,omega,count,solid_fraction");
    char line[1024];
    const double cell = 0.01 * 0.005 * 0.01, sphere = 4.0 / 3.0 * M_PI * pow(field_r, 3);
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *c = line;
        int i = (int)csv_field(&c), j = (int)csv_field(&c);
        double xc = 0.005 + 0.01 * i, yc = 0.0025 + 0.005 * j, v[3], w[3];
        GF_ASSERT_NEAR(csv_field(&c), xc, 1e-9);
        GF_ASSERT_NEAR(csv_field(&c), yc, 1e-9);
        double got[7];
        for (int k = 0; k < 7; ++k)
            got[k] = csv_field(&c);
        if (empty_cell(i, j)) {
            assert_true(isnan(got[0]) && isnan(got[3]) && isnan(got[4]));
            GF_ASSERT_NEAR(got[5], 0.0, 0.0);
            GF_ASSERT_NEAR(got[6], 0.0, 0.0);
        } else {
            field_at(xc, yc, 1.5, v, w);
            for (int k = 0; k < 3; ++k)
                GF_ASSERT_NEAR(got[k], v[k], 1e-8 * (1 + fabs(v[k])));
            GF_ASSERT_NEAR(got[3], sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), 1e-8);
            GF_ASSERT_NEAR(got[4], fabs(w[2]), 1e-7);
            GF_ASSERT_NEAR(got[5], 4.0, 0.0);
            GF_ASSERT_NEAR(got[6], 4 * sphere / cell, 1e-8);
        }
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, FNX * FNY);
}

/* Read in one piece and in chunks of 7 rows (which split cells and ranks' row groups), the same
 * answer. */
static void test_velfield_known_field(void **state) {
    (void)state;
    char s1[512], s2[512], prefix[512], args[2048];
    path_of(s1, sizeof s1, "field1.h5");
    path_of(s2, sizeof s2, "field2.h5");
    write_field_snapshot(s1, 1.0);
    write_field_snapshot(s2, 2.0);
    if (P.rank != 0)
        return;
    const char *exe[2] = {GF_VELFIELD, "GF_CHUNK_ROWS=7 " GF_VELFIELD};
    for (int k = 0; k < 2; ++k) {
        path_of(prefix, sizeof prefix, k ? "field_chunked" : "field");
        snprintf(args, sizeof args, "-o %s --nx %d --ny %d %s %s", prefix, FNX, FNY, s1, s2);
        tool_ok(exe[k], args, "2 snapshot(s)");
        check_field_csv(prefix);
    }
    expect_failure("GF_CHUNK_ROWS=lots " GF_VELFIELD, s1, "GF_CHUNK_ROWS='lots'");
}

/* --- planes, grids and obstacles (issue 14) ------------------------------------------------- */

/* A box 6 x 2 x 3 cm. In the x-z plane 6 x 3 cells of 1 cm hold two particles each, far apart in
 * y, moving with the cell's velocity plus and minus 0.2 m/s along y; cells with (i + k) % 4 == 3
 * stay empty. */
static const double plane_hi[3] = {0.06, 0.02, 0.03};
static void copy_without(const char *from, const char *to, const char *dataset);
static const double plane_r = 0.001;

static void plane_velocity(int i, int k, double v[3]) {
    v[0] = i + 1.0;
    v[1] = -0.5 * (k + 1);
    v[2] = 0.1 * (i - k);
}

static int plane_empty(int i, int k) {
    return (i + k) % 4 == 3;
}

/* The plane field's particles, and a box obstacle [2, 3.5] x [0.5, 1.2] x [0, 2] cm and a wall
 * on the face y = 0 when obstacle is set. */
static void write_plane_snapshot(const char *path, int obstacle) {
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    const double lo[3] = {0, 0, 0};
    const int per[3] = {0, 0, 0}, dims[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, plane_hi));
    if (obstacle) {
        const double blo[3] = {0.02, 0.005, 0.0}, bhi[3] = {0.035, 0.012, 0.02};
        const double n[3] = {0, 1, 0};
        GF_ASSERT_OK(gf_walls_add_box(&sim.walls, blo, bhi, 0));
        GF_ASSERT_OK(gf_walls_add(&sim.walls, lo, n, NULL, 0));
    }
    int64_t id = 0;
    for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 6; ++i)
            for (int copy = 0; copy < 2; ++copy) {
                if (plane_empty(i, k) || (obstacle && i >= 2 && i <= 3 && k <= 1))
                    continue;
                double x[3] = {0.005 + 0.01 * i + (copy ? 0.003 : -0.003), copy ? 0.016 : 0.003,
                               0.005 + 0.01 * k + (copy ? -0.002 : 0.002)};
                gf_particle rec;
                gf_particle_make_sphere(&rec, id++, x, plane_r, 2500, 0);
                plane_velocity(i, k, rec.v);
                rec.v[1] += copy ? 0.2 : -0.2;
                add_if_owned(&sim, &rec);
            }
    sim.expected_particles = sim.next_id = id;
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &sim, path));
    gf_sim_free(&sim);
}

/* gf-velfield in the x-z plane: each cell's mean velocity and count, the solid fraction over
 * the cell's 2 cm through y, the coordinates named x and z. The default grid fits the box's
 * section in each plane (square cells, 150 along its longer side, drawn square); --cell and one
 * of --nx/--ny alone keep them square too. */
static void test_velfield_planes(void **state) {
    (void)state;
    char snap[512], prefix[512], args[2048];
    path_of(snap, sizeof snap, "plane.h5");
    write_plane_snapshot(snap, 0);
    if (P.rank != 0)
        return;
    path_of(prefix, sizeof prefix, "xz");
    snprintf(args, sizeof args, "-o %s --plane xz --nx 6 --ny 3 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "6 x 3 cells in the x-z plane");
    FILE *f = open_csv(prefix, "each through y [0, 0.02] m",
                       "i,j,x,z,vx,vy,vz,v,omega,count,solid_fraction");
    char line[1024];
    int rows = 0;
    const double cell = 0.01 * 0.01 * 0.02, sphere = 4.0 / 3.0 * M_PI * pow(plane_r, 3);
    while (fgets(line, sizeof line, f)) {
        char *c = line;
        int i = (int)csv_field(&c), k = (int)csv_field(&c);
        GF_ASSERT_NEAR(csv_field(&c), 0.005 + 0.01 * i, 1e-8);
        GF_ASSERT_NEAR(csv_field(&c), 0.005 + 0.01 * k, 1e-8);
        double got[7], v[3];
        for (int q = 0; q < 7; ++q)
            got[q] = csv_field(&c);
        plane_velocity(i, k, v);
        if (plane_empty(i, k)) {
            assert_true(isnan(got[0]) && isnan(got[3]));
            GF_ASSERT_NEAR(got[5], 0.0, 0.0);
        } else {
            for (int q = 0; q < 3; ++q)
                GF_ASSERT_NEAR(got[q], v[q], 1e-8);
            GF_ASSERT_NEAR(got[3], sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), 1e-8);
            GF_ASSERT_NEAR(got[5], 2.0, 0.0);
            GF_ASSERT_NEAR(got[6], 2 * sphere / cell, 1e-8);
        }
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 18);
    /* Default grids: the box's section is 6 x 2 (x-y), 6 x 3 (x-z), 2 x 3 cm (y-z). */
    const struct {
        const char *plane, *says;
    } fits[3] = {{"xy", "150 x 50 cells in the x-y plane"},
                 {"xz", "150 x 75 cells in the x-z plane"},
                 {"yz", "100 x 150 cells in the y-z plane"}};
    for (int p = 0; p < 3; ++p) {
        snprintf(args, sizeof args, "-o %s --plane %s %s", prefix, fits[p].plane, snap);
        tool_ok(GF_VELFIELD, args, fits[p].says);
    }
    snprintf(args, sizeof args, "-o %s --plane xz --cell 0.002 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "30 x 15 cells in the x-z plane");
    snprintf(args, sizeof args, "-o %s --plane xz --nx 12 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "12 x 6 cells in the x-z plane");
    snprintf(args, sizeof args, "-o %s --plane yz --ny 4 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "3 x 4 cells in the y-z plane");
}

/* The outlines gf-velfield wrote (PREFIX_outlines.csv): their count, and the bounds of the
 * first, [x0, x1] x [y0, y1] (m), all of its points on that rectangle's edges. */
static int read_outlines(const char *prefix, double box[4]) {
    char path[600], line[512];
    snprintf(path, sizeof path, "%s_outlines.csv", prefix);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_int_equal(line[0], '#');
    assert_non_null(fgets(line, sizeof line, f));
    assert_true(strncmp(line, "outline,closed,", 15) == 0);
    int n = 0;
    box[0] = box[2] = INFINITY;
    box[1] = box[3] = -INFINITY;
    while (fgets(line, sizeof line, f)) {
        char *c = line;
        int k = (int)csv_field(&c), closed = (int)csv_field(&c);
        double x = csv_field(&c), y = csv_field(&c);
        n = k + 1 > n ? k + 1 : n;
        if (k == 0) {
            assert_int_equal(closed, 1);
            box[0] = fmin(box[0], x);
            box[1] = fmax(box[1], x);
            box[2] = fmin(box[2], y);
            box[3] = fmax(box[3], y);
        }
    }
    fclose(f);
    return n;
}

static void set_element(const char *from, const char *to, const char *dataset, hsize_t at,
                        hid_t type, const void *value);

/* A copy of a snapshot with element `at` of an integer dataset set to value. */
static void set_int64(const char *from, const char *to, const char *dataset, hsize_t at,
                      int64_t value) {
    set_element(from, to, dataset, at, H5T_NATIVE_INT64, &value);
}

/* A box obstacle written by the engine into the snapshot's /geometry: its outline in the x-y
 * and x-z planes is its projection (in x-z its bottom on the box's face), and the wall on the
 * box's face y = 0 adds none. A snapshot without /geometry (earlier versions) gives none; a
 * damaged one is refused. */
static void test_velfield_obstacle(void **state) {
    (void)state;
    char snap[512], prefix[512], args[2048];
    path_of(snap, sizeof snap, "obstacle.h5");
    write_plane_snapshot(snap, 1);
    if (P.rank != 0)
        return;
    path_of(prefix, sizeof prefix, "obst");
    /* The box [20, 35] x [5, 12] mm in x-y, [20, 35] x [0, 20] mm in x-z (its bottom on the
     * box's face); the wall on the face y = 0 adds none. */
    double box[4];
    snprintf(args, sizeof args, "-o %s --nx 60 --ny 20 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "1 outline(s)");
    assert_int_equal(read_outlines(prefix, box), 1);
    const double xy[4] = {0.02, 0.035, 0.005, 0.012}, xz[4] = {0.02, 0.035, 0.0, 0.02};
    for (int k = 0; k < 4; ++k)
        GF_ASSERT_NEAR(box[k], xy[k], 1e-12);
    snprintf(args, sizeof args, "-o %s --plane xz --nx 60 --ny 30 %s", prefix, snap);
    tool_ok(GF_VELFIELD, args, "1 outline(s)");
    assert_int_equal(read_outlines(prefix, box), 1);
    for (int k = 0; k < 4; ++k)
        GF_ASSERT_NEAR(box[k], xz[k], 1e-12);
    char old[512], bad[512];
    path_of(old, sizeof old, "nogeometry.h5");
    copy_without(snap, old, "/geometry");
    snprintf(args, sizeof args, "-o %s --nx 60 --ny 20 %s", prefix, old);
    tool_ok(GF_VELFIELD, args, "0 outline(s)");
    assert_int_equal(read_outlines(prefix, box), 0);
    path_of(bad, sizeof bad, "badgeometry.h5");
    /* The wall's polygon comes first: its code, its number of points, its first point. */
    set_int64(snap, bad, "/geometry/topology", 2, 1000000);
    expect_failure(GF_VELFIELD, bad, "/geometry does not describe a mesh");
    set_int64(snap, bad, "/geometry/topology", 1, 1000000);
    expect_failure(GF_VELFIELD, bad, "/geometry does not describe a mesh");
    copy_without(snap, bad, "/geometry/kind");
    expect_failure(GF_VELFIELD, bad, "/geometry lacks position, topology, kind or body");
}

/* --- g(r) of a lattice through periodic boundaries ------------------------------------------- */

/* The g column (and r / d) of PREFIX.csv. */
static void read_rdf(const char *prefix, double *g, double *r, int bins) {
    FILE *f = open_csv(prefix, "gf-rdf", "r_over_d,g");
    char line[1024];
    int b = 0;
    while (fgets(line, sizeof line, f) && b < bins) {
        char *c = line;
        r[b] = csv_field(&c);
        g[b++] = csv_field(&c);
    }
    fclose(f);
    assert_int_equal(b, bins);
}

/* 8 x 8 x 8 spheres of diameter d = 5 mm on a simple-cubic lattice of spacing 2d filling a box
 * periodic along all axes: with the minimum image every centre has exactly 6, 12, 8, 6, 24 and
 * 24 neighbours at 1, sqrt 2, sqrt 3, 2, sqrt 5 and sqrt 6 spacings. */
static void test_rdf_lattice(void **state) {
    (void)state;
    enum { M = 8, BINS = 241 };
    const double a = 0.01, lo[3] = {0, 0, 0}, hi[3] = {M * a, M * a, M * a};
    const int per[3] = {1, 1, 1}, dims[3] = {0, 0, 0};
    gf_sim sim;
    GF_ASSERT_OK(gf_sim_init(&sim, &P));
    GF_ASSERT_OK(gf_sim_decompose(&sim, dims, per, lo, hi));
    for (int64_t k = 0; k < M * M * M; ++k) {
        double x[3] = {a * (0.5 + (double)(k % M)), a * (0.5 + (double)(k / M % M)),
                       a * (0.5 + (double)(k / (M * M)))};
        gf_particle rec;
        gf_particle_make_sphere(&rec, k, x, a / 4, 2500, 0);
        add_if_owned(&sim, &rec);
    }
    sim.expected_particles = sim.next_id = M * M * M;
    char snap[512], prefix[512], args[2048];
    path_of(snap, sizeof snap, "lattice.h5");
    GF_ASSERT_OK(gf_io_write_snapshot(NULL, &sim, snap));
    gf_sim_free(&sim);
    if (P.rank != 0)
        return;
    path_of(prefix, sizeof prefix, "rdf");
    snprintf(args, sizeof args, "-o %s --region 0 0.08 0 0.08 0 0.08 --rmax 5 --bins %d %s", prefix,
             BINS, snap);
    tool_ok("GF_CHUNK_ROWS=5 " GF_RDF, args, "512 centres");
    FILE *f = open_csv(prefix, "minimum image on periodic axes", "r_over_d,g");
    char line[1024];
    /* In diameters: spacing 2, box 16, rmax 5. */
    const double spacing = 2.0, rho = M * M * M / pow(16.0, 3), dr = 5.0 / BINS;
    const double shell_r2[6] = {1, 2, 3, 4, 5, 6}, shell_n[6] = {6, 12, 8, 6, 24, 24};
    int b = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        char *c = line;
        double r = csv_field(&c), g = csv_field(&c), r0 = b * dr, r1 = (b + 1) * dr;
        GF_ASSERT_NEAR(r, 0.5 * (r0 + r1), 1e-5);
        double neighbours = g * rho * 4.0 / 3.0 * M_PI * (r1 * r1 * r1 - r0 * r0 * r0), want = 0;
        for (int s = 0; s < 6; ++s)
            if (spacing * sqrt(shell_r2[s]) >= r0 && spacing * sqrt(shell_r2[s]) < r1) {
                want = shell_n[s];
                found++;
            }
        if (fabs(neighbours - want) > 1e-4 * (1 + want))
            fail_msg("r/d in [%g, %g): %g neighbours per centre, expected %g", r0, r1, neighbours,
                     want);
        b++;
    }
    fclose(f);
    assert_int_equal(b, BINS);
    assert_int_equal(found, 6);
    static double g1[BINS], g2[BINS], ge[BINS], gp[BINS], rr[BINS];
    read_rdf(prefix, g1, rr, BINS);

    /* Without --region the whole box; two snapshots are averaged (the same one twice: the same
     * g, not twice it). */
    snprintf(args, sizeof args, "-o %s --rmax 5 --bins %d %s %s", prefix, BINS, snap, snap);
    tool_ok(GF_RDF, args, "1024 centres in 2 snapshots");
    fclose(open_csv(prefix, "[0, 0.08] x [0, 0.08] x [0, 0.08] m over 2 snapshots", "r_over_d,g"));
    read_rdf(prefix, g2, rr, BINS);
    for (int k = 0; k < BINS; ++k)
        GF_ASSERT_NEAR(g2[k], g1[k], 1e-5 * fabs(g1[k]));

    /* The paper's plain normalisation in a region short of the periodic length (no minimum
     * image): the edge-corrected g times the share f(r) of shells inside the region. */
    for (int plain = 0; plain < 2; ++plain) {
        snprintf(args, sizeof args,
                 "-o %s --region 0 0.04 0 0.04 0 0.04 --rmax 5 --bins %d --normalisation %s %s",
                 prefix, BINS, plain ? "plain" : "edge", snap);
        tool_ok(GF_RDF, args, "64 centres");
        fclose(open_csv(prefix, plain ? "plain normalisation" : "edge-corrected", "r_over_d,g"));
        read_rdf(prefix, plain ? gp : ge, rr, BINS);
    }
    const double len[3] = {0.04, 0.04, 0.04};
    const int none[3] = {0, 0, 0};
    int compared = 0;
    for (int k = 0; k < BINS; ++k)
        if (ge[k] > 0) {
            GF_ASSERT_NEAR(gp[k], ge[k] * gf_rdf_edge_factor(rr[k] * 0.005, len, none),
                           2e-5 * ge[k]);
            compared++;
        }
    assert_true(compared >= 5);
    expect_failure(GF_RDF, "--normalisation paper x.h5", "--normalisation expects edge or plain");
}

/* --- statistics of snapshots and runs -------------------------------------------------------- */

/* Spheres stacked in touching layers on a floor, walls along y, periodic along x: contacts from
 * the first step on. */
static void make_packing(gf_sim *sim, gf_contact_model model) {
    GF_ASSERT_OK(gf_sim_init(sim, &P));
    const double r = 0.004, lo[3] = {0, 0, 0}, hi[3] = {0.08, 0.04, 0.06};
    const int per[3] = {1, 0, 0}, dims[3] = {0, 0, 0};
    GF_ASSERT_OK(gf_sim_decompose(sim, dims, per, lo, hi));
    const double floor_n[3] = {0, 0, 1}, side_n[3] = {0, 1, 0}, side2_n[3] = {0, -1, 0};
    GF_ASSERT_OK(gf_walls_add(&sim->walls, lo, floor_n, NULL, 0));
    GF_ASSERT_OK(gf_walls_add(&sim->walls, lo, side_n, NULL, 0));
    GF_ASSERT_OK(gf_walls_add(&sim->walls, hi, side2_n, NULL, 0));
    GF_ASSERT_OK(gf_materials_set_friction(&sim->materials, 0, 0, 0.5));
    gf_solver_params prm;
    gf_solver_params_default(&prm);
    prm.model = model;
    prm.max_iterations = 30;
    GF_ASSERT_OK(gf_sim_set_solver(sim, &prm));
    sim->dt = 1e-4;
    sim->gravity[2] = -9.81;
    sim->margin_tolerance = 0.05 * r;
    uint64_t rng = 3;
    int64_t id = 0;
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 5; ++j)
            for (int i = 0; i < 10; ++i) {
                double x[3] = {r + 2 * r * i, r + 2 * r * j, r + 2 * r * k};
                gf_particle rec;
                gf_particle_make_sphere(&rec, id++, x, r, 2500, 0);
                for (int d = 0; d < 3; ++d) {
                    rec.v[d] = gf_test_uniform(&rng, -0.2, 0.2);
                    rec.w[d] = gf_test_uniform(&rng, -20, 20);
                }
                add_if_owned(sim, &rec);
            }
    sim->expected_particles = sim->next_id = id;
}

/* The figure in column col of gf-stats' row `label`. */
static double figure(const char *out, const char *label, int col) {
    for (const char *line = out; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t n = strlen(label);
        if (strncmp(line, label, n) || line[n] != ' ' || line[n + 1] != ' ')
            continue;
        const char *c = line + 34;
        double v = NAN;
        for (int k = 0; k <= col; ++k) {
            char *end;
            v = strtod(c, &end);
            if (end == c)
                fail_msg("row '%s' has no column %d:\n%s", label, col, out);
            c = end;
        }
        return v;
    }
    fail_msg("no row '%s' in:\n%s", label, out);
    return NAN;
}

static void expect_figure(const char *out, const char *label, int col, double want) {
    double got = figure(out, label, col);
    /* gf-stats prints 6 significant digits: up to 5e-6 relative of rounding. */
    if (!(fabs(got - want) <= 6e-6 * fabs(want) + 1e-15))
        fail_msg("%s (column %d): %.9g, expected %.9g", label, col, got, want);
}

/* gf-stats on the files of two runs, NAME.EXT; returns its output. */
static char *stats_side_by_side(const char *names[2], const char *ext) {
    char args[2048], a[512], b[512], file[64], *out = NULL;
    snprintf(file, sizeof file, "%s.%s", names[0], ext);
    path_of(a, sizeof a, file);
    snprintf(file, sizeof file, "%s.%s", names[1], ext);
    path_of(b, sizeof b, file);
    snprintf(args, sizeof args, "%s %s", a, b);
    /* Chunks of 3 rows: sums over chunks must equal the engine's over ranks. */
    if (tool("GF_CHUNK_ROWS=3 " GF_STATS, args, &out) != 0)
        fail_msg("gf-stats failed:\n%s", out);
    return out;
}

/* Two runs, frictionless and maximum dissipation (whose sticking contacts would agree with
 * Coulomb's in so short a run), each sampled every step and ending in a snapshot
 * with its contact list: gf-stats reports what the engine computed, side by side. */
static void test_stats_runs(void **state) {
    (void)state;
    const gf_contact_model models[2] = {GF_MODEL_FRICTIONLESS, GF_MODEL_MAXDISS};
    const char *names[2] = {"frictionless", "maxdiss"};
    double snap_fig[2][5], run_fig[2][5], solved[2], loaded[2];
    for (int m = 0; m < 2; ++m) {
        gf_sim sim;
        make_packing(&sim, models[m]);
        gf_stats st;
        memset(&st, 0, sizeof st);
        st.every = 1;
        memcpy(st.region_lo, sim.lo, sizeof st.region_lo);
        memcpy(st.region_hi, sim.hi, sizeof st.region_hi);
        char name[64];
        snprintf(name, sizeof name, "%s.csv", names[m]);
        path_of(st.file, sizeof st.file, name);
        for (int s = 0; s < 10; ++s) {
            GF_ASSERT_OK(gf_sim_step(&sim));
            GF_ASSERT_OK(gf_stats_observe(&st, &sim, 0));
        }
        double k = (double)st.samples;
        run_fig[m][0] = st.sum_particles / k;
        run_fig[m][1] = st.sum_cpp / k;
        run_fig[m][2] = st.max_penetration;
        run_fig[m][3] = st.sum_energy / k;
        run_fig[m][4] = st.sum_fraction / k;
        gf_stats_finish(&st, &sim);
        /* Touching: gap <= 0; loaded: a positive normal impulse (counted here from the raw
         * contact list, as a DEM coordination number counts them). */
        double sums[5] = {(double)sim.particles.n_local, 0.0,
                          gf_particles_kinetic_energy(&sim.particles), (double)sim.contacts.count,
                          0.0},
               pen = 0.0;
        for (size_t c = 0; c < sim.contacts.count; ++c) {
            pen = fmax(pen, -sim.contacts.gap[c]);
            sums[1] += sim.contacts.gap[c] <= 0.0;
            sums[4] += sim.contacts.lambda[0][c] > 0.0;
        }
        GF_ASSERT_OK(gf_par_allreduce_double(&P, sums, 5, GF_PAR_SUM));
        solved[m] = sums[3];
        loaded[m] = sums[4];
        GF_ASSERT_OK(gf_par_allreduce_double(&P, &pen, 1, GF_PAR_MAX));
        snap_fig[m][0] = sums[0];
        snap_fig[m][1] = sums[1];
        snap_fig[m][2] = sums[2];
        snap_fig[m][3] = pen;
        snap_fig[m][4] = sums[0] * 4.0 / 3.0 * M_PI * pow(0.004, 3) / (0.08 * 0.04 * 0.06);
        gf_output o;
        memset(&o, 0, sizeof o);
        o.contacts = 1;
        snprintf(name, sizeof name, "%s.h5", names[m]);
        char snap[512];
        path_of(snap, sizeof snap, name);
        GF_ASSERT_OK(gf_io_write_snapshot(&o, &sim, snap));
        gf_sim_free(&sim);
    }
    if (P.rank != 0)
        return;
    /* The packing touches and carries load; speculative pairs make the solved set larger. */
    assert_true(snap_fig[0][1] > 0 && snap_fig[1][1] > 0 && loaded[0] > 0 && loaded[1] > 0);
    assert_true(solved[0] > snap_fig[0][1] && solved[1] > snap_fig[1][1]);
    char *out = stats_side_by_side(names, "h5");
    for (int m = 0; m < 2; ++m) {
        expect_figure(out, "particles", m, snap_fig[m][0]);
        expect_figure(out, "contacts solved", m, solved[m]);
        expect_figure(out, "contacts touching (gap <= 0)", m, snap_fig[m][1]);
        expect_figure(out, "contacts loaded (impulse > 0)", m, loaded[m]);
        expect_figure(out, "contacts per particle (2C/N)", m, 2 * snap_fig[m][1] / snap_fig[m][0]);
        expect_figure(out, "loaded contacts per particle", m, 2 * loaded[m] / snap_fig[m][0]);
        expect_figure(out, "kinetic energy (J)", m, snap_fig[m][2]);
        expect_figure(out, "max. penetration (m)", m, snap_fig[m][3]);
        expect_figure(out, "solid fraction of the box", m, snap_fig[m][4]);
    }
    free(out);
    out = stats_side_by_side(names, "csv");
    for (int m = 0; m < 2; ++m) {
        expect_figure(out, "samples", m, 10);
        expect_figure(out, "avg. particles", m, run_fig[m][0]);
        expect_figure(out, "avg. contacts_per_particle", m, run_fig[m][1]);
        expect_figure(out, "max. max_penetration", m, run_fig[m][2]);
        expect_figure(out, "avg. kinetic_energy", m, run_fig[m][3]);
        expect_figure(out, "avg. solid_fraction", m, run_fig[m][4]);
    }
    /* Friction takes the spin's energy: the columns are the two runs, not one twice. */
    assert_true(figure(out, "avg. kinetic_energy", 0) >
                1.5 * figure(out, "avg. kinetic_energy", 1));
    free(out);
}

/* --- wrong input ------------------------------------------------------------------------------ */

static void copy_without(const char *from, const char *to, const char *dataset) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(to, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Ldelete(f, dataset, H5P_DEFAULT) >= 0);
    H5Fclose(f);
}

/* A copy of a snapshot with a root attribute replaced by n doubles. */
static void replace_attribute(const char *from, const char *to, const char *name,
                              const double *values, int n) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(to, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Adelete(f, name) >= 0);
    hsize_t dims = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &dims, NULL);
    hid_t a = H5Acreate2(f, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, values) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(f);
}

/* A copy of a snapshot with element `at` of a one-dimensional dataset set to *value (type). */
static void set_element(const char *from, const char *to, const char *dataset, hsize_t at,
                        hid_t type, const void *value) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
    hid_t f = H5Fopen(to, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
    assert_true(f >= 0 && d >= 0);
    hid_t fs = H5Dget_space(d);
    hsize_t count = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &count, NULL);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    assert_true(H5Dwrite(d, type, ms, fs, H5P_DEFAULT, value) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

/* A copy of a snapshot whose first particle has the given radius. */
static void set_first_radius(const char *from, const char *to, double r) {
    set_element(from, to, "/particles/radius", 0, H5T_NATIVE_DOUBLE, &r);
}

static void test_bad_input(void **state) {
    (void)state;
    char snap[512];
    path_of(snap, sizeof snap, "good.h5");
    write_field_snapshot(snap, 1.0);
    if (P.rank != 0)
        return;
    char text[512], foreign[512], novel[512], nomass[512], csv[512], args[2048];
    path_of(text, sizeof text, "text.h5");
    path_of(foreign, sizeof foreign, "foreign.h5");
    path_of(novel, sizeof novel, "novelocity.h5");
    path_of(nomass, sizeof nomass, "nomass.h5");
    path_of(csv, sizeof csv, "other.csv");
    FILE *f = fopen(text, "w");
    fputs("not HDF5\n", f);
    fclose(f);
    f = fopen(csv, "w");
    fputs("a,b\n1,2\n", f);
    fclose(f);
    hid_t h = H5Fcreate(foreign, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(h >= 0);
    H5Fclose(h);
    copy_without(snap, novel, "/particles/velocity");
    copy_without(snap, nomass, "/particles/mass");
    const char *tools[3] = {GF_VELFIELD, GF_RDF, GF_STATS};
    for (int t = 0; t < 3; ++t) {
        expect_failure(tools[t], "/nonexistent/run.h5", "No such file");
        expect_failure(tools[t], text, "not an HDF5 file");
        expect_failure(tools[t], foreign, "not a granflow snapshot");
        expect_failure(tools[t], novel, "missing dataset /particles/velocity");
        expect_failure(tools[t], "", "usage");
        tool_ok(tools[t], "--help", "usage");
    }
    /* Every tool: --help on stdout (nothing on stderr) with exit 0; numbers checked. The
     * braces keep the redirections of the tool's own streams apart from gf_test_run's 2>&1. */
    const char *all[3] = {GF_VELFIELD, GF_RDF, GF_STATS};
    for (int t = 0; t < 3; ++t) {
        char cmd[1024], *out = NULL, *err = NULL;
        snprintf(cmd, sizeof cmd, "{ %s --help 2>/dev/null; }", all[t]);
        assert_int_equal(gf_test_run(cmd, &out), 0);
        if (!strstr(out, "usage"))
            fail_msg("%s --help printed no usage on stdout: '%s'", all[t], out);
        snprintf(cmd, sizeof cmd, "{ %s --help 2>&1 >/dev/null; }", all[t]);
        assert_int_equal(gf_test_run(cmd, &err), 0);
        if (err[0])
            fail_msg("%s --help wrote to stderr: %s", all[t], err);
        free(out);
        free(err);
    }
    /* Crafted headers and data (issue 16): an attribute of another shape than the header's
     * fixed fields overflowed the tools' stack; NaN or negative radii crashed gf-rdf. */
    char bigbox[512], nanrad[512], negrad[512], badbox[512];
    path_of(bigbox, sizeof bigbox, "bigbox.h5");
    path_of(nanrad, sizeof nanrad, "nanradius.h5");
    path_of(negrad, sizeof negrad, "negradius.h5");
    path_of(badbox, sizeof badbox, "badbox.h5");
    double big[4096];
    for (int k = 0; k < 4096; ++k)
        big[k] = 1.0;
    replace_attribute(snap, bigbox, "box_min", big, 4096);
    const double inverted[3] = {1.0, 1.0, 1.0}; /* box_max stays 0.1: max < min */
    replace_attribute(snap, badbox, "box_min", inverted, 3);
    set_first_radius(snap, nanrad, NAN);
    set_first_radius(snap, negrad, -1e-3);
    for (int t = 0; t < 3; ++t) {
        expect_failure(tools[t], bigbox, "wrong shape");
        expect_failure(tools[t], badbox, "impossible values");
        expect_failure(tools[t], nanrad, "not finite");
        expect_failure(tools[t], negrad, "radius <= 0");
    }
    expect_failure(GF_STATS, nomass, "/particles/mass");
    expect_failure(GF_STATS, csv, "not a granflow statistics file");
    snprintf(args, sizeof args, "--region 1 2 1 2 1 2 %s", snap);
    expect_failure(GF_RDF, args, "does not intersect");
    snprintf(args, sizeof args, "--nx 0 %s", snap);
    expect_failure(GF_VELFIELD, args, "must be between 1 and 100000");
    snprintf(args, sizeof args, "--nx ten %s", snap);
    expect_failure(GF_VELFIELD, args, "--nx expects 1 number, got 'ten'");
    snprintf(args, sizeof args, "--ny 6.5 %s", snap);
    expect_failure(GF_VELFIELD, args, "--ny expects a whole number, got '6.5'");
    snprintf(args, sizeof args, "--range 0 0.1 0 %s", snap);
    expect_failure(GF_VELFIELD, args, "--range expects 4 numbers");
    expect_failure(GF_RDF, "--rmax", "--rmax expects 1 number, got '(nothing)'");
    snprintf(args, sizeof args, "--bins 0 %s", snap);
    expect_failure(GF_RDF, args, "--bins must be between 1 and 10000");
    /* A million bins took minutes (issue 36): refused at once. */
    snprintf(args, sizeof args, "--bins 1000000 %s", snap);
    expect_failure(GF_RDF, args, "--bins must be between 1 and 10000");
    snprintf(args, sizeof args, "--colour red %s", snap);
    expect_failure(GF_VELFIELD, args, "unknown or incomplete option '--colour'");
    /* Every numeric option (issue 14): a number, whole where it counts, in range, nothing
     * trailing; the message names the option, the exit status is 1. */
    const struct {
        const char *exe, *options, *says;
    } bad[] = {
        {GF_VELFIELD, "--nx 5x", "--nx expects 1 number, got '5x'"},
        {GF_VELFIELD, "--nx 200000", "--nx must be between 1 and 100000, got '200000'"},
        {GF_VELFIELD, "--ny -3", "--ny must be between 1 and 100000, got '-3'"},
        {GF_VELFIELD, "--cell 0", "--cell must be positive, got '0'"},
        {GF_VELFIELD, "--cell 1mm", "--cell expects 1 number, got '1mm'"},
        {GF_VELFIELD, "--cell 0.001 --nx 5", "--cell and --nx/--ny exclude each other"},
        {GF_VELFIELD, "--plane xx", "--plane expects xy, xz or yz, got 'xx'"},
        {GF_VELFIELD, "--plane zx", "--plane expects xy, xz or yz, got 'zx'"},
        {GF_VELFIELD, "--range 0 1 1 0", "--range A0 A1 B0 B1 needs A1 > A0 and B1 > B0"},
        {GF_VELFIELD, "--vmax 2", "unknown or incomplete option '--vmax'"},
        {GF_RDF, "--rmax -1", "--rmax must be positive, got '-1'"},
        {GF_RDF, "--rmax 5e", "--rmax expects 1 number, got '5e'"},
        {GF_RDF, "--bins 2.5", "--bins expects a whole number, got '2.5'"},
        {GF_RDF, "--region 0 1 0 1 1 0", "--region X0 X1 Y0 Y1 Z0 Z1 needs X1 > X0"},
        {GF_RDF, "--region 0 1 0 1 0 nan", "--region expects 6 numbers, got 'nan'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        snprintf(args, sizeof args, "%s %s", bad[k].options, snap);
        expect_failure(bad[k].exe, args, bad[k].says);
    }
}

static int setup(void **state) {
    (void)state;
    return gf_test_mpi_tmpdir(dir, sizeof dir, "tools");
}

static int teardown(void **state) {
    (void)state;
    return gf_test_mpi_rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_velfield_known_field, setup, teardown),
    cmocka_unit_test_setup_teardown(test_velfield_planes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_velfield_obstacle, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rdf_lattice, setup, teardown),
    cmocka_unit_test_setup_teardown(test_stats_runs, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
};

GF_TEST_MPI_MAIN(tests)
