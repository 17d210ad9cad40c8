/* process: a process's identity over time — its pid and its start time, so that a pid the kernel
 * gave to someone else since is never taken for the process that had it (runs after a restart,
 * the processes the guard stopped before a crash). */
#ifndef COSCHED_PROCESS_H
#define COSCHED_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

/* /proc/PID/stat starttime (clock ticks after boot); 0 when there is no such process. */
unsigned long long process_start_ticks(pid_t pid);

/* The same process: same pid and same start time. */
bool process_is(pid_t pid, unsigned long long start_ticks);

#endif
