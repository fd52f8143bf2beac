#include "diag/forces.h"

#include <errno.h>
#include <string.h>

#include "io/csv_series.h"
#include "io/io.h"

gf_status gf_forces_configure(gf_forces *fo, gf_config_block *root) {
    memset(fo, 0, sizeof *fo);
    if (gf_config_section_count(root, "Forces") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Forces");
    GF_TRY(gf_config_get_long(b, "every", 100, &fo->every));
    GF_TRY(gf_config_check_range(b, "every", (double)fo->every, 0, 1e15));
    char dir[900], def[1024];
    GF_TRY(gf_config_get_string(gf_config_section(root, "Output"), "directory", "output", dir,
                                sizeof dir));
    snprintf(def, sizeof def, "%s/forces.csv", dir);
    GF_TRY(gf_config_get_string(b, "file", def, fo->file, sizeof fo->file));
    fo->torque = gf_config_has(b, "torque_point");
    static const double zero[3] = {0.0, 0.0, 0.0};
    GF_TRY(gf_config_get_vec3(b, "torque_point", zero, fo->torque_point));
    return GF_OK;
}

gf_status gf_forces_start(gf_forces *fo, const gf_sim *sim, int restarted) {
    fo->last_time = sim->time;
    fo->resume_step = restarted ? sim->step : 0;
    memset(fo->impulse, 0, sizeof fo->impulse);
    return GF_OK;
}

void gf_forces_accumulate(gf_forces *fo, const gf_contacts *c) {
    for (size_t j = 0; j < c->count; ++j) {
        if (c->i2[j] >= 0)
            continue;
        /* The impulse lambda_n n + lambda_t t + lambda_o o acts on the particle (body 1); the
         * geometry (body 2) takes its opposite. */
        double *acc = fo->impulse[-1 - c->i2[j]];
        double P[3];
        for (int d = 0; d < 3; ++d)
            P[d] = -(c->lambda[0][j] * c->n[d][j] + c->lambda[1][j] * c->t[d][j] +
                     c->lambda[2][j] * c->o[d][j]);
        for (int d = 0; d < 3; ++d)
            acc[d] += P[d];
        if (!fo->torque)
            continue;
        /* For a geometry body r2 is the contact point itself (world frame). */
        double r[3] = {c->r2[0][j] - fo->torque_point[0], c->r2[1][j] - fo->torque_point[1],
                       c->r2[2][j] - fo->torque_point[2]};
        acc[3] += r[1] * P[2] - r[2] * P[1];
        acc[4] += r[2] * P[0] - r[0] * P[2];
        acc[5] += r[0] * P[1] - r[1] * P[0];
        /* rolling and twisting resistance: a pure torque, minus tau on the geometry */
        for (int d = 0; d < 3 && c->resistive; ++d)
            acc[3 + d] -=
                c->tau[0][j] * c->n[d][j] + c->tau[1][j] * c->t[d][j] + c->tau[2][j] * c->o[d][j];
    }
}

/* The bodies present, in contact order: walls, boxes, cylinders, meshes. */
static size_t body_list(const gf_walls *w, int *body) {
    size_t n = 0;
    for (size_t k = 0; k < w->count; ++k)
        body[n++] = (int)k;
    for (size_t k = 0; k < w->nbox; ++k)
        body[n++] = GF_BOX_BASE + (int)k;
    for (size_t k = 0; k < w->ncyl; ++k)
        body[n++] = GF_CYL_BASE + (int)k;
    for (size_t k = 0; k < w->nmesh; ++k)
        body[n++] = GF_MESH_BASE + (int)k;
    return n;
}

static void body_name(int body, char *buf, size_t size) {
    if (body < GF_BOX_BASE)
        snprintf(buf, size, "wall%d", body);
    else if (body < GF_CYL_BASE)
        snprintf(buf, size, "box%d", body - GF_BOX_BASE);
    else if (body < GF_MESH_BASE)
        snprintf(buf, size, "cyl%d", body - GF_CYL_BASE);
    else
        snprintf(buf, size, "mesh%d", body - GF_MESH_BASE);
}

static gf_status open_csv(gf_forces *fo, const int *body, size_t nb) {
    /* At most GF_MAX_BODIES bodies of six columns of at most 13 characters. */
    static char header[GF_MAX_BODIES * 6 * 16 + 32];
    size_t len = (size_t)snprintf(header, sizeof header, "step,time");
    static const char *comp[6] = {"fx", "fy", "fz", "tx", "ty", "tz"};
    for (size_t k = 0; k < nb; ++k) {
        char name[16];
        body_name(body[k], name, sizeof name);
        for (int m = 0; m < (fo->torque ? 6 : 3); ++m)
            len += (size_t)snprintf(header + len, sizeof header - len, ",%s_%s", name, comp[m]);
    }
    snprintf(header + len, sizeof header - len, "\n");
    return gf_csv_series_open(fo->file, header, fo->resume_step, "Forces.file", &fo->csv);
}

gf_status gf_forces_observe(gf_forces *fo, const gf_sim *sim, int force) {
    if (fo->every <= 0)
        return GF_OK;
    gf_forces_accumulate(fo, &sim->contacts);
    if (!force && sim->step % fo->every != 0)
        return GF_OK;
    int body[GF_MAX_BODIES];
    size_t nb = body_list(&sim->walls, body);
    int ncomp = fo->torque ? 6 : 3;
    double sum[GF_MAX_BODIES * 6];
    for (size_t k = 0; k < nb; ++k)
        for (int m = 0; m < ncomp; ++m)
            sum[k * (size_t)ncomp + (size_t)m] = fo->impulse[body[k]][m];
    memset(fo->impulse, 0, sizeof fo->impulse);
    if (sim->par && nb > 0)
        GF_TRY(gf_par_allreduce_double(sim->par, sum, (int)nb * ncomp, GF_PAR_SUM));
    double span = sim->time - fo->last_time;
    fo->last_time = sim->time;
    int root = !sim->par || sim->par->rank == 0;
    gf_status status = GF_OK;
    if (root) {
        if (!fo->csv)
            status = open_csv(fo, body, nb);
        if (status == GF_OK) {
            int bad = fprintf(fo->csv, "%ld,%.9g", sim->step, sim->time) < 0;
            for (size_t k = 0; k < nb * (size_t)ncomp; ++k)
                bad |= fprintf(fo->csv, ",%.9g", span > 0.0 ? sum[k] / span : 0.0) < 0;
            bad |= fprintf(fo->csv, "\n") < 0 || fflush(fo->csv) != 0;
            if (bad)
                status = GF_ERROR(GF_ERR_IO, "writing forces to '%s' failed: %s", fo->file,
                                  strerror(errno));
        }
    }
    if (sim->par)
        status = gf_par_agree(sim->par, status, NULL);
    return status;
}

void gf_forces_finish(gf_forces *fo) {
    if (fo->csv)
        fclose(fo->csv);
    fo->csv = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Forces as an observer                                                                      */

static gf_status forces_configure(void *self, gf_config_block *root, const gf_sim *sim) {
    (void)sim;
    return gf_forces_configure(self, root);
}

static gf_status forces_check(const void *self) {
    const gf_forces *fo = self;
    return fo->every > 0 ? gf_io_probe_location(fo->file, "Forces.file") : GF_OK;
}

static gf_status forces_start(void *self, gf_sim *sim, int restarted) {
    return gf_forces_start(self, sim, restarted);
}

static gf_status forces_observe(void *self, gf_sim *sim, int *stop) {
    (void)stop;
    return gf_forces_observe(self, sim, 0);
}

static void forces_release(void *self) {
    gf_forces_finish(self);
}

const gf_observer_type gf_forces_observer_type = {
    .name = "Forces",
    .size = sizeof(gf_forces),
    .configure = forces_configure,
    .check = forces_check,
    .start = forces_start,
    .observe = forces_observe,
    .release = forces_release,
};
