/* test_progress_source: which source a trainer's progress comes from, and the models that turn a
 * GPU's busy fraction and a counter into observations the guard judges like step times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "progress_source.h"
#include "stats.h"

static const progress_offer_t gpu_node = {.gpus = 2, .gpus_sampled = 2, .pmu = true, .pmu_target = true};

static void names_parse_back(void **state)
{
    (void)state;
    for (int s = 0; s < PROGRESS_NSOURCES; s++) {
        progress_source_t back;
        assert_int_equal(progress_source_parse(progress_source_name((progress_source_t)s), &back), 0);
        assert_int_equal(back, s);
    }
    progress_source_t out;
    assert_int_equal(progress_source_parse("GPU", &out), -1);
    assert_int_equal(progress_source_parse(NULL, &out), -1);
}

static void reported_steps_win_over_everything_under_auto(void **state)
{
    (void)state;
    progress_offer_t o = gpu_node;
    o.steps_seen = true;
    assert_int_equal(progress_choose(PROGRESS_AUTO, &o).source, PROGRESS_STEPS);
}

static void a_gpu_job_that_reports_nothing_is_judged_by_its_gpus(void **state)
{
    (void)state;
    progress_choice_t c = progress_choose(PROGRESS_AUTO, &gpu_node);
    assert_int_equal(c.source, PROGRESS_GPU);
    assert_non_null(strstr(c.reason, "busy time of its GPUs"));
}

/* CUDA and NCCL spin-wait on the CPU: a GPU job is never judged by instructions retired. */
static void a_gpu_job_whose_gpus_cannot_be_read_has_no_source_not_the_pmu(void **state)
{
    (void)state;
    progress_offer_t o = gpu_node;
    o.gpus_sampled = 1;
    o.gpu_why = "GPU 1 (0000:0f:00.0): NVML has no GPU at PCI 0000:0f:00.0";
    progress_choice_t c = progress_choose(PROGRESS_AUTO, &o);
    assert_int_equal(c.source, PROGRESS_NONE);
    assert_non_null(strstr(c.reason, "no steps reported and its GPUs' busy time cannot be read: GPU 1"));
}

static void a_cpu_trainer_is_judged_by_the_pmu_where_there_is_one(void **state)
{
    (void)state;
    progress_offer_t o = {.pmu = true, .pmu_target = true};
    assert_int_equal(progress_choose(PROGRESS_AUTO, &o).source, PROGRESS_PMU);
    o.pmu = false;
    o.pmu_why = "this machine offers no hardware PMU";
    progress_choice_t c = progress_choose(PROGRESS_AUTO, &o);
    assert_int_equal(c.source, PROGRESS_NONE);
    assert_non_null(strstr(c.reason, "no steps reported, no GPU, and no instruction counts: this machine offers"));
    o.pmu = true;
    o.pmu_target = false;
    assert_int_equal(progress_choose(PROGRESS_AUTO, &o).source, PROGRESS_NONE);
}

/* A GPU found but not read yet (at start, or found again after it was lost) leaves the choice
 * open: a MIG GPU is found and then reports nothing, and must not flip a job's source. */
static void gpus_not_read_yet_leave_the_choice_undecided(void **state)
{
    (void)state;
    progress_offer_t o = gpu_node;
    o.gpus_sampled = 1;
    o.gpus_pending = 1;
    progress_choice_t c = progress_choose(PROGRESS_AUTO, &o);
    assert_true(c.undecided);
    assert_non_null(strstr(c.reason, "waiting for the first reading"));
    assert_true(progress_choose(PROGRESS_GPU, &o).undecided);
    o.steps_seen = true;
    assert_false(progress_choose(PROGRESS_AUTO, &o).undecided); /* steps decide alone */
    o.steps_seen = false;
    o.gpus_sampled = 0;
    o.gpus_pending = 1;
    o.gpu_why = "GPU 0: lost";
    assert_false(progress_choose(PROGRESS_AUTO, &o).undecided); /* one GPU is not coming: none */
}

static void an_explicit_pick_gets_that_source_or_none(void **state)
{
    (void)state;
    progress_offer_t o = gpu_node;
    o.steps_seen = true;
    assert_int_equal(progress_choose(PROGRESS_GPU, &o).source, PROGRESS_GPU);
    assert_int_equal(progress_choose(PROGRESS_PMU, &o).source, PROGRESS_PMU);
    assert_int_equal(progress_choose(PROGRESS_NONE, &o).source, PROGRESS_NONE);
    o.steps_seen = false;
    progress_choice_t c = progress_choose(PROGRESS_STEPS, &o);
    assert_int_equal(c.source, PROGRESS_STEPS);
    assert_non_null(strstr(c.reason, "(none yet)"));
    o.gpus = 0;
    c = progress_choose(PROGRESS_GPU, &o);
    assert_int_equal(c.source, PROGRESS_NONE);
    assert_non_null(strstr(c.reason, "holds no GPU"));
}

/* slowdown = b0 / b - 1: the observations' ratio is the step times' ratio. */
static void busy_fractions_become_step_time_units(void **state)
{
    (void)state;
    double base, now;
    assert_true(progress_gpu_observation(0.90, 0.02, &base));
    assert_true(progress_gpu_observation(0.75, 0.02, &now));
    assert_true(fabs(now / base - 1 - 0.20) < 1e-12);
    assert_true(fabs(base - 1 / 0.9) < 1e-12);
}

/* An idle GPU says nothing about how fast the job would go: no observation (the guard's timeouts
 * then read the silence as no progress). */
static void an_idle_or_invalid_window_is_no_observation(void **state)
{
    (void)state;
    double v = -1;
    assert_false(progress_gpu_observation(0.01, 0.02, &v));
    assert_false(progress_gpu_observation(0, 0, &v));
    assert_false(progress_gpu_observation(-0.5, 0.02, &v));
    assert_false(progress_gpu_observation(NAN, 0.02, &v));
    assert_false(progress_gpu_observation(1.5, 0.02, &v));
    assert_true(v == -1);
    assert_true(progress_gpu_observation(1.0, 0.02, &v));
    assert_true(v == 1);
}

static void a_window_is_judged_on_all_of_a_jobs_gpus_or_none(void **state)
{
    (void)state;
    double mean;
    const double all[] = {0.8, 0.6, 0.7}, one_missing[] = {0.8, -1, 0.7};
    assert_true(progress_gpu_mean(all, 3, &mean));
    assert_true(fabs(mean - 0.7) < 1e-12);
    assert_false(progress_gpu_mean(one_missing, 3, &mean));
    assert_false(progress_gpu_mean(all, 0, &mean));
}

static void counters_become_seconds_per_billion_events(void **state)
{
    (void)state;
    double base, slow;
    assert_true(progress_counter_observation(4e9, 1.0, &base));
    assert_true(progress_counter_observation(3.2e9, 1.0, &slow));
    assert_true(fabs(slow / base - 1.25) < 1e-12);
    assert_false(progress_counter_observation(0, 1.0, &base));
    assert_false(progress_counter_observation(1e9, 0, &base));
}

/* The guard's statistics judge GPU observations as they judge steps: a 20 % drop of busy time is
 * a 25 % slowdown, measured with the interval the guard uses. */
static void the_guards_statistics_read_gpu_observations_as_steps(void **state)
{
    (void)state;
    step_stats_t s;
    memset(&s, 0, sizeof s);
    double v;
    for (int i = 0; i < 20; i++) {
        assert_true(progress_gpu_observation(0.80 + 0.002 * (i % 3), 0.02, &v));
        stats_add(&s, v, false);
    }
    for (int i = 0; i < 20; i++) {
        assert_true(progress_gpu_observation(0.64 + 0.002 * (i % 3), 0.02, &v));
        stats_add(&s, v, true);
    }
    slowdown_t sd = stats_slowdown(&s, 20, 20);
    assert_true(sd.valid);
    assert_true(fabs(sd.slowdown - 0.25) < 0.01);
    assert_true(sd.ci_low > 0.2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_parse_back),
        cmocka_unit_test(reported_steps_win_over_everything_under_auto),
        cmocka_unit_test(a_gpu_job_that_reports_nothing_is_judged_by_its_gpus),
        cmocka_unit_test(a_gpu_job_whose_gpus_cannot_be_read_has_no_source_not_the_pmu),
        cmocka_unit_test(a_cpu_trainer_is_judged_by_the_pmu_where_there_is_one),
        cmocka_unit_test(gpus_not_read_yet_leave_the_choice_undecided),
        cmocka_unit_test(an_explicit_pick_gets_that_source_or_none),
        cmocka_unit_test(busy_fractions_become_step_time_units),
        cmocka_unit_test(an_idle_or_invalid_window_is_no_observation),
        cmocka_unit_test(a_window_is_judged_on_all_of_a_jobs_gpus_or_none),
        cmocka_unit_test(counters_become_seconds_per_billion_events),
        cmocka_unit_test(the_guards_statistics_read_gpu_observations_as_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
