/* cli_table: the one table of cosched's commands and options; see cli_table.h. Order matters:
 * commands are listed by `cosched --help` and subcommands named in errors in this order. */
#include "cli_table.h"

#include <string.h>

#include "bounds.h"
#include "client.h"
#include "experiment.h"

#define FILES CLI_VALUES_FILE
const cli_option_t cli_options[CLI_NOPTIONS] = {
    [CLI_O_SOCKET] = {"socket", CLI_ARG_REQUIRED, FILES},
    [CLI_O_JSON] = {"json", CLI_ARG_NONE, NULL},
    [CLI_O_TIMEOUT] = {"timeout", CLI_ARG_REQUIRED, NULL},
    [CLI_O_HELP] = {"help", CLI_ARG_NONE, NULL},
    [CLI_O_VERSION] = {"version", CLI_ARG_NONE, NULL},
    [CLI_O_TOPOLOGY] = {"topology", CLI_ARG_REQUIRED, FILES},
    [CLI_O_FORMAT] = {"format", CLI_ARG_REQUIRED, NULL},
    [CLI_O_JOB] = {"job", CLI_ARG_REQUIRED, CLI_VALUES_JOB},
    [CLI_O_RANK] = {"rank", CLI_ARG_REQUIRED, NULL, 0, BOUNDS_INDEX_MAX},
    [CLI_O_UID] = {"uid", CLI_ARG_REQUIRED, NULL, 0, BOUNDS_UID_MAX},
    [CLI_O_POLICY] = {"policy", CLI_ARG_REQUIRED, "exclusive shared l3 cores"},
    [CLI_O_GPUS] = {"gpus", CLI_ARG_REQUIRED, NULL},
    [CLI_O_RANKS_PER_GPU] = {"ranks-per-gpu", CLI_ARG_REQUIRED, NULL, 1, BOUNDS_COUNT_MAX},
    [CLI_O_CORES_PER_RANK] = {"cores-per-rank", CLI_ARG_REQUIRED, NULL, 1, BOUNDS_COUNT_MAX},
    [CLI_O_NOISE_RANKS] = {"noise-ranks", CLI_ARG_REQUIRED, NULL, 0, BOUNDS_COUNT_MAX},
    [CLI_O_SMT] = {"smt", CLI_ARG_NONE, NULL},
    [CLI_O_MEM] = {"mem", CLI_ARG_REQUIRED, "local hbm"},
    [CLI_O_ROLE] = {"role", CLI_ARG_REQUIRED, "trainer cotenant"},
    [CLI_O_CORES] = {"cores", CLI_ARG_REQUIRED, NULL, 1, BOUNDS_COUNT_MAX},
    [CLI_O_BUDGET] = {"budget", CLI_ARG_REQUIRED, NULL},
    [CLI_O_CPUS] = {"cpus", CLI_ARG_REQUIRED, NULL},
    [CLI_O_EXTERNAL] = {"external", CLI_ARG_NONE, NULL},
    [CLI_O_PROGRESS] = {"progress", CLI_ARG_REQUIRED, "auto steps gpu pmu none"},
    [CLI_O_PARTITION] = {"partition", CLI_ARG_REQUIRED, NULL},
    [CLI_O_AUTOREPORT] = {"autoreport", CLI_ARG_REQUIRED, "on off"},
    [CLI_O_SHARE_CORES] = {"share-cores", CLI_ARG_NONE, NULL},
    [CLI_O_ENV] = {"env", CLI_ARG_REQUIRED, NULL},
    [CLI_O_CWD] = {"cwd", CLI_ARG_REQUIRED, FILES},
    [CLI_O_WATCH] = {"watch", CLI_ARG_OPTIONAL, NULL},
    [CLI_O_STEP_TIME] = {"step-time", CLI_ARG_REQUIRED, NULL},
    [CLI_O_BASELINE] = {"baseline", CLI_ARG_NONE, NULL},
    [CLI_O_PHASE] = {"phase", CLI_ARG_REQUIRED, NULL},
    [CLI_O_SHARE] = {"share", CLI_ARG_REQUIRED, NULL, BOUNDS_SHARE_MIN, BOUNDS_SHARE_MAX},
    [CLI_O_REPS] = {"reps", CLI_ARG_REQUIRED, NULL, 1, EXP_MAX_REPS},
    [CLI_O_WARMUP] = {"warmup", CLI_ARG_REQUIRED, NULL, 0, 100},
    [CLI_O_STEPS] = {"steps", CLI_ARG_REQUIRED, NULL, 1, 10000000},
    [CLI_O_MODEL] = {"model", CLI_ARG_REQUIRED, NULL},
    [CLI_O_BATCH] = {"batch", CLI_ARG_REQUIRED, NULL, 1, 65536},
    [CLI_O_NOISE] = {"noise", CLI_ARG_REQUIRED, NULL},
    [CLI_O_TRAINER] = {"trainer", CLI_ARG_REQUIRED, NULL},
    [CLI_O_GUARD] = {"guard", CLI_ARG_NONE, NULL},
    [CLI_O_OUT] = {"out", CLI_ARG_REQUIRED, FILES},
    [CLI_O_DRY_RUN] = {"dry-run", CLI_ARG_NONE, NULL},
    [CLI_O_SWEEP] = {"sweep", CLI_ARG_REQUIRED, "intensity threads"},
    [CLI_O_PLACEMENT] = {"placement", CLI_ARG_REQUIRED, "exclusive shared"},
    [CLI_O_TRACE] = {"trace", CLI_ARG_REQUIRED, FILES},
    [CLI_O_DESIGN] = {"design", CLI_ARG_REQUIRED, "blocks runs"},
    [CLI_O_TIME] = {"time", CLI_ARG_REQUIRED, NULL, 5, 86400},
    [CLI_O_PRECISION] = {"precision", CLI_ARG_REQUIRED, NULL, 0.001, 1},
    [CLI_O_BLOCK] = {"block", CLI_ARG_REQUIRED, NULL, 0.2, 60},
    [CLI_O_SEED] = {"seed", CLI_ARG_REQUIRED, NULL, 0, 2147483647},
    [CLI_O_PLOT] = {"plot", CLI_ARG_REQUIRED, FILES},
    [CLI_O_GPU_PARTITION] = {"gpu-partition", CLI_ARG_REQUIRED, NULL},
    [CLI_O_HARVEST_PARTITION] = {"harvest-partition", CLI_ARG_REQUIRED, NULL},
    [CLI_O_NODES] = {"nodes", CLI_ARG_REQUIRED, NULL},
    [CLI_O_SLURM_VERSION] = {"slurm-version", CLI_ARG_REQUIRED, NULL},
    [CLI_O_GRACE] = {"grace", CLI_ARG_REQUIRED, NULL, 0, 86400},
    [CLI_O_MEM_SPEC] = {"mem-spec", CLI_ARG_REQUIRED, NULL, 0, 1073741824},
    [CLI_O_CHECK] = {"check", CLI_ARG_NONE, NULL},
    [CLI_O_FROM] = {"from", CLI_ARG_REQUIRED, FILES},
};

#define OPTIONS(...) ((const cli_option_id_t[]){__VA_ARGS__, CLI_END})

const cli_command_t cli_commands[] = {
    {"", NULL, NULL, "cosched [--socket PATH] [--json] [--timeout SECONDS] COMMAND [OPTIONS]",
     OPTIONS(CLI_O_SOCKET, CLI_O_JSON, CLI_O_TIMEOUT, CLI_O_HELP, CLI_O_VERSION), NULL},
    {"topo", cmd_topo, "show NUMA domains, cores, L3 groups, GPUs and NICs (no daemon needed)",
     "cosched topo [--topology FILE] [--json]", OPTIONS(CLI_O_TOPOLOGY, CLI_O_JSON, CLI_O_HELP), cmd_topo_help},
    {"plan", cmd_plan, "place trainer ranks on their GPUs' domains and noise on the rest (no daemon)",
     "cosched plan [--topology FILE] [--policy exclusive|shared|l3|cores] [--gpus LIST]\n"
     "             [--ranks-per-gpu N] [--cores-per-rank N] [--noise-ranks N] [--smt]\n"
     "             [--mem local|hbm] [--json | --format table|json|srun|list|env]",
     OPTIONS(CLI_O_TOPOLOGY, CLI_O_POLICY, CLI_O_GPUS, CLI_O_RANKS_PER_GPU, CLI_O_CORES_PER_RANK, CLI_O_NOISE_RANKS,
             CLI_O_SMT, CLI_O_MEM, CLI_O_JSON, CLI_O_FORMAT, CLI_O_HELP),
     cmd_plan_help},
    {"slurm-conf", cmd_slurm_conf, "the Slurm recipe for this node: harvest partition, GPU-local cores (no daemon)",
     "cosched slurm-conf [--topology FILE] [--nodes LIST] [--gpu-partition NAME] [--harvest-partition NAME]\n"
     "                   [--slurm-version X.Y] [--grace SECONDS] [--mem-spec MIB] [--check [--from DIR]] [--json]",
     OPTIONS(CLI_O_TOPOLOGY, CLI_O_NODES, CLI_O_GPU_PARTITION, CLI_O_HARVEST_PARTITION, CLI_O_SLURM_VERSION,
             CLI_O_GRACE, CLI_O_MEM_SPEC, CLI_O_CHECK, CLI_O_FROM, CLI_O_JSON, CLI_O_HELP),
     cmd_slurm_conf_help},
    {"status", cmd_status, "is coschedd up, and what does it hold", "cosched status", NULL, cmd_status_help},
    {"job", cmd_job, "register | release | list jobs (Slurm prolog / epilog)", NULL, NULL, cmd_job_help},
    {"job register", cmd_job_register, NULL,
     "cosched job register --job ID --uid UID --role trainer|cotenant [--gpus LIST]\n"
     "                     [--ranks-per-gpu N] [--cores-per-rank N] [--cores N] [--policy P]\n"
     "                     [--budget FRACTION] [--cpus LIST] [--external]\n"
     "                     [--progress auto|steps|gpu|pmu|none] [--partition NAME]\n"
     "                     [--autoreport on|off] [--share-cores]",
     OPTIONS(CLI_O_JOB, CLI_O_UID, CLI_O_ROLE, CLI_O_GPUS, CLI_O_RANKS_PER_GPU, CLI_O_CORES_PER_RANK, CLI_O_CORES,
             CLI_O_POLICY, CLI_O_BUDGET, CLI_O_CPUS, CLI_O_EXTERNAL, CLI_O_PROGRESS, CLI_O_PARTITION, CLI_O_AUTOREPORT,
             CLI_O_SHARE_CORES, CLI_O_HELP),
     NULL},
    {"job release", cmd_job_release, NULL, "cosched job release --job ID", OPTIONS(CLI_O_JOB, CLI_O_HELP), NULL},
    {"job get", cmd_job_get, NULL, "cosched job get --job ID", OPTIONS(CLI_O_JOB, CLI_O_HELP), NULL},
    {"job confine", cmd_job_confine, NULL, "cosched job confine --job ID", OPTIONS(CLI_O_JOB, CLI_O_HELP), NULL},
    {"job list", cmd_job_list, NULL, "cosched job list", NULL, NULL},
    {"run", cmd_run, "start | stop | list commands the daemon launches inside a job", NULL, NULL, cmd_run_help},
    {"run start", cmd_run_start, NULL,
     "cosched run start [--job ID] [--rank R] [--env NAME=VALUE]... [--cwd DIR] -- CMD [ARGS...]",
     OPTIONS(CLI_O_JOB, CLI_O_RANK, CLI_O_ENV, CLI_O_CWD, CLI_O_JSON, CLI_O_HELP), NULL},
    {"run stop", cmd_run_stop, NULL, "cosched run stop ID", NULL, NULL},
    {"run list", cmd_run_list, NULL, "cosched run list [--job ID]", OPTIONS(CLI_O_JOB, CLI_O_HELP), NULL},
    {"stats", cmd_stats, "step times, baseline and slowdown per job; noise runs' bandwidth",
     "cosched stats [--job ID] [--watch[=SECONDS] | --plot FILE.png]",
     OPTIONS(CLI_O_JOB, CLI_O_WATCH, CLI_O_PLOT, CLI_O_HELP), cmd_stats_help},
    {"report", cmd_report, "report a training step time for a job (for any framework)",
     "cosched report --job ID --step-time SECONDS [--baseline]\n"
     "cosched report --job ID --phase NAME",
     OPTIONS(CLI_O_JOB, CLI_O_STEP_TIME, CLI_O_BASELINE, CLI_O_PHASE, CLI_O_HELP), cmd_report_help},
    {"metrics", cmd_metrics, "the daemon's Prometheus metrics", "cosched metrics", NULL, cmd_metrics_help},
    {"bind", cmd_bind, "exec a command bound to a job rank's CPUs and memory",
     "cosched bind [--job ID] [--rank R] -- CMD [ARGS...]", OPTIONS(CLI_O_JOB, CLI_O_RANK, CLI_O_JSON, CLI_O_HELP),
     cmd_bind_help},
    {"env", cmd_env, "print a job rank's task environment (for a Slurm TaskProlog or eval)",
     "cosched [--json] env [--job ID] [--rank R] [--format taskprolog|sh]",
     OPTIONS(CLI_O_JOB, CLI_O_RANK, CLI_O_FORMAT, CLI_O_HELP), cmd_env_help},
    {"guard", cmd_guard, "the slowdown guard: its knobs, each job's share; pin a co-tenant's share", NULL, NULL,
     cmd_guard_help},
    {"guard status", cmd_guard_status, NULL, "cosched guard [status]", NULL, NULL},
    {"guard set", cmd_guard_set, NULL, "cosched guard set --job ID --share FRACTION|auto",
     OPTIONS(CLI_O_JOB, CLI_O_SHARE, CLI_O_HELP), NULL},
    {"experiment", cmd_experiment, "the study's Table II on this node: training with and without noise",
     "cosched experiment [--time SECONDS|auto[:CEILING]] [--precision FRACTION] [--block SECONDS]\n"
     "                   [--seed N] [--steps N] [--model NAME] [--batch N]\n"
     "                   [--noise memory|io|network|cpu] [--guard [--budget FRACTION]] [--gpus 0|none]\n"
     "                   [--uid UID] [--out DIR] [--trainer CMD] [--trace FILE] [--json]\n"
     "cosched experiment --design runs [--reps N] [--warmup N] [--steps N] [--trainer CMD]\n"
     "                   [--noise ...|FILE.yaml:PATTERN] [--guard] [common options]\n"
     "cosched experiment --sweep intensity|threads [--placement exclusive|shared] [--budget FRACTION]\n"
     "                   [common options]\n"
     "cosched experiment --dry-run [--topology FILE] [--guard | --sweep KIND] [--json]",
     OPTIONS(CLI_O_REPS, CLI_O_WARMUP, CLI_O_STEPS, CLI_O_MODEL, CLI_O_BATCH, CLI_O_NOISE, CLI_O_TRAINER, CLI_O_GUARD,
             CLI_O_BUDGET, CLI_O_UID, CLI_O_OUT, CLI_O_TOPOLOGY, CLI_O_DRY_RUN, CLI_O_SWEEP, CLI_O_PLACEMENT,
             CLI_O_TRACE, CLI_O_DESIGN, CLI_O_TIME, CLI_O_PRECISION, CLI_O_BLOCK, CLI_O_SEED, CLI_O_GPUS, CLI_O_HELP),
     cmd_experiment_help},
};
const int cli_ncommands = (int)(sizeof cli_commands / sizeof cli_commands[0]);

const cli_command_t *cli_command_find(const char *path)
{
    for (int i = 0; i < cli_ncommands; i++)
        if (strcmp(cli_commands[i].path, path) == 0)
            return &cli_commands[i];
    return NULL;
}
