/* throttle_memory: memory protection for jobs Slurm confines (throttle.h). Slurm's
 * ConstrainRAMSpace bounds each job's memory, page cache included; what is left is pressure from
 * outside any job's limit (the system, unconfined processes, a node whose limits add up to more
 * than it has), which the kernel reclaims from whichever cgroup it finds. On cgroup v2 the
 * trainer's job cgroup gets memory.low = its memory.max: its pages, up to what Slurm allotted
 * it, are reclaimed only when nothing unprotected is left (best effort, never an OOM kill as
 * memory.min could cause). cgroup v1 has no memory.low; there a co-tenant's memory cgroup gets
 * memory.soft_limit_in_bytes = 0, so that global reclaim takes from it before anything else.
 * Both live in the job's own cgroup, which Slurm removes with the job: nothing to undo. */
#include "throttle_internal.h"

#include <stdio.h>
#include <string.h>

int throttle_protect_trainer_memory(const throttle_slurm_job_t *job, char *what, size_t len)
{
    char max_path[THROTTLE_PATH_MAX + 16], low_path[THROTTLE_PATH_MAX + 16], limit[64] = "";
    if (!job->cgroup2[0]) {
        snprintf(what, len, "not on cgroup v2: no memory.low (co-tenants yield their memory instead)");
        return 0;
    }
    if (throttle_fs_path(max_path, sizeof max_path, job->cgroup2, "memory.max") < 0 ||
        throttle_fs_path(low_path, sizeof low_path, job->cgroup2, "memory.low") < 0) {
        snprintf(what, len, "its cgroup's path is too long");
        return -1;
    }
    if (!throttle_fs_exists(max_path)) {
        snprintf(what, len, "%s has no memory controller (cgroup.subtree_control): memory not protected", job->cgroup2);
        return 0;
    }
    ssize_t n = throttle_fs_read(max_path, limit, sizeof limit);
    limit[n > 0 ? strcspn(limit, "\n") : 0] = '\0';
    if (n <= 0 || strspn(limit, "0123456789") != strlen(limit) || !limit[0]) {
        snprintf(what, len, "%s is '%s', not a number of bytes (ConstrainRAMSpace=no?): memory not protected", max_path,
                 limit);
        return 0;
    }
    char err[THROTTLE_PATH_MAX + 128], value[80];
    snprintf(value, sizeof value, "%s\n", limit);
    if (throttle_fs_write(low_path, value, err, sizeof err) < 0) {
        snprintf(what, len, "%s", err);
        return -1;
    }
    snprintf(what, len, "memory.low %s (its memory.max) on %s", limit, job->cgroup2);
    return 1;
}

int throttle_yield_cotenant_memory(const throttle_slurm_job_t *job, char *what, size_t len)
{
    const char *at = strstr(job->freezer1, "/freezer/");
    if (job->cgroup2[0] || !at) {
        snprintf(what, len, "not on cgroup v1: the trainer's memory.low protects it instead");
        return 0;
    }
    /* Slurm lays out every v1 controller alike: the memory hierarchy beside the freezer one */
    char dir[THROTTLE_PATH_MAX + 16], file[THROTTLE_PATH_MAX + 48], err[THROTTLE_PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%.*s/memory/%s", (int)(at - job->freezer1), job->freezer1, at + strlen("/freezer/"));
    if (throttle_fs_path(file, sizeof file, dir, "memory.soft_limit_in_bytes") < 0) {
        snprintf(what, len, "its cgroup's path is too long");
        return -1;
    }
    if (!throttle_fs_exists(file)) {
        snprintf(what, len, "no v1 memory cgroup at %s (ConstrainRAMSpace=no?): its memory is not yielded", dir);
        return 0;
    }
    if (throttle_fs_write(file, "0\n", err, sizeof err) < 0) {
        snprintf(what, len, "%s", err);
        return -1;
    }
    snprintf(what, len, "memory.soft_limit_in_bytes 0 on %s: reclaimed first", dir);
    return 1;
}
