/* fake_rsmi: a stand-in librocm_smi64.so.1 for the tests: the ROCm SMI functions coschedd loads,
 * answering from the control file of fake_gpu.h. Indexes follow the file's order, not PCI order. */
#include <stdint.h>
#include <stdio.h>

#include "fake_gpu.h"

enum { SUCCESS = 0, INVALID_ARGS = 1, NOT_SUPPORTED = 2, INIT_ERROR = 8, NOT_FOUND = 10, UNKNOWN = -1 };

static bool initialised;

int rsmi_init(uint64_t flags)
{
    (void)flags;
    if (fake_gpus()->init_fails)
        return INIT_ERROR;
    initialised = true;
    return SUCCESS;
}

int rsmi_shut_down(void)
{
    initialised = false;
    return SUCCESS;
}

int rsmi_status_string(int status, const char **text)
{
    *text = status == SUCCESS         ? "RSMI_STATUS_SUCCESS"
            : status == NOT_SUPPORTED ? "RSMI_STATUS_NOT_SUPPORTED"
            : status == NOT_FOUND     ? "RSMI_STATUS_NOT_FOUND"
                                      : "RSMI_STATUS_UNKNOWN_ERROR";
    return SUCCESS;
}

int rsmi_num_monitor_devices(uint32_t *n)
{
    if (!initialised)
        return INIT_ERROR;
    *n = (uint32_t)fake_gpus()->ndevices;
    return SUCCESS;
}

static fake_device_t *at(uint32_t index)
{
    fake_gpus_t *g = fake_gpus();
    return index < (uint32_t)g->ndevices && g->devices[index].state != FAKE_ABSENT ? &g->devices[index] : NULL;
}

int rsmi_dev_pci_id_get(uint32_t index, uint64_t *bdfid)
{
    fake_device_t *d = at(index);
    if (!d)
        return INVALID_ARGS;
    /* bits 28-31: a partition id in ROCm 6.1+; set, to show that readers must ignore them */
    *bdfid = (uint64_t)d->domain << 32 | (uint64_t)0x3 << 28 | d->bus << 8 | d->device << 3 | d->function;
    return SUCCESS;
}

int rsmi_dev_busy_percent_get(uint32_t index, uint32_t *busy)
{
    fake_device_t *d = at(index);
    if (!d)
        return NOT_FOUND;
    switch (d->state) {
    case FAKE_OK: *busy = (uint32_t)(100 * fake_busy(d) + 0.5); return SUCCESS;
    case FAKE_MIG: return NOT_SUPPORTED;
    case FAKE_ERROR: return UNKNOWN;
    default: return NOT_FOUND;
    }
}
