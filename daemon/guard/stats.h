/* stats: a trainer's step times and the slowdown co-tenants cause. Baseline = steps taken while
 * no co-tenant ran (or a value set explicitly); slowdown = median(recent) / median(baseline) - 1. */
#ifndef COSCHED_STATS_H
#define COSCHED_STATS_H

#include <stdbool.h>

#define STATS_MAX_WINDOW 1024

typedef struct step_stats {
    double solo[STATS_MAX_WINDOW]; /* the current baseline: steps since it was (re)started that no co-tenant slowed */
    int nsolo, solo_next;
    double recent[STATS_MAX_WINDOW]; /* most recent steps, whatever ran beside them */
    int nrecent, recent_next;
    unsigned long steps_total, steps_with_cotenant;
    double explicit_baseline; /* > 0 when set by the user */
    double last;
} step_stats_t;

/* A median with its distribution-free ~95 % interval (order statistics around it). */
typedef struct summary {
    int n;
    double median, lo, hi;
} summary_t;

typedef struct slowdown {
    int baseline_n, window_n;
    double baseline_median, window_median;
    double slowdown, ci_low, ci_high; /* fraction (0.018 = 1.8 %) and its ~95 % interval */
    bool valid;                       /* enough samples on both sides */
} slowdown_t;

/* Record one step; with_cotenant says whether a co-tenant may have slowed it (then it does not
 * join the baseline). The rings keep the last STATS_MAX_WINDOW steps. */
void stats_add(step_stats_t *s, double step_time, bool with_cotenant);

/* Forget the baseline's samples, so that the next solo steps make a fresh one (drift). */
void stats_baseline_restart(step_stats_t *s);

/* Median and ~95 % bounds of n values (copied, not modified); n = 0 gives zeros. */
summary_t stats_summarize(const double *values, int n);

/* The same for n values in the order they were taken (newest first or last): step times are
 * autocorrelated (data-loader queues, host noise), so the bounds are widened by the variance
 * inflation of an AR(1) process with the series' own lag-1 autocorrelation r,
 * sqrt((1 + r) / (1 - r)), r taken within 0..0.9 (n / that squared is the effective sample size). */
summary_t stats_summarize_series(const double *values, int n);

/* GPU windows, as the guard sees them (values 1/b, in the order taken): the centre is 1 / the mean
 * busy fraction b — GPU time over wall time across the windows, the time per unit of GPU work — and
 * the bounds come from the mean's standard error, widened for the series' lag-1 autocorrelation as
 * above, with Student's t for few windows. A mean of bounded fractions is far tighter than a
 * median of their inverses, whose skew and order statistics a window's swing widens. */
summary_t stats_summarize_busy(const double *values, int n);

/* That factor for a series: 1 for independent steps, up to 4.36. */
double stats_inflation(const double *values, int n);

/* The baseline: the explicit value (n = 0, bounds equal to it) or the last `steps` solo steps, its
 * interval allowing for their autocorrelation (stats_summarize_series). */
summary_t stats_baseline(const step_stats_t *s, int steps);

/* The same for GPU windows (stats_summarize_busy). */
summary_t stats_baseline_busy(const step_stats_t *s, int steps);

/* The same without allowing for autocorrelation (the guard's first version). */
summary_t stats_baseline_iid(const step_stats_t *s, int steps);

/* window vs baseline: the slowdown and its ~95 % interval, the two medians' relative half-widths
 * combined in quadrature. valid when both sides have 3 samples (or the baseline is explicit). */
slowdown_t stats_compare(summary_t window, summary_t baseline, bool explicit_baseline);

/* The last `window_steps` steps against the baseline. */
slowdown_t stats_slowdown(const step_stats_t *s, int baseline_steps, int window_steps);

/* Median of n values (copied, not modified). */
double stats_median(const double *values, int n);

#endif
