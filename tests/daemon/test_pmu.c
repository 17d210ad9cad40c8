/* test_pmu: perf event counters for the pmu progress source. This machine has no hardware PMU, so
 * instructions are only probed (and the reason checked); the counting itself — per process with
 * its children, per CPU on a cgroup v2 directory — runs with the software event task-clock, the
 * documented stand-in. Waits are bounded polls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmu.h"

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pid_t busy_child(bool with_grandchild)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: one kill ends it and its child */
        if (with_grandchild && fork() == 0)
            for (volatile unsigned long n = 0;; n++)
                ;
        for (volatile unsigned long n = 0;; n++)
            ;
    }
    assert_true(pid > 0);
    return pid;
}

static void end(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll for the counter to pass `at_least`, a minute at most (valgrind, a loaded machine). */
static double counted(const pmu_counter_t *c, double at_least)
{
    double v = 0;
    for (double end = seconds_now() + 60; (v = pmu_read(c)) <= at_least && seconds_now() < end;)
        nap(10);
    return v;
}

static void instructions_are_probed_and_their_absence_explained(void **state)
{
    (void)state;
    char why[512];
    if (pmu_probe("instructions", why, sizeof why)) {
        assert_non_null(strstr(why, "instructions counted by perf events"));
        return;
    }
    assert_true(strstr(why, "no hardware PMU") || strstr(why, "not permitted") || strstr(why, "no perf events"));
    assert_false(pmu_probe("cycles", why, sizeof why));
    assert_non_null(strstr(why, "unknown event 'cycles'"));
}

static void the_stand_in_says_it_is_one(void **state)
{
    (void)state;
    char why[512];
    assert_true(pmu_probe("task-clock", why, sizeof why));
    assert_non_null(strstr(why, "a stand-in for testing, not progress"));
}

/* A run's counter follows the process and what it starts (inherit). */
static void a_process_is_counted_with_its_children(void **state)
{
    (void)state;
    char why[512];
    pid_t pid = busy_child(true);
    pmu_counter_t *c = NULL;
    assert_int_equal(pmu_add_process(&c, "task-clock", pid, why, sizeof why), 0);
    assert_true(pmu_counts_process(c, pid));
    assert_false(pmu_counts_process(c, pid + 1));
    double first = counted(c, 0);
    assert_true(first > 0);
    assert_true(counted(c, first) > first);
    end(pid);
    double after = pmu_read(c);
    assert_true(after >= first); /* an ended process's count stays readable */
    pmu_close(c);
    c = NULL;
    assert_int_equal(pmu_add_process(&c, "task-clock", 0x7ffffff0, why, sizeof why), -1);
    pmu_close(c);
}

/* A Slurm job under cgroup/v2: every process in its cgroup, on each CPU it may use. */
static void a_cgroup_v2_directory_is_counted_per_cpu(void **state)
{
    (void)state;
    FILE *m = fopen("/proc/self/mountinfo", "r");
    char line[1024], v2[512] = "", dir[600], procs[640], why[512];
    while (m && fgets(line, sizeof line, m))
        if (strstr(line, " - cgroup2 "))
            sscanf(line, "%*s %*s %*s %*s %511s", v2);
    if (m)
        fclose(m);
    if (!v2[0] || getuid() != 0) {
        skip();
        return;
    }
    snprintf(dir, sizeof dir, "%s/cosched-test-pmu-%d", v2, (int)getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    pid_t pid = busy_child(false);
    FILE *f = fopen(procs, "w");
    assert_non_null(f);
    fprintf(f, "%d\n", (int)pid);
    assert_int_equal(fclose(f), 0);
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(cpus, 0, (int)sysconf(_SC_NPROCESSORS_ONLN) - 1);
    pmu_counter_t *c = pmu_open_cgroup("task-clock", dir, cpus, why, sizeof why);
    if (!c) {
        end(pid);
        rmdir(dir);
        fail_msg("%s", why);
    }
    double first = counted(c, 0);
    bool grows = counted(c, first) > first;
    end(pid);
    for (double end = seconds_now() + 60; rmdir(dir) < 0 && errno == EBUSY && seconds_now() < end;)
        nap(10);
    pmu_close(c);
    hwloc_bitmap_free(cpus);
    assert_true(first > 0 && grows);
    assert_null(pmu_open_cgroup("task-clock", "/nonexistent/cgroup", cpus = hwloc_bitmap_alloc(), why, sizeof why));
    assert_non_null(strstr(why, "cannot open /nonexistent/cgroup"));
    hwloc_bitmap_free(cpus);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(instructions_are_probed_and_their_absence_explained),
        cmocka_unit_test(the_stand_in_says_it_is_one),
        cmocka_unit_test(a_process_is_counted_with_its_children),
        cmocka_unit_test(a_cgroup_v2_directory_is_counted_per_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
