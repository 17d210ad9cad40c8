/* topo_node: the node as a whole and as Slurm numbers it — host name, memory, the counts slurmd -C
 * prints and each domain's Slurm core ids — so that slurm.conf and gres.conf lines agree with slurmd. */
#include "topo_internal.h"

#include <stdio.h>

/* Slurm 22.05 xcpuinfo_hwloc_topo_get, with the same fallbacks: a socket is a package holding at
 * least one core (else every package counts, else one); Groups right under the root are boards. */
static void count_like_slurmd(topo_t *t, hwloc_topology_t hw)
{
    topo_slurm_counts_t *s = &t->slurm;
    int npackages = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PACKAGE);
    s->sockets = 0;
    for (int i = 0; i < npackages; i++) {
        hwloc_obj_t pkg = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PACKAGE, (unsigned)i);
        if (hwloc_get_nbobjs_inside_cpuset_by_type(hw, pkg->cpuset, HWLOC_OBJ_CORE) > 0)
            s->sockets++;
    }
    if (s->sockets == 0)
        s->sockets = npackages > 0 ? npackages : 1;
    s->cores = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
    if (s->cores == 0)
        s->cores = 1;
    s->cpus = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    hwloc_obj_t first = hwloc_get_root_obj(hw)->first_child;
    s->boards = 1;
    if (first && first->type == HWLOC_OBJ_GROUP) {
        int n = hwloc_get_nbobjs_by_depth(hw, (int)first->depth);
        s->boards = n > 1 ? n : 1;
    }
}

/* Slurm numbers cores socket by socket in hwloc's logical order: its core id is the Core's
 * logical index. A core belongs to the domain of its first PU, as in the planner's model. */
static void collect_core_ids(topo_t *t, hwloc_topology_t hw)
{
    int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(hw, HWLOC_OBJ_CORE, (unsigned)i);
        int home = topo_numa_of_pu(t, hwloc_bitmap_first(core->cpuset));
        if (home >= 0)
            hwloc_bitmap_set(t->numa[home].core_ids, core->logical_index);
    }
}

void topo_describe_node(topo_t *t, hwloc_topology_t hw)
{
    hwloc_obj_t root = hwloc_get_root_obj(hw);
    const char *host = hwloc_obj_get_info_by_name(root, "HostName");
    snprintf(t->hostname, sizeof t->hostname, "%s", host ? host : "");
    t->memory_bytes = root->total_memory;
    count_like_slurmd(t, hw);
    collect_core_ids(t, hw);
}
