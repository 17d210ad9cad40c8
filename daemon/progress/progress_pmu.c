/* progress_pmu: the counter's side of a trainer's progress — its processes followed (its cgroup v2
 * job directory once, else each run coschedd starts for it, a run that ended folded into the total),
 * one observation per tick from what they retired since the last. A counter that cannot be opened
 * is said once, not every second. */
#include "progress_pmu.h"

#include <stdio.h>
#include <string.h>

#include "jobs.h"
#include "log.h"

static void note_failure(job_t *j, const char *what, const char *why)
{
    char line[sizeof j->pmu_error];
    snprintf(line, sizeof line, "%s: %.200s", what, why);
    if (strcmp(line, j->pmu_error) != 0)
        log_warn("pmu: job %s: %s", j->id, line);
    snprintf(j->pmu_error, sizeof j->pmu_error, "%s", line);
}

static bool run_alive(const daemon_t *d, const job_t *j, pid_t pid)
{
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->state == RUN_RUNNING && r->pid == pid && strcmp(r->job, j->id) == 0)
            return true;
    return false;
}

void progress_pmu_follow(daemon_t *d, job_t *j)
{
    char why[320];
    if (j->has_slurm_cgroup && j->slurm_cgroup.cgroup2[0]) {
        if (!j->pmu && !j->pmu_error[0] &&
            !(j->pmu = pmu_open_cgroup(d->cfg.pmu_event, j->slurm_cgroup.cgroup2, job_held_cpus(j), why, sizeof why)))
            note_failure(j, j->slurm_cgroup.cgroup2, why);
        return;
    }
    pid_t ended[64];
    int nended = pmu_processes(j->pmu, ended, 64);
    for (int i = 0; i < nended; i++)
        if (!run_alive(d, j, ended[i]))
            pmu_remove_process(j->pmu, ended[i]);
    for (run_t *r = d->runs; r; r = r->next) {
        if (r->state != RUN_RUNNING || strcmp(r->job, j->id) != 0 || pmu_counts_process(j->pmu, r->pid))
            continue;
        char what[64];
        snprintf(what, sizeof what, "run %d", r->id);
        if (pmu_add_process(&j->pmu, d->cfg.pmu_event, r->pid, why, sizeof why) < 0)
            note_failure(j, what, why);
        else
            j->pmu_error[0] = '\0';
    }
}

bool progress_pmu_read(daemon_t *d, job_t *j, double now, double *value)
{
    progress_pmu_follow(d, j);
    double count = pmu_read(j->pmu);
    bool first = j->pmu_at <= 0;
    double events = count - j->pmu_count, seconds = now - j->pmu_at;
    j->pmu_count = count;
    j->pmu_at = now;
    return !first && progress_counter_observation(events, seconds, value);
}

void progress_pmu_stop(job_t *j)
{
    pmu_close(j->pmu);
    j->pmu = NULL;
    j->pmu_count = j->pmu_at = 0;
    j->pmu_error[0] = '\0';
}
