/* time_credit: minutes of time limit handed back to held co-tenants (time_credit.h). The owed
 * time is counted from the share the co-tenant is held at, whatever held it (the guard's law, a
 * pause for a baseline, a probe); a co-tenant let go (a signal to act on) or not held is owed
 * nothing. An update that fails is tried again after 60 s, twice as long after each failure in a
 * row, up to an hour; the minutes stay owed meanwhile. */
#include "time_credit.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cotenants.h"
#include "log.h"
#include "throttle.h"
#include "wire.h"

enum { MINUTE = 60, NO_LIMIT = 5 };

/* $1 scontrol, $2 the job, $3 minutes. A job without a time limit is left alone (exit 5): Slurm
 * 22.05 turns TimeLimit=+N on UNLIMITED into a limit of zero, which would end the job at once. */
static const char update_script[] =
    "line=$(\"$1\" -o show job \"$2\") || exit 3\n"
    "case \"$line \" in *' TimeLimit=UNLIMITED '*|*' TimeLimit=NONE '*) exit 5 ;; esac\n"
    "exec \"$1\" update JobId=\"$2\" TimeLimit=+\"$3\"\n";

static void count(time_credit_t *c, const job_t *j, double now)
{
    if (c->counted_to > 0 && now > c->counted_to && j->throttle && !throttle_group_let_go(j->throttle) && j->share < 1)
        c->owed += (1 - j->share) * (now - c->counted_to);
    c->counted_to = now;
}

static void start_update(daemon_t *d, job_t *j, double now)
{
    time_credit_t *c = &j->time_credit;
    char minutes[32], err[256];
    c->asking = (unsigned long)(c->owed / MINUTE);
    snprintf(minutes, sizeof minutes, "%lu", c->asking);
    const char *argv[] = {"/bin/sh", "-c", update_script, "cosched-time-credit", d->cfg.scontrol, j->id, minutes, NULL};
    if (!slurm_child_start(&c->scontrol, argv, d->cfg.slurm_conf, now, err, sizeof err)) {
        snprintf(c->detail, sizeof c->detail, "%.200s", err);
        c->retry_at = now + slurm_child_retry_wait(&c->failures);
        log_warn("guard: co-tenant %s: cannot hand back %lu minute(s) of time limit: %s", j->id, c->asking, err);
    }
}

static void finished(job_t *j, slurm_child_poll_t how, int status, double now)
{
    time_credit_t *c = &j->time_credit;
    char line[200];
    if (how == SLURM_CHILD_ENDED && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        c->owed -= c->asking * (double)MINUTE;
        c->minutes += c->asking;
        c->failures = 0;
        snprintf(c->detail, sizeof c->detail, "%lu minute(s) of time limit handed back for the time it was held",
                 c->minutes);
        log_info("guard: co-tenant %s: time limit extended by %lu minute(s) for the time it was held (%lu in all)",
                 j->id, c->asking, c->minutes);
        return;
    }
    if (how == SLURM_CHILD_ENDED && WIFEXITED(status) && WEXITSTATUS(status) == NO_LIMIT) {
        c->unlimited = true;
        snprintf(c->detail, sizeof c->detail, "its job has no time limit: nothing to hand back");
        log_info("guard: co-tenant %s: %s", j->id, c->detail);
        return;
    }
    double wait = slurm_child_retry_wait(&c->failures);
    c->retry_at = now + wait;
    snprintf(c->detail, sizeof c->detail, "scontrol update TimeLimit=+%lu failed (%.160s): tried again in %.0f s",
             c->asking,
             how == SLURM_CHILD_ENDED ? slurm_child_last_line(&c->scontrol, line, sizeof line)
                                      : "killed, or it took over 30 s",
             wait);
    log_warn("guard: co-tenant %s: %s", j->id, c->detail);
}

void time_credit_tick(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        time_credit_t *c = &j->time_credit;
        if (j->role != ROLE_COTENANT || !j->external)
            continue;
        if (c->scontrol.pid > 0) {
            int status = 0;
            slurm_child_poll_t how = slurm_child_poll(&c->scontrol, now, &status);
            if (how != SLURM_CHILD_RUNNING)
                finished(j, how, status, now);
        }
        count(c, j, now);
        if (!d->cfg.extend_time_limit || !cotenants_slurm_job_id(j->id) || c->unlimited || c->scontrol.pid > 0 ||
            c->owed < MINUTE || now < c->retry_at)
            continue;
        start_update(d, j, now);
    }
}

json_t *time_credit_to_json(const job_t *j)
{
    const time_credit_t *c = &j->time_credit;
    return json_pack("{s:f, s:I, s:s?}", WIRE_R_OWED_SECONDS, c->owed, WIRE_R_MINUTES, (json_int_t)c->minutes,
                     WIRE_R_DETAIL, c->detail[0] ? c->detail : NULL);
}
