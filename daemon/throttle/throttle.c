/* throttle: the configuration, the knobs' names, and what throttle_detect.c found of each. Calls
 * no other file of the component, so that any of them may use it. */
#include "throttle_internal.h"

#include <stdio.h>
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

bool throttle_has(const throttle_t *t, knob_t knob)
{
    return (unsigned)knob < KNOB_COUNT && t->has[knob];
}

const char *throttle_describe(const throttle_t *t, knob_t knob)
{
    return (unsigned)knob < KNOB_COUNT ? t->desc[knob] : "unknown knob";
}
