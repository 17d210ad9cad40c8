/* slurm_cgroup: where a Slurm job keeps its processes — its job_<id> cgroup in the cgroup v2
 * hierarchy, or in the v1 freezer, cpuset and cpu hierarchies — found from one of its tasks:
 * the task's own cgroups (/proc/PID/cgroup) and where each hierarchy is mounted. Each directory
 * must be root's, in a directory only root writes to, as Slurm makes them: a user cannot plant a
 * job_<id> of their own for the guard to write into (cgroup_cpus.h, cgroup_job_dir). */
#ifndef COSCHED_SLURM_CGROUP_H
#define COSCHED_SLURM_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

#include "throttle.h"

/* The hierarchies a job's directories are kept for: a name (in state.json), the v1 controller
 * that mounts it (NULL: cgroup v2), where in throttle_slurm_job_t it goes. */
typedef struct slurm_cgroup_field {
    const char *name, *controller;
    size_t offset;
} slurm_cgroup_field_t;
#define SLURM_CGROUP_FIELDS 4
extern const slurm_cgroup_field_t slurm_cgroup_fields[SLURM_CGROUP_FIELDS];

/* From the text of a /proc/PID/cgroup and a mountinfo file: the job's directories ("" where a
 * hierarchy has none). 0 when at least one was found, else -1 and why. */
int slurm_cgroup_parse(const char *proc_cgroup, const char *mountinfo, const char *job_id, throttle_slurm_job_t *out,
                       char *why, size_t whylen);

/* The same for a live process (a task whose TaskProlog called job confine). */
int slurm_cgroup_of(pid_t pid, const char *job_id, throttle_slurm_job_t *out, char *why, size_t whylen);

#endif
