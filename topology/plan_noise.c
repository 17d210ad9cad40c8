/* plan_noise: which cores each isolation level keeps apart from the trainer, and one-core noise
 * ranks on them, spread evenly over the eligible domains so bandwidth noise loads each alike. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

/* How each level keeps noise away from the trainer, for the message that says what did not fit. */
static const char *const level_keeps_noise[] = {
    [PLAN_ISOLATE_NONE] = "on the noise half of every domain",
    [PLAN_ISOLATE_CORES] = "off the trainer's cores and their SMT siblings",
    [PLAN_ISOLATE_L3] = "off the trainer's L3s",
    [PLAN_ISOLATE_NUMA] = "off the trainer's NUMA domains and L3s",
};

/* Where the trainer is, this plan's ranks and other jobs' (request.trainer_taken): per core. */
typedef struct trainer_marks {
    char *core;
} trainer_marks_t;

static void marks_free(trainer_marks_t *m)
{
    free(m->core);
}

static int marks_init(const planner_t *p, trainer_marks_t *m)
{
    const topo_t *t = p->topo;
    m->core = calloc((size_t)t->ncores, 1);
    if (!m->core) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    hwloc_const_bitmap_t others = p->req->trainer_taken;
    for (int c = 0; c < t->ncores; c++)
        m->core[c] = p->use[c] == CORE_TRAINER || (others && hwloc_bitmap_intersects(t->cores[c].pus, others));
    return 0;
}

/* Whether the level keeps core c apart from every trainer core, whatever it is used for now:
 * never a trainer core, nor one the policy holds for the trainer (none: the trainer's half), nor
 * one the level counts as close to a trainer core (plan_isolation_close: numa also counts an L3
 * that spans domains; a core is whole: its SMT siblings go with it). */
static int apart_at(const planner_t *p, const trainer_marks_t *m, plan_isolation_t level, int c)
{
    if (m->core[c] || p->use[c] == CORE_HELD)
        return 0;
    for (int o = 0; o < p->topo->ncores; o++)
        if (m->core[o] && plan_isolation_close(p->topo, level, o, c))
            return 0;
    return 1;
}

int plan_noise_room(const planner_t *p)
{
    trainer_marks_t m;
    if (marks_init(p, &m) < 0)
        return -1;
    int n = 0;
    for (int c = 0; c < p->topo->ncores; c++)
        n += apart_at(p, &m, p->row->isolation, c);
    marks_free(&m);
    return n;
}

/* Eligible for noise: apart at the row's level and not held by anyone. Returns how many. */
static int mark_eligible(const planner_t *p, const trainer_marks_t *m, char *eligible)
{
    int n = 0;
    for (int c = 0; c < p->topo->ncores; c++) {
        eligible[c] = (char)(apart_at(p, m, p->row->isolation, c) &&
                             (p->use[c] == CORE_FREE || p->use[c] == CORE_BLOCKED));
        n += eligible[c];
    }
    return n;
}

/* Whether no other job's co-tenant core sits at `level` next to a trainer core of this plan. */
static int others_apart_at(const planner_t *p, plan_isolation_t level)
{
    const topo_t *t = p->topo;
    hwloc_const_bitmap_t cotenants = p->req->cotenant_taken;
    for (int c = 0; cotenants && c < t->ncores; c++) {
        if (!hwloc_bitmap_intersects(t->cores[c].pus, cotenants))
            continue;
        for (int o = 0; o < t->ncores; o++)
            if (p->use[o] == CORE_TRAINER && plan_isolation_close(t, level, o, c))
                return 0;
    }
    return 1;
}

/* The isolation the plan achieves: the strongest level that every core left to noise keeps
 * from every trainer core, and every other job's co-tenant from this plan's trainer. A row may
 * achieve more than it aims for: an L3 per core, as on POWER, turns a cores plan into an l3 one,
 * and shared, which aims for nothing, still keeps its halves' cores apart (cores, or l3 where the
 * halves fall on whole L3s). */
static plan_isolation_t achieved(const planner_t *p, const trainer_marks_t *m, const char *eligible)
{
    plan_isolation_t level = p->row->isolation;
    for (int up = PLAN_ISOLATE_NUMA; up > (int)level; up--) {
        int all = others_apart_at(p, (plan_isolation_t)up);
        for (int c = 0; c < p->topo->ncores && all; c++)
            all = !eligible[c] || apart_at(p, m, (plan_isolation_t)up, c);
        if (all)
            return (plan_isolation_t)up;
    }
    return level;
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

/* Choose n eligible cores round-robin over domains, so a partial request spreads evenly; inside
 * a domain the slowest kind of a hybrid CPU first, leaving the fast cores idle for the trainer. */
static void choose_round_robin(planner_t *p, char *eligible, int n)
{
    const topo_t *t = p->topo;
    int *next = calloc((size_t)t->nnuma, sizeof *next); /* position in the domain's slow_first */
    if (!next)
        return;
    while (n > 0) {
        int progressed = 0;
        for (int d = 0; d < t->nnuma && n > 0; d++) {
            const topo_numa_t *dom = &t->numa[d];
            const int *order = p->slow_first + dom->first_core;
            while (next[d] < dom->ncores && !eligible[order[next[d]]])
                next[d]++;
            if (next[d] < dom->ncores) {
                p->use[order[next[d]++]] = CORE_NOISE;
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
    trainer_marks_t m;
    if (marks_init(p, &m) < 0)
        return -1;
    char *eligible = calloc((size_t)t->ncores, 1);
    if (!eligible) {
        marks_free(&m);
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    int available = mark_eligible(p, &m, eligible);
    p->plan->isolation = achieved(p, &m, eligible);
    marks_free(&m);
    const char *policy = plan_policy_name(p->req->policy);
    plan_isolation_t level = p->row->isolation;
    int want = p->req->noise_ranks < 0 ? available : p->req->noise_ranks;
    if (want > available) {
        char where[256], fell[64] = "";
        describe_domains(p, eligible, where, sizeof where);
        if (level != plan_policy_info(p->req->policy)->isolation)
            snprintf(fell, sizeof fell, " (fallen back to isolation %s)", plan_isolation_name(level));
        snprintf(p->err, p->errlen,
                 "cannot place %d noise ranks: %d core%s %s free for noise under policy %s%s, which keeps noise %s "
                 "(numa %s)%s",
                 want, available, available == 1 ? "" : "s", available == 1 ? "is" : "are", policy, fell,
                 level_keeps_noise[level], where,
                 level > PLAN_ISOLATE_CORES ? "; --policy cores lets noise use every core the trainer does not" : "");
        free(eligible);
        return -1;
    }
    if (p->req->noise_ranks < 0 && available == 0)
        planner_warn(p,
                     "no core is left for noise: the trainer ranks take every free core that policy %s (isolation "
                     "%s) leaves to noise; ask for fewer --cores-per-rank or another policy",
                     policy, plan_isolation_name(level));
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
