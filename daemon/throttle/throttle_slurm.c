/* throttle_slurm: what a Slurm job's cgroups say — its processes, the leaf cgroups of its tasks,
 * whether Slurm has suspended it — read from the job_<id> directories `cosched job confine`
 * found. Only reads. The layout, as Slurm 22.05 to 24.11 make it:
 *
 *   cgroup v2 (cgroup/v2)       .../slurmstepd.scope/job_<id>/step_<s>/slurm     the step's slurmstepd
 *                               .../slurmstepd.scope/job_<id>/step_<s>/user/task_<n>, task_special
 *                               Slurm suspends a step with cgroup.freeze in step_<s>/user.
 *   cgroup v1 (proctrack/cgroup) freezer/slurm[_<node>]/uid_<u>/job_<id>: the job's slurmstepds,
 *                               job_<id>/step_<s>: its tasks; Slurm suspends a step with
 *                               freezer.state there. task/cgroup makes the same tree in cpuset
 *                               (with task_<n> below each step).
 *
 * So a job's processes are those below a step (v2: below step_<s>/user), never the slurmstepds,
 * and cosched's freezes go on the task leaves, below the directory Slurm freezes itself. */
#include "throttle_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process.h"

enum { MAX_DEPTH = 8 };

static bool is_dir_entry(const struct dirent *e)
{
    return (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) && e->d_name[0] != '.';
}

/* Root's slurmstepd: its name, and its real uid 0 (a user may name a process so, not own it as root). */
static bool is_slurmstepd(pid_t pid)
{
    char path[64], text[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (throttle_fs_read(path, text, sizeof text) <= 0 || strncmp(text, "slurmstepd", 10) != 0)
        return false;
    const char *uid = process_status(pid, status, sizeof status) > 0 ? strstr(status, "\nUid:") : NULL;
    return uid && strtol(uid + 5, NULL, 10) == 0;
}

/* The pids of one cgroup.procs, however many: read in pieces, a number counted only once the
 * newline after it is read (a number cut by the end of a read is never taken for another). */
void throttle_read_procs(const char *path, throttle_pids_t *pids)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char buf[4096];
    long v = 0;
    bool digits = false;
    ssize_t n;
    if (fd < 0)
        return;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9' && v < 0x7fffffff) {
                v = v * 10 + (buf[i] - '0');
                digits = true;
                continue;
            }
            if (buf[i] == '\n' && digits && v > 0 && v <= 0x7fffffff && !is_slurmstepd((pid_t)v))
                throttle_pids_add(pids, (pid_t)v);
            v = 0;
            digits = false;
        }
    close(fd);
}

/* Every process in dir's cgroup.procs and below, slurmstepd left out. */
static void pids_below(const char *dir, throttle_pids_t *pids, int depth)
{
    char path[THROTTLE_LONG_PATH];
    if (throttle_fs_path(path, sizeof path, dir, "cgroup.procs") == 0)
        throttle_read_procs(path, pids);
    DIR *d = depth < MAX_DEPTH ? opendir(dir) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (is_dir_entry(e) && throttle_fs_path(path, sizeof path, dir, e->d_name) == 0 && throttle_fs_exists(path) &&
            strchr(e->d_name, '.') == NULL)
            pids_below(path, pids, depth + 1);
    closedir(d);
}

/* The steps of a job: step_<s> directories directly below it. */
static void each_step(const char *job, void (*fn)(const char *step, void *arg), void *arg)
{
    char path[THROTTLE_LONG_PATH];
    DIR *d = opendir(job);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (is_dir_entry(e) && strncmp(e->d_name, "step_", 5) == 0 &&
            throttle_fs_path(path, sizeof path, job, e->d_name) == 0)
            fn(path, arg);
    closedir(d);
}

static void step_pids_v2(const char *step, void *arg)
{
    char user[THROTTLE_LONG_PATH];
    if (throttle_fs_path(user, sizeof user, step, "user") == 0)
        pids_below(user, arg, 0);
}

static void step_pids_v1(const char *step, void *arg)
{
    pids_below(step, arg, 0);
}

/* The job's task directory for v1: the freezer's (proctrack/cgroup), else the cpuset's. */
static const char *v1_tasks_job(const throttle_slurm_job_t *job)
{
    return job->freezer1[0] ? job->freezer1 : job->cpuset1;
}

void throttle_slurm_pids(const throttle_slurm_job_t *job, throttle_pids_t *pids)
{
    if (job->cgroup2[0])
        each_step(job->cgroup2, step_pids_v2, pids);
    else if (v1_tasks_job(job)[0])
        each_step(v1_tasks_job(job), step_pids_v1, pids);
}

/* The leaves below step_<s>/user: task_<n> and task_special. */
static void step_task_dirs(const char *step, void *arg)
{
    char user[THROTTLE_LONG_PATH], path[THROTTLE_LONG_PATH];
    if (throttle_fs_path(user, sizeof user, step, "user") < 0)
        return;
    DIR *d = opendir(user);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (is_dir_entry(e) && strncmp(e->d_name, "task_", 5) == 0 &&
            throttle_fs_path(path, sizeof path, user, e->d_name) == 0)
            throttle_list_add(arg, path);
    closedir(d);
}

void throttle_slurm_task_dirs(const throttle_slurm_job_t *job, throttle_list_t *dirs)
{
    if (job->cgroup2[0])
        each_step(job->cgroup2, step_task_dirs, dirs);
}

typedef struct suspension {
    bool v2, any;
    char where[THROTTLE_LONG_PATH];
} suspension_t;

/* Slurm's own freeze of a step: v2 step_<s>/user/cgroup.freeze 1, v1 step_<s>/freezer.state
 * FROZEN (or FREEZING on the way). */
static void step_suspended(const char *step, void *arg)
{
    suspension_t *s = arg;
    char path[THROTTLE_LONG_PATH], text[64];
    int rc = s->v2 ? snprintf(path, sizeof path, "%s/user/cgroup.freeze", step)
                   : snprintf(path, sizeof path, "%s/freezer.state", step);
    if (s->any || rc < 0 || (size_t)rc >= sizeof path || throttle_fs_read(path, text, sizeof text) <= 0)
        return;
    if (s->v2 ? text[0] == '1' : strncmp(text, "THAWED", 6) != 0) {
        s->any = true;
        snprintf(s->where, sizeof s->where, "%s", path);
    }
}

bool throttle_slurm_suspended(const throttle_slurm_job_t *job, char *where, size_t len)
{
    suspension_t s = {.v2 = job->cgroup2[0] != '\0'};
    if (s.v2)
        each_step(job->cgroup2, step_suspended, &s);
    else if (job->freezer1[0])
        each_step(job->freezer1, step_suspended, &s);
    if (s.any && where)
        snprintf(where, len, "%s", s.where);
    return s.any;
}

bool throttle_slurm_present(const throttle_slurm_job_t *job)
{
    const char *dir = job->cgroup2[0] ? job->cgroup2 : v1_tasks_job(job);
    return dir[0] && throttle_fs_exists(dir);
}

/* A signal that asks the process to act — end (scancel, a time limit), or do something (Slurm's
 * --signal, a user's kill) — waiting while cosched holds it stopped or frozen. A signal the process
 * blocks (a sigwait thread's) is not waiting on cosched, and SIGALRM is left out: an interval timer
 * keeps raising it whatever cosched does. */
/* The signals waiting on a process (shared and its own), and those it blocks; false when it is gone. */
static bool pending_signals(pid_t pid, unsigned long long *pending, unsigned long long *blocked)
{
    static const char *const keys[] = {"\nShdPnd:", "\nSigPnd:"};
    char status[4096];
    if (process_status(pid, status, sizeof status) <= 0)
        return false;
    *pending = *blocked = 0;
    for (size_t k = 0; k < 2; k++) {
        const char *at = strstr(status, keys[k]);
        if (at)
            *pending |= strtoull(at + strlen(keys[k]), NULL, 16);
    }
    const char *at = strstr(status, "\nSigBlk:");
    if (at)
        *blocked = strtoull(at + 8, NULL, 16);
    return true;
}

bool throttle_process_signalled(pid_t pid)
{
    static const int wanted[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU};
    unsigned long long pending, blocked;
    if (!pending_signals(pid, &pending, &blocked))
        return false;
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        unsigned long long bit = 1ULL << (wanted[i] - 1);
        if ((pending & bit) && !(blocked & bit))
            return true;
    }
    return false;
}

/* A SIGSTOP sent and not yet acted on (the process has not run since). A SIGCONT sent after it
 * takes it off the list: a stopped process that runs with none waiting was continued. */
bool throttle_process_stop_pending(pid_t pid)
{
    unsigned long long pending, blocked;
    return pending_signals(pid, &pending, &blocked) && (pending & (1ULL << (SIGSTOP - 1)));
}

/* On its way out (the kernel's PF_EXITING, in /proc/PID/stat's flags), not yet a zombie: an exit
 * the process has begun, which a quota would slow. */
bool throttle_process_exiting(pid_t pid)
{
    enum { PF_EXITING_FLAG = 0x4 };
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (throttle_fs_read(path, text, sizeof text) <= 0)
        return false;
    const char *after = strrchr(text, ')'); /* the name may hold spaces and parentheses */
    char state;
    unsigned long flags;
    if (!after || sscanf(after + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return false;
    return (flags & PF_EXITING_FLAG) && state != 'Z' && state != 'X';
}
