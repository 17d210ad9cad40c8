/* planner: the primitives plan.c and its steps (plan_trainer.c, plan_noise.c) share — free cores
 * of a domain, a core added to a rank, the trainer ranks written out, warnings recorded once. */
#include "plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

void planner_warn(planner_t *p, const char *fmt, ...)
{
    if (p->plan->nwarnings >= PLAN_MAX_WARNINGS)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < p->plan->nwarnings; i++) /* a fallback tries the placement again */
        if (strcmp(p->plan->warnings[i], buf) == 0)
            return;
    p->plan->warnings[p->plan->nwarnings++] = strdup(buf);
}

/* Stable: hwloc order is kept inside a kind (it keeps a rank inside as few L3s as possible). */
static void sort_by_perf(const topo_t *t, int *order, int n, int fastest_first)
{
    for (int i = 1; i < n; i++) {
        int c = order[i], j = i;
        for (; j > 0; j--) {
            int prev = t->cores[order[j - 1]].perf, perf = t->cores[c].perf;
            if (fastest_first ? prev >= perf : prev <= perf)
                break;
            order[j] = order[j - 1];
        }
        order[j] = c;
    }
}

int planner_order_cores(planner_t *p)
{
    const topo_t *t = p->topo;
    p->fast_first = calloc(t->ncores > 0 ? (size_t)t->ncores : 1, sizeof *p->fast_first);
    p->slow_first = calloc(t->ncores > 0 ? (size_t)t->ncores : 1, sizeof *p->slow_first);
    if (!p->fast_first || !p->slow_first) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    for (int c = 0; c < t->ncores; c++)
        p->fast_first[c] = p->slow_first[c] = c;
    for (int d = 0; d < t->nnuma; d++) {
        const topo_numa_t *dom = &t->numa[d];
        sort_by_perf(t, p->fast_first + dom->first_core, dom->ncores, 1);
        sort_by_perf(t, p->slow_first + dom->first_core, dom->ncores, 0);
    }
    return 0;
}

int planner_free_cores(const planner_t *p, int numa)
{
    const topo_numa_t *d = &p->topo->numa[numa];
    int n = 0;
    for (int c = d->first_core; c < d->first_core + d->ncores; c++)
        n += p->use[c] == CORE_FREE;
    return n;
}

void planner_add_core(planner_t *p, plan_rank_t *rank, int core)
{
    const topo_core_t *c = &p->topo->cores[core];
    hwloc_bitmap_t pus = hwloc_bitmap_dup(c->pus);
    if (p->req->allowed)
        hwloc_bitmap_and(pus, pus, p->req->allowed);
    if (p->req->smt)
        hwloc_bitmap_or(rank->cpus, rank->cpus, pus);
    else
        hwloc_bitmap_set(rank->cpus,
                         (unsigned)(hwloc_bitmap_isset(pus, (unsigned)c->first_pu) ? c->first_pu
                                                                                   : hwloc_bitmap_first(pus)));
    hwloc_bitmap_free(pus);
    const topo_numa_t *d = &p->topo->numa[c->numa];
    hwloc_bitmap_or(rank->mems, rank->mems, d->mems);
    if (!d->mem_allowed) {
        char *list = cpulist_format(d->mems);
        planner_warn(p,
                     "numa %u's memory is not allowed here (cpuset.mems): ranks on its cores bind their memory to "
                     "numa %s, which other ranks may use too",
                     d->os_index, list && *list ? list : "(none)");
        free(list);
    }
}

static void rank_init(plan_rank_t *r, int rank, int gpu, unsigned numa)
{
    r->rank = rank;
    r->gpu = gpu;
    r->numa = numa;
    r->cpus = hwloc_bitmap_alloc();
    r->mems = hwloc_bitmap_alloc();
}

/* --mem hbm: each trainer rank's memory also on the high-bandwidth memory local to its cores;
 * a rank whose domains have none keeps its plain binding, and the plan says so once. */
static void add_hbm(planner_t *p)
{
    const topo_t *t = p->topo;
    hwloc_bitmap_t without = hwloc_bitmap_alloc();
    for (int c = 0; c < t->ncores; c++) {
        if (p->use[c] != CORE_TRAINER)
            continue;
        const topo_numa_t *d = &t->numa[t->cores[c].numa];
        hwloc_bitmap_or(p->plan->trainer[p->owner[c]].mems, p->plan->trainer[p->owner[c]].mems, d->hbm);
        if (hwloc_bitmap_iszero(d->hbm))
            hwloc_bitmap_set(without, d->os_index);
    }
    if (!hwloc_bitmap_iszero(without)) {
        char *list = cpulist_format(without);
        planner_warn(p,
                     "--mem hbm: numa %s has no allowed high-bandwidth memory of its own: its trainer ranks' "
                     "memory stays on plain memory",
                     list ? list : "?");
        free(list);
    }
    hwloc_bitmap_free(without);
}

int planner_emit_trainer(planner_t *p)
{
    plan_t *plan = p->plan;
    plan->trainer = calloc(p->nranks > 0 ? (size_t)p->nranks : 1, sizeof *plan->trainer);
    if (!plan->trainer) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    plan->ntrainer = p->nranks;
    for (int r = 0; r < p->nranks; r++)
        rank_init(&plan->trainer[r], r, p->gpu[r], p->topo->numa[p->home[r]].os_index);
    for (int c = 0; c < p->topo->ncores; c++)
        if (p->use[c] == CORE_TRAINER)
            planner_add_core(p, &plan->trainer[p->owner[c]], c);
    if (p->req->mem == PLAN_MEM_HBM)
        add_hbm(p);
    return 0;
}
