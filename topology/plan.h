/* plan: where a training job's ranks and the noise / co-tenant ranks go on one node.
 * A pure function of (topology, request): no I/O, no global state, all or nothing. */
#ifndef COSCHED_PLAN_H
#define COSCHED_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <hwloc.h>

#include "topo.h"

/* The placement policies. What each keeps apart, how it places trainer ranks and where it falls
 * back to is data: the table in plan_policy.c (plan_policy_info). */
typedef enum {
    PLAN_EXCLUSIVE, /* trainer on its GPUs' domains; noise only on domains (and L3s) it does not touch */
    PLAN_SHARED,    /* the study's comparison case: both take half of every domain */
    PLAN_L3,        /* as exclusive, but noise may use trainer domains' L3s that hold no trainer core */
    PLAN_CORES,     /* noise on any core that is not a trainer core (cores are whole: SMT siblings too) */
    PLAN_NPOLICIES,
} plan_policy_t;

/* What co-tenants are kept apart from, weakest first. A plan states the level it achieved. */
typedef enum {
    PLAN_ISOLATE_NONE,  /* a co-tenant on a trainer core; shared's row aims for no more */
    PLAN_ISOLATE_CORES, /* never on a trainer core or its SMT sibling */
    PLAN_ISOLATE_L3,    /* never under an L3 that holds a trainer core */
    PLAN_ISOLATE_NUMA,  /* never in a NUMA domain (or under an L3) that holds a trainer core */
} plan_isolation_t;

typedef enum {
    PLAN_TRAINER_LOCAL,  /* every rank on its GPU's domain, GPU-nearest cores first */
    PLAN_TRAINER_HALVES, /* the trainer half of every domain, home domain first (shared) */
} plan_trainer_placement_t;

typedef struct plan_policy_info {
    const char *name;
    plan_isolation_t isolation;       /* what co-tenants are kept apart from */
    plan_trainer_placement_t trainer; /* how trainer ranks are placed */
    int trainer_share;                /* default cores per rank come from 1/share of a domain's free cores */
    plan_policy_t fallback;           /* used when no core is apart at this level; itself when none */
    const char *summary;              /* one line for --help */
} plan_policy_info_t;

/* A training rank uses a handful of threads (the JSC study saw up to 8 per Horovod task): cores
 * beyond that are worth more to co-tenants, so no default rank is larger. */
enum { PLAN_DEFAULT_MAX_CORES_PER_RANK = 8 };

/* Where a trainer rank's memory is bound. Noise memory is always PLAN_MEM_LOCAL. */
typedef enum {
    PLAN_MEM_LOCAL, /* its domain's own memory (where a cgroup forbids it, the nearest allowed) */
    PLAN_MEM_HBM,   /* that and the high-bandwidth memory-only domains (HBM, MCDRAM) local to its cores */
} plan_mem_t;

typedef struct plan_request {
    plan_policy_t policy;
    hwloc_const_bitmap_t gpus; /* GPU indexes the trainer uses; NULL = all */
    int ranks_per_gpu;         /* >= 1 */
    /* > 0: a trainer of this many ranks on cores alone, for a node without GPUs or a CPU
     * training: every rank's home is the first domain with free cores, gpus is not used. */
    int cpu_ranks;
    int cores_per_rank;            /* 0 = the default: at most 8, fewer when the policy's share has fewer */
    int noise_ranks;               /* -1 = one per remaining core */
    bool smt;                      /* give each core's SMT siblings too */
    plan_mem_t mem;                /* trainer ranks' memory binding */
    hwloc_const_bitmap_t reserved; /* PUs already taken (by other jobs); NULL = none */
    /* PUs other jobs' trainer / co-tenant ranks hold (the daemon's bookkeeping; both are also
     * reserved). The policy keeps new noise away from the first as from this plan's trainer,
     * and new trainer ranks away from the domains (exclusive) or L3s (l3) of the second. */
    hwloc_const_bitmap_t trainer_taken;
    hwloc_const_bitmap_t cotenant_taken;
    /* The PUs the job may use at all (a batch system's allocation); NULL = the whole node. A core
     * is usable when one of its PUs is; ranks get only allowed PUs. Trainer ranks whose GPU's
     * domains hold none of them go to the domain with the most (with a warning). */
    hwloc_const_bitmap_t allowed;
} plan_request_t;

typedef struct plan_rank {
    int rank;
    int gpu;             /* GPU index, -1 for noise */
    unsigned numa;       /* OS index of the domain it belongs to */
    hwloc_bitmap_t cpus; /* PU OS indexes */
    hwloc_bitmap_t mems; /* NUMA OS indexes: memory follows the cores (topo_numa_t.mems), plus
                          * their high-bandwidth memory for trainer ranks with PLAN_MEM_HBM */
} plan_rank_t;

enum { PLAN_MAX_WARNINGS = 8 };

typedef struct plan {
    plan_policy_t policy;       /* as requested */
    plan_isolation_t isolation; /* what the plan keeps co-tenants apart from: the policy's level, or
                                 * the one it fell back to when no core was apart at that level */
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

/* The policy's row of the table, NULL for a value outside it. */
const plan_policy_info_t *plan_policy_info(plan_policy_t policy);
const char *plan_policy_name(plan_policy_t policy);
int plan_policy_parse(const char *name, plan_policy_t *out);

/* "local", "hbm": the word --mem takes. */
const char *plan_mem_name(plan_mem_t mem);
int plan_mem_parse(const char *name, plan_mem_t *out);

/* "numa", "l3", "cores", "none": the word `cosched plan --json` and the daemon print. */
const char *plan_isolation_name(plan_isolation_t level);
int plan_isolation_parse(const char *name, plan_isolation_t *out);
/* What the level means for the co-tenants, one clause: "co-tenants share memory bandwidth ..." */
const char *plan_isolation_description(plan_isolation_t level);

/* Whether cores a and b (indexes into topo->cores) share the place the level itself is about:
 * the core (cores), an L3 (l3), a NUMA domain (numa); none is about no place. */
bool plan_isolation_shares(const topo_t *topo, plan_isolation_t level, int a, int b);

/* Whether the level fails to keep core b apart from core a: they share a place of this level or
 * of a weaker one (numa: the same domain, or an L3, which may span domains, or the core). */
bool plan_isolation_close(const topo_t *topo, plan_isolation_t level, int a, int b);

/* "--cpu-bind=map_cpu:3,9" when every rank has one CPU, else "--cpu-bind=mask_cpu:0x..,0x..";
 * NULL when there are no ranks. The caller frees the string. */
char *plan_srun_cpu_bind(const plan_rank_t *ranks, int nranks);

#endif
