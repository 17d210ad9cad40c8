/* ending: whether a held co-tenant Slurm started is ending, asked of Slurm when its watch had news
 * (a signal waiting, a process someone continued). Only a job Slurm shows ending — cancelled,
 * preempted, requeued, past its time limit, completing — is let go whole to act on its signal;
 * any other signal only gets through (docs/throttle.md, "Signals"). */
#ifndef COSCHED_ENDING_H
#define COSCHED_ENDING_H

#include "daemon.h"

/* Once a second, after cotenants_watch, which notes a held co-tenant's news in j->ending (owed,
 * news), and every ENDING_POLL_SECONDS while a scontrol runs (the throttle timer):
 * `scontrol -o show job` for each co-tenant owed an answer, as soon as no scontrol of it runs and
 * ENDING_ASK_EVERY seconds have passed since the last; what a finished one said; a job Slurm
 * shows ending let go whole (cotenant_let_go_whole). Never waits. */
void ending_tick(daemon_t *d, double now);

/* The state in one line of `scontrol -o show job` ("" when it has none, or more than one: a job
 * name can hold " JobState=..."), and whether it is one of a job that ends: anything but RUNNING,
 * SUSPENDED, PENDING, CONFIGURING or RESIZING. */
void ending_job_state(const char *line, char *out, size_t len);
bool ending_state_ends(const char *state);

#endif
