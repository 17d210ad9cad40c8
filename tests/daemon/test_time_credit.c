/* test_time_credit: the time a co-tenant Slurm started was held, handed back as whole minutes of
 * time limit through a stand-in scontrol that records each call: (1 - share) x the seconds held,
 * one update per whole minute owed and the rest kept; nothing while it is not held, nothing
 * asked when guard.extend_time_limit is off or the job is not Slurm's, never an update of a job
 * without a time limit; a failed update said and tried again later, the minutes still owed. Times are simulated; only
 * the stand-in's own run is waited for, in a bounded poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "cotenants.h"
#include "slurm_fixture.h"
#include "throttle.h"
#include "time_credit.h"

static daemon_t *d;
static throttle_t *t;
static char calls[4300];

static const char scontrol_text[] =
    "#!/bin/sh\n"
    "[ \"$1\" = -o ] && { [ \"$4\" = 84 ] && l=UNLIMITED || l=00:30:00\n"
    "  echo \"JobId=$4 JobName=noise Restarts=0 RunTime=00:10:00 TimeLimit=$l TimeMin=N/A\"; exit 0; }\n"
    "echo \"$*\" >>\"$(dirname \"$0\")/calls\"\n"
    "[ \"$2\" = JobId=83 ] && { echo 'slurm_update error: Access/permission denied' >&2; exit 1; }\n"
    "exit 0\n";

static int setup(void **state)
{
    (void)state;
    d = fixture_daemon("ci-2core-gpu.xml");
    fixture_scontrol(d, scontrol_text);
    snprintf(calls, sizeof calls, "%s/calls", d->cfg.state_dir);
    d->cfg.extend_time_limit = true;
    t = d->throttle = fixture_sigstop_throttle();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fixture_slurm_free(d, t);
    return 0;
}

static job_t *held_cotenant(const char *id, double share)
{
    return fixture_held_cotenant(d, t, id, share);
}

static bool updating(void)
{
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->time_credit.scontrol.pid > 0)
            return true;
    return false;
}

/* Ticks at the simulated time now until no update runs (a minute at most). */
static void settle(double now)
{
    time_credit_tick(d, now);
    for (double end = clock_now_mono() + 60; updating() && clock_now_mono() < end;) {
        usleep(10000);
        time_credit_tick(d, now);
    }
    assert_false(updating());
}

static const char *read_calls(char *buf, size_t len)
{
    return fixture_read(calls, buf, len);
}

static void whole_minutes_paused_are_handed_back_and_the_rest_kept(void **state)
{
    (void)state;
    char buf[512];
    job_t *j = held_cotenant("81", 0);
    settle(1000);
    settle(1059); /* 59 s: not a whole minute yet */
    assert_string_equal(read_calls(buf, sizeof buf), "");
    settle(1150); /* 150 s paused: two minutes, 30 s kept */
    assert_string_equal(read_calls(buf, sizeof buf), "update JobId=81 TimeLimit=+2\n");
    assert_int_equal(j->time_credit.minutes, 2);
    assert_float_equal(j->time_credit.owed, 30, 1e-9);
    j->share = 0.5; /* at half its share, half the time is lost */
    settle(1209);
    assert_float_equal(j->time_credit.owed, 59.5, 1e-9);
    settle(1211);
    assert_string_equal(read_calls(buf, sizeof buf), "update JobId=81 TimeLimit=+2\nupdate JobId=81 TimeLimit=+1\n");
    assert_int_equal(j->time_credit.minutes, 3);
    json_t *o = time_credit_to_json(j);
    assert_int_equal(json_integer_value(json_object_get(o, "minutes")), 3);
    assert_non_null(strstr(json_string_value(json_object_get(o, "detail")), "3 minute(s) of time limit handed back"));
    json_decref(o);
}

static void nothing_is_owed_while_it_runs_free(void **state)
{
    (void)state;
    char buf[512];
    job_t *j = held_cotenant("81", 1);
    settle(10);
    settle(1000);
    assert_float_equal(j->time_credit.owed, 0, 1e-9);
    j->share = 0;
    cotenant_release(d, j); /* let go (its requeue, say): not held, whatever its share says */
    settle(2000);
    assert_float_equal(j->time_credit.owed, 0, 1e-9);
    assert_string_equal(read_calls(buf, sizeof buf), "");
}

static void nothing_is_asked_when_off_or_not_a_slurm_job(void **state)
{
    (void)state;
    char buf[512];
    d->cfg.extend_time_limit = false;
    job_t *j = held_cotenant("81", 0), *k = held_cotenant("noise-1", 0);
    settle(10);
    settle(310);
    assert_float_equal(j->time_credit.owed, 300, 1e-9); /* counted all the same: job get shows it */
    d->cfg.extend_time_limit = true;
    settle(320); /* 81 gets its five minutes; noise-1 is no Slurm job id */
    assert_string_equal(read_calls(buf, sizeof buf), "update JobId=81 TimeLimit=+5\n");
    assert_float_equal(k->time_credit.owed, 310, 1e-9);
}

static void a_failed_update_is_said_and_tried_again_later(void **state)
{
    (void)state;
    char buf[512];
    job_t *j = held_cotenant("83", 0);
    settle(1);
    settle(61);
    assert_non_null(strstr(j->time_credit.detail, "Access/permission denied"));
    assert_non_null(strstr(j->time_credit.detail, "tried again in 60 s"));
    assert_float_equal(j->time_credit.owed, 60, 1e-9);
    settle(120);
    assert_string_equal(read_calls(buf, sizeof buf), "update JobId=83 TimeLimit=+1\n");
    settle(121); /* owed 120 s now: both minutes asked */
    assert_string_equal(read_calls(buf, sizeof buf), "update JobId=83 TimeLimit=+1\nupdate JobId=83 TimeLimit=+2\n");
    assert_non_null(strstr(j->time_credit.detail, "tried again in 120 s"));
}

static void a_job_without_a_time_limit_is_left_alone(void **state)
{
    (void)state;
    char buf[512];
    job_t *j = held_cotenant("84", 0);
    settle(1);
    settle(200);
    assert_string_equal(read_calls(buf, sizeof buf), ""); /* shown, never updated */
    assert_true(j->time_credit.unlimited);
    assert_non_null(strstr(j->time_credit.detail, "no time limit"));
    settle(400);
    assert_string_equal(read_calls(buf, sizeof buf), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(whole_minutes_paused_are_handed_back_and_the_rest_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(nothing_is_owed_while_it_runs_free, setup, teardown),
        cmocka_unit_test_setup_teardown(nothing_is_asked_when_off_or_not_a_slurm_job, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_update_is_said_and_tried_again_later, setup, teardown),
        cmocka_unit_test_setup_teardown(a_job_without_a_time_limit_is_left_alone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
