/* jobs: the job registry — who holds which cores — and each job's allocation as JSON. */
#ifndef COSCHED_JOBS_H
#define COSCHED_JOBS_H

#include "daemon.h"

typedef struct job_request {
    const char *id;
    uid_t uid;
    job_role_t role;
    plan_policy_t policy;
    hwloc_const_bitmap_t gpus; /* NULL = all (trainer) */
    int ranks_per_gpu, cores_per_rank; /* trainer */
    int cores;                         /* co-tenant: one-core ranks */
} job_request_t;

job_t *job_find(daemon_t *d, const char *id);
bool job_id_valid(const char *id);
const char *job_role_name(job_role_t role);

/* Plan and reserve; returns the whole reply ({"ok":true,"result":allocation} or an error:
 * EBUSY when other jobs are in the way, EINVAL when it could never fit). */
json_t *job_register(daemon_t *d, const job_request_t *req);

/* Free a job's cores; false when no such job (not an error for the epilog). */
bool job_release(daemon_t *d, const char *id);

/* Insert a job with a given allocation (registration and state restore). */
job_t *job_adopt(daemon_t *d, const char *id, uid_t uid, job_role_t role, plan_policy_t policy,
                 const plan_rank_t *ranks, int nranks);
void job_free(job_t *j);

/* {"job","role","uid","policy","ranks":[{"rank","gpu","numa","cpus","mems"}],"srun"} */
json_t *job_allocation_json(const job_t *j);

#endif
