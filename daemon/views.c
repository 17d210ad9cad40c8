/* views: every reply's picture of a job or run is built here, so the same object looks the same
 * in job.get, job.list, stats and run.list. */
#include "views.h"

#include <stdlib.h>
#include <string.h>

#include "cotenants.h"
#include "cpulist.h"
#include "escalation.h"
#include "exposure.h"
#include "jobs.h"
#include "json_out.h"
#include "progress.h"
#include "runs.h"
#include "task_env.h"
#include "wire.h"

/* One GPU as the sampler sees it: its state, and why it is not read when it is not. */
static json_t *gpu_json(const daemon_t *d, int g)
{
    gpu_status_t st;
    if (!d->gpus)
        return json_pack("{s:i, s:s, s:s, s:s}", "index", g, "pci", d->topo->gpus[g].pci, "state", "unsampled",
                         "detail", d->gpu_error);
    gpu_sampler_status(d->gpus, g, &st);
    return json_pack("{s:i, s:s, s:s, s:s?, s:s, s:o, s:I, s:I, s:i}", "index", g, "pci", d->topo->gpus[g].pci,
                     "state", gpu_state_name(st.state), "library", st.backend, "detail", st.detail, "busy",
                     st.busy >= 0 ? json_real(st.busy) : json_null(), "windows", (json_int_t)st.windows, "errors",
                     (json_int_t)st.errors, "failing_windows", st.failing_windows);
}

/* Where a trainer's progress comes from, and why: what the guard judges it on. */
static json_t *progress_json(const daemon_t *d, const job_t *j)
{
    int gpus[GPU_SAMPLER_MAX_GPUS];
    int n = progress_job_gpus(j, gpus, GPU_SAMPLER_MAX_GPUS);
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        if (gpus[i] < d->topo->ngpus)
            json_array_append_new(list, gpu_json(d, gpus[i]));
    const char *source = j->progress_source < PROGRESS_NSOURCES ? progress_source_name(j->progress_source) : "none";
    return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:I, s:o, s:s, s:I}", "source", source, "requested",
                     progress_source_name(j->progress_requested), "reason", j->progress_reason, "unit",
                     j->progress_source == PROGRESS_GPU ? "gpu-window" : "step", "steps_ignored",
                     (json_int_t)j->steps_ignored, "gpu_busy", j->gpu_busy >= 0 ? json_real(j->gpu_busy) : json_null(),
                     "gpu_windows", (json_int_t)j->gpu_windows, "gpus", list, "phase",
                     j->phase[0] ? j->phase : WIRE_PHASE_TRAIN, "steps_in_phase", (json_int_t)j->steps_in_phase);
}

/* How a co-tenant is held: in the cgroups Slurm made for it (and which), in cosched's own, or
 * not at all, and why not. */
static json_t *hold_json(const job_t *j)
{
    const throttle_slurm_job_t *c = &j->slurm_cgroup;
    const char *error = j->hold_error[0] ? j->hold_error : NULL;
    if (j->external && !j->has_slurm_cgroup && !error)
        error = "not held: its cgroups are not known yet (the TaskProlog's `cosched job confine` finds them once a "
                "task of it starts)";
    const char *where = !j->external ? "cosched" : j->throttle ? "slurm" : "none";
    if (!j->external && !j->throttle)
        where = "none";
    /* The spatial knob: the fraction of its cores it keeps, or why it is not narrowed. */
    const char *note = j->throttle && throttle_group_cores_note(j->throttle)[0] ? throttle_group_cores_note(j->throttle)
                                                                              : NULL;
    return json_pack("{s:s, s:s?, s:s?, s:f, s:s?}", "where", where, "cgroup",
                     j->has_slurm_cgroup ? (c->cgroup2[0] ? c->cgroup2 : c->freezer1[0] ? c->freezer1 : c->cpuset1) : NULL,
                     "error", error, "cores_kept", j->throttle ? throttle_group_cores_kept(j->throttle) : 1.0,
                     "cores_note", note);
}

/* What a probe showed one co-tenant costs a trainer: {"slowdown", "at_share", "bound"}, or null
 * until a probe paused it alone or left it running alone. */
static json_t *cost_json(const blame_entry_t *e)
{
    if (!e || e->cost < 0)
        return json_null();
    return json_pack("{s:f, s:f, s:b}", "slowdown", e->cost, "at_share", e->cost_share, "bound", e->cost_bound);
}

/* Each trainer's verdict on this co-tenant, and in a few words why it has the share it has: the
 * trainer that holds it hardest decides. */
static void add_cotenant_verdicts(json_t *o, const daemon_t *d, const job_t *j)
{
    json_t *list = json_array();
    const char *why = j->share_override >= 0 ? "pinned by an operator" : !d->cfg.guard_enabled ? "the guard is off"
                                                                                              : "no trainer holds it";
    double lowest = 2;
    for (const job_t *t = d->jobs; t; t = t->next) {
        if (t->role != ROLE_TRAINER)
            continue;
        const guard_t *g = &t->guard;
        const blame_entry_t *e = blame_find(&g->blame, j->id);
        double share = guard_share_for(g, j->id);
        const char *verdict = !g->p.attribution ? "not attributed" : e ? blame_verdict_name(e->verdict) : "not at work";
        bool probed = e && g->blame.probing && e->paused;
        json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:f, s:o}", "trainer", t->id, "verdict", verdict,
                                              "paused_by_probe", probed, "share", share, "estimated_cost", cost_json(e)));
        if (j->share_override >= 0 || !d->cfg.guard_enabled || share >= lowest)
            continue;
        lowest = share;
        why = g->phase == GUARD_LEARNING || g->phase == GUARD_REFRESHING ? "paused while a trainer's baseline is taken"
              : probed ? "paused by a probe: is it the one that hurts?"
              : !g->p.attribution ? "held with every co-tenant (attribution off)"
              : !e ? "held with the share a trainer allows its suspects"
              : e->verdict == BLAME_GUILTY ? "attributed: probes showed it hurts a trainer"
              : e->verdict == BLAME_HARMLESS ? "harmless: probes showed the trainers do not suffer from it"
                                            : "inherited: held with the share a trainer allows its suspects (not judged yet)";
    }
    json_object_set_new(o, "verdicts", list);
    json_object_set_new(o, "share_reason", json_string(why));
}

/* The co-tenant side of a job: whether it counts as at work, what it may use and through which
 * knob, and how apart from the trainers its CPUs are. */
static void add_cotenant_share(json_t *o, const daemon_t *d, const job_t *j)
{
    exposure_t e = exposure_of(d, j);
    json_object_set_new(o, "exposure", exposure_to_json(&e));
    exposure_free(&e);
    json_object_set_new(o, "active", json_boolean(cotenant_active(d, j)));
    json_object_set_new(o, "external", json_boolean(j->external));
    json_object_set_new(o, "allowed_share", json_real(j->share));
    json_object_set_new(o, "knob", j->throttle ? json_string(throttle_knob_name(throttle_group_knob(j->throttle)))
                                               : json_null());
    json_object_set_new(o, "share_override", j->share_override >= 0 ? json_real(j->share_override) : json_null());
    json_object_set_new(o, "hold", hold_json(j));
    json_t *changes = json_array();
    for (int i = 0; i < j->nshare_changes; i++) {
        const share_change_t *c = &j->share_changes[i];
        json_array_append_new(changes, json_pack("{s:f, s:f, s:s}", "time", c->time, "share", c->share, "by",
                                                 c->by_operator ? "operator" : "guard"));
    }
    json_object_set_new(o, "share_changes", changes);
    if (j->external)
        json_object_set_new(o, "escalation", escalation_to_json(j, clock_now_mono()));
    add_cotenant_verdicts(o, d, j);
}

json_t *view_job(const daemon_t *d, const job_t *j)
{
    json_t *ranks = json_array();
    for (int r = 0; r < j->nranks; r++) {
        json_t *rank = plan_rank_to_json(&j->ranks[r]);
        /* Slurm binds an external co-tenant's tasks, which need not be one per rank: their
         * thread counts are their own. */
        bool openmp = !(j->role == ROLE_COTENANT && j->external);
        json_object_set_new(rank, "env", task_env(d->topo, &j->ranks[r], openmp));
        json_array_append_new(ranks, rank);
    }
    char *srun = plan_srun_cpu_bind(j->ranks, j->nranks);
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", "job", j->id, "role", job_role_name(j->role), "uid",
                          (json_int_t)j->uid, "policy", plan_policy_name(j->policy), "ranks", ranks, "srun",
                          srun ? json_string(srun) : json_null());
    free(srun);
    json_object_set_new(o, "isolation", json_string(plan_isolation_name(j->isolation)));
    char *allowed = j->allowed ? cpulist_format(j->allowed) : NULL;
    json_object_set_new(o, "allowed_cpus", allowed ? json_string(allowed) : json_null());
    free(allowed);
    json_object_set_new(o, "external", json_boolean(j->external));
    json_object_set_new(o, "partition", j->partition[0] ? json_string(j->partition) : json_null());
    if (j->warnings)
        json_object_set_new(o, "warnings", json_copy(j->warnings));
    if (j->role == ROLE_TRAINER) {
        json_object_set_new(o, "budget", json_real(job_budget(d, j)));
        json_object_set_new(o, "progress", progress_json(d, j));
    } else {
        add_cotenant_share(o, d, j);
    }
    return o;
}

json_t *view_run(const run_t *r)
{
    json_t *o = json_pack("{s:i, s:s, s:i, s:i, s:s, s:O, s:f}", "id", r->id, "job", r->job, "rank", r->rank, "pid",
                          (int)r->pid, "state", run_state_name(r->state), "argv", r->argv, "started", r->started);
    if (r->state != RUN_RUNNING) {
        json_object_set_new(o, "ended", json_real(r->ended));
        if (r->state == RUN_EXITED)
            json_object_set_new(o, "exit_status", json_integer(r->exit_code));
        if (r->state == RUN_KILLED)
            json_object_set_new(o, "signal", json_integer(r->exit_code));
    }
    json_object_set_new(o, "lines", json_integer((json_int_t)r->lines));
    json_object_set_new(o, "steps", json_integer((json_int_t)r->steps));
    if (r->steps)
        json_object_set_new(o, "last_step_seconds", json_real(r->last_step_time));
    if (r->bytes_total > 0 || r->rate_bytes_per_s > 0) {
        json_object_set_new(o, "bytes", json_real(r->bytes_total));
        json_object_set_new(o, "rate_bytes_per_second", json_real(r->rate_bytes_per_s));
    }
    json_object_set_new(o, "stdout", json_string(r->out_path));
    return o;
}

static json_t *slowdown_json(const slowdown_t *s)
{
    if (!s->valid)
        return json_null();
    return json_pack("{s:f, s:[ff], s:i}", "slowdown", s->slowdown, "ci95", s->ci_low, s->ci_high, "steps",
                     s->window_n);
}

/* The guard of one trainer: its phase, the share it allows, what it did and what it cost. */
static json_t *guard_json(const daemon_t *d, const job_t *j)
{
    const guard_t *g = &j->guard;
    double now = clock_now_mono();
    json_t *actions = json_object();
    for (int a = GUARD_THROTTLE; a < GUARD_NACTIONS; a++)
        json_object_set_new(actions, guard_action_name((guard_action_t)a), json_integer((json_int_t)g->actions[a]));
    json_t *cotenants = json_array();
    for (int i = 0; i < g->blame.n; i++) {
        const blame_entry_t *e = &g->blame.e[i];
        json_array_append_new(cotenants, json_pack("{s:s, s:s, s:b, s:f, s:o, s:f}", "job", e->id, "verdict",
                                                   blame_verdict_name(e->verdict), "paused_by_probe",
                                                   g->blame.probing && e->paused, "share", guard_share_for(g, e->id),
                                                   "verdict_age_seconds",
                                                   e->verdict == BLAME_SUSPECT ? json_null() : json_real(now - e->since),
                                                   "rate_mbs", e->rate / 1e6));
        json_object_set_new(json_array_get(cotenants, json_array_size(cotenants) - 1), "estimated_cost", cost_json(e));
    }
    return json_pack("{s:b, s:s, s:f, s:o, s:o, s:o, s:{s:I, s:f, s:f, s:f}, s:{s:b, s:b, s:I, s:o}}", "enabled",
                     d->cfg.guard_enabled, "phase", guard_phase_name(g->phase), "share", g->share, "judged",
                     slowdown_json(&g->judged), "actions", actions, "baseline_age_seconds",
                     g->baseline_at >= 0 ? json_real(now - g->baseline_at) : json_null(), "baseline_pauses",
                     "count", (json_int_t)g->refreshes, "paused_seconds", g->paused_seconds, "cotenant_seconds",
                     g->active_seconds, "cost", guard_pause_cost(g), "attribution", "enabled", g->p.attribution,
                     "probing", g->blame.probing, "probes", (json_int_t)g->blame.probes, "cotenants", cotenants);
}

static void add_trainer_stats(json_t *o, const daemon_t *d, const job_t *j)
{
    slowdown_t s = stats_slowdown(&j->steps, d->cfg.baseline_steps, d->cfg.window_steps);
    double budget = job_budget(d, j);
    json_object_set_new(o, "steps", json_integer((json_int_t)j->steps.steps_total));
    json_object_set_new(o, "steps_with_cotenant", json_integer((json_int_t)j->steps.steps_with_cotenant));
    json_object_set_new(o, "baseline", json_pack("{s:f, s:i, s:b}", "median_seconds", s.baseline_median, "samples",
                                                 s.baseline_n, "explicit", j->steps.explicit_baseline > 0));
    json_object_set_new(o, "window", json_pack("{s:f, s:i}", "median_seconds", s.window_median, "samples", s.window_n));
    json_object_set_new(o, "budget", json_real(budget));
    if (s.valid) {
        json_object_set_new(o, "slowdown", json_real(s.slowdown));
        json_object_set_new(o, "slowdown_ci95", json_pack("[ff]", s.ci_low, s.ci_high));
        json_object_set_new(o, "over_budget", json_boolean(s.ci_low > budget));
    } else {
        json_object_set_new(o, "slowdown", json_null());
    }
    json_object_set_new(o, "guard", guard_json(d, j));
    json_object_set_new(o, "progress", progress_json(d, j));
}

json_t *view_job_stats(const daemon_t *d, const job_t *j)
{
    json_t *o = json_pack("{s:s, s:s}", "job", j->id, "role", job_role_name(j->role));
    if (j->role == ROLE_TRAINER)
        add_trainer_stats(o, d, j);
    else
        add_cotenant_share(o, d, j);
    json_t *runs = json_array();
    for (const run_t *r = d->runs; r; r = r->next)
        if (strcmp(r->job, j->id) == 0)
            json_array_append_new(runs, view_run(r));
    json_object_set_new(o, "runs", runs);
    return o;
}

json_t *view_guard_status(const daemon_t *d)
{
    json_t *knobs = json_array();
    for (int k = 0; d->throttle && k < KNOB_COUNT; k++)
        json_array_append_new(knobs, json_pack("{s:s, s:b, s:s}", "name", throttle_knob_name((knob_t)k), "available",
                                               throttle_has(d->throttle, (knob_t)k), "detail",
                                               throttle_describe(d->throttle, (knob_t)k)));
    json_t *gpus = json_array(), *problems = json_array();
    for (int g = 0; g < d->topo->ngpus; g++) {
        json_t *gpu = gpu_json(d, g);
        gpu_status_t st = {.state = GPU_UNSAMPLED};
        if (d->gpus)
            gpu_sampler_status(d->gpus, g, &st);
        /* A GPU that should be read and is not; another vendor's is only not sampled. */
        if (!d->gpus || (st.state != GPU_SAMPLING && st.state != GPU_STARTING && st.state != GPU_UNSAMPLED))
            json_array_append_new(problems, json_pack("{s:s, s:s}", "what", "gpu", "detail",
                                                      json_string_value(json_object_get(gpu, "detail"))));
        json_array_append_new(gpus, gpu);
    }
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT && j->hold_error[0])
            json_array_append_new(problems, json_pack("{s:s, s:s, s:s}", "what", "cotenant", "job", j->id, "detail",
                                                      j->hold_error));
    json_t *progress = json_pack("{s:s, s:s, s:f, s:f, s:o}", "default", progress_source_name(d->cfg.progress_source),
                                 "pmu", d->pmu_why, "gpu_window", d->cfg.gpu_window, "gpu_idle_below",
                                 d->cfg.gpu_idle_below, "gpus", gpus);
    return json_pack("{s:b, s:f, s:f, s:o, s:o, s:o}", "enabled", d->cfg.guard_enabled, "slowdown_budget",
                     d->cfg.slowdown_budget, "cotenant_share", cotenants_guard_share(d), "knobs", knobs, "progress",
                     progress, "problems", problems);
}
