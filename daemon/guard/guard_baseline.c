/* guard_baseline: the baseline's length, age and drift (guard_internal.h). */
#include "guard_internal.h"

#include <math.h>
#include <string.h>

/* The most a baseline on the drift's line may lie off it: a quarter of the budget, and never
 * less than 2 % (a tight budget would otherwise take a trainer's own noise for scatter; a host's
 * two states lie 10-35 % apart). */
static const double DRIFT_SCATTER_BUDGETS = 0.25, DRIFT_SCATTER_LEAST = 0.02;

int guard_baseline_len(const guard_t *g)
{
    return g->baseline_len > g->p.baseline_steps ? g->baseline_len : g->p.baseline_steps;
}

/* The baseline's figures, as the guard judges its observations: medians of steps, or the mean
 * busy fraction of GPU windows. */
static summary_t baseline_summary(const guard_t *g, const step_stats_t *steps, int len)
{
    if (!guard_busy_mean(g))
        return stats_baseline(steps, len);
    /* A window's swing is larger than a step's noise, and a solo window costs nobody anything:
     * every solo window of this baseline counts, up to four times baseline_steps. */
    int more = steps->nsolo < 4 * g->p.baseline_steps ? steps->nsolo : 4 * g->p.baseline_steps;
    return stats_baseline_busy(steps, len > more ? len : more);
}

/* How fast the trainer drifts on its own: the least-squares slope through the last baselines
 * the pauses took, relative to their mean. A trainer that speeds up by 1 %/min makes a 5 minutes
 * old baseline 5 % too slow, and the guard blind to that much slowdown; two baselines alone give
 * a slope too noisy to carry one forward. */
static void note_drift(guard_t *g, double median, double now)
{
    if (g->ndrift == GUARD_DRIFT_POINTS) {
        memmove(g->drift_t, g->drift_t + 1, sizeof g->drift_t[0] * (GUARD_DRIFT_POINTS - 1));
        memmove(g->drift_v, g->drift_v + 1, sizeof g->drift_v[0] * (GUARD_DRIFT_POINTS - 1));
        g->ndrift--;
    }
    g->drift_t[g->ndrift] = now;
    g->drift_v[g->ndrift++] = median;
    g->baseline_median = median;
    g->baseline_median_at = now;
    g->drift = 0;
    if (g->ndrift < 3)
        return;
    double mt = 0, mv = 0, stt = 0, stv = 0;
    for (int i = 0; i < g->ndrift; i++) {
        mt += g->drift_t[i] / g->ndrift;
        mv += g->drift_v[i] / g->ndrift;
    }
    for (int i = 0; i < g->ndrift; i++) {
        stt += (g->drift_t[i] - mt) * (g->drift_t[i] - mt);
        stv += (g->drift_t[i] - mt) * (g->drift_v[i] - mv);
    }
    if (!(stt > 0 && mv > 0))
        return;
    /* A line only where the baselines lie on one: baselines taken in different states of a host
     * whose speed switches scatter about any line, and the line carried forward would run away. */
    double slope = stv / stt, scatter = fmax(DRIFT_SCATTER_LEAST, DRIFT_SCATTER_BUDGETS * g->p.budget) * mv;
    for (int i = 0; i < g->ndrift && guard_host_aware(g); i++)
        if (fabs(g->drift_v[i] - (mv + slope * (g->drift_t[i] - mt))) > scatter)
            return;
    g->drift = slope / mv;
    /* carried from the fitted line's value now, not from the last point alone */
    g->baseline_median = mv + slope * (now - mt);
}

/* A pause has its baseline once it holds baseline_steps effective samples: autocorrelated steps
 * (inflation f: each says 1/f^2 of an independent one) need up to four times as many. */
bool guard_baseline_complete(guard_t *g, const step_stats_t *steps, double now)
{
    if (++g->baseline_taken < g->p.baseline_steps)
        return false;
    if (g->p.law < 2)
        return true;
    double solo[STATS_MAX_WINDOW];
    int n = 0;
    for (int i = 0; i < g->baseline_taken && i < steps->nsolo; i++)
        solo[n++] = steps->solo[(steps->solo_next - 1 - i + STATS_MAX_WINDOW) % STATS_MAX_WINDOW];
    double f = stats_inflation(solo, n);
    /* GPU windows swing far more than steps: a baseline of them takes three times always (four
     * kept the co-tenant paused 80 s for a baseline sure to 2 % instead of 2.3 %). */
    double want = g->p.baseline_steps * (guard_busy_mean(g) ? 3 : fmin(f * f, 4));
    if (g->baseline_taken < want && g->baseline_taken < STATS_MAX_WINDOW)
        return false;
    g->baseline_len = g->baseline_taken;
    note_drift(g, baseline_summary(g, steps, g->baseline_len).median, now);
    return true;
}

bool guard_baseline_wanted(const guard_t *g, const step_stats_t *steps, double now)
{
    if (guard_baseline_explicit(steps))
        return false;
    /* A drifting trainer's baseline is older than it looks: renewed before the drift eats a
     * quarter of the budget (not more often than every 30 s; the cost bound still holds). */
    double max_age = g->p.baseline_max_age;
    if (g->p.law >= 2 && g->ndrift < GUARD_DRIFT_POINTS - 1)
        max_age /= 3; /* until the drift is known: three baselines make the first fit */
    else if (g->drift != 0 && g->p.law >= 2)
        max_age = fmax(30, fmin(max_age, 0.25 * g->p.budget / fabs(g->drift)));
    return g->baseline_at < 0 || stats_baseline(steps, guard_baseline_len(g)).n < g->p.min_samples ||
           now - g->baseline_at > max_age;
}

/* The baseline carried forward along the drift since it was taken (at most a factor 2 either
 * way): what the trainer would take alone now. */
summary_t guard_baseline_now(const guard_t *g, const step_stats_t *steps, double now)
{
    if (g->p.law < 2)
        return stats_baseline_iid(steps, g->p.baseline_steps);
    summary_t b = baseline_summary(g, steps, guard_baseline_len(g));
    /* Solo steps since (the trainer ran alone a whole baseline) are fresher than any line. */
    bool fresher = g->baseline_at > g->baseline_median_at + 1;
    if (g->drift == 0 || guard_baseline_explicit(steps) || g->baseline_median_at <= 0 || fresher || !(b.median > 0))
        return b;
    double f = g->baseline_median * (1 + g->drift * (now - g->baseline_median_at)) / b.median;
    f = fmax(0.5, fmin(2, f));
    b.median *= f;
    b.lo *= f;
    b.hi *= f;
    return b;
}
