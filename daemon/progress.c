/* progress: steps go through the trainer's guard when the guard is on (it decides which steps
 * make the baseline), straight into the statistics when it is off; every action is logged with
 * the figures it was taken on. */
#include "progress.h"

#include "cotenants.h"
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
                 "%+.1f %%, budget %.1f %%, %d steps)",
                 j->id, guard_action_name(action), before, g->share, 100 * s->slowdown, 100 * s->ci_low,
                 100 * s->ci_high, 100 * g->p.budget, s->window_n);
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
        log_info("guard: job %s release: no steps for %.0f s, co-tenants unthrottled", j->id, g->p.idle_release);
        break;
    default:
        break;
    }
}

void progress_step(daemon_t *d, job_t *trainer, double seconds)
{
    cotenant_activity_t at_work = cotenants_activity(d);
    /* With the guard off, or every co-tenant at work pinned by an operator, the guard's share
     * is not what the co-tenants get: its judgement would be of something else. */
    if (!d->cfg.guard_enabled || (at_work.any && !at_work.guarded)) {
        stats_add(&trainer->steps, seconds, at_work.any);
        return;
    }
    double before = trainer->guard.share, now = now_mono();
    guard_action_t action =
        guard_step(&trainer->guard, &trainer->steps, seconds, now, at_work.any, !at_work.unheld);
    if (action == GUARD_NONE)
        return;
    log_action(trainer, action, before);
    cotenants_update(d, now);
}

void progress_tick(daemon_t *d)
{
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
