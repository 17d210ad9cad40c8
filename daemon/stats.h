/* stats: a trainer's step times and the slowdown co-tenants cause. Baseline = steps taken while
 * no co-tenant ran (or a value set explicitly); slowdown = median(recent) / median(baseline) - 1. */
#ifndef COSCHED_STATS_H
#define COSCHED_STATS_H

#include <stdbool.h>

#define STATS_MAX_WINDOW 1024

typedef struct step_stats {
    double solo[STATS_MAX_WINDOW];   /* most recent steps taken with no co-tenant run active */
    int nsolo, solo_next;
    double recent[STATS_MAX_WINDOW]; /* most recent steps, whatever ran beside them */
    int nrecent, recent_next;
    unsigned long steps_total, steps_with_cotenant;
    double explicit_baseline;        /* > 0 when set by the user */
    double last;
} step_stats_t;

typedef struct slowdown {
    int baseline_n, window_n;
    double baseline_median, window_median;
    double slowdown, ci_low, ci_high; /* fraction (0.018 = 1.8 %) and its ~95 % interval */
    bool valid;                       /* enough samples on both sides */
} slowdown_t;

/* Record one step; with_cotenant says whether a co-tenant run was active. The rings keep the
 * last STATS_MAX_WINDOW steps; stats_slowdown takes the window sizes. */
void stats_add(step_stats_t *s, double step_time, bool with_cotenant);

/* Median of the baseline and of the recent window, the slowdown and a distribution-free ~95 %
 * confidence interval (order statistics of each median, combined conservatively). */
slowdown_t stats_slowdown(const step_stats_t *s, int baseline_steps, int window_steps);

/* Median of n values (copied, not modified). */
double stats_median(const double *values, int n);

#endif
