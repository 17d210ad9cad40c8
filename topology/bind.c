/* bind: CPU affinity through sched_setaffinity and memory policy through libnuma.
 * Works with or without a topology: callers pass OS indexes, as srun and taskset do. */
#include "bind.h"

#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* A cpu_set_t sized for the set (CPU_SETSIZE is only 1024). */
static cpu_set_t *cpuset_from_bitmap(hwloc_const_bitmap_t cpus, size_t *size)
{
    int last = hwloc_bitmap_last(cpus);
    int ncpus = last < 1024 ? 1024 : last + 1;
    cpu_set_t *set = CPU_ALLOC(ncpus);
    if (!set)
        return NULL;
    *size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(*size, set);
    int i;
    hwloc_bitmap_foreach_begin(i, cpus)
        CPU_SET_S(i, *size, set);
    hwloc_bitmap_foreach_end();
    return set;
}

static int set_affinity(pid_t tid, hwloc_const_bitmap_t cpus, char *err, size_t errlen)
{
    if (hwloc_bitmap_iszero(cpus) || hwloc_bitmap_weight(cpus) < 0) {
        snprintf(err, errlen, "cannot bind to an empty or infinite CPU set");
        return -1;
    }
    size_t size;
    cpu_set_t *set = cpuset_from_bitmap(cpus, &size);
    if (!set) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = sched_setaffinity(tid, size, set);
    int saved = errno;
    CPU_FREE(set);
    if (rc != 0) {
        char *list = NULL;
        hwloc_bitmap_list_asprintf(&list, cpus);
        snprintf(err, errlen, "cannot bind to cpus %s: %s", list ? list : "?", strerror(saved));
        free(list);
        return -1;
    }
    return 0;
}

int bind_thread_cpus(hwloc_const_bitmap_t cpus, char *err, size_t errlen)
{
    return set_affinity(0, cpus, err, errlen);
}

int bind_process_cpus(hwloc_const_bitmap_t cpus, char *err, size_t errlen)
{
    if (!cpus)
        return 0;
    /* sched_setaffinity(0) binds one thread only; walk the task list for the others. */
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return set_affinity(0, cpus, err, errlen);
    struct dirent *d;
    int rc = 0;
    while (rc == 0 && (d = readdir(dir)) != NULL) {
        if (d->d_name[0] == '.')
            continue;
        rc = set_affinity((pid_t)atoi(d->d_name), cpus, err, errlen);
    }
    closedir(dir);
    return rc;
}

int bind_process_mems(hwloc_const_bitmap_t mems, char *err, size_t errlen)
{
    if (!mems)
        return 0;
    if (numa_available() < 0) {
        snprintf(err, errlen, "cannot bind memory: this kernel has no NUMA support");
        return -1;
    }
    struct bitmask *mask = numa_allocate_nodemask();
    int i, bad = -1;
    hwloc_bitmap_foreach_begin(i, mems) {
        if (i > numa_max_node() || !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)i))
            bad = i;
        else
            numa_bitmask_setbit(mask, (unsigned)i);
    }
    hwloc_bitmap_foreach_end();
    if (bad >= 0) {
        numa_free_nodemask(mask);
        snprintf(err, errlen, "cannot bind memory to numa %d: no such NUMA domain on this machine", bad);
        return -1;
    }
    /* numa_set_membind() exits the process on failure through numa_error(); set_mempolicy reports. */
    errno = 0;
    long rc = set_mempolicy(MPOL_BIND, mask->maskp, mask->size + 1);
    int saved = errno;
    numa_free_nodemask(mask);
    if (rc != 0) {
        snprintf(err, errlen, "cannot bind memory: set_mempolicy: %s", strerror(saved));
        return -1;
    }
    return 0;
}

hwloc_bitmap_t bind_current_cpus(void)
{
    hwloc_bitmap_t out = hwloc_bitmap_alloc();
    int ncpus = 4096;
    cpu_set_t *set = CPU_ALLOC(ncpus);
    size_t size = CPU_ALLOC_SIZE(ncpus);
    if (!out || !set || sched_getaffinity(0, size, set) != 0) {
        CPU_FREE(set);
        return out;
    }
    for (int i = 0; i < ncpus; i++)
        if (CPU_ISSET_S(i, size, set))
            hwloc_bitmap_set(out, (unsigned)i);
    CPU_FREE(set);
    return out;
}

hwloc_bitmap_t bind_current_mems(void)
{
    hwloc_bitmap_t out = hwloc_bitmap_alloc();
    if (!out)
        return NULL;
    if (numa_available() < 0) {
        hwloc_bitmap_set(out, 0);
        return out;
    }
    struct bitmask *mask = numa_get_membind();
    for (int i = 0; i <= numa_max_node(); i++)
        if (numa_bitmask_isbitset(mask, (unsigned)i))
            hwloc_bitmap_set(out, (unsigned)i);
    numa_bitmask_free(mask);
    return out;
}
