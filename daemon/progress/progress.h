/* progress: a trainer's progress reaches its job's statistics and guard, and what the guard
 * decides reaches the co-tenants — one path for steps read from a run's output, steps reported,
 * and windows of its GPUs' busy time. Which of them feeds a job is chosen here, per job, from
 * what it asked for and what the node has (progress_source.h), and shown wherever the job is. */
#ifndef COSCHED_PROGRESS_H
#define COSCHED_PROGRESS_H

#include "daemon.h"
#include "result.h"

/* A trainer job reported (or printed) a step of `seconds`, without a rank: every one is judged. */
void progress_step(daemon_t *d, job_t *trainer, double seconds);

/* The same from a rank, or through the PyTorch hook: the step joins the job's one series of
 * steps or not (step_series.h: another rank's copy of it, or the hook's while the program
 * reports itself). true when it was judged, as the report's reply says. */
bool progress_step_from(daemon_t *d, job_t *trainer, double seconds, const step_origin_t *from);

/* A phase name: 1-31 of [a-z0-9_-]. */
bool progress_phase_valid(const char *phase);

/* The trainer says what it does now: "train", or another phase (eval, checkpoint) whose steps
 * and GPU windows are counted apart and never judged (guard_set_phase). */
void progress_set_phase(daemon_t *d, job_t *trainer, const char *phase);

/* A baseline step time set by hand (cosched report --baseline): a job whose guard judges steps.
 * Under auto it counts as reporting steps; a job an operator gave another source is INVALID. */
result_t progress_set_baseline(daemon_t *d, job_t *trainer, double seconds);

/* A run of the job started: a trainer judged by its instructions counts its processes from now. */
void progress_run_started(daemon_t *d, job_t *trainer);

/* Choose the job's source again (its GPUs' states, its first step, its cgroup changed); a change
 * is logged and the baseline is learned again: the new source's observations are not the old's. */
void progress_choose_source(daemon_t *d, job_t *trainer);

/* Once a second: sources chosen again, guards of trainers that stopped stepping (pauses without
 * steps, idle release). */
void progress_tick(daemon_t *d);

/* The GPUs (topology indexes) a job's ranks use, at most max; how many. */
int progress_job_gpus(const job_t *j, int *gpus, int max);

/* The one entry of a source that calls in (progress_gpu.c): one observation of a trainer, with
 * the units of a step time, made at `when` (monotonic), judged by its guard. */
void progress_observe(daemon_t *d, job_t *trainer, double value, double when);

#endif
