/* test_throttle_cores: the spatial knob on real processes — a multi-threaded child narrowed to the
 * first of its two CPUs, every thread of it, a thread or child born later too; everything given
 * back at share 1, on remove_pid, on destroy and by the sweep of a daemon that follows one killed
 * with -9; single-threaded processes and the ranks of a parallel job are left to time slicing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "throttle.h"
#include "throttle_testlib.h"

/* The child: nthreads threads that sleep, and commands on stdin — 't' one more thread, 'f' a child
 * of its own (single-threaded; its pid written back), 'p' one more thread pinned to CPU 1 alone,
 * 'q' the end. */
static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int child_main(int nthreads)
{
    pthread_t th;
    for (int i = 1; i < nthreads; i++)
        pthread_create(&th, NULL, sleeper, NULL);
    for (char c; read(0, &c, 1) == 1 && c != 'q';) {
        if (c == 't' || c == 'p') {
            pthread_create(&th, NULL, sleeper, NULL);
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(1, &one);
            if (c == 'p')
                pthread_setaffinity_np(th, sizeof one, &one);
        } else if (c == 'f') {
            pid_t p = fork();
            if (p == 0)
                for (;;)
                    pause();
            if (write(1, &p, sizeof p) != sizeof p)
                return 1;
            continue;
        }
        if (write(1, &c, 1) != 1) /* acknowledged once done */
            return 1;
    }
    return 0;
}

typedef struct kid {
    pid_t pid;
    int to, from;
} kid_t;

static throttle_t *t;
static throttle_group_t *g;
static kid_t kid;
static pid_t grandkid;
static char err[1024], jdir[THROTTLE_PATH_MAX], journal[THROTTLE_PATH_MAX + 32], self[4096];

/* Start the child on CPUs 0 and 1, through exec so that env is its environment (NULL: none), as
 * uid (0: this test's). */
static kid_t kid_start_as(int nthreads, const char *env, uid_t uid)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cpu_set_t two;
        CPU_ZERO(&two);
        CPU_SET(0, &two);
        CPU_SET(1, &two);
        sched_setaffinity(0, sizeof two, &two);
        if (uid && setresuid(uid, uid, uid) < 0)
            _exit(126);
        dup2(in[0], 0);
        dup2(out[1], 1);
        char n[16];
        snprintf(n, sizeof n, "%d", nthreads);
        char *argv[] = {"test_throttle_cores", "--child", n, NULL};
        char *envp[] = {(char *)env, NULL};
        execve(self, argv, envp);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    kid_t k = {pid, in[1], out[0]};
    char c = 'x'; /* an echo: its threads are up */
    assert_int_equal(write(k.to, &c, 1), 1);
    assert_int_equal(read(k.from, &c, 1), 1);
    return k;
}

static kid_t kid_start(int nthreads, const char *env)
{
    return kid_start_as(nthreads, env, 0);
}

static void kid_say(char c)
{
    assert_int_equal(write(kid.to, &c, 1), 1);
    if (c == 'f')
        assert_int_equal(read(kid.from, &grandkid, sizeof grandkid), (ssize_t)sizeof grandkid);
    else
        assert_int_equal(read(kid.from, &c, 1), 1);
}

/* The CPUs of each of pid's threads, as bit masks of CPUs 0..63 into bits; how many threads. */
static int thread_cpus(pid_t pid, unsigned long long *bits, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        cpu_set_t mask;
        if (e->d_name[0] == '.' || sched_getaffinity(atoi(e->d_name), sizeof mask, &mask) < 0)
            continue;
        bits[n] = 0;
        for (int c = 0; c < 64; c++)
            if (CPU_ISSET(c, &mask))
                bits[n] |= 1ull << c;
        n++;
    }
    closedir(d);
    return n;
}

/* The CPUs all of pid's threads have, as a bit mask; 0 when they differ. */
static unsigned long long cpus_of(pid_t pid, int *nthreads)
{
    unsigned long long bits[64];
    int n = thread_cpus(pid, bits, 64);
    if (nthreads)
        *nthreads = n;
    for (int i = 1; i < n; i++)
        if (bits[i] != bits[0])
            return 0;
    return n ? bits[0] : 0;
}

/* How many of pid's threads have exactly the CPUs in mask. */
static int threads_on(pid_t pid, unsigned long long mask)
{
    unsigned long long bits[64];
    int n = thread_cpus(pid, bits, 64), on = 0;
    for (int i = 0; i < n; i++)
        on += bits[i] == mask;
    return on;
}

/* What the next daemon does at start after one killed with -9: sweep the same journal directory. */
static void sweep_as_the_next_daemon(void)
{
    throttle_config_t cfg;
    tt_config(&cfg, (1u << KNOB_CORES) | (1u << KNOB_SIGSTOP));
    snprintf(cfg.journal_dir, sizeof cfg.journal_dir, "%s", jdir);
    throttle_t *next = throttle_detect(&cfg);
    throttle_sweep(next);
    throttle_free(next);
}

static int setup(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, (1u << KNOB_CORES) | (1u << KNOB_SIGSTOP));
    tt_tmpdir(jdir, sizeof jdir);
    snprintf(cfg.journal_dir, sizeof cfg.journal_dir, "%s", jdir);
    snprintf(journal, sizeof journal, "%s/cores@spatial", jdir);
    t = throttle_detect(&cfg);
    assert_true(throttle_has(t, KNOB_CORES));
    g = throttle_group_create(t, "spatial", 2, err, sizeof err);
    assert_non_null(g);
    kid = (kid_t){0};
    grandkid = 0;
    return 0;
}

static void end(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
    }
    *pid = 0;
}

static int teardown(void **state)
{
    (void)state;
    throttle_group_destroy(g);
    throttle_free(t);
    end(&grandkid);
    end(&kid.pid);
    close(kid.to);
    close(kid.from);
    tt_rm_rf(jdir);
    return 0;
}

static void add(pid_t pid)
{
    if (throttle_group_add_pid(g, pid, err, sizeof err) < 0)
        fail_msg("add_pid(%d): %s", (int)pid, err);
}

static void set_share(double share)
{
    if (throttle_group_set_share(g, share, 1, err, sizeof err) < 0)
        fail_msg("set_share(%g): %s", share, err);
}

static void threads_narrowed_to_the_first_cpu_and_given_back_at_share_one(void **state)
{
    (void)state;
    int n;
    kid = kid_start(3, NULL);
    add(kid.pid);
    assert_int_equal(cpus_of(kid.pid, &n), 0x3);
    assert_int_equal(n, 3);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, &n), 0x1);
    assert_int_equal(n, 3);
    assert_true(throttle_group_cores_kept(g) == 0.5);
    assert_false(throttle_group_duty_cycling(g)); /* one of two cores is the whole share */
    assert_string_equal(throttle_group_cores_note(g), "");
    set_share(1);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_true(throttle_group_cores_kept(g) == 1);
}

static void below_one_core_the_rest_is_duty_cycling(void **state)
{
    (void)state;
    kid = kid_start(2, NULL);
    add(kid.pid);
    set_share(0.25);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x1);
    assert_true(throttle_group_duty_cycling(g)); /* half of its one core */
    set_share(0.75);                             /* two of two cores: nothing narrowed, a duty of 0.75 */
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_true(throttle_group_cores_kept(g) == 1);
}

static void threads_and_children_born_later_are_narrowed_and_given_back(void **state)
{
    (void)state;
    int n;
    kid = kid_start(2, NULL);
    add(kid.pid);
    set_share(0.5);
    kid_say('t');
    assert_int_equal(cpus_of(kid.pid, &n), 0x1);
    assert_int_equal(n, 3);
    kid_say('f');
    assert_int_equal(cpus_of(grandkid, NULL), 0x1); /* inherited */
    add(grandkid);                                  /* as the cgroup or Slurm would show it */
    set_share(1);
    assert_int_equal(cpus_of(kid.pid, &n), 0x3);
    assert_int_equal(n, 3);
    assert_int_equal(cpus_of(grandkid, NULL), 0x3); /* its parent's CPUs, not the narrowed ones */
}

/* An application that pins its threads one by one gets each pin back, from the group and from
 * the journal a daemon killed with -9 leaves. */
static void threads_pinned_one_by_one_get_their_own_cpus_back(void **state)
{
    (void)state;
    kid = kid_start(2, NULL);
    kid_say('p');
    assert_int_equal(threads_on(kid.pid, 0x3), 2);
    assert_int_equal(threads_on(kid.pid, 0x2), 1);
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(threads_on(kid.pid, 0x1), 3);
    set_share(1);
    assert_int_equal(threads_on(kid.pid, 0x3), 2);
    assert_int_equal(threads_on(kid.pid, 0x2), 1);
    set_share(0.5);
    char text[1024];
    assert_non_null(tt_read(journal, text, sizeof text));
    assert_non_null(strstr(text, "\nthread "));
    sweep_as_the_next_daemon();
    assert_int_equal(threads_on(kid.pid, 0x3), 2);
    assert_int_equal(threads_on(kid.pid, 0x2), 1);
}

static void remove_pid_and_destroy_give_the_cpus_back(void **state)
{
    (void)state;
    kid = kid_start(2, NULL);
    add(kid.pid);
    set_share(0.5);
    throttle_group_remove_pid(g, kid.pid);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x1);
    throttle_group_destroy(g);
    g = NULL;
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_int_equal(access(journal, F_OK), -1); /* nothing left to undo */
}

/* The daemon killed with -9 leaves its journal; the next one's sweep gives the CPUs back. */
static void the_sweep_after_a_crash_gives_the_cpus_back(void **state)
{
    (void)state;
    char text[512];
    kid = kid_start(2, NULL);
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x1);
    assert_non_null(tt_read(journal, text, sizeof text));
    char line[64];
    snprintf(line, sizeof line, "narrowed %d ", (int)kid.pid);
    assert_non_null(strstr(text, line));
    assert_non_null(strstr(text, " 0,1"));
    sweep_as_the_next_daemon();
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_int_equal(access(journal, F_OK), -1);
}

static void a_single_threaded_process_is_left_to_time_slicing(void **state)
{
    (void)state;
    kid = kid_start(1, NULL);
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_true(throttle_group_duty_cycling(g));
    assert_non_null(strstr(throttle_group_cores_note(g), "two threads"));
}

static void the_rank_of_a_parallel_job_is_left_to_time_slicing(void **state)
{
    (void)state;
    kid = kid_start(3, "OMPI_COMM_WORLD_SIZE=4");
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_true(throttle_group_duty_cycling(g));
    assert_non_null(strstr(throttle_group_cores_note(g), "OMPI_COMM_WORLD_SIZE=4"));
}

static void a_job_of_one_rank_is_narrowed(void **state)
{
    (void)state;
    kid = kid_start(3, "SLURM_STEP_NUM_TASKS=1");
    add(kid.pid);
    set_share(0.5);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x1);
}

/* This process's effective capabilities without CAP_SYS_NICE, or back as they were. */
static void sys_nice(bool keep)
{
    static struct __user_cap_data_struct saved[2];
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (!keep) {
        assert_int_equal(syscall(SYS_capget, &head, saved), 0);
        struct __user_cap_data_struct less[2] = {saved[0], saved[1]};
        less[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
        assert_int_equal(syscall(SYS_capset, &head, less), 0);
    } else {
        assert_int_equal(syscall(SYS_capset, &head, saved), 0);
    }
}

/* Another user's co-tenant, and no CAP_SYS_NICE (a unit without the drop-in): the kernel refuses,
 * and the group is held by time slicing instead, with the reason, never an error. */
static void refused_without_cap_sys_nice_it_is_left_to_time_slicing(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip();
        return;
    }
    kid = kid_start_as(3, NULL, 65534);
    add(kid.pid);
    sys_nice(false);
    int rc = throttle_group_set_share(g, 0.5, 1, err, sizeof err);
    sys_nice(true);
    assert_int_equal(rc, 0);
    assert_int_equal(cpus_of(kid.pid, NULL), 0x3);
    assert_true(throttle_group_cores_kept(g) == 1);
    assert_true(throttle_group_duty_cycling(g));
    assert_non_null(strstr(throttle_group_cores_note(g), "CAP_SYS_NICE"));
}

/* Without the knob in knobs_allowed (the default), nothing is narrowed. */
static void not_allowed_by_default(void **state)
{
    (void)state;
    throttle_config_t cfg;
    tt_config(&cfg, 0);
    throttle_t *plain = throttle_detect(&cfg);
    assert_false(throttle_has(plain, KNOB_CORES));
    throttle_free(plain);
    knob_t k;
    assert_int_equal(throttle_knob_parse("cores", &k), 0);
    assert_int_equal(k, KNOB_CORES);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]));
    if (!realpath(argv[0], self)) { /* not /proc/self/exe: under valgrind that is valgrind */
        printf("Bail out! cannot find myself (%s)\n", argv[0]);
        return 1;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("1..0 # SKIP the cores knob needs two CPUs\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(threads_narrowed_to_the_first_cpu_and_given_back_at_share_one, setup, teardown),
        cmocka_unit_test_setup_teardown(below_one_core_the_rest_is_duty_cycling, setup, teardown),
        cmocka_unit_test_setup_teardown(threads_and_children_born_later_are_narrowed_and_given_back, setup, teardown),
        cmocka_unit_test_setup_teardown(threads_pinned_one_by_one_get_their_own_cpus_back, setup, teardown),
        cmocka_unit_test_setup_teardown(remove_pid_and_destroy_give_the_cpus_back, setup, teardown),
        cmocka_unit_test_setup_teardown(the_sweep_after_a_crash_gives_the_cpus_back, setup, teardown),
        cmocka_unit_test_setup_teardown(a_single_threaded_process_is_left_to_time_slicing, setup, teardown),
        cmocka_unit_test_setup_teardown(the_rank_of_a_parallel_job_is_left_to_time_slicing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_job_of_one_rank_is_narrowed, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_without_cap_sys_nice_it_is_left_to_time_slicing, setup, teardown),
        cmocka_unit_test(not_allowed_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
