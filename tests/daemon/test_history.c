/* test_history: a trainer's recent history — steps within a second averaged into one sample, the
 * oldest sample dropped once the ring is full, and a reported step landing in its trainer's
 * history with the figures the stats reply shows. No daemon process, no timing assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "daemon_fixture.h"
#include "history.h"
#include "progress.h"
#include "proto.h"
#include "reply_json.h"
#include "wire.h"

static history_t h;

static int clear(void **state)
{
    (void)state;
    memset(&h, 0, sizeof h);
    return 0;
}

static void an_empty_history_has_no_samples(void **state)
{
    (void)state;
    assert_int_equal(h.n, 0);
}

static void steps_within_the_interval_are_averaged_into_one_sample(void **state)
{
    (void)state;
    history_add(&h, 1000.0, 0.10, 0.1, 0.05, NAN, 1);
    history_add(&h, 1000.5, 0.20, 0.1, 0.05, 0.5, 0.4);
    assert_int_equal(h.n, 1);
    const history_sample_t *s = history_at(&h, 0);
    assert_int_equal(s->steps, 2);
    assert_float_equal(s->time, 1000.0, 1e-9);
    assert_float_equal(s->seconds, 0.15, 1e-9);
    /* the latest step's figures stand for the sample */
    assert_float_equal(s->slowdown, 0.5, 1e-9);
    assert_float_equal(s->share, 0.4, 1e-9);
}

static void a_step_an_interval_later_starts_a_new_sample(void **state)
{
    (void)state;
    history_add(&h, 1000.0, 0.10, 0, 0.05, NAN, 1);
    history_add(&h, 1000.0 + HISTORY_INTERVAL, 0.30, 0, 0.05, NAN, 1);
    assert_int_equal(h.n, 2);
    assert_float_equal(history_at(&h, 1)->seconds, 0.30, 1e-9);
    assert_int_equal(history_at(&h, 1)->steps, 1);
}

static void a_clock_stepped_back_starts_a_new_sample(void **state)
{
    (void)state;
    history_add(&h, 1000.0, 0.10, 0, 0.05, NAN, 1);
    history_add(&h, 999.5, 0.20, 0, 0.05, NAN, 1);
    assert_int_equal(h.n, 2);
}

static void a_full_ring_keeps_the_latest_samples_oldest_first(void **state)
{
    (void)state;
    int total = HISTORY_SAMPLES + 10;
    for (int i = 0; i < total; i++)
        history_add(&h, 1000.0 + i * HISTORY_INTERVAL, i, 0, 0.05, NAN, 1);
    assert_int_equal(h.n, HISTORY_SAMPLES);
    assert_float_equal(history_at(&h, 0)->seconds, 10, 1e-9);
    assert_float_equal(history_at(&h, HISTORY_SAMPLES - 1)->seconds, total - 1, 1e-9);
    for (int i = 1; i < h.n; i++)
        assert_true(history_at(&h, i)->time > history_at(&h, i - 1)->time);
}

static void a_reported_step_lands_in_its_trainers_history_with_its_budget(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *t = fixture_job(d, "t", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    for (int i = 0; i < 5; i++)
        progress_step(d, t, 0.25);
    assert_true(t->history.n >= 1);
    unsigned steps = 0;
    for (int i = 0; i < t->history.n; i++)
        steps += history_at(&t->history, i)->steps;
    assert_int_equal(steps, 5);
    const history_sample_t *last = history_at(&t->history, t->history.n - 1);
    assert_float_equal(last->seconds, 0.25, 1e-9);
    assert_float_equal(last->budget, job_budget(d, t), 1e-9);
    assert_true(last->time > 1e9); /* wall-clock unix time, not monotonic */
    fixture_daemon_free(d);
}

/* Every number at its longest (17 digits), every co-tenant and run absent: the reply's history
 * must still leave room in the frame for the rest of the trainer's stats. */
static void a_full_history_fits_one_frame(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *t = fixture_job(d, "t", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    for (int i = 0; i < HISTORY_SAMPLES; i++)
        history_add(&t->history, 1764156000.1234567 + i * 3.3333333333333333, 0.12345678901234567, 0.12345678901234567,
                    0.051234567890123456, -0.012345678901234567, 0.12345678901234567);
    t->history.s[0].steps = 4000000000u;
    json_t *o = reply_json_job_stats(d, t, true);
    json_t *reply = proto_ok(json_pack("{s:f, s:b, s:f, s:[o]}", WIRE_R_SLOWDOWN_BUDGET, 0.05, WIRE_R_COTENANT_ACTIVE,
                                       1, WIRE_R_COTENANT_SHARE, 0.12345678901234567, WIRE_R_JOBS, o));
    char *text = json_dumps(reply, JSON_COMPACT);
    size_t len = strlen(text);
    fprintf(stderr, "# a full history's reply: %zu bytes of %d\n", len, PROTO_MAX_FRAME);
    assert_true(len + 4096 < PROTO_MAX_FRAME);
    free(text);
    json_decref(reply);
    fixture_daemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(an_empty_history_has_no_samples, clear),
        cmocka_unit_test_setup(steps_within_the_interval_are_averaged_into_one_sample, clear),
        cmocka_unit_test_setup(a_step_an_interval_later_starts_a_new_sample, clear),
        cmocka_unit_test_setup(a_clock_stepped_back_starts_a_new_sample, clear),
        cmocka_unit_test_setup(a_full_ring_keeps_the_latest_samples_oldest_first, clear),
        cmocka_unit_test_setup(a_reported_step_lands_in_its_trainers_history_with_its_budget, clear),
        cmocka_unit_test_setup(a_full_history_fits_one_frame, clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
