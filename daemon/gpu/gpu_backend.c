/* gpu_backend: what the GPU libraries' backends share — looking up their functions, and PCI bus
 * ids as numbers (hwloc writes "0000:03:00.0", NVML "00000000:03:00.0" in upper case, ROCm SMI
 * packs them in an integer: comparing them as text would miss the same device). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_backend.h"

int gpu_dlsyms(void *handle, const gpu_symbol_t *symbols, size_t n, void *api, const char *library, char *err,
               size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(handle, symbols[i].name);
        if (!f) {
            snprintf(err, errlen, "%s has no %s", library, symbols[i].name);
            return -1;
        }
        memcpy((char *)api + symbols[i].offset, &f, sizeof f);
    }
    return 0;
}

void gpu_forget_device(void *lib, void *device)
{
    (void)lib;
    free(device);
}

bool gpu_pci_parse(const char *text, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function)
{
    char tail;
    if (!text || strspn(text, "0123456789abcdefABCDEF:.") != strlen(text))
        return false;
    if (sscanf(text, "%x:%x:%x.%x%c", domain, bus, device, function, &tail) == 4)
        return *bus <= 0xff && *device <= 0x1f && *function <= 7;
    *domain = 0;
    if (sscanf(text, "%x:%x.%x%c", bus, device, function, &tail) == 3)
        return *bus <= 0xff && *device <= 0x1f && *function <= 7;
    return false;
}
