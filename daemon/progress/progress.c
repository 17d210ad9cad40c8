/* progress: steps, GPU windows and counter readings go through the trainer's guard when the guard
 * is on (it decides which make the baseline), straight into the statistics when it is off; every
 * action is logged with the figures it was taken on, every change of a job's source with its
 * reason. The GPU windows come from progress_gpu.c (which calls progress_observe), the counter
 * readings from progress_pmu.c (which this file calls, and which calls nothing back). */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accounting.h"
#include "cotenants.h"
#include "jobs.h"
#include "log.h"
#include "progress_pmu.h"
#include "wire.h"

/* The guard's view of each co-tenant, for a log line: "paused: a; held: b, c; harmless: d". */
static void blame_summary(const guard_t *g, char *out, size_t outlen)
{
    static const char *const kinds[] = {"paused", "held", "harmless"};
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < 3; k++) {
        int listed = 0;
        for (int i = 0; i < g->blame.n && used < outlen; i++) {
            const blame_entry_t *e = &g->blame.e[i];
            int kind = g->blame.probing && e->paused ? 0 : e->verdict == BLAME_HARMLESS ? 2 : 1;
            if (kind != k)
                continue;
            int n = listed++ ? snprintf(out + used, outlen - used, ", %s", e->id)
                             : snprintf(out + used, outlen - used, "%s%s: %s", used ? "; " : "", kinds[k], e->id);
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

static void log_action(const job_t *j, guard_action_t action, double before)
{
    const guard_t *g = &j->guard;
    const slowdown_t *s = &g->judged;
    char who[512];
    blame_summary(g, who, sizeof who);
    switch (action) {
    case GUARD_PROBE:
        log_info("guard: job %s probe: slowdown %+.1f %% (budget %.1f %%) beside several co-tenants: %s", j->id,
                 100 * s->slowdown, 100 * g->p.budget, who);
        break;
    case GUARD_DOUBT:
        log_info("guard: job %s doubt: still over budget (slowdown %+.1f %%) with nobody left to hold: the co-tenants "
                 "found harmless are suspects again (%s)",
                 j->id, 100 * s->slowdown, who);
        break;
    case GUARD_THROTTLE:
    case GUARD_REVERT:
    case GUARD_RELAX:
        log_info("guard: job %s %s: co-tenants' share %.2f -> %.2f (slowdown %+.1f %%, 95 %% interval %+.1f .. "
                 "%+.1f %%, budget %.1f %%, %d %s)",
                 j->id, guard_action_name(action), before, g->share, 100 * s->slowdown, 100 * s->ci_low,
                 100 * s->ci_high, 100 * g->p.budget, s->window_n,
                 j->progress_source == PROGRESS_GPU ? "GPU windows" : "steps");
        if (g->p.attribution && g->blame.n > 0)
            log_info("guard: job %s: %s", j->id, who);
        break;
    case GUARD_PAUSE:
        log_info("guard: job %s pause: co-tenants paused to measure the %s baseline", j->id,
                 g->phase == GUARD_LEARNING ? "first" : "drifting");
        break;
    case GUARD_RESUME:
        log_info("guard: job %s resume: co-tenants back to share %.2f after %.1f s (%s; pauses cost %.2f %% of "
                 "co-tenant time)",
                 j->id, g->share, g->last_pause_seconds,
                 g->last_pause_taken ? "baseline taken" : "no steps came: pause abandoned", 100 * guard_pause_cost(g));
        break;
    case GUARD_RELEASE:
        log_info("guard: job %s release: no progress for %.0f s (no steps, or its GPUs idle), co-tenants unthrottled",
                 j->id, g->p.idle_release);
        break;
    default: break;
    }
}

static bool training(const job_t *j)
{
    return !j->phase[0] || strcmp(j->phase, WIRE_PHASE_TRAIN) == 0;
}

/* The step in the trainer's history, with the figures it leaves behind (the plot's lines). */
static void remember(const daemon_t *d, job_t *trainer, double value)
{
    slowdown_t s = stats_slowdown(&trainer->steps, d->cfg.baseline_steps, d->cfg.window_steps);
    history_add(&trainer->history, clock_now_unix(), value, s.baseline_median, job_budget(d, trainer),
                s.valid ? s.slowdown : NAN, trainer->guard.share);
}

void progress_observe(daemon_t *d, job_t *trainer, double value, double when)
{
    if (!training(trainer)) {
        trainer->steps_in_phase++; /* an evaluation's steps say nothing about slowdown */
        return;
    }
    cotenant_activity_t at_work = cotenants_activity(d);
    accounting_step(d, trainer, value, at_work.any);
    /* With the guard off, or every co-tenant at work pinned by an operator, the guard's share
     * is not what the co-tenants get: its judgement would be of something else. */
    if (!d->cfg.guard_enabled || (at_work.any && !at_work.guarded)) {
        stats_add(&trainer->steps, value, at_work.any);
        remember(d, trainer, value);
        return;
    }
    double before = trainer->guard.share;
    guard_action_t action = guard_step(&trainer->guard, &trainer->steps, value, when, at_work.any, !at_work.unheld);
    remember(d, trainer, value);
    if (action == GUARD_NONE)
        return;
    log_action(trainer, action, before);
    cotenants_update(d, clock_now_mono());
}

/* Which reports make the trainer's one series of steps (step_series.h); false: not this one. */
static bool in_series(job_t *trainer, double seconds, const step_origin_t *from)
{
    step_series_t *s = &trainer->series;
    long long was = s->rank;
    step_admit_t admit = step_series_admit(s, from, seconds, clock_now_mono(), trainer->guard.p.idle_release);
    if (admit == STEP_JUDGED_NEW_RANK && s->rank != STEP_RANK_NONE && was != STEP_RANK_NONE)
        log_info("guard: job %s: steps judged from rank %lld, was rank %lld (%s)", trainer->id, s->rank, was,
                 s->rank < was ? "a lower rank reports" : "that rank went quiet");
    if (admit == STEP_HOOK_IGNORED && s->hook_ignored == 1)
        log_info("guard: job %s: its program reports its steps itself; the PyTorch hook's reports are left out",
                 trainer->id);
    return admit != STEP_OTHER_RANK && admit != STEP_HOOK_IGNORED;
}

void progress_step(daemon_t *d, job_t *trainer, double seconds)
{
    static const step_origin_t program = {.rank = STEP_RANK_NONE, .via = STEP_VIA_REPORTED};
    progress_step_from(d, trainer, seconds, &program);
}

bool progress_step_from(daemon_t *d, job_t *trainer, double seconds, const step_origin_t *from)
{
    if (!in_series(trainer, seconds, from))
        return false;
    if (!trainer->steps_reported) {
        trainer->steps_reported = true;
        state_mark_dirty(d);
        progress_choose_source(d, trainer); /* auto: reported steps are the truth */
    }
    if (trainer->progress_source != PROGRESS_STEPS) {
        trainer->steps_ignored++;
        return false;
    }
    progress_observe(d, trainer, seconds, clock_now_mono());
    return true;
}

bool progress_phase_valid(const char *phase)
{
    size_t n = phase ? strlen(phase) : 0;
    if (n == 0 || n >= sizeof((job_t *)0)->phase)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((phase[i] >= 'a' && phase[i] <= 'z') || (phase[i] >= '0' && phase[i] <= '9') || phase[i] == '_' ||
              phase[i] == '-'))
            return false;
    return true;
}

void progress_set_phase(daemon_t *d, job_t *j, const char *phase)
{
    const char *was = j->phase[0] ? j->phase : WIRE_PHASE_TRAIN;
    if (strcmp(was, phase) == 0)
        return;
    log_info("guard: job %s phase %s, was %s: %s", j->id, phase, was,
             strcmp(phase, WIRE_PHASE_TRAIN) == 0 ? "its steps are judged again, afresh"
                                                  : "its steps are not judged; co-tenants keep their share");
    snprintf(j->phase, sizeof j->phase, "%s", phase);
    guard_set_phase(&j->guard, training(j), clock_now_mono());
    cotenants_update(d, clock_now_mono()); /* a pause or probe the phase ended gives the share back */
}

result_t progress_set_baseline(daemon_t *d, job_t *j, double seconds)
{
    if (j->role == ROLE_TRAINER && j->progress_requested != PROGRESS_AUTO && j->progress_requested != PROGRESS_STEPS)
        return result_fail(RESULT_INVALID,
                           "job %s's progress comes from %s, not from steps: a baseline step time "
                           "means nothing to it",
                           j->id, progress_source_name(j->progress_requested));
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

/* Its GPUs: how many are read, found but not read yet, and why the first of the others is not. */
static void offer_gpus(daemon_t *d, const job_t *j, progress_offer_t *o, char *why, size_t len)
{
    int gpus[GPU_SAMPLER_MAX_GPUS];
    o->gpus = progress_job_gpus(j, gpus, GPU_SAMPLER_MAX_GPUS);
    why[0] = '\0';
    for (int i = 0; i < o->gpus; i++) {
        gpu_status_t st;
        if (gpus[i] >= d->topo->ngpus) { /* a restored job planned on another topology */
            if (!why[0])
                snprintf(why, len, "GPU %d is not on this node's topology", gpus[i]);
            continue;
        }
        if (!d->gpus) {
            if (!why[0])
                snprintf(why, len, "%s", d->gpu_error[0] ? d->gpu_error : "no GPU sampler");
            continue;
        }
        gpu_sampler_status(d->gpus, gpus[i], &st);
        if (gpu_status_readable(&st))
            o->gpus_sampled++;
        else if (st.state == GPU_STARTING)
            o->gpus_pending++;
        else if (!why[0])
            snprintf(why, len, "GPU %d (%s): %.240s", gpus[i], d->topo->gpus[gpus[i]].pci, st.detail);
    }
    o->gpu_why = why;
}

/* What the node offers this job: its GPUs read or not (and why not), the PMU and what it could
 * count of the job (its cgroup v2 directory, or the runs coschedd started for it). */
static progress_offer_t offer_for(daemon_t *d, const job_t *j, char *why, size_t len)
{
    progress_offer_t o = {.steps_seen = j->steps_reported, .pmu = d->pmu_ok, .pmu_why = d->pmu_why};
    offer_gpus(d, j, &o, why, len);
    o.pmu_target = (j->has_slurm_cgroup && j->slurm_cgroup.cgroup2[0]) || has_running_runs(d, j);
    if (j->has_slurm_cgroup && !j->slurm_cgroup.cgroup2[0])
        o.pmu_target_why = "its processes are in cgroup v1 hierarchies, where there is no per-job perf_event cgroup";
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
    guard_init(&j->guard, &params, clock_now_mono());
    memcpy(j->guard.actions, actions, sizeof actions); /* counters keep counting */
    j->gpu_busy = -1;
    cotenants_update(d, clock_now_mono());
}

void progress_choose_source(daemon_t *d, job_t *j)
{
    char why[320];
    if (j->role != ROLE_TRAINER)
        return;
    progress_offer_t offer = offer_for(d, j, why, sizeof why);
    progress_choice_t c = progress_choose(j->progress_requested, &offer);
    bool first = j->progress_source == PROGRESS_NSOURCES;
    if (c.undecided) { /* its GPUs not read yet: what was chosen stands */
        if (first)
            snprintf(j->progress_reason, sizeof j->progress_reason, "%s", c.reason);
        return;
    }
    snprintf(j->progress_reason, sizeof j->progress_reason, "%s", c.reason);
    if (c.source == j->progress_source)
        return;
    log_info("guard: job %s: progress from %s%s%s (%s)%s", j->id, progress_source_name(c.source), first ? "" : ", was ",
             first ? "" : progress_source_name(j->progress_source), c.reason,
             first ? "" : "; its baseline is learned again");
    j->progress_source = c.source;
    if (c.source != PROGRESS_PMU)
        progress_pmu_stop(j);
    if (!first)
        relearn(d, j);
    guard_observe_gpu(&j->guard, c.source == PROGRESS_GPU); /* GPU windows are judged their own way */
}

void progress_run_started(daemon_t *d, job_t *j)
{
    if (j->role == ROLE_TRAINER && j->progress_source != PROGRESS_PMU)
        progress_choose_source(d, j); /* a run is something to count */
    if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_PMU)
        progress_pmu_follow(d, j);
}

void progress_tick(daemon_t *d)
{
    double now = clock_now_mono(), value;
    for (job_t *j = d->jobs; j; j = j->next) {
        progress_choose_source(d, j);
        if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_PMU && progress_pmu_read(d, j, now, &value))
            progress_observe(d, j, value, now);
    }
    if (!d->cfg.guard_enabled)
        return;
    bool active = cotenants_activity(d).guarded;
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_TRAINER)
            continue;
        double before = j->guard.share;
        guard_action_t action = guard_tick(&j->guard, now, active);
        if (action != GUARD_NONE)
            log_action(j, action, before);
    }
    /* With or without an action: co-tenants that came or went change what each guard may probe. */
    cotenants_update(d, now);
}
