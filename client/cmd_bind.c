/* cmd_bind: `cosched bind --job ID [--rank R] -- CMD` — exec CMD bound to a job rank's CPUs and
 * NUMA memory, so `srun cosched bind --job $SLURM_JOB_ID -- python train.py` works for anything. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "client.h"
#include "wire.h"
#include "cpulist.h"

static hwloc_bitmap_t set_from(json_t *arr)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_integer(v) && json_integer_value(v) >= 0)
        hwloc_bitmap_set(set, (unsigned)json_integer_value(v));
    return set;
}

int cmd_bind(const client_opts_t *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"job", required_argument, NULL, 'j'}, {"rank", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    const char *job = getenv(WIRE_ENV_SLURM_JOB), *rank_text = getenv("SLURM_LOCALID");
    long rank = 0;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (opt) {
        case 'j': job = optarg; break;
        case 'r': rank_text = optarg; break;
        case 'h':
            printf("Usage: cosched bind [--job ID] [--rank R] -- CMD [ARGS...]\n"
                   "Run CMD bound to the CPUs and NUMA memory coschedd reserved for a job's rank. ID defaults\n"
                   "to $SLURM_JOB_ID, R to $SLURM_LOCALID (else 0). Threads CMD creates inherit the binding.\n");
            return EXIT_OK;
        default: return usage_error("bind", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (!job || !*job)
        return usage_error("bind", "--job is required (or $SLURM_JOB_ID)");
    if (rank_text && cpulist_parse_int(rank_text, 0, 65535, &rank) < 0)
        return usage_error("bind", "rank must be a whole number, not '%s'", rank_text);
    if (optind >= argc)
        return usage_error("bind", "no command after --");
    int rc;
    json_t *j = rpc_call(o, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, job), &rc);
    if (!j)
        return rc;
    json_t *r = json_array_get(json_object_get(j, "ranks"), (size_t)rank);
    if (!r) {
        fprintf(stderr, "cosched: job %s has no rank %ld (it has %zu)\n", job, rank,
                json_array_size(json_object_get(j, "ranks")));
        json_decref(j);
        return EXIT_FAIL;
    }
    hwloc_bitmap_t cpus = set_from(json_object_get(r, "cpus")), mems = set_from(json_object_get(r, "mems"));
    json_decref(j);
    char err[512];
    rc = bind_process_cpus(cpus, err, sizeof err) < 0 || bind_process_mems(mems, err, sizeof err) < 0;
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(mems);
    if (rc)
        return fail("cannot bind job %s rank %ld: %s", job, rank, err);
    execvp(argv[optind], argv + optind);
    return fail("cannot execute '%s': %s", argv[optind], strerror(errno));
}
