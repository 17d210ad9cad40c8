/* experiment_dwell: how long the host stays at one speed, from the trainer's lead-in. Some hosts
 * (issue 36: a VM on a busy machine; a shared node, turbo and thermal states, a file system
 * client's bursts) run the trainer at one of two speeds and switch every few seconds; a pair of
 * blocks that straddles a switch is spoiled, so the blocks are kept short where it does
 * (experiment_block_size.h). Pure functions on step times. */
#ifndef COSCHED_EXPERIMENT_DWELL_H
#define COSCHED_EXPERIMENT_DWELL_H

#include "experiment_blocks.h"

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

#endif
