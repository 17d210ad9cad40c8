/* bounds: the ranges a value keeps wherever it is read (cosched's options, coschedd's
 * parameters, coschedd.yaml), written once so that the three cannot drift apart. */
#ifndef COSCHED_BOUNDS_H
#define COSCHED_BOUNDS_H

#include <stdbool.h>

/* A trainer's slowdown budget, a fraction of its step time (0.05 = 5 %): above 0, at most 10.
 * Above 0: on the wire 0 means "not given, the configured default", and a budget of nothing
 * cannot be held (step times vary by more on their own; a co-tenant paused for good is
 * `cosched guard set --share 0`). At most 10 (ten times slower), as the daemon and job
 * register always took it; the experiment's excluded 10 and the config's allowed 0 were slips. */
#define BOUNDS_BUDGET_MIN 0.0  /* excluded */
#define BOUNDS_BUDGET_MAX 10.0 /* included */

static inline bool bounds_budget_ok(double budget)
{
    return budget > BOUNDS_BUDGET_MIN && budget <= BOUNDS_BUDGET_MAX;
}

#endif
