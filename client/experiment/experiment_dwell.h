/* experiment_dwell: how long the host stays at one speed, from the trainer's lead-in, and the
 * block length that follows. Some hosts (issue 36: a VM on a busy machine; a shared node, turbo
 * and thermal states, a file system client's bursts) run the trainer at one of two speeds and
 * switch every few seconds; a pair of blocks that straddles a switch is spoiled. Shorter blocks
 * spoil fewer pairs and make more of them: the coverage harness (test_experiment_blocks) shows
 * 20-step blocks giving a Hodges-Lehmann interval about a fifth as wide as 40-step blocks in the
 * same time on such a host, at 95 %. Pure functions on step times. */
#ifndef COSCHED_EXPERIMENT_DWELL_H
#define COSCHED_EXPERIMENT_DWELL_H

#include "experiment_blocks.h"

enum {
    EXP_BLOCK_STEPS = 40,       /* a block on a steady host */
    EXP_BLOCK_STEPS_SHORT = 20, /* the fewest on a host that switches: the harness's shortest tested */
};

typedef struct exp_dwell {
    int switches;   /* level switches seen in the lead-in */
    double seconds; /* the lead-in's span */
    double dwell_s; /* seconds per state: seconds / (switches + 1); a lower bound when none */
    double gap;     /* the two levels' ratio less one (0.35: 35 % apart); 0 when one level */
} exp_dwell_t;

/* The lead-in's states: the rolling median of 5 steps' log times, its 10th and 90th percentiles
 * as the two levels when they are 15 % or more apart, and a switch each time the rolling median
 * crosses from the lower quarter of the gap to the upper quarter or back (a hysteresis, so that
 * noise at the midpoint is no switch). steps[0..n) in time order. */
exp_dwell_t exp_dwell_measure(const exp_step_t *steps, int n);

/* What the blocks are for: the seconds they have and the pairs they should make there (Table II's
 * one noise setting: EXP_PAIRS_WANTED; the sweep: that for half its settings; pairs 0, as the
 * guarded run asks: no goal). */
typedef struct exp_block_goal {
    double seconds;
    int pairs;
} exp_block_goal_t;

/* The exact signed-rank interval on 6 pairs is their whole range, so one pair that straddles a
 * switch sets a bound; on 20 it runs from the 53rd smallest to the 53rd largest of 210 pair
 * averages, and several spoiled pairs are outvoted. In the same seconds, 12 pairs of 20 steps
 * give a narrower interval than 6 of 40 on a steady host as well (test_experiment_blocks). */
enum { EXP_PAIRS_WANTED = 20 };

/* A block's steps for the host: EXP_BLOCK_STEPS on a steady one; where it switches, short enough
 * that a pair (two blocks) takes at most an eighth of a state's dwell; and short enough that the
 * goal's pairs fit its seconds (NULL: none); never below EXP_BLOCK_STEPS_SHORT. step_s: the
 * median step time. */
int exp_dwell_block_steps(const exp_dwell_t *d, double step_s, const exp_block_goal_t *goal);

#endif
