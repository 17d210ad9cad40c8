/* report: what the trainer tells the world: JSON lines on stdout (step, epoch, summary) and
 * the Chrome trace of its phases. Schema: docs/trainer-output.md. */
#ifndef COSCHED_TRAIN_REPORT_H
#define COSCHED_TRAIN_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* Phases of a step, and the trace lanes they are drawn in. */
enum {
    TRAIN_PH_DATA,
    TRAIN_PH_FWD,
    TRAIN_PH_BWD,
    TRAIN_PH_COMM,
    TRAIN_PH_UPDATE,
    TRAIN_PH_EVAL,
    TRAIN_PH_CKPT,
    TRAIN_NPHASES
};

/* Monotonic seconds. */
double train_now(void);

/* One step line, printed with fprintf and no allocation (it is inside the step loop). */
void train_report_step(FILE *f, long step, long epoch, int rank, const double t[TRAIN_NPHASES], double t_step,
                       double loss, double lr, double images_per_s);

/* Trace events kept in a block sized once; gathered to rank 0 and written at the end. A run of
 * more steps than fit keeps its first TRAIN_TRACE_MAX_EVENTS (4 Mi events, 128 MiB): sized by
 * --steps alone, an open-ended run asked for gigabytes it never used. */
enum { TRAIN_TRACE_MAX_EVENTS = 1 << 22 };
typedef struct {
    double *ev; /* 4 doubles per event: phase, step, start us, duration us */
    size_t n, cap;
    double t0;      /* CLOCK_MONOTONIC origin of the events' start times */
    double t0_unix; /* the same moment by the wall clock: other tools' timelines meet ours there */
} train_trace;

double train_wall(void);
int train_trace_init(train_trace *t, size_t cap, double t0);
void train_trace_add(train_trace *t, int phase, long step, double start, double end);
/* Collective: every rank calls it; rank 0 writes path. Returns 0 or -1 with err. */
int train_trace_write(train_trace *t, const char *path, int rank, int size, char *err, size_t errlen);
void train_trace_free(train_trace *t);

/* FNV-1a of a block, for comparing parameters across ranks and runs. */
unsigned long long train_hash(const void *p, size_t n);

#endif
