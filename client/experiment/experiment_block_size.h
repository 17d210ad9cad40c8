/* experiment_block_size: how long the blocked design's blocks are, from time rather than a count
 * of steps (issue 43): as short as the noise's transient after a change (measured per noise kind
 * by bench/noise_transient.py) and a few whole steps allow. The coverage harness
 * (tests/client/test_experiment_block_time.c) shows why: at step times of 25 ms to 2 s, on a
 * steady host and one that switches speed, beside a noise whose effect is steady or bimodal per
 * block (the project's VM: some noisy blocks cost nothing, most 30-50 %), the shortest blocks gave
 * the narrowest intervals at every --time, at the stated coverage; longer blocks bought fewer
 * pairs, and where the effect varies from block to block only more pairs narrow the interval.
 * The old rule (20 to 40 steps) made 7 pairs of 2.6 s blocks of a 130 ms step in a placement's
 * 45 s, where these make 30. Also: how long a precision would take. Pure functions. */
#ifndef COSCHED_EXPERIMENT_BLOCK_SIZE_H
#define COSCHED_EXPERIMENT_BLOCK_SIZE_H

enum {
    EXP_BLOCK_FEWEST_STEPS = 4,  /* the whole steps a block keeps, on average */
    EXP_BLOCK_STEADY_STEPS = 40, /* the old rule's block on a steady host (the sweep's rounds are sized by it) */
    EXP_PRECISE_PAIRS = 20,      /* a placement is never called precise on fewer: a few pairs that happen
                                    to agree (a few seconds of short blocks) would stop it early */
};

/* The shortest block of Table II: the noise's phase lines time a change to a few ms. */
#define EXP_BLOCK_SHORTEST_S 0.2
/* ... of the sweep: its intensities below 1 are duty cycles of 0.1 s periods; five to a block. */
#define EXP_BLOCK_SHORTEST_DUTY_S 0.5

typedef struct exp_block_size {
    double seconds; /* a block's length */
    double drop;    /* the first seconds after each change, whose steps are not kept */
    int steps;      /* the whole steps it keeps, about */
} exp_block_size_t;

/* The blocks for a trainer of step_s seconds a step beside a noise whose transient is settle_s
 * (exp_noise_settle_seconds), never shorter than shortest_s: the drop, then EXP_BLOCK_FEWEST_STEPS
 * whole steps (a step begins at a random moment after the drop: a block keeps
 * (seconds - drop) / step_s - 1 of them). */
exp_block_size_t exp_block_size(double step_s, double settle_s, double shortest_s);

/* The seconds after a change of the noise before a trainer's steps show it, per --noise kind
 * (memory, cpu, io, network; bench/noise_transient.py measured them); unknown kinds get io's. */
double exp_noise_settle_seconds(const char *noise);

/* The seconds of blocks a placement would need to reach +-target (a fraction) from +-half_width on
 * npairs pairs of blocks of block_s seconds each: the half width falls as one over the root of the
 * pairs, and a placement is precise on EXP_PRECISE_PAIRS or more. 0 when it is there already; a
 * negative number when it cannot be said (no interval yet). */
double exp_seconds_to_precision(double half_width, int npairs, double block_s, double target);

#endif
