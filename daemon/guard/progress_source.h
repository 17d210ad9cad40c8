/* progress_source: where a trainer's progress comes from — the steps it reports, its GPUs' busy
 * time, the instructions it retires — and how a GPU's busy fraction or a counter becomes an
 * observation the guard judges like a step time. Pure functions, unit-tested without a daemon;
 * the model and what breaks it are in docs/guard.md ("Progress without instrumentation"). */
#ifndef COSCHED_PROGRESS_SOURCE_H
#define COSCHED_PROGRESS_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    PROGRESS_AUTO,  /* a request only: the best source the node has for the job */
    PROGRESS_STEPS, /* step times the job reports (libcosched, cosched report, a run's stdout) */
    PROGRESS_GPU,   /* the busy time of the job's GPUs (NVML, ROCm SMI) */
    PROGRESS_PMU,   /* instructions its processes retire (perf_event_open on its cgroup) */
    PROGRESS_NONE,  /* nothing: its guard never acts */
    PROGRESS_NSOURCES
} progress_source_t;

const char *progress_source_name(progress_source_t source); /* "auto", "steps", "gpu", "pmu", "none" */
int progress_source_parse(const char *name, progress_source_t *out);

/* What the node and the job offer, as far as the choice is concerned. */
typedef struct progress_offer {
    bool steps_seen;            /* the job has reported a step */
    int gpus;                   /* GPUs the job holds */
    int gpus_sampled;           /* of those, how many a busy-time backend samples now */
    int gpus_pending;           /* of the others, how many are found but not read yet */
    const char *gpu_why;        /* why not all are sampled (when they are not) */
    bool pmu;                   /* a PMU counts instructions on this node */
    const char *pmu_why;        /* why not, when it does not */
    bool pmu_target;            /* the job has processes a counter can follow (a cgroup v2, or runs) */
    const char *pmu_target_why; /* why not, when it has none */
} progress_offer_t;

typedef struct progress_choice {
    progress_source_t source;
    bool undecided;   /* the choice hangs on GPUs not read yet: keep what was chosen before */
    char reason[256]; /* why this one, or why not a better one */
} progress_choice_t;

/* The source for a job that asked for `requested`. auto takes, in order: reported steps (they are
 * the truth), the GPUs' busy time when every GPU of the job is sampled, instructions retired for a
 * job without GPUs (never for a GPU job: CUDA and NCCL spin-wait on the CPU), else none. An
 * explicit request gets that source or none, never another one. A choice that hangs on GPUs found
 * but not read yet is undecided: a GPU that is found again after it was lost, and then read, must
 * prove readable before a job is judged by it (a MIG GPU is found, and reports nothing). */
progress_choice_t progress_choose(progress_source_t requested, const progress_offer_t *offer);

/* The GPU model. With a fixed amount of GPU work per step, the busy fraction b is GPU time over
 * step time, so 1/b is the step time in units of the GPU time per step, and the ratio of two
 * such values is the slowdown: b0 / b - 1. A window is an observation only when the GPU worked
 * in it (b >= idle_below): an idle GPU says nothing about how fast the job would go. */
bool progress_gpu_observation(double busy, double idle_below, double *value);

/* The mean busy fraction of a job's GPUs in one window; false when one of them has no sample
 * in it (busy < 0), so that a window is judged on all of the job's GPUs or not at all. */
bool progress_gpu_mean(const double *busy, size_t n, double *mean);

/* The counter model: a fixed number of instructions per step, so seconds per 10^9 instructions
 * is the step time in units of the instructions per step. false when nothing was counted. */
bool progress_counter_observation(double events, double seconds, double *value);

#endif
