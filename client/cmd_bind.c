/* cmd_bind: `cosched bind --job ID [--rank R] -- CMD` — exec CMD bound to a job rank's CPUs and
 * NUMA memory with the rank's environment, so `srun cosched bind -- python train.py` works for
 * anything. It never moves a task outside the CPUs its batch system allows it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "client.h"
#include "task_rank.h"

static void export_variable(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    setenv(name, value, 1);
}

int cmd_bind(const client_opts_t *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"job", required_argument, NULL, 'j'}, {"rank", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'J'},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    task_rank_args_t args;
    task_rank_args_init(&args);
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (opt) {
        case 'j': args.job = optarg; break;
        case 'r': args.rank_text = optarg; break;
        case 'J': break; /* bind prints nothing of its own: it becomes the command */
        case 'h':
            printf("Usage: cosched bind [--job ID] [--rank R] -- CMD [ARGS...]\n"
                   "Run CMD bound to the CPUs and NUMA memory coschedd reserved for a job's rank, with the\n"
                   "rank's environment (as `cosched env` prints it: COSCHED_CPUS, OMP_NUM_THREADS, OMP_PLACES,\n"
                   "OMP_PROC_BIND=close, the GPU's variable unless one is set, COSCHED_SOCKET/_JOB/_RANK). ID\n"
                   "defaults to $SLURM_JOB_ID, R to $SLURM_LOCALID (else 0). Threads CMD creates inherit the\n"
                   "binding. Refused, with exit status 1, when the rank's CPUs are outside the job's registered\n"
                   "allocation or the cpuset cgroup this task is confined to (Slurm's ConstrainCores).\n");
            return EXIT_OK;
        default: return usage_error("bind", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("bind", "no command after --");
    task_rank_t t;
    int rc = task_rank_get(o, "bind", &args, &t);
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
        return fail("cannot bind job %s rank %s: %s", args.job, args.rank_text ? args.rank_text : "0", err);
    execvp(argv[optind], argv + optind);
    return fail("cannot execute '%s': %s", argv[optind], strerror(errno));
}
