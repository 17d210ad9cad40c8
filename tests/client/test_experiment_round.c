/* test_experiment_round: a round of the blocked design from its noise's lines — when each block
 * ran (over every noise process), the noise's steady throughput in it, which blocks wait for the
 * trainer, and which are no figure: one not every process played, one the stop cut short (the
 * noise may have spent all of it touching its arrays: 0 MB/s), and their partners with them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

#include "experiment_round.h"

enum { MAX_STEPS = 200 };

/* A noise phase line: pattern step `step` of a process ran from start for duration seconds. */
static void phase(exp_round_t *rd, int run, int rank, long step, double start, double duration, double mbs)
{
    json_t *line = json_pack("{s:s, s:i, s:I, s:f, s:f, s:f}", "event", "phase", "rank", rank, "step", (json_int_t)step,
                             "start", start, "duration", duration, "rate_mbs", mbs);
    rd->current = run;
    exp_round_line(line, rd);
    json_decref(line);
}

/* A noise progress line: `bytes` moved since the previous line, `elapsed` seconds into the step. */
static void progress(exp_round_t *rd, int run, int rank, long step, double elapsed, double bytes)
{
    json_t *line = json_pack("{s:s, s:i, s:I, s:f, s:f}", "event", "progress", "rank", rank, "step", (json_int_t)step,
                             "elapsed", elapsed, "bytes", bytes);
    rd->current = run;
    exp_round_line(line, rd);
    json_decref(line);
}

/* The trainer's steps of 0.05 s, the first from 999.02 (off the blocks' edges), until `to`. */
static int steps_until(exp_step_t *steps, double to)
{
    int n = 0;
    for (double end = 999.07; end <= to && n < MAX_STEPS; end = 999.07 + 0.05 * n)
        steps[n++] = (exp_step_t){end, 0.05};
    return n;
}

/* Two pairs: noise, quiet (pair 0), noise, quiet (pair 1). */
static void two_pairs(exp_block_t *b)
{
    for (int i = 0; i < 4; i++)
        b[i] = (exp_block_t){.setting = i % 2 == 0, .pair = i / 2, .noise_mbs = -1};
}

static void a_block_runs_from_the_latest_start_to_the_earliest_end_of_its_processes(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    assert_int_equal(exp_round_init(&rd, b, 4, 2, 2), 0);
    phase(&rd, 0, 0, 0, 999.0, 1.0, 0); /* the discarded block: no block of the round */
    phase(&rd, 0, 0, 1, 1000.00, 1.02, 100);
    phase(&rd, 1, 0, 1, 1000.03, 1.02, 200);
    assert_float_equal(b[0].start, 1000.03, 1e-9);
    assert_float_equal(b[0].end, 1001.02, 1e-9);
    assert_float_equal(b[0].noise_mbs, 300, 1e-9); /* summed over the processes */
    assert_float_equal(exp_round_played_to(&rd), 1001.02, 1e-9);
    exp_round_free(&rd);
}

static void the_noise_throughput_is_its_steady_one_after_the_first_line_of_a_block(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    exp_step_t steps[MAX_STEPS];
    assert_int_equal(exp_round_init(&rd, b, 4, 1, 1), 0);
    progress(&rd, 0, 0, 1, 0.25, 1e9); /* touching its arrays: not steady yet */
    progress(&rd, 0, 0, 1, 0.50, 2e9);
    progress(&rd, 0, 0, 1, 0.75, 2e9);
    phase(&rd, 0, 0, 1, 1000.0, 1.0, 6000);
    int n = steps_until(steps, 1001.5);
    exp_round_measure(&rd, steps, n, 0.1);
    assert_float_equal(b[0].noise_mbs, 8000, 1e-6); /* 4e9 bytes in 0.5 s */
    assert_int_equal(b[0].nsteps, 17);              /* begun 1000.12 .. 1000.92: after the drop, ended in the block */
    exp_round_free(&rd);
}

static void a_block_waits_until_the_trainer_has_stepped_past_it(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    exp_step_t steps[MAX_STEPS];
    assert_int_equal(exp_round_init(&rd, b, 4, 1, 1), 0);
    phase(&rd, 0, 0, 1, 1000.0, 1.0, 6000);
    exp_round_measure(&rd, steps, steps_until(steps, 1000.9), 0.1);
    assert_int_equal(b[0].nsteps, 0);
    exp_round_measure(&rd, steps, steps_until(steps, 1001.05), 0.1); /* a step ended at 1001.02 */
    assert_int_equal(b[0].nsteps, 17);
    exp_round_free(&rd);
}

/* The deadline stops the noise 0.55 s into pair 1's noise block, while it still touches its
 * arrays (no byte moved yet); pair 1's quiet block never starts. */
static void a_block_the_stop_cut_short_is_no_figure_and_takes_its_partner_along(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    exp_step_t steps[MAX_STEPS];
    assert_int_equal(exp_round_init(&rd, b, 4, 1, 1), 0);
    progress(&rd, 0, 0, 1, 0.25, 1e9);
    progress(&rd, 0, 0, 1, 0.50, 2e9);
    phase(&rd, 0, 0, 1, 1000.0, 1.0, 6000);
    phase(&rd, 0, 0, 2, 1001.0, 1.0, 0);
    progress(&rd, 0, 0, 3, 0.25, 0);
    progress(&rd, 0, 0, 3, 0.50, 0);
    double stopped_at = 1002.55;
    phase(&rd, 0, 0, 3, 1002.0, 0.56, 0); /* printed as the stop ends it */
    int n = steps_until(steps, 1003.0);
    exp_round_measure(&rd, steps, n, 0.1);
    assert_true(b[2].nsteps >= 5);            /* enough steps for a figure ... */
    assert_float_equal(b[2].noise_mbs, 0, 0); /* ... of noise that never ran */
    exp_round_close(&rd, stopped_at);
    assert_int_equal(b[2].nsteps, 0);
    assert_int_equal(b[3].nsteps, 0); /* never played */
    assert_true(exp_block_paired(b, 4, &b[0], 5) && exp_block_paired(b, 4, &b[1], 5));
    assert_false(exp_block_paired(b, 4, &b[2], 5) || exp_block_paired(b, 4, &b[3], 5));
    int pairs;
    exp_blocks_slowdown(b, 4, 1, 5, &pairs);
    assert_int_equal(pairs, 1);
    exp_round_free(&rd);
}

static void a_block_that_ended_before_the_stop_stays(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    exp_step_t steps[MAX_STEPS];
    assert_int_equal(exp_round_init(&rd, b, 4, 1, 1), 0);
    for (int k = 1; k <= 4; k++)
        phase(&rd, 0, 0, k, 999.0 + k, 1.0, k % 2 ? 6000 : 0);
    exp_round_measure(&rd, steps, steps_until(steps, 1004.1), 0.1);
    exp_round_close(&rd, 1004.0 + 1e-6); /* the noise ended on its own: stopped after its last block */
    for (int k = 0; k < 4; k++)
        assert_true(exp_block_paired(b, 4, &b[k], 5));
    exp_round_free(&rd);
}

static void a_block_not_every_process_played_is_no_figure(void **state)
{
    (void)state;
    exp_block_t b[4];
    two_pairs(b);
    exp_round_t rd;
    exp_step_t steps[MAX_STEPS];
    assert_int_equal(exp_round_init(&rd, b, 4, 2, 2), 0);
    phase(&rd, 0, 0, 1, 1000.0, 1.0, 100);
    phase(&rd, 1, 0, 1, 1000.0, 1.0, 100);
    phase(&rd, 0, 0, 2, 1001.0, 1.0, 0); /* the other process was stopped before it */
    exp_round_measure(&rd, steps, steps_until(steps, 1003.0), 0.1);
    assert_int_equal(b[1].nsteps, 0);
    assert_float_equal(exp_round_played_to(&rd), 1001.0, 1e-9);
    exp_round_close(&rd, 1003.0);
    assert_true(b[0].nsteps >= 5);
    assert_false(exp_block_paired(b, 4, &b[0], 5)); /* its partner is none */
    exp_round_free(&rd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_block_runs_from_the_latest_start_to_the_earliest_end_of_its_processes),
        cmocka_unit_test(the_noise_throughput_is_its_steady_one_after_the_first_line_of_a_block),
        cmocka_unit_test(a_block_waits_until_the_trainer_has_stepped_past_it),
        cmocka_unit_test(a_block_the_stop_cut_short_is_no_figure_and_takes_its_partner_along),
        cmocka_unit_test(a_block_that_ended_before_the_stop_stays),
        cmocka_unit_test(a_block_not_every_process_played_is_no_figure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
