/* topo_load: read the node through hwloc (live, XML or synthetic) and build the plain model:
 * NUMA domains sorted by OS index, their plannable cores in hwloc order, and L3 groups. */
#include "topo.h"
#include "topo_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *topo_source_from_env(const char *explicit_path)
{
    if (explicit_path && *explicit_path)
        return explicit_path;
    const char *env = getenv("COSCHED_TOPOLOGY");
    return env && *env ? env : NULL;
}

static int cmp_numa_os_index(const void *a, const void *b)
{
    const topo_numa_t *x = a, *y = b;
    return (x->os_index > y->os_index) - (x->os_index < y->os_index);
}

static int package_of(hwloc_topology_t hw, hwloc_obj_t node)
{
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, node);
    if (pkg)
        return (int)pkg->os_index;
    /* NUMA nodes attached above the packages (e.g. one node for a whole socket pair):
     * take the package that covers its CPUs, if exactly one does. */
    if (hwloc_bitmap_iszero(node->cpuset))
        return -1;
    pkg = hwloc_get_next_obj_covering_cpuset_by_type(hw, node->cpuset, HWLOC_OBJ_PACKAGE, NULL);
    return pkg ? (int)pkg->os_index : -1;
}

/* Every package holding the node's CPUs: its ancestor, or those its CPUs cover part of. */
static hwloc_bitmap_t packages_of(hwloc_topology_t hw, hwloc_obj_t node)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, node);
    if (pkg && pkg->os_index != HWLOC_UNKNOWN_INDEX)
        hwloc_bitmap_set(set, pkg->os_index);
    for (pkg = NULL; !hwloc_bitmap_iszero(node->cpuset) &&
                     (pkg = hwloc_get_next_obj_covering_cpuset_by_type(hw, node->cpuset, HWLOC_OBJ_PACKAGE, pkg));)
        if (pkg->os_index != HWLOC_UNKNOWN_INDEX)
            hwloc_bitmap_set(set, pkg->os_index);
    return set;
}

/* Memory that a PU should not call home when a plain domain covers the same CPUs: hwloc's
 * subtype for HBM, MCDRAM, GPU or non-volatile memory (anything but "DRAM"), or a DAX device
 * (CXL or persistent memory onlined as a NUMA node). */
static bool special_memory(hwloc_obj_t node)
{
    const char *dax = hwloc_obj_get_info_by_name(node, "DAXDevice");
    return (node->subtype && *node->subtype && strcmp(node->subtype, "DRAM") != 0) || (dax && *dax);
}

static bool high_bandwidth_kind(const char *kind)
{
    return strcmp(kind, "HBM") == 0 || strcmp(kind, "MCDRAM") == 0;
}

/* Every NUMA node, allowed or not, sorted by OS index, with its memory; cores come later. */
static int collect_numa(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen)
{
    hwloc_const_nodeset_t allowed = hwloc_topology_get_allowed_nodeset(hw);
    int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
    t->numa = calloc(n > 0 ? (size_t)n : 1, sizeof *t->numa);
    if (!t->numa) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)i);
        topo_numa_t *d = &t->numa[t->nnuma++];
        d->os_index = node->os_index;
        d->package = package_of(hw, node);
        d->packages = packages_of(hw, node);
        d->memory_bytes = node->attr ? node->attr->numanode.local_memory : 0;
        d->mem_allowed = hwloc_bitmap_isset(allowed, node->os_index);
        d->memory_only = special_memory(node); /* a first guess for topo_numa_of_pu's ties */
        snprintf(d->kind, sizeof d->kind, "%s", node->subtype ? node->subtype : "");
        d->cpus = hwloc_bitmap_alloc();
        d->node_cpuset = hwloc_bitmap_dup(node->cpuset);
        d->local_cpus = hwloc_bitmap_alloc();
        hwloc_bitmap_and(d->local_cpus, node->cpuset, hwloc_topology_get_allowed_cpuset(hw));
        d->core_ids = hwloc_bitmap_alloc();
        d->mems = hwloc_bitmap_alloc();
        d->hbm = hwloc_bitmap_alloc();
    }
    qsort(t->numa, (size_t)t->nnuma, sizeof *t->numa, cmp_numa_os_index);
    return 0;
}

/* The most local domain whose CPUs contain pu, or -1 (CPUs whose memory is offline).
 * Memory attached higher up (CXL, a machine-wide node) covers more CPUs and loses; among domains
 * with the same CPUs (MCDRAM or HBM beside DDR) plain memory wins, then the lowest OS index. */
int topo_numa_of_pu(const topo_t *t, int pu)
{
    int best = -1, best_weight = 0;
    for (int i = 0; i < t->nnuma; i++) {
        if (!hwloc_bitmap_isset(t->numa[i].node_cpuset, (unsigned)pu))
            continue;
        int w = hwloc_bitmap_weight(t->numa[i].node_cpuset);
        if (best < 0 || w < best_weight || (w == best_weight && t->numa[best].memory_only && !t->numa[i].memory_only)) {
            best = i;
            best_weight = w;
        }
    }
    return best;
}

/* Which domains no PU calls home (memory-only), and which of those are high-bandwidth memory. */
static void mark_memory_only(topo_t *t, hwloc_topology_t hw)
{
    bool *home = calloc(t->nnuma > 0 ? (size_t)t->nnuma : 1, sizeof *home);
    if (!home)
        return;
    int pu;
    hwloc_bitmap_foreach_begin(pu, hwloc_topology_get_complete_cpuset(hw)) {
        int d = topo_numa_of_pu(t, pu);
        if (d >= 0)
            home[d] = true;
    }
    hwloc_bitmap_foreach_end();
    for (int i = 0; i < t->nnuma; i++) {
        t->numa[i].memory_only = !home[i];
        t->numa[i].high_bandwidth = !home[i] && high_bandwidth_kind(t->numa[i].kind);
    }
    free(home);
}

static int cmp_core_by_numa(const void *a, const void *b)
{
    const topo_core_t *x = a, *y = b;
    if (x->numa != y->numa)
        return x->numa - y->numa;
    return x->first_pu - y->first_pu;
}

/* One topo_core_t per core (or per PU where hwloc has no Core level) with allowed PUs. */
static int collect_cores(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen)
{
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(hw);
    int has_cores = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE) > 0;
    hwloc_obj_type_t unit = has_cores ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int nunits = hwloc_get_nbobjs_by_type(hw, unit);
    int nl3 = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_L3CACHE);

    t->cores = calloc(nunits > 0 ? (size_t)nunits : 1, sizeof *t->cores);
    if (!t->cores) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < nunits; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(hw, unit, (unsigned)i);
        hwloc_bitmap_t pus = hwloc_bitmap_alloc();
        hwloc_bitmap_and(pus, obj->cpuset, allowed);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        int first = hwloc_bitmap_first(pus);
        int numa = topo_numa_of_pu(t, first);
        if (numa < 0) {
            hwloc_bitmap_or(t->unplaced, t->unplaced, pus);
            hwloc_bitmap_free(pus);
            continue;
        }
        hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_L3CACHE, obj);
        topo_core_t *c = &t->cores[t->ncores++];
        c->numa = numa;
        /* Without an L3 the whole domain counts as one cache group: the safe assumption. */
        c->l3 = l3 ? (int)l3->logical_index : nl3 + numa;
        c->pus = pus;
        c->first_pu = first;
    }
    /* Stable grouping by domain; inside a domain PU order follows hwloc's L3-major order. */
    qsort(t->cores, (size_t)t->ncores, sizeof *t->cores, cmp_core_by_numa);
    return 0;
}

/* Per domain: its core range, CPU set and L3 groups (in order of first appearance). */
static int index_domains(topo_t *t, char *err, size_t errlen)
{
    for (int i = 0; i < t->ncores; i++) {
        topo_numa_t *d = &t->numa[t->cores[i].numa];
        if (d->ncores == 0)
            d->first_core = i;
        d->ncores++;
        hwloc_bitmap_or(d->cpus, d->cpus, t->cores[i].pus);
    }
    for (int n = 0; n < t->nnuma; n++) {
        topo_numa_t *d = &t->numa[n];
        d->l3_cpus = calloc(d->ncores > 0 ? (size_t)d->ncores : 1, sizeof *d->l3_cpus);
        if (!d->l3_cpus) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int *ids = calloc(d->ncores > 0 ? (size_t)d->ncores : 1, sizeof *ids);
        if (!ids) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (int k = 0; k < d->ncores; k++) {
            const topo_core_t *c = &t->cores[d->first_core + k];
            int g = 0;
            while (g < d->nl3 && ids[g] != c->l3)
                g++;
            if (g == d->nl3) {
                ids[d->nl3] = c->l3;
                d->l3_cpus[d->nl3++] = hwloc_bitmap_alloc();
            }
            hwloc_bitmap_or(d->l3_cpus[g], d->l3_cpus[g], c->pus);
        }
        free(ids);
    }
    return 0;
}

/* Latency from domain a to b as hwloc's NUMA distances give it; 0 when it gives none. */
static uint64_t distance(hwloc_topology_t hw, struct hwloc_distances_s *dist, unsigned a, unsigned b)
{
    if (!dist)
        return 0;
    int i = hwloc_distances_obj_index(dist, hwloc_get_numanode_obj_by_os_index(hw, a));
    int j = hwloc_distances_obj_index(dist, hwloc_get_numanode_obj_by_os_index(hw, b));
    return i < 0 || j < 0 ? 0 : dist->values[(unsigned)i * dist->nbobjs + (unsigned)j];
}

/* Where a domain's memory binding goes when its own memory is not allowed: the allowed domains
 * with cores nearest to it (by hwloc's distances; without them those of its package, else all),
 * or plain memory-only ones when no domain with cores is allowed; never high-bandwidth memory. */
static void nearest_allowed(const topo_t *t, hwloc_topology_t hw, struct hwloc_distances_s *dist, int d)
{
    topo_numa_t *me = &t->numa[d];
    for (int pass = 0; pass < 2 && hwloc_bitmap_iszero(me->mems); pass++) {
        uint64_t best = UINT64_MAX;
        bool same_package = false;
        for (int i = 0; i < t->nnuma; i++) {
            const topo_numa_t *o = &t->numa[i];
            if (!o->mem_allowed || o->high_bandwidth || o->memory_only != (pass == 1))
                continue;
            uint64_t w = distance(hw, dist, me->os_index, o->os_index);
            bool pkg = o->package >= 0 && o->package == me->package;
            if (w < best || (w == best && pkg && !same_package)) {
                hwloc_bitmap_zero(me->mems);
                best = w;
                same_package = pkg;
            }
            if (w == best && pkg == same_package)
                hwloc_bitmap_set(me->mems, o->os_index);
        }
    }
}

/* Each domain's memory binding and the high-bandwidth memory local to its CPUs. */
static void memory_targets(topo_t *t, hwloc_topology_t hw)
{
    unsigned nr = 1;
    struct hwloc_distances_s *dist = NULL;
    if (hwloc_distances_get_by_type(hw, HWLOC_OBJ_NUMANODE, &nr, &dist, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
        nr == 0)
        dist = NULL;
    for (int d = 0; d < t->nnuma; d++) {
        topo_numa_t *me = &t->numa[d];
        if (me->mem_allowed)
            hwloc_bitmap_set(me->mems, me->os_index);
        else
            nearest_allowed(t, hw, dist, d);
        for (int i = 0; i < t->nnuma && !me->memory_only; i++)
            if (t->numa[i].high_bandwidth && t->numa[i].mem_allowed &&
                hwloc_bitmap_intersects(t->numa[i].node_cpuset, me->node_cpuset))
                hwloc_bitmap_set(me->hbm, t->numa[i].os_index);
    }
    if (dist)
        hwloc_distances_release(hw, dist);
}

static topo_t *build_model(hwloc_topology_t hw, const char *source, char *err, size_t errlen)
{
    topo_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(t->source, sizeof t->source, "%s", source);
    t->unplaced = hwloc_bitmap_alloc();
    t->npackages = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PACKAGE);
    t->ncores_total = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
    t->npus_total = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    if (t->ncores_total == 0)
        t->ncores_total = t->npus_total;
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    hwloc_bitmap_and(allowed, hwloc_topology_get_allowed_cpuset(hw), hwloc_topology_get_topology_cpuset(hw));
    t->npus_allowed = hwloc_bitmap_weight(allowed);
    hwloc_bitmap_free(allowed);

    if (collect_numa(t, hw, err, errlen) < 0) {
        topo_free(t);
        return NULL;
    }
    mark_memory_only(t, hw);
    if (collect_cores(t, hw, err, errlen) < 0 || index_domains(t, err, errlen) < 0 ||
        topo_collect_kinds(t, hw, err, errlen) < 0 || topo_collect_devices(t, hw, err, errlen) < 0) {
        topo_free(t);
        return NULL;
    }
    memory_targets(t, hw);
    topo_describe_node(t, hw);
    if (t->nnuma == 0 || t->ncores == 0) {
        snprintf(err, errlen, "%s: no NUMA domain with allowed cores found", source);
        topo_free(t);
        return NULL;
    }
    return t;
}

/* hwloc prints XML parse errors itself only when asked; make them part of our message instead. */
static int check_readable(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read topology file %s: %s", path, strerror(errno));
        return -1;
    }
    char head[256] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    if (n == 0 || !strstr(head, "<?xml") || !strstr(head, "topology")) {
        snprintf(err, errlen, "%s is not an hwloc XML topology (export one with lstopo FILE.xml)", path);
        return -1;
    }
    return 0;
}

hwloc_topology_t topo_open_hwloc(void)
{
    hwloc_topology_t hw;
    if (hwloc_topology_init(&hw) < 0)
        return NULL;
    /* Disallowed PUs are loaded so they can be counted, then left out of the model.
     * The I/O filter must be set before loading or the PCI devices (GPUs, NICs) vanish. */
    hwloc_topology_set_flags(hw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    return hw;
}

static topo_t *load_with(hwloc_topology_t hw, const char *source, const char *xml_path, char *err, size_t errlen)
{
    if (hwloc_topology_load(hw) < 0) {
        int error = errno;
        if (!xml_path || topo_xml_explain_refusal(xml_path, err, errlen) == 0)
            snprintf(err, errlen, "%s: hwloc cannot load this topology (%s)", source, strerror(error));
        hwloc_topology_destroy(hw);
        return NULL;
    }
    topo_t *t = build_model(hw, source, err, errlen);
    hwloc_topology_destroy(hw);
    return t;
}

topo_t *topo_load(const char *xml_path, char *err, size_t errlen)
{
    int from_file = xml_path && *xml_path;
    if (from_file && check_readable(xml_path, err, errlen) < 0)
        return NULL;
    hwloc_topology_t hw = topo_open_hwloc();
    if (!hw) {
        snprintf(err, errlen, "cannot initialise hwloc");
        return NULL;
    }
    if (from_file && hwloc_topology_set_xml(hw, xml_path) < 0) {
        snprintf(err, errlen, "%s: hwloc cannot read this XML (%s)", xml_path, strerror(errno));
        hwloc_topology_destroy(hw);
        return NULL;
    }
    if (from_file && topo_xml_probe(hw, xml_path, err, errlen) < 0) {
        hwloc_topology_destroy(hw);
        return NULL;
    }
    return load_with(hw, from_file ? xml_path : "this machine", from_file ? xml_path : NULL, err, errlen);
}

topo_t *topo_load_synthetic(const char *description, char *err, size_t errlen)
{
    hwloc_topology_t hw = topo_open_hwloc();
    if (!hw) {
        snprintf(err, errlen, "cannot initialise hwloc");
        return NULL;
    }
    if (hwloc_topology_set_synthetic(hw, description) < 0) {
        snprintf(err, errlen, "'%s' is not an hwloc synthetic description", description);
        hwloc_topology_destroy(hw);
        return NULL;
    }
    char source[256];
    snprintf(source, sizeof source, "synthetic:%s", description);
    return load_with(hw, source, NULL, err, errlen);
}

int topo_numa_by_os_index(const topo_t *topo, unsigned os_index)
{
    for (int i = 0; i < topo->nnuma; i++)
        if (topo->numa[i].os_index == os_index)
            return i;
    return -1;
}

void topo_free(topo_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nnuma; i++) {
        topo_numa_t *d = &t->numa[i];
        hwloc_bitmap_free(d->cpus);
        hwloc_bitmap_free(d->packages);
        hwloc_bitmap_free(d->node_cpuset);
        hwloc_bitmap_free(d->core_ids);
        hwloc_bitmap_free(d->local_cpus);
        hwloc_bitmap_free(d->mems);
        hwloc_bitmap_free(d->hbm);
        for (int g = 0; g < d->nl3; g++)
            hwloc_bitmap_free(d->l3_cpus[g]);
        free(d->l3_cpus);
    }
    for (int i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->cores[i].pus);
    for (int i = 0; i < t->ngpus; i++) {
        hwloc_bitmap_free(t->gpus[i].numa);
        hwloc_bitmap_free(t->gpus[i].cpus);
        hwloc_bitmap_free(t->gpus[i].nearest_cpus);
    }
    for (int i = 0; i < t->nnics; i++) {
        hwloc_bitmap_free(t->nics[i].numa);
        hwloc_bitmap_free(t->nics[i].cpus);
    }
    topo_free_kinds(t);
    hwloc_bitmap_free(t->unplaced);
    free(t->numa);
    free(t->cores);
    free(t->gpus);
    free(t->nics);
    free(t);
}
