/* test_clock: the duty cycle behind --intensity. The arithmetic is checked exactly; the
 * effect by CPU time from the scheduler's own accounting (never by wall-clock asserts),
 * in a form that holds on a loaded 2-core machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

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

/* One busy thread for `seconds` at `intensity`: CPU seconds it got, and CPU seconds it asked
 * for (on a CPU + waiting on the run queue, from the phase line's schedstat figures). */
static void busy_run(double intensity, double seconds, double *cpu, double *demand)
{
    char path[] = "/tmp/test_clock.XXXXXX", err[256], line[4096] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct noise_place place;
    struct noise_out out;
    assert_int_equal(noise_place_init(&place, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(noise_out_open(&out, path, -1, err, sizeof err), 0);
    struct noise_ctx ctx = {.out = &out, .place = &place, .nranks = 1, .step = -1};
    struct noise_opts o;
    noise_opts_defaults(&o);
    o.mode = NOISE_MODE_BUSY;
    o.duration = seconds;
    o.intensity = intensity;
    o.period = 0.1;
    o.threads = 1;
    o.report_every = 0; /* the phase line is read as the first line */
    assert_int_equal(noise_run_mode(&o, &ctx, err, sizeof err), 0);
    noise_out_close(&out);
    noise_place_free(&place);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    unlink(path);
    json_t *phase = json_loads(line, 0, NULL);
    assert_non_null(phase);
    *cpu = json_real_value(json_object_get(phase, "run_seconds"));
    *demand = *cpu + json_real_value(json_object_get(phase, "runqueue_seconds"));
    json_decref(phase);
}

static void intensity_half_asks_for_half_the_cpu_time(void **state)
{
    (void)state;
    /* Interleaved, so a burst of load from elsewhere hits every intensity alike. The CPU time
     * a thread asks for (running + runnable) is what the duty cycle controls; the CPU time it
     * gets also depends on what else runs, so only a loose bound is put on that. */
    double cpu[3] = {0}, demand[3] = {0};
    const double intensity[3] = {1.0, 0.5, 0.2};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            double c, d;
            busy_run(intensity[k], 0.5, &c, &d);
            cpu[k] += c;
            demand[k] += d;
        }
    print_message("# cpu seconds got (asked for): intensity 1.0 %.3f (%.3f), 0.5 %.3f (%.3f), 0.2 %.3f (%.3f)\n",
                  cpu[0], demand[0], cpu[1], demand[1], cpu[2], demand[2]);
    if (demand[0] <= 0)
        skip();                   /* no schedstat in this kernel */
    assert_true(demand[0] > 0.5); /* 2 x 0.5 s asked for at full intensity; blocked time (page faults
                                   * on a loaded machine) is neither running nor runnable */
    /* Unloaded, both ratios sit at the intensity. Under load each drifts up in its own way:
     * a thread waking from its idle part is favoured by the scheduler (more CPU than its
     * share), and it waits longer to run after each wake-up (more time runnable). One of
     * the two stays close; a duty cycle that did nothing would put both near 1. */
    double cpu_half = cpu[1] / cpu[0], dem_half = demand[1] / demand[0];
    double cpu_fifth = cpu[2] / cpu[0], dem_fifth = demand[2] / demand[0];
    assert_true((cpu_half > 0.3 && cpu_half < 0.75) || (dem_half > 0.3 && dem_half < 0.75));
    assert_true((cpu_fifth > 0.05 && cpu_fifth < 0.5) || (dem_fifth > 0.05 && dem_fifth < 0.5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_time_is_zero_in_the_busy_part),
        cmocka_unit_test(off_time_runs_to_the_next_period),
        cmocka_unit_test(sleep_returns_at_once_after_a_stop),
        cmocka_unit_test(intensity_half_asks_for_half_the_cpu_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
