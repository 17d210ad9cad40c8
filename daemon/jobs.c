/* jobs: registration and release of jobs (what Slurm's prolog and epilog call). A job's
 * allocation comes from the planner run against the cores other jobs already hold. */
#include "jobs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "escalation_record.h"
#include "log.h"
#include "wire.h"

job_t *job_find(daemon_t *d, const char *id)
{
    for (job_t *j = d->jobs; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            return j;
    return NULL;
}

bool job_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= JOB_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)id[i]) && !strchr("._-", id[i]))
            return false;
    return true;
}

const char *job_role_name(job_role_t role)
{
    return role == ROLE_TRAINER ? WIRE_ROLE_TRAINER : WIRE_ROLE_COTENANT;
}

int job_role_parse(const char *name, job_role_t *out)
{
    if (name && strcmp(name, WIRE_ROLE_TRAINER) == 0)
        *out = ROLE_TRAINER;
    else if (name && strcmp(name, WIRE_ROLE_COTENANT) == 0)
        *out = ROLE_COTENANT;
    else
        return -1;
    return 0;
}

hwloc_const_bitmap_t job_held_cpus(const job_t *j)
{
    return j->allowed ? j->allowed : j->cpus;
}

double job_budget(const daemon_t *d, const job_t *j)
{
    return j->budget > 0 ? j->budget : d->cfg.slowdown_budget;
}

const char *job_autoreport_dir(const daemon_t *d, const job_t *j)
{
    if (j->role != ROLE_TRAINER || !d->cfg.autoreport_enabled)
        return NULL;
    bool on = j->autoreport != AUTOREPORT_DEFAULT
                  ? j->autoreport == AUTOREPORT_ON
                  : config_autoreport_default(&d->cfg, j->partition[0] ? j->partition : NULL);
    return on ? config_autoreport_dir(&d->cfg) : NULL;
}

void job_free(job_t *j)
{
    if (!j)
        return;
    escalation_record_forget(&j->escalation, j->id);
    slurm_child_kill(&j->time_credit.scontrol); /* an extension lost with its job: nothing to undo */
    slurm_child_kill(&j->ending.scontrol);      /* a question about a job let go */
    for (int r = 0; r < j->nranks; r++) {
        hwloc_bitmap_free(j->ranks[r].cpus);
        hwloc_bitmap_free(j->ranks[r].mems);
    }
    free(j->ranks);
    hwloc_bitmap_free(j->cpus);
    hwloc_bitmap_free(j->allowed);
    json_decref(j->warnings);
    pmu_close(j->pmu);
    free(j);
}

/* The PUs held by trainer jobs and by co-tenant jobs, for the planner: a job registered with an
 * allocation holds all of it, whatever part its ranks use. A job confined to the allocation its
 * batch system gave it does not yield to external jobs still waiting for theirs: their plans are
 * provisional (each will be planned again inside its own allocation). */
static void taken_sets(const daemon_t *d, bool confining, hwloc_bitmap_t trainers, hwloc_bitmap_t cotenants)
{
    for (const job_t *j = d->jobs; j; j = j->next) {
        if (confining && j->external && !j->allowed)
            continue;
        hwloc_bitmap_t set = j->role == ROLE_TRAINER ? trainers : cotenants;
        hwloc_bitmap_or(set, set, job_held_cpus(j));
    }
}

/* GPUs of trainer jobs: a second trainer on the same GPU is refused even if cores are left. */
static const job_t *gpu_owner(const daemon_t *d, int gpu)
{
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            for (int r = 0; r < j->nranks; r++)
                if (j->ranks[r].gpu == gpu)
                    return j;
    return NULL;
}

job_t *job_adopt(daemon_t *d, const char *id, uid_t uid, job_role_t role, plan_policy_t policy,
                 const plan_rank_t *ranks, int nranks)
{
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    snprintf(j->id, sizeof j->id, "%s", id);
    j->uid = uid;
    j->role = role;
    j->policy = policy;
    j->registered = clock_now_unix();
    j->share = 1;
    j->share_override = -1;
    j->progress_requested = PROGRESS_AUTO;
    j->progress_source = PROGRESS_NSOURCES;
    j->gpu_busy = -1;
    j->isolation = plan_policy_info(policy)->isolation;
    j->cpus = hwloc_bitmap_alloc();
    j->ranks = calloc(nranks > 0 ? (size_t)nranks : 1, sizeof *j->ranks);
    if (!j->ranks || !j->cpus) {
        job_free(j);
        return NULL;
    }
    j->nranks = nranks;
    for (int r = 0; r < nranks; r++) {
        j->ranks[r] = ranks[r];
        j->ranks[r].rank = r;
        j->ranks[r].cpus = hwloc_bitmap_dup(ranks[r].cpus);
        j->ranks[r].mems = hwloc_bitmap_dup(ranks[r].mems);
        hwloc_bitmap_or(j->cpus, j->cpus, ranks[r].cpus);
    }
    guard_params_t params = d->cfg.guard;
    params.budget = d->cfg.slowdown_budget;
    guard_init(&j->guard, &params, clock_now_mono());
    j->next = d->jobs;
    d->jobs = j;
    return j;
}

static void request_from(plan_request_t *req, const job_request_t *jr, hwloc_const_bitmap_t no_gpus)
{
    plan_request_init(req);
    req->policy = jr->policy;
    req->ranks_per_gpu = jr->ranks_per_gpu;
    req->cpu_ranks = jr->role == ROLE_TRAINER ? jr->cpu_ranks : 0;
    req->cores_per_rank = jr->cores_per_rank;
    req->gpus = jr->gpus;
    req->allowed = jr->cpus;
    if (jr->role == ROLE_COTENANT) {
        req->gpus = no_gpus;
        /* Unsaid, a co-tenant is one core, or every core of the allocation it was given. */
        req->noise_ranks = jr->cores > 0 ? jr->cores : jr->cpus ? -1 : 1;
    } else {
        req->noise_ranks = 0;
    }
}

/* A registration that does not fit: busy if it would fit an empty node, else invalid. */
static result_t refusal(const daemon_t *d, const job_request_t *jr, hwloc_const_bitmap_t no_gpus, const char *why)
{
    plan_request_t alone;
    request_from(&alone, jr, no_gpus);
    char err[512], *cpus = jr->cpus ? cpulist_format(jr->cpus) : NULL;
    plan_t *empty = plan_compute(d->topo, &alone, err, sizeof err);
    result_t r = empty ? result_fail(RESULT_BUSY, "job %s does not fit beside the registered jobs: %s", jr->id, why)
                 : cpus
                     ? result_fail(RESULT_INVALID, "job %s cannot be placed within its CPUs %s: %s", jr->id, cpus, why)
                     : result_fail(RESULT_INVALID, "job %s cannot be placed on this node: %s", jr->id, why);
    plan_free(empty);
    free(cpus);
    return r;
}

static result_t check_gpus_free(const daemon_t *d, const job_request_t *jr)
{
    if (jr->role != ROLE_TRAINER || jr->cpu_ranks > 0)
        return result_ok();
    for (int g = 0; g < d->topo->ngpus; g++) {
        if (jr->gpus && !hwloc_bitmap_isset(jr->gpus, (unsigned)g))
            continue;
        const job_t *owner = gpu_owner(d, g);
        if (owner)
            return result_fail(RESULT_BUSY, "GPU %d is already used by job %s", g, owner->id);
    }
    return result_ok();
}

/* An allocation must name CPUs this node plans on, all of them: a typo or another node's list is
 * not "any", and a part off this node would be planned as if it were not there. */
static result_t check_allocation(const daemon_t *d, const job_request_t *jr)
{
    if (!jr->cpus)
        return result_ok();
    hwloc_bitmap_t plannable = hwloc_bitmap_alloc(), off = hwloc_bitmap_alloc();
    for (int n = 0; n < d->topo->nnuma; n++)
        hwloc_bitmap_or(plannable, plannable, d->topo->numa[n].cpus);
    hwloc_bitmap_andnot(off, jr->cpus, plannable);
    char *given = cpulist_format(jr->cpus), *here = cpulist_format(plannable), *away = cpulist_format(off);
    result_t r = hwloc_bitmap_iszero(off)
                     ? result_ok()
                     : result_fail(RESULT_INVALID,
                                   "job %s: its CPUs %s include %s, which this node does not have (CPUs %s)", jr->id,
                                   given ? given : "?", away ? away : "?", here ? here : "?");
    free(given);
    free(here);
    free(away);
    hwloc_bitmap_free(plannable);
    hwloc_bitmap_free(off);
    return r;
}

static result_t existing_job(job_t *j, const job_request_t *jr, job_t **out, bool *existing)
{
    if (j->uid != jr->uid || j->role != jr->role)
        return result_fail(RESULT_BUSY, "job %s is already registered for uid %u as %s", jr->id, (unsigned)j->uid,
                           job_role_name(j->role));
    *out = j;
    *existing = true;
    return result_ok();
}

static result_t place(daemon_t *d, const job_request_t *jr, hwloc_const_bitmap_t no_gpus, bool confining, job_t **out)
{
    plan_request_t req;
    request_from(&req, jr, no_gpus);
    hwloc_bitmap_t trainers = hwloc_bitmap_alloc(), cotenants = hwloc_bitmap_alloc();
    taken_sets(d, confining, trainers, cotenants);
    if (jr->share_cores)
        hwloc_bitmap_zero(cotenants); /* other co-tenants' cores are its to share; trainers' never */
    req.trainer_taken = trainers;
    req.cotenant_taken = cotenants;
    char err[512];
    plan_t *plan = plan_compute(d->topo, &req, err, sizeof err);
    hwloc_bitmap_free(trainers);
    hwloc_bitmap_free(cotenants);
    if (!plan)
        return refusal(d, jr, no_gpus, err);
    const plan_rank_t *ranks = jr->role == ROLE_TRAINER ? plan->trainer : plan->noise;
    int n = jr->role == ROLE_TRAINER ? plan->ntrainer : plan->nnoise;
    job_t *j = n > 0 ? job_adopt(d, jr->id, jr->uid, jr->role, jr->policy, ranks, n) : NULL;
    if (j) {
        j->isolation = plan->isolation;
        if (plan->nwarnings)
            j->warnings = json_array();
        for (int w = 0; w < plan->nwarnings; w++) {
            log_warn("job %s: %s", jr->id, plan->warnings[w]);
            json_array_append_new(j->warnings, json_string(plan->warnings[w]));
        }
        j->allowed = jr->cpus ? hwloc_bitmap_dup(jr->cpus) : NULL;
        j->external = jr->external;
        j->share_cores = jr->share_cores;
    }
    plan_free(plan);
    if (n == 0 && jr->cpus)
        return result_fail(RESULT_BUSY, "job %s: no core of its CPUs is free of other jobs", jr->id);
    if (n == 0)
        return result_fail(RESULT_INVALID, "job %s asks for no ranks", jr->id);
    if (!j)
        return result_fail(RESULT_FAILED, "out of memory");
    *out = j;
    return result_ok();
}

result_t job_register(daemon_t *d, const job_request_t *jr, job_t **out, bool *existing)
{
    *out = NULL;
    *existing = false;
    job_t *j = job_find(d, jr->id);
    if (j)
        return existing_job(j, jr, out, existing);
    result_t r = check_gpus_free(d, jr);
    if (r.code != RESULT_OK)
        return r;
    r = check_allocation(d, jr);
    if (r.code != RESULT_OK)
        return r;
    hwloc_bitmap_t none = hwloc_bitmap_alloc();
    r = place(d, jr, none, false, &j);
    hwloc_bitmap_free(none);
    if (r.code != RESULT_OK)
        return r;
    j->ranks_per_gpu = jr->ranks_per_gpu;
    j->cpu_ranks = jr->cpu_ranks;
    j->cores_per_rank = jr->cores_per_rank;
    j->cores = jr->cores;
    j->budget = jr->budget;
    j->guard.p.budget = job_budget(d, j);
    snprintf(j->partition, sizeof j->partition, "%s", jr->partition ? jr->partition : "");
    j->progress_requested = jr->progress;
    j->autoreport = jr->autoreport;
    char *cpus = NULL;
    hwloc_bitmap_list_asprintf(&cpus, j->cpus);
    log_info("job %s registered: %s for uid %u, %d rank%s on cpus %s, isolation %s", j->id, job_role_name(j->role),
             (unsigned)j->uid, j->nranks, j->nranks == 1 ? "" : "s", cpus ? cpus : "?",
             plan_isolation_name(j->isolation));
    free(cpus);
    state_mark_dirty(d);
    *out = j;
    return result_ok();
}

static bool has_running_runs(const daemon_t *d, const job_t *j)
{
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, j->id) == 0)
            return true;
    return false;
}

/* The new plan goes into the job as it is, so that its progress, guard and share stay. */
static void take_plan(job_t *j, job_t *planned)
{
    plan_rank_t *ranks = j->ranks;
    int nranks = j->nranks;
    hwloc_bitmap_t cpus = j->cpus, allowed = j->allowed;
    json_t *warnings = j->warnings;
    j->ranks = planned->ranks;
    j->nranks = planned->nranks;
    j->cpus = planned->cpus;
    j->allowed = planned->allowed;
    j->warnings = planned->warnings;
    j->isolation = planned->isolation;
    planned->ranks = ranks;
    planned->nranks = nranks;
    planned->cpus = cpus;
    planned->allowed = allowed;
    planned->warnings = warnings;
}

static result_t check_confinable(const daemon_t *d, const job_t *j, hwloc_const_bitmap_t cpus)
{
    if (j->throttle)
        return result_fail(RESULT_BUSY, "job %s has processes the guard holds: it cannot be planned again", j->id);
    if (has_running_runs(d, j))
        return result_fail(RESULT_BUSY, "job %s has runs bound to its plan: it cannot be planned again", j->id);
    if (j->allowed && !hwloc_bitmap_isincluded(cpus, j->allowed)) {
        char *was = cpulist_format(j->allowed), *now = cpulist_format(cpus);
        result_t r = result_fail(RESULT_INVALID,
                                 "job %s was registered within CPUs %s; its cgroup's CPUs %s go beyond them", j->id,
                                 was ? was : "?", now ? now : "?");
        free(was);
        free(now);
        return r;
    }
    return result_ok();
}

result_t job_confine(daemon_t *d, job_t *old, hwloc_const_bitmap_t cpus, job_t **out)
{
    *out = old;
    if (old->allowed && hwloc_bitmap_isequal(old->allowed, cpus))
        return result_ok();
    result_t r = check_confinable(d, old, cpus);
    if (r.code != RESULT_OK)
        return r;
    hwloc_bitmap_t gpus = hwloc_bitmap_alloc();
    for (int k = 0; k < old->nranks; k++)
        if (old->ranks[k].gpu >= 0)
            hwloc_bitmap_set(gpus, (unsigned)old->ranks[k].gpu);
    job_request_t jr = {.id = old->id,
                        .uid = old->uid,
                        .role = old->role,
                        .policy = old->policy,
                        .gpus = gpus,
                        .ranks_per_gpu = old->ranks_per_gpu > 0 ? old->ranks_per_gpu : 1,
                        .cpu_ranks = old->cpu_ranks,
                        .cores_per_rank = old->cores_per_rank,
                        .cores = old->cores,
                        .budget = old->budget,
                        .cpus = cpus,
                        .external = old->external,
                        .share_cores = old->share_cores};
    job_t **link = &d->jobs;
    while (*link != old)
        link = &(*link)->next;
    *link = old->next; /* its cores are free to its new plan */
    hwloc_bitmap_t none = hwloc_bitmap_alloc();
    job_t *planned = NULL;
    r = check_allocation(d, &jr);
    if (r.code == RESULT_OK)
        r = place(d, &jr, none, true, &planned);
    hwloc_bitmap_free(none);
    hwloc_bitmap_free(gpus);
    if (planned) { /* place() put it first in the list: out again, its plan into the job */
        d->jobs = planned->next;
        take_plan(old, planned);
        job_free(planned);
    }
    old->next = *link;
    *link = old;
    if (r.code != RESULT_OK)
        return r;
    char *list = cpulist_format(old->cpus);
    log_info("job %s planned again within its allocation: %d rank%s on cpus %s", old->id, old->nranks,
             old->nranks == 1 ? "" : "s", list ? list : "?");
    free(list);
    state_mark_dirty(d);
    return result_ok();
}

bool job_release(daemon_t *d, const char *id)
{
    for (job_t **p = &d->jobs; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            job_t *j = *p;
            *p = j->next;
            log_info("job %s released", id);
            job_free(j);
            state_mark_dirty(d);
            return true;
        }
    return false;
}
