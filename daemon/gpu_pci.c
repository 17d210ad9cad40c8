/* gpu_pci: PCI bus ids as numbers. hwloc writes "0000:03:00.0", NVML "00000000:03:00.0" in upper
 * case, ROCm SMI packs them in an integer: comparing them as text would miss the same device. */
#include <stdio.h>
#include <string.h>

#include "gpu_backend.h"

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
