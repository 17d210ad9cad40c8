/* cotenants: one throttle group per co-tenant job, created when its first run starts, removed
 * (everything resumed) when the job is released or the daemon stops. A share change is applied
 * at once and logged; duty-cycling knobs are driven by one timerfd armed for the next switch. */
#include "cotenants.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "jobs.h"
#include "log.h"
#include "process.h"

/* Where this daemon's groups live: guard.subtree, or "cosched" for the packaged state directory
 * and "cosched-HASH" of any other, so that daemons with their own state (tests, demos) never
 * touch each other's groups, and a restarted daemon sweeps only what it left itself. */
static void subtree_name(const config_t *cfg, char *out, size_t outlen)
{
    if (cfg->guard_subtree[0]) {
        snprintf(out, outlen, "%s", cfg->guard_subtree);
        return;
    }
    if (strcmp(cfg->state_dir, CONFIG_DEFAULT_STATE_DIR) == 0) {
        snprintf(out, outlen, "cosched");
        return;
    }
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = cfg->state_dir; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(out, outlen, "cosched-%08x", h);
}

void cotenants_init(daemon_t *d)
{
    throttle_config_t tc;
    throttle_config_defaults(&tc);
    subtree_name(&d->cfg, tc.subtree, sizeof tc.subtree);
    snprintf(tc.resctrl_root, sizeof tc.resctrl_root, "%s", d->cfg.resctrl_root);
    snprintf(tc.cgroup2_root, sizeof tc.cgroup2_root, "%s", d->cfg.cgroup2_root);
    snprintf(tc.cgroup1_root, sizeof tc.cgroup1_root, "%s", d->cfg.cgroup1_root);
    tc.knobs_allowed = d->cfg.guard_knobs;
    tc.duty_period = d->cfg.duty_period;
    /* What attached groups hold of Slurm's cgroups is recorded here first (throttle_journal.c). */
    if (snprintf(tc.journal_dir, sizeof tc.journal_dir, "%s/throttle", d->cfg.state_dir) >=
            (int)sizeof tc.journal_dir ||
        (mkdir(tc.journal_dir, 0700) < 0 && errno != EEXIST)) {
        log_err("guard: cannot make %s (%s): co-tenants Slurm started will not be throttled", tc.journal_dir,
                strerror(errno));
        tc.journal_dir[0] = '\0';
    }
    d->throttle = throttle_detect(&tc);
    /* What a daemon that died left throttled is let go, whatever this one is configured to do;
     * co-tenants still running are taken over again by cotenants_adopt_runs. */
    throttle_sweep(d->throttle);
    if (!d->cfg.guard_enabled) {
        log_info("guard: off (guard.enabled is false): co-tenants are never throttled");
        throttle_free(d->throttle);
        d->throttle = NULL;
        return;
    }
    for (int k = 0; k < KNOB_COUNT; k++)
        log_info("guard: knob %s: %s", throttle_knob_name((knob_t)k), throttle_describe(d->throttle, (knob_t)k));
}

bool cotenant_active(const daemon_t *d, const job_t *cotenant)
{
    if (cotenant->role != ROLE_COTENANT)
        return false;
    if (cotenant->external)
        return true;
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, cotenant->id) == 0)
            return true;
    return false;
}

cotenant_activity_t cotenants_activity(const daemon_t *d)
{
    cotenant_activity_t a = {false, false, false};
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT && j->external) {
            a.any = true;
            /* Held where Slurm put it once job confine found its cgroup; else out of reach, as it
             * is while let go to act on a signal (a baseline taken then would be measured beside it). */
            a.guarded |= j->throttle && j->share_override < 0;
            a.unheld |= !j->throttle || j->share_override > 0 || throttle_group_let_go(j->throttle);
        }
    for (const run_t *r = d->runs; r; r = r->next) {
        if (r->state != RUN_RUNNING)
            continue;
        const job_t *j = job_find((daemon_t *)d, r->job);
        if (!j || j->role != ROLE_COTENANT)
            continue;
        a.any = true;
        a.guarded |= j->share_override < 0;
        a.unheld |= j->share_override > 0; /* pinned above 0, and running */
    }
    return a;
}

/* Arm the one-shot timer for the earliest duty-cycle switch (absolute, CLOCK_MONOTONIC as
 * clock_now_mono), or, while Slurm is asked whether a co-tenant ends, for its answer: read
 * within ENDING_POLL_SECONDS of it, not at the next second's tick (a cancelled job's processes
 * may be killed soon after). */
void cotenants_arm_timer(daemon_t *d)
{
    double next = 0;
    for (const job_t *j = d->jobs; j; j = j->next) {
        double t = j->throttle ? throttle_group_next_deadline(j->throttle) : 0;
        if (j->ending.scontrol.pid > 0 && (t == 0 || clock_now_mono() + ENDING_POLL_SECONDS < t))
            t = clock_now_mono() + ENDING_POLL_SECONDS;
        if (t > 0 && (next == 0 || t < next))
            next = t;
    }
    if (d->throttle_fd < 0)
        return;
    struct itimerspec when = {0};
    if (next > 0) {
        when.it_value.tv_sec = (time_t)next;
        when.it_value.tv_nsec = (long)((next - floor(next)) * 1e9);
        if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
            when.it_value.tv_nsec = 1;
    }
    timerfd_settime(d->throttle_fd, TFD_TIMER_ABSTIME, &when, NULL);
}

/* A co-tenant Slurm started is held in its own cgroups, which job confine found; how many CPUs
 * its allocation has sets its quota. */
static throttle_group_t *attach(daemon_t *d, job_t *j, char *err, size_t errlen)
{
    int ncpus = hwloc_bitmap_weight(job_held_cpus(j));
    return throttle_group_attach(d->throttle, j->id, ncpus > 0 ? ncpus : j->nranks, &j->slurm_cgroup, err, errlen);
}

bool cotenant_at_minimum(const daemon_t *d, const job_t *j)
{
    return j->role == ROLE_COTENANT && d->cfg.guard_enabled && j->throttle && j->share_override < 0 &&
           j->share <= d->cfg.guard.min_share + 1e-9;
}

bool cotenants_slurm_job_id(const char *id)
{
    return id[0] >= '0' && id[0] <= '9' && strspn(id, "0123456789_+") == strlen(id);
}

void cotenants_slurm_node(const daemon_t *d, char *out, size_t len)
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

throttle_group_t *cotenant_group(daemon_t *d, job_t *j)
{
    if (j->throttle || !d->throttle || j->role != ROLE_COTENANT)
        return j->throttle;
    char err[2048];
    bool attached = j->external && j->has_slurm_cgroup;
    j->throttle = attached ? attach(d, j, err, sizeof err)
                           : throttle_group_create(d->throttle, j->id, j->nranks, err, sizeof err);
    if (!j->throttle) {
        log_warn("guard: co-tenant %s cannot be throttled: %s", j->id, err);
        snprintf(j->hold_error, sizeof j->hold_error, "cannot be throttled: %.280s", err);
        return NULL;
    }
    j->hold_error[0] = '\0';
    log_info("guard: co-tenant %s is held with %s%s%s%s", j->id, throttle_knob_name(throttle_group_knob(j->throttle)),
             attached ? " in the cgroups Slurm made for it" : "", err[0] ? "; passed over: " : "", err);
    if (j->share < 1 && throttle_group_set_share(j->throttle, j->share, clock_now_mono(), err, sizeof err) < 0)
        log_warn("guard: co-tenant %s: %s", j->id, err);
    cotenants_arm_timer(d); /* a share below 1 may start a duty cycle */
    return j->throttle;
}

void cotenant_release(daemon_t *d, job_t *j)
{
    if (!j->throttle)
        return;
    for (run_t *r = d->runs; r; r = r->next)
        if (r->throttle == j->throttle)
            r->throttle = NULL;
    throttle_group_destroy(j->throttle);
    j->throttle = NULL;
    log_info("guard: co-tenant %s let go: every throttle undone", j->id);
}

void cotenants_shutdown(daemon_t *d)
{
    for (job_t *j = d->jobs; j; j = j->next)
        cotenant_release(d, j);
    throttle_free(d->throttle);
    d->throttle = NULL;
}

void cotenants_adopt_runs(daemon_t *d)
{
    /* Co-tenants Slurm started: held again where they are (the journal's holds were undone). */
    for (job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT && j->external && j->has_slurm_cgroup)
            cotenant_group(d, j);
    for (run_t *r = d->runs; r; r = r->next) {
        job_t *j = job_find(d, r->job);
        if (r->state != RUN_RUNNING || !j || j->role != ROLE_COTENANT)
            continue;
        /* A daemon killed while it held the run stopped must not leave it stopped. */
        process_group_signal(r->pid, SIGCONT);
        throttle_group_t *g = cotenant_group(d, j);
        char err[256];
        if (g && throttle_group_add_pid(g, r->pid, err, sizeof err) < 0)
            log_warn("guard: run %d of co-tenant %s: %s", r->id, j->id, err);
        r->throttle = g;
    }
}

double cotenants_guard_share(const daemon_t *d)
{
    double share = 1;
    if (!d->cfg.guard_enabled)
        return share;
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER && j->guard.share < share)
            share = j->guard.share;
    return share;
}

static void note_share_change(job_t *j, double share)
{
    if (j->nshare_changes == JOB_SHARE_CHANGES) {
        memmove(j->share_changes, j->share_changes + 1, sizeof j->share_changes[0] * (JOB_SHARE_CHANGES - 1));
        j->nshare_changes--;
    }
    j->share_changes[j->nshare_changes++] =
        (share_change_t){.time = clock_now_unix(), .share = share, .by_operator = j->share_override >= 0};
}

/* The memory traffic of each co-tenant held in a resctrl group, from MBM: bytes per second over
 * a second or more (updates come more often: a request, a step), a counter that went back (a
 * group made again) starting over. */
static void read_traffic(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        unsigned long long bytes;
        if (j->role == ROLE_COTENANT && j->mbm_at > 0 && now - j->mbm_at < 1)
            continue;
        if (j->role != ROLE_COTENANT || !j->throttle || throttle_group_memory_bytes(j->throttle, &bytes) < 0) {
            j->mbm_at = j->mbm_rate = 0;
            continue;
        }
        if (j->mbm_at > 0 && now > j->mbm_at && bytes >= j->mbm_bytes)
            j->mbm_rate = (double)(bytes - j->mbm_bytes) / (now - j->mbm_at);
        j->mbm_bytes = bytes;
        j->mbm_at = now;
    }
}

/* Each trainer's guard learns which co-tenants it can hold are at work, and what each reports
 * moving (the order it probes them in); a probe that lost one of its halves ends. */
static void sync_blame(daemon_t *d, double now)
{
    for (job_t *t = d->jobs; t; t = t->next) {
        if (t->role != ROLE_TRAINER)
            continue;
        blame_sync_begin(&t->guard.blame);
        for (const job_t *j = d->jobs; j; j = j->next) {
            /* Only a co-tenant the guard holds can be probed: pausing one pinned by an operator,
             * or one without processes it can reach, would change nothing. */
            if (!cotenant_active(d, j) || j->share_override >= 0 || !j->throttle)
                continue;
            double rate = 0;
            for (const run_t *r = d->runs; r; r = r->next)
                if (r->state == RUN_RUNNING && strcmp(r->job, j->id) == 0)
                    rate += r->rate_bytes_per_s;
            /* What the node measures of its traffic where nothing is reported: resctrl MBM. */
            blame_sync_one(&t->guard.blame, j->id, rate > 0 ? rate : j->mbm_rate);
        }
        if (blame_sync_end(&t->guard.blame))
            guard_restart_window(&t->guard, now);
    }
}

/* What the guards let one co-tenant have: the lowest over trainer jobs, each after its own
 * attribution (a co-tenant one trainer found harmless may still be held for another). */
static double guarded_share(const daemon_t *d, const job_t *cotenant)
{
    double share = 1;
    if (!d->cfg.guard_enabled)
        return share;
    for (const job_t *t = d->jobs; t; t = t->next)
        if (t->role == ROLE_TRAINER)
            share = fmin(share, guard_share_for(&t->guard, cotenant->id));
    return share;
}

/* A quota is a share of the CPUs the co-tenant's runs may use, not of all its job holds: one run
 * on one of ten cores at share 0.06 would otherwise get 0.6 of a CPU, nearly all it wants (seen on
 * a GPU node, docs/guard.md). Co-tenants Slurm started may use their whole allocation. */
static void size_quota(daemon_t *d, job_t *j, double now)
{
    if (!j->throttle || throttle_group_attached(j->throttle))
        return;
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && strcmp(r->job, j->id) == 0 && r->rank >= 0 && r->rank < j->nranks)
            hwloc_bitmap_or(used, used, j->ranks[r->rank].cpus);
    int ncpus = hwloc_bitmap_weight(used);
    hwloc_bitmap_free(used);
    char err[512];
    if (ncpus > 0 && throttle_group_set_ncpus(j->throttle, ncpus, now, err, sizeof err) < 0)
        log_warn("guard: co-tenant %s: %s", j->id, err);
}

void cotenants_update(daemon_t *d, double now)
{
    read_traffic(d, now);
    sync_blame(d, now);
    d->guard_share = cotenants_guard_share(d);
    bool changed = false;
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_COTENANT)
            continue;
        size_quota(d, j, now);
        double share = j->share_override >= 0 ? j->share_override : guarded_share(d, j);
        if (fabs(share - j->share) < 1e-9)
            continue;
        log_info("guard: co-tenant %s share %.2f -> %.2f%s%s", j->id, j->share, share,
                 j->throttle ? " with " : " (no processes yet)",
                 j->throttle ? throttle_knob_name(throttle_group_knob(j->throttle)) : "");
        j->share = share;
        changed = true;
        note_share_change(j, share);
        char err[512];
        if (j->throttle && throttle_group_set_share(j->throttle, share, now, err, sizeof err) < 0)
            log_warn("guard: co-tenant %s: %s", j->id, err);
    }
    /* Every trainer's steps from now on are taken beside the new shares, whichever guard set them. */
    if (changed)
        for (job_t *t = d->jobs; t; t = t->next)
            if (t->role == ROLE_TRAINER)
                guard_restart_window(&t->guard, now);
    cotenants_arm_timer(d);
}

/* A held co-tenant whose job ends is let go until its processes are gone, or for
 * Slurm's KillWait and this margin: Slurm sends SIGKILL after KillWait, and the exit that
 * follows must not be slowed either. */
enum { LET_GO_MARGIN_SECONDS = 10 };

static double let_go_max(daemon_t *d)
{
    return slurm_conf_cached_kill_wait(&d->slurm_conf, slurm_conf_path(d->cfg.slurm_conf)) + LET_GO_MARGIN_SECONDS;
}

static void log_let_go(const daemon_t *d, const job_t *j, const char *why, double bound)
{
    log_info("guard: co-tenant %s: %s: let go, nothing held, until those processes are gone or for %.0f s "
             "(Slurm's KillWait %.0f s%s%s%s + %d s)",
             j->id, why, bound, bound - LET_GO_MARGIN_SECONDS, d->slurm_conf.error[0] ? ", the default: " : " in ",
             d->slurm_conf.error[0] ? d->slurm_conf.error : "", d->slurm_conf.error[0] ? "" : d->slurm_conf.path,
             LET_GO_MARGIN_SECONDS);
}

void cotenant_let_go_whole(daemon_t *d, job_t *j, double now, const char *why)
{
    double bound = let_go_max(d);
    if (j->throttle && throttle_group_let_go_whole(j->throttle, now, bound, why))
        log_let_go(d, j, why, bound);
    cotenants_arm_timer(d);
}

/* One attached group's news, in the log; a job whose cgroup is gone is let go; a signal, or a
 * process someone continued, is noted for ending_tick to ask Slurm whether the job ends. */
static void watch_one(daemon_t *d, job_t *j, double now)
{
    throttle_watch_t w;
    double bound = let_go_max(d);
    throttle_group_watch(j->throttle, now, &w);
    if (w.gone) {
        log_info("guard: co-tenant %s: %s: let go", j->id, w.detail);
        snprintf(j->hold_error, sizeof j->hold_error, "not held: %.300s", w.detail);
        cotenant_release(d, j);
        return;
    }
    if (w.detail[0])
        log_info("guard: co-tenant %s: %s", j->id, w.detail);
    if (w.held_again && !w.let_go)
        log_info("guard: co-tenant %s: %s", j->id, w.let_go_detail);
    if (w.let_go)
        log_let_go(d, j, w.let_go_detail, bound);
    if (w.delivered) {
        unsigned long whole, delivery;
        throttle_group_let_go_counts(j->throttle, &whole, &delivery);
        log_info("guard: co-tenant %s: %s: let through to it, still held at share %.2f (its handler runs at that "
                 "share; %lu such let-go%s, at most one per %d s)",
                 j->id, w.news_detail, j->share, delivery, delivery == 1 ? "" : "s", THROTTLE_DELIVERY_WINDOW);
    }
    if (w.stopped_again)
        log_debug("guard: co-tenant %s: %d process%s someone else continued stopped again", j->id, w.stopped_again,
                  w.stopped_again == 1 ? "" : "es");
    if (w.news) { /* Slurm is asked whether it ends: ending_tick */
        j->ending.owed = true;
        snprintf(j->ending.news, sizeof j->ending.news, "%s", w.news_detail);
    }
    if (w.joined > 0)
        log_debug("guard: co-tenant %s: %d process%s or task cgroup%s joined its hold", j->id, w.joined,
                  w.joined == 1 ? "" : "es", w.joined == 1 ? "" : "s");
}

void cotenants_watch(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_COTENANT || !j->external)
            continue;
        if (!j->throttle && j->has_slurm_cgroup && d->throttle && !j->hold_error[0])
            cotenant_group(d, j);
        if (j->throttle && throttle_group_attached(j->throttle))
            watch_one(d, j, now);
    }
    cotenants_arm_timer(d);
}

void cotenants_tick(daemon_t *d, double now)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        double due = j->throttle ? throttle_group_next_deadline(j->throttle) : 0;
        if (due > 0 && due <= now)
            throttle_group_tick(j->throttle, now);
    }
    cotenants_arm_timer(d);
}
