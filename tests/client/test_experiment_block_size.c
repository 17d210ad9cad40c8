/* test_experiment_block_size: the blocked design's block length from time (the noise's transient
 * and a few whole steps), the transients per noise kind, and the time a precision would take. Why
 * the rule is this one: test_experiment_block_time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "experiment_block_size.h"

static void a_fast_trainers_blocks_are_the_shortest_the_noise_times(void **state)
{
    (void)state;
    exp_block_size_t b = exp_block_size(0.025, exp_noise_settle_seconds("memory"), EXP_BLOCK_SHORTEST_S);
    assert_float_equal(b.seconds, 0.2, 1e-12); /* 5 steps and the drop would be 0.135 s */
    assert_float_equal(b.drop, 0.01, 1e-12);
    assert_int_equal(b.steps, 7); /* (0.2 - 0.01) / 0.025 - 1 */
    /* the sweep's duty cycles of 0.1 s want five periods to a block */
    assert_float_equal(exp_block_size(0.025, 0.01, EXP_BLOCK_SHORTEST_DUTY_S).seconds, 0.5, 1e-12);
}

static void a_slow_step_gets_the_drop_and_four_whole_steps(void **state)
{
    (void)state;
    /* the 130 ms script: 0.66 s, where the old rule took 20 steps, 2.6 s */
    exp_block_size_t b = exp_block_size(0.13, exp_noise_settle_seconds("memory"), EXP_BLOCK_SHORTEST_S);
    assert_float_equal(b.seconds, 0.01 + 5 * 0.13, 1e-12);
    assert_int_equal(b.steps, 4);
    /* io's page cache takes 0.8 s to settle: the drop comes first */
    b = exp_block_size(0.13, exp_noise_settle_seconds("io"), EXP_BLOCK_SHORTEST_S);
    assert_float_equal(b.seconds, 0.8 + 5 * 0.13, 1e-12);
    assert_float_equal(b.drop, 0.8, 1e-12);
    assert_float_equal(exp_block_size(2.0, 0.01, EXP_BLOCK_SHORTEST_S).seconds, 10.01, 1e-12);
    /* never longer than two minutes, and a step time unknown is taken for a fast one */
    assert_float_equal(exp_block_size(60, 0.01, EXP_BLOCK_SHORTEST_S).seconds, 120, 1e-12);
    assert_int_equal(exp_block_size(60, 0.01, EXP_BLOCK_SHORTEST_S).steps, 1);
    assert_float_equal(exp_block_size(0, 0.01, EXP_BLOCK_SHORTEST_S).seconds, 0.2, 1e-12);
}

static void each_noise_kind_has_its_measured_transient(void **state)
{
    (void)state;
    assert_float_equal(exp_noise_settle_seconds("memory"), 0.01, 1e-12);
    assert_float_equal(exp_noise_settle_seconds("cpu"), 0.01, 1e-12);
    assert_float_equal(exp_noise_settle_seconds("network"), 0.05, 1e-12);
    assert_float_equal(exp_noise_settle_seconds("io"), 0.8, 1e-12);
    assert_float_equal(exp_noise_settle_seconds("unknown"), 0.8, 1e-12); /* the longest known */
    assert_float_equal(exp_noise_settle_seconds(NULL), 0.8, 1e-12);
}

static void the_time_to_a_precision_grows_with_its_square(void **state)
{
    (void)state;
    /* the run: +-19.4 points on 7 pairs of 2.52 s blocks; +-2 would take 7 x 9.7^2 pairs */
    double s = exp_seconds_to_precision(0.194, 7, 2.52, 0.02);
    assert_float_equal(s, 7 * (0.194 / 0.02) * (0.194 / 0.02) * 2 * 2.52, 1e-6);
    assert_true(s > 3000 && s < 3400);
    assert_float_equal(exp_seconds_to_precision(0.015, 20, 1, 0.02), 0, 0); /* there already */
    /* within the target on 8 pairs, but precise only from 20: the 20 pairs' time */
    assert_float_equal(exp_seconds_to_precision(0.015, 8, 1, 0.02), 20 * 2 * 1, 1e-9);
    assert_true(exp_seconds_to_precision(INFINITY, 3, 1, 0.02) < 0); /* no interval yet */
    assert_true(exp_seconds_to_precision(0.1, 0, 1, 0.02) < 0);
    assert_true(exp_seconds_to_precision(0.1, 10, 1, 0) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_fast_trainers_blocks_are_the_shortest_the_noise_times),
        cmocka_unit_test(a_slow_step_gets_the_drop_and_four_whole_steps),
        cmocka_unit_test(each_noise_kind_has_its_measured_transient),
        cmocka_unit_test(the_time_to_a_precision_grows_with_its_square),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
