/* slurm_recipe_split: the planner's split of a GPU node into the GPU jobs' cores and the
 * co-tenants', and the CPU and memory figures of the recipe that follow from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "plan.h"
#include "slurm_recipe_internal.h"

/* MemSpecLimit's rule: a 32nd of the node for the OS, slurmd, slurmstepd and coschedd, at least
 * 2 GiB (a Debian system with Slurm idles near 1 GiB), at most 16 GiB (what is above is page cache
 * the jobs' cgroups account for anyway), and never more than a quarter of a small node. */
static unsigned long long mem_spec_rule(unsigned long long real_mib)
{
    unsigned long long spec = real_mib / 32;
    if (spec < 2048)
        spec = 2048;
    if (spec > 16384)
        spec = 16384;
    return spec > real_mib / 4 ? real_mib / 4 : spec;
}

/* Slurm's core id of a plannable core: its place among its domain's cores, read off the domain's
 * core ids; -1 where a cgroup hid some of them and the places no longer line up. */
static int slurm_core_id(const topo_t *t, int core)
{
    const topo_numa_t *d = &t->numa[t->cores[core].numa];
    if (hwloc_bitmap_weight(d->core_ids) != d->ncores)
        return -1;
    int id = hwloc_bitmap_first(d->core_ids);
    for (int k = d->first_core; k < core && id >= 0; k++)
        id = hwloc_bitmap_next(d->core_ids, id);
    return id;
}

/* The co-tenants' core with the highest Slurm id gives the OS its CPUs: Slurm's abstract CPU ids,
 * core id x threads + thread, every thread of it. A small co-tenant side keeps all its cores. */
static void choose_spec_core(const topo_t *t, hwloc_const_bitmap_t cotenant, recipe_split_t *s)
{
    int best = -1;
    if (s->cotenant_cores < RECIPE_SPEC_CORE_FROM)
        return;
    for (int c = 0; c < t->ncores; c++)
        if (hwloc_bitmap_intersects(t->cores[c].pus, cotenant)) {
            int id = slurm_core_id(t, c);
            if (id < 0)
                return;
            if (id > best)
                best = id;
        }
    if (best < 0)
        return;
    size_t n = 0;
    for (int th = 0; th < s->threads_per_core && n < sizeof s->spec_cpus; th++)
        n += (size_t)snprintf(s->spec_cpus + n, sizeof s->spec_cpus - n, "%s%d", th ? "," : "",
                              best * s->threads_per_core + th);
    s->spec_ncpus = s->threads_per_core;
}

/* Cores of the node that hold any of these PUs. */
static int cores_holding(const topo_t *t, hwloc_const_bitmap_t pus)
{
    int n = 0;
    for (int c = 0; c < t->ncores; c++)
        n += hwloc_bitmap_intersects(t->cores[c].pus, pus);
    return n;
}

static void split_memory(recipe_split_t *s, long long mem_spec_mib)
{
    s->mem_spec_mib = mem_spec_mib >= 0 ? (unsigned long long)mem_spec_mib : mem_spec_rule(s->real_memory_mib);
    unsigned long long usable = s->real_memory_mib > s->mem_spec_mib ? s->real_memory_mib - s->mem_spec_mib : 0;
    int job_cpus = s->cpus - s->spec_ncpus;
    /* Each CPU its even share of what jobs may use: the harvest side gets its CPUs' worth, the
     * GPU jobs the rest, per GPU. */
    s->def_mem_per_cpu = job_cpus > 0 ? usable / (unsigned long long)job_cpus : 0;
    s->harvest_max_mem = s->def_mem_per_cpu * (unsigned long long)s->harvest_max_cpus;
    s->def_mem_per_gpu = s->ngpus > 0 ? (usable - s->harvest_max_mem) / (unsigned long long)s->ngpus : 0;
}

int recipe_split_node(const topo_t *t, unsigned long long real_memory_mib, long long mem_spec_mib, recipe_split_t *s,
                      char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cpus = t->slurm.cpus;
    s->threads_per_core = t->slurm.cores > 0 ? t->slurm.cpus / t->slurm.cores : 1;
    s->ngpus = t->ngpus;
    s->real_memory_mib = real_memory_mib;
    split_memory(s, mem_spec_mib);
    if (t->ngpus == 0)
        return 0;
    plan_request_t req;
    plan_request_init(&req);
    plan_t *plan = plan_compute(t, &req, err, errlen);
    if (!plan)
        return -1;
    hwloc_bitmap_t trainer = hwloc_bitmap_alloc(), cotenant = hwloc_bitmap_alloc(), rank = hwloc_bitmap_alloc();
    int ok = trainer && cotenant && rank ? 0 : -1;
    for (int i = 0; ok == 0 && i < plan->ntrainer; i++)
        hwloc_bitmap_or(trainer, trainer, plan->trainer[i].cpus);
    for (int i = 0; ok == 0 && i < plan->nnoise; i++)
        hwloc_bitmap_or(cotenant, cotenant, plan->noise[i].cpus);
    s->restricted_cores_per_gpu = -1;
    for (int g = 0; ok == 0 && g < t->ngpus; g++) {
        hwloc_bitmap_zero(rank);
        for (int i = 0; i < plan->ntrainer; i++)
            if (plan->trainer[i].gpu == g)
                hwloc_bitmap_or(rank, rank, plan->trainer[i].cpus);
        int n = cores_holding(t, rank);
        if (s->restricted_cores_per_gpu < 0 || n < s->restricted_cores_per_gpu)
            s->restricted_cores_per_gpu = n;
    }
    if (ok == 0) {
        snprintf(s->isolation, sizeof s->isolation, "%s", plan_isolation_name(plan->isolation));
        s->gpu_cores = cores_holding(t, trainer);
        s->cotenant_cores = cores_holding(t, cotenant);
        char *list = cpulist_format(cotenant);
        if ((size_t)snprintf(s->cotenant_cpus, sizeof s->cotenant_cpus, "%s", list && *list ? list : "-") >=
            sizeof s->cotenant_cpus) /* a list too long to keep whole says so, rather than end mid-number */
            snprintf(s->cotenant_cpus + sizeof s->cotenant_cpus - 5, 5, "...");
        free(list);
        choose_spec_core(t, cotenant, s);
        s->harvest_max_cpus = s->cotenant_cores * s->threads_per_core - s->spec_ncpus;
        split_memory(s, mem_spec_mib);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    hwloc_bitmap_free(trainer);
    hwloc_bitmap_free(cotenant);
    hwloc_bitmap_free(rank);
    plan_free(plan);
    return ok;
}
