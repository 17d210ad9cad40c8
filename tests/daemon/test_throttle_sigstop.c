/* test_throttle_sigstop: the fallback that works everywhere, on real processes — share 0 stops a
 * run and everything in its process group, share 1 continues it, duty cycling alternates, a
 * forgotten process is left alone, destroy never leaves anything stopped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "throttle.h"
#include "throttle_testlib.h"

static throttle_t *t;
static throttle_group_t *g;
static tt_child_t child, other;
static char err[1024];

static int setup(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_SIGSTOP);
    t = throttle_detect(&cfg);
    g = throttle_group_create(t, "stop", 1, err, sizeof err);
    assert_non_null(g);
    assert_int_equal(throttle_group_knob(g), KNOB_SIGSTOP);
    return 0;
}

/* destroy first: it continues whatever is stopped, so the kills below cannot hang on anything. */
static int teardown(void **state)
{
    (void)state;
    throttle_group_destroy(g);
    g = NULL;
    tt_child_end(&child);
    tt_child_end(&other);
    throttle_free(t);
    return 0;
}

static bool is_stopped(const void *arg)
{
    return process_state(*(const pid_t *)arg) == 'T';
}

static bool is_running(const void *arg)
{
    char s = process_state(*(const pid_t *)arg);
    return s != 'T' && s != '?';
}

static void expect_stopped(pid_t pid)
{
    if (!tt_poll(is_stopped, &pid))
        fail_msg("process %d is not stopped (state %c)", (int)pid, process_state(pid));
}

static void expect_running(pid_t pid)
{
    if (!tt_poll(is_running, &pid))
        fail_msg("process %d is not running (state %c)", (int)pid, process_state(pid));
}

static void add(pid_t pid)
{
    if (throttle_group_add_pid(g, pid, err, sizeof err) < 0)
        fail_msg("add_pid(%d): %s", (int)pid, err);
}

static void set_share(double share, double now)
{
    if (throttle_group_set_share(g, share, now, err, sizeof err) < 0)
        fail_msg("set_share(%g): %s", share, err);
}

static void share_zero_stops_the_run_and_its_process_group_share_one_continues(void **state)
{
    (void)state;
    child = tt_family_start(NULL);
    add(child.pid); /* a process group leader, as coschedd's runs are: its grandchild goes too */
    set_share(0, 100);
    expect_stopped(child.pid);
    expect_stopped(child.grandchild);
    assert_true(tt_still(child.counter));
    assert_true(tt_still(child.grand_counter));
    set_share(1, 101);
    expect_running(child.pid);
    expect_running(child.grandchild);
    assert_true(tt_progresses(child.counter));
    assert_true(tt_progresses(child.grand_counter));
}

/* A process that does not lead its group is signalled alone. */
static void a_process_that_leads_no_group_is_stopped_alone(void **state)
{
    (void)state;
    child = tt_family_start(NULL);
    add(child.grandchild);
    set_share(0, 100);
    expect_stopped(child.grandchild);
    expect_running(child.pid);
    assert_true(tt_progresses(child.counter));
}

/* The ticks are driven by simulated times; the signals they send are real. */
static void duty_cycling_stops_and_continues_at_each_deadline(void **state)
{
    (void)state;
    child = tt_child_start(NULL);
    add(child.pid);
    set_share(0.5, 100);
    expect_stopped(child.pid);
    for (int i = 0; i < 3; i++) {
        double deadline = throttle_group_next_deadline(g);
        throttle_group_tick(g, deadline);
        expect_running(child.pid);
        throttle_group_tick(g, throttle_group_next_deadline(g));
        expect_stopped(child.pid);
    }
}

static void a_process_added_while_stopped_is_stopped_too(void **state)
{
    (void)state;
    child = tt_child_start(NULL);
    add(child.pid);
    set_share(0, 100);
    expect_stopped(child.pid);
    other = tt_child_start(NULL);
    add(other.pid);
    expect_stopped(other.pid);
}

/* remove_pid: a forgotten process is continued if stopped, and later pauses pass it by. */
static void a_removed_process_is_continued_and_left_alone(void **state)
{
    (void)state;
    child = tt_child_start(NULL);
    other = tt_child_start(NULL);
    add(child.pid);
    add(other.pid);
    set_share(0, 100);
    expect_stopped(other.pid);
    throttle_group_remove_pid(g, other.pid);
    expect_running(other.pid);
    set_share(1, 101);
    set_share(0, 102);
    expect_stopped(child.pid);
    assert_true(tt_progresses(other.counter)); /* forgotten: the pause that stopped child passed it by */
}

static void a_process_that_is_gone_cannot_be_added(void **state)
{
    (void)state;
    child = tt_child_start(NULL);
    pid_t pid = child.pid;
    tt_child_end(&child); /* killed and reaped */
    assert_int_equal(throttle_group_add_pid(g, pid, err, sizeof err), -1);
    assert_non_null(strstr(err, "there is no process"));
}

static void destroy_continues_a_stopped_run(void **state)
{
    (void)state;
    child = tt_family_start(NULL);
    add(child.pid);
    set_share(0, 100);
    expect_stopped(child.pid);
    expect_stopped(child.grandchild);
    throttle_group_destroy(g);
    g = NULL;
    expect_running(child.pid);
    expect_running(child.grandchild);
    assert_true(tt_progresses(child.counter));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(share_zero_stops_the_run_and_its_process_group_share_one_continues, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_process_that_leads_no_group_is_stopped_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(duty_cycling_stops_and_continues_at_each_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(a_process_added_while_stopped_is_stopped_too, setup, teardown),
        cmocka_unit_test_setup_teardown(a_removed_process_is_continued_and_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_process_that_is_gone_cannot_be_added, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_continues_a_stopped_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
