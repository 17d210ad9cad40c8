/* jobs: registration and release of jobs (what Slurm's prolog and epilog call). A job's
 * allocation comes from the planner run against the cores other jobs already hold. */
#include "jobs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "log.h"
#include "proto.h"

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
    return role == ROLE_TRAINER ? "trainer" : "cotenant";
}

void job_free(job_t *j)
{
    if (!j)
        return;
    for (int r = 0; r < j->nranks; r++) {
        hwloc_bitmap_free(j->ranks[r].cpus);
        hwloc_bitmap_free(j->ranks[r].mems);
    }
    free(j->ranks);
    hwloc_bitmap_free(j->cpus);
    free(j);
}

/* The PUs held by trainer jobs and by co-tenant jobs, for the planner. */
static void taken_sets(const daemon_t *d, hwloc_bitmap_t trainers, hwloc_bitmap_t cotenants)
{
    for (const job_t *j = d->jobs; j; j = j->next)
        hwloc_bitmap_or(j->role == ROLE_TRAINER ? trainers : cotenants,
                        j->role == ROLE_TRAINER ? trainers : cotenants, j->cpus);
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
    j->registered = now_unix();
    j->cpus = hwloc_bitmap_alloc();
    j->ranks = calloc(nranks > 0 ? (size_t)nranks : 1, sizeof *j->ranks);
    if (!j->ranks) {
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
    j->next = d->jobs;
    d->jobs = j;
    return j;
}

json_t *job_allocation_json(const job_t *j)
{
    json_t *ranks = json_array();
    for (int r = 0; r < j->nranks; r++)
        json_array_append_new(ranks, plan_rank_to_json(&j->ranks[r]));
    char *srun = plan_srun_cpu_bind(j->ranks, j->nranks);
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", "job", j->id, "role", job_role_name(j->role), "uid",
                          (json_int_t)j->uid, "policy", plan_policy_name(j->policy), "ranks", ranks, "srun",
                          srun ? json_string(srun) : json_null());
    free(srun);
    return o;
}

static void request_from(plan_request_t *req, const job_request_t *jr, hwloc_const_bitmap_t no_gpus)
{
    plan_request_init(req);
    req->policy = jr->policy;
    req->ranks_per_gpu = jr->ranks_per_gpu;
    req->cores_per_rank = jr->cores_per_rank;
    req->gpus = jr->gpus;
    if (jr->role == ROLE_COTENANT) {
        req->gpus = no_gpus;
        req->noise_ranks = jr->cores;
    } else {
        req->noise_ranks = 0;
    }
}

json_t *job_register(daemon_t *d, const job_request_t *jr)
{
    job_t *existing = job_find(d, jr->id);
    if (existing) {
        /* A prolog that retries after a lost reply gets the same allocation back. */
        if (existing->uid == jr->uid && existing->role == jr->role) {
            json_t *result = job_allocation_json(existing);
            json_object_set_new(result, "existing", json_true());
            return proto_ok(result);
        }
        return proto_error(PROTO_EBUSY, "job %s is already registered for uid %u as %s", jr->id,
                           (unsigned)existing->uid, job_role_name(existing->role));
    }
    if (jr->role == ROLE_TRAINER)
        for (int g = 0; g < d->topo->ngpus; g++) {
            if (jr->gpus && !hwloc_bitmap_isset(jr->gpus, (unsigned)g))
                continue;
            const job_t *owner = gpu_owner(d, g);
            if (owner)
                return proto_error(PROTO_EBUSY, "GPU %d is already used by job %s", g, owner->id);
        }

    plan_request_t req;
    hwloc_bitmap_t none = hwloc_bitmap_alloc();
    request_from(&req, jr, none);
    hwloc_bitmap_t trainers = hwloc_bitmap_alloc(), cotenants = hwloc_bitmap_alloc();
    taken_sets(d, trainers, cotenants);
    req.trainer_taken = trainers;
    req.cotenant_taken = cotenants;
    char err[512];
    plan_t *plan = plan_compute(d->topo, &req, err, sizeof err);
    json_t *reply;
    if (!plan) {
        /* Would it fit on an empty node? Then it is the other jobs that are in the way. */
        plan_request_t alone;
        request_from(&alone, jr, none);
        char err2[512];
        plan_t *empty = plan_compute(d->topo, &alone, err2, sizeof err2);
        reply = empty ? proto_error(PROTO_EBUSY, "job %s does not fit beside the registered jobs: %s", jr->id, err)
                      : proto_error(PROTO_EINVAL, "job %s cannot be placed on this node: %s", jr->id, err);
        plan_free(empty);
    } else {
        const plan_rank_t *ranks = jr->role == ROLE_TRAINER ? plan->trainer : plan->noise;
        int n = jr->role == ROLE_TRAINER ? plan->ntrainer : plan->nnoise;
        job_t *j = n > 0 ? job_adopt(d, jr->id, jr->uid, jr->role, jr->policy, ranks, n) : NULL;
        if (n == 0) {
            reply = proto_error(PROTO_EINVAL, "job %s asks for no ranks", jr->id);
        } else if (!j) {
            reply = proto_error(PROTO_EIO, "out of memory");
        } else {
            j->ranks_per_gpu = jr->ranks_per_gpu;
            j->cores_per_rank = jr->cores_per_rank;
            j->cores = jr->cores;
            char *cpus = NULL;
            hwloc_bitmap_list_asprintf(&cpus, j->cpus);
            log_info("job %s registered: %s for uid %u, %d rank%s on cpus %s", j->id, job_role_name(j->role),
                     (unsigned)j->uid, j->nranks, j->nranks == 1 ? "" : "s", cpus ? cpus : "?");
            free(cpus);
            state_save(d);
            reply = proto_ok(job_allocation_json(j));
        }
        plan_free(plan);
    }
    hwloc_bitmap_free(trainers);
    hwloc_bitmap_free(cotenants);
    hwloc_bitmap_free(none);
    return reply;
}

bool job_release(daemon_t *d, const char *id)
{
    for (job_t **p = &d->jobs; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            job_t *j = *p;
            *p = j->next;
            log_info("job %s released", id);
            job_free(j);
            state_save(d);
            return true;
        }
    return false;
}
