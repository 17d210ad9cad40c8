/* slurm_recipe_internal: what the recipe's two files share. */
#ifndef COSCHED_SLURM_RECIPE_INTERNAL_H
#define COSCHED_SLURM_RECIPE_INTERNAL_H

#include "slurm_recipe.h"

/* The node's split and its figures into s (its memory alone without GPUs); -1 with the planner's
 * reason in err when it cannot split the node. */
int recipe_split_node(const topo_t *t, unsigned long long real_memory_mib, long long mem_spec_mib, recipe_split_t *s,
                      char *err, size_t errlen);

#endif
