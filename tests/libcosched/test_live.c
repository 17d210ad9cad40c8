/* test_live: libcosched against the real coschedd (started by daemon.sh with client_timeout 60 s)
 * — reports counted by the daemon over one connection, idle closes, restarts, a daemon away. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cosched.h"

/* Bounds on waiting for the daemon (a reply, a start, an exit): far above what an ASan build on
 * a loaded 2-core machine takes, and every wait ends as soon as what it waits for is there. */
enum { WAIT_S = 60 };

static pid_t our_daemon; /* a daemon this test started, which it must reap; 0: the wrapper's */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A handle that waits up to WAIT_S for each reply: the library's 1 s default is a training loop's
 * bound, and a daemon under ASan on a loaded machine may stall longer than that. */
static cosched_t *patient_open(const char *socket, const char *job)
{
    cosched_t *c = cosched_open(socket, job);
    assert_int_equal(cosched_set_timeout(c, WAIT_S * 1000), 0);
    return c;
}

/* The job's step count as `cosched --json stats --job ID` prints it. */
static long long daemon_steps(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/client/cosched' --timeout %d --json stats --job '%s'", getenv("COSCHED_BUILD_ROOT"),
             WAIT_S, getenv("COSCHED_JOB"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t jerr;
    json_t *stats = json_loadf(p, 0, &jerr);
    assert_int_equal(pclose(p), 0);
    assert_non_null(stats);
    json_t *steps = json_object_get(json_array_get(json_object_get(stats, "jobs"), 0), "steps");
    assert_true(json_is_integer(steps));
    long long n = (long long)json_integer_value(steps);
    json_decref(stats);
    return n;
}

/* This process's one socket (the library's connection, seen from outside): its fd, and its
 * inode in *inode, which changes when the library reconnects. */
static int the_socket(unsigned long *inode)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int fd = -1, count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char target[64];
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (sscanf(target, "socket:[%lu]", inode) == 1) {
            fd = atoi(e->d_name);
            count++;
        }
    }
    closedir(d);
    assert_int_equal(count, 1);
    return fd;
}

static int connectable(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", getenv("COSCHED_SOCKET"));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static void kill_daemon(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/daemon.pid", getenv("COSCHED_TEST_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_int_equal(kill(pid, SIGKILL), 0);
    if (pid == our_daemon) {
        waitpid(pid, NULL, 0);
        our_daemon = 0;
    }
    /* The wrapper reaps a daemon it started; either is gone once its socket refuses. */
    for (double end = now() + WAIT_S; connectable() && now() < end;)
        usleep(50 * 1000);
    assert_false(connectable());
}

/* A new daemon on the same socket and state dir, as this process's child, with a config file
 * of daemon.sh's temp dir (NULL: its default, coschedd.yaml). */
static void start_daemon_on(const char *config)
{
    char path[512] = "";
    if (config)
        snprintf(path, sizeof path, "%s/%s", getenv("COSCHED_TEST_DIR"), config);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(getenv("COSCHED_TEST_DAEMON"), "daemon.sh", "exec", config ? path : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    our_daemon = pid;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s/client/cosched' --timeout %d status >/dev/null 2>&1", getenv("COSCHED_BUILD_ROOT"),
             WAIT_S);
    for (double end = now() + WAIT_S; now() < end; usleep(50 * 1000))
        if (system(cmd) == 0)
            return;
    fail_msg("the restarted coschedd does not answer within %d s", WAIT_S);
}

static void start_daemon(void)
{
    start_daemon_on(NULL);
}

/* The idle-close test's daemon: client_timeout 1 s (daemon.sh's idle-close.yaml) in place of the
 * 60 s under which no other test sees its connection closed. */
static int on_the_idle_close_daemon(void **state)
{
    (void)state;
    kill_daemon();
    start_daemon_on("idle-close.yaml");
    return 0;
}

static int back_on_the_default_daemon(void **state)
{
    (void)state;
    kill_daemon();
    start_daemon();
    return 0;
}

/* A clean stop: a daemon killed with -9 leaves its guard's empty cgroup subtree behind, and no
 * later daemon has this state dir to sweep it. */
static int teardown_group(void **state)
{
    (void)state;
    if (our_daemon) {
        kill(our_daemon, SIGTERM);
        waitpid(our_daemon, NULL, 0);
    }
    return 0;
}

static void open_finds_socket_and_job_in_the_environment(void **state)
{
    (void)state;
    long long before = daemon_steps();
    cosched_t *c = patient_open(NULL, NULL);
    assert_non_null(c);
    assert_string_equal(cosched_error(c), "");
    assert_int_equal(cosched_report_step(c, 0.25), 0);
    assert_string_equal(cosched_error(c), "");
    assert_int_equal(daemon_steps(), before + 1);
    assert_int_equal(cosched_steps(c), before + 1);
    cosched_close(c);
}

static void slurm_job_id_names_the_job_when_cosched_job_is_empty(void **state)
{
    (void)state;
    char *job = strdup(getenv("COSCHED_JOB"));
    long long before = daemon_steps();
    setenv("COSCHED_JOB", "", 1);
    setenv("SLURM_JOB_ID", job, 1);
    cosched_t *c = patient_open(NULL, NULL);
    setenv("COSCHED_JOB", job, 1);
    unsetenv("SLURM_JOB_ID");
    assert_int_equal(cosched_report_step(c, 0.25), 0);
    assert_int_equal(daemon_steps(), before + 1);
    cosched_close(c);
    free(job);
}

static void arguments_win_over_the_environment(void **state)
{
    (void)state;
    setenv("COSCHED_JOB", "some-other-job", 1);
    cosched_t *wrong = patient_open(NULL, NULL);
    assert_int_equal(cosched_report_step(wrong, 0.25), -1);
    assert_non_null(strstr(cosched_error(wrong), "ENOENT: no job some-other-job"));
    cosched_close(wrong);
    setenv("COSCHED_SOCKET", "/nonexistent/coschedd.sock", 1);
    cosched_t *c = patient_open(getenv("COSCHED_TEST_SOCKET"), "libtest");
    setenv("COSCHED_JOB", "libtest", 1);
    setenv("COSCHED_SOCKET", getenv("COSCHED_TEST_SOCKET"), 1);
    assert_int_equal(cosched_report_step(c, 0.25), 0);
    cosched_close(c);
}

/* A phase other than training: its steps are counted apart, not as the job's steps; a phase
 * name the daemon refuses says why. */
static void steps_in_another_phase_are_not_the_jobs(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, NULL);
    long long before = daemon_steps();
    assert_int_equal(cosched_phase(c, "eval"), 0);
    assert_string_equal(cosched_error(c), "");
    assert_int_equal(cosched_report_step(c, 0.5), 0);
    assert_int_equal(daemon_steps(), before);
    assert_int_equal(cosched_phase(c, "train"), 0);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    assert_int_equal(daemon_steps(), before + 1);
    assert_int_equal(cosched_phase(c, "Eval!"), -1);
    assert_non_null(strstr(cosched_error(c), "EINVAL"));
    assert_int_equal(cosched_phase(c, ""), -1);
    assert_int_equal(cosched_phase(NULL, "eval"), -1);
    cosched_close(c);
}

static void every_report_is_counted_by_the_daemon(void **state)
{
    (void)state;
    long long before = daemon_steps();
    cosched_t *c = patient_open(NULL, NULL);
    for (int i = 0; i < 50; i++)
        assert_int_equal(cosched_report_step(c, 0.1 + i * 0.001), 0);
    assert_int_equal(daemon_steps(), before + 50);
    assert_int_equal(cosched_steps(c), before + 50);
    cosched_close(c);
}

static void reports_share_one_connection(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, NULL);
    unsigned long first, later;
    the_socket(&first);
    for (int i = 0; i < 20; i++)
        assert_int_equal(cosched_report_step(c, 0.1), 0);
    the_socket(&later);
    assert_int_equal(first, later);
    cosched_close(c);
}

/* On the idle-close daemon (client_timeout 1 s). */
static void a_step_longer_than_the_idle_timeout_is_reported(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, NULL);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    long long before = daemon_steps();
    unsigned long first, later;
    int fd = the_socket(&first);
    cosched_step_begin(c);
    /* The step lasts until the daemon has dropped the idle connection (on its first tick past
     * client_timeout), so that the report below has to find it closed and make a new one. */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, WAIT_S * 1000), 1);
    assert_int_equal(cosched_step_end(c), 0);
    assert_string_equal(cosched_error(c), "");
    the_socket(&later);
    assert_int_not_equal(first, later);
    assert_int_equal(daemon_steps(), before + 1);
    cosched_close(c);
}

static void the_report_after_a_daemon_restart_reconnects(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, NULL);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    kill_daemon();
    start_daemon();
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    assert_string_equal(cosched_error(c), "");
    assert_int_equal(cosched_steps(c), 1); /* counted by the new daemon (steps live in memory) */
    assert_int_equal(daemon_steps(), 1);
    cosched_close(c);
}

static void reports_fail_while_the_daemon_is_away_and_resume_when_it_is_back(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, NULL);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    kill_daemon();
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), getenv("COSCHED_SOCKET")));
    assert_non_null(strstr(cosched_error(c), "cannot connect"));
    start_daemon();
    long long before = daemon_steps();
    /* Failing at once while held off (1 s after the failure), then counted. */
    int rc = -1;
    for (double end = now() + WAIT_S; rc != 0 && now() < end;) {
        rc = cosched_report_step(c, 0.1);
        if (rc != 0)
            usleep(50 * 1000);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(daemon_steps(), before + 1);
    cosched_close(c);
}

static void a_refusal_says_why_and_keeps_the_connection(void **state)
{
    (void)state;
    cosched_t *c = patient_open(NULL, "no-such-job");
    unsigned long first, later;
    the_socket(&first);
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "ENOENT: no job no-such-job"));
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "ENOENT")); /* asked again, not held off */
    the_socket(&later);
    assert_int_equal(first, later);
    cosched_close(c);
}

static void *report_25(void *arg)
{
    (void)arg;
    cosched_t *c = patient_open(NULL, NULL);
    intptr_t failed = 0;
    for (int i = 0; i < 25; i++)
        failed += cosched_report_step(c, 0.1) != 0;
    cosched_close(c);
    return (void *)failed;
}

static void a_handle_per_thread_needs_no_lock(void **state)
{
    (void)state;
    long long before = daemon_steps();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, report_25, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *failed;
        pthread_join(t[i], &failed);
        assert_int_equal((intptr_t)failed, 0);
    }
    assert_int_equal(daemon_steps(), before + 100);
}

int main(void)
{
    /* A library that let a closed socket raise SIGPIPE would kill this test. */
    signal(SIGPIPE, SIG_DFL);
    setenv("COSCHED_TEST_SOCKET", getenv("COSCHED_SOCKET"), 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_finds_socket_and_job_in_the_environment),
        cmocka_unit_test(slurm_job_id_names_the_job_when_cosched_job_is_empty),
        cmocka_unit_test(arguments_win_over_the_environment),
        cmocka_unit_test(every_report_is_counted_by_the_daemon),
        cmocka_unit_test(steps_in_another_phase_are_not_the_jobs),
        cmocka_unit_test(reports_share_one_connection),
        cmocka_unit_test_setup_teardown(a_step_longer_than_the_idle_timeout_is_reported, on_the_idle_close_daemon,
                                        back_on_the_default_daemon),
        cmocka_unit_test(a_refusal_says_why_and_keeps_the_connection),
        cmocka_unit_test(a_handle_per_thread_needs_no_lock),
        cmocka_unit_test(the_report_after_a_daemon_restart_reconnects),
        cmocka_unit_test(reports_fail_while_the_daemon_is_away_and_resume_when_it_is_back),
    };
    return cmocka_run_group_tests_name("libcosched_live", tests, NULL, teardown_group);
}
