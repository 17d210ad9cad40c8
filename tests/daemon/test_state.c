/* test_state: the state file — what a save writes, that a restore brings it all back (a closed
 * harvest gate too, kept even when the gate was turned off: it is given back), that a version 1 file is still read,
 * that a bad file is moved aside and a failed save keeps memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon_fixture.h"
#include "harvest_gate.h"
#include "jobs.h"
#include "runs.h"

static job_t *add_job(daemon_t *d, const char *id, job_role_t role, int cores)
{
    return fixture_job(d, id, role, PLAN_EXCLUSIVE, cores);
}

static void add_run(daemon_t *d, int id, const char *job, run_state_t state)
{
    run_t *r = calloc(1, sizeof *r);
    r->id = id;
    snprintf(r->job, sizeof r->job, "%s", job);
    r->pid = 999999;
    r->start_ticks = 42;
    r->argv = json_pack("[ss]", "sleep", "1");
    r->state = state;
    r->exit_code = state == RUN_EXITED ? 3 : 0;
    r->steps = 17;
    r->out_offset = 123;
    snprintf(r->out_path, sizeof r->out_path, "%s/runs/%d.out", d->cfg.state_dir, id);
    r->out_fd = r->pid_fd = r->out_wd = -1;
    r->next = d->runs;
    d->runs = r;
    d->next_run_id = id + 1;
}

static void a_restore_brings_back_jobs_settings_and_runs(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_t *t = add_job(d, "t", ROLE_TRAINER, 1);
    t->budget = 0.08;
    t->cpu_ranks = 2; /* as requested: kept for a later confine, whatever the ranks are */
    t->steps.explicit_baseline = 0.25;
    job_t *c = add_job(d, "c", ROLE_COTENANT, 3);
    c->share_override = 0.4;
    c->allowed = hwloc_bitmap_dup(c->cpus);
    hwloc_bitmap_set(c->allowed, 95); /* an allocation is kept whole, not as the ranks' union */
    c->external = true;
    snprintf(c->partition, sizeof c->partition, "batch");
    snprintf(c->slurm_cgroup.freezer1, sizeof c->slurm_cgroup.freezer1, "/sys/fs/cgroup/freezer/slurm/uid_0/job_c");
    c->has_slurm_cgroup = true;
    t->progress_requested = PROGRESS_GPU;
    t->steps_reported = true;
    add_run(d, 5, "c", RUN_EXITED);
    assert_int_equal(state_save(d), 0);
    assert_false(d->state_dirty);

    daemon_t *e = fixture_daemon("juwels-booster.xml");
    snprintf(e->cfg.state_dir, sizeof e->cfg.state_dir, "%s", d->cfg.state_dir);
    assert_int_equal(state_restore(e), 0);
    job_t *t2 = job_find(e, "t"), *c2 = job_find(e, "c");
    assert_non_null(t2);
    assert_non_null(c2);
    assert_int_equal(t2->nranks, 4);
    assert_int_equal(t2->ranks[1].numa, 1);
    assert_int_equal(t2->ranks[1].gpu, 1);
    assert_true(hwloc_bitmap_isequal(t2->cpus, t->cpus));
    assert_true(t2->budget == 0.08 && t2->guard.p.budget == 0.08);
    assert_int_equal(t2->cpu_ranks, 2);
    assert_true(t2->steps.explicit_baseline == 0.25);
    assert_true(c2->share_override == 0.4);
    assert_true(c2->allowed && hwloc_bitmap_isequal(c2->allowed, c->allowed));
    assert_true(c2->external && !t2->external && !t2->allowed);
    assert_int_equal(t2->progress_requested, PROGRESS_GPU);
    assert_true(t2->steps_reported && !t2->has_slurm_cgroup);
    assert_string_equal(c2->partition, "batch");
    assert_true(c2->has_slurm_cgroup);
    assert_string_equal(c2->slurm_cgroup.freezer1, "/sys/fs/cgroup/freezer/slurm/uid_0/job_c");
    assert_string_equal(c2->slurm_cgroup.cgroup2, "");
    assert_int_equal(c2->nranks, 3);
    run_t *r = run_find(e, 5);
    assert_non_null(r);
    assert_int_equal(r->state, RUN_EXITED);
    assert_int_equal(r->exit_code, 3);
    assert_int_equal((int)r->steps, 17);
    assert_int_equal((int)r->out_offset, 123);
    assert_int_equal(e->next_run_id, 6);
    snprintf(e->cfg.state_dir, sizeof e->cfg.state_dir, "%s", "/tmp/cosched-test-XXXXXX");
    assert_non_null(mkdtemp(e->cfg.state_dir));
    fixture_daemon_free(e);
    fixture_daemon_free(d);
}

static void write_file(const char *dir, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/state.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void a_closed_harvest_gate_is_kept_and_closed_again_after_a_restart(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("ci-2core-gpu.xml");
    snprintf(d->cfg.harvest_feature, sizeof d->cfg.harvest_feature, "harvest");
    harvest_gate_init(&d->gate);
    assert_int_equal(state_save(d), 0);
    state_clear(d);
    assert_int_equal(state_restore(d), 0);
    assert_int_equal(d->gate.state, GATE_OPEN); /* open: nothing saved, nothing restored */
    d->gate.state = GATE_CLOSED;
    d->gate.closed_at = d->gate.asserted_at = 100;
    snprintf(d->gate.trainers, sizeof d->gate.trainers, "71 72");
    snprintf(d->gate.feature, sizeof d->gate.feature, "harvest");
    snprintf(d->gate.node, sizeof d->gate.node, "cn1");
    assert_int_equal(state_save(d), 0);
    harvest_gate_init(&d->gate);
    state_clear(d);
    assert_int_equal(state_restore(d), 0);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(d->gate.trainers, "71 72");
    assert_string_equal(d->gate.node, "cn1");
    assert_true(d->gate.closed_at > 0);
    d->cfg.harvest_feature[0] = '\0'; /* the gate turned off meanwhile: still closed, to be given back */
    harvest_gate_init(&d->gate);
    state_clear(d);
    assert_int_equal(state_restore(d), 0);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(d->gate.feature, "harvest");
    fixture_daemon_free(d);
}

static void a_version_1_file_is_read_and_rewritten_in_the_current_schema(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    write_file(d->cfg.state_dir,
               "{\"version\":1,\"next_run_id\":3,\"jobs\":[{\"job\":\"101\",\"role\":\"trainer\",\"uid\":0,"
               "\"policy\":\"exclusive\",\"ranks\":[{\"rank\":0,\"gpu\":0,\"numa\":3,\"cpus\":[18,19,20],"
               "\"mems\":[3]}],\"ranks_per_gpu\":1,\"cores_per_rank\":3,\"cores\":1,\"registered\":1.5}],"
               "\"runs\":[]}");
    assert_int_equal(state_restore(d), 0);
    job_t *j = job_find(d, "101");
    assert_non_null(j);
    assert_int_equal(j->cores_per_rank, 3);
    assert_int_equal(j->cpu_ranks, 0); /* not in the file: on GPUs, as every job then was */
    assert_int_equal(hwloc_bitmap_weight(j->cpus), 3);
    assert_int_equal(d->next_run_id, 3);
    assert_true(d->state_dirty);
    fixture_daemon_free(d);
}

static void an_unusable_file_is_moved_aside_and_the_daemon_starts_empty(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"version\":1,\"jobs\":[",
        "{\"format\":\"coschedd-state\",\"version\":9,\"next_run_id\":1,\"jobs\":[],\"runs\":[]}",
        "{\"format\":\"coschedd-state\",\"version\":2,\"next_run_id\":1,\"jobs\":[{\"id\":\"x\"}],\"runs\":[]}",
        "{\"format\":\"coschedd-state\",\"version\":2,\"next_run_id\":1,\"jobs\":[{\"id\":\"x\",\"uid\":0,"
        "\"role\":\"trainer\",\"policy\":\"exclusive\",\"ranks\":[{\"cpus\":\"nonsense\",\"mems\":\"0\"}]}],"
        "\"runs\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        daemon_t *d = fixture_daemon("juwels-booster.xml");
        write_file(d->cfg.state_dir, bad[i]);
        assert_int_equal(state_restore(d), 0);
        assert_null(d->jobs);
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "ls %s/state.json.corrupt-* >/dev/null 2>&1", d->cfg.state_dir);
        if (system(cmd) != 0)
            fail_msg("file %zu was not moved aside", i);
        fixture_daemon_free(d);
    }
}

static void only_a_dirty_state_is_saved(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    state_save_if_dirty(d);
    assert_int_equal((int)d->state_saves_total, 0);
    add_job(d, "t", ROLE_TRAINER, 1);
    state_save_if_dirty(d);
    state_save_if_dirty(d);
    assert_int_equal((int)d->state_saves_total, 1);
    fixture_daemon_free(d);
}

static void a_failed_save_keeps_the_state_dirty_and_counts_the_error(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    add_job(d, "t", ROLE_TRAINER, 1);
    char dir[sizeof d->cfg.state_dir];
    memcpy(dir, d->cfg.state_dir, sizeof dir);
    /* A directory that is gone fails the save for root too (a read-only one would not). */
    snprintf(d->cfg.state_dir, sizeof d->cfg.state_dir, "%.4000s/gone", dir);
    assert_int_equal(state_save(d), -1);
    assert_true(d->state_dirty);
    assert_int_equal((int)d->state_save_errors_total, 1);
    assert_non_null(job_find(d, "t"));
    memcpy(d->cfg.state_dir, dir, sizeof dir);
    assert_int_equal(state_save(d), 0);
    assert_false(d->state_dirty);
    fixture_daemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_restore_brings_back_jobs_settings_and_runs),
        cmocka_unit_test(a_closed_harvest_gate_is_kept_and_closed_again_after_a_restart),
        cmocka_unit_test(a_version_1_file_is_read_and_rewritten_in_the_current_schema),
        cmocka_unit_test(an_unusable_file_is_moved_aside_and_the_daemon_starts_empty),
        cmocka_unit_test(only_a_dirty_state_is_saved),
        cmocka_unit_test(a_failed_save_keeps_the_state_dirty_and_counts_the_error),
    };
    return cmocka_run_group_tests_name("state", tests, NULL, NULL);
}
