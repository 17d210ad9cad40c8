/* experiment_trace: one Chrome trace (Trace Event Format, JSON object form) of a whole
 * experiment, for Perfetto or chrome://tracing: a process per trainer rank (its phases from
 * cosched-train --trace), per noise worker (its phases and bandwidth) and for the guard (each
 * share change as an instant event, the share as a counter), under a slice per repetition. */
#ifndef COSCHED_EXPERIMENT_TRACE_H
#define COSCHED_EXPERIMENT_TRACE_H

#include <stddef.h>

#include <jansson.h>

typedef struct exp_trace exp_trace_t;

/* What one repetition left behind; times are Unix seconds. */
typedef struct exp_trace_rep {
    const char *label;                /* "shared+noise #2", "exclusive (warm-up)" */
    double start, end;                /* the trainer's run */
    double noise_mbs;                 /* < 0: no noise */
    const char *trainer_trace;        /* cosched-train --trace FILE; NULL or missing: no trainer lanes */
    const char *const *noise_outputs; /* each noise run's stdout (cosched-noise JSON lines) */
    int nnoise;
    json_t *share_changes; /* job get's share_changes of the noise job, or NULL */
} exp_trace_rep_t;

/* A trace whose time 0 is origin (Unix seconds): the experiment's start. NULL: out of memory. */
exp_trace_t *exp_trace_new(double origin);

/* Add a repetition. A part that cannot be read is left out and named in *missing (caller
 * frees; NULL when all was read): a trace with a gap beats no trace. */
void exp_trace_add_rep(exp_trace_t *t, const exp_trace_rep_t *rep, char **missing);

/* Write the trace to path. 0, or -1 with why in err. */
int exp_trace_write(const exp_trace_t *t, const char *path, char *err, size_t errlen);

void exp_trace_free(exp_trace_t *t);

#endif
