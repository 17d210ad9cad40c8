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

/* The allowed NUMA domains, sorted by OS index, with their memory; cores come later. */
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
        if (!hwloc_bitmap_isset(allowed, node->os_index))
            continue;
        topo_numa_t *d = &t->numa[t->nnuma++];
        d->os_index = node->os_index;
        d->package = package_of(hw, node);
        d->memory_bytes = node->attr ? node->attr->numanode.local_memory : 0;
        d->cpus = hwloc_bitmap_alloc();
        d->node_cpuset = hwloc_bitmap_dup(node->cpuset);
        d->core_ids = hwloc_bitmap_alloc();
    }
    qsort(t->numa, (size_t)t->nnuma, sizeof *t->numa, cmp_numa_os_index);
    return 0;
}

/* The most local domain whose CPUs contain pu, or -1 (CPUs whose memory is offline).
 * Memory attached higher up (HBM, CXL, a machine-wide node) covers more CPUs and loses. */
int topo_numa_of_pu(const topo_t *t, int pu)
{
    int best = -1, best_weight = 0;
    for (int i = 0; i < t->nnuma; i++) {
        if (!hwloc_bitmap_isset(t->numa[i].node_cpuset, (unsigned)pu))
            continue;
        int w = hwloc_bitmap_weight(t->numa[i].node_cpuset);
        if (best < 0 || w < best_weight) {
            best = i;
            best_weight = w;
        }
    }
    return best;
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

    if (collect_numa(t, hw, err, errlen) < 0 || collect_cores(t, hw, err, errlen) < 0 ||
        index_domains(t, err, errlen) < 0 || topo_collect_kinds(t, hw, err, errlen) < 0 ||
        topo_collect_devices(t, hw, err, errlen) < 0) {
        topo_free(t);
        return NULL;
    }
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

static topo_t *load_with(hwloc_topology_t hw, const char *source, char *err, size_t errlen)
{
    if (hwloc_topology_load(hw) < 0) {
        snprintf(err, errlen, "%s: hwloc cannot load this topology (%s)", source, strerror(errno));
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
    return load_with(hw, from_file ? xml_path : "this machine", err, errlen);
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
    return load_with(hw, source, err, errlen);
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
        hwloc_bitmap_free(d->node_cpuset);
        hwloc_bitmap_free(d->core_ids);
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
