/* cgroup_cpus: /proc/PID/cgroup names the process's cgroup, /proc/self/mountinfo where the
 * hierarchy holding the cpuset controller is mounted (v1 "cpuset" or the v2 unified one). */
#include "cgroup_cpus.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpulist.h"

/* The process's path in the v1 hierarchy that has the cpuset controller, else in v2. */
static int cgroup_path(pid_t pid, char *v1, char *v2, size_t len)
{
    char file[64], line[4096];
    if (pid > 0)
        snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
    else
        snprintf(file, sizeof file, "/proc/self/cgroup");
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    v1[0] = v2[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'), *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        controllers++;
        if (*controllers == '\0')
            snprintf(v2, len, "%s", path);
        for (char *save = NULL, *c = strtok_r(controllers, ",", &save); c; c = strtok_r(NULL, ",", &save))
            if (strcmp(c, "cpuset") == 0)
                snprintf(v1, len, "%s", path);
    }
    fclose(f);
    return 0;
}

/* mountinfo writes space, tab, newline and backslash in paths as \ooo. */
static void unescape_octal(char *s)
{
    char *w = s;
    for (const char *r = s; *r; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w = *r++;
        }
    }
    *w = '\0';
}

/* Mount point and root of the v1 cpuset hierarchy (v1 true) or of cgroup2. */
static int find_mount(int v1, char *mount, char *root, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    int found = -1;
    if (!f)
        return -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        char mroot[1024], mpoint[1024], fstype[64], opts[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, mpoint) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", fstype, opts) != 2)
            continue;
        int match = v1 ? strcmp(fstype, "cgroup") == 0 && strstr(opts, "cpuset") != NULL
                       : strcmp(fstype, "cgroup2") == 0;
        if (match) {
            unescape_octal(mroot);
            unescape_octal(mpoint);
            snprintf(mount, len, "%s", mpoint);
            snprintf(root, len, "%s", mroot);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

static hwloc_bitmap_t read_cpulist(const char *dir, const char *name)
{
    char file[4352], text[8192];
    snprintf(file, sizeof file, "%s/%s", dir, name);
    FILE *f = fopen(file, "r");
    if (!f)
        return NULL;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    char err[128];
    return text[0] ? cpulist_parse(text, 0, err, sizeof err) : NULL;
}

hwloc_bitmap_t cgroup_cpus_in(const char *dir)
{
    static const char *const names[] = {"cpuset.effective_cpus", "cpuset.cpus.effective", "cpuset.cpus"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hwloc_bitmap_t set = read_cpulist(dir, names[i]);
        if (set)
            return set;
    }
    return NULL;
}

hwloc_bitmap_t cgroup_cpus_of(pid_t pid, char *dir, size_t dirlen)
{
    char v1[2048], v2[2048], mount[1024], root[1024], path[4096];
    if (cgroup_path(pid, v1, v2, sizeof v1) < 0)
        return NULL;
    for (int version = 1; version <= 2; version++) {
        const char *rel = version == 1 ? v1 : v2;
        if (!rel[0] || find_mount(version == 1, mount, root, sizeof mount) < 0)
            continue;
        /* Inside a cgroup namespace the mount's root is a prefix of the path we were shown. */
        size_t rootlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (rootlen && strncmp(rel, root, rootlen) == 0 && (rel[rootlen] == '/' || rel[rootlen] == '\0'))
            rel += rootlen;
        snprintf(path, sizeof path, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel);
        size_t top = strlen(mount);
        /* v2 shows cpuset files only where the controller is enabled; below that, a cgroup
         * has its nearest ancestor's CPUs. */
        for (;;) {
            hwloc_bitmap_t set = cgroup_cpus_in(path);
            if (set) {
                if (dir)
                    snprintf(dir, dirlen, "%s", path);
                return set;
            }
            char *slash = strrchr(path, '/');
            if (version == 1 || !slash || (size_t)(slash - path) < top || strlen(path) == top)
                break;
            *slash = '\0';
        }
    }
    return NULL;
}

/* A directory that root made and only root may write to: no user can have made it, or its
 * children. Slurm makes uid_<uid>/ and job_<id>/ as root (v1), and slurmstepd.scope/job_<id>/
 * (v2); the step and task directories below are the job's user's. */
static int made_by_root(const char *path, bool root_writes_alone, char *why, size_t whylen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(why, whylen, "cannot read %s", path);
        return -1;
    }
    if (st.st_uid != 0) {
        snprintf(why, whylen, "%s belongs to uid %u, not to root: it is not a cgroup Slurm made", path,
                 (unsigned)st.st_uid);
        return -1;
    }
    if (root_writes_alone && (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(why, whylen, "%s is writable by others than root: anyone could have made a job cgroup in it", path);
        return -1;
    }
    return 0;
}

int cgroup_job_dir(const char *dir, const char *id, char *out, size_t outlen, char *why, size_t whylen)
{
    char needle[128];
    if (snprintf(needle, sizeof needle, "/job_%s", id) >= (int)sizeof needle) {
        snprintf(why, whylen, "job id %s is too long", id);
        return -1;
    }
    size_t n = strlen(needle);
    const char *at = strstr(dir, needle);
    while (at && at[n] != '/' && at[n] != '\0')
        at = strstr(at + 1, needle);
    if (!at) {
        snprintf(why, whylen, "not inside job %s's cgroup: it is in %s", id, dir);
        return -1;
    }
    /* The first job_<id> from the top: one lower down may be a user's own. */
    size_t len = (size_t)(at - dir) + n;
    if (len >= outlen) {
        snprintf(why, whylen, "cgroup path %s is too long", dir);
        return -1;
    }
    snprintf(out, outlen, "%.*s", (int)len, dir);
    char parent[4096];
    snprintf(parent, sizeof parent, "%.*s", (int)(at - dir), dir);
    return made_by_root(out, false, why, whylen) < 0 || made_by_root(parent, true, why, whylen) < 0 ? -1 : 0;
}
