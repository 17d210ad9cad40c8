/* plan: where a training job's ranks and the noise / co-tenant ranks go on one node.
 * A pure function of (topology, request): no I/O, no global state, all or nothing. */
#ifndef COSCHED_PLAN_H
#define COSCHED_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <hwloc.h>

#include "topo.h"

typedef enum {
    PLAN_EXCLUSIVE, /* trainer on its GPUs' domains; noise only on domains (and L3s) it does not touch */
    PLAN_SHARED,    /* the study's comparison case: both take half of every domain */
    PLAN_L3,        /* as exclusive, but noise may use trainer domains' L3s that hold no trainer core */
} plan_policy_t;

typedef struct plan_request {
    plan_policy_t policy;
    hwloc_const_bitmap_t gpus; /* GPU indexes the trainer uses; NULL = all */
    int ranks_per_gpu;         /* >= 1 */
    int cores_per_rank;        /* 0 = as many as the policy allows */
    int noise_ranks;           /* -1 = one per remaining core */
    bool smt;                  /* give each core's SMT siblings too */
    hwloc_const_bitmap_t reserved; /* PUs already taken (by other jobs); NULL = none */
    /* PUs other jobs' trainer / co-tenant ranks hold (the daemon's bookkeeping; both are also
     * reserved). The policy keeps new noise away from the first as from this plan's trainer,
     * and new trainer ranks away from the domains (exclusive) or L3s (l3) of the second. */
    hwloc_const_bitmap_t trainer_taken;
    hwloc_const_bitmap_t cotenant_taken;
} plan_request_t;

typedef struct plan_rank {
    int rank;
    int gpu;               /* GPU index, -1 for noise */
    unsigned numa;         /* OS index of the domain it belongs to */
    hwloc_bitmap_t cpus;   /* PU OS indexes */
    hwloc_bitmap_t mems;   /* NUMA OS indexes: memory follows the cores */
} plan_rank_t;

enum { PLAN_MAX_WARNINGS = 8 };

typedef struct plan {
    plan_policy_t policy;
    plan_rank_t *trainer;
    int ntrainer;
    plan_rank_t *noise;
    int nnoise;
    char *warnings[PLAN_MAX_WARNINGS];
    int nwarnings;
} plan_t;

/* Default request: exclusive, all GPUs, 1 rank per GPU, policy-sized ranks, noise everywhere left. */
void plan_request_init(plan_request_t *req);

/* Compute a plan. Returns NULL and a one-line reason naming what does not fit; nothing half-planned. */
plan_t *plan_compute(const topo_t *topo, const plan_request_t *req, char *err, size_t errlen);

void plan_free(plan_t *plan);

const char *plan_policy_name(plan_policy_t policy);
int plan_policy_parse(const char *name, plan_policy_t *out);

/* "--cpu-bind=map_cpu:3,9" when every rank has one CPU, else "--cpu-bind=mask_cpu:0x..,0x..";
 * NULL when there are no ranks. The caller frees the string. */
char *plan_srun_cpu_bind(const plan_rank_t *ranks, int nranks);

#endif
