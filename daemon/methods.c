/* methods: one function per request method, each checking what it was given and returning the
 * whole reply object. Who may call it was decided before it runs, from its rule in the method
 * table (access.c; who asks is SO_PEERCRED's, never the payload's). */
#include "methods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "bounds.h"
#include "cotenants.h"
#include "cpulist.h"
#include "jobs.h"
#include "json_out.h"
#include "metrics.h"
#include "lifecycle.h"
#include "progress.h"
#include "proto.h"
#include "runs.h"
#include "redact.h"
#include "reply_json.h"
#include "wire.h"
#include "cgroup_cpus.h"

/* Parameter reading: the first problem is kept and becomes an EINVAL reply. */
typedef struct {
    json_t *params;
    char err[256];
} args_t;

static bool bad(args_t *a, const char *fmt, const char *key)
{
    if (!a->err[0])
        snprintf(a->err, sizeof a->err, fmt, key);
    return false;
}

static bool arg_string(args_t *a, const char *key, bool required, const char **out)
{
    json_t *v = json_object_get(a->params, key);
    if (!v)
        return required ? bad(a, "missing parameter '%s'", key) : true;
    if (!json_is_string(v))
        return bad(a, "parameter '%s' must be a string", key);
    *out = json_string_value(v);
    return true;
}

static bool arg_int(args_t *a, const char *key, bool required, long long min, long long max, long long *out)
{
    json_t *v = json_object_get(a->params, key);
    if (!v)
        return required ? bad(a, "missing parameter '%s'", key) : true;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return bad(a, "parameter '%s' must be a whole number in range", key);
    *out = json_integer_value(v);
    return true;
}

static bool arg_number(args_t *a, const char *key, bool required, double *out)
{
    json_t *v = json_object_get(a->params, key);
    if (!v)
        return required ? bad(a, "missing parameter '%s'", key) : true;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e6)
        return bad(a, "parameter '%s' must be a positive number of seconds", key);
    *out = json_number_value(v);
    return true;
}

/* A fraction in [lo, hi]: a budget, a share. */
static bool arg_fraction(args_t *a, const char *key, double lo, double hi, bool lo_exclusive, double *out)
{
    json_t *v = json_object_get(a->params, key);
    if (!v)
        return true;
    double x = json_number_value(v);
    if (!json_is_number(v) || x > hi || x < lo || (lo_exclusive && x <= lo))
        return bad(a, "parameter '%s' must be a number in range", key);
    *out = x;
    return true;
}

static bool arg_bool(args_t *a, const char *key, bool *out)
{
    json_t *v = json_object_get(a->params, key);
    if (!v)
        return true;
    if (!json_is_boolean(v))
        return bad(a, "parameter '%s' must be true or false", key);
    *out = json_is_true(v);
    return true;
}

/* A set of indexes (GPUs, CPUs): [0,2] or "0-3"; absent or null = all, *out NULL. */
static bool arg_index_set(args_t *a, const char *key, hwloc_bitmap_t *out)
{
    json_t *v = json_object_get(a->params, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    if (json_is_string(v)) {
        char err[256] = "";
        *out = cpulist_parse(json_string_value(v), 0, err, sizeof err);
        if (*out && hwloc_bitmap_iszero(*out)) {
            hwloc_bitmap_free(*out);
            *out = NULL;
        }
        return *out ? true : bad(a, "parameter '%s' is not a non-empty list like 0-3,8", key);
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return bad(a, "parameter '%s' must be a non-empty array of indexes or a list string", key);
    *out = hwloc_bitmap_alloc();
    size_t i;
    json_t *g;
    json_array_foreach(v, i, g) {
        if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > BOUNDS_INDEX_MAX) {
            hwloc_bitmap_free(*out);
            *out = NULL;
            return bad(a, "parameter '%s' must hold indexes from 0 to " BOUNDS_TEXT(BOUNDS_INDEX_MAX), key);
        }
        hwloc_bitmap_set(*out, (unsigned)json_integer_value(g));
    }
    return true;
}

static json_t *invalid(const args_t *a)
{
    return proto_error(PROTO_EINVAL, "%s", a->err);
}

/* The one place where a module's result becomes a protocol error. */
static json_t *refused(const result_t *r)
{
    static const char *const codes[] = {
        [RESULT_OK] = PROTO_EIO, /* not an error: never passed here */
        [RESULT_INVALID] = PROTO_EINVAL, [RESULT_NOT_FOUND] = PROTO_ENOENT,
        [RESULT_BUSY] = PROTO_EBUSY,     [RESULT_FAILED] = PROTO_EIO,
    };
    return proto_error(codes[r->code], "%s", r->message);
}

static json_t *m_ping(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    (void)a;
    return proto_ok(json_pack("{s:s, s:i, s:f}", WIRE_R_VERSION, COSCHED_VERSION_STRING, WIRE_R_PID, (int)getpid(),
                              WIRE_R_UPTIME, clock_now_unix() - d->started));
}

static json_t *m_status(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)a;
    int jobs[2] = {0, 0}, running = 0, runs = 0;
    for (job_t *j = d->jobs; j; j = j->next)
        jobs[j->role]++;
    for (run_t *r = d->runs; r; r = r->next, runs++)
        running += r->state == RUN_RUNNING;
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    for (job_t *j = d->jobs; j; j = j->next)
        hwloc_bitmap_or(used, used, j->cpus);
    int used_n = hwloc_bitmap_weight(used);
    hwloc_bitmap_free(used);
    return proto_ok(json_pack("{s:s, s:i, s:f, s:s, s:s, s:{s:i, s:i}, s:{s:i, s:i}, s:i, s:i, s:i, s:b, s:o, s:{s:I, "
                              "s:I, s:b, s:s?}}",
                              WIRE_R_VERSION, COSCHED_VERSION_STRING, WIRE_R_PID, (int)getpid(), WIRE_R_UPTIME,
                              clock_now_unix() - d->started, WIRE_R_TOPOLOGY, d->topo->source, WIRE_R_POLICY,
                              d->cfg.policy, WIRE_R_JOBS, WIRE_R_TRAINER, jobs[ROLE_TRAINER], WIRE_R_COTENANT,
                              jobs[ROLE_COTENANT], WIRE_R_RUNS, WIRE_R_RUNNING, running, WIRE_R_TOTAL, runs,
                              WIRE_R_CPUS_ALLOCATED, used_n, WIRE_R_PLANNABLE_CORES, d->topo->ncores, WIRE_R_CLIENTS,
                              d->nclients, WIRE_R_OPERATOR, p->manager, WIRE_R_GUARD, reply_json_guard_status(d),
                              WIRE_R_STATE, WIRE_R_SAVES, (json_int_t)d->state_saves_total, WIRE_R_SAVE_ERRORS,
                              (json_int_t)d->state_save_errors_total, WIRE_R_DIRTY, d->state_dirty, WIRE_R_LAST_ERROR,
                              d->state_save_error[0] ? d->state_save_error : NULL));
}

static json_t *m_topology(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    (void)a;
    return proto_ok(topo_to_json(d->topo));
}

static bool arg_policy(args_t *a, const daemon_t *d, plan_policy_t *out)
{
    const char *name = d->cfg.policy;
    if (!arg_string(a, WIRE_P_POLICY, false, &name))
        return false;
    return plan_policy_parse(name, out) == 0 ? true : bad(a, "unknown policy '%s'", name);
}

/* cpu_ranks asks for a trainer without GPUs: naming GPUs as well is a contradiction. */
static bool cpu_ranks_alone(args_t *a, long long cpu_ranks, hwloc_const_bitmap_t gpus)
{
    return cpu_ranks == 0 || !gpus ? true
                                   : bad(a,
                                         "parameters 'cpu_ranks' (a trainer on cores, no GPU) and '%s' do not go "
                                         "together",
                                         WIRE_P_GPUS);
}

/* The planner as a service: the same request as `cosched plan`, on the daemon's topology. */
static json_t *m_plan(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    plan_request_t req;
    plan_request_init(&req);
    long long rpg = 1, cpr = 0, noise = -1, cpu_ranks = 0;
    hwloc_bitmap_t gpus = NULL;
    const char *mem = NULL;
    int smt = 0;
    json_t *smt_v = json_object_get(a->params, WIRE_P_SMT);
    if (smt_v && !json_is_boolean(smt_v))
        bad(a, "parameter '%s' must be true or false", WIRE_P_SMT);
    smt = json_is_true(smt_v);
    if (!arg_policy(a, d, &req.policy) || !arg_int(a, WIRE_P_RANKS_PER_GPU, false, 1, BOUNDS_COUNT_MAX, &rpg) ||
        !arg_int(a, WIRE_P_CORES_PER_RANK, false, 0, BOUNDS_COUNT_MAX, &cpr) ||
        !arg_int(a, WIRE_P_NOISE_RANKS, false, -1, BOUNDS_COUNT_MAX, &noise) ||
        !arg_int(a, WIRE_P_CPU_RANKS, false, 1, BOUNDS_COUNT_MAX, &cpu_ranks) ||
        !arg_index_set(a, WIRE_P_GPUS, &gpus) || !cpu_ranks_alone(a, cpu_ranks, gpus) ||
        !arg_string(a, WIRE_P_MEM, false, &mem) || a->err[0]) {
        hwloc_bitmap_free(gpus);
        return invalid(a);
    }
    if (mem && plan_mem_parse(mem, &req.mem) < 0) {
        hwloc_bitmap_free(gpus);
        return proto_error(PROTO_EINVAL, "parameter '%s' must be 'local' or 'hbm', not '%s'", WIRE_P_MEM, mem);
    }
    req.ranks_per_gpu = (int)rpg;
    req.cpu_ranks = (int)cpu_ranks;
    req.cores_per_rank = (int)cpr;
    req.noise_ranks = (int)noise;
    req.smt = smt;
    req.gpus = gpus;
    char err[512];
    plan_t *plan = plan_compute(d->topo, &req, err, sizeof err);
    hwloc_bitmap_free(gpus);
    if (!plan)
        return proto_error(PROTO_EINVAL, "%s", err);
    json_t *reply = proto_ok(plan_to_json(plan));
    plan_free(plan);
    return reply;
}

static json_t *m_job_register(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    job_request_t jr = {.ranks_per_gpu = 1};
    bool autoreport = false;
    const char *role = NULL, *progress = NULL;
    long long uid = -1, rpg = 1, cpr = 0, cores = 0, cpu_ranks = 0;
    hwloc_bitmap_t gpus = NULL, cpus = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &jr.id) || !arg_int(a, WIRE_P_UID, true, 0, BOUNDS_UID_MAX, &uid) ||
        !arg_string(a, WIRE_P_ROLE, true, &role) || !arg_policy(a, d, &jr.policy) ||
        !arg_int(a, WIRE_P_RANKS_PER_GPU, false, 1, BOUNDS_COUNT_MAX, &rpg) ||
        !arg_int(a, WIRE_P_CORES_PER_RANK, false, 0, BOUNDS_COUNT_MAX, &cpr) ||
        !arg_int(a, WIRE_P_CORES, false, 1, BOUNDS_COUNT_MAX, &cores) ||
        !arg_int(a, WIRE_P_CPU_RANKS, false, 1, BOUNDS_COUNT_MAX, &cpu_ranks) ||
        !arg_fraction(a, WIRE_P_BUDGET, BOUNDS_BUDGET_MIN, BOUNDS_BUDGET_MAX, true, &jr.budget) ||
        !arg_index_set(a, WIRE_P_GPUS, &gpus) || !arg_index_set(a, WIRE_P_CPUS, &cpus) ||
        !arg_bool(a, WIRE_P_EXTERNAL, &jr.external) || !arg_bool(a, WIRE_P_SHARE_CORES, &jr.share_cores) ||
        !arg_string(a, WIRE_P_PROGRESS, false, &progress) || !arg_string(a, WIRE_P_PARTITION, false, &jr.partition) ||
        !arg_bool(a, WIRE_P_AUTOREPORT, &autoreport) || !cpu_ranks_alone(a, cpu_ranks, gpus)) {
        hwloc_bitmap_free(gpus);
        hwloc_bitmap_free(cpus);
        return invalid(a);
    }
    json_t *reply;
    if (!job_id_valid(jr.id))
        reply = proto_error(PROTO_EINVAL, "job id must be 1-63 characters of letters, digits, '.', '_' or '-'");
    else if (job_role_parse(role, &jr.role) < 0)
        reply = proto_error(PROTO_EINVAL, "role must be '%s' or '%s', not '%s'", WIRE_ROLE_TRAINER, WIRE_ROLE_COTENANT,
                            role);
    else if (cpu_ranks > 0 && jr.role != ROLE_TRAINER)
        reply = proto_error(PROTO_EINVAL, "cpu_ranks are a trainer's: a co-tenant's size is its cores");
    else if (jr.share_cores && jr.role != ROLE_COTENANT)
        reply = proto_error(PROTO_EINVAL,
                            "only a co-tenant may share cores (with other co-tenants): a trainer never does");
    else if (jr.budget > 0 && jr.role != ROLE_TRAINER)
        reply = proto_error(PROTO_EINVAL, "a budget is a trainer's: co-tenants have none");
    else if (progress && progress_source_parse(progress, &jr.progress) < 0)
        reply = proto_error(PROTO_EINVAL, "progress must be auto, steps, gpu, pmu or none, not '%s'", progress);
    else if (progress && jr.role != ROLE_TRAINER)
        reply = proto_error(PROTO_EINVAL, "a progress source is a trainer's: co-tenants have none");
    else if (jr.partition && !config_partition_valid(jr.partition))
        reply = proto_error(PROTO_EINVAL, "partition must be 1-63 letters, digits, '.', '_' or '-'");
    else if (json_object_get(a->params, WIRE_P_AUTOREPORT) && jr.role != ROLE_TRAINER)
        reply = proto_error(PROTO_EINVAL, "autoreport is a trainer's: co-tenants never get the step reporter");
    else {
        if (json_object_get(a->params, WIRE_P_AUTOREPORT))
            jr.autoreport = autoreport ? AUTOREPORT_ON : AUTOREPORT_OFF;
        if (!progress)
            jr.progress = config_progress_default(&d->cfg, jr.partition);
        jr.uid = (uid_t)uid;
        jr.gpus = gpus;
        jr.cpus = cpus;
        jr.ranks_per_gpu = (int)rpg;
        jr.cpu_ranks = (int)cpu_ranks;
        jr.cores_per_rank = (int)cpr;
        jr.cores = (int)cores;
        job_t *j = NULL;
        bool existing = false;
        result_t r = lifecycle_job_register(d, &jr, &j, &existing);
        if (r.code != RESULT_OK) {
            reply = refused(&r);
        } else {
            json_t *result = reply_json_job(d, j);
            if (existing)
                json_object_set_new(result, WIRE_R_EXISTING, json_true());
            reply = proto_ok(result);
        }
    }
    hwloc_bitmap_free(gpus);
    hwloc_bitmap_free(cpus);
    return reply;
}

static json_t *m_job_release(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id))
        return invalid(a);
    (void)p;
    bool released = lifecycle_job_release(d, id);
    return proto_ok(json_pack("{s:s, s:b}", WIRE_R_JOB, id, WIRE_R_RELEASED, released));
}

/* How much of job j (NULL: a run's job that is gone) the caller may see under private_jobs. */
static access_view_t view_of(const daemon_t *d, const peer_t *p, const job_t *j)
{
    return access_view(d->cfg.private_jobs, p->uid, p->manager, j);
}

/* o, as the caller may see it: whole, scrubbed, or NULL (dropped) when hidden from them. */
static json_t *as_seen(json_t *o, access_view_t view)
{
    if (view == ACCESS_SEES_NOTHING) {
        json_decref(o);
        return NULL;
    }
    if (view == ACCESS_SEES_REDACTED)
        redact_private(o);
    return o;
}

static json_t *m_job_list(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)a;
    json_t *jobs = json_array();
    for (job_t *j = d->jobs; j; j = j->next) {
        json_t *o = as_seen(reply_json_job(d, j), view_of(d, p, j));
        if (o)
            json_array_append_new(jobs, o);
    }
    return proto_ok(json_pack("{s:o}", WIRE_R_JOBS, jobs));
}

static json_t *m_job_get(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id))
        return invalid(a);
    job_t *j = job_find(d, id);
    json_t *o = j ? as_seen(reply_json_job(d, j), view_of(d, p, j)) : NULL;
    return o ? proto_ok(o) : proto_error(PROTO_ENOENT, "no job %s", id); /* hidden reads as absent */
}

/* The allocation of Slurm job `id` as the kernel shows it for the caller: the cpuset of the
 * job_<id> cgroup that root made above the caller's own (a task's TaskProlog runs in it). A pid
 * reused since the caller connected gains nothing: it must be in that same job's cgroup. */
static hwloc_bitmap_t caller_job_cpus(const peer_t *p, const char *id, char *why, size_t whylen)
{
    char dir[4096], job_dir[4096], reason[4096];
    if (p->pid <= 0) {
        snprintf(why, whylen, "the caller's pid is not known here (another pid namespace?): its cgroup cannot be read");
        return NULL;
    }
    hwloc_bitmap_t own = cgroup_cpus_of(p->pid, dir, sizeof dir);
    bool readable = own != NULL;
    hwloc_bitmap_free(own);
    if (!readable) {
        snprintf(why, whylen, "cannot read the cpuset cgroup of the caller (pid %d)", (int)p->pid);
        return NULL;
    }
    if (cgroup_job_dir(dir, id, job_dir, sizeof job_dir, reason, sizeof reason) < 0) {
        snprintf(why, whylen, "the caller (pid %d): %s", (int)p->pid, reason);
        return NULL;
    }
    hwloc_bitmap_t cpus = cgroup_cpus_in(job_dir);
    if (!cpus)
        snprintf(why, whylen, "%s has no cpuset to read", job_dir);
    return cpus;
}

/* job.confine: a job's task asks for its job to be planned within the cpuset Slurm gave it. */
static json_t *m_job_confine(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id))
        return invalid(a);
    job_t *j = job_find(d, id);
    if (!j)
        return proto_error(PROTO_ENOENT, "no job %s", id);
    char why[4200];
    hwloc_bitmap_t cpus = caller_job_cpus(p, id, why, sizeof why);
    if (!cpus)
        return proto_error(PROTO_EINVAL, "%s", why);
    result_t r = lifecycle_job_confine(d, j, cpus, p->pid, &j);
    hwloc_bitmap_free(cpus);
    if (r.code != RESULT_OK)
        return refused(&r);
    return proto_ok(reply_json_job(d, j));
}

static bool strings_only(json_t *v, bool array)
{
    size_t i;
    const char *k;
    json_t *x;
    if (array) {
        json_array_foreach(v, i, x)
            if (!json_is_string(x) || strlen(json_string_value(x)) == 0)
                return false;
    } else {
        json_object_foreach(v, k, x)
            if (!json_is_string(x) || !*k || strchr(k, '='))
                return false;
    }
    return true;
}

static json_t *m_run_start(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    const char *id = NULL;
    long long rank = 0;
    if (!arg_string(a, WIRE_P_JOB, true, &id) || !arg_int(a, WIRE_P_RANK, false, 0, BOUNDS_INDEX_MAX, &rank))
        return invalid(a);
    json_t *argv = json_object_get(a->params, WIRE_P_ARGV), *env = json_object_get(a->params, WIRE_P_ENV);
    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > 4096 || !strings_only(argv, 1))
        return proto_error(PROTO_EINVAL, "parameter 'argv' must be a non-empty array of non-empty strings");
    if (env && (!json_is_object(env) || !strings_only(env, 0)))
        return proto_error(PROTO_EINVAL, "parameter 'env' must be an object of NAME: \"value\" strings");
    const char *cwd = NULL;
    if (!arg_string(a, WIRE_P_CWD, false, &cwd))
        return invalid(a);
    if (cwd && (cwd[0] != '/' || strlen(cwd) >= 4096))
        return proto_error(PROTO_EINVAL, "parameter 'cwd' must be an absolute path shorter than 4096 bytes");
    job_t *j = job_find(d, id);
    if (!j)
        return proto_error(PROTO_ENOENT, "no job %s", id);
    run_t *run = NULL;
    result_t r = lifecycle_run_start(d, j, (int)rank, argv, env, cwd, &run);
    return r.code == RESULT_OK ? proto_ok(reply_json_run(run)) : refused(&r);
}

static json_t *m_run_stop(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    long long id = 0;
    if (!arg_int(a, WIRE_P_ID, true, 1, 0x7fffffff, &id))
        return invalid(a);
    run_t *r = run_find(d, (int)id);
    if (!r)
        return proto_error(PROTO_ENOENT, "no run %lld", id);
    bool was_running = r->state == RUN_RUNNING;
    if (run_stop(d, r) < 0)
        return proto_error(PROTO_EIO, "cannot signal run %lld (pid %d)", id, (int)r->pid);
    json_t *o = reply_json_run(r);
    json_object_set_new(o, WIRE_R_STOPPING, json_boolean(was_running));
    return proto_ok(o);
}

static json_t *m_run_list(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *job = NULL;
    if (!arg_string(a, WIRE_P_JOB, false, &job))
        return invalid(a);
    json_t *runs = json_array();
    for (run_t *r = d->runs; r; r = r->next) {
        json_t *o = !job || strcmp(job, r->job) == 0 ? as_seen(reply_json_run(r), view_of(d, p, job_find(d, r->job)))
                                                     : NULL;
        if (o)
            json_array_append_new(runs, o);
    }
    return proto_ok(json_pack("{s:o}", WIRE_R_RUNS, runs));
}

/* {job, step_time}: the job, or NULL and *error set (who may ask was decided before). */
static job_t *job_step(daemon_t *d, args_t *a, double *t, json_t **error)
{
    const char *id = NULL;
    *error = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id) || !arg_number(a, WIRE_P_STEP_TIME, true, t)) {
        *error = invalid(a);
        return NULL;
    }
    if (*t < BOUNDS_STEP_SECONDS_MIN) {
        *error = proto_error(PROTO_EINVAL,
                             "parameter '%s' %g s is %.0f steps a second, more than any training step reaches (at "
                             "least %g s)",
                             WIRE_P_STEP_TIME, *t, 1 / *t, BOUNDS_STEP_SECONDS_MIN);
        return NULL;
    }
    job_t *j = job_find(d, id);
    if (!j)
        *error = proto_error(PROTO_ENOENT, "no job %s", id);
    return *error ? NULL : j;
}

/* Who sent a report and how: rank, source and torch, each optional (a report without them is
 * one of the program's own, from no rank in particular). */
static bool arg_step_origin(args_t *a, step_origin_t *from)
{
    json_t *rank = json_object_get(a->params, WIRE_P_RANK), *source = json_object_get(a->params, WIRE_P_SOURCE),
           *torch = json_object_get(a->params, WIRE_P_TORCH);
    *from = (step_origin_t){.rank = STEP_RANK_NONE, .via = STEP_VIA_REPORTED};
    if (rank && (!json_is_integer(rank) || json_integer_value(rank) < 0 || json_integer_value(rank) > STEP_RANK_MAX))
        return bad(a, "parameter '%s' must be a whole number from 0 (the reporting process's rank in its job)",
                   WIRE_P_RANK);
    if (source && step_via_parse(json_string_value(source), &from->via) < 0)
        return bad(a, "parameter '%s' must be \"" WIRE_STEPS_REPORTED "\" or \"" WIRE_STEPS_HOOK "\"", WIRE_P_SOURCE);
    if (torch && !step_torch_valid(json_string_value(torch)))
        return bad(a, "parameter '%s' must be a version of 1-31 letters, digits and . + _ - (torch.__version__)",
                   WIRE_P_TORCH);
    if (torch && from->via != STEP_VIA_HOOK)
        return bad(a, "parameter '%s' goes only with source \"" WIRE_STEPS_HOOK "\"", WIRE_P_TORCH);
    from->rank = rank ? json_integer_value(rank) : STEP_RANK_NONE;
    from->torch = torch ? json_string_value(torch) : NULL;
    return true;
}

/* A job owner's own program (PyTorch, say), or the hook injected into it, reporting a step. */
static json_t *m_report(daemon_t *d, const peer_t *p, args_t *a)
{
    double t = 0;
    step_origin_t from;
    json_t *error;
    if (!arg_step_origin(a, &from))
        return invalid(a);
    (void)p;
    job_t *j = job_step(d, a, &t, &error);
    if (!j)
        return error;
    if (j->role != ROLE_TRAINER)
        return proto_error(PROTO_EINVAL, "job %s is a co-tenant: only trainers report steps", j->id);
    /* judged: false when another source (an operator's pick) feeds the job's guard, another
     * rank's reports make its steps, or the program's own reports overrule the hook */
    bool judged = progress_step_from(d, j, t, &from);
    return proto_ok(json_pack("{s:s, s:I, s:b}", WIRE_R_JOB, j->id, WIRE_R_STEPS, (json_int_t)j->steps.steps_total,
                              WIRE_R_JUDGED, judged));
}

/* A trainer's own program saying what it does now: training, or a phase whose steps the guard
 * must not judge (evaluation, checkpoint). */
static json_t *m_phase(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL, *phase = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id) || !arg_string(a, WIRE_P_PHASE, true, &phase))
        return invalid(a);
    job_t *j = job_find(d, id);
    (void)p;
    if (!j)
        return proto_error(PROTO_ENOENT, "no job %s", id);
    if (j->role != ROLE_TRAINER)
        return proto_error(PROTO_EINVAL, "job %s is a co-tenant: only trainers have phases", j->id);
    if (!progress_phase_valid(phase))
        return proto_error(PROTO_EINVAL, "a phase is 1-31 of a-z, 0-9, '_' and '-' (train, eval, checkpoint), not '%s'",
                           phase);
    progress_set_phase(d, j, phase);
    return proto_ok(json_pack("{s:s, s:s}", WIRE_R_JOB, j->id, WIRE_R_PHASE, j->phase));
}

/* A trainer's owner may say its steps are slower than measured, not much faster: a baseline
 * below what the daemon measured makes every step look slow, and other users' co-tenants are held
 * for it. Without a measured baseline there is nothing to hold theirs to: root and operators may. */
static json_t *baseline_too_low(daemon_t *d, const job_t *j, double t)
{
    step_stats_t measured = j->steps;
    measured.explicit_baseline = 0;
    summary_t b = stats_baseline(&measured, d->cfg.baseline_steps);
    if (b.n < 3 || !(b.median > 0))
        return proto_error(PROTO_EPERM,
                           "job %s has no measured baseline yet (it is measured from its first steps alone): until "
                           "then only root and operators may set one",
                           j->id);
    double floor = b.median * (1 - BOUNDS_BASELINE_MARGIN);
    if (t < floor)
        return proto_error(PROTO_EPERM,
                           "a baseline of %g s is more than %.0f %% below job %s's measured %g s: its owner may set "
                           "%g s or more (root and operators may set any)",
                           t, 100 * BOUNDS_BASELINE_MARGIN, j->id, b.median, floor);
    return NULL;
}

static json_t *m_baseline_set(daemon_t *d, const peer_t *p, args_t *a)
{
    double t = 0;
    json_t *error;
    job_t *j = job_step(d, a, &t, &error);
    if (!j)
        return error;
    if (!p->manager) {
        json_t *low = baseline_too_low(d, j, t);
        if (low)
            return low;
    }
    result_t r = progress_set_baseline(d, j, t);
    if (r.code != RESULT_OK)
        return refused(&r);
    return proto_ok(json_pack("{s:s, s:f}", WIRE_R_JOB, j->id, WIRE_R_BASELINE_STEP_SECONDS, t));
}

static json_t *m_stats(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL;
    bool history = false;
    if (!arg_string(a, WIRE_P_JOB, false, &id) || !arg_bool(a, WIRE_P_HISTORY, &history))
        return invalid(a);
    /* One trainer's history fills most of a frame (history.h). */
    if (history && !id)
        return proto_error(PROTO_EINVAL, "parameter '%s' needs '%s': one trainer's history at a time", WIRE_P_HISTORY,
                           WIRE_P_JOB);
    json_t *jobs = json_array();
    for (const job_t *j = d->jobs; j; j = j->next) {
        json_t *o = !id || strcmp(id, j->id) == 0 ? as_seen(reply_json_job_stats(d, j, history), view_of(d, p, j))
                                                  : NULL;
        if (o)
            json_array_append_new(jobs, o);
    }
    if (id && json_array_size(jobs) == 0) {
        json_decref(jobs);
        return proto_error(PROTO_ENOENT, "no job %s", id);
    }
    return proto_ok(json_pack("{s:f, s:b, s:f, s:o}", WIRE_R_SLOWDOWN_BUDGET, d->cfg.slowdown_budget,
                              WIRE_R_COTENANT_ACTIVE, cotenants_activity(d).any, WIRE_R_COTENANT_SHARE,
                              cotenants_guard_share(d), WIRE_R_JOBS, jobs));
}

/* An operator pins a co-tenant's share (experiments, maintenance), or hands it back to the guard. */
static json_t *m_guard_set(daemon_t *d, const peer_t *p, args_t *a)
{
    const char *id = NULL;
    if (!arg_string(a, WIRE_P_JOB, true, &id))
        return invalid(a);
    json_t *v = json_object_get(a->params, WIRE_P_SHARE);
    double share = -1;
    if (!v)
        return proto_error(PROTO_EINVAL, "missing parameter '%s' (a share from 0 to 1, or null for the guard's)",
                           WIRE_P_SHARE);
    if (!json_is_null(v) && !arg_fraction(a, WIRE_P_SHARE, BOUNDS_SHARE_MIN, BOUNDS_SHARE_MAX, false, &share))
        return invalid(a);
    job_t *j = job_find(d, id);
    if (!j)
        return proto_error(PROTO_ENOENT, "no job %s", id);
    result_t r = lifecycle_guard_set(d, j, share, p->uid);
    return r.code == RESULT_OK ? proto_ok(reply_json_job(d, j)) : refused(&r);
}

static json_t *m_metrics(daemon_t *d, const peer_t *p, args_t *a)
{
    (void)p;
    (void)a;
    char *text = metrics_render(d);
    json_t *reply = proto_ok(json_pack("{s:s}", WIRE_R_TEXT, text ? text : ""));
    free(text);
    return reply;
}

/* The permission column is docs/security.md's table: access.c decides from it, before a handler
 * runs, so that no handler has a check of its own to forget. `what` words the refusal. */
static const struct {
    const char *name;
    json_t *(*run)(daemon_t *, const peer_t *, args_t *);
    access_rule_t who;
    const char *what;
} methods[] = {
    {WIRE_PING, m_ping, ACCESS_ANYONE, "ping"},
    {WIRE_STATUS, m_status, ACCESS_ANYONE, "read the status"},
    {WIRE_TOPOLOGY, m_topology, ACCESS_ANYONE, "read the topology"},
    {WIRE_PLAN, m_plan, ACCESS_ANYONE, "plan"},
    {WIRE_JOB_REGISTER, m_job_register, ACCESS_MANAGERS, "register jobs"},
    {WIRE_JOB_RELEASE, m_job_release, ACCESS_TRAINER_OWNER, "release"},
    {WIRE_JOB_LIST, m_job_list, ACCESS_ANYONE, "list jobs"},
    {WIRE_JOB_GET, m_job_get, ACCESS_ANYONE, "read jobs"},
    {WIRE_JOB_CONFINE, m_job_confine, ACCESS_JOB_OWNER, "confine"},
    {WIRE_RUN_START, m_run_start, ACCESS_MANAGERS, "start runs"},
    {WIRE_RUN_STOP, m_run_stop, ACCESS_MANAGERS, "stop runs"},
    {WIRE_RUN_LIST, m_run_list, ACCESS_ANYONE, "list runs"},
    {WIRE_REPORT, m_report, ACCESS_TRAINER_OWNER, "report the steps of"},
    {WIRE_PHASE, m_phase, ACCESS_TRAINER_OWNER, "announce a phase of"},
    {WIRE_BASELINE_SET, m_baseline_set, ACCESS_TRAINER_OWNER, "set the baseline of"},
    {WIRE_STATS, m_stats, ACCESS_ANYONE, "read statistics"},
    {WIRE_METRICS, m_metrics, ACCESS_UNLESS_HIDDEN, "read the metrics"},
    {WIRE_GUARD_SET, m_guard_set, ACCESS_MANAGERS, "set a co-tenant's share"},
};

/* The method's rule applied to the caller and the job its request names: NULL when it may go on. */
static json_t *access_refusal(daemon_t *d, const peer_t *p, size_t m, json_t *params)
{
    json_t *id = json_object_get(params, WIRE_P_JOB);
    /* A rule on a job, and no job named: malformed, whoever asks (a manager's handler says so). */
    if ((methods[m].who == ACCESS_JOB_OWNER || methods[m].who == ACCESS_TRAINER_OWNER) && !json_is_string(id) &&
        !p->manager)
        return proto_error(PROTO_EINVAL, "missing parameter '%s' (a string)", WIRE_P_JOB);
    const job_t *j = json_is_string(id) ? job_find(d, json_string_value(id)) : NULL;
    if (j && view_of(d, p, j) == ACCESS_SEES_NOTHING)
        j = NULL; /* hidden reads as absent: ENOENT, so that a refusal says nothing of its existence */
    char why[512];
    switch (
        access_decide(methods[m].who, p->uid, p->manager, j, d->cfg.private_jobs, methods[m].what, why, sizeof why)) {
    case ACCESS_GRANTED: return NULL;
    case ACCESS_NO_SUCH_JOB: return proto_error(PROTO_ENOENT, "no job %s", json_string_value(id));
    case ACCESS_DENIED: break;
    }
    d->requests_denied_total++;
    return proto_error(PROTO_EPERM, "%s", why);
}

/* What a reply may still say of other users' jobs that the handlers' views left in: the guard's
 * problems (their details quote cgroup paths) and, under hide, the ids of hidden jobs wherever
 * they stand (a co-tenant's verdicts name trainers, a trainer's statistics its co-tenants). */
static void keep_private(daemon_t *d, const peer_t *p, json_t *reply)
{
    if (p->manager || d->cfg.private_jobs == PRIVATE_JOBS_OFF || !json_is_true(json_object_get(reply, WIRE_KEY_OK)))
        return;
    json_t *result = json_object_get(reply, WIRE_KEY_RESULT);
    json_t *problems = json_object_get(json_object_get(result, WIRE_R_GUARD), WIRE_R_PROBLEMS);
    size_t i;
    json_t *problem;
    json_array_foreach(problems, i, problem) {
        const char *id = json_string_value(json_object_get(problem, WIRE_R_JOB));
        if (id && view_of(d, p, job_find(d, id)) != ACCESS_SEES_ALL)
            redact_private(problem);
    }
    if (d->cfg.private_jobs != PRIVATE_JOBS_HIDE)
        return;
    const char *hidden[256];
    size_t n = 0;
    for (const job_t *j = d->jobs; j && n < sizeof hidden / sizeof hidden[0]; j = j->next)
        if (view_of(d, p, j) == ACCESS_SEES_NOTHING)
            hidden[n++] = j->id;
    redact_ids(result, hidden, n);
}

json_t *methods_dispatch(daemon_t *d, const peer_t *peer, json_t *request)
{
    json_t *v = json_object_get(request, WIRE_KEY_VERSION), *method = json_object_get(request, WIRE_KEY_METHOD);
    json_t *params = json_object_get(request, WIRE_KEY_PARAMS);
    d->requests_total++;
    json_t *reply = NULL;
    if (!json_is_integer(v) || json_integer_value(v) != PROTO_VERSION)
        reply = proto_error(PROTO_EPROTO, "unsupported protocol version (this daemon speaks v=%d)", PROTO_VERSION);
    else if (!json_is_string(method))
        reply = proto_error(PROTO_EINVAL, "'method' must be a string");
    else if (params && !json_is_object(params))
        reply = proto_error(PROTO_EINVAL, "'params' must be an object");
    else if (json_object_size(request) > 3 || (json_object_size(request) == 3 && !params))
        reply = proto_error(PROTO_EINVAL, "a request has only the keys v, method and params");
    for (size_t i = 0; !reply && i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(json_string_value(method), methods[i].name) == 0) {
            json_t *empty = json_object();
            args_t a = {.params = params ? params : empty};
            reply = access_refusal(d, peer, i, a.params);
            if (!reply)
                reply = methods[i].run(d, peer, &a);
            keep_private(d, peer, reply);
            json_decref(empty);
        }
    if (!reply)
        reply = proto_error(PROTO_EINVAL, "unknown method '%s'", json_string_value(method));
    if (!json_is_true(json_object_get(reply, WIRE_KEY_OK)))
        d->request_errors_total++;
    return reply;
}
