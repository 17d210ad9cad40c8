/* cmd_topo: `cosched topo` — the node's NUMA domains, cores, L3 groups, GPUs and NICs,
 * as a table in the spirit of `nvidia-smi topo -m` or as JSON. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_parse.h"
#include "client.h"
#include "cpulist.h"
#include "json_out.h"
#include "table.h"
#include "topo.h"

void cmd_topo_help(FILE *out)
{
    fprintf(out, "Show what the planner sees: NUMA domains (cores, CPUs, L3 groups, memory) and the\n"
                 "GPUs and NICs local to each.\n\n"
                 "  --topology FILE  read an hwloc XML file (lstopo FILE.xml) instead of this machine;\n"
                 "                   default: $COSCHED_TOPOLOGY if set\n"
                 "  --json           print JSON (schema in docs/cosched.md)\n"
                 "  -h, --help       show this help\n");
}

static void print_list(const char *label, hwloc_const_bitmap_t set)
{
    char *s = cpulist_format(set);
    printf(label, s && *s ? s : "-");
    free(s);
}

/* A bitmap as a cpulist cell ("18-23,66-71"); the caller frees it. */
static char *list_cell(hwloc_const_bitmap_t set)
{
    return cpulist_format(set);
}

static void device_row(table_t *tab, const char *dev, const char *name, const char *pci, const char *vendor,
                       hwloc_const_bitmap_t numa, hwloc_const_bitmap_t cpus)
{
    char *n = list_cell(numa), *c = list_cell(cpus);
    table_row(tab, dev, name, pci, vendor, n, c);
    free(n);
    free(c);
}

static void print_devices(const topo_t *t)
{
    if (t->ngpus + t->nnics == 0) {
        printf("No GPUs or NICs found.\n\n");
        return;
    }
    table_t tab;
    table_init(&tab, 6);
    table_row(&tab, "DEVICE", "NAME", "PCI", "VENDOR/KIND", "NUMA", "CPU AFFINITY");
    for (int i = 0; i < t->ngpus; i++) {
        const topo_gpu_t *g = &t->gpus[i];
        char dev[16];
        snprintf(dev, sizeof dev, "GPU%d", g->index);
        device_row(&tab, dev, g->name, g->pci, g->vendor, g->numa, g->cpus);
    }
    for (int i = 0; i < t->nnics; i++) {
        const topo_nic_t *n = &t->nics[i];
        char dev[16];
        snprintf(dev, sizeof dev, "NIC%d", i);
        device_row(&tab, dev, n->name, n->pci, n->kind == TOPO_NIC_INFINIBAND ? "infiniband" : "ethernet", n->numa,
                   n->cpus);
    }
    table_print(&tab, stdout);
    table_free(&tab);
    printf("\n");
}

/* "GPU0,NIC0": the devices local to a domain, "" when none. */
static void device_refs(const topo_t *t, unsigned numa_os, char *out, size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < t->ngpus && len < outlen; i++)
        if (hwloc_bitmap_isset(t->gpus[i].numa, numa_os))
            len += (size_t)snprintf(out + len, outlen - len, "%sGPU%d", len ? "," : "", t->gpus[i].index);
    for (int i = 0; i < t->nnics && len < outlen; i++)
        if (hwloc_bitmap_isset(t->nics[i].numa, numa_os))
            len += (size_t)snprintf(out + len, outlen - len, "%sNIC%d", len ? "," : "", i);
}

/* "0-2,48-50 | 3-5,51-53": a domain's L3 groups. */
static void l3_groups(const topo_numa_t *d, char *out, size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    for (int g = 0; g < d->nl3 && len < outlen; g++) {
        char *s = cpulist_format(d->l3_cpus[g]);
        len += (size_t)snprintf(out + len, outlen - len, "%s%s", g ? " | " : "", s ? s : "?");
        free(s);
    }
}

static void print_domains(const topo_t *t)
{
    table_t tab;
    table_init(&tab, 7);
    table_row(&tab, "NUMA", "PKG", "CORES", "MEMORY", "CPUS", "L3 GROUPS", "DEVICES");
    for (int i = 0; i < t->nnuma; i++) {
        const topo_numa_t *d = &t->numa[i];
        char numa[16], cores[16], mem[32], l3[2048], devices[1024];
        snprintf(numa, sizeof numa, "%u", d->os_index);
        snprintf(cores, sizeof cores, "%d", d->ncores);
        output_format_bytes(d->memory_bytes, mem, sizeof mem);
        l3_groups(d, l3, sizeof l3);
        device_refs(t, d->os_index, devices, sizeof devices);
        char *pkgs = list_cell(d->packages), *cpus = list_cell(d->cpus);
        table_row(&tab, numa, pkgs, cores, mem, cpus, l3, devices);
        free(pkgs);
        free(cpus);
    }
    table_print(&tab, stdout);
    table_free(&tab);
}

static const char *plural(int n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* The domains whose memory is special: memory-only ones (HBM, MCDRAM, CXL, GPU memory) with the
 * CPUs hwloc makes them local to, and those whose memory a cgroup forbids (cpuset.mems). */
static void print_memory_notes(const topo_t *t)
{
    table_t tab;
    table_init(&tab, 5);
    table_row(&tab, "NUMA", "KIND", "MEMORY", "LOCAL CPUS", "BESIDE");
    for (int i = 0; i < t->nnuma; i++) {
        const topo_numa_t *d = &t->numa[i];
        if (!d->memory_only)
            continue;
        char numa[16], mem[32];
        snprintf(numa, sizeof numa, "%u", d->os_index);
        output_format_bytes(d->memory_bytes, mem, sizeof mem);
        hwloc_bitmap_t beside = hwloc_bitmap_alloc();
        for (int k = 0; k < t->nnuma; k++)
            if (!t->numa[k].memory_only && hwloc_bitmap_intersects(t->numa[k].node_cpuset, d->node_cpuset))
                hwloc_bitmap_set(beside, t->numa[k].os_index);
        char *local = list_cell(d->local_cpus), *near = list_cell(beside);
        table_row(&tab, numa, d->kind, mem, local, near);
        free(local);
        free(near);
        hwloc_bitmap_free(beside);
    }
    if (tab.nrows > 1) {
        printf("\nMemory-only NUMA domains (no core's home; local to the CPUs hwloc gives them):\n");
        table_print(&tab, stdout);
    }
    table_free(&tab);
    int header = 0;
    for (int i = 0; i < t->nnuma; i++) {
        const topo_numa_t *d = &t->numa[i];
        if (d->mem_allowed)
            continue;
        if (!header++)
            printf("\nMemory not allowed here (cpuset.mems), never bound:\n");
        printf("  NUMA %u: ", d->os_index);
        if (d->ncores > 0)
            print_list("ranks on its allowed CPUs bind their memory to NUMA %s\n", d->mems);
        else
            printf("%s\n", d->memory_only ? "memory-only" : "no allowed CPUs either");
    }
}

/* A hybrid CPU's kinds, fastest first: the order trainer ranks take cores in (noise the reverse).
 * One kind (many Linux exports have one, holding every PU) says nothing the domains do not. */
static void print_kinds(const topo_t *t)
{
    if (t->nkinds < 2)
        return;
    table_t tab;
    table_init(&tab, 6);
    table_row(&tab, "KIND", "EFFICIENCY", "CORE TYPE", "CORES", "NUMA", "CPUS");
    for (int k = t->nkinds - 1; k >= 0; k--) {
        const topo_cpukind_t *kind = &t->kinds[k];
        char index[16], eff[16], cores[16];
        snprintf(index, sizeof index, "%d", k);
        snprintf(eff, sizeof eff, kind->efficiency < 0 ? "unknown" : "%d", kind->efficiency);
        snprintf(cores, sizeof cores, "%d", kind->ncores);
        char *numa = list_cell(kind->numa), *cpus = list_cell(kind->cpus);
        table_row(&tab, index, eff, kind->core_type, cores, numa, cpus);
        free(numa);
        free(cpus);
    }
    printf("\n");
    table_print(&tab, stdout);
    table_free(&tab);
    if (t->kinds[0].efficiency < 0)
        printf("hwloc cannot rank these kinds: the planner treats every core alike.\n");
    else
        printf("Trainer ranks take the fastest kind first, noise the slowest.\n");
}

static void print_table(const topo_t *t)
{
    printf("Topology of %s: %d %s, %d %s, %d %s (%d allowed), %d NUMA %s, %d %s, %d %s\n\n", t->source, t->npackages,
           plural(t->npackages, "package", "packages"), t->ncores_total, plural(t->ncores_total, "core", "cores"),
           t->npus_total, plural(t->npus_total, "PU", "PUs"), t->npus_allowed, t->nnuma,
           plural(t->nnuma, "domain", "domains"), t->ngpus, plural(t->ngpus, "GPU", "GPUs"), t->nnics,
           plural(t->nnics, "NIC", "NICs"));
    print_devices(t);
    print_domains(t);
    print_memory_notes(t);
    print_kinds(t);
    if (!hwloc_bitmap_iszero(t->unplaced))
        print_list("\nCPUs outside every NUMA domain (never planned): %s\n", t->unplaced);
}

typedef struct {
    const char **xml;
    int *json;
} topo_options_t;

static int set_topo_option(void *ctx, cli_option_id_t option, const char *value)
{
    topo_options_t *t = ctx;
    if (option == CLI_O_TOPOLOGY)
        *t->xml = value;
    else
        *t->json = 1;
    return 0;
}

int cmd_topo_options(const char *path, const client_opts_t *o, int argc, char **argv, const char **xml, int *json)
{
    topo_options_t t = {xml, json};
    *xml = NULL;
    *json = o->json;
    return cli_parse_only(path, argc, argv, set_topo_option, &t);
}

int cmd_topo(const client_opts_t *o, int argc, char **argv)
{
    const char *xml;
    int json, rc = cmd_topo_options("topo", o, argc, argv, &xml, &json);
    if (rc >= 0)
        return rc;

    char err[512];
    topo_t *t = topo_load(topo_source_from_env(xml), err, sizeof err);
    if (!t)
        return output_fail("%s", err);
    rc = EXIT_OK;
    if (json)
        rc = output_print_json(topo_to_json(t));
    else
        print_table(t);
    topo_free(t);
    return rc;
}
