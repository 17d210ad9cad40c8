/* jobs: the job registry — who holds which cores. Registration plans a job against the cores
 * the others hold; results say what went wrong, replies are methods.c's business. */
#ifndef COSCHED_JOBS_H
#define COSCHED_JOBS_H

#include "daemon.h"
#include "result.h"

typedef struct job_request {
    const char *id;
    uid_t uid;
    job_role_t role;
    plan_policy_t policy;
    hwloc_const_bitmap_t gpus;         /* NULL = all (trainer) */
    int ranks_per_gpu, cores_per_rank; /* trainer */
    int cpu_ranks;                     /* trainer on cores alone: this many ranks, no GPU (0: on GPUs) */
    int cores;                         /* co-tenant: one-core ranks */
    double budget;                     /* trainer: slowdown budget, 0 = the configured one */
    hwloc_const_bitmap_t cpus;         /* plan inside these PUs only (a batch allocation); NULL = any */
    bool external;                     /* started outside coschedd: a co-tenant is active until release */
    bool share_cores;                  /* co-tenant: may take cores other co-tenants hold (never a trainer's) */
    progress_source_t progress;        /* trainer: where its progress comes from (auto: the best there is) */
    const char *partition;             /* the Slurm partition it came from (its default source); NULL = none */
    autoreport_request_t autoreport;   /* trainer: the injected step reporter (default: the site's) */
} job_request_t;

job_t *job_find(daemon_t *d, const char *id);
bool job_id_valid(const char *id);
const char *job_role_name(job_role_t role);
int job_role_parse(const char *name, job_role_t *out);

/* Plan and reserve. *out is the job (new, or the existing one when the same job registers again
 * for the same uid and role: a prolog retrying after a lost reply; *existing says which).
 * RESULT_BUSY when other jobs are in the way, RESULT_INVALID when it could never fit. */
result_t job_register(daemon_t *d, const job_request_t *req, job_t **out, bool *existing);

/* Plan a registered job again inside an allocation learnt after its registration (Slurm makes a
 * job's cpuset cgroup only once the prolog has returned). The same allocation again is a no-op;
 * a job with processes the guard holds is BUSY; on failure the job stays as it was. */
result_t job_confine(daemon_t *d, job_t *j, hwloc_const_bitmap_t cpus, job_t **out);

/* Unlink and free a job; false when there is no such job (not an error for the epilog). The
 * caller stops its runs and lets go of its knobs first. */
bool job_release(daemon_t *d, const char *id);

/* Insert a job with a given allocation (registration and state restore); NULL: out of memory. */
job_t *job_adopt(daemon_t *d, const char *id, uid_t uid, job_role_t role, plan_policy_t policy,
                 const plan_rank_t *ranks, int nranks);
void job_free(job_t *j);

/* The PUs a job holds: its allocation when it was registered with one, else its ranks' CPUs. */
hwloc_const_bitmap_t job_held_cpus(const job_t *j);

/* The budget that applies to a trainer job. */
double job_budget(const daemon_t *d, const job_t *j);

/* The directory of the injected step reporter (docs/autoreport.md) that a job's processes get
 * first on PYTHONPATH, or NULL: a trainer's, unless the site switched it off (autoreport.enabled),
 * the job was registered without it, or its partition's default is off. Read from the running
 * configuration, so a reload reaches the tasks and runs started after it. */
const char *job_autoreport_dir(const daemon_t *d, const job_t *j);

#endif
