/* experiment_dwell: the host's states in the lead-in; see experiment_dwell.h. */
#include "experiment_dwell.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 5 }; /* steps in the rolling median: one slow step is no state */

static const double TWO_LEVELS = 0.15; /* the levels' least ratio less one: AR noise of a few % stays below */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

exp_dwell_t exp_dwell_measure(const exp_step_t *steps, int n)
{
    exp_dwell_t d = {0};
    if (n < 2 * WINDOW)
        return d;
    d.seconds = steps[n - 1].end - (steps[0].end - steps[0].seconds);
    d.dwell_s = d.seconds;
    int m = n - WINDOW + 1;
    double *rolling = malloc((size_t)m * 2 * sizeof *rolling), *sorted = rolling + m;
    if (!rolling)
        abort();
    for (int i = 0; i < m; i++) {
        double w[WINDOW];
        for (int k = 0; k < WINDOW; k++)
            w[k] = log(steps[i + k].seconds > 0 ? steps[i + k].seconds : 1e-9);
        rolling[i] = median_of(w, WINDOW);
    }
    memcpy(sorted, rolling, (size_t)m * sizeof *sorted);
    qsort(sorted, (size_t)m, sizeof *sorted, compare_doubles);
    double low = sorted[m / 10], high = sorted[m - 1 - m / 10];
    if (high - low >= log1p(TWO_LEVELS)) {
        d.gap = expm1(high - low);
        double quarter = (high - low) / 4;
        int level = 0; /* -1 low, +1 high, 0 not yet known */
        for (int i = 0; i < m; i++) {
            int now = rolling[i] <= low + quarter ? -1 : rolling[i] >= high - quarter ? 1 : 0;
            if (now != 0 && level != 0 && now != level)
                d.switches++;
            if (now != 0)
                level = now;
        }
        d.dwell_s = d.seconds / (d.switches + 1);
    }
    free(rolling);
    return d;
}
