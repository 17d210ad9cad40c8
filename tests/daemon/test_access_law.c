/* test_access_law: access.c's decisions, the permission table's law without a daemon: who may
 * call a method on which job, and how much of another user's job a caller sees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "access.h"

static job_t job_of(uid_t uid, job_role_t role)
{
    job_t j;
    memset(&j, 0, sizeof j);
    strcpy(j.id, "77");
    j.uid = uid;
    j.role = role;
    return j;
}

static access_verdict_t decide(access_rule_t rule, uid_t uid, bool manager, const job_t *j, char *why)
{
    return access_decide(rule, uid, manager, j, PRIVATE_JOBS_REDACT, "release", why, 512);
}

static void managers_may_call_every_rule_on_any_job(void **state)
{
    (void)state;
    char why[512];
    job_t co = job_of(1000, ROLE_COTENANT);
    for (access_rule_t r = ACCESS_ANYONE; r <= ACCESS_UNLESS_HIDDEN; r++) {
        assert_int_equal(decide(r, 0, true, &co, why), ACCESS_GRANTED);
        assert_int_equal(decide(r, 0, true, NULL, why), ACCESS_GRANTED); /* the handler says ENOENT */
    }
}

static void a_cotenants_owner_may_not_release_it_and_is_told_who_may(void **state)
{
    (void)state;
    char why[512] = "";
    job_t co = job_of(1000, ROLE_COTENANT);
    assert_int_equal(decide(ACCESS_TRAINER_OWNER, 1000, false, &co, why), ACCESS_DENIED);
    assert_non_null(strstr(why, "uid 1000 may not release job 77: it is a co-tenant"));
    assert_non_null(strstr(why, "only root and operators may"));
    /* confine stays the owner's: the TaskProlog calls it as the job's user */
    assert_int_equal(decide(ACCESS_JOB_OWNER, 1000, false, &co, why), ACCESS_GRANTED);
}

static void a_trainers_owner_may_release_its_own_and_nobody_elses(void **state)
{
    (void)state;
    char why[512] = "";
    job_t tr = job_of(1000, ROLE_TRAINER);
    assert_int_equal(decide(ACCESS_TRAINER_OWNER, 1000, false, &tr, why), ACCESS_GRANTED);
    assert_int_equal(decide(ACCESS_TRAINER_OWNER, 1001, false, &tr, why), ACCESS_DENIED);
    assert_non_null(strstr(why, "uid 1001 may not release job 77 of another user"));
    assert_int_equal(decide(ACCESS_JOB_OWNER, 1001, false, &tr, why), ACCESS_DENIED);
}

static void managers_only_rules_refuse_everyone_else_even_owners(void **state)
{
    (void)state;
    char why[512] = "";
    job_t tr = job_of(1000, ROLE_TRAINER);
    assert_int_equal(decide(ACCESS_MANAGERS, 1000, false, &tr, why), ACCESS_DENIED);
    assert_non_null(strstr(why, "(root and configured operators may)"));
    assert_int_equal(decide(ACCESS_ANYONE, 1000, false, NULL, why), ACCESS_GRANTED);
}

static void the_metrics_name_every_job_so_hide_keeps_them_from_users(void **state)
{
    (void)state;
    char why[512] = "";
    assert_int_equal(access_decide(ACCESS_UNLESS_HIDDEN, 1000, false, NULL, PRIVATE_JOBS_REDACT, "read the metrics",
                                   why, sizeof why),
                     ACCESS_GRANTED);
    assert_int_equal(access_decide(ACCESS_UNLESS_HIDDEN, 1000, false, NULL, PRIVATE_JOBS_HIDE, "read the metrics", why,
                                   sizeof why),
                     ACCESS_DENIED);
    assert_non_null(strstr(why, "uid 1000 may not read the metrics: they name every job, and private_jobs is hide"));
    assert_int_equal(access_decide(ACCESS_UNLESS_HIDDEN, 0, true, NULL, PRIVATE_JOBS_HIDE, "read the metrics", why,
                                   sizeof why),
                     ACCESS_GRANTED);
}

static void a_rule_on_a_missing_job_is_no_such_job_for_a_user(void **state)
{
    (void)state;
    char why[512];
    assert_int_equal(decide(ACCESS_JOB_OWNER, 1000, false, NULL, why), ACCESS_NO_SUCH_JOB);
}

static void private_jobs_hides_or_redacts_others_jobs_never_ones_own(void **state)
{
    (void)state;
    job_t tr = job_of(1000, ROLE_TRAINER);
    assert_int_equal(access_view(PRIVATE_JOBS_OFF, 1001, false, &tr), ACCESS_SEES_ALL);
    assert_int_equal(access_view(PRIVATE_JOBS_REDACT, 1001, false, &tr), ACCESS_SEES_REDACTED);
    assert_int_equal(access_view(PRIVATE_JOBS_HIDE, 1001, false, &tr), ACCESS_SEES_NOTHING);
    assert_int_equal(access_view(PRIVATE_JOBS_HIDE, 1000, false, &tr), ACCESS_SEES_ALL);
    assert_int_equal(access_view(PRIVATE_JOBS_HIDE, 1001, true, &tr), ACCESS_SEES_ALL);
    /* a run whose job is gone has no owner to show it to */
    assert_int_equal(access_view(PRIVATE_JOBS_HIDE, 1000, false, NULL), ACCESS_SEES_NOTHING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(managers_may_call_every_rule_on_any_job),
        cmocka_unit_test(a_cotenants_owner_may_not_release_it_and_is_told_who_may),
        cmocka_unit_test(a_trainers_owner_may_release_its_own_and_nobody_elses),
        cmocka_unit_test(managers_only_rules_refuse_everyone_else_even_owners),
        cmocka_unit_test(the_metrics_name_every_job_so_hide_keeps_them_from_users),
        cmocka_unit_test(a_rule_on_a_missing_job_is_no_such_job_for_a_user),
        cmocka_unit_test(private_jobs_hides_or_redacts_others_jobs_never_ones_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
