/* throttle_detect: what this machine offers, detected once (resctrl in throttle_resctrl.c, the
 * cgroup hierarchies in throttle_cgroup.c); what a daemon before left, undone at start; and letting
 * it all go. Above the knobs' files, which read what it found through throttle.c. */
#include "throttle_internal.h"

#include <stdio.h>
#include <stdlib.h>

throttle_t *throttle_detect(const throttle_config_t *cfg)
{
    throttle_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cfg = *cfg;
    if (!t->cfg.subtree[0])
        snprintf(t->cfg.subtree, sizeof t->cfg.subtree, "cosched");
    if (!(t->cfg.duty_period > 0))
        t->cfg.duty_period = 0.1;
    for (int k = 0; k < KNOB_COUNT; k++)
        if (!throttle_allowed(&t->cfg, (knob_t)k))
            snprintf(t->desc[k], THROTTLE_DESC_MAX, "not allowed (knobs_allowed)");
    bool subtree_ok = throttle_valid_name(t->cfg.subtree);
    for (int k = 0; k < KNOB_SIGSTOP && !subtree_ok; k++)
        if (throttle_allowed(&t->cfg, (knob_t)k))
            snprintf(t->desc[k], THROTTLE_DESC_MAX, "not available: invalid subtree name '%s'", t->cfg.subtree);
    if (subtree_ok && throttle_allowed(&t->cfg, KNOB_RESCTRL_MB))
        throttle_resctrl_detect(t);
    if (subtree_ok)
        throttle_cgroup_detect(t);
    if (throttle_allowed(&t->cfg, KNOB_CORES)) {
        t->has[KNOB_CORES] = true;
        snprintf(t->desc[KNOB_CORES], THROTTLE_DESC_MAX,
                 "sched_setaffinity: a multi-threaded co-tenant on fewer of its cores, at full speed, before the "
                 "knob below it");
    }
    if (throttle_allowed(&t->cfg, KNOB_SIGSTOP)) {
        t->has[KNOB_SIGSTOP] = true;
        snprintf(t->desc[KNOB_SIGSTOP], THROTTLE_DESC_MAX,
                 "SIGSTOP/SIGCONT of each process added (of its process group when it leads one)");
    }
    return t;
}

void throttle_free(throttle_t *t)
{
    if (!t)
        return;
    throttle_cgroup_free(t);
    free(t);
}

void throttle_sweep(throttle_t *t)
{
    if (!t)
        return;
    throttle_journal_undo(t->cfg.journal_dir);
    throttle_cgroup_sweep(t);
    throttle_resctrl_sweep(t);
}
