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
bool process_same(pid_t pid, unsigned long long start_ticks);

/* From /proc/PID/stat: its process group, and the CPU time (user + system, in seconds) of the
 * process itself and of its children it has waited for. -1 when it is gone. */
int process_cpu(pid_t pid, pid_t *pgid, double *self_seconds, double *children_seconds);

/* Its state letter from /proc/PID/stat ('R', 'S', 'T', 't', 'D', 'Z'); '?' when it is gone. */
char process_state(pid_t pid);

/* /proc/PID/status, whole (its text in buf); -1 when it cannot be read. */
ssize_t process_status(pid_t pid, char *buf, size_t len);

/* A pidfd for it (-1 when it is gone, or the kernel has none: before 5.3), and a signal through
 * one: once a pidfd is open, the signal reaches that process or none, whatever its pid does. */
int process_pidfd(pid_t pid);
int process_pidfd_signal(int pidfd, int sig);

/* A signal to the process group `leader` leads, or to the leader alone when it leads none. */
int process_group_signal(pid_t leader, int sig);

/* A process to signal later: through a pidfd where the kernel has them, else by its pid, whose
 * start time is checked again just before each signal (a window of microseconds, not of a tick). */
typedef struct process_ref {
    pid_t pid;
    int pidfd; /* -1: none (the kernel's, or valgrind's, lack) */
    unsigned long long ticks;
} process_ref_t;

/* Open a reference; false when the process is gone. */
bool process_ref_open(process_ref_t *r, pid_t pid);
/* The same, but only for the process that started at ticks (a recorded one). */
bool process_ref_open_as(process_ref_t *r, pid_t pid, unsigned long long ticks);
int process_ref_signal(const process_ref_t *r, int sig);
void process_ref_close(process_ref_t *r);

#endif
