/* throttle_external: a co-tenant Slurm started, held where Slurm put it — an attached group. Its
 * knobs, best first: resctrl MB (the job's tasks moved to cosched's group, newcomers too); cgroup
 * v2 cpu.max on Slurm's job_<id> (Slurm never writes it; what was there is restored); cgroup v1
 * the CFS quota on Slurm's job directory in the cpu hierarchy when there is one, else on a group
 * of cosched's the tasks are moved to (Slurm's task/cgroup does not use the cpu hierarchy). Duty
 * cycling: v2 cgroup.freeze on the task leaves, below the step_<s>/user that Slurm freezes to
 * suspend; v1 SIGSTOP of the tasks, never the freezer (a task frozen under v1 cannot die, and
 * scancel would end in UnkillableStepTimeout and a drained node). slurmstepd is never held.
 *
 * Never fight Slurm: only what cosched stopped or froze is resumed, a job Slurm suspends is
 * neither paused nor resumed until Slurm resumes it, and a job that ends gets to act on its signal
 * (throttle_signals.c). */
#include "throttle_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process.h"

bool throttle_group_attached(const throttle_group_t *g)
{
    return g && g->ext;
}

/* Absolute, no spaces, no "." or ".." component, and its last one job_<something>: what
 * slurm_cgroup.c found, or a state file that was tampered with. */
static bool path_ok(const char *p)
{
    if (!p[0])
        return true;
    const char *last = strrchr(p, '/');
    return p[0] == '/' && strcspn(p, " \t\n") == strlen(p) && !strstr(p, "/./") && !strstr(p, "/../") &&
           strncmp(last, "/job_", 5) == 0 && last[5] != '\0';
}

bool throttle_slurm_job_valid(const throttle_slurm_job_t *job)
{
    return path_ok(job->cgroup2) && path_ok(job->freezer1) && path_ok(job->cpuset1) && path_ok(job->cpu1) &&
           (job->cgroup2[0] || job->freezer1[0] || job->cpuset1[0]);
}

static int check_job(const throttle_slurm_job_t *job, char *err, size_t errlen)
{
    const char *paths[] = {job->cgroup2, job->freezer1, job->cpuset1, job->cpu1};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!path_ok(paths[i])) {
            snprintf(err, errlen, "'%s' is not a job_<id> cgroup path (absolute, without spaces or ..)", paths[i]);
            return -1;
        }
    if (!job->cgroup2[0] && !job->freezer1[0] && !job->cpuset1[0]) {
        snprintf(err, errlen, "no cgroup of the job is known (job confine has not run in one of its tasks)");
        return -1;
    }
    return 0;
}

/* The first line of a small file, without its newline; false when it cannot be read. */
static bool read_value(const char *dir, const char *file, char *out, size_t len)
{
    char path[THROTTLE_LONG_PATH];
    if (throttle_fs_path(path, sizeof path, dir, file) < 0 || throttle_fs_read(path, out, len) <= 0)
        return false;
    out[strcspn(out, "\n")] = '\0';
    return out[0] != '\0';
}

/* Slurm's own cgroup carries the quota: what it held is kept to be written back. */
static int borrow(throttle_group_t *g, throttle_dir_t which, const char *dir, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    bool v2 = which == DIR_CG2;
    if (!read_value(dir, v2 ? "cpu.max" : "cpu.cfs_quota_us", x->saved_quota, sizeof x->saved_quota) ||
        (!v2 && !read_value(dir, "cpu.cfs_period_us", x->saved_period, sizeof x->saved_period))) {
        snprintf(err, errlen, "%s has no %s%s", dir, v2 ? "cpu.max" : "cpu.cfs_quota_us",
                 v2 ? " (the cpu controller is not enabled for Slurm's cgroups: docs/slurm.md)" : "");
        return -1;
    }
    snprintf(g->dir[which], THROTTLE_LONG_PATH, "%s", dir);
    g->borrowed[which] = true;
    if (throttle_journal_write(g, err, errlen) < 0) { /* recorded before anything is written */
        g->dir[which][0] = '\0';
        g->borrowed[which] = false;
        return -1;
    }
    if (!v2 && throttle_quota_init(g, KNOB_CFS_QUOTA, err, errlen) < 0)
        return -1;
    return 0;
}

static void note(char *notes, size_t len, knob_t k, const char *why)
{
    size_t n = strlen(notes);
    snprintf(notes + n, len - n, "%s%s: %s", n ? "; " : "", throttle_knob_name(k), why);
}

/* The CPU quota: on Slurm's cgroup where it has one in a hierarchy with the cpu controller, else
 * (v1) on a group of cosched's, which the tasks join. */
static bool choose_quota(throttle_group_t *g, char *notes, size_t len)
{
    const throttle_slurm_job_t *job = &g->ext->job;
    throttle_t *t = g->t;
    char why[THROTTLE_DESC_MAX] = "";
    if (job->cgroup2[0]) {
        if (!throttle_allowed(&t->cfg, KNOB_CPU_MAX))
            return false;
        if (borrow(g, DIR_CG2, job->cgroup2, why, sizeof why) == 0) {
            g->primary = KNOB_CPU_MAX;
            return true;
        }
        note(notes, len, KNOB_CPU_MAX, why);
        return false;
    }
    if (!throttle_allowed(&t->cfg, KNOB_CFS_QUOTA))
        return false;
    if (job->cpu1[0]) { /* Slurm keeps the job there (its accounting): never moved out of it */
        if (borrow(g, DIR_CPU1, job->cpu1, why, sizeof why) == 0) {
            g->primary = KNOB_CFS_QUOTA;
            return true;
        }
        note(notes, len, KNOB_CFS_QUOTA, why);
        return false;
    }
    if (!t->has[KNOB_CFS_QUOTA]) {
        note(notes, len, KNOB_CFS_QUOTA, why[0] ? why : throttle_describe(t, KNOB_CFS_QUOTA));
        return false;
    }
    if (throttle_cgroup_create(g, DIR_CPU1, why, sizeof why) == 0 &&
        throttle_quota_init(g, KNOB_CFS_QUOTA, why, sizeof why) == 0) {
        g->primary = KNOB_CFS_QUOTA;
        return true;
    }
    throttle_cgroup_remove(g, DIR_CPU1);
    note(notes, len, KNOB_CFS_QUOTA, why);
    return false;
}

static void attached_choose_knobs(throttle_group_t *g, char *notes, size_t len)
{
    throttle_t *t = g->t;
    char why[THROTTLE_DESC_MAX] = "";
    if (t->has[KNOB_RESCTRL_MB]) {
        if (throttle_resctrl_create(g, why, sizeof why) == 0)
            g->primary = KNOB_RESCTRL_MB;
        else
            note(notes, len, KNOB_RESCTRL_MB, why);
    }
    if (g->primary == KNOB_COUNT)
        choose_quota(g, notes, len);
    if (g->ext->job.cgroup2[0] && throttle_allowed(&t->cfg, KNOB_FREEZER))
        g->duty_knob = KNOB_FREEZER;
    else if (!g->ext->job.cgroup2[0] && t->has[KNOB_SIGSTOP])
        g->duty_knob = KNOB_SIGSTOP;
    if (g->primary == KNOB_COUNT)
        g->primary = g->duty_knob;
}

static int remember_stopped(throttle_ext_t *x, pid_t pid, unsigned long long ticks)
{
    unsigned long long *grown = realloc(x->stopped_ticks, (x->stopped.n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    x->stopped_ticks = grown;
    bool *seen = realloc(x->stopped_seen, (x->stopped.n + 1) * sizeof *seen);
    if (!seen)
        return -1;
    x->stopped_seen = seen;
    if (throttle_pids_add(&x->stopped, pid) < 0)
        return -1;
    x->stopped_ticks[x->stopped.n - 1] = ticks;
    x->stopped_seen[x->stopped.n - 1] = false; /* a SIGSTOP lands when the process next runs */
    return 0;
}

/* Whom a pause stops: each process seen in the job, referred to first (a pidfd where the kernel
 * has them) and then looked for in the job's cgroups, read again (a pid reused since the last look
 * is not listed there), not already stopped by someone else (Slurm's suspend under
 * proctrack/linuxproc is a SIGSTOP too), recorded with its start time. */
static int choose_stops(throttle_ext_t *x, process_ref_t *refs)
{
    throttle_pids_t listed = {0};
    for (size_t i = 0; i < x->pids.n; i++)
        if (throttle_pids_has(&x->stopped, x->pids.v[i]) || !process_ref_open(&refs[i], x->pids.v[i]))
            refs[i].pid = 0;
    throttle_slurm_pids(&x->job, &listed);
    int rc = 0;
    for (size_t i = 0; i < x->pids.n; i++) {
        if (!refs[i].pid)
            continue;
        char state = process_state(refs[i].pid);
        bool stop = rc == 0 && throttle_pids_has(&listed, refs[i].pid) && state != '?' && state != 'T' &&
                    state != 't' && state != 'Z';
        if (stop && remember_stopped(x, refs[i].pid, refs[i].ticks) < 0)
            rc = -1;
        else if (stop)
            continue;
        process_ref_close(&refs[i]);
        refs[i].pid = 0;
    }
    throttle_pids_free(&listed);
    return rc;
}

static int stop_all(throttle_group_t *g, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    size_t before = x->stopped.n;
    process_ref_t *refs = calloc(x->pids.n ? x->pids.n : 1, sizeof *refs);
    int rc = refs ? choose_stops(x, refs) : -1;
    if (rc < 0)
        snprintf(err, errlen, "group %s: out of memory", g->name);
    else
        rc = throttle_journal_write(g, err, errlen); /* recorded first, then held */
    for (size_t i = 0; refs && i < x->pids.n; i++)
        if (refs[i].pid) {
            if (rc == 0)
                process_ref_signal(&refs[i], SIGSTOP);
            process_ref_close(&refs[i]);
        }
    if (rc < 0)
        x->stopped.n = before; /* not recorded: not held */
    free(refs);
    return rc;
}

static int continue_all(throttle_group_t *g, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    for (size_t i = 0; i < x->stopped.n; i++) {
        process_ref_t r;
        if (process_ref_open_as(&r, x->stopped.v[i], x->stopped_ticks[i])) {
            process_ref_signal(&r, SIGCONT);
            process_ref_close(&r);
        }
    }
    x->stopped.n = 0;
    return throttle_journal_write(g, err, errlen);
}

static int write_freeze(const char *dir, bool frozen, char *err, size_t errlen)
{
    char path[THROTTLE_LONG_PATH];
    if (throttle_fs_path(path, sizeof path, dir, "cgroup.freeze") < 0 || !throttle_fs_exists(path)) {
        snprintf(err, errlen, "%s has no cgroup.freeze", dir);
        return -1;
    }
    return throttle_fs_write(path, frozen ? "1\n" : "0\n", err, errlen);
}

static int freeze_all(throttle_group_t *g, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    size_t before = x->frozen.n;
    for (size_t i = 0; i < x->tasks.n; i++) {
        char state[8];
        if (throttle_list_has(&x->frozen, x->tasks.items[i]) ||
            (read_value(x->tasks.items[i], "cgroup.freeze", state, sizeof state) && state[0] == '1'))
            continue; /* frozen by someone else: theirs to thaw */
        if (throttle_list_add(&x->frozen, x->tasks.items[i]) < 0) {
            snprintf(err, errlen, "group %s: out of memory", g->name);
            return -1;
        }
    }
    if (throttle_journal_write(g, err, errlen) < 0) {
        while (x->frozen.n > before)
            free(x->frozen.items[--x->frozen.n]);
        return -1;
    }
    int rc = 0;
    for (size_t i = before; i < x->frozen.n; i++)
        if (write_freeze(x->frozen.items[i], true, err, errlen) < 0)
            rc = -1;
    return rc;
}

static int thaw_all(throttle_group_t *g, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    char why[THROTTLE_DESC_MAX];
    for (size_t i = 0; i < x->frozen.n; i++)
        if (throttle_fs_exists(x->frozen.items[i]))
            write_freeze(x->frozen.items[i], false, why, sizeof why);
    throttle_list_free(&x->frozen);
    return throttle_journal_write(g, err, errlen);
}

static int attached_hold(throttle_group_t *g, bool pause, char *err, size_t errlen)
{
    throttle_ext_t *x = g->ext;
    if (pause && (x->suspended || x->let_go))
        pause = false; /* Slurm's to hold, or a signal to act on: the phase passes with nothing held */
    if (g->duty_knob == KNOB_FREEZER)
        return pause ? freeze_all(g, err, errlen) : thaw_all(g, err, errlen);
    return pause ? stop_all(g, err, errlen) : continue_all(g, err, errlen);
}

/* The job's processes now: newcomers join the group's cgroups (a v1 cpu group of cosched's,
 * resctrl); those that left are forgotten. */
static int take_in_processes(throttle_group_t *g)
{
    throttle_ext_t *x = g->ext;
    throttle_pids_t now = {0};
    char err[THROTTLE_DESC_MAX];
    int joined = 0;
    throttle_slurm_pids(&x->job, &now);
    for (size_t i = 0; i < now.n; i++) {
        if (throttle_pids_has(&x->pids, now.v[i]))
            continue;
        joined++;
        if (g->join[DIR_CPU1][0] && !g->borrowed[DIR_CPU1])
            throttle_fs_write_ids(g->join[DIR_CPU1], &now.v[i], 1, err, sizeof err);
        if (g->join[DIR_MB][0])
            throttle_resctrl_add_pid(g, now.v[i], err, sizeof err);
    }
    /* Stopped processes that ended are forgotten with their start times; one a scan missed (a
     * cgroup read that failed) is still held, and still continued on the way out. */
    size_t kept = 0;
    for (size_t i = 0; i < x->stopped.n; i++)
        if (process_same(x->stopped.v[i], x->stopped_ticks[i])) {
            x->stopped.v[kept] = x->stopped.v[i];
            x->stopped_seen[kept] = x->stopped_seen[i];
            x->stopped_ticks[kept++] = x->stopped_ticks[i];
        }
    x->stopped.n = kept;
    throttle_pids_free(&x->pids);
    x->pids = now;
    return joined;
}

static int take_in_tasks(throttle_group_t *g)
{
    throttle_ext_t *x = g->ext;
    throttle_list_t now = {0}, frozen = {0};
    int joined = 0;
    throttle_slurm_task_dirs(&x->job, &now);
    for (size_t i = 0; i < now.n; i++)
        joined += !throttle_list_has(&x->tasks, now.items[i]);
    for (size_t i = 0; i < x->frozen.n; i++) /* held while it exists, seen by this scan or not */
        if (throttle_fs_exists(x->frozen.items[i]))
            throttle_list_add(&frozen, x->frozen.items[i]);
    throttle_list_free(&x->tasks);
    throttle_list_free(&x->frozen);
    x->tasks = now;
    x->frozen = frozen;
    return joined;
}

void throttle_group_watch(throttle_group_t *g, double now, throttle_watch_t *out)
{
    throttle_ext_t *x = g->ext;
    char err[THROTTLE_DESC_MAX], where[THROTTLE_LONG_PATH];
    memset(out, 0, sizeof *out);
    if (!x)
        return;
    if (!throttle_slurm_present(&x->job)) {
        out->gone = true;
        snprintf(out->detail, sizeof out->detail, "its cgroup %s is gone",
                 x->job.cgroup2[0]    ? x->job.cgroup2
                 : x->job.freezer1[0] ? x->job.freezer1
                                      : x->job.cpuset1);
        return;
    }
    out->joined = take_in_processes(g) + take_in_tasks(g);
    if (out->joined && !x->let_go)
        throttle_cores_refresh(g); /* a new step's tasks come with all the job's CPUs */
    bool was_suspended = x->suspended;
    x->suspended = out->suspended = throttle_slurm_suspended(&x->job, where, sizeof where);
    if (x->suspended && !was_suspended)
        throttle_msg(out->detail, sizeof out->detail,
                     "Slurm suspended it (%s): cosched neither pauses nor resumes it until Slurm resumes it", where);
    else if (!x->suspended && was_suspended)
        snprintf(out->detail, sizeof out->detail, "Slurm resumed it: held again");
    throttle_signals_watch(g, now, out);
    if (out->let_go)
        return;
    /* Slurm's suspension and the newcomers: the pause under way let go or taken up again. */
    if (!x->let_go && g->paused && (x->suspended != was_suspended || (!x->suspended && out->joined)))
        attached_hold(g, !x->suspended, err, sizeof err);
}

static bool attached_let_go(const throttle_group_t *g)
{
    return g->ext->let_go;
}

const char *throttle_group_let_go_reason(const throttle_group_t *g)
{
    return g && g->ext && g->ext->let_go ? g->ext->let_go_reason : NULL;
}

/* As last seen in Slurm's cgroups (throttle_group_watch). */
static void attached_pids(const throttle_group_t *g, throttle_pids_t *out)
{
    for (size_t i = 0; i < g->ext->pids.n; i++)
        throttle_pids_add(out, g->ext->pids.v[i]);
}

/* Its holds let go, Slurm's cgroups as they were, the journal gone. */
static void attached_release(throttle_group_t *g)
{
    throttle_ext_t *x = g->ext;
    char err[THROTTLE_DESC_MAX];
    if (!x)
        return;
    x->suspended = x->let_go = false;
    if (g->duty_knob == KNOB_FREEZER)
        thaw_all(g, err, sizeof err);
    else
        continue_all(g, err, sizeof err);
    throttle_quota_restore(g, err, sizeof err); /* Slurm's cgroups as they were */
    for (int d = 0; d < DIR_COUNT; d++)
        if (g->borrowed[d])
            g->dir[d][0] = g->join[d][0] = '\0';
    throttle_journal_remove(g);
    throttle_pids_free(&x->pids);
    throttle_pids_free(&x->stopped);
    free(x->stopped_ticks);
    free(x->stopped_seen);
    throttle_pids_free(&x->let_go_pids);
    free(x->let_go_ticks);
    throttle_list_free(&x->tasks);
    throttle_list_free(&x->frozen);
    free(x);
    g->ext = NULL;
}

static const throttle_group_ops_t attached_group = {
    .choose_knobs = attached_choose_knobs,
    .hold = attached_hold,
    .pids = attached_pids,
    .let_go = attached_let_go,
    .release = attached_release,
};

throttle_group_t *throttle_group_attach(throttle_t *t, const char *name, int ncpus, const throttle_slurm_job_t *job,
                                        char *err, size_t errlen)
{
    if (!throttle_valid_name(name)) {
        snprintf(err, errlen, "invalid group name '%s'", name);
        return NULL;
    }
    if (check_job(job, err, errlen) < 0)
        return NULL;
    if (!t->cfg.journal_dir[0]) { /* nothing is held that a crash could not undo */
        snprintf(err, errlen, "no journal directory to record what would be held in Slurm's cgroups");
        return NULL;
    }
    throttle_group_t *g = throttle_group_alloc(t, name, ncpus > 0 ? ncpus : 1, &attached_group, err, errlen);
    throttle_ext_t *x = g ? calloc(1, sizeof *x) : NULL;
    if (!x) {
        free(g);
        snprintf(err, errlen, "group %s: out of memory", name);
        return NULL;
    }
    g->ext = x;
    x->job = *job;
    throttle_fs_path(x->journal, sizeof x->journal, t->cfg.journal_dir, name);
    char notes[4 * THROTTLE_DESC_MAX];
    if (!throttle_group_choose_knobs(g, notes, sizeof notes)) { /* what it took of Slurm's given back */
        snprintf(err, errlen, "no knob can hold Slurm job cgroup %s: %s", name,
                 notes[0] ? notes : "none is allowed (guard.knobs)");
        return NULL;
    }
    snprintf(err, errlen, "%s", notes);
    throttle_watch_t first;
    throttle_group_watch(g, 0, &first); /* the processes there now join */
    return g;
}
