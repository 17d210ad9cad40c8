/* escalation: a co-tenant Slurm started, held at the minimum share for longer than
 * guard.requeue_after, is handed back to Slurm with `scontrol requeue` — but first `scontrol show
 * job` must say Requeue=1 (a job submitted with --no-requeue, or on a cluster with
 * JobRequeue=0, is never requeued: it stays held), and its processes are resumed before the
 * requeue so that Slurm's signals reach them. Once requeued (pending, and waiting for its
 * credentials to expire), `scontrol update` adds this node to its ExcNodeList, so that it starts
 * again elsewhere rather than beside the same trainer: both in one child (sh -c), which goes on
 * when the job's epilog releases it meanwhile (escalation_record.c reaps it then). scontrol gets
 * SLURM_CONF from guard.slurm_conf when that is set. scontrol runs as a child of the daemon in its own
 * process group, its output read without blocking once a second, reaped when it ends and killed
 * after SCONTROL_TIMEOUT seconds: the event loop never waits on Slurm. */
#include "escalation.h"

#include <errno.h>
#include <stdlib.h>
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

static const char *const step_names[] = {"none", "checking", "requeueing", "requeued", "refused", "failed"};

/* requeue, then keep the job off this node: exit 3 when the requeue failed, 4 when only the
 * exclusion did ($1 scontrol, $2 the job, $3 its new ExcNodeList, "" for none). */
static const char requeue_script[] = "\"$1\" requeue \"$2\" || exit 3\n"
                                     "[ -z \"$3\" ] && exit 0\n"
                                     "\"$1\" update JobId=\"$2\" ExcNodeList=\"$3\" || exit 4\n";
_Static_assert(ESCALATION_REQUEUE_FAILED == 3 && ESCALATION_EXCLUDE_FAILED == 4, "the script's exit codes");

const char *escalation_step_name(escalation_step_t step)
{
    return (unsigned)step < sizeof step_names / sizeof step_names[0] ? step_names[step] : "unknown";
}

/* Slurm job ids as the prolog passes them: 123, an array task 123_4, a het component 123+1. */
static bool slurm_job_id(const char *id)
{
    return id[0] >= '0' && id[0] <= '9' && strspn(id, "0123456789_+") == strlen(id);
}

/* The environment scontrol runs with: coschedd's, with SLURM_CONF=guard.slurm_conf when set (a
 * coschedd started without SLURM_CONF still asks the cluster it was configured for). NULL when
 * out of memory. */
static char **scontrol_environment(const daemon_t *d, char *slurm_conf, size_t len)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!d->cfg.slurm_conf[0] || strncmp(environ[i], "SLURM_CONF=", 11) != 0)
            env[k++] = environ[i];
    if (d->cfg.slurm_conf[0]) {
        snprintf(slurm_conf, len, "SLURM_CONF=%s", d->cfg.slurm_conf);
        env[k++] = slurm_conf;
    }
    return env;
}

/* argv (argv[0] looked up in PATH unless it has a slash) for job j, its stdout and stderr into a
 * pipe; false with the reason in detail. */
static bool spawn(daemon_t *d, job_t *j, const char *const *argv, double now)
{
    escalation_t *e = &j->escalation;
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
    char slurm_conf[sizeof d->cfg.slurm_conf + 16];
    char **env = scontrol_environment(d, slurm_conf, sizeof slurm_conf);
    int rc = env ? posix_spawnp(&pid, argv[0], &files, &attr, (char *const *)argv, env) : ENOMEM;
    free(env);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(e->detail, sizeof e->detail, "cannot run %s: %s", argv[0], strerror(rc));
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
    const char *argv[] = {d->cfg.scontrol, "show", "job", j->id, NULL};
    if (!spawn(d, j, argv, now)) {
        fail(j, now, e->detail);
        return;
    }
    e->step = ESCALATION_CHECKING;
    snprintf(e->detail, sizeof e->detail, "asking Slurm whether it may be requeued");
}

/* The first line of what scontrol said, for a message. */
static const char *first_line(escalation_t *e, char *out, size_t len)
{
    size_t n = strcspn(e->output, "\n");
    snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), e->output);
    return out[0] ? out : "no output";
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

/* The job's new ExcNodeList: its own (from scontrol show job, which the check read whole) and
 * this node. "" with the reason in why when it cannot be told: then nothing is excluded, rather
 * than the job's own list overwritten. */
static void exclusion_list(const daemon_t *d, escalation_t *e, char *out, size_t len, char *why, size_t whylen)
{
    char node[64];
    this_node(d, node, sizeof node);
    out[0] = why[0] = '\0';
    const char *at = strstr(e->output, " ExcNodeList=");
    if (!at) {
        snprintf(why, whylen, "%s",
                 e->output_len + 1 >= sizeof e->output ? "scontrol show job said too much to read its ExcNodeList"
                                                       : "scontrol show job gave no ExcNodeList");
        return;
    }
    at += strlen(" ExcNodeList=");
    size_t n = strcspn(at, " \n");
    if (at[n] == '\0' && e->output_len + 1 >= sizeof e->output) {
        snprintf(why, whylen, "its ExcNodeList was cut short");
        return;
    }
    bool none = n == 6 && strncmp(at, "(null)", 6) == 0;
    if (!node[0])
        snprintf(why, whylen, "this node has no name");
    else if (none)
        snprintf(out, len, "%s", node);
    else if ((size_t)snprintf(out, len, "%.*s,%s", (int)n, at, node) >= len) {
        out[0] = '\0';
        snprintf(why, whylen, "its ExcNodeList is too long");
    }
}

/* Requeue=1: resume everything first (Slurm's signals must reach running processes), keep it
 * unheld while scontrol requeues it and keeps it off this node. */
static void start_requeue(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    char list[768];
    exclusion_list(d, e, list, sizeof list, e->not_excluded, sizeof e->not_excluded);
    cotenant_release(d, j);
    snprintf(j->hold_error, sizeof j->hold_error, "not held: being requeued through Slurm (guard.requeue_after)");
    const char *argv[] = {"/bin/sh", "-c", requeue_script, "cosched-requeue", d->cfg.scontrol, j->id, list, NULL};
    if (!spawn(d, j, argv, now)) {
        j->hold_error[0] = '\0'; /* held again at the next watch */
        fail(j, now, e->detail);
        return;
    }
    e->step = ESCALATION_REQUEUEING;
    snprintf(e->detail, sizeof e->detail, "resumed, and requeued through Slurm");
    if (list[0])
        log_info("guard: co-tenant %s: every hold let go; requeueing it through Slurm (%s requeue %s, then update "
                 "ExcNodeList=%s)",
                 j->id, d->cfg.scontrol, j->id, list);
    else
        log_info("guard: co-tenant %s: every hold let go; requeueing it through Slurm (%s requeue %s; this node not "
                 "excluded: %s)",
                 j->id, d->cfg.scontrol, j->id, e->not_excluded);
}

/* The last line of what it said: what the exclusion's scontrol answered. */
static const char *last_line(escalation_t *e, char *out, size_t len)
{
    size_t end = e->output_len;
    while (end > 0 && e->output[end - 1] == '\n')
        end--;
    size_t start = end;
    while (start > 0 && e->output[start - 1] != '\n')
        start--;
    snprintf(out, len, "%.*s", (int)(end - start < len - 1 ? end - start : len - 1), e->output + start);
    return out[0] ? out : "no output";
}

static void finished(daemon_t *d, job_t *j, int status, double now)
{
    escalation_t *e = &j->escalation;
    char line[200], what[320];
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (e->step == ESCALATION_CHECKING) {
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
    bool requeued = ok || (WIFEXITED(status) && WEXITSTATUS(status) == ESCALATION_EXCLUDE_FAILED);
    if (requeued) {
        char node[64];
        this_node(d, node, sizeof node);
        e->step = ESCALATION_REQUEUED;
        e->requeues++;
        e->failures = 0;
        if (ok && !e->not_excluded[0])
            snprintf(e->detail, sizeof e->detail,
                     "requeued through Slurm after %.0f s at the minimum share; %s excluded", now - e->at_minimum_since,
                     node);
        else
            snprintf(e->detail, sizeof e->detail,
                     "requeued through Slurm after %.0f s at the minimum share; %s not excluded: %.120s",
                     now - e->at_minimum_since, node, ok ? e->not_excluded : last_line(e, line, sizeof line));
        if (ok && !e->not_excluded[0])
            log_info("guard: co-tenant %s: %s", j->id, e->detail);
        else
            log_warn("guard: co-tenant %s: %s", j->id, e->detail);
        state_mark_dirty(d);
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
        if (e->step == ESCALATION_REQUEUEING)
            j->hold_error[0] = '\0';
        fail(j, now, "scontrol took longer than 30 s and was killed");
        return;
    }
    finished(d, j, status, now);
}

void escalation_tick(daemon_t *d, double now)
{
    escalation_record_reap_detached(now);
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
