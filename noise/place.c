/* place: binding and the record of where a worker ran.
 * "Used" sets come from sched_getcpu() samples and page lookups, not from what was asked for. */
#include "place.h"

#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "cpulist.h"

int noise_place_init(struct noise_place *p, const char *cpus, const char *mems, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->ran_cpus = hwloc_bitmap_alloc();
    p->mem_numa = hwloc_bitmap_alloc();
    if (cpus && *cpus) {
        char perr[256] = "";
        hwloc_bitmap_t want = cpulist_parse(cpus, 0, perr, sizeof perr);
        if (!want) {
            snprintf(err, errlen, "--cpus: %s", perr);
            return -1;
        }
        int rc = bind_process_cpus(want, perr, sizeof perr);
        hwloc_bitmap_free(want);
        if (rc != 0) {
            snprintf(err, errlen, "--cpus %s: %s", cpus, perr);
            return -1;
        }
    }
    if (mems && *mems) {
        char perr[256] = "";
        hwloc_bitmap_t want = cpulist_parse(mems, 0, perr, sizeof perr);
        if (!want) {
            snprintf(err, errlen, "--mems: %s", perr);
            return -1;
        }
        int rc = bind_process_mems(want, perr, sizeof perr);
        hwloc_bitmap_free(want);
        if (rc != 0) {
            snprintf(err, errlen, "--mems %s: %s", mems, perr);
            return -1;
        }
    }
    /* Read back rather than trust the request: the kernel may have narrowed it (cgroups). */
    p->cpus = bind_current_cpus();
    p->mems = bind_current_mems();
    if (!p->cpus || hwloc_bitmap_iszero(p->cpus)) {
        snprintf(err, errlen, "cannot read the CPUs this process may run on");
        return -1;
    }
    return 0;
}

void noise_place_note(struct noise_place *p, hwloc_const_bitmap_t cpus_seen, int numa_of_page)
{
    pthread_mutex_lock(&p->lock);
    if (cpus_seen)
        hwloc_bitmap_or(p->ran_cpus, p->ran_cpus, cpus_seen);
    if (numa_of_page >= 0)
        hwloc_bitmap_set(p->mem_numa, (unsigned)numa_of_page);
    pthread_mutex_unlock(&p->lock);
}

void noise_place_note_self(struct noise_place *p)
{
    int cpu = sched_getcpu();
    if (cpu < 0)
        return;
    pthread_mutex_lock(&p->lock);
    hwloc_bitmap_set(p->ran_cpus, (unsigned)cpu);
    pthread_mutex_unlock(&p->lock);
}

static void set_list(json_t *obj, const char *key, hwloc_const_bitmap_t set)
{
    char *s = set ? cpulist_format(set) : NULL;
    json_object_set_new(obj, key, json_string(s ? s : ""));
    free(s);
}

json_t *noise_place_json(struct noise_place *p)
{
    json_t *obj = json_object();
    hwloc_bitmap_t numa_used = hwloc_bitmap_alloc();
    pthread_mutex_lock(&p->lock);
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, p->ran_cpus) {
        int node = numa_available() < 0 ? 0 : numa_node_of_cpu(cpu);
        if (node >= 0)
            hwloc_bitmap_set(numa_used, (unsigned)node);
    }
    hwloc_bitmap_foreach_end();
    set_list(obj, "cpus", p->cpus);
    set_list(obj, "mems", p->mems);
    set_list(obj, "cpus_used", p->ran_cpus);
    set_list(obj, "numa_used", numa_used);
    set_list(obj, "memory_numa", p->mem_numa);
    pthread_mutex_unlock(&p->lock);
    hwloc_bitmap_free(numa_used);
    return obj;
}

void noise_place_free(struct noise_place *p)
{
    hwloc_bitmap_free(p->cpus);
    hwloc_bitmap_free(p->mems);
    hwloc_bitmap_free(p->ran_cpus);
    hwloc_bitmap_free(p->mem_numa);
    pthread_mutex_destroy(&p->lock);
    memset(p, 0, sizeof *p);
}

int noise_numa_of_address(const void *addr)
{
    int node = -1;
    if (numa_available() < 0)
        return 0;
    if (get_mempolicy(&node, NULL, 0, (void *)addr, MPOL_F_NODE | MPOL_F_ADDR) != 0)
        return -1;
    return node;
}
