/* process: a process's identity over time — its pid and its start time, so that a pid the kernel
 * gave to someone else since is never taken for the process that had it (runs after a restart,
 * the processes the guard stopped before a crash) — and what /proc says of it. */
#ifndef COSCHED_PROCESS_H
#define COSCHED_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* /proc/PID/stat starttime (clock ticks after boot); 0 when there is no such process. */
unsigned long long process_start_ticks(pid_t pid);

/* The same process: same pid and same start time. */
bool process_is(pid_t pid, unsigned long long start_ticks);

/* Its state letter from /proc/PID/stat ('R', 'S', 'T', 't', 'D', 'Z'); '?' when it is gone. */
char process_state(pid_t pid);

/* /proc/PID/status, whole (its text in buf); -1 when it cannot be read. */
ssize_t process_status(pid_t pid, char *buf, size_t len);

/* A pidfd for it (-1 when it is gone), and a signal through one: once a pidfd is open, the signal
 * reaches that process or none, whatever happens to its pid meanwhile. */
int process_pidfd(pid_t pid);
int process_pidfd_signal(int pidfd, int sig);

#endif
