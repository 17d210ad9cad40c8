/* progress_source: the choice of a trainer's progress source, and the models that turn busy time
 * and counters into observations with the units of a step time. */
#include "progress_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

static const char *const source_names[PROGRESS_NSOURCES] = {
    WIRE_PROGRESS_AUTO, WIRE_PROGRESS_STEPS, WIRE_PROGRESS_GPU, WIRE_PROGRESS_PMU, WIRE_PROGRESS_NONE,
};

const char *progress_source_name(progress_source_t source)
{
    return (unsigned)source < PROGRESS_NSOURCES ? source_names[source] : "unknown";
}

int progress_source_parse(const char *name, progress_source_t *out)
{
    for (int s = 0; name && s < PROGRESS_NSOURCES; s++)
        if (strcmp(name, source_names[s]) == 0) {
            *out = (progress_source_t)s;
            return 0;
        }
    return -1;
}

static progress_choice_t chosen(progress_source_t source, const char *fmt, const char *a, const char *b)
{
    progress_choice_t c = {.source = source};
    snprintf(c.reason, sizeof c.reason, fmt, a ? a : "", b ? b : "");
    return c;
}

static bool all_gpus_sampled(const progress_offer_t *o)
{
    return o->gpus > 0 && o->gpus_sampled >= o->gpus;
}

static progress_choice_t choose_gpu(const progress_offer_t *o, const char *how)
{
    if (o->gpus > 0 && o->gpus_pending > 0 && o->gpus_sampled + o->gpus_pending >= o->gpus) {
        progress_choice_t c = chosen(PROGRESS_NONE, "waiting for the first reading of its GPUs%s%s", NULL, NULL);
        c.undecided = true;
        return c;
    }
    if (all_gpus_sampled(o))
        return chosen(PROGRESS_GPU, "%sthe busy time of its GPUs%s", how, NULL);
    if (o->gpus == 0)
        return chosen(PROGRESS_NONE, "gpu %s: the job holds no GPU%s", how[0] ? "requested" : "", NULL);
    return chosen(PROGRESS_NONE, "its GPUs' busy time cannot be read: %s%s", o->gpu_why ? o->gpu_why : "not sampled",
                  NULL);
}

static progress_choice_t choose_pmu(const progress_offer_t *o, const char *how)
{
    if (!o->pmu)
        return chosen(PROGRESS_NONE, "no instruction counts: %s%s", o->pmu_why ? o->pmu_why : "no PMU", NULL);
    if (!o->pmu_target)
        return chosen(PROGRESS_NONE, "no instruction counts: %s%s",
                      o->pmu_target_why ? o->pmu_target_why
                                        : "no processes of the job are known yet (no cgroup, no run)",
                      NULL);
    return chosen(PROGRESS_PMU, "%sits processes' work, %s", how, o->pmu_why ? o->pmu_why : "counted by perf events");
}

/* "no steps reported and " + why the fallback was not possible either. */
static progress_choice_t explained(progress_choice_t c, const char *prefix)
{
    if (c.source != PROGRESS_NONE || c.undecided)
        return c;
    char why[sizeof c.reason];
    memcpy(why, c.reason, sizeof why);
    size_t n = strlen(prefix);
    if (n >= sizeof c.reason)
        n = sizeof c.reason - 1;
    memcpy(c.reason, prefix, n);
    size_t rest = strnlen(why, sizeof c.reason - 1 - n);
    memcpy(c.reason + n, why, rest);
    c.reason[n + rest] = '\0';
    return c;
}

progress_choice_t progress_choose(progress_source_t requested, const progress_offer_t *o)
{
    switch (requested) {
    case PROGRESS_STEPS:
        return chosen(PROGRESS_STEPS, "requested: the steps it reports%s%s", o->steps_seen ? "" : " (none yet)", NULL);
    case PROGRESS_GPU: return choose_gpu(o, "requested: ");
    case PROGRESS_PMU: return choose_pmu(o, "requested: ");
    case PROGRESS_NONE:
        return chosen(PROGRESS_NONE, "requested: no progress source, the guard does not act%s%s", NULL, NULL);
    default: break;
    }
    if (o->steps_seen)
        return chosen(PROGRESS_STEPS, "the steps it reports%s%s", NULL, NULL);
    /* A GPU job's CPU threads spin-wait in CUDA and NCCL: their instruction rate says nothing
     * of its progress, so it is never judged by the PMU. */
    if (o->gpus > 0)
        return explained(choose_gpu(o, ""), "no steps reported and ");
    return explained(choose_pmu(o, ""), "no steps reported, no GPU, and ");
}

bool progress_gpu_observation(double busy, double idle_below, double *value)
{
    if (!isfinite(busy) || busy > 1 + 1e-9 || !(busy >= idle_below) || !(busy > 0))
        return false;
    *value = 1 / fmin(busy, 1);
    return true;
}

bool progress_gpu_mean(const double *busy, size_t n, double *mean)
{
    double sum = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!(busy[i] >= 0) || !isfinite(busy[i]))
            return false;
        sum += busy[i];
    }
    *mean = sum / (double)n;
    return true;
}

bool progress_counter_observation(double events, double seconds, double *value)
{
    if (!(events > 0) || !(seconds > 0) || !isfinite(events) || !isfinite(seconds))
        return false;
    *value = seconds / (events / 1e9);
    return true;
}
