/* fuzz_cpulist: the CPU lists users type (--cpus, --mems, cpus: in the config) through
 * cpulist_parse, with and without "all", and the integer parser beside it. Properties: a
 * refusal says why; what parses prints back as a list that parses to the same set, and as a
 * Slurm/taskset mask that hwloc reads as the same set. */
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "fuzz.h"

static void list_round_trip(hwloc_const_bitmap_t set)
{
    char *text = cpulist_format(set), err[256] = "";
    if (!text)
        fuzz_fail("cpulist_format failed");
    hwloc_bitmap_t again = cpulist_parse(text, 0, err, sizeof err);
    if (!again || !hwloc_bitmap_isequal(set, again))
        fuzz_fail("the list '%s' does not parse back to the same set (%s)", text, again ? "differs" : err);
    hwloc_bitmap_free(again);
    free(text);
}

static void mask_round_trip(hwloc_const_bitmap_t set)
{
    char *text = cpulist_format_mask(set);
    if (!text)
        fuzz_fail("cpulist_format_mask failed");
    hwloc_bitmap_t again = hwloc_bitmap_alloc();
    if (hwloc_bitmap_taskset_sscanf(again, text) != 0 || !hwloc_bitmap_isequal(set, again))
        fuzz_fail("the mask '%s' is not the same set to hwloc", text);
    hwloc_bitmap_free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_input_string(data, size), err[256] = "";
    for (int allow_all = 0; allow_all <= 1; allow_all++) {
        hwloc_bitmap_t set = cpulist_parse(text, allow_all, err, sizeof err);
        if (!set) {
            if (!err[0])
                fuzz_fail("'%s' refused without a message", text);
            continue;
        }
        if (hwloc_bitmap_weight(set) >= 0) { /* "all" is infinite: no list or mask of it */
            list_round_trip(set);
            mask_round_trip(set);
        }
        hwloc_bitmap_free(set);
    }
    long value;
    cpulist_parse_int(text, 0, 1 << 20, &value);
    free(text);
    return 0;
}
