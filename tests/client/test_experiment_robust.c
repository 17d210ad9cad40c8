/* test_experiment_robust: the rank-based estimates of `cosched experiment` — the signed-rank and
 * rank-sum distributions against the critical values every table prints, a Hodges-Lehmann
 * estimate worked by hand, symmetry, and indifference to one wild value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "experiment_robust.h"

/* The two-sided 5 % critical value c of a statistic: P(<= c) <= 0.025 < P(<= c + 1). */
static void critical_value_is(double (*cdf)(int, int, int), int m, int n, int c)
{
    assert_true(cdf(m, n, c) <= 0.025);
    assert_true(cdf(m, n, c + 1) > 0.025);
}

static double signed_rank_cdf(int unused, int n, int t)
{
    (void)unused;
    return exp_signed_rank_cdf(n, t);
}

static void the_signed_rank_distribution_has_the_tables_critical_values(void **state)
{
    (void)state;
    /* by hand for n = 8: rank sums of 0..3 come from {}, {1}, {2}, {3}, {1,2}: 5 of 256 patterns;
     * 4 adds {4} and {1,3}: 7 of 256 = 0.027 */
    assert_float_equal(exp_signed_rank_cdf(8, 3), 5.0 / 256, 1e-15);
    assert_float_equal(exp_signed_rank_cdf(8, 4), 7.0 / 256, 1e-15);
    assert_float_equal(exp_signed_rank_cdf(5, 0), 1.0 / 32, 1e-15); /* above 0.025: no 95 % interval at 5 */
    const int n[] = {6, 7, 8, 10, 15, 20, 25}, c[] = {0, 2, 3, 8, 25, 52, 89};
    for (int i = 0; i < 7; i++)
        critical_value_is(signed_rank_cdf, 0, n[i], c[i]);
    assert_float_equal(exp_signed_rank_cdf(10, 55), 1, 0);
    assert_float_equal(exp_signed_rank_cdf(10, -1), 0, 0);
}

static void the_rank_sum_distribution_has_the_tables_critical_values(void **state)
{
    (void)state;
    assert_float_equal(exp_rank_sum_cdf(4, 4, 0), 1.0 / 70, 1e-15); /* one of C(8, 4) orders */
    assert_float_equal(exp_rank_sum_cdf(4, 4, 1), 2.0 / 70, 1e-15);
    const int m[] = {4, 5, 8, 10, 6, 20}, n[] = {4, 5, 8, 10, 12, 20}, c[] = {0, 2, 13, 23, 14, 127};
    for (int i = 0; i < 6; i++)
        critical_value_is(exp_rank_sum_cdf, m[i], n[i], c[i]);
    assert_float_equal(exp_rank_sum_cdf(3, 7, 3), exp_rank_sum_cdf(7, 3, 3), 1e-15);
}

/* Worked by hand: x = -1, 0, 2, 3, 5, 12. The 21 Walsh averages (x_i + x_j) / 2, i <= j, sorted:
 * -1 -0.5 0 0.5 1 1 1.5 2 2 2.5 [2.5] 3 3.5 4 5 5.5 6 7 7.5 8.5 12; the 11th, 2.5, is the estimate
 * (the mean is 3.5, pulled by the 12). n = 6: only T+ = 0 is in the 2.5 % tail (1 of 64), so the
 * interval is the 1st to 21st average, -1 .. 12, at level 1 - 2/64 = 96.9 %. */
static void hodges_lehmann_by_hand(void **state)
{
    (void)state;
    const double x[] = {3, -1, 12, 0, 5, 2};
    exp_robust_t r = exp_signed_rank(x, 6);
    assert_true(r.valid);
    assert_int_equal(r.n, 6);
    assert_float_equal(r.estimate, 2.5, 1e-12);
    assert_float_equal(r.low, -1, 1e-12);
    assert_float_equal(r.high, 12, 1e-12);
    assert_float_equal(r.level, 62.0 / 64, 1e-12);
}

static void one_wild_pair_moves_nothing(void **state)
{
    (void)state;
    /* the six Walsh averages with the 12 are the six largest; a 1000 keeps them there */
    const double wild[] = {3, -1, 1000, 0, 5, 2};
    exp_robust_t r = exp_signed_rank(wild, 6);
    assert_float_equal(r.estimate, 2.5, 1e-12);
    /* with more pairs, one wild one leaves the interval where it was */
    double x[12], y[12];
    for (int i = 0; i < 12; i++)
        x[i] = y[i] = 0.1 + 0.01 * ((i * 7) % 12);
    y[5] = 0.45; /* a pair that straddled a switch of the host's speed */
    exp_robust_t a = exp_signed_rank(x, 12), b = exp_signed_rank(y, 12);
    assert_true(fabs(b.estimate - a.estimate) < 0.01);
    assert_true(b.high - b.low < 1.5 * (a.high - a.low));
    exp_robust_t s = exp_sign_median(y, 12);
    assert_true(s.low >= 0.1 && s.high <= 0.21);
}

static void mirrored_values_give_a_mirrored_interval(void **state)
{
    (void)state;
    const double x[] = {0.3, -0.1, 0.2, 0.05, 0.12, 0.4, -0.02, 0.08, 0.15, 0.22};
    double neg[10];
    for (int i = 0; i < 10; i++)
        neg[i] = -x[i];
    exp_robust_t a = exp_signed_rank(x, 10), b = exp_signed_rank(neg, 10);
    assert_float_equal(a.estimate, -b.estimate, 1e-12);
    assert_float_equal(a.low, -b.high, 1e-12);
    assert_float_equal(a.high, -b.low, 1e-12);
    /* n = 10: T+ <= 8 is the tail (P = 0.0244), so the 9th to the 47th of 55 averages */
    assert_float_equal(a.level, 1 - 2 * exp_signed_rank_cdf(10, 8), 1e-12);
    assert_true(a.low < a.estimate && a.estimate < a.high);
    exp_robust_t sa = exp_sign_median(x, 10), sb = exp_sign_median(neg, 10);
    assert_float_equal(sa.low, -sb.high, 1e-12);
    /* n = 10, sign test: B <= 1 is the tail (11 of 1024): the 2nd to the 9th value */
    assert_float_equal(sa.low, -0.02, 1e-12);
    assert_float_equal(sa.high, 0.3, 1e-12);
    assert_float_equal(sa.level, 1 - 22.0 / 1024, 1e-12);
}

static void too_few_values_give_the_range_at_its_own_level(void **state)
{
    (void)state;
    const double x[] = {0.1, 0.3, 0.2, 0.25, 0.15};
    exp_robust_t r = exp_signed_rank(x, 5);
    assert_false(r.valid);
    assert_float_equal(r.low, 0.1, 1e-12);
    assert_float_equal(r.high, 0.3, 1e-12);
    assert_float_equal(r.level, 1 - 2.0 / 32, 1e-12);
    r = exp_signed_rank(x, 1);
    assert_false(r.valid);
    assert_float_equal(r.estimate, 0.1, 0);
    r = exp_signed_rank(x, 0);
    assert_false(r.valid);
    assert_float_equal(r.estimate, 0, 0);
    assert_false(exp_rank_sum(x, 3, x, 3).valid); /* 1 of 20 orders: 5 % a side */
    assert_true(exp_rank_sum(x, 4, x, 4).valid);
    assert_false(exp_rank_sum(x, 0, x, 4).valid);
}

static void a_shift_between_two_samples_is_found(void **state)
{
    (void)state;
    double quiet[8], noisy[12];
    for (int i = 0; i < 8; i++)
        quiet[i] = 0.01 * ((i * 5) % 8);
    for (int i = 0; i < 12; i++)
        noisy[i] = 0.2 + 0.01 * ((i * 5) % 12);
    noisy[3] = 5; /* one wild batch */
    exp_robust_t r = exp_rank_sum(quiet, 8, noisy, 12);
    assert_true(r.valid);
    assert_true(r.low <= 0.2 + 0.055 - 0.035 && r.high >= 0.2 + 0.055 - 0.035);
    assert_true(r.high < 0.35 && r.low > 0.1);
    /* large samples: the normal approximation, still about 95 % */
    double a[40], b[40];
    for (int i = 0; i < 40; i++)
        a[i] = b[i] = i;
    r = exp_rank_sum(a, 40, b, 40);
    assert_float_equal(r.estimate, 0, 1e-12);
    assert_true(r.level >= 0.95 && r.level < 0.96);
    r = exp_signed_rank(a, 40);
    assert_true(r.valid && r.level >= 0.95 && r.level < 0.96);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_signed_rank_distribution_has_the_tables_critical_values),
        cmocka_unit_test(the_rank_sum_distribution_has_the_tables_critical_values),
        cmocka_unit_test(hodges_lehmann_by_hand),
        cmocka_unit_test(one_wild_pair_moves_nothing),
        cmocka_unit_test(mirrored_values_give_a_mirrored_interval),
        cmocka_unit_test(too_few_values_give_the_range_at_its_own_level),
        cmocka_unit_test(a_shift_between_two_samples_is_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
