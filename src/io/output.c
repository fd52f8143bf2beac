/* The output of a run: its configuration (Output block), the directory and the space it needs,
 * when snapshots and checkpoints are written and what they are named, the checkpoint a signal
 * asks for, and the snapshot list a restart rebuilds. */
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config_compare.h"
#include "geometry/geometry_mesh.h"
#include "core/log.h"
#include "core/vec.h"
#include "granflow/version.h"
#include "h5/h5file.h"
#include "layout.h"

static volatile sig_atomic_t checkpoint_requested = 0;

void gf_output_request_checkpoint(void) {
    checkpoint_requested = 1;
}

static void on_signal(int sig) {
    (void)sig;
    checkpoint_requested = 1;
}

void gf_output_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A write beyond a file size limit (ulimit -f, a batch system's) fails with EFBIG, which the
     * writer reports, instead of killing the job without a word. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Configuration                                                                              */

gf_status gf_output_configure(gf_output *o, gf_config_block *root) {
    memset(o, 0, sizeof *o);
    gf_config_block *b = gf_config_section(root, "Output");
    if (!b)
        return gf_error_status();
    GF_TRY(gf_config_get_string(b, "directory", "output", o->directory, sizeof o->directory));
    GF_TRY(gf_config_get_string(b, "prefix", "run", o->prefix, sizeof o->prefix));
    GF_TRY(gf_config_get_long(b, "snapshot_every", 0, &o->snapshot_every));
    GF_TRY(gf_config_check_range(b, "snapshot_every", (double)o->snapshot_every, 0, 1e15));
    GF_TRY(gf_config_get_bool(b, "contacts", 0, &o->contacts));
    GF_TRY(gf_config_get_long(b, "checkpoint_every", 0, &o->checkpoint_every));
    GF_TRY(gf_config_check_range(b, "checkpoint_every", (double)o->checkpoint_every, 0, 1e15));
    GF_TRY(gf_config_get_double(b, "wall_limit", 0.0, &o->wall_limit));
    GF_TRY(gf_config_check_range(b, "wall_limit", o->wall_limit, 0.0, 1e12));
    char def[GF_IO_PATH + 160];
    snprintf(def, sizeof def, "%s/%s.ckpt.h5", o->directory, o->prefix);
    GF_TRY(gf_config_get_string(b, "checkpoint", def, o->checkpoint, sizeof o->checkpoint));
    o->start = gf_wtime();
    o->checkpoint_step = -1;
    return GF_OK;
}

void gf_output_free(gf_output *o) {
    free(o->config_text);
    free(o->snaps);
    memset(o, 0, sizeof *o);
}

gf_status gf_output_set_config_text(gf_output *o, const char *text) {
    free(o->config_text);
    size_t n = strlen(text);
    o->config_text = gf_malloc(n + 1, 1);
    if (!o->config_text)
        return gf_error_status();
    memcpy(o->config_text, text, n + 1);
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The output schedule                                                                        */
static gf_status add_snapshot(gf_output *o, const gf_snapshot_entry *e) {
    /* The same file again (written anew) replaces its entry: each step is listed once. */
    if (o->nsnap > 0 && strcmp(o->snaps[o->nsnap - 1].file, e->file) == 0)
        o->nsnap--;
    if (o->nsnap == o->capsnap) {
        size_t cap = o->capsnap ? 2 * o->capsnap : 64;
        GF_TRY(gf_grow((void **)&o->snaps, cap, sizeof *o->snaps));
        o->capsnap = cap;
    }
    o->snaps[o->nsnap++] = *e;
    return GF_OK;
}

gf_status gf_io_mkdirs(const char *dir) {
    char buf[GF_IO_PATH];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; ++p) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0775) != 0 && errno != EEXIST)
                return GF_ERROR(GF_ERR_IO, "cannot create directory '%s': %s", buf,
                                strerror(errno));
            *p = c;
            if (c == '\0')
                return GF_OK;
        }
    }
}

static gf_status ensure_directory(const gf_sim *sim, const char *dir) {
    int rank = sim->par ? sim->par->rank : 0;
    gf_status st = rank == 0 ? gf_io_mkdirs(dir) : GF_OK;
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

gf_status gf_io_probe_location(const char *file, const char *what) {
    char dir[GF_IO_PATH];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    GF_TRY(gf_error_context(gf_io_mkdirs(dir), "%s", what));
    char probe[GF_IO_PATH + 64];
    snprintf(probe, sizeof probe, "%s/.granflow_probe_%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "w");
    if (!f)
        return GF_ERROR(GF_ERR_IO, "%s: cannot write into the directory '%s': %s", what, dir,
                        strerror(errno));
    fclose(f);
    remove(probe);
    return GF_OK;
}

static gf_status check_locations(const void *self) {
    const gf_output *o = self;
    char snap[GF_IO_PATH + 8];
    snprintf(snap, sizeof snap, "%s/x", o->directory);
    if (o->snapshot_every > 0)
        GF_TRY(gf_io_probe_location(snap, "Output.directory (snapshots)"));
    return gf_io_probe_location(o->checkpoint, "Output.checkpoint");
}

static void snapshot_name(const gf_output *o, long step, char *name, size_t size) {
    snprintf(name, size, "%s_%09ld.h5", o->prefix, step);
}

static gf_status snapshot(gf_output *o, gf_sim *sim) {
    GF_TRY(ensure_directory(sim, o->directory));
    char name[256], path[GF_IO_PATH + 300];
    snapshot_name(o, sim->step, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", o->directory, name);
    GF_TRY(gf_io_write_snapshot(o, sim, path));
    int64_t n[3] = {(int64_t)sim->particles.n_local, (int64_t)gf_io_layout_members(&sim->particles),
                    o->contacts && sim->contacts.keep_points ? (int64_t)sim->contacts.count : 0};
    if (sim->par)
        GF_TRY(gf_par_allreduce_i64(sim->par, n, 3, GF_PAR_SUM));
    /* The geometry's sizes: the ranks' shares together. */
    gf_geometry_mesh m;
    gf_geometry_mesh_init(&m);
    int64_t goff[3], gtotal[3];
    gf_status st = gf_io_layout_geometry_share(sim, &m, goff, gtotal);
    gf_geometry_mesh_free(&m);
    GF_TRY(st);
    /* Rank 0 keeps the list and writes the XDMF file. */
    if (!sim->par || sim->par->rank == 0) {
        gf_snapshot_entry e = {
            .time = sim->time, .particles = n[0], .members = n[1], .contacts = n[2]};
        snprintf(e.file, sizeof e.file, "%s", name);
        if (gtotal[1] > 0) {
            e.geometry[0] = (long long)gtotal[0];
            e.geometry[1] = (long long)gtotal[1];
            e.geometry[2] = (long long)gtotal[2];
        }
        if (st == GF_OK)
            st = add_snapshot(o, &e);
        if (st == GF_OK)
            st = gf_io_write_xdmf(o);
    }
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

static gf_status checkpoint(gf_output *o, gf_sim *sim) {
    char dir[GF_IO_PATH];
    snprintf(dir, sizeof dir, "%s", o->checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        GF_TRY(ensure_directory(sim, dir));
    }
    GF_TRY(gf_io_write_checkpoint(o, sim, o->checkpoint));
    o->checkpoint_step = sim->step;
    return GF_OK;
}

gf_status gf_output_begin(gf_output *o, gf_sim *sim, int restarted) {
    /* Contacts drawn as lines need their points from detection. */
    sim->contacts.keep_points = o->contacts && o->snapshot_every > 0;
    gf_status st = GF_OK;
    /* Before the run's clock starts: the phases of the summary add up to its total. */
    if (!restarted && o->snapshot_every > 0 && sim->step == 0)
        st = snapshot(o, sim);
    /* The step time that plans the wall-limit checks counts stepping only: set-up and the
     * step-0 snapshot (seconds on a loaded machine) would make the first steps look slow and
     * stop the run at once. */
    o->loop_start = gf_wtime();
    o->first_step = sim->step;
    o->check_step = sim->step;
    o->check_elapsed = 0.0;
    o->next_check_step = sim->step + 1;
    return st;
}

/* Wall seconds between the collective checks of signals and the wall-time limit. */
#define GF_IO_CHECK_SECONDS 0.25
/* The least room kept before the wall-time limit beyond the steps to the next check: a loaded
 * machine can stall a process for a tenth of a second or more (ranks descheduled on shared
 * cores), which 2% of a short limit does not hold. */
#define GF_IO_LIMIT_MARGIN 0.25

gf_status gf_output_observe(gf_output *o, gf_sim *sim, int *stop) {
    *stop = 0;
    gf_timer_start(&sim->timers, GF_TIMER_OUTPUT);
    gf_status st = GF_OK;
    if (o->snapshot_every > 0 && sim->step % o->snapshot_every == 0)
        st = snapshot(o, sim);
    if (st == GF_OK && o->checkpoint_every > 0 && sim->step % o->checkpoint_every == 0)
        st = checkpoint(o, sim);
    /* Signals and the wall-time limit: one collective decision about every GF_IO_CHECK_SECONDS
     * of wall time, not every step (a reduction per step costs small steps dearly). The next
     * check's step comes from reduced figures, so every rank checks at the same step. */
    if (st != GF_OK || sim->step < o->next_check_step) {
        gf_timer_stop(&sim->timers, GF_TIMER_OUTPUT);
        return st;
    }
    double now = gf_wtime();
    long steps_done = sim->step - o->first_step;
    /* Elapsed since configuration (what the limit bounds) and since stepping began (what the
     * step time comes from), the slowest rank's. */
    double flags[3] = {checkpoint_requested ? 1.0 : 0.0, now - o->start, now - o->loop_start};
    if (sim->par)
        st = gf_par_allreduce_double(sim->par, flags, 3, GF_PAR_MAX);
    if (st == GF_OK) {
        /* The slower of the run's mean step and the steps since the last check: a machine
         * that gets busier must not outrun the limit between checks. */
        double per_step = steps_done > 0 ? flags[2] / (double)steps_done : 0.0;
        long recent = sim->step - o->check_step;
        if (recent > 0 && o->check_step > o->first_step)
            per_step = fmax(per_step, (flags[2] - o->check_elapsed) / (double)recent);
        o->check_step = sim->step;
        o->check_elapsed = flags[2];
        /* A short limit is checked more often: its margin (2%) is small beside a quarter
         * second of steps that may turn slower (a pour becomes ten times slower per step when
         * the particles land). */
        double seconds = GF_IO_CHECK_SECONDS;
        if (o->wall_limit > 0)
            seconds = fmin(seconds, 0.01 * o->wall_limit);
        double every = per_step > 0.0 ? floor(seconds / per_step) : 1.0;
        long interval = every < 1.0 ? 1 : (every > 1000.0 ? 1000 : (long)every);
        o->next_check_step = sim->step + interval;
        /* Leave room for the steps to the next check, a few more and the checkpoint itself. */
        double margin = fmax(0.02 * o->wall_limit, GF_IO_LIMIT_MARGIN);
        int near_limit = o->wall_limit > 0 &&
                         flags[1] + (double)(interval + 5) * per_step + margin >= o->wall_limit;
        if (flags[0] > 0 || near_limit) {
            st = checkpoint(o, sim);
            if (st == GF_OK) {
                gf_log_info("%s at step %ld (t = %.6e s, %.2f s of wall time): checkpoint "
                            "written to %s\nresume with: granflow <config> --restart %s",
                            flags[0] > 0 ? "signal received" : "wall-time limit near", sim->step,
                            sim->time, flags[1], o->checkpoint, o->checkpoint);
                *stop = 1;
            }
        }
    }
    gf_timer_stop(&sim->timers, GF_TIMER_OUTPUT);
    return st;
}

gf_status gf_output_finish(gf_output *o, gf_sim *sim) {
    if (sim->step == o->checkpoint_step)
        return GF_OK;
    /* Not timed: the run's timers (and its summary) ended with the last step. */
    gf_status st = checkpoint(o, sim);
    if (st == GF_OK)
        gf_log_info("final checkpoint at step %ld (t = %.6e s) written to %s\n"
                    "continue with: granflow <config> --restart %s -Time.steps=<last step>",
                    sim->step, sim->time, o->checkpoint, o->checkpoint);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Restart: the configuration check and the snapshot list                                     */

/* The step of a snapshot file name "<prefix>_<step>.h5", or -1. */
static long snapshot_step(const gf_output *o, const char *name) {
    size_t lp = strlen(o->prefix);
    if (strncmp(name, o->prefix, lp) != 0 || name[lp] != '_')
        return -1;
    const char *d = name + lp + 1, *e = d;
    while (*e >= '0' && *e <= '9')
        ++e;
    if (e - d < 9 || strcmp(e, ".h5") != 0)
        return -1;
    return strtol(d, NULL, 10);
}

typedef struct {
    long step;
    gf_snapshot_entry e;
} listed_snapshot;

static int cmp_listed(const void *a, const void *b) {
    const listed_snapshot *x = a, *y = b;
    return x->step < y->step ? -1 : (x->step > y->step);
}

/* Time and particle count of a snapshot (serial HDF5, rank 0); 0 if it is a readable granflow
 * snapshot. */
/* The first extent of dataset `name`, 0 if it is absent; -1 if it is not a dataset of one. */
static long long extent_of(hid_t f, const char *group, const char *name) {
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0)
        return 0;
    char path[128];
    snprintf(path, sizeof path, "%s/%s", group, name);
    hid_t d = H5Dopen(f, path, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dim[2] = {0, 0};
    long long n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) >= 1 &&
        H5Sget_simple_extent_dims(sp, dim, NULL) >= 0)
        n = (long long)dim[0];
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    return n;
}

static int snapshot_info(const char *path, gf_snapshot_entry *e) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
    char format[64] = "";
    int rc = -1;
    hid_t a = H5Aexists(f, "format") > 0 ? H5Aopen(f, "format", H5P_DEFAULT) : -1;
    if (a >= 0) {
        hid_t ty = H5Aget_type(a);
        size_t len = H5Tget_size(ty);
        if (H5Tget_class(ty) == H5T_STRING && len < sizeof format) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, len);
            if (H5Aread(a, mt, format) >= 0)
                format[len] = '\0';
            H5Tclose(mt);
        }
        H5Tclose(ty);
        H5Aclose(a);
    }
    if (strcmp(format, FORMAT_SNAPSHOT) == 0) {
        hid_t at = H5Aopen(f, "time", H5P_DEFAULT), ac = H5Aopen(f, "particle_count", H5P_DEFAULT);
        if (at >= 0 && ac >= 0 && H5Aread(at, H5T_NATIVE_DOUBLE, &e->time) >= 0 &&
            H5Aread(ac, H5T_NATIVE_LLONG, &e->particles) >= 0)
            rc = 0;
        if (at >= 0)
            H5Aclose(at);
        if (ac >= 0)
            H5Aclose(ac);
    }
    /* The member spheres of clumps and the geometry mesh: their extents, 0 without them. */
    e->members = rc == 0 ? extent_of(f, "clump_members", "radius") : 0;
    e->geometry[0] = rc == 0 ? extent_of(f, "geometry", "position") : 0;
    e->geometry[1] = rc == 0 ? extent_of(f, "geometry", "kind") : 0;
    e->geometry[2] = rc == 0 ? extent_of(f, "geometry", "topology") : 0;
    /* Contacts as lines only where the file has their ends (not before this version). */
    e->contacts =
        rc == 0 && extent_of(f, "contacts", "position") > 0 ? extent_of(f, "contacts", "gap") : 0;
    if (e->members < 0 || e->geometry[0] < 0 || e->geometry[1] < 0 || e->geometry[2] < 0 ||
        e->contacts < 0)
        rc = -1;
    H5Fclose(f);
    return rc;
}

/* Rank 0: the snapshot list of a restarted run, from the snapshot files in the output directory
 * up to the restart step (those after it are the interrupted run's, superseded: the restarted run
 * writes them again), in step order; then the XDMF file, if there is anything to list or a file
 * to correct. */
static gf_status rebuild_snapshot_list(gf_output *o, long step) {
    o->nsnap = 0;
    DIR *dir = opendir(o->directory);
    if (!dir)
        return GF_OK; /* no output yet */
    listed_snapshot *list = NULL;
    size_t n = 0, cap = 0;
    gf_status st = GF_OK;
    for (struct dirent *e = readdir(dir); e && st == GF_OK; e = readdir(dir)) {
        long s = snapshot_step(o, e->d_name);
        if (s < 0 || s > step || strlen(e->d_name) >= sizeof list[0].e.file)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            st = gf_grow((void **)&list, cap, sizeof *list);
            if (st != GF_OK)
                break;
        }
        char path[GF_IO_PATH + 300];
        snprintf(path, sizeof path, "%s/%s", o->directory, e->d_name);
        listed_snapshot *l = &list[n];
        memset(l, 0, sizeof *l);
        l->step = s;
        snprintf(l->e.file, sizeof l->e.file, "%s", e->d_name);
        if (snapshot_info(path, &l->e) == 0)
            n++;
        else
            gf_log_warn("%s is not a readable granflow snapshot: left out of %s.xmf", path,
                        o->prefix);
    }
    closedir(dir);
    if (n > 1)
        qsort(list, n, sizeof *list, cmp_listed);
    for (size_t k = 0; k < n && st == GF_OK; ++k)
        st = add_snapshot(o, &list[k].e);
    free(list);
    char xmf[GF_IO_PATH + 160];
    snprintf(xmf, sizeof xmf, "%s/%s.xmf", o->directory, o->prefix);
    if (st == GF_OK && (o->nsnap > 0 || access(xmf, F_OK) == 0))
        st = gf_io_write_xdmf(o);
    return st;
}

gf_status gf_output_restart(gf_output *o, gf_sim *sim, const char *path, int force) {
    int rank = sim->par ? sim->par->rank : 0;
    char *stored = NULL, *report = NULL, *changed = NULL;
    GF_TRY(gf_io_read_configuration(sim, path, &stored));
    int ndiff = 0;
    gf_status st = GF_OK;
    if (stored[0] == '\0') {
        if (rank == 0)
            gf_log_warn("'%s' records no configuration: it cannot be checked against this one",
                        path);
    } else {
        st = gf_config_compare_changes(stored, o->config_text ? o->config_text : "", &report,
                                       &ndiff, &changed);
    }
    if (st == GF_OK && changed && rank == 0 && (ndiff == 0 || force))
        gf_log_info("restarting from '%s' with other values of keys a stage may change (the run "
                    "goes on with them from the checkpoint's step):\n%s",
                    path, changed);
    if (st == GF_OK && ndiff > 0) {
        if (!force)
            st = GF_ERROR(GF_ERR_INPUT,
                          "'%s' was written with a different configuration (restart with "
                          "--restart-force to continue anyway):\n%s",
                          path, report);
        else if (rank == 0)
            gf_log_warn("--restart-force: continuing from '%s', whose configuration differs:\n%s",
                        path, report);
    }
    free(stored);
    free(report);
    free(changed);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    GF_TRY(st);
    GF_TRY(gf_io_read_checkpoint(sim, path));
    /* The state at this step is in a checkpoint already: the one just read. */
    o->checkpoint_step = sim->step;
    if (rank == 0)
        st = rebuild_snapshot_list(o, sim->step);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* The output as an observer                                                                  */

static gf_status output_configure(void *self, gf_config_block *root, const gf_sim *sim) {
    (void)sim;
    return gf_output_configure(self, root);
}

static gf_status output_start(void *self, gf_sim *sim, int restarted) {
    return gf_output_begin(self, sim, restarted);
}

static gf_status output_observe(void *self, gf_sim *sim, int *stop) {
    return gf_output_observe(self, sim, stop);
}

static gf_status output_finish(void *self, gf_sim *sim) {
    return gf_output_finish(self, sim);
}

static void output_release(void *self) {
    gf_output_free(self);
}

const gf_observer_type gf_output_observer_type = {
    .name = "Output",
    .size = sizeof(gf_output),
    .configure = output_configure,
    .check = check_locations,
    .start = output_start,
    .observe = output_observe,
    .finish = output_finish,
    .release = output_release,
};
