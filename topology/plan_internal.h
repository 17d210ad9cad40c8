/* plan_internal: the planner's working state, shared by plan.c, its steps (plan_trainer.c,
 * plan_noise.c) and their primitives (planner.c). Cores are tracked by index into topo_t.cores;
 * nothing here outlives one plan_compute call. */
#ifndef COSCHED_PLAN_INTERNAL_H
#define COSCHED_PLAN_INTERNAL_H

#include "plan.h"

typedef enum {
    CORE_FREE,
    CORE_RESERVED, /* taken by someone else (request.reserved) */
    CORE_BLOCKED,  /* free, but shares a domain / L3 with another job's co-tenant: no trainer */
    CORE_HELD,     /* kept idle by the policy: the trainer half of a domain that no rank needed */
    CORE_TRAINER,
    CORE_NOISE,
} core_use_t;

typedef struct planner {
    const topo_t *topo;
    const plan_request_t *req;
    const plan_policy_info_t *row; /* the policy being tried: the request's, or one it fell back to */
    core_use_t *use;               /* per core */
    int *owner;                    /* per core: trainer rank using it, -1 */
    int *home;                     /* per trainer rank: index into topo->numa */
    int *gpu;                      /* per trainer rank: GPU index */
    int nranks;
    int *ranks_on; /* per domain: trainer ranks whose home it is */
    /* Each domain's cores in the order trainer ranks take them, fastest kind first, and noise,
     * slowest first; hwloc order inside a kind, so hwloc order alone where every core has perf 0.
     * Domain d's are fast_first[first_core .. first_core+ncores-1], as in topo_t.cores. */
    int *fast_first;
    int *slow_first;
    plan_t *plan;
    char *err;
    size_t errlen;
} planner_t;

/* Fill fast_first and slow_first from the cores' perf; -1 with p->err set when out of memory. */
int planner_order_cores(planner_t *p);

/* Free (unreserved, unassigned) cores of a domain. */
int planner_free_cores(const planner_t *p, int numa);

/* Fill p->plan->trainer from the cores marked CORE_TRAINER with their owners. */
int planner_emit_trainer(planner_t *p);

/* Trainer placement: whole ranks on their home domain (PLAN_TRAINER_LOCAL), or the trainer half
 * of every domain (PLAN_TRAINER_HALVES). Both size default ranks by the row's share. */
int plan_trainer_local(planner_t *p);
int plan_trainer_shared(planner_t *p);

/* Cores the row's isolation level keeps apart from every trainer core, free or not: 0 means no
 * domain or L3 at that level is free of trainer cores, and the planner falls back. */
int plan_noise_room(const planner_t *p);

/* Noise ranks on the cores the row leaves eligible. */
int plan_noise(planner_t *p);

/* Record a warning on the plan (printf-style); silently drops past PLAN_MAX_WARNINGS. */
void planner_warn(planner_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A rank's CPU set for one core: the first PU, or every sibling with --smt; its memory where the
 * core's domain binds it (warned when a cgroup forbids the domain's own). */
void planner_add_core(planner_t *p, plan_rank_t *rank, int core);

#endif
