/* fuzz_scontrol: the outputs of scontrol that `cosched slurm-conf --check` reads, through
 * scontrol_view_parse. The input is the three outputs (show config, -o show partition, -o show
 * node) separated by NUL bytes; a missing one is empty. Properties: a refusal says why; what is
 * accepted has a key in the configuration, and each record starts with its own key. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "scontrol_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *files[SCONTROL_OUTPUTS];
    const char *names[SCONTROL_OUTPUTS] = {"config", "partitions", "nodes"};
    static const char empty[1];
    size_t from = 0;
    for (int i = 0; i < SCONTROL_OUTPUTS; i++) {
        const uint8_t *nul = from < size ? memchr(data + from, '\0', size - from) : NULL;
        size_t len = from < size ? (nul ? (size_t)(nul - data) : size) - from : 0;
        /* fmemopen wants a buffer of at least one byte: an empty part reads as an empty file */
        files[i] = len ? fmemopen((void *)(data + from), len, "r") : fmemopen((void *)empty, 1, "r");
        if (files[i] && !len)
            fgetc(files[i]);
        from += len + 1;
    }
    scontrol_view_t view;
    char err[512] = "";
    int rc = files[0] && files[1] && files[2] ? scontrol_view_parse(files, names, &view, err, sizeof err) : 1;
    for (int i = 0; i < SCONTROL_OUTPUTS; i++)
        if (files[i])
            fclose(files[i]);
    if (rc == 1)
        return 0;
    if (rc != 0) {
        if (!err[0])
            fuzz_fail("scontrol outputs refused without a message");
        return 0;
    }
    if (view.config.n == 0)
        fuzz_fail("a configuration accepted without a key");
    for (int i = 0; i < view.npartitions; i++)
        if (view.partitions[i].n == 0 || strcasecmp(view.partitions[i].keys[0], "PartitionName") != 0)
            fuzz_fail("partition %d does not start with PartitionName", i);
    for (int i = 0; i < view.nnodes; i++)
        if (view.nodes[i].n == 0 || strcasecmp(view.nodes[i].keys[0], "NodeName") != 0)
            fuzz_fail("node %d does not start with NodeName", i);
    if (view.npartitions > 0) {
        const char *name = scontrol_get(&view.partitions[0], "PartitionName");
        if (!name || scontrol_find(view.partitions, view.npartitions, "PartitionName", name) != &view.partitions[0])
            fuzz_fail("the first partition is not found by its name");
    }
    scontrol_view_free(&view);
    return 0;
}
