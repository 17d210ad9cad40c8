/* libcosched: a training job's connection to coschedd — report each step's duration over one
 * connection kept open, for the cost of a send and a receive instead of a process per step. */
#ifndef COSCHED_H
#define COSCHED_H

#ifdef __cplusplus
extern "C" {
#endif

/* One connection to coschedd for one job. Not thread-safe: use one handle per thread, or
 * guard a shared one with a mutex. Handles share nothing, so any number may live side by side.
 * Every function accepts NULL (what cosched_open returns when memory runs out) and then
 * fails quietly: the training loop needs no checks of its own. */
typedef struct cosched cosched_t;

/* Open a handle for a job. socket: NULL means $COSCHED_SOCKET, else the daemon's default
 * (/run/coschedd/coschedd.sock). job: NULL means $COSCHED_JOB, else $SLURM_JOB_ID.
 * Connects at once, but never fails for want of a daemon: a handle comes back whenever
 * memory allows, and cosched_error says what is wrong (no job found, daemon unreachable);
 * reports start to succeed once the daemon answers. Returns NULL only when out of memory. */
cosched_t *cosched_open(const char *socket, const char *job);

/* Report that one training step took `seconds` (> 0). Returns 0 when the daemon counted it,
 * -1 otherwise with the reason in cosched_error. Never blocks longer than the timeout
 * (cosched_set_timeout, 1000 ms by default) per attempt, and never more than two attempts.
 * A connection the daemon closed (idle timeout, restart) is replaced at once and the report
 * sent again at most once, when its reply never came. After a failure (no daemon, no reply)
 * the handle makes no new attempt for 1 s (10 timeouts, at least 1 s, after a timeout):
 * reports in between fail at once, at the cost of a clock read. */
int cosched_report_step(cosched_t *c, double seconds);

/* Say what the job does now: "train" (its steps are judged), or another phase such as "eval" or
 * "checkpoint" (1-31 of a-z, 0-9, '_', '-'), whose steps the daemon counts apart and its guard
 * never judges: an evaluation's steps are no measure of slowdown. Returns 0 or -1 (the reason
 * in cosched_error), with the same timeouts and retries as cosched_report_step. */
int cosched_phase(cosched_t *c, const char *phase);

/* Time a step on the monotonic clock: cosched_step_end reports the time since the last
 * cosched_step_begin, as cosched_report_step does (-1 also when no step was begun). */
void cosched_step_begin(cosched_t *c);
int cosched_step_end(cosched_t *c);

/* The job's step count in the daemon's last reply (-1 before the first). The daemon keeps
 * it in memory only: it starts again from 0 after a daemon restart. */
long long cosched_steps(const cosched_t *c);

/* Milliseconds one request may take, connect, send and reply together (1..60000).
 * Returns 0, or -1 for a value out of range. */
int cosched_set_timeout(cosched_t *c, int milliseconds);

/* Why the last call failed, as one line naming the socket or the job; "" after a success.
 * Valid until the next call on the handle. The library itself never prints. */
const char *cosched_error(const cosched_t *c);

/* Close the connection and free the handle. */
void cosched_close(cosched_t *c);

#ifdef __cplusplus
}
#endif

#endif
