/* gpu_backend: a vendor's management library that tells how busy a GPU is — NVML for NVIDIA,
 * ROCm SMI for AMD — loaded at run time with dlopen, so that coschedd has no build dependency
 * on either and runs where neither is installed. A backend is used from the sampler's thread
 * only (gpu_sampler.c): its calls may block for seconds inside a driver. */
#ifndef COSCHED_GPU_BACKEND_H
#define COSCHED_GPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    GPU_READ_OK,     /* *sum and *count were added to (count may stay 0: no new sample yet) */
    GPU_READ_FAILED, /* this reading failed; the next one may work */
    GPU_READ_LOST,   /* the device is gone or cannot report utilisation (lost, MIG): find it again later */
} gpu_read_t;

typedef struct gpu_backend_ops {
    const char *name; /* "nvml", "rocm-smi": in status, logs and docs */
    /* Load the library (NULL: the backend's default names) and initialise it; NULL and why. */
    void *(*open)(const char *library, char *err, size_t errlen);
    /* The device at this PCI bus id (the topology's "0000:03:00.0"), never by index. */
    void *(*find)(void *lib, const char *pci, char *err, size_t errlen);
    /* Add the busy percentages read since the last call to *sum and their number to *count.
     * Called several times per window; window_end on the last call of each. */
    gpu_read_t (*read)(void *lib, void *device, bool window_end, double *sum, int *count, char *err, size_t errlen);
    void (*forget)(void *lib, void *device); /* a device found by find, no longer used */
    void (*close)(void *lib);
} gpu_backend_ops_t;

extern const gpu_backend_ops_t gpu_nvml_ops;
extern const gpu_backend_ops_t gpu_rsmi_ops;

/* A library's functions by name into a struct of function pointers (api + offset each); -1 and
 * which is missing. */
typedef struct gpu_symbol {
    const char *name;
    size_t offset;
} gpu_symbol_t;
int gpu_dlsyms(void *handle, const gpu_symbol_t *symbols, size_t n, void *api, const char *library, char *err,
               size_t errlen);

/* The forget of backends whose devices are plain allocations. */
void gpu_forget_device(void *lib, void *device);

/* "0000:03:00.0", "00000000:03:00.0", "3:0.0" (hexadecimal) as numbers; false if not a bus id. */
bool gpu_pci_parse(const char *text, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function);

#endif
