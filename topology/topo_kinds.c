/* topo_kinds: hwloc's CPU kinds (the performance and efficiency cores of a hybrid CPU) and each
 * plannable core's kind, so that trainer ranks take the fastest cores and noise the others. */
#include "topo_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hwloc ranks kinds by an efficiency that grows with performance, or leaves them all at -1
 * when it cannot tell (no OS ranking, no core type or frequency): then the kinds are shown but
 * the planner treats every core alike, as on a machine with one kind. */
static int kinds_ranked(const topo_t *t)
{
    if (t->nkinds < 2)
        return 0;
    for (int k = 0; k < t->nkinds; k++)
        if (t->kinds[k].efficiency < 0)
            return 0;
    return 1;
}

static void read_kind(hwloc_topology_t hw, unsigned index, topo_cpukind_t *kind, hwloc_bitmap_t pus)
{
    struct hwloc_info_s *infos = NULL;
    unsigned ninfos = 0;
    kind->efficiency = -1;
    hwloc_cpukinds_get_info(hw, index, pus, &kind->efficiency, &ninfos, &infos, 0);
    for (unsigned i = 0; i < ninfos; i++)
        if (strcmp(infos[i].name, "CoreType") == 0)
            snprintf(kind->core_type, sizeof kind->core_type, "%s", infos[i].value);
}

int topo_collect_kinds(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen)
{
    int n = hwloc_cpukinds_get_nr(hw, 0);
    for (int c = 0; c < t->ncores; c++)
        t->cores[c].kind = -1;
    if (n <= 0)
        return 0;
    t->kinds = calloc((size_t)n, sizeof *t->kinds);
    hwloc_bitmap_t *pus = calloc((size_t)n, sizeof *pus);
    if (!t->kinds || !pus) {
        free(pus);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->nkinds = n;
    for (int k = 0; k < n; k++) {
        pus[k] = hwloc_bitmap_alloc();
        t->kinds[k].cpus = hwloc_bitmap_alloc();
        t->kinds[k].numa = hwloc_bitmap_alloc();
        read_kind(hw, (unsigned)k, &t->kinds[k], pus[k]);
    }
    int ranked = kinds_ranked(t);
    /* A core belongs to the kind of its first allowed PU: SMT siblings are of one kind. */
    for (int c = 0; c < t->ncores; c++) {
        topo_core_t *core = &t->cores[c];
        for (int k = 0; k < n && core->kind < 0; k++)
            if (hwloc_bitmap_isset(pus[k], (unsigned)core->first_pu))
                core->kind = k;
        if (core->kind < 0)
            continue;
        topo_cpukind_t *kind = &t->kinds[core->kind];
        core->perf = ranked ? kind->efficiency : 0;
        kind->ncores++;
        hwloc_bitmap_or(kind->cpus, kind->cpus, core->pus);
        hwloc_bitmap_set(kind->numa, t->numa[core->numa].os_index);
    }
    for (int k = 0; k < n; k++)
        hwloc_bitmap_free(pus[k]);
    free(pus);
    return 0;
}

void topo_free_kinds(topo_t *t)
{
    for (int k = 0; k < t->nkinds; k++) {
        hwloc_bitmap_free(t->kinds[k].cpus);
        hwloc_bitmap_free(t->kinds[k].numa);
    }
    free(t->kinds);
}
