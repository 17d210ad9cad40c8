/* guard_host: law 3's evidence about the host (guard_internal.h). On a host whose speed switches
 * between levels seconds apart (a VM on a busy machine, turbo and thermal states), and beside a
 * noise whose harm comes and goes, a baseline taken a minute ago belongs to another state more
 * often than not, and law 2 acted on the host's state as if it were the co-tenants' (issue 43:
 * a slow-step PyTorch job ended 10-15 % over a 5 % budget). These predicates let the guard tell. */
#include "guard_internal.h"

bool guard_host_aware(const guard_t *g)
{
    return g->p.law >= 3 && !guard_busy_mean(g);
}

bool guard_baseline_stale(const guard_t *g, const step_stats_t *steps)
{
    return guard_host_aware(g) && !guard_baseline_explicit(steps) && g->judged.slowdown < -g->p.budget;
}

bool guard_evidence_pause_allowed(const guard_t *g, bool baseline_possible, double now)
{
    /* a pause that got no steps waits baseline_max_age as any does: nothing to measure */
    return baseline_possible && guard_host_aware(g) && now >= g->next_refresh_at &&
           g->paused_seconds <= GUARD_EVIDENCE_COST * g->p.baseline_max_cost * g->active_seconds;
}

slowdown_t guard_recent_slowdown(const guard_t *g, const step_stats_t *steps, double now)
{
    double win[GUARD_MAX_WINDOW];
    int n = g->nwindow < g->p.min_samples ? g->nwindow : g->p.min_samples;
    for (int i = 0; i < n; i++)
        win[i] = g->window[(g->window_next - 1 - i + g->p.max_window) % g->p.max_window];
    summary_t recent = guard_busy_mean(g) ? stats_summarize_busy(win, n) : stats_summarize_series(win, n);
    return stats_compare(recent, guard_baseline_now(g, steps, now), guard_baseline_explicit(steps));
}

bool guard_probe_took_off(const guard_t *g)
{
    if (!guard_host_aware(g))
        return false;
    double drop = g->probe_ref.slowdown - g->judged.slowdown;
    double noise = (g->probe_ref.ci_high - g->probe_ref.ci_low) / 2 + (g->judged.ci_high - g->judged.ci_low) / 2;
    return drop >= g->p.budget / 2 && drop > noise;
}

bool guard_relax_evidence(const guard_t *g)
{
    if (!guard_host_aware(g))
        return true;
    /* A window whose interval reaches far below the baseline (co-tenants never speed a trainer
     * up) mixes two states of the host, or the baseline is not the host's now; and a harm that
     * comes and goes in spells of seconds looks gone in a short window (slow steps make even a
     * short one seconds long). */
    return g->judged.ci_low >= -g->p.budget && g->nwindow >= g->p.max_window;
}
