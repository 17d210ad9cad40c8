/* test_gpu_source: the guard judging a trainer by its GPU's busy time, against the swing the H200
 * of docs/guard.md showed at a constant true speed (0.47 .. 0.74 per 1 s window) — a replayed
 * series (fakegpu/swing.h), a fake clock, 20 seeds. The noise starts after a 30 s lead-in and
 * costs 15 % at share 1, in proportion to the co-tenant's share. Measured: the time from the
 * noise's start until every 30 s window from then on is within budget (its true mean slowdown),
 * for the law as it judged GPU windows before (medians of 1/b, as steps) and as it does now. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fakegpu/swing.h"
#include "guard.h"

#define LEAD 30     /* seconds alone before the noise */
#define NOISE 600   /* seconds of noise */
#define SPAN 30     /* the windows "within budget" is judged on */
#define SEEDS 20    /* the seeds the constants were tuned on */
#define HELD_OUT 80 /* seeds 21..100, never looked at while tuning */
#define MAX_SEEDS HELD_OUT
#define BUSY_ALONE 0.6

typedef struct variant {
    const char *name;
    int gpu_judge; /* GUARD_GPU_MEDIAN: as steps (before); GUARD_GPU_MEAN: now */
    double window; /* seconds of GPU time per observation */
    int law;       /* 2: the law before (its way with steps), 3: now (GPU windows judged as law 2 did) */
} variant_t;

typedef struct gpu_sim {
    guard_t g;
    step_stats_t steps;
    swing_t swing;
    double now, k; /* k: the slowdown the co-tenant causes at share 1 */
    bool noise;
    double cost[NOISE]; /* the true slowdown in each second of the noise */
    double share[NOISE];
    int seconds;
} gpu_sim_t;

static void sim_init(gpu_sim_t *s, const variant_t *v, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    guard_params_t p;
    guard_params_defaults(&p);
    p.gpu_judge = v->gpu_judge;
    p.law = v->law;
    guard_init(&s->g, &p, 0);
    guard_observe_gpu(&s->g, true);
    swing_init(&s->swing, seed, SWING_H200_SD, SWING_H200_AR);
    s->k = 0.15;
}

static double share_now(const gpu_sim_t *s)
{
    return s->noise ? guard_share_for(&s->g, "noise") : 0;
}

/* One observation: `window` seconds of the GPU at the share the guard gives now, each second's
 * busy fraction the level times the swing; the guard sees their mean as 1/b. */
static void sim_window(gpu_sim_t *s, double window)
{
    double share = share_now(s), cost = s->k * share, busy = 0;
    int n = (int)(window + 0.5);
    for (int i = 0; i < n; i++) {
        busy += BUSY_ALONE / (1 + cost) * swing_next(&s->swing) / n;
        if (s->noise && s->seconds < NOISE) {
            s->cost[s->seconds] = cost;
            s->share[s->seconds++] = share;
        }
        s->now += 1;
        guard_tick(&s->g, s->now, s->noise);
    }
    guard_step(&s->g, &s->steps, 1 / busy, s->now, s->noise, true);
}

static void sim_run(gpu_sim_t *s, const variant_t *v)
{
    while (s->now < LEAD)
        sim_window(s, v->window);
    s->noise = true;
    blame_sync_begin(&s->g.blame);
    blame_sync_one(&s->g.blame, "noise", 0);
    blame_sync_end(&s->g.blame);
    while (s->seconds < NOISE)
        sim_window(s, v->window);
}

/* Seconds from the noise's start until every 30 s window from then on has a true mean slowdown
 * within budget. */
static int time_to_within(const gpu_sim_t *s, double budget)
{
    for (int u = s->seconds - SPAN; u >= 0; u--) {
        double sum = 0;
        for (int i = u; i < u + SPAN; i++)
            sum += s->cost[i];
        if (sum / SPAN > budget + 1e-12)
            return u + 1;
    }
    return 0;
}

typedef struct figures {
    int within[MAX_SEEDS];
    double within_median, within_worst;
    double slowdown, worst_slowdown, over, kept; /* after the first minute of noise */
    int seeds_over;
} figures_t;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* seeds first .. first + n - 1 */
static figures_t measure(const variant_t *v, int first, int n)
{
    figures_t f = {0};
    for (int i = 0; i < n; i++) {
        gpu_sim_t s;
        sim_init(&s, v, (uint64_t)(first + i));
        sim_run(&s, v);
        f.within[i] = time_to_within(&s, s.g.p.budget);
        double cost = 0, kept = 0;
        int windows = 0, over = 0;
        for (int i = 60; i < NOISE; i++) {
            cost += s.cost[i] / (NOISE - 60);
            kept += s.share[i] / (NOISE - 60);
        }
        for (int u = 60; u + SPAN <= NOISE; u += SPAN) {
            double sum = 0;
            for (int i = u; i < u + SPAN; i++)
                sum += s.cost[i] / SPAN;
            windows++;
            over += sum > s.g.p.budget + 0.02;
        }
        f.slowdown += cost / n;
        f.worst_slowdown = fmax(f.worst_slowdown, cost);
        f.seeds_over += cost > s.g.p.budget;
        f.over += (double)over / windows / n;
        f.kept += kept / n;
    }
    int sorted[MAX_SEEDS];
    memcpy(sorted, f.within, sizeof sorted);
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_int);
    f.within_median = (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    f.within_worst = sorted[n - 1];
    printf("# %s, seeds %d-%d: within budget %.0f s after the noise starts (median of %d seeds; worst %.0f s); after "
           "the first "
           "minute: slowdown %.2f %% (worst seed %.2f %%, %d seeds over budget), 30 s windows over budget+2 %.1f %%, "
           "share kept %.3f\n",
           v->name, first, first + n - 1, f.within_median, n, f.within_worst, 100 * f.slowdown, 100 * f.worst_slowdown,
           f.seeds_over, 100 * f.over, f.kept);
    return f;
}

/* The replayed series is the H200's: over a 22 s lead-in it ranges about as 0.47 .. 0.74 did. */
static void the_replayed_swing_is_the_h200s(void **state)
{
    (void)state;
    double ranges[SEEDS];
    for (int seed = 1; seed <= SEEDS; seed++) {
        swing_t sw;
        swing_init(&sw, (uint64_t)seed, SWING_H200_SD, SWING_H200_AR);
        double lo = 1, hi = 0;
        for (int i = 0; i < 22; i++) {
            double b = BUSY_ALONE * swing_next(&sw);
            lo = fmin(lo, b);
            hi = fmax(hi, b);
        }
        ranges[seed - 1] = hi - lo;
    }
    double mean = 0;
    for (int i = 0; i < SEEDS; i++)
        mean += ranges[i] / SEEDS;
    printf("# the replayed swing: a 22 s lead-in ranges %.2f on average (the H200: 0.74 - 0.47 = 0.27)\n", mean);
    assert_true(mean > 0.2 && mean < 0.34);
}

static const variant_t before = {"law 2, GPU windows judged as steps (before)", GUARD_GPU_MEDIAN, 1, 2};
static const variant_t now = {"law 3, GPU windows judged by their mean busy fraction (now)", GUARD_GPU_MEAN, 1, 3};

static void the_gpu_source_is_within_budget_far_sooner(void **state)
{
    (void)state;
    figures_t old = measure(&before, 1, SEEDS);
    figures_t f = measure(&now, 1, SEEDS);
    printf("# time to within budget, old law vs new: %.0f s vs %.0f s (median), %.0f s vs %.0f s (worst seed)\n",
           old.within_median, f.within_median, old.within_worst, f.within_worst);
    /* The target, within budget 30 s after the noise starts (median), with the over-budget
     * criteria of issue 23 (test_blame.c) on this series as well, and at least the work the first
     * mean-judging guard kept (0.18; docs/guard.md has the figures). */
    assert_true(f.within_median <= 30);
    assert_true(f.within_median <= old.within_median / 4);
    assert_true(f.kept >= 0.18);
    assert_true(f.slowdown <= 0.05);
    assert_true(f.seeds_over <= 2);
    assert_true(f.over <= 0.10);
    assert_true(old.seeds_over >= 5); /* the criteria can fail: judged as steps, they did */
}

/* The constants (the cut's target, the pause's length) were tuned on seeds 1-20; seeds they were
 * never tried on must meet the same target and criteria, scaled to their number. */
static void seeds_it_was_not_tuned_on_agree(void **state)
{
    (void)state;
    figures_t old = measure(&before, SEEDS + 1, HELD_OUT);
    figures_t f = measure(&now, SEEDS + 1, HELD_OUT);
    assert_true(f.within_median <= 30);
    assert_true(f.within_median < old.within_median);
    assert_true(f.slowdown <= 0.05);
    assert_true(f.seeds_over <= HELD_OUT / 10);
    assert_true(f.over <= 0.10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_replayed_swing_is_the_h200s),
        cmocka_unit_test(the_gpu_source_is_within_budget_far_sooner),
        cmocka_unit_test(seeds_it_was_not_tuned_on_agree),
    };
    return cmocka_run_group_tests_name("gpu source", tests, NULL, NULL);
}
