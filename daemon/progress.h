/* progress: a training step reaches its job's statistics and guard, and what the guard decides
 * reaches the co-tenants — one path for steps read from a run's output and steps reported. */
#ifndef COSCHED_PROGRESS_H
#define COSCHED_PROGRESS_H

#include "daemon.h"

/* A trainer job took a step of `seconds`. */
void progress_step(daemon_t *d, job_t *trainer, double seconds);

/* Once a second: guards of trainers that stopped stepping (pauses without steps, idle release). */
void progress_tick(daemon_t *d);

#endif
