/* topo_devices: which PCI devices are GPUs and NICs, and which NUMA domains they are local to.
 * A GPU is what a compute runtime sees (cuda, rsmi, ze, nvml, opencl osdevs) or a compute board. */
#include "topo_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    PCI_VENDOR_NVIDIA = 0x10de,
    PCI_VENDOR_AMD = 0x1002,
    PCI_VENDOR_INTEL = 0x8086,
};

static const struct {
    unsigned id;
    const char *name;
} vendor_names[] = {
    {PCI_VENDOR_NVIDIA, "NVIDIA"}, {PCI_VENDOR_AMD, "AMD"}, {PCI_VENDOR_INTEL, "Intel"},
    {0x15b3, "Mellanox"},          {0x1a03, "ASPEED"},      {0x102b, "Matrox"},
    {0x14e4, "Broadcom"},          {0x17db, "HPE Cray"},    {0x1d0f, "Amazon"},
};

/* Runtimes that name compute devices, best first: the name users pass to their job. */
static const char *const compute_prefixes[] = {"cuda", "rsmi", "ze", "nvml", "opencl"};
enum { NPREFIXES = sizeof compute_prefixes / sizeof compute_prefixes[0] };

/* Rank of a compute osdev name (0 = best) or -1 if it is not one: prefix then a digit. */
static int compute_rank(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < NPREFIXES; i++) {
        size_t n = strlen(compute_prefixes[i]);
        if (strncmp(name, compute_prefixes[i], n) == 0 && name[n] >= '0' && name[n] <= '9')
            return i;
    }
    return -1;
}

static void vendor_name(hwloc_obj_t pci, char *out, size_t outlen)
{
    unsigned id = pci->attr->pcidev.vendor_id;
    for (size_t i = 0; i < sizeof vendor_names / sizeof vendor_names[0]; i++)
        if (vendor_names[i].id == id) {
            snprintf(out, outlen, "%s", vendor_names[i].name);
            return;
        }
    const char *info = hwloc_obj_get_info_by_name(pci, "PCIVendor");
    if (info && *info)
        snprintf(out, outlen, "%s", info);
    else
        snprintf(out, outlen, "0x%04x", id);
}

/* AMD device ids below this are ATI chips from before 2007 — the Rage XL (0x4752) and the
 * RN50 / ES1000 (0x515e, 0x5969) that servers carry as their BMC's VGA, old desktop boards — and
 * the graphics integrated in AMD's recent APUs (0x13xx to 0x17xx). Every AMD compute board has a
 * larger one: FirePro W9100 0x67a0, MI50 / Radeon Pro VII 0x66a1, MI100 0x738c, MI250X 0x7408,
 * MI300X 0x74a1. */
#define PCI_AMD_FIRST_COMPUTE_DEVICE 0x6000

/* A display controller without a compute osdev is a GPU only if it is a compute board:
 * - a 3D or "other display" controller from a GPU vendor (how NVIDIA and AMD present them now);
 * - a VGA controller from NVIDIA, which makes no BMC graphics;
 * - a VGA controller from AMD whose device id is that of a compute board. AMD boards older than
 *   CDNA present as VGA: LLNL Corona's four MI50 in its hwloc 1.x export are VGA 0x0300 with only
 *   DRM osdevs (card1, renderD128), while the ATI ES1000 on AMD and HP servers is VGA too. The
 *   device id is what separates them in every file: the DRM render node does not (the radeon
 *   driver gives the ES1000 one), nor the link (hwloc 1.x records 0 GB/s for every device when
 *   not run as root, and an idle AMD GPU may train its link down to one lane).
 * Other vendors' VGA controllers (ASPEED, Matrox: BMCs) and Intel's (integrated graphics) are
 * not GPUs; Intel's compute boards present as display controllers or have a ze osdev. */
static int looks_like_gpu_without_runtime(hwloc_obj_t pci)
{
    unsigned cls = pci->attr->pcidev.class_id, vendor = pci->attr->pcidev.vendor_id;
    int gpu_vendor = vendor == PCI_VENDOR_NVIDIA || vendor == PCI_VENDOR_AMD || vendor == PCI_VENDOR_INTEL;
    if (cls == 0x0302 || cls == 0x0380)
        return gpu_vendor;
    if (cls != 0x0300)
        return 0;
    if (vendor == PCI_VENDOR_AMD)
        return pci->attr->pcidev.device_id >= PCI_AMD_FIRST_COMPUTE_DEVICE;
    return vendor == PCI_VENDOR_NVIDIA;
}

static int is_network_class(unsigned cls)
{
    return (cls >> 8) == 0x02 || cls == 0x0c06; /* network controllers, old-style InfiniBand */
}

static void format_pci(hwloc_obj_t pci, char *out, size_t outlen)
{
    const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
    snprintf(out, outlen, "%04x:%02x:%02x.%01x", (unsigned)a->domain, (unsigned)a->bus, (unsigned)a->dev,
             (unsigned)a->func);
}

/* The domains a device is local to: those under its first non-I/O ancestor (a Package covers
 * all of its domains; an L3 or a die Group only its own). */
static void locality(const topo_t *t, hwloc_topology_t hw, hwloc_obj_t pci, hwloc_bitmap_t numa, hwloc_bitmap_t cpus)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(hw, pci);
    for (int i = 0; i < t->nnuma; i++) {
        const topo_numa_t *d = &t->numa[i];
        int local = anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset)
                        ? hwloc_bitmap_isset(anc->nodeset, d->os_index)
                        : hwloc_bitmap_intersects(anc->cpuset, d->node_cpuset);
        if (local) {
            hwloc_bitmap_set(numa, d->os_index);
            hwloc_bitmap_or(cpus, cpus, d->cpus);
        }
    }
}

/* What a PCI device's OS devices say about it. */
typedef struct pci_osdevs {
    const char *compute;     /* best-ranked compute osdev name */
    const char *model;       /* GPUModel of a compute osdev other than OpenCL */
    const char *render_node; /* renderDN */
    const char *fabric;      /* OpenFabrics device */
    const char *netif;       /* network interface */
} pci_osdevs_t;

static void read_osdevs(hwloc_obj_t pci, pci_osdevs_t *out)
{
    int best = NPREFIXES;
    for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling) {
        if (os->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        int r = compute_rank(os->name);
        if (r >= 0 && r < best) {
            best = r;
            out->compute = os->name;
        }
        /* OpenCL's GPUModel is a marketing or chip name ("Vega 20"), not what nvml or rsmi report. */
        const char *model = hwloc_obj_get_info_by_name(os, "GPUModel");
        if (model && *model && r >= 0 && strcmp(compute_prefixes[r], "opencl") != 0 && !out->model)
            out->model = model;
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && strncmp(os->name, "renderD", 7) == 0 && !out->render_node)
            out->render_node = os->name;
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !out->fabric)
            out->fabric = os->name;
        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !out->netif)
            out->netif = os->name;
    }
}

static int cmp_gpu_pci(const void *a, const void *b)
{
    return strcmp(((const topo_gpu_t *)a)->pci, ((const topo_gpu_t *)b)->pci);
}

static int cmp_nic_pci(const void *a, const void *b)
{
    return strcmp(((const topo_nic_t *)a)->pci, ((const topo_nic_t *)b)->pci);
}

static int add_gpu(topo_t *t, hwloc_topology_t hw, hwloc_obj_t pci, const pci_osdevs_t *os)
{
    topo_gpu_t *g = &t->gpus[t->ngpus++];
    snprintf(g->name, sizeof g->name, "%s", os->compute ? os->compute : "");
    snprintf(g->model, sizeof g->model, "%s", os->model ? os->model : "");
    snprintf(g->render_node, sizeof g->render_node, "%s", os->render_node ? os->render_node : "");
    vendor_name(pci, g->vendor, sizeof g->vendor);
    format_pci(pci, g->pci, sizeof g->pci);
    g->numa = hwloc_bitmap_alloc();
    g->cpus = hwloc_bitmap_alloc();
    locality(t, hw, pci, g->numa, g->cpus);
    /* The planner puts a GPU's ranks on these first. An ancestor whose CPUs are all disallowed
     * says nothing useful: then the whole local domains are nearest. */
    g->nearest_cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_and(g->nearest_cpus, g->cpus, hwloc_get_non_io_ancestor_obj(hw, pci)->cpuset);
    if (hwloc_bitmap_iszero(g->nearest_cpus))
        hwloc_bitmap_copy(g->nearest_cpus, g->cpus);
    return 0;
}

static int add_nic(topo_t *t, hwloc_topology_t hw, hwloc_obj_t pci, const char *name)
{
    topo_nic_t *n = &t->nics[t->nnics++];
    unsigned cls = pci->attr->pcidev.class_id;
    snprintf(n->name, sizeof n->name, "%s", name ? name : "");
    format_pci(pci, n->pci, sizeof n->pci);
    n->kind = cls == 0x0207 || cls == 0x0c06 ? TOPO_NIC_INFINIBAND : TOPO_NIC_ETHERNET;
    n->numa = hwloc_bitmap_alloc();
    n->cpus = hwloc_bitmap_alloc();
    locality(t, hw, pci, n->numa, n->cpus);
    return 0;
}

int topo_collect_devices(topo_t *t, hwloc_topology_t hw, char *err, size_t errlen)
{
    int npci = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PCI_DEVICE);
    t->gpus = calloc(npci > 0 ? (size_t)npci : 1, sizeof *t->gpus);
    t->nics = calloc(npci > 0 ? (size_t)npci : 1, sizeof *t->nics);
    if (!t->gpus || !t->nics) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(hw, NULL); pci; pci = hwloc_get_next_pcidev(hw, pci)) {
        pci_osdevs_t os = {0};
        read_osdevs(pci, &os);
        if (os.compute || looks_like_gpu_without_runtime(pci))
            add_gpu(t, hw, pci, &os);
        else if (os.fabric || os.netif || is_network_class(pci->attr->pcidev.class_id))
            add_nic(t, hw, pci, os.fabric ? os.fabric : os.netif);
    }
    qsort(t->gpus, (size_t)t->ngpus, sizeof *t->gpus, cmp_gpu_pci);
    qsort(t->nics, (size_t)t->nnics, sizeof *t->nics, cmp_nic_pci);
    for (int i = 0; i < t->ngpus; i++)
        t->gpus[i].index = i;
    return 0;
}

int topo_add_gpu(topo_t *t, const char *name, hwloc_const_bitmap_t numa_os)
{
    topo_gpu_t *grown = realloc(t->gpus, (size_t)(t->ngpus + 1) * sizeof *grown);
    if (!grown)
        return -1;
    t->gpus = grown;
    topo_gpu_t *g = &t->gpus[t->ngpus];
    memset(g, 0, sizeof *g);
    g->index = t->ngpus++;
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->vendor, sizeof g->vendor, "test");
    snprintf(g->pci, sizeof g->pci, "ffff:ff:%02x.0", g->index & 0xff);
    g->numa = hwloc_bitmap_alloc();
    g->cpus = hwloc_bitmap_alloc();
    for (int i = 0; i < t->nnuma; i++)
        if (hwloc_bitmap_isset(numa_os, t->numa[i].os_index)) {
            hwloc_bitmap_set(g->numa, t->numa[i].os_index);
            hwloc_bitmap_or(g->cpus, g->cpus, t->numa[i].cpus);
        }
    g->nearest_cpus = hwloc_bitmap_dup(g->cpus);
    return 0;
}
