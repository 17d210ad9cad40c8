/* test_experiment_dwell: the lead-in's count of the host's speed switches and the block length
 * chosen from it, on synthetic step streams (one speed, two speeds, one slow step). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "experiment_dwell.h"

enum { STEPS = 400 };

/* 25 ms steps with a +-3 % wobble, 35 % slower in [slow_from, slow_to) of each period (seconds). */
static int stream(exp_step_t *steps, int n, double period, double slow_from, double slow_to)
{
    double t = 0;
    for (int i = 0; i < n; i++) {
        double phase = period > 0 ? fmod(t, period) : 0;
        double s = 0.025 * (1 + 0.03 * sin(i * 2.1)) * (phase >= slow_from && phase < slow_to ? 1.35 : 1);
        t += s;
        steps[i] = (exp_step_t){t, s};
    }
    return n;
}

static void a_steady_host_has_no_switches_and_full_blocks(void **state)
{
    (void)state;
    exp_step_t steps[STEPS];
    int n = stream(steps, 160, 0, 0, 0); /* 4 s */
    exp_dwell_t d = exp_dwell_measure(steps, n);
    assert_int_equal(d.switches, 0);
    assert_float_equal(d.gap, 0, 0);
    assert_float_equal(d.dwell_s, d.seconds, 1e-12);
    assert_true(d.seconds > 3.9 && d.seconds < 4.1);
    assert_int_equal(exp_dwell_block_steps(&d, 0.025, NULL), EXP_BLOCK_STEPS);
    steps[50].seconds = 0.2; /* one slow step (a page fault, a log line) is no state */
    assert_int_equal(exp_dwell_measure(steps, n).switches, 0);
}

static void two_speeds_are_counted_and_shorten_the_blocks(void **state)
{
    (void)state;
    exp_step_t steps[STEPS];
    /* slow from 1 s to 2.5 s of every 3 s: in about 7.5 s, switches at 1, 2.5, 4, 5.5, 7 */
    int n = stream(steps, 260, 3, 1, 2.5);
    exp_dwell_t d = exp_dwell_measure(steps, n);
    assert_int_equal(d.switches, 5);
    assert_true(d.gap > 0.3 && d.gap < 0.4);
    assert_true(d.dwell_s > 1 && d.dwell_s < 1.6);
    assert_int_equal(exp_dwell_block_steps(&d, 0.025, NULL), EXP_BLOCK_STEPS_SHORT); /* 1.3 s / 8: 6 steps */
    /* a long dwell allows longer blocks, up to the steady host's */
    exp_dwell_t slow = {.switches = 1, .dwell_s = 6};
    assert_int_equal(exp_dwell_block_steps(&slow, 0.025, NULL), 30);
    slow.dwell_s = 60;
    assert_int_equal(exp_dwell_block_steps(&slow, 0.025, NULL), EXP_BLOCK_STEPS);
}

static void too_few_steps_say_nothing(void **state)
{
    (void)state;
    exp_step_t steps[8];
    int n = stream(steps, 8, 0, 0, 0);
    exp_dwell_t d = exp_dwell_measure(steps, n);
    assert_int_equal(d.switches, 0);
    assert_int_equal(exp_dwell_block_steps(&d, 0.025, NULL), EXP_BLOCK_STEPS);
    assert_int_equal(exp_dwell_measure(steps, 0).switches, 0);
    exp_dwell_t bad = {.switches = 3, .dwell_s = 1};
    assert_int_equal(exp_dwell_block_steps(&bad, 0, NULL), EXP_BLOCK_STEPS);
}

static void a_short_run_shortens_its_blocks_to_make_its_pairs(void **state)
{
    (void)state;
    exp_dwell_t steady = {.seconds = 4, .dwell_s = 4};
    /* 60 s hold 20 pairs of 40 steps of 25 ms: the goal changes nothing */
    exp_block_goal_t roomy = {60, 20};
    assert_int_equal(exp_dwell_block_steps(&steady, 0.025, &roomy), EXP_BLOCK_STEPS);
    /* 25 s hold 20 pairs of 0.625 s: 25 steps */
    exp_block_goal_t short_run = {25, 20};
    assert_int_equal(exp_dwell_block_steps(&steady, 0.025, &short_run), 25);
    /* 10 s would want 10 steps: never below the shortest block, fewer pairs then */
    exp_block_goal_t tight = {10, 20};
    assert_int_equal(exp_dwell_block_steps(&steady, 0.025, &tight), EXP_BLOCK_STEPS_SHORT);
    /* no goal (the sweep, the guarded run), or no time left: the host alone decides */
    exp_block_goal_t none = {25, 0}, late = {-3, 20};
    assert_int_equal(exp_dwell_block_steps(&steady, 0.025, &none), EXP_BLOCK_STEPS);
    assert_int_equal(exp_dwell_block_steps(&steady, 0.025, &late), EXP_BLOCK_STEPS_SHORT);
    /* the shorter of the two rules wins */
    exp_dwell_t switching = {.switches = 2, .seconds = 4, .dwell_s = 4.0 / 3};
    assert_int_equal(exp_dwell_block_steps(&switching, 0.025, &short_run), EXP_BLOCK_STEPS_SHORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_steady_host_has_no_switches_and_full_blocks),
        cmocka_unit_test(two_speeds_are_counted_and_shorten_the_blocks),
        cmocka_unit_test(too_few_steps_say_nothing),
        cmocka_unit_test(a_short_run_shortens_its_blocks_to_make_its_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
