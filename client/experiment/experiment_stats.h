/* experiment_stats: the figures of `cosched experiment` — the study's Table II columns (MIN,
 * average, standard deviation of the trainer's run times) and a configuration's slowdown against
 * its no-noise baseline with a 95 % confidence interval. Pure functions on arrays of seconds. */
#ifndef COSCHED_EXPERIMENT_STATS_H
#define COSCHED_EXPERIMENT_STATS_H

#include <stdbool.h>

/* One configuration's repetitions, as the study's table summarises them (plus what a box plot
 * needs). sd is the sample standard deviation (n - 1); 0 for one repetition. */
typedef struct exp_summary {
    int n;
    double min, max, mean, sd, median, q1, q3;
} exp_summary_t;

/* Slowdown of a configuration against its baseline: the ratio of the geometric means of the
 * run times, minus one, with a 95 % interval from Welch's t on the logarithms (run times are
 * positive and their spread grows with their size). valid when both sides have 2 or more
 * repetitions; with fewer, only slowdown is set. */
typedef struct exp_slowdown {
    double slowdown, ci_low, ci_high; /* fractions: 0.018 = 1.8 % */
    double df;                        /* Welch-Satterthwaite degrees of freedom (t intervals) */
    double level;                     /* the interval's actual coverage (rank intervals are discrete) */
    bool valid;
} exp_slowdown_t;

/* Summary of n run times (copied, not modified); n = 0 gives zeros. */
exp_summary_t exp_summarize(const double *seconds, int n);

/* noisy against baseline; every time must be > 0. */
exp_slowdown_t exp_slowdown(const double *baseline, int nb, const double *noisy, int nn);

/* The 0.975 quantile of Student's t with df degrees of freedom (df >= 1, not necessarily whole;
 * below 1, that of 1). */
double exp_t975(double df);

#endif
