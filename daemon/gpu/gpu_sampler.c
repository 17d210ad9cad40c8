/* gpu_sampler: one thread polls every GPU a few times per window through its vendor's library,
 * closes each window with the mean busy fraction of its readings, and keeps the windows in a
 * ring the event loop takes from. Libraries are loaded on the thread, lazily: dlopen and their
 * init can block too. What fails is retried after cfg.retry seconds, and said in each GPU's
 * state; nothing here logs (the event loop does, when it sees a state change). */
#include "gpu_sampler.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "gpu_backend.h"

enum { BACKEND_NVML, BACKEND_RSMI, NBACKENDS, POLLS_PER_WINDOW = 4 };

typedef struct gpu_lib {
    const gpu_backend_ops_t *ops;
    char path[256];
    void *lib;
    double retry_at;
    char error[320];
} gpu_lib_t;

/* One GPU. Only the thread touches the fields above `status`; status is shared, under the lock. */
typedef struct gpu_slot {
    char pci[16];
    int backend; /* -1: none for its vendor */
    void *device;
    double retry_at, sum;
    int count, failed; /* this window's readings, and the ones that failed */
    char error[320];   /* the last failure's words */
    gpu_status_t status;
} gpu_slot_t;

struct gpu_sampler {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping, changed;
    int efd;
    double window, retry;
    int ngpus;
    gpu_slot_t gpus[GPU_SAMPLER_MAX_GPUS];
    gpu_lib_t libs[NBACKENDS];
    gpu_window_t ring[GPU_SAMPLER_RING];
    unsigned long seq, taken;
};

bool gpu_status_readable(const gpu_status_t *st)
{
    return st->state == GPU_SAMPLING || (st->state == GPU_FAILING && st->failing_windows < GPU_FAILING_WINDOWS);
}

const char *gpu_state_name(gpu_state_t state)
{
    static const char *const names[] = {"unsampled", "starting", "sampling", "failing", "lost", "unavailable"};
    return (unsigned)state < sizeof names / sizeof names[0] ? names[state] : "?";
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A state and its detail, and a note for the event loop when it is news. */
static void set_state(gpu_sampler_t *s, gpu_slot_t *g, gpu_state_t state, const char *detail)
{
    pthread_mutex_lock(&s->lock);
    if (g->status.state != state || strcmp(g->status.detail, detail) != 0)
        s->changed = true;
    g->status.state = state;
    snprintf(g->status.detail, sizeof g->status.detail, "%s", detail);
    pthread_mutex_unlock(&s->lock);
}

static void notify(gpu_sampler_t *s)
{
    uint64_t one = 1;
    if (write(s->efd, &one, sizeof one) < 0 && errno != EAGAIN)
        return;
}

/* The library of a backend, loaded when first needed and again after a failure's retry time. */
static void *library(gpu_sampler_t *s, int backend, double now)
{
    gpu_lib_t *l = &s->libs[backend];
    if (l->lib || now < l->retry_at)
        return l->lib;
    char err[sizeof l->error] = "";
    l->lib = l->ops->open(l->path, err, sizeof err);
    if (!l->lib) {
        snprintf(l->error, sizeof l->error, "%s", err);
        l->retry_at = now + s->retry;
        for (int i = 0; i < s->ngpus; i++)
            if (s->gpus[i].backend == backend)
                set_state(s, &s->gpus[i], GPU_UNAVAILABLE, err);
    }
    return l->lib;
}

static void read_one(gpu_sampler_t *s, gpu_slot_t *g, double now, bool window_end)
{
    const gpu_backend_ops_t *ops = s->libs[g->backend].ops;
    void *lib = library(s, g->backend, now);
    char err[320] = "";
    if (!lib)
        return;
    if (!g->device) {
        if (now < g->retry_at)
            return;
        g->device = ops->find(lib, g->pci, err, sizeof err);
        if (!g->device) {
            g->retry_at = now + s->retry;
            set_state(s, g, GPU_UNAVAILABLE, err);
            return;
        }
        char found[320];
        snprintf(found, sizeof found, "found through %s at PCI %s", ops->name, g->pci);
        set_state(s, g, GPU_STARTING, found);
    }
    switch (ops->read(lib, g->device, window_end, &g->sum, &g->count, err, sizeof err)) {
    case GPU_READ_OK: break;
    case GPU_READ_FAILED: /* judged at the window's end: one failure among readings is no state */
        g->failed++;
        snprintf(g->error, sizeof g->error, "%s", err);
        break;
    case GPU_READ_LOST:
        ops->forget(lib, g->device);
        g->device = NULL;
        g->sum = g->count = 0;
        g->retry_at = now + s->retry;
        set_state(s, g, GPU_LOST, err);
        break;
    }
}

/* Close a window: each GPU's mean busy fraction, into the ring; the event loop is told. */
static void finish_window(gpu_sampler_t *s, double now)
{
    pthread_mutex_lock(&s->lock);
    gpu_window_t *w = &s->ring[s->seq % GPU_SAMPLER_RING];
    w->seq = ++s->seq;
    w->end = now;
    for (int i = 0; i < s->ngpus; i++) {
        gpu_slot_t *g = &s->gpus[i];
        w->busy[i] = g->count > 0 ? fmin(1, g->sum / g->count / 100) : -1;
        g->status.busy = w->busy[i];
        g->status.errors += (unsigned long)g->failed;
        if (g->count == 0 && g->failed > 0) {
            g->status.failing_windows++;
            if (g->status.state != GPU_FAILING || strcmp(g->status.detail, g->error) != 0)
                s->changed = true;
            g->status.state = GPU_FAILING;
            snprintf(g->status.detail, sizeof g->status.detail, "%s", g->error);
        }
        g->sum = g->count = g->failed = 0;
        if (w->busy[i] < 0)
            continue;
        g->status.failing_windows = 0;
        g->status.windows++;
        if (g->status.state != GPU_SAMPLING) {
            g->status.state = GPU_SAMPLING;
            snprintf(g->status.detail, sizeof g->status.detail, "sampled through %s", s->libs[g->backend].ops->name);
        }
    }
    s->changed = false; /* the window's note says it all */
    pthread_mutex_unlock(&s->lock);
    notify(s);
}

static void *sampler_main(void *arg)
{
    gpu_sampler_t *s = arg;
    double poll = s->window / POLLS_PER_WINDOW, start = mono();
    double next = start + poll, window_end = start + s->window;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        struct timespec at = {.tv_sec = (time_t)next, .tv_nsec = (long)((next - floor(next)) * 1e9)};
        int rc = 0;
        while (!s->stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->wake, &s->lock, &at);
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->lock);
        double now = mono();
        bool end = now >= window_end - poll / 2;
        for (int i = 0; i < s->ngpus; i++)
            if (s->gpus[i].backend >= 0)
                read_one(s, &s->gpus[i], now, end);
        if (end) {
            finish_window(s, now);
            window_end = fmax(window_end + s->window, now + poll);
        }
        pthread_mutex_lock(&s->lock);
        if (s->changed) {
            s->changed = false;
            notify(s);
        }
        next = fmax(next + poll, now + poll / 4);
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->ngpus; i++)
        if (s->gpus[i].device)
            s->libs[s->gpus[i].backend].ops->forget(s->libs[s->gpus[i].backend].lib, s->gpus[i].device);
    for (int b = 0; b < NBACKENDS; b++)
        if (s->libs[b].lib)
            s->libs[b].ops->close(s->libs[b].lib);
    return NULL;
}

static void add_gpu(gpu_sampler_t *s, const topo_gpu_t *t)
{
    gpu_slot_t *g = &s->gpus[s->ngpus++];
    snprintf(g->pci, sizeof g->pci, "%s", t->pci);
    g->status.busy = -1;
    g->backend = strcmp(t->vendor, "NVIDIA") == 0 ? BACKEND_NVML : strcmp(t->vendor, "AMD") == 0 ? BACKEND_RSMI : -1;
    if (g->backend < 0) {
        g->status.state = GPU_UNSAMPLED;
        snprintf(g->status.detail, sizeof g->status.detail,
                 "no busy-time library for %s GPUs (NVML for NVIDIA, "
                 "ROCm SMI for AMD)",
                 t->vendor[0] ? t->vendor : "unknown vendors'");
        return;
    }
    g->status.backend = s->libs[g->backend].ops->name;
    g->status.state = GPU_STARTING;
    snprintf(g->status.detail, sizeof g->status.detail, "not read yet");
}

gpu_sampler_t *gpu_sampler_start(const topo_t *topo, const gpu_sampler_config_t *cfg, char *err, size_t errlen)
{
    gpu_sampler_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->window = cfg->window > 0 ? cfg->window : 1;
    s->retry = cfg->retry > 0 ? cfg->retry : 30;
    s->libs[BACKEND_NVML].ops = &gpu_nvml_ops;
    s->libs[BACKEND_RSMI].ops = &gpu_rsmi_ops;
    snprintf(s->libs[BACKEND_NVML].path, sizeof s->libs[BACKEND_NVML].path, "%s",
             cfg->nvml_library ? cfg->nvml_library : "");
    snprintf(s->libs[BACKEND_RSMI].path, sizeof s->libs[BACKEND_RSMI].path, "%s",
             cfg->rocm_smi_library ? cfg->rocm_smi_library : "");
    for (int i = 0; i < topo->ngpus && i < GPU_SAMPLER_MAX_GPUS; i++)
        add_gpu(s, &topo->gpus[i]);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc = s->efd < 0 ? errno : 0;
    if (!rc && (rc = pthread_mutex_init(&s->lock, NULL)) == 0 && (rc = pthread_cond_init(&s->wake, &attr)) == 0 &&
        (rc = pthread_create(&s->thread, NULL, sampler_main, s)) == 0) {
        pthread_condattr_destroy(&attr);
        return s;
    }
    pthread_condattr_destroy(&attr);
    snprintf(err, errlen, "cannot start the GPU sampler: %s", strerror(rc));
    if (s->efd >= 0)
        close(s->efd);
    free(s);
    return NULL;
}

int gpu_sampler_fd(const gpu_sampler_t *s)
{
    return s->efd;
}

int gpu_sampler_count(const gpu_sampler_t *s)
{
    return s->ngpus;
}

double gpu_sampler_window(const gpu_sampler_t *s)
{
    return s->window;
}

int gpu_sampler_take(gpu_sampler_t *s, gpu_window_t *out, int max)
{
    uint64_t n;
    if (read(s->efd, &n, sizeof n) < 0 && errno != EAGAIN)
        return 0;
    pthread_mutex_lock(&s->lock);
    if (s->seq - s->taken > GPU_SAMPLER_RING)
        s->taken = s->seq - GPU_SAMPLER_RING; /* the event loop fell behind: the oldest are gone */
    int got = 0;
    for (; s->taken < s->seq && got < max; got++)
        out[got] = s->ring[s->taken++ % GPU_SAMPLER_RING];
    pthread_mutex_unlock(&s->lock);
    return got;
}

void gpu_sampler_status(gpu_sampler_t *s, int gpu, gpu_status_t *out)
{
    memset(out, 0, sizeof *out);
    if (gpu < 0 || gpu >= s->ngpus) {
        out->state = GPU_UNSAMPLED;
        out->busy = -1;
        snprintf(out->detail, sizeof out->detail, "not a GPU of this node");
        return;
    }
    pthread_mutex_lock(&s->lock);
    *out = s->gpus[gpu].status;
    pthread_mutex_unlock(&s->lock);
}

void gpu_sampler_stop(gpu_sampler_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 2;
    if (pthread_timedjoin_np(s->thread, NULL, &limit) != 0) {
        pthread_detach(s->thread); /* stuck in a driver: left to the process's exit */
        return;
    }
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    close(s->efd);
    free(s);
}
