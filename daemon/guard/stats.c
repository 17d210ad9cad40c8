/* stats: bounded rings of step times and the slowdown estimate. The interval uses the order
 * statistics around each median (binomial, normal approximation), so no resampling is needed
 * on the request path. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int clamp_window(int n)
{
    return n < 1 ? 1 : n > STATS_MAX_WINDOW ? STATS_MAX_WINDOW : n;
}

static void ring_push(double *ring, int *count, int *next, int size, double v)
{
    ring[*next] = v;
    *next = (*next + 1) % size;
    if (*count < size)
        (*count)++;
}

/* The order of values doesn't matter for medians: copy the newest n in any order. */
static int ring_copy(const double *ring, int count, int next, int size, int n, double *out)
{
    if (n > count)
        n = count;
    for (int i = 0; i < n; i++)
        out[i] = ring[((next - 1 - i) % size + size) % size];
    return n;
}

void stats_add(step_stats_t *s, double step_time, bool with_cotenant)
{
    if (!(step_time > 0) || !isfinite(step_time))
        return;
    s->steps_total++;
    s->last = step_time;
    if (with_cotenant)
        s->steps_with_cotenant++;
    else
        ring_push(s->solo, &s->nsolo, &s->solo_next, STATS_MAX_WINDOW, step_time);
    ring_push(s->recent, &s->nrecent, &s->recent_next, STATS_MAX_WINDOW, step_time);
}

void stats_baseline_restart(step_stats_t *s)
{
    s->nsolo = 0;
    s->solo_next = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_median(const double *values, int n)
{
    return stats_summarize(values, n).median;
}

double stats_inflation(const double *values, int n)
{
    if (n < 4)
        return 1;
    double mean = 0, var = 0, cov = 0;
    for (int i = 0; i < n; i++)
        mean += values[i] / n;
    for (int i = 0; i < n; i++) {
        var += (values[i] - mean) * (values[i] - mean);
        if (i > 0)
            cov += (values[i] - mean) * (values[i - 1] - mean);
    }
    double r = var > 0 ? cov / var : 0;
    r = r < 0 ? 0 : r > 0.9 ? 0.9 : r;
    return sqrt((1 + r) / (1 - r));
}

static summary_t summarize(const double *values, int n, double inflation)
{
    summary_t r = {0};
    double v[STATS_MAX_WINDOW]; /* no allocation: the guard summarizes on every step */
    if (n <= 0)
        return r;
    n = clamp_window(n);
    memcpy(v, values, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double half = 1.96 * sqrt((double)n) / 2 * inflation;
    int l = (int)floor(n / 2.0 - half), h = (int)ceil(n / 2.0 + half);
    r.n = n;
    r.lo = v[l < 0 ? 0 : l];
    r.hi = v[h > n - 1 ? n - 1 : h];
    r.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return r;
}

summary_t stats_summarize(const double *values, int n)
{
    return summarize(values, n, 1);
}

summary_t stats_summarize_series(const double *values, int n)
{
    n = n <= 0 ? 0 : clamp_window(n); /* none is none: clamp_window would make it one, read unset */
    return summarize(values, n, stats_inflation(values, n));
}

/* Student's t at 97.5 % for df degrees of freedom (Cornish-Fisher, within 0.5 % from df 3). */
static double t975(int df)
{
    const double z = 1.959964, z3 = z * z * z, z5 = z3 * z * z;
    if (df < 1)
        df = 1;
    return z + (z3 + z) / (4.0 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96.0 * df * df);
}

summary_t stats_summarize_busy(const double *values, int n)
{
    summary_t r = {0};
    double busy[STATS_MAX_WINDOW], mean = 0, var = 0;
    n = n <= 0 ? 0 : clamp_window(n);
    for (int i = 0; i < n; i++) {
        if (!(values[i] > 0))
            return r; /* no such window: the guard never passes one */
        busy[i] = 1 / values[i];
        mean += busy[i] / n;
    }
    if (n < 2)
        return (summary_t){.n = n, .median = n ? values[0] : 0, .lo = n ? values[0] : 0, .hi = n ? values[0] : 0};
    for (int i = 0; i < n; i++)
        var += (busy[i] - mean) * (busy[i] - mean) / (n - 1);
    double f = stats_inflation(busy, n);
    double half = t975(n - 1) * sqrt(var / n) * f;
    r.n = n;
    r.median = 1 / mean;
    r.lo = 1 / (mean + half);
    r.hi = mean - half > mean / 100 ? 1 / (mean - half) : 100 / mean; /* no lower bound on b: a very wide interval */
    return r;
}

summary_t stats_baseline_busy(const step_stats_t *s, int steps)
{
    if (s->explicit_baseline > 0)
        return stats_baseline(s, steps);
    double base[STATS_MAX_WINDOW];
    int n = ring_copy(s->solo, s->nsolo, s->solo_next, STATS_MAX_WINDOW, clamp_window(steps), base);
    return stats_summarize_busy(base, n);
}

summary_t stats_baseline(const step_stats_t *s, int steps)
{
    if (s->explicit_baseline > 0)
        return (
            summary_t){.n = 0, .median = s->explicit_baseline, .lo = s->explicit_baseline, .hi = s->explicit_baseline};
    double base[STATS_MAX_WINDOW];
    int n = ring_copy(s->solo, s->nsolo, s->solo_next, STATS_MAX_WINDOW, clamp_window(steps), base);
    return stats_summarize_series(base, n);
}

summary_t stats_baseline_iid(const step_stats_t *s, int steps)
{
    if (s->explicit_baseline > 0)
        return stats_baseline(s, steps);
    double base[STATS_MAX_WINDOW];
    int n = ring_copy(s->solo, s->nsolo, s->solo_next, STATS_MAX_WINDOW, clamp_window(steps), base);
    return stats_summarize(base, n);
}

/* Relative distance of a bound from the median. */
static double spread(double bound, double median)
{
    return fabs(bound - median) / median;
}

slowdown_t stats_compare(summary_t window, summary_t baseline, bool explicit_baseline)
{
    slowdown_t r = {.baseline_n = baseline.n,
                    .window_n = window.n,
                    .baseline_median = baseline.median,
                    .window_median = window.median};
    r.valid = window.n >= 3 && (explicit_baseline || baseline.n >= 3) && baseline.median > 0 && baseline.lo > 0;
    if (r.valid) {
        /* The two medians' intervals are independent: their relative half-widths add in
         * quadrature (a window low and a baseline high together make the ratio's low end). */
        double ratio = window.median / baseline.median;
        double down = hypot(spread(window.lo, window.median), spread(baseline.hi, baseline.median));
        double up = hypot(spread(window.hi, window.median), spread(baseline.lo, baseline.median));
        r.slowdown = ratio - 1;
        r.ci_low = ratio * (1 - down) - 1;
        r.ci_high = ratio * (1 + up) - 1;
    }
    return r;
}

slowdown_t stats_slowdown(const step_stats_t *s, int baseline_steps, int window_steps)
{
    double win[STATS_MAX_WINDOW];
    int nw = ring_copy(s->recent, s->nrecent, s->recent_next, STATS_MAX_WINDOW, clamp_window(window_steps), win);
    return stats_compare(stats_summarize_series(win, nw), stats_baseline(s, baseline_steps), s->explicit_baseline > 0);
}
