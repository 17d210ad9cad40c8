/* exposure: one pass over the node's cores, marking the domains, L3s and cores that hold a
 * trainer PU, then a second collecting the co-tenant PUs that fall in them. */
#include "exposure.h"

#include <stdlib.h>

#include "cpulist.h"
#include "jobs.h"
#include "wire.h"

typedef struct {
    hwloc_bitmap_t numa, l3, core; /* indexes of domains, L3 group ids, core indexes */
} trainer_places_t;

static trainer_places_t trainer_places(const daemon_t *d)
{
    const topo_t *t = d->topo;
    trainer_places_t p = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc()};
    hwloc_bitmap_t trainers = hwloc_bitmap_alloc();
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            hwloc_bitmap_or(trainers, trainers, job_held_cpus(j));
    for (int c = 0; c < t->ncores; c++)
        if (hwloc_bitmap_intersects(t->cores[c].pus, trainers)) {
            hwloc_bitmap_set(p.numa, (unsigned)t->cores[c].numa);
            if (t->cores[c].l3 >= 0)
                hwloc_bitmap_set(p.l3, (unsigned)t->cores[c].l3);
            hwloc_bitmap_set(p.core, (unsigned)c);
        }
    hwloc_bitmap_free(trainers);
    return p;
}

exposure_t exposure_of(const daemon_t *d, const job_t *cotenant)
{
    const topo_t *t = d->topo;
    exposure_t e = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), PLAN_ISOLATE_NUMA};
    trainer_places_t p = trainer_places(d);
    hwloc_const_bitmap_t mine = job_held_cpus(cotenant);
    hwloc_bitmap_t pus = hwloc_bitmap_alloc();
    for (int c = 0; c < t->ncores; c++) {
        hwloc_bitmap_and(pus, t->cores[c].pus, mine);
        if (hwloc_bitmap_iszero(pus))
            continue;
        if (hwloc_bitmap_isset(p.numa, (unsigned)t->cores[c].numa))
            hwloc_bitmap_or(e.numa, e.numa, pus);
        if (t->cores[c].l3 >= 0 && hwloc_bitmap_isset(p.l3, (unsigned)t->cores[c].l3))
            hwloc_bitmap_or(e.l3, e.l3, pus);
        if (hwloc_bitmap_isset(p.core, (unsigned)c))
            hwloc_bitmap_or(e.core, e.core, pus);
    }
    hwloc_bitmap_free(pus);
    hwloc_bitmap_free(p.numa);
    hwloc_bitmap_free(p.l3);
    hwloc_bitmap_free(p.core);
    e.isolation = !hwloc_bitmap_iszero(e.core) ? PLAN_ISOLATE_NONE
                  : !hwloc_bitmap_iszero(e.l3) ? PLAN_ISOLATE_CORES
                  : !hwloc_bitmap_iszero(e.numa) ? PLAN_ISOLATE_L3
                                                 : PLAN_ISOLATE_NUMA;
    return e;
}

void exposure_free(exposure_t *e)
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

json_t *exposure_to_json(const exposure_t *e)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:{s:i, s:i, s:i}}", WIRE_R_ISOLATION, plan_isolation_name(e->isolation),
                     WIRE_R_NUMA, list_json(e->numa), WIRE_R_L3, list_json(e->l3), WIRE_R_CORE, list_json(e->core),
                     WIRE_R_CPUS, WIRE_R_NUMA, hwloc_bitmap_weight(e->numa), WIRE_R_L3, hwloc_bitmap_weight(e->l3),
                     WIRE_R_CORE, hwloc_bitmap_weight(e->core));
}
