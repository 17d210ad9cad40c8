/* progress_gpu: a trainer's progress read from its GPUs' busy time — the sampler thread started and
 * stopped, and its windows turned into observations (progress_observe). Called by the event loop;
 * progress.c calls nothing of it. */
#ifndef COSCHED_PROGRESS_GPU_H
#define COSCHED_PROGRESS_GPU_H

#include "daemon.h"

/* Probe the PMU (logged; progress_pmu.c counts with it) and start sampling the node's GPUs (a
 * thread; the event loop watches gpu_sampler_fd), when it has any; and stop. Without one, GPU
 * jobs have no busy-time source and say why. */
void progress_start(daemon_t *d);
void progress_stop(daemon_t *d);

/* The GPU sampler's eventfd is readable: new windows, or a GPU's state changed. */
void progress_gpu_event(daemon_t *d);

#endif
