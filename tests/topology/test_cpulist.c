/* test_cpulist: LIST arguments parse the way taskset and hwloc users expect, and nonsense is
 * refused with the text that was wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

static void lists_with_ranges_parse_and_format_back(void **state)
{
    (void)state;
    char err[256] = "";
    hwloc_bitmap_t set = cpulist_parse("0-3,8,10-11", 0, err, sizeof err);
    assert_non_null(set);
    assert_int_equal(hwloc_bitmap_weight(set), 7);
    char *s = cpulist_format(set);
    assert_string_equal(s, "0-3,8,10-11");
    free(s);
    s = cpulist_format_mask(set);
    assert_string_equal(s, "0xd0f");
    free(s);
    hwloc_bitmap_free(set);
}

static void malformed_lists_are_refused_naming_the_text(void **state)
{
    (void)state;
    static const char *const bad[] = {"", "1-", "a", "3-1", "1,,2", "1,", "-1", "1 2", "0x3", "all"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        hwloc_bitmap_t set = cpulist_parse(bad[i], 0, err, sizeof err);
        if (set)
            fail_msg("'%s' was accepted", bad[i]);
        assert_true(strlen(err) > 0);
    }
}

/* Found by fuzzing: hwloc read "010" as octal (CPU 8) after the decimal shape check. */
static void numbers_with_leading_zeros_are_decimal(void **state)
{
    (void)state;
    char err[256] = "";
    hwloc_bitmap_t set = cpulist_parse("010,09-11", 0, err, sizeof err);
    assert_non_null(set);
    char *s = cpulist_format(set);
    assert_string_equal(s, "9-11");
    free(s);
    hwloc_bitmap_free(set);
}

static void all_is_accepted_only_when_asked_for(void **state)
{
    (void)state;
    char err[256] = "";
    hwloc_bitmap_t set = cpulist_parse("all", 1, err, sizeof err);
    assert_non_null(set);
    assert_int_equal(hwloc_bitmap_weight(set), -1);
    hwloc_bitmap_free(set);
}

static void integers_are_checked_for_range_and_junk(void **state)
{
    (void)state;
    long v = 0;
    assert_int_equal(cpulist_parse_int("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(cpulist_parse_int("101", 0, 100, &v), -1);
    assert_int_equal(cpulist_parse_int("-1", 0, 100, &v), -1);
    assert_int_equal(cpulist_parse_int("4x", 0, 100, &v), -1);
    assert_int_equal(cpulist_parse_int("", 0, 100, &v), -1);
    assert_int_equal(cpulist_parse_int("99999999999999999999", 0, 100, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_with_ranges_parse_and_format_back),
        cmocka_unit_test(malformed_lists_are_refused_naming_the_text),
        cmocka_unit_test(numbers_with_leading_zeros_are_decimal),
        cmocka_unit_test(all_is_accepted_only_when_asked_for),
        cmocka_unit_test(integers_are_checked_for_range_and_junk),
    };
    return cmocka_run_group_tests_name("cpulist", tests, NULL, NULL);
}
