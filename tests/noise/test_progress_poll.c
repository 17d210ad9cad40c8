/* test_progress_poll: progress lines on synthetic times — one per point of the report_every grid,
 * a late poll merging what it missed without moving the grid, none past the end, increments
 * that add up to the meters' totals — and idle mode printing them on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "noise_progress.h"
#include "noise_testlib.h"

#define ORIGIN 1024.0

/* A phase of busy noise for `duration` from ORIGIN, reporting every `every` seconds from two
 * meters, into a temp file. */
struct fixture {
    struct noise_opts o;
    struct noise_out out;
    struct noise_ctx ctx;
    struct noise_meter meters[2];
    struct noise_progress p;
    char path[TESTLIB_PATH_MAX];
};

static void start(struct fixture *f, double duration, double every)
{
    memset(f, 0, sizeof *f);
    testlib_opts(&f->o, NOISE_MODE_BUSY, duration);
    f->o.report_every = every;
    testlib_out_open(&f->out, f->path);
    f->ctx = (struct noise_ctx){.out = &f->out, .nranks = 1, .step = -1};
    noise_progress_init(&f->p, &f->ctx, &f->o, "noise", ORIGIN);
    f->p.meters = f->meters;
    f->p.nmeters = 2;
}

/* Closes the output: the progress lines printed, as an array. */
static json_t *lines_of(struct fixture *f)
{
    json_t *all = testlib_out_lines(&f->out, f->path);
    json_t *progress = testlib_lines(all, "progress");
    json_decref(all);
    return progress;
}

static double num(const json_t *lines, size_t i, const char *key)
{
    return json_number_value(json_object_get(json_array_get(lines, i), key));
}

static void a_line_falls_due_on_each_point_of_the_grid(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 10, 0.25);
    noise_progress_poll(&f.p, ORIGIN + 0.125); /* not yet due */
    noise_meter_add(&f.meters[0], 1000000, 3);
    noise_meter_add(&f.meters[1], 500000, 2);
    noise_progress_poll(&f.p, ORIGIN + 0.25);
    noise_progress_poll(&f.p, ORIGIN + 0.375); /* the next is due at 0.5 */
    noise_meter_add(&f.meters[1], 250000, 1);
    noise_progress_poll(&f.p, ORIGIN + 0.5);
    json_t *l = lines_of(&f);
    assert_int_equal(json_array_size(l), 2);
    assert_true(num(l, 0, "elapsed") == 0.25);
    assert_true(num(l, 0, "bytes") == 1500000 && num(l, 0, "ops") == 5);
    assert_true(num(l, 0, "rate_mbs") == 6.0); /* 1.5 MB in 0.25 s */
    assert_true(num(l, 1, "elapsed") == 0.5);
    assert_true(num(l, 1, "bytes") == 250000 && num(l, 1, "ops") == 1); /* since the line before */
    assert_true(num(l, 1, "rate_mbs") == 1.0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "mode")), "busy");
    json_decref(l);
}

static void a_late_poll_merges_the_lines_it_missed_and_keeps_the_grid(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 10, 0.25);
    noise_meter_add(&f.meters[0], 3000000, 6);
    noise_progress_poll(&f.p, ORIGIN + 0.875); /* 0.25, 0.5 and 0.75 passed unprinted */
    noise_meter_add(&f.meters[0], 500000, 1);
    noise_progress_poll(&f.p, ORIGIN + 1.0); /* due on the grid, not 0.25 after the late line */
    json_t *l = lines_of(&f);
    assert_int_equal(json_array_size(l), 2);
    assert_true(num(l, 0, "elapsed") == 0.875);
    assert_true(num(l, 0, "bytes") == 3000000 && num(l, 0, "ops") == 6);
    assert_true(num(l, 1, "elapsed") == 1.0);
    assert_true(num(l, 1, "bytes") == 500000);
    assert_true(num(l, 1, "rate_mbs") == 4.0); /* over the 0.125 s since the late line */
    json_decref(l);
}

static void no_line_at_or_past_the_end_of_the_phase(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0.5, 0.25);
    noise_progress_poll(&f.p, ORIGIN + 0.25);
    noise_progress_poll(&f.p, ORIGIN + 0.5); /* due, but the phase line with the totals is next */
    noise_progress_poll(&f.p, ORIGIN + 2.0);
    json_t *l = lines_of(&f);
    assert_int_equal(json_array_size(l), 1);
    json_decref(l);
}

static void reporting_is_off_for_report_every_0_and_for_a_benchmark(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 10, 0);
    noise_progress_poll(&f.p, ORIGIN + 5);
    json_t *l = lines_of(&f);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    start(&f, 0, 0.25); /* no duration: a measured benchmark */
    noise_progress_poll(&f.p, ORIGIN + 5);
    l = lines_of(&f);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
}

/* The increments of all lines add up to the meters' totals at the last line. */
static void increments_add_up_to_the_totals(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 100, 0.25);
    uint64_t total = 0;
    for (int k = 1; k <= 40; k++) {
        noise_meter_add(&f.meters[k % 2], (uint64_t)k * 4096, 1);
        total += (uint64_t)k * 4096;
        noise_progress_poll(&f.p, ORIGIN + k * 0.125);
    }
    json_t *l = lines_of(&f);
    assert_int_equal(json_array_size(l), 20);
    double bytes = 0, ops = 0;
    for (size_t i = 0; i < json_array_size(l); i++) {
        bytes += num(l, i, "bytes");
        ops += num(l, i, "ops");
    }
    assert_true(bytes == (double)total && ops == 40);
    json_decref(l);
}

/* Idle mode sleeps from line to line on its clock: on a fake one, a line at each grid point. */
static void idle_mode_prints_a_line_at_each_point_of_the_grid(void **state)
{
    (void)state;
    struct fake_clock clock;
    fake_clock_init(&clock, ORIGIN, 0);
    struct noise_opts o;
    testlib_opts(&o, NOISE_MODE_IDLE, 1.0);
    o.report_every = 0.25;
    json_t *all = testlib_run(&o, &clock.clock);
    json_t *l = testlib_lines(all, "progress"), *phase = testlib_lines(all, "phase");
    assert_int_equal(json_array_size(l), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_true(num(l, i, "elapsed") == 0.25 * (double)(i + 1));
        assert_string_equal(json_string_value(json_object_get(json_array_get(l, i), "mode")), "idle");
    }
    assert_true(clock.slept == 1.0);
    assert_true(num(phase, 0, "duration") == 1.0);
    json_decref(l);
    json_decref(phase);
    json_decref(all);
    fake_clock_free(&clock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_line_falls_due_on_each_point_of_the_grid),
        cmocka_unit_test(a_late_poll_merges_the_lines_it_missed_and_keeps_the_grid),
        cmocka_unit_test(no_line_at_or_past_the_end_of_the_phase),
        cmocka_unit_test(reporting_is_off_for_report_every_0_and_for_a_benchmark),
        cmocka_unit_test(increments_add_up_to_the_totals),
        cmocka_unit_test(idle_mode_prints_a_line_at_each_point_of_the_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
