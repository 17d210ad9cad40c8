/* test_experiment_stats: the figures `cosched experiment` prints — Table II's columns from the
 * study's own numbers, slowdown intervals that behave as a 95 % interval must, and the sweep's
 * settings and its largest setting within the budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "experiment.h"
#include "experiment_stats.h"

/* Table II of Rojas et al., exclusive NUMA domains: no noise and with noise, 10 repetitions. */
static const double exclusive_quiet[] = {135.36, 138.81, 136.11, 134.32, 136.01,
                                         135.17, 137.26, 134.33, 135.05, 135.31};
static const double exclusive_noisy[] = {144.24, 138.94, 138.31, 134.83, 138.12,
                                         137.04, 135.39, 138.29, 141.70, 135.16};
static const double shared_noisy[] = {284.34, 190.37, 242.95, 245.49, 263.57, 194.85, 257.87, 283.81, 293.36, 306.13};

static void summary_reproduces_the_studys_table(void **state)
{
    (void)state;
    exp_summary_t s = exp_summarize(exclusive_noisy, 10);
    assert_int_equal(s.n, 10);
    assert_float_equal(s.min, 134.83, 1e-9);
    assert_float_equal(s.max, 144.24, 1e-9);
    assert_float_equal(s.mean, 138.20, 0.005); /* the paper's "Average time" */
    assert_float_equal(s.sd, 2.97, 0.005);     /* its "Standard Dev." (n - 1) */
    s = exp_summarize(shared_noisy, 10);
    assert_float_equal(s.mean, 256.27, 0.005);
    assert_float_equal(s.sd, 39.26, 0.005);
    assert_true(s.q1 <= s.median && s.median <= s.q3);
}

static void quartiles_interpolate_between_order_statistics(void **state)
{
    (void)state;
    const double v[] = {4, 1, 3, 2}; /* unsorted on purpose */
    exp_summary_t s = exp_summarize(v, 4);
    assert_float_equal(s.median, 2.5, 1e-12);
    assert_float_equal(s.q1, 1.75, 1e-12);
    assert_float_equal(s.q3, 3.25, 1e-12);
    assert_float_equal(v[0], 4, 0); /* the input is left alone */
    s = exp_summarize(v, 1);
    assert_float_equal(s.sd, 0, 0);
    assert_float_equal(s.median, 4, 0);
    s = exp_summarize(v, 0);
    assert_int_equal(s.n, 0);
}

static void t_quantile_matches_the_tables_and_between_them(void **state)
{
    (void)state;
    assert_float_equal(exp_t975(1), 12.706, 0.001);
    assert_float_equal(exp_t975(2), 4.303, 0.001);
    assert_float_equal(exp_t975(9), 2.262, 0.001);
    assert_float_equal(exp_t975(30), 2.042, 0.001);
    assert_float_equal(exp_t975(1e7), 1.960, 0.001);
    assert_float_equal(exp_t975(2.5), 3.5747, 0.001); /* a Welch df is rarely whole */
    assert_float_equal(exp_t975(0.3), exp_t975(1), 0);
}

static void exclusive_noise_costs_1_8_percent_and_its_interval_holds_it(void **state)
{
    (void)state;
    exp_slowdown_t d = exp_slowdown(exclusive_quiet, 10, exclusive_noisy, 10);
    assert_true(d.valid);
    assert_float_equal(d.slowdown, 0.018, 0.001); /* the study's 135.8 s -> 138.2 s */
    assert_true(d.ci_low < d.slowdown && d.slowdown < d.ci_high);
    assert_true(d.ci_low > 0); /* a small but real slowdown at n = 10 */
    assert_true(d.ci_high < 0.04);
    assert_true(d.df > 9 && d.df < 18);
}

static void shared_noise_interval_is_wide_and_far_from_zero(void **state)
{
    (void)state;
    exp_slowdown_t d = exp_slowdown(exclusive_quiet, 10, shared_noisy, 10);
    assert_true(d.valid);
    assert_true(d.slowdown > 0.75 && d.slowdown < 0.9);
    assert_true(d.ci_low > 0.6);
    assert_true(d.ci_high - d.ci_low > 0.2); /* the noisy side's spread shows */
}

static void the_same_times_give_no_slowdown_and_an_interval_around_zero(void **state)
{
    (void)state;
    exp_slowdown_t d = exp_slowdown(exclusive_quiet, 10, exclusive_quiet, 10);
    assert_float_equal(d.slowdown, 0, 1e-12);
    assert_true(d.ci_low < 0 && d.ci_high > 0);
    const double same[] = {2, 2, 2};
    d = exp_slowdown(same, 3, same, 3);
    assert_true(d.valid);
    assert_float_equal(d.ci_low, 0, 1e-12);
    assert_float_equal(d.ci_high, 0, 1e-12);
}

static void one_repetition_gives_a_slowdown_without_an_interval(void **state)
{
    (void)state;
    const double base[] = {10}, noisy[] = {11, 12};
    exp_slowdown_t d = exp_slowdown(base, 1, noisy, 2);
    assert_false(d.valid);
    assert_true(d.slowdown > 0.09 && d.slowdown < 0.15);
    d = exp_slowdown(base, 0, noisy, 2);
    assert_false(d.valid);
    assert_float_equal(d.slowdown, 0, 0);
}

/* Coverage: draws from two normal distributions 10 % apart, with a fixed seed; the interval must
 * hold the true ratio in about 95 % of 2000 experiments (not fewer than 92 %, not all). */
static double normal(unsigned *seed)
{
    double u1 = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0), u2 = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static void intervals_cover_the_true_slowdown_about_95_percent_of_the_time(void **state)
{
    (void)state;
    unsigned seed = 20261123;
    int covered = 0, trials = 2000;
    for (int t = 0; t < trials; t++) {
        double base[5], noisy[5];
        for (int i = 0; i < 5; i++) {
            base[i] = 100 * exp(0.02 * normal(&seed));
            noisy[i] = 110 * exp(0.05 * normal(&seed));
        }
        exp_slowdown_t d = exp_slowdown(base, 5, noisy, 5);
        covered += d.ci_low <= 0.10 && 0.10 <= d.ci_high;
    }
    assert_true(covered >= trials * 92 / 100);
    assert_true(covered < trials);
}

static void intensity_sweep_is_no_noise_then_tenths(void **state)
{
    (void)state;
    exp_options_t o = {.sweep = EXP_SWEEP_INTENSITY, .placement = "shared"};
    exp_config_t c[EXP_MAX_CONFIGS];
    assert_int_equal(exp_sweep_configs(&o, c), 11);
    assert_false(c[0].noise);
    assert_string_equal(c[0].name, "no noise");
    assert_true(c[1].noise);
    assert_float_equal(c[1].intensity, 0.1, 1e-12);
    assert_float_equal(c[10].intensity, 1.0, 1e-12);
    assert_string_equal(c[10].name, "intensity 1.0");
    assert_string_equal(c[5].policy, "shared");
}

static void threads_sweep_spreads_at_most_15_points_up_to_every_core(void **state)
{
    (void)state;
    exp_options_t o = {.sweep = EXP_SWEEP_THREADS, .placement = "exclusive", .noise_cores = 3};
    exp_config_t c[EXP_MAX_CONFIGS];
    assert_int_equal(exp_sweep_configs(&o, c), 4);
    assert_int_equal(c[1].noise_ranks, 1);
    assert_int_equal(c[3].noise_ranks, 3);
    assert_string_equal(c[3].name, "3 threads");
    o.noise_cores = 42;
    int n = exp_sweep_configs(&o, c);
    assert_int_equal(n, EXP_MAX_CONFIGS);
    assert_int_equal(c[n - 1].noise_ranks, 42);
    for (int i = 2; i < n; i++)
        assert_true(c[i].noise_ranks > c[i - 1].noise_ranks);
}

/* Settings whose repetitions take base x factor seconds, two repetitions 1 % apart. */
static void fill(exp_result_t *r, int n, const double *factor)
{
    for (int i = 0; i < n; i++) {
        r[i].config.noise = i > 0;
        r[i].nreps = 2;
        r[i].reps[0].seconds = 10 * factor[i];
        r[i].reps[1].seconds = 10.1 * factor[i];
    }
}

/* Measured settings (the blocked design's): slowdown s with the interval [lo, hi]. */
static void measure(exp_result_t *r, int i, double s, double lo, double hi, bool valid)
{
    r[i].config.noise = i > 0;
    r[i].measured = true;
    r[i].slowdown = (exp_slowdown_t){.slowdown = s, .ci_low = lo, .ci_high = hi, .valid = valid};
    r[i].npairs = EXP_PROVEN_MIN_PAIRS;
}

static void the_safe_setting_is_the_largest_proven_within_budget(void **state)
{
    (void)state;
    exp_options_t o = {.sweep = EXP_SWEEP_INTENSITY, .budget = 0.05};
    static exp_result_t r[5];
    measure(r, 0, 0, 0, 0, false);
    measure(r, 1, 0.01, -0.01, 0.03, true);
    measure(r, 2, 0.03, 0.01, 0.049, true);
    measure(r, 3, 0.04, 0.02, 0.06, true); /* its estimate is within, its interval is not: not proven */
    measure(r, 4, 0.09, 0.07, 0.11, true);
    assert_int_equal(exp_sweep_safe(&o, r, 5), 2);
    measure(r, 1, 0.01, -0.05, 0.07, true); /* a wide interval low down does not hide a proven one above */
    assert_int_equal(exp_sweep_safe(&o, r, 5), 2);
    r[2].npairs = EXP_PROVEN_MIN_PAIRS - 1; /* an interval from too few pairs proves nothing */
    assert_int_equal(exp_sweep_safe(&o, r, 5), 0);
    measure(r, 2, 0.01, 0.01, 0.01, false); /* no interval: one pair, nothing proven */
    assert_int_equal(exp_sweep_safe(&o, r, 5), 0);
    /* the run design's repetitions: two 1 % apart give an interval of about +-3 points */
    const double flat[] = {1, 1, 1, 1, 1.2};
    fill(r, 5, flat);
    for (int i = 0; i < 5; i++)
        r[i].measured = false;
    assert_int_equal(exp_sweep_safe(&o, r, 5), 3);
    const double never[] = {1, 1.2, 1.3, 1.4, 1.5};
    fill(r, 5, never);
    assert_int_equal(exp_sweep_safe(&o, r, 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_reproduces_the_studys_table),
        cmocka_unit_test(quartiles_interpolate_between_order_statistics),
        cmocka_unit_test(t_quantile_matches_the_tables_and_between_them),
        cmocka_unit_test(exclusive_noise_costs_1_8_percent_and_its_interval_holds_it),
        cmocka_unit_test(shared_noise_interval_is_wide_and_far_from_zero),
        cmocka_unit_test(the_same_times_give_no_slowdown_and_an_interval_around_zero),
        cmocka_unit_test(one_repetition_gives_a_slowdown_without_an_interval),
        cmocka_unit_test(intervals_cover_the_true_slowdown_about_95_percent_of_the_time),
        cmocka_unit_test(intensity_sweep_is_no_noise_then_tenths),
        cmocka_unit_test(threads_sweep_spreads_at_most_15_points_up_to_every_core),
        cmocka_unit_test(the_safe_setting_is_the_largest_proven_within_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
