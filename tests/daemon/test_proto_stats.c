/* test_proto_stats: the wire framing's limits and the slowdown arithmetic, without a daemon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "stats.h"

static void headers_are_big_endian_and_bounded(void **state)
{
    (void)state;
    unsigned char h[4];
    proto_put_header(h, 0x01020304);
    assert_memory_equal(h, "\x01\x02\x03\x04", 4);
    proto_put_header(h, 65536);
    assert_int_equal(proto_get_header(h), 65536);
    proto_put_header(h, 65537);
    assert_int_equal(proto_get_header(h), 0);
    proto_put_header(h, 0);
    assert_int_equal(proto_get_header(h), 0);
}

static void parse_accepts_objects_and_refuses_everything_else(void **state)
{
    (void)state;
    char err[256];
    json_t *o = proto_parse("{\"v\":1}", 7, err, sizeof err);
    assert_non_null(o);
    json_decref(o);
    assert_null(proto_parse("[1]", 3, err, sizeof err));
    assert_null(proto_parse("{\"a\":1,\"a\":2}", 13, err, sizeof err));
    assert_non_null(strstr(err, "duplicate"));
    assert_null(proto_parse("{\"a\":", 5, err, sizeof err));
    char deep[64];
    memset(deep, '[', 20);
    memset(deep + 20, ']', 20);
    assert_null(proto_parse(deep, 40, err, sizeof err));
    assert_non_null(strstr(err, "deeper"));
    /* brackets inside strings do not count as nesting */
    const char *quoted = "{\"s\":\"[[[[[[[[[[[[[[[[[[[[[[[[\"}";
    o = proto_parse(quoted, strlen(quoted), err, sizeof err);
    assert_non_null(o);
    json_decref(o);
}

static void encode_prefixes_the_length_and_refuses_oversize(void **state)
{
    (void)state;
    json_t *req = proto_request("ping", NULL);
    size_t n = 0;
    unsigned char *buf = proto_encode(req, &n);
    assert_non_null(buf);
    assert_int_equal(proto_get_header(buf), n - 4);
    assert_memory_equal(buf + 4, "{\"v\":1,\"method\":\"ping\",\"params\":{}}", n - 4);
    free(buf);
    json_decref(req);
    char *big = malloc(70000);
    memset(big, 'x', 69999);
    big[69999] = '\0';
    json_t *huge = json_pack("{s:s}", "x", big);
    assert_null(proto_encode(huge, &n));
    json_decref(huge);
    free(big);
}

static void slowdown_is_median_ratio_with_an_interval_around_it(void **state)
{
    (void)state;
    step_stats_t s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 20; i++)
        stats_add(&s, 1.0 + 0.01 * (i % 5), false);
    for (int i = 0; i < 20; i++)
        stats_add(&s, 1.5 + 0.01 * (i % 5), true);
    slowdown_t r = stats_slowdown(&s, 20, 20);
    assert_true(r.valid);
    assert_int_equal(r.baseline_n, 20);
    assert_int_equal(r.window_n, 20);
    assert_true(fabs(r.baseline_median - 1.02) < 1e-9);
    assert_true(fabs(r.window_median - 1.52) < 1e-9);
    assert_true(fabs(r.slowdown - (1.52 / 1.02 - 1)) < 1e-9);
    assert_true(r.ci_low <= r.slowdown && r.slowdown <= r.ci_high);
    assert_int_equal(s.steps_with_cotenant, 20);
}

static void too_few_steps_give_no_slowdown_and_nonsense_is_ignored(void **state)
{
    (void)state;
    step_stats_t s;
    memset(&s, 0, sizeof s);
    stats_add(&s, 1.0, false);
    stats_add(&s, -1.0, false);
    stats_add(&s, NAN, false);
    assert_int_equal(s.steps_total, 1);
    assert_false(stats_slowdown(&s, 20, 20).valid);
    s.explicit_baseline = 2.0;
    stats_add(&s, 1.0, true);
    stats_add(&s, 1.0, true);
    slowdown_t r = stats_slowdown(&s, 20, 20);
    assert_true(r.valid);
    assert_true(fabs(r.slowdown + 0.5) < 1e-9);
}

static void median_of_even_and_odd_counts(void **state)
{
    (void)state;
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    assert_true(stats_median(odd, 3) == 2);
    assert_true(stats_median(even, 4) == 2.5);
    assert_true(stats_median(odd, 0) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(headers_are_big_endian_and_bounded),
        cmocka_unit_test(parse_accepts_objects_and_refuses_everything_else),
        cmocka_unit_test(encode_prefixes_the_length_and_refuses_oversize),
        cmocka_unit_test(slowdown_is_median_ratio_with_an_interval_around_it),
        cmocka_unit_test(too_few_steps_give_no_slowdown_and_nonsense_is_ignored),
        cmocka_unit_test(median_of_even_and_odd_counts),
    };
    return cmocka_run_group_tests_name("proto_stats", tests, NULL, NULL);
}
