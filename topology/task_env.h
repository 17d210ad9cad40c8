/* task_env: the environment a job rank's processes get — its CPUs for OpenMP and its GPU for the
 * vendor's runtime. One definition for `cosched bind`, `run start` and the Slurm TaskProlog. */
#ifndef COSCHED_TASK_ENV_H
#define COSCHED_TASK_ENV_H

#include <stdbool.h>
#include <jansson.h>

#include "plan.h"
#include "topo.h"

/* {"COSCHED_CPUS":"0-3","OMP_NUM_THREADS":"4","OMP_PLACES":"{0},{1},{2},{3}","OMP_PROC_BIND":"close",
 *  and for a GPU rank "COSCHED_GPU" plus the vendor's variable: CUDA_VISIBLE_DEVICES with
 *  CUDA_DEVICE_ORDER=PCI_BUS_ID (NVIDIA), ROCR_VISIBLE_DEVICES by ROCm SMI index (AMD),
 *  ZE_AFFINITY_MASK (Intel)}. Every value is a string. Without openmp, no OMP_ variables: for
 *  tasks that a batch system binds and whose thread counts are their own. */
json_t *task_env(const topo_t *topo, const plan_rank_t *rank, bool openmp);

#endif
