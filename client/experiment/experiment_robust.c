/* experiment_robust: Hodges-Lehmann estimates with Wilcoxon intervals, and the median with the
 * sign-test interval, for `cosched experiment`; see experiment_robust.h for the method. */
#include "experiment_robust.h"

#include <math.h>
#include <stdlib.h>

enum {
    SIGNED_RANK_EXACT_MAX = 25, /* values; above, the normal approximation is within a rank or so */
    RANK_SUM_EXACT_MAX = 50,    /* m + n; C(50, 25) counts are still whole in a double */
};

static const double ALPHA_TAIL = 0.025; /* each side of a 95 % interval */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *alloc_doubles(long n)
{
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p)
        abort();
    return p;
}

static double median_sorted(const double *v, long n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double normal_cdf(double z)
{
    return 0.5 * erfc(-z / sqrt(2));
}

double exp_signed_rank_cdf(int n, int t)
{
    if (t < 0)
        return 0;
    int most = n * (n + 1) / 2;
    if (t >= most)
        return 1;
    /* ways[s]: the sign patterns of ranks 1..i whose positive ranks sum to s; rank i adds itself
     * to each pattern of 1..i-1 or not */
    double *ways = calloc((size_t)most + 1, sizeof *ways);
    if (!ways)
        abort();
    ways[0] = 1;
    for (int i = 1; i <= n; i++)
        for (int s = i * (i + 1) / 2; s >= i; s--)
            ways[s] += ways[s - i];
    double below = 0;
    for (int s = 0; s <= t; s++)
        below += ways[s];
    free(ways);
    return below / ldexp(1, n);
}

double exp_rank_sum_cdf(int m, int n, int u)
{
    if (u < 0)
        return 0;
    if (u >= m * n)
        return 1;
    /* the counts of U are the coefficients of the Gaussian binomial [m+n choose m]_q, the product
     * over i = 1..m of (1 - q^(n+i)) / (1 - q^i); every partial product is a polynomial */
    int most = m * n;
    double *c = calloc((size_t)most + 1, sizeof *c);
    if (!c)
        abort();
    c[0] = 1;
    for (int i = 1; i <= m; i++) {
        for (int s = most; s >= n + i; s--) /* times (1 - q^(n+i)) */
            c[s] -= c[s - n - i];
        for (int s = i; s <= most; s++) /* over (1 - q^i) */
            c[s] += c[s - i];
    }
    double below = 0, all = 0;
    for (int s = 0; s <= most; s++) {
        all += c[s];
        if (s <= u)
            below += c[s];
    }
    free(c);
    return below / all;
}

/* The interval of order statistics k and count + 1 - k (1-based) of `count` sorted values, with
 * k the largest whose tail P(stat <= k - 1) is within ALPHA_TAIL; tail(k - 1) gives it. */
typedef double (*tail_fn)(int below, const void *arg);

static exp_robust_t order_interval(const double *sorted, long count, tail_fn tail, const void *arg)
{
    exp_robust_t r = {.estimate = median_sorted(sorted, count)};
    long k = 1;
    while (k < count / 2 && tail((int)k, arg) <= ALPHA_TAIL) /* may k + 1 be taken? */
        k++;
    r.valid = tail((int)k - 1, arg) <= ALPHA_TAIL;
    r.level = 1 - 2 * tail((int)k - 1, arg);
    r.low = sorted[k - 1];
    r.high = sorted[count - k];
    return r;
}

typedef struct sizes {
    int m, n;
} sizes_t;

static double signed_rank_tail(int t, const void *arg)
{
    int n = ((const sizes_t *)arg)->n;
    if (n <= SIGNED_RANK_EXACT_MAX)
        return exp_signed_rank_cdf(n, t);
    double mean = n * (n + 1) / 4.0, sd = sqrt(n * (n + 1.0) * (2 * n + 1) / 24);
    return normal_cdf((t + 0.5 - mean) / sd);
}

static double rank_sum_tail(int u, const void *arg)
{
    const sizes_t *s = arg;
    if (s->m + s->n <= RANK_SUM_EXACT_MAX)
        return exp_rank_sum_cdf(s->m, s->n, u);
    double mean = s->m * (double)s->n / 2, sd = sqrt(s->m * (double)s->n * (s->m + s->n + 1) / 12);
    return normal_cdf((u + 0.5 - mean) / sd);
}

static double sign_tail(int k, const void *arg)
{
    int n = ((const sizes_t *)arg)->n;
    double below = 0;
    for (int j = 0; j <= k && j <= n; j++)
        below += exp(lgamma(n + 1.0) - lgamma(j + 1.0) - lgamma(n - j + 1.0) - n * log(2.0));
    return below;
}

/* The spread of the Walsh averages about the estimate that their rank statistic shows: zeta =
 * the variance over i of the share of j with (x_i + x_j) / 2 above it; 1/12 when x is symmetric,
 * which is what the signed-rank distribution assumes. A skewed x, such as a noise whose effect is
 * bimodal (nothing in some blocks, 30-50 % in most), has more, and the symmetric interval is too
 * narrow for it (coverage 0.917 for 0.95 on 362 such pairs: test_experiment_block_time). */
static double walsh_spread(const double *x, int n, double estimate)
{
    double *sorted = alloc_doubles(n), sum = 0, squares = 0;
    for (int i = 0; i < n; i++)
        sorted[i] = x[i];
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    for (int i = 0; i < n; i++) {
        double bound = 2 * estimate - sorted[i];
        int lo = 0, hi = n; /* the first j with sorted[j] > bound */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] > bound)
                hi = mid;
            else
                lo = mid + 1;
        }
        double share = (double)(n - lo) / n;
        sum += share;
        squares += share * share;
    }
    free(sorted);
    double mean = sum / n;
    return (squares - n * mean * mean) / (n - 1);
}

/* Widen a valid interval by the square root of the skew's variance over the symmetric one's (never
 * narrower): the distance of its order statistics from the middle, scaled. From SKEW_MIN values:
 * below, the spread's own noise would widen symmetric intervals too (coverage 0.99 for 0.95 on 24
 * pairs), and one wild pair would pass for skew; and the symmetric interval's shortfall on skewed
 * values grows with n (0.938 on 99 bimodal pairs, 0.917 on 362). */
enum { SKEW_MIN = 100 };

static void allow_for_skew(exp_robust_t *r, const double *walsh, long count, const double *x, int n)
{
    if (!r->valid || n < SKEW_MIN)
        return;
    double factor = sqrt(fmax(1, 12 * walsh_spread(x, n, r->estimate)));
    if (factor <= 1)
        return;
    long k = 1; /* the interval's lower order statistic, found again */
    while (k < count && walsh[k - 1] < r->low)
        k++;
    double middle = (count + 1) / 2.0;
    long wider = (long)floor(middle - (middle - k) * factor);
    if (wider < 1)
        wider = 1;
    r->low = walsh[wider - 1];
    r->high = walsh[count - wider];
}

exp_robust_t exp_signed_rank(const double *x, int n)
{
    if (n <= 0)
        return (exp_robust_t){0};
    long count = (long)n * (n + 1) / 2, k = 0;
    double *walsh = alloc_doubles(count);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++)
            walsh[k++] = (x[i] + x[j]) / 2;
    qsort(walsh, (size_t)count, sizeof *walsh, compare_doubles);
    sizes_t s = {.n = n};
    exp_robust_t r = order_interval(walsh, count, signed_rank_tail, &s);
    allow_for_skew(&r, walsh, count, x, n);
    r.n = n;
    free(walsh);
    return r;
}

exp_robust_t exp_rank_sum(const double *x, int m, const double *y, int n)
{
    if (m <= 0 || n <= 0)
        return (exp_robust_t){0};
    long count = (long)m * n, k = 0;
    double *diff = alloc_doubles(count);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            diff[k++] = y[j] - x[i];
    qsort(diff, (size_t)count, sizeof *diff, compare_doubles);
    sizes_t s = {.m = m, .n = n};
    exp_robust_t r = order_interval(diff, count, rank_sum_tail, &s);
    r.n = m + n;
    free(diff);
    return r;
}

exp_robust_t exp_sign_median(const double *x, int n)
{
    if (n <= 0)
        return (exp_robust_t){0};
    double *sorted = alloc_doubles(n);
    for (int i = 0; i < n; i++)
        sorted[i] = x[i];
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    sizes_t s = {.n = n};
    exp_robust_t r = order_interval(sorted, n, sign_tail, &s);
    r.n = n;
    free(sorted);
    return r;
}
