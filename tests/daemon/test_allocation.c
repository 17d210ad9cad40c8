/* test_allocation: jobs registered within a batch system's allocation (job register --cpus) on
 * the JUWELS Booster node — planned inside it, GPU-local first, held whole, refused when it
 * cannot hold them — how exposed a co-tenant is to the trainers where it was put, and external
 * co-tenants counting as at work from registration to release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cotenants.h"
#include "cpulist.h"
#include "daemon_fixture.h"
#include "cotenant_exposure.h"
#include "jobs.h"
#include "stats.h"
#include "task_env.h"

/* A request within cpus (a cpulist); the bitmap lives until the test's daemon is freed. */
static hwloc_bitmap_t lists[32];
static int nlists;

static hwloc_const_bitmap_t cpus(const char *list)
{
    char err[128];
    hwloc_bitmap_t set = cpulist_parse(list, 0, err, sizeof err);
    assert_non_null(set);
    assert_true(nlists < (int)(sizeof lists / sizeof lists[0]));
    lists[nlists++] = set;
    return set;
}

static void free_lists(void)
{
    while (nlists > 0)
        hwloc_bitmap_free(lists[--nlists]);
}

static job_request_t request(const char *id, job_role_t role, const char *gpus, const char *within)
{
    return (job_request_t){.id = id,
                           .uid = 1000,
                           .role = role,
                           .ranks_per_gpu = 1,
                           .gpus = gpus ? cpus(gpus) : NULL,
                           .cpus = within ? cpus(within) : NULL,
                           .external = true};
}

static result_t try_register(daemon_t *d, const job_request_t *req, job_t **j)
{
    bool existing;
    return job_register(d, req, j, &existing);
}

static job_t *registered(daemon_t *d, const job_request_t *req)
{
    job_t *j = NULL;
    result_t r = try_register(d, req, &j);
    if (r.code != RESULT_OK)
        fail_msg("registering %s failed: %s", req->id, r.message);
    return j;
}

static void assert_cpus(hwloc_const_bitmap_t set, const char *want)
{
    char *got = cpulist_format(set);
    assert_string_equal(got, want);
    free(got);
}

static void a_trainer_takes_the_gpu_local_cpus_of_its_allocation(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = request("t", ROLE_TRAINER, "0", "0-5,18-23"); /* GPU 0 is on NUMA 3: 18-23 */
    job_t *j = registered(d, &req);
    assert_int_equal(j->nranks, 1);
    assert_int_equal(j->ranks[0].numa, 3);
    assert_true(hwloc_bitmap_isincluded(j->ranks[0].cpus, j->allowed));
    assert_cpus(j->ranks[0].cpus, "18-23");
    assert_cpus(j->allowed, "0-5,18-23");
    assert_null(j->warnings);
    fixture_daemon_free(d);
    free_lists();
}

static void a_trainer_whose_allocation_misses_its_gpus_domain_runs_away_from_it_with_a_warning(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = request("t", ROLE_TRAINER, "1", "40-41"); /* GPU 1 is on NUMA 1; 40-41 on 6 */
    job_t *j = registered(d, &req);
    assert_int_equal(j->ranks[0].numa, 6);
    assert_cpus(j->ranks[0].cpus, "40-41");
    assert_non_null(j->warnings);
    assert_non_null(strstr(json_string_value(json_array_get(j->warnings, 0)), "away from the GPU"));
    fixture_daemon_free(d);
    free_lists();
}

static void an_allocation_that_cannot_hold_the_request_is_invalid(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = request("t", ROLE_TRAINER, "0", "18-19");
    req.cores_per_rank = 4;
    job_t *j = NULL;
    result_t r = try_register(d, &req, &j);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_non_null(strstr(r.message, "within its CPUs 18-19"));
    assert_null(j);
    job_request_t off = request("c", ROLE_COTENANT, NULL, "200-300");
    r = try_register(d, &off, &j);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_non_null(strstr(r.message, "include 200-300, which this node does not have"));
    job_request_t part = request("p", ROLE_COTENANT, NULL, "94-97"); /* the node has 0-95 */
    r = try_register(d, &part, &j);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_non_null(strstr(r.message, "include 96-97, which this node does not have"));
    assert_null(d->jobs);
    fixture_daemon_free(d);
    free_lists();
}

static void a_cotenant_gets_every_core_of_its_allocation_which_it_holds_whole(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t req = request("c", ROLE_COTENANT, NULL, "12-17");
    job_t *c = registered(d, &req);
    assert_int_equal(c->nranks, 6);
    assert_cpus(c->cpus, "12-17");
    job_request_t two = request("c2", ROLE_COTENANT, NULL, "24-29");
    two.cores = 2;
    job_t *c2 = registered(d, &two);
    assert_int_equal(c2->nranks, 2);
    /* its four unused cores are still its own: a later job is planned elsewhere */
    job_request_t later = request("c3", ROLE_COTENANT, NULL, NULL);
    later.cores = 30;
    job_t *c3 = registered(d, &later);
    assert_false(hwloc_bitmap_intersects(c3->cpus, job_held_cpus(c2)));
    assert_false(hwloc_bitmap_intersects(c3->cpus, job_held_cpus(c)));
    fixture_daemon_free(d);
    free_lists();
}

/* Slurm's order: co-tenants first, then a trainer whose allocation Slurm put next to them. */
static void exposure_names_the_cpus_next_to_a_trainer_by_level(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t apart = request("apart", ROLE_COTENANT, NULL, "0-5");
    job_request_t domain = request("domain", ROLE_COTENANT, NULL, "21-23");
    job_request_t sibling = request("sibling", ROLE_COTENANT, NULL, "66");
    struct {
        job_request_t *req;
        plan_isolation_t level;
        const char *numa, *l3, *core;
    } cases[] = {
        {&apart, PLAN_ISOLATE_NUMA, "", "", ""},
        {&domain, PLAN_ISOLATE_L3, "21-23", "", ""},
        {&sibling, PLAN_ISOLATE_NONE, "66", "66", "66"}, /* 66 is 18's SMT sibling */
    };
    job_t *c[3];
    for (size_t i = 0; i < 3; i++)
        c[i] = registered(d, cases[i].req);
    job_request_t t = request("t", ROLE_TRAINER, "0", "18-20");
    job_t *trainer = registered(d, &t);
    assert_cpus(trainer->cpus, "18-20");
    assert_int_equal(trainer->isolation, PLAN_ISOLATE_CORES); /* fell back from exclusive */
    for (size_t i = 0; i < 3; i++) {
        cotenant_exposure_t e = cotenant_exposure_of(d, c[i]);
        assert_int_equal(e.isolation, cases[i].level);
        assert_cpus(e.numa, cases[i].numa);
        assert_cpus(e.l3, cases[i].l3);
        assert_cpus(e.core, cases[i].core);
        cotenant_exposure_free(&e);
    }
    fixture_daemon_free(d);
    free_lists();
}

static void an_external_cotenant_is_at_work_until_release_and_no_knob_holds_it(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t quiet = request("daemon-run", ROLE_COTENANT, NULL, NULL);
    quiet.external = false;
    job_t *q = registered(d, &quiet);
    cotenant_activity_t a = cotenants_activity(d);
    assert_false(a.any);
    assert_false(cotenant_active(d, q)); /* no run of it alive */
    job_request_t slurm = request("slurm", ROLE_COTENANT, NULL, "0-5");
    job_t *s = registered(d, &slurm);
    assert_true(cotenant_active(d, s));
    a = cotenants_activity(d);
    assert_true(a.any && a.unheld && !a.guarded);
    assert_true(job_release(d, "slurm"));
    a = cotenants_activity(d);
    assert_false(a.any);
    fixture_daemon_free(d);
    free_lists();
}

/* Slurm made the cpusets after the prologs, the other way round from cosched's first plans. */
static void jobs_confined_to_their_allocations_swap_cores_with_provisional_plans(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t t = request("t", ROLE_TRAINER, "0", NULL), c = request("c", ROLE_COTENANT, NULL, NULL);
    t.cores_per_rank = 3;
    c.cores = 3;
    c.policy = PLAN_CORES;
    job_t *trainer = registered(d, &t), *cotenant = registered(d, &c);
    assert_cpus(trainer->cpus, "18-20");
    job_t *j = NULL;
    assert_int_equal(job_confine(d, trainer, cpus("21-23"), &j).code, RESULT_OK);
    assert_cpus(j->cpus, "21-23");
    assert_cpus(j->allowed, "21-23");
    assert_int_equal(job_confine(d, cotenant, cpus("18-20"), &j).code, RESULT_OK);
    assert_cpus(j->cpus, "18-20");
    job_t *again = NULL;
    assert_int_equal(job_confine(d, j, cpus("18-20"), &again).code, RESULT_OK);
    assert_ptr_equal(again, j); /* the same allocation again changes nothing */
    job_request_t late = request("late", ROLE_COTENANT, NULL, NULL);
    job_t *l = registered(d, &late);
    char *before = cpulist_format(l->cpus);
    assert_int_equal(job_confine(d, l, cpus("20"), &j).code, RESULT_BUSY); /* 20 is c's, confined */
    assert_ptr_equal(job_find(d, "late"), l);                              /* kept as it was */
    assert_cpus(l->cpus, before);
    assert_null(l->allowed);
    free(before);
    fixture_daemon_free(d);
    free_lists();
}

static void confining_keeps_a_jobs_progress_and_never_widens_its_allocation(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t t = request("t", ROLE_TRAINER, "0", NULL), c = request("c", ROLE_COTENANT, NULL, "0-5");
    job_t *trainer = registered(d, &t), *cotenant = registered(d, &c),
          *other = registered(d, &(job_request_t){.id = "o",
                                                  .uid = 1000,
                                                  .role = ROLE_COTENANT,
                                                  .ranks_per_gpu = 1,
                                                  .cores = 1});
    for (int i = 0; i < 5; i++)
        stats_add(&trainer->steps, 0.1, false);
    trainer->share_override = 0.5;
    job_t *j = NULL;
    assert_int_equal(job_confine(d, trainer, cpus("18-23"), &j).code, RESULT_OK);
    assert_ptr_equal(j, trainer); /* the same job, planned again */
    assert_int_equal(j->steps.steps_total, 5);
    assert_true(j->share_override == 0.5);
    assert_ptr_equal(job_find(d, "o"), other); /* the list holds every job once */
    int n = 0;
    for (job_t *k = d->jobs; k; k = k->next)
        n++;
    assert_int_equal(n, 3);
    result_t r = job_confine(d, cotenant, cpus("0-11"), &j);
    assert_int_equal(r.code, RESULT_INVALID);
    assert_non_null(strstr(r.message, "registered within CPUs 0-5; its cgroup's CPUs 0-11 go beyond them"));
    assert_cpus(cotenant->allowed, "0-5");
    assert_int_equal(job_confine(d, cotenant, cpus("0-2"), &j).code, RESULT_OK); /* narrower: fine */
    assert_cpus(j->allowed, "0-2");
    fixture_daemon_free(d);
    free_lists();
}

static void a_job_with_runs_bound_to_its_plan_is_not_planned_again(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t c = request("c", ROLE_COTENANT, NULL, NULL);
    job_t *cotenant = registered(d, &c), *j = NULL;
    run_t run = {.state = RUN_RUNNING, .job = "c"};
    d->runs = &run;
    result_t r = job_confine(d, cotenant, cpus("30-31"), &j);
    d->runs = NULL;
    assert_int_equal(r.code, RESULT_BUSY);
    assert_non_null(strstr(r.message, "runs bound to its plan"));
    assert_null(cotenant->allowed);
    fixture_daemon_free(d);
    free_lists();
}

static void a_task_env_gives_openmp_its_cpus_and_cuda_its_gpu(void **state)
{
    (void)state;
    daemon_t *d = fixture_daemon("juwels-booster.xml");
    job_request_t t = request("t", ROLE_TRAINER, "3", "30-32");
    job_t *j = registered(d, &t);
    json_t *env = task_env(d->topo, &j->ranks[0], true);
    assert_string_equal(json_string_value(json_object_get(env, "COSCHED_CPUS")), "30-32");
    assert_string_equal(json_string_value(json_object_get(env, "OMP_NUM_THREADS")), "3");
    assert_string_equal(json_string_value(json_object_get(env, "OMP_PLACES")), "{30},{31},{32}");
    assert_string_equal(json_string_value(json_object_get(env, "OMP_PROC_BIND")), "close");
    assert_string_equal(json_string_value(json_object_get(env, "CUDA_VISIBLE_DEVICES")), "3");
    assert_string_equal(json_string_value(json_object_get(env, "CUDA_DEVICE_ORDER")), "PCI_BUS_ID");
    json_decref(env);
    env = task_env(d->topo, &j->ranks[0], false);
    assert_null(json_object_get(env, "OMP_NUM_THREADS"));
    json_decref(env);
    fixture_daemon_free(d);
    free_lists();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_trainer_takes_the_gpu_local_cpus_of_its_allocation),
        cmocka_unit_test(a_trainer_whose_allocation_misses_its_gpus_domain_runs_away_from_it_with_a_warning),
        cmocka_unit_test(an_allocation_that_cannot_hold_the_request_is_invalid),
        cmocka_unit_test(a_cotenant_gets_every_core_of_its_allocation_which_it_holds_whole),
        cmocka_unit_test(exposure_names_the_cpus_next_to_a_trainer_by_level),
        cmocka_unit_test(an_external_cotenant_is_at_work_until_release_and_no_knob_holds_it),
        cmocka_unit_test(a_task_env_gives_openmp_its_cpus_and_cuda_its_gpu),
        cmocka_unit_test(jobs_confined_to_their_allocations_swap_cores_with_provisional_plans),
        cmocka_unit_test(confining_keeps_a_jobs_progress_and_never_widens_its_allocation),
        cmocka_unit_test(a_job_with_runs_bound_to_its_plan_is_not_planned_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
