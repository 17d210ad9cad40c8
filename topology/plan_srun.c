/* plan_srun: a plan's ranks as the srun --cpu-bind= spec a job script pastes: map_cpu when
 * every rank has one CPU, else mask_cpu with one hex mask per rank (any width: Slurm reads it). */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

char *plan_srun_cpu_bind(const plan_rank_t *ranks, int nranks)
{
    if (nranks <= 0)
        return NULL;
    int single = 1;
    for (int i = 0; i < nranks; i++)
        single = single && hwloc_bitmap_weight(ranks[i].cpus) == 1;
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    len = (size_t)snprintf(out, cap, "--cpu-bind=%s:", single ? "map_cpu" : "mask_cpu");
    for (int i = 0; i < nranks; i++) {
        char num[24], *item = num;
        if (single)
            snprintf(num, sizeof num, "%d", hwloc_bitmap_first(ranks[i].cpus));
        else
            item = cpulist_format_mask(ranks[i].cpus);
        if (!item) {
            free(out);
            return NULL;
        }
        size_t need = len + strlen(item) + 2;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                if (item != num)
                    free(item);
                free(out);
                return NULL;
            }
            out = grown;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", item);
        if (item != num)
            free(item);
    }
    return out;
}
