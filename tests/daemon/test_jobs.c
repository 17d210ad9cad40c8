/* test_jobs: the job registry on the JUWELS Booster node — registration, retries, refusals that
 * say who is in the way, release, budgets — without a socket or a daemon process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon_fixture.h"
#include "jobs.h"

static job_request_t trainer(const char *id)
{
    return (job_request_t){.id = id, .uid = 1000, .role = ROLE_TRAINER, .ranks_per_gpu = 1, .cores = 1};
}

static job_request_t cotenant(const char *id, int cores)
{
    return (job_request_t){.id = id, .uid = 1001, .role = ROLE_COTENANT, .ranks_per_gpu = 1, .cores = cores};
}

static job_t *registered(daemon_t *d, const job_request_t *req)
{
    job_t *j = NULL;
    bool existing = true;
    result_t r = job_register(d, req, &j, &existing);
    if (r.code != RESULT_OK)
        fail_msg("registering %s failed: %s", req->id, r.message);
    assert_false(existing);
    return j;
}

static void a_trainer_gets_one_rank_per_gpu_on_the_gpus_domains(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = trainer("4711");
    job_t *j = registered(d, &req);
    static const unsigned numa[] = {3, 1, 7, 5};
    assert_int_equal(j->nranks, 4);
    for (int r = 0; r < 4; r++)
        assert_int_equal(j->ranks[r].numa, numa[r]);
    assert_true(d->state_dirty);
    assert_ptr_equal(job_find(d, "4711"), j);
    fixture_daemon_free(d);
}

/* A CPU trainer (cpu_ranks) uses no GPU: it is not in a GPU trainer's way, nor one in its way. */
static void a_cpu_trainer_takes_the_first_free_domain_and_no_gpu(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t gpu = trainer("gpu");
    registered(d, &gpu);
    job_request_t cpu = trainer("cpu");
    cpu.cpu_ranks = 2;
    job_t *j = registered(d, &cpu);
    assert_int_equal(j->nranks, 2);
    assert_int_equal(j->cpu_ranks, 2);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(j->ranks[r].gpu, -1);
        assert_int_equal(j->ranks[r].numa, 0); /* the GPU trainer holds 3, 1, 7, 5: 0 is the first free */
    }
    job_request_t again = trainer("cpu2");
    again.cpu_ranks = 1;
    registered(d, &again); /* no GPU to be busy */
    fixture_daemon_free(d);
}

static void registering_again_returns_the_same_job_or_says_who_holds_it(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = trainer("4711");
    job_t *first = registered(d, &req), *again = NULL;
    bool existing = false;
    assert_int_equal(job_register(d, &req, &again, &existing).code, RESULT_OK);
    assert_true(existing);
    assert_ptr_equal(again, first);
    req.uid = 2000;
    result_t r = job_register(d, &req, &again, &existing);
    assert_int_equal(r.code, RESULT_BUSY);
    assert_non_null(strstr(r.message, "already registered for uid 1000 as trainer"));
    fixture_daemon_free(d);
}

static void a_second_trainer_on_a_used_gpu_is_busy(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = trainer("1");
    registered(d, &req);
    job_request_t other = trainer("2");
    job_t *j;
    bool existing;
    result_t r = job_register(d, &other, &j, &existing);
    assert_int_equal(r.code, RESULT_BUSY);
    assert_string_equal(r.message, "GPU 0 is already used by job 1");
    assert_null(j);
    fixture_daemon_free(d);
}

static void cotenants_go_to_the_other_domains_and_never_fitting_is_invalid(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t t = trainer("t"), c = cotenant("c", 24), huge = cotenant("huge", 100), more = cotenant("more", 1);
    registered(d, &t);
    job_t *j = registered(d, &c);
    for (int r = 0; r < j->nranks; r++)
        assert_int_equal(j->ranks[r].numa % 2, 0);
    assert_true(j->share == 1);
    assert_true(j->share_override < 0);
    job_t *none;
    bool existing;
    result_t r = job_register(d, &huge, &none, &existing);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_non_null(strstr(r.message, "job huge cannot be placed on this node"));
    r = job_register(d, &more, &none, &existing);
    assert_int_equal(r.code, RESULT_BUSY);
    assert_non_null(strstr(r.message, "does not fit beside the registered jobs"));
    fixture_daemon_free(d);
}

static void release_frees_the_cores_and_is_false_for_unknown_jobs(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t t = trainer("t");
    registered(d, &t);
    d->state_dirty = false;
    assert_true(job_release(d, "t"));
    assert_true(d->state_dirty);
    assert_null(job_find(d, "t"));
    assert_false(job_release(d, "t"));
    registered(d, &t); /* its GPUs are free again */
    fixture_daemon_free(d);
}

static void a_trainer_budget_overrides_the_configured_one(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    d->cfg.slowdown_budget = 0.05;
    job_request_t t = trainer("t");
    t.budget = 0.1;
    job_t *j = registered(d, &t);
    assert_true(job_budget(d, j) == 0.1);
    assert_true(j->guard.p.budget == 0.1);
    job_release(d, "t");
    t.budget = 0;
    j = registered(d, &t);
    assert_true(job_budget(d, j) == 0.05);
    fixture_daemon_free(d);
}

/* The H100 node of the guard issue: one NUMA domain, one L3. Placement can keep only cores apart,
 * in whichever order the jobs come. */
static void on_a_one_domain_node_jobs_share_it_core_by_core_in_either_order(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("h100-1numa.xml");
    job_request_t t = trainer("t"), c = cotenant("c", 8);
    job_t *tj = registered(d, &t), *cj = registered(d, &c);
    assert_int_equal(hwloc_bitmap_weight(tj->cpus), 8);
    assert_int_equal(tj->isolation, PLAN_ISOLATE_CORES);
    assert_int_equal(cj->isolation, PLAN_ISOLATE_CORES);
    assert_false(hwloc_bitmap_intersects(tj->cpus, cj->cpus));
    fixture_daemon_free(d);

    d = fixture_daemon("h100-1numa.xml");
    cj = registered(d, &c);
    tj = registered(d, &t); /* a co-tenant that came first does not lock the trainer out */
    assert_int_equal(tj->isolation, PLAN_ISOLATE_CORES);
    assert_false(hwloc_bitmap_intersects(tj->cpus, cj->cpus));
    assert_int_equal(tj->ranks[0].gpu, 0);
    fixture_daemon_free(d);
}

static void ids_and_roles_are_checked(void **state)
{
    (void)state;
    assert_true(job_id_valid("4711.batch-1_x"));
    assert_false(job_id_valid(""));
    assert_false(job_id_valid("a b"));
    assert_false(job_id_valid("../x/"));
    char long_id[80];
    memset(long_id, 'a', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    assert_false(job_id_valid(long_id));
    job_role_t role;
    assert_int_equal(job_role_parse("cotenant", &role), 0);
    assert_int_equal(role, ROLE_COTENANT);
    assert_int_equal(job_role_parse("noise", &role), -1);
    assert_string_equal(job_role_name(ROLE_TRAINER), "trainer");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_trainer_gets_one_rank_per_gpu_on_the_gpus_domains),
        cmocka_unit_test(a_cpu_trainer_takes_the_first_free_domain_and_no_gpu),
        cmocka_unit_test(registering_again_returns_the_same_job_or_says_who_holds_it),
        cmocka_unit_test(a_second_trainer_on_a_used_gpu_is_busy),
        cmocka_unit_test(cotenants_go_to_the_other_domains_and_never_fitting_is_invalid),
        cmocka_unit_test(release_frees_the_cores_and_is_false_for_unknown_jobs),
        cmocka_unit_test(a_trainer_budget_overrides_the_configured_one),
        cmocka_unit_test(on_a_one_domain_node_jobs_share_it_core_by_core_in_either_order),
        cmocka_unit_test(ids_and_roles_are_checked),
    };
    return cmocka_run_group_tests_name("jobs", tests, NULL, NULL);
}
