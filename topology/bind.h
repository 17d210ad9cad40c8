/* bind: pin the calling thread or process to CPUs and its memory to NUMA domains,
 * and read back where it actually runs. Shared by the trainer, the noise workers and the daemon. */
#ifndef COSCHED_BIND_H
#define COSCHED_BIND_H

#include <stddef.h>
#include <hwloc.h>

/* Restrict the whole process (all current threads) to cpus; NULL leaves it as it is. */
int bind_process_cpus(hwloc_const_bitmap_t cpus, char *err, size_t errlen);

/* Pin the calling thread to cpus (e.g. one CPU per worker thread). */
int bind_thread_cpus(hwloc_const_bitmap_t cpus, char *err, size_t errlen);

/* Bind future memory allocations of the process to the NUMA domains in mems (MPOL_BIND). */
int bind_process_mems(hwloc_const_bitmap_t mems, char *err, size_t errlen);

/* The CPUs the calling thread may run on (sched_getaffinity), as a new bitmap. */
hwloc_bitmap_t bind_current_cpus(void);

/* The NUMA domains the process may allocate from (the memory policy's nodes, or every
 * domain with memory when there is no binding), as a new bitmap. */
hwloc_bitmap_t bind_current_mems(void);

#endif
