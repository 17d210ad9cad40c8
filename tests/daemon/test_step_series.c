/* test_step_series: which of a trainer's step reports make its one series — the lowest rank's,
 * a rank-less report always, a higher rank only once the judged one went quiet — and how the
 * steps arrive (reported, or the hook with its torch version), and the program's own reports
 * winning over the hook's. Times are given, not read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "step_series.h"

#define IDLE_RELEASE 30.0

static step_origin_t rank(long long r)
{
    return (step_origin_t){.rank = r, .via = STEP_VIA_REPORTED};
}

static step_origin_t hook(long long r, const char *torch)
{
    return (step_origin_t){.rank = r, .via = STEP_VIA_HOOK, .torch = torch};
}

static step_admit_t admit(step_series_t *s, step_origin_t from, double now)
{
    return step_series_admit(s, &from, 0.5, now, IDLE_RELEASE);
}

static void two_ranks_reporting_the_same_steps_are_one_series(void **state)
{
    (void)state;
    step_series_t s = {0};
    int judged = 0;
    for (int i = 0; i < 10; i++) {
        judged += admit(&s, rank(0), i * 0.5) != STEP_OTHER_RANK;
        judged += admit(&s, rank(1), i * 0.5 + 0.01) != STEP_OTHER_RANK;
    }
    assert_int_equal(judged, 10);
    assert_int_equal(s.rank, 0);
    assert_int_equal(s.other_ranks, 10);
}

static void reports_without_a_rank_are_each_judged_as_before(void **state)
{
    (void)state;
    step_series_t s = {0};
    for (int i = 0; i < 10; i++) /* two processes of one job reporting without a rank */
        assert_int_equal(admit(&s, rank(STEP_RANK_NONE), i * 0.25), STEP_JUDGED);
    assert_int_equal(s.rank, STEP_RANK_NONE);
    assert_int_equal(s.other_ranks, 0);
}

static void a_report_without_a_rank_outranks_every_rank(void **state)
{
    (void)state;
    step_series_t s = {0};
    admit(&s, rank(0), 0);
    assert_int_equal(admit(&s, rank(STEP_RANK_NONE), 0.5), STEP_JUDGED_NEW_RANK);
    assert_int_equal(admit(&s, rank(0), 0.6), STEP_OTHER_RANK);
    assert_int_equal(admit(&s, rank(STEP_RANK_NONE), 1.0), STEP_JUDGED);
}

static void a_lower_rank_takes_over_at_once(void **state)
{
    (void)state;
    step_series_t s = {0};
    assert_int_equal(admit(&s, rank(1), 0), STEP_JUDGED);
    assert_int_equal(admit(&s, rank(0), 0.1), STEP_JUDGED_NEW_RANK);
    assert_int_equal(admit(&s, rank(1), 0.5), STEP_OTHER_RANK);
    assert_int_equal(s.rank, 0);
}

static void a_higher_rank_takes_over_only_once_the_judged_one_is_quiet_for_idle_release(void **state)
{
    (void)state;
    step_series_t s = {0};
    admit(&s, rank(0), 0);
    assert_int_equal(admit(&s, rank(1), IDLE_RELEASE), STEP_OTHER_RANK);
    assert_int_equal(admit(&s, rank(1), IDLE_RELEASE + 0.1), STEP_JUDGED_NEW_RANK);
    assert_int_equal(s.rank, 1);
    assert_int_equal(admit(&s, rank(0), IDLE_RELEASE + 0.2), STEP_JUDGED_NEW_RANK); /* back, and lower */
}

static void a_long_step_makes_the_wait_eight_of_its_steps(void **state)
{
    (void)state;
    step_series_t s = {0};
    step_origin_t zero = rank(0), one = rank(1);
    step_series_admit(&s, &zero, 10, 0, IDLE_RELEASE);
    assert_int_equal(step_series_admit(&s, &one, 10, 79, IDLE_RELEASE), STEP_OTHER_RANK);
    assert_int_equal(step_series_admit(&s, &one, 10, 81, IDLE_RELEASE), STEP_JUDGED_NEW_RANK);
}

static void the_judged_ranks_way_in_and_torch_version_are_kept(void **state)
{
    (void)state;
    step_series_t s = {0};
    admit(&s, hook(0, "1.13.1"), 0);
    assert_int_equal(s.via, STEP_VIA_HOOK);
    assert_string_equal(s.torch, "1.13.1");
    admit(&s, hook(1, "2.4.0"), 0.1); /* another rank's: not the series' */
    assert_string_equal(s.torch, "1.13.1");
    admit(&s, rank(0), 0.5); /* the program reports its own now */
    assert_int_equal(s.via, STEP_VIA_REPORTED);
    assert_string_equal(s.torch, "");
}

static step_origin_t program(void)
{
    return (step_origin_t){.rank = STEP_RANK_NONE, .via = STEP_VIA_REPORTED};
}

/* libcosched or cosched report without a rank, and the hook in the same process: each step
 * arrives twice, and only the program's copy counts. */
static void a_programs_own_reports_win_over_the_hooks_of_the_same_steps(void **state)
{
    (void)state;
    step_series_t s = {0};
    int judged = 0;
    for (int i = 0; i < 20; i++) {
        judged += admit(&s, program(), i * 0.5) <= STEP_JUDGED_NEW_RANK;
        judged += admit(&s, hook(0, "1.13.1"), i * 0.5 + 0.01) <= STEP_JUDGED_NEW_RANK;
    }
    assert_int_equal(judged, 20);
    assert_int_equal(s.hook_ignored, 20);
    assert_int_equal(s.other_ranks, 0);
    assert_int_equal(s.via, STEP_VIA_REPORTED);
    assert_string_equal(s.torch, "");
}

/* Its own reports may carry the hook's rank (the Python module sends COSCHED_RANK): the rank rule
 * alone would take both copies as the judged rank's steps. */
static void the_rule_holds_when_both_carry_the_same_rank(void **state)
{
    (void)state;
    step_series_t s = {0};
    int judged = 0;
    for (int i = 0; i < 10; i++) {
        judged += admit(&s, hook(0, "2.4.0"), i * 0.5) <= STEP_JUDGED_NEW_RANK;
        judged += admit(&s, rank(0), i * 0.5 + 0.01) <= STEP_JUDGED_NEW_RANK;
    }
    /* The first hook report came before any of the program's: it was judged, then never again. */
    assert_int_equal(judged, 11);
    assert_int_equal(s.hook_ignored, 9);
    assert_int_equal(s.via, STEP_VIA_REPORTED);
}

/* The rule is the job's, not a rank's: the program reports from rank 0, the hook runs in every
 * rank; rank 1's hook must not take the series over while rank 0 pauses (an evaluation). */
static void the_program_wins_for_every_rank_and_for_good(void **state)
{
    (void)state;
    step_series_t s = {0};
    admit(&s, rank(0), 0);
    assert_int_equal(admit(&s, hook(1, "2.4.0"), 0.1), STEP_HOOK_IGNORED);
    assert_int_equal(admit(&s, hook(1, "2.4.0"), 10 * IDLE_RELEASE), STEP_HOOK_IGNORED);
    assert_int_equal(s.rank, 0);
    assert_int_equal(s.hook_ignored, 2);
    assert_int_equal(admit(&s, rank(0), 11 * IDLE_RELEASE), STEP_JUDGED);
}

/* A job whose only reporter is the hook is judged on it, and counts nothing apart. */
static void the_hook_alone_is_judged(void **state)
{
    (void)state;
    step_series_t s = {0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(admit(&s, hook(0, "1.13.1"), i * 0.5), STEP_JUDGED);
    assert_false(s.program_reports);
    assert_int_equal(s.hook_ignored, 0);
}

static void sources_and_torch_versions_parse(void **state)
{
    (void)state;
    step_via_t via;
    assert_int_equal(step_via_parse("hook", &via), 0);
    assert_int_equal(via, STEP_VIA_HOOK);
    assert_int_equal(step_via_parse("reported", &via), 0);
    assert_int_equal(via, STEP_VIA_REPORTED);
    assert_string_equal(step_via_name(STEP_VIA_HOOK), "hook");
    assert_null(step_via_name(STEP_VIA_NONE));
    assert_int_equal(step_via_parse("gpu", &via), -1);
    assert_int_equal(step_via_parse(NULL, &via), -1);
    assert_true(step_torch_valid("1.13.1"));
    assert_true(step_torch_valid("2.5.0.dev20240901+cu121"));
    assert_false(step_torch_valid(""));
    assert_false(step_torch_valid(NULL));
    assert_false(step_torch_valid("1.13 1"));
    assert_false(step_torch_valid("2.0\"}"));
    assert_false(step_torch_valid("0123456789012345678901234567890123"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_reporting_the_same_steps_are_one_series),
        cmocka_unit_test(reports_without_a_rank_are_each_judged_as_before),
        cmocka_unit_test(a_report_without_a_rank_outranks_every_rank),
        cmocka_unit_test(a_lower_rank_takes_over_at_once),
        cmocka_unit_test(a_higher_rank_takes_over_only_once_the_judged_one_is_quiet_for_idle_release),
        cmocka_unit_test(a_long_step_makes_the_wait_eight_of_its_steps),
        cmocka_unit_test(the_judged_ranks_way_in_and_torch_version_are_kept),
        cmocka_unit_test(a_programs_own_reports_win_over_the_hooks_of_the_same_steps),
        cmocka_unit_test(the_rule_holds_when_both_carry_the_same_rank),
        cmocka_unit_test(the_program_wins_for_every_rank_and_for_good),
        cmocka_unit_test(the_hook_alone_is_judged),
        cmocka_unit_test(sources_and_torch_versions_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
