/* test_lifecycle: the daemon's multi-step operations on the two-core node (a trainer on CPU 0, a
 * co-tenant on CPU 1, held by SIGSTOP) — what each changes, in which order (read from the log),
 * and that a refusal changes nothing. No socket, no daemon process, no timing assertion: waits
 * are bounded polls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "cotenants.h"
#include "daemon_fixture.h"
#include "lifecycle.h"
#include "process.h"
#include "runs.h"

static daemon_t *d;

static int setup(void **state)
{
    (void)state;
    d = fixture_daemon("ci-2core-gpu.xml");
    throttle_config_t cfg;
    throttle_config_defaults(&cfg);
    snprintf(cfg.subtree, sizeof cfg.subtree, "cosched-test-%d", (int)getpid());
    cfg.knobs_allowed = 1u << KNOB_SIGSTOP; /* works unprivileged, on this test's own children */
    d->throttle = throttle_detect(&cfg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (job_t *j = d->jobs; j; j = j->next)
        cotenant_release(d, j);
    for (run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING) {
            process_group_signal(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
    throttle_free(d->throttle);
    d->throttle = NULL;
    fixture_daemon_free(d);
    return 0;
}

static job_request_t request(const char *id, job_role_t role, int cores)
{
    return (job_request_t){.id = id,
                           .uid = geteuid(),
                           .role = role,
                           .policy = PLAN_L3,
                           .ranks_per_gpu = 1,
                           .cores_per_rank = 1,
                           .cores = cores};
}

static job_t *registered(const char *id, job_role_t role)
{
    job_request_t req = request(id, role, 1);
    job_t *j = NULL;
    bool existing = true;
    result_t r = lifecycle_job_register(d, &req, &j, &existing);
    if (r.code != RESULT_OK)
        fail_msg("registering %s failed: %s", id, r.message);
    assert_false(existing);
    return j;
}

/* A trainer whose guard has decided its co-tenants may use a quarter (attribution off: the same
 * share for every co-tenant). The shares follow at the next update. */
static job_t *guarding_trainer(void)
{
    job_t *t = registered("t", ROLE_TRAINER);
    t->guard.p.attribution = false;
    t->guard.share = 0.25;
    return t;
}

static run_t *started(job_t *j, const char *script)
{
    json_t *argv = json_pack("[sss]", "sh", "-c", script);
    run_t *r = NULL;
    result_t res = lifecycle_run_start(d, j, 0, argv, NULL, NULL, &r);
    json_decref(argv);
    if (res.code != RESULT_OK)
        fail_msg("lifecycle_run_start: %s", res.message);
    return r;
}

/* The pidfd says when; here the test asks until the run is reaped (a minute at most: valgrind). */
static void wait_ended(run_t *r)
{
    for (double end = clock_now_mono() + 60; r->state == RUN_RUNNING && clock_now_mono() < end;) {
        run_ended(d, r);
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    assert_int_not_equal(r->state, RUN_RUNNING);
}

/* Waits of a minute at most: until the run has written n lines; until a process is in a state
 * ('T': stopped). */
static void wait_lines(run_t *r, unsigned long n)
{
    for (double end = clock_now_mono() + 60; r->lines < n && clock_now_mono() < end;) {
        run_read_output(d, r);
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    assert_true(r->lines >= n);
}

static void wait_state(pid_t pid, char state)
{
    for (double end = clock_now_mono() + 60; process_state(pid) != state && clock_now_mono() < end;)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    assert_int_equal(process_state(pid), state);
}

/* What the daemon logs (stderr) between begin and end, to read the order of the steps from. */
static int saved_stderr = -1;
static FILE *captured;
static char logged[16384];

static void log_capture_begin(void)
{
    fflush(stderr);
    captured = tmpfile();
    assert_non_null(captured);
    saved_stderr = dup(2);
    dup2(fileno(captured), 2);
}

static const char *log_capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(captured);
    size_t n = fread(logged, 1, sizeof logged - 1, captured);
    logged[n] = '\0';
    fclose(captured);
    return logged;
}

/* Both lines logged, first before then. */
static void assert_logged_before(const char *log, const char *first, const char *then)
{
    const char *a = strstr(log, first), *b = strstr(log, then);
    if (!a || !b || a > b)
        fail_msg("expected '%s' logged before '%s' in:\n%s", first, then, log);
}

static void registering_a_trainer_chooses_where_its_progress_comes_from(void **state)
{
    (void)state;
    job_t *t = registered("t", ROLE_TRAINER);
    assert_int_not_equal(t->progress_source, PROGRESS_NSOURCES);
    assert_true(t->progress_reason[0] != '\0');
}

static void a_new_cotenant_starts_at_the_share_the_guards_allow(void **state)
{
    (void)state;
    guarding_trainer();
    job_t *c = registered("c", ROLE_COTENANT);
    assert_true(c->share == 0.25);
    assert_int_equal(c->nshare_changes, 1);
    assert_false(c->share_changes[0].by_operator);
    assert_true(d->guard_share == 0.25);
}

static void a_refused_registration_changes_nothing(void **state)
{
    (void)state;
    job_t *t = registered("t", ROLE_TRAINER);
    job_t *c = registered("c", ROLE_COTENANT);
    t->guard.p.attribution = false;
    t->guard.share = 0.25; /* an update would bring c down to it */
    d->state_dirty = false;
    job_request_t big = request("big", ROLE_COTENANT, 2); /* the node has two cores, both held */
    job_t *j = NULL;
    bool existing = false;
    result_t r = lifecycle_job_register(d, &big, &j, &existing);
    assert_int_not_equal(r.code, RESULT_OK);
    assert_true(r.message[0] != '\0');
    assert_null(job_find(d, "big"));
    assert_true(c->share == 1);
    assert_int_equal(c->nshare_changes, 0);
    assert_false(d->state_dirty);
}

/* A co-tenant paused by its knob, with a run that acts on SIGTERM (a trap): released, its knob
 * lets go before the job goes, so that the run gets to act on the SIGTERM it is sent. */
static void releasing_a_cotenant_lets_go_of_its_knob_stops_its_run_then_drops_the_job(void **state)
{
    (void)state;
    job_t *c = registered("c", ROLE_COTENANT);
    run_t *r = started(c, "trap 'exit 7' TERM; echo ready; sleep 300 & wait");
    assert_non_null(c->throttle);
    assert_ptr_equal(r->throttle, c->throttle);
    wait_lines(r, 1); /* the trap is set */
    assert_int_equal(lifecycle_guard_set(d, c, 0, 0).code, RESULT_OK);
    wait_state(r->pid, 'T');
    log_capture_begin();
    assert_true(lifecycle_job_release(d, "c"));
    const char *log = log_capture_end();
    assert_logged_before(log, "co-tenant c let go", "job c released");
    assert_null(job_find(d, "c"));
    assert_null(r->throttle);
    assert_true(r->stop_requested);
    wait_ended(r);
    assert_int_equal(r->state, RUN_EXITED);
    assert_int_equal(r->exit_code, 7);
    assert_true(d->state_dirty);
}

static void releasing_a_trainer_hands_its_cotenants_their_share_back(void **state)
{
    (void)state;
    guarding_trainer();
    job_t *c = registered("c", ROLE_COTENANT);
    assert_true(c->share == 0.25);
    log_capture_begin();
    assert_true(lifecycle_job_release(d, "t"));
    const char *log = log_capture_end();
    assert_logged_before(log, "job t released", "co-tenant c share 0.25 -> 1.00");
    assert_null(job_find(d, "t"));
    assert_true(c->share == 1);
    assert_true(d->guard_share == 1);
}

static void releasing_an_unknown_job_changes_nothing(void **state)
{
    (void)state;
    guarding_trainer();
    job_t *c = registered("c", ROLE_COTENANT);
    run_t *r = started(c, "exec sleep 300");
    d->state_dirty = false;
    assert_false(lifecycle_job_release(d, "nobody"));
    assert_non_null(job_find(d, "t"));
    assert_non_null(job_find(d, "c"));
    assert_non_null(c->throttle);
    assert_ptr_equal(r->throttle, c->throttle);
    assert_false(r->stop_requested);
    assert_true(c->share == 0.25);
    assert_false(d->state_dirty);
}

static void confining_plans_the_job_again_and_updates_the_shares(void **state)
{
    (void)state;
    registered("t", ROLE_TRAINER);
    job_t *c = registered("c", ROLE_COTENANT);
    job_t *t = job_find(d, "t");
    t->guard.p.attribution = false;
    t->guard.share = 0.25; /* not applied yet: the confinement's update does it */
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set(cpus, 1);
    job_t *out = NULL;
    result_t r = lifecycle_job_confine(d, c, cpus, 0, &out);
    assert_int_equal(r.code, RESULT_OK);
    assert_ptr_equal(out, c);
    assert_non_null(c->allowed);
    assert_true(hwloc_bitmap_isequal(c->allowed, cpus));
    assert_true(c->share == 0.25);
    assert_true(c->hold_error[0] == '\0'); /* no task given: nothing to look for */
    hwloc_bitmap_free(cpus);
}

/* Its task outside any cgroup Slurm made for job c: the job is planned again, and says why the
 * guard cannot hold it. */
static void an_external_cotenant_confined_from_outside_slurms_cgroups_says_why_it_is_not_held(void **state)
{
    (void)state;
    job_request_t req = request("c", ROLE_COTENANT, 1);
    req.external = true;
    job_t *c = NULL;
    bool existing;
    assert_int_equal(lifecycle_job_register(d, &req, &c, &existing).code, RESULT_OK);
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set(cpus, 1);
    result_t r = lifecycle_job_confine(d, c, cpus, getpid(), &c);
    hwloc_bitmap_free(cpus);
    assert_int_equal(r.code, RESULT_OK);
    assert_false(c->has_slurm_cgroup);
    assert_null(c->throttle);
    assert_non_null(strstr(c->hold_error, "not held: its cgroups cannot be found"));
}

static void a_refused_confinement_leaves_the_job_and_the_shares_as_they_were(void **state)
{
    (void)state;
    registered("t", ROLE_TRAINER);
    job_t *c = registered("c", ROLE_COTENANT);
    job_t *t = job_find(d, "t");
    t->guard.p.attribution = false;
    t->guard.share = 0.25;
    assert_non_null(cotenant_group(d, c)); /* processes the guard holds: c cannot move */
    d->state_dirty = false;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), before = hwloc_bitmap_dup(c->cpus);
    hwloc_bitmap_set(cpus, 1);
    job_t *out = NULL;
    result_t r = lifecycle_job_confine(d, c, cpus, getpid(), &out);
    assert_int_equal(r.code, RESULT_BUSY);
    assert_non_null(strstr(r.message, "job c has processes the guard holds"));
    assert_null(c->allowed);
    assert_true(hwloc_bitmap_isequal(c->cpus, before));
    assert_true(c->share == 1);
    assert_true(c->hold_error[0] == '\0');
    assert_false(d->state_dirty);
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(before);
}

static void a_cotenants_run_starts_inside_its_throttle_group(void **state)
{
    (void)state;
    job_t *c = registered("c", ROLE_COTENANT);
    assert_null(c->throttle); /* made with the first process it holds */
    run_t *r = started(c, "exec sleep 300");
    assert_non_null(c->throttle);
    assert_ptr_equal(r->throttle, c->throttle);
    assert_ptr_equal(d->runs, r);
}

static void starting_a_run_refuses_a_rank_the_job_lacks_and_a_cotenant_slurm_holds(void **state)
{
    (void)state;
    job_t *c = registered("c", ROLE_COTENANT);
    json_t *argv = json_pack("[s]", "true");
    run_t *r = NULL;
    result_t res = lifecycle_run_start(d, c, 1, argv, NULL, NULL, &r);
    assert_int_equal(res.code, RESULT_INVALID);
    assert_string_equal(res.message, "job c has ranks 0-0, not 1");
    c->external = c->has_slurm_cgroup = true;
    res = lifecycle_run_start(d, c, 0, argv, NULL, NULL, &r);
    assert_int_equal(res.code, RESULT_INVALID);
    assert_non_null(strstr(res.message, "job c is held in the cgroups Slurm made for it"));
    assert_null(r);
    assert_null(d->runs);
    assert_null(c->throttle);
    assert_int_equal(d->next_run_id, 1);
    json_decref(argv);
}

static void pinning_a_share_applies_it_now_and_handing_it_back_follows_the_guard(void **state)
{
    (void)state;
    guarding_trainer();
    job_t *c = registered("c", ROLE_COTENANT);
    d->state_dirty = false;
    log_capture_begin();
    result_t r = lifecycle_guard_set(d, c, 0.5, 4242);
    const char *log = log_capture_end();
    assert_int_equal(r.code, RESULT_OK);
    assert_logged_before(log, "co-tenant c: share pinned by uid 4242", "co-tenant c share 0.25 -> 0.50");
    assert_true(c->share_override == 0.5);
    assert_true(c->share == 0.5);
    assert_true(c->share_changes[c->nshare_changes - 1].by_operator);
    assert_true(d->state_dirty);
    assert_int_equal(lifecycle_guard_set(d, c, -1, 4242).code, RESULT_OK);
    assert_true(c->share_override < 0);
    assert_true(c->share == 0.25);
    assert_false(c->share_changes[c->nshare_changes - 1].by_operator);
}

static void a_trainer_has_no_share_to_pin(void **state)
{
    (void)state;
    job_t *t = registered("t", ROLE_TRAINER);
    d->state_dirty = false;
    result_t r = lifecycle_guard_set(d, t, 0.5, 0);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_string_equal(r.message, "job t is a trainer: only co-tenants have a share");
    assert_true(t->share_override < 0);
    assert_false(d->state_dirty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(registering_a_trainer_chooses_where_its_progress_comes_from, setup, teardown),
        cmocka_unit_test_setup_teardown(a_new_cotenant_starts_at_the_share_the_guards_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_registration_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(releasing_a_cotenant_lets_go_of_its_knob_stops_its_run_then_drops_the_job,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(releasing_a_trainer_hands_its_cotenants_their_share_back, setup, teardown),
        cmocka_unit_test_setup_teardown(releasing_an_unknown_job_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(confining_plans_the_job_again_and_updates_the_shares, setup, teardown),
        cmocka_unit_test_setup_teardown(
            an_external_cotenant_confined_from_outside_slurms_cgroups_says_why_it_is_not_held, setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_confinement_leaves_the_job_and_the_shares_as_they_were, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_cotenants_run_starts_inside_its_throttle_group, setup, teardown),
        cmocka_unit_test_setup_teardown(starting_a_run_refuses_a_rank_the_job_lacks_and_a_cotenant_slurm_holds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(pinning_a_share_applies_it_now_and_handing_it_back_follows_the_guard, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_trainer_has_no_share_to_pin, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
