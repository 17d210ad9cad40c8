/* escalation_record: the record, kept in each job, of where a co-tenant's escalation through
 * Slurm is at (cotenants/escalation.c), and how its scontrol is let go when the job is freed.
 * Apart from escalation.h, and beside daemon.h rather than in cotenants/, so that daemon.h and
 * jobs.c can hold it without the escalation's logic (which uses jobs and co-tenants). */
#ifndef COSCHED_ESCALATION_RECORD_H
#define COSCHED_ESCALATION_RECORD_H

#include <sys/types.h>

#include "slurm_child.h"

typedef enum {
    ESCALATION_NONE,       /* not at the minimum, or not yet long enough */
    ESCALATION_CHECKING,   /* scontrol show job: may it be requeued? */
    ESCALATION_REQUEUEING, /* its processes resumed; scontrol requeue, then update ExcNodeList, running */
    ESCALATION_REQUEUED,   /* Slurm took it back: it will start again elsewhere or later */
    ESCALATION_REFUSED,    /* not requeueable (Requeue=0): left held */
    ESCALATION_FAILED,     /* scontrol failed or took too long: left held, tried again later */
} escalation_step_t;

/* How the requeue's child (sh -c: scontrol requeue, then scontrol update ExcNodeList) ends, when
 * not with 0: the requeue failed, or only the exclusion did. */
enum { ESCALATION_REQUEUE_FAILED = 3, ESCALATION_EXCLUDE_FAILED = 4 };

typedef struct escalation {
    double at_minimum_since; /* monotonic seconds; 0 = not at the minimum now */
    escalation_step_t step;
    slurm_child_t scontrol; /* running (pid 0: none), and what it said */
    double retry_at;        /* when a failed attempt may be made again */
    char detail[320];       /* in a few words, for job get and the log */
    char not_excluded[160]; /* why this node will not be added to its ExcNodeList ("" = it will) */
    unsigned long requeues; /* done for this job since the daemon started */
    int failures;           /* attempts in a row that failed: each waits twice as long */
} escalation_t;

/* A job let go (job_id its id): its scontrol, if one runs, is killed and reaped — except a requeue
 * under way, which the job's own epilog may well be releasing it for: that one goes on, detached,
 * and escalation_record_reap_detached reaps it and logs how it ended. */
void escalation_record_forget(escalation_t *e, const char *job_id);

/* Reap detached requeues that ended, kill those running for over 30 s (monotonic seconds now). */
void escalation_record_reap_detached(double now);

#endif
