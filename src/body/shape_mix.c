#include "body/shape_mix.h"

#include <math.h>
#include <string.h>

#include "body/shape_config.h"
#include "core/rng.h"
#include "core/vec.h"

/* Random streams of one particle's draw (the caller's key separates generators and layers). */
enum { STREAM_KIND, STREAM_SIZE, STREAM_ROT1, STREAM_ROT2, STREAM_ROT3 };

static double normal_cdf(double x) {
    return 0.5 * erfc(-x / M_SQRT2);
}

static gf_shape scaled(gf_shape s, double f) {
    for (int k = 0; k < 3; ++k)
        s.dim[k] *= f;
    return s;
}

/* Reads `fraction` of each of n blocks into a cumulative table; the fractions must add to 1. */
static gf_status read_fractions(gf_config_block *parent, const char *name, size_t n, double *cdf) {
    double sum = 0.0;
    for (size_t k = 0; k < n; ++k) {
        gf_config_block *kb = gf_config_section_nth(parent, name, k);
        double f;
        GF_TRY(gf_config_get_double(kb, "fraction", 1.0 / (double)n, &f));
        GF_TRY(gf_config_check_range(kb, "fraction", f, 0.0, 1.0));
        sum += f;
        cdf[k] = sum;
    }
    if (!(fabs(sum - 1.0) <= 1e-9)) {
        char where[512];
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: the fractions of the %zu %s blocks add up to %.15g, not 1",
                        gf_config_block_where(parent, where, sizeof where), n, name, sum);
    }
    cdf[n - 1] = 1.0;
    return GF_OK;
}

static gf_status read_sizes(gf_shape_mix *mix, gf_config_block *b, const char *where) {
    const char *block = gf_config_block_name(b);
    char law[32];
    GF_TRY(gf_config_get_string(b, "size", "fixed", law, sizeof law));
    mix->size_min = mix->size_max = 1.0;
    if (strcmp(law, "fixed") == 0) {
        mix->law = GF_SIZE_FIXED;
    } else if (strcmp(law, "uniform") == 0) {
        mix->law = GF_SIZE_UNIFORM;
        GF_TRY(gf_config_require_double(b, "size_min", &mix->size_min));
        GF_TRY(gf_config_require_double(b, "size_max", &mix->size_max));
    } else if (strcmp(law, "lognormal") == 0) {
        mix->law = GF_SIZE_LOGNORMAL;
        GF_TRY(gf_config_get_double(b, "size_median", 1.0, &mix->median));
        GF_TRY(gf_config_check_range(b, "size_median", mix->median, 1e-6, 1e6));
        GF_TRY(gf_config_require_double(b, "size_sigma", &mix->sigma));
        GF_TRY(gf_config_check_range(b, "size_sigma", mix->sigma, 1e-6, 3.0));
        GF_TRY(gf_config_get_double(b, "size_min", mix->median * exp(-3.0 * mix->sigma),
                                    &mix->size_min));
        GF_TRY(gf_config_get_double(b, "size_max", mix->median * exp(3.0 * mix->sigma),
                                    &mix->size_max));
    } else if (strcmp(law, "discrete") == 0) {
        mix->law = GF_SIZE_DISCRETE;
        size_t n = gf_config_section_count(b, "Size");
        if (n < 1 || n > GF_MIX_SIZES)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: %s.size discrete needs 1 to %d Size { scale ..; fraction ..; } "
                            "blocks, there are %zu",
                            where, block, GF_MIX_SIZES, n);
        GF_TRY(read_fractions(b, "Size", n, mix->size_cdf));
        mix->nsizes = (int)n;
        for (size_t k = 0; k < n; ++k) {
            gf_config_block *sb = gf_config_section_nth(b, "Size", k);
            GF_TRY(gf_config_require_double(sb, "scale", &mix->size[k]));
            GF_TRY(gf_config_check_range(sb, "scale", mix->size[k], 1e-6, 1e6));
            mix->size_min = k == 0 ? mix->size[k] : fmin(mix->size_min, mix->size[k]);
            mix->size_max = k == 0 ? mix->size[k] : fmax(mix->size_max, mix->size[k]);
        }
        return GF_OK;
    } else {
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: %s.size '%s' is not one of fixed, uniform, lognormal, discrete", where,
                        block, law);
    }
    if (mix->law != GF_SIZE_FIXED) {
        GF_TRY(gf_config_check_range(b, "size_min", mix->size_min, 1e-6, 1e6));
        GF_TRY(gf_config_check_range(b, "size_max", mix->size_max, 1e-6, 1e6));
        if (!(mix->size_min <= mix->size_max))
            return GF_ERROR(GF_ERR_INPUT, "%s: %s.size_min %g exceeds size_max %g", where, block,
                            mix->size_min, mix->size_max);
    }
    if (mix->law == GF_SIZE_LOGNORMAL) {
        mix->cdf_lo = normal_cdf(log(mix->size_min / mix->median) / mix->sigma);
        mix->cdf_hi = normal_cdf(log(mix->size_max / mix->median) / mix->sigma);
        /* The truncated law is drawn by inversion: an empty window has nothing to draw. */
        if (!(mix->cdf_hi - mix->cdf_lo > 1e-12))
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: %s.size_min %g and size_max %g hold no probability of the "
                            "lognormal law of median %g and sigma %g",
                            where, block, mix->size_min, mix->size_max, mix->median, mix->sigma);
    }
    return GF_OK;
}

/* The half extent along world axis a of shape s in the identity orientation (either side). */
static double axis_extent(const gf_shape *s, const gf_clumps *clumps, int a) {
    double e = 0.0;
    for (int sgn = -1; sgn <= 1; sgn += 2) {
        double d[3] = {0.0, 0.0, 0.0}, sp[3];
        d[a] = sgn;
        gf_shape_support(s, clumps, d, sp);
        e = fmax(e, sgn * sp[a]);
    }
    return e;
}

gf_status gf_shape_mix_configure(gf_shape_mix *mix, gf_config_block *b, gf_config_block *root,
                                 const gf_materials *m, const gf_clumps *clumps, int32_t material) {
    memset(mix, 0, sizeof *mix);
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    const char *block = gf_config_block_name(b);
    size_t nk = gf_config_section_count(b, "Kind");
    if (nk > GF_MIX_KINDS)
        return GF_ERROR(GF_ERR_INPUT, "%s: %s has %zu Kind blocks, at most %d are supported", where,
                        block, nk, GF_MIX_KINDS);
    if (nk == 0) {
        mix->nkinds = 1;
        GF_TRY(gf_bodies_read_shape(b, root, clumps, "sphere", &mix->kind[0]));
        mix->material[0] = material;
        mix->kind_cdf[0] = 1.0;
    } else {
        /* The block's own shape keys would be silently ignored beside Kind blocks. */
        static const char *const own[] = {"shape",       "radius", "half_extents",
                                          "half_length", "clump",  "scale"};
        for (size_t k = 0; k < sizeof own / sizeof *own; ++k)
            if (gf_config_has(b, own[k]))
                return GF_ERROR(GF_ERR_INPUT,
                                "%s: %s.%s beside Kind blocks: give each kind's shape in its "
                                "Kind block",
                                where, block, own[k]);
        mix->nkinds = (int)nk;
        GF_TRY(read_fractions(b, "Kind", nk, mix->kind_cdf));
        for (size_t k = 0; k < nk; ++k) {
            gf_config_block *kb = gf_config_section_nth(b, "Kind", k);
            GF_TRY(gf_bodies_read_shape(kb, root, clumps, NULL, &mix->kind[k]));
            int mat = material;
            if (gf_config_has(kb, "material"))
                GF_TRY(gf_materials_lookup(m, kb, "material", &mat));
            mix->material[k] = mat;
        }
    }
    GF_TRY(read_sizes(mix, b, where));
    char orient[32];
    GF_TRY(gf_config_get_string(b, "orientation", "aligned", orient, sizeof orient));
    if (strcmp(orient, "random") == 0)
        mix->random_orientation = 1;
    else if (strcmp(orient, "aligned") != 0)
        return GF_ERROR(GF_ERR_INPUT, "%s: %s.orientation '%s' is not one of aligned, random",
                        where, block, orient);
    for (int k = 0; k < mix->nkinds; ++k) {
        gf_shape big = scaled(mix->kind[k], mix->size_max);
        GF_TRY(gf_error_context(gf_shape_check(&big, clumps), "%s: %s at size_max", where, block));
        mix->reach = fmax(mix->reach, gf_shape_bounding_radius(&big, clumps));
        for (int a = 0; a < 3; ++a)
            mix->half_extent[a] = fmax(mix->half_extent[a], axis_extent(&big, clumps, a));
    }
    return GF_OK;
}

int gf_shape_mix_is_uniform_spheres(const gf_shape_mix *mix) {
    return mix->nkinds == 1 && mix->kind[0].type == GF_SHAPE_SPHERE && mix->law == GF_SIZE_FIXED;
}

static double draw_size(const gf_shape_mix *mix, double u) {
    switch (mix->law) {
    case GF_SIZE_UNIFORM:
        return mix->size_min + u * (mix->size_max - mix->size_min);
    case GF_SIZE_LOGNORMAL: {
        /* Inversion of the truncated law: one draw, no rejection loop. */
        double p = mix->cdf_lo + u * (mix->cdf_hi - mix->cdf_lo);
        p = fmin(fmax(p, 1e-300), 1.0 - 1e-16);
        double s = mix->median * exp(mix->sigma * gf_rng_normal_quantile(p));
        return fmin(fmax(s, mix->size_min), mix->size_max);
    }
    case GF_SIZE_DISCRETE: {
        int k = 0;
        while (k + 1 < mix->nsizes && u >= mix->size_cdf[k])
            ++k;
        return mix->size[k];
    }
    default:
        return 1.0;
    }
}

void gf_shape_mix_draw(const gf_shape_mix *mix, uint64_t key, uint64_t index, gf_shape *shape,
                       int32_t *material, double q[4]) {
    int k = 0;
    if (mix->nkinds > 1) {
        double u = gf_rng_uniform(key, STREAM_KIND, index);
        while (k + 1 < mix->nkinds && u >= mix->kind_cdf[k])
            ++k;
    }
    double f =
        mix->law == GF_SIZE_FIXED ? 1.0 : draw_size(mix, gf_rng_uniform(key, STREAM_SIZE, index));
    *shape = scaled(mix->kind[k], f);
    *material = mix->material[k];
    if (mix->random_orientation) {
        gf_rng_rotation(gf_rng_uniform(key, STREAM_ROT1, index),
                        gf_rng_uniform(key, STREAM_ROT2, index),
                        gf_rng_uniform(key, STREAM_ROT3, index), q);
    } else {
        q[0] = 1.0;
        q[1] = q[2] = q[3] = 0.0;
    }
}

double gf_shape_mix_min_spacing(const gf_shape_mix *mix) {
    if (mix->random_orientation)
        return 2.0 * mix->reach;
    return 2.0 * fmax(mix->half_extent[0], fmax(mix->half_extent[1], mix->half_extent[2]));
}
