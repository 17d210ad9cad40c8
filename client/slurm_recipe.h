/* slurm_recipe: the harvest recipe for one GPU node — the planner's split of the node into the GPU
 * jobs' cores and the co-tenants', counted as Slurm counts, and the lines that make Slurm keep to
 * it. A pure function of (topology, choices): `cosched slurm-conf` prints it, --check compares. */
#ifndef COSCHED_SLURM_RECIPE_H
#define COSCHED_SLURM_RECIPE_H

#include <stdbool.h>

#include "topo.h"

/* A Slurm release, major.minor (24.05); 0.0 when unknown. */
typedef struct slurm_version {
    int major, minor;
} slurm_version_t;

/* "24.05", "22.05.8", "slurm 24.11.5", "slurm-wlm 22.05.8": 0 and *out set, else -1. */
int slurm_version_parse(const char *text, slurm_version_t *out);
bool slurm_version_at_least(slurm_version_t v, int major, int minor);

enum {
    RECIPE_DEFAULT_GRACE_S = 120,      /* GraceTime: a checkpoint of a few GiB, and the guard's let-go */
    RECIPE_SPEC_CORE_FROM = 4,         /* the co-tenants' side gives the OS a core from this many cores */
    RECIPE_RESTRICTED_FROM_MAJOR = 24, /* RestrictedCoresPerGPU: Slurm 24.05 and later */
    RECIPE_RESTRICTED_FROM_MINOR = 5,
};

/* What the site chooses; the rest follows from the node. */
typedef struct recipe_choices {
    const char *node_name;
    const char *nodes;             /* the partitions' Nodes=: node_name when NULL */
    const char *gpu_partition;     /* "gpu" */
    const char *harvest_partition; /* "harvest" */
    int grace_s;                   /* GraceTime of the harvest partition */
    long long mem_spec_mib;        /* MemSpecLimit; < 0: the rule (slurm_recipe.c) */
    slurm_version_t version;       /* 0.0: unknown, RestrictedCoresPerGPU only as a comment */
} recipe_choices_t;

/* The node split as the planner splits it (policy exclusive, every GPU, one rank each), in
 * Slurm's units: CPUs are PUs, threads included; cores are Slurm's core ids. */
typedef struct recipe_split {
    int cpus, threads_per_core;
    int ngpus;
    char isolation[16];           /* what the plan keeps co-tenants apart from */
    int gpu_cores;                /* cores the plan gives the GPUs' ranks */
    int cotenant_cores;           /* cores it leaves to co-tenants */
    char cotenant_cpus[256];      /* their OS CPUs, for the comment */
    int restricted_cores_per_gpu; /* the fewest cores a GPU's rank has */
    char spec_cpus[64];           /* CpuSpecList: Slurm abstract CPU ids of one co-tenant core; "" none */
    int spec_ncpus;
    int harvest_max_cpus;               /* MaxCPUsPerNode of the harvest partition */
    unsigned long long real_memory_mib; /* RealMemory */
    unsigned long long mem_spec_mib;    /* MemSpecLimit */
    unsigned long long def_mem_per_cpu; /* harvest partition */
    unsigned long long harvest_max_mem; /* MaxMemPerNode of the harvest partition */
    unsigned long long def_mem_per_gpu; /* GPU partition */
} recipe_split_t;

/* One line of the recipe: where it goes, the line, and why. */
typedef enum {
    RECIPE_SLURM_CONF,  /* every node and the controller */
    RECIPE_NODE,        /* slurm.conf: the node's line, its additions */
    RECIPE_PARTITION,   /* slurm.conf: a PartitionName line */
    RECIPE_CGROUP_CONF, /* cgroup.conf */
    RECIPE_SHELL,       /* a command, as root on every node */
    RECIPE_SUBMIT,      /* sbatch / srun options */
    RECIPE_COSCHEDD,    /* coschedd.yaml, its guard: section */
    RECIPE_NPLACES,
} recipe_place_t;

typedef struct recipe_line {
    recipe_place_t place;
    char *line;
    const char *why;
    bool comment; /* printed as a comment: this Slurm lacks it, or it is for users */
} recipe_line_t;

typedef struct slurm_recipe {
    recipe_split_t split;
    bool harvest;      /* the node has GPUs and the planner split it: partitions and node additions */
    char why_not[400]; /* when not, why */
    recipe_line_t *lines;
    int nlines;
} slurm_recipe_t;

/* The recipe for this node, or NULL with the reason in err. real_memory_mib: the NodeName line's. */
slurm_recipe_t *slurm_recipe_build(const topo_t *t, unsigned long long real_memory_mib, const recipe_choices_t *c,
                                   char *err, size_t errlen);
void slurm_recipe_free(slurm_recipe_t *r);

/* "slurm.conf", "cgroup.conf", "shell", "sbatch", "coschedd.yaml": where a place's lines go. */
const char *recipe_place_file(recipe_place_t place);

#endif
