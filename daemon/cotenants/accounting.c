/* accounting: the node counters of accounting.h. Co-tenant CPU time comes from /proc for each
 * running run of a co-tenant: the user + system time of every process in its process group (a
 * run leads its own, runs.c calls setsid) plus what the leader has reaped of its children. For a
 * co-tenant Slurm started, it comes from the job cgroup Slurm made for it (cgroup v2 cpu.stat's
 * usage_usec, or v1 cpuacct.usage where Slurm keeps the job in the cpu,cpuacct hierarchy). A
 * run adopted after a restart, or a Slurm job when it is found, is counted from its first
 * reading on: what came before was counted by an earlier daemon, or is not cosched's to count. */
#include "accounting.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cotenants.h"
#include "jobs.h"
#include "process.h"
#include "wire.h"

/* A tick later than this (a stopped daemon, a suspended machine) credits no more than this. */
#define ACCOUNTING_MAX_DT 10.0

void accounting_step(daemon_t *d, const job_t *trainer, double step_seconds, bool with_cotenant)
{
    if (!with_cotenant || trainer->progress_source != PROGRESS_STEPS)
        return;
    summary_t base = stats_baseline(&trainer->steps, d->cfg.baseline_steps);
    if (base.median > 0 && step_seconds > base.median)
        d->counters.trainer_lost_seconds += step_seconds - base.median;
}

/* Add what *seen grew to now, never backwards; a first reading (*seen < 0) only sets it. */
static void credit_cpu(daemon_t *d, double *seen, double now)
{
    if (*seen >= 0 && now > *seen)
        d->counters.cotenant_cpu_seconds += now - *seen;
    *seen = now;
}

static bool cotenant_run(const daemon_t *d, const run_t *r)
{
    if (r->state != RUN_RUNNING)
        return false;
    for (const job_t *j = d->jobs; j; j = j->next)
        if (strcmp(j->id, r->job) == 0)
            return j->role == ROLE_COTENANT;
    return false;
}

/* One pass over /proc: each co-tenant run's group total, and what it adds to the counter since
 * the last reading. A group's total drops when a member exits unreaped: never counted backwards. */
static void cotenant_cpu(daemon_t *d)
{
    int nruns = 0;
    for (run_t *r = d->runs; r; r = r->next)
        if (cotenant_run(d, r)) {
            r->cpu_now = 0;
            nruns++;
        }
    if (nruns == 0)
        return;
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    struct dirent *e;
    while ((e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        pid_t pgid;
        double self, children;
        if (process_cpu((pid_t)pid, &pgid, &self, &children) < 0)
            continue;
        for (run_t *r = d->runs; r; r = r->next)
            if (r->pid == pgid && cotenant_run(d, r)) {
                r->cpu_now += self + (pid == r->pid ? children : 0);
                break;
            }
    }
    closedir(proc);
    for (run_t *r = d->runs; r; r = r->next)
        if (cotenant_run(d, r))
            credit_cpu(d, &r->cpu_seen, r->cpu_now);
}

/* The CPU seconds a Slurm job cgroup has used; -1 when no counter of it can be read. */
static double slurm_job_cpu(const throttle_slurm_job_t *job)
{
    char path[THROTTLE_PATH_MAX + 32], key[32];
    unsigned long long value;
    if (job->cgroup2[0]) {
        snprintf(path, sizeof path, "%s/cpu.stat", job->cgroup2);
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;
        double seconds = -1;
        while (fscanf(f, "%31s %llu", key, &value) == 2)
            if (strcmp(key, "usage_usec") == 0)
                seconds = (double)value / 1e6;
        fclose(f);
        return seconds;
    }
    if (!job->cpu1[0])
        return -1;
    snprintf(path, sizeof path, "%s/cpuacct.usage", job->cpu1);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = fscanf(f, "%llu", &value);
    fclose(f);
    return n == 1 ? (double)value / 1e9 : -1;
}

/* Co-tenants Slurm started (their processes are not runs): their job cgroup's CPU time. */
static void slurm_cotenant_cpu(daemon_t *d)
{
    for (job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_COTENANT || !j->external || !j->has_slurm_cgroup)
            continue;
        double used = slurm_job_cpu(&j->slurm_cgroup);
        if (used >= 0)
            credit_cpu(d, &j->slurm_cpu_seen, used);
    }
}

static void trainer_tick(daemon_t *d, const job_t *j, double dt, bool cotenants_at_work)
{
    node_counters_t *c = &d->counters;
    c->trainer_seconds += dt;
    progress_source_t src = j->progress_source;
    if (cotenants_at_work && (src == PROGRESS_NONE || src >= PROGRESS_NSOURCES))
        c->trainer_no_progress_source_seconds += dt;
    if (j->phase[0] && strcmp(j->phase, WIRE_PHASE_TRAIN) != 0)
        return; /* an evaluation or a checkpoint is not judged */
    slowdown_t s = stats_slowdown(&j->steps, d->cfg.baseline_steps, d->cfg.window_steps);
    if (!s.valid)
        return;
    if (s.slowdown > job_budget(d, j))
        c->trainer_over_budget_seconds += dt;
    /* gpu and pmu report no step: the slowdown says which part of the time went to co-tenants */
    if (cotenants_at_work && src != PROGRESS_STEPS && s.slowdown > 0)
        c->trainer_lost_seconds += dt * s.slowdown / (1 + s.slowdown);
}

void accounting_tick(daemon_t *d, double now)
{
    node_counters_t *c = &d->counters;
    double dt = c->at > 0 ? now - c->at : 0;
    c->at = now;
    if (dt < 0)
        dt = 0;
    if (dt > ACCOUNTING_MAX_DT)
        dt = ACCOUNTING_MAX_DT;
    cotenant_activity_t at_work = cotenants_activity(d);
    for (const job_t *j = d->jobs; j; j = j->next) {
        if (j->role == ROLE_TRAINER) {
            trainer_tick(d, j, dt, at_work.any);
        } else if (cotenant_active(d, j)) {
            c->cotenant_seconds += dt;
            if (cotenant_at_minimum(d, j))
                c->cotenant_at_minimum_seconds += dt;
        }
    }
    cotenant_cpu(d);
    slurm_cotenant_cpu(d);
}
