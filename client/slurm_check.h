/* slurm_check: `cosched slurm-conf --check` — the live cluster (or saved scontrol outputs) held
 * against the recipe, point by point: what holds, what is missing, what contradicts it. */
#ifndef COSCHED_SLURM_CHECK_H
#define COSCHED_SLURM_CHECK_H

#include "slurm_recipe.h"

/* Read the cluster (from_dir: saved outputs, else scontrol), print the findings (text or JSON).
 * The exit status: 0 nothing lets a co-tenant run unguarded or starve a GPU job, 1 something
 * does or the cluster cannot be read. */
int slurm_check_run(const slurm_recipe_t *r, const recipe_choices_t *c, const char *from_dir, int json);

#endif
