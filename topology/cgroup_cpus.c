/* cgroup_cpus: /proc/PID/cgroup names the process's cgroup, /proc/self/mountinfo where the
 * hierarchy holding the cpuset controller is mounted (v1 "cpuset" or the v2 unified one). */
#include "cgroup_cpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (rootlen && strncmp(rel, root, rootlen) == 0)
            rel += rootlen;
        snprintf(path, sizeof path, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel);
        hwloc_bitmap_t set = cgroup_cpus_in(path);
        if (set) {
            if (dir)
                snprintf(dir, dirlen, "%s", path);
            return set;
        }
    }
    return NULL;
}
