/* time_credit: time handed back to co-tenants Slurm started (guard.extend_time_limit). A
 * co-tenant held at share s for dt seconds could not run for (1 - s) x dt of them, yet its time
 * limit ran on; once that adds up to a whole minute (Slurm counts time limits in minutes),
 * `scontrol update JobId=J TimeLimit=+N` hands the N whole minutes back — after `scontrol show
 * job` has shown a time limit: a job without one is left alone. docs/slurm.md, "Time
 * held, handed back". */
#ifndef COSCHED_TIME_CREDIT_H
#define COSCHED_TIME_CREDIT_H

#include <jansson.h>

#include "daemon.h"

/* Once a second: the time each held co-tenant is owed, and its update when a minute is due.
 * Never waits: scontrol is a slurm_child. */
void time_credit_tick(daemon_t *d, double now);

/* {"owed_seconds", "minutes", "detail"}. */
json_t *time_credit_to_json(const job_t *j);

#endif
