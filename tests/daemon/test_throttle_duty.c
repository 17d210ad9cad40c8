/* test_throttle_duty: the duty-cycling clock driven by simulated monotonic times (no sleeping),
 * and the pure share -> quota / percent mappings. The group has no processes: only its phases
 * and deadlines are looked at here; test_throttle_sigstop and _cgroup apply them for real. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "throttle_internal.h"
#include "throttle_testlib.h"

static throttle_t *t;
static throttle_group_t *g;

static int sigstop_group(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_SIGSTOP);
    t = throttle_detect(&cfg);
    char err[512];
    g = throttle_group_create(t, "duty", 1, err, sizeof err);
    assert_non_null(g);
    return 0;
}

static int destroy_group(void **state)
{
    (void)state;
    throttle_group_destroy(g);
    throttle_free(t);
    g = NULL;
    t = NULL;
    return 0;
}

static void set_share(double share, double now)
{
    char err[512];
    if (throttle_group_set_share(g, share, now, err, sizeof err) < 0)
        fail_msg("set_share(%g): %s", share, err);
}

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-9)
        fail_msg("expected %.9f, got %.9f", want, got);
}

/* Run cycles of ticks exactly at the deadlines: paused (1-share) x period, running share x period. */
static void expect_cycles(double share, double start)
{
    set_share(share, start);
    assert_true(throttle_group_duty_cycling(g));
    double now = start;
    for (int cycle = 0; cycle < 10; cycle++) {
        assert_true(throttle_group_paused(g));
        double deadline = throttle_group_next_deadline(g);
        assert_near(deadline - now, (1 - share) * 0.1);
        throttle_group_tick(g, deadline - 1e-6); /* not yet due: nothing happens */
        assert_true(throttle_group_paused(g));
        now = deadline;
        throttle_group_tick(g, now);
        assert_false(throttle_group_paused(g));
        deadline = throttle_group_next_deadline(g);
        assert_near(deadline - now, share * 0.1);
        now = deadline;
        throttle_group_tick(g, now);
    }
    assert_near(now, start + 10 * 0.1);
}

static void share_0_3_is_paused_70_ms_and_running_30_ms_of_each_100(void **state)
{
    (void)state;
    assert_int_equal(throttle_group_knob(g), KNOB_SIGSTOP);
    expect_cycles(0.3, 1000);
}

static void share_0_7_is_paused_30_ms_and_running_70_ms_of_each_100(void **state)
{
    (void)state;
    expect_cycles(0.7, 50);
}

/* A tick a little late does not shift the ratio: the next phase starts at the deadline. One
 * more than a period late starts afresh from now. */
static void late_ticks_keep_the_rhythm_unless_a_whole_period_late(void **state)
{
    (void)state;
    set_share(0.3, 10);
    assert_near(throttle_group_next_deadline(g), 10.07);
    throttle_group_tick(g, 10.08);
    assert_false(throttle_group_paused(g));
    assert_near(throttle_group_next_deadline(g), 10.10);
    throttle_group_tick(g, 10.5);
    assert_true(throttle_group_paused(g));
    assert_near(throttle_group_next_deadline(g), 10.57);
}

/* The guard adjusts often: a new share keeps the phase under way and when it started. */
static void a_new_share_mid_phase_keeps_the_phase_and_moves_its_end(void **state)
{
    (void)state;
    set_share(0.3, 10);
    set_share(0.5, 10.02);
    assert_true(throttle_group_paused(g));
    assert_near(throttle_group_next_deadline(g), 10.05);
    throttle_group_tick(g, 10.05);
    assert_false(throttle_group_paused(g));
    set_share(0.2, 10.06);
    assert_false(throttle_group_paused(g));
    assert_near(throttle_group_next_deadline(g), 10.07);
}

static void share_one_ends_cycling_running_and_share_zero_pauses_without_deadline(void **state)
{
    (void)state;
    set_share(0.3, 10);
    set_share(1, 10.01);
    assert_false(throttle_group_duty_cycling(g));
    assert_false(throttle_group_paused(g));
    assert_true(throttle_group_next_deadline(g) == 0);
    set_share(0, 11);
    assert_true(throttle_group_paused(g));
    assert_false(throttle_group_duty_cycling(g));
    assert_true(throttle_group_next_deadline(g) == 0);
    throttle_group_tick(g, 1e9); /* nothing is due: stays paused */
    assert_true(throttle_group_paused(g));
    set_share(0.5, 12); /* from paused for good into a cycle, paused first */
    assert_true(throttle_group_paused(g));
    assert_near(throttle_group_next_deadline(g), 12.05);
}

static void the_duty_period_comes_from_the_config(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_SIGSTOP);
    cfg.duty_period = 2;
    throttle_t *slow = throttle_detect(&cfg);
    char err[512];
    throttle_group_t *sg = throttle_group_create(slow, "slow", 1, err, sizeof err);
    assert_non_null(sg);
    assert_int_equal(throttle_group_set_share(sg, 0.25, 5, err, sizeof err), 0);
    assert_near(throttle_group_next_deadline(sg), 6.5);
    throttle_group_destroy(sg);
    throttle_free(slow);
}

static void cpu_quota_is_share_times_ncpus_times_100_ms_at_least_1_ms(void **state)
{
    (void)state;
    assert_true(throttle_cpu_quota_us(0.5, 1) == 50000);
    assert_true(throttle_cpu_quota_us(0.25, 1) == 25000);
    assert_true(throttle_cpu_quota_us(0.5, 2) == 100000);
    assert_true(throttle_cpu_quota_us(0.25, 2) == 50000);
    assert_true(throttle_cpu_quota_us(0.3, 64) == 1920000);
    assert_true(throttle_cpu_quota_us(0.005, 1) == 1000);
    assert_true(throttle_cpu_quota_us(0, 4) == 1000);
    assert_true(throttle_cpu_quota_us(1, 4) == -1);
}

static void mb_percent_rounds_up_to_the_step_and_never_below_the_minimum(void **state)
{
    (void)state;
    assert_int_equal(throttle_resctrl_percent(0.3, 10, 10), 30);
    assert_int_equal(throttle_resctrl_percent(0.31, 10, 10), 40);
    assert_int_equal(throttle_resctrl_percent(0.05, 10, 10), 10);
    assert_int_equal(throttle_resctrl_percent(0, 10, 10), 10);
    assert_int_equal(throttle_resctrl_percent(0.05, 5, 1), 5);
    assert_int_equal(throttle_resctrl_percent(0.333, 10, 1), 34);
    assert_int_equal(throttle_resctrl_percent(0.97, 10, 10), 100);
    assert_int_equal(throttle_resctrl_percent(1, 10, 10), 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(share_0_3_is_paused_70_ms_and_running_30_ms_of_each_100, sigstop_group,
                                        destroy_group),
        cmocka_unit_test_setup_teardown(share_0_7_is_paused_30_ms_and_running_70_ms_of_each_100, sigstop_group,
                                        destroy_group),
        cmocka_unit_test_setup_teardown(late_ticks_keep_the_rhythm_unless_a_whole_period_late, sigstop_group,
                                        destroy_group),
        cmocka_unit_test_setup_teardown(a_new_share_mid_phase_keeps_the_phase_and_moves_its_end, sigstop_group,
                                        destroy_group),
        cmocka_unit_test_setup_teardown(share_one_ends_cycling_running_and_share_zero_pauses_without_deadline,
                                        sigstop_group, destroy_group),
        cmocka_unit_test(the_duty_period_comes_from_the_config),
        cmocka_unit_test(cpu_quota_is_share_times_ncpus_times_100_ms_at_least_1_ms),
        cmocka_unit_test(mb_percent_rounds_up_to_the_step_and_never_below_the_minimum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
