/* cmd_topo: `cosched topo` — the node's NUMA domains, cores, L3 groups, GPUs and NICs,
 * as a table in the spirit of `nvidia-smi topo -m` or as JSON. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_parse.h"
#include "client.h"
#include "cpulist.h"
#include "json_out.h"
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

static void print_devices(const topo_t *t)
{
    if (t->ngpus + t->nnics == 0) {
        printf("No GPUs or NICs found.\n\n");
        return;
    }
    printf("%-7s %-11s %-13s %-11s %-6s %s\n", "DEVICE", "NAME", "PCI", "VENDOR/KIND", "NUMA", "CPU AFFINITY");
    for (int i = 0; i < t->ngpus; i++) {
        const topo_gpu_t *g = &t->gpus[i];
        char dev[16];
        snprintf(dev, sizeof dev, "GPU%d", g->index);
        printf("%-7s %-11s %-13s %-11s ", dev, *g->name ? g->name : "-", g->pci, g->vendor);
        print_list("%-6s ", g->numa);
        print_list("%s\n", g->cpus);
    }
    for (int i = 0; i < t->nnics; i++) {
        const topo_nic_t *n = &t->nics[i];
        char dev[16];
        snprintf(dev, sizeof dev, "NIC%d", i);
        printf("%-7s %-11s %-13s %-11s ", dev, *n->name ? n->name : "-", n->pci,
               n->kind == TOPO_NIC_INFINIBAND ? "infiniband" : "ethernet");
        print_list("%-6s ", n->numa);
        print_list("%s\n", n->cpus);
    }
    printf("\n");
}

static void print_device_refs(const topo_t *t, unsigned numa_os)
{
    int printed = 0;
    for (int i = 0; i < t->ngpus; i++)
        if (hwloc_bitmap_isset(t->gpus[i].numa, numa_os))
            printed += printf("%sGPU%d", printed ? "," : "", t->gpus[i].index) > 0;
    for (int i = 0; i < t->nnics; i++)
        if (hwloc_bitmap_isset(t->nics[i].numa, numa_os))
            printed += printf("%sNIC%d", printed ? "," : "", i) > 0;
    printf("%s\n", printed ? "" : "-");
}

static void print_domains(const topo_t *t)
{
    printf("%-5s %-4s %-6s %-10s %-20s %-27s %s\n", "NUMA", "PKG", "CORES", "MEMORY", "CPUS", "L3 GROUPS", "DEVICES");
    for (int i = 0; i < t->nnuma; i++) {
        const topo_numa_t *d = &t->numa[i];
        char mem[32], pkg[16], l3[512] = "-";
        format_bytes(d->memory_bytes, mem, sizeof mem);
        snprintf(pkg, sizeof pkg, d->package < 0 ? "-" : "%d", d->package);
        size_t len = 0;
        for (int g = 0; g < d->nl3 && len < sizeof l3; g++) {
            char *s = cpulist_format(d->l3_cpus[g]);
            len += (size_t)snprintf(l3 + len, sizeof l3 - len, "%s%s", g ? " | " : "", s ? s : "?");
            free(s);
        }
        printf("%-5u %-4s %-6d %-10s ", d->os_index, pkg, d->ncores, mem);
        print_list("%-20s ", d->cpus);
        printf("%-27s ", l3);
        print_device_refs(t, d->os_index);
    }
}

/* A hybrid CPU's kinds, fastest first: the order trainer ranks take cores in (noise the reverse).
 * One kind (many Linux exports have one, holding every PU) says nothing the domains do not. */
static void print_kinds(const topo_t *t)
{
    if (t->nkinds < 2)
        return;
    printf("\n%-5s %-11s %-10s %-6s %-6s %s\n", "KIND", "EFFICIENCY", "CORE TYPE", "CORES", "NUMA", "CPUS");
    for (int k = t->nkinds - 1; k >= 0; k--) {
        const topo_cpukind_t *kind = &t->kinds[k];
        char eff[16];
        snprintf(eff, sizeof eff, kind->efficiency < 0 ? "unknown" : "%d", kind->efficiency);
        printf("%-5d %-11s %-10s %-6d ", k, eff, *kind->core_type ? kind->core_type : "-", kind->ncores);
        print_list("%-6s ", kind->numa);
        print_list("%s\n", kind->cpus);
    }
    if (t->kinds[0].efficiency < 0)
        printf("hwloc cannot rank these kinds: the planner treats every core alike.\n");
    else
        printf("Trainer ranks take the fastest kind first, noise the slowest.\n");
}

static void print_table(const topo_t *t)
{
    printf("Topology of %s: %d package%s, %d cores, %d PUs (%d allowed), %d NUMA domain%s, %d GPU%s, %d NIC%s\n\n",
           t->source, t->npackages, t->npackages == 1 ? "" : "s", t->ncores_total, t->npus_total, t->npus_allowed,
           t->nnuma, t->nnuma == 1 ? "" : "s", t->ngpus, t->ngpus == 1 ? "" : "s", t->nnics, t->nnics == 1 ? "" : "s");
    print_devices(t);
    print_domains(t);
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
        return fail("%s", err);
    rc = EXIT_OK;
    if (json)
        rc = print_json(topo_to_json(t));
    else
        print_table(t);
    topo_free(t);
    return rc;
}
