/* print_progress: the text form of where a trainer's progress comes from and how a co-tenant is
 * held — the same lines in `job get`, `stats`, `guard` and `status`. */
#include <stdio.h>
#include <string.h>

#include "client.h"

void print_progress(json_t *p, const char *indent)
{
    if (!json_is_object(p))
        return;
    printf("%sprogress from %s (%s): %s\n", indent, json_string_value(json_object_get(p, "source")),
           json_string_value(json_object_get(p, "requested")), json_string_value(json_object_get(p, "reason")));
    json_t *busy = json_object_get(p, "gpu_busy");
    if (json_is_number(busy))
        printf("%sits GPUs %.0f %% busy in the latest window (%lld windows)\n", indent, 100 * json_number_value(busy),
               (long long)json_integer_value(json_object_get(p, "gpu_windows")));
    json_t *ignored = json_object_get(p, "steps_ignored");
    if (json_integer_value(ignored) > 0)
        printf("%s%lld reported steps not judged (another source was picked)\n", indent,
               (long long)json_integer_value(ignored));
}

void print_hold(json_t *h, const char *indent)
{
    if (!json_is_object(h))
        return;
    const char *where = json_string_value(json_object_get(h, "where")), *cgroup = json_string_value(json_object_get(h, "cgroup"));
    const char *error = json_string_value(json_object_get(h, "error"));
    if (where && where[0] == 's')
        printf("%sheld in the cgroups Slurm made for it (%s)\n", indent, cgroup ? cgroup : "?");
    if (error)
        printf("%s%s\n", indent, error);
    json_t *kept = json_object_get(h, "cores_kept");
    const char *note = json_string_value(json_object_get(h, "cores_note"));
    if (json_is_number(kept) && json_number_value(kept) < 1)
        printf("%son %.0f %% of its cores, at full speed (the cores knob)\n", indent, 100 * json_number_value(kept));
    if (note)
        printf("%snot narrowed to fewer cores: %s\n", indent, note);
}

void print_escalation(json_t *e, const char *indent)
{
    const char *step = json_string_value(json_object_get(e, "step")), *detail = json_string_value(json_object_get(e, "detail"));
    double at_minimum = json_number_value(json_object_get(e, "at_minimum_seconds"));
    if (!step)
        return;
    if (strcmp(step, "none") != 0 || at_minimum > 0)
        printf("%sescalation through Slurm: %s%s%s (at the minimum share for %.0f s, %lld requeue%s)\n", indent, step,
               detail ? ": " : "", detail ? detail : "", at_minimum, (long long)json_integer_value(json_object_get(e, "requeues")),
               json_integer_value(json_object_get(e, "requeues")) == 1 ? "" : "s");
}

void print_gpus(json_t *gpus, const char *indent)
{
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        json_t *busy = json_object_get(g, "busy");
        printf("%sGPU %lld %s  %-11s %s", indent, (long long)json_integer_value(json_object_get(g, "index")),
               json_string_value(json_object_get(g, "pci")), json_string_value(json_object_get(g, "state")),
               json_string_value(json_object_get(g, "detail")));
        if (json_is_number(busy))
            printf(" (%.0f %% busy)", 100 * json_number_value(busy));
        printf("\n");
    }
}
