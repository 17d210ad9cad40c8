/* throttle_cgroup: the cgroup hierarchies the knobs live in — cgroup v2 (cpu.max, cgroup.freeze),
 * v1 cpu (CFS quota) and v1 freezer — found once, and a group's directory in each. */
#include "throttle_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MOUNTINFO "/proc/self/mountinfo"
enum { REMOVE_TRIES = 4 };

/* "cpuset cpu io memory": whole words only. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* <mount>/<subtree>, created. why gets the reason when the hierarchy cannot be used. */
static bool make_subtree(throttle_t *t, throttle_cgroup_root_t *r, char *why, size_t len)
{
    char path[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    if (throttle_fs_path(path, sizeof path, r->mount, t->cfg.subtree) < 0) {
        snprintf(why, len, "%s/%s: path too long", r->mount, t->cfg.subtree);
        return false;
    }
    if (throttle_fs_mkdir(path, err, sizeof err) < 0) {
        throttle_msg(why, len, "%s", err);
        return false;
    }
    snprintf(r->subtree, sizeof r->subtree, "%s", path);
    return true;
}

static bool find_v2(throttle_t *t, char *why, size_t len)
{
    const char *root = t->cfg.cgroup2_root;
    if (strcmp(root, "none") == 0) {
        snprintf(why, len, "cgroup v2 disabled (cgroup2 root \"none\")");
        return false;
    }
    if (!root[0] && throttle_mount_find(MOUNTINFO, "cgroup2", NULL, t->cg2.mount, sizeof t->cg2.mount) < 0) {
        snprintf(why, len, "no cgroup2 mount in " MOUNTINFO);
        return false;
    }
    if (root[0])
        snprintf(t->cg2.mount, sizeof t->cg2.mount, "%s", root);
    if (!throttle_fs_exists(t->cg2.mount)) {
        snprintf(why, len, "%s does not exist", t->cg2.mount);
        return false;
    }
    return make_subtree(t, &t->cg2, why, len);
}

/* cpu.max needs "cpu" in the subtree's cgroup.controllers (granted by the root's
 * subtree_control) and then in the subtree's own subtree_control (so that its groups get it). */
static bool enable_v2_cpu(throttle_t *t, char *why, size_t len)
{
    char path[THROTTLE_LONG_PATH], list[512], err[THROTTLE_DESC_MAX];
    throttle_fs_path(path, sizeof path, t->cg2.subtree, "cgroup.controllers");
    if (throttle_fs_read(path, list, sizeof list) < 0 || !has_word(list, "cpu")) {
        char root_list[512] = "";
        throttle_fs_path(path, sizeof path, t->cg2.mount, "cgroup.controllers");
        if (throttle_fs_read(path, root_list, sizeof root_list) < 0 || !has_word(root_list, "cpu")) {
            char v1[THROTTLE_PATH_MAX];
            bool bound = throttle_mount_find(MOUNTINFO, "cgroup", "cpu", v1, sizeof v1) == 0;
            root_list[strcspn(root_list, "\n")] = '\0';
            throttle_msg(why, len, "cgroup v2 at %s has no cpu controller (cgroup.controllers: \"%s\"%s%s)",
                         t->cg2.mount, root_list, bound ? "; cpu is bound to the cgroup v1 hierarchy at " : "",
                         bound ? v1 : "");
            return false;
        }
        throttle_fs_path(path, sizeof path, t->cg2.mount, "cgroup.subtree_control");
        if (throttle_fs_write(path, "+cpu\n", err, sizeof err) < 0) {
            throttle_msg(why, len, "%s", err);
            return false;
        }
    }
    throttle_fs_path(path, sizeof path, t->cg2.subtree, "cgroup.subtree_control");
    if (throttle_fs_write(path, "+cpu\n", err, sizeof err) < 0) {
        throttle_msg(why, len, "%s", err);
        return false;
    }
    return true;
}

static void detect_v2(throttle_t *t, char *freeze_why, size_t len)
{
    char *cpu_desc = t->desc[KNOB_CPU_MAX], why[THROTTLE_DESC_MAX], path[THROTTLE_LONG_PATH];
    bool want_cpu = throttle_allowed(&t->cfg, KNOB_CPU_MAX), want_freeze = throttle_allowed(&t->cfg, KNOB_FREEZER);
    if (!want_cpu && !want_freeze)
        return;
    if (!find_v2(t, why, sizeof why)) {
        if (want_cpu)
            throttle_msg(cpu_desc, THROTTLE_DESC_MAX, "not available: %s", why);
        throttle_msg(freeze_why, len, "%s", why);
        return;
    }
    if (want_cpu && enable_v2_cpu(t, why, sizeof why)) {
        t->has[KNOB_CPU_MAX] = true;
        snprintf(cpu_desc, THROTTLE_DESC_MAX, "cgroup v2 cpu.max at %s", t->cg2.subtree);
    } else if (want_cpu) {
        throttle_msg(cpu_desc, THROTTLE_DESC_MAX, "not available: %s", why);
    }
    t->cg2_freeze = want_freeze && throttle_fs_path(path, sizeof path, t->cg2.subtree, "cgroup.freeze") == 0 &&
                    throttle_fs_exists(path);
    if (want_freeze && !t->cg2_freeze)
        snprintf(freeze_why, len, "%s has no cgroup.freeze (a kernel before 5.2)", t->cg2.subtree);
}

/* A v1 hierarchy by controller: the configured DIR/<controller> or the mount that carries it. */
static bool find_v1(throttle_t *t, const char *controller, throttle_cgroup_root_t *r, char *why, size_t len)
{
    const char *root = t->cfg.cgroup1_root;
    if (strcmp(root, "none") == 0) {
        snprintf(why, len, "cgroup v1 disabled (cgroup1 root \"none\")");
        return false;
    }
    if (!root[0] && throttle_mount_find(MOUNTINFO, "cgroup", controller, r->mount, sizeof r->mount) < 0) {
        snprintf(why, len, "no cgroup v1 %s hierarchy in " MOUNTINFO, controller);
        return false;
    }
    if (root[0] && snprintf(r->mount, sizeof r->mount, "%s/%s", root, controller) >= (int)sizeof r->mount) {
        snprintf(why, len, "%s/%s: path too long", root, controller);
        return false;
    }
    if (!throttle_fs_exists(r->mount)) {
        snprintf(why, len, "%s does not exist", r->mount);
        return false;
    }
    return make_subtree(t, r, why, len);
}

/* The file that proves the controller works in a child cgroup (the root has neither). */
static bool v1_has_file(throttle_cgroup_root_t *r, const char *file, const char *missing, char *why, size_t len)
{
    char path[THROTTLE_LONG_PATH];
    if (throttle_fs_path(path, sizeof path, r->subtree, file) == 0 && throttle_fs_exists(path))
        return true;
    snprintf(why, len, "%s has no %s (%s)", r->subtree, file, missing);
    return false;
}

static void detect_v1(throttle_t *t, char *freeze_why, size_t len)
{
    char why[THROTTLE_DESC_MAX];
    if (throttle_allowed(&t->cfg, KNOB_CFS_QUOTA)) {
        if (find_v1(t, "cpu", &t->cpu1, why, sizeof why) &&
            v1_has_file(&t->cpu1, "cpu.cfs_quota_us", "a kernel without CONFIG_CFS_BANDWIDTH", why, sizeof why)) {
            t->has[KNOB_CFS_QUOTA] = true;
            snprintf(t->desc[KNOB_CFS_QUOTA], THROTTLE_DESC_MAX, "cgroup v1 cpu at %s", t->cpu1.subtree);
        } else {
            throttle_msg(t->desc[KNOB_CFS_QUOTA], THROTTLE_DESC_MAX, "not available: %s", why);
        }
    }
    if (throttle_allowed(&t->cfg, KNOB_FREEZER) && find_v1(t, "freezer", &t->freezer1, freeze_why, len) &&
        !v1_has_file(&t->freezer1, "freezer.state", "not a freezer hierarchy", freeze_why, len)) {
        rmdir(t->freezer1.subtree);
        t->freezer1.subtree[0] = '\0';
    }
}

static void describe_freezer(throttle_t *t, const char *v2_why, const char *v1_why)
{
    char *desc = t->desc[KNOB_FREEZER];
    bool v1 = t->freezer1.subtree[0] != '\0';
    if (!throttle_allowed(&t->cfg, KNOB_FREEZER))
        return;
    t->has[KNOB_FREEZER] = t->cg2_freeze || v1;
    if (t->cg2_freeze && v1)
        throttle_msg(desc, THROTTLE_DESC_MAX, "cgroup v2 cgroup.freeze at %s (cgroup v1 freezer at %s when that fails)",
                     t->cg2.subtree, t->freezer1.subtree);
    else if (t->cg2_freeze)
        snprintf(desc, THROTTLE_DESC_MAX, "cgroup v2 cgroup.freeze at %s", t->cg2.subtree);
    else if (v1)
        snprintf(desc, THROTTLE_DESC_MAX, "cgroup v1 freezer at %s", t->freezer1.subtree);
    else
        throttle_msg(desc, THROTTLE_DESC_MAX, "not available: %s; %s", v2_why, v1_why);
}

void throttle_cgroup_detect(throttle_t *t)
{
    char v2_why[THROTTLE_DESC_MAX] = "", v1_why[THROTTLE_DESC_MAX] = "";
    detect_v2(t, v2_why, sizeof v2_why);
    detect_v1(t, v1_why, sizeof v1_why);
    describe_freezer(t, v2_why, v1_why);
}

static throttle_cgroup_root_t *root_of(throttle_t *t, throttle_dir_t which)
{
    return which == DIR_CG2 ? &t->cg2 : which == DIR_CPU1 ? &t->cpu1 : &t->freezer1;
}

int throttle_cgroup_create(throttle_group_t *g, throttle_dir_t which, char *err, size_t errlen)
{
    char *dir = g->dir[which];
    if (dir[0])
        return 0; /* cpu.max and cgroup.freeze share the v2 directory */
    const throttle_cgroup_root_t *r = root_of(g->t, which);
    if (throttle_fs_path(dir, THROTTLE_LONG_PATH, r->subtree, g->name) < 0 ||
        throttle_fs_path(g->join[which], THROTTLE_LONG_PATH, dir, "cgroup.procs") < 0) {
        snprintf(err, errlen, "cgroup for %s under %s: path too long", g->name, r->subtree);
        dir[0] = g->join[which][0] = '\0';
        return -1;
    }
    if (throttle_fs_mkdir(dir, err, errlen) < 0) {
        dir[0] = g->join[which][0] = '\0';
        return -1;
    }
    return 0;
}

/* A cgroup with processes cannot be removed: they go back to the root, a few times over in case
 * one of them forked meanwhile. */
void throttle_cgroup_remove(throttle_group_t *g, throttle_dir_t which)
{
    char root_procs[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    if (!g->dir[which][0])
        return;
    if (throttle_fs_path(root_procs, sizeof root_procs, root_of(g->t, which)->mount, "cgroup.procs") == 0)
        for (int i = 0; i < REMOVE_TRIES; i++) {
            throttle_fs_move_ids(g->join[which], root_procs, err, sizeof err);
            if (rmdir(g->dir[which]) == 0 || errno != EBUSY)
                break;
        }
    g->dir[which][0] = g->join[which][0] = '\0';
}

/* One process out of the group's cgroups, back to each hierarchy's root (which thaws it when its
 * group is frozen). A process that is gone leaves nothing to move: errors are not worth a word. */
void throttle_cgroup_release_pid(throttle_group_t *g, pid_t pid)
{
    char root_procs[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    for (int d = DIR_CG2; d < DIR_COUNT; d++)
        if (g->dir[d][0] && throttle_fs_path(root_procs, sizeof root_procs, root_of(g->t, (throttle_dir_t)d)->mount,
                                             "cgroup.procs") == 0)
            throttle_fs_write_ids(root_procs, &pid, 1, err, sizeof err);
}

/* Thaw one left-over group directory, move its processes to the root and remove it. */
static void sweep_dir(const char *dir, const char *root_procs)
{
    char path[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    if (throttle_fs_path(path, sizeof path, dir, "cgroup.freeze") == 0 && throttle_fs_exists(path))
        throttle_fs_write(path, "0\n", err, sizeof err);
    if (throttle_fs_path(path, sizeof path, dir, "freezer.state") == 0 && throttle_fs_exists(path))
        throttle_fs_write(path, "THAWED\n", err, sizeof err);
    if (throttle_fs_path(path, sizeof path, dir, "cgroup.procs") < 0)
        return;
    for (int i = 0; i < REMOVE_TRIES; i++) {
        throttle_fs_move_ids(path, root_procs, err, sizeof err);
        if (rmdir(dir) == 0 || errno != EBUSY)
            break;
    }
}

void throttle_cgroup_sweep(throttle_t *t)
{
    throttle_cgroup_root_t *roots[] = {&t->cg2, &t->cpu1, &t->freezer1};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char root_procs[THROTTLE_LONG_PATH], dir[THROTTLE_LONG_PATH];
        DIR *d = roots[i]->subtree[0] ? opendir(roots[i]->subtree) : NULL;
        if (!d || throttle_fs_path(root_procs, sizeof root_procs, roots[i]->mount, "cgroup.procs") < 0) {
            if (d)
                closedir(d);
            continue;
        }
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_type == DT_DIR && throttle_valid_name(e->d_name) &&
                throttle_fs_path(dir, sizeof dir, roots[i]->subtree, e->d_name) == 0)
                sweep_dir(dir, root_procs);
        closedir(d);
    }
}

/* Only empty subtrees go: another daemon's groups (or this one's, left by a crash) stay. */
void throttle_cgroup_free(throttle_t *t)
{
    throttle_cgroup_root_t *roots[] = {&t->cg2, &t->cpu1, &t->freezer1};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (roots[i]->subtree[0])
            rmdir(roots[i]->subtree);
}
