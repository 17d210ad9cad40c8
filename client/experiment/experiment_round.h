/* experiment_round: one round of the blocked design as its noise reports it — each noise
 * process's phase lines (when it played each block) and progress lines (what it moved) onto the
 * round's blocks, then the blocks measured against the trainer's steps. Pure: lines in, blocks
 * out; experiment_blocked.c starts the runs and feeds it. */
#ifndef COSCHED_EXPERIMENT_ROUND_H
#define COSCHED_EXPERIMENT_ROUND_H

#include <jansson.h>

#include "experiment_blocks.h"

typedef struct exp_round {
    exp_block_t *blocks; /* pattern step k + 1 plays blocks[k] */
    int n;
    int producers;    /* noise processes playing the pattern (an MPI noise run has two) */
    int current;      /* the noise run whose lines are fed now (its processes: 2 current, 2 current + 1) */
    int *seen;        /* phase lines read per block, over every process */
    double *last_end; /* per block, the latest end of it over the processes */
    /* The noise's steady throughput per block, from its progress lines less the first of each
     * block (a block starts by touching its arrays): bytes and seconds summed over the processes. */
    double *steady_bytes, *steady_seconds;
    /* Per process: its last progress line's pattern step and elapsed time. */
    json_int_t *last_step;
    double *last_elapsed;
} exp_round_t;

/* A round of n blocks played by at most runs noise runs of producers processes in all.
 * 0, or -1 when out of memory. */
int exp_round_init(exp_round_t *rd, exp_block_t *blocks, int n, int runs, int producers);
void exp_round_free(exp_round_t *rd);

/* One line of noise run rd->current (an exp_follow callback): a phase line sets its block's time
 * (from the latest start to the earliest end over the processes) and rate; a progress line adds to
 * its block's steady throughput. Other lines are ignored. */
void exp_round_line(json_t *line, void *arg);

/* Measure the blocks every process has finished and the trainer has stepped past (steps end by
 * stepped_to = the last step's end): their kept steps, and their steady throughput where it is known. */
void exp_round_measure(exp_round_t *rd, const exp_step_t *steps, int nsteps, double drop);

/* The latest end of the blocks every process has played: what the trainer must step past. */
double exp_round_played_to(const exp_round_t *rd);

/* The round is over; the noise was asked to stop at stopped_at (Unix seconds; the round's end
 * when it ended on its own). A block is a figure only when it is whole: every process played it,
 * and it ended before the stop (a block cut short may have spent all it had touching its arrays).
 * Others lose their steps, so their pairs are left out. */
void exp_round_close(exp_round_t *rd, double stopped_at);

#endif
