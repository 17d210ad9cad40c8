/* test_throttle_detect: finding the knobs — mountinfo lines, why resctrl is unavailable, roots set
 * to "none", knobs_allowed, bad subtree names; SIGSTOP is always there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "throttle_internal.h"
#include "throttle_testlib.h"

static char tmp[64];

static int make_tmp(void **state)
{
    (void)state;
    tt_tmpdir(tmp, sizeof tmp);
    return 0;
}

static int remove_tmp(void **state)
{
    (void)state;
    tt_rm_rf(tmp);
    return 0;
}

static void knob_names_round_trip_and_unknown_names_are_refused(void **state)
{
    (void)state;
    const char *expected[KNOB_COUNT] = {"resctrl-mb", "cpu.max", "cfs-quota", "freezer", "sigstop", "cores"};
    for (int k = 0; k < KNOB_COUNT; k++) {
        knob_t got = KNOB_COUNT;
        assert_string_equal(throttle_knob_name((knob_t)k), expected[k]);
        assert_int_equal(throttle_knob_parse(expected[k], &got), 0);
        assert_int_equal(got, k);
    }
    knob_t got = KNOB_COUNT;
    assert_int_equal(throttle_knob_parse("cpu", &got), -1);
    assert_int_equal(throttle_knob_parse("", &got), -1);
    assert_int_equal(got, KNOB_COUNT);
    assert_string_equal(throttle_knob_name(KNOB_COUNT), "unknown");
}

/* Lines as util-linux and systemd leave them: combined v1 controllers, escaped mount points. */
static void mountinfo_finds_cgroup2_resctrl_and_v1_controllers_by_option(void **state)
{
    (void)state;
    tt_write(tmp, "mountinfo",
             "24 1 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
             "31 24 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
             "32 24 0:28 / /sys/fs/cgroup/cpu,cpuacct rw shared:11 - cgroup cgroup rw,cpu,cpuacct\n"
             "33 24 0:29 / /sys/fs/cgroup/cpuset rw shared:12 - cgroup cgroup rw,cpuset\n"
             "34 24 0:30 / /sys/fs/cgroup/my\\040freezer rw - cgroup cgroup rw,freezer\n"
             "35 24 0:31 / /sys/fs/resctrl rw - resctrl resctrl rw\n");
    char path[128], out[256];
    snprintf(path, sizeof path, "%s/mountinfo", tmp);
    assert_int_equal(throttle_mount_find(path, "cgroup2", NULL, out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup/unified");
    assert_int_equal(throttle_mount_find(path, "cgroup", "cpu", out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup/cpu,cpuacct"); /* not cpuset: whole options only */
    assert_int_equal(throttle_mount_find(path, "cgroup", "cpuset", out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup/cpuset");
    assert_int_equal(throttle_mount_find(path, "cgroup", "freezer", out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup/my freezer");
    assert_int_equal(throttle_mount_find(path, "resctrl", NULL, out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/resctrl");
    assert_int_equal(throttle_mount_find(path, "cgroup", "memory", out, sizeof out), -1);
}

static bool mounted(const char *fstype)
{
    char out[256];
    return throttle_mount_find("/proc/self/mountinfo", fstype, NULL, out, sizeof out) == 0;
}

/* The machine's own resctrl: on one without it the description says why, and the knob is off. */
static void detection_without_resctrl_says_why(void **state)
{
    (void)state;
    if (mounted("resctrl"))
        skip(); /* this machine has resctrl: the fake-tree tests cover it */
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_RESCTRL_MB | 1u << KNOB_SIGSTOP);
    throttle_t *t = throttle_detect(&cfg);
    assert_non_null(t);
    const char *d = throttle_describe(t, KNOB_RESCTRL_MB);
    assert_false(throttle_has(t, KNOB_RESCTRL_MB));
    if (strncmp(d, "not available: ", 15) != 0 || !strstr(d, "resctrl"))
        fail_msg("unexpected description: %s", d);
    assert_true(throttle_has(t, KNOB_SIGSTOP));
    throttle_free(t);
}

static void expect_resctrl_unavailable(const char *root, const char *why)
{
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_RESCTRL_MB | 1u << KNOB_SIGSTOP);
    snprintf(cfg.resctrl_root, sizeof cfg.resctrl_root, "%s", root);
    throttle_t *t = throttle_detect(&cfg);
    assert_non_null(t);
    const char *d = throttle_describe(t, KNOB_RESCTRL_MB);
    if (throttle_has(t, KNOB_RESCTRL_MB) || strncmp(d, "not available: ", 15) != 0 || !strstr(d, why))
        fail_msg("resctrl root %s: expected 'not available: ...%s...', got '%s'", root, why, d);
    throttle_free(t);
}

static void resctrl_roots_without_mba_are_described(void **state)
{
    (void)state;
    char root[300];
    snprintf(root, sizeof root, "%s/missing", tmp);
    expect_resctrl_unavailable(root, "does not exist");
    expect_resctrl_unavailable("none", "disabled");
    snprintf(root, sizeof root, "%s/no-mb", tmp);
    tt_write(root, "schemata", "L3:0=fff;1=fff\n");
    tt_write(root, "info/L3/cbm_mask", "fff\n");
    expect_resctrl_unavailable(root, "has no info/MB");
    /* AMD's MBA and the mba_MBps mount option use other units than percent */
    snprintf(root, sizeof root, "%s/mbps", tmp);
    tt_write(root, "info/MB/min_bandwidth", "10\n");
    tt_write(root, "info/MB/bandwidth_gran", "1\n");
    tt_write(root, "schemata", "    MB:0=2048;1=2048\n");
    expect_resctrl_unavailable(root, "not in percent");
    snprintf(root, sizeof root, "%s/no-line", tmp);
    tt_write(root, "info/MB/min_bandwidth", "10\n");
    tt_write(root, "info/MB/bandwidth_gran", "10\n");
    tt_write(root, "schemata", "L3:0=fff\n");
    expect_resctrl_unavailable(root, "has no MB line");
}

static void a_fake_resctrl_tree_is_detected_with_its_domains(void **state)
{
    (void)state;
    char root[300];
    snprintf(root, sizeof root, "%s/resctrl", tmp);
    tt_write(root, "info/MB/min_bandwidth", "10\n");
    tt_write(root, "info/MB/bandwidth_gran", "10\n");
    tt_write(root, "schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_RESCTRL_MB);
    snprintf(cfg.resctrl_root, sizeof cfg.resctrl_root, "%s", root);
    throttle_t *t = throttle_detect(&cfg);
    assert_true(throttle_has(t, KNOB_RESCTRL_MB));
    char want[400];
    snprintf(want, sizeof want, "resctrl MB at %s (min 10 %%, step 10 %%, domains 0,1)", root);
    assert_string_equal(throttle_describe(t, KNOB_RESCTRL_MB), want);
    throttle_free(t);
}

/* knobs_allowed: what is not allowed is neither offered nor probed (no directory is created). */
static void knobs_not_allowed_are_not_offered_nor_created(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_SIGSTOP);
    snprintf(cfg.cgroup2_root, sizeof cfg.cgroup2_root, "%s/cg2", tmp);
    tt_write(tmp, "cg2/cgroup.controllers", "cpu io memory\n");
    throttle_t *t = throttle_detect(&cfg);
    for (int k = 0; k < KNOB_SIGSTOP; k++) {
        assert_false(throttle_has(t, (knob_t)k));
        assert_string_equal(throttle_describe(t, (knob_t)k), "not allowed (knobs_allowed)");
    }
    assert_true(throttle_has(t, KNOB_SIGSTOP));
    char subtree[400];
    snprintf(subtree, sizeof subtree, "%s/cg2/%s", tmp, cfg.subtree);
    assert_int_equal(access(subtree, F_OK), -1);
    throttle_free(t);
}

static void roots_set_to_none_are_not_used(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 0);
    snprintf(cfg.resctrl_root, sizeof cfg.resctrl_root, "none");
    snprintf(cfg.cgroup2_root, sizeof cfg.cgroup2_root, "none");
    snprintf(cfg.cgroup1_root, sizeof cfg.cgroup1_root, "none");
    throttle_t *t = throttle_detect(&cfg);
    for (int k = 0; k < KNOB_SIGSTOP; k++)
        assert_false(throttle_has(t, (knob_t)k));
    assert_non_null(strstr(throttle_describe(t, KNOB_CPU_MAX), "cgroup v2 disabled"));
    assert_non_null(strstr(throttle_describe(t, KNOB_CFS_QUOTA), "cgroup v1 disabled"));
    assert_non_null(strstr(throttle_describe(t, KNOB_FREEZER), "cgroup v2 disabled"));
    assert_non_null(strstr(throttle_describe(t, KNOB_FREEZER), "cgroup v1 disabled"));
    assert_true(throttle_has(t, KNOB_SIGSTOP));
    throttle_free(t);
}

/* A subtree that could walk out of the hierarchy is refused; SIGSTOP still works. */
static void a_subtree_name_with_a_slash_disables_the_directory_knobs(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 0);
    snprintf(cfg.subtree, sizeof cfg.subtree, "../escape");
    snprintf(cfg.cgroup2_root, sizeof cfg.cgroup2_root, "%s/cg2", tmp);
    tt_write(tmp, "cg2/cgroup.controllers", "cpu\n");
    throttle_t *t = throttle_detect(&cfg);
    for (int k = 0; k < KNOB_SIGSTOP; k++) {
        assert_false(throttle_has(t, (knob_t)k));
        assert_non_null(strstr(throttle_describe(t, (knob_t)k), "invalid subtree name"));
    }
    assert_true(throttle_has(t, KNOB_SIGSTOP));
    throttle_free(t);
}

/* cgroup v2 without the cpu controller (bound to v1, as on hybrid machines) has no cpu.max. */
static void cgroup2_without_cpu_controller_has_no_cpu_max(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 1u << KNOB_CPU_MAX);
    snprintf(cfg.cgroup2_root, sizeof cfg.cgroup2_root, "%s/cg2", tmp);
    tt_write(tmp, "cg2/cgroup.controllers", "cpuset io memory hugetlb\n");
    throttle_t *t = throttle_detect(&cfg);
    assert_false(throttle_has(t, KNOB_CPU_MAX));
    const char *d = throttle_describe(t, KNOB_CPU_MAX);
    if (!strstr(d, "has no cpu controller") || !strstr(d, "cpuset io memory hugetlb"))
        fail_msg("unexpected description: %s", d);
    throttle_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(knob_names_round_trip_and_unknown_names_are_refused),
        cmocka_unit_test_setup_teardown(mountinfo_finds_cgroup2_resctrl_and_v1_controllers_by_option, make_tmp,
                                        remove_tmp),
        cmocka_unit_test(detection_without_resctrl_says_why),
        cmocka_unit_test_setup_teardown(resctrl_roots_without_mba_are_described, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(a_fake_resctrl_tree_is_detected_with_its_domains, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(knobs_not_allowed_are_not_offered_nor_created, make_tmp, remove_tmp),
        cmocka_unit_test(roots_set_to_none_are_not_used),
        cmocka_unit_test_setup_teardown(a_subtree_name_with_a_slash_disables_the_directory_knobs, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(cgroup2_without_cpu_controller_has_no_cpu_max, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
