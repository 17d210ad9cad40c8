/* test_report: the report request through methods_dispatch — its optional rank, source and
 * torch, each refused with a message naming it when wrong; two ranks of one job reporting the
 * same steps counted once; a job that reports without ranks counted as before; a program's own
 * reports winning over the hook's; how the steps arrive in job.get. The daemon's clocks are this
 * file's: the monotonic one moves by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon_fixture.h"
#include "methods.h"
#include "wire.h"

static double mono = 1000;

/* The base library's clock.c is not linked: these are the daemon's clocks here. */
double clock_now_mono(void)
{
    return mono;
}

double clock_now_unix(void)
{
    return 1.7e9 + mono;
}

static daemon_t *d;

static int set_up(void **state)
{
    (void)state;
    mono = 1000;
    d = fixture_daemon("ci-2core-gpu.xml");
    fixture_job(d, "t", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    return 0;
}

static int tear_down(void **state)
{
    (void)state;
    fixture_daemon_free(d);
    return 0;
}

/* A request from the job's owner; the reply, to be freed. */
static json_t *ask(const char *method, json_t *params)
{
    peer_t owner = {.uid = geteuid(), .gid = getegid(), .manager = geteuid() == 0};
    json_t *request = json_pack("{s:i, s:s, s:o}", WIRE_KEY_VERSION, 1, WIRE_KEY_METHOD, method, WIRE_KEY_PARAMS,
                                params);
    json_t *reply = methods_dispatch(d, &owner, request);
    json_decref(request);
    return reply;
}

/* A report with extra params (a JSON object's text, "" for none); its result's judged. */
static bool report(double seconds, const char *extra)
{
    json_t *params = json_loads(extra[0] ? extra : "{}", 0, NULL);
    json_object_set_new(params, WIRE_P_JOB, json_string("t"));
    json_object_set_new(params, WIRE_P_STEP_TIME, json_real(seconds));
    json_t *reply = ask(WIRE_REPORT, params);
    assert_true(json_is_true(json_object_get(reply, WIRE_KEY_OK)));
    bool judged = json_is_true(json_object_get(json_object_get(reply, WIRE_KEY_RESULT), WIRE_R_JUDGED));
    json_decref(reply);
    return judged;
}

/* job.get's progress object, to be freed. */
static json_t *progress_of_t(void)
{
    json_t *reply = ask(WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, "t"));
    json_t *p = json_incref(json_object_get(json_object_get(reply, WIRE_KEY_RESULT), WIRE_R_PROGRESS));
    json_decref(reply);
    assert_non_null(p);
    return p;
}

static unsigned long steps_of_t(void)
{
    return job_find(d, "t")->steps.steps_total;
}

static void two_ranks_reporting_the_same_steps_count_once(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++, mono += 0.5) {
        assert_true(report(0.5, "{\"rank\":0}"));
        assert_false(report(0.5, "{\"rank\":1}")); /* the same step, from rank 1 */
    }
    assert_int_equal(steps_of_t(), 6);
    json_t *p = progress_of_t();
    assert_int_equal(json_integer_value(json_object_get(p, WIRE_R_JUDGED_RANK)), 0);
    assert_int_equal(json_integer_value(json_object_get(p, WIRE_R_STEPS_OTHER_RANKS)), 6);
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_STEP_SOURCE)), WIRE_STEPS_REPORTED);
    json_decref(p);
}

static void a_job_reporting_without_ranks_counts_every_report(void **state)
{
    (void)state;
    json_t *p = progress_of_t();
    assert_true(json_is_null(json_object_get(p, WIRE_R_STEP_SOURCE))); /* nothing reported yet */
    json_decref(p);
    for (int i = 0; i < 6; i++, mono += 0.5) { /* two processes, as any job before ranks were sent */
        assert_true(report(0.5, ""));
        assert_true(report(0.5, ""));
    }
    assert_int_equal(steps_of_t(), 12);
    p = progress_of_t();
    assert_true(json_is_null(json_object_get(p, WIRE_R_JUDGED_RANK)));
    assert_true(json_is_null(json_object_get(p, WIRE_R_TORCH)));
    assert_int_equal(json_integer_value(json_object_get(p, WIRE_R_STEPS_OTHER_RANKS)), 0);
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_SOURCE)), WIRE_PROGRESS_STEPS);
    json_decref(p);
}

static void rank_1_is_judged_once_rank_0_is_quiet_longer_than_idle_release(void **state)
{
    (void)state;
    report(0.5, "{\"rank\":0}");
    mono += job_find(d, "t")->guard.p.idle_release + 1;
    assert_true(report(0.5, "{\"rank\":1}"));
    assert_int_equal(steps_of_t(), 2);
    json_t *p = progress_of_t();
    assert_int_equal(json_integer_value(json_object_get(p, WIRE_R_JUDGED_RANK)), 1);
    json_decref(p);
}

static void hook_reports_show_their_source_and_torch_version(void **state)
{
    (void)state;
    report(0.5, "{\"rank\":0, \"source\":\"hook\", \"torch\":\"1.13.1\"}");
    json_t *p = progress_of_t();
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_SOURCE)), WIRE_PROGRESS_STEPS);
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_STEP_SOURCE)), WIRE_STEPS_HOOK);
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_TORCH)), "1.13.1");
    json_decref(p);
}

/* A program that reports itself (here without source, as libcosched and cosched report do) with
 * the hook in it too: every step arrives twice and is counted once. */
static void a_programs_own_reports_win_and_the_hooks_are_counted_apart(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++, mono += 0.5) {
        assert_true(report(0.5, ""));
        assert_false(report(0.5, "{\"rank\":0, \"source\":\"hook\", \"torch\":\"1.13.1\"}"));
    }
    assert_int_equal(steps_of_t(), 6);
    json_t *p = progress_of_t();
    assert_int_equal(json_integer_value(json_object_get(p, WIRE_R_STEPS_HOOK_IGNORED)), 6);
    assert_string_equal(json_string_value(json_object_get(p, WIRE_R_STEP_SOURCE)), WIRE_STEPS_REPORTED);
    assert_true(json_is_null(json_object_get(p, WIRE_R_TORCH)));
    json_decref(p);
}

/* Each bad value: EINVAL, a message naming the parameter, and no step counted. */
static void bad_ranks_sources_and_torch_versions_are_refused_naming_the_parameter(void **state)
{
    (void)state;
    static const struct {
        const char *params, *message;
    } bad[] = {
        {"{\"rank\":-1}", "parameter 'rank' must be a whole number from 0"},
        {"{\"rank\":1.5}", "parameter 'rank' must be a whole number from 0"},
        {"{\"rank\":\"0\"}", "parameter 'rank' must be a whole number from 0"},
        {"{\"rank\":true}", "parameter 'rank' must be a whole number from 0"},
        {"{\"rank\":4294967296}", "parameter 'rank' must be a whole number from 0"},
        {"{\"source\":\"gpu\"}", "parameter 'source' must be \"reported\" or \"hook\""},
        {"{\"source\":1}", "parameter 'source' must be \"reported\" or \"hook\""},
        {"{\"source\":\"hook\", \"torch\":\"\"}", "parameter 'torch' must be a version of 1-31"},
        {"{\"source\":\"hook\", \"torch\":\"1.13 1\"}", "parameter 'torch' must be a version of 1-31"},
        {"{\"source\":\"hook\", \"torch\":\"2.0\\n\"}", "parameter 'torch' must be a version of 1-31"},
        {"{\"source\":\"hook\", \"torch\":2}", "parameter 'torch' must be a version of 1-31"},
        {"{\"source\":\"hook\", \"torch\":\"12345678901234567890123456789012\"}",
         "parameter 'torch' must be a version of 1-31"},
        {"{\"torch\":\"1.13.1\"}", "parameter 'torch' goes only with source \"hook\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *params = json_loads(bad[i].params, 0, NULL);
        json_object_set_new(params, WIRE_P_JOB, json_string("t"));
        json_object_set_new(params, WIRE_P_STEP_TIME, json_real(0.5));
        json_t *reply = ask(WIRE_REPORT, params);
        json_t *error = json_object_get(reply, WIRE_KEY_ERROR);
        const char *message = json_string_value(json_object_get(error, WIRE_KEY_MESSAGE));
        fprintf(stderr, "# %s -> %s\n", bad[i].params, message ? message : "(accepted)");
        assert_string_equal(json_string_value(json_object_get(error, WIRE_KEY_CODE)), "EINVAL");
        assert_non_null(strstr(message, bad[i].message));
        json_decref(reply);
    }
    assert_int_equal(steps_of_t(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(two_ranks_reporting_the_same_steps_count_once, set_up, tear_down),
        cmocka_unit_test_setup_teardown(a_job_reporting_without_ranks_counts_every_report, set_up, tear_down),
        cmocka_unit_test_setup_teardown(rank_1_is_judged_once_rank_0_is_quiet_longer_than_idle_release, set_up,
                                        tear_down),
        cmocka_unit_test_setup_teardown(hook_reports_show_their_source_and_torch_version, set_up, tear_down),
        cmocka_unit_test_setup_teardown(a_programs_own_reports_win_and_the_hooks_are_counted_apart, set_up, tear_down),
        cmocka_unit_test_setup_teardown(bad_ranks_sources_and_torch_versions_are_refused_naming_the_parameter, set_up,
                                        tear_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
