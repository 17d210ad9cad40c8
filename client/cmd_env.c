/* cmd_env: `cosched env` — a job rank's environment as lines a Slurm TaskProlog prints
 * ("export NAME=value", taken verbatim by slurmstepd), as shell for eval, or as JSON. */
#include <stdio.h>
#include <string.h>

#include "cli_parse.h"
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

void cmd_env_help(FILE *out)
{
    fputs("Print the environment a job rank's task gets (the same `cosched bind` and `run start`\n"
          "set): COSCHED_CPUS, OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND=close, for a GPU rank its\n"
          "vendor's variable (CUDA_VISIBLE_DEVICES with CUDA_DEVICE_ORDER=PCI_BUS_ID, or\n"
          "ROCR_VISIBLE_DEVICES by ROCm SMI index) unless the environment already names GPUs, and\n"
          "COSCHED_SOCKET, COSCHED_JOB, COSCHED_RANK. ID defaults to $SLURM_JOB_ID, R to\n"
          "$SLURM_LOCALID (else 0). taskprolog (default): `export NAME=value` lines, unquoted, as a\n"
          "Slurm TaskProlog must print them; sh: quoted, for eval; --json: an object.\n",
          out);
}

typedef struct {
    task_rank_args_t rank;
    env_format_t format;
} env_args_t;

static int set_env_option(void *ctx, cli_option_id_t option, const char *value)
{
    env_args_t *a = ctx;
    if (option == CLI_O_JOB)
        a->rank.job = value;
    else if (option == CLI_O_RANK)
        a->rank.rank_text = value;
    else if (strcmp(value, "taskprolog") == 0)
        a->format = ENV_TASKPROLOG;
    else if (strcmp(value, "sh") == 0)
        a->format = ENV_SHELL;
    else
        return output_usage_error("env", "unknown format '%s' (taskprolog or sh)", value);
    return 0;
}

int cmd_env(const client_opts_t *o, int argc, char **argv)
{
    env_args_t a = {.format = ENV_TASKPROLOG};
    task_rank_args_init(&a.rank);
    int rc = cli_parse_only("env", argc, argv, set_env_option, &a);
    if (rc >= 0)
        return rc;
    task_rank_args_t args = a.rank;
    env_format_t format = a.format;
    task_rank_t t;
    rc = task_rank_get(o, "env", &args, &t);
    if (rc != EXIT_OK)
        return rc;
    if (o->json) {
        json_t *env = json_object();
        task_rank_env(o, &t, add_json, env);
        task_rank_free(&t);
        return output_print_json(env);
    }
    task_rank_env(o, &t, format == ENV_SHELL ? print_shell : print_taskprolog, NULL);
    task_rank_free(&t);
    return EXIT_OK;
}
