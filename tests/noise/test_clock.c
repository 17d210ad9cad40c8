/* test_clock: the duty cycle behind --intensity, exactly: its arithmetic, and the pacing of a
 * loop and of busy mode on a fake clock. The CPU time that buys on a real machine is a figure
 * for bench/noise_intensity.sh, not a test: it depends on what else runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <jansson.h>

#include "noise_clock.h"
#include "noise_testlib.h"
#include "run.h"
#include "stop.h"

static void off_time_is_zero_in_the_busy_part(void **state)
{
    (void)state;
    assert_true(noise_duty_off_time(0.3, 0.1, 0.0) == 0);
    assert_true(noise_duty_off_time(0.3, 0.1, 0.029) == 0);
    assert_true(noise_duty_off_time(0.3, 0.1, 1.0201) == 0);
    assert_true(noise_duty_off_time(1.0, 0.1, 0.099) == 0);
}

static void off_time_runs_to_the_next_period(void **state)
{
    (void)state;
    assert_float_equal(noise_duty_off_time(0.3, 0.1, 0.05), 0.05, 1e-9);
    assert_float_equal(noise_duty_off_time(0.3, 0.1, 0.031), 0.069, 1e-9);
    assert_float_equal(noise_duty_off_time(0.5, 2.0, 7.5), 0.5, 1e-9);
    /* intensity 0 never works: the whole period is off */
    assert_float_equal(noise_duty_off_time(0.0, 0.1, 0.0), 0.1, 1e-9);
}

static void sleep_returns_at_once_after_a_stop(void **state)
{
    (void)state;
    noise_stop_request();
    noise_sleep(1e6); /* would hang the test (and fail it by timeout) if the stop were ignored */
    assert_true(noise_stop_requested());
    noise_stop_reset();
    assert_false(noise_stop_requested());
}

/* The loop of a worker, on a fake clock: pace, then one unit of work of 1/1024 s, until the
 * duration is over. Returns the units done. */
static long paced_loop(struct fake_clock *f, double intensity, double period, double duration)
{
    struct noise_duty d = {.intensity = intensity, .period = period, .origin = f->now, .clock = &f->clock};
    long units = 0;
    for (;;) {
        noise_duty_pace(&d);
        if (f->now >= d.origin + duration)
            return units;
        f->now += 1.0 / 1024;
        units++;
    }
}

static void pace_sleeps_exactly_the_off_time(void **state)
{
    (void)state;
    struct fake_clock f;
    fake_clock_init(&f, 1024.0, 0);
    struct noise_duty d = {.intensity = 0.5, .period = 0.125, .origin = 1024.0, .clock = &f.clock};
    f.now = 1024.03125; /* in the busy half */
    assert_true(noise_duty_pace(&d) == 0);
    assert_int_equal(f.sleeps, 0);
    f.now = 1024.09375; /* in the idle half: to the next period, exactly */
    assert_true(noise_duty_pace(&d) == 0.03125);
    assert_int_equal(f.sleeps, 1);
    assert_true(f.slept == 0.03125);
    assert_true(f.now == 1024.125);
    assert_true(noise_duty_pace(&d) == 0); /* the next period starts busy */
    assert_int_equal(f.sleeps, 1);
    fake_clock_free(&f);
}

static void a_paced_loop_works_intensity_of_every_period_and_sleeps_the_rest(void **state)
{
    (void)state;
    const double intensity[] = {1.0, 0.5, 0.25};
    for (int k = 0; k < 3; k++) {
        struct fake_clock f;
        fake_clock_init(&f, 1024.0, 0);
        long units = paced_loop(&f, intensity[k], 0.125, 1.0);
        assert_int_equal(units, (long)(intensity[k] * 1024));
        assert_true(f.slept == 1.0 - intensity[k]);
        assert_int_equal(f.sleeps, intensity[k] < 1 ? 8 : 0); /* one per period of 1/8 s */
        fake_clock_free(&f);
    }
}

/* Busy mode for 1 s at `intensity` with 1/8 s periods, on a clock that each read moves 1/1024 s
 * on: the seconds it slept, in *slept, and the number of sleeps; its phase line in *phase. */
static long busy_on_a_fake_clock(double intensity, double *slept, json_t **phase)
{
    struct fake_clock f;
    fake_clock_init(&f, 1024.0, 1.0 / 1024);
    struct noise_opts o;
    testlib_opts(&o, NOISE_MODE_BUSY, 1.0);
    o.intensity = intensity;
    o.period = 0.125;
    json_t *lines = testlib_run(&o, &f.clock);
    json_t *phases = testlib_lines(lines, "phase");
    assert_int_equal(json_array_size(phases), 1);
    *phase = json_incref(json_array_get(phases, 0));
    json_decref(phases);
    json_decref(lines);
    *slept = f.slept;
    long sleeps = f.sleeps;
    fake_clock_free(&f);
    return sleeps;
}

/* What --intensity promises, with the scheduler out of the figure (bench/noise_intensity.sh
 * prints the CPU time it gets on a real machine): busy mode sleeps the idle part of each period,
 * noticing it within a unit of work (two clock reads), and works the rest. */
static void busy_mode_sleeps_the_idle_part_of_every_period(void **state)
{
    (void)state;
    const double tick = 1.0 / 1024, intensity[] = {1.0, 0.5, 0.25};
    for (int k = 0; k < 3; k++) {
        double slept;
        json_t *phase;
        long sleeps = busy_on_a_fake_clock(intensity[k], &slept, &phase);
        double idle = 1.0 - intensity[k];
        print_message("# intensity %.2f: slept %.6f s in %ld sleeps\n", intensity[k], slept, sleeps);
        assert_int_equal(sleeps, intensity[k] < 1 ? 8 : 0);
        assert_true(slept <= idle && slept >= idle - sleeps * 2 * tick);
        double duration = json_real_value(json_object_get(phase, "duration"));
        assert_true(duration >= 1.0 && duration <= 1.0 + 3 * tick); /* on the fake clock, too */
        assert_true(json_real_value(json_object_get(phase, "ops")) > 0);
        json_decref(phase);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_time_is_zero_in_the_busy_part),
        cmocka_unit_test(off_time_runs_to_the_next_period),
        cmocka_unit_test(sleep_returns_at_once_after_a_stop),
        cmocka_unit_test(pace_sleeps_exactly_the_off_time),
        cmocka_unit_test(a_paced_loop_works_intensity_of_every_period_and_sleeps_the_rest),
        cmocka_unit_test(busy_mode_sleeps_the_idle_part_of_every_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
