/* test_client_limits: the control socket's limits per user (daemon/client_limits.c) — a user's
 * share served, the rest waiting then refused, root and operators past them with a reserve kept,
 * the request bucket, and idle users forgotten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client_limits.h"

static const client_limits_params_t params = {.per_user = 2, .waiting_per_user = 3, .rate = 10};

static client_limits_t limits(int unprivileged_max)
{
    return (client_limits_t){.unprivileged_max = unprivileged_max};
}

static void a_users_share_is_served_the_next_wait_and_the_rest_are_refused(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *u = client_limits_add(&l, 1000, false, 0);
    client_admission_t expected[] = {CLIENT_SERVE, CLIENT_SERVE,       CLIENT_WAIT,       CLIENT_WAIT,
                                     CLIENT_WAIT,  CLIENT_REFUSE_USER, CLIENT_REFUSE_USER};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        assert_int_equal(client_limits_admit(&l, u, &params), expected[i]);
    assert_int_equal(u->served, 2);
    assert_int_equal(u->waiting, 3);
    assert_int_equal(l.connections, 5);
    assert_int_equal(l.counted[CLIENT_LIMIT_WAITING], 3);
    assert_int_equal(l.counted[CLIENT_LIMIT_CONNECTIONS], 2);
    client_limits_free(&l);
}

static void a_served_connection_closing_lets_one_waiting_in(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *u = client_limits_add(&l, 1000, false, 0);
    for (int i = 0; i < 4; i++)
        client_limits_admit(&l, u, &params);
    assert_false(client_limits_promote(u, &params)); /* its share is full */
    client_limits_leave(&l, u, false);
    assert_true(client_limits_promote(u, &params));
    assert_false(client_limits_promote(u, &params));
    assert_int_equal(u->served, 2);
    assert_int_equal(u->waiting, 1);
    client_limits_leave(&l, u, true); /* a waiting one left: no place freed */
    assert_false(client_limits_promote(u, &params));
    assert_int_equal(l.connections, 2);
    client_limits_free(&l);
}

static void another_user_is_not_held_by_the_first(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *a = client_limits_add(&l, 1000, false, 0), *b = client_limits_add(&l, 1001, false, 0);
    for (int i = 0; i < 6; i++)
        client_limits_admit(&l, a, &params);
    assert_int_equal(client_limits_admit(&l, b, &params), CLIENT_SERVE);
    assert_ptr_equal(client_limits_find(&l, 1000), a);
    assert_ptr_equal(client_limits_find(&l, 1001), b);
    assert_null(client_limits_find(&l, 1002));
    client_limits_free(&l);
}

static void root_and_operators_pass_the_users_cap_on_a_reserve(void **state)
{
    (void)state;
    client_limits_t l = limits(4);
    client_limits_params_t wide = {.per_user = 100, .waiting_per_user = 0, .rate = 10};
    client_user_t *user = client_limits_add(&l, 1000, false, 0), *root = client_limits_add(&l, 0, true, 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(client_limits_admit(&l, user, &wide), CLIENT_SERVE);
    assert_int_equal(client_limits_admit(&l, user, &wide), CLIENT_REFUSE_ALL);
    assert_int_equal(l.counted[CLIENT_LIMIT_TOTAL], 1);
    for (int i = 0; i < 200; i++) /* past per_user too */
        assert_int_equal(client_limits_admit(&l, root, &params), CLIENT_SERVE);
    assert_int_equal(l.unprivileged, 4);
    assert_int_equal(l.connections, 204);
    client_limits_free(&l);
}

static void everyone_stops_at_the_daemons_maximum(void **state)
{
    (void)state;
    client_limits_t l = limits(10);
    client_user_t *root = client_limits_add(&l, 0, true, 0);
    for (int i = 0; i < CLIENT_LIMITS_MAX; i++)
        assert_int_equal(client_limits_admit(&l, root, &params), CLIENT_SERVE);
    assert_int_equal(client_limits_admit(&l, root, &params), CLIENT_REFUSE_ALL);
    client_limits_free(&l);
}

static void descriptors_set_the_users_cap_and_keep_a_reserve(void **state)
{
    (void)state;
    assert_int_equal(client_limits_unprivileged_max(1048576), CLIENT_LIMITS_MAX - CLIENT_LIMITS_RESERVED);
    assert_int_equal(client_limits_unprivileged_max(1024), 1024 - CLIENT_LIMITS_FD_SPARE - CLIENT_LIMITS_RESERVED);
    /* a test's prlimit of 64: half of what is left after the daemon's own files */
    assert_int_equal(client_limits_unprivileged_max(64), (64 - CLIENT_LIMITS_FD_SPARE) / 2);
    assert_int_equal(client_limits_unprivileged_max(CLIENT_LIMITS_FD_SPARE), 0);
}

static void the_bucket_holds_two_seconds_and_refills_at_the_rate(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *u = client_limits_add(&l, 1000, false, 100);
    int taken = 0;
    while (client_limits_take(u, &params, 100))
        taken++;
    assert_int_equal(taken, 20); /* a full bucket: 2 x 10 a second */
    assert_false(client_limits_take(u, &params, 100.05));
    assert_true(client_limits_next_token(u, &params, 100.05) > 0.049 &&
                client_limits_next_token(u, &params, 100.05) < 0.051); /* half a token in, at 10 a second */
    assert_true(client_limits_next_token(u, &params, 100.2) == 0);
    taken = 0;
    while (client_limits_take(u, &params, 100.5))
        taken++;
    assert_int_equal(taken, 5);
    client_limits_free(&l);
}

static void root_operators_and_rate_zero_are_never_delayed(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *root = client_limits_add(&l, 0, true, 0), *user = client_limits_add(&l, 1000, false, 0);
    client_limits_params_t unlimited = {.per_user = 2, .waiting_per_user = 3, .rate = 0};
    for (int i = 0; i < 10000; i++) {
        assert_true(client_limits_take(root, &params, 0));
        assert_true(client_limits_take(user, &unlimited, 0));
    }
    assert_true(client_limits_next_token(root, &params, 0) == 0);
    assert_true(client_limits_next_token(user, &unlimited, 0) == 0);
    client_limits_free(&l);
}

static void idle_users_are_forgotten_once_their_bucket_is_full(void **state)
{
    (void)state;
    client_limits_t l = limits(100);
    client_user_t *u = client_limits_add(&l, 1000, false, 0);
    client_limits_admit(&l, u, &params);
    while (client_limits_take(u, &params, 0))
        ;
    client_limits_forget_idle(&l, &params, 10);
    assert_non_null(client_limits_find(&l, 1000)); /* connected */
    client_limits_leave(&l, u, false);
    client_limits_forget_idle(&l, &params, 0.5);
    assert_non_null(client_limits_find(&l, 1000)); /* its bucket is not full yet: a reconnect keeps it */
    client_limits_forget_idle(&l, &params, 10);
    assert_null(client_limits_find(&l, 1000));
    assert_null(l.users);
}

static void limits_have_their_metric_labels(void **state)
{
    (void)state;
    assert_string_equal(client_limit_name(CLIENT_LIMIT_CONNECTIONS), "connections");
    assert_string_equal(client_limit_name(CLIENT_LIMIT_TOTAL), "total");
    assert_string_equal(client_limit_name(CLIENT_LIMIT_WAITING), "waiting");
    assert_string_equal(client_limit_name(CLIENT_LIMIT_RATE), "rate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_users_share_is_served_the_next_wait_and_the_rest_are_refused),
        cmocka_unit_test(a_served_connection_closing_lets_one_waiting_in),
        cmocka_unit_test(another_user_is_not_held_by_the_first),
        cmocka_unit_test(root_and_operators_pass_the_users_cap_on_a_reserve),
        cmocka_unit_test(everyone_stops_at_the_daemons_maximum),
        cmocka_unit_test(descriptors_set_the_users_cap_and_keep_a_reserve),
        cmocka_unit_test(the_bucket_holds_two_seconds_and_refills_at_the_rate),
        cmocka_unit_test(root_operators_and_rate_zero_are_never_delayed),
        cmocka_unit_test(idle_users_are_forgotten_once_their_bucket_is_full),
        cmocka_unit_test(limits_have_their_metric_labels),
    };
    return cmocka_run_group_tests_name("client_limits", tests, NULL, NULL);
}
