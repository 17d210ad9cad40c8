/* experiment_robust: rank-based estimates and 95 % intervals for `cosched experiment`'s pairs and
 * batches, built for a host whose speed jumps between states: a pair that straddles a jump is one
 * wild value among many, and a rank moves no further for being wilder (Student's t on means
 * counts it in full). Pure functions on arrays of log ratios or log step times.
 *
 * - exp_signed_rank: the Hodges-Lehmann estimate (the median of the n(n+1)/2 Walsh averages
 *   (x_i + x_j) / 2, i <= j) with the Wilcoxon signed-rank interval (order statistics of the
 *   Walsh averages); exact for n <= 25 from the signed-rank distribution, counted by recursion,
 *   the normal approximation above. That distribution assumes x symmetric about its centre; from
 *   100 values on, the interval is widened (never narrowed) by the spread of the Walsh averages the
 *   data show, which a skewed x (a bimodal noise effect) has more of.
 * - exp_rank_sum: the two-sample Hodges-Lehmann shift (the median of all y_j - x_i) with the
 *   Wilcoxon rank-sum (Mann-Whitney) interval; exact for m + n <= 50, normal above.
 * - exp_sign_median: the median with the sign-test interval (order statistics of x).
 *
 * The intervals are of order statistics, so their level is discrete: the widest one whose level
 * is 95 % or more. When none reaches 95 % (signed rank: fewer than 6 values; sign test: fewer
 * than 6; rank sum: m = n = 3 and smaller) the widest there is (min .. max) is given with its own
 * level, and valid is false. */
#ifndef COSCHED_EXPERIMENT_ROBUST_H
#define COSCHED_EXPERIMENT_ROBUST_H

#include <stdbool.h>

typedef struct exp_robust {
    double estimate, low, high; /* in the values' units (log ratios) */
    double level;               /* the interval's actual coverage: 0.95 or a little more; less when !valid */
    int n;                      /* the values used */
    bool valid;                 /* a 95 % interval exists */
} exp_robust_t;

/* Hodges-Lehmann location of x[0..n) with the signed-rank interval; n = 0: all zero. */
exp_robust_t exp_signed_rank(const double *x, int n);

/* Hodges-Lehmann shift of y against x (y - x) with the rank-sum interval; an empty side: all zero. */
exp_robust_t exp_rank_sum(const double *x, int m, const double *y, int n);

/* Median of x[0..n) with the sign-test interval. */
exp_robust_t exp_sign_median(const double *x, int n);

/* P(T <= t) for the signed-rank statistic T of n values (the count of the 2^n sign patterns with
 * rank sum t or less, over 2^n); exact, n <= 60. */
double exp_signed_rank_cdf(int n, int t);

/* P(U <= u) for the Mann-Whitney statistic of samples of m and n; exact, m + n <= 50. */
double exp_rank_sum_cdf(int m, int n, int u);

#endif
