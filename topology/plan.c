/* plan: validate a request, give every trainer rank a home domain next to its GPU, let the policy
 * place trainer cores, fall back while no core is apart at its level, then place noise ranks. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

void plan_request_init(plan_request_t *req)
{
    memset(req, 0, sizeof *req);
    req->policy = PLAN_EXCLUSIVE;
    req->ranks_per_gpu = 1;
    req->noise_ranks = -1;
}

static const char *const mem_names[] = {[PLAN_MEM_LOCAL] = "local", [PLAN_MEM_HBM] = "hbm"};

const char *plan_mem_name(plan_mem_t mem)
{
    return (unsigned)mem <= PLAN_MEM_HBM ? mem_names[mem] : "?";
}

int plan_mem_parse(const char *name, plan_mem_t *out)
{
    for (int i = 0; name && i <= PLAN_MEM_HBM; i++)
        if (strcmp(name, mem_names[i]) == 0) {
            *out = (plan_mem_t)i;
            return 0;
        }
    return -1;
}

static int intersects(hwloc_const_bitmap_t set, hwloc_const_bitmap_t other)
{
    return set && other && hwloc_bitmap_intersects(set, other);
}

/* Cores other jobs hold, and the domains / L3s their co-tenants sit in when the row keeps
 * co-tenants apart at that level: no trainer rank of this plan may use them. */
static void mark_taken(planner_t *p)
{
    const topo_t *t = p->topo;
    const plan_request_t *req = p->req;
    plan_isolation_t level = p->row->isolation;
    hwloc_bitmap_t pus = hwloc_bitmap_alloc();
    for (int c = 0; c < t->ncores; c++) {
        /* Cores are whole, except inside an allocation: a batch system that hands out SMT
         * siblings separately may give this job a PU whose sibling another job holds. */
        hwloc_bitmap_copy(pus, t->cores[c].pus);
        if (req->allowed)
            hwloc_bitmap_and(pus, pus, req->allowed);
        p->use[c] = hwloc_bitmap_iszero(pus) || intersects(pus, req->reserved) || intersects(pus, req->trainer_taken) ||
                            intersects(pus, req->cotenant_taken)
                        ? CORE_RESERVED
                        : CORE_FREE;
        p->owner[c] = -1;
    }
    hwloc_bitmap_free(pus);
    if (!req->cotenant_taken || level < PLAN_ISOLATE_L3)
        return;
    for (int c = 0; c < t->ncores; c++) {
        if (!intersects(t->cores[c].pus, req->cotenant_taken))
            continue;
        for (int o = 0; o < t->ncores; o++)
            if (plan_isolation_close(t, level, c, o))
                p->use[o] = p->use[o] == CORE_FREE ? CORE_BLOCKED : p->use[o];
    }
}

static int check_request(const planner_t *p)
{
    const plan_request_t *req = p->req;
    if (!plan_policy_info(req->policy)) {
        snprintf(p->err, p->errlen, "unknown placement policy");
        return -1;
    }
    if ((unsigned)req->mem > PLAN_MEM_HBM) {
        snprintf(p->err, p->errlen, "unknown memory binding");
        return -1;
    }
    if (req->ranks_per_gpu < 1 || req->cores_per_rank < 0 || req->noise_ranks < -1 || req->cpu_ranks < 0) {
        snprintf(p->err, p->errlen, "ranks per GPU must be >= 1, cores per rank >= 0, noise ranks and CPU ranks >= 0");
        return -1;
    }
    return 0;
}

/* The GPUs the trainer uses, in index order; an unknown index is an error, not a skip. */
static int resolve_gpus(planner_t *p, int **gpus, int *ngpus)
{
    const topo_t *t = p->topo;
    hwloc_const_bitmap_t want = p->req->gpus;
    *gpus = calloc(t->ngpus > 0 ? (size_t)t->ngpus : 1, sizeof **gpus);
    *ngpus = 0;
    if (!*gpus) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    if (p->req->cpu_ranks > 0)
        return 0; /* a CPU trainer uses no GPU */
    if (want && hwloc_bitmap_weight(want) >= 0) {
        int last = hwloc_bitmap_last(want);
        if (last >= t->ngpus) {
            if (t->ngpus == 0)
                snprintf(p->err, p->errlen, "GPU %d does not exist: %s has no GPUs", last, t->source);
            else
                snprintf(p->err, p->errlen, "GPU %d does not exist: %s has %d GPU%s (0-%d)", last, t->source, t->ngpus,
                         t->ngpus == 1 ? "" : "s", t->ngpus - 1);
            return -1;
        }
    }
    for (int g = 0; g < t->ngpus; g++)
        if (!want || hwloc_bitmap_isset(want, (unsigned)g))
            (*gpus)[(*ngpus)++] = g;
    if (t->ngpus == 0 && !want)
        planner_warn(p, "%s has no GPUs: the plan has no trainer ranks", t->source);
    return 0;
}

/* With an allocation that holds no core of the GPU's domains, the domain where it holds the most
 * free cores per rank: the rank runs away from its GPU rather than not at all (warned). */
static int home_away(planner_t *p, const topo_gpu_t *g)
{
    const topo_t *t = p->topo;
    int best = -1;
    double best_room = 0;
    for (int d = 0; d < t->nnuma; d++) {
        int free_cores = planner_free_cores(p, d);
        double room = (double)free_cores / (p->ranks_on[d] + 1);
        if (free_cores > 0 && (best < 0 || room > best_room)) {
            best = d;
            best_room = room;
        }
    }
    if (best >= 0) {
        char *list = cpulist_format(g->numa);
        planner_warn(p,
                     "GPU %d is local to numa %s, where the allowed CPUs hold no free core: its rank runs on "
                     "numa %u, away from the GPU",
                     g->index, list ? list : "?", t->numa[best].os_index);
        free(list);
    }
    return best;
}

/* A CPU trainer's ranks all call the first domain with free cores home (the one a GPU trainer
 * would not prefer either way: there is no GPU to be near). */
static int assign_cpu_homes(planner_t *p)
{
    const topo_t *t = p->topo;
    int home = -1;
    for (int d = 0; d < t->nnuma && home < 0; d++)
        if (planner_free_cores(p, d) > 0)
            home = d;
    if (home < 0) {
        snprintf(p->err, p->errlen, "no domain of %s has a free core for the trainer", t->source);
        return -1;
    }
    for (int r = 0; r < p->nranks; r++) {
        p->home[r] = home;
        p->gpu[r] = -1;
        p->ranks_on[home]++;
    }
    return 0;
}

/* Home domain of each trainer rank: among the GPU's local domains with free cores, the one
 * with the most free cores per rank already placed there (ties: lowest OS index). */
static int assign_homes(planner_t *p, const int *gpus, int ngpus)
{
    const topo_t *t = p->topo;
    memset(p->ranks_on, 0, (size_t)t->nnuma * sizeof *p->ranks_on);
    if (p->req->cpu_ranks > 0)
        return assign_cpu_homes(p);
    int r = 0;
    for (int i = 0; i < ngpus; i++) {
        const topo_gpu_t *g = &t->gpus[gpus[i]];
        for (int k = 0; k < p->req->ranks_per_gpu; k++, r++) {
            int best = -1;
            double best_room = 0;
            for (int d = 0; d < t->nnuma; d++) {
                if (!hwloc_bitmap_isset(g->numa, t->numa[d].os_index))
                    continue;
                int free_cores = planner_free_cores(p, d);
                double room = (double)free_cores / (p->ranks_on[d] + 1);
                if (free_cores > 0 && (best < 0 || room > best_room)) {
                    best = d;
                    best_room = room;
                }
            }
            if (best < 0 && p->req->allowed)
                best = home_away(p, g);
            if (best < 0) {
                char *list = cpulist_format(g->numa);
                snprintf(p->err, p->errlen, "GPU %d%s%s%s is local to numa %s, which has no free cores", g->index,
                         *g->name ? " (" : "", g->name, *g->name ? ")" : "", list && *list ? list : "(none)");
                free(list);
                return -1;
            }
            p->home[r] = best;
            p->gpu[r] = g->index;
            p->ranks_on[best]++;
        }
    }
    return 0;
}

/* One try at a policy: trainer ranks placed on the cores its row allows, noise not yet.
 * Returns the cores apart from the trainer at the row's level, or -1 with p->err set. */
static int attempt(planner_t *p, plan_policy_t policy, const int *gpus, int ngpus)
{
    p->row = plan_policy_info(policy);
    mark_taken(p);
    if (assign_homes(p, gpus, ngpus) < 0)
        return -1;
    if ((p->row->trainer == PLAN_TRAINER_HALVES ? plan_trainer_shared(p) : plan_trainer_local(p)) < 0)
        return -1;
    return plan_noise_room(p);
}

/* "NUMA domain or L3": what the levels above `reached` would have kept apart, for the warning. */
static void describe_levels_given_up(plan_isolation_t from, plan_isolation_t reached, char *out, size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    if (from == PLAN_ISOLATE_NUMA && reached < PLAN_ISOLATE_NUMA)
        len += (size_t)snprintf(out + len, outlen - len, "NUMA domain");
    if (from >= PLAN_ISOLATE_L3 && reached < PLAN_ISOLATE_L3 && len < outlen)
        snprintf(out + len, outlen - len, "%sL3", len ? " or " : "");
}

/* Try the requested policy, then its fallbacks while no core is apart from the trainer at the
 * level tried, or while the trainer does not fit at that level beside other jobs' co-tenants
 * (a weaker level keeps it out of fewer domains and L3s: on a one-domain node a co-tenant that
 * registered first must not lock the trainer out). A fallback that cannot place the trainer
 * leaves the last plan that could, or the first refusal when none could. */
static int place_trainer(planner_t *p, const int *gpus, int ngpus)
{
    plan_policy_t policy = p->req->policy;
    int room = attempt(p, policy, gpus, ngpus);
    char refusal[512] = "";
    if (room < 0)
        snprintf(refusal, sizeof refusal, "%s", p->err);
    for (int step = 0; room <= 0 && p->row->fallback != policy && step < PLAN_NPOLICIES; step++) {
        plan_policy_t next = p->row->fallback;
        p->err[0] = '\0';
        int next_room = attempt(p, next, gpus, ngpus);
        if (next_room < 0 && room == 0) {
            p->err[0] = '\0';
            room = attempt(p, policy, gpus, ngpus);
            break;
        }
        policy = next;
        room = next_room;
    }
    if (room < 0 && refusal[0])
        snprintf(p->err, p->errlen, "%s", refusal);
    return room < 0 ? -1 : 0;
}

/* Say so when the plan keeps co-tenants less apart than the policy asked. */
static void warn_fallback(planner_t *p)
{
    plan_isolation_t asked = plan_policy_info(p->req->policy)->isolation, got = p->plan->isolation;
    if (got >= asked)
        return;
    char what[64];
    describe_levels_given_up(asked, got, what, sizeof what);
    planner_warn(p, "no %s is free of trainer cores: policy %s falls back to isolation %s (%s)", what,
                 plan_policy_name(p->req->policy), plan_isolation_name(got), plan_isolation_description(got));
}

plan_t *plan_compute(const topo_t *topo, const plan_request_t *req, char *err, size_t errlen)
{
    planner_t p = {.topo = topo, .req = req, .err = err, .errlen = errlen};
    int *gpus = NULL, ngpus = 0, ok = -1;
    err[0] = '\0';
    if (check_request(&p) < 0)
        return NULL;
    p.plan = calloc(1, sizeof *p.plan);
    p.use = calloc((size_t)topo->ncores, sizeof *p.use);
    p.owner = calloc((size_t)topo->ncores, sizeof *p.owner);
    p.ranks_on = calloc((size_t)topo->nnuma, sizeof *p.ranks_on);
    if (!p.plan || !p.use || !p.owner || !p.ranks_on) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    p.plan->policy = req->policy;
    if (planner_order_cores(&p) < 0 || resolve_gpus(&p, &gpus, &ngpus) < 0)
        goto out;
    p.nranks = req->cpu_ranks > 0 ? req->cpu_ranks : ngpus * req->ranks_per_gpu;
    p.home = calloc(p.nranks > 0 ? (size_t)p.nranks : 1, sizeof *p.home);
    p.gpu = calloc(p.nranks > 0 ? (size_t)p.nranks : 1, sizeof *p.gpu);
    if (!p.home || !p.gpu) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (place_trainer(&p, gpus, ngpus) < 0 || planner_emit_trainer(&p) < 0 || plan_noise(&p) < 0)
        goto out;
    warn_fallback(&p);
    ok = 0;
out:
    free(gpus);
    free(p.use);
    free(p.owner);
    free(p.ranks_on);
    free(p.fast_first);
    free(p.slow_first);
    free(p.home);
    free(p.gpu);
    if (ok < 0) {
        plan_free(p.plan);
        return NULL;
    }
    return p.plan;
}

static void free_ranks(plan_rank_t *ranks, int n)
{
    for (int i = 0; i < n; i++) {
        hwloc_bitmap_free(ranks[i].cpus);
        hwloc_bitmap_free(ranks[i].mems);
    }
    free(ranks);
}

void plan_free(plan_t *plan)
{
    if (!plan)
        return;
    free_ranks(plan->trainer, plan->ntrainer);
    free_ranks(plan->noise, plan->nnoise);
    for (int i = 0; i < plan->nwarnings; i++)
        free(plan->warnings[i]);
    free(plan);
}
