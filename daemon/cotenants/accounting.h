/* accounting: the node's counters that add up across nodes and time — co-tenants' CPU seconds,
 * trainers' seconds lost to them, over budget, without a progress source — kept in daemon_t
 * with no job in them, so that they survive a job's release (not a daemon restart: they restart
 * at 0, which Prometheus' rate() and increase() take as a counter reset). */
#ifndef COSCHED_ACCOUNTING_H
#define COSCHED_ACCOUNTING_H

#include "daemon.h"

/* A trainer's step (the steps source) while training: the time above its baseline, when a
 * co-tenant was at work beside it, is counted as lost. */
void accounting_step(daemon_t *d, const job_t *trainer, double step_seconds, bool with_cotenant);

/* The 1 s tick: the seconds since the last one credited to what held over them, and the
 * co-tenants' CPU time read from /proc. now: monotonic seconds. */
void accounting_tick(daemon_t *d, double now);

#endif
