/* fake_nvml: a stand-in libnvidia-ml.so.1 for the tests (this machine has no GPU): the NVML
 * functions coschedd loads, answering from the control file of fake_gpu.h. Samples are stamped
 * every 1/6 s (the fastest NVML sample period) with the busy fraction measured now. */
#include <stdio.h>
#include <string.h>

#include "fake_gpu.h"

typedef struct fake_device *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long long ullVal;
} nvmlValue_t;
typedef struct {
    unsigned long long timeStamp;
    nvmlValue_t sampleValue;
} nvmlSample_t;

enum {
    SUCCESS = 0,
    INVALID_ARGUMENT = 2,
    NOT_SUPPORTED = 3,
    NOT_FOUND = 6,
    DRIVER_NOT_LOADED = 9,
    GPU_IS_LOST = 15,
    UNKNOWN = 999,
    PERIOD_US = 166667,
    MAX_BACKLOG_US = 2000000,
};

static bool initialised;

int nvmlInit_v2(void)
{
    if (fake_gpus()->init_fails)
        return DRIVER_NOT_LOADED;
    initialised = true;
    return SUCCESS;
}

int nvmlShutdown(void)
{
    initialised = false;
    return SUCCESS;
}

const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case SUCCESS: return "Success";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, nvmlDevice_t *device)
{
    if (!initialised || !pci || !device)
        return INVALID_ARGUMENT;
    fake_device_t *d = fake_find_text(pci);
    if (!d || d->state == FAKE_ABSENT)
        return NOT_FOUND;
    *device = d;
    return SUCCESS;
}

/* The answer a device in state `state` gives to a utilisation query, SUCCESS when it has one. */
static int answer(const fake_device_t *d)
{
    fake_gpus();
    if (d->state == FAKE_HANG)
        fake_hang();
    switch (d->state) {
    case FAKE_OK: return SUCCESS;
    case FAKE_MIG: return NOT_SUPPORTED;
    case FAKE_ERROR: return UNKNOWN;
    default: return GPU_IS_LOST;
    }
}

int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    int rc = answer(d);
    if (rc != SUCCESS)
        return rc;
    u->gpu = (unsigned)(100 * fake_busy(d) + 0.5);
    u->memory = 0;
    return SUCCESS;
}

int nvmlDeviceGetSamples(nvmlDevice_t d, int type, unsigned long long last_seen, int *value_type, unsigned int *count,
                         nvmlSample_t *samples)
{
    int rc = answer(d);
    if (rc != SUCCESS)
        return rc;
    if (fake_gpus()->no_samples)
        return NOT_SUPPORTED;
    if (type != 1 || !count || (samples && *count == 0))
        return INVALID_ARGUMENT;
    unsigned long long now = fake_now_us();
    if (last_seen + MAX_BACKLOG_US < now)
        last_seen = now - MAX_BACKLOG_US;
    unsigned long long first = (last_seen / PERIOD_US + 1) * PERIOD_US;
    unsigned n = first <= now ? (unsigned)((now - first) / PERIOD_US + 1) : 0;
    if (n == 0)
        return NOT_FOUND;
    if (!samples) {
        *count = n;
        return SUCCESS;
    }
    if (n > *count)
        n = *count;
    unsigned value = (unsigned)(100 * fake_busy(d) + 0.5);
    for (unsigned i = 0; i < n; i++) {
        samples[i].timeStamp = first + (unsigned long long)i * PERIOD_US;
        samples[i].sampleValue.uiVal = value;
    }
    *count = n;
    *value_type = 1; /* unsigned int */
    return SUCCESS;
}
