/* test_clock: the duty cycle behind --intensity. The arithmetic is checked exactly; the
 * effect is checked by CPU time (never by wall-clock asserts), with bounds loose enough
 * for a loaded 2-core machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "clock.h"
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

/* CPU seconds one busy thread uses in `seconds` at `intensity`. */
static double busy_cpu(struct noise_ctx *ctx, double intensity, double seconds)
{
    struct noise_opts o;
    char err[256];
    noise_opts_defaults(&o);
    o.mode = NOISE_MODE_BUSY;
    o.duration = seconds;
    o.intensity = intensity;
    o.period = 0.02;
    o.threads = 1;
    double c0 = noise_cpu_seconds();
    assert_int_equal(noise_run_mode(&o, ctx, err, sizeof err), 0);
    return noise_cpu_seconds() - c0;
}

static void intensity_half_uses_about_half_the_cpu_time(void **state)
{
    (void)state;
    struct noise_place place;
    struct noise_out out;
    char err[256];
    assert_int_equal(noise_place_init(&place, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(noise_out_open(&out, "/dev/null", -1, err, sizeof err), 0);
    struct noise_ctx ctx = {.out = &out, .place = &place, .nranks = 1, .step = -1};
    /* Interleaved, so a burst of load from elsewhere hits both sides alike. */
    double full = 0, half = 0, fifth = 0;
    for (int i = 0; i < 2; i++) {
        full += busy_cpu(&ctx, 1.0, 0.3);
        half += busy_cpu(&ctx, 0.5, 0.3);
        fifth += busy_cpu(&ctx, 0.2, 0.3);
    }
    print_message("# cpu seconds: intensity 1.0 %.3f, 0.5 %.3f, 0.2 %.3f\n", full, half, fifth);
    assert_true(full > 0.05);
    assert_true(half / full > 0.30 && half / full < 0.80);
    assert_true(fifth / full > 0.05 && fifth / full < 0.50);
    assert_true(fifth < half);
    noise_out_close(&out);
    noise_place_free(&place);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_time_is_zero_in_the_busy_part),
        cmocka_unit_test(off_time_runs_to_the_next_period),
        cmocka_unit_test(sleep_returns_at_once_after_a_stop),
        cmocka_unit_test(intensity_half_uses_about_half_the_cpu_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
