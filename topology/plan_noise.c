/* plan_noise: one-core noise ranks on the cores the policy leaves to co-tenants, spread evenly
 * over the eligible domains so memory-bandwidth noise loads every one of them alike. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

/* exclusive: not in a trainer domain and not under a trainer L3 (an L3 may span domains);
 * l3: not under a trainer L3; shared: whatever the trainer halves left free. Trainer cores of
 * other jobs (request.trainer_taken) count as trainer cores here. */
static void mark_eligible(const planner_t *p, char *eligible)
{
    const topo_t *t = p->topo;
    char *trainer_numa = calloc((size_t)t->nnuma, 1);
    int nl3 = 0;
    for (int c = 0; c < t->ncores; c++)
        if (t->cores[c].l3 + 1 > nl3)
            nl3 = t->cores[c].l3 + 1;
    char *trainer_l3 = calloc(nl3 > 0 ? (size_t)nl3 : 1, 1);
    if (!trainer_numa || !trainer_l3) {
        free(trainer_numa);
        free(trainer_l3);
        return; /* nothing eligible; the caller reports it */
    }
    hwloc_const_bitmap_t others = p->req->trainer_taken;
    for (int c = 0; c < t->ncores; c++)
        if (p->use[c] == CORE_TRAINER || (others && hwloc_bitmap_intersects(t->cores[c].pus, others))) {
            trainer_numa[t->cores[c].numa] = 1;
            trainer_l3[t->cores[c].l3] = 1;
        }
    for (int c = 0; c < t->ncores; c++) {
        const topo_core_t *core = &t->cores[c];
        int ok = p->use[c] == CORE_FREE || p->use[c] == CORE_BLOCKED;
        if (p->req->policy != PLAN_SHARED)
            ok = ok && !trainer_l3[core->l3];
        if (p->req->policy == PLAN_EXCLUSIVE)
            ok = ok && !trainer_numa[core->numa];
        eligible[c] = (char)ok;
    }
    free(trainer_numa);
    free(trainer_l3);
}

static void describe_domains(const planner_t *p, const char *eligible, char *out, size_t outlen)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int c = 0; c < p->topo->ncores; c++)
        if (eligible[c])
            hwloc_bitmap_set(set, p->topo->numa[p->topo->cores[c].numa].os_index);
    char *list = cpulist_format(set);
    snprintf(out, outlen, "%s", list && *list ? list : "none");
    free(list);
    hwloc_bitmap_free(set);
}

/* Choose n eligible cores round-robin over domains, so a partial request spreads evenly. */
static void choose_round_robin(planner_t *p, char *eligible, int n)
{
    const topo_t *t = p->topo;
    int *next = calloc((size_t)t->nnuma, sizeof *next);
    if (!next)
        return;
    for (int d = 0; d < t->nnuma; d++)
        next[d] = t->numa[d].first_core;
    while (n > 0) {
        int progressed = 0;
        for (int d = 0; d < t->nnuma && n > 0; d++) {
            const topo_numa_t *dom = &t->numa[d];
            while (next[d] < dom->first_core + dom->ncores && !eligible[next[d]])
                next[d]++;
            if (next[d] < dom->first_core + dom->ncores) {
                p->use[next[d]++] = CORE_NOISE;
                n--;
                progressed = 1;
            }
        }
        if (!progressed)
            break;
    }
    free(next);
}

int plan_noise(planner_t *p)
{
    const topo_t *t = p->topo;
    char *eligible = calloc((size_t)t->ncores, 1);
    if (!eligible) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    mark_eligible(p, eligible);
    int available = 0;
    for (int c = 0; c < t->ncores; c++)
        available += eligible[c];
    const char *policy = plan_policy_name(p->req->policy);
    int want = p->req->noise_ranks < 0 ? available : p->req->noise_ranks;
    if (want > available) {
        char where[256];
        describe_domains(p, eligible, where, sizeof where);
        snprintf(p->err, p->errlen,
                 "cannot place %d noise ranks: %d core%s %s free for noise under policy %s (numa %s)", want,
                 available, available == 1 ? "" : "s", available == 1 ? "is" : "are", policy, where);
        free(eligible);
        return -1;
    }
    if (p->req->noise_ranks < 0 && available == 0)
        planner_warn(p, "no core is left for noise: the trainer ranks take every free core that policy %s "
                        "allows noise to share; ask for fewer --cores-per-rank or another policy", policy);
    choose_round_robin(p, eligible, want);
    free(eligible);

    p->plan->noise = calloc(want > 0 ? (size_t)want : 1, sizeof *p->plan->noise);
    if (!p->plan->noise) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    /* Rank order follows the domains and cores, which reads naturally in lists and masks. */
    for (int c = 0; c < t->ncores; c++) {
        if (p->use[c] != CORE_NOISE)
            continue;
        plan_rank_t *r = &p->plan->noise[p->plan->nnoise];
        r->rank = p->plan->nnoise++;
        r->gpu = -1;
        r->numa = t->numa[t->cores[c].numa].os_index;
        r->cpus = hwloc_bitmap_alloc();
        r->mems = hwloc_bitmap_alloc();
        planner_add_core(p, r, c);
    }
    return 0;
}
