/* pmu: the instructions a CPU trainer's processes retire, counted by the kernel's perf events —
 * per CPU on the job's cgroup v2 directory (a Slurm job under cgroup/v2), or per process with
 * inheritance (a run coschedd started: every thread and child it makes is counted) — read once a
 * second on the event loop (reading a counter never blocks). Where the kernel offers no hardware
 * PMU (many VMs, this project's CI machines) the probe says so, and no job is judged by it.
 * The software event task-clock stands in for instructions in tests on such machines: it counts
 * CPU time, not progress, and says so wherever it is shown. */
#ifndef COSCHED_PMU_H
#define COSCHED_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <hwloc.h>

typedef struct pmu_counter pmu_counter_t;

/* Whether the event ("instructions", or the stand-in "task-clock") can be counted here; why not. */
bool pmu_probe(const char *event, char *why, size_t whylen);

/* A counter of the event on every process in a cgroup v2 directory, one per CPU it may run on. */
pmu_counter_t *pmu_open_cgroup(const char *event, const char *cgroup_dir, hwloc_const_bitmap_t cpus, char *why,
                               size_t whylen);

/* Count a process (and the threads and children it makes from now on); *c made when NULL. */
int pmu_add_process(pmu_counter_t **c, const char *event, pid_t pid, char *why, size_t whylen);
bool pmu_counts_process(const pmu_counter_t *c, pid_t pid);
/* The processes counted (at most max); and one let go, its count kept in the total. */
int pmu_processes(const pmu_counter_t *c, pid_t *pids, int max);
void pmu_remove_process(pmu_counter_t *c, pid_t pid);

/* Events counted since the counters opened, scaled for the time the kernel multiplexed them out. */
double pmu_read(const pmu_counter_t *c);

void pmu_close(pmu_counter_t *c);

#endif
