/* time_credit_record: what a co-tenant Slurm started is owed for the time the guard held it, kept
 * in its job (cotenants/time_credit.c hands it back as minutes of time limit). Beside daemon.h, as
 * escalation_record.h is, so that daemon.h and jobs.c hold it without its logic. */
#ifndef COSCHED_TIME_CREDIT_RECORD_H
#define COSCHED_TIME_CREDIT_RECORD_H

#include "slurm_child.h"

typedef struct time_credit {
    double owed;            /* seconds it could not run, not yet handed back */
    double counted_to;      /* monotonic seconds the owed time is counted up to; 0 = not yet */
    unsigned long minutes;  /* handed back so far (TimeLimit=+N) */
    unsigned long asking;   /* minutes the running scontrol asks for */
    bool unlimited;         /* its job has no time limit: never asked again */
    double retry_at;        /* a failed update is not tried again before */
    int failures;           /* updates in a row that failed */
    char detail[320];       /* the last outcome, in a few words */
    slurm_child_t scontrol; /* running (pid 0: none) */
} time_credit_t;

#endif
