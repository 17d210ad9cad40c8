/* gpu_rsmi: AMD GPUs' busy time through ROCm SMI, loaded at run time. Debian's librocm-smi64-1
 * installs librocm_smi64.so.1 (the unversioned name only comes with the -dev package); AMD's own
 * ROCm releases name it .so.5 to .so.7, often in /opt/rocm/lib outside the loader's path: the
 * names are tried in that order. Declarations as rocm_smi.h of ROCm SMI 5.2 (Debian bookworm)
 * and 7.x have them. The busy percent is the kernel's gpu_busy_percent, the firmware's own
 * average over an undocumented window: it is read several times per window and averaged.
 * Devices are matched by PCI bus id (rsmi_dev_pci_id_get), never by their ROCm SMI index. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_backend.h"

typedef int rsmi_status_t; /* an enum in rocm_smi.h: int-sized */
enum {
    RSMI_STATUS_SUCCESS = 0,
    RSMI_STATUS_NOT_SUPPORTED = 2,
    RSMI_STATUS_NOT_FOUND = 10,
};

typedef struct rsmi_api {
    void *handle;
    rsmi_status_t (*init)(uint64_t);
    rsmi_status_t (*shut_down)(void);
    rsmi_status_t (*count)(uint32_t *);
    rsmi_status_t (*pci_id)(uint32_t, uint64_t *);
    rsmi_status_t (*busy)(uint32_t, uint32_t *);
    rsmi_status_t (*status_string)(rsmi_status_t, const char **);
} rsmi_api_t;

typedef struct rsmi_device {
    uint32_t index;
} rsmi_device_t;

static const char *describe(const rsmi_api_t *api, rsmi_status_t rc)
{
    const char *s = NULL;
    if (api->status_string && api->status_string(rc, &s) == RSMI_STATUS_SUCCESS && s)
        return s;
    return "unknown ROCm SMI error";
}

static void *load(const char *library, char *err, size_t errlen)
{
    static const char *const names[] = {"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6",
                                        "librocm_smi64.so.5", "/opt/rocm/lib/librocm_smi64.so"};
    if (library && library[0]) {
        void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(err, errlen, "cannot load %s: %s", library, dlerror());
        return h;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    snprintf(err, errlen, "cannot load ROCm SMI (librocm_smi64.so.1, .so.7, .so.6, .so.5 or /opt/rocm/lib): %s",
             dlerror());
    return NULL;
}

static void *rsmi_open(const char *library, char *err, size_t errlen)
{
    rsmi_api_t *api = calloc(1, sizeof *api);
    if (!api) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    api->handle = load(library, err, errlen);
    if (!api->handle) {
        free(api);
        return NULL;
    }
    static const gpu_symbol_t symbols[] = {
        {"rsmi_init", offsetof(rsmi_api_t, init)},
        {"rsmi_shut_down", offsetof(rsmi_api_t, shut_down)},
        {"rsmi_num_monitor_devices", offsetof(rsmi_api_t, count)},
        {"rsmi_dev_pci_id_get", offsetof(rsmi_api_t, pci_id)},
        {"rsmi_dev_busy_percent_get", offsetof(rsmi_api_t, busy)},
        {"rsmi_status_string", offsetof(rsmi_api_t, status_string)},
    };
    if (gpu_dlsyms(api->handle, symbols, sizeof symbols / sizeof symbols[0], api, "ROCm SMI", err, errlen) < 0) {
        dlclose(api->handle);
        free(api);
        return NULL;
    }
    rsmi_status_t rc = api->init(0);
    if (rc != RSMI_STATUS_SUCCESS) {
        snprintf(err, errlen, "rsmi_init failed: %s (%d)", describe(api, rc), rc);
        dlclose(api->handle);
        free(api);
        return NULL;
    }
    return api;
}

/* BDFID = domain << 32 | bus << 8 | device << 3 | function; bits 16-31 are reserved (a partition
 * id in ROCm 6.1 and later) and ignored. */
static void *rsmi_find(void *lib, const char *pci, char *err, size_t errlen)
{
    rsmi_api_t *api = lib;
    unsigned domain, bus, device, function;
    if (!gpu_pci_parse(pci, &domain, &bus, &device, &function)) {
        snprintf(err, errlen, "'%s' is not a PCI bus id", pci);
        return NULL;
    }
    uint32_t n = 0;
    rsmi_status_t rc = api->count(&n);
    if (rc != RSMI_STATUS_SUCCESS) {
        snprintf(err, errlen, "rsmi_num_monitor_devices: %s (%d)", describe(api, rc), rc);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = 0;
        if (api->pci_id(i, &id) != RSMI_STATUS_SUCCESS)
            continue;
        if ((id >> 32) == domain && ((id >> 8) & 0xff) == bus && ((id >> 3) & 0x1f) == device && (id & 7) == function) {
            rsmi_device_t *d = calloc(1, sizeof *d);
            if (!d) {
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            d->index = i;
            return d;
        }
    }
    snprintf(err, errlen, "ROCm SMI has no GPU at PCI %s (of %u it monitors)", pci, (unsigned)n);
    return NULL;
}

static gpu_read_t rsmi_read(void *lib, void *device, bool window_end, double *sum, int *count, char *err, size_t errlen)
{
    (void)window_end; /* a reading is the firmware's latest average: take several per window */
    rsmi_api_t *api = lib;
    const rsmi_device_t *d = device;
    uint32_t busy = 0;
    rsmi_status_t rc = api->busy(d->index, &busy);
    if (rc != RSMI_STATUS_SUCCESS) {
        snprintf(err, errlen, "rsmi_dev_busy_percent_get: %s (%d)", describe(api, rc), rc);
        return rc == RSMI_STATUS_NOT_SUPPORTED || rc == RSMI_STATUS_NOT_FOUND ? GPU_READ_LOST : GPU_READ_FAILED;
    }
    *sum += busy > 100 ? 100 : busy;
    (*count)++;
    return GPU_READ_OK;
}

static void rsmi_close(void *lib)
{
    rsmi_api_t *api = lib;
    if (!api)
        return;
    api->shut_down();
    dlclose(api->handle);
    free(api);
}

const gpu_backend_ops_t gpu_rsmi_ops = {
    .name = "rocm-smi",
    .open = rsmi_open,
    .find = rsmi_find,
    .read = rsmi_read,
    .forget = gpu_forget_device,
    .close = rsmi_close,
};
