/* progress: steps and GPU windows go through the trainer's guard when the guard is on (it decides
 * which make the baseline), straight into the statistics when it is off; every action is logged
 * with the figures it was taken on, every change of a job's source with its reason. */
#include "progress.h"

#include <stdio.h>
#include <string.h>

#include "cotenants.h"
#include "jobs.h"
#include "log.h"

static void log_action(const job_t *j, guard_action_t action, double before)
{
    const guard_t *g = &j->guard;
    const slowdown_t *s = &g->judged;
    switch (action) {
    case GUARD_THROTTLE:
    case GUARD_REVERT:
    case GUARD_RELAX:
        log_info("guard: job %s %s: co-tenants' share %.2f -> %.2f (slowdown %+.1f %%, 95 %% interval %+.1f .. "
                 "%+.1f %%, budget %.1f %%, %d %s)",
                 j->id, guard_action_name(action), before, g->share, 100 * s->slowdown, 100 * s->ci_low,
                 100 * s->ci_high, 100 * g->p.budget, s->window_n,
                 j->progress_source == PROGRESS_GPU ? "GPU windows" : "steps");
        break;
    case GUARD_PAUSE:
        log_info("guard: job %s pause: co-tenants paused to measure the %s baseline", j->id,
                 g->phase == GUARD_LEARNING ? "first" : "drifting");
        break;
    case GUARD_RESUME:
        log_info("guard: job %s resume: co-tenants back to share %.2f after %.1f s (%s; pauses cost %.2f %% of "
                 "co-tenant time)",
                 j->id, g->share, g->last_pause_seconds,
                 g->last_pause_taken ? "baseline taken" : "no steps came: pause abandoned",
                 100 * guard_pause_cost(g));
        break;
    case GUARD_RELEASE:
        log_info("guard: job %s release: no progress for %.0f s (no steps, or its GPUs idle), co-tenants unthrottled",
                 j->id, g->p.idle_release);
        break;
    default:
        break;
    }
}

/* One observation — a step's seconds, or a GPU window's 1/busy — through the guard when it is on
 * (it decides which observations make the baseline), straight into the statistics when not. */
static void observe(daemon_t *d, job_t *trainer, double value)
{
    cotenant_activity_t at_work = cotenants_activity(d);
    /* With the guard off, or every co-tenant at work pinned by an operator, the guard's share
     * is not what the co-tenants get: its judgement would be of something else. */
    if (!d->cfg.guard_enabled || (at_work.any && !at_work.guarded)) {
        stats_add(&trainer->steps, value, at_work.any);
        return;
    }
    double before = trainer->guard.share, now = now_mono();
    guard_action_t action = guard_step(&trainer->guard, &trainer->steps, value, now, at_work.any, !at_work.unheld);
    if (action == GUARD_NONE)
        return;
    log_action(trainer, action, before);
    cotenants_update(d, now);
}

void progress_step(daemon_t *d, job_t *trainer, double seconds)
{
    if (!trainer->steps_reported) {
        trainer->steps_reported = true;
        state_mark_dirty(d);
        progress_choose_source(d, trainer); /* auto: reported steps are the truth */
    }
    if (trainer->progress_source != PROGRESS_STEPS) {
        trainer->steps_ignored++;
        return;
    }
    observe(d, trainer, seconds);
}

result_t progress_set_baseline(daemon_t *d, job_t *j, double seconds)
{
    if (j->role == ROLE_TRAINER && j->progress_requested != PROGRESS_AUTO && j->progress_requested != PROGRESS_STEPS)
        return result_fail(RESULT_INVALID, "job %s's progress comes from %s, not from steps: a baseline step time "
                           "means nothing to it", j->id, progress_source_name(j->progress_requested));
    if (!j->steps_reported) {
        j->steps_reported = true;
        progress_choose_source(d, j);
    }
    j->steps.explicit_baseline = seconds;
    state_mark_dirty(d);
    return result_ok();
}

int progress_job_gpus(const job_t *j, int *gpus, int max)
{
    int n = 0;
    for (int r = 0; r < j->nranks; r++) {
        int g = j->ranks[r].gpu, seen = 0;
        for (int i = 0; i < n; i++)
            seen |= gpus[i] == g;
        if (g >= 0 && !seen && n < max)
            gpus[n++] = g;
    }
    return n;
}

static bool has_running_runs(const daemon_t *d, const job_t *j)
{
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, j->id) == 0)
            return true;
    return false;
}

/* What the node offers this job: its GPUs sampled or not (and why not), the PMU and what it
 * could count of the job (its cgroup v2 directory, or the runs coschedd started for it). */
static progress_offer_t offer_for(daemon_t *d, const job_t *j, char *why, size_t len)
{
    int gpus[GPU_SAMPLER_MAX_GPUS];
    progress_offer_t o = {.steps_seen = j->steps_reported, .pmu = d->pmu_ok, .pmu_why = d->pmu_why};
    o.pmu_target = (j->has_slurm_cgroup && j->slurm_cgroup.cgroup2[0]) || has_running_runs(d, j);
    if (j->has_slurm_cgroup && !j->slurm_cgroup.cgroup2[0])
        o.pmu_target_why = "its processes are in cgroup v1 hierarchies, where there is no per-job perf_event cgroup";
    o.gpus = progress_job_gpus(j, gpus, GPU_SAMPLER_MAX_GPUS);
    why[0] = '\0';
    for (int i = 0; i < o.gpus; i++) {
        gpu_status_t st;
        if (d->gpus)
            gpu_sampler_status(d->gpus, gpus[i], &st);
        if (d->gpus && gpu_status_readable(&st))
            o.gpus_sampled++;
        else if (!why[0] && d->gpus)
            snprintf(why, len, "GPU %d (%s): %.240s", gpus[i], d->topo->gpus[gpus[i]].pci, st.detail);
        else if (!why[0])
            snprintf(why, len, "%s", d->gpu_error[0] ? d->gpu_error : "no GPU sampler");
    }
    o.gpu_why = why;
    return o;
}

/* The observations so far were of another source: the statistics and the guard start afresh
 * (the guard's share goes back to 1 until it has learned the new baseline). */
static void relearn(daemon_t *d, job_t *j)
{
    double explicit_baseline = j->steps.explicit_baseline;
    memset(&j->steps, 0, sizeof j->steps);
    if (j->progress_source == PROGRESS_STEPS)
        j->steps.explicit_baseline = explicit_baseline;
    guard_params_t params = j->guard.p;
    unsigned long actions[GUARD_NACTIONS];
    memcpy(actions, j->guard.actions, sizeof actions);
    guard_init(&j->guard, &params, now_mono());
    memcpy(j->guard.actions, actions, sizeof actions); /* counters keep counting */
    j->gpu_busy = -1;
    cotenants_update(d, now_mono());
}

void progress_choose_source(daemon_t *d, job_t *j)
{
    char why[320];
    if (j->role != ROLE_TRAINER)
        return;
    progress_offer_t offer = offer_for(d, j, why, sizeof why);
    progress_choice_t c = progress_choose(j->progress_requested, &offer);
    snprintf(j->progress_reason, sizeof j->progress_reason, "%s", c.reason);
    if (c.source == j->progress_source)
        return;
    bool first = j->progress_source == PROGRESS_NSOURCES;
    log_info("guard: job %s: progress from %s%s%s (%s)%s", j->id, progress_source_name(c.source),
             first ? "" : ", was ", first ? "" : progress_source_name(j->progress_source), c.reason,
             first ? "" : "; its baseline is learned again");
    j->progress_source = c.source;
    if (c.source != PROGRESS_PMU) {
        pmu_close(j->pmu);
        j->pmu = NULL;
        j->pmu_count = j->pmu_at = 0;
    }
    if (!first)
        relearn(d, j);
}

/* The job's processes under the counter: its cgroup v2 directory once, else each run of it. */
static void pmu_follow(daemon_t *d, job_t *j)
{
    char why[320];
    if (j->has_slurm_cgroup && j->slurm_cgroup.cgroup2[0]) {
        if (!j->pmu && !(j->pmu = pmu_open_cgroup(d->cfg.pmu_event, j->slurm_cgroup.cgroup2, job_held_cpus(j), why,
                                                  sizeof why)))
            log_warn("pmu: job %s: %s", j->id, why);
        return;
    }
    for (run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, j->id) == 0 && !pmu_counts_process(j->pmu, r->pid) &&
            pmu_add_process(&j->pmu, d->cfg.pmu_event, r->pid, why, sizeof why) < 0)
            log_warn("pmu: job %s run %d: %s", j->id, r->id, why);
}

void progress_run_started(daemon_t *d, job_t *j)
{
    if (j->role == ROLE_TRAINER && j->progress_source != PROGRESS_PMU)
        progress_choose_source(d, j); /* a run is something to count */
    if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_PMU)
        pmu_follow(d, j);
}

/* Once a second: what the job's processes retired since the last tick, as one observation. */
static void pmu_observe(daemon_t *d, job_t *j, double now)
{
    pmu_follow(d, j);
    double count = pmu_read(j->pmu), value;
    bool first = j->pmu_at <= 0;
    double events = count - j->pmu_count, seconds = now - j->pmu_at;
    j->pmu_count = count;
    j->pmu_at = now;
    if (!first && progress_counter_observation(events, seconds, &value))
        observe(d, j, value);
}

/* A GPU's state, logged when it changes: what it means for the jobs on it follows from the
 * sources chosen again. */
static void log_gpu_states(daemon_t *d)
{
    for (int g = 0; g < gpu_sampler_count(d->gpus); g++) {
        gpu_status_t st;
        gpu_sampler_status(d->gpus, g, &st);
        if (st.state == d->gpu_seen[g])
            continue;
        d->gpu_seen[g] = st.state;
        if (st.state == GPU_SAMPLING)
            log_info("gpu %d (%s): %s", g, d->topo->gpus[g].pci, st.detail);
        else if (st.state != GPU_STARTING)
            log_warn("gpu %d (%s): %s: %s", g, d->topo->gpus[g].pci, gpu_state_name(st.state), st.detail);
    }
}

/* A window of the job's GPUs: one observation (their mean busy fraction as 1/busy), or none when
 * one of them has no reading or they were idle. */
static void observe_window(daemon_t *d, job_t *j, const gpu_window_t *w)
{
    int gpus[GPU_SAMPLER_MAX_GPUS];
    double busy[GPU_SAMPLER_MAX_GPUS], mean, value;
    int n = progress_job_gpus(j, gpus, GPU_SAMPLER_MAX_GPUS);
    for (int i = 0; i < n; i++)
        busy[i] = gpus[i] < GPU_SAMPLER_MAX_GPUS ? w->busy[gpus[i]] : -1;
    if (!progress_gpu_mean(busy, (size_t)n, &mean))
        return;
    j->gpu_busy = mean;
    j->gpu_windows++;
    if (progress_gpu_observation(mean, d->cfg.gpu_idle_below, &value))
        observe(d, j, value);
}

void progress_gpu_event(daemon_t *d)
{
    gpu_window_t windows[GPU_SAMPLER_RING];
    if (!d->gpus)
        return;
    int n = gpu_sampler_take(d->gpus, windows, GPU_SAMPLER_RING);
    log_gpu_states(d);
    for (job_t *j = d->jobs; j; j = j->next)
        progress_choose_source(d, j);
    for (int i = 0; i < n; i++)
        for (job_t *j = d->jobs; j; j = j->next)
            if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_GPU)
                observe_window(d, j, &windows[i]);
}

void progress_start(daemon_t *d)
{
    char err[256];
    d->pmu_ok = pmu_probe(d->cfg.pmu_event, d->pmu_why, sizeof d->pmu_why);
    log_info("pmu: %s", d->pmu_why);
    if (d->topo->ngpus == 0) {
        snprintf(d->gpu_error, sizeof d->gpu_error, "this node has no GPU");
        return;
    }
    gpu_sampler_config_t cfg = {.window = d->cfg.gpu_window, .retry = d->cfg.gpu_retry, .nvml_library = d->cfg.nvml_library,
                                .rocm_smi_library = d->cfg.rocm_smi_library};
    d->gpus = gpu_sampler_start(d->topo, &cfg, err, sizeof err);
    if (!d->gpus) {
        snprintf(d->gpu_error, sizeof d->gpu_error, "%s", err);
        log_err("gpu: %s: GPU jobs have no busy-time source", err);
        return;
    }
    for (int g = 0; g < GPU_SAMPLER_MAX_GPUS; g++)
        d->gpu_seen[g] = GPU_STARTING;
    log_info("gpu: sampling %d GPU%s every %g s", d->topo->ngpus, d->topo->ngpus == 1 ? "" : "s", d->cfg.gpu_window);
}

void progress_stop(daemon_t *d)
{
    gpu_sampler_stop(d->gpus);
    d->gpus = NULL;
}

void progress_tick(daemon_t *d)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        progress_choose_source(d, j);
        if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_PMU)
            pmu_observe(d, j, now_mono());
    }
    if (!d->cfg.guard_enabled)
        return;
    bool active = cotenants_activity(d).guarded, changed = false;
    double now = now_mono();
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_TRAINER)
            continue;
        double before = j->guard.share;
        guard_action_t action = guard_tick(&j->guard, now, active);
        if (action != GUARD_NONE) {
            log_action(j, action, before);
            changed = true;
        }
    }
    if (changed)
        cotenants_update(d, now);
}
