/* test_experiment_curve: the sweep's curve — pool-adjacent-violators on hand-computed cases, a fit
 * that never falls, a bootstrap band that covers a known curve on synthetic pairs (over a fixed
 * set of seeds, the coverage printed), the answer rules (setting, bracket, none proven) on
 * constructed curves, and a plan that bisects towards where the band crosses the budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "experiment_curve.h"

enum { K = 10, MAX_PAIRS = 400, BOOT = 400 };

static void pav_pools_violators_by_weight(void **state)
{
    (void)state;
    double out[5];
    exp_curve_pav((double[]){1, 3, 2, 4}, (double[]){1, 1, 1, 1}, 4, out);
    assert_memory_equal(out, ((double[]){1, 2.5, 2.5, 4}), 4 * sizeof *out);
    /* the heavier point pulls the pool: (3 + 2 x 3) / 4 */
    exp_curve_pav((double[]){1, 3, 2}, (double[]){1, 1, 3}, 3, out);
    assert_memory_equal(out, ((double[]){1, 2.25, 2.25}), 3 * sizeof *out);
    /* a pool that meets a later violator pools again, back to the start */
    exp_curve_pav((double[]){2, 1, 3, 0}, (double[]){1, 1, 1, 1}, 4, out);
    assert_memory_equal(out, ((double[]){1.5, 1.5, 1.5, 1.5}), 4 * sizeof *out);
    exp_curve_pav((double[]){5, 4, 3, 2, 1}, (double[]){1, 1, 1, 1, 1}, 5, out);
    assert_memory_equal(out, ((double[]){3, 3, 3, 3, 3}), 5 * sizeof *out);
    /* already in order: unchanged */
    exp_curve_pav((double[]){-1, 0, 0, 2}, (double[]){4, 1, 2, 1}, 4, out);
    assert_memory_equal(out, ((double[]){-1, 0, 0, 2}), 4 * sizeof *out);
}

/* splitmix64 and Box-Muller: synthetic pairs that are the same on every machine */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(uint64_t *s)
{
    return sqrt(-2 * log(uniform(s))) * cos(2 * M_PI * uniform(s));
}

/* The known curve: log slowdown at setting s of K, convex like the demo's memory noise. */
static double truth(int s)
{
    return 0.10 * pow((double)s / K, 1.5);
}

/* A pair's log ratio: the curve, noise of sd, and one pair in eight spoiled by a host that
 * switched speed inside it (35 % either way). */
static double pair_at(int s, double sd, uint64_t *rs)
{
    double r = truth(s) + sd * normal(rs);
    if (uniform(rs) < 0.125)
        r += uniform(rs) < 0.5 ? log(1.35) : -log(1.35);
    return r;
}

typedef struct synthetic {
    double ratios[K + 1][MAX_PAIRS];
    int n[K + 1];
} synthetic_t;

static void add_pairs(synthetic_t *d, int s, int pairs, double sd, uint64_t *rs)
{
    for (int i = 0; i < pairs && d->n[s] < MAX_PAIRS; i++)
        d->ratios[s][d->n[s]++] = pair_at(s, sd, rs);
}

static void fit(const synthetic_t *d, int nboot, uint64_t seed, exp_curve_t *c)
{
    exp_curve_pairs_t p = {.nsettings = K};
    for (int s = 1; s <= K; s++) {
        p.n[s] = d->n[s];
        p.ratios[s] = d->ratios[s];
    }
    exp_curve_fit(&p, nboot, seed, c);
}

static void the_fit_and_its_band_never_fall(void **state)
{
    (void)state;
    static synthetic_t d;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        memset(&d, 0, sizeof d);
        uint64_t rs = seed;
        for (int s = 1; s <= K; s++)
            add_pairs(&d, s, 3, 0.08, &rs); /* noisy enough that the medians fall here and there */
        exp_curve_t c;
        fit(&d, BOOT, seed, &c);
        for (int s = 2; s <= K; s++) {
            assert_true(c.fit[s] >= c.fit[s - 1]);
            assert_true(c.low[s] >= c.low[s - 1] && c.high[s] >= c.high[s - 1]);
        }
        for (int s = 1; s <= K; s++)
            assert_true(c.low[s] <= c.fit[s] + 1e-12 && c.fit[s] <= c.high[s] + 1e-12);
    }
}

static void the_same_pairs_give_the_same_band(void **state)
{
    (void)state;
    static synthetic_t d;
    uint64_t rs = 7;
    for (int s = 1; s <= K; s++)
        add_pairs(&d, s, 4, 0.03, &rs);
    exp_curve_t a, b;
    fit(&d, BOOT, EXP_CURVE_SEED, &a);
    fit(&d, BOOT, EXP_CURVE_SEED, &b);
    assert_memory_equal(a.low, b.low, sizeof a.low);
    assert_memory_equal(a.high, b.high, sizeof a.high);
}

/* The share of (seed, setting) whose band holds the true slowdown, pairs_each pairs a setting. */
static double coverage(int pairs_each, double sd, int seeds, double *mean_half_width)
{
    static synthetic_t d;
    int covered = 0, total = 0;
    double width = 0;
    for (int seed = 1; seed <= seeds; seed++) {
        memset(&d, 0, sizeof d);
        uint64_t rs = 1000 + (uint64_t)seed;
        for (int s = 1; s <= K; s++)
            add_pairs(&d, s, pairs_each, sd, &rs);
        exp_curve_t c;
        fit(&d, BOOT, (uint64_t)seed, &c);
        for (int s = 1; s <= K; s++, total++) {
            covered += c.low[s] <= expm1(truth(s)) && expm1(truth(s)) <= c.high[s];
            width += exp_curve_half_width(&c, s);
        }
    }
    *mean_half_width = width / total;
    return (double)covered / total;
}

static void the_band_covers_a_known_curve(void **state)
{
    (void)state;
    double width6, width12;
    double c6 = coverage(6, 0.03, 200, &width6);
    double c12 = coverage(12, 0.03, 200, &width12);
    print_message("# band coverage %.3f (6 pairs a setting), %.3f (12), mean half width %.4f, %.4f\n", c6, c12, width6,
                  width12);
    /* pointwise percentile bands of an isotonic fit: near 0.95 where the curve rises, above it
     * where neighbours pool; the bar is loose because the seeds are fixed, not because it is rare */
    assert_true(c6 >= 0.85 && c12 >= 0.85);
    assert_true(width12 < width6);
}

/* A hand-made curve: every setting fitted on pairs[s] pairs with the band [low, high]. */
static exp_curve_t made(const double *low, const double *high, int pairs)
{
    exp_curve_t c = {.nsettings = 5};
    for (int s = 1; s <= 5; s++) {
        c.pairs[s] = pairs;
        c.fitted[s] = true;
        c.low[s] = low[s - 1];
        c.high[s] = high[s - 1];
        c.fit[s] = (low[s - 1] + high[s - 1]) / 2;
    }
    return c;
}

static void the_answer_is_a_setting_a_bracket_or_none(void **state)
{
    (void)state;
    const double budget = 0.05;
    /* 3 within, 4 over: setting 3 */
    exp_curve_t c = made((double[]){-.01, 0, .02, .06, .08}, (double[]){.01, .02, .04, .07, .09}, 6);
    exp_curve_answer_t a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_SETTING);
    assert_int_equal(a.safe, 3);
    assert_int_equal(a.over, 4);
    /* 4's band straddles the budget: 3 or 4 */
    c.low[4] = .04;
    a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_BRACKET);
    assert_int_equal(a.safe, 3);
    assert_int_equal(a.over, 5);
    /* 3 on too few pairs proves nothing: 2 .. 4 */
    c.pairs[3] = EXP_CURVE_PROOF_PAIRS - 1;
    a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_BRACKET);
    assert_int_equal(a.safe, 2);
    /* every band within: the highest setting */
    c = made((double[]){-.01, 0, 0, .01, .01}, (double[]){.01, .02, .03, .04, .05}, 6);
    a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_SETTING);
    assert_int_equal(a.safe, 5);
    assert_int_equal(a.over, 6);
    /* over from the lowest setting on: none proven */
    c = made((double[]){.06, .07, .08, .09, .1}, (double[]){.08, .09, .1, .11, .12}, 6);
    a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_NONE);
    assert_int_equal(a.safe, 0);
    /* the lowest straddles it: between no noise and setting 1, not "none" */
    c.low[1] = .03;
    a = exp_curve_answer(&c, budget);
    assert_int_equal(a.kind, EXP_ANSWER_BRACKET);
    assert_int_equal(a.safe, 0);
    assert_int_equal(a.over, 2);
}

static void a_setting_without_pairs_is_bounded_by_its_neighbours(void **state)
{
    (void)state;
    static synthetic_t d;
    uint64_t rs = 3;
    add_pairs(&d, 2, 8, 0.02, &rs);
    add_pairs(&d, 6, 8, 0.02, &rs);
    add_pairs(&d, 4, 1, 0.02, &rs); /* one pair: no band of its own */
    exp_curve_t c;
    fit(&d, BOOT, 1, &c);
    assert_true(c.fitted[2] && c.fitted[6] && !c.fitted[4] && !c.fitted[1]);
    assert_int_equal(c.pairs[4], 1);
    assert_true(isnan(c.fit[4]));
    assert_true(c.low[4] == c.low[2] && c.high[4] == c.high[6]);
    assert_true(isinf(c.low[1]) && c.high[1] == c.high[2]);
    assert_true(c.low[K] == c.low[6] && isinf(c.high[K]));
}

static void the_plan_starts_spread_and_bisects_the_crossing(void **state)
{
    (void)state;
    exp_curve_t c = {.nsettings = K};
    int which[3];
    assert_int_equal(exp_curve_next(&c, 0.05, 0.02, which), 3);
    assert_memory_equal(which, ((int[]){1, 5, 10}), sizeof which);
    /* 1 and 5 proven within, 10 over: the middle of 6 .. 9 */
    c.fitted[1] = c.fitted[5] = c.fitted[10] = true;
    c.pairs[1] = c.pairs[5] = c.pairs[10] = 6;
    double band[][3] = {{1, 0, .02}, {5, .01, .04}, {10, .1, .2}}; /* setting, low, high */
    for (int i = 0; i < 3; i++) {
        int s = (int)band[i][0];
        c.low[s] = band[i][1];
        c.high[s] = band[i][2];
        c.fit[s] = (c.low[s] + c.high[s]) / 2;
    }
    for (int s = 2; s <= K; s++)
        if (!c.fitted[s]) {
            c.low[s] = c.low[s < 5 ? 1 : 5];
            c.high[s] = c.high[s < 5 ? 5 : 10];
            c.fit[s] = NAN;
        }
    int k = exp_curve_next(&c, 0.05, 0.02, which);
    assert_int_equal(k, 1);
    assert_int_equal(which[0], 7);
    /* 10 on two pairs proves nothing: it is asked for again beside the midpoint */
    c.pairs[10] = 2;
    k = exp_curve_next(&c, 0.05, 0.02, which);
    assert_int_equal(k, 2);
    assert_int_equal(which[0], 7);
    assert_int_equal(which[1], 10);
}

static void a_decided_answer_is_sharpened_until_precise(void **state)
{
    (void)state;
    int which[3];
    exp_curve_t c = made((double[]){-.01, 0, .02, .06, .08}, (double[]){.01, .02, .04, .09, .09}, 6);
    /* 3 within (half band 1 point), 4 over with a half band of 1.5 points */
    assert_int_equal(exp_curve_next(&c, 0.05, 0.02, which), 0);
    assert_int_equal(exp_curve_next(&c, 0.05, 0.01, which), 1);
    assert_int_equal(which[0], 4);
    assert_true(fabs(exp_curve_precision(&c, 0.05) - 0.015) < 1e-12);
}

/* The whole sweep on synthetic pairs: play what the plan asks, two pairs a setting a round. */
static exp_curve_answer_t simulate(uint64_t seed, double budget, synthetic_t *d, int *rounds)
{
    memset(d, 0, sizeof *d);
    uint64_t rs = seed;
    exp_curve_t c;
    int which[3], k;
    *rounds = 0;
    fit(d, BOOT, EXP_CURVE_SEED, &c);
    while (*rounds < 30 && (k = exp_curve_next(&c, budget, 0.005, which)) > 0) {
        for (int i = 0; i < k; i++)
            add_pairs(d, which[i], 2, 0.01, &rs);
        fit(d, BOOT, EXP_CURVE_SEED, &c);
        ++*rounds;
    }
    return exp_curve_answer(&c, budget);
}

static void the_sweep_spends_its_pairs_near_the_crossing(void **state)
{
    (void)state;
    /* truth: 0.10 (s/10)^1.5 in log terms; within a 5.4 % budget up to setting 6 (4.8 %), setting 7
     * is 6.0 % */
    static synthetic_t d;
    int holds = 0, tight = 0, near = 0, far = 0, rounds_total = 0, seeds = 20;
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
        int rounds;
        exp_curve_answer_t a = simulate(seed, 0.054, &d, &rounds);
        rounds_total += rounds;
        holds += a.safe <= 6 && a.over >= 7;    /* the answer's range holds the truth */
        tight += holds && a.over - a.safe <= 2; /* a setting, or a bracket of two neighbours */
        near += d.n[6] + d.n[7];
        far += d.n[2] + d.n[3];
    }
    print_message("# the answer holds setting 6 in %d of %d sweeps, a setting or two neighbours in %d; %.1f rounds; "
                  "pairs at 6-7: %d, at 2-3: %d\n",
                  holds, seeds, tight, (double)rounds_total / seeds, near, far);
    assert_true(holds >= seeds - 1);
    assert_true(tight >= seeds / 2);
    assert_true(near > 4 * far);
}

/* The demo's sweep on this project's 2-core VM (2026-11-27): about 75 pairs in its 90 s, played 4
 * a setting a round, each pair's log ratio off by about 4 % (a 20-step block's median), and a curve
 * that crosses a 5 % budget gently: 4.2 % at 0.4, 4.8 % at 0.5, 6.1 % at 0.6. The truth here:
 * 4.6 % at 6, 5.9 % at 7 of 10 against a 5.2 % budget. */
static exp_curve_answer_t simulate_in_pairs(uint64_t seed, synthetic_t *d, int total_pairs)
{
    memset(d, 0, sizeof *d);
    uint64_t rs = seed;
    exp_curve_t c;
    int which[3], k, played = 0;
    fit(d, BOOT, EXP_CURVE_SEED, &c);
    while (played + 4 <= total_pairs && (k = exp_curve_next(&c, 0.052, 0.02, which)) > 0) {
        for (int i = 0; i < k && played + 4 <= total_pairs; i++, played += 4)
            add_pairs(d, which[i], 4, 0.04, &rs);
        fit(d, BOOT, EXP_CURVE_SEED, &c);
    }
    return exp_curve_answer(&c, 0.052);
}

static void a_gentle_crossing_is_bracketed_in_the_demos_pairs(void **state)
{
    (void)state;
    static synthetic_t d;
    int holds = 0, tight = 0, seeds = 40;
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
        exp_curve_answer_t a = simulate_in_pairs(seed, &d, 76);
        bool held = a.safe <= 6 && a.over >= 7;
        holds += held;
        tight += held && a.over - a.safe <= 2;
    }
    print_message("# gentle crossing, 76 pairs: the answer holds setting 6 in %d of %d sweeps, a setting or two "
                  "neighbours in %d\n",
                  holds, seeds, tight);
    assert_true(holds >= seeds - 2);
    /* 3 when only the crossing's neighbours were sharpened; settings 6 and 7 are 0.6 and 0.7 points
     * from the budget, which takes about 100 pairs each to decide: most answers stay brackets of
     * three or four settings, and no rule of spending makes the demo's 76 pairs enough */
    assert_true(tight >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pav_pools_violators_by_weight),
        cmocka_unit_test(the_fit_and_its_band_never_fall),
        cmocka_unit_test(the_same_pairs_give_the_same_band),
        cmocka_unit_test(the_band_covers_a_known_curve),
        cmocka_unit_test(the_answer_is_a_setting_a_bracket_or_none),
        cmocka_unit_test(a_setting_without_pairs_is_bounded_by_its_neighbours),
        cmocka_unit_test(the_plan_starts_spread_and_bisects_the_crossing),
        cmocka_unit_test(a_decided_answer_is_sharpened_until_precise),
        cmocka_unit_test(the_sweep_spends_its_pairs_near_the_crossing),
        cmocka_unit_test(a_gentle_crossing_is_bracketed_in_the_demos_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
