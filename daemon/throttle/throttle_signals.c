/* throttle_signals: what a held attached group does when its job is signalled (docs/throttle.md,
 * "Signals"). A job that is ending — Slurm says so, which the caller asks
 * (throttle_group_let_go_whole) — is let go whole until it has acted. Any other signal is
 * only let through: what is paused is resumed just long enough to take it, at most once a window.
 *
 * Linux does not say who sent a pending signal: the job's owner can signal it from outside its
 * cgroups as often as it likes, so a signal alone is never a reason to lift a hold. */
#include "throttle_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process.h"

/* A thawed v2 task leaf takes its signal when it next runs: the thaw lasts until it has, or this
 * long (1 ms looks), then the leaves are frozen again. */
enum { DELIVERY_WAIT_MS = 20 };

/* Whether the group holds anything now: a share below 1 (a let-go holds nothing). */
static bool holding(const throttle_group_t *g)
{
    return g->share < 1 - 1e-9 && !g->ext->let_go;
}

/* The second looks of one watch wait 2 ms each, 20 ms in all: a job of thousands of processes
 * its owner keeps continuing must not hold the event loop (and root's prologs) for seconds. Past
 * it a process is looked at once, and one mistaken for continued is only stopped again. */
enum { SECOND_LOOKS_PER_WATCH = 10 };

/* A process cosched stopped that runs again: it was seen stopped since, or no SIGSTOP waits on it
 * (read before its state, twice while *second_looks lasts: a SIGSTOP taken off the list a moment
 * before the process shows 'T' is not mistaken for a SIGCONT). */
static bool continued(throttle_ext_t *x, size_t i, int *second_looks)
{
    pid_t pid = x->stopped.v[i];
    for (int look = 0; look < 2; look++) {
        bool stop_waits = throttle_process_stop_pending(pid);
        char state = process_state(pid);
        if (state == 'T' || state == 't') {
            x->stopped_seen[i] = true;
            return false;
        }
        if (state == '?' || state == 'Z' || state == 'D' || stop_waits || !process_same(pid, x->stopped_ticks[i]))
            return false; /* 'D': frozen (a suspend under proctrack/cgroup), not continued */
        if (x->stopped_seen[i])
            return true;
        if (look == 0 && *second_looks <= 0)
            return true;
        if (look == 0) {
            --*second_looks;
            nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
        }
    }
    return true;
}

/* sigs to process i of those cosched stopped, through a pidfd bound to its start time; it is
 * then looked at as one stopped anew (its SIGSTOP lands when it next runs). */
static void signal_stopped(throttle_ext_t *x, size_t i, const int *sigs, int nsigs)
{
    process_ref_t r;
    if (!process_ref_open_as(&r, x->stopped.v[i], x->stopped_ticks[i]))
        return;
    for (int s = 0; s < nsigs; s++)
        process_ref_signal(&r, sigs[s]);
    process_ref_close(&r);
    x->stopped_seen[i] = false;
}

/* Processes cosched stopped and someone else continued, stopped again at once: whatever they ran
 * meanwhile (until this look, a second at most) was under the group's quota. The first in *who. */
static int stop_continued_again(throttle_ext_t *x, pid_t *who)
{
    static const int stop[] = {SIGSTOP};
    int n = 0, second_looks = SECOND_LOOKS_PER_WATCH;
    for (size_t i = 0; i < x->stopped.n; i++)
        if (continued(x, i, &second_looks)) {
            if (n++ == 0)
                *who = x->stopped.v[i];
            signal_stopped(x, i, stop, 1);
        }
    return n;
}

static pid_t first_exiting(const throttle_ext_t *x)
{
    for (size_t i = 0; i < x->pids.n; i++)
        if (throttle_process_exiting(x->pids.v[i]))
            return x->pids.v[i];
    return 0;
}

static pid_t first_signalled(const throttle_ext_t *x)
{
    for (size_t i = 0; i < x->pids.n; i++)
        if (throttle_process_signalled(x->pids.v[i]))
            return x->pids.v[i];
    return 0;
}

/* The let-go waits for these processes (with their start times): gone, the job is held again. */
static void wait_for_pids(throttle_ext_t *x, const pid_t *pids, size_t n)
{
    throttle_pids_free(&x->let_go_pids);
    free(x->let_go_ticks);
    x->let_go_ticks = NULL;
    for (size_t i = 0; i < n; i++)
        throttle_pids_add(&x->let_go_pids, pids[i]);
    x->let_go_ticks = calloc(x->let_go_pids.n ? x->let_go_pids.n : 1, sizeof *x->let_go_ticks);
    for (size_t i = 0; x->let_go_ticks && i < x->let_go_pids.n; i++)
        x->let_go_ticks[i] = process_start_ticks(x->let_go_pids.v[i]);
}

static bool let_go_pids_gone(const throttle_ext_t *x)
{
    for (size_t i = 0; i < x->let_go_pids.n; i++)
        if (x->let_go_ticks ? process_same(x->let_go_pids.v[i], x->let_go_ticks[i])
                            : process_state(x->let_go_pids.v[i]) != '?')
            return false;
    return true;
}

/* Everything lifted at once (the share is kept to hold it again). */
static void start_let_go(throttle_group_t *g, double now, double let_go_max, const char *why)
{
    throttle_ext_t *x = g->ext;
    char err[THROTTLE_DESC_MAX];
    x->let_go_until = now + let_go_max;
    x->lets_go_whole++;
    snprintf(x->let_go_reason, sizeof x->let_go_reason, "%.180s; until those processes are gone, for at most %.0f s",
             why, let_go_max);
    if (throttle_group_apply(g, 1, now, err, sizeof err) < 0)
        snprintf(g->last_error, sizeof g->last_error, "%s", err);
    x->let_go = true; /* after the apply: a share set from now on waits for the let-go's end */
}

static void hold_again(throttle_group_t *g, double now, const char *why, throttle_watch_t *out)
{
    throttle_ext_t *x = g->ext;
    char err[THROTTLE_DESC_MAX];
    x->let_go = false;
    throttle_pids_free(&x->let_go_pids);
    free(x->let_go_ticks);
    x->let_go_ticks = NULL;
    out->held_again = true;
    snprintf(out->let_go_detail, sizeof out->let_go_detail, "%s: held again at share %.2f", why, g->share);
    if (throttle_group_apply(g, g->share, now, err, sizeof err) < 0)
        snprintf(g->last_error, sizeof g->last_error, "%s", err);
}

bool throttle_group_let_go_whole(throttle_group_t *g, double now, double let_go_max, const char *why)
{
    if (!g || !g->ext || !holding(g) || g->ext->suspended)
        return false;
    wait_for_pids(g->ext, g->ext->pids.v, g->ext->pids.n); /* a job that ends: every process goes */
    start_let_go(g, now, let_go_max, why);
    return true;
}

void throttle_group_let_go_counts(const throttle_group_t *g, unsigned long *whole, unsigned long *delivery)
{
    *whole = g && g->ext ? g->ext->lets_go_whole : 0;
    *delivery = g && g->ext ? g->ext->lets_go_delivery : 0;
}

/* v2: the task leaves cosched froze thawed until no signal waits on the job's processes (or
 * DELIVERY_WAIT_MS), then frozen again. */
static bool thaw_to_deliver(throttle_ext_t *x)
{
    char path[THROTTLE_LONG_PATH], err[THROTTLE_DESC_MAX];
    bool thawed = false;
    for (size_t i = 0; i < x->frozen.n; i++)
        if (throttle_fs_path(path, sizeof path, x->frozen.items[i], "cgroup.freeze") == 0 &&
            throttle_fs_write(path, "0\n", err, sizeof err) == 0)
            thawed = true;
    for (int ms = 0; thawed && ms < DELIVERY_WAIT_MS && first_signalled(x); ms++)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    for (size_t i = 0; i < x->frozen.n; i++)
        if (throttle_fs_path(path, sizeof path, x->frozen.items[i], "cgroup.freeze") == 0)
            throttle_fs_write(path, "1\n", err, sizeof err);
    return thawed;
}

/* Let a signal through to what cosched pauses, and nothing more. v1: SIGCONT and SIGSTOP at once
 * to each stopped process with a signal waiting — woken, it takes the waiting signal (a lower
 * number than SIGSTOP's) before the SIGSTOP, sets up its handler and stops; the handler runs
 * when the process next runs, at its share (or in the moment between the two system calls, if
 * it gets a CPU that soon, under the group's quota). v2: thaw_to_deliver. false when nothing was
 * paused (a quota alone lets signals through by itself). */
static bool deliver(throttle_ext_t *x)
{
    static const int through[] = {SIGCONT, SIGSTOP};
    bool any = false;
    for (size_t i = 0; i < x->stopped.n; i++)
        if (throttle_process_signalled(x->stopped.v[i])) {
            signal_stopped(x, i, through, 2);
            any = true;
        }
    if (x->frozen.n && first_signalled(x))
        any |= thaw_to_deliver(x);
    return any;
}

void throttle_signals_watch(throttle_group_t *g, double now, throttle_watch_t *out)
{
    throttle_ext_t *x = g->ext;
    if (x->let_go && let_go_pids_gone(x))
        hold_again(g, now, "the processes it was let go for are gone", out);
    else if (x->let_go && now >= x->let_go_until)
        hold_again(g, now, "its let-go ran out", out);
    /* While Slurm suspends the job, cosched holds none of its processes, and Slurm resumes it
     * before it signals it. */
    if (!holding(g) || x->suspended)
        return;
    /* A process exiting is news too, not evidence: its owner can keep one exiting for long (a core
     * dump to a slow disk). Slurm's word on a job it kills comes within seconds, long before its
     * UnkillableStepTimeout. */
    pid_t exiting = first_exiting(x), who = 0, again = 0;
    out->stopped_again = stop_continued_again(x, &again);
    who = first_signalled(x);
    if (!who && !again && !exiting)
        return;
    out->news = true; /* only Slurm can tell whether the job ends: the caller asks it */
    if (who)
        snprintf(out->news_detail, sizeof out->news_detail, "a signal waits on process %d", (int)who);
    else if (exiting)
        snprintf(out->news_detail, sizeof out->news_detail, "process %d is exiting", (int)exiting);
    else
        snprintf(out->news_detail, sizeof out->news_detail,
                 "process %d, stopped by the guard, was continued by someone else", (int)again);
    if (who && now >= x->delivery_next && deliver(x)) {
        x->delivery_next = now + THROTTLE_DELIVERY_WINDOW;
        x->lets_go_delivery++;
        out->delivered = true;
    }
}
