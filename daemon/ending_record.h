/* ending_record: whether a held co-tenant Slurm started is ending, as last asked of Slurm
 * (cotenants/ending.c), kept in its job; cotenants_watch notes the news that asks it. Beside daemon.h, as
 * escalation_record.h is, so that daemon.h and jobs.c hold it without its logic. */
#ifndef COSCHED_ENDING_RECORD_H
#define COSCHED_ENDING_RECORD_H

#include "slurm_child.h"

/* While scontrol runs, the daemon looks for its answer this often (cotenants_arm_timer). */
#define ENDING_POLL_SECONDS 0.05

typedef struct ending {
    slurm_child_t scontrol; /* scontrol -o show job, running (pid 0: none) */
    double next_ask;        /* monotonic seconds: not asked again before */
    bool owed;              /* news came that no answer has covered yet: asked once it may be */
    bool failing;           /* the last question got no answer (said once in the log, not each time) */
    char news[96];          /* the latest news (a signal waiting on process P, ...) */
} ending_t;

#endif
