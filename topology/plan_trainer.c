/* plan_trainer: cores for the trainer ranks. Local policies keep each rank inside its home domain,
 * GPU-nearest cores first; shared gives the trainer half of every domain, as in the JUWELS study. */
#include "plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

static int cap_default(int k)
{
    return k > PLAN_DEFAULT_MAX_CORES_PER_RANK ? PLAN_DEFAULT_MAX_CORES_PER_RANK : k;
}

/* Cores per rank when the request leaves it open: each rank's part of the row's share of its
 * home domain's free cores — all of them split over the ranks there, or for a share of 2 half of
 * them, each rank's part rounded up as the shared policy rounds the trainer's half up — the
 * smallest over the home domains, at most PLAN_DEFAULT_MAX_CORES_PER_RANK. At least 1, so that a
 * domain with more ranks than cores is refused with the numbers rather than given empty ranks.
 * Inside an allocation the job holds every core of it anyway: ranks split all they find there. */
static int local_cores_per_rank(planner_t *p)
{
    int k = -1, share = p->req->allowed ? 1 : p->row->trainer_share;
    for (int d = 0; d < p->topo->nnuma; d++) {
        if (p->ranks_on[d] == 0)
            continue;
        int free_cores = planner_free_cores(p, d), parts = share * p->ranks_on[d];
        int fit = share == 1 ? free_cores / parts : (free_cores + parts - 1) / parts;
        if (fit < 1)
            fit = 1;
        if (k < 0 || fit < k)
            k = fit;
    }
    return p->req->allowed ? k : cap_default(k);
}

/* Give rank r up to `need` free cores of its home domain, only those whose first PU is in `only`
 * when given and, for perf >= 0, only cores of that perf; returns how many it still needs. Cores
 * go fastest kind first, in hwloc order inside a kind, which keeps a rank inside as few L3s as
 * possible and leaves whole L3s free for the l3 policy. */
static int take_cores(planner_t *p, int r, hwloc_const_bitmap_t only, int need, int perf)
{
    const topo_numa_t *d = &p->topo->numa[p->home[r]];
    for (int i = 0; i < d->ncores && need > 0; i++) {
        int c = p->fast_first[d->first_core + i];
        const topo_core_t *core = &p->topo->cores[c];
        if (p->use[c] == CORE_FREE && (!only || hwloc_bitmap_isset(only, (unsigned)core->first_pu)) &&
            (perf < 0 || core->perf == perf)) {
            p->use[c] = CORE_TRAINER;
            p->owner[c] = r;
            need--;
        }
    }
    return need;
}

/* The cores rank r may take in this pass: its GPU's nearest ones first (pass 0; a CPU rank has
 * none), then the rest of its home domain (pass 1). NULL means any; *skip that there are none. */
static hwloc_const_bitmap_t pass_cpus(const planner_t *p, int r, int pass, int *skip)
{
    *skip = pass == 0 && p->gpu[r] < 0;
    return pass == 0 && p->gpu[r] >= 0 ? p->topo->gpus[p->gpu[r]].nearest_cpus : NULL;
}

/* A faster kind that cannot give every rank of a domain all it needs is split evenly over them:
 * data-parallel ranks wait for the slowest, so each gets its part of the fast cores rather than
 * the first ranks all of them. Per domain, the ranks still in need take, in rank order, their
 * part of the free cores of this perf (the first ones one more where it does not divide), each
 * in one block; a part a rank did not need goes one core a rank to those that do. */
static void share_kind(planner_t *p, int *need, int pass, int perf)
{
    const topo_t *t = p->topo;
    int skip;
    for (int d = 0; d < t->nnuma; d++) {
        int avail = 0, nneed = 0;
        const topo_numa_t *dom = &t->numa[d];
        for (int c = dom->first_core; c < dom->first_core + dom->ncores; c++)
            avail += p->use[c] == CORE_FREE && t->cores[c].perf == perf;
        for (int r = 0; r < p->nranks; r++) {
            pass_cpus(p, r, pass, &skip);
            nneed += p->home[r] == d && need[r] > 0 && !skip;
        }
        if (nneed == 0 || avail == 0)
            continue;
        int part = avail / nneed, extra = avail % nneed;
        for (int r = 0; r < p->nranks; r++) {
            hwloc_const_bitmap_t only = pass_cpus(p, r, pass, &skip);
            if (p->home[r] != d || skip || need[r] == 0)
                continue;
            int want = part + (extra > 0);
            extra -= extra > 0;
            want = need[r] < want ? need[r] : want;
            need[r] -= want - take_cores(p, r, only, want, perf);
        }
        for (int progressed = 1; progressed;) {
            progressed = 0;
            for (int r = 0; r < p->nranks; r++) {
                hwloc_const_bitmap_t only = pass_cpus(p, r, pass, &skip);
                if (p->home[r] != d || skip || need[r] == 0 || take_cores(p, r, only, 1, perf) == 1)
                    continue;
                need[r]--;
                progressed = 1;
            }
        }
    }
}

static void describe_gpus_on(const planner_t *p, int numa, char *out, size_t outlen)
{
    size_t len = 0;
    int last = -1;
    out[0] = '\0';
    for (int r = 0; r < p->nranks && len < outlen; r++)
        if (p->home[r] == numa && p->gpu[r] >= 0 && p->gpu[r] != last) {
            len += (size_t)snprintf(out + len, outlen - len, "%s%d", last < 0 ? "" : ",", p->gpu[r]);
            last = p->gpu[r];
        }
    if (!out[0])
        snprintf(out, outlen, "none");
}

int plan_trainer_local(planner_t *p)
{
    const topo_t *t = p->topo;
    if (p->nranks == 0)
        return 0;
    int k = p->req->cores_per_rank ? p->req->cores_per_rank : local_cores_per_rank(p);
    for (int d = 0; d < t->nnuma; d++) {
        if (p->ranks_on[d] == 0)
            continue;
        int free_cores = planner_free_cores(p, d);
        if (k < 1 || k * p->ranks_on[d] > free_cores) {
            char gpus[128];
            describe_gpus_on(p, d, gpus, sizeof gpus);
            snprintf(p->err, p->errlen,
                     "cannot give %d core%s to each of %d trainer rank%s on numa %u (GPU %s): it has %d free core%s",
                     k < 1 ? 1 : k, k <= 1 ? "" : "s", p->ranks_on[d], p->ranks_on[d] == 1 ? "" : "s",
                     t->numa[d].os_index, gpus, free_cores, free_cores == 1 ? "" : "s");
            return -1;
        }
    }
    /* First every rank takes the cores nearest its GPU (under an L3 or die when the GPU hangs
     * there, as on Tioga), then what it still needs from the rest of its home domain. In each
     * pass the faster kinds of a hybrid CPU go first, shared evenly; the slowest (every core,
     * where the node has one kind) rank by rank. */
    int *need = calloc((size_t)p->nranks, sizeof *need), top = 0, skip;
    if (!need) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    for (int c = 0; c < t->ncores; c++)
        top = t->cores[c].perf > top ? t->cores[c].perf : top;
    for (int r = 0; r < p->nranks; r++)
        need[r] = k;
    for (int pass = 0; pass < 2; pass++) {
        for (int perf = top; perf > 0; perf--)
            share_kind(p, need, pass, perf);
        for (int r = 0; r < p->nranks; r++) {
            hwloc_const_bitmap_t only = pass_cpus(p, r, pass, &skip);
            if (!skip)
                need[r] = take_cores(p, r, only, need[r], -1);
        }
    }
    free(need);
    return 0;
}

/* Split every domain's free cores: the first half (rounded up, fastest kind first) for the
 * trainer, the rest noise. */
static int mark_trainer_halves(planner_t *p, int *half_size)
{
    const topo_t *t = p->topo;
    int total = 0;
    for (int d = 0; d < t->nnuma; d++) {
        int want = (planner_free_cores(p, d) + 1) / 2;
        half_size[d] = want;
        total += want;
        const topo_numa_t *dom = &t->numa[d];
        for (int i = 0; i < dom->ncores && want > 0; i++) {
            int c = p->fast_first[dom->first_core + i];
            if (p->use[c] == CORE_FREE) {
                p->use[c] = CORE_HELD;
                want--;
            }
        }
    }
    return total;
}

/* Take up to n held cores of domain d for rank r, fastest kind first; returns how many it got. */
static int take_held(planner_t *p, int d, int r, int n)
{
    const topo_numa_t *dom = &p->topo->numa[d];
    int got = 0;
    for (int i = 0; i < dom->ncores && got < n; i++) {
        int c = p->fast_first[dom->first_core + i];
        if (p->use[c] == CORE_HELD) {
            p->use[c] = CORE_TRAINER;
            p->owner[c] = r;
            got++;
        }
    }
    return got;
}

/* Preference for the cores a rank still needs: its home, then the same package, a domain no
 * other rank calls home, then the closest OS index. Lower is better. */
static long away_cost(const planner_t *p, int home, int d)
{
    const topo_numa_t *h = &p->topo->numa[home], *x = &p->topo->numa[d];
    if (d == home)
        return -1; /* what rounding left at home comes first */
    long dist = (long)x->os_index - (long)h->os_index;
    if (dist < 0)
        dist = -dist;
    return (h->package != x->package) * 1000000L + (p->ranks_on[d] > 0) * 10000L + dist;
}

/* A rank that got no core at home (more ranks than the home half has cores) belongs to the
 * domain holding most of its cores, so that its memory binding stays local to its threads. */
static void relabel_homeless_ranks(planner_t *p)
{
    const topo_t *t = p->topo;
    int *count = calloc((size_t)t->nnuma, sizeof *count);
    if (!count)
        return;
    for (int r = 0; r < p->nranks; r++) {
        memset(count, 0, (size_t)t->nnuma * sizeof *count);
        for (int c = 0; c < t->ncores; c++)
            if (p->use[c] == CORE_TRAINER && p->owner[c] == r)
                count[t->cores[c].numa]++;
        if (count[p->home[r]] > 0)
            continue;
        for (int d = 0; d < t->nnuma; d++)
            if (count[d] > count[p->home[r]])
                p->home[r] = d;
    }
    free(count);
}

/* The package of a rank's home domain; -1 when hwloc names none (then all such domains count as
 * one package, which keeps nothing from spilling between them). */
static int home_package(const planner_t *p, int r)
{
    return p->topo->numa[p->home[r]].package;
}

/* Cores per rank when the request leaves it open: the trainer half of the node split over the
 * ranks, but no more than each package's trainer half gives the GPU ranks whose home is there, so
 * that a rank never spills onto another package (on two sockets with GPUs 3 + 1, three ranks
 * split socket 0's half and the fourth takes as many on socket 1). A package with more ranks than
 * trainer-half cores is left to spill: at least 1. A CPU trainer has no GPU to stay near. */
static int shared_cores_per_rank(const planner_t *p, const int *half, int total)
{
    const topo_t *t = p->topo;
    int k = total / p->nranks;
    for (int r = 0; r < p->nranks; r++) {
        if (p->gpu[r] < 0)
            continue;
        int pkg = home_package(p, r), held = 0, ranks = 0;
        for (int d = 0; d < t->nnuma; d++)
            held += t->numa[d].package == pkg ? half[d] : 0;
        for (int o = 0; o < p->nranks; o++)
            ranks += p->gpu[o] >= 0 && home_package(p, o) == pkg;
        int fit = held / ranks > 0 ? held / ranks : 1;
        if (fit < k)
            k = fit;
    }
    return cap_default(k);
}

/* An explicit --cores-per-rank may not fit a crowded package's trainer half, nor may one core per
 * rank: say which rank runs on another package's cores and, when one does, the size that fits. */
static void warn_cross_package(planner_t *p, int fits)
{
    const topo_t *t = p->topo;
    for (int r = 0; r < p->nranks; r++) {
        if (p->gpu[r] < 0)
            continue;
        hwloc_bitmap_t away = hwloc_bitmap_alloc();
        for (int c = 0; c < t->ncores; c++)
            if (p->use[c] == CORE_TRAINER && p->owner[c] == r &&
                t->numa[t->cores[c].numa].package != home_package(p, r))
                hwloc_bitmap_set(away, t->numa[t->cores[c].numa].os_index);
        if (!hwloc_bitmap_iszero(away)) {
            char *list = cpulist_format(away), why[128];
            if (p->req->cores_per_rank > fits)
                snprintf(why, sizeof why, "--cores-per-rank %d keeps every rank on its GPU's package", fits);
            else
                snprintf(why, sizeof why, "it has fewer trainer-half cores than ranks");
            planner_warn(p,
                         "trainer rank %d (GPU %d) also runs on numa %s, in another package than its GPU: package "
                         "%d's trainer half is too small for its ranks; %s",
                         r, p->gpu[r], list ? list : "?", home_package(p, r), why);
            free(list);
        }
        hwloc_bitmap_free(away);
    }
}

int plan_trainer_shared(planner_t *p)
{
    const topo_t *t = p->topo;
    int *half = calloc((size_t)t->nnuma, sizeof *half);
    int *got = calloc(p->nranks > 0 ? (size_t)p->nranks : 1, sizeof *got);
    int rc = -1;
    if (!half || !got) {
        snprintf(p->err, p->errlen, "out of memory");
        goto out;
    }
    if (p->nranks == 0) { /* no trainer in this plan: nothing to split, noise may go anywhere */
        rc = 0;
        goto out;
    }
    int total = mark_trainer_halves(p, half);
    int fits = shared_cores_per_rank(p, half, total);
    int k = p->req->cores_per_rank ? p->req->cores_per_rank : fits;
    if (k < 1 || k * p->nranks > total) {
        snprintf(p->err, p->errlen,
                 "cannot give %d core%s to each of %d trainer ranks: the shared policy gives the trainer half of "
                 "every domain, %d free cores in all",
                 k < 1 ? 1 : k, k <= 1 ? "" : "s", p->nranks, total);
        goto out;
    }
    /* First every rank takes its share of its home domain, then what it still needs nearby. */
    for (int r = 0; r < p->nranks; r++) {
        int share = half[p->home[r]] / p->ranks_on[p->home[r]];
        got[r] = take_held(p, p->home[r], r, share < k ? share : k);
    }
    for (int r = 0; r < p->nranks; r++) {
        while (got[r] < k) {
            int best = -1;
            for (int d = 0; d < t->nnuma; d++) {
                int avail = 0;
                const topo_numa_t *dom = &t->numa[d];
                for (int c = dom->first_core; c < dom->first_core + dom->ncores; c++)
                    avail += p->use[c] == CORE_HELD;
                if (avail > 0 && (best < 0 || away_cost(p, p->home[r], d) < away_cost(p, p->home[r], best)))
                    best = d;
            }
            if (best < 0)
                break; /* cannot happen: k * nranks <= total */
            got[r] += take_held(p, best, r, k - got[r]);
        }
    }
    warn_cross_package(p, fits);
    relabel_homeless_ranks(p);
    rc = 0;
out:
    free(half);
    free(got);
    return rc;
}
