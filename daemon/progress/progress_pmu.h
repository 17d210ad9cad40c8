/* progress_pmu: a trainer's progress read from its processes' counters — which processes are
 * followed, and what they retired since the last reading as one observation. progress.c calls it
 * and judges what it returns; it calls nothing of progress.c. */
#ifndef COSCHED_PROGRESS_PMU_H
#define COSCHED_PROGRESS_PMU_H

#include "daemon.h"

/* Count the trainer's processes: its cgroup v2 job directory once, else each run coschedd started
 * for it that is not counted yet (runs that ended are folded into the total). */
void progress_pmu_follow(daemon_t *d, job_t *trainer);

/* Once a second for a trainer judged by its PMU: what its processes retired since the last reading,
 * as one observation in *value (the units of a step time); false when there is none yet. */
bool progress_pmu_read(daemon_t *d, job_t *trainer, double now, double *value);

/* A trainer's counters closed (its source is no longer the PMU, or it is released). */
void progress_pmu_stop(job_t *trainer);

#endif
