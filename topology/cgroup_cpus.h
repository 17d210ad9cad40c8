/* cgroup_cpus: the CPUs a process's cpuset cgroup confines it to (Slurm's ConstrainCores, a
 * container's limit): the set sched_setaffinity silently narrows any request to. */
#ifndef COSCHED_CGROUP_CPUS_H
#define COSCHED_CGROUP_CPUS_H

#include <stddef.h>
#include <sys/types.h>
#include <hwloc.h>

/* The effective CPUs of the cpuset cgroup of pid (0 = the caller), cgroup v1 or v2; its
 * directory goes to dir when given. NULL when no cpuset cgroup can be read: then nothing but
 * the machine confines the process. */
hwloc_bitmap_t cgroup_cpus_of(pid_t pid, char *dir, size_t dirlen);

/* The effective CPUs recorded in a cgroup directory (cpuset.effective_cpus, cpuset.cpus.effective
 * or cpuset.cpus, the first that is there and not empty); NULL when none is. */
hwloc_bitmap_t cgroup_cpus_in(const char *dir);

/* The cgroup of Slurm job `id` at or above `dir` (a task's cgroup directory) into out: the
 * first component job_<id>, accepted only when it and its parent are root's and the parent is
 * writable by root alone, so that no user can have made it. 0, or -1 and why. */
int cgroup_job_dir(const char *dir, const char *id, char *out, size_t outlen, char *why, size_t whylen);

#endif
