/* escalation: a co-tenant Slurm started, held at the minimum share for longer than
 * guard.requeue_after, is handed back to Slurm with `scontrol requeue` — but first `scontrol show
 * job` must say Requeue=1 (a job submitted with --no-requeue, or on a cluster with
 * JobRequeue=0, is never requeued: it stays held), and its processes are resumed before the
 * requeue so that Slurm's signals reach them. Once requeued (pending, and waiting for its
 * credentials to expire), `scontrol update` adds this node to its ExcNodeList, so that it starts
 * again elsewhere rather than beside the same trainer. scontrol runs as a child of the daemon in its own
 * process group, its output read without blocking once a second, reaped when it ends and killed
 * after SCONTROL_TIMEOUT seconds: the event loop never waits on Slurm. */
#include "escalation.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cotenants.h"
#include "log.h"
#include "wire.h"

extern char **environ;

enum { SCONTROL_TIMEOUT = 30, RETRY_AFTER = 60, RETRY_MAX = 3600 };

static const char *const step_names[] = {"none",     "checking", "requeueing", "excluding",
                                         "requeued", "refused",  "failed"};

const char *escalation_step_name(escalation_step_t step)
{
    return (unsigned)step < sizeof step_names / sizeof step_names[0] ? step_names[step] : "unknown";
}

/* Slurm job ids as the prolog passes them: 123, an array task 123_4, a het component 123+1. */
static bool slurm_job_id(const char *id)
{
    return id[0] >= '0' && id[0] <= '9' && strspn(id, "0123456789_+") == strlen(id);
}

/* scontrol ARGS (up to three) for job j, its stdout and stderr into a pipe; false with the reason
 * in detail. */
static bool spawn(daemon_t *d, job_t *j, const char *a1, const char *a2, const char *a3, double now)
{
    escalation_t *e = &j->escalation;
    const char *argv[] = {d->cfg.scontrol, a1, a2, a3, NULL};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(e->detail, sizeof e->detail, "cannot run %s: pipe: %s", d->cfg.scontrol, strerror(errno));
        return false;
    }
    posix_spawn_file_actions_t files;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, fds[1], 1);
    posix_spawn_file_actions_adddup2(&files, fds[1], 2);
    posix_spawnattr_init(&attr);
    /* Not the daemon's blocked signals (its signalfd's), nor its ignored SIGPIPE; a group of its
     * own, so that a timeout kills whatever scontrol started. */
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawnp(&pid, d->cfg.scontrol, &files, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(e->detail, sizeof e->detail, "cannot run %s: %s", d->cfg.scontrol, strerror(rc));
        return false;
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    e->pid = pid;
    e->out_fd = fds[0];
    e->started = now;
    e->output_len = 0;
    e->output[0] = '\0';
    return true;
}

/* It did not work: left held, and tried again if it is still at the minimum, in RETRY_AFTER
 * seconds, twice that after a second failure in a row, and so on up to RETRY_MAX (a job Slurm
 * will not requeue, an interactive one say, is not asked every minute). */
static void fail(job_t *j, double now, const char *what)
{
    escalation_t *e = &j->escalation;
    char text[sizeof e->detail];
    double wait = RETRY_AFTER;
    for (int i = 0; i < e->failures && wait < RETRY_MAX; i++)
        wait *= 2;
    wait = wait < RETRY_MAX ? wait : RETRY_MAX;
    e->failures++;
    snprintf(text, sizeof text, "%s", what); /* what may be e->detail itself */
    snprintf(e->detail, sizeof e->detail, "%.280s: left held, tried again in %.0f s", text, wait);
    e->step = ESCALATION_FAILED;
    e->retry_at = now + wait;
    log_warn("guard: co-tenant %s: %s", j->id, e->detail);
}

static void start_check(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    if (!slurm_job_id(j->id)) {
        e->step = ESCALATION_REFUSED;
        snprintf(e->detail, sizeof e->detail, "'%s' is not a Slurm job id: left held", j->id);
        log_info("guard: co-tenant %s: %s", j->id, e->detail);
        return;
    }
    log_info("guard: co-tenant %s at the minimum share for %.0f s (guard.requeue_after %.0f): asking Slurm whether it "
             "may be requeued",
             j->id, now - e->at_minimum_since, d->cfg.requeue_after);
    if (!spawn(d, j, "show", "job", j->id, now)) {
        fail(j, now, e->detail);
        return;
    }
    e->step = ESCALATION_CHECKING;
    snprintf(e->detail, sizeof e->detail, "asking Slurm whether it may be requeued");
}

/* Requeue=1: resume everything first (Slurm's signals must reach running processes), keep it
 * unheld while scontrol requeue runs. */
static void start_requeue(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    cotenant_release(d, j);
    snprintf(j->hold_error, sizeof j->hold_error, "not held: being requeued through Slurm (guard.requeue_after)");
    if (!spawn(d, j, "requeue", j->id, NULL, now)) {
        j->hold_error[0] = '\0'; /* held again at the next watch */
        fail(j, now, e->detail);
        return;
    }
    e->step = ESCALATION_REQUEUEING;
    snprintf(e->detail, sizeof e->detail, "resumed, and requeued through Slurm");
    log_info("guard: co-tenant %s: every hold let go; requeueing it through Slurm (%s requeue %s)", j->id,
             d->cfg.scontrol, j->id);
}

/* The first line of what scontrol said, for a message. */
static const char *first_line(escalation_t *e, char *out, size_t len)
{
    size_t n = strcspn(e->output, "\n");
    snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), e->output);
    return out[0] ? out : "no output";
}

/* The job's ExcNodeList in what scontrol show job said, "" for none or (null). */
static void read_excluded(escalation_t *e)
{
    const char *at = strstr(e->output, "ExcNodeList=");
    e->excluded[0] = '\0';
    if (!at)
        return;
    at += strlen("ExcNodeList=");
    size_t n = strcspn(at, " \n");
    if (n < sizeof e->excluded && strncmp(at, "(null)", n) != 0)
        snprintf(e->excluded, sizeof e->excluded, "%.*s", (int)n, at);
}

/* This node's name in Slurm: guard.slurm_node, else the host name up to its first dot. */
static void this_node(const daemon_t *d, char *out, size_t len)
{
    char host[256] = "";
    if (d->cfg.slurm_node[0]) {
        snprintf(out, len, "%s", d->cfg.slurm_node);
        return;
    }
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0';
    snprintf(out, len, "%s", host);
}

/* Requeued: add this node to the job's ExcNodeList (the requeue stands whatever this does). */
static void start_exclude(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    char node[256], job[96], list[600];
    this_node(d, node, sizeof node);
    snprintf(job, sizeof job, "JobId=%s", j->id);
    snprintf(list, sizeof list, "ExcNodeList=%s%s%s", e->excluded, e->excluded[0] ? "," : "", node);
    char requeued[sizeof e->detail];
    snprintf(requeued, sizeof requeued, "%s", e->detail);
    if (!node[0] || !spawn(d, j, "update", job, list, now)) { /* spawn said why in detail */
        char why[160];
        snprintf(why, sizeof why, "%.120s", node[0] ? e->detail : "no node name");
        snprintf(e->detail, sizeof e->detail, "%.150s; this node not excluded: %.120s", requeued, why);
        e->step = ESCALATION_REQUEUED;
        log_warn("guard: co-tenant %s: %s", j->id, e->detail);
        return;
    }
    snprintf(e->detail, sizeof e->detail, "%s", requeued);
    e->step = ESCALATION_EXCLUDING;
    log_info("guard: co-tenant %s: requeued; keeping it off this node (%s update %s %s)", j->id, d->cfg.scontrol, job,
             list);
}

static void finished(daemon_t *d, job_t *j, int status, double now)
{
    escalation_t *e = &j->escalation;
    char line[200], what[320];
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (e->step == ESCALATION_EXCLUDING) {
        char node[64];
        this_node(d, node, sizeof node);
        e->step = ESCALATION_REQUEUED;
        size_t used = strlen(e->detail);
        if (ok)
            snprintf(e->detail + used, sizeof e->detail - used, "; %s excluded", node);
        else
            snprintf(e->detail + used, sizeof e->detail - used, "; %s not excluded: %.120s", node,
                     first_line(e, line, sizeof line));
        if (ok)
            log_info("guard: co-tenant %s: %s", j->id, e->detail);
        else
            log_warn("guard: co-tenant %s: %s", j->id, e->detail);
        return;
    }
    if (e->step == ESCALATION_CHECKING) {
        read_excluded(e);
        if (ok && strstr(e->output, "Requeue=1")) {
            start_requeue(d, j, now);
        } else if (ok && strstr(e->output, "Requeue=0")) {
            e->step = ESCALATION_REFUSED;
            snprintf(e->detail, sizeof e->detail, "its job may not be requeued (Requeue=0): left held");
            log_info("guard: co-tenant %s: %s", j->id, e->detail);
        } else {
            snprintf(what, sizeof what, "scontrol show job %s %s: %s", j->id, ok ? "does not say Requeue=" : "failed",
                     first_line(e, line, sizeof line));
            fail(j, now, what);
        }
        return;
    }
    if (ok) {
        e->requeues++;
        e->failures = 0;
        snprintf(e->detail, sizeof e->detail, "requeued through Slurm after %.0f s at the minimum share",
                 now - e->at_minimum_since);
        log_info("guard: co-tenant %s: %s", j->id, e->detail);
        state_mark_dirty(d);
        start_exclude(d, j, now);
        return;
    }
    j->hold_error[0] = '\0'; /* still ours to hold: cotenants_watch takes it in again */
    snprintf(what, sizeof what, "scontrol requeue %s failed: %s", j->id, first_line(e, line, sizeof line));
    fail(j, now, what);
}

/* Read what scontrol wrote so far; reap it when it is done, kill it when it takes too long. */
static void poll_child(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    char buf[512];
    ssize_t n;
    while ((n = read(e->out_fd, buf, sizeof buf)) > 0) {
        size_t room = sizeof e->output - 1 - e->output_len, take = (size_t)n < room ? (size_t)n : room;
        memcpy(e->output + e->output_len, buf, take);
        e->output_len += take;
        e->output[e->output_len] = '\0';
    }
    int status;
    pid_t got = waitpid(e->pid, &status, WNOHANG);
    if (got == 0) {
        if (now - e->started > SCONTROL_TIMEOUT)
            kill(-e->pid, SIGKILL); /* reaped at a later tick */
        return;
    }
    close(e->out_fd);
    e->pid = 0;
    e->out_fd = -1;
    if (got < 0) {
        fail(j, now, "scontrol was lost (not a child of the daemon)");
        return;
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && now - e->started > SCONTROL_TIMEOUT) {
        if (e->step == ESCALATION_EXCLUDING) { /* requeued all the same */
            size_t used = strlen(e->detail);
            snprintf(e->detail + used, sizeof e->detail - used, "; this node not excluded (scontrol took over 30 s)");
            e->step = ESCALATION_REQUEUED;
            log_warn("guard: co-tenant %s: %s", j->id, e->detail);
            return;
        }
        if (e->step == ESCALATION_REQUEUEING)
            j->hold_error[0] = '\0';
        fail(j, now, "scontrol took longer than 30 s and was killed");
        return;
    }
    finished(d, j, status, now);
}

void escalation_tick(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        escalation_t *e = &j->escalation;
        if (j->role != ROLE_COTENANT || !j->external)
            continue;
        if (e->pid > 0) {
            poll_child(d, j, now);
            continue;
        }
        if (!cotenant_at_minimum(d, j)) {
            e->at_minimum_since = 0;
            if (e->step == ESCALATION_REFUSED || e->step == ESCALATION_FAILED)
                e->step = ESCALATION_NONE; /* a later hold asks again */
            continue;
        }
        if (e->at_minimum_since == 0)
            e->at_minimum_since = now;
        bool due = d->cfg.requeue_after > 0 && now - e->at_minimum_since >= d->cfg.requeue_after;
        if (!due || e->step == ESCALATION_REFUSED || e->step == ESCALATION_REQUEUED ||
            (e->step == ESCALATION_FAILED && now < e->retry_at))
            continue;
        start_check(d, j, now);
    }
}

json_t *escalation_to_json(const job_t *j, double now)
{
    const escalation_t *e = &j->escalation;
    return json_pack("{s:s, s:s?, s:f, s:I}", WIRE_R_STEP, escalation_step_name(e->step), WIRE_R_DETAIL,
                     e->detail[0] ? e->detail : NULL, WIRE_R_AT_MINIMUM_SECONDS,
                     e->at_minimum_since > 0 ? now - e->at_minimum_since : 0.0, WIRE_R_REQUEUES,
                     (json_int_t)e->requeues);
}
