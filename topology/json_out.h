/* json_out: the topology model and plans as jansson objects, the one JSON shape shared by
 * `cosched topo/plan --json` and the daemon's replies. Documented in docs/cosched.md. */
#ifndef COSCHED_JSON_OUT_H
#define COSCHED_JSON_OUT_H

#include <jansson.h>

#include "plan.h"
#include "topo.h"

/* [0,1,2] from a bitmap. */
json_t *json_from_bitmap(hwloc_const_bitmap_t set);

/* {"packages","cores","pus","numa":[...],"gpus":[...],"nics":[...],"cpukinds":[...]} */
json_t *topo_to_json(const topo_t *topo);

/* {"policy","isolation","trainer":[...],"noise":[...],"srun":{"trainer","noise"},"warnings":[...]} */
json_t *plan_to_json(const plan_t *plan);

/* One rank: {"rank","gpu"(trainer only),"numa","cpus","mems"} */
json_t *plan_rank_to_json(const plan_rank_t *rank);

#endif
