/* cli_table: cosched's commands and options as data. Parsing (cli_parse.c), --help's usage
 * lines, bash completion and the man page's synopsis (cli_complete.c) all come from it. */
#ifndef COSCHED_CLI_TABLE_H
#define COSCHED_CLI_TABLE_H

#include <stdio.h>

#include "rpc.h"

/* Every option cosched knows, declared once: a command lists those it takes. */
typedef enum {
    CLI_O_SOCKET,
    CLI_O_JSON,
    CLI_O_TIMEOUT,
    CLI_O_HELP,
    CLI_O_VERSION,
    CLI_O_TOPOLOGY,
    CLI_O_FORMAT,
    CLI_O_JOB,
    CLI_O_RANK,
    CLI_O_UID,
    /* a placement request: plan computes it, job register asks the daemon for it */
    CLI_O_POLICY,
    CLI_O_GPUS,
    CLI_O_RANKS_PER_GPU,
    CLI_O_CORES_PER_RANK,
    CLI_O_NOISE_RANKS,
    CLI_O_SMT,
    CLI_O_MEM,
    CLI_O_ROLE,
    CLI_O_CORES,
    CLI_O_BUDGET,
    CLI_O_CPUS,
    CLI_O_EXTERNAL,
    CLI_O_PROGRESS,
    CLI_O_PARTITION,
    CLI_O_AUTOREPORT,
    CLI_O_SHARE_CORES,
    CLI_O_ENV,
    CLI_O_CWD,
    CLI_O_WATCH,
    CLI_O_STEP_TIME,
    CLI_O_BASELINE,
    CLI_O_PHASE,
    CLI_O_SHARE,
    CLI_O_REPS,
    CLI_O_WARMUP,
    CLI_O_STEPS,
    CLI_O_MODEL,
    CLI_O_BATCH,
    CLI_O_NOISE,
    CLI_O_TRAINER,
    CLI_O_GUARD,
    CLI_O_OUT,
    CLI_O_DRY_RUN,
    CLI_O_SWEEP,
    CLI_O_PLACEMENT,
    CLI_O_TRACE,
    CLI_O_DESIGN,
    CLI_O_TIME,
    CLI_O_PRECISION,
    CLI_O_BLOCK,
    CLI_O_SEED,
    CLI_O_PLOT,
    /* slurm-conf's recipe and its check */
    CLI_O_GPU_PARTITION,
    CLI_O_HARVEST_PARTITION,
    CLI_O_NODES,
    CLI_O_SLURM_VERSION,
    CLI_O_GRACE,
    CLI_O_MEM_SPEC,
    CLI_O_CHECK,
    CLI_O_FROM,
    CLI_NOPTIONS,
    CLI_END = -1 /* ends a command's list */
} cli_option_id_t;

typedef enum { CLI_ARG_NONE, CLI_ARG_REQUIRED, CLI_ARG_OPTIONAL } cli_arg_t;

/* What completion offers for an option's value: these words, or one of the two kinds below. */
#define CLI_VALUES_FILE "@file"
#define CLI_VALUES_JOB "@job"

typedef struct cli_option {
    const char *name; /* --name; getopt takes any unambiguous prefix of it */
    cli_arg_t arg;
    const char *values; /* NULL: completion offers file names, as it does for anything */
    double min, max;    /* a number's range, both included; 0, 0 for other values */
} cli_option_t;

typedef int (*cli_run_t)(const client_opts_t *o, int argc, char **argv);

typedef struct cli_command {
    const char *path;    /* "plan", "job register"; "" is cosched itself (its global options) */
    cli_run_t run;       /* a group (job, run, guard) dispatches to its subcommands */
    const char *summary; /* a top-level command's line in `cosched --help` */
    /* Its usage lines, each "cosched ..." (continuations indented to line up after "Usage: ");
     * a group's usage is its subcommands'. */
    const char *synopsis;
    const cli_option_id_t *options; /* CLI_END-terminated; NULL for none */
    void (*help)(FILE *out);        /* --help's text after the usage lines (top-level commands) */
} cli_command_t;

extern const cli_option_t cli_options[CLI_NOPTIONS];
extern const cli_command_t cli_commands[];
extern const int cli_ncommands;

/* The command of this path ("job register"), or NULL. */
const cli_command_t *cli_command_find(const char *path);

#endif
