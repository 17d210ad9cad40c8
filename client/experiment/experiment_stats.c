/* experiment_stats: Table II's summary columns and slowdowns with 95 % intervals for
 * `cosched experiment`. Pure arithmetic on run times; see experiment_stats.h for the method. */
#include "experiment_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile p of sorted values, linear between order statistics (the R-7 / numpy default, so a
 * box plot drawn from these figures matches what people get elsewhere). */
static double quantile_sorted(const double *sorted, int n, double p)
{
    double h = (n - 1) * p;
    int below = (int)floor(h);
    if (below + 1 >= n)
        return sorted[n - 1];
    return sorted[below] + (h - below) * (sorted[below + 1] - sorted[below]);
}

exp_summary_t exp_summarize(const double *seconds, int n)
{
    exp_summary_t s = {.n = n > 0 ? n : 0};
    if (n <= 0)
        return s;
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted)
        abort();
    memcpy(sorted, seconds, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += sorted[i];
    s.mean = sum / n;
    double squares = 0;
    for (int i = 0; i < n; i++)
        squares += (sorted[i] - s.mean) * (sorted[i] - s.mean);
    s.sd = n > 1 ? sqrt(squares / (n - 1)) : 0;
    s.min = sorted[0];
    s.max = sorted[n - 1];
    s.median = quantile_sorted(sorted, n, 0.5);
    s.q1 = quantile_sorted(sorted, n, 0.25);
    s.q3 = quantile_sorted(sorted, n, 0.75);
    free(sorted);
    return s;
}

/* The regularized incomplete beta function I_x(a, b), by its continued fraction evaluated with
 * the modified Lentz method; the fraction converges fast for x < (a + 1) / (a + b + 2), and the
 * symmetry I_x(a, b) = 1 - I_(1-x)(b, a) covers the rest. */
static double incomplete_beta(double x, double a, double b)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    if (x > (a + 1) / (a + b + 2))
        return 1 - incomplete_beta(1 - x, b, a);
    const double tiny = 1e-300;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x)) / a;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = 1 / (fabs(d) < tiny ? tiny : d);
    double fraction = d;
    for (int m = 1; m <= 300; m++) {
        /* the even step, then the odd step, of the fraction's terms */
        for (int odd = 0; odd <= 1; odd++) {
            double term = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                              : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + term * d;
            d = 1 / (fabs(d) < tiny ? tiny : d);
            c = 1 + term / c;
            if (fabs(c) < tiny)
                c = tiny;
            fraction *= c * d;
            if (odd && fabs(c * d - 1) < 1e-12)
                return front * fraction;
        }
    }
    return front * fraction;
}

/* The two-sided 5 % point of Student's t: P(|T| > t) = I_(df/(df+t^2))(df/2, 1/2) = 0.05, solved
 * by bisection (the tail falls as t grows). */
double exp_t975(double df)
{
    if (!(df >= 1))
        df = 1;
    double lo = 0, hi = 64; /* t(0.975, 1) = 12.7 */
    for (int i = 0; i < 100; i++) {
        double t = (lo + hi) / 2;
        if (incomplete_beta(df / (df + t * t), df / 2, 0.5) > 0.05)
            lo = t;
        else
            hi = t;
    }
    return (lo + hi) / 2;
}

typedef struct log_moments {
    double mean, var; /* of log(seconds); var with n - 1 */
} log_moments_t;

static log_moments_t log_moments(const double *seconds, int n)
{
    log_moments_t m = {0, 0};
    for (int i = 0; i < n; i++)
        m.mean += log(seconds[i]);
    m.mean /= n;
    for (int i = 0; i < n; i++)
        m.var += (log(seconds[i]) - m.mean) * (log(seconds[i]) - m.mean);
    m.var = n > 1 ? m.var / (n - 1) : 0;
    return m;
}

exp_slowdown_t exp_slowdown(const double *baseline, int nb, const double *noisy, int nn)
{
    exp_slowdown_t r = {0};
    if (nb < 1 || nn < 1)
        return r;
    log_moments_t b = log_moments(baseline, nb), x = log_moments(noisy, nn);
    double diff = x.mean - b.mean;
    r.slowdown = r.ci_low = r.ci_high = expm1(diff);
    if (nb < 2 || nn < 2)
        return r;
    double vb = b.var / nb, vx = x.var / nn, se2 = vb + vx;
    r.valid = true;
    r.level = 0.95;
    if (se2 <= 0) { /* identical repetitions on both sides: no spread to widen the interval */
        r.df = nb + nn - 2;
        return r;
    }
    r.df = se2 * se2 / (vb * vb / (nb - 1) + vx * vx / (nn - 1));
    double half = exp_t975(r.df) * sqrt(se2);
    r.ci_low = expm1(diff - half);
    r.ci_high = expm1(diff + half);
    return r;
}
