/* task_env: OpenMP and GPU-runtime variables for one rank. OMP_PLACES lists one place per CPU so
 * that OMP_PROC_BIND=close keeps thread i on the rank's i-th CPU. */
#include "task_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

static void set_string(json_t *env, const char *name, const char *value)
{
    json_object_set_new(env, name, json_string(value));
}

static void set_int(json_t *env, const char *name, int value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", value);
    set_string(env, name, buf);
}

static char *omp_places(hwloc_const_bitmap_t cpus)
{
    size_t cap = 16 + (size_t)hwloc_bitmap_weight(cpus) * 12, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    int i;
    hwloc_bitmap_foreach_begin(i, cpus)
        len += (size_t)snprintf(out + len, cap - len, "%s{%d}", len ? "," : "", i);
    hwloc_bitmap_foreach_end();
    return out;
}

/* ROCm numbers devices by its SMI index, which need not follow PCI order (LLNL Corona): use the
 * index hwloc's rsmi osdev carries when there is one. */
static int rocm_index(const topo_gpu_t *g)
{
    int n;
    return sscanf(g->name, "rsmi%d", &n) == 1 ? n : g->index;
}

static void add_gpu(json_t *env, const topo_t *topo, int gpu)
{
    set_int(env, "COSCHED_GPU", gpu);
    const topo_gpu_t *g = topo && gpu < topo->ngpus ? &topo->gpus[gpu] : NULL;
    const char *vendor = g ? g->vendor : "";
    if (strcmp(vendor, "AMD") == 0) {
        set_int(env, "ROCR_VISIBLE_DEVICES", rocm_index(g));
    } else if (strcmp(vendor, "Intel") == 0) {
        set_int(env, "ZE_AFFINITY_MASK", gpu);
    } else { /* NVIDIA, and what cannot be told apart: CUDA is what most training jobs use */
        set_string(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        set_int(env, "CUDA_VISIBLE_DEVICES", gpu);
    }
}

json_t *task_env(const topo_t *topo, const plan_rank_t *rank, bool openmp)
{
    json_t *env = json_object();
    char *cpus = cpulist_format(rank->cpus), *places = omp_places(rank->cpus);
    set_string(env, "COSCHED_CPUS", cpus ? cpus : "");
    if (openmp) {
        set_int(env, "OMP_NUM_THREADS", hwloc_bitmap_weight(rank->cpus));
        set_string(env, "OMP_PLACES", places ? places : "");
        set_string(env, "OMP_PROC_BIND", "close");
    }
    free(cpus);
    free(places);
    if (rank->gpu >= 0)
        add_gpu(env, topo, rank->gpu);
    return env;
}
