/* test_proto_io: proto's blocking send and receive on a socket pair — the errno that tells
 * libcosched whether a request may go again, and no SIGPIPE from a closed peer. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto.h"

static int pair[2];

static int setup(void **state)
{
    (void)state;
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair);
}

static int teardown(void **state)
{
    (void)state;
    close(pair[0]);
    if (pair[1] >= 0)
        close(pair[1]);
    return 0;
}

static void close_peer(void)
{
    close(pair[1]);
    pair[1] = -1;
}

static void a_frame_goes_through_whole(void **state)
{
    (void)state;
    char err[128];
    json_t *sent = proto_request("ping", NULL);
    assert_int_equal(proto_send(pair[1], sent, 1000, err, sizeof err), 0);
    json_t *got = proto_recv(pair[0], 1000, err, sizeof err);
    assert_non_null(got);
    assert_true(json_equal(sent, got));
    json_decref(sent);
    json_decref(got);
}

static void a_peer_closed_before_replying_is_econnreset(void **state)
{
    (void)state;
    char err[128];
    close_peer();
    errno = 0;
    assert_null(proto_recv(pair[0], 1000, err, sizeof err));
    assert_int_equal(errno, ECONNRESET);
    assert_string_equal(err, "connection closed by the daemon");
}

static void a_reply_cut_in_its_header_is_eproto(void **state)
{
    (void)state;
    char err[128];
    assert_int_equal(write(pair[1], "\0\0", 2), 2);
    close_peer();
    assert_null(proto_recv(pair[0], 1000, err, sizeof err));
    assert_int_equal(errno, EPROTO);
}

static void a_reply_cut_in_its_payload_is_eproto(void **state)
{
    (void)state;
    char err[128];
    assert_int_equal(write(pair[1], "\0\0\0\x10{\"ok\"", 9), 9);
    close_peer();
    assert_null(proto_recv(pair[0], 1000, err, sizeof err));
    assert_int_equal(errno, EPROTO);
    assert_non_null(strstr(err, "inside a reply"));
}

static void a_reply_that_is_not_json_is_eproto(void **state)
{
    (void)state;
    char err[128];
    assert_int_equal(write(pair[1], "\0\0\0\x03{x}", 7), 7);
    assert_null(proto_recv(pair[0], 1000, err, sizeof err));
    assert_int_equal(errno, EPROTO);
}

static void no_reply_in_time_is_etimedout(void **state)
{
    (void)state;
    char err[128];
    assert_null(proto_recv(pair[0], 20, err, sizeof err));
    assert_int_equal(errno, ETIMEDOUT);
}

static void sending_to_a_closed_peer_is_epipe_not_sigpipe(void **state)
{
    (void)state;
    char err[128];
    close_peer();
    json_t *req = proto_request("ping", NULL);
    assert_int_equal(proto_send(pair[0], req, 1000, err, sizeof err), -1);
    assert_int_equal(errno, EPIPE);
    json_decref(req);
}

int main(void)
{
    /* At its default, SIGPIPE would end this test on the first write to a closed peer. */
    signal(SIGPIPE, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_frame_goes_through_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(a_peer_closed_before_replying_is_econnreset, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reply_cut_in_its_header_is_eproto, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reply_cut_in_its_payload_is_eproto, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reply_that_is_not_json_is_eproto, setup, teardown),
        cmocka_unit_test_setup_teardown(no_reply_in_time_is_etimedout, setup, teardown),
        cmocka_unit_test_setup_teardown(sending_to_a_closed_peer_is_epipe_not_sigpipe, setup, teardown),
    };
    return cmocka_run_group_tests_name("libcosched_proto_io", tests, NULL, NULL);
}
