/* lifecycle: a job's life through the registry, its runs, its progress source and its knobs, each
 * step in the one order that is right (lifecycle.h); tested without a socket in
 * tests/daemon/test_lifecycle.c. */
#include "lifecycle.h"

#include <stdio.h>
#include <string.h>

#include "cotenants.h"
#include "log.h"
#include "progress.h"
#include "runs.h"
#include "slurm_cgroup.h"
#include "state.h"

result_t lifecycle_job_register(daemon_t *d, const job_request_t *req, job_t **out, bool *existing)
{
    result_t r = job_register(d, req, out, existing);
    if (r.code != RESULT_OK)
        return r;
    progress_choose_source(d, *out);
    cotenants_update(d, clock_now_mono()); /* a new co-tenant starts at the share the guards allow */
    return r;
}

bool lifecycle_job_release(daemon_t *d, const char *id)
{
    job_t *j = job_find(d, id);
    if (!j)
        return false;
    /* Its knobs let go first, so that its runs can act on the SIGTERM that follows; its cores are
     * about to be given to someone else. */
    cotenant_release(d, j);
    for (run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, id) == 0)
            run_stop(d, r);
    job_release(d, id);
    cotenants_update(d, clock_now_mono()); /* a trainer gone: its guard no longer holds anyone */
    return true;
}

/* The trainer's memory protected, or the co-tenant's yielded (throttle_memory.c), at each of its
 * steps: Slurm sets the job's memory cgroup again as it makes a step's (v1: its soft limit too),
 * and a step's TaskProlog runs after that. Logged the first time (first), and when it fails. */
static void protect_memory(const job_t *j, bool first)
{
    char what[600];
    if (!j->has_slurm_cgroup)
        return;
    int rc = j->role == ROLE_TRAINER ? throttle_protect_trainer_memory(&j->slurm_cgroup, what, sizeof what)
                                     : throttle_yield_cotenant_memory(&j->slurm_cgroup, what, sizeof what);
    if (rc < 0)
        log_warn("job %s: memory: %s", j->id, what);
    else if (first)
        log_info("job %s: memory: %s", j->id, what);
}

/* The job's cgroups, as its task shows them, kept with the job: a co-tenant is held there from
 * now on (the guard can reach a job Slurm started), a trainer's are where its processes are.
 * Found once; a task that cannot show them leaves the job as it was, with the reason. */
static void keep_slurm_cgroup(daemon_t *d, job_t *j, pid_t task)
{
    throttle_slurm_job_t found;
    char why[600];
    if (!j->external || j->has_slurm_cgroup || task <= 0)
        return;
    if (slurm_cgroup_of(task, j->id, &found, why, sizeof why) < 0) {
        log_warn("job %s: its cgroups cannot be found from its task (pid %d): %s", j->id, (int)task, why);
        if (j->role == ROLE_COTENANT)
            snprintf(j->hold_error, sizeof j->hold_error, "not held: its cgroups cannot be found: %.280s", why);
        return;
    }
    j->slurm_cgroup = found;
    j->has_slurm_cgroup = true;
    j->slurm_cpu_seen = -1; /* what it used before is not counted: its first reading is the start */
    j->hold_error[0] = '\0';
    log_info("job %s: Slurm keeps its processes in %s", j->id,
             found.cgroup2[0]    ? found.cgroup2
             : found.freezer1[0] ? found.freezer1
                                 : found.cpuset1);
    state_mark_dirty(d);
    if (j->role == ROLE_COTENANT)
        cotenant_group(d, j);
    else
        progress_choose_source(d, j);
}

result_t lifecycle_job_confine(daemon_t *d, job_t *j, hwloc_const_bitmap_t cpus, pid_t task, job_t **out)
{
    result_t r = job_confine(d, j, cpus, out);
    if (r.code != RESULT_OK)
        return r;
    bool known = (*out)->has_slurm_cgroup;
    keep_slurm_cgroup(d, *out, task);
    protect_memory(*out, !known);
    cotenants_update(d, clock_now_mono());
    return r;
}

result_t lifecycle_run_start(daemon_t *d, job_t *j, int rank, json_t *argv, json_t *env, const char *cwd, run_t **out)
{
    if (rank >= j->nranks)
        return result_fail(RESULT_INVALID, "job %s has ranks 0-%d, not %d", j->id, j->nranks - 1, rank);
    if (j->role == ROLE_COTENANT && j->external && j->has_slurm_cgroup)
        return result_fail(RESULT_INVALID,
                           "job %s is held in the cgroups Slurm made for it: start its processes as "
                           "steps of the job (srun), where the guard holds them, not with run start",
                           j->id);
    json_t *empty = json_object();
    result_t r = run_start(d, j, rank, argv, env ? env : empty, cwd, cotenant_group(d, j), out);
    json_decref(empty);
    return r;
}

result_t lifecycle_guard_set(daemon_t *d, job_t *j, double share, uid_t by)
{
    if (j->role != ROLE_COTENANT)
        return result_fail(RESULT_INVALID, "job %s is a trainer: only co-tenants have a share", j->id);
    j->share_override = share;
    log_info("guard: co-tenant %s: share %s by uid %u", j->id, share >= 0 ? "pinned" : "handed back to the guard",
             (unsigned)by);
    state_mark_dirty(d);
    cotenants_update(d, clock_now_mono());
    return result_ok();
}
