/* throttle_resctrl: memory-bandwidth allocation (Intel MBA through the resctrl filesystem), the
 * knob aimed at memory-bandwidth noise. A group is a flat <root>/<subtree>-<name> directory. */
#include "throttle_internal.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_RESCTRL_ROOT "/sys/fs/resctrl"
enum { TIDS_MAX = 4096 };

static bool kernel_has_resctrl(void)
{
    char buf[4096];
    return throttle_fs_read("/proc/filesystems", buf, sizeof buf) > 0 && strstr(buf, "\tresctrl\n");
}

/* The root schemata's "MB:0=100;1=100" line names the domains (one per L3 / socket). Values above
 * 100 are MB/s (mount option mba_MBps) or AMD's units, which a percent share does not map to. */
static const char *parse_domains(throttle_resctrl_t *mb, const char *schemata)
{
    const char *line = schemata;
    while (line && *line) {
        line += strspn(line, " \t");
        if (strncmp(line, "MB:", 3) == 0)
            break;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line || !*line)
        return "has no MB line";
    mb->ndomains = 0;
    for (const char *p = line + 3; *p && *p != '\n' && mb->ndomains < THROTTLE_MB_MAX_DOMAINS;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || *end != '=')
            return "has an MB line that is not DOMAIN=VALUE;...";
        long value = strtol(end + 1, &end, 10);
        if (value > 100)
            return "gives MB in MB/s (mba_MBps) or in AMD's units, not in percent";
        mb->domains[mb->ndomains++] = (int)id;
        p = end + strspn(end, ";");
    }
    return mb->ndomains ? NULL : "has an empty MB line";
}

/* The reasons resctrl cannot be used, in the order an admin would check them. */
static const char *find_root(throttle_t *t, char *why, size_t len)
{
    const char *root = t->cfg.resctrl_root[0] ? t->cfg.resctrl_root : DEFAULT_RESCTRL_ROOT;
    if (strcmp(root, "none") == 0) {
        snprintf(why, len, "not available: disabled (resctrl root \"none\")");
        return NULL;
    }
    if (!t->cfg.resctrl_root[0]) {
        /* resctrl mounts once: where it is, not where it usually is */
        if (throttle_mount_find("/proc/self/mountinfo", "resctrl", NULL, t->mb.root, sizeof t->mb.root) == 0)
            return t->mb.root;
        if (!kernel_has_resctrl())
            snprintf(why, len,
                     "not available: this kernel has no resctrl filesystem (no Intel RDT / AMD PQoS, "
                     "or CONFIG_X86_CPU_RESCTRL is off)");
        else
            snprintf(why, len, "not available: %s is not mounted (mount -t resctrl resctrl %s)", root, root);
        return NULL;
    }
    if (!throttle_fs_exists(root)) {
        snprintf(why, len, "not available: %s does not exist", root);
        return NULL;
    }
    snprintf(t->mb.root, sizeof t->mb.root, "%s", root);
    return t->mb.root;
}

void throttle_resctrl_detect(throttle_t *t)
{
    char *desc = t->desc[KNOB_RESCTRL_MB], path[THROTTLE_LONG_PATH], schemata[8192];
    const char *root = find_root(t, desc, THROTTLE_DESC_MAX), *bad;
    if (!root)
        return;
    snprintf(path, sizeof path, "%s/info/MB", root);
    if (!throttle_fs_exists(path)) {
        snprintf(desc, THROTTLE_DESC_MAX, "not available: %s has no info/MB (no memory-bandwidth allocation here)",
                 root);
        return;
    }
    snprintf(path, sizeof path, "%s/info/MB/min_bandwidth", root);
    bool ok = throttle_fs_read_uint(path, &t->mb.min_percent) == 0;
    snprintf(path, sizeof path, "%s/info/MB/bandwidth_gran", root);
    if (!ok || throttle_fs_read_uint(path, &t->mb.gran_percent) < 0) {
        snprintf(desc, THROTTLE_DESC_MAX, "not available: cannot read min_bandwidth and bandwidth_gran in %s/info/MB",
                 root);
        return;
    }
    snprintf(path, sizeof path, "%s/schemata", root);
    if (throttle_fs_read(path, schemata, sizeof schemata) < 0)
        bad = "cannot be read";
    else
        bad = parse_domains(&t->mb, schemata);
    if (bad) {
        snprintf(desc, THROTTLE_DESC_MAX, "not available: %s %s", path, bad);
        return;
    }
    int n = snprintf(desc, THROTTLE_DESC_MAX, "resctrl MB at %s (min %u %%, step %u %%, domains", root,
                     t->mb.min_percent, t->mb.gran_percent);
    for (int i = 0; i < t->mb.ndomains && n > 0 && n < THROTTLE_DESC_MAX; i++)
        n += snprintf(desc + n, THROTTLE_DESC_MAX - (size_t)n, "%c%d", i ? ',' : ' ', t->mb.domains[i]);
    if (n > 0 && n < THROTTLE_DESC_MAX)
        snprintf(desc + n, THROTTLE_DESC_MAX - (size_t)n, ")");
    t->has[KNOB_RESCTRL_MB] = true;
}

/* share x 100, rounded up to the granularity (as the kernel would), at least the minimum. */
unsigned throttle_resctrl_percent(double share, unsigned min_percent, unsigned gran_percent)
{
    if (gran_percent == 0)
        gran_percent = 1;
    if (!(share < 1))
        return 100;
    double want = share > 0 ? share * 100.0 : 0;
    unsigned p = (unsigned)ceil(want - 1e-9); /* 0.3 x 100 is 30.000000000000004 */
    p = (p + gran_percent - 1) / gran_percent * gran_percent;
    if (p < min_percent)
        p = min_percent;
    return p > 100 ? 100 : p;
}

int throttle_resctrl_schemata(const throttle_resctrl_t *mb, unsigned percent, char *out, size_t len)
{
    int n = snprintf(out, len, "MB:");
    for (int i = 0; i < mb->ndomains && n > 0 && (size_t)n < len; i++)
        n += snprintf(out + n, len - (size_t)n, "%s%d=%u", i ? ";" : "", mb->domains[i], percent);
    if (n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "\n");
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int write_percent(throttle_group_t *g, unsigned percent, char *err, size_t errlen)
{
    char path[THROTTLE_LONG_PATH], text[THROTTLE_MB_MAX_DOMAINS * 16];
    if (throttle_fs_path(path, sizeof path, g->dir[DIR_MB], "schemata") < 0 ||
        throttle_resctrl_schemata(&g->t->mb, percent, text, sizeof text) < 0) {
        snprintf(err, errlen, "resctrl group %s: path or schemata too long", g->dir[DIR_MB]);
        return -1;
    }
    return throttle_fs_write(path, text, err, errlen);
}

/* achieved: the share the schemata holds the group to, as far as duty cycling is concerned. The
 * rounding up to the granularity is accepted; only what lies below the minimum is duty-cycled. */
int throttle_resctrl_set(throttle_group_t *g, double share, double *achieved, char *err, size_t errlen)
{
    const throttle_resctrl_t *mb = &g->t->mb;
    unsigned percent = throttle_resctrl_percent(share, mb->min_percent, mb->gran_percent);
    if (write_percent(g, percent, err, errlen) < 0)
        return -1;
    double floor_share = mb->min_percent / 100.0;
    *achieved = share < floor_share ? floor_share : share;
    return 0;
}

int throttle_resctrl_create(throttle_group_t *g, char *err, size_t errlen)
{
    char *dir = g->dir[DIR_MB];
    int n = snprintf(dir, THROTTLE_LONG_PATH, "%s/%s-%s", g->t->mb.root, g->t->cfg.subtree, g->name);
    if (n < 0 || n >= THROTTLE_LONG_PATH || throttle_fs_path(g->join[DIR_MB], THROTTLE_LONG_PATH, dir, "tasks") < 0) {
        snprintf(err, errlen, "resctrl group for %s: path too long", g->name);
        dir[0] = '\0';
        return -1;
    }
    if (throttle_fs_mkdir(dir, err, errlen) < 0) {
        if (errno == ENOSPC) /* every CLOSID the hardware has is taken */
            snprintf(err, errlen, "cannot create %s: no free CLOSID (No space left on device)", dir);
        dir[0] = g->join[DIR_MB][0] = '\0';
        return -1;
    }
    if (write_percent(g, 100, err, errlen) < 0) {
        rmdir(dir);
        dir[0] = g->join[DIR_MB][0] = '\0';
        return -1;
    }
    return 0;
}

/* MBM: what the group's tasks moved to and from memory, summed over the L3 domains
 * (mon_data/mon_L3_<dom>/mbm_total_bytes; a domain that says "Unavailable" adds nothing). */
int throttle_group_memory_bytes(const throttle_group_t *g, unsigned long long *bytes)
{
    char dir[THROTTLE_LONG_PATH], path[THROTTLE_LONG_PATH], text[64];
    if (!g->dir[DIR_MB][0] || throttle_fs_path(dir, sizeof dir, g->dir[DIR_MB], "mon_data") < 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    bool found = false;
    *bytes = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, "mon_L3_", 7) != 0 || throttle_fs_path(path, sizeof path, dir, e->d_name) < 0 ||
            strlen(path) + sizeof "/mbm_total_bytes" > sizeof path)
            continue;
        strcat(path, "/mbm_total_bytes");
        if (throttle_fs_read(path, text, sizeof text) <= 0)
            continue;
        unsigned long long v = strtoull(text, &end, 10);
        if (end != text) {
            *bytes += v;
            found = true;
        }
    }
    closedir(d);
    return found ? 0 : -1;
}

/* A thread stays in the resctrl group it was in: every thread is moved, the threads it starts
 * later follow it. */
int throttle_resctrl_add_pid(throttle_group_t *g, pid_t pid, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "cannot list the threads of process %d: %s", (int)pid, strerror(errno));
        return -1;
    }
    pid_t *tids = malloc(TIDS_MAX * sizeof *tids);
    size_t n = 0;
    for (struct dirent *e; tids && n < TIDS_MAX && (e = readdir(d));)
        if (e->d_name[0] != '.')
            tids[n++] = (pid_t)atoi(e->d_name);
    closedir(d);
    int rc = -1;
    if (!tids)
        snprintf(err, errlen, "cannot list the threads of process %d: out of memory", (int)pid);
    else
        rc = throttle_fs_write_ids(g->join[DIR_MB], tids, n, err, errlen);
    free(tids);
    return rc;
}

/* Full bandwidth first, so that a group the kernel will not remove holds nobody back. rmdir
 * hands the tasks left to the default group; moving them first makes that explicit. */
void throttle_resctrl_remove(throttle_group_t *g)
{
    char err[THROTTLE_DESC_MAX], root_tasks[THROTTLE_LONG_PATH];
    if (!g->dir[DIR_MB][0])
        return;
    write_percent(g, 100, err, sizeof err);
    if (throttle_fs_path(root_tasks, sizeof root_tasks, g->t->mb.root, "tasks") == 0)
        throttle_fs_move_ids(g->join[DIR_MB], root_tasks, err, sizeof err);
    rmdir(g->dir[DIR_MB]);
    g->dir[DIR_MB][0] = g->join[DIR_MB][0] = '\0';
}

/* resctrl groups this daemon left (<root>/<subtree>-NAME): tasks to the default group, removed. */
void throttle_resctrl_sweep(throttle_t *t)
{
    char prefix[THROTTLE_NAME_MAX + 2], dir[THROTTLE_LONG_PATH], tasks[THROTTLE_LONG_PATH];
    char root_tasks[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    snprintf(prefix, sizeof prefix, "%s-", t->cfg.subtree);
    DIR *d = t->has[KNOB_RESCTRL_MB] ? opendir(t->mb.root) : NULL;
    if (!d)
        return;
    if (throttle_fs_path(root_tasks, sizeof root_tasks, t->mb.root, "tasks") == 0)
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_type == DT_DIR && strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
                throttle_fs_path(dir, sizeof dir, t->mb.root, e->d_name) == 0 &&
                throttle_fs_path(tasks, sizeof tasks, dir, "tasks") == 0) {
                throttle_fs_move_ids(tasks, root_tasks, err, sizeof err);
                rmdir(dir);
            }
    closedir(d);
}
