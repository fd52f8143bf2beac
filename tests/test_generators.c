/* The generators' particle mixtures: shapes in proportion, size laws, random orientations, and
 * placements that never overlap, independent of the rank count. Statistics are checked against
 * closed forms (truncated normal moments, the Haar measure of rotations) at four standard
 * errors; overlaps by brute force over all pairs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/bodies.h"
#include "granflow/collide.h"
#include "config/config.h"
#include "par/decomp.h"
#include "geometry/geometry.h"
#include "body/material.h"
#include "core/rng.h"
#include "scenario/scenario.h"
#include "body/shape_mix.h"
#include "core/vec.h"
#include "test_util.h"

/* A parsed configuration with its materials, walls and clumps. */
typedef struct {
    gf_config *cfg;
    gf_materials m;
    gf_walls w;
    gf_clumps clumps;
    double lo[3], hi[3];
    int periodic[3];
} setup;

static const char *const base_text = "Materials { Material { name glass; density 2500; }\n"
                                     "            Material { name steel; density 7800; } }\n"
                                     "Clump { name trio; Sphere { centre < 0, 0, 0 >; radius 1; }\n"
                                     "        Sphere { centre < 1.2, 0, 0 >; radius 0.8; }\n"
                                     "        Sphere { centre < 0, 1.1, 0.3 >; radius 0.6; } }\n";

static gf_status setup_make(setup *s, const char *extra) {
    memset(s, 0, sizeof *s);
    /* The box [0, 0.2]^3 unless the test gives its own Domain. */
    const char *domain =
        strstr(extra, "Domain {") ? "" : "Domain { min < 0, 0, 0 >; max < 0.2, 0.2, 0.2 >; }\n";
    size_t n = strlen(domain) + strlen(base_text) + strlen(extra) + 1;
    char *text = malloc(n);
    snprintf(text, n, "%s%s%s", domain, base_text, extra);
    gf_status st = gf_config_parse(text, strlen(text), "gen.cfg", &s->cfg);
    free(text);
    GF_TRY(st);
    gf_config_block *root = gf_config_root(s->cfg);
    GF_TRY(gf_materials_configure(&s->m, root));
    GF_TRY(gf_geometry_configure(&s->w, s->lo, s->hi, s->periodic, root, &s->m));
    gf_clumps_init(&s->clumps);
    return gf_bodies_configure_clumps(&s->clumps, root);
}

static void setup_free(setup *s) {
    gf_clumps_free(&s->clumps);
    gf_config_destroy(s->cfg);
}

static gf_status mix_of(setup *s, const char *extra, gf_shape_mix *mix) {
    GF_TRY(setup_make(s, extra));
    gf_config_block *root = gf_config_root(s->cfg);
    return gf_shape_mix_configure(mix, gf_config_section(root, "Lattice"), root, &s->m, &s->clumps,
                                  0);
}

/* |mean - expected| within four standard errors of n samples of variance var. */
static void assert_mean(double sum, long n, double expected, double var, const char *what) {
    double mean = sum / (double)n, se = sqrt(var / (double)n);
    if (!(fabs(mean - expected) <= 4.0 * se))
        fail_msg("%s: mean %.6g, expected %.6g (4 standard errors %.3g)", what, mean, expected,
                 4.0 * se);
}

static void test_normal_quantile(void **state) {
    (void)state;
    /* A published value, then Phi(x(p)) = p through libm's erfc across 300 decades. */
    GF_ASSERT_NEAR(gf_rng_normal_quantile(0.975), 1.959963984540054, 1e-14);
    GF_ASSERT_NEAR(gf_rng_normal_quantile(0.5), 0.0, 1e-16);
    for (double lp = -300.0; lp < -0.302; lp += 0.37) {
        double p = pow(10.0, lp);
        double x = gf_rng_normal_quantile(p), back = 0.5 * erfc(-x / M_SQRT2);
        /* x carries rounding ~1e-16 |x|, and d ln Phi / dx ~ |x| in the tail. */
        if (!(fabs(back - p) <= 4e-16 * (1.0 + x * x) * p))
            fail_msg("p = %.6g: Phi(%.17g) = %.17g", p, x, back);
        /* The upper tail at 1 - pe, whose complement pe is exact. */
        double qc = 1.0 - p, pe = 1.0 - qc;
        double xl = gf_rng_normal_quantile(pe), xu = gf_rng_normal_quantile(qc);
        if (pe > 0.0 && xu != -xl)
            fail_msg("symmetry at p = %.6g: %.17g, %.17g", pe, xl, xu);
    }
}

/* Random orientations follow the Haar measure: each quaternion component squared averages 1/4,
 * the rotated z axis is uniform on the sphere, and the rotation angle has the density
 * (1 - cos t) / pi, so that <cos t> = -1/2. */
static void test_random_orientations(void **state) {
    (void)state;
    setup s;
    gf_shape_mix mix;
    GF_ASSERT_OK(mix_of(&s,
                        "Lattice { count < 1, 1, 1 >; shape box; half_extents < 1e-3, 2e-3, "
                        "3e-3 >; orientation random; }",
                        &mix));
    const long n = 200000;
    double q2[4] = {0}, z[3] = {0}, z2 = 0.0, cost = 0.0, zpos = 0.0;
    for (long i = 0; i < n; ++i) {
        gf_shape sh;
        int32_t mat;
        double q[4], e[3] = {0.0, 0.0, 1.0}, r[3];
        gf_shape_mix_draw(&mix, 99, (uint64_t)i, &sh, &mat, q);
        for (int c = 0; c < 4; ++c)
            q2[c] += q[c] * q[c];
        gf_quat_rotate(q, e, r);
        for (int c = 0; c < 3; ++c)
            z[c] += r[c];
        z2 += r[2] * r[2];
        zpos += r[2] > 0.5;
        cost += 2.0 * q[0] * q[0] - 1.0; /* cos t = 2 w^2 - 1 */
    }
    for (int c = 0; c < 4; ++c)
        assert_mean(q2[c], n, 0.25, 1.0 / 12.0 - 1.0 / 16.0 + 1.0 / 24.0, "q_k^2");
    for (int c = 0; c < 3; ++c)
        assert_mean(z[c], n, 0.0, 1.0 / 3.0, "rotated axis component");
    assert_mean(z2, n, 1.0 / 3.0, 1.0 / 5.0 - 1.0 / 9.0, "rotated z_z^2");
    assert_mean(zpos, n, 0.25, 0.25 * 0.75, "share of z_z > 1/2 (a uniform z_z on [-1, 1])");
    /* Var(cos t) = <cos^2 t> - 1/4 with <cos^2 t> = int cos^2 (1 - cos) / pi = 1/2. */
    assert_mean(cost, n, -0.5, 0.25, "cos of the rotation angle");
    setup_free(&s);
}

/* The truncated normal's mean and variance: mu + sigma (phi(a) - phi(b)) / Z and
 * sigma^2 [1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)^2]. */
static void truncated_normal(double mu, double sigma, double lo, double hi, double *mean,
                             double *var) {
    double a = (lo - mu) / sigma, b = (hi - mu) / sigma;
    double pa = exp(-0.5 * a * a) / sqrt(2.0 * M_PI), pb = exp(-0.5 * b * b) / sqrt(2.0 * M_PI);
    double Z = 0.5 * (erfc(-b / M_SQRT2) - erfc(-a / M_SQRT2));
    *mean = mu + sigma * (pa - pb) / Z;
    *var = sigma * sigma * (1.0 + (a * pa - b * pb) / Z - (pa - pb) * (pa - pb) / (Z * Z));
}

static void test_size_laws(void **state) {
    (void)state;
    const long n = 100000;
    setup s;
    gf_shape_mix mix;
    /* Lognormal, asymmetrically truncated: ln(scale) is a truncated normal. */
    GF_ASSERT_OK(mix_of(&s,
                        "Lattice { count < 1, 1, 1 >; radius 0.001; size lognormal; "
                        "size_median 1.3; size_sigma 0.25; size_min 1.0; size_max 2.5; }",
                        &mix));
    double sum = 0.0, sum2 = 0.0, lo = INFINITY, hi = 0.0;
    for (long i = 0; i < n; ++i) {
        gf_shape sh;
        int32_t mat;
        double q[4];
        gf_shape_mix_draw(&mix, 5, (uint64_t)i, &sh, &mat, q);
        double l = log(sh.dim[0] / 0.001);
        sum += l;
        sum2 += l * l;
        lo = fmin(lo, sh.dim[0]);
        hi = fmax(hi, sh.dim[0]);
        assert_int_equal(sh.type, GF_SHAPE_SPHERE);
    }
    double mean, var;
    truncated_normal(log(1.3), 0.25, log(1.0), log(2.5), &mean, &var);
    assert_mean(sum, n, mean, var, "ln scale (lognormal)");
    double m2 = sum2 / n - (sum / n) * (sum / n);
    if (!(fabs(m2 - var) <= 0.03 * var))
        fail_msg("variance of ln scale %.6g, expected %.6g", m2, var);
    assert_true(lo >= 0.001 * (1.0 - 1e-15) && hi <= 0.0025 * (1.0 + 1e-15));
    GF_ASSERT_NEAR(mix.reach, 0.0025, 1e-18);
    setup_free(&s);

    /* Uniform scale in [0.5, 2]. */
    GF_ASSERT_OK(mix_of(&s,
                        "Lattice { count < 1, 1, 1 >; radius 0.001; size uniform; size_min "
                        "0.5; size_max 2; }",
                        &mix));
    sum = 0.0;
    long below = 0;
    for (long i = 0; i < n; ++i) {
        gf_shape sh;
        int32_t mat;
        double q[4];
        gf_shape_mix_draw(&mix, 5, (uint64_t)i, &sh, &mat, q);
        sum += sh.dim[0] / 0.001;
        below += sh.dim[0] < 0.001;
    }
    assert_mean(sum, n, 1.25, 1.5 * 1.5 / 12.0, "uniform scale");
    assert_mean((double)below, n, 1.0 / 3.0, 2.0 / 9.0, "share below 1");
    setup_free(&s);

    /* Discrete scales and kinds in proportion, kinds with their own material. */
    GF_ASSERT_OK(mix_of(&s,
                        "Lattice { count < 1, 1, 1 >; size discrete;\n"
                        "  Size { scale 0.5; fraction 0.2; } Size { scale 1; fraction 0.5; }\n"
                        "  Size { scale 2; fraction 0.3; }\n"
                        "  Kind { shape sphere; radius 0.001; fraction 0.1; }\n"
                        "  Kind { shape box; half_extents < 1e-3, 2e-3, 1e-3 >; fraction 0.6; "
                        "material steel; }\n"
                        "  Kind { shape clump; clump trio; scale 0.001; fraction 0.3; } }",
                        &mix));
    long kinds[GF_SHAPE_COUNT] = {0}, sizes[3] = {0}, steel = 0;
    int steel_index = -1;
    for (int k = 0; k < s.m.count; ++k)
        if (strcmp(s.m.name[k], "steel") == 0)
            steel_index = k;
    assert_true(steel_index >= 0);
    for (long i = 0; i < n; ++i) {
        gf_shape sh;
        int32_t mat;
        double q[4];
        gf_shape_mix_draw(&mix, 11, (uint64_t)i, &sh, &mat, q);
        kinds[sh.type]++;
        steel += mat == steel_index;
        if (sh.type == GF_SHAPE_BOX) {
            assert_int_equal(mat, steel_index);
            double f = sh.dim[0] / 1e-3;
            GF_ASSERT_NEAR(sh.dim[1], 2.0 * sh.dim[0], 1e-18);
            sizes[f < 0.75 ? 0 : f < 1.5 ? 1 : 2]++;
            assert_true(fabs(f - 0.5) < 1e-12 || fabs(f - 1.0) < 1e-12 || fabs(f - 2.0) < 1e-12);
        }
    }
    assert_mean((double)kinds[GF_SHAPE_SPHERE], n, 0.1, 0.09, "share of spheres");
    assert_mean((double)kinds[GF_SHAPE_BOX], n, 0.6, 0.24, "share of boxes");
    assert_mean((double)kinds[GF_SHAPE_CLUMP], n, 0.3, 0.21, "share of clumps");
    assert_int_equal(steel, kinds[GF_SHAPE_BOX]);
    long nb = kinds[GF_SHAPE_BOX];
    assert_mean((double)sizes[0], nb, 0.2, 0.16, "share of scale 0.5");
    assert_mean((double)sizes[2], nb, 0.3, 0.21, "share of scale 2");
    setup_free(&s);

    /* Fractions that do not add up, keys beside Kind blocks, unknown laws: refused. */
    assert_int_equal(mix_of(&s,
                            "Lattice { count < 1, 1, 1 >; Kind { radius 1e-3; shape sphere; "
                            "fraction 0.5; } Kind { shape sphere; radius 2e-3; fraction 0.4; } }",
                            &mix),
                     GF_ERR_INPUT);
    if (!strstr(gf_error_message(), "add up to 0.9"))
        fail_msg("%s", gf_error_message());
    setup_free(&s);
    assert_int_equal(mix_of(&s,
                            "Lattice { count < 1, 1, 1 >; radius 1e-3; Kind { shape sphere; "
                            "radius 2e-3; } }",
                            &mix),
                     GF_ERR_INPUT);
    if (!strstr(gf_error_message(), "beside Kind blocks"))
        fail_msg("%s", gf_error_message());
    setup_free(&s);
    assert_int_equal(mix_of(&s, "Lattice { count < 1, 1, 1 >; radius 1e-3; size gaussian; }", &mix),
                     GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "not one of fixed, uniform, lognormal"));
    setup_free(&s);
}

/* Brute force: no two particles overlap (beyond rounding), none overlaps a wall or obstacle. */
static void assert_apart(const gf_particles *p, const gf_walls *w, const gf_clumps *clumps) {
    for (size_t i = 0; i < p->n_local; ++i) {
        gf_shape si = gf_particles_shape(p, i);
        gf_body_pose a;
        gf_particles_pose(p, i, &si, &a);
        double depth;
        int which;
        GF_ASSERT_OK(gf_bodies_wall_overlap(&a, w, &depth, &which));
        if (depth > 1e-12)
            fail_msg("particle %lld (%s) overlaps geometry %d by %g", (long long)p->id[i],
                     gf_shape_name(si.type), which, depth);
        for (size_t j = i + 1; j < p->n_local; ++j) {
            gf_shape sj = gf_particles_shape(p, j);
            gf_body_pose b;
            gf_particles_pose(p, j, &sj, &b);
            GF_ASSERT_OK(gf_collide_overlap(&a, &b, &depth));
            if (depth > 1e-12)
                fail_msg("particles %lld (%s) and %lld (%s) overlap by %g", (long long)p->id[i],
                         gf_shape_name(si.type), (long long)p->id[j], gf_shape_name(sj.type),
                         depth);
        }
    }
}

static const char *const mixed_lattice =
    "Domain { min < 0, 0, 0 >; max < 0.2, 0.2, 0.2 >;\n"
    "  Box { min < 0.05, 0.05, 0 >; max < 0.09, 0.08, 0.05 >; }\n"
    "  Cylinder { centre < 0.14, 0.12, 0.06 >; axis < 1, 1, 0 >; radius 0.02; length 0.08; } }\n"
    "Lattice { count < 6, 6, 5 >; origin < 0.016, 0.016, 0.016 >; orientation random;\n"
    "  size lognormal; size_sigma 0.15; seed 3;\n"
    "  Kind { shape box; half_extents < 0.002, 0.005, 0.008 >; fraction 0.3; }\n"
    "  Kind { shape capsule; radius 0.003; half_length 0.006; fraction 0.2; }\n"
    "  Kind { shape cylinder; radius 0.006; half_length 0.002; fraction 0.2; }\n"
    "  Kind { shape clump; clump trio; scale 0.004; fraction 0.2; }\n"
    "  Kind { shape sphere; radius 0.006; fraction 0.1; } }\n";

static gf_status lattice_of(setup *s, const char *text, gf_lattice *l) {
    GF_TRY(setup_make(s, text));
    return gf_lattice_configure(l, gf_config_root(s->cfg), &s->m, &s->clumps, s->lo, s->hi,
                                s->periodic);
}

/* At the closest spacing the generator allows, randomly oriented mixed shapes of random sizes
 * never overlap one another, the walls or the obstacles; the sites it leaves out are exactly
 * those whose particle would overlap the obstacles. */
static void test_lattice_never_overlaps(void **state) {
    (void)state;
    setup s;
    gf_lattice l;
    GF_ASSERT_OK(lattice_of(&s, mixed_lattice, &l));
    gf_particles p;
    gf_particles_init(&p);
    p.clumps = &s.clumps;
    int64_t skipped = 0;
    GF_ASSERT_OK(gf_lattice_generate(&l, &s.m, &s.w, NULL, &p, &skipped));
    if (!(skipped > 0 && skipped < 60))
        fail_msg("%lld of %lld sites left out", (long long)skipped, (long long)gf_lattice_size(&l));
    assert_int_equal((int64_t)p.n_local + skipped, gf_lattice_size(&l));
    /* The default spacing is the largest bounding diameter: 2 reach. */
    GF_ASSERT_NEAR(l.spacing, 2.0 * l.radius, 1e-18);
    long types[GF_SHAPE_COUNT] = {0};
    for (size_t i = 0; i < p.n_local; ++i)
        types[p.shape[i]]++;
    for (int t = 0; t <= GF_SHAPE_CLUMP; ++t)
        assert_true(types[t] > 0);
    assert_apart(&p, &s.w, &s.clumps);
    /* Every left-out site's particle overlaps an obstacle: place it alone and look. */
    gf_lattice all = l;
    gf_walls none = s.w;
    none.nbox = none.ncyl = 0;
    gf_particles q;
    gf_particles_init(&q);
    q.clumps = &s.clumps;
    GF_ASSERT_OK(gf_lattice_generate(&all, &s.m, &none, NULL, &q, &skipped));
    assert_int_equal(skipped, 0);
    size_t kept = 0;
    for (size_t i = 0; i < q.n_local; ++i) {
        int present = kept < p.n_local && p.id[kept] == q.id[i];
        kept += present;
        gf_shape si = gf_particles_shape(&q, i);
        gf_body_pose a;
        gf_particles_pose(&q, i, &si, &a);
        double depth;
        int which;
        GF_ASSERT_OK(gf_bodies_wall_overlap(&a, &s.w, &depth, &which));
        if (present != (depth <= 1e-12))
            fail_msg("site of particle %lld: %s, but its overlap with the geometry is %g",
                     (long long)q.id[i], present ? "kept" : "left out", depth);
    }
    gf_particles_free(&q);
    gf_particles_free(&p);
    setup_free(&s);
}

/* Aligned boxes pack at twice their largest half extent and touch without overlapping; a closer
 * spacing is refused. */
static void test_aligned_boxes_touch(void **state) {
    (void)state;
    setup s;
    gf_lattice l;
    const char *text = "Lattice { count < 4, 4, 4 >; origin < 0.01, 0.01, 0.01 >; shape box; "
                       "half_extents < 0.002, 0.004, 0.003 >; size uniform; size_min 0.9; "
                       "size_max 1.1; }";
    GF_ASSERT_OK(lattice_of(&s, text, &l));
    GF_ASSERT_NEAR(l.spacing, 2.0 * 0.004 * 1.1, 1e-18);
    gf_particles p;
    gf_particles_init(&p);
    int64_t skipped;
    GF_ASSERT_OK(gf_lattice_generate(&l, &s.m, &s.w, NULL, &p, &skipped));
    assert_int_equal(p.n_local, 64);
    assert_apart(&p, &s.w, &s.clumps);
    for (size_t i = 0; i < p.n_local; ++i)
        GF_ASSERT_NEAR(p.q[0][i], 1.0, 0.0);
    gf_particles_free(&p);
    setup_free(&s);
    assert_int_equal(lattice_of(&s,
                                "Lattice { count < 4, 4, 4 >; shape box; half_extents < 0.002, "
                                "0.004, 0.003 >; spacing 0.0079; }",
                                &l),
                     GF_ERR_INPUT);
    assert_non_null(strstr(gf_error_message(), "twice the largest half extent"));
    setup_free(&s);
}

static int cmp_particle_id(const void *a, const void *b) {
    const gf_particle *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Generated on any decomposition, the union of the ranks' particles is the serial lattice, to
 * the last bit. */
static void test_lattice_rank_independent(void **state) {
    (void)state;
    setup s;
    gf_lattice l;
    GF_ASSERT_OK(lattice_of(&s, mixed_lattice, &l));
    gf_particles serial;
    gf_particles_init(&serial);
    int64_t skipped;
    GF_ASSERT_OK(gf_lattice_generate(&l, &s.m, &s.w, NULL, &serial, &skipped));
    const int layouts[2][3] = {{2, 2, 1}, {3, 1, 2}};
    for (int k = 0; k < 2; ++k) {
        const int *dims = layouts[k];
        int nr = dims[0] * dims[1] * dims[2];
        gf_particle *all = malloc((serial.n_local + 1) * sizeof *all);
        size_t n = 0;
        int64_t *counts = calloc((size_t)nr, sizeof *counts);
        for (int r = 0; r < nr; ++r) {
            gf_decomp d;
            int coords[3] = {r % dims[0], (r / dims[0]) % dims[1], r / (dims[0] * dims[1])};
            gf_decomp_setup(&d, dims, s.periodic, coords, s.lo, s.hi);
            d.rank_of = malloc((size_t)nr * sizeof *d.rank_of);
            for (int c = 0; c < nr; ++c)
                d.rank_of[c] = c;
            d.rank = r;
            gf_particles p;
            gf_particles_init(&p);
            int64_t sk;
            GF_ASSERT_OK(gf_lattice_generate(&l, &s.m, &s.w, &d, &p, &sk));
            assert_int_equal(sk, skipped);
            int bound = 1;
            if (r == 0)
                GF_ASSERT_OK(gf_lattice_count_owners(&l, &s.m, &s.w, &d, counts, &bound));
            assert_true(r > 0 || bound == 0); /* a small lattice: site by site, exact */
            assert_int_equal(counts[r], (int64_t)p.n_local);
            for (size_t i = 0; i < p.n_local; ++i) {
                assert_true(n < serial.n_local);
                memset(&all[n], 0, sizeof all[n]); /* the padding too: compared as bytes */
                gf_particles_get(&p, i, &all[n++]);
            }
            gf_particles_free(&p);
            free(d.rank_of);
        }
        assert_int_equal(n, serial.n_local);
        qsort(all, n, sizeof *all, cmp_particle_id);
        for (size_t i = 0; i < n; ++i) {
            gf_particle ref;
            memset(&ref, 0, sizeof ref);
            gf_particles_get(&serial, i, &ref);
            assert_memory_equal(&ref, &all[i], sizeof ref);
        }
        free(all);
        free(counts);
    }
    gf_particles_free(&serial);
    setup_free(&s);
}

/* Largest overlap between any two particles. */
static double worst_overlap(const gf_particles *p) {
    double worst = 0.0;
    for (size_t i = 0; i < p->n_local; ++i)
        for (size_t j = i + 1; j < p->n_local; ++j) {
            gf_shape si = gf_particles_shape(p, i), sj = gf_particles_shape(p, j);
            gf_body_pose a, b;
            gf_particles_pose(p, i, &si, &a);
            gf_particles_pose(p, j, &sj, &b);
            double depth;
            GF_ASSERT_OK(gf_collide_overlap(&a, &b, &depth));
            worst = fmax(worst, depth);
        }
    return worst;
}

/* Inflow layers of shapes: each layer fills every free grid point while the previous layer
 * moves on with the piston, and never places a particle into one pushed back against it. */
static void test_inflow_shapes(void **state) {
    (void)state;
    for (int variant = 0; variant < 2; ++variant) {
        setup s;
        const char *text =
            variant == 0 ? "Domain { min < 0, 0, 0 >; max < 0.2, 0.04, 0.03 >; box_walls false; }\n"
                           "Inflow { speed 1; shape box; half_extents < 0.002, 0.003, 0.001 >; }"
                         : "Domain { min < 0, 0, 0 >; max < 0.2, 0.04, 0.03 >; box_walls false; }\n"
                           "Inflow { speed 1; orientation random; seed 4;\n"
                           "  Kind { shape capsule; radius 0.001; half_length 0.002; }\n"
                           "  Kind { shape clump; clump trio; scale 0.0015; } }";
        GF_ASSERT_OK(setup_make(&s, text));
        gf_inflow in;
        GF_ASSERT_OK(
            gf_inflow_configure(&in, gf_config_root(s.cfg), &s.m, &s.clumps, &s.w, s.lo, s.hi));
        if (variant == 0) {
            GF_ASSERT_NEAR(in.front, 0.002, 0.0);
            GF_ASSERT_NEAR(in.reset_distance, 0.004, 0.0);
            GF_ASSERT_NEAR(in.spacing, 0.006, 0.0);
        } else {
            GF_ASSERT_NEAR(in.spacing, 2.0 * in.radius, 0.0);
        }
        gf_particles p;
        gf_particles_init(&p);
        p.clumps = &s.clumps;
        int64_t next = 0;
        const double dt = in.reset_distance / 4.0;
        long layers = 0;
        for (int step = 0; step < 4 * 6; ++step) {
            /* The piston carries everything in front of it. */
            for (size_t i = 0; i < p.n_local; ++i)
                p.x[0][i] += in.speed * dt;
            if (step == 15) {
                /* One particle pushed back against the piston occupies its grid point. */
                p.x[0][0] = in.position + in.front;
                p.x[1][0] = s.lo[1] + 1.5 * in.spacing;
                p.x[2][0] = s.lo[2] + 0.5 * in.spacing;
            }
            int64_t created = 0;
            GF_ASSERT_OK(gf_inflow_advance(&in, &s.w, dt, NULL, NULL, &s.m, &p, &next, &created));
            if (created == 0)
                continue;
            layers++;
            if (step == 15)
                assert_true(created < in.per_layer);
            else
                assert_int_equal(created, in.per_layer);
            double w = worst_overlap(&p);
            if (w > GF_INFLOW_OVERLAP * in.radius)
                fail_msg("variant %d, layer %ld: particles overlap by %g", variant, layers, w);
        }
        assert_int_equal(layers, 6);
        assert_int_equal(in.per_layer, in.ny * in.nz);
        gf_particles_free(&p);
        setup_free(&s);
    }
}

/* A lattice of more sites than dry runs visit one by one is counted per rank axis by axis: the
 * same counts as a visit of every site (no walls cut into it), on a decomposition with unequal
 * cells. */
static void test_large_lattice_counted_by_axis(void **state) {
    (void)state;
    const int dims[3] = {3, 2, 2}, nr = 12, per[3] = {0, 0, 0};
    const double lo[3] = {0, 0, 0}, hi[3] = {1.0, 1.0, 1.0};
    gf_lattice l;
    memset(&l, 0, sizeof l);
    l.enabled = 1;
    l.count[0] = 300;
    l.count[1] = 230;
    l.count[2] = 210; /* 1.45e7 sites */
    l.spacing = 0.0033;
    l.radius = 0.001;
    for (int a = 0; a < 3; ++a)
        l.origin[a] = 0.002;
    assert_true((double)gf_lattice_size(&l) > GF_LATTICE_VISIT);
    gf_decomp d;
    const int coords[3] = {0, 0, 0};
    gf_decomp_setup(&d, dims, per, coords, lo, hi);
    d.rank_of = malloc(nr * sizeof *d.rank_of);
    for (int c = 0; c < nr; ++c)
        d.rank_of[c] = (7 * c) % nr; /* any numbering of the cells */
    int64_t got[12] = {0}, want[12] = {0};
    int bound = 0;
    gf_materials m;
    gf_materials_init(&m);
    gf_walls w;
    gf_walls_init(&w);
    GF_ASSERT_OK(gf_lattice_count_owners(&l, &m, &w, &d, got, &bound));
    assert_int_equal(bound, 1);
    for (long k = 0; k < l.count[2]; ++k)
        for (long j = 0; j < l.count[1]; ++j)
            for (long i = 0; i < l.count[0]; ++i) {
                const double x[3] = {l.origin[0] + (double)i * l.spacing,
                                     l.origin[1] + (double)j * l.spacing,
                                     l.origin[2] + (double)k * l.spacing};
                want[gf_decomp_owner(&d, x)]++;
            }
    for (int r = 0; r < nr; ++r)
        assert_int_equal(got[r], want[r]);
    free(d.rank_of);
    gf_walls_free(&w);
}

/* A mesh wholly outside the domain (an STL file in millimetres read as metres) is refused,
 * naming its extents and the box's, unless it moves (it may come in); one reaching beyond the
 * box is taken (with a warning). A file's mesh is scaled, turned and moved in that order. */
static void test_mesh_outside_domain(void **state) {
    (void)state;
    const char *fmt = "Domain { min < 0, 0, 0 >; max < 0.2, 0.2, 0.2 >;\n"
                      "  Mesh { shape rectangle; centre < %s, 0.1, 0.1 >; normal < 0, 0, 1 >;\n"
                      "         width 1; height 1; velocity < %s, 0, 0 >; } }\n";
    char text[512];
    setup s;
    snprintf(text, sizeof text, fmt, "5", "0");
    assert_int_equal(setup_make(&s, text), GF_ERR_INPUT);
    const char *msg = gf_error_message();
    if (!strstr(msg, "gen.cfg:7: the mesh lies wholly outside the domain") ||
        !strstr(msg, "spans [4.5, 5.5] x [-0.4, 0.6] x [0.1, 0.1] m, the domain [0, 0.2] x "
                     "[0, 0.2] x [0, 0.2] m"))
        fail_msg("message: %s", msg);
    gf_error_clear();
    gf_walls_free(&s.w);
    gf_config_destroy(s.cfg);
    snprintf(text, sizeof text, fmt, "5", "-1"); /* moving in */
    GF_ASSERT_OK(setup_make(&s, text));
    gf_walls_free(&s.w);
    setup_free(&s);
    snprintf(text, sizeof text, fmt, "0.1", "0"); /* a floor wider than the box */
    GF_ASSERT_OK(setup_make(&s, text));
    gf_walls_free(&s.w);
    setup_free(&s);
    /* An STL file (in mm, 12 x 40 x 3 from the origin) scaled, turned a quarter about z (x, y ->
     * -y, x), then moved: its extents in the message show each step's effect. */
    snprintf(
        text, sizeof text,
        "Domain { min < 0, 0, 0 >; max < 0.2, 0.2, 0.2 >;\n"
        "  Mesh { file \"%s/configs/reference-mesh.stl\"; scale 0.001;\n"
        "         rotation_axis < 0, 0, 2 >; rotation_angle %.17g; offset < -0.1, 0, 0 >; } }\n",
        GF_SOURCE_DIR, M_PI / 2);
    assert_int_equal(setup_make(&s, text), GF_ERR_INPUT);
    msg = gf_error_message();
    if (!strstr(msg, "spans [-0.14, -0.1] x [0, 0.012] x [0, 0.003] m"))
        fail_msg("message: %s", msg);
    gf_error_clear();
    gf_walls_free(&s.w);
    gf_config_destroy(s.cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_quantile),
        cmocka_unit_test(test_random_orientations),
        cmocka_unit_test(test_size_laws),
        cmocka_unit_test(test_lattice_never_overlaps),
        cmocka_unit_test(test_aligned_boxes_touch),
        cmocka_unit_test(test_lattice_rank_independent),
        cmocka_unit_test(test_inflow_shapes),
        cmocka_unit_test(test_large_lattice_counted_by_axis),
        cmocka_unit_test(test_mesh_outside_domain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
