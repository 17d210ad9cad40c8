/* escalation_record: the record, kept in each job, of where a co-tenant's escalation through
 * Slurm is at (cotenants/escalation.c), and how its scontrol is let go when the job is freed.
 * Apart from escalation.h, and beside daemon.h rather than in cotenants/, so that daemon.h and
 * jobs.c can hold it without the escalation's logic (which uses jobs and co-tenants). */
#ifndef COSCHED_ESCALATION_RECORD_H
#define COSCHED_ESCALATION_RECORD_H

#include <sys/types.h>

typedef enum {
    ESCALATION_NONE,       /* not at the minimum, or not yet long enough */
    ESCALATION_CHECKING,   /* scontrol show job: may it be requeued? */
    ESCALATION_REQUEUEING, /* its processes resumed, scontrol requeue running */
    ESCALATION_EXCLUDING,  /* requeued; scontrol update adds this node to its ExcNodeList */
    ESCALATION_REQUEUED,   /* Slurm took it back: it will start again elsewhere or later */
    ESCALATION_REFUSED,    /* not requeueable (Requeue=0): left held */
    ESCALATION_FAILED,     /* scontrol failed or took too long: left held, tried again later */
} escalation_step_t;

typedef struct escalation {
    double at_minimum_since; /* monotonic seconds; 0 = not at the minimum now */
    escalation_step_t step;
    pid_t pid;                /* scontrol running; 0 = none */
    int out_fd;               /* its output, read as it comes; -1 = none */
    double started, retry_at; /* when scontrol started; when a failed attempt may be made again */
    char output[2048];        /* what scontrol said (cut short) */
    size_t output_len;
    char detail[320];       /* in a few words, for job get and the log */
    char excluded[256];     /* the job's ExcNodeList as scontrol show job said it ("" = none) */
    unsigned long requeues; /* done for this job since the daemon started */
    int failures;           /* attempts in a row that failed: each waits twice as long */
} escalation_t;

/* A job let go: its scontrol, if one runs, is killed and reaped. */
void escalation_record_forget(escalation_t *e);

#endif
