/* test_guard_slow: the guard on a trainer with slow steps (issue 43) — 130 ms a step, as an
 * unmodified PyTorch job on one thread, beside two co-tenants sharing one core: stream (costs
 * 30-40 % at share 1) and busy (1 %). The schedule of the real run (bench/guard_slow.py): 30 s
 * alone, 40 s beside both pinned at share 1, then 150 s under the guard, judged on its last 60 s
 * by the co-tenants' true cost. Four worlds: a steady host; a host whose speed switches between
 * two levels 25 % apart every 2-20 s (a VM on a busy machine); a memory noise whose harm comes and
 * goes in spells of 1-5 s; both. Law 2 ends over budget on the switching host (its baselines
 * belong to another state of the host, as the 145 ms baseline did); law 3 holds the
 * budget in every world. Then each of law 3's rules on its own. Deterministic, fake clock. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "guard.h"
#include "guard_internal.h"
#include "sim_random.h"

enum { COTENANTS = 2, TUNED_SEEDS = 20, HELD_OUT = 80 };

static const double BUDGET = 0.05;

/* Something on or off in spells of dwell_min .. dwell_max seconds (uniform), on for on_share of
 * the time: the host's slow state, or the memory noise's harmful one. */
typedef struct spells {
    double on_share, dwell_min, dwell_max;
    bool on;
    double until;
} spells_t;

typedef struct world {
    const char *name;
    double base;              /* the trainer's step alone on the fast host */
    double ar, sigma;         /* AR(1) jitter of log step times */
    double host_gap;          /* the slow host state adds this ... */
    spells_t host;            /* ... in these spells (host_gap 0: a steady host) */
    double k[COTENANTS];      /* a co-tenant's cost at share 1 while it hurts */
    spells_t harm[COTENANTS]; /* when each hurts (on_share 1: always) */
} world_t;

typedef struct sim {
    world_t w;
    guard_t g;
    step_stats_t steps;
    double now, noise;
    uint64_t rng;
    /* over the last 60 s: the co-tenants' true cost and their shares */
    double from, cost_sum, share_sum[COTENANTS];
    int counted;
} sim_t;

static const char *const IDS[COTENANTS] = {"stream", "busy"};

/* A spell advanced to now: a new one starts on with probability on_share. */
static bool spell_on(sim_t *s, spells_t *sp)
{
    if (sp->on_share >= 1)
        return true;
    while (s->now >= sp->until) {
        sp->on = sim_uniform(&s->rng) < sp->on_share;
        sp->until += sp->dwell_min + (sp->dwell_max - sp->dwell_min) * sim_uniform(&s->rng);
    }
    return sp->on;
}

typedef enum { ALONE, PINNED, GUARDED } sim_mode_t;

/* One step. Pinned co-tenants are not the guard's to judge (progress.c): their steps only count
 * as steps beside a co-tenant, as in the daemon. */
static void sim_step(sim_t *s, sim_mode_t mode)
{
    double cost = 0, share[COTENANTS];
    bool slow = s->w.host_gap > 0 && spell_on(s, &s->w.host);
    for (int i = 0; i < COTENANTS; i++) {
        share[i] = mode == ALONE ? 0 : mode == PINNED ? 1 : guard_share_for(&s->g, IDS[i]);
        cost += spell_on(s, &s->w.harm[i]) ? s->w.k[i] * share[i] : 0;
    }
    s->noise = s->w.ar * s->noise + sqrt(1 - s->w.ar * s->w.ar) * s->w.sigma * sim_gaussian(&s->rng);
    double t = s->w.base * (slow ? 1 + s->w.host_gap : 1) * (1 + cost) * exp(s->noise);
    s->now += t;
    if (mode == GUARDED && s->now >= s->from) {
        s->cost_sum += cost;
        for (int i = 0; i < COTENANTS; i++)
            s->share_sum[i] += share[i];
        s->counted++;
    }
    if (mode == PINNED) {
        stats_add(&s->steps, t, true);
        guard_tick(&s->g, s->now, false);
        return;
    }
    guard_step(&s->g, &s->steps, t, s->now, mode == GUARDED, true);
    guard_tick(&s->g, s->now, mode == GUARDED);
}

typedef struct outcome {
    double slowdown, kept[COTENANTS], pause;
} outcome_t;

static outcome_t run_one(const world_t *w, int law, uint64_t seed)
{
    static sim_t s;
    memset(&s, 0, sizeof s);
    s.w = *w;
    s.rng = seed * 0x9E3779B97F4A7C15ull + 1;
    guard_params_t p;
    guard_params_defaults(&p);
    p.budget = BUDGET;
    p.law = law;
    guard_init(&s.g, &p, 0);
    while (s.now < 30)
        sim_step(&s, ALONE);
    while (s.now < 70)
        sim_step(&s, PINNED);
    /* handed to the guard: it learns who is at work (stream reports its bytes, busy none) */
    blame_sync_begin(&s.g.blame);
    blame_sync_one(&s.g.blame, "stream", 9e9);
    blame_sync_one(&s.g.blame, "busy", 0);
    blame_sync_end(&s.g.blame);
    guard_restart_window(&s.g, s.now);
    s.from = 220 - 60;
    while (s.now < 220)
        sim_step(&s, GUARDED);
    outcome_t o = {.slowdown = s.cost_sum / s.counted, .pause = guard_pause_cost(&s.g)};
    for (int i = 0; i < COTENANTS; i++)
        o.kept[i] = s.share_sum[i] / s.counted;
    return o;
}

typedef struct pooled {
    double mean, worst, kept[COTENANTS], pause;
    int over, seeds;
} pooled_t;

static pooled_t pool(const world_t *w, int law, int first, int seeds)
{
    pooled_t r = {.seeds = seeds};
    for (int seed = first; seed < first + seeds; seed++) {
        outcome_t o = run_one(w, law, (uint64_t)seed);
        r.mean += o.slowdown / seeds;
        r.worst = fmax(r.worst, o.slowdown);
        r.over += o.slowdown > BUDGET;
        r.pause += o.pause / seeds;
        for (int i = 0; i < COTENANTS; i++)
            r.kept[i] += o.kept[i] / seeds;
    }
    printf("# law %d, %-34s seeds %3d-%-3d last 60 s: mean %+.2f %%, worst %+.2f %%, %2d seeds over budget; "
           "stream kept %.2f, busy %.2f; paused %.1f %% of co-tenant time\n",
           law, w->name, first, first + seeds - 1, 100 * r.mean, 100 * r.worst, r.over, r.kept[0], r.kept[1],
           100 * r.pause);
    return r;
}

/* The script of bench/torch_slow.py on this project's VM: 130 ms, 1.5 % jitter; stream costs
 * +30 % at share 1 while it hurts (+26 % measured beside it alone, 2026-11-29), busy +1 %. */
static world_t world(const char *name, bool switching_host, bool harm_in_spells)
{
    world_t w = {.name = name, .base = 0.13, .ar = 0.5, .sigma = 0.015, .k = {0.30, 0.01}};
    for (int i = 0; i < COTENANTS; i++)
        w.harm[i] = (spells_t){.on_share = 1};
    if (switching_host) {
        w.host_gap = 0.25;
        w.host = (spells_t){.on_share = 0.5, .dwell_min = 2, .dwell_max = 20};
    }
    if (harm_in_spells) { /* some noisy blocks cost nothing, most cost 30-50 % (issue 43) */
        w.k[0] = 0.40;
        w.harm[0] = (spells_t){.on_share = 0.75, .dwell_min = 1, .dwell_max = 5};
    }
    return w;
}

/* Within budget on the mean, at most a tenth of the seeds over it, none by more than a point. */
static bool holds_the_budget(const pooled_t *r)
{
    return r->mean <= BUDGET && r->over <= r->seeds / 10 && r->worst <= BUDGET + 0.01;
}

static void law_3_ends_slow_steps_within_budget_in_every_world(void **state)
{
    (void)state;
    const world_t worlds[] = {
        world("a steady host", false, false),
        world("a host switching 25 % every 2-20 s", true, false),
        world("a harm in spells of 1-5 s", false, true),
        world("both", true, true),
    };
    for (size_t i = 0; i < sizeof worlds / sizeof worlds[0]; i++) {
        pooled_t tuned = pool(&worlds[i], 3, 1, TUNED_SEEDS);
        pooled_t held_out = pool(&worlds[i], 3, TUNED_SEEDS + 1, HELD_OUT);
        assert_true(holds_the_budget(&tuned));
        assert_true(holds_the_budget(&held_out));
        if (worlds[i].host_gap == 0) /* the harmless co-tenant is left alone where the host is steady */
            assert_true(tuned.kept[1] >= 0.9 && held_out.kept[1] >= 0.9);
    }
}

/* The criteria can fail: law 2 (before issue 43) ends over budget on a switching host, and holds
 * the harmless co-tenant too. */
static void law_2_does_not_on_a_switching_host(void **state)
{
    (void)state;
    world_t w = world("a host switching 25 % every 2-20 s", true, false);
    pooled_t r = pool(&w, 2, 1, TUNED_SEEDS);
    assert_false(holds_the_budget(&r));
    assert_true(r.over >= 5);
    pool(&w, 3, 1, TUNED_SEEDS); /* beside it, for the record */
}

/* ---- law 3's rules, one at a time ------------------------------------------------------------- */

typedef struct scripted {
    guard_t g;
    step_stats_t steps;
    double now;
} scripted_t;

static void scripted_init(scripted_t *s, int law)
{
    memset(s, 0, sizeof *s);
    guard_params_t p;
    guard_params_defaults(&p);
    p.law = law;
    guard_init(&s->g, &p, 0);
}

/* Up to n steps of `seconds` (with a small wobble), until the guard acts: returns the action
 * (none when n steps passed without one). */
static guard_action_t steps(scripted_t *s, int n, double seconds, bool cotenants)
{
    for (int i = 0; i < n; i++) {
        double t = seconds * (1 + 0.01 * ((i * 7) % 5 - 2));
        s->now += t;
        guard_action_t a = guard_step(&s->g, &s->steps, t, s->now, cotenants, true);
        if (a != GUARD_NONE)
            return a;
    }
    return GUARD_NONE;
}

/* The guard's first steps: alone (its baseline), then beside company, judged within budget. */
static void settle(scripted_t *s, double alone, double beside)
{
    steps(s, 40, alone, false);
    while (steps(s, 40, beside, true) != GUARD_NONE)
        ;
}

/* stream (reporting bytes) and busy at work */
static void two_cotenants(scripted_t *s)
{
    blame_sync_begin(&s->g.blame);
    blame_sync_one(&s->g.blame, "stream", 9e9);
    blame_sync_one(&s->g.blame, "busy", 0);
    blame_sync_end(&s->g.blame);
    guard_restart_window(&s->g, s->now); /* as the daemon does when they start */
}

/* The baseline taken while the host was slow (0.1625 s); the host is fast again (0.13 s) beside a
 * co-tenant at share 0.5: law 3 measures the baseline again instead of giving back, law 2 gives
 * back on a window that looks 20 % faster than the baseline. */
static void a_trainer_faster_than_its_baseline_measures_it_again(void **state)
{
    (void)state;
    for (int law = 2; law <= 3; law++) {
        scripted_t s;
        scripted_init(&s, law);
        settle(&s, 0.1625, 0.1625); /* the baseline on the slow host */
        s.g.share = 0.5;            /* where an earlier throttle left it */
        guard_restart_window(&s.g, s.now);
        guard_action_t a = steps(&s, 80, 0.13, true);
        if (law == 2) {
            assert_int_equal(a, GUARD_RELAX);
            continue;
        }
        assert_int_equal(a, GUARD_PAUSE);
        assert_int_equal(s.g.phase, GUARD_REFRESHING);
        assert_int_equal(steps(&s, 80, 0.13, true), GUARD_RESUME); /* the pause measures the fast host */
        assert_true(fabs(s.g.baseline_median - 0.13) < 0.005);
        assert_float_equal(s.g.share, 0.5, 0);
    }
}

/* No pause may start (its cost bound spent): law 3 is blind, and steps down once per full window
 * rather than hold a share it cannot judge. */
static void blind_it_steps_down(void **state)
{
    (void)state;
    scripted_t s;
    scripted_init(&s, 3);
    settle(&s, 0.1625, 0.1625);
    s.g.share = 0.5;
    s.g.paused_seconds = s.g.active_seconds; /* every second of theirs, far over any bound */
    guard_restart_window(&s.g, s.now);
    assert_int_equal(steps(&s, 100, 0.13, true), GUARD_THROTTLE);
    assert_float_equal(s.g.share, 0.4, 1e-9);
    assert_int_equal(s.g.judged_steps, 0); /* a full window after the change before the next */
}

/* A baseline from the fast host (0.13 s); the host turned slow (every step 25 % longer) and
 * stream at share 1 costs 30 % on top. The probe pauses stream: against the baseline the trainer
 * is still 25 % over, and law 2 clears stream (the probe: the memory noise harmless) and
 * convicts busy; against the steps right before the probe it dropped by stream's cost, and law 3
 * convicts stream, but clears nobody while the trainer is still surely over: busy stays a suspect
 * (a second culprit could be among those left running). */
static void a_probe_is_judged_against_the_steps_before_it(void **state)
{
    (void)state;
    for (int law = 2; law <= 3; law++) {
        scripted_t s;
        scripted_init(&s, law);
        settle(&s, 0.13, 0.13);
        two_cotenants(&s);
        assert_int_equal(steps(&s, 40, 0.13 * 1.25 * 1.30, true), GUARD_PROBE);
        assert_float_equal(guard_share_for(&s.g, "stream"), 0, 0);
        steps(&s, 40, 0.13 * 1.25, true); /* stream paused: the slow host alone */
        assert_int_equal(blame_find(&s.g.blame, "stream")->verdict, law == 3 ? BLAME_GUILTY : BLAME_HARMLESS);
        assert_int_equal(blame_find(&s.g.blame, "busy")->verdict, law == 3 ? BLAME_SUSPECT : BLAME_GUILTY);
    }
}

/* Over budget with nobody left to hold since the verdicts: law 3 first measures the baseline
 * again (the host's state may be what is over), law 2 doubts the verdicts at once. */
static void the_verdicts_stand_until_a_fresh_baseline(void **state)
{
    (void)state;
    for (int law = 2; law <= 3; law++) {
        scripted_t s;
        scripted_init(&s, law);
        settle(&s, 0.13, 0.13);
        two_cotenants(&s);
        assert_int_equal(steps(&s, 40, 0.13 * 1.3, true), GUARD_PROBE); /* stream paused */
        assert_int_equal(steps(&s, 40, 0.13, true), GUARD_THROTTLE);    /* recovered: stream held */
        assert_int_equal(blame_find(&s.g.blame, "busy")->verdict, BLAME_HARMLESS);
        s.g.share = 0; /* stream held at 0, busy free */
        guard_restart_window(&s.g, s.now);
        guard_action_t a = steps(&s, 80, 0.13 * 1.25, true); /* the host turned slow */
        assert_int_equal(a, law == 3 ? GUARD_PAUSE : GUARD_DOUBT);
        if (law == 3) { /* measured on the slow host, with stream still held: nothing to doubt */
            assert_int_equal(steps(&s, 200, 0.13 * 1.25, true), GUARD_RESUME);
            assert_int_equal(steps(&s, 200, 0.13 * 1.25, true), GUARD_RELAX); /* stream gets some back */
        }
        assert_int_equal(blame_find(&s.g.blame, "busy")->verdict, law == 3 ? BLAME_HARMLESS : BLAME_SUSPECT);
    }
}

/* Four baselines that alternate between the host's two levels are no line to carry forward
 * (law 3); four on a line are. */
static void a_drift_is_a_line_only_where_the_baselines_lie_on_one(void **state)
{
    (void)state;
    const double scattered[] = {0.13, 0.1625, 0.13, 0.1625}, line[] = {0.130, 0.131, 0.132, 0.133};
    const double *levels[] = {scattered, line};
    for (int law = 2; law <= 3; law++)
        for (int k = 0; k < 2; k++) {
            scripted_t s;
            scripted_init(&s, law);
            for (int b = 0; b < 4; b++) {
                stats_baseline_restart(&s.steps);
                for (int i = 0; i < 20; i++) /* independent wobble: a baseline of 20 steps is enough */
                    stats_add(&s.steps, levels[k][b] * (1 + 0.002 * ((i * 7) % 5 - 2)), false);
                s.g.baseline_taken = s.g.p.baseline_steps - 1;
                assert_true(guard_baseline_complete(&s.g, &s.steps, 100.0 * b));
            }
            if (k == 1)
                assert_true(s.g.drift > 0);
            else if (law == 3)
                assert_float_equal(s.g.drift, 0, 0);
            else
                assert_true(fabs(s.g.drift) > 0);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(law_3_ends_slow_steps_within_budget_in_every_world),
        cmocka_unit_test(law_2_does_not_on_a_switching_host),
        cmocka_unit_test(a_trainer_faster_than_its_baseline_measures_it_again),
        cmocka_unit_test(blind_it_steps_down),
        cmocka_unit_test(a_probe_is_judged_against_the_steps_before_it),
        cmocka_unit_test(the_verdicts_stand_until_a_fresh_baseline),
        cmocka_unit_test(a_drift_is_a_line_only_where_the_baselines_lie_on_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
