/* XDMF: the .xmf file beside a run's snapshots that ParaView and VisIt open, one grid collection
 * per snapshot (particles, geometry, contacts), referring to the HDF5 datasets. */
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
        fprintf(f, "    <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"%s\">\n",
                attrs[a].name, attrs[a].type, center);
        if (attrs[a].ncols > 1)
            fprintf(f, "     <DataItem Dimensions=\"%lld %d\"", rows, attrs[a].ncols);
        else
            fprintf(f, "     <DataItem Dimensions=\"%lld\"", rows);
        fprintf(f,
                " NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">%s:/%s/%s"
                "</DataItem>\n    </Attribute>\n",
                attrs[a].ntype, attrs[a].precision, file, group, attrs[a].name);
    }
}

/* One snapshot's point grid over the datasets of `group`: one vertex cell per row (explicit
 * connectivity, which the XDMF 3 reader needs), the positions and the attributes. */
static void xdmf_points(FILE *f, const char *file, const char *group, long long n, double t,
                        const xdmf_attr *attrs, size_t nattrs) {
    fprintf(f, "   <Grid Name=\"%s\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n", group,
            t);
    fprintf(f,
            "    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"1\">\n     <DataItem Dimensions=\"%lld\" NumberType=\"Int\" "
            "Precision=\"4\" Format=\"HDF\">%s:/%s/vertex</DataItem>\n    </Topology>\n",
            n, n, file, group);
    fprintf(f,
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/%s/position</DataItem>\n    </Geometry>\n",
            n, file, group);
    xdmf_attributes(f, file, group, "Node", n, attrs, nattrs);
    fprintf(f, "   </Grid>\n");
}

/* One snapshot's geometry mesh: mixed cells over /geometry, with cell attributes. */
static void xdmf_geometry(FILE *f, const char *file, const long long g[3], double t) {
    fprintf(f,
            "   <Grid Name=\"geometry\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n"
            "    <Topology TopologyType=\"Mixed\" NumberOfElements=\"%lld\">\n"
            "     <DataItem Dimensions=\"%lld\" NumberType=\"Int\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/topology</DataItem>\n    </Topology>\n"
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/geometry/position</DataItem>\n    </Geometry>\n",
            t, g[1], g[2], file, g[0], file);
    static const xdmf_attr cells[] = {{"kind", "Scalar", 1, "Int", 4},
                                      {"body", "Scalar", 1, "Int", 4},
                                      {"velocity", "Vector", 3, "Float", 8}};
    xdmf_attributes(f, file, "geometry", "Cell", g[1], cells, sizeof cells / sizeof *cells);
    fprintf(f, "   </Grid>\n");
}

/* One snapshot's contacts as lines (force chains) with their impulses as cell attributes. */
static void xdmf_contacts(FILE *f, const char *file, long long c, double t) {
    fprintf(f,
            "   <Grid Name=\"contacts\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\" />\n"
            "    <Topology TopologyType=\"Polyline\" NumberOfElements=\"%lld\" "
            "NodesPerElement=\"2\">\n     <DataItem Dimensions=\"%lld 2\" NumberType=\"Int\" "
            "Precision=\"8\" Format=\"HDF\">%s:/contacts/vertex</DataItem>\n    </Topology>\n"
            "    <Geometry GeometryType=\"XYZ\">\n"
            "     <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">%s:/contacts/position</DataItem>\n    </Geometry>\n",
            t, c, c, file, 2 * c, file);
    static const xdmf_attr cells[] = {{"normal_impulse", "Scalar", 1, "Float", 8},
                                      {"tangential_impulse", "Vector", 3, "Float", 8},
                                      {"normal", "Vector", 3, "Float", 8},
                                      {"gap", "Scalar", 1, "Float", 8}};
    xdmf_attributes(f, file, "contacts", "Cell", c, cells, sizeof cells / sizeof *cells);
    fprintf(f, "   </Grid>\n");
}

gf_status gf_io_write_xdmf(const gf_output *o) {
    char path[GF_IO_PATH + 160], tmp[GF_IO_PATH + 170];
    snprintf(path, sizeof path, "%s/%s.xmf", o->directory, o->prefix);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    fprintf(f, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
               "<Xdmf Version=\"3.0\">\n <Domain>\n");
    static const xdmf_attr bodies[] = {
        {"velocity", "Vector", 3, "Float", 8}, {"angular_velocity", "Vector", 3, "Float", 8},
        {"radius", "Scalar", 1, "Float", 8},   {"id", "Scalar", 1, "Int", 8},
        {"material", "Scalar", 1, "Int", 4},   {"owner_rank", "Scalar", 1, "Int", 4},
        {"shape", "Scalar", 1, "Int", 4},      {"dimensions", "Vector", 3, "Float", 8},
        {"axes", "Tensor", 9, "Float", 8}};
    static const xdmf_attr members[] = {{"radius", "Scalar", 1, "Float", 8},
                                        {"id", "Scalar", 1, "Int", 8}};
    /* A temporal collection each: the bodies, and the member spheres of clumps (at the steps
     * that have any), so that each is a block of its own for glyphs of its own. */
    /* The geometry (walls, boxes, cylinders) follows, where there is any. */
    int any[4] = {1, 0, 0, 0};
    for (size_t s = 0; s < o->nsnap; ++s) {
        any[1] |= o->snaps[s].members > 0;
        any[2] |= o->snaps[s].geometry[1] > 0;
        any[3] |= o->snaps[s].contacts > 0;
    }
    static const char *const collection[4] = {"particles", "clump_members", "geometry", "contacts"};
    for (int pass = 0; pass < 4; ++pass) {
        if (!any[pass])
            continue;
        fprintf(f, "  <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
                collection[pass]);
        for (size_t s = 0; s < o->nsnap; ++s) {
            const gf_snapshot_entry *e = &o->snaps[s];
            char file[6 * sizeof e->file + 1];
            xml_escape(e->file, file, sizeof file);
            if (pass == 0)
                xdmf_points(f, file, "particles", e->particles, e->time, bodies,
                            sizeof bodies / sizeof *bodies);
            else if (pass == 1 && e->members > 0)
                xdmf_points(f, file, "clump_members", e->members, e->time, members,
                            sizeof members / sizeof *members);
            else if (pass == 2 && e->geometry[1] > 0)
                xdmf_geometry(f, file, e->geometry, e->time);
            else if (pass == 3 && e->contacts > 0)
                xdmf_contacts(f, file, e->contacts, e->time);
        }
        fprintf(f, "  </Grid>\n");
    }
    fprintf(f, " </Domain>\n</Xdmf>\n");
    /* A short write (a full disk) must not replace the previous file. */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return GF_OK;
}
