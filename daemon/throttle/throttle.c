/* throttle: the configuration, the knobs' names, and detecting once what this machine offers
 * (resctrl in throttle_resctrl.c, the cgroup hierarchies in throttle_cgroup.c). */
#include "throttle_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const knob_names[KNOB_COUNT] = {"resctrl-mb", "cpu.max", "cfs-quota", "freezer", "sigstop", "cores"};

void throttle_config_defaults(throttle_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->subtree, sizeof cfg->subtree, "cosched");
    cfg->duty_period = 0.1;
}

const char *throttle_knob_name(knob_t knob)
{
    return (unsigned)knob < KNOB_COUNT ? knob_names[knob] : "unknown";
}

int throttle_knob_parse(const char *name, knob_t *out)
{
    for (int k = 0; k < KNOB_COUNT; k++)
        if (strcmp(name, knob_names[k]) == 0) {
            *out = (knob_t)k;
            return 0;
        }
    return -1;
}

/* Job ids become directory names: nothing that walks out of the subtree. */
bool throttle_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= THROTTLE_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

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

bool throttle_has(const throttle_t *t, knob_t knob)
{
    return (unsigned)knob < KNOB_COUNT && t->has[knob];
}

const char *throttle_describe(const throttle_t *t, knob_t knob)
{
    return (unsigned)knob < KNOB_COUNT ? t->desc[knob] : "unknown knob";
}

void throttle_sweep(throttle_t *t)
{
    if (!t)
        return;
    throttle_journal_undo(t->cfg.journal_dir);
    throttle_cgroup_sweep(t);
    throttle_resctrl_sweep(t);
}
