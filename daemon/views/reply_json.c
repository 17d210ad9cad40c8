/* reply_json: every reply's picture of a job or run is built here, so the same object looks the
 * same in job.get, job.list, stats and run.list. */
#include "reply_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cotenants.h"
#include "cpulist.h"
#include "escalation.h"
#include "harvest_gate.h"
#include "time_credit.h"
#include "cotenant_exposure.h"
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
        return json_pack("{s:i, s:s, s:s, s:s}", WIRE_R_INDEX, g, WIRE_R_PCI, d->topo->gpus[g].pci, WIRE_R_STATE,
                         "unsampled", WIRE_R_DETAIL, d->gpu_error);
    gpu_sampler_status(d->gpus, g, &st);
    return json_pack("{s:i, s:s, s:s, s:s?, s:s, s:o, s:I, s:I, s:i}", WIRE_R_INDEX, g, WIRE_R_PCI,
                     d->topo->gpus[g].pci, WIRE_R_STATE, gpu_state_name(st.state), WIRE_R_LIBRARY, st.backend,
                     WIRE_R_DETAIL, st.detail, WIRE_R_BUSY, st.busy >= 0 ? json_real(st.busy) : json_null(),
                     WIRE_R_WINDOWS, (json_int_t)st.windows, WIRE_R_ERRORS, (json_int_t)st.errors,
                     WIRE_R_FAILING_WINDOWS, st.failing_windows);
}

/* How its steps arrive (null until the first report), from which rank they are judged (null:
 * its reports carry none) and how many other ranks' reports of the same steps were left out. */
static void series_json(json_t *o, const step_series_t *s)
{
    const char *via = step_via_name(s->via);
    bool ranked = via && s->rank != STEP_RANK_NONE;
    json_object_set_new(o, WIRE_R_STEP_SOURCE, via ? json_string(via) : json_null());
    json_object_set_new(o, WIRE_R_TORCH, s->torch[0] ? json_string(s->torch) : json_null());
    json_object_set_new(o, WIRE_R_JUDGED_RANK, ranked ? json_integer((json_int_t)s->rank) : json_null());
    json_object_set_new(o, WIRE_R_STEPS_OTHER_RANKS, json_integer((json_int_t)s->other_ranks));
    json_object_set_new(o, WIRE_R_STEPS_HOOK_IGNORED, json_integer((json_int_t)s->hook_ignored));
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
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:I, s:o, s:s, s:I}", WIRE_R_SOURCE, source, WIRE_R_REQUESTED,
                          progress_source_name(j->progress_requested), WIRE_R_REASON, j->progress_reason, WIRE_R_UNIT,
                          j->progress_source == PROGRESS_GPU ? "gpu-window" : "step", WIRE_R_STEPS_IGNORED,
                          (json_int_t)j->steps_ignored, WIRE_R_GPU_BUSY,
                          j->gpu_busy >= 0 ? json_real(j->gpu_busy) : json_null(), WIRE_R_GPU_WINDOWS,
                          (json_int_t)j->gpu_windows, WIRE_R_GPUS, list, WIRE_R_PHASE,
                          j->phase[0] ? j->phase : WIRE_PHASE_TRAIN, WIRE_R_STEPS_IN_PHASE,
                          (json_int_t)j->steps_in_phase);
    series_json(o, &j->series);
    return o;
}

/* A Slurm co-tenant registered whose cgroups no `job confine` has shown yet: not held. */
#define NOT_CONFINED_YET                                                                                               \
    "not held: its cgroups are not known yet (the TaskProlog's `cosched job confine` finds them once a task of it "    \
    "starts)"

/* How a co-tenant is held: in the cgroups Slurm made for it (and which), in cosched's own, or
 * not at all, and why not. */
static json_t *hold_json(const job_t *j)
{
    const throttle_slurm_job_t *c = &j->slurm_cgroup;
    const char *error = j->hold_error[0] ? j->hold_error : NULL;
    if (j->external && !j->has_slurm_cgroup && !error)
        error = NOT_CONFINED_YET;
    const char *where = !j->external ? "cosched" : j->throttle ? "slurm" : "none";
    if (!j->external && !j->throttle)
        where = "none";
    /* The spatial knob: the fraction of its cores it keeps, or why it is not narrowed. */
    const char *note = j->throttle && throttle_group_cores_note(j->throttle)[0] ? throttle_group_cores_note(j->throttle)
                                                                                : NULL;
    /* Let go to act on a signal: why (nothing is held meanwhile); how often, whole (the job
     * ending) and only to take a signal. */
    const char *let_go = j->throttle ? throttle_group_let_go_reason(j->throttle) : NULL;
    unsigned long whole, delivery;
    throttle_group_let_go_counts(j->throttle, &whole, &delivery);
    return json_pack("{s:s, s:s?, s:s?, s:f, s:s?, s:s?, s:{s:I, s:I}}", WIRE_R_WHERE, where, WIRE_R_CGROUP,
                     j->has_slurm_cgroup ? (c->cgroup2[0]    ? c->cgroup2
                                            : c->freezer1[0] ? c->freezer1
                                                             : c->cpuset1)
                                         : NULL,
                     WIRE_R_ERROR, error, WIRE_R_CORES_KEPT, j->throttle ? throttle_group_cores_kept(j->throttle) : 1.0,
                     WIRE_R_CORES_NOTE, note, WIRE_R_LET_GO, let_go, WIRE_R_LETS_GO, WIRE_R_WHOLE, (json_int_t)whole,
                     WIRE_R_DELIVERY, (json_int_t)delivery);
}

/* What a probe showed one co-tenant costs a trainer: {"slowdown", "at_share", "bound"}, or null
 * until a probe paused it alone or left it running alone. */
static json_t *cost_json(const blame_entry_t *e)
{
    if (!e || e->cost < 0)
        return json_null();
    return json_pack("{s:f, s:f, s:b}", WIRE_R_SLOWDOWN, e->cost, WIRE_R_AT_SHARE, e->cost_share, WIRE_R_BOUND,
                     e->cost_bound);
}

/* Each trainer's verdict on this co-tenant, and in a few words why it has the share it has: the
 * trainer that holds it hardest decides. */
static void add_cotenant_verdicts(json_t *o, const daemon_t *d, const job_t *j)
{
    json_t *list = json_array();
    const char *why = j->share_override >= 0  ? "pinned by an operator"
                      : !d->cfg.guard_enabled ? "the guard is off"
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
        json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:f, s:o}", WIRE_R_TRAINER, t->id, WIRE_R_VERDICT,
                                              verdict, WIRE_R_PAUSED_BY_PROBE, probed, WIRE_R_SHARE, share,
                                              WIRE_R_ESTIMATED_COST, cost_json(e)));
        if (j->share_override >= 0 || !d->cfg.guard_enabled || share >= lowest)
            continue;
        lowest = share;
        why = g->phase == GUARD_LEARNING || g->phase == GUARD_REFRESHING ? "paused while a trainer's baseline is taken"
              : probed                     ? "paused by a probe: is it the one that hurts?"
              : !g->p.attribution          ? "held with every co-tenant (attribution off)"
              : !e                         ? "held with the share a trainer allows its suspects"
              : e->verdict == BLAME_GUILTY ? "attributed: probes showed it hurts a trainer"
              : e->verdict == BLAME_HARMLESS
                  ? "harmless: probes showed the trainers do not suffer from it"
                  : "inherited: held with the share a trainer allows its suspects (not judged yet)";
    }
    json_object_set_new(o, WIRE_R_VERDICTS, list);
    json_object_set_new(o, WIRE_R_SHARE_REASON, json_string(why));
}

/* The co-tenant side of a job: whether it counts as at work, what it may use and through which
 * knob, and how apart from the trainers its CPUs are. */
static void add_cotenant_share(json_t *o, const daemon_t *d, const job_t *j)
{
    cotenant_exposure_t e = cotenant_exposure_of(d, j);
    json_object_set_new(o, WIRE_R_EXPOSURE, cotenant_exposure_to_json(&e));
    cotenant_exposure_free(&e);
    json_object_set_new(o, WIRE_R_ACTIVE, json_boolean(cotenant_active(d, j)));
    json_object_set_new(o, WIRE_R_EXTERNAL, json_boolean(j->external));
    json_object_set_new(o, WIRE_R_ALLOWED_SHARE, json_real(j->share));
    json_object_set_new(o, WIRE_R_KNOB,
                        j->throttle ? json_string(throttle_knob_name(throttle_group_knob(j->throttle))) : json_null());
    json_object_set_new(o, WIRE_R_SHARE_OVERRIDE, j->share_override >= 0 ? json_real(j->share_override) : json_null());
    json_object_set_new(o, WIRE_R_HOLD, hold_json(j));
    json_t *changes = json_array();
    for (int i = 0; i < j->nshare_changes; i++) {
        const share_change_t *c = &j->share_changes[i];
        json_array_append_new(changes, json_pack("{s:f, s:f, s:s}", WIRE_R_TIME, c->time, WIRE_R_SHARE, c->share,
                                                 WIRE_R_BY, c->by_operator ? "operator" : "guard"));
    }
    json_object_set_new(o, WIRE_R_SHARE_CHANGES, changes);
    if (j->external) {
        json_object_set_new(o, WIRE_R_ESCALATION, escalation_to_json(j, clock_now_mono()));
        json_object_set_new(o, WIRE_R_TIME_CREDIT, time_credit_to_json(j));
    }
    add_cotenant_verdicts(o, d, j);
}

json_t *reply_json_job(const daemon_t *d, const job_t *j)
{
    json_t *ranks = json_array();
    for (int r = 0; r < j->nranks; r++) {
        json_t *rank = plan_rank_to_json(&j->ranks[r]);
        /* Slurm binds an external co-tenant's tasks, which need not be one per rank: their
         * thread counts are their own. */
        bool openmp = !(j->role == ROLE_COTENANT && j->external);
        json_object_set_new(rank, WIRE_R_ENV, task_env(d->topo, &j->ranks[r], openmp));
        json_array_append_new(ranks, rank);
    }
    char *srun = plan_srun_cpu_bind(j->ranks, j->nranks);
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", WIRE_R_JOB, j->id, WIRE_R_ROLE, job_role_name(j->role),
                          WIRE_R_UID, (json_int_t)j->uid, WIRE_R_POLICY, plan_policy_name(j->policy), WIRE_R_RANKS,
                          ranks, WIRE_R_SRUN, srun ? json_string(srun) : json_null());
    free(srun);
    json_object_set_new(o, WIRE_R_ISOLATION, json_string(plan_isolation_name(j->isolation)));
    char *allowed = j->allowed ? cpulist_format(j->allowed) : NULL;
    json_object_set_new(o, WIRE_R_ALLOWED_CPUS, allowed ? json_string(allowed) : json_null());
    free(allowed);
    json_object_set_new(o, WIRE_R_EXTERNAL, json_boolean(j->external));
    json_object_set_new(o, WIRE_R_PARTITION, j->partition[0] ? json_string(j->partition) : json_null());
    if (j->warnings)
        json_object_set_new(o, WIRE_R_WARNINGS, json_copy(j->warnings));
    if (j->role == ROLE_TRAINER) {
        json_object_set_new(o, WIRE_R_BUDGET, json_real(job_budget(d, j)));
        json_object_set_new(o, WIRE_R_PROGRESS, progress_json(d, j));
        const char *autoreport = job_autoreport_dir(d, j);
        json_object_set_new(o, WIRE_R_AUTOREPORT, autoreport ? json_string(autoreport) : json_false());
    } else {
        add_cotenant_share(o, d, j);
    }
    return o;
}

json_t *reply_json_run(const run_t *r)
{
    json_t *o = json_pack("{s:i, s:s, s:i, s:i, s:s, s:O, s:f}", WIRE_R_ID, r->id, WIRE_R_JOB, r->job, WIRE_R_RANK,
                          r->rank, WIRE_R_PID, (int)r->pid, WIRE_R_STATE, run_state_name(r->state), WIRE_R_ARGV,
                          r->argv, WIRE_R_STARTED, r->started);
    if (r->state != RUN_RUNNING) {
        json_object_set_new(o, WIRE_R_ENDED, json_real(r->ended));
        if (r->state == RUN_EXITED)
            json_object_set_new(o, WIRE_R_EXIT_STATUS, json_integer(r->exit_code));
        if (r->state == RUN_KILLED)
            json_object_set_new(o, WIRE_R_SIGNAL, json_integer(r->exit_code));
    }
    json_object_set_new(o, WIRE_R_LINES, json_integer((json_int_t)r->lines));
    json_object_set_new(o, WIRE_R_STEPS, json_integer((json_int_t)r->steps));
    if (r->steps)
        json_object_set_new(o, WIRE_R_LAST_STEP_SECONDS, json_real(r->last_step_time));
    if (r->bytes_total > 0 || r->rate_bytes_per_s > 0) {
        json_object_set_new(o, WIRE_R_BYTES, json_real(r->bytes_total));
        json_object_set_new(o, WIRE_R_RATE_BYTES_PER_SECOND, json_real(r->rate_bytes_per_s));
    }
    json_object_set_new(o, WIRE_R_STDOUT, json_string(r->out_path));
    return o;
}

static json_t *slowdown_json(const slowdown_t *s)
{
    if (!s->valid)
        return json_null();
    return json_pack("{s:f, s:[ff], s:i}", WIRE_R_SLOWDOWN, s->slowdown, WIRE_R_CI95, s->ci_low, s->ci_high,
                     WIRE_R_STEPS, s->window_n);
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
        json_array_append_new(cotenants,
                              json_pack("{s:s, s:s, s:b, s:f, s:o, s:f}", WIRE_R_JOB, e->id, WIRE_R_VERDICT,
                                        blame_verdict_name(e->verdict), WIRE_R_PAUSED_BY_PROBE,
                                        g->blame.probing && e->paused, WIRE_R_SHARE, guard_share_for(g, e->id),
                                        WIRE_R_VERDICT_AGE_SECONDS,
                                        e->verdict == BLAME_SUSPECT ? json_null() : json_real(now - e->since),
                                        WIRE_R_RATE_MBS, e->rate / 1e6));
        json_object_set_new(json_array_get(cotenants, json_array_size(cotenants) - 1), WIRE_R_ESTIMATED_COST,
                            cost_json(e));
    }
    return json_pack("{s:b, s:s, s:f, s:o, s:o, s:o, s:{s:I, s:f, s:f, s:f}, s:{s:b, s:b, s:I, s:o}}", WIRE_R_ENABLED,
                     d->cfg.guard_enabled, WIRE_R_PHASE, guard_phase_name(g->phase), WIRE_R_SHARE, g->share,
                     WIRE_R_JUDGED, slowdown_json(&g->judged), WIRE_R_ACTIONS, actions, WIRE_R_BASELINE_AGE_SECONDS,
                     g->baseline_at >= 0 ? json_real(now - g->baseline_at) : json_null(), WIRE_R_BASELINE_PAUSES,
                     WIRE_R_COUNT, (json_int_t)g->refreshes, WIRE_R_PAUSED_SECONDS, g->paused_seconds,
                     WIRE_R_COTENANT_SECONDS, g->active_seconds, WIRE_R_COST, guard_pause_cost(g), WIRE_R_ATTRIBUTION,
                     WIRE_R_ENABLED, g->p.attribution, WIRE_R_PROBING, g->blame.probing, WIRE_R_PROBES,
                     (json_int_t)g->blame.probes, WIRE_R_COTENANTS, cotenants);
}

static void add_trainer_stats(json_t *o, const daemon_t *d, const job_t *j)
{
    slowdown_t s = stats_slowdown(&j->steps, d->cfg.baseline_steps, d->cfg.window_steps);
    double budget = job_budget(d, j);
    json_object_set_new(o, WIRE_R_STEPS, json_integer((json_int_t)j->steps.steps_total));
    json_object_set_new(o, WIRE_R_STEPS_WITH_COTENANT, json_integer((json_int_t)j->steps.steps_with_cotenant));
    json_object_set_new(o, WIRE_R_BASELINE,
                        json_pack("{s:f, s:i, s:b}", WIRE_R_MEDIAN_SECONDS, s.baseline_median, WIRE_R_SAMPLES,
                                  s.baseline_n, WIRE_R_EXPLICIT, j->steps.explicit_baseline > 0));
    json_object_set_new(o, WIRE_R_WINDOW,
                        json_pack("{s:f, s:i}", WIRE_R_MEDIAN_SECONDS, s.window_median, WIRE_R_SAMPLES, s.window_n));
    json_object_set_new(o, WIRE_R_BUDGET, json_real(budget));
    if (s.valid) {
        json_object_set_new(o, WIRE_R_SLOWDOWN, json_real(s.slowdown));
        json_object_set_new(o, WIRE_R_SLOWDOWN_CI95, json_pack("[ff]", s.ci_low, s.ci_high));
        json_object_set_new(o, WIRE_R_OVER_BUDGET, json_boolean(s.ci_low > budget));
    } else {
        json_object_set_new(o, WIRE_R_SLOWDOWN, json_null());
    }
    json_object_set_new(o, WIRE_R_GUARD, guard_json(d, j));
    json_object_set_new(o, WIRE_R_PROGRESS, progress_json(d, j));
}

/* A trainer's recent history, oldest first: what `cosched stats --plot` draws. */
static json_t *history_json(const history_t *h)
{
    json_t *samples = json_array();
    for (int i = 0; i < h->n; i++) {
        const history_sample_t *s = history_at(h, i);
        json_array_append_new(samples,
                              json_pack("{s:f, s:f, s:I, s:o, s:f, s:o, s:f}", WIRE_R_TIME, s->time,
                                        WIRE_R_STEP_SECONDS, s->seconds, WIRE_R_STEPS, (json_int_t)s->steps,
                                        WIRE_R_BASELINE_SECONDS, s->baseline > 0 ? json_real(s->baseline) : json_null(),
                                        WIRE_R_BUDGET, s->budget, WIRE_R_SLOWDOWN,
                                        isnan(s->slowdown) ? json_null() : json_real(s->slowdown), WIRE_R_SHARE,
                                        s->share));
    }
    return json_pack("{s:i, s:f, s:o}", WIRE_R_MAX_SAMPLES, HISTORY_SAMPLES, WIRE_R_INTERVAL_SECONDS, HISTORY_INTERVAL,
                     WIRE_R_SAMPLES, samples);
}

json_t *reply_json_job_stats(const daemon_t *d, const job_t *j, bool history)
{
    json_t *o = json_pack("{s:s, s:s}", WIRE_R_JOB, j->id, WIRE_R_ROLE, job_role_name(j->role));
    if (j->role == ROLE_TRAINER) {
        add_trainer_stats(o, d, j);
        if (history)
            json_object_set_new(o, WIRE_R_HISTORY, history_json(&j->history));
    } else
        add_cotenant_share(o, d, j);
    json_t *runs = json_array();
    for (const run_t *r = d->runs; r; r = r->next)
        if (strcmp(r->job, j->id) == 0)
            json_array_append_new(runs, reply_json_run(r));
    json_object_set_new(o, WIRE_R_RUNS, runs);
    return o;
}

json_t *reply_json_guard_status(const daemon_t *d)
{
    json_t *knobs = json_array();
    for (int k = 0; d->throttle && k < KNOB_COUNT; k++)
        json_array_append_new(knobs, json_pack("{s:s, s:b, s:s}", WIRE_R_NAME, throttle_knob_name((knob_t)k),
                                               WIRE_R_AVAILABLE, throttle_has(d->throttle, (knob_t)k), WIRE_R_DETAIL,
                                               throttle_describe(d->throttle, (knob_t)k)));
    json_t *gpus = json_array(), *problems = json_array();
    for (int g = 0; g < d->topo->ngpus; g++) {
        json_t *gpu = gpu_json(d, g);
        gpu_status_t st = {.state = GPU_UNSAMPLED};
        if (d->gpus)
            gpu_sampler_status(d->gpus, g, &st);
        /* A GPU that should be read and is not; another vendor's is only not sampled. */
        if (!d->gpus || (st.state != GPU_SAMPLING && st.state != GPU_STARTING && st.state != GPU_UNSAMPLED))
            json_array_append_new(problems, json_pack("{s:s, s:s}", WIRE_R_WHAT, "gpu", WIRE_R_DETAIL,
                                                      json_string_value(json_object_get(gpu, WIRE_R_DETAIL))));
        json_array_append_new(gpus, gpu);
    }
    for (const job_t *j = d->jobs; j; j = j->next) {
        const char *error = j->role != ROLE_COTENANT ? NULL
                            : j->hold_error[0]       ? j->hold_error
                            : j->external && !j->has_slurm_cgroup
                                ? NOT_CONFINED_YET /* its TaskProlog's job confine has not come (yet) */
                                : NULL;
        if (error)
            json_array_append_new(problems, json_pack("{s:s, s:s, s:s}", WIRE_R_WHAT, "cotenant", WIRE_R_JOB, j->id,
                                                      WIRE_R_DETAIL, error));
    }
    json_t *progress = json_pack("{s:s, s:s, s:f, s:f, s:o}", WIRE_R_DEFAULT,
                                 progress_source_name(d->cfg.progress_source), WIRE_R_PMU, d->pmu_why,
                                 WIRE_R_GPU_WINDOW, d->cfg.gpu_window, WIRE_R_GPU_IDLE_BELOW, d->cfg.gpu_idle_below,
                                 WIRE_R_GPUS, gpus);
    json_t *status = json_pack("{s:b, s:f, s:f, s:o, s:o, s:o}", WIRE_R_ENABLED, d->cfg.guard_enabled,
                               WIRE_R_SLOWDOWN_BUDGET, d->cfg.slowdown_budget, WIRE_R_COTENANT_SHARE,
                               cotenants_guard_share(d), WIRE_R_KNOBS, knobs, WIRE_R_PROGRESS, progress,
                               WIRE_R_PROBLEMS, problems);
    json_t *gate = harvest_gate_to_json(d, clock_now_mono());
    if (gate)
        json_object_set_new(status, WIRE_R_HARVEST_GATE, gate);
    return status;
}
