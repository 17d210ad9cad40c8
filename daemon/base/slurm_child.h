/* slurm_child: a Slurm command (scontrol, or sh -c around it) run as a child of the daemon that the
 * event loop never waits on — its output read without blocking as it comes, reaped when it ends,
 * killed with its process group after SLURM_CHILD_TIMEOUT seconds. Used by the escalation of a
 * co-tenant (cotenants/escalation.c) and by the node's harvest gate (cotenants/harvest_gate.c). */
#ifndef COSCHED_SLURM_CHILD_H
#define COSCHED_SLURM_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum { SLURM_CHILD_TIMEOUT = 30, SLURM_CHILD_RETRY = 60, SLURM_CHILD_RETRY_MAX = 3600 };

typedef struct slurm_child {
    pid_t pid;         /* running; 0 = none */
    int out_fd;        /* its stdout and stderr, read as they come; -1 = none */
    double started;    /* monotonic seconds */
    char output[2048]; /* what it said (cut short) */
    size_t output_len;
} slurm_child_t;

typedef enum {
    SLURM_CHILD_RUNNING,
    SLURM_CHILD_ENDED,     /* reaped: *status is waitpid's */
    SLURM_CHILD_LOST,      /* not a child of the daemon any more */
    SLURM_CHILD_TIMED_OUT, /* killed after SLURM_CHILD_TIMEOUT seconds */
} slurm_child_poll_t;

/* No child yet. */
void slurm_child_init(slurm_child_t *c);

/* argv (argv[0] looked up in PATH unless it has a slash), in a process group of its own, stdin
 * /dev/null, with the daemon's environment but SLURM_CONF=slurm_conf when that is not "" (a daemon
 * started without SLURM_CONF still asks the cluster it was configured for). false with the reason
 * in err. */
bool slurm_child_start(slurm_child_t *c, const char *const *argv, const char *slurm_conf, double now, char *err,
                       size_t errlen);

/* What it wrote since, and whether it ended (then *status is set and c has no child again). */
slurm_child_poll_t slurm_child_poll(slurm_child_t *c, double now, int *status);

/* Kill it with its group and reap it (the owner is let go). */
void slurm_child_kill(slurm_child_t *c);

/* How long to wait before trying again after a failure, *failures in a row before it (counted up
 * here): SLURM_CHILD_RETRY seconds, twice that after a second failure, and so on up to
 * SLURM_CHILD_RETRY_MAX (a slurmctld that refuses is not asked every minute for ever). */
double slurm_child_retry_wait(int *failures);

/* The first and last line of what it said, "no output" when none. */
const char *slurm_child_first_line(const slurm_child_t *c, char *out, size_t len);
const char *slurm_child_last_line(const slurm_child_t *c, char *out, size_t len);

#endif
