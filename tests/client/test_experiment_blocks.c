/* test_experiment_blocks: the blocked design of `cosched experiment` — the block order (pairs,
 * randomized, reproducible), which steps a block keeps, and paired intervals that cover a known
 * effect at their stated rate on synthetic step streams with autocorrelation and drift, over many
 * seeds; the guarded configuration's batch medians. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
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
    assert_float_equal(b.median, 0.2, 1e-12);
    exp_block_t empty = {.start = 20.0, .end = 21.0};
    exp_block_measure(&empty, steps, 6, 0.1);
    assert_int_equal(empty.nsteps, 0);
    assert_float_equal(empty.median, 0, 0);
}

/* A trainer whose log step time is base + effect (in noise blocks) + drift + AR(1) noise. */
typedef struct synthetic {
    double effect, phi, sigma, drift_walk, drift_sine;
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

/* Play the blocks (block_s seconds each) with steps of about 25 ms, measure them, and return
 * the slowdown of setting 1. */
static exp_slowdown_t simulate(const synthetic_t *m, int pairs, uint64_t seed, double block_s)
{
    static exp_block_t blocks[MAX_BLOCKS];
    static exp_step_t steps[MAX_STEPS];
    int nblocks = exp_blocks_plan(1, pairs, 0, seed, blocks);
    uint64_t rng = seed * 2654435761ULL + 1;
    double t = 1000, e = 0, walk = 0, phase = gaussian(&rng);
    int nsteps = 0;
    for (int b = 0; b < nblocks; b++) {
        blocks[b].start = t;
        blocks[b].end = t + block_s;
        while (t < blocks[b].end && nsteps < MAX_STEPS) {
            e = m->phi * e + m->sigma * sqrt(1 - m->phi * m->phi) * gaussian(&rng);
            walk += m->drift_walk * gaussian(&rng);
            double log_step = log(0.025) + (blocks[b].setting ? log1p(m->effect) : 0) + e + walk +
                              m->drift_sine * sin(t / 7.0 + phase);
            double seconds = exp(log_step);
            t += seconds;
            steps[nsteps++] = (exp_step_t){t, seconds};
        }
    }
    for (int b = 0; b < nblocks; b++)
        exp_block_measure(&blocks[b], steps, nsteps, 0.075);
    int used;
    exp_slowdown_t d = exp_blocks_slowdown(blocks, nblocks, 1, 5, &used);
    assert_int_equal(used, pairs);
    return d;
}

/* Coverage over seeds: the share of intervals that hold the true effect. */
static double coverage(const synthetic_t *m, int pairs, int seeds, double *mean_half_width)
{
    int covered = 0;
    double widths = 0;
    for (int s = 1; s <= seeds; s++) {
        exp_slowdown_t d = simulate(m, pairs, (uint64_t)s, 1.0);
        assert_true(d.valid);
        covered += d.ci_low <= m->effect && m->effect <= d.ci_high;
        widths += exp_half_width(&d);
    }
    *mean_half_width = widths / seeds;
    return (double)covered / seeds;
}

static void intervals_cover_a_known_effect_with_autocorrelation(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0.12, .phi = 0.6, .sigma = 0.04};
    double width;
    double c = coverage(&m, 8, 400, &width);
    print_message("# coverage %.3f, mean half width %.4f (AR(1) 0.6, 4 %%)\n", c, width);
    /* 400 seeds: a true 95 % lands in [0.925, 0.975] with probability about 0.97 */
    assert_true(c >= 0.92 && c <= 0.98);
    assert_true(width < 0.02);
}

static void intervals_cover_under_drift_and_stay_honest_about_it(void **state)
{
    (void)state;
    /* a random walk and a slow swing of +-10 % over the run: the pairs cancel what is slow */
    synthetic_t m = {.effect = 0.05, .phi = 0.5, .sigma = 0.03, .drift_walk = 0.002, .drift_sine = 0.1};
    double width;
    double c = coverage(&m, 10, 400, &width);
    print_message("# coverage %.3f, mean half width %.4f (drift)\n", c, width);
    assert_true(c >= 0.92 && c <= 0.98);
}

static void no_effect_is_found_as_none(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0, .phi = 0.5, .sigma = 0.03, .drift_walk = 0.001};
    double width;
    double c = coverage(&m, 6, 400, &width);
    assert_true(c >= 0.92 && c <= 0.98);
}

static void more_pairs_narrow_the_interval(void **state)
{
    (void)state;
    synthetic_t m = {.effect = 0.1, .phi = 0.5, .sigma = 0.05, .drift_walk = 0.002};
    double few, many;
    coverage(&m, 4, 100, &few);
    coverage(&m, 16, 100, &many);
    assert_true(many < few * 0.7);
}

static void pairs_need_steps_on_both_sides(void **state)
{
    (void)state;
    exp_block_t b[] = {
        {.setting = 0, .pair = 0, .median = 1.0, .nsteps = 10},
        {.setting = 1, .pair = 0, .median = 1.2, .nsteps = 10},
        {.setting = 1, .pair = 1, .median = 1.1, .nsteps = 10},
        {.setting = 0, .pair = 1, .median = 1.0, .nsteps = 2}, /* too few: the pair is left out */
        {.setting = 2, .pair = 2, .median = 1.5, .nsteps = 10},
        {.setting = 0, .pair = 2, .median = 1.0, .nsteps = 10},
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

static void batches_take_medians_of_whole_windows(void **state)
{
    (void)state;
    exp_step_t steps[100];
    for (int i = 0; i < 100; i++) /* 0.1 s steps from t = 0.1 to 10.0; 1 s batches hold 10 */
        steps[i] = (exp_step_t){0.1 * (i + 1), i < 50 ? 0.1 : 0.1 + 0.001 * (i - 50)};
    double medians[16];
    int n = exp_batch_medians(steps, 100, 2.0, 7.5, 1.0, 5, medians, 16);
    assert_int_equal(n, 5); /* 2-3, 3-4, 4-5, 5-6, 6-7; 7-8 does not fit before 7.5 */
    assert_float_equal(medians[0], 0.1, 1e-9);
    assert_true(medians[4] > medians[3]);
    assert_int_equal(exp_batch_medians(steps, 100, 2.0, 7.5, 1.0, 12, medians, 16), 0); /* 10 or 11 a batch */
    assert_int_equal(exp_batch_medians(steps, 100, 2.0, 7.5, 1.0, 5, medians, 2), 2);
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
        cmocka_unit_test(intervals_cover_a_known_effect_with_autocorrelation),
        cmocka_unit_test(intervals_cover_under_drift_and_stay_honest_about_it),
        cmocka_unit_test(no_effect_is_found_as_none),
        cmocka_unit_test(more_pairs_narrow_the_interval),
        cmocka_unit_test(pairs_need_steps_on_both_sides),
        cmocka_unit_test(batches_take_medians_of_whole_windows),
        cmocka_unit_test(the_guard_settles_once_its_share_stays_within_a_halving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
