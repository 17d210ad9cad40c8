/* topo: the node as the planner sees it — NUMA domains, cores, L3 groups, GPUs and NICs —
 * read once through hwloc (live machine or XML file) into plain arrays the planner can trust. */
#ifndef COSCHED_TOPO_H
#define COSCHED_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hwloc.h>

/* One plannable core: it has at least one allowed PU and belongs to a NUMA domain. */
typedef struct topo_core {
    int numa;           /* index into topo_t.numa */
    int l3;             /* cache group id: cores with the same id share an L3 */
    hwloc_bitmap_t pus; /* allowed PU OS indexes (SMT siblings) */
    int first_pu;       /* the PU used when SMT siblings are not wanted */
    int kind;           /* index into topo_t.kinds, -1 when hwloc puts it in no kind */
    int perf;           /* its kind's efficiency where hwloc ranks two kinds or more (higher is
                         * faster: trainer ranks take these cores first, noise last); else 0 */
} topo_core_t;

/* One kind of core (hwloc cpukinds): the performance and efficiency cores of a hybrid CPU. */
typedef struct topo_cpukind {
    int efficiency;      /* hwloc's rank, 0 for the least performant kind; -1 when hwloc cannot rank */
    char core_type[32];  /* its CoreType info (IntelCore, IntelAtom); "" when hwloc gives none */
    hwloc_bitmap_t cpus; /* allowed PUs of the plannable cores of this kind */
    hwloc_bitmap_t numa; /* OS indexes of the domains holding them */
    int ncores;          /* plannable cores of this kind */
} topo_cpukind_t;

/* Every NUMA node hwloc reports, allowed or not: a device's locality and Slurm's core ids come
 * from hwloc whatever a cgroup allows; what may be planned and bound is said by cpus and mems. */
typedef struct topo_numa {
    unsigned os_index;       /* may be non-contiguous (POWER9: 0 and 8) */
    int package;             /* OS index of the package holding it, -1 if none */
    hwloc_bitmap_t packages; /* OS indexes of every package with CPUs in it: one, or several for a
                              * domain attached above the packages */
    uint64_t memory_bytes;
    bool mem_allowed;           /* in hwloc's allowed nodeset (a cgroup's cpuset.mems): memory may be bound there */
    bool memory_only;           /* no PU calls it home: HBM, MCDRAM, CXL or GPU memory beside a domain with cores */
    char kind[16];              /* hwloc's subtype ("HBM", "MCDRAM", "DRAM", "GPUMemory"), "" when it gives none */
    bool high_bandwidth;        /* memory-only HBM or MCDRAM: a trainer's memory goes there on request only */
    hwloc_bitmap_t cpus;        /* allowed PUs of its plannable cores */
    hwloc_bitmap_t node_cpuset; /* every PU hwloc places in the domain, allowed or not */
    hwloc_bitmap_t local_cpus;  /* the allowed ones: those of the package or group a memory-only
                                 * domain hangs under; none for memory hwloc gives no CPUs */
    hwloc_bitmap_t mems;        /* where the memory of ranks on its cores is bound: itself when allowed,
                                 * else the nearest allowed domains with cores (never high bandwidth) */
    hwloc_bitmap_t hbm;         /* allowed high-bandwidth memory-only domains local to its CPUs */
    hwloc_bitmap_t core_ids;    /* logical indexes of every Core whose home it is, allowed or not:
                                 * Slurm's core ids (gres.conf Cores=, lstopo -l "Core L#") */
    int first_core;             /* its cores are topo_t.cores[first_core .. first_core+ncores-1] */
    int ncores;
    int nl3; /* L3 groups inside the domain, in core order */
    hwloc_bitmap_t *l3_cpus;
} topo_numa_t;

typedef struct topo_gpu {
    int index;     /* position in PCI bus id order, as CUDA_DEVICE_ORDER=PCI_BUS_ID */
    char name[32]; /* compute osdev (cuda0, rsmi2, opencl0d1); "" when hwloc saw none */
    char vendor[64];
    char model[64];              /* GPUModel of its cuda, nvml, rsmi or ze osdev, as Slurm's AutoDetect reads
                                  * it ("NVIDIA A100-SXM4-40GB"); "" when unknown */
    char render_node[16];        /* its DRM render node when hwloc saw one ("renderD128"), else "" */
    char pci[16];                /* 0000:11:00.0 */
    hwloc_bitmap_t numa;         /* OS indexes of the NUMA domains it is local to, allowed or not */
    hwloc_bitmap_t cpus;         /* allowed PUs of those domains */
    hwloc_bitmap_t nearest_cpus; /* those under its first non-I/O ancestor: fewer than cpus when that
                                  * is an L3 or a die inside a domain (Tioga), else the same */
} topo_gpu_t;

typedef enum { TOPO_NIC_INFINIBAND, TOPO_NIC_ETHERNET } topo_nic_kind_t;

typedef struct topo_nic {
    char name[32]; /* OpenFabrics osdev (mlx5_0) or network interface (eth0) */
    char pci[16];
    topo_nic_kind_t kind;
    hwloc_bitmap_t numa;
    hwloc_bitmap_t cpus;
} topo_nic_t;

/* The node as slurmd -C counts it (Slurm 22.05 xcpuinfo_hwloc_topo_get): every PU and core,
 * allowed or not; sockets are the packages holding cores, boards the Groups right under the root. */
typedef struct topo_slurm_counts {
    int boards;  /* 1 unless the root's children are Groups */
    int sockets; /* at least 1 */
    int cores;   /* Core objects, at least 1 */
    int cpus;    /* PU objects */
} topo_slurm_counts_t;

typedef struct topo {
    char source[256];      /* "this machine" or the XML path */
    char hostname[64];     /* the HostName hwloc recorded (uname -n where it ran); "" if none */
    uint64_t memory_bytes; /* every NUMA domain's memory, allowed or not */
    topo_slurm_counts_t slurm;
    int npackages;
    int ncores_total; /* every core hwloc reports, allowed or not */
    int npus_total;
    int npus_allowed;
    hwloc_bitmap_t unplaced; /* allowed PUs outside every NUMA domain: never planned */
    topo_numa_t *numa;       /* every NUMA node, sorted by OS index */
    int nnuma;
    topo_core_t *cores; /* plannable cores, grouped by domain, in hwloc order */
    int ncores;
    topo_gpu_t *gpus;
    int ngpus;
    topo_nic_t *nics;
    int nnics;
    topo_cpukind_t *kinds; /* hwloc's order, least performant first; none where hwloc knows none */
    int nkinds;
} topo_t;

/* Load the live machine (xml_path NULL or "") or an hwloc XML file. On error returns NULL and
 * writes a one-line reason into err. The environment variable COSCHED_TOPOLOGY is the caller's
 * business (see topo_source_from_env), so tests stay independent of the environment. */
topo_t *topo_load(const char *xml_path, char *err, size_t errlen);

/* Load an hwloc synthetic description ("pack:2 numa:4 l3:2 core:3 pu:2"): no I/O devices. */
topo_t *topo_load_synthetic(const char *description, char *err, size_t errlen);

/* The XML path to use: the explicit one if given, else $COSCHED_TOPOLOGY, else NULL (live). */
const char *topo_source_from_env(const char *explicit_path);

void topo_free(topo_t *topo);

/* Index into topo->numa of the domain with this OS index, or -1. */
int topo_numa_by_os_index(const topo_t *topo, unsigned os_index);

/* Append a GPU local to the given domains (tests of generated topologies, which have no I/O). */
int topo_add_gpu(topo_t *topo, const char *name, hwloc_const_bitmap_t numa_os);

#endif
