/* escalation: a co-tenant Slurm started, held at the minimum share for longer than
 * guard.requeue_after, is handed back to Slurm with `scontrol requeue` — but first `scontrol show
 * job` must say Requeue=1 (a job submitted with --no-requeue, or on a cluster with
 * JobRequeue=0, is never requeued: it stays held), and its processes are resumed before the
 * requeue so that Slurm's signals reach them. Once requeued (pending, and waiting for its
 * credentials to expire), `scontrol update` adds this node to its ExcNodeList, so that it starts
 * again elsewhere rather than beside the same trainer: both in one child (sh -c), which goes on
 * when the job's epilog releases it meanwhile (escalation_record.c reaps it then). scontrol gets
 * SLURM_CONF from guard.slurm_conf when that is set. scontrol runs as a slurm_child, polled once a
 * second: the event loop never waits on Slurm. */
#include "escalation.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cotenants.h"
#include "log.h"
#include "requeue_limits.h"
#include "wire.h"

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

/* argv for job j, its output read as it comes; false with the reason in detail. */
static bool spawn(daemon_t *d, job_t *j, const char *const *argv, double now)
{
    escalation_t *e = &j->escalation;
    return slurm_child_start(&e->scontrol, argv, d->cfg.slurm_conf, now, e->detail, sizeof e->detail);
}

/* It did not work: left held, and tried again if it is still at the minimum, in 60 seconds,
 * twice that after a second failure in a row, and so on up to an hour (a job Slurm
 * will not requeue, an interactive one say, is not asked every minute). */
static void fail(job_t *j, double now, const char *what)
{
    escalation_t *e = &j->escalation;
    char text[sizeof e->detail];
    double wait = slurm_child_retry_wait(&e->failures);
    snprintf(text, sizeof text, "%s", what); /* what may be e->detail itself */
    snprintf(e->detail, sizeof e->detail, "%.280s: left held, tried again in %.0f s", text, wait);
    e->step = ESCALATION_FAILED;
    e->retry_at = now + wait;
    log_warn("guard: co-tenant %s: %s", j->id, e->detail);
}

/* The site's limits on requeues (requeue_limits.c): outside them, left held, said once. */
static bool within_limits(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    double retry_at;
    if (requeue_limits_allow(d, j, now, &retry_at, e->detail, sizeof e->detail))
        return true;
    e->step = retry_at > 0 ? ESCALATION_FAILED : ESCALATION_REFUSED;
    e->retry_at = retry_at;
    log_info("guard: co-tenant %s: %s", j->id, e->detail);
    return false;
}

static void start_check(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    if (!cotenants_slurm_job_id(j->id)) {
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

/* The job's new ExcNodeList: its own (from scontrol show job, which the check read whole) and
 * this node. "" with the reason in why when it cannot be told: then nothing is excluded, rather
 * than the job's own list overwritten. */
static void exclusion_list(const daemon_t *d, escalation_t *e, char *out, size_t len, char *why, size_t whylen)
{
    char node[64];
    cotenants_slurm_node(d, node, sizeof node);
    out[0] = why[0] = '\0';
    const char *at = strstr(e->scontrol.output, " ExcNodeList=");
    if (!at) {
        snprintf(why, whylen, "%s",
                 e->scontrol.output_len + 1 >= sizeof e->scontrol.output
                     ? "scontrol show job said too much to read its ExcNodeList"
                     : "scontrol show job gave no ExcNodeList");
        return;
    }
    at += strlen(" ExcNodeList=");
    size_t n = strcspn(at, " \n");
    if (at[n] == '\0' && e->scontrol.output_len + 1 >= sizeof e->scontrol.output) {
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

static void finished(daemon_t *d, job_t *j, int status, double now)
{
    escalation_t *e = &j->escalation;
    char line[200], what[320];
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (e->step == ESCALATION_CHECKING) {
        if (ok && strstr(e->scontrol.output, "Requeue=1")) {
            start_requeue(d, j, now);
        } else if (ok && strstr(e->scontrol.output, "Requeue=0")) {
            e->step = ESCALATION_REFUSED;
            snprintf(e->detail, sizeof e->detail, "its job may not be requeued (Requeue=0): left held");
            log_info("guard: co-tenant %s: %s", j->id, e->detail);
        } else {
            snprintf(what, sizeof what, "scontrol show job %s %s: %s", j->id, ok ? "does not say Requeue=" : "failed",
                     slurm_child_first_line(&e->scontrol, line, sizeof line));
            fail(j, now, what);
        }
        return;
    }
    bool requeued = ok || (WIFEXITED(status) && WEXITSTATUS(status) == ESCALATION_EXCLUDE_FAILED);
    if (requeued) {
        char node[64];
        cotenants_slurm_node(d, node, sizeof node);
        e->step = ESCALATION_REQUEUED;
        e->requeues++;
        requeue_limits_charge(d, now);
        e->failures = 0;
        if (ok && !e->not_excluded[0])
            snprintf(e->detail, sizeof e->detail,
                     "requeued through Slurm after %.0f s at the minimum share; %s excluded", now - e->at_minimum_since,
                     node);
        else
            snprintf(e->detail, sizeof e->detail,
                     "requeued through Slurm after %.0f s at the minimum share; %s not excluded: %.120s",
                     now - e->at_minimum_since, node,
                     ok ? e->not_excluded : slurm_child_last_line(&e->scontrol, line, sizeof line));
        if (ok && !e->not_excluded[0])
            log_info("guard: co-tenant %s: %s", j->id, e->detail);
        else
            log_warn("guard: co-tenant %s: %s", j->id, e->detail);
        state_mark_dirty(d);
        return;
    }
    j->hold_error[0] = '\0'; /* still ours to hold: cotenants_watch takes it in again */
    snprintf(what, sizeof what, "scontrol requeue %s failed: %s", j->id,
             slurm_child_first_line(&e->scontrol, line, sizeof line));
    fail(j, now, what);
}

/* Read what scontrol wrote so far; reap it when it is done, kill it when it takes too long. */
static void poll_child(daemon_t *d, job_t *j, double now)
{
    escalation_t *e = &j->escalation;
    int status;
    switch (slurm_child_poll(&e->scontrol, now, &status)) {
    case SLURM_CHILD_RUNNING: return;
    case SLURM_CHILD_LOST:
        if (e->step == ESCALATION_REQUEUEING)
            j->hold_error[0] = '\0';
        fail(j, now, "scontrol was lost (not a child of the daemon)");
        return;
    case SLURM_CHILD_TIMED_OUT:
        if (e->step == ESCALATION_REQUEUEING)
            j->hold_error[0] = '\0';
        fail(j, now, "scontrol took longer than 30 s and was killed");
        return;
    case SLURM_CHILD_ENDED: finished(d, j, status, now); return;
    }
}

void escalation_tick(daemon_t *d, double now)
{
    escalation_record_reap_detached(now);
    for (job_t *j = d->jobs; j; j = j->next) {
        escalation_t *e = &j->escalation;
        if (j->role != ROLE_COTENANT || !j->external)
            continue;
        if (e->scontrol.pid > 0) {
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
        if (!within_limits(d, j, now))
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
