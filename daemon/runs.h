/* runs: commands started by the daemon inside a job's allocation, followed until they end. */
#ifndef COSCHED_RUNS_H
#define COSCHED_RUNS_H

#include "daemon.h"

/* Start argv (array of strings) with env (object of strings) bound to job j's rank; returns
 * the whole reply. The command's stdout and stderr land in state_dir/runs/ID.out and ID.err. */
json_t *run_start(daemon_t *d, job_t *j, int rank, json_t *argv, json_t *env);

/* SIGTERM now, SIGKILL after a grace period (runs_tick). */
int run_stop(daemon_t *d, run_t *r);

run_t *run_find(daemon_t *d, int id);
json_t *run_to_json(const run_t *r);
const char *run_state_name(run_state_t s);
void run_free(run_t *r);

/* Whether any co-tenant job has a running run (steps then do not count for the baseline). */
bool cotenant_active(const daemon_t *d);

/* Event handlers: the pidfd of a run fired, its stdout file grew, the 1 s tick. */
void run_ended(daemon_t *d, run_t *r);
void run_on_inotify(daemon_t *d, int wd);
void run_read_output(daemon_t *d, run_t *r);
void runs_tick(daemon_t *d);

/* After a restore: mark runs whose process is gone as lost, follow the others again. */
void runs_reconcile(daemon_t *d);

#endif
