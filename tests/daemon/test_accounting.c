/* test_accounting: the node's counters — a step above baseline beside a co-tenant is counted as
 * lost and nothing else is; a tick credits trainer time, over-budget time and time without a
 * progress source while a co-tenant works; a co-tenant run's process group's CPU time is read
 * from /proc and never counted backwards, a Slurm co-tenant's from its job cgroup; the counters
 * outlive a job's release. Also prints the
 * size of the metrics text on a DGX A100 with 8 trainers and 64 co-tenants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "accounting.h"
#include "daemon_fixture.h"
#include "metrics.h"
#include "process.h"
#include "runs.h"

static void a_step_above_baseline_beside_a_cotenant_is_lost_time(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *t = fixture_job(d, "t", ROLE_TRAINER, PLAN_L3, 1);
    t->progress_source = PROGRESS_STEPS;
    t->steps.explicit_baseline = 1.0;
    accounting_step(d, t, 1.5, true);
    assert_true(d->counters.trainer_lost_seconds > 0.499 && d->counters.trainer_lost_seconds < 0.501);
    accounting_step(d, t, 0.8, true);  /* faster than baseline: never negative */
    accounting_step(d, t, 3.0, false); /* no co-tenant: not theirs */
    assert_true(d->counters.trainer_lost_seconds > 0.499 && d->counters.trainer_lost_seconds < 0.501);
    t->progress_source = PROGRESS_GPU; /* judged by its GPUs: the tick counts it, not the step */
    accounting_step(d, t, 3.0, true);
    assert_true(d->counters.trainer_lost_seconds < 0.501);
    fixture_daemon_free(d);
}

static void a_tick_credits_trainer_time_over_budget_and_without_source(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *t = fixture_job(d, "t", ROLE_TRAINER, PLAN_L3, 1);
    t->progress_source = PROGRESS_NONE;
    accounting_tick(d, 100.0); /* the first tick only starts the clock */
    accounting_tick(d, 102.0);
    assert_true(d->counters.trainer_seconds == 2.0);
    assert_true(d->counters.trainer_no_progress_source_seconds == 0); /* no co-tenant at work */
    job_t *c = fixture_job(d, "c", ROLE_COTENANT, PLAN_L3, 1);
    c->external = true; /* at work from registration to release */
    accounting_tick(d, 103.0);
    assert_true(d->counters.trainer_no_progress_source_seconds == 1.0);
    assert_true(d->counters.cotenant_seconds == 1.0);
    /* steps slowed by 50 % against an explicit baseline, budget 5 %: over budget, and lost */
    t->progress_source = PROGRESS_GPU;
    t->steps.explicit_baseline = 1.0;
    for (int i = 0; i < 20; i++)
        stats_add(&t->steps, 1.5, true);
    accounting_tick(d, 104.0);
    assert_true(d->counters.trainer_over_budget_seconds == 1.0);
    double lost = d->counters.trainer_lost_seconds; /* 1 s * 0.5 / 1.5 */
    assert_true(lost > 0.333 && lost < 0.334);
    accounting_tick(d, 1000.0); /* a long gap credits at most 10 s */
    assert_true(d->counters.trainer_seconds == 14.0);
    assert_true(job_release(d, "t") && job_release(d, "c"));
    accounting_tick(d, 1001.0);
    assert_true(d->counters.trainer_seconds == 14.0 && d->counters.trainer_over_budget_seconds == 11.0);
    fixture_daemon_free(d);
}

/* One more tick; the counter may only grow. */
static double tick_never_backwards(daemon_t *d, double last)
{
    accounting_tick(d, clock_now_mono());
    assert_true(d->counters.cotenant_cpu_seconds >= last);
    return d->counters.cotenant_cpu_seconds;
}

/* Until the run has printed n lines (a minute at most), ticking meanwhile or not. */
static double wait_lines(daemon_t *d, run_t *r, unsigned long n, bool tick, double last)
{
    for (double end = clock_now_mono() + 60; r->lines < n && clock_now_mono() < end;) {
        if (tick)
            last = tick_never_backwards(d, last);
        run_read_output(d, r);
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    assert_int_equal(r->lines, n);
    return last;
}

static void a_cotenant_runs_group_cpu_time_is_counted_and_never_backwards(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *c = fixture_job(d, "c", ROLE_COTENANT, PLAN_L3, 1);
    /* Children of the leader, one after the other, each spin until its own CPU time (utime +
     * stime in /proc/self/stat) reaches `burn`, however long that takes on a loaded machine; the
     * leader reaps each (its time moves to the leader's cutime) and says so. */
    const double burn = 0.2;
    char spin[160], script[400];
    snprintf(spin, sizeof spin,
             "sh -c 'while read -r s < /proc/self/stat; set -- $s; [ $((${14} + ${15})) -lt %ld ]; do :; done'",
             (long)(burn * (double)sysconf(_SC_CLK_TCK)));
    snprintf(script, sizeof script, "%s & wait; echo reaped; %s & wait; echo reaped; exec sleep 300", spin, spin);
    json_t *argv = json_pack("[sss]", "sh", "-c", script), *env = json_object();
    run_t *r = NULL;
    result_t res = run_start(d, c, 0, argv, env, NULL, NULL, &r);
    json_decref(argv);
    json_decref(env);
    assert_int_equal(res.code, RESULT_OK);
    /* The first never seen alive: only the leader's cutime holds its time. /proc shows whole
     * ticks, rounded down: a hair less than burnt may show. */
    double last = wait_lines(d, r, 1, false, 0);
    last = tick_never_backwards(d, last);
    assert_true(last >= burn - 0.02);
    /* The second seen alive at every tick, then reaped: the group's total never drops. */
    last = wait_lines(d, r, 2, true, last);
    last = tick_never_backwards(d, last);
    run_stop(d, r);
    for (double end = clock_now_mono() + 60; r->state == RUN_RUNNING && clock_now_mono() < end;) {
        run_ended(d, r);
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    assert_int_not_equal(r->state, RUN_RUNNING);
    print_message("# co-tenant CPU seconds counted: %.2f, the spinners burnt %.2f\n", last, 2 * burn);
    /* all of it, and nothing twice: the shells and sleep add a few milliseconds */
    assert_true(last >= 2 * burn - 0.02);
    assert_true(last <= 2 * burn + 0.1);
    fixture_daemon_free(d);
}

static void the_payload_of_8_trainers_and_64_cotenants(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("dgx-a100.xml");
    char id[32];
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "trainer-%d", 1000000 + i);
        hwloc_bitmap_t gpu = hwloc_bitmap_alloc();
        hwloc_bitmap_set(gpu, (unsigned)i);
        job_request_t req =
            {.id = id, .uid = geteuid(), .role = ROLE_TRAINER, .policy = PLAN_CORES, .gpus = gpu, .ranks_per_gpu = 1};
        job_t *t = NULL;
        bool existing;
        result_t res = job_register(d, &req, &t, &existing);
        hwloc_bitmap_free(gpu);
        assert_int_equal(res.code, RESULT_OK);
        t->steps.explicit_baseline = 0.25;
        for (int s = 0; s < 20; s++)
            stats_add(&t->steps, 0.26, true);
    }
    for (int i = 0; i < 64; i++) {
        snprintf(id, sizeof id, "cotenant-%d", 2000000 + i);
        fixture_job(d, id, ROLE_COTENANT, PLAN_CORES, 1);
    }
    char *text = metrics_render(d);
    assert_non_null(text);
    print_message("# metrics payload, 8 trainers and 64 co-tenants on dgx-a100.xml: %zu bytes\n", strlen(text));
    free(text);
    fixture_daemon_free(d);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A co-tenant Slurm started: its job cgroup's CPU time (a fake tree), from its first reading on
 * (what it used before cosched found it is not counted), never backwards; v2 and v1 alike. */
static void a_slurm_cotenants_cgroup_cpu_time_is_counted_from_its_first_reading(void **state)
{
    (void)state;
    char dir[] = "/tmp/cosched-accounting-XXXXXX", stat[64], usage[64];
    assert_non_null(mkdtemp(dir));
    snprintf(stat, sizeof stat, "%s/cpu.stat", dir);
    snprintf(usage, sizeof usage, "%s/cpuacct.usage", dir);
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    job_t *c = fixture_job(d, "c", ROLE_COTENANT, PLAN_L3, 1);
    c->external = true;
    c->has_slurm_cgroup = true;
    c->slurm_cpu_seen = -1;
    snprintf(c->slurm_cgroup.cgroup2, sizeof c->slurm_cgroup.cgroup2, "%s", dir);
    write_file(stat, "usage_usec 50000000\nuser_usec 40000000\nsystem_usec 10000000\n");
    accounting_tick(d, 10.0);
    assert_true(d->counters.cotenant_cpu_seconds == 0); /* 50 s before: not ours */
    write_file(stat, "usage_usec 52500000\nuser_usec 42000000\nsystem_usec 10500000\n");
    accounting_tick(d, 11.0);
    assert_true(d->counters.cotenant_cpu_seconds == 2.5);
    write_file(stat, "usage_usec 1000000\n"); /* a new cgroup of the same name: never backwards */
    accounting_tick(d, 12.0);
    write_file(stat, "usage_usec 2000000\n");
    accounting_tick(d, 13.0);
    assert_true(d->counters.cotenant_cpu_seconds == 3.5);
    /* cgroup v1: cpuacct.usage in nanoseconds, where Slurm keeps the job in cpu,cpuacct */
    c->slurm_cgroup.cgroup2[0] = '\0';
    snprintf(c->slurm_cgroup.cpu1, sizeof c->slurm_cgroup.cpu1, "%s", dir);
    c->slurm_cpu_seen = -1;
    write_file(usage, "7000000000\n");
    accounting_tick(d, 14.0);
    write_file(usage, "8500000000\n");
    accounting_tick(d, 15.0);
    assert_true(d->counters.cotenant_cpu_seconds == 5.0);
    unlink(stat);
    unlink(usage);
    rmdir(dir);
    fixture_daemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_step_above_baseline_beside_a_cotenant_is_lost_time),
        cmocka_unit_test(a_tick_credits_trainer_time_over_budget_and_without_source),
        cmocka_unit_test(a_cotenant_runs_group_cpu_time_is_counted_and_never_backwards),
        cmocka_unit_test(a_slurm_cotenants_cgroup_cpu_time_is_counted_from_its_first_reading),
        cmocka_unit_test(the_payload_of_8_trainers_and_64_cotenants),
    };
    return cmocka_run_group_tests_name("accounting", tests, NULL, NULL);
}
