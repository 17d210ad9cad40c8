/* test_experiment_window: the guarded configuration's noise throughput from the noise's reports —
 * the reports that began in the window, the phase line's remainder at the end, and a noise the
 * guard held (no lines until it was let go) moving 0 MB/s in the window, not an unknown amount. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

#include "experiment_window.h"

/* A progress line of a run that started at 1000.0: `bytes` since its previous line. */
static void progress(exp_window_t *w, int run, int rank, double elapsed, double bytes)
{
    json_t *line = json_pack("{s:s, s:i, s:f, s:f, s:f}", "event", "progress", "rank", rank, "elapsed", elapsed, "time",
                             1000.0 + elapsed, "bytes", bytes);
    w->current = run;
    exp_window_line(line, w);
    json_decref(line);
}

/* Its phase line at its end: the run's total. */
static void phase(exp_window_t *w, int run, int rank, double duration, double bytes)
{
    json_t *line = json_pack("{s:s, s:i, s:f, s:f, s:f}", "event", "phase", "rank", rank, "start", 1000.0, "duration",
                             duration, "bytes", bytes);
    w->current = run;
    exp_window_line(line, w);
    json_decref(line);
}

static void a_running_noise_counts_the_reports_begun_in_the_window_and_its_last_stretch(void **state)
{
    (void)state;
    exp_window_t w;
    assert_int_equal(exp_window_init(&w, 1, 1), 0);
    w.from = 1002.2;
    w.to = 1005.05;
    for (int k = 1; k <= 10; k++)
        progress(&w, 0, 0, 0.5 * k, 1e9);
    phase(&w, 0, 0, 5.1, 10.2e9); /* 0.2e9 in the last 0.1 s */
    /* begun at 1002.5 .. 1004.5, then 1005.0 .. 1005.1: 5.2e9 bytes in 2.6 s */
    assert_float_equal(exp_window_mbs(&w), 2000, 1e-6);
    exp_window_free(&w);
}

static void a_noise_held_through_the_window_moved_0_mbs(void **state)
{
    (void)state;
    exp_window_t w;
    assert_int_equal(exp_window_init(&w, 1, 1), 0);
    w.from = 1003.0;
    w.to = 1005.9;
    for (int k = 1; k <= 4; k++) /* until 1002.0, then held: no line until it is let go at 1006 */
        progress(&w, 0, 0, 0.5 * k, 1e9);
    phase(&w, 0, 0, 6.0, 4.1e9);
    assert_float_equal(exp_window_mbs(&w), 0, 0);
    exp_window_free(&w);
}

static void a_hold_within_the_window_counts_at_0_bytes(void **state)
{
    (void)state;
    exp_window_t w;
    assert_int_equal(exp_window_init(&w, 1, 1), 0);
    w.from = 1003.0;
    w.to = 1005.9;
    for (int k = 1; k <= 8; k++) /* until 1004.0, then held until 1006 */
        progress(&w, 0, 0, 0.5 * k, 1e9);
    phase(&w, 0, 0, 6.0, 8e9);
    assert_float_equal(exp_window_mbs(&w), 2e9 / 3.0 / 1e6, 1e-6); /* 1003.0 .. 1006.0 */
    exp_window_free(&w);
}

static void each_process_of_an_mpi_noise_counts_held_or_not(void **state)
{
    (void)state;
    exp_window_t w;
    assert_int_equal(exp_window_init(&w, 1, 2), 0);
    w.from = 1000.0;
    w.to = 1002.0;
    for (int k = 1; k <= 4; k++)
        progress(&w, 0, 0, 0.5 * k, 1e9); /* rank 1 says nothing: held */
    phase(&w, 0, 0, 2.0, 4e9);
    /* summed over the processes: 4e9 bytes, each process 2 s on average */
    assert_float_equal(exp_window_mbs(&w), 2000, 1e-6);
    exp_window_free(&w);
}

static void what_follows_the_phase_line_and_other_lines_do_not_count(void **state)
{
    (void)state;
    exp_window_t w;
    assert_int_equal(exp_window_init(&w, 1, 1), 0);
    w.from = 1000.0;
    w.to = 1001.0;
    progress(&w, 0, 0, 0.5, 1e9);
    json_t *summary = json_pack("{s:s, s:i, s:f}", "event", "summary", "rank", 0, "bytes", 9e9);
    exp_window_line(summary, &w);
    json_decref(summary);
    phase(&w, 0, 0, 1.0, 2e9);
    phase(&w, 0, 0, 1.0, 7e9); /* a second phase line adds nothing */
    assert_float_equal(exp_window_mbs(&w), 2000, 1e-6);
    exp_window_free(&w);
    assert_int_equal(exp_window_init(&w, 1, 1), 0);
    assert_true(exp_window_mbs(&w) < 0); /* no window, no reports: unknown */
    exp_window_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_running_noise_counts_the_reports_begun_in_the_window_and_its_last_stretch),
        cmocka_unit_test(a_noise_held_through_the_window_moved_0_mbs),
        cmocka_unit_test(a_hold_within_the_window_counts_at_0_bytes),
        cmocka_unit_test(each_process_of_an_mpi_noise_counts_held_or_not),
        cmocka_unit_test(what_follows_the_phase_line_and_other_lines_do_not_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
