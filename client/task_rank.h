/* task_rank: one rank of a registered job as a task sees it — where it may run and the
 * environment it gets. Shared by `cosched bind` (which execs into it) and `cosched env` (which
 * prints it for a Slurm TaskProlog), so that both set the same variables. */
#ifndef COSCHED_TASK_RANK_H
#define COSCHED_TASK_RANK_H

#include <hwloc.h>
#include <jansson.h>

#include "rpc.h"

typedef struct task_rank {
    json_t *job;  /* the daemon's job object */
    json_t *rank; /* borrowed from job: {"rank","gpu","numa","cpus","mems","env"} */
    hwloc_bitmap_t cpus, mems;
} task_rank_t;

/* The job and rank to use: --job / --rank, else $SLURM_JOB_ID and $SLURM_LOCALID (rank 0). */
typedef struct task_rank_args {
    const char *job, *rank_text;
} task_rank_args_t;
void task_rank_args_init(task_rank_args_t *a);

/* Ask the daemon for the rank. Returns EXIT_OK, or an exit status with the reason printed. */
int task_rank_get(const client_opts_t *o, const char *command, const task_rank_args_t *a, task_rank_t *out);
void task_rank_free(task_rank_t *t);

/* The rank's CPUs must lie inside what this task may use: the job's allocation and the cpuset
 * cgroup it is confined to (Slurm's ConstrainCores). EXIT_OK, or EXIT_FAIL with the reason. */
int task_rank_check_allowed(const task_rank_t *t);

/* Call fn for each variable the task gets: the rank's CPUs for OpenMP, COSCHED_SOCKET / _JOB /
 * _RANK, its GPU's variable unless the environment already names GPUs (a batch system that
 * set CUDA_VISIBLE_DEVICES knows its device cgroup's numbering better), and for a trainer with
 * the injected step reporter, PYTHONPATH with its directory first. */
void task_rank_env(const client_opts_t *o, const task_rank_t *t,
                   void (*fn)(const char *name, const char *value, void *ctx), void *ctx);

#endif
