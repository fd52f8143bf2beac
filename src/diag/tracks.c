#include "diag/tracks.h"
#include "core/order.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/csv_series.h"
#include "io/io.h"

gf_status gf_tracks_parse_ids(const char *text, int64_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    const char *s = text;
    for (;;) {
        while (*s == ' ' || *s == ',' || *s == '\t')
            ++s;
        if (!*s)
            break;
        char *end;
        errno = 0;
        long long a = strtoll(s, &end, 10), b;
        if (end == s || a < 0 || errno) {
            free(*ids);
            *ids = NULL;
            *n = 0;
            return GF_ERROR(GF_ERR_INPUT, "'%s' is not a list of particle ids (at '%s')", text, s);
        }
        s = end;
        b = a;
        if (*s == '-') {
            const char *t = s + 1;
            errno = 0;
            b = strtoll(t, &end, 10);
            if (end == t || b < a || errno) {
                free(*ids);
                *ids = NULL;
                *n = 0;
                return GF_ERROR(GF_ERR_INPUT, "'%s': a range a-b needs ids a <= b (at '%s')", text,
                                t);
            }
            s = end;
        }
        if (*s && *s != ' ' && *s != ',' && *s != '\t') {
            free(*ids);
            *ids = NULL;
            *n = 0;
            return GF_ERROR(GF_ERR_INPUT, "'%s' is not a list of particle ids (at '%s')", text, s);
        }
        if ((double)*n + (double)(b - a) + 1.0 > GF_TRACKS_MAX) {
            free(*ids);
            *ids = NULL;
            *n = 0;
            return GF_ERROR(GF_ERR_INPUT, "'%s' selects more than %d particles", text,
                            GF_TRACKS_MAX);
        }
        if (*n + (size_t)(b - a) + 1 > cap) {
            cap = 2 * (*n + (size_t)(b - a) + 1);
            gf_status st = gf_grow((void **)ids, cap, sizeof **ids);
            if (st != GF_OK) {
                free(*ids);
                *ids = NULL;
                *n = 0;
                return st;
            }
        }
        for (long long k = a; k <= b; ++k)
            (*ids)[(*n)++] = (int64_t)k;
    }
    qsort(*ids, *n, sizeof **ids, gf_cmp_i64);
    size_t m = 0;
    for (size_t k = 0; k < *n; ++k)
        if (m == 0 || (*ids)[k] != (*ids)[m - 1])
            (*ids)[m++] = (*ids)[k];
    *n = m;
    return GF_OK;
}

gf_status gf_tracks_configure(gf_tracks *tr, gf_config_block *root) {
    memset(tr, 0, sizeof *tr);
    if (gf_config_section_count(root, "Tracks") == 0)
        return GF_OK;
    gf_config_block *b = gf_config_section(root, "Tracks");
    char where[512];
    gf_config_block_where(b, where, sizeof where);
    static char list[65536];
    GF_TRY(gf_config_require_string(b, "ids", list, sizeof list));
    GF_TRY(gf_config_get_long(b, "every", 10, &tr->every));
    GF_TRY(gf_config_check_range(b, "every", (double)tr->every, 0, 1e15));
    char dir[900], def[1024];
    GF_TRY(gf_config_get_string(gf_config_section(root, "Output"), "directory", "output", dir,
                                sizeof dir));
    snprintf(def, sizeof def, "%s/tracks.csv", dir);
    GF_TRY(gf_config_get_string(b, "file", def, tr->file, sizeof tr->file));
    GF_TRY(
        gf_error_context(gf_tracks_parse_ids(list, &tr->ids, &tr->nids), "%s: Tracks.ids", where));
    return GF_OK;
}

gf_status gf_tracks_start(gf_tracks *tr, const gf_sim *sim, int restarted) {
    tr->resume_step = restarted ? sim->step : 0;
    return GF_OK;
}

typedef struct {
    int64_t id;
    double s[9]; /* x, v, w */
} track_row;

static int cmp_row(const void *a, const void *b) {
    return gf_cmp_i64(&((const track_row *)a)->id, &((const track_row *)b)->id);
}

gf_status gf_tracks_observe(gf_tracks *tr, const gf_sim *sim, int force) {
    if (tr->every <= 0 || tr->nids == 0 || (!force && sim->step % tr->every != 0))
        return GF_OK;
    const gf_particles *p = &sim->particles;
    /* The selected particles this rank owns: at most all of them. */
    size_t cap = tr->nids < p->n_local ? tr->nids : p->n_local;
    track_row *mine = gf_malloc(cap + 1, sizeof *mine);
    gf_status st = mine ? GF_OK : gf_error_status();
    size_t n = 0;
    for (size_t i = 0; st == GF_OK && i < p->n_local && n < cap; ++i) {
        if (!bsearch(&p->id[i], tr->ids, tr->nids, sizeof *tr->ids, gf_cmp_i64))
            continue;
        track_row *r = &mine[n++];
        r->id = p->id[i];
        for (int d = 0; d < 3; ++d) {
            r->s[d] = p->x[d][i];
            r->s[3 + d] = p->v[d][i];
            r->s[6 + d] = p->w[d][i];
        }
    }
    track_row *all = mine;
    size_t total = n;
    if (sim->par) {
        st = gf_par_agree(sim->par, st, NULL);
        void *got = NULL;
        size_t *off = NULL;
        if (st == GF_OK)
            st = gf_par_gather_bytes(sim->par, 0, mine, n * sizeof *mine, &got, &off);
        free(mine);
        mine = NULL;
        all = got;
        total = off ? off[sim->par->size] / sizeof *all : 0;
        free(off);
    }
    int root = !sim->par || sim->par->rank == 0;
    if (st == GF_OK && root) {
        qsort(all, total, sizeof *all, cmp_row);
        static const char header[] = "step,time,id,x,y,z,vx,vy,vz,wx,wy,wz\n";
        if (!tr->csv)
            st = gf_csv_series_open(tr->file, header, tr->resume_step, "Tracks.file", &tr->csv);
        int bad = 0;
        for (size_t k = 0; st == GF_OK && k < total; ++k) {
            const double *s = all[k].s;
            bad |= fprintf(tr->csv,
                           "%ld,%.17g,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                           sim->step, sim->time, (long long)all[k].id, s[0], s[1], s[2], s[3], s[4],
                           s[5], s[6], s[7], s[8]) < 0;
        }
        if (st == GF_OK && (bad || fflush(tr->csv) != 0))
            st =
                GF_ERROR(GF_ERR_IO, "writing tracks to '%s' failed: %s", tr->file, strerror(errno));
    }
    free(all);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

void gf_tracks_free(gf_tracks *tr) {
    if (tr->csv)
        fclose(tr->csv);
    free(tr->ids);
    memset(tr, 0, sizeof *tr);
}

/* ------------------------------------------------------------------------------------------ */
/* Tracks as an observer                                                                      */

static gf_status tracks_configure(void *self, gf_config_block *root, const gf_sim *sim) {
    (void)sim;
    return gf_tracks_configure(self, root);
}

static gf_status tracks_check(const void *self) {
    const gf_tracks *tr = self;
    return tr->every > 0 && tr->nids > 0 ? gf_io_probe_location(tr->file, "Tracks.file") : GF_OK;
}

static gf_status tracks_start(void *self, gf_sim *sim, int restarted) {
    return gf_tracks_start(self, sim, restarted);
}

static gf_status tracks_observe(void *self, gf_sim *sim, int *stop) {
    (void)stop;
    return gf_tracks_observe(self, sim, 0);
}

static void tracks_release(void *self) {
    gf_tracks_free(self);
}

const gf_observer_type gf_tracks_observer_type = {
    .name = "Tracks",
    .size = sizeof(gf_tracks),
    .configure = tracks_configure,
    .check = tracks_check,
    .start = tracks_start,
    .observe = tracks_observe,
    .release = tracks_release,
};
