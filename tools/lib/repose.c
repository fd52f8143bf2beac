#include "repose.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEG (180.0 / M_PI)

void gf_repose_profile_free(gf_repose_profile *p) {
    free(p->top);
    free(p->used);
    memset(p, 0, sizeof *p);
}

int gf_repose_line(size_t n, const double *x, const double *y, double *slope, double *intercept,
                   double *se_slope) {
    if (n < 2)
        return -1;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; ++i) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0))
        return -1;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    double ssr = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = y[i] - *intercept - *slope * x[i];
        ssr += d * d;
    }
    *se_slope = n > 2 ? sqrt(ssr / (double)(n - 2) / sxx) : 0.0;
    return 0;
}

static double dot(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static int normalise(double v[3]) {
    double l = sqrt(dot(v, v));
    if (!(l > 0) || !isfinite(l))
        return -1;
    for (int k = 0; k < 3; ++k)
        v[k] /= l;
    return 0;
}

int gf_repose_drum_frame(const double axis[3], const double gravity[3], double across[3],
                         double up[3]) {
    double a[3] = {axis[0], axis[1], axis[2]};
    if (normalise(a))
        return -1;
    double ga = dot(gravity, a);
    for (int k = 0; k < 3; ++k)
        up[k] = -(gravity[k] - ga * a[k]);
    /* Gravity along the axis leaves no "up" in the section: nothing to measure against. */
    if (!(sqrt(dot(up, up)) > 1e-9 * sqrt(dot(gravity, gravity))) || normalise(up))
        return -1;
    across[0] = up[1] * a[2] - up[2] * a[1];
    across[1] = up[2] * a[0] - up[0] * a[2];
    across[2] = up[0] * a[1] - up[1] * a[0];
    return 0;
}

/* A profile of nbins empty bins from lo. */
static int profile_init(gf_repose_profile *p, int nbins, double lo, double width) {
    memset(p, 0, sizeof *p);
    p->top = malloc((size_t)nbins * sizeof *p->top);
    p->used = calloc((size_t)nbins, 1);
    if (!p->top || !p->used) {
        gf_repose_profile_free(p);
        return -1;
    }
    p->nbins = nbins;
    p->lo = lo;
    p->width = width;
    for (int b = 0; b < nbins; ++b)
        p->top[b] = NAN;
    return 0;
}

static void profile_add(gf_repose_profile *p, double pos, double top) {
    double f = floor((pos - p->lo) / p->width);
    int b = f < 0 ? 0 : f >= p->nbins ? p->nbins - 1 : (int)f;
    if (!(p->top[b] >= top))
        p->top[b] = top;
}

static double centre_of(const gf_repose_profile *p, int b) {
    return p->lo + (b + 0.5) * p->width;
}

/* Fits the bins marked used; `sign` -1 reads the angle of a surface falling with position. */
static int fit_used(const gf_repose_profile *p, double sign, gf_repose_fit *fit, char *err,
                    size_t errsize) {
    double *x = malloc(((size_t)p->nbins + 1) * sizeof *x);
    double *y = malloc(((size_t)p->nbins + 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (int b = 0; b < p->nbins; ++b)
        if (p->used[b]) {
            x[n] = centre_of(p, b);
            y[n++] = p->top[b];
        }
    int rc = n >= 3 ? gf_repose_line(n, x, y, &fit->slope, &fit->intercept, &fit->se_slope) : -1;
    if (rc == 0) {
        fit->bins = (int)n;
        fit->from = x[0] - 0.5 * p->width;
        fit->to = x[n - 1] + 0.5 * p->width;
        fit->angle = atan(sign * fit->slope) * DEG;
        fit->se_angle = fit->se_slope / (1.0 + fit->slope * fit->slope) * DEG;
    } else {
        snprintf(err, errsize,
                 "only %zu bin%s of the surface to fit (at least 3 needed): too few particles, "
                 "or a bin wider than the surface",
                 n, n == 1 ? "" : "s");
    }
    free(x);
    free(y);
    return rc;
}

static double mean_diameter(size_t n, const double *radius) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i)
        sum += 2 * radius[i];
    return sum / (double)n;
}

int gf_repose_drum(size_t n, const double *x, const double *radius, const gf_repose_drum_options *o,
                   gf_repose_profile *profile, gf_repose_fit *fit, char *err, size_t errsize) {
    memset(fit, 0, sizeof *fit);
    memset(profile, 0, sizeof *profile);
    double across[3], up[3], axis[3] = {o->axis[0], o->axis[1], o->axis[2]};
    if (n == 0) {
        snprintf(err, errsize, "no particles");
        return -1;
    }
    if (gf_repose_drum_frame(o->axis, o->gravity, across, up) || normalise(axis)) {
        snprintf(err, errsize, "the drum's axis is zero or parallel to gravity");
        return -1;
    }
    if (!(o->keep > 0 && o->keep <= 1)) {
        snprintf(err, errsize, "the fitted fraction of the chord must lie in (0, 1]");
        return -1;
    }
    double d = mean_diameter(n, radius), R = o->radius;
    if (!(R > 0)) {
        for (size_t i = 0; i < n; ++i) {
            double rel[3], along;
            for (int k = 0; k < 3; ++k)
                rel[k] = x[3 * i + k] - o->point[k];
            along = dot(rel, axis);
            double perp2 = fmax(0.0, dot(rel, rel) - along * along);
            R = fmax(R, sqrt(perp2) + radius[i]);
        }
    }
    double w = o->bin > 0 ? o->bin : d;
    double nb = ceil(2 * R / w);
    if (!(nb >= 1 && nb <= 1e7)) {
        snprintf(err, errsize, "%g bins across the drum: the bin width does not suit its radius",
                 nb);
        return -1;
    }
    if (profile_init(profile, (int)nb, -R, w)) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; ++i) {
        double rel[3];
        for (int k = 0; k < 3; ++k)
            rel[k] = x[3 * i + k] - o->point[k];
        profile_add(profile, dot(rel, across), dot(rel, up) + radius[i]);
    }
    /* The wall's highest point over a bin is where the bin comes nearest the axis: a column
     * filled up to the wall stays within a diameter of it there, a free surface lies lower. */
    int first = -1, last = -1;
    for (int b = 0; b < profile->nbins; ++b) {
        double s0 = -R + b * w, s1 = s0 + w,
               near = s0 <= 0 && s1 >= 0 ? 0 : fmin(fabs(s0), fabs(s1));
        double wall = sqrt(fmax(0.0, R * R - near * near));
        if (profile->top[b] < wall - d) {
            if (first < 0)
                first = b;
            last = b;
        }
    }
    if (first < 0) {
        snprintf(err, errsize, "no bin of the bed lies below the drum's wall: no free surface");
        gf_repose_profile_free(profile);
        return -1;
    }
    /* The chord where the fitted line meets the wall: the bins' span is only a first guess, as
     * where the wall is steep a column pressed against it can look like free surface. */
    double c0 = -R + first * w, c1 = -R + (last + 1) * w;
    for (int iter = 0; iter < 20; ++iter) {
        double margin = 0.5 * (1 - o->keep), k0 = c0 + margin * (c1 - c0),
               k1 = c1 - margin * (c1 - c0);
        int changed = 0;
        for (int b = 0; b < profile->nbins; ++b) {
            double c = centre_of(profile, b);
            unsigned char use = c >= k0 && c <= k1 && !isnan(profile->top[b]);
            changed |= use != profile->used[b];
            profile->used[b] = use;
        }
        if (!changed || fit_used(profile, 1.0, fit, err, errsize))
            break;
        /* s^2 + (a + b s)^2 = R^2 */
        double a = fit->intercept, sl = fit->slope, qa = 1 + sl * sl, qb = 2 * a * sl,
               qc = a * a - R * R, disc = qb * qb - 4 * qa * qc;
        if (!(disc > 0))
            break;
        c0 = (-qb - sqrt(disc)) / (2 * qa);
        c1 = (-qb + sqrt(disc)) / (2 * qa);
    }
    fit->radius = R;
    memcpy(fit->centre, o->point, sizeof fit->centre);
    if (fit_used(profile, 1.0, fit, err, errsize)) {
        gf_repose_profile_free(profile);
        return -1;
    }
    return 0;
}

int gf_repose_heap(size_t n, const double *x, const double *radius, const gf_repose_heap_options *o,
                   gf_repose_profile *profile, gf_repose_fit *fit, char *err, size_t errsize) {
    memset(fit, 0, sizeof *fit);
    memset(profile, 0, sizeof *profile);
    if (n == 0) {
        snprintf(err, errsize, "no particles");
        return -1;
    }
    double up[3] = {-o->gravity[0], -o->gravity[1], -o->gravity[2]};
    if (normalise(up)) {
        snprintf(err, errsize, "gravity is zero: a heap has no up");
        return -1;
    }
    if (!(o->lo >= 0 && o->hi > o->lo && o->hi <= 1)) {
        snprintf(err, errsize, "the flank's fractions of the height need 0 <= LO < HI <= 1");
        return -1;
    }
    double c[3] = {o->centre[0], o->centre[1], o->centre[2]};
    if (isnan(c[0]) || isnan(c[1]) || isnan(c[2])) {
        double m = 0;
        c[0] = c[1] = c[2] = 0;
        for (size_t i = 0; i < n; ++i) {
            double mi = radius[i] * radius[i] * radius[i];
            m += mi;
            for (int k = 0; k < 3; ++k)
                c[k] += mi * x[3 * i + k];
        }
        for (int k = 0; k < 3; ++k)
            c[k] /= m;
    }
    double floor_h = o->floor, far = 0;
    if (isnan(floor_h))
        floor_h = INFINITY;
    for (size_t i = 0; i < n; ++i) {
        double rel[3];
        for (int k = 0; k < 3; ++k)
            rel[k] = x[3 * i + k] - c[k];
        double h = dot(rel, up);
        far = fmax(far, sqrt(fmax(0.0, dot(rel, rel) - h * h)));
        if (isnan(o->floor))
            floor_h = fmin(floor_h, dot(x + 3 * i, up) - radius[i]);
    }
    double w = o->bin > 0 ? o->bin : mean_diameter(n, radius);
    double nb = floor(far / w) + 1;
    if (!(nb >= 1 && nb <= 1e7)) {
        snprintf(err, errsize, "%g radial bins: the bin width does not suit the heap", nb);
        return -1;
    }
    if (profile_init(profile, (int)nb, 0.0, w)) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    double height = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
        double rel[3];
        for (int k = 0; k < 3; ++k)
            rel[k] = x[3 * i + k] - c[k];
        double h = dot(rel, up), top = dot(x + 3 * i, up) + radius[i] - floor_h;
        profile_add(profile, sqrt(fmax(0.0, dot(rel, rel) - h * h)), top);
        height = fmax(height, top);
    }
    for (int b = 0; b < profile->nbins; ++b)
        profile->used[b] = profile->top[b] >= o->lo * height && profile->top[b] <= o->hi * height;
    memcpy(fit->centre, c, sizeof fit->centre);
    fit->floor = floor_h;
    fit->height = height;
    if (fit_used(profile, -1.0, fit, err, errsize)) {
        gf_repose_profile_free(profile);
        return -1;
    }
    return 0;
}
