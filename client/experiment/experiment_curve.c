/* experiment_curve: the sweep's isotonic curve with its bootstrap band, the answer it gives and
 * the settings to play next; see experiment_curve.h for the method. */
#include "experiment_curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void exp_curve_pav(const double *y, const double *w, int n, double *out)
{
    /* blocks of pooled values, each its weighted mean, its weight and how many points it spans */
    double mean[EXP_CURVE_MAX_SETTINGS], weight[EXP_CURVE_MAX_SETTINGS];
    int span[EXP_CURVE_MAX_SETTINGS], nblocks = 0;
    for (int i = 0; i < n && i < EXP_CURVE_MAX_SETTINGS; i++) {
        mean[nblocks] = y[i];
        weight[nblocks] = w[i];
        span[nblocks++] = 1;
        while (nblocks > 1 && mean[nblocks - 2] > mean[nblocks - 1]) { /* a violator: pool it with the block before */
            int a = nblocks - 2, b = nblocks - 1;
            double total = weight[a] + weight[b];
            mean[a] = (mean[a] * weight[a] + mean[b] * weight[b]) / total;
            weight[a] = total;
            span[a] += span[b];
            nblocks--;
        }
    }
    for (int k = 0, i = 0; k < nblocks; k++)
        for (int j = 0; j < span[k]; j++)
            out[i++] = mean[k];
}

/* splitmix64: a resampling that is the same on every machine (rand() is not) */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of values[0 .. n), which it sorts. */
static double median_of(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* The q quantile of sorted[0 .. n), linear between neighbours. */
static double quantile_of(const double *sorted, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)floor(at);
    if (i >= n - 1)
        return sorted[n - 1];
    return sorted[i] + (at - i) * (sorted[i + 1] - sorted[i]);
}

/* The isotonic fit (log ratios) of the fitted settings listed in which[0 .. k), each setting's
 * centre the median of its pairs, or, with a random state, of its pairs resampled. */
static void fit_once(const exp_curve_pairs_t *p, const int *which, int k, uint64_t *random, double *scratch,
                     double *out)
{
    double centre[EXP_CURVE_MAX_SETTINGS], weight[EXP_CURVE_MAX_SETTINGS];
    for (int j = 0; j < k; j++) {
        int s = which[j], n = p->n[s];
        for (int i = 0; i < n; i++)
            scratch[i] = p->ratios[s][random ? next_random(random) % (uint64_t)n : (uint64_t)i];
        centre[j] = median_of(scratch, n);
        weight[j] = n;
    }
    exp_curve_pav(centre, weight, k, out);
}

/* Where a setting has no band of its own: no lower than the nearest fitted one below, no higher
 * than the nearest fitted one above (the curve does not fall). */
static void bound_by_neighbours(exp_curve_t *c)
{
    for (int s = 1; s <= c->nsettings; s++) {
        if (c->fitted[s])
            continue;
        c->low[s] = -INFINITY;
        c->high[s] = INFINITY;
        for (int b = s - 1; b >= 1; b--)
            if (c->fitted[b]) {
                c->low[s] = c->low[b];
                break;
            }
        for (int a = s + 1; a <= c->nsettings; a++)
            if (c->fitted[a]) {
                c->high[s] = c->high[a];
                break;
            }
    }
}

void exp_curve_fit(const exp_curve_pairs_t *p, int nboot, uint64_t seed, exp_curve_t *c)
{
    memset(c, 0, sizeof *c);
    c->nsettings = p->nsettings < EXP_CURVE_MAX_SETTINGS ? p->nsettings : EXP_CURVE_MAX_SETTINGS;
    int which[EXP_CURVE_MAX_SETTINGS], k = 0, most = 1;
    for (int s = 1; s <= c->nsettings; s++) {
        c->pairs[s] = p->n[s];
        c->fitted[s] = p->n[s] >= EXP_CURVE_MIN_PAIRS;
        c->fit[s] = NAN;
        if (c->fitted[s]) {
            which[k++] = s;
            most = p->n[s] > most ? p->n[s] : most;
        }
    }
    double *scratch = malloc((size_t)most * sizeof *scratch);
    double *boot = malloc((size_t)(nboot > 0 ? nboot : 1) * EXP_CURVE_MAX_SETTINGS * sizeof *boot);
    if (!scratch || !boot)
        abort();
    double once[EXP_CURVE_MAX_SETTINGS];
    fit_once(p, which, k, NULL, scratch, once);
    uint64_t random = seed;
    for (int b = 0; b < nboot; b++)
        fit_once(p, which, k, &random, scratch, boot + (size_t)b * EXP_CURVE_MAX_SETTINGS);
    double *column = scratch = realloc(scratch, (size_t)(nboot > 0 ? nboot : 1) * sizeof *column);
    if (!column)
        abort();
    for (int j = 0; j < k; j++) {
        int s = which[j];
        c->fit[s] = expm1(once[j]);
        for (int b = 0; b < nboot; b++)
            column[b] = boot[(size_t)b * EXP_CURVE_MAX_SETTINGS + j];
        qsort(column, (size_t)nboot, sizeof *column, compare_doubles);
        c->low[s] = nboot > 0 ? expm1(quantile_of(column, nboot, 0.025)) : c->fit[s];
        c->high[s] = nboot > 0 ? expm1(quantile_of(column, nboot, 0.975)) : c->fit[s];
    }
    free(column);
    free(boot);
    bound_by_neighbours(c);
}

/* The fitted setting whose band stands for s: s itself, else the nearest fitted one in direction
 * step (+1: above, -1: below); 0 when none. */
static int witness_of(const exp_curve_t *c, int s, int step)
{
    for (; s >= 1 && s <= c->nsettings; s += step)
        if (c->fitted[s])
            return s;
    return 0;
}

static bool proven_within(const exp_curve_t *c, int s, double budget)
{
    int w = witness_of(c, s, +1);
    return w && c->pairs[w] >= EXP_CURVE_PROOF_PAIRS && c->high[s] <= budget;
}

static bool proven_over(const exp_curve_t *c, int s, double budget)
{
    int w = witness_of(c, s, -1);
    return w && c->pairs[w] >= EXP_CURVE_PROOF_PAIRS && c->low[s] > budget;
}

exp_curve_answer_t exp_curve_answer(const exp_curve_t *c, double budget)
{
    exp_curve_answer_t a = {.safe = 0, .over = c->nsettings + 1};
    for (int s = 1; s <= c->nsettings; s++)
        if (proven_within(c, s, budget))
            a.safe = s;
    for (int s = c->nsettings; s > a.safe; s--)
        if (proven_over(c, s, budget))
            a.over = s;
    a.kind = a.over == 1 ? EXP_ANSWER_NONE : a.over == a.safe + 1 ? EXP_ANSWER_SETTING : EXP_ANSWER_BRACKET;
    return a;
}

double exp_curve_half_width(const exp_curve_t *c, int s)
{
    return (c->high[s] - c->low[s]) / 2;
}

double exp_curve_precision(const exp_curve_t *c, double budget)
{
    exp_curve_answer_t a = exp_curve_answer(c, budget);
    double widest = 0;
    for (int s = a.safe > 1 ? a.safe : 1; s <= a.over && s <= c->nsettings; s++)
        widest = fmax(widest, exp_curve_half_width(c, s));
    return widest;
}

/* Whether the fitted setting s needs more pairs: too few to prove anything, or a wide band. */
static bool wants_pairs(const exp_curve_t *c, int s, double precision)
{
    return c->pairs[s] < EXP_CURVE_PROOF_PAIRS || exp_curve_half_width(c, s) > precision;
}

static int add_once(int *which, int k, int s)
{
    for (int i = 0; i < k; i++)
        if (which[i] == s)
            return k;
    which[k] = s;
    return k + 1;
}

/* A bracket: bisect the undecided settings [safe + 1, over - 1] at the fitted curve's crossing,
 * and sharpen the range's two ends, which are what a decision moves: a curve that crosses the
 * budget gently has settings next to the crossing that no number of pairs decides, while the ends,
 * further from it, are decided by a few more (test_experiment_curve, a gentle crossing: 3 tight
 * answers in 40 sweeps when only the crossing's neighbours were sharpened, 5 with the ends first;
 * a steeper one: 12 and 18 of 20). Then the crossing's neighbours. A bracket always gets pairs:
 * --time ends it. */
static int bisect(const exp_curve_t *c, exp_curve_answer_t a, double budget, double precision, int *which)
{
    int below = 0, above = c->nsettings + 1; /* the fitted settings either side of the crossing */
    for (int s = 1; s <= c->nsettings; s++)
        if (c->fitted[s] && c->fit[s] <= budget)
            below = s;
    for (int s = c->nsettings; s > below; s--)
        if (c->fitted[s])
            above = s;
    double target = fmin(fmax((below + above) / 2.0, a.safe + 1), a.over - 1);
    int k = 0, nearest = 0;
    for (int s = a.safe + 1; s < a.over; s++) /* unplayed, or too few pairs to hold the pooled band */
        if (c->pairs[s] < EXP_CURVE_PROOF_PAIRS && (!nearest || fabs(s - target) < fabs(nearest - target)))
            nearest = s;
    if (nearest)
        k = add_once(which, k, nearest);
    int candidates[] = {a.safe + 1, a.over - 1, below, above};
    for (int i = 0; i < 4 && k < 3; i++) {
        int s = candidates[i];
        if (s > a.safe && s < a.over && c->fitted[s] && wants_pairs(c, s, precision))
            k = add_once(which, k, s);
    }
    /* the ends and the crossing's neighbours are precise, yet undecided settings remain: a setting
     * on few pairs (one of them a spoiled pair, say) can hold the pooled curve up; the nearest one
     * that wants pairs */
    int wanting = 0;
    for (int s = a.safe + 1; k == 0 && s < a.over; s++)
        if (wants_pairs(c, s, precision) && (!wanting || fabs(s - target) < fabs(wanting - target)))
            wanting = s;
    if (wanting)
        k = add_once(which, k, wanting);
    /* every undecided setting precise and still undecided: the curve runs along the budget there,
     * and pairs narrow the ends only slowly; slowly is still more than nothing while --time lasts
     * (a demo sweep stopped after 60 s of its 90 with 0.4's band ending at +5.0 %) */
    if (k == 0) {
        k = add_once(which, k, a.safe + 1);
        k = add_once(which, k, a.over - 1);
    }
    return k;
}

int exp_curve_next(const exp_curve_t *c, double budget, double precision, int *which)
{
    int nsettings = c->nsettings, k = 0;
    bool any = false;
    for (int s = 1; s <= nsettings; s++)
        any = any || c->fitted[s];
    if (nsettings < 1)
        return 0;
    if (!any) {
        k = add_once(which, k, 1);
        k = add_once(which, k, (nsettings + 1) / 2);
        return add_once(which, k, nsettings);
    }
    exp_curve_answer_t a = exp_curve_answer(c, budget);
    if (a.kind == EXP_ANSWER_BRACKET)
        return bisect(c, a, budget, precision, which);
    /* decided: sharpen the two settings either side of the crossing */
    for (int s = a.safe; s <= a.safe + 1; s++)
        if (s >= 1 && s <= nsettings && wants_pairs(c, s, precision))
            k = add_once(which, k, s);
    return k;
}
