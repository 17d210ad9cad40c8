/* escalation: a co-tenant Slurm started that the guard has held at the minimum share for longer
 * than guard.requeue_after seconds is requeued through Slurm, where its job allows it — or left
 * held, as configured (requeue_after 0, the default: requeueing loses the co-tenant's work since
 * its last checkpoint). docs/guard.md, "Escalation through Slurm". */
#ifndef COSCHED_ESCALATION_H
#define COSCHED_ESCALATION_H

#include <jansson.h>

#include "daemon.h"

/* Once a second: how long each co-tenant has been at the minimum, scontrol started when one has
 * been there too long, and what a scontrol that ran says. Never waits: scontrol is a child whose
 * output is read as it comes and which is reaped when it is done (killed after 30 s). */
void escalation_tick(daemon_t *d, double now);

/* Where it stands: {"step", "detail", "at_minimum_seconds", "requeues"}. */
json_t *escalation_to_json(const job_t *j, double now);
const char *escalation_step_name(escalation_step_t step);

#endif
