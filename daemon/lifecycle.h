/* lifecycle: the steps of a job's life that span modules and must happen in one order — a job
 * registered, confined or released, a run started, a co-tenant's share pinned. Each returns a
 * result; methods.c checks who asks, reads the arguments and maps the result to a reply. */
#ifndef COSCHED_LIFECYCLE_H
#define COSCHED_LIFECYCLE_H

#include "daemon.h"
#include "jobs.h"
#include "result.h"

/* Register (job_register: *out and *existing as there), then choose a trainer's progress source
 * and update the shares: a new co-tenant starts at the share the guards allow. A refusal
 * changes nothing. */
result_t lifecycle_job_register(daemon_t *d, const job_request_t *req, job_t **out, bool *existing);

/* Release job id: a co-tenant's knobs let go first (its runs must act on the SIGTERM), then its
 * running runs stopped, the job unlinked and the shares updated (a trainer gone: its guard no
 * longer holds anyone). False, and nothing done, when there is no such job. */
bool lifecycle_job_release(daemon_t *d, const char *id);

/* Plan j again within cpus (job_confine: *out as there); then, for a job started outside
 * coschedd, keep the cgroups Slurm made for it as its task (pid; <= 0: unknown) shows them, and
 * update the shares. A refusal leaves the job as it was. */
result_t lifecycle_job_confine(daemon_t *d, job_t *j, hwloc_const_bitmap_t cpus, pid_t task, job_t **out);

/* Start argv as rank `rank` of j (run_start; env may be NULL), a co-tenant's inside its throttle
 * group, made first if need be. Refused (INVALID, nothing made): a rank j does not have, a
 * co-tenant held in the cgroups Slurm made for it (its processes are Slurm's steps). */
result_t lifecycle_run_start(daemon_t *d, job_t *j, int rank, json_t *argv, json_t *env, const char *cwd, run_t **out);

/* Pin co-tenant j's share (0 to 1), or hand it back to the guard (share < 0), as uid `by` asked,
 * and apply it. INVALID for a trainer, which has no share: nothing changes. */
result_t lifecycle_guard_set(daemon_t *d, job_t *j, double share, uid_t by);

#endif
