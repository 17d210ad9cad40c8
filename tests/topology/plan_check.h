/* plan_check: the invariants every plan must satisfy, whatever the topology and request.
 * Used by the example-based and the generated-topology tests alike. */
#ifndef COSCHED_TEST_PLAN_CHECK_H
#define COSCHED_TEST_PLAN_CHECK_H

#include "plan.h"
#include "topo.h"

/* Returns NULL when the plan is sound, else a static message naming the broken invariant. */
const char *plan_check(const topo_t *topo, const plan_request_t *req, const plan_t *plan);

/* Decode "--cpu-bind=map_cpu:..|mask_cpu:.." into per-rank sets; returns the rank count or -1. */
int srun_decode(const char *spec, hwloc_bitmap_t *sets, int max);

#endif
