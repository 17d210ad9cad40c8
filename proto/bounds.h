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

/* Counts in a placement request (ranks per GPU, cores per rank, a co-tenant's cores, noise ranks,
 * CPU ranks): at least 1 where given (on the wire 0 or -1 mean "the default"), at most more than
 * any node has. */
#define BOUNDS_COUNT_MAX 4096
/* A bound in a message's text: "from 0 to " BOUNDS_TEXT(BOUNDS_INDEX_MAX). */
#define BOUNDS_TEXT(bound) BOUNDS_TEXT_(bound)
#define BOUNDS_TEXT_(bound) #bound

/* A job's rank, a GPU's index in a list: from 0. */
#define BOUNDS_INDEX_MAX 65535
/* A user id, as the wire's integers and uid_t both hold it. */
#define BOUNDS_UID_MAX 2147483647
/* A co-tenant's share of its work: 0 paused, 1 unthrottled. */
#define BOUNDS_SHARE_MIN 0.0
#define BOUNDS_SHARE_MAX 1.0

/* A reported step: 10 us at the least (100 000 steps a second), which no training step reaches
 * (an optimizer's step alone takes longer); a faster claim is a lie or a bug, refused. */
#define BOUNDS_STEP_SECONDS_MIN 1e-5
/* How far below the baseline the daemon measured a trainer's owner may set theirs: 10 %. A lower
 * baseline makes every step look slower, and the guard holds other users' co-tenants for it. */
#define BOUNDS_BASELINE_MARGIN 0.10

#endif
