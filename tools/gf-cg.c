/* gf-cg: coarse-grained continuum fields of granflow snapshots (lib/cg.h says what and how):
 * density, solid fraction, velocity, kinetic and contact stress, with a Gaussian of width W,
 * along a profile or on a grid in a plane, averaged over the snapshots given.
 *
 *   mpirun -n 4 gf-cg --width W (--profile x|y|z | --plane xy|xz|yz [--at C]) [options] S.h5 ...
 *
 * The snapshots are shared among the ranks (each adds its own; the sums are reduced), so a
 * time average over many snapshots runs in parallel. The contact stress needs contact lists in
 * the snapshots (Output.contacts true). Writes PREFIX.csv: the point's coordinates, then
 * density (kg/m^3), solid_fraction, vx, vy, vz (m/s), kinetic_ij and contact_ij (Pa, positive in
 * compression, row-major) and pressure (the trace of their sum over 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cg.h"
#include "lib/cli.h"
#include "lib/snapshot.h"
#include "par/par.h"

static const char usage[] =
    "usage: gf-cg --width W (--profile x|y|z | --plane xy|xz|yz [--at C]) [--n N] [--nx N]\n"
    "             [--ny N] [--range A0 A1 [B0 B1]] [--cutoff K] [-o PREFIX] SNAPSHOT.h5 [...]\n"
    "  coarse-grained fields with a Gaussian of width W (m), cut off at K widths (default 6: the\n"
    "  tails left out hold 2e-9 of its weight):\n"
    "  along a profile (--profile z: N points across the box along z, default 100, averaged\n"
    "  over x and y), or on a grid in a plane (--plane xy: averaged over z; with --at C, the\n"
    "  plane z = C), N along the longer side (default 100) or --nx/--ny. --range limits the\n"
    "  points to [A0, A1] (and [B0, B1] along the plane's second axis). Averaged over the\n"
    "  snapshots, shared among the ranks of an MPI job. Writes PREFIX.csv (default cg):\n"
    "  coordinates, density, solid_fraction, vx, vy, vz, kinetic_ij, contact_ij (positive in\n"
    "  compression) and pressure. The contact stress needs Output.contacts true.";

typedef struct {
    double width, cutoff, at, range[4];
    int have_at, have_range, nrange, n, nx, ny, axis[2], naxes;
    const char *prefix;
} options;

static int parse_axes(const char *s, int *axis, int n) {
    if ((int)strlen(s) != n)
        return -1;
    for (int k = 0; k < n; ++k) {
        if (s[k] < 'x' || s[k] > 'z')
            return -1;
        axis[k] = s[k] - 'x';
    }
    return n == 2 && axis[0] == axis[1] ? -1 : 0;
}

static int is_number(const char *s) {
    char *end = NULL;
    double v = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(v);
}

/* Reads the options; returns the index of the first snapshot argument, -2 for --help, or -1 with
 * a message (printed by the option readers as `tool`, or in err; a NULL tool prints nothing). */
static int parse(const char *tool, int argc, char **argv, options *o, char *err, size_t errsize) {
    memset(o, 0, sizeof *o);
    o->cutoff = 6.0;
    o->prefix = "cg";
    int k = 1;
    for (; k < argc && argv[k][0] == '-' && argv[k][1] != '\0'; ++k) {
        const char *a = argv[k];
        if (strcmp(a, "-o") == 0 && k + 1 < argc) {
            o->prefix = argv[++k];
        } else if (strcmp(a, "--width") == 0) {
            if (gf_cli_positive(tool, argc, argv, &k, &o->width))
                return -1;
        } else if (strcmp(a, "--cutoff") == 0) {
            if (gf_cli_positive(tool, argc, argv, &k, &o->cutoff))
                return -1;
            if (o->cutoff < 1.0)
                return snprintf(err, errsize, "--cutoff wants a number of widths >= 1"), -1;
        } else if ((strcmp(a, "--profile") == 0 || strcmp(a, "--plane") == 0) && k + 1 < argc) {
            int n = a[3] == 'r' ? 1 : 2;
            if (o->naxes || parse_axes(argv[++k], o->axis, n))
                return snprintf(err, errsize,
                                "--profile wants one of x, y, z, --plane two distinct axes (xy, "
                                "xz, yz), and only one of them is given"),
                       -1;
            o->naxes = n;
        } else if (strcmp(a, "--at") == 0) {
            if (gf_cli_numbers(tool, argc, argv, &k, 1, &o->at))
                return -1;
            o->have_at = 1;
        } else if (strcmp(a, "--n") == 0 || strcmp(a, "--nx") == 0 || strcmp(a, "--ny") == 0) {
            int *to = a[3] == 'x' ? &o->nx : a[3] == 'y' ? &o->ny : &o->n;
            if (gf_cli_int_in(tool, argc, argv, &k, 1, 100000, to))
                return -1;
        } else if (strcmp(a, "--range") == 0) {
            /* two numbers, or four for a plane: as many as follow (a file name is none) */
            o->nrange = k + 4 < argc && is_number(argv[k + 3]) && is_number(argv[k + 4]) ? 4 : 2;
            if (gf_cli_numbers(tool, argc, argv, &k, o->nrange, o->range))
                return -1;
            o->have_range = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return -2;
        } else {
            return snprintf(err, errsize, "unknown or incomplete option '%s'\n%s", a, usage), -1;
        }
    }
    if (!(o->width > 0.0))
        return snprintf(err, errsize, "--width is required\n%s", usage), -1;
    if (!o->naxes)
        return snprintf(err, errsize, "one of --profile and --plane is required\n%s", usage), -1;
    if (o->have_at && o->naxes != 2)
        return snprintf(err, errsize, "--at goes with --plane"), -1;
    if (o->nrange == 4 && o->naxes != 2)
        return snprintf(err, errsize, "a profile takes --range A0 A1"), -1;
    if (k >= argc)
        return snprintf(err, errsize, "no snapshot given\n%s", usage), -1;
    return k;
}

/* The grid of the fields over the box of the first snapshot. */
static int make_grid(const options *o, const gf_snapshot *s, gf_cg *c, char *err, size_t errsize) {
    int resolved[3] = {0, 0, 0}, n[3] = {1, 1, 1};
    double from[3], to[3];
    for (int a = 0; a < 3; ++a) {
        from[a] = s->box_min[a];
        to[a] = s->box_max[a];
    }
    for (int k = 0; k < o->naxes; ++k) {
        int a = o->axis[k];
        resolved[a] = 1;
        if (o->have_range && 2 * k + 1 < o->nrange) {
            from[a] = o->range[2 * k];
            to[a] = o->range[2 * k + 1];
        }
        if (!(to[a] > from[a]))
            return snprintf(err, errsize, "--range: %g .. %g is empty", from[a], to[a]), -1;
    }
    if (o->naxes == 1) {
        n[o->axis[0]] = o->n ? o->n : 100;
    } else {
        double w0 = to[o->axis[0]] - from[o->axis[0]], w1 = to[o->axis[1]] - from[o->axis[1]];
        int cells = o->n ? o->n : 100;
        int n0 = w0 >= w1 ? cells : (int)fmax(1.0, round(cells * w0 / w1));
        int n1 = w1 >= w0 ? cells : (int)fmax(1.0, round(cells * w1 / w0));
        n[o->axis[0]] = o->nx ? o->nx : n0;
        n[o->axis[1]] = o->ny ? o->ny : n1;
    }
    if (o->have_at) {
        int third = 3 - o->axis[0] - o->axis[1];
        resolved[third] = 1;
        from[third] = to[third] = o->at;
    }
    if (gf_cg_init(c, resolved, n, from, to, s->box_min, s->box_max, s->periodic, o->width,
                   o->cutoff))
        return snprintf(err, errsize, "cannot make a grid of %d x %d x %d points", n[0], n[1],
                        n[2]),
               -1;
    return 0;
}

/* Adds one snapshot's bodies and contacts. */
static int add_snapshot(gf_cg *c, const gf_snapshot *s, int *warned, char *err, size_t errsize) {
    size_t n = 0, nm = 0, rows = 0;
    void *x = NULL, *v = NULL, *m = NULL, *mat = NULL, *rad = NULL, *shape = NULL, *dens = NULL;
    int rc = gf_snapshot_read_table(s, "/particles/position", 0, 3, &n, &x, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/particles/velocity", 0, 3, &rows, &v, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/particles/mass", 0, 1, &rows, &m, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/particles/radius", 0, 1, &rows, &rad, err, errsize);
    rc =
        rc ? rc : gf_snapshot_read_table(s, "/particles/material", 1, 1, &rows, &mat, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/particles/shape", 1, 1, &rows, &shape, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/materials/density", 0, 1, &nm, &dens, err, errsize);
    double *vol = rc ? NULL : malloc((n + 1) * sizeof *vol);
    if (!rc && !vol)
        rc = -1, snprintf(err, errsize, "out of memory");
    for (size_t i = 0; !rc && i < n; ++i) {
        int64_t k = ((int64_t *)mat)[i];
        double mi = ((double *)m)[i], ri = ((double *)rad)[i];
        if (k < 0 || (size_t)k >= nm || !(((double *)dens)[k] > 0.0)) {
            rc = -1;
            snprintf(err, errsize, "%s: particle row %zu has material %lld of %zu", s->path, i,
                     (long long)k, nm);
        }
        /* A fixed body (mass 0) carries no mass or momentum; a fixed sphere its volume. */
        vol[i] = mi > 0.0                     ? mi / ((double *)dens)[k]
                 : ((int64_t *)shape)[i] == 0 ? 4.0 / 3.0 * M_PI * ri * ri * ri
                                              : 0.0;
    }
    if (!rc)
        gf_cg_add_bodies(c, n, x, v, m, vol);
    free(x), free(v), free(m), free(mat), free(rad), free(shape), free(dens), free(vol);
    if (rc)
        return rc;
    if (!s->has_contacts) {
        if (!*warned)
            fprintf(stderr,
                    "gf-cg: %s has no contact list: no contact stress (write snapshots with "
                    "Output.contacts true)\n",
                    s->path);
        *warned = 1;
        return 0;
    }
    if (!(s->dt > 0.0))
        return snprintf(err, errsize, "%s: no time step (attribute dt): no contact forces",
                        s->path),
               -1;
    size_t nc = (size_t)s->ncontacts, r2 = 0, r3 = 0;
    void *ends = NULL, *nrm = NULL, *tan = NULL;
    double *ni = NULL, *f = NULL, *x1 = NULL, *x2 = NULL;
    rc = gf_snapshot_read_contacts(s, "normal_impulse", &ni, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/contacts/position", 0, 3, &r2, &ends, err, errsize);
    rc = rc ? rc : gf_snapshot_read_table(s, "/contacts/normal", 0, 3, &r3, &nrm, err, errsize);
    rc = rc ? rc
            : gf_snapshot_read_table(s, "/contacts/tangential_impulse", 0, 3, &r3, &tan, err,
                                     errsize);
    if (!rc && r2 != 2 * nc)
        rc = -1, snprintf(err, errsize, "%s: /contacts/position holds %zu rows for %zu contacts",
                          s->path, r2, nc);
    if (!rc) {
        f = malloc((3 * nc + 1) * sizeof *f);
        x1 = malloc((3 * nc + 1) * sizeof *x1);
        x2 = malloc((3 * nc + 1) * sizeof *x2);
        if (!f || !x1 || !x2)
            rc = -1, snprintf(err, errsize, "out of memory");
    }
    for (size_t j = 0; !rc && j < nc; ++j)
        for (int a = 0; a < 3; ++a) {
            /* the impulses of the last step over its length: the force on the first body */
            f[3 * j + a] =
                (ni[j] * ((double *)nrm)[3 * j + a] + ((double *)tan)[3 * j + a]) / s->dt;
            x1[3 * j + a] = ((double *)ends)[6 * j + a];
            x2[3 * j + a] = ((double *)ends)[6 * j + 3 + a];
        }
    if (!rc)
        gf_cg_add_contacts(c, nc, x1, x2, f);
    free(ni), free(ends), free(nrm), free(tan), free(f), free(x1), free(x2);
    return rc;
}

static int write_csv(const gf_cg *c, const options *o, char *err, size_t errsize) {
    char path[1100];
    snprintf(path, sizeof path, "%s.csv", o->prefix);
    FILE *out = fopen(path, "w");
    if (!out)
        return snprintf(err, errsize, "cannot write %s", path), -1;
    static const char *const xyz = "xyz";
    for (int a = 0; a < 3; ++a)
        if (c->resolved[a] && c->n[a] > 1)
            fprintf(out, "%c,", xyz[a]);
    if (o->have_at)
        fprintf(out, "%c,", xyz[3 - o->axis[0] - o->axis[1]]);
    fprintf(out, "density,solid_fraction,vx,vy,vz");
    for (int t = 0; t < 2; ++t)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                fprintf(out, ",%s_%c%c", t ? "contact" : "kinetic", xyz[i], xyz[j]);
    fprintf(out, ",pressure\n");
    for (size_t k = 0; k < c->npoints; ++k) {
        double r[3], rho, phi, v[3], sk[9], sc[9];
        gf_cg_point(c, k, r);
        gf_cg_result(c, k, &rho, &phi, v, sk, sc);
        for (int a = 0; a < 3; ++a)
            if (c->resolved[a] && c->n[a] > 1)
                fprintf(out, "%.9g,", r[a]);
        if (o->have_at)
            fprintf(out, "%.9g,", o->at);
        fprintf(out, "%.9g,%.9g,%.9g,%.9g,%.9g", rho, phi, v[0], v[1], v[2]);
        for (int i = 0; i < 9; ++i)
            fprintf(out, ",%.9g", sk[i]);
        for (int i = 0; i < 9; ++i)
            fprintf(out, ",%.9g", sc[i]);
        fprintf(out, ",%.9g\n", (sk[0] + sk[4] + sk[8] + sc[0] + sc[4] + sc[8]) / 3.0);
    }
    int bad = ferror(out);
    if (fclose(out) != 0 || bad)
        return snprintf(err, errsize, "cannot write %s", path), -1;
    return 0;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK) {
        fprintf(stderr, "gf-cg: %s\n", gf_error_message());
        return 1;
    }
    char err[4096] = "";
    options o;
    int first = parse(par.rank == 0 ? "gf-cg" : NULL, argc, argv, &o, err, sizeof err);
    int rc = first < 0;
    if (first == -2) { /* --help: the usage on stdout, success */
        if (par.rank == 0)
            puts(usage);
        gf_par_finalize();
        return 0;
    }
    gf_cg c;
    memset(&c, 0, sizeof c);
    /* Every rank checks the first snapshot and makes the same grid from its box. */
    gf_snapshot s0;
    memset(&s0, 0, sizeof s0);
    if (!rc)
        rc = gf_snapshot_open(&s0, argv[first], err, sizeof err) ||
             make_grid(&o, &s0, &c, err, sizeof err);
    /* The options and the first snapshot are every rank's alike: rank 0 names their faults. */
    const int shared = rc;
    int warned = 0, nsnap = rc ? 0 : argc - first;
    for (int k = par.rank; !rc && k < nsnap; k += par.size) {
        gf_snapshot s;
        rc = gf_snapshot_open(&s, argv[first + k], err, sizeof err);
        for (int a = 0; !rc && a < 3; ++a)
            if (s.box_min[a] != s0.box_min[a] || s.box_max[a] != s0.box_max[a])
                rc = -1, snprintf(err, sizeof err, "%s has another box than %s", s.path, s0.path);
        if (!rc) {
            rc = add_snapshot(&c, &s, &warned, err, sizeof err);
            c.samples++;
        }
        gf_snapshot_close(&s);
    }
    gf_snapshot_close(&s0);
    if (rc && err[0] && (!shared || par.rank == 0))
        fprintf(stderr, "gf-cg: %s\n", err);
    /* Every rank's sums to rank 0, once all have succeeded. */
    gf_status st = gf_par_agree(&par, rc ? GF_ERR_INPUT : GF_OK, NULL);
    double *const sums[5] = {c.mass, c.volume, c.momentum, c.second, c.contact};
    const size_t per[5] = {1, 1, 3, 9, 9};
    for (int k = 0; k < 5 && st == GF_OK; ++k)
        for (size_t at = 0; at < per[k] * c.npoints && st == GF_OK; at += 1 << 24) {
            size_t len = per[k] * c.npoints - at;
            st = gf_par_allreduce_double(&par, sums[k] + at, (int)(len < 1u << 24 ? len : 1u << 24),
                                         GF_PAR_SUM);
        }
    int64_t samples = c.samples;
    if (st == GF_OK)
        st = gf_par_allreduce_i64(&par, &samples, 1, GF_PAR_SUM);
    c.samples = (int)samples;
    if (st == GF_OK && par.rank == 0) {
        rc = write_csv(&c, &o, err, sizeof err);
        if (rc)
            fprintf(stderr, "gf-cg: %s\n", err);
        else
            printf("gf-cg: %d snapshot(s) on %d rank(s), width %g m, %zu points: %s.csv\n",
                   c.samples, par.size, o.width, c.npoints, o.prefix);
    }
    st = gf_par_agree(&par, st == GF_OK && rc ? GF_ERR_IO : st, NULL);
    gf_cg_free(&c);
    gf_par_finalize();
    return st == GF_OK ? 0 : 1;
}
