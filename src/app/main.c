/* granflow: run a granular-dynamics scenario described by a configuration file.
 *
 *     mpirun -n 640 granflow channel.cfg [-Block.key=value ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_schema.h"
#include "core/log.h"
#include "par/par.h"
#include "granflow/run.h"
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
        "and one of several blocks of a name by its place or its name key, e.g.\n"
        "  -Body[2].velocity=<0,0,-1>  -Materials.Material[steel].density=7800\n"
        "\n"
        "options:\n"
        "  --check      read and validate the configuration, print it, and stop (a lattice of\n"
        "               more than 1e7 sites is not placed: --dry-run estimates it per rank)\n"
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

    gf_run_options ro = {.config_path = o.config_path,
                         .overrides = (const char *const *)o.overrides,
                         .noverrides = o.noverrides,
                         .restart = o.restart,
                         .restart_force = o.restart_force,
                         .check = o.check_only};
    if (o.dry_run) {
        int failed = gf_par_conclude(&par, gf_run_dry(&ro, o.dry_ranks), 1);
        gf_par_finalize();
        return failed ? GF_EXIT_ERROR : 0;
    }
    gf_run *run = NULL;
    int resume = 0;
    int failed = gf_par_conclude(&par, gf_run_create(&ro, &run), 1);
    if (!failed && !o.check_only) {
        gf_run_handle_signals();
        long todo = gf_run_last_step(run) - gf_run_step(run);
        failed = gf_par_conclude(&par, gf_run_advance(run, todo > 0 ? todo : 0, NULL), 0);
        if (!failed)
            failed = gf_par_conclude(&par, gf_run_finish(run), 0);
        /* A signal or the wall-time limit: the batch script must resume, not stop. */
        if (!failed && gf_run_step(run) < gf_run_last_step(run))
            resume = 1;
    }
    gf_run_destroy(run);
    gf_par_finalize();
    if (failed)
        return GF_EXIT_ERROR;
    return resume ? GF_EXIT_RESUME : 0;
}
