/* gpu_sampler: how busy each GPU of the node is, window by window, read by a thread of its own:
 * NVML and ROCm SMI calls can block for seconds inside a driver, and neither the daemon's
 * requests nor the service watchdog may wait on one. The event loop learns of each finished
 * window through an eventfd and takes the windows and the devices' states under a short lock. */
#ifndef COSCHED_GPU_SAMPLER_H
#define COSCHED_GPU_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>

#include "topo.h"

#define GPU_SAMPLER_MAX_GPUS 64
#define GPU_SAMPLER_RING 32

typedef enum {
    GPU_UNSAMPLED,   /* no busy-time library for its vendor */
    GPU_STARTING,    /* not read yet */
    GPU_SAMPLING,    /* read every window */
    GPU_FAILING,     /* a whole window's readings failed; tried again each poll */
    GPU_LOST,        /* the device is gone or reports no utilisation (lost, MIG); found again later */
    GPU_UNAVAILABLE, /* its library cannot be loaded, or does not know the device; tried again later */
} gpu_state_t;

typedef struct gpu_status {
    gpu_state_t state;
    const char *backend; /* "nvml", "rocm-smi", or NULL */
    char detail[320];    /* why it is not sampled, or how it is */
    unsigned long windows, errors;
    int failing_windows; /* windows in a row whose readings all failed (0 while it reads) */
    double busy;         /* the latest window's busy fraction; < 0: none yet */
} gpu_status_t;

/* Whether a GPU's busy time is read: sampling, or failing for less than GPU_FAILING_WINDOWS
 * windows in a row — a reading that fails now and then is no reason to judge a job by something
 * else and learn its baseline again. A GPU starting (found, not read yet) is neither. */
#define GPU_FAILING_WINDOWS 3
bool gpu_status_readable(const gpu_status_t *st);

typedef struct gpu_sampler_config {
    double window;                /* seconds per window */
    double retry;                 /* seconds before a failed load or a lost device is tried again */
    const char *nvml_library;     /* NULL or "": libnvidia-ml.so.1 */
    const char *rocm_smi_library; /* NULL or "": the ROCm SMI names, in order */
} gpu_sampler_config_t;

typedef struct gpu_window {
    unsigned long seq;                 /* 1, 2, ...: a gap means windows were dropped */
    double end;                        /* monotonic seconds */
    double busy[GPU_SAMPLER_MAX_GPUS]; /* per topology GPU: mean busy fraction; < 0: no reading */
} gpu_window_t;

typedef struct gpu_sampler gpu_sampler_t;

/* Start sampling the topology's GPUs (at most GPU_SAMPLER_MAX_GPUS). NULL and why when the thread
 * cannot be started; a library that cannot be loaded is no error, but each GPU's state. */
gpu_sampler_t *gpu_sampler_start(const topo_t *topo, const gpu_sampler_config_t *cfg, char *err, size_t errlen);

/* Readable (an eventfd) when a window has finished or a device's state changed. */
int gpu_sampler_fd(const gpu_sampler_t *s);

/* Clear the eventfd; then the windows finished since the last take, oldest first (at most max). */
int gpu_sampler_take(gpu_sampler_t *s, gpu_window_t *out, int max);

/* One GPU's state (index into topo->gpus); a copy, taken under the lock. */
void gpu_sampler_status(gpu_sampler_t *s, int gpu, gpu_status_t *out);
int gpu_sampler_count(const gpu_sampler_t *s);
double gpu_sampler_window(const gpu_sampler_t *s);

/* Stop the thread. A thread stuck in a driver call for more than two seconds is left behind
 * (detached): the daemon is on its way out and must not hang on it. */
void gpu_sampler_stop(gpu_sampler_t *s);

const char *gpu_state_name(gpu_state_t state);

#endif
