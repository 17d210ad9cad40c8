/* throttle_group: one co-tenant's group — its primary knob (the first that can be created), the
 * duty-cycling knob beside it, the processes in it, the share, and undoing all of it. What differs
 * for a group attached to a Slurm job (throttle_external.c) is reached through g->ops; the kind
 * defined here is the daemon's own group, in cgroups of cosched's. */
#include "throttle_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The v2 freezer, else the v1 one. When v2 fails and v1 works, err keeps why v2 failed. */
static int create_freezer(throttle_group_t *g, char *err, size_t errlen)
{
    throttle_t *t = g->t;
    char v2_err[THROTTLE_DESC_MAX] = "", v1_err[THROTTLE_DESC_MAX] = "";
    if (t->cg2_freeze) {
        bool had_dir = g->dir[DIR_CG2][0] != '\0';
        g->freezer_v2 = true;
        if (throttle_cgroup_create(g, DIR_CG2, v2_err, sizeof v2_err) == 0 &&
            throttle_freezer_write(g, false, v2_err, sizeof v2_err) == 0)
            return 0;
        if (!had_dir)
            throttle_cgroup_remove(g, DIR_CG2);
        g->freezer_v2 = false;
    }
    int rc = -1;
    if (t->freezer1.subtree[0]) {
        if (throttle_cgroup_create(g, DIR_FREEZER1, v1_err, sizeof v1_err) == 0 &&
            throttle_freezer_write(g, false, v1_err, sizeof v1_err) == 0)
            rc = 0;
        else
            throttle_cgroup_remove(g, DIR_FREEZER1);
    }
    throttle_msg(err, errlen, "%s%s%s", v2_err, v2_err[0] && v1_err[0] ? "; " : "", v1_err);
    return rc;
}

/* Create what knob k needs, at share 1 (a directory taken over may hold anything). On failure
 * nothing this call created is left; on success err may still say what was passed over. */
static int create_knob(throttle_group_t *g, knob_t k, char *err, size_t errlen)
{
    switch (k) {
    case KNOB_RESCTRL_MB: return throttle_resctrl_create(g, err, errlen);
    case KNOB_CPU_MAX:
    case KNOB_CFS_QUOTA: {
        throttle_dir_t which = k == KNOB_CPU_MAX ? DIR_CG2 : DIR_CPU1;
        if (throttle_cgroup_create(g, which, err, errlen) < 0)
            return -1;
        if (throttle_quota_init(g, k, err, errlen) == 0)
            return 0;
        throttle_cgroup_remove(g, which);
        return -1;
    }
    case KNOB_FREEZER: return create_freezer(g, err, errlen);
    default: return 0; /* SIGSTOP needs nothing */
    }
}

/* Append "knob: why" to the notes on knobs (or flavours of one) passed over. */
static void note(char *notes, size_t len, knob_t k, const char *why)
{
    size_t n = strlen(notes);
    snprintf(notes + n, len - n, "%s%s: %s", n ? "; " : "", throttle_knob_name(k), why);
}

static void own_choose_knobs(throttle_group_t *g, char *notes, size_t len)
{
    char why[THROTTLE_DESC_MAX];
    for (knob_t k = 0; k < KNOB_COUNT && g->primary == KNOB_COUNT; k++) {
        why[0] = '\0';
        if (!throttle_has(g->t, k) || k == KNOB_CORES) /* a layer before the primary, never one */
            continue;
        if (create_knob(g, k, why, sizeof why) == 0)
            g->primary = k;
        if (why[0])
            note(notes, len, k, why);
    }
    if (g->primary == KNOB_FREEZER || g->primary == KNOB_SIGSTOP) {
        g->duty_knob = g->primary;
    } else if (g->primary != KNOB_COUNT) {
        why[0] = '\0';
        if (throttle_has(g->t, KNOB_FREEZER) && create_knob(g, KNOB_FREEZER, why, sizeof why) == 0)
            g->duty_knob = KNOB_FREEZER;
        if (why[0])
            note(notes, len, KNOB_FREEZER, why);
        if (g->duty_knob == KNOB_COUNT && throttle_has(g->t, KNOB_SIGSTOP))
            g->duty_knob = KNOB_SIGSTOP;
    }
}

/* The freezer of its cgroup, or SIGSTOP/SIGCONT to each member. */
static int own_hold(throttle_group_t *g, bool pause, char *err, size_t errlen)
{
    if (g->duty_knob == KNOB_FREEZER)
        return throttle_freezer_write(g, pause, err, errlen);
    for (size_t i = 0; i < g->nmembers; i++)
        throttle_duty_signal_member(&g->members[i], pause ? SIGSTOP : SIGCONT);
    return 0;
}

/* Everything in its cgroup (children of the runs too) and the runs themselves. */
static void own_pids(const throttle_group_t *g, throttle_pids_t *out)
{
    static const throttle_dir_t dirs[] = {DIR_FREEZER1, DIR_CPU1, DIR_CG2};
    char path[THROTTLE_LONG_PATH];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (g->dir[dirs[i]][0] && throttle_fs_path(path, sizeof path, g->dir[dirs[i]], "cgroup.procs") == 0) {
            throttle_read_procs(path, out);
            break;
        }
    for (size_t i = 0; i < g->nmembers; i++)
        throttle_pids_add(out, g->members[i].pid);
}

static bool own_let_go(const throttle_group_t *g)
{
    (void)g; /* cosched stops its own runs, and lets each go then (throttle_group_remove_pid) */
    return false;
}

/* Resumed, should anything be left paused (a failed thaw) or be in a freezer. */
static void own_release(throttle_group_t *g)
{
    char err[THROTTLE_DESC_MAX];
    if (g->ever_paused || g->duty_knob == KNOB_FREEZER)
        throttle_duty_resume(g, err, sizeof err);
}

static const throttle_group_ops_t own_group = {
    .choose_knobs = own_choose_knobs,
    .hold = own_hold,
    .pids = own_pids,
    .let_go = own_let_go,
    .release = own_release,
};

throttle_group_t *throttle_group_alloc(throttle_t *t, const char *name, int ncpus, const throttle_group_ops_t *ops,
                                       char *err, size_t errlen)
{
    throttle_group_t *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "group %s: out of memory", name);
        return NULL;
    }
    g->t = t;
    g->ops = ops;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->ncpus = ncpus;
    g->primary = g->duty_knob = KNOB_COUNT;
    g->share = g->duty = 1;
    return g;
}

bool throttle_group_choose_knobs(throttle_group_t *g, char *notes, size_t len)
{
    throttle_cores_init(g);
    notes[0] = '\0';
    g->ops->choose_knobs(g, notes, len);
    if (g->primary != KNOB_COUNT)
        return true;
    throttle_group_destroy(g);
    return false;
}

throttle_group_t *throttle_group_create(throttle_t *t, const char *name, int ncpus, char *err, size_t errlen)
{
    if (!throttle_valid_name(name)) {
        snprintf(err, errlen, "invalid group name '%s': 1 to %d of [A-Za-z0-9._-], not . or ..", name,
                 THROTTLE_NAME_MAX - 1);
        return NULL;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpus <= 0) /* not said: the whole machine */
        ncpus = online > 0 ? (int)online : 1;
    throttle_group_t *g = throttle_group_alloc(t, name, ncpus, &own_group, err, errlen);
    if (!g)
        return NULL;
    char notes[4 * THROTTLE_DESC_MAX];
    if (!throttle_group_choose_knobs(g, notes, sizeof notes)) {
        snprintf(err, errlen, "no knob can hold group %s: %s", name, notes[0] ? notes : "none is allowed");
        return NULL;
    }
    snprintf(err, errlen, "%s", notes);
    return g;
}

int throttle_group_add_pid(throttle_group_t *g, pid_t pid, char *err, size_t errlen)
{
    if (pid <= 0) {
        snprintf(err, errlen, "group %s: %d is not a process id", g->name, (int)pid);
        return -1;
    }
    if (kill(pid, 0) < 0 && errno == ESRCH) { /* cgroup.procs would say nothing of it */
        snprintf(err, errlen, "group %s: there is no process %d", g->name, (int)pid);
        return -1;
    }
    for (int d = DIR_CG2; d < DIR_COUNT; d++)
        if (g->join[d][0] && throttle_fs_write_ids(g->join[d], &pid, 1, err, errlen) < 0)
            return -1;
    if (g->join[DIR_MB][0] && throttle_resctrl_add_pid(g, pid, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < g->nmembers; i++)
        if (g->members[i].pid == pid)
            return 0;
    if (g->nmembers == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        throttle_member_t *m = realloc(g->members, cap * sizeof *m);
        if (!m) {
            snprintf(err, errlen, "group %s: out of memory", g->name);
            return -1;
        }
        g->members = m;
        g->cap = cap;
    }
    throttle_member_t *m = &g->members[g->nmembers++];
    *m = (throttle_member_t){.pid = pid};
    if (g->paused && g->duty_knob == KNOB_SIGSTOP) /* a cgroup freezes newcomers by itself */
        throttle_duty_signal_member(m, SIGSTOP);
    throttle_cores_refresh(g);
    return 0;
}

/* A process let go leaves the group's cgroups and is resumed: whatever it is (a run told to stop,
 * one that ended), it must not be left frozen or stopped by us, or its SIGTERM would wait. */
void throttle_group_remove_pid(throttle_group_t *g, pid_t pid)
{
    throttle_cgroup_release_pid(g, pid);
    throttle_cores_forget(g, pid);
    for (size_t i = 0; i < g->nmembers; i++)
        if (g->members[i].pid == pid) {
            if (g->paused && g->duty_knob == KNOB_SIGSTOP)
                throttle_duty_signal_member(&g->members[i], SIGCONT);
            g->members[i] = g->members[--g->nmembers];
            return;
        }
}

int throttle_group_join_self(const throttle_group_t *g)
{
    /* A frozen cgroup would freeze the child before it execs, while the daemon waits for that
     * exec: during a freezer pause the child leaves that cgroup to add_pid, after exec. */
    int frozen = g->paused && g->duty_knob == KNOB_FREEZER ? (g->freezer_v2 ? DIR_CG2 : DIR_FREEZER1) : -1;
    char text[24], *p = text + sizeof text;
    unsigned long v = (unsigned long)getpid();
    *--p = '\n';
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    size_t n = (size_t)(text + sizeof text - p);
    for (int d = 0; d < DIR_COUNT; d++) {
        if (!g->join[d][0] || d == frozen)
            continue;
        int fd = open(g->join[d], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
        ssize_t w = write(fd, p, n);
        int saved = errno;
        close(fd);
        if (w != (ssize_t)n) {
            errno = w < 0 ? saved : EIO;
            return -1;
        }
    }
    return 0;
}

/* Fewer cores first where allowed (not beside resctrl, which holds bandwidth itself); a CPU quota
 * is CPU time whatever the cores, so it gets the whole share; what neither reaches is duty
 * cycling. -1 before the duty cycle when a layer fails (nothing more is changed). */
static int apply_layers(throttle_group_t *g, double share, double *duty, char *err, size_t errlen)
{
    double achieved = 1, kept = 1;
    int rc = 0;
    if (g->primary != KNOB_RESCTRL_MB)
        rc = throttle_cores_set(g, share, &kept, err, errlen);
    if (rc == 0 && g->primary == KNOB_RESCTRL_MB)
        rc = throttle_resctrl_set(g, share, &achieved, err, errlen);
    else if (rc == 0 && (g->primary == KNOB_CPU_MAX || g->primary == KNOB_CFS_QUOTA))
        rc = throttle_quota_set(g, share, &achieved, err, errlen);
    if (rc < 0)
        return -1;
    achieved = fmin(achieved, kept);
    *duty = share >= 1 ? 1 : share / achieved;
    if (*duty > 1 - 1e-9)
        *duty = 1;
    return 0;
}

int throttle_group_apply(throttle_group_t *g, double share, double now, char *err, size_t errlen)
{
    double duty;
    if (apply_layers(g, share, &duty, err, errlen) < 0)
        return -1;
    return throttle_duty_set(g, duty, now, err, errlen);
}

int throttle_group_set_share(throttle_group_t *g, double share, double now, char *err, size_t errlen)
{
    if (!(share >= 0 && share <= 1)) {
        snprintf(err, errlen, "share %g for group %s is not within 0..1", share, g->name);
        return -1;
    }
    if (throttle_group_let_go(g)) { /* nothing is held until the let-go ends, then this share */
        g->share = share;
        return 0;
    }
    double duty;
    if (apply_layers(g, share, &duty, err, errlen) < 0)
        return -1;
    g->share = share;
    return throttle_duty_set(g, duty, now, err, errlen);
}

int throttle_group_set_ncpus(throttle_group_t *g, int ncpus, double now, char *err, size_t errlen)
{
    if (ncpus <= 0 || ncpus == g->ncpus)
        return 0;
    g->ncpus = ncpus;
    return g->share < 1 ? throttle_group_set_share(g, g->share, now, err, errlen) : 0;
}

bool throttle_group_let_go(const throttle_group_t *g)
{
    return g && g->ops->let_go(g);
}

double throttle_group_share(const throttle_group_t *g)
{
    return g->share;
}

knob_t throttle_group_knob(const throttle_group_t *g)
{
    return g->primary;
}

bool throttle_group_duty_cycling(const throttle_group_t *g)
{
    return g->cycling;
}

bool throttle_group_paused(const throttle_group_t *g)
{
    return g->paused;
}

const char *throttle_group_last_error(const throttle_group_t *g)
{
    return g->last_error;
}

/* Resume first, then lift the limits, then leave: should a directory refuse to go, what is left
 * in it runs unthrottled. */
void throttle_group_destroy(throttle_group_t *g)
{
    char err[THROTTLE_DESC_MAX];
    double achieved;
    if (!g)
        return;
    g->cycling = false;
    throttle_cores_restore(g);
    free(g->narrowed);
    g->ops->release(g); /* attached: its holds let go, Slurm's cgroups as they were, the journal gone */
    bool quota = g->primary == KNOB_CPU_MAX || g->primary == KNOB_CFS_QUOTA;
    if (quota && g->dir[g->primary == KNOB_CPU_MAX ? DIR_CG2 : DIR_CPU1][0]) /* a cgroup of cosched's */
        throttle_quota_set(g, 1, &achieved, err, sizeof err);
    throttle_resctrl_remove(g);
    for (int d = DIR_CG2; d < DIR_COUNT; d++)
        throttle_cgroup_remove(g, (throttle_dir_t)d);
    free(g->members);
    free(g);
}
