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

/* The last n values of a ring in chronological order don't matter for medians: copy any order. */
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_median(const double *values, int n)
{
    if (n <= 0)
        return 0;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return 0;
    memcpy(v, values, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    free(v);
    return m;
}

/* Sorted copy plus the ~95 % order-statistic bounds of the median. */
static double median_with_bounds(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double half = 1.96 * sqrt((double)n) / 2;
    int l = (int)floor(n / 2.0 - half), h = (int)ceil(n / 2.0 + half);
    *lo = v[l < 0 ? 0 : l];
    *hi = v[h > n - 1 ? n - 1 : h];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

slowdown_t stats_slowdown(const step_stats_t *s, int baseline_steps, int window_steps)
{
    slowdown_t r = {0};
    double base[STATS_MAX_WINDOW], win[STATS_MAX_WINDOW];
    int nb = ring_copy(s->solo, s->nsolo, s->solo_next, STATS_MAX_WINDOW, clamp_window(baseline_steps), base);
    int nw = ring_copy(s->recent, s->nrecent, s->recent_next, STATS_MAX_WINDOW, clamp_window(window_steps), win);
    double blo = 0, bhi = 0, wlo = 0, whi = 0;
    r.window_n = nw;
    if (nw > 0)
        r.window_median = median_with_bounds(win, nw, &wlo, &whi);
    if (s->explicit_baseline > 0) {
        r.baseline_n = 0;
        r.baseline_median = blo = bhi = s->explicit_baseline;
    } else if (nb > 0) {
        r.baseline_n = nb;
        r.baseline_median = median_with_bounds(base, nb, &blo, &bhi);
    }
    r.valid = nw >= 3 && (s->explicit_baseline > 0 || nb >= 3) && r.baseline_median > 0 && blo > 0;
    if (r.valid) {
        r.slowdown = r.window_median / r.baseline_median - 1;
        r.ci_low = wlo / bhi - 1;
        r.ci_high = whi / blo - 1;
    }
    return r;
}
