/* fixtures: where the test topologies live and a loader that fails the test loudly.
 * Paths come from COSCHED_SOURCE_ROOT, which meson sets for every test. */
#ifndef COSCHED_TEST_FIXTURES_H
#define COSCHED_TEST_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

#include "topo.h"

static inline const char *fixture_path(const char *name)
{
    static char path[4096];
    const char *root = getenv("COSCHED_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/topologies/%s", root ? root : ".", name);
    return path;
}

/* Load tests/topologies/NAME; abort the test run with the reason if it cannot. */
static inline topo_t *fixture_load(const char *name)
{
    char err[512];
    topo_t *t = topo_load(fixture_path(name), err, sizeof err);
    if (!t) {
        fprintf(stderr, "# cannot load fixture %s: %s\n", name, err);
        abort();
    }
    return t;
}

static inline topo_t *fixture_synthetic(const char *description)
{
    char err[512];
    topo_t *t = topo_load_synthetic(description, err, sizeof err);
    if (!t) {
        fprintf(stderr, "# cannot load synthetic topology '%s': %s\n", description, err);
        abort();
    }
    return t;
}

/* Every machine file where every GPU's domain has allowed cores (juwels-booster-numa-cgroup.xml,
 * whose GPU0 has none, is tested on its own): the real machines copied from shared/topologies (see
 * tests/topologies/shared/README.md), LLNL mpibind's hwloc 1.x exports, and the generated nodes. */
static const char *const shared_topologies[] = {
    "shared/16amd64-8n2c-cpusets.xml",
    "shared/24em64t-2n6c2t-pci.xml",
    "shared/32em64t-2n8c2t-pci-wholeio.xml",
    "shared/coral-lassen.xml",
    "shared/cts1-pascal.xml",
    "shared/eas-tioga.xml",
    "shared/epyc-corona-p2.xml",
    "shared/epyc-corona.xml",
    "shared/g4dnmetal.xml",
    "shared/power8gpudistances.xml",
    "epyc-corona-hwloc1.xml",
    "arm64-ulna-hwloc1.xml",
    "coral-ea-hwloc1.xml",
    "coral-butte-hwloc1.xml",
    "coral-rzansel-hwloc1.xml",
    "coral-lassen-hwloc1.xml",
    "juwels-booster.xml",
    "juwels-booster-cgroup.xml",
    "dgx-a100.xml",
    "ci-2core-gpu.xml",
    "h100-1numa.xml",
    "2socket-3plus1.xml",
    "spr-hbm-cxl.xml",
    "knl-flat-mcdram.xml",
    "alderlake-gpu.xml",
    "hybrid-2gpu.xml",
};
enum { NSHARED_TOPOLOGIES = sizeof shared_topologies / sizeof shared_topologies[0] };

#endif
