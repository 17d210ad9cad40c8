/* cotenant_exposure: how well a co-tenant is kept apart from the registered trainers where it
 * actually is — the CPUs of its allocation that share a core, an L3 or a NUMA domain with a
 * trainer's. When Slurm places jobs cosched does not choose: it reports what Slurm's choice
 * isolates. */
#ifndef COSCHED_COTENANT_EXPOSURE_H
#define COSCHED_COTENANT_EXPOSURE_H

#include <jansson.h>

#include "daemon.h"

typedef struct cotenant_exposure {
    hwloc_bitmap_t numa;        /* co-tenant PUs in a NUMA domain that holds a trainer PU */
    hwloc_bitmap_t l3;          /* ... under an L3 that holds one */
    hwloc_bitmap_t core;        /* ... on a core that holds one (SMT siblings, or a shared CPU) */
    plan_isolation_t isolation; /* the strongest level at which none is exposed */
} cotenant_exposure_t;

/* The co-tenant's exposure to every registered trainer; cotenant_exposure_free releases it. */
cotenant_exposure_t cotenant_exposure_of(const daemon_t *d, const job_t *cotenant);
void cotenant_exposure_free(cotenant_exposure_t *e);

/* {"isolation":"l3","numa":"0-3","l3":"","core":"","cpus":{"numa":4,"l3":0,"core":0}} */
json_t *cotenant_exposure_to_json(const cotenant_exposure_t *e);

#endif
