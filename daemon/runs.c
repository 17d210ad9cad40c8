/* runs: start a command bound to one rank's allocation, follow its stdout JSON lines as
 * progress, notice when it ends (pidfd), stop it on request. Stdout goes to a file the daemon
 * tails through inotify, so a run outlives a daemon restart and its progress is picked up again. */
#include "runs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <numaif.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bind.h"
#include "jobs.h"
#include "log.h"
#include "progress.h"
#include "run_output.h"
#include "run_user.h"
#include "task_env.h"
#include "wire.h"

enum { STOP_GRACE_SECONDS = 5 };

const char *run_state_name(run_state_t s)
{
    static const char *const names[] = {"running", "exited", "killed", "lost"};
    return names[s];
}

int run_state_parse(const char *name, run_state_t *out)
{
    for (int s = RUN_RUNNING; s <= RUN_LOST; s++)
        if (name && strcmp(name, run_state_name((run_state_t)s)) == 0) {
            *out = (run_state_t)s;
            return 0;
        }
    return -1;
}

run_t *run_find(daemon_t *d, int id)
{
    for (run_t *r = d->runs; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

/* A number a run printed, if it is one we can add up: finite and not negative. */
static bool counted(json_t *v, double *out)
{
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return false;
    *out = json_number_value(v);
    return true;
}

/* One JSON line from a run: trainer steps carry t_step, noise phases carry bytes and rate_mbs.
 * The output is the run's, not ours: anything that is not a sane number is not counted. */
static void run_progress_line(daemon_t *d, run_t *r, const char *line, size_t len)
{
    r->lines++;
    json_error_t jerr;
    json_t *o = json_loadb(line, len, 0, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return; /* not every line needs to be ours to read */
    }
    double t, bytes, rate;
    if (counted(json_object_get(o, RUNOUT_T_STEP), &t) && t > 0) {
        job_t *j = job_find(d, r->job);
        r->steps++;
        r->last_step_time = t;
        if (j && j->role == ROLE_TRAINER)
            progress_step(d, j, t);
    }
    /* Noise lines (docs/noise-output.md): progress lines carry increments, the phase line the
     * phase's total (which replaces the increments counted so far), the summary a repeat. */
    const char *event = json_string_value(json_object_get(o, RUNOUT_EVENT));
    bool summary = event && strcmp(event, RUNOUT_EVENT_SUMMARY) == 0,
         progress = event && strcmp(event, RUNOUT_EVENT_PROGRESS) == 0;
    if (counted(json_object_get(o, RUNOUT_RATE_MBS), &rate) && rate < 1e12)
        r->rate_bytes_per_s = rate * 1e6;
    if (counted(json_object_get(o, RUNOUT_BYTES), &bytes) && bytes < 1e21) {
        if (progress) {
            r->bytes_total += bytes;
            r->phase_bytes += bytes;
        } else if (!summary) {
            r->bytes_total += bytes - r->phase_bytes;
            r->phase_bytes = 0;
        }
    }
    json_decref(o);
}

void run_read_output(daemon_t *d, run_t *r)
{
    if (r->out_fd < 0)
        return;
    for (;;) {
        size_t room = sizeof r->line - r->line_len;
        ssize_t n = pread(r->out_fd, r->line + r->line_len, room, r->out_offset);
        if (n <= 0)
            return;
        r->out_offset += n;
        r->line_len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < r->line_len; i++)
            if (r->line[i] == '\n') {
                run_progress_line(d, r, r->line + start, i - start);
                start = i + 1;
            }
        /* A line longer than the buffer is not a progress line: drop it. */
        if (start == 0 && r->line_len == sizeof r->line)
            start = r->line_len;
        memmove(r->line, r->line + start, r->line_len - start);
        r->line_len -= start;
    }
}

/* Only a regular file is read: nothing at that name may block the loop (a FIFO) or lead
 * elsewhere (a link). */
static int watch_output(daemon_t *d, run_t *r)
{
    struct stat st;
    r->out_fd = open(r->out_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (r->out_fd < 0)
        return -1;
    if (fstat(r->out_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(r->out_fd);
        r->out_fd = -1;
        return -1;
    }
    r->out_wd = inotify_add_watch(d->inotify_fd, r->out_path, IN_MODIFY | IN_DONT_FOLLOW);
    return 0;
}

static int watch_exit(daemon_t *d, run_t *r)
{
    r->pid_fd = process_pidfd(r->pid);
    if (r->pid_fd < 0)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_RUN_BASE + (uint64_t)r->id};
    return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, r->pid_fd, &ev);
}

static void unwatch(daemon_t *d, run_t *r)
{
    if (r->pid_fd >= 0) {
        epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, r->pid_fd, NULL);
        close(r->pid_fd);
        r->pid_fd = -1;
    }
    if (r->out_wd >= 0) {
        inotify_rm_watch(d->inotify_fd, r->out_wd);
        r->out_wd = -1;
    }
    if (r->out_fd >= 0) {
        close(r->out_fd);
        r->out_fd = -1;
    }
}

void run_ended(daemon_t *d, run_t *r)
{
    int status;
    pid_t got = waitpid(r->pid, &status, WNOHANG);
    if (got == 0)
        return; /* pidfd fired early? not ended yet */
    run_read_output(d, r);
    if (got == r->pid && WIFEXITED(status)) {
        r->state = RUN_EXITED;
        r->exit_code = WEXITSTATUS(status);
    } else if (got == r->pid && WIFSIGNALED(status)) {
        r->state = RUN_KILLED;
        r->exit_code = WTERMSIG(status);
    } else {
        r->state = RUN_LOST; /* not our child (started before a restart): status unknown */
        r->exit_code = -1;
    }
    r->ended = clock_now_unix();
    unwatch(d, r);
    if (r->throttle)
        throttle_group_remove_pid(r->throttle, r->pid);
    r->throttle = NULL;
    log_info("run %d (job %s rank %d, pid %d) %s %d", r->id, r->job, r->rank, (int)r->pid, run_state_name(r->state),
             r->exit_code);
    state_mark_dirty(d);
}

/* What the child needs between fork and exec, all prepared before the fork. */
typedef struct run_child {
    const run_t *run;
    const job_t *job;
    const plan_rank_t *rank;
    json_t *task_env; /* the rank's own: CPUs for OpenMP, its GPU */
    json_t *env;      /* the caller's, which may override any of it */
    const char *socket;
    const char *autoreport; /* the step reporter's directory, first on a trainer's PYTHONPATH; NULL: none */
    run_user_t *user;
    const throttle_group_t *throttle;
    int out_fd, err_fd, report_fd;
} run_child_t;

/* The step reporter's directory first on PYTHONPATH, before the caller's (its env parameter) or
 * the one runs.keep_environment kept; not twice when it is first already. */
static void prepend_autoreport(const char *dir)
{
    if (!dir)
        return;
    const char *own = getenv(WIRE_ENV_PYTHONPATH);
    size_t n = strlen(dir);
    if (own && strncmp(own, dir, n) == 0 && (own[n] == '\0' || own[n] == ':'))
        return;
    if (!own || !*own) {
        setenv(WIRE_ENV_PYTHONPATH, dir, 1);
        return;
    }
    char *value = malloc(n + 1 + strlen(own) + 1);
    if (!value)
        return; /* the run trains without the reporter */
    sprintf(value, "%s:%s", dir, own);
    setenv(WIRE_ENV_PYTHONPATH, value, 1);
    free(value);
}

static void child_env(const run_child_t *c)
{
    char buf[32];
    const char *key;
    json_t *value;
    json_object_foreach(c->task_env, key, value)
        setenv(key, json_string_value(value), 1);
    setenv(WIRE_ENV_SOCKET, c->socket, 1); /* for the job-side client (libcosched, cosched report) */
    json_object_foreach(c->env, key, value)
        setenv(key, json_string_value(value), 1);
    setenv(WIRE_ENV_JOB, c->run->job, 1);
    snprintf(buf, sizeof buf, "%d", c->run->rank);
    setenv(WIRE_ENV_RANK, buf, 1);
    snprintf(buf, sizeof buf, "%d", c->run->id);
    setenv(WIRE_ENV_RUN, buf, 1);
    prepend_autoreport(c->autoreport);
}

/* Everything the child does between fork and exec; failures go back through report_fd. */
static void child_exec(const run_child_t *c)
{
    char msg[512];
    setsid();
    /* The daemon blocks SIGTERM/SIGINT/SIGHUP (for its signalfd) and ignores SIGPIPE; both
     * survive exec, and a run that cannot be stopped with SIGTERM is no use. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(c->out_fd, 1) < 0 || dup2(c->err_fd, 2) < 0) {
        snprintf(msg, sizeof msg, "cannot set up stdio: %s", strerror(errno));
        goto fail;
    }
    /* Joined before exec, so every thread and child the command creates is held by the guard. */
    if (c->throttle && throttle_group_join_self(c->throttle) < 0) {
        snprintf(msg, sizeof msg, "cannot join the co-tenant's throttle group: %s", strerror(errno));
        goto fail;
    }
    /* Affinity and memory policy are inherited by every thread and child the command creates. */
    if (bind_thread_cpus(c->rank->cpus, msg, sizeof msg) < 0 || bind_process_mems(c->rank->mems, msg, sizeof msg) < 0)
        goto fail;
    if (run_user_enter(c->user, msg, sizeof msg) < 0)
        goto fail;
    child_env(c);
    size_t argc = json_array_size(c->run->argv);
    char **argv = calloc(argc + 1, sizeof *argv);
    for (size_t i = 0; argv && i < argc; i++)
        argv[i] = (char *)json_string_value(json_array_get(c->run->argv, i));
    if (argv)
        execvp(argv[0], argv);
    snprintf(msg, sizeof msg, "cannot execute '%s': %s", json_string_value(json_array_get(c->run->argv, 0)),
             strerror(errno));
fail:
    if (write(c->report_fd, msg, strlen(msg)) < 0)
        _exit(126);
    _exit(127);
}

/* runs/UID/: root's (0711), so that no user can put anything in it, and each user can reach
 * their runs' output by name (run list gives it) and list no one's. */
static result_t output_dir(const daemon_t *d, uid_t uid, char *dir, size_t len)
{
    struct stat st;
    snprintf(dir, len, "%s/runs", d->cfg.state_dir);
    if (mkdir(dir, 0711) < 0 && errno != EEXIST)
        return result_fail(RESULT_FAILED, "cannot create %s: %s", dir, strerror(errno));
    chmod(dir, 0711); /* older versions made it 0750, and a umask may narrow a new one */
    size_t n = strlen(dir);
    snprintf(dir + n, len - n, "/%u", (unsigned)uid);
    if (mkdir(dir, 0711) < 0 && errno != EEXIST)
        return result_fail(RESULT_FAILED, "cannot create %s: %s", dir, strerror(errno));
    /* A directory an older version handed to the user is taken back (chown first: then root
     * owns it and may set its mode without CAP_FOWNER). */
    if (geteuid() == 0 && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        ((st.st_uid != 0 && chown(dir, 0, 0) < 0) || chmod(dir, 0711) < 0))
        return result_fail(RESULT_FAILED, "cannot make %s root's (0711): %s", dir, strerror(errno));
    return result_ok();
}

/* The run's stdout and stderr files: its user's to read (owner) and the daemon's (group root),
 * 0640, made anew; fds in out[0] and out[1]. */
static result_t open_output(const daemon_t *d, run_t *r, const run_user_t *user, int out[2])
{
    char dir[4200], err_path[4352];
    result_t res = output_dir(d, user->uid, dir, sizeof dir);
    if (res.code != RESULT_OK)
        return res;
    snprintf(r->out_path, sizeof r->out_path, "%s/%d.out", dir, r->id);
    snprintf(err_path, sizeof err_path, "%s/%d.err", dir, r->id);
    unlink(r->out_path); /* what an earlier daemon left under a reused id */
    unlink(err_path);
    out[0] = open(r->out_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    out[1] = open(err_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (out[0] < 0 || out[1] < 0)
        return result_fail(RESULT_FAILED, "cannot create the run's output files in %s: %s", dir, strerror(errno));
    for (int i = 0; i < 2; i++)
        if (fchmod(out[i], 0640) < 0 || (geteuid() == 0 && user->uid != 0 && fchown(out[i], user->uid, 0) < 0))
            return result_fail(RESULT_FAILED, "cannot hand run %d's output files to uid %u: %s", r->id,
                               (unsigned)user->uid, strerror(errno));
    return result_ok();
}

void run_remove_output(const run_t *r)
{
    char err_path[4352];
    if (strlen(r->out_path) < 4)
        return; /* no files were made */
    snprintf(err_path, sizeof err_path, "%.*s.err", (int)(strlen(r->out_path) - 4), r->out_path);
    unlink(r->out_path);
    unlink(err_path);
}

/* Fork and exec; the report pipe tells a command that started (EOF: exec closed it) from one
 * that did not (the child's reason). */
static result_t spawn(run_t *r, run_child_t *c)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return result_fail(RESULT_FAILED, "pipe: %s", strerror(errno));
    c->report_fd = report[1];
    pid_t pid = fork();
    if (pid < 0) {
        close(report[0]);
        close(report[1]);
        return result_fail(RESULT_FAILED, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(report[0]);
        child_exec(c);
    }
    close(report[1]);
    char msg[512];
    ssize_t n;
    do
        n = read(report[0], msg, sizeof msg - 1);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n > 0) {
        msg[n] = '\0';
        waitpid(pid, NULL, 0);
        return result_fail(RESULT_INVALID, "run for job %s rank %d: %s", c->job->id, r->rank, msg);
    }
    r->pid = pid;
    r->start_ticks = process_start_ticks(pid);
    return result_ok();
}

result_t run_start(daemon_t *d, job_t *j, int rank, json_t *argv, json_t *env, const char *cwd,
                   throttle_group_t *throttle, run_t **out)
{
    *out = NULL;
    run_t *r = calloc(1, sizeof *r);
    if (!r)
        return result_fail(RESULT_FAILED, "out of memory");
    r->id = d->next_run_id;
    snprintf(r->job, sizeof r->job, "%s", j->id);
    r->rank = rank;
    r->argv = json_deep_copy(argv);
    r->out_fd = r->pid_fd = r->out_wd = -1;
    run_user_t *user = malloc(sizeof *user);
    if (!user) {
        run_free(r);
        return result_fail(RESULT_FAILED, "out of memory");
    }
    run_user_prepare(user, j->uid, &d->cfg, cwd);
    run_child_t c = {.run = r,
                     .job = j,
                     .rank = &j->ranks[rank],
                     .env = env,
                     .throttle = throttle,
                     .user = user,
                     .task_env = task_env(d->topo, &j->ranks[rank], true),
                     .socket = d->cfg.socket_path,
                     .autoreport = job_autoreport_dir(d, j)};
    int files[2] = {-1, -1};
    result_t res = open_output(d, r, user, files);
    if (res.code == RESULT_OK) {
        c.out_fd = files[0];
        c.err_fd = files[1];
        res = spawn(r, &c);
    }
    for (int i = 0; i < 2; i++)
        if (files[i] >= 0)
            close(files[i]);
    json_decref(c.task_env);
    free(user);
    if (res.code != RESULT_OK) {
        run_remove_output(r);
        run_free(r);
        return res;
    }
    d->next_run_id++;
    r->state = RUN_RUNNING;
    r->started = clock_now_unix();
    r->next = d->runs;
    d->runs = r;
    if (throttle) {
        char err[256];
        if (throttle_group_add_pid(throttle, r->pid, err, sizeof err) < 0)
            log_warn("run %d: %s", r->id, err);
        r->throttle = throttle;
    }
    if (watch_output(d, r) < 0 || watch_exit(d, r) < 0)
        log_warn("run %d: cannot follow it (%s); progress may be missing", r->id, strerror(errno));
    progress_run_started(d, j);
    char *cpus = NULL;
    hwloc_bitmap_list_asprintf(&cpus, j->ranks[rank].cpus);
    log_info("run %d started: job %s rank %d, pid %d, cpus %s, %s", r->id, j->id, rank, (int)r->pid, cpus ? cpus : "?",
             json_string_value(json_array_get(argv, 0)));
    free(cpus);
    state_mark_dirty(d);
    *out = r;
    return result_ok();
}

int run_stop(daemon_t *d, run_t *r)
{
    (void)d;
    if (r->state != RUN_RUNNING)
        return 0;
    if (!r->stop_requested) {
        r->stop_requested = true;
        r->stop_deadline = clock_now_mono() + STOP_GRACE_SECONDS;
    }
    /* Out of its throttle group first: frozen or stopped, it could not act on the SIGTERM. */
    if (r->throttle) {
        throttle_group_remove_pid(r->throttle, r->pid);
        r->throttle = NULL;
        process_group_signal(r->pid, SIGCONT);
    }
    return process_group_signal(r->pid, SIGTERM);
}

void runs_tick(daemon_t *d)
{
    double now = clock_now_mono();
    for (run_t *r = d->runs; r; r = r->next) {
        if (r->state != RUN_RUNNING)
            continue;
        /* Catch up on output whose inotify event was lost (queue overflow): one pread a second. */
        run_read_output(d, r);
        /* Restored runs we could not get a pidfd for are checked by start time (before any
         * signal: the pid may be someone else's by now). */
        if (r->pid_fd < 0 && !process_same(r->pid, r->start_ticks)) {
            run_ended(d, r);
            continue;
        }
        if (r->stop_requested && now > r->stop_deadline) {
            log_warn("run %d did not stop within %d s of SIGTERM: sending SIGKILL", r->id, STOP_GRACE_SECONDS);
            process_group_signal(r->pid, SIGKILL);
            r->stop_deadline = now + STOP_GRACE_SECONDS;
        }
    }
}

void runs_expire(daemon_t *d)
{
    if (d->cfg.run_retention <= 0)
        return;
    double now = clock_now_unix();
    for (run_t **p = &d->runs; *p;) {
        run_t *r = *p;
        if (r->state == RUN_RUNNING || r->ended <= 0 || now - r->ended <= d->cfg.run_retention) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        log_info("run %d ended %.0f s ago: forgotten and its output removed (runs.retention %.0f s)", r->id,
                 now - r->ended, d->cfg.run_retention);
        run_remove_output(r);
        run_free(r);
        state_mark_dirty(d);
    }
}

void runs_reconcile(daemon_t *d)
{
    for (run_t *r = d->runs; r; r = r->next) {
        r->out_fd = r->pid_fd = r->out_wd = -1;
        if (r->state != RUN_RUNNING)
            continue;
        if (!process_same(r->pid, r->start_ticks)) {
            r->state = RUN_LOST;
            r->exit_code = -1;
            r->ended = clock_now_unix();
            log_info("run %d (pid %d) ended while coschedd was down", r->id, (int)r->pid);
            continue;
        }
        if (watch_output(d, r) < 0 || watch_exit(d, r) < 0)
            log_warn("run %d: cannot follow it after restart (%s)", r->id, strerror(errno));
        run_read_output(d, r);
        log_info("run %d (pid %d) still running: following it again", r->id, (int)r->pid);
    }
    state_mark_dirty(d);
}

void run_on_inotify(daemon_t *d, int wd)
{
    for (run_t *r = d->runs; r; r = r->next)
        if (r->out_wd == wd)
            run_read_output(d, r);
}

void run_free(run_t *r)
{
    if (!r)
        return;
    if (r->pid_fd >= 0)
        close(r->pid_fd); /* which also takes it out of the epoll set */
    if (r->out_fd >= 0)
        close(r->out_fd);
    json_decref(r->argv);
    free(r);
}
