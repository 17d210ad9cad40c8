/* slurm_cgroup: a task's cgroup lines ("ID:controllers:path", one per hierarchy; v2's has no
 * controllers) give its path in each hierarchy; the first job_<id> component from the top is the
 * job's directory there, below where that hierarchy is mounted. */
#include "slurm_cgroup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_cpus.h"

const slurm_cgroup_field_t slurm_cgroup_fields[SLURM_CGROUP_FIELDS] = {
    {"cgroup2", NULL, offsetof(throttle_slurm_job_t, cgroup2)},
    {"freezer", "freezer", offsetof(throttle_slurm_job_t, freezer1)},
    {"cpuset", "cpuset", offsetof(throttle_slurm_job_t, cpuset1)},
    {"cpu", "cpu", offsetof(throttle_slurm_job_t, cpu1)},
};

static bool lists(const char *controllers, const char *controller)
{
    size_t n = strlen(controller);
    for (const char *p = controllers; p && *p;) {
        if (strncmp(p, controller, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return false;
}

/* The job's directory in one hierarchy, given the task's path there: checked as Slurm's. */
static void job_dir(const char *mountinfo, const char *controller, const char *path, const char *job_id, char *out,
                    size_t outlen, char *why, size_t whylen)
{
    char mount[THROTTLE_PATH_MAX], root[THROTTLE_PATH_MAX], full[2 * THROTTLE_PATH_MAX], dir[THROTTLE_PATH_MAX];
    if (throttle_mount_find_root(mountinfo, controller ? "cgroup" : "cgroup2", controller, mount, sizeof mount, root,
                                 sizeof root) < 0)
        return;
    /* Inside a cgroup namespace the mount's root is a prefix of the path the task was shown. */
    size_t rootlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (rootlen && strncmp(path, root, rootlen) == 0 && (path[rootlen] == '/' || path[rootlen] == '\0'))
        path += rootlen;
    if (snprintf(full, sizeof full, "%s%s", mount, path) >= (int)sizeof full)
        return;
    char reason[512];
    if (cgroup_job_dir(full, job_id, dir, sizeof dir, reason, sizeof reason) < 0) {
        if (!why[0] && strstr(full, "/job_"))
            snprintf(why, whylen, "%s", reason);
        return;
    }
    snprintf(out, outlen, "%s", dir);
}

int slurm_cgroup_parse(const char *proc_cgroup, const char *mountinfo, const char *job_id, throttle_slurm_job_t *out,
                       char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    char *text = strdup(proc_cgroup ? proc_cgroup : "");
    if (!text) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *controllers = strchr(line, ':'), *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        controllers++;
        for (size_t h = 0; h < SLURM_CGROUP_FIELDS; h++) {
            const char *c = slurm_cgroup_fields[h].controller;
            char *slot = (char *)out + slurm_cgroup_fields[h].offset;
            if (!slot[0] && (c ? lists(controllers, c) : controllers[0] == '\0'))
                job_dir(mountinfo, c, path, job_id, slot, THROTTLE_PATH_MAX, why, whylen);
        }
    }
    free(text);
    if (out->cgroup2[0] || out->freezer1[0] || out->cpuset1[0])
        return 0;
    if (!why[0])
        snprintf(why, whylen, "none of its cgroups is inside a job_%s directory", job_id);
    return -1;
}

int slurm_cgroup_of(pid_t pid, const char *job_id, throttle_slurm_job_t *out, char *why, size_t whylen)
{
    char path[64], text[8192];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(why, whylen, "cannot read %s", path);
        return -1;
    }
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return slurm_cgroup_parse(text, "/proc/self/mountinfo", job_id, out, why, whylen);
}
