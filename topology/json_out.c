/* json_out: build the JSON documents with jansson; key order is the documented order
 * (jansson keeps insertion order), so output diffs cleanly between runs. */
#include "json_out.h"

#include <stdlib.h>

#include "wire.h" /* a plan is a reply of coschedd's too: its keys are the protocol's */

json_t *json_from_bitmap(hwloc_const_bitmap_t set)
{
    json_t *arr = json_array();
    int i;
    hwloc_bitmap_foreach_begin(i, set)
        json_array_append_new(arr, json_integer(i));
    hwloc_bitmap_foreach_end();
    return arr;
}

static json_t *indexes_of(const topo_t *t, int is_gpu, unsigned numa_os)
{
    json_t *arr = json_array();
    int n = is_gpu ? t->ngpus : t->nnics;
    for (int i = 0; i < n; i++) {
        hwloc_const_bitmap_t numa = is_gpu ? t->gpus[i].numa : t->nics[i].numa;
        if (hwloc_bitmap_isset(numa, numa_os))
            json_array_append_new(arr, is_gpu ? json_integer(t->gpus[i].index) : json_string(t->nics[i].name));
    }
    return arr;
}

static json_t *numa_to_json(const topo_t *t, const topo_numa_t *d)
{
    json_t *l3 = json_array();
    for (int g = 0; g < d->nl3; g++)
        json_array_append_new(l3, json_from_bitmap(d->l3_cpus[g]));
    json_t *o = json_pack("{s:I, s:i, s:i, s:o, s:o, s:I, s:o, s:o}", "os_index", (json_int_t)d->os_index, "package",
                          d->package, "cores", d->ncores, "cpus", json_from_bitmap(d->cpus), "l3", l3, "memory_bytes",
                          (json_int_t)d->memory_bytes, "gpus", indexes_of(t, 1, d->os_index), "nics",
                          indexes_of(t, 0, d->os_index));
    /* Its memory: hwloc's kind, whether it is nobody's home, whether it may be bound, the CPUs it
     * is local to, and where the memory of ranks on its cores goes (plain, and with --mem hbm). */
    json_object_set_new(o, "kind", *d->kind ? json_string(d->kind) : json_null());
    json_object_set_new(o, "memory_only", json_boolean(d->memory_only));
    json_object_set_new(o, "memory_allowed", json_boolean(d->mem_allowed));
    json_object_set_new(o, "local_cpus", json_from_bitmap(d->local_cpus));
    json_object_set_new(o, "mems", json_from_bitmap(d->mems));
    json_object_set_new(o, "hbm", json_from_bitmap(d->hbm));
    return o;
}

/* In hwloc's order (index as hwloc-calc --cpukind N), least performant first. */
static json_t *kinds_to_json(const topo_t *t)
{
    json_t *arr = json_array();
    for (int k = 0; k < t->nkinds; k++) {
        const topo_cpukind_t *kind = &t->kinds[k];
        json_array_append_new(arr,
                              json_pack("{s:i, s:i, s:o, s:i, s:o, s:o}", "index", k, "efficiency", kind->efficiency,
                                        "core_type", *kind->core_type ? json_string(kind->core_type) : json_null(),
                                        "cores", kind->ncores, "cpus", json_from_bitmap(kind->cpus), "numa",
                                        json_from_bitmap(kind->numa)));
    }
    return arr;
}

json_t *topo_to_json(const topo_t *t)
{
    json_t *numa = json_array(), *gpus = json_array(), *nics = json_array();
    for (int i = 0; i < t->nnuma; i++)
        json_array_append_new(numa, numa_to_json(t, &t->numa[i]));
    for (int i = 0; i < t->ngpus; i++) {
        const topo_gpu_t *g = &t->gpus[i];
        json_array_append_new(gpus, json_pack("{s:i, s:o, s:s, s:s, s:o, s:o}", "index", g->index, "name",
                                              *g->name ? json_string(g->name) : json_null(), "pci", g->pci, "vendor",
                                              g->vendor, "numa", json_from_bitmap(g->numa), "cpus",
                                              json_from_bitmap(g->cpus)));
    }
    for (int i = 0; i < t->nnics; i++) {
        const topo_nic_t *n = &t->nics[i];
        json_array_append_new(nics, json_pack("{s:o, s:s, s:s, s:o, s:o}", "name",
                                              *n->name ? json_string(n->name) : json_null(), "pci", n->pci, "kind",
                                              n->kind == TOPO_NIC_INFINIBAND ? "infiniband" : "ethernet", "numa",
                                              json_from_bitmap(n->numa), "cpus", json_from_bitmap(n->cpus)));
    }
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:o}", "source", t->source, "packages",
                          t->npackages, "cores", t->ncores_total, "pus", t->npus_total, "pus_allowed", t->npus_allowed,
                          "plannable_cores", t->ncores, "unplaced_cpus", json_from_bitmap(t->unplaced), "numa", numa,
                          "gpus", gpus, "nics", nics);
    json_object_set_new(o, "cpukinds", kinds_to_json(t));
    return o;
}

json_t *plan_rank_to_json(const plan_rank_t *r)
{
    json_t *o = json_pack("{s:i}", WIRE_R_RANK, r->rank);
    if (r->gpu >= 0)
        json_object_set_new(o, WIRE_R_GPU, json_integer(r->gpu));
    json_object_set_new(o, WIRE_R_NUMA, json_integer(r->numa));
    json_object_set_new(o, WIRE_R_CPUS, json_from_bitmap(r->cpus));
    json_object_set_new(o, WIRE_R_MEMS, json_from_bitmap(r->mems));
    return o;
}

static json_t *ranks_to_json(const plan_rank_t *ranks, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, plan_rank_to_json(&ranks[i]));
    return arr;
}

static json_t *string_or_null(char *owned)
{
    json_t *v = owned ? json_string(owned) : json_null();
    free(owned);
    return v;
}

json_t *plan_to_json(const plan_t *plan)
{
    json_t *warnings = json_array();
    for (int i = 0; i < plan->nwarnings; i++)
        json_array_append_new(warnings, json_string(plan->warnings[i]));
    json_t *srun = json_pack("{s:o, s:o}", WIRE_R_TRAINER,
                             string_or_null(plan_srun_cpu_bind(plan->trainer, plan->ntrainer)), WIRE_R_NOISE,
                             string_or_null(plan_srun_cpu_bind(plan->noise, plan->nnoise)));
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", WIRE_R_POLICY, plan_policy_name(plan->policy), WIRE_R_ISOLATION,
                     plan_isolation_name(plan->isolation), WIRE_R_TRAINER, ranks_to_json(plan->trainer, plan->ntrainer),
                     WIRE_R_NOISE, ranks_to_json(plan->noise, plan->nnoise), WIRE_R_SRUN, srun, WIRE_R_WARNINGS,
                     warnings);
}
