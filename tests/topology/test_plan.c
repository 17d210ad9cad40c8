/* test_plan: the placement planner on the JUWELS Booster node (the study's two mappings), on
 * every real machine's file, and on many generated topologies, checked against the invariants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "fixtures.h"
#include "plan.h"
#include "plan_check.h"

static plan_t *plan_ok(const topo_t *t, const plan_request_t *req)
{
    char err[512];
    plan_t *plan = plan_compute(t, req, err, sizeof err);
    if (!plan)
        fail_msg("plan on %s failed: %s", t->source, err);
    const char *bad = plan_check(t, req, plan);
    if (bad)
        fail_msg("plan on %s (policy %s): %s", t->source, plan_policy_name(req->policy), bad);
    return plan;
}

/* The request fails and the reason contains `expected`. */
static void plan_refused(const topo_t *t, const plan_request_t *req, const char *expected)
{
    char err[512];
    plan_t *plan = plan_compute(t, req, err, sizeof err);
    if (plan) {
        plan_free(plan);
        fail_msg("expected a refusal containing '%s', got a plan", expected);
    }
    if (!strstr(err, expected))
        fail_msg("refusal '%s' does not mention '%s'", err, expected);
}

static void assert_cpus(hwloc_const_bitmap_t set, const char *expected)
{
    char *got = cpulist_format(set);
    if (strcmp(got, expected) != 0)
        fail_msg("expected CPUs %s, got %s", expected, got);
    free(got);
}

static void juwels_exclusive_puts_gpu_ranks_on_numa_3_1_7_5_and_noise_on_the_others(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    static const unsigned numa[] = {3, 1, 7, 5};
    static const char *const cpus[] = {"18-23", "6-11", "42-47", "30-35"};
    assert_int_equal(plan->ntrainer, 4);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(plan->trainer[r].gpu, r);
        assert_int_equal(plan->trainer[r].numa, numa[r]);
        assert_cpus(plan->trainer[r].cpus, cpus[r]);
    }
    assert_int_equal(plan->nnoise, 24);
    hwloc_bitmap_t noise = hwloc_bitmap_alloc();
    for (int r = 0; r < plan->nnoise; r++)
        hwloc_bitmap_or(noise, noise, plan->noise[r].cpus);
    assert_cpus(noise, "0-5,12-17,24-29,36-41");
    hwloc_bitmap_free(noise);

    char *spec = plan_srun_cpu_bind(plan->trainer, plan->ntrainer);
    assert_string_equal(spec, "--cpu-bind=mask_cpu:0xfc0000,0xfc0,0xfc0000000000,0xfc0000000");
    free(spec);
    spec = plan_srun_cpu_bind(plan->noise, plan->nnoise);
    assert_string_equal(spec, "--cpu-bind=map_cpu:0,1,2,3,4,5,12,13,14,15,16,17,24,25,26,27,28,29,36,37,38,39,40,41");
    free(spec);
    assert_int_equal(plan->nwarnings, 0);
    plan_free(plan);
    topo_free(t);
}

static void juwels_shared_gives_each_job_three_of_six_cores_in_every_domain(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.policy = PLAN_SHARED;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 4);
    assert_int_equal(plan->nnoise, 24);
    /* Half of each rank's threads sit next to its GPU, half on a neighbour domain of the same socket. */
    assert_cpus(plan->trainer[0].cpus, "12-14,18-20");
    assert_cpus(plan->trainer[0].mems, "2-3");
    assert_int_equal(plan->trainer[0].numa, 3);
    assert_cpus(plan->trainer[1].cpus, "0-2,6-8");
    assert_cpus(plan->trainer[2].cpus, "36-38,42-44");
    assert_cpus(plan->trainer[3].cpus, "24-26,30-32");
    for (int d = 0; d < 8; d++) {
        int n = 0;
        for (int r = 0; r < plan->nnoise; r++)
            n += plan->noise[r].numa == (unsigned)d;
        assert_int_equal(n, 3);
    }
    plan_free(plan);
    topo_free(t);
}

static int has_warning(const plan_t *plan, const char *text);

/* Two sockets, one domain each, GPUs 0-2 on socket 0 and GPU 3 on socket 1 (the oracle, worked
 * by hand): each domain's trainer half is 8 cores; socket 0's half split over its 3 ranks gives 2
 * each, so every rank gets 2 cores, GPU-domain cores in hwloc order: 0-1, 2-3, 4-5 on numa 0 and
 * 16-17 on numa 1, memory only there. Noise takes the other halves, 8-15 and 24-31; 6-7 and
 * 18-23 stay idle. One L3 per socket: isolation cores. Before, ranks 1 and 2 took 2 cores of
 * socket 1 each (numa 1, rank 3's home) and bound memory to 0-1. */
static void shared_keeps_every_rank_on_its_gpus_package_with_gpus_3_plus_1(void **state)
{
    (void)state;
    topo_t *t = fixture_load("2socket-3plus1.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.policy = PLAN_SHARED;
    plan_t *plan = plan_ok(t, &req);
    static const char *const cpus[] = {"0-1", "2-3", "4-5", "16-17"};
    static const char *const mems[] = {"0", "0", "0", "1"};
    assert_int_equal(plan->ntrainer, 4);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(plan->trainer[r].gpu, r);
        assert_int_equal(plan->trainer[r].numa, r < 3 ? 0 : 1);
        assert_cpus(plan->trainer[r].cpus, cpus[r]);
        assert_cpus(plan->trainer[r].mems, mems[r]);
    }
    hwloc_bitmap_t noise = hwloc_bitmap_alloc();
    for (int r = 0; r < plan->nnoise; r++)
        hwloc_bitmap_or(noise, noise, plan->noise[r].cpus);
    assert_int_equal(plan->nnoise, 16);
    assert_cpus(noise, "8-15,24-31");
    hwloc_bitmap_free(noise);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    assert_int_equal(plan->nwarnings, 0);
    plan_free(plan);

    /* Asked for more than socket 0's half holds, ranks spill to socket 1, same package first
     * (rank 0 takes what rounding left at home), and the plan says so with the size that fits. */
    req.cores_per_rank = 4;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "0-1,6-7");
    assert_cpus(plan->trainer[1].mems, "0-1");
    assert_true(has_warning(plan, "trainer rank 1 (GPU 1) also runs on numa 1, in another package than its GPU"));
    assert_true(has_warning(plan, "--cores-per-rank 2 keeps every rank on its GPU's package"));
    plan_free(plan);

    /* Three ranks per GPU: socket 0's 8 trainer-half cores cannot hold its 9 ranks even at one
     * core each; the ninth spills, said so without a size that would not help. */
    req.cores_per_rank = 0;
    req.ranks_per_gpu = 3;
    plan = plan_ok(t, &req);
    assert_int_equal(hwloc_bitmap_weight(plan->trainer[0].cpus), 1);
    assert_true(has_warning(plan, "trainer rank 8 (GPU 2) also runs on numa 1, in another package than its GPU: "
                                  "package 0's trainer half is too small for its ranks; it has fewer trainer-half "
                                  "cores than ranks"));
    plan_free(plan);
    req.ranks_per_gpu = 6; /* 24 ranks, 16 trainer-half cores: refused, in the singular */
    plan_refused(t, &req, "cannot give 1 core to each of 24 trainer ranks");
    topo_free(t);
}

/* shared claims what holds between its halves: l3 when the trainer's half is whole L3s. */
static void shared_claims_l3_when_its_halves_fall_on_whole_l3s(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("numa:1 l3:2 core:4 pu:1");
    plan_request_t req;
    plan_request_init(&req);
    req.policy = PLAN_SHARED;
    req.cpu_ranks = 1;
    plan_t *plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "0-3");
    assert_int_equal(plan->nnoise, 4);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_L3);
    plan_free(plan);
    topo_free(t);
}

static void l3_policy_lets_noise_use_the_free_l3_of_trainer_domains(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.cores_per_rank = 3;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 24); /* exclusive: trainer domains stay free of noise */
    plan_free(plan);

    req.policy = PLAN_L3;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-20");
    assert_int_equal(plan->nnoise, 36);
    hwloc_bitmap_t noise = hwloc_bitmap_alloc();
    for (int r = 0; r < plan->nnoise; r++)
        hwloc_bitmap_or(noise, noise, plan->noise[r].cpus);
    assert_cpus(noise, "0-5,9-17,21-29,33-41,45-47");
    hwloc_bitmap_free(noise);
    plan_free(plan);
    topo_free(t);
}

static void smt_gives_both_siblings_and_masks_cover_them(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.smt = true;
    plan_t *plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-23,66-71");
    assert_cpus(plan->noise[0].cpus, "0,48");
    char *spec = plan_srun_cpu_bind(plan->noise, 1);
    assert_string_equal(spec, "--cpu-bind=mask_cpu:0x1000000000001");
    free(spec);
    plan_free(plan);
    topo_free(t);
}

static void masks_beyond_64_cpus_decode_to_exactly_the_planned_cpus(void **state)
{
    (void)state;
    topo_t *t = fixture_load("dgx-a100.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.smt = true;
    plan_t *plan = plan_ok(t, &req); /* plan_ok decodes every mask */
    char *spec = plan_srun_cpu_bind(plan->trainer, plan->ntrainer);
    /* GPU 4 shares NUMA 7 (cores 112-127, siblings 240-255) with GPU 5: 8 cores each. */
    assert_cpus(plan->trainer[4].cpus, "112-119,240-247");
    assert_non_null(strstr(spec, "0xff000000000000000000000000000000ff0000000000000000000000000000"));
    free(spec);
    plan_free(plan);
    topo_free(t);
}

static void several_ranks_per_gpu_split_the_domain(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    req.ranks_per_gpu = 2;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 8);
    assert_cpus(plan->trainer[0].cpus, "18-20");
    assert_cpus(plan->trainer[1].cpus, "21-23");
    assert_int_equal(plan->trainer[1].gpu, 0);
    plan_free(plan);
    topo_free(t);
}

static void infeasible_requests_fail_with_a_message_and_no_plan(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    hwloc_bitmap_t gpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set(gpus, 4);
    req.gpus = gpus;
    plan_refused(t, &req, "GPU 4 does not exist: ");
    plan_refused(t, &req, "juwels-booster.xml has 4 GPUs (0-3)");
    req.gpus = NULL;
    hwloc_bitmap_free(gpus);

    req.cores_per_rank = 7;
    plan_refused(t, &req, "cannot give 7 cores to each of 1 trainer rank on numa 1 (GPU 1): it has 6 free cores");
    req.cores_per_rank = 0;
    req.ranks_per_gpu = 7;
    plan_refused(t, &req, "7 trainer ranks on numa 1");
    req.ranks_per_gpu = 1;
    req.noise_ranks = 25;
    plan_refused(t, &req,
                 "cannot place 25 noise ranks: 24 cores are free for noise under policy exclusive, which keeps noise "
                 "off the trainer's NUMA domains and L3s (numa 0,2,4,6); --policy cores lets noise use every core the "
                 "trainer does not");
    req.policy = PLAN_SHARED;
    req.noise_ranks = -1;
    req.cores_per_rank = 7;
    plan_refused(t, &req, "shared policy");
    topo_free(t);
}

static void reserved_cores_are_never_planned_and_a_full_gpu_domain_is_refused(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    hwloc_bitmap_t reserved = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(reserved, 0, 2);
    req.reserved = reserved;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 21);
    plan_free(plan);

    hwloc_bitmap_set_range(reserved, 18, 23);
    plan_refused(t, &req, "GPU 0 (cuda0) is local to numa 3, which has no free cores");
    hwloc_bitmap_free(reserved);
    topo_free(t);
}

/* One domain, one GPU on it: the node of the issue, as hwloc would describe it. */
static topo_t *one_domain_gpu_node(const char *description)
{
    topo_t *t = fixture_synthetic(description);
    hwloc_bitmap_t numa0 = hwloc_bitmap_alloc();
    hwloc_bitmap_set(numa0, 0);
    assert_int_equal(topo_add_gpu(t, "cuda0", numa0), 0);
    hwloc_bitmap_free(numa0);
    return t;
}

static int has_warning(const plan_t *plan, const char *text)
{
    for (int i = 0; i < plan->nwarnings; i++)
        if (strstr(plan->warnings[i], text))
            return 1;
    return 0;
}

static void no_core_left_for_noise_is_a_warning_not_an_error(void **state)
{
    (void)state;
    topo_t *t = one_domain_gpu_node("numa:1 core:4 pu:1");
    plan_request_t req;
    plan_request_init(&req);
    req.cores_per_rank = 4; /* asked for: the trainer takes the node, even after falling back */
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 1);
    assert_int_equal(plan->nnoise, 0);
    assert_true(has_warning(plan, "no core is left for noise"));
    char *spec = plan_srun_cpu_bind(plan->noise, plan->nnoise);
    assert_null(spec);
    plan_free(plan);
    topo_free(t);
}

static void a_machine_without_gpus_plans_noise_only_with_a_warning(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:2 numa:1 core:4 pu:2");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 0);
    assert_int_equal(plan->nnoise, 8);
    assert_int_equal(plan->nwarnings, 1);
    assert_non_null(strstr(plan->warnings[0], "no GPUs"));
    plan_free(plan);
    topo_free(t);
}

/* A CPU trainer (cpu_ranks): its ranks on the first domain's cores, the noise where the policy
 * leaves room; on a node with GPUs too, which it does not use. */
static void a_cpu_trainer_goes_on_the_first_domain(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:2 numa:1 core:4 pu:2");
    plan_request_t req;
    plan_request_init(&req);
    req.cpu_ranks = 2;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 2);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(plan->trainer[r].gpu, -1);
        assert_int_equal(plan->trainer[r].numa, 0);
    }
    assert_int_equal(plan->isolation, PLAN_ISOLATE_NUMA);
    for (int r = 0; r < plan->nnoise; r++)
        assert_int_equal(plan->noise[r].numa, 1);
    assert_int_equal(plan->nwarnings, 0);
    plan_free(plan);
    req.policy = PLAN_SHARED;
    plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 2);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES); /* no L3 level: a domain is one cache group */
    plan_free(plan);
    req.cpu_ranks = 9; /* more ranks than one domain has cores for */
    req.policy = PLAN_EXCLUSIVE;
    plan_refused(t, &req, "trainer rank");
    topo_free(t);

    t = fixture_load("juwels-booster.xml"); /* GPUs on NUMA 3, 1, 7, 5: not used */
    plan_request_init(&req);
    req.cpu_ranks = 1;
    plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 1);
    assert_int_equal(plan->trainer[0].numa, 0);
    assert_int_equal(plan->trainer[0].gpu, -1);
    plan_free(plan);
    topo_free(t);
}

/* Sub-NUMA clustering: one L3 spans two domains, so exclusive keeps noise off the sibling too. */
static void an_l3_shared_by_two_domains_keeps_noise_off_both(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:2 l3:1 numa:2 core:4 pu:1");
    hwloc_bitmap_t numa0 = hwloc_bitmap_alloc();
    hwloc_bitmap_set(numa0, 0);
    topo_add_gpu(t, "cuda0", numa0);
    hwloc_bitmap_free(numa0);
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    for (int r = 0; r < plan->nnoise; r++)
        assert_true(plan->noise[r].numa >= 2);
    assert_int_equal(plan->nnoise, 8);
    plan_free(plan);
    topo_free(t);
}

/* Cores 0-3 and 4-7 are two domains under one L3; 8-15 the second package. */
static void a_level_keeps_apart_its_own_place_and_those_of_the_weaker_levels(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:2 l3:1 numa:2 core:4 pu:1");
    assert_true(plan_isolation_shares(t, PLAN_ISOLATE_NUMA, 0, 3));
    assert_false(plan_isolation_shares(t, PLAN_ISOLATE_NUMA, 0, 4));
    assert_true(plan_isolation_shares(t, PLAN_ISOLATE_L3, 0, 4));
    assert_false(plan_isolation_shares(t, PLAN_ISOLATE_L3, 0, 8));
    assert_true(plan_isolation_shares(t, PLAN_ISOLATE_CORES, 5, 5));
    assert_false(plan_isolation_shares(t, PLAN_ISOLATE_NONE, 5, 5));
    assert_true(plan_isolation_close(t, PLAN_ISOLATE_NUMA, 0, 4)); /* the L3 spans both domains */
    assert_false(plan_isolation_close(t, PLAN_ISOLATE_NUMA, 0, 8));
    assert_true(plan_isolation_close(t, PLAN_ISOLATE_L3, 0, 3));
    assert_false(plan_isolation_close(t, PLAN_ISOLATE_CORES, 0, 3));
    assert_true(plan_isolation_close(t, PLAN_ISOLATE_CORES, 3, 3));
    assert_false(plan_isolation_close(t, PLAN_ISOLATE_NONE, 3, 3));
    topo_free(t);
}

static void a_gpu_local_to_two_domains_spreads_its_ranks_over_both(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:1 numa:2 core:4 pu:1");
    hwloc_bitmap_t both = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(both, 0, 1);
    topo_add_gpu(t, "cuda0", both);
    hwloc_bitmap_free(both);
    plan_request_t req;
    plan_request_init(&req);
    req.ranks_per_gpu = 2;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->trainer[0].numa, 0);
    assert_int_equal(plan->trainer[1].numa, 1);
    plan_free(plan);
    topo_free(t);
}

/* The daemon's bookkeeping: a co-tenant that registered first on NUMA 3 does not lock a new
 * exclusive trainer out of GPU 0's domain: the plan falls back to keeping them apart by L3 and
 * says so; another job's trainer on NUMA 0 keeps new noise off NUMA 0. */
static void other_jobs_ranks_are_respected_by_the_policy(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    plan_request_t req;
    plan_request_init(&req);
    hwloc_bitmap_t cotenant = hwloc_bitmap_alloc(), trainer = hwloc_bitmap_alloc();
    hwloc_bitmap_set(cotenant, 21);
    req.cotenant_taken = cotenant;
    plan_t *plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-20");
    assert_int_equal(plan->isolation, PLAN_ISOLATE_L3);
    assert_true(plan->nwarnings >= 1 && strstr(plan->warnings[0], "falls back to isolation l3"));
    plan_free(plan);
    req.cores_per_rank = 4; /* more than the free L3 holds: only cores can be kept apart */
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-20,22");
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    plan_free(plan);
    req.cores_per_rank = 6; /* more than the domain has free: refused, with the first policy's reason */
    plan_refused(t, &req, "GPU 0 (cuda0) is local to numa 3, which has no free cores");
    req.policy = PLAN_L3;
    req.cores_per_rank = 3;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-20");
    plan_free(plan);

    plan_request_init(&req);
    hwloc_bitmap_t none = hwloc_bitmap_alloc();
    req.gpus = none;
    hwloc_bitmap_set(trainer, 0);
    req.trainer_taken = trainer;
    plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 42);
    for (int r = 0; r < plan->nnoise; r++)
        assert_int_not_equal(plan->noise[r].numa, 0);
    plan_free(plan);
    hwloc_bitmap_free(none);
    hwloc_bitmap_free(trainer);
    hwloc_bitmap_free(cotenant);
    topo_free(t);
}

static void every_real_machine_plans_soundly_under_every_policy(void **state)
{
    (void)state;
    for (int i = 0; i < NSHARED_TOPOLOGIES; i++) {
        topo_t *t = fixture_load(shared_topologies[i]);
        for (int policy = 0; policy < PLAN_NPOLICIES; policy++)
            for (int smt = 0; smt < 4; smt++) {
                plan_request_t req;
                plan_request_init(&req);
                req.policy = (plan_policy_t)policy;
                req.smt = smt & 1;
                req.mem = smt & 2 ? PLAN_MEM_HBM : PLAN_MEM_LOCAL;
                plan_t *plan = plan_ok(t, &req);
                /* When it fits, every trainer rank sits on its GPU's domain (checked in plan_check);
                 * without GPUs there are no trainer ranks but still noise. */
                if (t->ngpus > 0)
                    assert_int_equal(plan->ntrainer, t->ngpus);
                plan_free(plan);
            }
        topo_free(t);
    }
}

/* Many generated shapes (hwloc synthetic strings) with GPUs attached to random domains and
 * random requests: every plan returned satisfies the invariants; every refusal says why. */
static void generated_topologies_keep_the_invariants(void **state)
{
    (void)state;
    static const char *const shapes[] = {
        "pack:2 numa:4 l3:2 core:3 pu:2",
        "pack:1 numa:1 core:4 pu:1",
        "pack:2 numa:1 l3:1 core:8 pu:2",
        "pack:4 numa:2 l3:4 core:4 pu:1",
        "pack:2 l3:1 numa:2 core:4 pu:2",
        "pack:2 numa:8 core:2 pu:4",
        "numa:3 core:5 pu:1",
        "pack:2 numa:4 l3:4 core:4 pu:2",
        "pack:8 numa:1 l3:2 core:2 pu:1",
        "pack:2 numa:2 l3:3 core:5 pu:2",
    };
    unsigned seed = 12345;
    int plans = 0, refusals = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int variant = 0; variant < 12; variant++) {
            topo_t *t = fixture_synthetic(shapes[s]);
            int ngpus = (int)(rand_r(&seed) % (unsigned)(2 * t->nnuma + 1));
            for (int g = 0; g < ngpus; g++) {
                hwloc_bitmap_t numa = hwloc_bitmap_alloc();
                hwloc_bitmap_set(numa, t->numa[rand_r(&seed) % (unsigned)t->nnuma].os_index);
                if (rand_r(&seed) % 4 == 0)
                    hwloc_bitmap_set(numa, t->numa[rand_r(&seed) % (unsigned)t->nnuma].os_index);
                char name[16];
                snprintf(name, sizeof name, "cuda%d", g);
                topo_add_gpu(t, name, numa);
                hwloc_bitmap_free(numa);
            }
            for (int trial = 0; trial < 20; trial++) {
                plan_request_t req;
                plan_request_init(&req);
                req.policy = (plan_policy_t)(rand_r(&seed) % PLAN_NPOLICIES);
                req.ranks_per_gpu = 1 + (int)(rand_r(&seed) % 3);
                req.cores_per_rank = rand_r(&seed) % 2 ? 0 : 1 + (int)(rand_r(&seed) % 4);
                req.noise_ranks = rand_r(&seed) % 2 ? -1 : (int)(rand_r(&seed) % 12);
                req.smt = rand_r(&seed) % 2;
                hwloc_bitmap_t gpus = NULL, reserved = NULL;
                if (ngpus > 0 && rand_r(&seed) % 3 == 0) {
                    gpus = hwloc_bitmap_alloc();
                    hwloc_bitmap_set(gpus, rand_r(&seed) % (unsigned)ngpus);
                    req.gpus = gpus;
                }
                hwloc_bitmap_t trainer_taken = NULL, cotenant_taken = NULL;
                if (rand_r(&seed) % 3 == 0) {
                    reserved = hwloc_bitmap_alloc();
                    hwloc_bitmap_set(reserved, (unsigned)t->cores[rand_r(&seed) % (unsigned)t->ncores].first_pu);
                    req.reserved = reserved;
                }
                /* Other jobs: a trainer core and a co-tenant core somewhere (never the same core). */
                if (rand_r(&seed) % 3 == 0) {
                    int a = (int)(rand_r(&seed) % (unsigned)t->ncores), b = (int)(rand_r(&seed) % (unsigned)t->ncores);
                    trainer_taken = hwloc_bitmap_dup(t->cores[a].pus);
                    if (b != a)
                        cotenant_taken = hwloc_bitmap_dup(t->cores[b].pus);
                    req.trainer_taken = trainer_taken;
                    req.cotenant_taken = cotenant_taken;
                }
                char err[512];
                plan_t *plan = plan_compute(t, &req, err, sizeof err);
                if (plan) {
                    const char *bad = plan_check(t, &req, plan);
                    if (bad)
                        fail_msg("%s, %d GPUs, policy %s, rpg %d, cpr %d, noise %d, smt %d: %s", shapes[s], ngpus,
                                 plan_policy_name(req.policy), req.ranks_per_gpu, req.cores_per_rank, req.noise_ranks,
                                 req.smt, bad);
                    plans++;
                    plan_free(plan);
                } else {
                    assert_true(strlen(err) > 10);
                    refusals++;
                }
                hwloc_bitmap_free(gpus);
                hwloc_bitmap_free(reserved);
                hwloc_bitmap_free(trainer_taken);
                hwloc_bitmap_free(cotenant_taken);
            }
            topo_free(t);
        }
    }
    /* The generator must exercise both outcomes, or it tests nothing. */
    assert_true(plans > 500);
    assert_true(refusals > 50);
}

static void policy_names_round_trip(void **state)
{
    (void)state;
    plan_policy_t p;
    for (int i = 0; i < PLAN_NPOLICIES; i++) {
        assert_int_equal(plan_policy_parse(plan_policy_name((plan_policy_t)i), &p), 0);
        assert_int_equal(p, i);
    }
    assert_int_equal(plan_policy_parse("cores", &p), 0);
    assert_int_equal(p, PLAN_CORES);
    assert_int_equal(plan_policy_parse("Exclusive", &p), -1);
    assert_int_equal(plan_policy_parse(NULL, &p), -1);
    assert_null(plan_policy_info(PLAN_NPOLICIES));
    assert_string_equal(plan_policy_name(PLAN_NPOLICIES), "?");
}

/* The table says what each policy keeps apart, how it places the trainer and where it falls. */
static void the_policy_table_rows_say_what_each_policy_keeps_apart_and_where_it_falls_back(void **state)
{
    (void)state;
    static const struct {
        plan_policy_t policy;
        const char *name;
        plan_isolation_t isolation;
        plan_trainer_placement_t trainer;
        plan_policy_t fallback;
    } rows[] = {
        {PLAN_EXCLUSIVE, "exclusive", PLAN_ISOLATE_NUMA, PLAN_TRAINER_LOCAL, PLAN_L3},
        {PLAN_SHARED, "shared", PLAN_ISOLATE_NONE, PLAN_TRAINER_HALVES, PLAN_SHARED},
        {PLAN_L3, "l3", PLAN_ISOLATE_L3, PLAN_TRAINER_LOCAL, PLAN_CORES},
        {PLAN_CORES, "cores", PLAN_ISOLATE_CORES, PLAN_TRAINER_LOCAL, PLAN_CORES},
    };
    assert_int_equal(sizeof rows / sizeof rows[0], PLAN_NPOLICIES);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const plan_policy_info_t *info = plan_policy_info(rows[i].policy);
        assert_non_null(info);
        assert_string_equal(info->name, rows[i].name);
        assert_int_equal(info->isolation, rows[i].isolation);
        assert_int_equal(info->trainer, rows[i].trainer);
        assert_int_equal(info->fallback, rows[i].fallback);
        assert_true(info->trainer_share >= 1);
        assert_true(strlen(info->summary) > 20);
        /* A fallback keeps co-tenants less apart than its row, so the chain ends. */
        if (info->fallback != rows[i].policy)
            assert_true(plan_policy_info(info->fallback)->isolation < info->isolation);
    }
    static const char *const names[] = {"none", "cores", "l3", "numa"};
    for (int level = PLAN_ISOLATE_NONE; level <= PLAN_ISOLATE_NUMA; level++) {
        assert_string_equal(plan_isolation_name((plan_isolation_t)level), names[level]);
        assert_true(strlen(plan_isolation_description((plan_isolation_t)level)) > 20);
    }
    assert_non_null(strstr(plan_isolation_description(PLAN_ISOLATE_CORES), "memory bandwidth and L3"));
}

/* The node of the issue: an H100 host with 16 cores in one NUMA domain under one L3. No domain
 * and no L3 is free of the trainer, so exclusive falls back to cores: half the node each. */
static void a_one_domain_one_l3_node_falls_back_to_cores_with_eight_cores_each(void **state)
{
    (void)state;
    topo_t *t = one_domain_gpu_node("numa:1 l3:1 core:16 pu:2");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 1);
    assert_int_equal(hwloc_bitmap_weight(plan->trainer[0].cpus), 8);
    assert_int_equal(plan->nnoise, 8);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    assert_string_equal(plan_isolation_name(plan->isolation), "cores");
    assert_true(has_warning(plan, "no NUMA domain or L3 is free of trainer cores: policy exclusive falls back to "
                                  "isolation cores"));
    assert_false(has_warning(plan, "no core is left"));
    plan_free(plan);

    /* With SMT, the co-tenants get whole cores: never a trainer core's sibling (plan_check). */
    req.smt = true;
    plan = plan_ok(t, &req);
    assert_int_equal(hwloc_bitmap_weight(plan->trainer[0].cpus), 16);
    assert_int_equal(plan->nnoise, 8);
    plan_free(plan);

    /* l3 and cores reach the same plan; shared splits the domain and its halves' cores are apart. */
    static const plan_policy_t others[] = {PLAN_L3, PLAN_CORES};
    for (int i = 0; i < 2; i++) {
        plan_request_init(&req);
        req.policy = others[i];
        plan = plan_ok(t, &req);
        assert_int_equal(hwloc_bitmap_weight(plan->trainer[0].cpus), 8);
        assert_int_equal(plan->nnoise, 8);
        assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
        plan_free(plan);
    }
    plan_request_init(&req);
    req.policy = PLAN_SHARED;
    plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 8);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    plan_free(plan);
    topo_free(t);
}

/* The oracle for hybrid CPUs (tests/topologies/README.md). The fast kind is hwloc's kind 1,
 * `hwloc-calc -i FILE --cpukind 1 all -I pu --po`: alderlake-gpu's P-cores 0-15 (first in PU
 * order), hybrid-2gpu's 16-31 and 48-63 (after 16 E-cores in each package). Trainer ranks take
 * P-cores, noise E-cores first. When a domain's P-cores cannot give every rank all it asks for,
 * they are split evenly over its ranks (data-parallel ranks wait for the slowest), each rank's
 * part in one block, the first ranks one more where it does not divide; the rest of each rank
 * comes from the E-cores in hwloc order. hybrid-2gpu's default plan was 0-7 and 32-39, E-cores,
 * before kinds were read. */
static const struct hybrid_case {
    const char *file;
    plan_policy_t policy;
    const char *gpus; /* NULL: all */
    int ranks_per_gpu, cores_per_rank, noise_ranks;
    const char *trainer[4];
    const char *noise; /* every noise rank's CPU */
} hybrid_cases[] = {
    {"alderlake-gpu.xml", PLAN_EXCLUSIVE, NULL, 1, 0, -1, {"0,2,4,6,8,10,12,14"}, "16-23"},
    {"alderlake-gpu.xml", PLAN_SHARED, NULL, 1, 0, -1, {"0,2,4,6,8,10,12,14"}, "16-23"},
    {"alderlake-gpu.xml", PLAN_EXCLUSIVE, NULL, 1, 0, 4, {"0,2,4,6,8,10,12,14"}, "16-19"},
    /* More cores than P-cores: all 8 P-cores, then E-cores; noise on the E-cores left. */
    {"alderlake-gpu.xml", PLAN_EXCLUSIVE, NULL, 1, 12, -1, {"0,2,4,6,8,10,12,14,16-19"}, "20-23"},
    /* 3 ranks x 4 cores, 8 P-cores: 3, 3 and 2 P-cores, then E-cores. */
    {"alderlake-gpu.xml", PLAN_EXCLUSIVE, NULL, 3, 4, -1, {"0,2,4,16", "6,8,10,17", "12,14,18-19"}, "20-23"},
    {"hybrid-2gpu.xml",
     PLAN_EXCLUSIVE,
     NULL,
     1,
     0,
     -1,
     {"16,18,20,22,24,26,28,30", "48,50,52,54,56,58,60,62"},
     "0-15,32-47"},
    {"hybrid-2gpu.xml",
     PLAN_SHARED,
     NULL,
     1,
     0,
     -1,
     {"16,18,20,22,24,26,28,30", "48,50,52,54,56,58,60,62"},
     "4-15,36-47"},
    /* Noise spreads over both domains, E-cores first in each. */
    {"hybrid-2gpu.xml",
     PLAN_EXCLUSIVE,
     NULL,
     1,
     0,
     4,
     {"16,18,20,22,24,26,28,30", "48,50,52,54,56,58,60,62"},
     "0-1,32-33"},
    /* Exclusive keeps numa 1 free: noise takes its E-cores first (4 of them here). */
    {"hybrid-2gpu.xml", PLAN_EXCLUSIVE, "0", 1, 0, 4, {"16,18,20,22,24,26,28,30"}, "32-35"},
    /* 2 ranks x 6 cores per domain, 8 P-cores each: 4 P-cores and 2 E-cores a rank. */
    {"hybrid-2gpu.xml",
     PLAN_CORES,
     NULL,
     2,
     0,
     -1,
     {"0-1,16,18,20,22", "2-3,24,26,28,30", "32-33,48,50,52,54", "34-35,56,58,60,62"},
     "4-15,36-47"},
    {"hybrid-2gpu.xml",
     PLAN_EXCLUSIVE,
     NULL,
     1,
     12,
     -1,
     {"0-3,16,18,20,22,24,26,28,30", "32-35,48,50,52,54,56,58,60,62"},
     "4-15,36-47"},
};

static void hybrid_cpus_give_trainer_ranks_the_fast_cores_and_noise_the_others(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof hybrid_cases / sizeof hybrid_cases[0]; i++) {
        const struct hybrid_case *hc = &hybrid_cases[i];
        topo_t *t = fixture_load(hc->file);
        plan_request_t req;
        plan_request_init(&req);
        req.policy = hc->policy;
        req.ranks_per_gpu = hc->ranks_per_gpu;
        req.cores_per_rank = hc->cores_per_rank;
        req.noise_ranks = hc->noise_ranks;
        hwloc_bitmap_t gpus = NULL;
        if (hc->gpus) {
            gpus = hwloc_bitmap_alloc();
            hwloc_bitmap_list_sscanf(gpus, hc->gpus);
            req.gpus = gpus;
        }
        plan_t *plan = plan_ok(t, &req);
        int ntrainer = 0;
        while (ntrainer < 4 && hc->trainer[ntrainer])
            ntrainer++;
        print_message("# case %zu: %s policy %s\n", i, hc->file, plan_policy_name(hc->policy));
        assert_int_equal(plan->ntrainer, ntrainer);
        for (int r = 0; r < ntrainer; r++)
            assert_cpus(plan->trainer[r].cpus, hc->trainer[r]);
        hwloc_bitmap_t noise = hwloc_bitmap_alloc();
        for (int r = 0; r < plan->nnoise; r++)
            hwloc_bitmap_or(noise, noise, plan->noise[r].cpus);
        assert_cpus(noise, hc->noise);
        hwloc_bitmap_free(noise);
        hwloc_bitmap_free(gpus);
        plan_free(plan);
        topo_free(t);
    }
}

/* Two one-PU cores, the slow kind first (PU 0), the fast one second (PU 1), with or without the
 * CoreType infos hwloc ranks them by: without, hwloc gives both efficiency -1 (lstopo --cpukinds
 * says so) and the planner keeps hwloc order, as on a machine with one kind. */
static topo_t *two_kind_node(int with_core_types)
{
    static const char *const head =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
        "<topology version=\"2.0\">\n"
        "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" allowed_cpuset=\"0x3\""
        " nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
        "<object type=\"Package\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"2\">\n"
        "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
        "<object type=\"Core\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"4\"><object type=\"PU\" os_index=\"0\" cpuset=\"0x1\""
        " complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"5\"/></object>\n"
        "<object type=\"Core\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"6\"><object type=\"PU\" os_index=\"1\" cpuset=\"0x2\""
        " complete_cpuset=\"0x2\" nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"7\"/></object>\n"
        "</object>\n</object>\n";
    char xml[4096], path[] = "/tmp/cosched-test-XXXXXX", err[512];
    if (with_core_types)
        snprintf(xml, sizeof xml,
                 "%s<cpukind cpuset=\"0x1\" forced_efficiency=\"0\"><info name=\"CoreType\" value=\"IntelAtom\"/>"
                 "</cpukind>\n<cpukind cpuset=\"0x2\" forced_efficiency=\"0\"><info name=\"CoreType\" "
                 "value=\"IntelCore\"/></cpukind>\n</topology>\n",
                 head);
    else
        snprintf(xml, sizeof xml,
                 "%s<cpukind cpuset=\"0x1\" forced_efficiency=\"0\"/>\n<cpukind cpuset=\"0x2\" "
                 "forced_efficiency=\"0\"/>\n</topology>\n",
                 head);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, xml, strlen(xml)), (ssize_t)strlen(xml));
    close(fd);
    topo_t *t = topo_load(path, err, sizeof err);
    unlink(path);
    if (!t)
        fail_msg("two-kind node: %s", err);
    return t;
}

static void kinds_hwloc_cannot_rank_leave_the_plan_in_hwloc_order(void **state)
{
    (void)state;
    static const struct {
        int with_core_types, efficiency0, efficiency1;
        const char *trainer, *noise;
    } cases[] = {{1, 0, 1, "1", "0"}, {0, -1, -1, "0", "1"}};
    for (int i = 0; i < 2; i++) {
        topo_t *t = two_kind_node(cases[i].with_core_types);
        assert_int_equal(t->nkinds, 2);
        assert_int_equal(t->kinds[0].efficiency, cases[i].efficiency0);
        assert_int_equal(t->kinds[1].efficiency, cases[i].efficiency1);
        assert_int_equal(t->cores[1].perf, cases[i].with_core_types);
        assert_int_equal(t->cores[0].perf, 0);
        plan_request_t req;
        plan_request_init(&req);
        req.policy = PLAN_CORES;
        req.cpu_ranks = 1;
        req.cores_per_rank = 1;
        plan_t *plan = plan_ok(t, &req);
        assert_int_equal(plan->ntrainer, 1);
        assert_cpus(plan->trainer[0].cpus, cases[i].trainer);
        assert_int_equal(plan->nnoise, 1);
        assert_cpus(plan->noise[0].cpus, cases[i].noise);
        plan_free(plan);
        topo_free(t);
    }
}

/* Only zero cores apart triggers a fallback: more noise ranks than the level offers stay an
 * error that names the level; fewer fit. */
static void asking_for_more_noise_than_the_level_offers_is_refused_naming_the_level(void **state)
{
    (void)state;
    topo_t *t = one_domain_gpu_node("numa:1 l3:1 core:16 pu:1");
    plan_request_t req;
    plan_request_init(&req);
    req.noise_ranks = 9;
    plan_refused(t, &req,
                 "cannot place 9 noise ranks: 8 cores are free for noise under policy exclusive (fallen "
                 "back to isolation cores), which keeps noise off the trainer's cores and their SMT siblings");
    req.noise_ranks = 4;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 4);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    plan_free(plan);
    topo_free(t);

    t = fixture_load("juwels-booster.xml");
    plan_request_init(&req);
    req.noise_ranks = 30;
    plan_refused(t, &req, "--policy cores lets noise use every core the trainer does not");
    req.policy = PLAN_CORES; /* which it does: 3 free cores in each GPU domain besides the 24 */
    plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 30);
    plan_free(plan);
    topo_free(t);
}

/* Four L3s in the domain: eight trainer cores fill two, the other two stay whole. */
static void a_domain_with_free_l3s_falls_back_to_l3_only(void **state)
{
    (void)state;
    topo_t *t = one_domain_gpu_node("numa:1 l3:4 core:4 pu:1");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "0-7");
    assert_int_equal(plan->nnoise, 8);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_L3);
    assert_true(
        has_warning(plan, "no NUMA domain is free of trainer cores: policy exclusive falls back to isolation l3"));
    plan_free(plan);
    topo_free(t);
}

/* The plan states what it achieves, which may be more than its row: on POWER8 every core has
 * its own L3, so co-tenants on the cores the trainer leaves share no L3 with it. */
static void a_plan_claims_the_isolation_it_achieves(void **state)
{
    (void)state;
    topo_t *t = fixture_load("coral-ea-hwloc1.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_L3);
    assert_int_equal(plan->nnoise, 8);
    plan_free(plan);
    topo_free(t);

    /* JUWELS under cores: a 3-core rank fills one of its domain's two L3s, 2-core ranks do not. */
    t = fixture_load("juwels-booster.xml");
    plan_request_init(&req);
    req.policy = PLAN_CORES;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "18-20");
    assert_int_equal(plan->nnoise, 36);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_L3);
    plan_free(plan);
    req.cores_per_rank = 2;
    plan = plan_ok(t, &req);
    assert_int_equal(plan->nnoise, 40);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    plan_free(plan);
    topo_free(t);
}

/* Tioga: two GPUs per domain, each under its own L3. Each rank gets cores of its GPU's L3. */
static void ranks_take_the_cores_nearest_their_gpu_first(void **state)
{
    (void)state;
    topo_t *t = fixture_load("shared/eas-tioga.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 8);
    assert_cpus(plan->trainer[0].cpus, "48-51"); /* rsmi0 under L3 48-55 */
    assert_cpus(plan->trainer[1].cpus, "56-59"); /* rsmi1 under L3 56-63 */
    assert_int_equal(plan->nnoise, 32);
    assert_int_equal(plan->isolation, PLAN_ISOLATE_CORES);
    plan_free(plan);
    /* Explicit sizes too: 6 cores each still start under the GPU's own L3. */
    req.cores_per_rank = 6;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].cpus, "48-53");
    assert_cpus(plan->trainer[1].cpus, "56-61");
    plan_free(plan);
    topo_free(t);
}

/* The corpus: on every GPU node the default plan leaves cores to co-tenants and states
 * an isolation level that holds (plan_check verifies the claim). */
static void every_gpu_node_leaves_cores_for_cotenants_under_the_default_policy(void **state)
{
    (void)state;
    int gpu_nodes = 0;
    for (int i = 0; i < NSHARED_TOPOLOGIES; i++) {
        topo_t *t = fixture_load(shared_topologies[i]);
        if (t->ngpus == 0) {
            topo_free(t);
            continue;
        }
        gpu_nodes++;
        plan_request_t req;
        plan_request_init(&req);
        plan_t *plan = plan_ok(t, &req);
        if (plan->nnoise == 0)
            fail_msg("%s: the default plan leaves no core for co-tenants", shared_topologies[i]);
        assert_int_equal(plan->ntrainer, t->ngpus);
        assert_true(plan->isolation >= PLAN_ISOLATE_CORES);
        assert_false(has_warning(plan, "no core is left"));
        plan_free(plan);
        topo_free(t);
    }
    assert_true(gpu_nodes >= 19);
}

/* A cgroup's cpuset.mems without NUMA 1 and 3, its cpuset.cpus without NUMA 3's CPUs: GPU0 is
 * still local to NUMA 3 (and refused for want of cores, naming it), GPU1's ranks run on NUMA 1's
 * allowed CPUs with their memory on the nearest allowed domains, and the plan says so. */
static void a_domain_whose_memory_is_disallowed_is_planned_with_memory_bound_where_allowed(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster-numa-cgroup.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_refused(t, &req, "GPU 0 (cuda0) is local to numa 3, which has no free cores");
    hwloc_bitmap_t gpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(gpus, 1, 3);
    req.gpus = gpus;
    for (int policy = 0; policy < PLAN_NPOLICIES; policy++) {
        req.policy = (plan_policy_t)policy;
        plan_t *plan = plan_ok(t, &req); /* plan_check: no rank binds NUMA 1 or 3 */
        plan_free(plan);
    }
    req.policy = PLAN_EXCLUSIVE;
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->trainer[0].gpu, 1);
    assert_int_equal(plan->trainer[0].numa, 1);
    assert_cpus(plan->trainer[0].cpus, "6-11");
    assert_cpus(plan->trainer[0].mems, "0,2"); /* distance 12, same package; 3 is not allowed */
    assert_cpus(plan->trainer[1].mems, "7");
    assert_true(has_warning(plan, "numa 1's memory is not allowed here (cpuset.mems)"));
    for (int r = 0; r < plan->nnoise; r++) {
        assert_false(hwloc_bitmap_isset(plan->noise[r].cpus, 18)); /* NUMA 3's CPUs are not allowed */
        assert_false(hwloc_bitmap_isset(plan->noise[r].mems, 1) || hwloc_bitmap_isset(plan->noise[r].mems, 3));
    }
    plan_free(plan);
    hwloc_bitmap_free(gpus);
    topo_free(t);
}

/* HBM beside every domain and CXL memory on socket 0: plain plans bind only the domains with
 * cores; --mem hbm adds each trainer rank's own HBM and nothing else; noise never gets either. */
static void hbm_goes_to_trainer_ranks_on_request_and_never_to_noise(void **state)
{
    (void)state;
    topo_t *t = fixture_load("spr-hbm-cxl.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_ok(t, &req);
    assert_int_equal(plan->ntrainer, 2);
    assert_cpus(plan->trainer[0].mems, "0");
    assert_cpus(plan->trainer[1].mems, "2");
    plan_free(plan);
    for (int policy = 0; policy < PLAN_NPOLICIES; policy++) {
        req.policy = (plan_policy_t)policy;
        req.mem = PLAN_MEM_HBM;
        plan = plan_ok(t, &req);
        for (int r = 0; r < plan->nnoise; r++) /* one domain with cores: 0-3 */
            assert_true(hwloc_bitmap_last(plan->noise[r].mems) <= 3 && hwloc_bitmap_weight(plan->noise[r].mems) == 1);
        plan_free(plan);
    }
    req.policy = PLAN_EXCLUSIVE;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].mems, "0,4");
    assert_cpus(plan->trainer[1].mems, "2,6");
    assert_int_equal(plan->nwarnings, 0);
    plan_free(plan);
    topo_free(t);

    t = fixture_load("juwels-booster.xml"); /* no HBM: the binding stays plain, with a warning */
    plan_request_init(&req);
    req.mem = PLAN_MEM_HBM;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].mems, "3");
    assert_true(has_warning(plan, "--mem hbm: numa 1,3,5,7 has no allowed high-bandwidth memory"));
    plan_free(plan);
    topo_free(t);

    t = fixture_load("knl-flat-mcdram.xml"); /* a CPU trainer with --mem hbm gets DDR and MCDRAM */
    plan_request_init(&req);
    req.cpu_ranks = 2;
    req.mem = PLAN_MEM_HBM;
    plan = plan_ok(t, &req);
    assert_cpus(plan->trainer[0].mems, "0-1");
    assert_true(plan->nnoise > 0);
    for (int r = 0; r < plan->nnoise; r++)
        assert_cpus(plan->noise[r].mems, "0");
    plan_free(plan);
    topo_free(t);
    plan_mem_t mem;
    assert_int_equal(plan_mem_parse("hbm", &mem), 0);
    assert_int_equal(mem, PLAN_MEM_HBM);
    assert_string_equal(plan_mem_name(PLAN_MEM_LOCAL), "local");
    assert_int_equal(plan_mem_parse("ddr", &mem), -1);
}

/* The Corona node in its hwloc 1.x export plans like its hwloc 2 export. */
static void corona_plans_alike_from_its_hwloc1_and_hwloc2_files(void **state)
{
    (void)state;
    topo_t *v1 = fixture_load("epyc-corona-hwloc1.xml"), *v2 = fixture_load("shared/epyc-corona.xml");
    plan_request_t req;
    plan_request_init(&req);
    plan_t *a = plan_ok(v1, &req), *b = plan_ok(v2, &req);
    static const unsigned numa[] = {1, 2, 5, 7};
    assert_int_equal(a->ntrainer, 4);
    assert_int_equal(b->ntrainer, 4);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(a->trainer[r].numa, numa[r]);
        assert_true(hwloc_bitmap_isequal(a->trainer[r].cpus, b->trainer[r].cpus));
    }
    assert_int_equal(a->nnoise, 24);
    assert_int_equal(b->nnoise, 24);
    assert_int_equal(a->isolation, PLAN_ISOLATE_NUMA);
    plan_free(a);
    plan_free(b);
    topo_free(v1);
    topo_free(v2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(juwels_exclusive_puts_gpu_ranks_on_numa_3_1_7_5_and_noise_on_the_others),
        cmocka_unit_test(juwels_shared_gives_each_job_three_of_six_cores_in_every_domain),
        cmocka_unit_test(shared_keeps_every_rank_on_its_gpus_package_with_gpus_3_plus_1),
        cmocka_unit_test(shared_claims_l3_when_its_halves_fall_on_whole_l3s),
        cmocka_unit_test(l3_policy_lets_noise_use_the_free_l3_of_trainer_domains),
        cmocka_unit_test(smt_gives_both_siblings_and_masks_cover_them),
        cmocka_unit_test(masks_beyond_64_cpus_decode_to_exactly_the_planned_cpus),
        cmocka_unit_test(several_ranks_per_gpu_split_the_domain),
        cmocka_unit_test(infeasible_requests_fail_with_a_message_and_no_plan),
        cmocka_unit_test(reserved_cores_are_never_planned_and_a_full_gpu_domain_is_refused),
        cmocka_unit_test(no_core_left_for_noise_is_a_warning_not_an_error),
        cmocka_unit_test(a_machine_without_gpus_plans_noise_only_with_a_warning),
        cmocka_unit_test(a_cpu_trainer_goes_on_the_first_domain),
        cmocka_unit_test(an_l3_shared_by_two_domains_keeps_noise_off_both),
        cmocka_unit_test(a_level_keeps_apart_its_own_place_and_those_of_the_weaker_levels),
        cmocka_unit_test(a_gpu_local_to_two_domains_spreads_its_ranks_over_both),
        cmocka_unit_test(other_jobs_ranks_are_respected_by_the_policy),
        cmocka_unit_test(every_real_machine_plans_soundly_under_every_policy),
        cmocka_unit_test(generated_topologies_keep_the_invariants),
        cmocka_unit_test(policy_names_round_trip),
        cmocka_unit_test(the_policy_table_rows_say_what_each_policy_keeps_apart_and_where_it_falls_back),
        cmocka_unit_test(a_one_domain_one_l3_node_falls_back_to_cores_with_eight_cores_each),
        cmocka_unit_test(asking_for_more_noise_than_the_level_offers_is_refused_naming_the_level),
        cmocka_unit_test(a_domain_with_free_l3s_falls_back_to_l3_only),
        cmocka_unit_test(a_plan_claims_the_isolation_it_achieves),
        cmocka_unit_test(ranks_take_the_cores_nearest_their_gpu_first),
        cmocka_unit_test(every_gpu_node_leaves_cores_for_cotenants_under_the_default_policy),
        cmocka_unit_test(corona_plans_alike_from_its_hwloc1_and_hwloc2_files),
        cmocka_unit_test(a_domain_whose_memory_is_disallowed_is_planned_with_memory_bound_where_allowed),
        cmocka_unit_test(hbm_goes_to_trainer_ranks_on_request_and_never_to_noise),
        cmocka_unit_test(hybrid_cpus_give_trainer_ranks_the_fast_cores_and_noise_the_others),
        cmocka_unit_test(kinds_hwloc_cannot_rank_leave_the_plan_in_hwloc_order),
    };
    return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
