/* test_experiment_dwell: the lead-in's count of the host's speed switches, on synthetic step
 * streams (one speed, two speeds, one slow step); the block length that follows is
 * test_experiment_block_size's. */
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
    steps[50].seconds = 0.2; /* one slow step (a page fault, a log line) is no state */
    assert_int_equal(exp_dwell_measure(steps, n).switches, 0);
}

static void two_speeds_are_counted(void **state)
{
    (void)state;
    exp_step_t steps[STEPS];
    /* slow from 1 s to 2.5 s of every 3 s: in about 7.5 s, switches at 1, 2.5, 4, 5.5, 7 */
    int n = stream(steps, 260, 3, 1, 2.5);
    exp_dwell_t d = exp_dwell_measure(steps, n);
    assert_int_equal(d.switches, 5);
    assert_true(d.gap > 0.3 && d.gap < 0.4);
    assert_true(d.dwell_s > 1 && d.dwell_s < 1.6);
}

static void too_few_steps_say_nothing(void **state)
{
    (void)state;
    exp_step_t steps[8];
    int n = stream(steps, 8, 0, 0, 0);
    exp_dwell_t d = exp_dwell_measure(steps, n);
    assert_int_equal(d.switches, 0);
    assert_int_equal(exp_dwell_measure(steps, 0).switches, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_steady_host_has_no_switches_and_full_blocks),
        cmocka_unit_test(two_speeds_are_counted),
        cmocka_unit_test(too_few_steps_say_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
