/* experiment_blocks: the blocked design of `cosched experiment` — one long trainer run per
 * placement while the noise setting changes in short blocks. Each noise block has a no-noise
 * partner block right before or after it (the order drawn at random), so drift of the machine
 * between blocks cancels in the pair; a block's figure is the step time of the trainer's steps
 * wholly inside it, less those that began in the first moments after the change (their median, or
 * their mean where a short block keeps only a few); the slowdown is estimated from the pairs' log
 * ratios. Pure functions on step and block times (wall clock, Unix seconds). */
#ifndef COSCHED_EXPERIMENT_BLOCKS_H
#define COSCHED_EXPERIMENT_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "experiment_stats.h"

/* One trainer step: it ran from end - seconds to end. */
typedef struct exp_step {
    double end, seconds;
} exp_step_t;

typedef struct exp_block {
    int setting;       /* 0: no noise; k > 0: the k-th noise setting */
    int pair;          /* the pair it belongs to; its partner has the same pair number */
    double start, end; /* when the noise played it (every noise rank, from the noise's phase lines) */
    double step_s;     /* its figure: the step time of the steps kept in it (exp_block_figure); 0: none */
    int nsteps;        /* steps kept */
    double noise_mbs;  /* the noise's throughput in the block, summed over its ranks; < 0: none */
} exp_block_t;

/* The block order: pairs_each pairs of each of the nsettings noise settings (1 .. nsettings), the
 * settings in a new random order for each round of pairs, each pair's two blocks in random order.
 * Fills out (2 x nsettings x pairs_each blocks; times unset) and returns how many. The same seed
 * gives the same order. */
int exp_blocks_plan(int nsettings, int pairs_each, int first_pair, uint64_t seed, exp_block_t *out);

/* A block's (or a batch's) figure from the times of its n kept steps (sorted for a median): their median
 * from EXP_MEDIAN_STEPS steps on (one slow step moves it not at all), their mean below (a median of
 * three or four steps is a noisier figure than their mean, and the pairs' rank interval already
 * outvotes a block that one slow step spoiled). 0 for none. */
enum { EXP_MEDIAN_STEPS = 9 };
double exp_block_figure(double *times, int n);

/* The figure of the steps that began at least drop seconds after the block's start and ended by
 * its end, into b->step_s and b->nsteps. The steps that begin in the first moments after a change
 * are dropped because they may still see the other setting (a noise's transient: caches refilled,
 * a page cache written back; experiment_block_size.h). */
void exp_block_measure(exp_block_t *b, const exp_step_t *steps, int nsteps, double drop);

/* Whether block b (one of blocks[0..n)) is a figure of the design: it and its partner (the other
 * block of its pair) both kept min_steps steps or more. A block whose partner is not is no figure:
 * the pair is what cancels the machine's drift. */
bool exp_block_paired(const exp_block_t *blocks, int n, const exp_block_t *b, int min_steps);

/* How a setting's pairs (and the guarded run's batches) become a slowdown with its interval. */
typedef enum exp_estimator {
    EXP_ESTIMATOR_HL,   /* Hodges-Lehmann with the Wilcoxon interval (experiment_robust.h): the default */
    EXP_ESTIMATOR_T,    /* the mean log ratio with Student's t: the old one, for comparison */
    EXP_ESTIMATOR_SIGN, /* the median log ratio with the sign-test interval */
} exp_estimator_t;

/* The estimator the experiment uses: Hodges-Lehmann, unless COSCHED_EXPERIMENT_ESTIMATOR says t
 * or sign (read by bench/experiment_design.sh only, to compare them on the same blocks). */
exp_estimator_t exp_estimator(void);

/* What summary.json and the report call an estimator, for pairs and for the guarded run's batches. */
const char *exp_estimator_pairs_method(exp_estimator_t e);
const char *exp_estimator_batches_method(exp_estimator_t e);

/* The slowdown of noise setting `setting` against its partners, by exp_estimator(): from
 * log(noise block's median / its partner's median) over the pairs where both have at least
 * min_steps steps, back through exp. Hodges-Lehmann: valid with 6 pairs or more (the fewest with a
 * 95 % signed-rank interval); with 1 to 5, ci_low .. ci_high is the pairs' range, at its own
 * level. t: valid with 2 or more. *npairs: the pairs used. */
exp_slowdown_t exp_blocks_slowdown(const exp_block_t *blocks, int n, int setting, int min_steps, int *npairs);

/* The same by a given estimator (the coverage harness and the bench compare them). */
exp_slowdown_t exp_blocks_slowdown_by(exp_estimator_t e, const exp_block_t *blocks, int n, int setting, int min_steps,
                                      int *npairs);

/* A slowdown from n log ratios (pairs) by estimator e. */
exp_slowdown_t exp_paired_slowdown(exp_estimator_t e, const double *log_ratios, int n);

/* A slowdown of noisy against quiet (two samples of step times, > 0) by estimator e: the
 * two-sample Hodges-Lehmann shift of the logs with the rank-sum interval, or Welch's t for t. */
exp_slowdown_t exp_unpaired_slowdown(exp_estimator_t e, const double *quiet, int nq, const double *noisy, int nn);

/* Half the interval's width in slowdown points (0.02 = +-2 points); a large number when the
 * interval is not valid. */
double exp_half_width(const exp_slowdown_t *d);

/* Figures (exp_block_figure) of consecutive batches of seconds length over the steps that began
 * in [from, to): the guarded configuration's figures, batched because consecutive steps are
 * correlated. Fills out (at most max) with each batch's figure, batches with fewer than min_steps
 * steps left out; returns how many. */
int exp_batch_figures(const exp_step_t *steps, int nsteps, double from, double to, double seconds, int min_steps,
                      double *out, int max);

/* When a guard's share settled: the first sample i (0, or one where the share changed) after
 * which every later share stays within a factor of two of share[i] or within 0.1 of it — one
 * halving either way, or one give-back: the guard's later probes and give-backs move it less.
 * t[] and share[] are n polls in time order; returns t[i], or t[0] when the share never moved. */
double exp_settle_time(const double *t, const double *share, int n);

#endif
