/* test_throttle_cgroup: the knobs on this machine's real cgroup hierarchies, as root — v1 CFS
 * quota, the v1 freezer and v2 cgroup.freeze on busy children that join before they would exec;
 * falling back when the kernel refuses a group; destroy and free leave nothing behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "throttle_internal.h" /* throttle_mount_find: the test finds the hierarchies itself */
#include "throttle_testlib.h"

typedef struct fixture {
    throttle_config_t cfg;
    throttle_t *t;
    throttle_group_t *g;
    tt_child_t child;
    char cpu1[256], freezer1[256], cg2[256]; /* the mounts, "" when absent */
    char err[2048], buf[4096];
} fixture_t;

static fixture_t fx;

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    tt_config(&fx.cfg, 0);
    if (throttle_mount_find("/proc/self/mountinfo", "cgroup", "cpu", fx.cpu1, sizeof fx.cpu1) < 0)
        fx.cpu1[0] = '\0';
    if (throttle_mount_find("/proc/self/mountinfo", "cgroup", "freezer", fx.freezer1, sizeof fx.freezer1) < 0)
        fx.freezer1[0] = '\0';
    if (throttle_mount_find("/proc/self/mountinfo", "cgroup2", NULL, fx.cg2, sizeof fx.cg2) < 0)
        fx.cg2[0] = '\0';
    return 0;
}

/* In the order that cannot hang: destroy thaws, then the children die, then the subtrees go.
 * Whatever a failed test left is removed here too (rmdir only: never a file under /sys). */
static int teardown(void **state)
{
    (void)state;
    throttle_group_destroy(fx.g);
    tt_child_end(&fx.child);
    throttle_free(fx.t);
    const char *mounts[] = {fx.cpu1, fx.freezer1, fx.cg2};
    for (size_t i = 0; i < 3; i++) {
        char subtree[512];
        if (!mounts[i][0])
            continue;
        snprintf(subtree, sizeof subtree, "%s/%s", mounts[i], fx.cfg.subtree);
        tt_rmdir_tree(subtree);
    }
    return 0;
}

/* The test needs root and the knob on this machine; otherwise it says why it skips. */
static void detect_or_skip(unsigned knobs, knob_t needed)
{
    if (geteuid() != 0) {
        print_message("# not root: the real cgroup tests need root\n");
        skip();
    }
    fx.cfg.knobs_allowed = knobs;
    fx.t = throttle_detect(&fx.cfg);
    assert_non_null(fx.t);
    if (!throttle_has(fx.t, needed)) {
        print_message("# %s: %s\n", throttle_knob_name(needed), throttle_describe(fx.t, needed));
        skip();
    }
}

static void create(const char *name, int ncpus)
{
    fx.g = throttle_group_create(fx.t, name, ncpus, fx.err, sizeof fx.err);
    if (!fx.g)
        fail_msg("cannot create group %s: %s", name, fx.err);
}

static const char *read_group(const char *mount, const char *name, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s/%s", mount, fx.cfg.subtree, name, file);
    return tt_read(path, fx.buf, sizeof fx.buf);
}

static bool group_exists(const char *mount, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", mount, fx.cfg.subtree, name);
    return access(path, F_OK) == 0;
}

static bool group_lists(const char *mount, const char *name, pid_t pid)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s/cgroup.procs", mount, fx.cfg.subtree, name);
    return tt_file_has_id(path, pid);
}

static void set_share(double share, double now)
{
    if (throttle_group_set_share(fx.g, share, now, fx.err, sizeof fx.err) < 0)
        fail_msg("set_share(%g): %s", share, fx.err);
}

/* quota = share x ncpus x 100000 us, -1 at share 1, for a child that joined by itself. */
static void cfs_quota(int ncpus)
{
    char name[32];
    snprintf(name, sizeof name, "cfs%d", ncpus);
    create(name, ncpus);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CFS_QUOTA);
    fx.child = tt_child_start(fx.g);
    assert_true(group_lists(fx.cpu1, name, fx.child.pid));
    assert_string_equal(read_group(fx.cpu1, name, "cpu.cfs_period_us"), "100000");
    assert_string_equal(read_group(fx.cpu1, name, "cpu.cfs_quota_us"), "-1");
    char want[32];
    set_share(0.5, 100);
    snprintf(want, sizeof want, "%d", 50000 * ncpus);
    assert_string_equal(read_group(fx.cpu1, name, "cpu.cfs_quota_us"), want);
    set_share(0.25, 100);
    snprintf(want, sizeof want, "%d", 25000 * ncpus);
    assert_string_equal(read_group(fx.cpu1, name, "cpu.cfs_quota_us"), want);
    assert_false(throttle_group_duty_cycling(fx.g));
    assert_true(tt_progresses(fx.child.counter)); /* held to a quota, not stopped */
    set_share(1, 100);
    assert_string_equal(read_group(fx.cpu1, name, "cpu.cfs_quota_us"), "-1");
}

static void v1_cfs_quota_is_share_times_one_cpu(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA, KNOB_CFS_QUOTA);
    cfs_quota(1);
}

static void v1_cfs_quota_is_share_times_two_cpus(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA, KNOB_CFS_QUOTA);
    cfs_quota(2);
}

/* The daemon's other way in: the parent adds a running process. */
static void add_pid_moves_a_running_process_into_the_cpu_cgroup(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA, KNOB_CFS_QUOTA);
    create("added", 1);
    fx.child = tt_child_start(NULL);
    assert_false(group_lists(fx.cpu1, "added", fx.child.pid));
    if (throttle_group_add_pid(fx.g, fx.child.pid, fx.err, sizeof fx.err) < 0)
        fail_msg("add_pid: %s", fx.err);
    assert_true(group_lists(fx.cpu1, "added", fx.child.pid));
}

static bool v1_frozen(const void *arg)
{
    (void)arg;
    return strcmp(read_group(fx.freezer1, "frz1", "freezer.state"), "FROZEN") == 0;
}

/* FREEZING is the kernel on its way: poll, a bounded number of times, for FROZEN. */
static void v1_freezer_share_zero_freezes_and_share_one_thaws(void **state)
{
    (void)state;
    snprintf(fx.cfg.cgroup2_root, sizeof fx.cfg.cgroup2_root, "none");
    detect_or_skip(1u << KNOB_FREEZER, KNOB_FREEZER);
    create("frz1", 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_FREEZER);
    fx.child = tt_child_start(fx.g);
    assert_true(group_lists(fx.freezer1, "frz1", fx.child.pid));
    set_share(0, 100);
    if (!tt_poll(v1_frozen, NULL))
        fail_msg("freezer.state stays %s", read_group(fx.freezer1, "frz1", "freezer.state"));
    assert_true(tt_still(fx.child.counter));
    set_share(1, 101);
    assert_string_equal(read_group(fx.freezer1, "frz1", "freezer.state"), "THAWED");
    assert_true(tt_progresses(fx.child.counter));
}

/* cgroup.events "frozen 1" once every process in it is frozen. */
static bool v2_frozen_is(const char *name, int want)
{
    char line[16];
    snprintf(line, sizeof line, "frozen %d", want);
    return strstr(read_group(fx.cg2, name, "cgroup.events"), line) != NULL;
}

static bool v2_frozen(const void *arg)
{
    return v2_frozen_is(arg, 1);
}

static bool v2_thawed(const void *arg)
{
    return v2_frozen_is(arg, 0);
}

static void v2_cgroup_freeze_share_zero_freezes_and_share_one_thaws(void **state)
{
    (void)state;
    snprintf(fx.cfg.cgroup1_root, sizeof fx.cfg.cgroup1_root, "none");
    detect_or_skip(1u << KNOB_FREEZER, KNOB_FREEZER);
    create("frz2", 1);
    fx.child = tt_child_start(fx.g);
    assert_true(group_lists(fx.cg2, "frz2", fx.child.pid));
    set_share(0, 100);
    assert_string_equal(read_group(fx.cg2, "frz2", "cgroup.freeze"), "1");
    if (!tt_poll(v2_frozen, "frz2"))
        fail_msg("cgroup.events: %s", read_group(fx.cg2, "frz2", "cgroup.events"));
    assert_true(tt_still(fx.child.counter));
    set_share(1, 101);
    assert_true(tt_poll(v2_thawed, "frz2"));
    assert_true(tt_progresses(fx.child.counter));
}

/* Frozen (thawed) by whichever freezer the group got. */
static bool group_frozen(const void *name)
{
    if (fx.g->freezer_v2)
        return v2_frozen(name);
    return strcmp(read_group(fx.freezer1, name, "freezer.state"), "FROZEN") == 0;
}

static bool group_thawed(const void *name)
{
    if (fx.g->freezer_v2)
        return v2_thawed(name);
    return strcmp(read_group(fx.freezer1, name, "freezer.state"), "THAWED") == 0;
}

/* Below the 1 ms minimum quota the freezer takes over: ticks on simulated times freeze and thaw. */
static void cfs_quota_below_its_minimum_duty_cycles_with_the_freezer(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA | 1u << KNOB_FREEZER, KNOB_CFS_QUOTA);
    assert_true(throttle_has(fx.t, KNOB_FREEZER));
    create("mix", 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CFS_QUOTA);
    fx.child = tt_child_start(fx.g);
    set_share(0.005, 100);
    assert_string_equal(read_group(fx.cpu1, "mix", "cpu.cfs_quota_us"), "1000");
    assert_true(throttle_group_duty_cycling(fx.g));
    assert_true(tt_poll(group_frozen, "mix"));
    assert_true(tt_still(fx.child.counter));
    throttle_group_tick(fx.g, throttle_group_next_deadline(fx.g));
    assert_true(tt_poll(group_thawed, "mix"));
    throttle_group_tick(fx.g, throttle_group_next_deadline(fx.g));
    assert_true(tt_poll(group_frozen, "mix"));
    assert_string_equal(throttle_group_last_error(fx.g), "");
}

/* /proc/PID/cgroup's path for a v1 controller ("freezer") or v2 (""). */
static const char *cgroup_of(pid_t pid, const char *controller, char *out, size_t len)
{
    char path[64], buf[4096], key[64];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    tt_read(path, buf, sizeof buf);
    snprintf(key, sizeof key, ":%s:", controller);
    const char *p = strstr(buf, key);
    if (!p)
        fail_msg("no %s line in %s:\n%s", controller[0] ? controller : "v2", path, buf);
    p += strlen(key);
    snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
    return out;
}

/* A frozen, throttled group is thawed, its process goes back to the root, its directories go. */
static void destroy_thaws_moves_back_and_removes_the_directories(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA | 1u << KNOB_FREEZER, KNOB_CFS_QUOTA);
    assert_true(throttle_has(fx.t, KNOB_FREEZER));
    create("gone", 1);
    fx.child = tt_child_start(fx.g);
    set_share(0, 100);
    const char *freezer = fx.g->freezer_v2 ? fx.cg2 : fx.freezer1;
    assert_true(group_exists(fx.cpu1, "gone") && group_exists(freezer, "gone"));
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    assert_false(group_exists(fx.cpu1, "gone"));
    assert_false(group_exists(freezer, "gone"));
    char where[256];
    assert_string_equal(cgroup_of(fx.child.pid, "cpu", where, sizeof where), "/");
    assert_string_equal(cgroup_of(fx.child.pid, freezer == fx.cg2 ? "" : "freezer", where, sizeof where), "/");
    assert_true(tt_progresses(fx.child.counter));
}

/* A process that ended is gone from cgroup.procs by itself: the group goes on, and goes. */
static void a_process_that_ended_leaves_nothing_to_undo(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA, KNOB_CFS_QUOTA);
    create("ended", 1);
    fx.child = tt_child_start(fx.g);
    pid_t pid = fx.child.pid;
    tt_child_end(&fx.child);
    throttle_group_remove_pid(fx.g, pid);
    assert_false(group_lists(fx.cpu1, "ended", pid));
    set_share(0.5, 100);
    assert_string_equal(read_group(fx.cpu1, "ended", "cpu.cfs_quota_us"), "50000");
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    assert_false(group_exists(fx.cpu1, "ended"));
}

/* cgroup.max.descendants 0 makes the kernel refuse the v2 group (EAGAIN): the v1 freezer takes
 * over, and without v1, SIGSTOP. The reason is passed on either way. */
static void a_freezer_group_the_kernel_refuses_falls_back(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_FREEZER | 1u << KNOB_SIGSTOP, KNOB_FREEZER);
    if (!fx.t->cg2_freeze || !fx.t->freezer1.subtree[0]) {
        print_message("# needs both cgroup.freeze and a v1 freezer: %s\n", throttle_describe(fx.t, KNOB_FREEZER));
        skip();
    }
    char subtree[512];
    snprintf(subtree, sizeof subtree, "%s/%s", fx.cg2, fx.cfg.subtree);
    tt_write(subtree, "cgroup.max.descendants", "0\n");
    create("refused", 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_FREEZER);
    assert_false(group_exists(fx.cg2, "refused"));
    assert_true(group_exists(fx.freezer1, "refused"));
    if (!strstr(fx.err, "freezer: cannot create") || !strstr(fx.err, subtree))
        fail_msg("expected why v2 was passed over, got '%s'", fx.err);
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    throttle_free(fx.t); /* removes the (empty) subtree, and its limit with it */
    snprintf(fx.cfg.cgroup1_root, sizeof fx.cfg.cgroup1_root, "none");
    fx.t = throttle_detect(&fx.cfg);
    tt_write(subtree, "cgroup.max.descendants", "0\n");
    create("refused", 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_SIGSTOP);
    if (!strstr(fx.err, "freezer: cannot create"))
        fail_msg("expected why the freezer was passed over, got '%s'", fx.err);
}

/* Detection made <mount>/<subtree>; free removes it once empty. */
static void free_removes_the_subtrees_it_made(void **state)
{
    (void)state;
    detect_or_skip(1u << KNOB_CFS_QUOTA | 1u << KNOB_FREEZER, KNOB_CFS_QUOTA);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fx.cpu1, fx.cfg.subtree);
    assert_int_equal(access(path, F_OK), 0);
    throttle_free(fx.t);
    fx.t = NULL;
    const char *mounts[] = {fx.cpu1, fx.freezer1, fx.cg2};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", mounts[i], fx.cfg.subtree);
        if (mounts[i][0] && access(path, F_OK) == 0)
            fail_msg("%s is left behind", path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(v1_cfs_quota_is_share_times_one_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(v1_cfs_quota_is_share_times_two_cpus, setup, teardown),
        cmocka_unit_test_setup_teardown(add_pid_moves_a_running_process_into_the_cpu_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(v1_freezer_share_zero_freezes_and_share_one_thaws, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_cgroup_freeze_share_zero_freezes_and_share_one_thaws, setup, teardown),
        cmocka_unit_test_setup_teardown(cfs_quota_below_its_minimum_duty_cycles_with_the_freezer, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_thaws_moves_back_and_removes_the_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(a_process_that_ended_leaves_nothing_to_undo, setup, teardown),
        cmocka_unit_test_setup_teardown(a_freezer_group_the_kernel_refuses_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(free_removes_the_subtrees_it_made, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
