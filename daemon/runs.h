/* runs: commands started by the daemon inside a job's allocation, followed until they end. */
#ifndef COSCHED_RUNS_H
#define COSCHED_RUNS_H

#include "daemon.h"
#include "process.h"
#include "result.h"

/* Start argv (array of strings) as job j's user (run_user.h: a clean environment, its home or
 * cwd, umask 077) with env (object of strings) added, bound to j's rank, inside the co-tenant
 * throttle group if one is given (joined before exec). The command's stdout and stderr land in
 * state_dir/runs/UID/ID.out and ID.err, the user's own. */
result_t run_start(daemon_t *d, job_t *j, int rank, json_t *argv, json_t *env, const char *cwd,
                   throttle_group_t *throttle, run_t **out);

/* Remove a run's output files (ID.out, ID.err), when it has any. */
void run_remove_output(const run_t *r);

/* Forget ended runs older than runs.retention, removing their output files. */
void runs_expire(daemon_t *d);

/* SIGTERM now (after letting go of its throttle), SIGKILL after a grace period (runs_tick). */
int run_stop(daemon_t *d, run_t *r);

run_t *run_find(daemon_t *d, int id);
const char *run_state_name(run_state_t s);
int run_state_parse(const char *name, run_state_t *out);
void run_free(run_t *r);

/* Event handlers: the pidfd of a run fired, its stdout file grew, the 1 s tick. */
void run_ended(daemon_t *d, run_t *r);
void run_on_inotify(daemon_t *d, int wd);
void run_read_output(daemon_t *d, run_t *r);
void runs_tick(daemon_t *d);

/* After a restore: mark runs whose process is gone as lost, follow the others again. */
void runs_reconcile(daemon_t *d);

#endif
