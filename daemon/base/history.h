/* history: a trainer's recent progress, timestamped, for `cosched stats --plot`: a bounded ring of
 * samples (step time, baseline, budget, slowdown, the guard's share), kept in memory only. */
#ifndef COSCHED_HISTORY_H
#define COSCHED_HISTORY_H

#include <stdbool.h>

/* The bound: the latest HISTORY_SAMPLES samples, each spanning at least HISTORY_INTERVAL seconds
 * of wall-clock time (steps closer together are averaged into one sample): at least the last 8
 * minutes, in 240 * 56 bytes = 13 KB per trainer. One trainer's full history in the stats reply
 * must fit one frame (PROTO_MAX_FRAME, 64 KiB; about 230 bytes a sample), which is what limits
 * it. Not saved: a restarted daemon starts an empty history. */
#define HISTORY_SAMPLES 240
#define HISTORY_INTERVAL 2.0

typedef struct history_sample {
    double time;     /* unix time of its first step */
    double seconds;  /* mean step time (or the progress source's equivalent) of its steps */
    unsigned steps;  /* how many steps it averages */
    double baseline; /* the baseline's median step time then; 0: none yet */
    double budget;   /* the trainer's slowdown budget then */
    double slowdown; /* the judged slowdown then; NAN: not enough steps */
    double share;    /* the share the trainer's guard allowed co-tenants then */
} history_sample_t;

typedef struct history {
    history_sample_t s[HISTORY_SAMPLES];
    int n, next; /* how many are kept; where the next one goes */
} history_t;

/* One step at unix time `when`: joins the latest sample when it began less than HISTORY_INTERVAL
 * before, else starts a new one (the oldest goes once the ring is full). The baseline, budget,
 * slowdown and share are those after the step: the latest step's stand for the sample. */
void history_add(history_t *h, double when, double seconds, double baseline, double budget, double slowdown,
                 double share);

/* The i-th sample kept, oldest first (0 <= i < h->n). */
const history_sample_t *history_at(const history_t *h, int i);

#endif
