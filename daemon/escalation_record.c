/* escalation_record: letting go of an escalation's scontrol child (escalation_record.h), apart
 * from escalation.c so that freeing a job needs nothing of the escalation's logic. A requeue under
 * way is not killed with its job: Slurm ends the job's tasks as it requeues it, so the epilog's
 * release often comes while the requeue, or the exclusion after it, is still running. */
#include "escalation_record.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

enum { MAX_DETACHED = 16, DETACHED_TIMEOUT = 30 };

static struct detached {
    pid_t pid;
    double started;
    char job[64];
} detached[MAX_DETACHED];
static int ndetached;

static void kill_and_reap(pid_t pid)
{
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0); /* killed: at once */
}

void escalation_record_forget(escalation_t *e, const char *job_id)
{
    if (e->scontrol.pid <= 0)
        return;
    if (e->step != ESCALATION_REQUEUEING || ndetached == MAX_DETACHED) {
        slurm_child_kill(&e->scontrol);
        return;
    }
    struct detached *r = &detached[ndetached++];
    r->pid = e->scontrol.pid;
    r->started = e->scontrol.started;
    snprintf(r->job, sizeof r->job, "%s", job_id);
    close(e->scontrol.out_fd);
    slurm_child_init(&e->scontrol);
}

void escalation_record_reap_detached(double now)
{
    for (int i = 0; i < ndetached;) {
        struct detached *r = &detached[i];
        int status;
        pid_t got = waitpid(r->pid, &status, WNOHANG);
        if (got == 0 && now - r->started <= DETACHED_TIMEOUT) {
            i++;
            continue;
        }
        if (got == 0) {
            kill_and_reap(r->pid);
            log_warn("guard: co-tenant %s (released meanwhile): its requeue took over %d s and was killed", r->job,
                     DETACHED_TIMEOUT);
        } else if (got > 0 && WIFEXITED(status)) {
            int code = WEXITSTATUS(status);
            log_info("guard: co-tenant %s (released meanwhile): %s", r->job,
                     code == 0 ? "requeued through Slurm, this node excluded"
                     : code == ESCALATION_EXCLUDE_FAILED
                         ? "requeued through Slurm, this node not excluded (scontrol update failed)"
                         : "its requeue failed");
        }
        detached[i] = detached[--ndetached];
    }
}
