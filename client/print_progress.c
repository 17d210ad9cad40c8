/* print_progress: the text form of where a trainer's progress comes from and how a co-tenant is
 * held — the same lines in `job get`, `stats`, `guard` and `status`. */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "wire.h"

/* How the steps arrive and which rank's are judged: nothing before the first report, nor for
 * the program's own reports without ranks ("the steps it reports" says it all). */
static void print_step_source(json_t *p, const char *indent)
{
    const char *via = json_string_value(json_object_get(p, WIRE_R_STEP_SOURCE));
    const char *torch = json_string_value(json_object_get(p, WIRE_R_TORCH));
    json_t *rank = json_object_get(p, WIRE_R_JUDGED_RANK);
    json_int_t others = json_integer_value(json_object_get(p, WIRE_R_STEPS_OTHER_RANKS));
    if (!via || (strcmp(via, WIRE_STEPS_REPORTED) == 0 && !json_is_integer(rank)))
        return;
    if (strcmp(via, WIRE_STEPS_HOOK) == 0)
        printf("%ssteps from the PyTorch hook (torch %s)", indent, torch ? torch : "version not given");
    else
        printf("%ssteps reported by the job", indent);
    if (json_is_integer(rank))
        printf(", judged on rank %lld (%lld reports of other ranks: the same steps, not counted again)",
               (long long)json_integer_value(rank), (long long)others);
    printf("\n");
}

const char *print_progress_brief(json_t *p, char *out, size_t len)
{
    const char *source = json_string_value(json_object_get(p, WIRE_R_SOURCE));
    const char *via = json_string_value(json_object_get(p, WIRE_R_STEP_SOURCE));
    const char *torch = json_string_value(json_object_get(p, WIRE_R_TORCH));
    if (!source)
        return "?";
    if (!via || strcmp(source, WIRE_PROGRESS_STEPS) != 0)
        snprintf(out, len, "%s", source);
    else
        snprintf(out, len, "%s (%s%s%s)", source, via, torch ? ", torch " : "", torch ? torch : "");
    return out;
}

void print_progress(json_t *p, const char *indent)
{
    if (!json_is_object(p))
        return;
    printf("%sprogress from %s (%s): %s\n", indent, json_string_value(json_object_get(p, WIRE_R_SOURCE)),
           json_string_value(json_object_get(p, WIRE_R_REQUESTED)),
           json_string_value(json_object_get(p, WIRE_R_REASON)));
    json_t *busy = json_object_get(p, WIRE_R_GPU_BUSY);
    if (json_is_number(busy))
        printf("%sits GPUs %.0f %% busy in the latest window (%lld windows)\n", indent, 100 * json_number_value(busy),
               (long long)json_integer_value(json_object_get(p, WIRE_R_GPU_WINDOWS)));
    print_step_source(p, indent);
    json_t *ignored = json_object_get(p, WIRE_R_STEPS_IGNORED);
    if (json_integer_value(ignored) > 0)
        printf("%s%lld reported steps not judged (another source was picked)\n", indent,
               (long long)json_integer_value(ignored));
    json_t *hook = json_object_get(p, WIRE_R_STEPS_HOOK_IGNORED);
    if (json_integer_value(hook) > 0)
        printf("%s%lld reports of the PyTorch hook left out (the job reports its steps itself)\n", indent,
               (long long)json_integer_value(hook));
}

void print_hold(json_t *h, const char *indent)
{
    if (!json_is_object(h))
        return;
    const char *where = json_string_value(json_object_get(h, WIRE_R_WHERE)),
               *cgroup = json_string_value(json_object_get(h, WIRE_R_CGROUP));
    const char *error = json_string_value(json_object_get(h, WIRE_R_ERROR));
    if (where && where[0] == 's')
        printf("%sheld in the cgroups Slurm made for it (%s)\n", indent, cgroup ? cgroup : "?");
    if (error)
        printf("%s%s\n", indent, error);
    json_t *kept = json_object_get(h, WIRE_R_CORES_KEPT);
    const char *note = json_string_value(json_object_get(h, WIRE_R_CORES_NOTE));
    if (json_is_number(kept) && json_number_value(kept) < 1)
        printf("%son %.0f %% of its cores, at full speed (the cores knob)\n", indent, 100 * json_number_value(kept));
    if (note)
        printf("%snot narrowed to fewer cores: %s\n", indent, note);
    const char *let_go = json_string_value(json_object_get(h, WIRE_R_LET_GO));
    if (let_go)
        printf("%slet go, nothing held, to act on a signal: %s\n", indent, let_go);
    json_t *lets_go = json_object_get(h, WIRE_R_LETS_GO);
    json_int_t whole = json_integer_value(json_object_get(lets_go, WIRE_R_WHOLE)),
               delivery = json_integer_value(json_object_get(lets_go, WIRE_R_DELIVERY));
    if (whole || delivery)
        printf("%slet go %lld time%s as its job ended, %lld time%s only to take a signal\n", indent, (long long)whole,
               whole == 1 ? "" : "s", (long long)delivery, delivery == 1 ? "" : "s");
}

void print_escalation(json_t *e, const char *indent)
{
    const char *step = json_string_value(json_object_get(e, WIRE_R_STEP)),
               *detail = json_string_value(json_object_get(e, WIRE_R_DETAIL));
    double at_minimum = json_number_value(json_object_get(e, WIRE_R_AT_MINIMUM_SECONDS));
    if (!step)
        return;
    if (strcmp(step, "none") != 0 || at_minimum > 0)
        printf("%sescalation through Slurm: %s%s%s (at the minimum share for %.0f s, %lld requeue%s)\n", indent, step,
               detail ? ": " : "", detail ? detail : "", at_minimum,
               (long long)json_integer_value(json_object_get(e, WIRE_R_REQUEUES)),
               json_integer_value(json_object_get(e, WIRE_R_REQUEUES)) == 1 ? "" : "s");
}

void print_time_credit(json_t *c, const char *indent)
{
    double owed = json_number_value(json_object_get(c, WIRE_R_OWED_SECONDS));
    json_int_t minutes = json_integer_value(json_object_get(c, WIRE_R_MINUTES));
    const char *detail = json_string_value(json_object_get(c, WIRE_R_DETAIL));
    if (json_is_object(c) && (owed > 0 || minutes > 0 || detail))
        printf("%stime held: %.0f s owed, %lld minute(s) of time limit handed back%s%s\n", indent, owed,
               (long long)minutes, detail && !minutes ? ": " : "", detail && !minutes ? detail : "");
}

void print_gpus(json_t *gpus, const char *indent)
{
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        json_t *busy = json_object_get(g, WIRE_R_BUSY);
        printf("%sGPU %lld %s  %-11s %s", indent, (long long)json_integer_value(json_object_get(g, WIRE_R_INDEX)),
               json_string_value(json_object_get(g, WIRE_R_PCI)), json_string_value(json_object_get(g, WIRE_R_STATE)),
               json_string_value(json_object_get(g, WIRE_R_DETAIL)));
        if (json_is_number(busy))
            printf(" (%.0f %% busy)", 100 * json_number_value(busy));
        printf("\n");
    }
}
