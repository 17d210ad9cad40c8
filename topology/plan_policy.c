/* plan_policy: the placement policies as one table — what each keeps co-tenants apart from, how
 * it places trainer ranks, and where it falls back — plus the isolation levels' names and the one
 * test of which cores a level keeps apart. */
#include "plan.h"

#include <string.h>

/* A policy differs from another only in these columns; the planner reads them, never the name.
 * trainer_share 2 sizes default ranks from half a domain: co-tenants are meant to share it. */
static const plan_policy_info_t policies[PLAN_NPOLICIES] = {
    [PLAN_EXCLUSIVE] = {"exclusive", PLAN_ISOLATE_NUMA, PLAN_TRAINER_LOCAL, 1, PLAN_L3,
                        "trainer on its GPUs' NUMA domains, co-tenants only on domains and L3s the trainer does "
                        "not touch"},
    [PLAN_SHARED] = {"shared", PLAN_ISOLATE_NONE, PLAN_TRAINER_HALVES, 2, PLAN_SHARED,
                     "trainer and co-tenants each take half of every domain (the study's comparison case)"},
    [PLAN_L3] = {"l3", PLAN_ISOLATE_L3, PLAN_TRAINER_LOCAL, 1, PLAN_CORES,
                 "as exclusive, but co-tenants may use L3s of trainer domains that hold no trainer core"},
    [PLAN_CORES] = {"cores", PLAN_ISOLATE_CORES, PLAN_TRAINER_LOCAL, 2, PLAN_CORES,
                    "co-tenants on any core the trainer does not use, never on a trainer core or its SMT "
                    "sibling"},
};

static const struct {
    const char *name;
    const char *description;
} levels[] = {
    [PLAN_ISOLATE_NONE] = {"none", "a co-tenant runs on a trainer core or its SMT sibling: nothing is kept apart"},
    [PLAN_ISOLATE_CORES] = {"cores", "co-tenants share memory bandwidth and L3 with the trainer: use the guard"},
    [PLAN_ISOLATE_L3] = {"l3", "co-tenants share no L3 with the trainer, but share the memory bandwidth of its "
                               "NUMA domains"},
    [PLAN_ISOLATE_NUMA] = {"numa", "co-tenants share no NUMA domain and no L3 with the trainer"},
};

const plan_policy_info_t *plan_policy_info(plan_policy_t policy)
{
    return (unsigned)policy < PLAN_NPOLICIES ? &policies[policy] : NULL;
}

const char *plan_policy_name(plan_policy_t policy)
{
    const plan_policy_info_t *info = plan_policy_info(policy);
    return info ? info->name : "?";
}

int plan_policy_parse(const char *name, plan_policy_t *out)
{
    for (int i = 0; name && i < PLAN_NPOLICIES; i++)
        if (strcmp(name, policies[i].name) == 0) {
            *out = (plan_policy_t)i;
            return 0;
        }
    return -1;
}

const char *plan_isolation_name(plan_isolation_t level)
{
    return (unsigned)level <= PLAN_ISOLATE_NUMA ? levels[level].name : "?";
}

int plan_isolation_parse(const char *name, plan_isolation_t *out)
{
    for (int i = 0; name && i <= PLAN_ISOLATE_NUMA; i++)
        if (strcmp(name, levels[i].name) == 0) {
            *out = (plan_isolation_t)i;
            return 0;
        }
    return -1;
}

const char *plan_isolation_description(plan_isolation_t level)
{
    return (unsigned)level <= PLAN_ISOLATE_NUMA ? levels[level].description : "?";
}

bool plan_isolation_shares(const topo_t *topo, plan_isolation_t level, int a, int b)
{
    switch (level) {
    case PLAN_ISOLATE_CORES: return a == b;
    case PLAN_ISOLATE_L3: return topo->cores[a].l3 == topo->cores[b].l3;
    case PLAN_ISOLATE_NUMA: return topo->cores[a].numa == topo->cores[b].numa;
    default: return false;
    }
}

bool plan_isolation_close(const topo_t *topo, plan_isolation_t level, int a, int b)
{
    for (int up = PLAN_ISOLATE_CORES; up <= (int)level; up++)
        if (plan_isolation_shares(topo, (plan_isolation_t)up, a, b))
            return true;
    return false;
}
