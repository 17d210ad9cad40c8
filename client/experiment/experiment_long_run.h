/* experiment_long_run: one long trainer run of the blocked design — the jobs registered on one
 * placement, the trainer started open-ended, its lead-in (which sets the block length), its steps
 * as they come, and its clean stop. The blocks (experiment_blocked.c) and the guarded run
 * (experiment_guarded.c) play their noise beside it. */
#ifndef COSCHED_EXPERIMENT_LONG_RUN_H
#define COSCHED_EXPERIMENT_LONG_RUN_H

#include "experiment.h"
#include "experiment_block_size.h"
#include "experiment_blocks.h"
#include "experiment_dwell.h"
#include "experiment_follow.h"
#include "experiment_jobs.h"

/* Fewer steps than this in a block, and its pair is left out: a block sized for four whole steps
 * (experiment_block_size.h) keeps three now and then, as its steps fall. */
enum { EXP_MIN_BLOCK_STEPS = 2 };

typedef struct exp_long_run {
    const client_opts_t *co;
    const exp_options_t *o;
    exp_jobs_t jobs;
    json_int_t trainer_id;
    exp_follow_t trainer_out; /* where its steps come from: its stdout, or a --trainer command's step log */
    char trainer_stdout[4096];
    exp_step_t *steps; /* rank 0's steps so far, in order */
    int nsteps, steps_cap;
    double step_time;         /* the lead-in's median step time */
    double block_s;           /* a block's length */
    int block_steps;          /* the whole steps a block keeps, about (exp_block_size); 0: --block set it */
    exp_dwell_t dwell;        /* the host's speed switches in the lead-in */
    double drop;              /* seconds dropped after each change: the noise kind's transient */
    int noise_cores;          /* the cores the placement leaves for noise */
    double started;           /* when the trainer's run started (Unix seconds) */
    char trainer_trace[4352]; /* its --trace file ("": none) */
    json_t *noise_outputs;    /* every noise run's stdout file, for the trace */
    char label[64];           /* the run's name on the trace */
    char placement[256], isolation[16];
    exp_rep_t profile; /* the trainer's compute / comm / data shares, once stopped */
} exp_long_run_t;

/* Register the jobs of c (noisy: with its noise job; guarded: with the budget), start the trainer
 * (a --trainer command with cosched's step hook, experiment_hook.h) and wait for its lead-in, which
 * sets the blocks (experiment_block_size.h). 0, or an exit status after saying why (then
 * exp_long_run_end still releases what was made). */
int exp_long_run_start(exp_long_run_t *r, const client_opts_t *co, const exp_options_t *o, const exp_config_t *c,
                       const char *label);

/* Read the trainer's new steps. 0, or an exit status after saying why (the trainer ended on its
 * own, or the experiment was interrupted). */
int exp_long_run_poll(exp_long_run_t *r);

/* The time now, Unix seconds. */
double exp_now(void);

/* Stop the trainer cleanly (it ends after its step under way), read its profile, release the
 * jobs. rc: the caller's status so far; returns it, or this step's failure. */
int exp_long_run_end(exp_long_run_t *r, int rc);

/* The steps read, once the caller is done with them. */
void exp_long_run_free(exp_long_run_t *r);

#endif
