/* plan_check: invariants of a plan, checked independently of how the planner works:
 * no CPU twice, only allowed and unreserved PUs, memory follows cores, the isolation the plan
 * claims, ranks on their GPU's domain, the fastest kind of core to the trainer, and srun specs
 * that decode to the plan. */
#include "plan_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char message[512];

static const char *failed(const char *fmt, int a, int b)
{
    snprintf(message, sizeof message, fmt, a, b);
    return message;
}

int srun_decode(const char *spec, hwloc_bitmap_t *sets, int max)
{
    const char *map = "--cpu-bind=map_cpu:", *mask = "--cpu-bind=mask_cpu:";
    int is_map = strncmp(spec, map, strlen(map)) == 0;
    if (!is_map && strncmp(spec, mask, strlen(mask)) != 0)
        return -1;
    char *copy = strdup(spec + strlen(is_map ? map : mask)), *save = NULL;
    int n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (n == max)
            break;
        sets[n] = hwloc_bitmap_alloc();
        if (is_map)
            hwloc_bitmap_only(sets[n], (unsigned)atoi(item));
        else if (hwloc_bitmap_taskset_sscanf(sets[n], item) < 0)
            n = -1000;
        n++;
    }
    free(copy);
    return n;
}

static int hits(hwloc_const_bitmap_t taken, hwloc_const_bitmap_t cpus)
{
    return taken && hwloc_bitmap_intersects(taken, cpus);
}

/* Per PU: the core index it belongs to in the model, or -1 if not plannable. */
static int core_of_pu(const topo_t *t, int pu)
{
    for (int c = 0; c < t->ncores; c++)
        if (hwloc_bitmap_isset(t->cores[c].pus, (unsigned)pu))
            return c;
    return -1;
}

static const char *check_srun(const plan_rank_t *ranks, int n)
{
    char *spec = plan_srun_cpu_bind(ranks, n);
    if (n == 0)
        return spec ? "srun spec for zero ranks" : NULL;
    hwloc_bitmap_t sets[4096];
    int got = srun_decode(spec, sets, 4096);
    const char *bad = NULL;
    if (got != n)
        bad = failed("srun spec decodes to %d ranks, the plan has %d", got, n);
    for (int i = 0; i < got && i < n && !bad; i++)
        if (!hwloc_bitmap_isequal(sets[i], ranks[i].cpus))
            bad = failed("srun spec of rank %d decodes to other CPUs than planned (%d)", i, i);
    for (int i = 0; i < got; i++)
        hwloc_bitmap_free(sets[i]);
    free(spec);
    return bad;
}

/* The level the plan claims must be at least cores (no plan puts noise on a trainer core: cores
 * are whole, under shared too) and hold for every pair of a co-tenant core (this plan's noise, role 2, or another
 * job's, role 4) and a trainer core (role 1 or 3) of which at least one is this plan's: not under
 * the same L3 for "l3", not in the same domain nor under the same L3 for "numa". "cores" is
 * checked where roles are given out: a core is never split between a trainer and a noise rank. */
static const char *check_isolation(const topo_t *t, const plan_request_t *req, const plan_t *plan, const int *role)
{
    plan_isolation_t level = plan->isolation;
    if (level == PLAN_ISOLATE_NONE)
        return failed("policy %d claims isolation none, but cores are whole (%d)", (int)req->policy, 0);
    if (level > PLAN_ISOLATE_NUMA)
        return failed("isolation %d is no level (policy %d)", (int)level, (int)req->policy);
    if (level < PLAN_ISOLATE_L3)
        return NULL;
    for (int c = 0; c < t->ncores; c++) {
        if (role[c] != 2 && role[c] != 4)
            continue;
        for (int o = 0; o < t->ncores; o++) {
            if ((role[o] != 1 && role[o] != 3) || (role[c] == 4 && role[o] == 3))
                continue; /* two other jobs' ranks are not this plan's doing */
            if (t->cores[o].l3 == t->cores[c].l3)
                return failed("isolation l3 or numa claimed, but co-tenant core %d shares an L3 with trainer core %d",
                              c, o);
            if (level == PLAN_ISOLATE_NUMA && t->cores[o].numa == t->cores[c].numa)
                return failed("isolation numa claimed, but co-tenant core %d is in the domain of trainer core %d", c,
                              o);
        }
    }
    return NULL;
}

static int package_of_os_index(const topo_t *t, unsigned os_index)
{
    for (int d = 0; d < t->nnuma; d++)
        if (t->numa[d].os_index == os_index)
            return t->numa[d].package;
    return -1;
}

/* shared, default size: a GPU rank stays on its domain's package whenever that package's trainer
 * half (each domain's free cores halved, rounded up) has a core for every rank homed there. */
static const char *check_shared_packages(const topo_t *t, const plan_request_t *req, const plan_t *plan)
{
    if (req->policy != PLAN_SHARED || req->cores_per_rank || req->cpu_ranks > 0)
        return NULL;
    for (int i = 0; i < plan->ntrainer; i++) {
        int pkg = package_of_os_index(t, plan->trainer[i].numa), half = 0, ranks = 0;
        for (int d = 0; d < t->nnuma; d++) {
            if (t->numa[d].package != pkg)
                continue;
            int free_cores = 0;
            for (int c = t->numa[d].first_core; c < t->numa[d].first_core + t->numa[d].ncores; c++)
                free_cores += !hits(req->reserved, t->cores[c].pus) && !hits(req->trainer_taken, t->cores[c].pus) &&
                              !hits(req->cotenant_taken, t->cores[c].pus) &&
                              (!req->allowed || hwloc_bitmap_intersects(req->allowed, t->cores[c].pus));
            half += (free_cores + 1) / 2;
        }
        for (int o = 0; o < plan->ntrainer; o++)
            ranks += package_of_os_index(t, plan->trainer[o].numa) == pkg;
        if (half < ranks)
            continue;
        unsigned m;
        hwloc_bitmap_foreach_begin(m, plan->trainer[i].mems) {
            if (package_of_os_index(t, m) != pkg)
                return failed("shared: trainer rank %d spills onto another package (numa %d) though its own has room",
                              i, (int)m);
        }
        hwloc_bitmap_foreach_end();
    }
    return NULL;
}

/* Hybrid CPUs: inside a domain no core of a faster kind than one of this plan's trainer cores is
 * left to noise or idle. Only where nothing but the kinds decides which cores the trainer gets:
 * no other jobs, no allocation, and every GPU's nearest cores its whole domains. */
static const char *check_kinds(const topo_t *t, const plan_request_t *req, const int *role)
{
    if (req->reserved || req->trainer_taken || req->cotenant_taken || req->allowed)
        return NULL;
    for (int g = 0; g < t->ngpus; g++)
        if (!hwloc_bitmap_isequal(t->gpus[g].nearest_cpus, t->gpus[g].cpus))
            return NULL;
    for (int a = 0; a < t->ncores; a++)
        for (int b = 0; role[a] == 1 && b < t->ncores; b++)
            if (role[b] != 1 && t->cores[b].numa == t->cores[a].numa && t->cores[b].perf > t->cores[a].perf)
                return failed("trainer core %d is of a slower kind than core %d of its domain, left to noise or idle",
                              a, b);
    return NULL;
}

const char *plan_check(const topo_t *t, const plan_request_t *req, const plan_t *plan)
{
    /* role per core: 0 unused, 1 trainer, 2 noise */
    int *role = calloc((size_t)t->ncores, sizeof *role);
    const char *bad = NULL;
    hwloc_bitmap_t seen = hwloc_bitmap_alloc();
    int trainer_size = -1;

    for (int pass = 0; pass < 2 && !bad; pass++) {
        const plan_rank_t *ranks = pass ? plan->noise : plan->trainer;
        int n = pass ? plan->nnoise : plan->ntrainer;
        for (int i = 0; i < n && !bad; i++) {
            const plan_rank_t *r = &ranks[i];
            if (r->rank != i)
                bad = failed("rank numbers not 0..n-1 (%d at %d)", r->rank, i);
            else if (hwloc_bitmap_iszero(r->cpus))
                bad = failed("rank %d of role %d has no CPU", i, pass);
            else if (hwloc_bitmap_intersects(seen, r->cpus))
                bad = failed("a CPU is used twice (rank %d, role %d)", i, pass);
            else if (hits(req->reserved, r->cpus) || hits(req->trainer_taken, r->cpus) ||
                     hits(req->cotenant_taken, r->cpus))
                bad = failed("rank %d (role %d) uses a CPU another job holds", i, pass);
            if (bad)
                break;
            hwloc_bitmap_or(seen, seen, r->cpus);
            /* doms: the domains of its CPUs; mems: where they bind memory (plus HBM for a
             * trainer with --mem hbm). */
            hwloc_bitmap_t mems = hwloc_bitmap_alloc(), doms = hwloc_bitmap_alloc();
            int pu, ncores = 0;
            hwloc_bitmap_foreach_begin(pu, r->cpus) {
                int c = core_of_pu(t, pu);
                if (c < 0) {
                    bad = failed("rank %d uses CPU %d, which is not an allowed PU of a plannable core", i, pu);
                    break;
                }
                if (!req->smt && pu != t->cores[c].first_pu)
                    bad = failed("without --smt rank %d uses a second SMT sibling (CPU %d)", i, pu);
                if (role[c] != 0 && role[c] != pass + 1)
                    bad = failed("core %d holds PUs of a trainer and a noise rank (CPU %d): cores are whole", c, pu);
                if (role[c] == 0)
                    ncores++;
                role[c] = pass + 1;
                const topo_numa_t *d = &t->numa[t->cores[c].numa];
                hwloc_bitmap_set(doms, d->os_index);
                hwloc_bitmap_or(mems, mems, d->mems);
                if (pass == 0 && req->mem == PLAN_MEM_HBM)
                    hwloc_bitmap_or(mems, mems, d->hbm);
            }
            hwloc_bitmap_foreach_end();
            if (!bad && !hwloc_bitmap_isequal(mems, r->mems))
                bad = failed("rank %d (role %d): mems differ from where the domains of its CPUs bind memory", i, pass);
            for (int k = 0; k < t->nnuma && !bad; k++) {
                const topo_numa_t *d = &t->numa[k];
                if (!hwloc_bitmap_isset(r->mems, d->os_index))
                    continue;
                if (!d->mem_allowed)
                    bad = failed("rank %d binds memory to numa %d, which is not allowed", i, (int)d->os_index);
                else if (d->memory_only && (pass == 1 || req->mem != PLAN_MEM_HBM || !d->high_bandwidth))
                    bad = failed("rank %d binds memory to memory-only numa %d unasked", i, (int)d->os_index);
            }
            int home = 0;
            for (int k = 0; k < t->nnuma; k++)
                if (t->numa[k].os_index == r->numa)
                    home = k;
            if (!bad && t->numa[home].mem_allowed && !hwloc_bitmap_isset(r->mems, r->numa))
                bad = failed("rank %d (role %d): its numa is not among its mems", i, pass);
            if (!bad && pass == 1 && ncores != 1)
                bad = failed("noise rank %d has %d cores, not 1", i, ncores);
            if (!bad && pass == 0) {
                if (trainer_size < 0)
                    trainer_size = ncores;
                else if (ncores != trainer_size)
                    bad = failed("trainer ranks differ in size (%d vs %d cores)", ncores, trainer_size);
                if (!bad && req->cores_per_rank && ncores != req->cores_per_rank)
                    bad = failed("trainer rank %d has %d cores, not the requested number", i, ncores);
                if (!bad && !req->cores_per_rank && ncores > PLAN_DEFAULT_MAX_CORES_PER_RANK)
                    bad = failed("trainer rank %d has %d cores by default, more than a training rank uses", i, ncores);
                if (!bad && req->cpu_ranks > 0 && r->gpu != -1)
                    bad = failed("CPU trainer rank %d names GPU %d", i, r->gpu);
                if (!bad && req->cpu_ranks > 0 && r->numa != plan->trainer[0].numa)
                    bad = failed("CPU trainer rank %d is not on domain %d, the first rank's", i,
                                 (int)plan->trainer[0].numa);
                if (req->cpu_ranks > 0)
                    ; /* no GPU to be near: the rules below are a GPU trainer's */
                else if (!bad && (r->gpu < 0 || r->gpu >= t->ngpus))
                    bad = failed("trainer rank %d names GPU %d, which does not exist", i, r->gpu);
                /* Its domain is the GPU's whenever it has any core there (shared may have to
                 * put a rank wholly elsewhere when many ranks share one GPU domain). */
                if (!bad && req->cpu_ranks == 0 && !hwloc_bitmap_isset(t->gpus[r->gpu].numa, r->numa) &&
                    hwloc_bitmap_intersects(t->gpus[r->gpu].numa, doms))
                    bad = failed("trainer rank %d's domain is not local to GPU %d", i, r->gpu);
                if (!bad && req->cpu_ranks == 0 && req->policy != PLAN_SHARED &&
                    !hwloc_bitmap_isset(t->gpus[r->gpu].numa, r->numa))
                    bad = failed("trainer rank %d is not on GPU %d's domain", i, r->gpu);
                if (!bad && req->policy != PLAN_SHARED && hwloc_bitmap_weight(doms) != 1)
                    bad = failed("trainer rank %d spans domains under a local policy (%d)", i, 0);
            }
            hwloc_bitmap_free(mems);
            hwloc_bitmap_free(doms);
        }
    }
    /* Other jobs' ranks count as trainer (3) and noise (4) for the isolation rules. */
    for (int c = 0; c < t->ncores && !bad; c++) {
        int taken = hits(req->trainer_taken, t->cores[c].pus) || hits(req->cotenant_taken, t->cores[c].pus);
        if (taken && role[c] != 0)
            bad = failed("core %d is shared with another job's rank (role %d): cores are whole", c, role[c]);
        else if (hits(req->trainer_taken, t->cores[c].pus))
            role[c] = 3;
        else if (hits(req->cotenant_taken, t->cores[c].pus))
            role[c] = 4;
    }
    if (!bad)
        bad = check_isolation(t, req, plan, role);
    if (!bad)
        bad = check_kinds(t, req, role);
    /* shared: noise takes the second half of every domain's free cores. */
    if (!bad && req->policy == PLAN_SHARED && req->noise_ranks < 0 && plan->ntrainer > 0) {
        for (int d = 0; d < t->nnuma && !bad; d++) {
            int free_cores = 0, noise = 0, trainer = 0;
            for (int c = t->numa[d].first_core; c < t->numa[d].first_core + t->numa[d].ncores; c++) {
                free_cores += !hits(req->reserved, t->cores[c].pus) && !hits(req->trainer_taken, t->cores[c].pus) &&
                              !hits(req->cotenant_taken, t->cores[c].pus);
                noise += role[c] == 2;
                trainer += role[c] == 1;
            }
            if (noise != free_cores / 2 || trainer > (free_cores + 1) / 2)
                bad = failed("shared: domain %d is not split evenly (noise %d)", (int)t->numa[d].os_index, noise);
        }
    }
    if (!bad)
        bad = check_shared_packages(t, req, plan);
    if (!bad && req->noise_ranks >= 0 && plan->nnoise != req->noise_ranks)
        bad = failed("asked for %d noise ranks, got %d", req->noise_ranks, plan->nnoise);
    if (!bad)
        bad = check_srun(plan->trainer, plan->ntrainer);
    if (!bad)
        bad = check_srun(plan->noise, plan->nnoise);
    free(role);
    hwloc_bitmap_free(seen);
    return bad;
}
