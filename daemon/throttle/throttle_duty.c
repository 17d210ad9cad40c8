/* throttle_duty: duty cycling — of each duty_period the group runs duty x period and is paused
 * the rest, by the freezer (cgroup v2 cgroup.freeze, v1 freezer.state) or by SIGSTOP/SIGCONT, as
 * the group's kind holds it (g->ops->hold). */
#include "throttle_internal.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int throttle_freezer_write(throttle_group_t *g, bool frozen, char *err, size_t errlen)
{
    char path[THROTTLE_LONG_PATH];
    const char *dir = g->dir[g->freezer_v2 ? DIR_CG2 : DIR_FREEZER1];
    const char *file = g->freezer_v2 ? "cgroup.freeze" : "freezer.state";
    if (throttle_fs_path(path, sizeof path, dir, file) < 0) {
        snprintf(err, errlen, "freezer of group %s: path too long", g->name);
        return -1;
    }
    if (g->freezer_v2)
        return throttle_fs_write(path, frozen ? "1\n" : "0\n", err, errlen);
    return throttle_fs_write(path, frozen ? "FROZEN\n" : "THAWED\n", err, errlen);
}

/* A run leads its own process group (setsid): stopping the group stops what it started too.
 * Leadership is looked at each time because a child may call setsid after it was added, and
 * remembered because the group outlives its leader. A process that is gone is no error. */
void throttle_duty_signal_member(throttle_member_t *m, int sig)
{
    if (!m->leader && getpgid(m->pid) == m->pid)
        m->leader = true;
    if (m->leader && kill(-m->pid, sig) == 0)
        return;
    kill(m->pid, sig);
}

static int apply(throttle_group_t *g, bool pause, char *err, size_t errlen)
{
    if (g->duty_knob == KNOB_COUNT) {
        snprintf(err, errlen, "group %s cannot be paused: neither the freezer nor SIGSTOP is allowed", g->name);
        return -1;
    }
    if (g->ops->hold(g, pause, err, errlen) < 0)
        return -1;
    g->paused = pause;
    g->ever_paused |= pause;
    return 0;
}

int throttle_duty_resume(throttle_group_t *g, char *err, size_t errlen)
{
    return apply(g, false, err, errlen);
}

/* duty 1: running for good; 0: paused until told otherwise; between: a cycle that starts paused
 * (the caller throttles because the training suffers now). A cycle already under way keeps its
 * phase and the phase's start, so that frequent small changes do not reset it. */
int throttle_duty_set(throttle_group_t *g, double duty, double now, char *err, size_t errlen)
{
    double period = g->t->cfg.duty_period;
    if (duty < 1 && g->duty_knob == KNOB_COUNT) { /* no cycle to start: ticks would only fail */
        g->cycling = false;
        g->deadline = 0;
        snprintf(err, errlen,
                 "group %s cannot be paused below what %s holds it to: neither the freezer nor "
                 "SIGSTOP is allowed",
                 g->name, throttle_knob_name(g->primary));
        return -1;
    }
    g->duty = duty;
    if (duty >= 1 || duty <= 0) {
        g->cycling = false;
        g->deadline = 0;
        if (duty >= 1 && !g->paused)
            return 0;
        return apply(g, duty <= 0, err, errlen);
    }
    if (!g->cycling) {
        g->cycling = true;
        g->phase_start = now;
        g->deadline = now + (1 - duty) * period;
        return apply(g, true, err, errlen);
    }
    g->deadline = g->phase_start + (g->paused ? 1 - duty : duty) * period;
    return 0;
}

double throttle_group_next_deadline(const throttle_group_t *g)
{
    return g->cycling ? g->deadline : 0;
}

/* The next phase starts at the deadline, not at now, so that a tick a little late does not
 * shift the ratio; a tick more than a period late starts afresh. A failed freeze or thaw still
 * moves on to the next phase: a deadline that stays in the past would have the caller spin. */
void throttle_group_tick(throttle_group_t *g, double now)
{
    if (!g->cycling || now < g->deadline)
        return;
    double period = g->t->cfg.duty_period;
    double start = now - g->deadline < period ? g->deadline : now;
    bool pause = !g->paused;
    g->phase_start = start;
    g->deadline = start + (pause ? 1 - g->duty : g->duty) * period;
    g->last_error[0] = '\0';
    if (apply(g, pause, g->last_error, sizeof g->last_error) < 0) {
        g->paused = pause;
        g->ever_paused = true;
    }
}
