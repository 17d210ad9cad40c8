/* guard_internal: what guard.c uses of its step files — the baseline (guard_baseline.c): how
 * many steps make one (more for autocorrelated steps), when it is due again, and where it stands
 * now, carried along the trainer's own drift (law 2; law 1 keeps a fixed baseline_steps, renewed
 * every baseline_max_age); and law 3's evidence about the host (guard_host.c). Pure like the
 * guard. Apart from guard.h: not the guard's interface. */
#ifndef COSCHED_GUARD_INTERNAL_H
#define COSCHED_GUARD_INTERNAL_H

#include "guard.h"

static inline bool guard_baseline_explicit(const step_stats_t *steps)
{
    return steps->explicit_baseline > 0;
}

/* GPU windows judged by their mean busy fraction (law 2; law 1 judges them as steps). */
static inline bool guard_busy_mean(const guard_t *g)
{
    return g->gpu && g->p.gpu_judge == GUARD_GPU_MEAN && g->p.law >= 2;
}

/* Steps in the baseline: baseline_steps, or what the last pause took. */
int guard_baseline_len(const guard_t *g);

/* A solo step was counted in a pause: whether the pause has its baseline (then the drift is
 * fitted again). */
bool guard_baseline_complete(guard_t *g, const step_stats_t *steps, double now);

/* Whether the baseline should be measured (again): none, too few steps, or too old. */
bool guard_baseline_wanted(const guard_t *g, const step_stats_t *steps, double now);

/* The baseline to judge against now. */
summary_t guard_baseline_now(const guard_t *g, const step_stats_t *steps, double now);

/* ---- law 3: a host whose speed switches, a harm that comes and goes (guard_host.c) ---------- */

/* A baseline the steps show wrong is measured again at once, within this many times the
 * baseline_max_cost bound: judged against it, the guard acts on the host's state. */
#define GUARD_EVIDENCE_COST 5

/* Law 3 on steps. GPU windows keep law 2's way (guard_busy_mean): their own swing is larger
 * than the host's, and their law was fitted to it. */
bool guard_host_aware(const guard_t *g);

/* The trainer faster than its baseline by more than the budget beside its co-tenants (the
 * window's median): co-tenants never make a trainer faster, so the host (or the trainer's own
 * state) is not the one the baseline was taken in. */
bool guard_baseline_stale(const guard_t *g, const step_stats_t *steps);

/* Whether a pause for a baseline shown wrong (stale, or over budget with nobody left to hold
 * since the verdicts) may start now: within GUARD_EVIDENCE_COST times the cost bound, and not
 * before a pause that got no steps has waited baseline_max_age. */
bool guard_evidence_pause_allowed(const guard_t *g, bool baseline_possible, double now);

/* The newest min_samples steps of the window, judged: what a probe's window is compared with,
 * next to it in time. */
slowdown_t guard_recent_slowdown(const guard_t *g, const step_stats_t *steps, double now);

/* Whether pausing the probe's half took the harm off, against the steps right before the probe
 * (g->probe_ref) rather than the baseline alone: at least half a budget, and more than the two
 * windows' own uncertainty. */
bool guard_probe_took_off(const guard_t *g);

/* Whether the window is evidence enough for a relaxation, beyond its interval (law 2): not far
 * below the baseline, and a full window. */
bool guard_relax_evidence(const guard_t *g);

#endif
