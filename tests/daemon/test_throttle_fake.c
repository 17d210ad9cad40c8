/* test_throttle_fake: resctrl MB and cgroup v2 cpu.max on fake trees in a temp dir (this machine
 * has neither): what lands in schemata, cpu.max, tasks and cgroup.procs, and falling back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "throttle.h"
#include "throttle_testlib.h"

typedef struct fixture {
    char tmp[64], resctrl[128], cg2[128];
    throttle_config_t cfg;
    throttle_t *t;
    throttle_group_t *g;
    tt_child_t child;
    char err[2048], buf[4096];
} fixture_t;

static fixture_t fx;

/* resctrl with two domains, 10 % minimum and steps; cgroup v2 with cpu at the root only (so
 * detection has to enable it on the way down) and cgroup.freeze in the subtree. */
static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    tt_tmpdir(fx.tmp, sizeof fx.tmp);
    snprintf(fx.resctrl, sizeof fx.resctrl, "%s/resctrl", fx.tmp);
    snprintf(fx.cg2, sizeof fx.cg2, "%s/cg2", fx.tmp);
    tt_write(fx.resctrl, "info/MB/min_bandwidth", "10\n");
    tt_write(fx.resctrl, "info/MB/bandwidth_gran", "10\n");
    tt_write(fx.resctrl, "info/MB/num_closids", "8\n");
    tt_write(fx.resctrl, "schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
    tt_write(fx.cg2, "cgroup.controllers", "cpuset cpu io memory pids\n");
    tt_config(&fx.cfg, 0);
    snprintf(fx.cfg.resctrl_root, sizeof fx.cfg.resctrl_root, "%s", fx.resctrl);
    snprintf(fx.cfg.cgroup2_root, sizeof fx.cfg.cgroup2_root, "%s", fx.cg2);
    snprintf(fx.cfg.cgroup1_root, sizeof fx.cfg.cgroup1_root, "none");
    char subtree[256];
    snprintf(subtree, sizeof subtree, "%s/%s", fx.cg2, fx.cfg.subtree);
    tt_write(subtree, "cgroup.freeze", "0\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    throttle_group_destroy(fx.g);
    tt_child_end(&fx.child);
    throttle_free(fx.t);
    tt_rm_rf(fx.tmp);
    return 0;
}

static void detect_and_create(unsigned knobs, const char *name, int ncpus)
{
    fx.cfg.knobs_allowed = knobs;
    fx.t = throttle_detect(&fx.cfg);
    assert_non_null(fx.t);
    fx.g = throttle_group_create(fx.t, name, ncpus, fx.err, sizeof fx.err);
    if (!fx.g)
        fail_msg("cannot create group %s: %s", name, fx.err);
}

/* <root>/<subtree>-<name>/FILE or <root>/<subtree>/<name>/FILE, read. */
static const char *group_file(const char *root, char sep, const char *name, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s%c%s/%s", root, fx.cfg.subtree, sep, name, file);
    return tt_read(path, fx.buf, sizeof fx.buf);
}

static void set_share(double share, double now)
{
    if (throttle_group_set_share(fx.g, share, now, fx.err, sizeof fx.err) < 0)
        fail_msg("set_share(%g): %s", share, fx.err);
}

static void resctrl_share_is_percent_rounded_up_to_the_step_in_every_domain(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_RESCTRL_MB | 1u << KNOB_SIGSTOP, "mb", 0);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_RESCTRL_MB);
    assert_string_equal(group_file(fx.resctrl, '-', "mb", "schemata"), "MB:0=100;1=100"); /* created at share 1 */
    const struct {
        double share;
        const char *schemata;
    } cases[] = {{0.55, "MB:0=60;1=60"}, {0.3, "MB:0=30;1=30"},     {0.1, "MB:0=10;1=10"},
                 {0.12, "MB:0=20;1=20"}, {0.999, "MB:0=100;1=100"}, {1, "MB:0=100;1=100"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_share(cases[i].share, 100);
        assert_string_equal(group_file(fx.resctrl, '-', "mb", "schemata"), cases[i].schemata);
        assert_false(throttle_group_duty_cycling(fx.g)); /* at or above the minimum: MB alone */
        assert_true(throttle_group_share(fx.g) == cases[i].share);
    }
}

/* 5 % with a 10 % minimum: MB at 10 %, the freezer takes half of each period. */
static void resctrl_below_its_minimum_duty_cycles_the_rest_with_the_freezer(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_RESCTRL_MB | 1u << KNOB_FREEZER, "mbmin", 0);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_RESCTRL_MB);
    assert_string_equal(group_file(fx.cg2, '/', "mbmin", "cgroup.freeze"), "0");
    set_share(0.05, 100);
    assert_string_equal(group_file(fx.resctrl, '-', "mbmin", "schemata"), "MB:0=10;1=10");
    assert_true(throttle_group_duty_cycling(fx.g));
    assert_true(throttle_group_paused(fx.g));
    assert_string_equal(group_file(fx.cg2, '/', "mbmin", "cgroup.freeze"), "1");
    assert_true(fabs(throttle_group_next_deadline(fx.g) - 100.05) < 1e-9);
    throttle_group_tick(fx.g, 100.05);
    assert_string_equal(group_file(fx.cg2, '/', "mbmin", "cgroup.freeze"), "0");
    assert_string_equal(throttle_group_last_error(fx.g), "");
    set_share(0, 100.06); /* paused for good: the minimum bandwidth and frozen */
    assert_string_equal(group_file(fx.resctrl, '-', "mbmin", "schemata"), "MB:0=10;1=10");
    assert_string_equal(group_file(fx.cg2, '/', "mbmin", "cgroup.freeze"), "1");
    assert_false(throttle_group_duty_cycling(fx.g));
    assert_true(throttle_group_next_deadline(fx.g) == 0);
    set_share(1, 100.07);
    assert_string_equal(group_file(fx.resctrl, '-', "mbmin", "schemata"), "MB:0=100;1=100");
    assert_string_equal(group_file(fx.cg2, '/', "mbmin", "cgroup.freeze"), "0");
}

/* The child joins itself before it would exec; add_pid then writes every thread id. */
static void resctrl_and_cgroup_v2_members_are_written_to_tasks_and_cgroup_procs(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_RESCTRL_MB | 1u << KNOB_FREEZER, "join", 0);
    fx.child = tt_child_start(fx.g);
    char path[512];
    snprintf(path, sizeof path, "%s/%s-join/tasks", fx.resctrl, fx.cfg.subtree);
    assert_true(tt_file_has_id(path, fx.child.pid));
    snprintf(path, sizeof path, "%s/%s/join/cgroup.procs", fx.cg2, fx.cfg.subtree);
    assert_true(tt_file_has_id(path, fx.child.pid));
    assert_int_equal(truncate(path, 0), 0);
    snprintf(path, sizeof path, "%s/%s-join/tasks", fx.resctrl, fx.cfg.subtree);
    assert_int_equal(truncate(path, 0), 0);
    if (throttle_group_add_pid(fx.g, fx.child.pid, fx.err, sizeof fx.err) < 0)
        fail_msg("add_pid: %s", fx.err);
    assert_true(tt_file_has_id(path, fx.child.pid)); /* its only thread: the tid is the pid */
    snprintf(path, sizeof path, "%s/%s/join/cgroup.procs", fx.cg2, fx.cfg.subtree);
    assert_true(tt_file_has_id(path, fx.child.pid));
    assert_int_equal(throttle_group_add_pid(fx.g, 0, fx.err, sizeof fx.err), -1);
    assert_non_null(strstr(fx.err, "not a process id"));
}

/* MBM: a group's memory traffic, summed over its L3 domains; a domain without a count adds
 * nothing; none at all (no mon_data: a kernel or CPU without MBM) is -1. */
static void resctrl_mbm_bytes_are_summed_over_the_domains(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_RESCTRL_MB | 1u << KNOB_SIGSTOP, "mbm", 0);
    unsigned long long bytes = 7;
    assert_int_equal(throttle_group_memory_bytes(fx.g, &bytes), -1);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-mbm", fx.resctrl, fx.cfg.subtree);
    tt_write(dir, "mon_data/mon_L3_00/mbm_total_bytes", "1000\n");
    tt_write(dir, "mon_data/mon_L3_01/mbm_total_bytes", "234\n");
    tt_write(dir, "mon_data/mon_L3_02/mbm_total_bytes", "Unavailable\n");
    assert_int_equal(throttle_group_memory_bytes(fx.g, &bytes), 0);
    assert_int_equal(bytes, 1234);
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    throttle_free(fx.t);
    detect_and_create(1u << KNOB_CFS_QUOTA | 1u << KNOB_SIGSTOP, "nombm", 1); /* no resctrl group */
    assert_int_equal(throttle_group_memory_bytes(fx.g, &bytes), -1);
}

/* No free CLOSID, or anything else that stops the resctrl group: the next knob takes over. A
 * file where the group's directory should be stands in for the kernel's refusal. */
static void a_resctrl_group_that_cannot_be_created_falls_back_to_cpu_max(void **state)
{
    (void)state;
    char blocker[256];
    snprintf(blocker, sizeof blocker, "%s-fallback", fx.cfg.subtree);
    tt_write(fx.resctrl, blocker, "not a directory\n");
    detect_and_create(1u << KNOB_RESCTRL_MB | 1u << KNOB_CPU_MAX, "fallback", 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CPU_MAX);
    if (!strstr(fx.err, "resctrl-mb: cannot create") || !strstr(fx.err, blocker))
        fail_msg("the fallback should say why resctrl was passed over, got '%s'", fx.err);
    assert_string_equal(group_file(fx.cg2, '/', "fallback", "cpu.max"), "max 100000");
}

static void a_group_no_allowed_knob_can_hold_is_refused_with_the_reasons(void **state)
{
    (void)state;
    char blocker[256];
    snprintf(blocker, sizeof blocker, "%s-nothing", fx.cfg.subtree);
    tt_write(fx.resctrl, blocker, "not a directory\n");
    fx.cfg.knobs_allowed = 1u << KNOB_RESCTRL_MB;
    fx.t = throttle_detect(&fx.cfg);
    assert_null(throttle_group_create(fx.t, "nothing", 1, fx.err, sizeof fx.err));
    if (!strstr(fx.err, "no knob can hold group nothing") || !strstr(fx.err, "resctrl-mb: cannot create"))
        fail_msg("unexpected error '%s'", fx.err);
    assert_null(throttle_group_create(fx.t, "../up", 1, fx.err, sizeof fx.err));
    assert_non_null(strstr(fx.err, "invalid group name"));
    assert_null(throttle_group_create(fx.t, "", 1, fx.err, sizeof fx.err));
    assert_null(throttle_group_create(fx.t, "a/b", 1, fx.err, sizeof fx.err));
}

/* quota = share x ncpus x 100 ms; "max" at share 1; detection enabled cpu on the way down. */
static void cpu_max_is_share_times_ncpus_times_the_period(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_CPU_MAX | 1u << KNOB_SIGSTOP, "two", 2);
    char path[512];
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", fx.cg2);
    assert_string_equal(tt_read(path, fx.buf, sizeof fx.buf), "+cpu");
    snprintf(path, sizeof path, "%s/%s/cgroup.subtree_control", fx.cg2, fx.cfg.subtree);
    assert_string_equal(tt_read(path, fx.buf, sizeof fx.buf), "+cpu");
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CPU_MAX);
    assert_string_equal(group_file(fx.cg2, '/', "two", "cpu.max"), "max 100000");
    set_share(0.5, 100);
    assert_string_equal(group_file(fx.cg2, '/', "two", "cpu.max"), "100000 100000");
    set_share(0.25, 100);
    assert_string_equal(group_file(fx.cg2, '/', "two", "cpu.max"), "50000 100000");
    assert_false(throttle_group_duty_cycling(fx.g));
    set_share(1, 100);
    assert_string_equal(group_file(fx.cg2, '/', "two", "cpu.max"), "max 100000");
    throttle_group_t *one = throttle_group_create(fx.t, "one", 1, fx.err, sizeof fx.err);
    assert_non_null(one);
    assert_int_equal(throttle_group_set_share(one, 0.25, 100, fx.err, sizeof fx.err), 0);
    assert_string_equal(group_file(fx.cg2, '/', "one", "cpu.max"), "25000 100000");
    throttle_group_destroy(one);
}

/* The kernel refuses a quota under 1 ms, and a quota of 0 does not exist: the rest is duty. */
static void cpu_max_below_the_minimum_quota_duty_cycles_the_rest(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_CPU_MAX | 1u << KNOB_SIGSTOP, "tiny", 1);
    set_share(0.004, 100);
    assert_string_equal(group_file(fx.cg2, '/', "tiny", "cpu.max"), "1000 100000");
    assert_true(throttle_group_duty_cycling(fx.g));
    assert_true(fabs(throttle_group_next_deadline(fx.g) - (100 + 0.6 * 0.1)) < 1e-9); /* duty 0.4 */
    set_share(0, 101);
    assert_string_equal(group_file(fx.cg2, '/', "tiny", "cpu.max"), "1000 100000");
    assert_false(throttle_group_duty_cycling(fx.g));
    assert_true(throttle_group_paused(fx.g));
    set_share(0.5, 102);
    assert_string_equal(group_file(fx.cg2, '/', "tiny", "cpu.max"), "50000 100000");
    assert_false(throttle_group_duty_cycling(fx.g));
    assert_false(throttle_group_paused(fx.g));
}

static void shares_outside_zero_to_one_are_refused_and_change_nothing(void **state)
{
    (void)state;
    detect_and_create(1u << KNOB_CPU_MAX, "range", 1);
    set_share(0.5, 100);
    const double bad[] = {-0.1, 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(throttle_group_set_share(fx.g, bad[i], 100, fx.err, sizeof fx.err), -1);
        assert_non_null(strstr(fx.err, "is not within 0..1"));
        assert_true(throttle_group_share(fx.g) == 0.5);
        assert_string_equal(group_file(fx.cg2, '/', "range", "cpu.max"), "50000 100000");
    }
    /* no duty knob allowed: what the quota cannot do is refused, at its minimum */
    const double too_low[] = {0, 0.004};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(throttle_group_set_share(fx.g, too_low[i], 100, fx.err, sizeof fx.err), -1);
        assert_non_null(strstr(fx.err, "cannot be paused below what cpu.max holds it to"));
        assert_string_equal(group_file(fx.cg2, '/', "range", "cpu.max"), "1000 100000");
        assert_false(throttle_group_duty_cycling(fx.g)); /* no cycle whose ticks could only fail */
        assert_true(throttle_group_next_deadline(fx.g) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(resctrl_share_is_percent_rounded_up_to_the_step_in_every_domain, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(resctrl_below_its_minimum_duty_cycles_the_rest_with_the_freezer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(resctrl_and_cgroup_v2_members_are_written_to_tasks_and_cgroup_procs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(resctrl_mbm_bytes_are_summed_over_the_domains, setup, teardown),
        cmocka_unit_test_setup_teardown(a_resctrl_group_that_cannot_be_created_falls_back_to_cpu_max, setup, teardown),
        cmocka_unit_test_setup_teardown(a_group_no_allowed_knob_can_hold_is_refused_with_the_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(cpu_max_is_share_times_ncpus_times_the_period, setup, teardown),
        cmocka_unit_test_setup_teardown(cpu_max_below_the_minimum_quota_duty_cycles_the_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(shares_outside_zero_to_one_are_refused_and_change_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
