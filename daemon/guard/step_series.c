/* step_series: one series of step times per trainer out of the reports of its ranks, and how
 * they arrive (the program's own reports, the injected hook). */
#include "step_series.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

const char *step_via_name(step_via_t via)
{
    return via == STEP_VIA_REPORTED ? WIRE_STEPS_REPORTED : via == STEP_VIA_HOOK ? WIRE_STEPS_HOOK : NULL;
}

int step_via_parse(const char *name, step_via_t *out)
{
    if (name && strcmp(name, WIRE_STEPS_REPORTED) == 0)
        *out = STEP_VIA_REPORTED;
    else if (name && strcmp(name, WIRE_STEPS_HOOK) == 0)
        *out = STEP_VIA_HOOK;
    else
        return -1;
    return 0;
}

/* A version as torch.__version__ spells it ("1.13.1", "2.5.0.dev20240901+cu121"): it goes into
 * replies and a log line, so nothing that needs quoting. */
bool step_torch_valid(const char *version)
{
    size_t n = version ? strlen(version) : 0;
    if (n == 0 || n >= STEP_TORCH_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = version[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static void follow(step_series_t *s, const step_origin_t *from, double seconds, double now)
{
    s->rank = from->rank;
    s->last = now;
    s->last_seconds = seconds;
    s->via = from->via;
    snprintf(s->torch, sizeof s->torch, "%s", from->via == STEP_VIA_HOOK && from->torch ? from->torch : "");
}

/* A program that reports its own steps (libcosched, the Python module, cosched report, a run's
 * step lines) and also has the hook on its PYTHONPATH would send each step twice, and its own
 * reports may carry no rank or the same rank as the hook's, so the rank rule cannot tell them
 * apart. The rule is per job, not per rank: the program often reports from rank 0 alone while
 * the hook runs in every rank, and a higher rank's hook must not take over the series when the
 * program's rank pauses (an evaluation) and then count the same steps again.
 *
 * Data-parallel ranks step together: the collective that averages the gradients makes every
 * rank wait for the slowest, so one rank's step times already carry what a co-tenant does to
 * any of them. The lowest rank is judged because it is the one that lives as long as the job
 * (rank 0 saves, logs, evaluates); the others' reports are the same steps counted again. */
step_admit_t step_series_admit(step_series_t *s, const step_origin_t *from, double seconds, double now,
                               double idle_release)
{
    if (from->via == STEP_VIA_HOOK && s->program_reports) {
        s->hook_ignored++;
        return STEP_HOOK_IGNORED;
    }
    if (from->via == STEP_VIA_REPORTED)
        s->program_reports = true;
    if (s->via == STEP_VIA_NONE || from->rank == s->rank) {
        follow(s, from, seconds, now);
        return STEP_JUDGED;
    }
    bool quiet = now - s->last > fmax(idle_release, 8 * s->last_seconds);
    if (from->rank < s->rank || quiet) {
        follow(s, from, seconds, now);
        return STEP_JUDGED_NEW_RANK;
    }
    s->other_ranks++;
    return STEP_OTHER_RANK;
}
