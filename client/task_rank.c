/* task_rank: the daemon says where a rank goes; the task's cgroup says where it may go. A
 * difference between the two is an error to report, not something for the kernel to narrow
 * silently (sched_setaffinity keeps only the allowed part of a mask). */
#include "task_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cgroup_cpus.h"
#include "client.h"
#include "cpulist.h"
#include "wire.h"

static const char *const gpu_variables[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES",
                                            "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"};

void task_rank_args_init(task_rank_args_t *a)
{
    a->job = getenv(WIRE_ENV_SLURM_JOB);
    a->rank_text = getenv("SLURM_LOCALID");
}

static hwloc_bitmap_t set_from(json_t *arr)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            hwloc_bitmap_set(set, (unsigned)json_integer_value(v));
    return set;
}

int task_rank_get(const client_opts_t *o, const char *command, const task_rank_args_t *a, task_rank_t *out)
{
    memset(out, 0, sizeof *out);
    long rank = 0;
    if (!a->job || !*a->job)
        return output_usage_error(command, "--job is required (or $SLURM_JOB_ID)");
    if (a->rank_text && cpulist_parse_int(a->rank_text, 0, BOUNDS_INDEX_MAX, &rank) < 0)
        return output_usage_error(command, "rank must be a whole number, not '%s'", a->rank_text);
    int rc;
    out->job = rpc_call(o, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, a->job), &rc);
    if (!out->job)
        return rc;
    json_t *ranks = json_object_get(out->job, WIRE_R_RANKS);
    out->rank = json_array_get(ranks, (size_t)rank);
    if (!out->rank) {
        fprintf(stderr, "cosched: job %s has no rank %ld (it has %zu)\n", a->job, rank, json_array_size(ranks));
        task_rank_free(out);
        return EXIT_FAIL;
    }
    out->cpus = set_from(json_object_get(out->rank, WIRE_R_CPUS));
    out->mems = set_from(json_object_get(out->rank, WIRE_R_MEMS));
    return EXIT_OK;
}

void task_rank_free(task_rank_t *t)
{
    json_decref(t->job);
    hwloc_bitmap_free(t->cpus);
    hwloc_bitmap_free(t->mems);
    memset(t, 0, sizeof *t);
}

static int outside(const task_rank_t *t, hwloc_const_bitmap_t allowed, const char *what)
{
    char *want = cpulist_format(t->cpus), *may = cpulist_format(allowed);
    fprintf(stderr,
            "cosched: job %s rank %lld is planned on CPUs %s, but this task may only use CPUs %s (%s).\n"
            "cosched: not binding outside them: register the job with its allocation (job register --cpus LIST,\n"
            "cosched: as the Slurm prolog does) so that coschedd plans inside it, or run the task without bind.\n",
            json_string_value(json_object_get(t->job, WIRE_R_JOB)),
            (long long)json_integer_value(json_object_get(t->rank, WIRE_R_RANK)), want ? want : "?", may ? may : "?",
            what);
    free(want);
    free(may);
    return EXIT_FAIL;
}

int task_rank_check_allowed(const task_rank_t *t)
{
    const char *allocation = json_string_value(json_object_get(t->job, WIRE_R_ALLOWED_CPUS));
    char err[256], dir[4096], what[4200];
    if (allocation) {
        hwloc_bitmap_t set = cpulist_parse(allocation, 0, err, sizeof err);
        int rc = set && !hwloc_bitmap_isincluded(t->cpus, set) ? outside(t, set, "the job's registered allocation")
                                                               : EXIT_OK;
        hwloc_bitmap_free(set);
        if (rc != EXIT_OK)
            return rc;
    }
    hwloc_bitmap_t confined = cgroup_cpus_of(0, dir, sizeof dir);
    int rc = EXIT_OK;
    if (confined && !hwloc_bitmap_isincluded(t->cpus, confined)) {
        snprintf(what, sizeof what, "cpuset cgroup %s", dir);
        rc = outside(t, confined, what);
    }
    hwloc_bitmap_free(confined);
    return rc;
}

static int names_gpus(const char *name)
{
    for (size_t i = 0; i < sizeof gpu_variables / sizeof gpu_variables[0]; i++)
        if (strcmp(name, gpu_variables[i]) == 0)
            return 1;
    return 0;
}

static int environment_names_gpus(void)
{
    for (size_t i = 0; i < sizeof gpu_variables / sizeof gpu_variables[0]; i++)
        if (strcmp(gpu_variables[i], "CUDA_DEVICE_ORDER") != 0 && getenv(gpu_variables[i]))
            return 1;
    return 0;
}

/* Slurm's list of the job's GPUs (CUDA_VISIBLE_DEVICES=4,5, in its own numbering) narrowed to
 * this rank's: entry k, k being the rank's GPU's place among the job's GPUs in ascending order
 * (Slurm lists them in its order, which a gpu_map that keeps the order preserves). 0, or -1 when
 * the rank has no GPU or the list does not have one entry per GPU of the job. */
static int rank_entry(const task_rank_t *t, const char *list, char *out, size_t len)
{
    json_int_t mine = json_integer_value(json_object_get(t->rank, WIRE_R_GPU));
    if (!json_is_integer(json_object_get(t->rank, WIRE_R_GPU)) || mine < 0)
        return -1;
    hwloc_bitmap_t gpus = hwloc_bitmap_alloc();
    size_t i;
    json_t *rank;
    json_array_foreach(json_object_get(t->job, WIRE_R_RANKS), i, rank) {
        json_int_t g = json_integer_value(json_object_get(rank, WIRE_R_GPU));
        if (g >= 0)
            hwloc_bitmap_set(gpus, (unsigned)g);
    }
    int place = 0, count = hwloc_bitmap_weight(gpus);
    for (int g = hwloc_bitmap_first(gpus); g >= 0 && g < mine; g = hwloc_bitmap_next(gpus, g))
        place++;
    hwloc_bitmap_free(gpus);
    int entries = 1, k = 0;
    for (const char *c = list; *c; c++)
        entries += *c == ',';
    if (entries != count || !*list)
        return -1;
    const char *start = list;
    while (k < place)
        k += *start++ == ',';
    size_t n = strcspn(start, ",");
    if (n == 0 || n >= len)
        return -1;
    snprintf(out, len, "%.*s", (int)n, start);
    return 0;
}

/* The injected step reporter's directory first on PYTHONPATH, the task's own path after it, and
 * no second copy when it is first already. A TaskProlog's output is not expanded by the shell, so
 * the value is computed here, in the task's environment. A path with a newline would end the
 * TaskProlog's line: the task then keeps its own and trains without the reporter. */
static void python_path(const task_rank_t *t, void (*fn)(const char *name, const char *value, void *ctx), void *ctx)
{
    const char *dir = json_string_value(json_object_get(t->job, WIRE_R_AUTOREPORT));
    const char *own = getenv(WIRE_ENV_PYTHONPATH);
    if (!dir || !*dir || (own && strchr(own, '\n')))
        return;
    size_t n = strlen(dir);
    if (!own || !*own || (strncmp(own, dir, n) == 0 && (own[n] == '\0' || own[n] == ':'))) {
        fn(WIRE_ENV_PYTHONPATH, own && *own ? own : dir, ctx);
        return;
    }
    char *value = malloc(n + 1 + strlen(own) + 1);
    if (!value)
        return;
    sprintf(value, "%s:%s", dir, own);
    fn(WIRE_ENV_PYTHONPATH, value, ctx);
    free(value);
}

void task_rank_env(const client_opts_t *o, const task_rank_t *t,
                   void (*fn)(const char *name, const char *value, void *ctx), void *ctx)
{
    const char *key;
    json_t *value;
    int keep_gpus = environment_names_gpus();
    json_object_foreach(json_object_get(t->rank, WIRE_R_ENV), key, value) {
        char entry[256];
        const char *given = getenv(key);
        if (!json_is_string(value))
            continue;
        if (!(keep_gpus && names_gpus(key)))
            fn(key, json_string_value(value), ctx);
        else if (given && rank_entry(t, given, entry, sizeof entry) == 0)
            fn(key, entry, ctx); /* Slurm's list, narrowed to this rank's GPU */
    }
    char rank[32];
    snprintf(rank, sizeof rank, "%lld", (long long)json_integer_value(json_object_get(t->rank, WIRE_R_RANK)));
    fn(WIRE_ENV_SOCKET, o->socket, ctx);
    fn(WIRE_ENV_JOB, json_string_value(json_object_get(t->job, WIRE_R_JOB)), ctx);
    fn(WIRE_ENV_RANK, rank, ctx);
    python_path(t, fn, ctx);
}
