/* cmd_slurm_conf: `cosched slurm-conf` — the node's slurm.conf NodeName line as slurmd -C prints it,
 * its gres.conf GPU lines in Slurm's core numbering, and the settings that keep jobs GPU-local. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "cpulist.h"
#include "json_out.h"
#include "topo.h"

/* Where each line goes and what it does for GPU-local, confined jobs. */
static const struct setting {
    const char *file, *line, *why;
} settings[] = {
    {"slurm.conf", "GresTypes=gpu", "GPUs are a resource Slurm allocates"},
    {"slurm.conf", "SelectType=select/cons_tres", "GPUs are allocated with the cores near them"},
    {"slurm.conf", "SelectTypeParameters=CR_Core_Memory", "jobs get whole cores and their memory"},
    {"slurm.conf", "TaskPlugin=task/cgroup,task/affinity", "tasks confined to their cores, bound there"},
    {"slurm.conf", "ProctrackType=proctrack/cgroup", "every process of a job in its cgroup"},
    {"cgroup.conf", "ConstrainCores=yes", "a job runs only on the cores it was given"},
    {"cgroup.conf", "ConstrainDevices=yes", "a job opens only the GPUs it was given"},
    {"sbatch/srun", "--gres-flags=enforce-binding", "a job's cores come from its GPUs' Cores="},
    {"slurm.conf", "Prolog=/usr/lib/cosched/slurm/prolog", "registers the job with coschedd"},
    {"slurm.conf", "Epilog=/usr/lib/cosched/slurm/epilog", "releases it and stops its runs"},
    {"slurm.conf", "TaskProlog=/usr/lib/cosched/slurm/taskprolog", "cosched's hook in each task"},
    {"slurm.conf", "PrologFlags=Alloc,Contain", "prolog at allocation, in the job's cgroup"},
    {"slurm.conf", "PrologEpilogTimeout=30", "a stuck daemon cannot hold a job for long"},
};
enum { NSETTINGS = sizeof settings / sizeof settings[0], HOOKS_FROM = 8 };

/* One gres.conf line and what it was made from. */
typedef struct gres_gpu {
    const topo_gpu_t *gpu;
    char file[64];
    char type[64]; /* "" when the model is unknown: no Type= */
    char *cores;   /* Slurm core ids of its domains, "" when they have none */
    char *cpus;    /* the OS CPU numbers of those domains, for the comment */
    char *line;
} gres_gpu_t;

void cmd_slurm_conf_help(FILE *out)
{
    fprintf(out,
            "Print this node's Slurm configuration: the slurm.conf NodeName line, one gres.conf line per\n"
            "GPU with the cores of its NUMA domain, and (as comments) the settings that keep Slurm's own\n"
            "choices GPU-local and confined, with cosched's prolog and epilog. No daemon needed.\n\n"
            "  --topology FILE  an hwloc XML file instead of this machine (default: $COSCHED_TOPOLOGY);\n"
            "                   its HostName names the node (else NODE), its NUMA memory is RealMemory\n"
            "  --json           {\"node_name\", \"node_line\", \"gres\": [{\"gpu\", \"file\", \"cores\", \"numa\",\n"
            "                   \"pci\", \"type\", \"line\"}], \"settings\": [{\"file\", \"setting\", \"why\"}]}\n"
            "  -h, --help       show this help\n\n"
            "NodeName= counts as slurmd -C does: every PU and core, allowed or not; sockets are the packages\n"
            "holding cores. RealMemory in MiB: this machine's from sysconf as slurmd computes it, a file's\n"
            "from the memory of its NUMA domains. Gres=gpu:N when the node has GPUs.\n\n"
            "Numbering in gres.conf:\n"
            "  Cores=  Slurm's core ids: logical core indexes (lstopo -l \"Core L#\"), 0 to cores-1 socket by\n"
            "          socket over every core of the node; not the OS CPU numbers of taskset, /proc and\n"
            "          cosched plan. A GPU's cores are all those of its NUMA domains.\n"
            "  GPUs    in PCI bus id order, as AutoDetect=nvml and CUDA_DEVICE_ORDER=PCI_BUS_ID number them.\n"
            "          File=/dev/nvidiaN for the N-th NVIDIA GPU from 0: N must be its minor number\n"
            "          (nvidia-smi -q | grep Minor). Other GPUs: the render node hwloc saw, else\n"
            "          /dev/dri/renderD<128+N>.\n"
            "  Type=   the model as AutoDetect names it (lower case, '_' for spaces), when hwloc knows it.\n"
            "Exit status: 0 ok, 1 the topology cannot be read, 2 usage.\n");
}

/* The short host name, as slurmd's gethostname_short: up to the first dot. */
static void node_name(const topo_t *t, int live, char *out, size_t outlen)
{
    char host[256] = "";
    if (live)
        gethostname(host, sizeof host - 1);
    else
        snprintf(host, sizeof host, "%s", t->hostname);
    host[strcspn(host, ".")] = '\0';
    snprintf(out, outlen, "%s", *host ? host : "NODE");
}

/* MiB. Live: slurmd's get_memory() to the bit, float included, so large nodes round as it does. */
static unsigned long long real_memory_mib(const topo_t *t, int live)
{
    long pages = live ? sysconf(_SC_PHYS_PAGES) : -1, page_size = sysconf(_SC_PAGE_SIZE);
    if (pages < 1 || page_size < 1)
        return (unsigned long long)(t->memory_bytes >> 20);
    return (unsigned long long)((float)pages * ((double)page_size / 1048576.0));
}

static void warn_uneven(long long a, const char *what_a, long long b, const char *what_b)
{
    if (b > 0 && a % b != 0)
        fprintf(stderr,
                "cosched: warning: %lld %s are not a multiple of %lld %s; slurmd -C rounds down the same way,"
                " check the NodeName line by hand\n",
                a, what_a, b, what_b);
}

static void format_node_line(const topo_t *t, const char *name, int live, char *out, size_t outlen)
{
    const topo_slurm_counts_t *s = &t->slurm;
    warn_uneven(s->sockets, "sockets", s->boards, "boards");
    warn_uneven(s->cores, "cores", s->sockets, "sockets");
    warn_uneven(s->cpus, "CPUs", s->cores, "cores");
    int n = snprintf(out, outlen,
                     "NodeName=%s CPUs=%d Boards=%d SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d"
                     " RealMemory=%llu",
                     name, s->cpus, s->boards, s->sockets / s->boards, s->cores / s->sockets, s->cpus / s->cores,
                     real_memory_mib(t, live));
    if (t->ngpus > 0 && n > 0 && (size_t)n < outlen)
        snprintf(out + n, outlen - (size_t)n, " Gres=gpu:%d", t->ngpus);
}

static int is_nvidia(const topo_gpu_t *g)
{
    return strcmp(g->vendor, "NVIDIA") == 0;
}

/* NVIDIA's driver names /dev/nvidiaN by minor number, DRM drivers /dev/dri/renderD<128+N>: N counts
 * the GPUs of that kind before this one in PCI order. */
static void device_file(const topo_t *t, int i, char *out, size_t outlen)
{
    const topo_gpu_t *g = &t->gpus[i];
    int before = 0;
    for (int k = 0; k < i; k++)
        before += is_nvidia(&t->gpus[k]) == is_nvidia(g);
    if (is_nvidia(g))
        snprintf(out, outlen, "/dev/nvidia%d", before);
    else if (*g->render_node)
        snprintf(out, outlen, "/dev/dri/%s", g->render_node);
    else
        snprintf(out, outlen, "/dev/dri/renderD%d", 128 + before);
}

/* AutoDetect's name for the model: lower case, '_' for spaces ("nvidia_a100-sxm4-40gb"). */
static void type_slug(const char *model, char *out, size_t outlen)
{
    size_t n = 0;
    for (; model[n] && n + 1 < outlen; n++)
        out[n] = model[n] == ' ' ? '_' : (char)tolower((unsigned char)model[n]);
    out[n] = '\0';
}

/* The core ids and CPUs of the GPU's domains, allowed or not: gres.conf describes the node. A
 * memory-only domain beside them (HBM, CXL memory under the package) adds no core of its own. */
static int domains_of(const topo_t *t, gres_gpu_t *r)
{
    hwloc_bitmap_t ids = hwloc_bitmap_alloc(), cpus = hwloc_bitmap_alloc();
    for (int d = 0; ids && cpus && d < t->nnuma; d++)
        if (hwloc_bitmap_isset(r->gpu->numa, t->numa[d].os_index) && !t->numa[d].memory_only) {
            hwloc_bitmap_or(ids, ids, t->numa[d].core_ids);
            hwloc_bitmap_or(cpus, cpus, t->numa[d].node_cpuset);
        }
    r->cores = ids ? cpulist_format(ids) : NULL;
    r->cpus = cpus ? cpulist_format(cpus) : NULL;
    hwloc_bitmap_free(ids);
    hwloc_bitmap_free(cpus);
    return r->cores && r->cpus ? 0 : -1;
}

static void free_gres(gres_gpu_t *gres, int n)
{
    for (int i = 0; gres && i < n; i++) {
        free(gres[i].cores);
        free(gres[i].cpus);
        free(gres[i].line);
    }
    free(gres);
}

static gres_gpu_t *make_gres(const topo_t *t)
{
    gres_gpu_t *gres = calloc(t->ngpus > 0 ? (size_t)t->ngpus : 1, sizeof *gres);
    for (int i = 0; gres && i < t->ngpus; i++) {
        gres_gpu_t *r = &gres[i];
        r->gpu = &t->gpus[i];
        device_file(t, i, r->file, sizeof r->file);
        type_slug(r->gpu->model, r->type, sizeof r->type);
        /* A GPU whose domains hold no core gets no Cores=: any core may use it. */
        if (domains_of(t, r) < 0 || asprintf(&r->line, "Name=gpu%s%s File=%s%s%s", *r->type ? " Type=" : "", r->type,
                                             r->file, *r->cores ? " Cores=" : "", r->cores) < 0) {
            r->line = NULL;
            free_gres(gres, i + 1);
            return NULL;
        }
    }
    return gres;
}

static void print_gres_notes(const topo_t *t)
{
    int nvidia = 0;
    for (int i = 0; i < t->ngpus; i++)
        nvidia += is_nvidia(&t->gpus[i]);
    printf("# gres.conf: each GPU with the cores of its NUMA domain.\n"
           "# Cores= are Slurm's core ids: logical core indexes (lstopo -l \"Core L#\"), 0-%d socket by\n"
           "#   socket, not the OS CPU numbers of taskset, /proc and cosched plan.\n"
           "# GPUs are in PCI bus id order, as AutoDetect=nvml and CUDA_DEVICE_ORDER=PCI_BUS_ID number them.\n",
           t->slurm.cores - 1);
    if (nvidia)
        printf("# /dev/nvidiaN must be that GPU: N is the driver's minor number (nvidia-smi -q | grep Minor),\n"
               "#   which usually but not always follows PCI order.\n");
    if (nvidia < t->ngpus)
        printf("# /dev/dri/renderDN must be that GPU: ls -l /sys/class/drm/renderD*/device shows each one's PCI id.\n");
}

static void print_text(const topo_t *t, const char *name, const char *node_line, const gres_gpu_t *gres)
{
    printf("# cosched slurm-conf for %s, from %s\n\n", name, t->source);
    printf("# slurm.conf: the node as slurmd -C counts it. RealMemory is all its memory in MiB:\n"
           "#   lower it to keep some for the OS.\n%s\n\n",
           node_line);
    if (t->ngpus == 0) {
        printf("# gres.conf: no GPUs on this node.\n\n");
    } else {
        print_gres_notes(t);
        for (int i = 0; i < t->ngpus; i++) {
            char *numa = cpulist_format(gres[i].gpu->numa);
            printf("# GPU%d %s on NUMA %s (CPUs %s)\n%s\n", i, gres[i].gpu->pci, numa ? numa : "?",
                   *gres[i].cpus ? gres[i].cpus : "-", gres[i].line);
            free(numa);
        }
        printf("\n");
    }
    printf("# Settings that keep Slurm's own choices GPU-local and confined:\n");
    for (int i = 0; i < NSETTINGS; i++) {
        if (i == HOOKS_FROM)
            printf("# cosched's hooks:\n");
        printf("#   %-12s %-45s %s\n", settings[i].file, settings[i].line, settings[i].why);
    }
}

static json_t *to_json(const topo_t *t, const char *name, const char *node_line, const gres_gpu_t *gres)
{
    json_t *gpus = json_array(), *lines = json_array();
    for (int i = 0; i < t->ngpus; i++)
        json_array_append_new(gpus,
                              json_pack("{s:i, s:s, s:s, s:o, s:s, s:o, s:s}", "gpu", i, "file", gres[i].file, "cores",
                                        gres[i].cores, "numa", json_from_bitmap(gres[i].gpu->numa), "pci",
                                        gres[i].gpu->pci, "type",
                                        *gres[i].type ? json_string(gres[i].type) : json_null(), "line", gres[i].line));
    for (int i = 0; i < NSETTINGS; i++)
        json_array_append_new(lines, json_pack("{s:s, s:s, s:s}", "file", settings[i].file, "setting", settings[i].line,
                                               "why", settings[i].why));
    return json_pack("{s:s, s:s, s:o, s:o}", "node_name", name, "node_line", node_line, "gres", gpus, "settings",
                     lines);
}

int cmd_slurm_conf(const client_opts_t *o, int argc, char **argv)
{
    const char *xml;
    int json, rc = cmd_topo_options("slurm-conf", o, argc, argv, &xml, &json);
    if (rc >= 0)
        return rc;

    char err[512], name[64], node_line[512];
    const char *source = topo_source_from_env(xml);
    topo_t *t = topo_load(source, err, sizeof err);
    if (!t)
        return output_fail("%s", err);
    rc = EXIT_OK;
    gres_gpu_t *gres = make_gres(t);
    if (!gres) {
        rc = output_fail("out of memory");
    } else {
        node_name(t, source == NULL, name, sizeof name);
        format_node_line(t, name, source == NULL, node_line, sizeof node_line);
        if (json)
            rc = output_print_json(to_json(t, name, node_line, gres));
        else
            print_text(t, name, node_line, gres);
    }
    free_gres(gres, t->ngpus);
    topo_free(t);
    return rc;
}
