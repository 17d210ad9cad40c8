/* topo_internal: the steps of topo_load shared between its files; not for other components. */
#ifndef COSCHED_TOPO_INTERNAL_H
#define COSCHED_TOPO_INTERNAL_H

#include "topo.h"

/* Find GPUs and NICs among hwloc's PCI devices and attach them to the model's domains. */
int topo_collect_devices(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen);

/* hwloc's CPU kinds, and each plannable core's kind and performance rank. */
int topo_collect_kinds(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen);
void topo_free_kinds(topo_t *t);

/* The most local domain (index into t->numa) whose CPUs contain pu, or -1. */
int topo_numa_of_pu(const topo_t *t, int pu);

/* The node as a whole: host name, memory, slurmd's counts and each domain's Slurm core ids. */
void topo_describe_node(topo_t *t, hwloc_topology_t hw);

/* A new hwloc topology with cosched's flags and filters, not loaded yet; NULL on failure. */
hwloc_topology_t topo_open_hwloc(void);

/* Load hw (set to the XML file at path, not loaded yet) in a child process first; -1 with err
 * set when hwloc crashed there, 0 otherwise (loads, refuses with a reason the real load will
 * give, or no child to spare). hw itself stays unloaded. */
int topo_xml_probe(hwloc_topology_t hw, const char *path, char *err, size_t errlen);

/* After hwloc refused the XML file at path: -1 with err set when the file's format is newer than
 * this hwloc reads (what it is, what this hwloc reads, how to export a readable one), else 0. */
int topo_xml_explain_refusal(const char *path, char *err, size_t errlen);

#endif
