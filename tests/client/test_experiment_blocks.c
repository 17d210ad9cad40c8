/* test_experiment_blocks: the blocked design of `cosched experiment` — the block order (pairs,
 * randomized, reproducible), which steps a block keeps, and paired intervals that cover a known
 * effect at their stated rate on synthetic step streams with autocorrelation and drift, over many
 * seeds; the guarded configuration's batch figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "experiment_blocks.h"

enum { MAX_BLOCKS = 4096, MAX_STEPS = 200000 };

static void every_setting_gets_its_pairs_and_every_pair_is_adjacent(void **state)
{
    (void)state;
    exp_block_t b[MAX_BLOCKS];
    int n = exp_blocks_plan(10, 3, 0, 42, b);
    assert_int_equal(n, 2 * 10 * 3);
    int count[11] = {0};
    for (int i = 0; i < n; i += 2) {
        assert_int_equal(b[i].pair, b[i + 1].pair); /* partners are neighbours */
        assert_int_equal(b[i].pair, i / 2);
        assert_true((b[i].setting == 0) != (b[i + 1].setting == 0)); /* one quiet, one noisy */
        count[b[i].setting + b[i + 1].setting]++;
    }
    for (int s = 1; s <= 10; s++)
        assert_int_equal(count[s], 3);
    /* each round of pairs holds every setting once */
    for (int round = 0; round < 3; round++) {
        int seen[11] = {0};
        for (int i = round * 20; i < round * 20 + 20; i++)
            seen[b[i].setting]++;
        for (int s = 1; s <= 10; s++)
            assert_int_equal(seen[s], 1);
    }
}

static void the_order_is_random_but_reproducible(void **state)
{
    (void)state;
    exp_block_t a[MAX_BLOCKS], b[MAX_BLOCKS], c[MAX_BLOCKS];
    int n = exp_blocks_plan(10, 4, 5, 7, a);
    exp_blocks_plan(10, 4, 5, 7, b);
    exp_blocks_plan(10, 4, 5, 8, c);
    int noise_first = 0, differ = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(a[i].setting, b[i].setting);
        differ += a[i].setting != c[i].setting;
        noise_first += i % 2 == 0 && a[i].setting != 0;
    }
    assert_int_equal(a[0].pair, 5); /* a later round numbers its pairs on */
    assert_true(differ > 0);
    /* 40 pairs: both orders within a pair occur */
    assert_true(noise_first > 5 && noise_first < 35);
}

static void a_block_keeps_whole_steps_after_the_drop(void **state)
{
    (void)state;
    exp_step_t steps[] = {
        {10.05, 0.1},                                           /* began before the block */
        {10.15, 0.1},                                           /* began in the drop */
        {10.30, 0.1}, {10.40, 0.2}, {10.70, 0.3}, {11.05, 0.1}, /* ended after the block */
    };
    exp_block_t b = {.start = 10.0, .end = 11.0};
    exp_block_measure(&b, steps, 6, 0.1);
    assert_int_equal(b.nsteps, 3);
    assert_float_equal(b.step_s, 0.2, 1e-12);
    exp_block_t empty = {.start = 20.0, .end = 21.0};
    exp_block_measure(&empty, steps, 6, 0.1);
    assert_int_equal(empty.nsteps, 0);
    assert_float_equal(empty.step_s, 0, 0);
}

/* A block keeps few steps where steps are slow: their mean then (a median of three or four steps
 * is the noisier figure), their median once there are EXP_MEDIAN_STEPS (one slow step moves it
 * not at all). */
static void a_short_blocks_figure_is_its_mean_a_long_ones_its_median(void **state)
{
    (void)state;
    double four[] = {0.13, 0.14, 0.12, 0.25};
    assert_float_equal(exp_block_figure(four, 4), 0.16, 1e-12);
    double nine[] = {0.13, 0.14, 0.12, 0.9, 0.13, 0.14, 0.12, 0.13, 0.13};
    assert_float_equal(exp_block_figure(nine, 9), 0.13, 1e-12);
    assert_float_equal(exp_block_figure(four, 0), 0, 0);
    exp_step_t steps[] = {{10.2, 0.13}, {10.35, 0.15}, {10.5, 0.15}}; /* a 0.66 s block of 130 ms steps */
    exp_block_t b = {.start = 10.0, .end = 10.66};
    exp_block_measure(&b, steps, 3, 0.01);
    assert_int_equal(b.nsteps, 3);
    assert_float_equal(b.step_s, (0.13 + 0.15 + 0.15) / 3, 1e-12);
}

/* A trainer whose log step time is base + effect (in noise blocks) + drift + AR(1) noise, on a
 * host that may run at two speeds: the slow state adds log(1 + state_gap) to every step, and the
 * host stays in a state for a time drawn uniformly from [dwell_min, dwell_max] seconds, in noise
 * and no-noise blocks alike (what issue 36's demo showed: levels 35 % apart, a few seconds each). */
typedef struct synthetic {
    double effect, phi, sigma, drift_walk, drift_sine;
    double state_gap, dwell_min, dwell_max;
} synthetic_t;

static double gaussian(uint64_t *s)
{
    /* Box-Muller over a 64-bit LCG: enough for a test's noise */
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u1 = ((*s >> 11) + 0.5) / 9007199254740992.0;
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u2 = ((*s >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((*s >> 11) + 0.5) / 9007199254740992.0;
}

/* The step stream of m over `seconds` from t = 1000, steps of about 25 ms; setting_at says
 * whether the noise plays at a time (NULL: never). Returns how many steps. */
typedef int (*setting_at_fn)(double t, const exp_block_t *blocks, int nblocks);

static int block_setting_at(double t, const exp_block_t *blocks, int nblocks)
{
    for (int b = 0; b < nblocks; b++)
        if (t >= blocks[b].start && t < blocks[b].end)
            return blocks[b].setting;
    return 0;
}

static int play_stream(const synthetic_t *m, uint64_t seed, double seconds, const exp_block_t *blocks, int nblocks,
                       exp_step_t *steps)
{
    uint64_t rng = seed * 2654435761ULL + 1;
    double t = 1000, e = 0, walk = 0, phase = gaussian(&rng);
    bool slow = m->state_gap > 0 && uniform(&rng) < 0.5;
    double switch_at = t + m->dwell_min + (m->dwell_max - m->dwell_min) * uniform(&rng);
    int nsteps = 0;
    while (t < 1000 + seconds && nsteps < MAX_STEPS) {
        if (m->state_gap > 0 && t >= switch_at) {
            slow = !slow;
            switch_at = t + m->dwell_min + (m->dwell_max - m->dwell_min) * uniform(&rng);
        }
        e = m->phi * e + m->sigma * sqrt(1 - m->phi * m->phi) * gaussian(&rng);
        walk += m->drift_walk * gaussian(&rng);
        int setting = blocks ? block_setting_at(t, blocks, nblocks) : 0;
        double log_step = log(0.025) + (setting ? log1p(m->effect) : 0) + (slow ? log1p(m->state_gap) : 0) + e + walk +
                          m->drift_sine * sin(t / 7.0 + phase);
        double step = exp(log_step);
        t += step;
        steps[nsteps++] = (exp_step_t){t, step};
    }
    return nsteps;
}

/* Play `pairs` pairs of blocks (block_s seconds each), measure them, and return the slowdown of
 * setting 1 by each estimator (indexed by exp_estimator_t), all on the same blocks. */
enum { ESTIMATORS = 3 };
static const char *const estimator_name[ESTIMATORS] = {"HL", "t", "sign"};

static void simulate(const synthetic_t *m, int pairs, uint64_t seed, double block_s, exp_slowdown_t *d)
{
    static exp_block_t blocks[MAX_BLOCKS];
    static exp_step_t steps[MAX_STEPS];
    int nblocks = exp_blocks_plan(1, pairs, 0, seed, blocks);
    for (int b = 0; b < nblocks; b++) {
        blocks[b].start = 1000 + b * block_s;
        blocks[b].end = blocks[b].start + block_s;
    }
    int nsteps = play_stream(m, seed, nblocks * block_s + 1, blocks, nblocks, steps);
    for (int b = 0; b < nblocks; b++)
        exp_block_measure(&blocks[b], steps, nsteps, 0.075);
    for (int e = 0; e < ESTIMATORS; e++) {
        int used;
        d[e] = exp_blocks_slowdown_by((exp_estimator_t)e, blocks, nblocks, 1, 5, &used);
        assert_int_equal(used, pairs);
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Coverage over seeds (the share of intervals that hold the true effect) and the median half
 * width, per estimator, printed side by side under `name`. */
typedef struct coverage {
    double covered[ESTIMATORS], half_width[ESTIMATORS];
} coverage_t;

static coverage_t coverage(const char *name, const synthetic_t *m, int pairs, int seeds, double block_s)
{
    coverage_t c;
    memset(&c, 0, sizeof c);
    static double widths[ESTIMATORS][1000];
    for (int s = 1; s <= seeds; s++) {
        exp_slowdown_t d[ESTIMATORS];
        simulate(m, pairs, (uint64_t)s, block_s, d);
        for (int e = 0; e < ESTIMATORS; e++) {
            c.covered[e] += (d[e].ci_low <= m->effect && m->effect <= d[e].ci_high) / (double)seeds;
            widths[e][s - 1] = (d[e].ci_high - d[e].ci_low) / 2; /* the range's, where no 95 % interval */
        }
    }
    print_message("# %-28s %2d pairs of %.2f s:", name, pairs, block_s);
    for (int e = 0; e < ESTIMATORS; e++) {
        qsort(widths[e], (size_t)seeds, sizeof widths[e][0], compare_doubles);
        c.half_width[e] = widths[e][seeds / 2];
        print_message("  %s %.3f +-%.4f", estimator_name[e], c.covered[e], c.half_width[e]);
    }
    print_message("\n");
    return c;
}

/* 400 seeds: a true 95 % lands in [0.925, 0.975] with probability about 0.97 */
static bool within_the_bar(double covered)
{
    return covered >= 0.92 && covered <= 0.98;
}

static void intervals_cover_a_known_effect_with_autocorrelation(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0.12, .phi = 0.6, .sigma = 0.04};
    coverage_t c = coverage("AR(1) 0.6, 4 %", &m, 8, 400, 1.0);
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_HL]));
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_T]));
    assert_true(c.half_width[EXP_ESTIMATOR_HL] < 0.02);
}

static void intervals_cover_under_drift_and_stay_honest_about_it(void **state)
{
    (void)state;
    /* a random walk and a slow swing of +-10 % over the run: the pairs cancel what is slow */
    synthetic_t m = {.effect = 0.05, .phi = 0.5, .sigma = 0.03, .drift_walk = 0.002, .drift_sine = 0.1};
    coverage_t c = coverage("drift", &m, 10, 400, 1.0);
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_HL]));
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_T]));
}

static void no_effect_is_found_as_none(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0, .phi = 0.5, .sigma = 0.03, .drift_walk = 0.001};
    coverage_t c = coverage("no effect", &m, 6, 400, 1.0);
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_HL]));
}

/* Issue 36's host: two speeds 35 % apart, a state lasting 1 to 5 s, in both arms. A pair that
 * straddles a switch is off by +-30 %; the rank interval counts it as one rank among the pairs. */
static void intervals_cover_on_a_host_with_two_speeds(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0.05, .phi = 0.5, .sigma = 0.03, .state_gap = 0.35, .dwell_min = 1, .dwell_max = 5};
    coverage_t c = coverage("two-state host", &m, 12, 400, 1.0);
    assert_true(within_the_bar(c.covered[EXP_ESTIMATOR_HL]));
    coverage_t few = coverage("two-state host, few pairs", &m, 6, 400, 1.0);
    assert_true(within_the_bar(few.covered[EXP_ESTIMATOR_HL]) || few.covered[EXP_ESTIMATOR_HL] > 0.98);
    /* the same 24 s in blocks of 20 steps instead of 40: fewer pairs straddle a switch, more pairs */
    coverage_t half = coverage("two-state host, 20-step blocks", &m, 24, 400, 0.5);
    assert_true(within_the_bar(half.covered[EXP_ESTIMATOR_HL]));
    print_message("# two-state host in 24 s: HL half width +-%.4f in 40-step blocks, +-%.4f in 20-step blocks\n",
                  c.half_width[EXP_ESTIMATOR_HL], half.half_width[EXP_ESTIMATOR_HL]);
}

/* Why a short Table II run takes blocks of fewer than 40 steps (experiment_dwell.h): in the same
 * 12 s, 12 pairs of 20 steps against 6 pairs of 40, on a steady host and on the two-state one. */
static void a_short_run_is_better_served_by_more_shorter_pairs(void **state)
{
    (void)state;
    synthetic_t steady = {.effect = 0.12, .phi = 0.6, .sigma = 0.04};
    synthetic_t switching =
        {.effect = 0.05, .phi = 0.5, .sigma = 0.03, .state_gap = 0.35, .dwell_min = 1, .dwell_max = 5};
    const synthetic_t *hosts[] = {&steady, &switching};
    const char *names[] = {"steady host in 12 s", "two-state host in 12 s"};
    for (int h = 0; h < 2; h++) {
        coverage_t six = coverage(names[h], hosts[h], 6, 400, 1.0);
        coverage_t twelve = coverage(names[h], hosts[h], 12, 400, 0.5);
        assert_true(within_the_bar(twelve.covered[EXP_ESTIMATOR_HL]));
        assert_true(twelve.half_width[EXP_ESTIMATOR_HL] < six.half_width[EXP_ESTIMATOR_HL]);
    }
}

static void more_pairs_narrow_the_interval(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0.1, .phi = 0.5, .sigma = 0.05, .drift_walk = 0.002};
    coverage_t few = coverage("6 pairs", &m, 6, 100, 1.0), many = coverage("24 pairs", &m, 24, 100, 1.0);
    assert_true(many.half_width[EXP_ESTIMATOR_HL] < few.half_width[EXP_ESTIMATOR_HL] * 0.7);
}

static void pairs_need_steps_on_both_sides(void **state)
{
    (void)state;
    exp_block_t b[] = {
        {.setting = 0, .pair = 0, .step_s = 1.0, .nsteps = 10},
        {.setting = 1, .pair = 0, .step_s = 1.2, .nsteps = 10},
        {.setting = 1, .pair = 1, .step_s = 1.1, .nsteps = 10},
        {.setting = 0, .pair = 1, .step_s = 1.0, .nsteps = 2}, /* too few: the pair is left out */
        {.setting = 2, .pair = 2, .step_s = 1.5, .nsteps = 10},
        {.setting = 0, .pair = 2, .step_s = 1.0, .nsteps = 10},
    };
    int used;
    exp_slowdown_t d = exp_blocks_slowdown(b, 6, 1, 5, &used);
    assert_int_equal(used, 1);
    assert_false(d.valid);
    assert_float_equal(d.slowdown, 0.2, 1e-12);
    assert_true(isinf(exp_half_width(&d)));
    d = exp_blocks_slowdown(b, 6, 3, 5, &used);
    assert_int_equal(used, 0);
    assert_float_equal(d.slowdown, 0, 0);
    /* a block is a figure (a row of runs.csv) with its partner only, quiet or noisy */
    assert_true(exp_block_paired(b, 6, &b[0], 5) && exp_block_paired(b, 6, &b[1], 5));
    assert_false(exp_block_paired(b, 6, &b[2], 5) || exp_block_paired(b, 6, &b[3], 5));
    assert_true(exp_block_paired(b, 6, &b[4], 5) && exp_block_paired(b, 6, &b[5], 5));
    assert_false(exp_block_paired(b, 5, &b[4], 5)); /* its partner not among the blocks */
}

/* The guarded run's batches against its lead-in's and lead-out's: a shift of the logs by ranks,
 * which one batch caught in a slow state of the host moves no further than one rank. */
static void guarded_batches_are_compared_by_ranks(void **state)
{
    (void)state;
    double quiet[8], noisy[12];
    for (int i = 0; i < 8; i++)
        quiet[i] = 0.025 * (1 + 0.01 * ((i * 3) % 8));
    for (int i = 0; i < 12; i++)
        noisy[i] = 0.025 * 1.1 * (1 + 0.01 * ((i * 5) % 12));
    exp_slowdown_t hl = exp_unpaired_slowdown(EXP_ESTIMATOR_HL, quiet, 8, noisy, 12);
    assert_true(hl.valid && hl.ci_low < 0.11 && hl.ci_high > 0.11 && hl.level >= 0.95);
    exp_slowdown_t t = exp_unpaired_slowdown(EXP_ESTIMATOR_T, quiet, 8, noisy, 12);
    exp_slowdown_t welch = exp_slowdown(quiet, 8, noisy, 12);
    assert_float_equal(t.ci_low, welch.ci_low, 1e-15); /* t is the Welch interval it was */
    noisy[4] *= 1.35;                                  /* one batch in the host's slow state */
    exp_slowdown_t wild = exp_unpaired_slowdown(EXP_ESTIMATOR_HL, quiet, 8, noisy, 12);
    assert_true(fabs(wild.slowdown - hl.slowdown) < 0.01);
    assert_true(wild.ci_high - wild.ci_low < 1.5 * (hl.ci_high - hl.ci_low));
    exp_slowdown_t wild_t = exp_unpaired_slowdown(EXP_ESTIMATOR_T, quiet, 8, noisy, 12);
    assert_true(wild_t.ci_high - wild_t.ci_low > 2 * (t.ci_high - t.ci_low));
}

static void the_estimator_is_hodges_lehmann_unless_the_bench_says(void **state)
{
    (void)state;
    unsetenv("COSCHED_EXPERIMENT_ESTIMATOR");
    assert_int_equal(exp_estimator(), EXP_ESTIMATOR_HL);
    setenv("COSCHED_EXPERIMENT_ESTIMATOR", "t", 1);
    assert_int_equal(exp_estimator(), EXP_ESTIMATOR_T);
    setenv("COSCHED_EXPERIMENT_ESTIMATOR", "sign", 1);
    assert_int_equal(exp_estimator(), EXP_ESTIMATOR_SIGN);
    setenv("COSCHED_EXPERIMENT_ESTIMATOR", "bogus", 1); /* said on stderr once */
    assert_int_equal(exp_estimator(), EXP_ESTIMATOR_HL);
    unsetenv("COSCHED_EXPERIMENT_ESTIMATOR");
    assert_non_null(strstr(exp_estimator_pairs_method(EXP_ESTIMATOR_HL), "Hodges-Lehmann"));
    assert_non_null(strstr(exp_estimator_batches_method(EXP_ESTIMATOR_HL), "rank-sum"));
    assert_non_null(strstr(exp_estimator_pairs_method(EXP_ESTIMATOR_T), "Student's t"));
}

static void batches_take_medians_of_whole_windows(void **state)
{
    (void)state;
    exp_step_t steps[100];
    for (int i = 0; i < 100; i++) /* 0.1 s steps from t = 0.1 to 10.0; 1 s batches hold 10 */
        steps[i] = (exp_step_t){0.1 * (i + 1), i < 50 ? 0.1 : 0.1 + 0.001 * (i - 50)};
    double medians[16];
    int n = exp_batch_figures(steps, 100, 2.0, 7.5, 1.0, 5, medians, 16);
    assert_int_equal(n, 5); /* 2-3, 3-4, 4-5, 5-6, 6-7; 7-8 does not fit before 7.5 */
    assert_float_equal(medians[0], 0.1, 1e-9);
    assert_true(medians[4] > medians[3]);
    assert_int_equal(exp_batch_figures(steps, 100, 2.0, 7.5, 1.0, 12, medians, 16), 0); /* 10 or 11 a batch */
    assert_int_equal(exp_batch_figures(steps, 100, 2.0, 7.5, 1.0, 5, medians, 2), 2);
}

static void the_guard_settles_once_its_share_stays_within_a_halving(void **state)
{
    (void)state;
    /* the shares of a demo run: halvings, give-backs, a probe back down */
    const double t[] = {50.0, 50.5, 50.9, 52.7, 53.0, 53.2, 55.2, 57.2, 60.3, 62.5, 64.3, 70.5, 75.0};
    const double share[] = {1, 0.9, 0.45, 0.35, 0.175, 0.0875, 0.1875, 0.2875, 0.3875, 0.2875, 0.1875, 0.2375, 0.2375};
    assert_float_equal(exp_settle_time(t, share, 13), 57.2, 1e-12);
    const double flat[] = {1, 1, 1, 1};
    assert_float_equal(exp_settle_time(t, flat, 4), 50.0, 1e-12); /* harmless noise: from its start */
    const double paused[] = {1, 0.5, 0.25, 0, 0.05, 0, 0.1};      /* 0 and give-backs of up to 0.1 */
    assert_float_equal(exp_settle_time(t, paused, 7), 52.7, 1e-12);
    const double swings[] = {1, 0.1, 1, 0.1, 1}; /* never within a halving: the last change */
    assert_float_equal(exp_settle_time(t, swings, 5), 53.0, 1e-12);
    assert_float_equal(exp_settle_time(t, share, 0), 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_setting_gets_its_pairs_and_every_pair_is_adjacent),
        cmocka_unit_test(the_order_is_random_but_reproducible),
        cmocka_unit_test(a_block_keeps_whole_steps_after_the_drop),
        cmocka_unit_test(a_short_blocks_figure_is_its_mean_a_long_ones_its_median),
        cmocka_unit_test(intervals_cover_a_known_effect_with_autocorrelation),
        cmocka_unit_test(intervals_cover_under_drift_and_stay_honest_about_it),
        cmocka_unit_test(no_effect_is_found_as_none),
        cmocka_unit_test(intervals_cover_on_a_host_with_two_speeds),
        cmocka_unit_test(a_short_run_is_better_served_by_more_shorter_pairs),
        cmocka_unit_test(more_pairs_narrow_the_interval),
        cmocka_unit_test(pairs_need_steps_on_both_sides),
        cmocka_unit_test(guarded_batches_are_compared_by_ranks),
        cmocka_unit_test(the_estimator_is_hodges_lehmann_unless_the_bench_says),
        cmocka_unit_test(batches_take_medians_of_whole_windows),
        cmocka_unit_test(the_guard_settles_once_its_share_stays_within_a_halving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
