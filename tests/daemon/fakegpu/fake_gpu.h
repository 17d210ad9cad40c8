/* fake_gpu: what the tests' stand-ins for NVML and ROCm SMI share — GPUs described in a control
 * file ($COSCHED_FAKE_GPU, re-read whenever it changes) whose busy fraction answers to what a
 * co-tenant is allowed: busy = base / (1 + k x the CPUs the knobs allow its threads that want to
 * run), summed over up to FAKE_MAX_COTENANTS co-tenants, each with its own k. A thread wants to
 * run when /proc says 'R' (stopped, frozen, sleeping: it wants none); it is allowed one CPU, its
 * process no more than the CPUs it may run on and the CFS quota of the tightest cpu cgroup over
 * it (v1 cpu.cfs_quota_us, v2 cpu.max, parents included), which the processes it limits share.
 * The loop a guard closes through it is real — what coschedd writes into the kernel's files is
 * what the model reads — and only the trainer's sensitivity is a model; it does not depend on how
 * loaded the machine is (the CPU the kernel really gives is bench/guard.sh's to measure).
 *
 * Control file, one setting per line ('#' starts a comment):
 *   init fail                      the library's init fails (driver not loaded)
 *   samples unsupported            NVML keeps no utilisation samples (older products)
 *   gpu PCI [busy B] [k K] [cotenant PATH]... [steps FILE gpu_time G] [swing SEED] [state ok|lost|error|mig|hang]
 *       PATH: a cgroup directory (every cgroup.procs below it) or a file of pids, one per line;
 *       each co-tenant costs the k given last before it ("k 0.3 cotenant A k 0.01 cotenant B").
 *       steps: the model's own premise instead — a trainer with G seconds of GPU work per step:
 *       busy = G / its step time, its steps' "t_step" read from FILE (cosched-train's output) as
 *       it writes them (the mean of those since the last reading; bench/guard.py).
 *       swing: the busy fraction swings as the H200's did at a constant speed (swing.h): each
 *       second it is multiplied by the next value of the series SEED gives, a replay.
 *       lost: the device is gone (NVML_ERROR_GPU_IS_LOST); error: readings fail; mig: no
 *       utilisation (NOT_SUPPORTED); hang: a reading blocks for a minute, as a driver can (it
 *       first creates CONTROL_FILE.hanging). A GPU not listed does not exist for the library.
 * ROCm SMI indexes the GPUs in the file's order, which tests make differ from PCI order. */
#ifndef COSCHED_FAKE_GPU_H
#define COSCHED_FAKE_GPU_H

#include <stdbool.h>

#include "swing.h"

enum { FAKE_OK, FAKE_LOST, FAKE_ERROR, FAKE_MIG, FAKE_HANG, FAKE_ABSENT };
#define FAKE_MAX_GPUS 16

#define FAKE_MAX_COTENANTS 4
#define FAKE_MAX_PIDS 1024
#define FAKE_PATH_MAX 4096

/* One co-tenant of the model: where its processes are, what it costs, what it was allowed last. */
typedef struct fake_cotenant {
    char path[1024];
    double k;
    double measured_at, share;
} fake_cotenant_t;

typedef struct fake_device {
    unsigned domain, bus, device, function;
    int state;
    double base;
    fake_cotenant_t cotenants[FAKE_MAX_COTENANTS];
    int ncotenants;
    char steps[1024]; /* a trainer's JSON lines; "" = the cotenant model */
    double gpu_time;
    long steps_offset; /* how far it has been read */
    double last_step_busy;
    unsigned long swing_seed; /* 0: no swing */
    swing_t swing;
    double swing_start, swing_factor;
} fake_device_t;

typedef struct fake_gpus {
    bool init_fails, no_samples;
    int ndevices; /* in file order */
    fake_device_t devices[FAKE_MAX_GPUS];
} fake_gpus_t;

/* The control file as it is now (re-read if it changed); never NULL. */
fake_gpus_t *fake_gpus(void);

/* The device at a PCI bus id, or NULL. */
fake_device_t *fake_find(unsigned domain, unsigned bus, unsigned device, unsigned function);
fake_device_t *fake_find_text(const char *pci);

/* Its busy fraction now, from what the co-tenants are allowed (looked at once per 0.1 s at most). */
double fake_busy(fake_device_t *d);

/* A reading of a device in state hang: the marker file, then a minute asleep. */
void fake_hang(void);

/* Monotonic microseconds: what the fake NVML stamps its samples with. */
unsigned long long fake_now_us(void);

#endif
