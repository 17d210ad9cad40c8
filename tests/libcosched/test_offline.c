/* test_offline: libcosched without a working daemon — none at all, one that never answers, one
 * that stops reading, one that closes before answering — and its argument checks. Linked from the
 * library's objects with this file's clock_now in place of lib_clock.c: hold-offs and step times are
 * judged on a clock the test sets, while timeouts still run on real time (poll). */
#include <errno.h>
#include <math.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "cosched.h"
#include "lib_clock.h"
#include "proto.h"
#include "wire.h"

/* The fake daemon's and the patient handles' bound on a wait: never reached unless broken. */
enum { WAIT_MS = 60 * 1000 };

static char dir[64], path[96];

/* The library's monotonic clock: only the test thread moves it, and only the test thread calls
 * the library. Binary fractions, so that sums of them are exact. */
static double fake_now = 1024.0;

double clock_now(void)
{
    return fake_now;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/libcosched-offline-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/coschedd.sock", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* A socket on `path` that nobody serves unless a test does: connects land in its backlog. */
static int listener(void)
{
    unlink(path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 16), 0);
    return fd;
}

/* Connections waiting in the listener's backlog, accepted and closed. */
static int pending_connections(int listen_fd)
{
    int n = 0, fd;
    while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        close(fd);
        n++;
    }
    return n;
}

static void no_daemon_is_an_error_that_names_the_socket(void **state)
{
    (void)state;
    cosched_t *c = cosched_open(path, "j1");
    assert_non_null(c);
    assert_non_null(strstr(cosched_error(c), path));
    assert_non_null(strstr(cosched_error(c), "cannot connect"));
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), path));
    assert_int_equal(cosched_steps(c), -1);
    cosched_close(c);
}

static void a_daemon_that_never_answers_costs_a_timeout_then_a_hold_off(void **state)
{
    (void)state;
    int lfd = listener();
    cosched_t *c = cosched_open(path, "j1");
    assert_string_equal(cosched_error(c), "");
    assert_int_equal(cosched_set_timeout(c, 50), 0);
    double failed = fake_now;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no reply within 50 ms"));
    assert_int_equal(pending_connections(lfd), 1);
    /* Reports within the hold-off (1 s: ten timeouts of 50 ms are less) make no connection and
     * say when the next is, up to its last instant. */
    fake_now = failed + 0.5;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no reply within 50 ms (next attempt in 0.5 s)"));
    fake_now = failed + 0.9990234375;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "(next attempt in 0.0 s)"));
    assert_int_equal(pending_connections(lfd), 0);
    /* At its end, one new attempt. */
    fake_now = failed + 1.0;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no reply within 50 ms"));
    assert_null(strstr(cosched_error(c), "next attempt"));
    assert_int_equal(pending_connections(lfd), 1);
    cosched_close(c);
    close(lfd);
}

/* A stuck daemon costs a whole timeout per attempt: it is asked again after ten of them. */
static void after_a_longer_timeout_the_hold_off_is_ten_timeouts(void **state)
{
    (void)state;
    int lfd = listener();
    cosched_t *c = cosched_open(path, "j1");
    assert_int_equal(cosched_set_timeout(c, 250), 0);
    double failed = fake_now;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no reply within 250 ms"));
    assert_int_equal(pending_connections(lfd), 1);
    fake_now = failed + 2.4990234375;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "(next attempt in 0.0 s)"));
    assert_int_equal(pending_connections(lfd), 0);
    fake_now = failed + 2.5;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_null(strstr(cosched_error(c), "next attempt"));
    assert_int_equal(pending_connections(lfd), 1);
    cosched_close(c);
    close(lfd);
}

/* A refused connect (no daemon) is held off for 1 s too, then tried again. */
static void a_refused_connect_is_held_off_for_a_second(void **state)
{
    (void)state;
    double failed = fake_now;
    cosched_t *c = cosched_open(path, "j1");
    assert_non_null(strstr(cosched_error(c), "cannot connect"));
    fake_now = failed + 0.9990234375;
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "(next attempt in 0.0 s)"));
    int lfd = listener();
    assert_int_equal(pending_connections(lfd), 0);
    fake_now = failed + 1.0;
    assert_int_equal(cosched_set_timeout(c, 50), 0);
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no reply within 50 ms"));
    assert_int_equal(pending_connections(lfd), 1);
    cosched_close(c);
    close(lfd);
}

static void a_peer_that_stops_reading_costs_an_error_not_a_sigpipe(void **state)
{
    (void)state;
    int lfd = listener();
    cosched_t *c = cosched_open(path, "j1");
    cosched_set_timeout(c, 50);
    int peer = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(peer >= 0);
    /* The library's next send meets EPIPE, and SIGPIPE is at its default in this process. */
    assert_int_equal(shutdown(peer, SHUT_RD), 0);
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    /* It sent the report again on a new connection, which nobody answers. */
    assert_non_null(strstr(cosched_error(c), "no reply within 50 ms"));
    assert_int_equal(pending_connections(lfd), 1);
    cosched_close(c);
    close(peer);
    close(lfd);
}

/* A fake coschedd on a thread: serves `connections` connections one after another, reading
 * one request on each; answers from connection `answer_from` on, closes unanswered before. */
typedef struct {
    int listen_fd, connections, answer_from;
    int requests;
    double step_time; /* of the last request */
    char method[32], job[64];
} fake_t;

static int read_frame(int fd, char *buf, size_t cap)
{
    unsigned char h[4];
    size_t got = 0, n = 0;
    while (got < 4 + n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, WAIT_MS) != 1)
            return -1;
        ssize_t r = got < 4 ? read(fd, h + got, 4 - got) : read(fd, buf + got - 4, n - (got - 4));
        if (r <= 0)
            return -1;
        got += (size_t)r;
        if (got == 4 && (n = proto_get_header(h)) >= cap)
            return -1;
    }
    buf[n] = '\0';
    return (int)n;
}

static void *fake_daemon(void *arg)
{
    fake_t *f = arg;
    for (int i = 0; i < f->connections; i++) {
        struct pollfd p = {.fd = f->listen_fd, .events = POLLIN};
        if (poll(&p, 1, WAIT_MS) != 1)
            break;
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        char buf[1024], err[128];
        int n = fd < 0 ? -1 : read_frame(fd, buf, sizeof buf);
        json_t *req = n > 0 ? proto_parse(buf, (size_t)n, err, sizeof err) : NULL;
        if (req) {
            f->requests++;
            json_t *params = json_object_get(req, WIRE_KEY_PARAMS);
            snprintf(f->method, sizeof f->method, "%s", json_string_value(json_object_get(req, WIRE_KEY_METHOD)));
            snprintf(f->job, sizeof f->job, "%s", json_string_value(json_object_get(params, WIRE_P_JOB)));
            f->step_time = json_number_value(json_object_get(params, WIRE_P_STEP_TIME));
            json_decref(req);
            if (i >= f->answer_from) {
                json_t *reply = proto_ok(json_pack("{s:s, s:i}", "job", f->job, "steps", 7));
                proto_send(fd, reply, WAIT_MS, err, sizeof err);
                json_decref(reply);
            }
        }
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

static void a_report_the_daemon_closed_on_is_sent_once_more_and_no_more(void **state)
{
    (void)state;
    fake_t f = {.listen_fd = listener(), .connections = 2, .answer_from = 99};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_daemon, &f), 0);
    cosched_t *c = cosched_open(path, "j1");
    cosched_set_timeout(c, WAIT_MS); /* the close, not a timeout, ends each attempt */
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "connection closed by the daemon"));
    pthread_join(t, NULL);
    assert_int_equal(f.requests, 2);
    assert_int_equal(pending_connections(f.listen_fd), 0);
    cosched_close(c);
    close(f.listen_fd);
}

static void a_report_the_daemon_closed_on_succeeds_on_the_new_connection(void **state)
{
    (void)state;
    fake_t f = {.listen_fd = listener(), .connections = 2, .answer_from = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_daemon, &f), 0);
    cosched_t *c = cosched_open(path, "j1");
    cosched_set_timeout(c, WAIT_MS);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    assert_int_equal(cosched_steps(c), 7);
    pthread_join(t, NULL);
    assert_int_equal(f.requests, 2);
    cosched_close(c);
    close(f.listen_fd);
}

static void a_connection_closed_while_idle_is_replaced_without_using_up_the_resend(void **state)
{
    (void)state;
    int lfd = listener();
    cosched_t *c = cosched_open(path, "j1");
    int idle = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(idle >= 0);
    close(idle); /* as coschedd does past its client_timeout */
    /* Then a daemon that closes the next connection unanswered and answers the one after: the
     * report gets through only if the idle close was noticed before sending. */
    fake_t f = {.listen_fd = lfd, .connections = 2, .answer_from = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_daemon, &f), 0);
    cosched_set_timeout(c, WAIT_MS);
    assert_int_equal(cosched_report_step(c, 0.1), 0);
    pthread_join(t, NULL);
    assert_int_equal(f.requests, 2);
    cosched_close(c);
    close(lfd);
}

static void a_timed_step_sends_report_with_the_job_and_the_time_elapsed(void **state)
{
    (void)state;
    fake_t f = {.listen_fd = listener(), .connections = 1, .answer_from = 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_daemon, &f), 0);
    cosched_t *c = cosched_open(path, "job-42");
    cosched_set_timeout(c, WAIT_MS);
    cosched_step_begin(c);
    fake_now += 0.375; /* the step */
    assert_int_equal(cosched_step_end(c), 0);
    pthread_join(t, NULL);
    assert_string_equal(f.method, WIRE_REPORT);
    assert_string_equal(f.job, "job-42");
    assert_true(f.step_time == 0.375);         /* the time between begin and end, in seconds */
    assert_int_equal(cosched_step_end(c), -1); /* that step was reported; no new one begun */
    assert_non_null(strstr(cosched_error(c), "without a cosched_step_begin"));
    cosched_close(c);
    close(f.listen_fd);
}

static void bad_step_times_are_refused_before_anything_is_sent(void **state)
{
    (void)state;
    int lfd = listener();
    cosched_t *c = cosched_open(path, "j1");
    int peer = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    double bad[] = {0, -1, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cosched_report_step(c, bad[i]), -1);
        assert_non_null(strstr(cosched_error(c), "positive number of seconds"));
    }
    char b;
    assert_int_equal(recv(peer, &b, 1, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
    cosched_close(c);
    close(peer);
    close(lfd);
}

static void no_job_anywhere_is_an_error_not_a_crash(void **state)
{
    (void)state;
    unsetenv("COSCHED_JOB");
    unsetenv("SLURM_JOB_ID");
    cosched_t *c = cosched_open(path, NULL);
    assert_non_null(strstr(cosched_error(c), "no job to report for"));
    assert_non_null(strstr(cosched_error(c), "COSCHED_JOB"));
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "no job to report for"));
    cosched_close(c);
}

static void a_socket_path_too_long_is_an_error(void **state)
{
    (void)state;
    char longpath[300];
    memset(longpath, 'x', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    cosched_t *c = cosched_open(longpath, "j1");
    assert_non_null(strstr(cosched_error(c), "too long"));
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "too long"));
    assert_int_equal(cosched_set_timeout(c, 0), -1); /* another error in between */
    assert_int_equal(cosched_report_step(c, 0.1), -1);
    assert_non_null(strstr(cosched_error(c), "too long"));
    cosched_close(c);
}

static void timeouts_out_of_range_are_refused(void **state)
{
    (void)state;
    cosched_t *c = cosched_open(path, "j1");
    assert_int_equal(cosched_set_timeout(c, 0), -1);
    assert_non_null(strstr(cosched_error(c), "timeout"));
    assert_int_equal(cosched_set_timeout(c, 60001), -1);
    assert_int_equal(cosched_set_timeout(c, 1), 0);
    assert_int_equal(cosched_set_timeout(c, 60000), 0);
    cosched_close(c);
}

static void a_null_handle_fails_quietly(void **state)
{
    (void)state;
    assert_int_equal(cosched_report_step(NULL, 0.1), -1);
    cosched_step_begin(NULL);
    assert_int_equal(cosched_step_end(NULL), -1);
    assert_int_equal(cosched_steps(NULL), -1);
    assert_int_equal(cosched_set_timeout(NULL, 10), -1);
    assert_non_null(strstr(cosched_error(NULL), "out of memory"));
    cosched_close(NULL);
}

int main(void)
{
    /* A library that let a closed socket raise SIGPIPE would kill this test. */
    signal(SIGPIPE, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_daemon_is_an_error_that_names_the_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(a_daemon_that_never_answers_costs_a_timeout_then_a_hold_off, setup, teardown),
        cmocka_unit_test_setup_teardown(after_a_longer_timeout_the_hold_off_is_ten_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_connect_is_held_off_for_a_second, setup, teardown),
        cmocka_unit_test_setup_teardown(a_peer_that_stops_reading_costs_an_error_not_a_sigpipe, setup, teardown),
        cmocka_unit_test_setup_teardown(a_report_the_daemon_closed_on_is_sent_once_more_and_no_more, setup, teardown),
        cmocka_unit_test_setup_teardown(a_report_the_daemon_closed_on_succeeds_on_the_new_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(a_connection_closed_while_idle_is_replaced_without_using_up_the_resend, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_timed_step_sends_report_with_the_job_and_the_time_elapsed, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_step_times_are_refused_before_anything_is_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(no_job_anywhere_is_an_error_not_a_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(a_socket_path_too_long_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(timeouts_out_of_range_are_refused, setup, teardown),
        cmocka_unit_test(a_null_handle_fails_quietly),
    };
    return cmocka_run_group_tests_name("libcosched_offline", tests, NULL, NULL);
}
