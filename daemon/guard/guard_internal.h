/* guard_internal: what guard.c uses of its step files — the baseline (guard_baseline.c): how
 * many steps make one (more for autocorrelated steps), when it is due again, and where it stands
 * now, carried along the trainer's own drift (law 2; law 1 keeps a fixed baseline_steps, renewed
 * every baseline_max_age). Pure like the guard. Apart from guard.h: not the guard's interface. */
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

#endif
