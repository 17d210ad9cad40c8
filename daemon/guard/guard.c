/* guard: the control law. Judge the steps taken at the current share against the baseline; over
 * budget (even the interval's low end) halves the share at once, well under budget for a while
 * adds a tenth back; a relaxation that fails is undone and the next one waits twice as long, so
 * the share settles instead of oscillating. Beside several co-tenants, a probe first finds which
 * one to hold (blame.c). The baseline is re-measured, at a bounded cost (guard_baseline.c). */
#include "guard.h"

#include <math.h>
#include <string.h>

#include "guard_internal.h"
#include "wire.h"

void guard_params_defaults(guard_params_t *p)
{
    *p = (guard_params_t){
        .budget = 0.05,
        .margin = 0.005,
        .min_samples = 8,
        .settle_steps = 1,
        .max_window = 64,
        .decrease = 0.5,
        .increase = 0.1,
        .min_share = 0.05,
        .relax_interval = 2,
        .max_backoff = 32,
        .baseline_steps = 20,
        .baseline_max_age = 300,
        .baseline_max_cost = 0.02,
        .pause_timeout = 5,
        .idle_release = 30,
        .law = 3,
        .attribution = true,
        .reprobe_interval = 300,
        .gpu_judge = GUARD_GPU_MEAN,
    };
}

void guard_init(guard_t *g, const guard_params_t *p, double now)
{
    memset(g, 0, sizeof *g);
    guard_set_params(g, p, now);
    g->skip = 0;
    g->phase = GUARD_IDLE;
    g->share = g->share_before_pause = g->good_share = 1;
    g->backoff = 1;
    g->changed_at = now;
    g->baseline_at = -1;
    g->last_step_at = -1;
    g->last_seen = now;
    blame_init(&g->blame, g->p.reprobe_interval);
}

const char *guard_phase_name(guard_phase_t phase)
{
    static const char *const names[] = {"idle", "learning", "watching", "refreshing"};
    return phase <= GUARD_REFRESHING ? names[phase] : "?";
}

const char *guard_action_name(guard_action_t action)
{
    /* the keys of a reply's guard.actions too */
    static const char *const names[] = {WIRE_GUARD_ACTION_NONE,    WIRE_GUARD_ACTION_THROTTLE, WIRE_GUARD_ACTION_REVERT,
                                        WIRE_GUARD_ACTION_RELAX,   WIRE_GUARD_ACTION_PAUSE,    WIRE_GUARD_ACTION_RESUME,
                                        WIRE_GUARD_ACTION_RELEASE, WIRE_GUARD_ACTION_PROBE,    WIRE_GUARD_ACTION_DOUBT};
    return action < GUARD_NACTIONS ? names[action] : "?";
}

double guard_pause_cost(const guard_t *g)
{
    return g->active_seconds > 0 ? g->paused_seconds / g->active_seconds : 0;
}

static bool pausing(const guard_t *g)
{
    return g->phase == GUARD_LEARNING || g->phase == GUARD_REFRESHING;
}

/* Co-tenant time, and the part of it spent paused for baselines (the cost to bound). */
static void account(guard_t *g, double now, bool active)
{
    double dt = now - g->last_seen;
    if (dt > 0 && active) {
        g->active_seconds += dt;
        if (pausing(g))
            g->paused_seconds += dt;
    }
    g->last_seen = now;
}

static guard_action_t act(guard_t *g, guard_action_t action)
{
    g->actions[action]++;
    return action;
}

/* A new share: the steps judged so far belong to the old one. */
static void changed(guard_t *g, double now)
{
    g->changed_at = now;
    g->nwindow = g->window_next = g->judged_steps = 0;
    g->skip = g->p.settle_steps;
}

static void window_push(guard_t *g, double seconds)
{
    g->judged_steps++;
    g->window[g->window_next] = seconds;
    g->window_next = (g->window_next + 1) % g->p.max_window;
    if (g->nwindow < g->p.max_window)
        g->nwindow++;
}

/* Pause the co-tenants and take the baseline again from the steps that follow. */
static guard_action_t start_pause(guard_t *g, double now, guard_phase_t phase)
{
    blame_cancel(&g->blame); /* the baseline pauses everyone */
    if (!pausing(g))
        g->share_before_pause = g->share;
    g->phase = phase;
    g->share = 0;
    g->pause_started = now;
    g->baseline_taken = 0;
    changed(g, now);
    return act(g, GUARD_PAUSE);
}

/* Back to the share before the pause. A pause that got no steps is tried again only after
 * baseline_max_age: a trainer that is not stepping has nothing to measure. */
static guard_action_t end_pause(guard_t *g, double now, bool taken)
{
    g->last_pause_seconds = now - g->pause_started;
    g->last_pause_taken = taken;
    if (taken) {
        g->baseline_at = now;
        g->refreshes++;
    } else {
        g->next_refresh_at = now + g->p.baseline_max_age;
    }
    g->phase = GUARD_WATCHING;
    g->share = g->share_before_pause;
    changed(g, now);
    return act(g, GUARD_RESUME);
}

/* The cost bound wins over the age: a pause starts only while the co-tenants have spent less
 * than baseline_max_cost of their time paused for baselines. */
static bool pause_allowed(const guard_t *g, double now)
{
    return now >= g->next_refresh_at && g->paused_seconds <= g->p.baseline_max_cost * g->active_seconds;
}

/* How far a sure excess cuts the share: by decrease; for GPU windows, by as much more as the
 * slowdown seen asks for if it falls with the share in proportion (at most to a tenth). A GPU's
 * swing makes a second judgement cost tens of windows: the first one must do the work, and aims
 * at budget - 3 margins, since a share foreseen just under the budget is often just over it. */
static double cut(const guard_t *g)
{
    if (!guard_busy_mean(g) || !(g->judged.slowdown > 0))
        return g->p.decrease;
    double aim = g->p.budget - 3 * g->p.margin;
    return fmax(0.1, fmin(g->p.decrease, aim / (0.5 * (g->judged.slowdown + g->judged.ci_high))));
}

/* Lower the share for the co-tenants it holds: halve it (or pause them under min_share). */
static void lower_share(guard_t *g, bool surely_over)
{
    g->share = surely_over ? g->share * cut(g) : g->share - g->p.increase;
    if (g->share < g->p.min_share)
        g->share = 0;
}

/* A probe's window judged: recovered or not. Another half is paused, or the verdicts are in and
 * the throttle that started the probe falls on the guilty. */
static guard_action_t judge_probe(guard_t *g, double now)
{
    bool within = g->judged.slowdown <= g->p.budget;
    /* law 3: or the steps right before the probe say so (a baseline from another state of the
     * host would decide the verdict alone); still surely over, the others are not cleared */
    bool took_off = !within && guard_probe_took_off(g);
    bool partly = took_off && g->judged.ci_low > g->p.budget;
    changed(g, now);
    bool going = partly ? blame_probe_partly(&g->blame, g->judged.slowdown, now)
                        : blame_probe_result(&g->blame, within || took_off, g->judged.slowdown, now);
    if (going)
        return act(g, GUARD_PROBE);
    lower_share(g, true);
    return act(g, GUARD_THROTTLE);
}

/* Over budget, with attribution: find the culprit before holding anyone harder (a probe), or,
 * with nobody left to hold, doubt the verdicts. GUARD_NONE: throttle as the first version did. */
static guard_action_t attribute(guard_t *g, const step_stats_t *steps, double now, bool surely_over,
                                bool baseline_possible)
{
    if (g->relaxed)
        return GUARD_NONE; /* a relaxation that failed is undone first */
    bool nobody_left = g->share <= 0 || blame_held(&g->blame) == 0;
    /* the verdicts may be right and the baseline wrong (the host's state): that is measured first,
     * and until it can be, the verdicts stand */
    if (nobody_left && guard_host_aware(g) && !guard_baseline_explicit(steps) &&
        blame_cleared_at(&g->blame) > g->baseline_at)
        return guard_evidence_pause_allowed(g, baseline_possible, now) ? start_pause(g, now, GUARD_REFRESHING)
                                                                       : GUARD_NONE;
    if (nobody_left && blame_doubt(&g->blame, now) > 0) {
        changed(g, now);
        return act(g, GUARD_DOUBT);
    }
    if (surely_over && g->share > 0 && blame_start_probe(&g->blame, g->share, g->judged.slowdown, now)) {
        g->probe_ref = guard_recent_slowdown(g, steps, now);
        changed(g, now);
        return act(g, GUARD_PROBE);
    }
    return GUARD_NONE;
}

/* What a relaxation adds to the share now: increase, smaller after failed ones. */
static double relax_step(const guard_t *g)
{
    return fmax(g->p.increase / g->backoff, 0.01);
}

/* Well enough under budget to give some back: the interval's high end under budget - margin; for
 * GPU windows, even once the slowdown grows with the share the step adds (in proportion), since a
 * share just over what holds costs a GPU's swing minutes to see. */
static bool relax_safe(const guard_t *g)
{
    double high = g->judged.ci_high;
    if (guard_busy_mean(g)) {
        /* and on half a full window at least: an interval checked on every window, from a few
         * windows' own estimate of their spread, is now and then low by chance */
        if (g->nwindow < g->p.max_window / 2)
            return false;
        if (g->share > 0 && high > 0)
            high *= (g->share + relax_step(g)) / g->share;
    }
    return guard_relax_evidence(g) && high < g->p.budget - g->p.margin;
}

/* Law 3: the baseline is shown wrong (guard_baseline_stale). Measure it again; while no pause
 * may, the guard is blind: a small step down per full window, so that no excess it cannot see
 * persists (at share 0, with no co-tenant found harmless running free, the trainer's solo steps
 * make a baseline of their own). */
static guard_action_t baseline_shown_wrong(guard_t *g, double now, bool baseline_possible)
{
    if (guard_evidence_pause_allowed(g, baseline_possible, now))
        return start_pause(g, now, GUARD_REFRESHING);
    if (g->judged_steps % g->p.max_window != 0 || g->share <= 0)
        return GUARD_NONE;
    lower_share(g, false);
    g->relaxed = false;
    changed(g, now);
    return act(g, GUARD_THROTTLE);
}

/* Judge the window against the baseline: throttle, revert a failed relaxation, or relax. */
static guard_action_t judge(guard_t *g, const step_stats_t *steps, double now, bool baseline_possible)
{
    double win[GUARD_MAX_WINDOW]; /* in the order taken: the interval depends on it */
    for (int i = 0; i < g->nwindow; i++)
        win[i] = g->window[(g->window_next - 1 - i + g->p.max_window) % g->p.max_window];
    summary_t window = g->p.law < 2         ? stats_summarize(win, g->nwindow)
                       : guard_busy_mean(g) ? stats_summarize_busy(win, g->nwindow)
                                            : stats_summarize_series(win, g->nwindow);
    g->judged = stats_compare(window, guard_baseline_now(g, steps, now), guard_baseline_explicit(steps));
    if (!g->judged.valid)
        return GUARD_NONE;
    if (g->blame.probing)
        return judge_probe(g, now);
    if (guard_baseline_stale(g, steps))
        return baseline_shown_wrong(g, now, baseline_possible);
    double held = now - g->changed_at, interval = g->p.relax_interval * g->backoff;
    /* Surely over budget: halve (or undo a relaxation that failed). Over budget in the median of
     * a full window, the interval not yet sure: one small step down, so no excess persists. */
    bool surely_over = g->judged.ci_low > g->p.budget;
    bool persistently_over = g->judged.slowdown > g->p.budget && g->judged_steps % g->p.max_window == 0;
    if (g->p.attribution && (surely_over || persistently_over)) {
        guard_action_t action = attribute(g, steps, now, surely_over, baseline_possible);
        if (action != GUARD_NONE)
            return action;
    }
    if ((surely_over || persistently_over) && g->share > 0) {
        guard_action_t action;
        if (g->relaxed) {
            g->share = g->good_share;
            g->backoff = fmin(g->backoff * 2, g->p.max_backoff);
            action = GUARD_REVERT;
        } else {
            /* law 3: a full window's median far over budget halves too, sure or not */
            lower_share(g, surely_over || (guard_host_aware(g) && g->judged.slowdown > 2 * g->p.budget));
            action = GUARD_THROTTLE;
        }
        g->relaxed = false;
        changed(g, now);
        return act(g, action);
    }
    if (relax_safe(g) && g->share < 1 && held >= interval) {
        if (g->relaxed) /* the previous relaxation held (law 3: for a full window, as relax_safe asks) */
            g->backoff = fmax(1, g->backoff / 2);
        /* After failed relaxations the steps shrink as the waits grow: the share closes in on
         * the highest one that holds instead of jumping past it again. */
        double step = relax_step(g);
        g->good_share = g->share;
        g->share = g->share <= 0 ? fmax(g->p.min_share, step) : fmin(1, g->share + step);
        g->relaxed = true;
        changed(g, now);
        return act(g, GUARD_RELAX);
    }
    return GUARD_NONE;
}

/* Count a solo step: a baseline stays fresh for free while the trainer runs alone long enough
 * for a whole baseline (baseline_steps solo steps in a row). */
static void count_solo(guard_t *g, bool solo, double now)
{
    g->solo_run = solo ? g->solo_run + 1 : 0;
    if (g->solo_run >= g->p.baseline_steps)
        g->baseline_at = now;
}

/* A step with no co-tenant on the node: a baseline step; an interrupted pause simply ends. */
static guard_action_t step_alone(guard_t *g, step_stats_t *steps, double seconds, double now)
{
    guard_action_t action = GUARD_NONE;
    blame_cancel(&g->blame);
    if (pausing(g)) {
        g->last_pause_seconds = now - g->pause_started;
        g->last_pause_taken = false;
        g->share = g->share_before_pause;
        action = act(g, GUARD_RESUME);
    }
    g->phase = GUARD_IDLE;
    g->skip = 0;
    stats_add(steps, seconds, false);
    g->last_step_solo = true;
    count_solo(g, true, now);
    return action;
}

/* Co-tenants (re)appeared: this step may already be theirs. Watch, or first take a baseline. */
static guard_action_t company_arrived(guard_t *g, step_stats_t *steps, double seconds, double now,
                                      bool baseline_possible)
{
    stats_add(steps, seconds, true);
    g->last_step_solo = false;
    count_solo(g, false, now);
    if (baseline_possible && guard_baseline_wanted(g, steps, now) && pause_allowed(g, now))
        return start_pause(g, now, GUARD_LEARNING);
    g->phase = GUARD_WATCHING;
    changed(g, now);
    return GUARD_NONE;
}

guard_action_t guard_step(guard_t *g, step_stats_t *steps, double seconds, double now, bool cotenants_active,
                          bool baseline_possible)
{
    account(g, now, cotenants_active);
    if (!(seconds > 0) || !isfinite(seconds))
        return GUARD_NONE;
    g->last_step_at = now;
    g->last_step_seconds = seconds;
    if (!cotenants_active)
        return step_alone(g, steps, seconds, now);
    if (g->phase == GUARD_IDLE)
        return company_arrived(g, steps, seconds, now, baseline_possible);
    if (pausing(g) && !baseline_possible)
        return end_pause(g, now, false); /* something the guard does not hold runs: no baseline now */
    /* Steps right after a change straddle it; at share 0 the co-tenants are stopped: solo. The
     * old baseline is dropped only once a pause yields its first step (an abandoned pause keeps it). */
    g->last_step_solo = g->skip == 0 && g->share <= 0 && baseline_possible &&
                        (pausing(g) || !(g->p.attribution && blame_any_free(&g->blame)));
    if (g->last_step_solo && pausing(g) && g->baseline_taken == 0)
        stats_baseline_restart(steps);
    stats_add(steps, seconds, !g->last_step_solo);
    count_solo(g, g->last_step_solo, now);
    if (g->skip > 0) {
        g->skip--;
        return GUARD_NONE;
    }
    if (pausing(g))
        return guard_baseline_complete(g, steps, now) ? end_pause(g, now, true) : GUARD_NONE;
    if (g->share > 0 && baseline_possible && guard_baseline_wanted(g, steps, now) && pause_allowed(g, now))
        return start_pause(g, now, GUARD_REFRESHING);
    window_push(g, seconds);
    return g->nwindow >= g->p.min_samples ? judge(g, steps, now, baseline_possible) : GUARD_NONE;
}

void guard_set_params(guard_t *g, const guard_params_t *p, double now)
{
    g->p = *p;
    if (g->p.law < 2)
        g->p.attribution = false;
    g->blame.stale_after = p->reprobe_interval;
    if (!g->p.attribution)
        blame_cancel(&g->blame);
    if (g->p.max_window > GUARD_MAX_WINDOW)
        g->p.max_window = GUARD_MAX_WINDOW;
    if (g->p.max_window < g->p.min_samples)
        g->p.max_window = g->p.min_samples;
    changed(g, now); /* the window was sized for the old parameters */
}

void guard_observe_gpu(guard_t *g, bool gpu)
{
    g->gpu = gpu;
}

void guard_restart_window(guard_t *g, double now)
{
    changed(g, now);
}

guard_action_t guard_tick(guard_t *g, double now, bool cotenants_active)
{
    account(g, now, cotenants_active);
    if (g->in_phase)
        return GUARD_NONE;
    double last = g->last_step_at > g->pause_started ? g->last_step_at : g->pause_started;
    /* A trainer whose steps are slower than the timeout still gets a few steps' time. */
    double timeout = fmax(g->p.pause_timeout, 4 * g->last_step_seconds);
    if (pausing(g) && now - last > timeout) {
        /* No steps to measure: do not hold the co-tenants for nothing; try again later. */
        return end_pause(g, now, false);
    }
    double idle = fmax(g->p.idle_release, 8 * g->last_step_seconds);
    if (g->share < 1 && g->last_step_at >= 0 && now - g->last_step_at > idle) {
        g->share = g->share_before_pause = g->good_share = 1;
        g->relaxed = false;
        g->phase = GUARD_IDLE;
        blame_cancel(&g->blame);
        changed(g, now);
        return act(g, GUARD_RELEASE);
    }
    return GUARD_NONE;
}

double guard_share_for(const guard_t *g, const char *id)
{
    if (pausing(g))
        return 0;
    return g->p.attribution ? blame_share(&g->blame, id, g->share) : g->share;
}

void guard_set_phase(guard_t *g, bool training, double now)
{
    if (g->in_phase == !training)
        return;
    g->in_phase = !training;
    if (!training) {
        blame_cancel(&g->blame);
        if (pausing(g))
            end_pause(g, now, false);
    } else {
        g->last_step_at = g->last_step_at >= 0 ? now : g->last_step_at; /* idle counts from here */
    }
    changed(g, now);
}
