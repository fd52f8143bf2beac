/* XDMF: the .xmf files beside a run's snapshots that ParaView and VisIt open, one per part of the
 * output (particles, clumps' member spheres, geometry, contacts), each a temporal collection over
 * the snapshots, referring to the HDF5 datasets. */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* s with the characters XML reserves written as entities (a prefix may hold any of them). */
static void xml_escape(const char *s, char *out, size_t size) {
    size_t n = 0;
    for (; *s && n + 7 < size; ++s) {
        const char *e = *s == '&'    ? "&amp;"
                        : *s == '<'  ? "&lt;"
                        : *s == '>'  ? "&gt;"
                        : *s == '"'  ? "&quot;"
                        : *s == '\'' ? "&apos;"
                                     : NULL;
        if (e) {
            memcpy(out + n, e, strlen(e));
            n += strlen(e);
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* One attribute of a point grid. */
typedef struct {
    const char *name, *type; /* dataset, XDMF AttributeType */
    int ncols;
    const char *ntype; /* XDMF NumberType */
    int precision;
} xdmf_attr;

/* The attributes of a grid: datasets /group/name with `rows` rows, on its points ("Node") or
 * cells ("Cell"). */
static void xdmf_attributes(FILE *f, const char *file, const char *group, const char *center,
                            long long rows, const xdmf_attr *attrs, size_t nattrs) {
    for (size_t a = 0; a < nattrs; ++a) {
        fprintf(f, "     <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"%s\">\n",
                attrs[a].name, attrs[a].type, center);
        if (attrs[a].ncols > 1)
            fprintf(f, "      <DataItem Dimensions=\"%lld %d\"", rows, attrs[a].ncols);
        else
            fprintf(f, "      <DataItem Dimensions=\"%lld\"", rows);
        fprintf(f,
                " NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">%s:/%s/%s"
                "</DataItem>\n     </Attribute>\n",
                attrs[a].ntype, attrs[a].precision, file, group, attrs[a].name);
    }
}

/* One snapshot's point grid over the datasets of `group`: one vertex cell per row (explicit
 * connectivity, which the XDMF 3 reader needs), the positions and the attributes. */
static void xdmf_points(FILE *f, const char *file, const char *group, long long n, double t,
                        const xdmf_attr *attrs, size_t nattrs) {
    fprintf(f, "    <Grid Name=\"%s\" GridType=\"Uniform\">\n     <Time Value=\"%.17g\" />\n",
            group, t);
    fprintf(f,
            "     <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"1\">\n      <DataItem Dimensions=\"%lld\" NumberType=\"Int\" "
            "Precision=\"4\" Format=\"HDF\">%s:/%s/vertex</DataItem>\n     </Topology>\n",
            n, n, file, group);
    fprintf(f,
            "     <Geometry GeometryType=\"XYZ\">\n"
            "      <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/%s/position</DataItem>\n     </Geometry>\n",
            n, file, group);
    xdmf_attributes(f, file, group, "Node", n, attrs, nattrs);
    fprintf(f, "    </Grid>\n");
}

/* One snapshot's geometry mesh: mixed cells over /geometry, with cell attributes. */
static void xdmf_geometry(FILE *f, const char *file, const long long g[3], double t) {
    fprintf(f,
            "    <Grid Name=\"geometry\" GridType=\"Uniform\">\n     <Time Value=\"%.17g\" />\n"
            "     <Topology TopologyType=\"Mixed\" NumberOfElements=\"%lld\">\n"
            "      <DataItem Dimensions=\"%lld\" NumberType=\"Int\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/topology</DataItem>\n     </Topology>\n"
            "     <Geometry GeometryType=\"XYZ\">\n"
            "      <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/position</DataItem>\n     </Geometry>\n",
            t, g[1], g[2], file, g[0], file);
    static const xdmf_attr cells[] = {{"kind", "Scalar", 1, "Int", 4},
                                      {"body", "Scalar", 1, "Int", 4},
                                      {"velocity", "Vector", 3, "Float", 8}};
    xdmf_attributes(f, file, "geometry", "Cell", g[1], cells, sizeof cells / sizeof *cells);
    fprintf(f, "    </Grid>\n");
}

/* One snapshot's contacts as lines (force chains) with their impulses as cell attributes. */
static void xdmf_contacts(FILE *f, const char *file, long long c, double t) {
    fprintf(f,
            "    <Grid Name=\"contacts\" GridType=\"Uniform\">\n     <Time Value=\"%.17g\" />\n"
            "     <Topology TopologyType=\"Polyline\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"2\">\n      <DataItem Dimensions=\"%lld 2\" NumberType=\"Int\" "
            "Precision=\"8\" Format=\"HDF\">%s:/contacts/vertex</DataItem>\n     </Topology>\n"
            "     <Geometry GeometryType=\"XYZ\">\n"
            "      <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/contacts/position</DataItem>\n     </Geometry>\n",
            t, c, c, file, 2 * c, file);
    static const xdmf_attr cells[] = {{"normal_impulse", "Scalar", 1, "Float", 8},
                                      {"tangential_impulse", "Vector", 3, "Float", 8},
                                      {"normal", "Vector", 3, "Float", 8},
                                      {"gap", "Scalar", 1, "Float", 8}};
    xdmf_attributes(f, file, "contacts", "Cell", c, cells, sizeof cells / sizeof *cells);
    fprintf(f, "    </Grid>\n");
}

/* What one of a run's XDMF files shows. The particles go to <prefix>.xmf alone, so that Open,
 * Apply in ParaView shows them; the clumps' member spheres, the geometry and the contacts each go
 * to <prefix>_<part>.xmf, readable on its own (and not drawn over the particles). */
typedef enum { XDMF_PARTICLES, XDMF_CLUMPS, XDMF_GEOMETRY, XDMF_CONTACTS, XDMF_PARTS } xdmf_part;
static const char *const xdmf_part_name[XDMF_PARTS] = {"particles", "clumps", "geometry",
                                                       "contacts"};

/* The rows (cells) snapshot e holds of a part. */
static long long xdmf_part_rows(const gf_snapshot_entry *e, xdmf_part part) {
    switch (part) {
    case XDMF_PARTICLES:
        return e->particles;
    case XDMF_CLUMPS:
        return e->members;
    case XDMF_GEOMETRY:
        return e->geometry[1];
    default:
        return e->contacts;
    }
}

/* One part's file: a temporal collection with an entry per snapshot. Each entry is a spatial
 * collection holding the snapshot's grid, or nothing where the snapshot has none of that part:
 * ParaView 5.11's readers crash on an empty grid (Xdmf3: SIGFPE on Dimensions "0 3"; the legacy
 * reader on a grid without topology) but read an empty collection, and every entry must have
 * the same form for Xdmf3ReaderT to read any. The snapshot file is named in an Information
 * element, so that empty entries still say which file they stand for. */
static gf_status xdmf_write_part(const gf_output *o, xdmf_part part) {
    char path[GF_IO_PATH + 160], tmp[GF_IO_PATH + 170];
    if (part == XDMF_PARTICLES)
        snprintf(path, sizeof path, "%s/%s.xmf", o->directory, o->prefix);
    else
        snprintf(path, sizeof path, "%s/%s_%s.xmf", o->directory, o->prefix, xdmf_part_name[part]);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    static const xdmf_attr bodies[] = {
        {"velocity", "Vector", 3, "Float", 8}, {"angular_velocity", "Vector", 3, "Float", 8},
        {"radius", "Scalar", 1, "Float", 8},   {"id", "Scalar", 1, "Int", 8},
        {"material", "Scalar", 1, "Int", 4},   {"owner_rank", "Scalar", 1, "Int", 4},
        {"shape", "Scalar", 1, "Int", 4},      {"dimensions", "Vector", 3, "Float", 8},
        {"axes", "Tensor", 9, "Float", 8}};
    static const xdmf_attr members[] = {{"radius", "Scalar", 1, "Float", 8},
                                        {"id", "Scalar", 1, "Int", 8}};
    fprintf(f,
            "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
            "<Xdmf Version=\"3.0\">\n <Domain>\n"
            "  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
            xdmf_part_name[part]);
    for (size_t s = 0; s < o->nsnap; ++s) {
        const gf_snapshot_entry *e = &o->snaps[s];
        char file[6 * sizeof e->file + 1];
        xml_escape(e->file, file, sizeof file);
        fprintf(f,
                "   <Grid Name=\"snapshot\" GridType=\"Collection\" CollectionType=\"Spatial\">\n"
                "    <Time Value=\"%.17g\" />\n"
                "    <Information Name=\"snapshot\" Value=\"%s\" />\n",
                e->time, file);
        if (xdmf_part_rows(e, part) > 0) {
            if (part == XDMF_PARTICLES)
                xdmf_points(f, file, "particles", e->particles, e->time, bodies,
                            sizeof bodies / sizeof *bodies);
            else if (part == XDMF_CLUMPS)
                xdmf_points(f, file, "clump_members", e->members, e->time, members,
                            sizeof members / sizeof *members);
            else if (part == XDMF_GEOMETRY)
                xdmf_geometry(f, file, e->geometry, e->time);
            else
                xdmf_contacts(f, file, e->contacts, e->time);
        }
        fprintf(f, "   </Grid>\n");
    }
    fprintf(f, "  </Grid>\n </Domain>\n</Xdmf>\n");
    /* A short write (a full disk) must not replace the previous file. */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return GF_OK;
}

gf_status gf_io_write_xdmf(const gf_output *o) {
    /* The particles' file always; the others once any snapshot has some of theirs. */
    for (xdmf_part part = XDMF_PARTICLES; part < XDMF_PARTS; ++part) {
        int any = part == XDMF_PARTICLES;
        for (size_t s = 0; s < o->nsnap && !any; ++s)
            any = xdmf_part_rows(&o->snaps[s], part) > 0;
        if (any)
            GF_TRY(xdmf_write_part(o, part));
    }
    return GF_OK;
}
