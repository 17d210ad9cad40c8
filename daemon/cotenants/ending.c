/* ending: whether a held co-tenant Slurm started is ending (ending.h). Linux does not say who sent
 * a pending signal, so a signal is not evidence that the job ends — its owner can send one from
 * outside its cgroups as often as it likes. Slurm's word is: the state it shows for the job once
 * it has cancelled, preempted, requeued or timed it out (COMPLETING while its processes end). One
 * `scontrol -o show job` per job with news, at most every ENDING_ASK_EVERY seconds, run as a
 * slurm_child the event loop never waits on. */
#include "ending.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cotenants.h"
#include "log.h"

/* Often enough that a real scancel after a flood of the owner's signals is seen within a few
 * seconds (Slurm's KillWait is 30 s by default); seldom enough that the flood costs slurmctld
 * next to nothing. */
enum { ENDING_ASK_EVERY = 2 };

/* Asked once no scontrol runs and ENDING_ASK_EVERY has passed: news that came meanwhile (the
 * real scancel right after a flood of the owner's signals, or while a question about the flood
 * was under way) is owed an answer of its own, never dropped. */
static void ask_when_due(daemon_t *d, job_t *j, double now)
{
    ending_t *e = &j->ending;
    if (!e->owed || e->scontrol.pid > 0 || now < e->next_ask)
        return;
    e->owed = false;
    e->next_ask = now + ENDING_ASK_EVERY;
    const char *argv[] = {d->cfg.scontrol, "-o", "show", "job", j->id, NULL};
    char err[256];
    if (!slurm_child_start(&e->scontrol, argv, d->cfg.slurm_conf, now, err, sizeof err))
        log_warn("guard: co-tenant %s: %s; cannot ask Slurm whether it ends: %s", j->id, e->news, err);
    cotenants_arm_timer(d); /* its answer read as soon as it comes */
}

/* The owner writes some of the line (JobName, Comment, WorkDir, Command: free text, spaces and
 * all), so a line with more than one JobState= is none: a forged state would let the job go
 * whole; refused, it only loses its own job a graceful end. */
void ending_job_state(const char *line, char *out, size_t len)
{
    const char *state = NULL;
    snprintf(out, len, "%s", "");
    for (const char *at = strstr(line, "JobState="); at; at = strstr(at + 1, "JobState=")) {
        if (at != line && at[-1] != ' ' && at[-1] != '\n')
            continue;
        if (state)
            return;
        state = at + strlen("JobState=");
    }
    if (state)
        snprintf(out, len, "%.*s", (int)strcspn(state, " \n"), state);
}

/* The states of a job Slurm is ending or has ended, listed: any other (STOPPED and SIGNALING,
 * which the owner's own `scancel --signal=STOP` brings about, and states of versions to come) is
 * no evidence, and buys no whole let-go. */
bool ending_state_ends(const char *state)
{
    static const char *const ending[] = {"COMPLETING", "CANCELLED",   "COMPLETED",    "FAILED",       "TIMEOUT",
                                         "PREEMPTED",  "NODE_FAIL",   "BOOT_FAIL",    "DEADLINE",     "OUT_OF_MEMORY",
                                         "REQUEUED",   "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STAGE_OUT"};
    for (size_t i = 0; i < sizeof ending / sizeof ending[0]; i++)
        if (strcmp(state, ending[i]) == 0)
            return true;
    return false;
}

/* What scontrol said, once it is done. */
static void ending_answer(daemon_t *d, job_t *j, slurm_child_poll_t how, int status, double now)
{
    ending_t *e = &j->ending;
    char state[64], line[200], why[256];
    bool ok = how == SLURM_CHILD_ENDED && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ending_job_state(e->scontrol.output, state, sizeof state);
    bool gone = !ok && strstr(e->scontrol.output, "Invalid job id"); /* gone from slurmctld: it ended */
    if (gone)
        snprintf(state, sizeof state, "%s", "unknown to it");
    else if (!ok || !state[0]) {
        if (!e->failing)
            log_warn("guard: co-tenant %s: %s; Slurm could not say whether it ends (%s): only the signal is let "
                     "through",
                     j->id, e->news, slurm_child_first_line(&e->scontrol, line, sizeof line));
        e->failing = true;
        return;
    }
    e->failing = false;
    if (!gone && !ending_state_ends(state)) {
        log_debug("guard: co-tenant %s: %s; Slurm shows it %s: only the signal is let through", j->id, e->news, state);
        return;
    }
    snprintf(why, sizeof why, "%.96s, and Slurm shows it %s", e->news, state);
    cotenant_let_go_whole(d, j, now, why);
}

/* What j's scontrol said once it is done, and the next question once one is owed and due. */
static void poll_one(daemon_t *d, job_t *j, double now)
{
    ending_t *e = &j->ending;
    int status;
    if (e->scontrol.pid > 0) {
        slurm_child_poll_t how = slurm_child_poll(&e->scontrol, now, &status);
        if (how == SLURM_CHILD_RUNNING)
            return;
        ending_answer(d, j, how, status, now);
    }
    ask_when_due(d, j, now);
}

void ending_tick(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_COTENANT || !j->external)
            continue;
        if (!j->throttle || !throttle_group_attached(j->throttle) || !cotenants_slurm_job_id(j->id)) {
            slurm_child_kill(&j->ending.scontrol); /* not held: nothing to let go */
            j->ending.owed = false;
            continue;
        }
        poll_one(d, j, now);
    }
}
