/* gpu_nvml: NVIDIA GPUs' busy time through NVML, loaded at run time from libnvidia-ml.so.1 (the
 * driver ships it; Debian main has no NVML headers). The few types and functions used are
 * declared here as nvml.h of NVML API version 12/13 (CUDA 12.9 and 13.x) defines them; each was
 * present with the same prototype and enum values since NVML 10 (nvmlInit_v2, _v2 bus id lookup).
 *
 * Utilisation comes from nvmlDeviceGetSamples(NVML_GPU_UTILIZATION_SAMPLES): every sample the
 * driver took since the last one seen (one per sample period, 1/6 s to 1 s by product), so a
 * window's mean covers the whole window whatever the polling period. Where a product does not
 * keep samples (NVML_ERROR_NOT_SUPPORTED), nvmlDeviceGetUtilizationRates gives the last period's
 * value, read several times per window. An empty sample buffer (NVML_ERROR_NOT_FOUND, which is
 * what an idle GPU gives) is read as one utilisation reading. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_backend.h"

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct {
    unsigned long long timeStamp; /* CPU time stamp in microseconds (its epoch is the driver's) */
    nvmlValue_t sampleValue;
} nvmlSample_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_GPU_UTILIZATION_SAMPLES = 1, /* nvmlSamplingType_t */
    NVML_VALUE_TYPE_UNSIGNED_INT = 1, /* nvmlValueType_t: utilisation samples are unsigned int percent */
    NVML_MAX_SAMPLES = 1024,
};

typedef struct nvml_api {
    void *handle;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*rates)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, int *, unsigned int *, nvmlSample_t *);
} nvml_api_t;

typedef struct nvml_device {
    nvmlDevice_t handle;
    unsigned long long last_seen; /* the newest sample time stamp taken */
    bool rates_only;              /* the product keeps no samples */
} nvml_device_t;

static const char *describe(const nvml_api_t *api, nvmlReturn_t rc)
{
    const char *s = api->error_string ? api->error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

static void *nvml_open(const char *library, char *err, size_t errlen)
{
    const char *name = library && library[0] ? library : "libnvidia-ml.so.1";
    nvml_api_t *api = calloc(1, sizeof *api);
    if (!api) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    api->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        snprintf(err, errlen, "cannot load %s (the NVIDIA driver's library): %s", name, dlerror());
        free(api);
        return NULL;
    }
    static const gpu_symbol_t symbols[] = {
        {"nvmlInit_v2", offsetof(nvml_api_t, init)},
        {"nvmlShutdown", offsetof(nvml_api_t, shutdown)},
        {"nvmlErrorString", offsetof(nvml_api_t, error_string)},
        {"nvmlDeviceGetHandleByPciBusId_v2", offsetof(nvml_api_t, by_pci)},
        {"nvmlDeviceGetUtilizationRates", offsetof(nvml_api_t, rates)},
        {"nvmlDeviceGetSamples", offsetof(nvml_api_t, samples)},
    };
    if (gpu_dlsyms(api->handle, symbols, sizeof symbols / sizeof symbols[0], api, name, err, errlen) < 0) {
        dlclose(api->handle); /* an NVML older than API version 10 */
        free(api);
        return NULL;
    }
    nvmlReturn_t rc = api->init();
    if (rc != NVML_SUCCESS) {
        snprintf(err, errlen, "nvmlInit_v2 failed: %s (%d)", describe(api, rc), rc);
        dlclose(api->handle);
        free(api);
        return NULL;
    }
    return api;
}

static void *nvml_find(void *lib, const char *pci, char *err, size_t errlen)
{
    nvml_api_t *api = lib;
    nvmlDevice_t h = NULL;
    nvmlReturn_t rc = api->by_pci(pci, &h);
    if (rc != NVML_SUCCESS) {
        if (rc == NVML_ERROR_NOT_FOUND)
            snprintf(err, errlen, "NVML has no GPU at PCI %s", pci);
        else
            snprintf(err, errlen, "NVML cannot open the GPU at PCI %s: %s (%d)", pci, describe(api, rc), rc);
        return NULL;
    }
    nvml_device_t *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->handle = h;
    return d;
}

static gpu_read_t failed(const nvml_api_t *api, nvmlReturn_t rc, const char *call, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s (%d)", call, describe(api, rc), rc);
    return rc == NVML_ERROR_GPU_IS_LOST ? GPU_READ_LOST : GPU_READ_FAILED;
}

static gpu_read_t read_rates(nvml_api_t *api, nvml_device_t *d, double *sum, int *count, char *err, size_t errlen)
{
    nvmlUtilization_t u;
    nvmlReturn_t rc = api->rates(d->handle, &u);
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
        snprintf(err, errlen, "NVML reports no utilisation for this GPU (MIG mode?): %s", describe(api, rc));
        return GPU_READ_LOST;
    }
    if (rc != NVML_SUCCESS)
        return failed(api, rc, "nvmlDeviceGetUtilizationRates", err, errlen);
    *sum += u.gpu > 100 ? 100 : u.gpu;
    (*count)++;
    return GPU_READ_OK;
}

/* The samples newer than the last one taken. */
static gpu_read_t read_samples(nvml_api_t *api, nvml_device_t *d, double *sum, int *count, char *err, size_t errlen)
{
    int type = 0;
    unsigned int n = 0;
    nvmlReturn_t rc = api->samples(d->handle, NVML_GPU_UTILIZATION_SAMPLES, d->last_seen, &type, &n, NULL);
    if (rc == NVML_SUCCESS && n > 0) {
        if (n > NVML_MAX_SAMPLES)
            n = NVML_MAX_SAMPLES;
        nvmlSample_t *s = calloc(n, sizeof *s);
        if (!s) {
            snprintf(err, errlen, "out of memory");
            return GPU_READ_FAILED;
        }
        rc = api->samples(d->handle, NVML_GPU_UTILIZATION_SAMPLES, d->last_seen, &type, &n, s);
        for (unsigned i = 0; rc == NVML_SUCCESS && i < n && i < NVML_MAX_SAMPLES; i++) {
            if (s[i].timeStamp <= d->last_seen)
                continue;
            unsigned v = type == NVML_VALUE_TYPE_UNSIGNED_INT ? s[i].sampleValue.uiVal : 0;
            *sum += v > 100 ? 100 : v;
            (*count)++;
            if (s[i].timeStamp > d->last_seen)
                d->last_seen = s[i].timeStamp;
        }
        free(s);
        if (rc == NVML_SUCCESS)
            return GPU_READ_OK;
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
        d->rates_only = true;
        return read_rates(api, d, sum, count, err, errlen);
    }
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_FOUND) /* no sample since the last: an idle GPU */
        return read_rates(api, d, sum, count, err, errlen);
    return failed(api, rc, "nvmlDeviceGetSamples", err, errlen);
}

static gpu_read_t nvml_read(void *lib, void *device, bool window_end, double *sum, int *count, char *err, size_t errlen)
{
    nvml_device_t *d = device;
    if (d->rates_only)
        return read_rates(lib, d, sum, count, err, errlen);
    /* The driver keeps every sample: once per window takes them all. */
    return window_end ? read_samples(lib, d, sum, count, err, errlen) : GPU_READ_OK;
}

static void nvml_close(void *lib)
{
    nvml_api_t *api = lib;
    if (!api)
        return;
    api->shutdown();
    dlclose(api->handle);
    free(api);
}

const gpu_backend_ops_t gpu_nvml_ops = {
    .name = "nvml",
    .open = nvml_open,
    .find = nvml_find,
    .read = nvml_read,
    .forget = gpu_forget_device,
    .close = nvml_close,
};
