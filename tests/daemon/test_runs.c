/* test_runs: runs started for real — bound, followed, their trainer steps reaching the job's
 * statistics, ended and recorded — and what a restart finds of runs that ended meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <time.h>

#include "daemon_fixture.h"
#include "jobs.h"
#include "runs.h"

/* One core each on the two-core node: the trainer on CPU 0, a co-tenant on CPU 1. */
static job_t *one_core_job(daemon_t *d, const char *id, job_role_t role)
{
    return fixture_job(d, id, role, PLAN_L3, 1);
}

static run_t *start(daemon_t *d, job_t *j, const char *script)
{
    json_t *argv = json_pack("[sss]", "sh", "-c", script), *env = json_object();
    run_t *r = NULL;
    result_t res = run_start(d, j, 0, argv, env, NULL, NULL, &r);
    json_decref(argv);
    json_decref(env);
    if (res.code != RESULT_OK)
        fail_msg("run_start: %s", res.message);
    return r;
}

/* The pidfd says when; here the test asks until the run is reaped (a minute at most: valgrind). */
static void wait_ended(daemon_t *d, run_t *r)
{
    for (double end = clock_now_mono() + 60; r->state == RUN_RUNNING && clock_now_mono() < end;) {
        run_ended(d, r);
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    assert_int_not_equal(r->state, RUN_RUNNING);
}

static void a_trainers_step_lines_reach_its_statistics(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *j = one_core_job(d, "t", ROLE_TRAINER);
    run_t *r = start(d, j, "echo '{\"t_step\": 0.25}'; echo 'not json'; echo '{\"t_step\": 0.5}'; exit 3");
    assert_true(d->state_dirty);
    wait_ended(d, r);
    assert_int_equal(r->state, RUN_EXITED);
    assert_int_equal(r->exit_code, 3);
    assert_int_equal((int)r->steps, 2);
    assert_int_equal((int)r->lines, 3);
    assert_int_equal((int)j->steps.steps_total, 2);
    assert_true(j->steps.last == 0.5);
    fixture_daemon_free(d);
}

static void noise_phase_lines_add_up_to_bytes_and_a_rate(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *j = one_core_job(d, "n", ROLE_COTENANT);
    run_t *r = start(d, j,
                     "echo '{\"event\":\"progress\",\"bytes\":100,\"rate_mbs\":1}';"
                     "echo '{\"event\":\"progress\",\"bytes\":50,\"rate_mbs\":2}';"
                     "echo '{\"event\":\"phase\",\"bytes\":400,\"rate_mbs\":3}';"
                     "echo '{\"event\":\"summary\",\"bytes\":400,\"rate_mbs\":3}'");
    wait_ended(d, r);
    assert_true(r->bytes_total == 400);
    assert_true(r->rate_bytes_per_s == 3e6);
    fixture_daemon_free(d);
}

static void a_command_that_cannot_run_is_refused_with_the_reason(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *j = one_core_job(d, "t", ROLE_TRAINER);
    json_t *argv = json_pack("[s]", "/nonexistent/program"), *env = json_object();
    run_t *r = NULL;
    result_t res = run_start(d, j, 0, argv, env, NULL, NULL, &r);
    assert_int_equal(res.code, RESULT_INVALID);
    assert_non_null(strstr(res.message, "cannot execute '/nonexistent/program'"));
    assert_null(r);
    assert_null(d->runs);
    assert_int_equal(d->next_run_id, 1);
    json_decref(argv);
    json_decref(env);
    fixture_daemon_free(d);
}

static void stop_sends_sigterm_to_the_process_group(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *j = one_core_job(d, "t", ROLE_TRAINER);
    run_t *r = start(d, j, "exec sleep 300");
    assert_int_equal(run_stop(d, r), 0);
    wait_ended(d, r);
    assert_int_equal(r->state, RUN_KILLED);
    assert_int_equal(r->exit_code, SIGTERM);
    fixture_daemon_free(d);
}

static void a_run_that_ended_while_the_daemon_was_down_is_lost(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *j = one_core_job(d, "t", ROLE_TRAINER);
    run_t *r = start(d, j, "exit 0");
    wait_ended(d, r);
    /* As a restored entry: still "running" in the file, but the process is gone. */
    r->state = RUN_RUNNING;
    d->state_dirty = false;
    runs_reconcile(d);
    assert_int_equal(r->state, RUN_LOST);
    assert_true(d->state_dirty);
    assert_true(process_start_ticks(getpid()) > 0);
    assert_true(process_same(getpid(), process_start_ticks(getpid())));
    assert_false(process_same(getpid(), 1));
    fixture_daemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_trainers_step_lines_reach_its_statistics),
        cmocka_unit_test(noise_phase_lines_add_up_to_bytes_and_a_rate),
        cmocka_unit_test(a_command_that_cannot_run_is_refused_with_the_reason),
        cmocka_unit_test(stop_sends_sigterm_to_the_process_group),
        cmocka_unit_test(a_run_that_ended_while_the_daemon_was_down_is_lost),
    };
    return cmocka_run_group_tests_name("runs", tests, NULL, NULL);
}
