/* Particle files: the Particles block, the CSV reader, the checks both formats share, and the
 * overlap checks against the particles placed after them. The HDF5 rows are read by
 * the h5 module (gf_h5_read_particles); the simulation sends the particles to their owners. */
#include "sim/particle_file.h"

#include <ctype.h>
#include <float.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include <strings.h>

#include "scenario/bodies.h"
#include "granflow/collide.h"
#include "contact/contact.h"
#include "par/decomp.h"
#include "h5/particle_rows.h"
#include "core/log.h"
#include "core/vec.h"

#define NAME_LEN 64
#define WHERE_LEN 1200

/* ------------------------------------------------------------------------------------------ */
/* The Particles block                                                                        */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

gf_status gf_particle_file_configure(gf_particle_file *pf, gf_config_block *root,
                                     const gf_materials *m) {
    memset(pf, 0, sizeof *pf);
    size_t nb = gf_config_section_count(root, "Particles");
    if (nb == 0)
        return GF_OK;
    if (nb > 1) {
        char where[512];
        gf_config_block_where(gf_config_section_nth(root, "Particles", 1), where, sizeof where);
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: a second Particles block: a run starts from one particle file", where);
    }
    gf_config_block *b = gf_config_section(root, "Particles");
    if (!b)
        return gf_error_status();
    gf_config_block_where(b, pf->where, sizeof pf->where);
    GF_TRY(gf_config_require_string(b, "file", pf->path, sizeof pf->path));
    if (!pf->path[0])
        return GF_ERROR(GF_ERR_INPUT, "%s: Particles.file is empty", pf->where);
    char format[16];
    GF_TRY(gf_config_get_string(b, "format", "auto", format, sizeof format));
    GF_TRY(gf_materials_lookup(m, b, "material", &pf->material));
    if (strcmp(format, "hdf5") == 0) {
        pf->format = GF_PARTICLE_FILE_HDF5;
    } else if (strcmp(format, "csv") == 0) {
        pf->format = GF_PARTICLE_FILE_CSV;
    } else if (strcmp(format, "auto") == 0) {
        if (ends_with(pf->path, ".h5") || ends_with(pf->path, ".hdf5"))
            pf->format = GF_PARTICLE_FILE_HDF5;
        else if (ends_with(pf->path, ".csv"))
            pf->format = GF_PARTICLE_FILE_CSV;
        else
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: the format of Particles.file '%s' is not known from its name "
                            "(.h5, .hdf5 or .csv): give Particles.format hdf5 or csv",
                            pf->where, pf->path);
    } else {
        return GF_ERROR(GF_ERR_INPUT, "%s: Particles.format '%s' is not one of auto, hdf5, csv",
                        pf->where, format);
    }
    pf->root = root;
    pf->enabled = 1;
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Checks both formats share                                                                  */

/* The shape of a particle: valid for the configuration (clump indices are its Clump blocks). */
static gf_status check_shape(const gf_sim *sim, const gf_shape *s, const char *where) {
    if (s->type < 0 || s->type >= GF_SHAPE_COUNT || gf_shape_is_static(s->type))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: shape %d is not one of 0 sphere, 1 box, 2 capsule, 3 cylinder, "
                        "4 clump",
                        where, (int)s->type);
    if (s->type == GF_SHAPE_CLUMP && (s->clump < 0 || (size_t)s->clump >= sim->clumps.count))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: clump template %d, but the configuration has %zu Clump block%s (a "
                        "clump index counts the Clump blocks in their order, from 0)",
                        where, (int)s->clump, sim->clumps.count, sim->clumps.count == 1 ? "" : "s");
    return gf_error_context(gf_shape_check(s, &sim->clumps), "%s", where);
}

/* A particle with its shape, mass and material set: its id, orientation and velocities checked,
 * its centre brought into the box (wrapped along periodic axes) and checked against the walls
 * and obstacles. `where` names it in messages. */
static gf_status place_record(const gf_sim *sim, const gf_decomp *wrap, gf_particle *rec,
                              const char *where) {
    if (rec->id < 0 || rec->id >= GF_PARTICLE_FILE_MAX_ID)
        return GF_ERROR(GF_ERR_INPUT, "%s: id %lld is outside [0, 2^62)", where,
                        (long long)rec->id);
    for (int d = 0; d < 3; ++d)
        if (!isfinite(rec->x[d]) || !isfinite(rec->v[d]) || !isfinite(rec->w[d]))
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: particle %lld has a non-finite position or velocity (%g %g %g, "
                            "%g %g %g, %g %g %g)",
                            where, (long long)rec->id, rec->x[0], rec->x[1], rec->x[2], rec->v[0],
                            rec->v[1], rec->v[2], rec->w[0], rec->w[1], rec->w[2]);
    double qn = sqrt(rec->q[0] * rec->q[0] + rec->q[1] * rec->q[1] + rec->q[2] * rec->q[2] +
                     rec->q[3] * rec->q[3]);
    if (!(fabs(qn - 1.0) <= GF_PARTICLE_FILE_QUAT_TOL))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: particle %lld has the orientation %g %g %g %g of norm %g: a rotation "
                        "is a unit quaternion (w, x, y, z)",
                        where, (long long)rec->id, rec->q[0], rec->q[1], rec->q[2], rec->q[3], qn);
    /* A unit quaternion to rounding is kept as it is: a snapshot comes back bit for bit. */
    if (fabs(qn - 1.0) > 1e-12)
        for (int c = 0; c < 4; ++c)
            rec->q[c] /= qn;
    gf_decomp_wrap(wrap, rec->x);
    for (int d = 0; d < 3; ++d) {
        int out = sim->periodic[d] ? !(rec->x[d] >= sim->lo[d] && rec->x[d] < sim->hi[d])
                                   : !(rec->x[d] >= sim->lo[d] && rec->x[d] <= sim->hi[d]);
        if (out)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s: particle %lld is centred at %c = %g, outside the domain [%g, %g]",
                            where, (long long)rec->id, "xyz"[d], rec -> x[d], sim -> lo[d],
                            sim -> hi[d]);
    }
    double depth = 0.0;
    int body = -1;
    gf_body_pose pose = {&rec->shape,
                         &sim->clumps,
                         {rec->x[0], rec->x[1], rec->x[2]},
                         {rec->q[0], rec->q[1], rec->q[2], rec->q[3]}};
    GF_TRY(gf_error_context(gf_bodies_wall_overlap(&pose, &sim->walls, &depth, &body),
                            "%s: particle %lld", where, (long long)rec->id));
    if (depth > GF_PARTICLE_FILE_OVERLAP * rec->radius) {
        char what[256];
        gf_walls_describe(&sim->walls, body, what, sizeof what);
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: particle %lld (a %s at %g %g %g) overlaps %s by %g m, more than %g%% "
                        "of its bounding radius %g m",
                        where, (long long)rec->id, gf_shape_name((gf_shape_type)rec->shape.type),
                        rec->x[0], rec->x[1], rec->x[2], what, depth,
                        100.0 * GF_PARTICLE_FILE_OVERLAP, rec->radius);
    }
    return GF_OK;
}

/* A body of positive density must have a mass and moments of inertia a double holds: a radius
 * of 1e-310 m makes its mass underflow to 0, which would turn it silently into a body of
 * infinite mass. */
static gf_status check_mass(const gf_particle *rec, double density, const char *where) {
    if (!(density > 0.0))
        return GF_OK;
    int ok = isfinite(rec->inv_mass) && rec->inv_mass > 0.0 && 1.0 / rec->inv_mass >= DBL_MIN;
    for (int c = 0; c < 3; ++c)
        ok = ok && isfinite(rec->inv_inertia[c]) && rec->inv_inertia[c] > 0.0;
    if (!ok)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s: particle %lld (bounding radius %g m) is too small for its mass and "
                        "moments of inertia to be represented (inverse mass %g 1/kg)",
                        where, (long long)rec->id, rec->radius, rec->inv_mass);
    return GF_OK;
}

/* A row of a snapshot or checkpoint as a particle of this configuration. */
static gf_status from_snapshot_row(const gf_particle_file *pf, const gf_sim *sim,
                                   const gf_decomp *wrap, const gf_particle *row, double mass,
                                   gf_particle *rec) {
    char where[WHERE_LEN];
    snprintf(where, sizeof where, "'%s': particle %lld", pf->path, (long long)row->id);
    if (row->material < 0 || row->material >= sim->materials.count)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s has material %d, but the configuration defines %d material%s (a "
                        "material index counts the configuration's materials, 0 the default)",
                        where, (int)row->material, sim->materials.count,
                        sim->materials.count == 1 ? "" : "s");
    GF_TRY(check_shape(sim, &row->shape, where));
    if (!(isfinite(mass) && mass >= 0.0))
        return GF_ERROR(GF_ERR_INPUT, "%s has mass %g: a mass is finite and >= 0 (0: infinite)",
                        where, mass);
    /* Mass from this configuration's density: the file's material may weigh differently now. */
    double density = mass > 0.0 ? sim->materials.density[row->material] : 0.0;
    gf_particle_make(rec, row->id, row->x, &row->shape, &sim->clumps, density, row->material);
    GF_TRY(check_mass(rec, density, where));
    memcpy(rec->q, row->q, sizeof rec->q);
    memcpy(rec->v, row->v, sizeof rec->v);
    memcpy(rec->w, row->w, sizeof rec->w);
    snprintf(where, sizeof where, "'%s'", pf->path);
    return place_record(sim, wrap, rec, where);
}

/* ------------------------------------------------------------------------------------------ */
/* CSV                                                                                        */

enum {
    C_ID,
    C_X,
    C_Y,
    C_Z,
    C_VX,
    C_VY,
    C_VZ,
    C_WX,
    C_WY,
    C_WZ,
    C_QW,
    C_QX,
    C_QY,
    C_QZ,
    C_SHAPE,
    C_RADIUS,
    C_HX,
    C_HY,
    C_HZ,
    C_HALF_LENGTH,
    C_CLUMP,
    C_SCALE,
    C_MATERIAL,
    C_MOTION,
    C_COUNT
};

static const char *const column_name[C_COUNT] = {
    "id", "x",  "y",  "z",           "vx",    "vy",    "vz",       "wx",
    "wy", "wz", "qw", "qx",          "qy",    "qz",    "shape",    "radius",
    "hx", "hy", "hz", "half_length", "clump", "scale", "material", "motion"};

/* Which dimension columns each shape takes (bit c for column c). */
#define BIT(c) (1u << (c))
#define DIM_COLUMNS                                                                                \
    (BIT(C_RADIUS) | BIT(C_HX) | BIT(C_HY) | BIT(C_HZ) | BIT(C_HALF_LENGTH) | BIT(C_CLUMP) |       \
     BIT(C_SCALE))
static unsigned shape_columns(int type) {
    switch (type) {
    case GF_SHAPE_SPHERE:
        return BIT(C_RADIUS);
    case GF_SHAPE_BOX:
        return BIT(C_HX) | BIT(C_HY) | BIT(C_HZ);
    case GF_SHAPE_CAPSULE:
    case GF_SHAPE_CYLINDER:
        return BIT(C_RADIUS) | BIT(C_HALF_LENGTH);
    default:
        return BIT(C_CLUMP) | BIT(C_SCALE);
    }
}

typedef struct {
    int64_t id;
    long line;
} id_line;

static int cmp_id_line(const void *a, const void *b) {
    const id_line *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Rank 0's reading state. */
typedef struct {
    const gf_particle_file *pf;
    const gf_sim *sim;
    const gf_decomp *wrap;
    FILE *in;
    char *line;
    size_t cap;
    long lineno;
    int nfields;         /* columns of the header */
    int column[C_COUNT]; /* field of each column, -1 if absent */
    char **field;        /* the fields of the current line */
    int capfields;
    int64_t rows; /* data rows so far */
    id_line *ids; /* of every row, for the duplicate check */
    size_t nids, capids;
} csv_reader;

/* One line into r->line without its end, which may be LF, CRLF or a lone CR (as old Mac
 * programs write); its length, or -1 at the end of the file. *nul is set when the line holds a NUL
 * byte, which no text table does. */
static ssize_t read_line(csv_reader *r, int *nul, gf_status *st) {
    size_t len = 0;
    int c;
    *nul = 0;
    while ((c = getc(r->in)) != EOF) {
        if (c == '\n')
            break;
        if (c == '\r') {
            int d = getc(r->in);
            if (d != '\n' && d != EOF)
                ungetc(d, r->in);
            break;
        }
        *nul |= c == '\0';
        if (len + 2 > r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 256;
            if ((*st = gf_grow((void **)&r->line, cap, 1)) != GF_OK)
                return -1;
            r->cap = cap;
        }
        r->line[len++] = (char)c;
    }
    if (c == EOF && len == 0)
        return -1;
    if (!r->line && (*st = gf_grow((void **)&r->line, 1, 1)) != GF_OK)
        return -1;
    r->cap = r->cap ? r->cap : 1;
    r->line[len] = '\0';
    return (ssize_t)len;
}

/* The next line that is neither blank nor a comment, without its line end; 0 at the end. */
static int next_line(csv_reader *r, char **text, gf_status *st) {
    for (;;) {
        errno = 0;
        int nul = 0;
        ssize_t len = read_line(r, &nul, st);
        if (len < 0) {
            if (*st == GF_OK && ferror(r->in))
                *st = GF_ERROR(GF_ERR_IO, "reading '%s' failed after line %ld: %s", r->pf->path,
                               r->lineno, strerror(errno ? errno : EIO));
            return 0;
        }
        r->lineno++;
        if (nul) {
            *st = GF_ERROR(GF_ERR_INPUT,
                           "%s:%ld: a NUL byte in the line (a CSV file is text: a binary or "
                           "damaged file?)",
                           r->pf->path, r->lineno);
            return 0;
        }
        char *s = r->line;
        /* A byte-order mark, as spreadsheet programs write it. */
        if (r->lineno == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
            (unsigned char)s[2] == 0xBF)
            s += 3;
        while (*s == ' ' || *s == '\t')
            ++s;
        if (*s == '\0' || *s == '#')
            continue;
        *text = s;
        return 1;
    }
}

/* Splits a line at commas into r->field (trimmed, surrounding double quotes removed); returns
 * the number of fields. */
static gf_status split(csv_reader *r, char *s, int *count) {
    int n = 1;
    for (const char *c = s; *c; ++c)
        n += *c == ',';
    if (n > r->capfields) {
        GF_TRY(gf_grow((void **)&r->field, (size_t)n, sizeof *r->field));
        r->capfields = n;
    }
    int k = 0;
    for (char *start = s;; ++k) {
        char *end = strchr(start, ',');
        if (end)
            *end = '\0';
        while (*start == ' ' || *start == '\t')
            ++start;
        size_t len = strlen(start);
        while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
            start[--len] = '\0';
        if (len >= 2 && start[0] == '"' && start[len - 1] == '"') {
            start[len - 1] = '\0';
            ++start;
        }
        r->field[k] = start;
        if (!end)
            break;
        start = end + 1;
    }
    *count = k + 1;
    return GF_OK;
}

static gf_status read_header(csv_reader *r) {
    char *s = NULL;
    gf_status st = GF_OK;
    if (!next_line(r, &s, &st))
        return st != GF_OK ? st
                           : GF_ERROR(GF_ERR_INPUT,
                                      "'%s' holds no header line (the column names, such as "
                                      "\"id, x, y, z, radius\")",
                                      r->pf->path);
    int n = 0;
    GF_TRY(split(r, s, &n));
    r->nfields = n;
    for (int c = 0; c < C_COUNT; ++c)
        r->column[c] = -1;
    const char *path = r->pf->path;
    for (int k = 0; k < n; ++k) {
        const char *name = r->field[k];
        if (!name[0])
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: field %d of the header names no column", path,
                            r->lineno, k + 1);
        int c = 0;
        while (c < C_COUNT && strcasecmp(name, column_name[c]) != 0)
            ++c;
        if (c == C_COUNT) {
            char known[512];
            size_t len = 0;
            for (int j = 0; j < C_COUNT; ++j)
                len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", j ? ", " : "",
                                        column_name[j]);
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: unknown column '%s' (columns: %s)", path,
                            r->lineno, name, known);
        }
        if (r->column[c] >= 0)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column '%s' appears twice (fields %d and %d)",
                            path, r->lineno, column_name[c], r->column[c] + 1, k + 1);
        r->column[c] = k;
    }
    for (int c = C_X; c <= C_Z; ++c)
        if (r->column[c] < 0)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s:%ld: the header lacks column '%s' (x, y and z are required)", path,
                            r->lineno, column_name[c]);
    int nq = 0;
    for (int c = C_QW; c <= C_QZ; ++c)
        nq += r->column[c] >= 0;
    if (nq != 0 && nq != 4)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: an orientation needs all four columns qw, qx, qy, qz (the "
                        "header has %d of them)",
                        path, r->lineno, nq);
    return GF_OK;
}

/* The field of column c in the current row ("" when the column is absent). */
static const char *field_of(const csv_reader *r, int c) {
    return r->column[c] >= 0 ? r->field[r->column[c]] : "";
}

/* A number in column c: *given = 0 for an empty field (value unchanged). */
static gf_status number(const csv_reader *r, int c, double *value, int *given) {
    const char *s = field_of(r, c);
    *given = s[0] != '\0';
    if (!*given)
        return GF_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column %s: '%s' is not a number", r->pf->path,
                        r->lineno, column_name[c], s);
    if (!isfinite(v))
        return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column %s: '%s' is not a finite number", r->pf->path,
                        r->lineno, column_name[c], s);
    *value = v;
    return GF_OK;
}

/* The shape of the current row, from its shape and dimension columns. */
static gf_status row_shape(const csv_reader *r, gf_shape *s) {
    const char *path = r->pf->path;
    long ln = r->lineno;
    const char *kind = field_of(r, C_SHAPE);
    int type = kind[0] ? gf_shape_type_from_name(kind) : GF_SHAPE_SPHERE;
    if (type < 0 || gf_shape_is_static(type))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: column shape: '%s' is not one of sphere, box, capsule, cylinder, "
                        "clump",
                        path, ln, kind);
    const char *name = gf_shape_name((gf_shape_type)type);
    unsigned takes = shape_columns(type);
    double v[C_COUNT] = {0.0};
    int given[C_COUNT] = {0};
    for (int c = 0; c < C_COUNT; ++c) {
        if (!(DIM_COLUMNS & BIT(c)))
            continue;
        if (c == C_CLUMP) {
            given[c] = field_of(r, c)[0] != '\0';
        } else {
            GF_TRY(number(r, c, &v[c], &given[c]));
            if (given[c] && !(v[c] > 0.0))
                return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column %s: %g is not a positive size", path,
                                ln, column_name[c], v[c]);
        }
        if (given[c] && !(takes & BIT(c)))
            return GF_ERROR(GF_ERR_INPUT,
                            "%s:%ld: column %s is no dimension of a %s: leave it empty", path, ln,
                            column_name[c], name);
        if (!given[c] && (takes & BIT(c)) && c != C_SCALE)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: a %s needs a value in column %s%s", path, ln,
                            name, column_name[c],
                            r->column[c] < 0 ? ", which the header lacks" : "");
    }
    switch (type) {
    case GF_SHAPE_SPHERE:
        *s = gf_shape_sphere(v[C_RADIUS]);
        break;
    case GF_SHAPE_BOX:
        *s = gf_shape_box(v[C_HX], v[C_HY], v[C_HZ]);
        break;
    case GF_SHAPE_CAPSULE:
        *s = gf_shape_capsule(v[C_RADIUS], v[C_HALF_LENGTH]);
        break;
    case GF_SHAPE_CYLINDER:
        *s = gf_shape_cylinder(v[C_RADIUS], v[C_HALF_LENGTH]);
        break;
    default: {
        const char *cname = field_of(r, C_CLUMP);
        int32_t index = gf_bodies_clump_index(r->pf->root, cname);
        if (index < 0)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column clump: '%s' names no Clump block", path,
                            ln, cname);
        *s = gf_shape_clump(index, given[C_SCALE] ? v[C_SCALE] : 1.0);
    }
    }
    char where[WHERE_LEN];
    snprintf(where, sizeof where, "%s:%ld", path, ln);
    return check_shape(r->sim, s, where);
}

/* The current row as a particle. */
static gf_status parse_row(csv_reader *r, gf_particle *rec) {
    const char *path = r->pf->path;
    long ln = r->lineno;
    const gf_sim *sim = r->sim;
    int given = 0;
    int64_t id = r->rows;
    if (r->column[C_ID] >= 0) {
        const char *s = field_of(r, C_ID);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (!s[0] || end == s || *end != '\0' || errno == ERANGE || v < 0 ||
            v >= GF_PARTICLE_FILE_MAX_ID)
            return GF_ERROR(GF_ERR_INPUT,
                            "%s:%ld: column id: '%s' is not an id (a whole number from 0 to "
                            "2^62 - 1)",
                            path, ln, s);
        id = (int64_t)v;
    }
    double x[3];
    for (int d = 0; d < 3; ++d) {
        GF_TRY(number(r, C_X + d, &x[d], &given));
        if (!given)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: column %s is empty: a position is required",
                            path, ln, column_name[C_X + d]);
    }
    gf_shape shape;
    GF_TRY(row_shape(r, &shape));
    int material = r->pf->material;
    const char *mname = field_of(r, C_MATERIAL);
    if (mname[0]) {
        material = gf_materials_find(&sim->materials, mname);
        if (material < 0) {
            char known[512] = "";
            size_t len = 0;
            for (int k = 0; k < sim->materials.count && len < sizeof known; ++k)
                len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "",
                                        sim->materials.name[k]);
            return GF_ERROR(GF_ERR_INPUT,
                            "%s:%ld: column material: '%s' is no material of the configuration "
                            "(%s)",
                            path, ln, mname, known);
        }
    }
    const char *motion = field_of(r, C_MOTION);
    int fixed = strcmp(motion, "fixed") == 0, kinematic = strcmp(motion, "kinematic") == 0;
    if (motion[0] && !fixed && !kinematic && strcmp(motion, "dynamic") != 0)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: column motion: '%s' is not one of dynamic, fixed, kinematic", path,
                        ln, motion);
    double v[3] = {0.0, 0.0, 0.0}, w[3] = {0.0, 0.0, 0.0}, q[4] = {1.0, 0.0, 0.0, 0.0};
    int moving = 0;
    for (int d = 0; d < 3; ++d) {
        GF_TRY(number(r, C_VX + d, &v[d], &given));
        GF_TRY(number(r, C_WX + d, &w[d], &given));
        moving = moving || v[d] != 0.0 || w[d] != 0.0;
    }
    if (fixed && moving)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: a fixed particle does not move, but its velocity is given: use "
                        "motion kinematic for a body of infinite mass moving at it",
                        path, ln);
    int nq = 0;
    for (int c = 0; c < 4; ++c) {
        GF_TRY(number(r, C_QW + c, &q[c], &given));
        nq += given;
    }
    if (nq != 0 && nq != 4)
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: columns qw, qx, qy, qz: %d of the 4 are empty; give all or none",
                        path, ln, 4 - nq);
    double qn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(fabs(qn - 1.0) <= GF_PARTICLE_FILE_QUAT_TOL))
        return GF_ERROR(GF_ERR_INPUT,
                        "%s:%ld: columns qw, qx, qy, qz: %g %g %g %g has norm %g; an orientation "
                        "is a unit quaternion (w, x, y, z), body to world",
                        path, ln, q[0], q[1], q[2], q[3], qn);
    double density = fixed || kinematic ? 0.0 : sim->materials.density[material];
    gf_particle_make(rec, id, x, &shape, &sim->clumps, density, material);
    {
        char where[WHERE_LEN];
        snprintf(where, sizeof where, "%s:%ld", path, ln);
        GF_TRY(check_mass(rec, density, where));
    }
    if (shape.type == GF_SHAPE_CLUMP) {
        /* As in a Body block: the row places the frame the members were given in; the centre of
         * mass and the principal frame follow from the template. */
        const gf_clump *c = &sim->clumps.item[shape.clump];
        double com[3] = {c->com_input[0] * shape.dim[0], c->com_input[1] * shape.dim[0],
                         c->com_input[2] * shape.dim[0]},
               off[3], qu[4];
        for (int k = 0; k < 4; ++k)
            qu[k] = q[k] / qn;
        gf_quat_rotate(qu, com, off);
        for (int d = 0; d < 3; ++d)
            rec->x[d] = x[d] + off[d];
        gf_quat_mul(qu, c->q_input, rec->q);
    } else {
        memcpy(rec->q, q, sizeof rec->q);
    }
    memcpy(rec->v, v, sizeof rec->v);
    memcpy(rec->w, w, sizeof rec->w);
    char where[WHERE_LEN];
    snprintf(where, sizeof where, "%s:%ld", path, ln);
    return place_record(sim, r->wrap, rec, where);
}

/* Up to `max` rows into recs; *done at the end of the file. */
static gf_status read_rows(csv_reader *r, gf_particle *recs, size_t max, size_t *n, int *done) {
    *n = 0;
    *done = 0;
    while (*n < max) {
        char *s = NULL;
        gf_status st = GF_OK;
        if (!next_line(r, &s, &st)) {
            *done = 1;
            return st;
        }
        int count = 0;
        GF_TRY(split(r, s, &count));
        if (count != r->nfields)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: %d field%s, but the header names %d column%s",
                            r->pf->path, r->lineno, count, count == 1 ? "" : "s", r->nfields,
                            r->nfields == 1 ? "" : "s");
        GF_TRY(parse_row(r, &recs[*n]));
        if (r->nids == r->capids) {
            size_t cap = r->capids ? 2 * r->capids : 1024;
            GF_TRY(gf_grow((void **)&r->ids, cap, sizeof *r->ids));
            r->capids = cap;
        }
        r->ids[r->nids].id = recs[*n].id;
        r->ids[r->nids].line = r->lineno;
        r->nids++;
        r->rows++;
        (*n)++;
    }
    return GF_OK;
}

/* Rank 0, at the end: an id on two rows is an error naming both lines. */
static gf_status check_ids(csv_reader *r) {
    if (r->nids < 2)
        return GF_OK;
    qsort(r->ids, r->nids, sizeof *r->ids, cmp_id_line);
    for (size_t i = 1; i < r->nids; ++i)
        if (r->ids[i].id == r->ids[i - 1].id)
            return GF_ERROR(GF_ERR_INPUT, "%s:%ld: id %lld is also on line %ld: ids are unique",
                            r->pf->path, r->ids[i].line, (long long)r->ids[i].id,
                            r->ids[i - 1].line);
    return GF_OK;
}

static size_t chunk_rows(void) {
    const char *s = getenv("GF_CHUNK_ROWS");
    if (s && *s) {
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (end != s && *end == '\0' && v > 0 && v < (1LL << 40))
            return (size_t)v;
    }
    return 65536;
}

static int rank_of(const gf_sim *sim) {
    return sim->par ? sim->par->rank : 0;
}

static gf_status agree(const gf_sim *sim, gf_status st) {
    return sim->par ? gf_par_agree(sim->par, st, NULL) : st;
}

/* Collective: rank 0 reads the rows in rounds; after each round every particle goes to its
 * owner, so that no rank holds more than one round of another's particles. */
static gf_status load_csv(gf_particle_file *pf, gf_sim *sim, const gf_decomp *wrap) {
    csv_reader r;
    memset(&r, 0, sizeof r);
    r.pf = pf;
    r.sim = sim;
    r.wrap = wrap;
    int root = rank_of(sim) == 0;
    size_t max = chunk_rows();
    gf_particle *recs = NULL;
    gf_status st = GF_OK;
    if (root) {
        r.in = gf_file_open_input(pf->path, "r", "particle file");
        if (!r.in)
            st = gf_error_context(gf_error_status(), "%s", pf->where);
        if (st == GF_OK)
            st = read_header(&r);
        if (st == GF_OK && !(recs = gf_malloc(max, sizeof *recs)))
            st = gf_error_status();
    }
    st = agree(sim, st);
    for (int64_t done = 0; st == GF_OK && !done;) {
        size_t n = 0;
        int end = 0; /* rank 0's word counts */
        if (root)
            st = read_rows(&r, recs, max, &n, &end);
        st = agree(sim, st);
        int64_t flag = end;
        if (st == GF_OK && sim->par)
            st = gf_par_allreduce_i64(sim->par, &flag, 1, GF_PAR_MAX);
        done = flag;
        if (st == GF_OK)
            st = gf_sim_place_particles(sim, recs, n);
    }
    if (st == GF_OK && root)
        st = check_ids(&r);
    st = agree(sim, st);
    if (r.in)
        fclose(r.in);
    free(r.line);
    free(r.field);
    free(r.ids);
    free(recs);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                    */

/* Collective: every rank checks and places the rows it read. */
static gf_status load_hdf5(gf_particle_file *pf, gf_sim *sim, const gf_decomp *wrap) {
    gf_particle *recs = NULL;
    double *mass = NULL;
    size_t n = 0;
    GF_TRY(gf_error_context(gf_h5_read_particles(sim->par, pf->path, &recs, &mass, &n), "%s",
                            pf->where));
    gf_status st = GF_OK;
    for (size_t i = 0; i < n && st == GF_OK; ++i) {
        gf_particle row = recs[i];
        st = from_snapshot_row(pf, sim, wrap, &row, mass[i], &recs[i]);
    }
    free(mass);
    /* To their owners in rounds, so that no rank holds more than a round of others' particles
     * on top of its own; every rank takes part in as many rounds as the one with most rows. */
    size_t round = chunk_rows();
    int64_t rounds = (int64_t)((n + round - 1) / round);
    st = agree(sim, st);
    if (st == GF_OK && sim->par)
        st = gf_par_allreduce_i64(sim->par, &rounds, 1, GF_PAR_MAX);
    for (int64_t k = 0; k < rounds && st == GF_OK; ++k) {
        size_t a = (size_t)k * round < n ? (size_t)k * round : n;
        size_t b = a + round < n ? a + round : n;
        st = gf_sim_place_particles(sim, recs + a, b - a);
    }
    free(recs);
    if (st == GF_OK)
        st = gf_sim_check_unique_ids(sim, pf->path, ": ids are unique");
    return agree(sim, st);
}

gf_status gf_particle_file_load(gf_particle_file *pf, gf_sim *sim) {
    pf->count = 0;
    pf->end_id = sim->next_id;
    pf->max_radius = 0.0;
    if (!pf->enabled)
        return GF_OK;
    gf_status st = GF_OK;
    if (sim->particles.n_local != 0)
        st = GF_ERROR(GF_ERR_STATE, "a particle file is read before any other particle is placed");
    GF_TRY(agree(sim, st));
    /* Wrapping along periodic axes needs the box only: one cell of it. */
    gf_decomp wrap;
    const int one[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
    gf_decomp_setup(&wrap, one, sim->periodic, origin, sim->lo, sim->hi);
    wrap.rank_of = NULL;
    st = pf->format == GF_PARTICLE_FILE_CSV ? load_csv(pf, sim, &wrap) : load_hdf5(pf, sim, &wrap);
    const gf_particles *p = &sim->particles;
    int64_t counts[2] = {(int64_t)p->n_local, -1}; /* count, largest id */
    double rmax = 0.0;
    for (size_t i = 0; i < p->n_local; ++i) {
        counts[1] = p->id[i] > counts[1] ? p->id[i] : counts[1];
        rmax = fmax(rmax, p->radius[i]);
    }
    if (st == GF_OK && sim->par) {
        int64_t largest = counts[1];
        st = gf_par_allreduce_i64(sim->par, counts, 1, GF_PAR_SUM);
        if (st == GF_OK)
            st = gf_par_allreduce_i64(sim->par, &largest, 1, GF_PAR_MAX);
        if (st == GF_OK)
            st = gf_par_allreduce_double(sim->par, &rmax, 1, GF_PAR_MAX);
        counts[1] = largest;
    }
    if (st != GF_OK) {
        /* A refused file leaves nothing of itself behind. */
        gf_particles_free(&sim->particles);
        return st;
    }
    pf->count = counts[0];
    pf->end_id = counts[1] + 1 > sim->next_id ? counts[1] + 1 : sim->next_id;
    pf->max_radius = rmax;
    sim->next_id = pf->end_id;
    sim->expected_particles += pf->count;
    gf_log_info("Particles: %lld from '%s' (%s), ids up to %lld, largest bounding radius %g m",
                (long long)pf->count, pf->path, pf->format == GF_PARTICLE_FILE_CSV ? "csv" : "hdf5",
                (long long)counts[1], rmax);
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Overlaps with the particles placed later, and among the file's                             */

/* The deepest overlap between two file particles a rank found. */
typedef struct {
    double rel, depth;
    int64_t a, b;
    int64_t pairs; /* pairs beyond GF_PARTICLE_FILE_OVERLAP */
} overlap_report;

static void describe(const gf_particles *p, size_t i, char *buf, size_t size) {
    snprintf(buf, size, "%lld (a %s at %g %g %g)", (long long)p->id[i],
             gf_shape_name((gf_shape_type)p->shape[i]), p->x[0][i], p->x[1][i], p->x[2][i]);
}

/* Local: the overlaps among this rank's pairs. A pair's points are consecutive contacts; its
 * deepest point is its overlap. */
static gf_status scan_overlaps(const gf_particle_file *pf, const gf_particles *p,
                               const gf_contacts *c, overlap_report *rep) {
    for (size_t j = 0, k = 0; j < c->count; j = k) {
        double depth = -c->gap[j];
        for (k = j + 1; k < c->count && c->i1[k] == c->i1[j] && c->i2[k] == c->i2[j]; ++k)
            depth = fmax(depth, -c->gap[k]);
        if (c->i2[j] < 0)
            continue;
        size_t a = (size_t)c->i1[j], b = (size_t)c->i2[j];
        int fa = p->id[a] < pf->end_id, fb = p->id[b] < pf->end_id;
        if (!fa && !fb)
            continue;
        if (fa && fb) {
            double rel = depth / fmin(p->radius[a], p->radius[b]);
            rep->pairs += rel > GF_PARTICLE_FILE_OVERLAP;
            if (rel > rep->rel) {
                rep->rel = rel;
                rep->depth = depth;
                rep->a = p->id[a] < p->id[b] ? p->id[a] : p->id[b];
                rep->b = p->id[a] < p->id[b] ? p->id[b] : p->id[a];
            }
            continue;
        }
        size_t f = fa ? a : b, o = fa ? b : a;
        double tol = gf_touch_tolerance(p->radius[a] + p->radius[b] + fabs(p->x[0][f]) +
                                        fabs(p->x[1][f]) + fabs(p->x[2][f]));
        if (depth > tol) {
            char df[256], dother[256];
            describe(p, f, df, sizeof df);
            describe(p, o, dother, sizeof dother);
            return GF_ERROR(GF_ERR_INPUT,
                            "particle %s, placed by the Lattice, overlaps particle %s of '%s' by "
                            "%g m: move the lattice or leave the particle out of the file",
                            dother, df, pf->path, depth);
        }
    }
    return GF_OK;
}

gf_status gf_particle_file_check_clear(const gf_particle_file *pf, gf_sim *sim) {
    if (!pf->enabled)
        return GF_OK;
    gf_particles *p = &sim->particles;
    double rmax = 0.0;
    for (size_t i = 0; i < p->n_local; ++i)
        rmax = fmax(rmax, p->radius[i]);
    gf_status st = GF_OK;
    if (sim->par)
        st = gf_par_allreduce_double(sim->par, &rmax, 1, GF_PAR_MAX);
    /* Ghosts, so that pairs across subdomain faces and periodic seams are found too. */
    if (st == GF_OK && sim->distributed)
        st = gf_exchange_ghosts(&sim->xch, p, 2.0 * rmax);
    st = agree(sim, st);
    gf_walls none;
    gf_walls_init(&none);
    gf_linkcells lc;
    gf_contacts c;
    gf_linkcells_init(&lc);
    gf_contacts_init(&c);
    overlap_report rep = {0.0, 0.0, -1, -1, 0};
    if (st == GF_OK && gf_contact_detect(p, &none, &sim->materials, 0.0, &lc, &c) != GF_OK) {
        /* What detection cannot take here (two bodies with one centre) is the file's error. */
        char why[512];
        snprintf(why, sizeof why, "%s", gf_error_message());
        st = GF_ERROR(GF_ERR_INPUT, "'%s': %s", pf->path, why);
    }
    if (st == GF_OK)
        st = scan_overlaps(pf, p, &c, &rep);
    gf_particles_clear_ghosts(p);
    gf_linkcells_free(&lc);
    gf_contacts_free(&c);
    st = agree(sim, st);
    if (st != GF_OK) {
        /* The configuration is refused as a whole: neither the file's particles nor the
         * others stay. */
        gf_particles_free(p);
        return st;
    }
    /* The deepest of all ranks, reported once. */
    overlap_report *all = &rep;
    size_t nrep = 1;
    void *buf = NULL;
    size_t *off = NULL;
    if (sim->par) {
        GF_TRY(gf_par_gather_bytes(sim->par, 0, &rep, sizeof rep, &buf, &off));
        all = buf;
        nrep = off ? off[sim->par->size] / sizeof rep : 0;
    }
    if (rank_of(sim) == 0) {
        overlap_report worst = {0.0, 0.0, -1, -1, 0};
        int64_t pairs = 0;
        for (size_t k = 0; k < nrep; ++k) {
            pairs += all[k].pairs;
            if (all[k].rel > worst.rel)
                worst = all[k];
        }
        if (worst.rel > GF_PARTICLE_FILE_OVERLAP)
            gf_log_warn("'%s': %lld pair%s of its particles overlap by more than %g%% of the "
                        "smaller bounding radius, the most particles %lld and %lld by %g m "
                        "(%.3g%%); the solver pushes them apart at Solver.error_reduction / "
                        "Time.dt",
                        pf->path, (long long)pairs, pairs == 1 ? "" : "s",
                        100.0 * GF_PARTICLE_FILE_OVERLAP, (long long)worst.a, (long long)worst.b,
                        worst.depth, 100.0 * worst.rel);
    }
    free(buf);
    free(off);
    return GF_OK;
}
