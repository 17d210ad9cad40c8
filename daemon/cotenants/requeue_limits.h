/* requeue_limits: what the site lets escalation do on the word of trainers, which is their
 * owners' (docs/security.md, "A trainer's word"): requeue only co-tenants of the partitions it
 * opted in (guard.requeue_partitions), and at most guard.requeues_per_owner a day on any one
 * trainer owner's account. */
#ifndef COSCHED_REQUEUE_LIMITS_H
#define COSCHED_REQUEUE_LIMITS_H

#include <stddef.h>

#include "daemon.h"

/* Whether co-tenant j may be requeued now (monotonic seconds); false with the reason in why, and
 * *retry_at (0: never, for this hold) when the owners' day ends. */
bool requeue_limits_allow(daemon_t *d, const job_t *j, double now, double *retry_at, char *why, size_t len);

/* A requeue done: one more on the account of every trainer owner on the node. */
void requeue_limits_charge(daemon_t *d, double now);

#endif
