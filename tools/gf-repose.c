/* gf-repose: the angle of repose from snapshots, of the bed in a rotating drum or of a heap
 * poured on a floor (issue 15).
 *
 *   gf-repose drum|heap [options] SNAPSHOT.h5 [SNAPSHOT.h5 ...]
 *
 * One program with two modes rather than two programs: both read the same snapshots, bin the
 * highest particle top along one direction, fit a line over part of it and report and draw the
 * same things; they differ only in the direction (across the drum, away from the heap's axis)
 * and in which part of the profile is the slope. The method is in lib/repose.h; the usage text
 * below is what a user reads. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "lib/cli.h"
#include "lib/repose.h"
#include "lib/snapshot.h"

static const char usage[] =
    "usage: gf-repose drum [--axis AX AY AZ --point PX PY PZ] [--radius R] [--keep F] [common]\n"
    "                  SNAPSHOT.h5 [...]\n"
    "       gf-repose heap [--centre X Y Z] [--floor H] [--flank LO HI] [common] SNAPSHOT.h5 "
    "[...]\n"
    "  common: [-o PREFIX] [--gravity GX GY GZ] [--bin W] [--max-speed V] [--from T0] [--to T1]\n"
    "  The angle of repose of the free surface, per snapshot and averaged over them, in degrees\n"
    "  with its standard error; writes PREFIX.csv (per snapshot), PREFIX_profile.csv (the surface\n"
    "  profile of every snapshot) with the fitted line of each; default prefix repose. The\n"
    "  figure (the last snapshot's profile and line): python3 -m granflow.figures repose PREFIX\n"
    "  drum: particles projected on the drum's cross-section and binned across it (bins W wide,\n"
    "  default the mean particle diameter); a bin's top is its highest particle top; bins whose\n"
    "  top lies more than a diameter below the wall are the free surface; a straight line is\n"
    "  fitted to the bins in the central F (default 0.6) of the chord where the surface meets the\n"
    "  wall (the span of those bins at first, then where the fitted line crosses the wall, until\n"
    "  the bins fitted stay the same). The angle is positive\n"
    "  when the surface rises towards the side the bottom of a drum turning positively (right-\n"
    "  handed) about the axis moves to. The axis (AX AY AZ through PX PY PZ) and R default to the\n"
    "  first Domain/Mesh of shape cylinder in the configuration stored in the snapshot (if it\n"
    "  turns only about its own axis); R otherwise to the largest distance of a particle's\n"
    "  surface from the axis.\n"
    "  heap: heights along -gravity above the floor (H, default the lowest particle bottom)\n"
    "  against the distance from the vertical through X Y Z (default the particles' centre of\n"
    "  mass), binned from the axis; the bins whose top lies between LO and HI (default 0.2 and\n"
    "  0.8) of the heap's height are the flank, fitted with a straight line.\n"
    "  Gravity defaults to Physics.gravity of the stored configuration, else 0 0 -9.81. --from "
    "and\n"
    "  --to keep the snapshots whose time (s) lies in [T0, T1].";

static int die(const char *msg) {
    fprintf(stderr, "gf-repose: %s\n", msg);
    return 1;
}

typedef struct {
    double *x, *r, max_speed;
    size_t n, cap;
} bed;

static int gather(void *ctx, const gf_chunk *c) {
    bed *b = ctx;
    if (b->n + c->n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + c->n)
            cap *= 2;
        double *x = realloc(b->x, 3 * cap * sizeof *x), *r = x ? realloc(b->r, cap * sizeof *r) : 0;
        if (x)
            b->x = x;
        if (!x || !r)
            return -1;
        b->r = r;
        b->cap = cap;
    }
    for (size_t i = 0; i < c->n; ++i) {
        const double *v = c->v + 3 * i;
        /* Beads still falling onto a heap are not its surface. */
        if (!(sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) <= b->max_speed))
            continue;
        memcpy(b->x + 3 * b->n, c->x + 3 * i, 3 * sizeof *b->x);
        b->r[b->n++] = c->radius[i];
    }
    return 0;
}

/* The configuration stored in the snapshot (one fixed-length string), parsed; NULL if the file
 * has none or an empty one. A configuration that does not parse is an error (-1): the defaults
 * taken from it would be guesses. */
static int stored_config(const gf_snapshot *s, gf_config **out, char *err, size_t errsize) {
    *out = NULL;
    hid_t f = (hid_t)s->hid;
    if (H5Lexists(f, "configuration", H5P_DEFAULT) <= 0)
        return 0;
    hid_t d = H5Dopen2(f, "configuration", H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t t = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    size_t len = t >= 0 ? H5Tget_size(t) : 0;
    char *text = NULL;
    int rc = -1;
    if (sp >= 0 && t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
        H5Sget_simple_extent_npoints(sp) == 1 && len > 0 && len <= GF_CONFIG_MAX_BYTES) {
        text = calloc(len + 1, 1);
        rc = text && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0 ? 0 : -1;
    }
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    if (rc == 0 && text[0] && gf_config_parse(text, strlen(text), s->path, out) != GF_OK)
        rc = -1;
    free(text);
    if (rc)
        snprintf(err, errsize, "%s: the stored configuration is not one string that parses: %s",
                 s->path, gf_error_message());
    return rc;
}

/* Mode drum: the first cylinder mesh of the configuration as the axis and radius, if it stays
 * where it was configured (no velocity, turning only about its own axis). 1 when found. */
static int drum_from_config(gf_config *cfg, double point[3], double axis[3], double *radius) {
    gf_config_block *dom = gf_config_section(gf_config_root(cfg), "Domain");
    size_t nmesh = dom ? gf_config_section_count(dom, "Mesh") : 0;
    for (size_t k = 0; k < nmesh; ++k) {
        gf_config_block *m = gf_config_section_nth(dom, "Mesh", k);
        char shape[64];
        const double zero[3] = {0, 0, 0}, z[3] = {0, 0, 1};
        double v[3], w[3], pivot[3];
        if (gf_config_get_string(m, "shape", "", shape, sizeof shape) != GF_OK ||
            strcmp(shape, "cylinder") != 0)
            continue;
        if (gf_config_require_vec3(m, "centre", point) != GF_OK ||
            gf_config_get_vec3(m, "axis", z, axis) != GF_OK ||
            gf_config_require_double(m, "radius", radius) != GF_OK ||
            gf_config_get_vec3(m, "velocity", zero, v) != GF_OK ||
            gf_config_get_vec3(m, "angular_velocity", zero, w) != GF_OK ||
            gf_config_get_vec3(m, "pivot", point, pivot) != GF_OK)
            return 0;
        double la = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
        if (!(la > 0))
            return 0;
        double ax[3] = {axis[0] / la, axis[1] / la, axis[2] / la}, off[3], wa = 0, oa = 0;
        for (int i = 0; i < 3; ++i) {
            wa += w[i] * ax[i];
            off[i] = pivot[i] - point[i];
            oa += off[i] * ax[i];
        }
        double wperp = 0, operp = 0;
        for (int i = 0; i < 3; ++i) {
            wperp += (w[i] - wa * ax[i]) * (w[i] - wa * ax[i]);
            operp += (off[i] - oa * ax[i]) * (off[i] - oa * ax[i]);
        }
        /* A drum that moves or wobbles is elsewhere at the snapshot's time. */
        int turns = wa != 0 || wperp > 0;
        int still = v[0] == 0 && v[1] == 0 && v[2] == 0 && wperp <= 1e-12 * wa * wa &&
                    (!turns || operp <= 1e-12 * *radius * *radius);
        return still;
    }
    return 0;
}

typedef struct {
    int heap;
    double gravity[3], point[3], axis[3], radius, keep, bin, centre[3], floor, lo, hi, from, to,
        max_speed;
    int have_gravity, have_axis, have_point;
} options;

/* Fits one snapshot; *skipped when its time lies outside [from, to]. */
static int measure(const char *file, options *o, double *time, size_t *count,
                   gf_repose_profile *prof, gf_repose_fit *fit, int *skipped) {
    char err[1400];
    gf_snapshot s;
    *skipped = 0;
    if (gf_snapshot_open(&s, file, err, sizeof err))
        return die(err);
    *time = s.time;
    if (s.time < o->from || s.time > o->to) {
        gf_snapshot_close(&s);
        *skipped = 1;
        return 0;
    }
    gf_config *cfg = NULL;
    if (stored_config(&s, &cfg, err, sizeof err)) {
        gf_snapshot_close(&s);
        return die(err);
    }
    double gravity[3] = {0, 0, -9.81}, point[3], axis[3], radius = o->radius;
    memcpy(point, o->point, sizeof point);
    memcpy(axis, o->axis, sizeof axis);
    if (o->have_gravity)
        memcpy(gravity, o->gravity, sizeof gravity);
    else if (cfg) {
        const double def[3] = {0, 0, -9.81};
        if (gf_config_get_vec3(gf_config_section(gf_config_root(cfg), "Physics"), "gravity", def,
                               gravity) != GF_OK) {
            snprintf(err, sizeof err, "%s: Physics.gravity of the stored configuration: %s", file,
                     gf_error_message());
            gf_config_destroy(cfg);
            gf_snapshot_close(&s);
            return die(err);
        }
    }
    if (!o->heap && !(o->have_axis && o->have_point)) {
        double cp[3], ca[3], cr = 0;
        if (!cfg || !drum_from_config(cfg, cp, ca, &cr)) {
            snprintf(err, sizeof err,
                     "%s: no cylinder mesh turning about its own axis in the stored "
                     "configuration: give the drum's axis with --axis and --point",
                     file);
            gf_config_destroy(cfg);
            gf_snapshot_close(&s);
            return die(err);
        }
        if (!o->have_axis)
            memcpy(axis, ca, sizeof axis);
        if (!o->have_point)
            memcpy(point, cp, sizeof point);
        if (!(radius > 0))
            radius = cr;
    }
    gf_config_destroy(cfg);
    bed b = {.max_speed = o->max_speed};
    snprintf(err, sizeof err, "%s: out of memory", file); /* gather's only failure */
    int rc = gf_snapshot_scan(&s, gather, &b, err, sizeof err);
    gf_snapshot_close(&s);
    if (rc) {
        free(b.x);
        free(b.r);
        return die(err); /* names the file */
    }
    if (b.n == 0) {
        snprintf(err, sizeof err, "no particles%s",
                 isinf(o->max_speed) ? "" : " as slow as --max-speed");
        rc = -1;
    } else {
        if (o->heap) {
            gf_repose_heap_options h = {.floor = o->floor, .bin = o->bin, .lo = o->lo, .hi = o->hi};
            memcpy(h.gravity, gravity, sizeof h.gravity);
            memcpy(h.centre, o->centre, sizeof h.centre);
            rc = gf_repose_heap(b.n, b.x, b.r, &h, prof, fit, err, sizeof err);
        } else {
            gf_repose_drum_options d = {.radius = radius, .bin = o->bin, .keep = o->keep};
            memcpy(d.gravity, gravity, sizeof d.gravity);
            memcpy(d.point, point, sizeof d.point);
            memcpy(d.axis, axis, sizeof d.axis);
            rc = gf_repose_drum(b.n, b.x, b.r, &d, prof, fit, err, sizeof err);
        }
    }
    *count = b.n;
    free(b.x);
    free(b.r);
    if (rc)
        fprintf(stderr, "gf-repose: %s: %s\n", file, err);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *prefix = "repose";
    options o = {.keep = 0.6,
                 .lo = 0.2,
                 .hi = 0.8,
                 .floor = NAN,
                 .from = -INFINITY,
                 .to = INFINITY,
                 .max_speed = INFINITY};
    o.centre[0] = o.centre[1] = o.centre[2] = NAN;
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        puts(usage);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "drum") && strcmp(argv[1], "heap"))) {
        if (argc >= 2)
            fprintf(stderr, "gf-repose: the first argument must be drum or heap, got '%s'\n",
                    argv[1]);
        return die(usage);
    }
    o.heap = !strcmp(argv[1], "heap");
    const char *T = "gf-repose";
    int first = 2;
    for (; first < argc && argv[first][0] == '-'; ++first) {
        const char *a = argv[first];
        int drum_only = !strcmp(a, "--axis") || !strcmp(a, "--point") || !strcmp(a, "--radius") ||
                        !strcmp(a, "--keep");
        int heap_only = !strcmp(a, "--centre") || !strcmp(a, "--floor") || !strcmp(a, "--flank");
        if ((drum_only && o.heap) || (heap_only && !o.heap)) {
            fprintf(stderr, "gf-repose: %s is an option of gf-repose %s, not of %s\n", a,
                    o.heap ? "drum" : "heap", argv[1]);
            return 1;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts(usage);
            return 0;
        } else if (!strcmp(a, "-o") && first + 1 < argc) {
            prefix = argv[++first];
        } else if (!strcmp(a, "--gravity")) {
            if (gf_cli_numbers(T, argc, argv, &first, 3, o.gravity))
                return 1;
            o.have_gravity = 1;
        } else if (!strcmp(a, "--axis")) {
            if (gf_cli_numbers(T, argc, argv, &first, 3, o.axis))
                return 1;
            if (o.axis[0] == 0 && o.axis[1] == 0 && o.axis[2] == 0)
                return die("--axis must not be the zero vector");
            o.have_axis = 1;
        } else if (!strcmp(a, "--point")) {
            if (gf_cli_numbers(T, argc, argv, &first, 3, o.point))
                return 1;
            o.have_point = 1;
        } else if (!strcmp(a, "--centre")) {
            if (gf_cli_numbers(T, argc, argv, &first, 3, o.centre))
                return 1;
        } else if (!strcmp(a, "--radius")) {
            if (gf_cli_positive(T, argc, argv, &first, &o.radius))
                return 1;
        } else if (!strcmp(a, "--bin")) {
            if (gf_cli_positive(T, argc, argv, &first, &o.bin))
                return 1;
        } else if (!strcmp(a, "--keep")) {
            if (gf_cli_positive(T, argc, argv, &first, &o.keep))
                return 1;
            if (o.keep > 1)
                return die("--keep must be a fraction in (0, 1]");
        } else if (!strcmp(a, "--floor")) {
            if (gf_cli_numbers(T, argc, argv, &first, 1, &o.floor))
                return 1;
        } else if (!strcmp(a, "--flank")) {
            double f[2];
            if (gf_cli_numbers(T, argc, argv, &first, 2, f))
                return 1;
            if (!(f[0] >= 0 && f[1] > f[0] && f[1] <= 1))
                return die("--flank LO HI needs 0 <= LO < HI <= 1");
            o.lo = f[0];
            o.hi = f[1];
        } else if (!strcmp(a, "--max-speed")) {
            if (gf_cli_positive(T, argc, argv, &first, &o.max_speed))
                return 1;
        } else if (!strcmp(a, "--from")) {
            if (gf_cli_numbers(T, argc, argv, &first, 1, &o.from))
                return 1;
        } else if (!strcmp(a, "--to")) {
            if (gf_cli_numbers(T, argc, argv, &first, 1, &o.to))
                return 1;
        } else {
            fprintf(stderr, "gf-repose: unknown or incomplete option '%s'\n", a);
            return 1;
        }
    }
    if (first >= argc)
        return die(usage);
    if (o.have_axis != o.have_point && !o.heap)
        fputs("gf-repose: note: the part of the axis not given comes from the stored "
              "configuration\n",
              stderr);
    if (o.to < o.from)
        return die("--to must not be earlier than --from");
    char path[1100];
    snprintf(path, sizeof path, "%s.csv", prefix);
    FILE *csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s_profile.csv", prefix);
    FILE *pcsv = csv ? fopen(path, "w") : NULL;
    if (!csv || !pcsv) {
        if (csv)
            fclose(csv);
        fprintf(stderr, "gf-repose: cannot write %s (-o)\n", path);
        return 1;
    }
    fprintf(csv, "# gf-repose %s: angle of repose (degrees) per snapshot\n", argv[1]);
    /* The fitted line (height = intercept + slope x over from .. to) last, for figures drawn
     * elsewhere (python3 -m granflow.figures repose). */
    fprintf(csv, o.heap ? "file,time,angle_deg,stderr_deg,bins,particles,height,centre_x,"
                          "centre_y,centre_z,fit_from,fit_to,fit_intercept,fit_slope\n"
                        : "file,time,angle_deg,stderr_deg,bins,particles,radius,fit_from,fit_to,"
                          "fit_intercept,fit_slope\n");
    fprintf(pcsv, "# gf-repose %s: highest particle top per bin; used: the bin was fitted\n",
            argv[1]);
    fprintf(pcsv, "snapshot,%s,top,used\n", o.heap ? "distance" : "across");
    int used = 0, rc = 0;
    double sum = 0, sum2 = 0, sum_se = 0;
    for (int k = first; k < argc && rc == 0; ++k) {
        double time;
        size_t n;
        int skipped;
        gf_repose_profile p;
        gf_repose_fit fit;
        if (measure(argv[k], &o, &time, &n, &p, &fit, &skipped)) {
            rc = 1;
            break;
        }
        if (skipped)
            continue;
        printf("%s: t = %g s, %zu particles: %.2f +- %.2f deg (%d bins over %.4g .. %.4g m)\n",
               argv[k], time, n, fit.angle, fit.se_angle, fit.bins, fit.from, fit.to);
        if (o.heap)
            fprintf(csv, "%s,%.9g,%.6g,%.6g,%d,%zu,%.6g,%.6g,%.6g,%.6g,", argv[k], time, fit.angle,
                    fit.se_angle, fit.bins, n, fit.height, fit.centre[0], fit.centre[1],
                    fit.centre[2]);
        else
            fprintf(csv, "%s,%.9g,%.6g,%.6g,%d,%zu,%.6g,", argv[k], time, fit.angle, fit.se_angle,
                    fit.bins, n, fit.radius);
        fprintf(csv, "%.9g,%.9g,%.9g,%.9g\n", fit.from, fit.to, fit.intercept, fit.slope);
        for (int b = 0; b < p.nbins; ++b)
            if (!isnan(p.top[b]))
                fprintf(pcsv, "%d,%.6g,%.6g,%d\n", used, p.lo + (b + 0.5) * p.width, p.top[b],
                        p.used[b]);
        sum += fit.angle;
        sum2 += fit.angle * fit.angle;
        sum_se += fit.se_angle;
        used++;
        gf_repose_profile_free(&p);
    }
    fclose(csv);
    fclose(pcsv);
    if (rc == 0 && used == 0)
        rc = die("no snapshot has a time within --from .. --to");
    if (rc == 0) {
        double mean = sum / used;
        if (used > 1) {
            double sd = sqrt(fmax(0.0, (sum2 - used * mean * mean) / (used - 1)));
            printf("mean over %d snapshots: %.2f +- %.2f deg (standard error of the mean; the "
                   "fits' mean standard error %.2f deg)\n",
                   used, mean, sd / sqrt(used), sum_se / used);
        } else {
            printf("mean over 1 snapshot: %.2f +- %.2f deg (the fit's standard error)\n", mean,
                   sum_se);
        }
        printf("%s.csv, %s_profile.csv (the figure: python3 -m granflow.figures repose %s%s)\n",
               prefix, prefix, prefix, o.heap ? "" : " --drum");
    }
    return rc;
}
