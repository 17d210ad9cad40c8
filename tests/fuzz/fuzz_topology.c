/* fuzz_topology: an hwloc XML file through topo_load (hwloc's XML import, then cosched's own
 * reading of NUMA domains, L3s, GPUs and NICs), and every placement policy on what loads.
 * Properties: a refusal says why; a plan never gives a core twice, a trainer rank and a
 * noise rank never share a PU, and every rank has CPUs. */
#include <dlfcn.h>
#include <hwloc.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"
#include "plan.h"
#include "topo.h"

static void check_plan(const plan_t *p, const char *policy)
{
    hwloc_bitmap_t seen = hwloc_bitmap_alloc();
    for (int pass = 0; pass < 2; pass++) {
        const plan_rank_t *ranks = pass == 0 ? p->trainer : p->noise;
        int n = pass == 0 ? p->ntrainer : p->nnoise;
        for (int i = 0; i < n; i++) {
            if (hwloc_bitmap_iszero(ranks[i].cpus))
                fuzz_fail("%s: %s rank %d has no CPUs", policy, pass ? "noise" : "trainer", i);
            if (hwloc_bitmap_intersects(seen, ranks[i].cpus))
                fuzz_fail("%s: a PU of %s rank %d is given twice", policy, pass ? "noise" : "trainer", i);
            hwloc_bitmap_or(seen, seen, ranks[i].cpus);
        }
    }
    hwloc_bitmap_free(seen);
}

/* hwloc reads XML through a plugin that brings in libxml2, and with it ICU for an unknown
 * encoding; ICU caches the converter, and when hwloc unloads the plugin the cache looks
 * leaked (a plain hwloc_topology_set_xml shows it too). Kept loaded, the cache stays reachable. */
__attribute__((constructor)) static void keep_libxml2_loaded(void)
{
    dlopen("libxml2.so.2", RTLD_NOW | RTLD_NODELETE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512] = "";
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    topo_t *topo = topo_load(path, err, sizeof err);
    close(fd);
    if (!topo) {
        if (!err[0])
            fuzz_fail("topo_load refused a file without saying why");
        return 0;
    }
    for (int policy = 0; policy < PLAN_NPOLICIES; policy++) {
        plan_request_t req;
        plan_request_init(&req);
        req.policy = (plan_policy_t)policy;
        plan_t *p = plan_compute(topo, &req, err, sizeof err);
        if (p)
            check_plan(p, plan_policy_name(req.policy));
        plan_free(p);
    }
    topo_free(topo);
    return 0;
}
