/* cotenant_exposure: one pass over the node's cores, marking those that hold a trainer PU, then a
 * second collecting the co-tenant PUs that share a core, an L3 or a domain with one of them. */
#include "cotenant_exposure.h"

#include <stdlib.h>

#include "cpulist.h"
#include "jobs.h"
#include "wire.h"

/* The cores (indexes) that hold a trainer PU. */
static hwloc_bitmap_t trainer_cores(const daemon_t *d)
{
    const topo_t *t = d->topo;
    hwloc_bitmap_t cores = hwloc_bitmap_alloc();
    hwloc_bitmap_t trainers = hwloc_bitmap_alloc();
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            hwloc_bitmap_or(trainers, trainers, job_held_cpus(j));
    for (int c = 0; c < t->ncores; c++)
        if (hwloc_bitmap_intersects(t->cores[c].pus, trainers))
            hwloc_bitmap_set(cores, (unsigned)c);
    hwloc_bitmap_free(trainers);
    return cores;
}

cotenant_exposure_t cotenant_exposure_of(const daemon_t *d, const job_t *cotenant)
{
    const topo_t *t = d->topo;
    cotenant_exposure_t e = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), PLAN_ISOLATE_NUMA};
    hwloc_bitmap_t trainers = trainer_cores(d);
    hwloc_const_bitmap_t mine = job_held_cpus(cotenant);
    hwloc_bitmap_t pus = hwloc_bitmap_alloc();
    for (int c = 0; c < t->ncores; c++) {
        hwloc_bitmap_and(pus, t->cores[c].pus, mine);
        if (hwloc_bitmap_iszero(pus))
            continue;
        for (int o = 0; o < t->ncores; o++) {
            if (!hwloc_bitmap_isset(trainers, (unsigned)o))
                continue;
            if (plan_isolation_shares(t, PLAN_ISOLATE_NUMA, o, c))
                hwloc_bitmap_or(e.numa, e.numa, pus);
            if (plan_isolation_shares(t, PLAN_ISOLATE_L3, o, c))
                hwloc_bitmap_or(e.l3, e.l3, pus);
            if (plan_isolation_shares(t, PLAN_ISOLATE_CORES, o, c))
                hwloc_bitmap_or(e.core, e.core, pus);
        }
    }
    hwloc_bitmap_free(pus);
    hwloc_bitmap_free(trainers);
    e.isolation = !hwloc_bitmap_iszero(e.core)   ? PLAN_ISOLATE_NONE
                  : !hwloc_bitmap_iszero(e.l3)   ? PLAN_ISOLATE_CORES
                  : !hwloc_bitmap_iszero(e.numa) ? PLAN_ISOLATE_L3
                                                 : PLAN_ISOLATE_NUMA;
    return e;
}

void cotenant_exposure_free(cotenant_exposure_t *e)
{
    hwloc_bitmap_free(e->numa);
    hwloc_bitmap_free(e->l3);
    hwloc_bitmap_free(e->core);
}

static json_t *list_json(hwloc_const_bitmap_t set)
{
    char *list = cpulist_format(set);
    json_t *v = json_string(list ? list : "");
    free(list);
    return v;
}

json_t *cotenant_exposure_to_json(const cotenant_exposure_t *e)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:{s:i, s:i, s:i}}", WIRE_R_ISOLATION, plan_isolation_name(e->isolation),
                     WIRE_R_NUMA, list_json(e->numa), WIRE_R_L3, list_json(e->l3), WIRE_R_CORE, list_json(e->core),
                     WIRE_R_CPUS, WIRE_R_NUMA, hwloc_bitmap_weight(e->numa), WIRE_R_L3, hwloc_bitmap_weight(e->l3),
                     WIRE_R_CORE, hwloc_bitmap_weight(e->core));
}
