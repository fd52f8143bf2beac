/* granflow: run a granular-dynamics scenario described by a configuration file.
 *
 *     mpirun -n 640 granflow channel.cfg [-Block.key=value ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granflow/config.h"
#include "granflow/config_schema.h"
#include "granflow/io.h"
#include "granflow/log.h"
#include "granflow/par.h"
#include "granflow/run_observers.h"
#include "granflow/sim.h"
#include "granflow/version.h"

/* Exit statuses: batch scripts tell a finished run from one to resume. */
enum {
    GF_EXIT_ERROR = 1,   /* an error (its message is printed); a one-rank abort gives 1 too */
    GF_EXIT_USAGE = 2,   /* a bad command line */
    GF_EXIT_RESUME = 75, /* stopped early by a signal or Output.wall_limit, checkpoint written:
                            resume with --restart (EX_TEMPFAIL of sysexits.h) */
};

static void usage(void) {
    char list[1024], keys[1200];
    gf_config_schema_restart_free_list(list, sizeof list);
    /* In lines of the help's width, under the option's text. */
    size_t n = 0, col = 0;
    for (const char *p = list; *p && n + 32 < sizeof keys;) {
        size_t len = strcspn(p, " ");
        if (col > 0 && col + len > 72) {
            n += (size_t)snprintf(keys + n, sizeof keys - n, "\n               ");
            col = 0;
        }
        n += (size_t)snprintf(keys + n, sizeof keys - n, "%s%.*s", col ? " " : "", (int)len, p);
        col += len + 1;
        p += len;
        p += strspn(p, " ");
    }
    gf_log_info(
        "usage: granflow FILE.cfg [-Block.key=value ...] [options]\n"
        "\n"
        "Runs the granular-dynamics scenario described by FILE.cfg (see configs/ and docs/).\n"
        "Any key of the configuration can be overridden on the command line, e.g.\n"
        "  granflow demo.cfg -Time.steps=500 -Solver.model=coulomb\n"
        "\n"
        "options:\n"
        "  --check      read and validate the configuration, print it, and stop\n"
        "  --restart F  continue from the checkpoint F (any rank count); the configuration must\n"
        "               match the checkpoint's except the keys that may change at a restart:\n"
        "               %s\n"
        "  --restart-force  continue even if other keys differ (a warning names them)\n"
        "  --dry-run    check the setup for --ranks N processes without running (memory estimate)\n"
        "  --ranks N    the rank count of a dry run (default: this job's)\n"
        "  --help-config [BLOCK]  every configuration key (or those of BLOCK and its\n"
        "               sub-blocks) with its type, default, range and meaning; --help-config\n"
        "               markdown prints docs/configuration.md's table\n"
        "  --help       this text\n"
        "  --version    version and build information\n"
        "\n"
        "exit status: 0 the run finished; 1 an error; 2 a bad command line; 75 stopped early by\n"
        "a signal (SIGTERM, SIGUSR1) or Output.wall_limit after writing a checkpoint: resume\n"
        "with --restart",
        keys);
}

typedef struct {
    const char *config_path;
    const char *restart;
    int restart_force;
    int dry_run;
    int dry_ranks;
    int check_only;
    int help;
    int help_config;
    const char *help_block; /* --help-config BLOCK */
    int version;
    int noverrides;
    char **overrides;
} options;

static gf_status parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->overrides = argv;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            o->help = 1;
        else if (strcmp(a, "--help-config") == 0) {
            o->help_config = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-')
                o->help_block = argv[++i];
        } else if (strcmp(a, "--version") == 0)
            o->version = 1;
        else if (strcmp(a, "--check") == 0)
            o->check_only = 1;
        else if (strcmp(a, "--dry-run") == 0)
            o->dry_run = 1;
        else if (strcmp(a, "--ranks") == 0) {
            if (i + 1 >= argc || atoi(argv[i + 1]) < 1)
                return GF_ERROR(GF_ERR_INPUT, "--ranks needs a positive number");
            o->dry_ranks = atoi(argv[++i]);
        } else if (strcmp(a, "--restart-force") == 0) {
            o->restart_force = 1;
        } else if (strcmp(a, "--restart") == 0) {
            if (i + 1 >= argc)
                return GF_ERROR(GF_ERR_INPUT, "--restart needs a checkpoint file");
            o->restart = argv[++i];
        } else if (a[0] == '-' && a[1] == '-')
            return GF_ERROR(GF_ERR_INPUT, "unknown option '%s' (see granflow --help)", a);
        else if (a[0] == '-')
            o->overrides[o->noverrides++] = argv[i];
        else if (!o->config_path)
            o->config_path = a;
        else
            return GF_ERROR(GF_ERR_INPUT, "more than one configuration file given ('%s' and '%s')",
                            o->config_path, a);
    }
    if (!o->config_path && !o->help && !o->help_config && !o->version)
        return GF_ERROR(GF_ERR_INPUT, "no configuration file given (see granflow --help)");
    if (o->restart_force && !o->restart)
        return GF_ERROR(GF_ERR_INPUT, "--restart-force needs --restart F");
    return GF_OK;
}

/* Reads and parses the configuration on rank 0, then gives every rank the same text. */
static gf_status load_config(const gf_par *par, const options *o, gf_config **cfg) {
    char *text = NULL;
    size_t len = 0;
    gf_status st = GF_OK;
    *cfg = NULL;
    if (par->rank == 0) {
        st = gf_config_read_file(o->config_path, &text, &len);
        if (st == GF_OK)
            st = gf_config_parse(text, len, o->config_path, cfg);
    }
    int first = 0;
    gf_status all = gf_par_agree(par, st, &first);
    if (all != GF_OK) {
        free(text);
        gf_config_destroy(*cfg);
        *cfg = NULL;
        return all;
    }
    GF_TRY(gf_par_bcast_text(par, 0, &text, &len));
    if (par->rank != 0)
        st = gf_config_parse(text, len, o->config_path, cfg);
    free(text);
    for (int i = 0; st == GF_OK && i < o->noverrides; ++i)
        st = gf_config_override(*cfg, o->overrides[i]);
    return st;
}

/* The blocks read after the simulation's, then the check that every key was used. */
static gf_status configure_observers(gf_config *cfg, const gf_sim *sim, gf_observers *obs) {
    GF_TRY(gf_observers_configure(obs, gf_config_root(cfg), sim));
    return gf_config_check_unused(cfg);
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK) {
        fprintf(stderr, "granflow: %s\n", gf_error_message());
        return GF_EXIT_ERROR;
    }
    gf_log_set_rank(par.rank);

    options o;
    gf_status st = parse_args(argc, argv, &o);
    if (gf_par_conclude(&par, st, 1)) {
        gf_par_finalize();
        return GF_EXIT_USAGE;
    }
    if (o.help_config) {
        char *text = NULL;
        if (o.help_block && strcmp(o.help_block, "markdown") == 0)
            st = gf_config_schema_markdown(&text);
        else
            st = gf_config_schema_help(o.help_block, &text);
        if (st == GF_OK) {
            size_t n = strlen(text);
            if (n > 0 && text[n - 1] == '\n')
                text[n - 1] = '\0'; /* gf_log_info ends the line */
            gf_log_info("%s", text);
        }
        free(text);
        int bad = gf_par_conclude(&par, st, 1);
        gf_par_finalize();
        return bad ? GF_EXIT_USAGE : 0;
    }
    if (o.help || o.version) {
        if (o.help)
            usage();
        if (o.version)
            gf_log_info("%s", gf_version_string());
        gf_par_finalize();
        return 0;
    }

    gf_config *cfg = NULL;
    gf_sim sim;
    gf_observers obs;
    int resume = 0;
    int failed = gf_par_conclude(&par, gf_run_observers_add(&obs), 1);
    gf_output *out = gf_observers_find(&obs, &gf_output_observer_type);
    if (!failed)
        failed = gf_par_conclude(&par, load_config(&par, &o, &cfg), 1);
    if (!failed)
        failed = gf_par_conclude(&par, gf_sim_init(&sim, &par), 1);
    if (!failed && o.dry_run) {
        st = GF_OK;
        if (par.rank == 0) {
            st = gf_sim_dry_run(&sim, cfg, o.dry_ranks ? o.dry_ranks : par.size);
            if (st == GF_OK)
                st = configure_observers(cfg, &sim, &obs);
        }
        failed = gf_par_conclude(&par, st, 1);
        gf_observers_free(&obs);
        gf_sim_free(&sim);
        gf_config_destroy(cfg);
        gf_par_finalize();
        return failed;
    }
    if (!failed) {
        st = gf_sim_configure(&sim, cfg, o.restart == NULL);
        if (st == GF_OK)
            st = configure_observers(cfg, &sim, &obs);
        char *eff = NULL;
        if (st == GF_OK)
            st = gf_config_dump(cfg, &eff);
        if (st == GF_OK)
            st = gf_output_set_config_text(out, eff);
        failed = gf_par_conclude(&par, st, 1);
        if (!failed) {
            gf_log_info("%s\n%d rank(s); effective configuration of %s:\n%s", gf_version_string(),
                        par.size, o.config_path, eff);
        }
        free(eff);
        if (!failed && o.restart) {
            failed =
                gf_par_conclude(&par, gf_output_restart(out, &sim, o.restart, o.restart_force), 1);
            if (!failed)
                gf_log_info("restarted from %s at step %ld (t = %.6e s)", o.restart, sim.step,
                            sim.time);
        }
        if (!failed) {
            int64_t n = (int64_t)sim.particles.n_local;
            failed = gf_par_conclude(&par, gf_par_allreduce_i64(&par, &n, 1, GF_PAR_SUM), 1);
            gf_log_info("%lld particles, %zu walls, %d x %d x %d processes, solver %s, dt %g s, "
                        "steps %ld to %ld",
                        (long long)n, sim.walls.count, sim.dims[0], sim.dims[1], sim.dims[2],
                        gf_solver_model_name(sim.solver_params.model), sim.dt, sim.step, sim.steps);
        }
        if (!failed && !o.check_only)
            failed = gf_par_conclude(&par, gf_observers_check(&obs, &sim), 1);
        if (!failed && !o.check_only) {
            gf_output_install_signal_handlers();
            failed = gf_par_conclude(&par, gf_observers_start(&obs, &sim, o.restart != NULL), 0);
            if (!failed)
                failed = gf_par_conclude(&par, gf_sim_run(&sim, gf_observers_observe, &obs), 0);
            if (!failed)
                failed = gf_par_conclude(&par, gf_observers_finish(&obs, &sim), 0);
            if (!failed) {
                gf_sim_print_summary(&sim);
                /* A signal or the wall-time limit: the batch script must resume, not stop. */
                if (sim.step < sim.steps)
                    resume = 1;
            }
        }
        gf_sim_free(&sim);
    }
    gf_observers_free(&obs);
    gf_config_destroy(cfg);
    gf_par_finalize();
    if (failed)
        return GF_EXIT_ERROR;
    return resume ? GF_EXIT_RESUME : 0;
}
