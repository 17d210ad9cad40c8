/* progress_gpu: the GPU sampler's side of a trainer's progress — the thread started and stopped,
 * each GPU's state logged when it changes, each window of a job's GPUs turned into one
 * observation (their mean busy fraction b as 1/b, progress_source.h), timed when the window ended. */
#include "progress_gpu.h"

#include <stdio.h>

#include "log.h"
#include "progress.h"

/* A GPU's state, logged when it changes: what it means for the jobs on it follows from the
 * sources chosen again. */
static void log_gpu_states(daemon_t *d)
{
    for (int g = 0; g < gpu_sampler_count(d->gpus); g++) {
        gpu_status_t st;
        gpu_sampler_status(d->gpus, g, &st);
        if (st.state == d->gpu_seen[g])
            continue;
        d->gpu_seen[g] = st.state;
        if (st.state == GPU_SAMPLING)
            log_info("gpu %d (%s): %s", g, d->topo->gpus[g].pci, st.detail);
        else if (st.state != GPU_STARTING)
            log_warn("gpu %d (%s): %s: %s", g, d->topo->gpus[g].pci, gpu_state_name(st.state), st.detail);
    }
}

/* A window of the job's GPUs: one observation, or none when one of them has no reading or they
 * were idle. */
static void observe_window(daemon_t *d, job_t *j, const gpu_window_t *w)
{
    int gpus[GPU_SAMPLER_MAX_GPUS];
    double busy[GPU_SAMPLER_MAX_GPUS], mean, value;
    int n = progress_job_gpus(j, gpus, GPU_SAMPLER_MAX_GPUS);
    for (int i = 0; i < n; i++)
        busy[i] = gpus[i] < gpu_sampler_count(d->gpus) ? w->busy[gpus[i]] : -1;
    if (!progress_gpu_mean(busy, (size_t)n, &mean))
        return;
    j->gpu_busy = mean;
    j->gpu_windows++;
    if (progress_gpu_observation(mean, d->cfg.gpu_idle_below, &value))
        progress_observe(d, j, value, w->end);
}

void progress_gpu_event(daemon_t *d)
{
    gpu_window_t windows[GPU_SAMPLER_RING];
    if (!d->gpus)
        return;
    int n = gpu_sampler_take(d->gpus, windows, GPU_SAMPLER_RING);
    log_gpu_states(d);
    for (job_t *j = d->jobs; j; j = j->next)
        progress_choose_source(d, j);
    for (int i = 0; i < n; i++)
        for (job_t *j = d->jobs; j; j = j->next)
            if (j->role == ROLE_TRAINER && j->progress_source == PROGRESS_GPU)
                observe_window(d, j, &windows[i]);
}

void progress_start(daemon_t *d)
{
    char err[256];
    d->pmu_ok = pmu_probe(d->cfg.pmu_event, d->pmu_why, sizeof d->pmu_why);
    log_info("pmu: %s", d->pmu_why);
    if (d->topo->ngpus == 0) {
        snprintf(d->gpu_error, sizeof d->gpu_error, "this node has no GPU");
        return;
    }
    gpu_sampler_config_t cfg = {.window = d->cfg.gpu_window,
                                .retry = d->cfg.gpu_retry,
                                .nvml_library = d->cfg.nvml_library,
                                .rocm_smi_library = d->cfg.rocm_smi_library};
    d->gpus = gpu_sampler_start(d->topo, &cfg, err, sizeof err);
    if (!d->gpus) {
        snprintf(d->gpu_error, sizeof d->gpu_error, "%s", err);
        log_err("gpu: %s: GPU jobs have no busy-time source", err);
        return;
    }
    for (int g = 0; g < GPU_SAMPLER_MAX_GPUS; g++)
        d->gpu_seen[g] = GPU_STARTING;
    log_info("gpu: sampling %d GPU%s every %g s", d->topo->ngpus, d->topo->ngpus == 1 ? "" : "s", d->cfg.gpu_window);
}

void progress_stop(daemon_t *d)
{
    gpu_sampler_stop(d->gpus);
    d->gpus = NULL;
}
