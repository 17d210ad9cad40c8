/* cmd_bind: `cosched bind --job ID [--rank R] -- CMD` — exec CMD bound to a job rank's CPUs and
 * NUMA memory with the rank's environment, so `srun cosched bind -- python train.py` works for
 * anything. It never moves a task outside the CPUs its batch system allows it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "cli_parse.h"
#include "client.h"
#include "task_rank.h"

static void export_variable(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    setenv(name, value, 1);
}

void cmd_bind_help(FILE *out)
{
    fputs("Run CMD bound to the CPUs and NUMA memory coschedd reserved for a job's rank, with the\n"
          "rank's environment (as `cosched env` prints it: COSCHED_CPUS, OMP_NUM_THREADS, OMP_PLACES,\n"
          "OMP_PROC_BIND=close, the GPU's variable unless one is set, COSCHED_SOCKET/_JOB/_RANK). ID\n"
          "defaults to $SLURM_JOB_ID, R to $SLURM_LOCALID (else 0). Threads CMD creates inherit the\n"
          "binding. Refused, with exit status 1, when the rank's CPUs are outside the job's registered\n"
          "allocation or the cpuset cgroup this task is confined to (Slurm's ConstrainCores).\n",
          out);
}

/* --job, --rank; --json is taken and ignored: bind prints nothing of its own, it becomes CMD. */
static int set_bind_option(void *ctx, cli_option_id_t option, const char *value)
{
    task_rank_args_t *args = ctx;
    if (option == CLI_O_JOB)
        args->job = value;
    else if (option == CLI_O_RANK)
        args->rank_text = value;
    return 0;
}

int cmd_bind(const client_opts_t *o, int argc, char **argv)
{
    task_rank_args_t args;
    task_rank_args_init(&args);
    int rest, rc = cli_parse("bind", argc, argv, set_bind_option, &args, &rest);
    if (rc >= 0)
        return rc;
    if (rest >= argc)
        return output_usage_error("bind", "no command after --");
    task_rank_t t;
    rc = task_rank_get(o, "bind", &args, &t);
    if (rc != EXIT_OK)
        return rc;
    rc = task_rank_check_allowed(&t);
    if (rc != EXIT_OK) {
        task_rank_free(&t);
        return rc;
    }
    char err[512];
    int failed = bind_process_cpus(t.cpus, err, sizeof err) < 0 || bind_process_mems(t.mems, err, sizeof err) < 0;
    if (!failed)
        task_rank_env(o, &t, export_variable, NULL);
    task_rank_free(&t);
    if (failed)
        return output_fail("cannot bind job %s rank %s: %s", args.job, args.rank_text ? args.rank_text : "0", err);
    execvp(argv[rest], argv + rest);
    return output_fail("cannot execute '%s': %s", argv[rest], strerror(errno));
}
