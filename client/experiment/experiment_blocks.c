/* experiment_blocks: block order, block figures and the paired slowdown of the blocked design;
 * see experiment_blocks.h for the method. */
#include "experiment_blocks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment_robust.h"

/* splitmix64: a seeded order that is the same on every machine (rand() is not) */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int exp_blocks_plan(int nsettings, int pairs_each, int first_pair, uint64_t seed, exp_block_t *out)
{
    uint64_t state = seed;
    int n = 0, pair = first_pair;
    int *order = malloc((size_t)(nsettings > 0 ? nsettings : 1) * sizeof *order);
    if (!order)
        abort();
    for (int round = 0; round < pairs_each; round++) {
        for (int i = 0; i < nsettings; i++)
            order[i] = i + 1;
        for (int i = nsettings - 1; i > 0; i--) { /* Fisher-Yates */
            int k = (int)(next_random(&state) % (uint64_t)(i + 1));
            int swap = order[i];
            order[i] = order[k];
            order[k] = swap;
        }
        for (int i = 0; i < nsettings; i++, pair++) {
            bool noise_first = next_random(&state) & 1;
            exp_block_t quiet = {.setting = 0, .pair = pair, .noise_mbs = -1};
            exp_block_t noisy = {.setting = order[i], .pair = pair, .noise_mbs = -1};
            out[n++] = noise_first ? noisy : quiet;
            out[n++] = noise_first ? quiet : noisy;
        }
    }
    free(order);
    return n;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* The step times of the steps that began in [from, to) and ended by `by`, into out. */
static int steps_within(const exp_step_t *steps, int nsteps, double from, double to, double by, double *out)
{
    int n = 0;
    for (int i = 0; i < nsteps; i++) {
        double began = steps[i].end - steps[i].seconds;
        if (began >= from && began < to && steps[i].end <= by && steps[i].seconds > 0)
            out[n++] = steps[i].seconds;
    }
    return n;
}

double exp_block_figure(double *times, int n)
{
    if (n <= 0)
        return 0;
    if (n >= EXP_MEDIAN_STEPS)
        return median_of(times, n);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += times[i];
    return sum / n;
}

void exp_block_measure(exp_block_t *b, const exp_step_t *steps, int nsteps, double drop)
{
    double *times = malloc((size_t)(nsteps > 0 ? nsteps : 1) * sizeof *times);
    if (!times)
        abort();
    b->nsteps = steps_within(steps, nsteps, b->start + drop, b->end, b->end, times);
    b->step_s = exp_block_figure(times, b->nsteps);
    free(times);
}

/* The other block of b's pair: the quiet one for a noise block, the noise block for a quiet one. */
static const exp_block_t *partner_of(const exp_block_t *blocks, int n, const exp_block_t *b)
{
    for (int i = 0; i < n; i++)
        if (&blocks[i] != b && blocks[i].pair == b->pair && (blocks[i].setting == 0) != (b->setting == 0))
            return &blocks[i];
    return NULL;
}

bool exp_block_paired(const exp_block_t *blocks, int n, const exp_block_t *b, int min_steps)
{
    const exp_block_t *partner = partner_of(blocks, n, b);
    return partner && b->nsteps >= min_steps && partner->nsteps >= min_steps && b->step_s > 0 && partner->step_s > 0;
}

exp_estimator_t exp_estimator(void)
{
    const char *name = getenv("COSCHED_EXPERIMENT_ESTIMATOR");
    if (!name || !*name || !strcmp(name, "hl"))
        return EXP_ESTIMATOR_HL;
    if (!strcmp(name, "t"))
        return EXP_ESTIMATOR_T;
    if (!strcmp(name, "sign"))
        return EXP_ESTIMATOR_SIGN;
    static bool said;
    if (!said)
        fprintf(stderr, "cosched experiment: COSCHED_EXPERIMENT_ESTIMATOR=%s is none of hl, t, sign; using hl\n", name);
    said = true;
    return EXP_ESTIMATOR_HL;
}

const char *exp_estimator_pairs_method(exp_estimator_t e)
{
    switch (e) {
    case EXP_ESTIMATOR_T: return "paired blocks, Student's t on log ratios";
    case EXP_ESTIMATOR_SIGN: return "paired blocks, median of log ratios with the sign-test interval";
    default: return "paired blocks, Hodges-Lehmann on log ratios with the Wilcoxon signed-rank interval";
    }
}

const char *exp_estimator_batches_method(exp_estimator_t e)
{
    return e == EXP_ESTIMATOR_T ? "batch figures after the guard settled against its run's no-noise lead-in and "
                                  "lead-out, Welch's t on logs"
                                : "batch figures after the guard settled against its run's no-noise lead-in and "
                                  "lead-out, Hodges-Lehmann shift of logs with the Wilcoxon rank-sum interval";
}

/* A rank interval on logs, back to a slowdown. */
static exp_slowdown_t from_robust(exp_robust_t x)
{
    return (exp_slowdown_t){.slowdown = expm1(x.estimate),
                            .ci_low = expm1(x.low),
                            .ci_high = expm1(x.high),
                            .level = x.level,
                            .valid = x.valid};
}

/* Student's t on the mean log ratio (the old estimator). */
static exp_slowdown_t t_slowdown(const double *ratios, int k)
{
    exp_slowdown_t r = {0};
    double sum = 0, squares = 0;
    for (int i = 0; i < k; i++)
        sum += ratios[i];
    if (k > 0) {
        double mean = sum / k;
        for (int i = 0; i < k; i++)
            squares += (ratios[i] - mean) * (ratios[i] - mean);
        r.slowdown = r.ci_low = r.ci_high = expm1(mean);
        if (k >= 2) {
            r.valid = true;
            r.df = k - 1;
            r.level = 0.95;
            double half = exp_t975(r.df) * sqrt(squares / (k - 1) / k);
            r.ci_low = expm1(mean - half);
            r.ci_high = expm1(mean + half);
        }
    }
    return r;
}

exp_slowdown_t exp_paired_slowdown(exp_estimator_t e, const double *log_ratios, int n)
{
    switch (e) {
    case EXP_ESTIMATOR_T: return t_slowdown(log_ratios, n);
    case EXP_ESTIMATOR_SIGN: return from_robust(exp_sign_median(log_ratios, n));
    default: return from_robust(exp_signed_rank(log_ratios, n));
    }
}

exp_slowdown_t exp_unpaired_slowdown(exp_estimator_t e, const double *quiet, int nq, const double *noisy, int nn)
{
    if (e == EXP_ESTIMATOR_T)
        return exp_slowdown(quiet, nq, noisy, nn);
    double *lq = malloc((size_t)(nq + nn > 0 ? nq + nn : 1) * sizeof *lq);
    if (!lq)
        abort();
    double *ln = lq + nq;
    for (int i = 0; i < nq; i++)
        lq[i] = log(quiet[i]);
    for (int i = 0; i < nn; i++)
        ln[i] = log(noisy[i]);
    exp_slowdown_t r = from_robust(exp_rank_sum(lq, nq, ln, nn));
    free(lq);
    return r;
}

exp_slowdown_t exp_blocks_slowdown_by(exp_estimator_t e, const exp_block_t *blocks, int n, int setting, int min_steps,
                                      int *npairs)
{
    int k = 0;
    double *ratios = malloc((size_t)(n > 0 ? n : 1) * sizeof *ratios);
    if (!ratios)
        abort();
    for (int i = 0; i < n; i++) {
        const exp_block_t *b = &blocks[i];
        if (b->setting != setting || setting == 0 || !exp_block_paired(blocks, n, b, min_steps))
            continue;
        ratios[k++] = log(b->step_s / partner_of(blocks, n, b)->step_s);
    }
    if (npairs)
        *npairs = k;
    exp_slowdown_t r = exp_paired_slowdown(e, ratios, k);
    free(ratios);
    return r;
}

exp_slowdown_t exp_blocks_slowdown(const exp_block_t *blocks, int n, int setting, int min_steps, int *npairs)
{
    return exp_blocks_slowdown_by(exp_estimator(), blocks, n, setting, min_steps, npairs);
}

double exp_half_width(const exp_slowdown_t *d)
{
    return d->valid ? (d->ci_high - d->ci_low) / 2 : INFINITY;
}

static bool near(double value, double settled)
{
    return fabs(value - settled) <= 0.1 + 1e-9 || (value >= settled / 2 && value <= settled * 2);
}

double exp_settle_time(const double *t, const double *share, int n)
{
    for (int i = 0; i < n; i++) {
        if (i > 0 && share[i] == share[i - 1])
            continue; /* only where it changed (or the first) */
        bool stays = true;
        for (int k = i + 1; k < n && stays; k++)
            stays = near(share[k], share[i]);
        if (stays)
            return t[i];
    }
    return n > 0 ? t[0] : 0;
}

int exp_batch_figures(const exp_step_t *steps, int nsteps, double from, double to, double seconds, int min_steps,
                      double *out, int max)
{
    double *times = malloc((size_t)(nsteps > 0 ? nsteps : 1) * sizeof *times);
    if (!times)
        abort();
    int n = 0;
    for (double start = from; start + seconds <= to + 1e-9 && n < max; start += seconds) {
        int k = steps_within(steps, nsteps, start, start + seconds, INFINITY, times);
        if (k >= min_steps && k > 0)
            out[n++] = exp_block_figure(times, k);
    }
    free(times);
    return n;
}
