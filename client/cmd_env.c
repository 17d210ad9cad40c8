/* cmd_env: `cosched env` — a job rank's environment as lines a Slurm TaskProlog prints
 * ("export NAME=value", taken verbatim by slurmstepd), as shell for eval, or as JSON. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "task_rank.h"

typedef enum { ENV_TASKPROLOG, ENV_SHELL } env_format_t;

static void print_taskprolog(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    printf("export %s=%s\n", name, value);
}

/* Single quotes keep OMP_PLACES' braces and commas away from the shell. */
static void print_shell(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    printf("export %s='", name);
    for (const char *c = value; *c; c++)
        fputs(*c == '\'' ? "'\\''" : (char[]){*c, 0}, stdout);
    printf("'\n");
}

static void add_json(const char *name, const char *value, void *ctx)
{
    json_object_set_new((json_t *)ctx, name, json_string(value));
}

int cmd_env(const client_opts_t *o, int argc, char **argv)
{
    enum { O_FORMAT = 256 };
    static const struct option options[] = {{"job", required_argument, NULL, 'j'},
                                            {"rank", required_argument, NULL, 'r'},
                                            {"format", required_argument, NULL, O_FORMAT},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    task_rank_args_t args;
    task_rank_args_init(&args);
    env_format_t format = ENV_TASKPROLOG;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (opt) {
        case 'j': args.job = optarg; break;
        case 'r': args.rank_text = optarg; break;
        case O_FORMAT:
            if (strcmp(optarg, "taskprolog") == 0)
                format = ENV_TASKPROLOG;
            else if (strcmp(optarg, "sh") == 0)
                format = ENV_SHELL;
            else
                return usage_error("env", "unknown format '%s' (taskprolog or sh)", optarg);
            break;
        case 'h':
            printf("Usage: cosched [--json] env [--job ID] [--rank R] [--format taskprolog|sh]\n"
                   "Print the environment a job rank's task gets (the same `cosched bind` and `run start`\n"
                   "set): COSCHED_CPUS, OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND=close, for a GPU rank its\n"
                   "vendor's variable (CUDA_VISIBLE_DEVICES with CUDA_DEVICE_ORDER=PCI_BUS_ID, or\n"
                   "ROCR_VISIBLE_DEVICES by ROCm SMI index) unless the environment already names GPUs, and\n"
                   "COSCHED_SOCKET, COSCHED_JOB, COSCHED_RANK. ID defaults to $SLURM_JOB_ID, R to\n"
                   "$SLURM_LOCALID (else 0). taskprolog (default): `export NAME=value` lines, unquoted, as a\n"
                   "Slurm TaskProlog must print them; sh: quoted, for eval; --json: an object.\n");
            return EXIT_OK;
        default: return usage_error("env", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("env", "unexpected argument '%s'", argv[optind]);
    task_rank_t t;
    int rc = task_rank_get(o, "env", &args, &t);
    if (rc != EXIT_OK)
        return rc;
    if (o->json) {
        json_t *env = json_object();
        task_rank_env(o, &t, add_json, env);
        task_rank_free(&t);
        return print_json(env);
    }
    task_rank_env(o, &t, format == ENV_SHELL ? print_shell : print_taskprolog, NULL);
    task_rank_free(&t);
    return EXIT_OK;
}
