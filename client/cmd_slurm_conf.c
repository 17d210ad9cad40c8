/* cmd_slurm_conf: `cosched slurm-conf` — the node's slurm.conf NodeName line as slurmd -C prints it,
 * its gres.conf GPU lines in Slurm's core numbering, and the harvest recipe (slurm_recipe.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_parse.h"
#include "client.h"
#include "cpulist.h"
#include "json_out.h"
#include "slurm_check.h"
#include "slurm_recipe.h"
#include "topo.h"

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
    fprintf(
        out,
        "Print the Slurm recipe for this node: its NodeName line, one gres.conf line per GPU with the\n"
        "cores of its NUMA domain, and the settings of a cluster whose CPU jobs use the cores its GPU\n"
        "jobs leave idle: a GPU partition and an overlapping harvest partition on the same nodes, the\n"
        "harvest partition preempted (requeued, after a grace time) by the GPU one and bounded to the\n"
        "cores the planner leaves to co-tenants, memory defaults and a reserve for the system, cgroup\n"
        "confinement, cosched's prolog and epilog as links in prolog.d / epilog.d. Every line says why.\n"
        "No daemon needed. docs/slurm.md, \"Deploying on a cluster\", explains the whole recipe.\n\n"
        "  --topology FILE         an hwloc XML file instead of this machine (default: $COSCHED_TOPOLOGY);\n"
        "                          its HostName names the node (else NODE), its NUMA memory is RealMemory\n"
        "  --nodes LIST            the partitions' Nodes= (a Slurm host list; default: this node's name)\n"
        "  --gpu-partition NAME    the GPU jobs' partition (default: gpu)\n"
        "  --harvest-partition NAME  the CPU jobs' partition on the GPU nodes (default: harvest)\n"
        "  --slurm-version X.Y     the cluster's Slurm (default: scontrol --version); RestrictedCoresPerGPU\n"
        "                          is in the NodeName line from 24.05, a comment before and when unknown\n"
        "  --grace SECONDS         the harvest partition's GraceTime (default: 120): SIGTERM, then this long\n"
        "                          to checkpoint before the job is requeued\n"
        "  --mem-spec MIB          MemSpecLimit, the memory no job gets (default: a 32nd of the node,\n"
        "                          at least 2 GiB, at most 16 GiB, at most a quarter)\n"
        "  --check                 read the running cluster (scontrol show config, scontrol -o show partition,\n"
        "                          scontrol -o show node) and say, point by point, what holds, what is\n"
        "                          missing and what contradicts the recipe\n"
        "  --from DIR              with --check: DIR's files config, partitions and nodes, those outputs saved\n"
        "  --json                  the recipe: {\"node_name\", \"node_line\", \"slurm_version\", \"version_from\",\n"
        "                          \"gpu_partition\", \"harvest_partition\", \"split\", \"no_harvest\", \"gres\",\n"
        "                          \"settings\": [{\"file\", \"setting\", \"why\", \"comment\"}]}; with --check\n"
        "                          {\"findings\": [{\"point\", \"status\", \"grave\", \"detail\"}], \"grave\", ...}\n"
        "  -h, --help              show this help\n\n"
        "The split: `cosched plan`'s default plan (policy exclusive, one rank per GPU). MaxCPUsPerNode is\n"
        "the CPUs, threads included, of the cores it leaves to co-tenants, less one of those cores given\n"
        "to the system (CpuSpecList, Slurm's abstract CPU ids) where they are 4 or more;\n"
        "RestrictedCoresPerGPU the fewest cores of a GPU's rank. Memory: what the system does not keep,\n"
        "evenly per CPU; DefMemPerCPU on the harvest partition, DefMemPerGPU (the rest, per GPU) on the\n"
        "GPU partition: Slurm takes one of the two per partition.\n\n"
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
        "Exit status: 0 ok (--check: nothing lets a co-tenant run unguarded or starve a GPU job), 1 the\n"
        "topology or the cluster cannot be read, or --check found such a point (marked (!)), 2 usage.\n");
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

/* Where the Slurm version came from, for the header and --json. */
typedef struct version_source {
    slurm_version_t version;
    char from[64]; /* "--slurm-version", "scontrol --version", "unknown" */
} version_source_t;

/* --slurm-version, else what this host's scontrol says it is; unknown leaves 24.05's lines as comments. */
static int find_slurm_version(const char *given, version_source_t *v)
{
    memset(v, 0, sizeof *v);
    if (given) {
        if (slurm_version_parse(given, &v->version) < 0)
            return output_usage_error("slurm-conf",
                                      "--slurm-version needs a release such as 22.05 or 24.11.5, not '%s'", given);
        snprintf(v->from, sizeof v->from, "--slurm-version");
        return -1;
    }
    snprintf(v->from, sizeof v->from, "unknown");
    FILE *p = popen("scontrol --version 2>/dev/null", "r");
    char line[128] = "";
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = '\0';
        pclose(p);
    }
    if (*line && slurm_version_parse(line, &v->version) == 0)
        snprintf(v->from, sizeof v->from, "scontrol --version");
    return -1;
}

static void print_lines(const slurm_recipe_t *r, recipe_place_t place, const char *indent)
{
    for (int i = 0; i < r->nlines; i++) {
        const recipe_line_t *l = &r->lines[i];
        if (l->place != place)
            continue;
        if (place == RECIPE_PARTITION)
            printf("# %s\n%s%s\n", l->why, l->comment ? "# " : "", l->line);
        else if (place == RECIPE_NODE)
            printf("#   %s: %s%s\n", l->line, l->why, l->comment ? " (not in the line above)" : "");
        else
            printf("%s%-44s # %s\n", l->comment ? "# " : indent, l->line, l->why);
    }
}

static void print_split(const slurm_recipe_t *r, const recipe_choices_t *c)
{
    const recipe_split_t *s = &r->split;
    printf("# The planner's split of this node (policy exclusive, one rank per GPU, isolation %s):\n"
           "#   GPU jobs: %d core(s), at least %d per GPU; co-tenants: %d core(s) (CPUs %s)\n",
           s->isolation, s->gpu_cores, s->restricted_cores_per_gpu, s->cotenant_cores, s->cotenant_cpus);
    printf("#   partition %s: at most %d of the node's %d CPUs (%d core(s) x %d thread(s)%s)\n", c->harvest_partition,
           s->harvest_max_cpus, s->cpus, s->cotenant_cores, s->threads_per_core,
           s->spec_ncpus ? ", less the core for the system" : "");
    printf("#   memory: %llu MiB, %llu kept for the system; %llu MiB per CPU (partition %s, at most %llu a job),\n"
           "#   %llu MiB per GPU (partition %s)\n\n",
           s->real_memory_mib, s->mem_spec_mib, s->def_mem_per_cpu, c->harvest_partition, s->harvest_max_mem,
           s->def_mem_per_gpu, c->gpu_partition);
}

static void print_text(const topo_t *t, const char *full_node_line, const gres_gpu_t *gres, const slurm_recipe_t *r,
                       const recipe_choices_t *c, const version_source_t *v)
{
    printf("# cosched slurm-conf for %s, from %s, ", c->node_name, t->source);
    if (v->version.major)
        printf("for Slurm %d.%02d (%s)\n\n", v->version.major, v->version.minor, v->from);
    else
        printf("for a Slurm of unknown version (no --slurm-version, no scontrol --version)\n\n");
    if (r->harvest)
        print_split(r, c);
    else
        printf("# No harvest partition: %s.\n\n", r->why_not);
    printf("# ---- slurm.conf, on every node and the controller\n");
    print_lines(r, RECIPE_SLURM_CONF, "");
    printf("\n# The node as slurmd -C counts it, with what the system keeps:\n%s\n", full_node_line);
    print_lines(r, RECIPE_NODE, "#   ");
    if (r->harvest) {
        printf("\n");
        print_lines(r, RECIPE_PARTITION, "");
    }
    printf("\n# ---- cgroup.conf\n");
    print_lines(r, RECIPE_CGROUP_CONF, "");
    printf("\n");
    if (t->ngpus == 0) {
        printf("# gres.conf: no GPUs on this node.\n");
    } else {
        print_gres_notes(t);
        for (int i = 0; i < t->ngpus; i++) {
            char *numa = cpulist_format(gres[i].gpu->numa);
            printf("# GPU%d %s on NUMA %s (CPUs %s)\n%s\n", i, gres[i].gpu->pci, numa ? numa : "?",
                   *gres[i].cpus ? gres[i].cpus : "-", gres[i].line);
            free(numa);
        }
    }
    printf("\n# ---- as root on every node:\n");
    for (int i = 0; i < r->nlines; i++)
        if (r->lines[i].place == RECIPE_SHELL)
            printf("#   %s\n#       (%s)\n", r->lines[i].line, r->lines[i].why);
    if (r->harvest) {
        printf("\n# ---- coschedd.yaml, on every node:\nguard:\n");
        print_lines(r, RECIPE_COSCHEDD, "  ");
        printf("\n# ---- jobs:\n");
        print_lines(r, RECIPE_SUBMIT, "");
    }
}

/* The node line with the recipe's additions Slurm takes (those it lacks stay out). */
static char *full_node_line(const char *node_line, const slurm_recipe_t *r)
{
    char *out = strdup(node_line);
    for (int i = 0; out && i < r->nlines; i++) {
        if (r->lines[i].place != RECIPE_NODE || r->lines[i].comment)
            continue;
        char *longer;
        if (asprintf(&longer, "%s %s", out, r->lines[i].line) < 0)
            longer = NULL;
        free(out);
        out = longer;
    }
    return out;
}

static json_t *split_to_json(const slurm_recipe_t *r)
{
    const recipe_split_t *s = &r->split;
    if (!r->harvest)
        return json_null();
    return json_pack("{s:s, s:i, s:i, s:i, s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:I}", "isolation", s->isolation,
                     "gpu_cores", s->gpu_cores, "restricted_cores_per_gpu", s->restricted_cores_per_gpu,
                     "cotenant_cores", s->cotenant_cores, "cotenant_cpus", s->cotenant_cpus, "harvest_max_cpus",
                     s->harvest_max_cpus, "spec_cpus", s->spec_cpus, "cpus", s->cpus, "mem_spec_mib",
                     (json_int_t)s->mem_spec_mib, "def_mem_per_cpu", (json_int_t)s->def_mem_per_cpu, "harvest_max_mem",
                     (json_int_t)s->harvest_max_mem, "def_mem_per_gpu", (json_int_t)s->def_mem_per_gpu);
}

static json_t *to_json(const topo_t *t, const char *node_line, const gres_gpu_t *gres, const slurm_recipe_t *r,
                       const recipe_choices_t *c, const version_source_t *v)
{
    json_t *gpus = json_array(), *lines = json_array();
    for (int i = 0; i < t->ngpus; i++)
        json_array_append_new(gpus,
                              json_pack("{s:i, s:s, s:s, s:o, s:s, s:o, s:s}", "gpu", i, "file", gres[i].file, "cores",
                                        gres[i].cores, "numa", json_from_bitmap(gres[i].gpu->numa), "pci",
                                        gres[i].gpu->pci, "type",
                                        *gres[i].type ? json_string(gres[i].type) : json_null(), "line", gres[i].line));
    for (int i = 0; i < r->nlines; i++)
        json_array_append_new(lines,
                              json_pack("{s:s, s:s, s:s, s:b}", "file", recipe_place_file(r->lines[i].place), "setting",
                                        r->lines[i].line, "why", r->lines[i].why, "comment", r->lines[i].comment));
    json_t *version = v->version.major ? json_sprintf("%d.%02d", v->version.major, v->version.minor) : json_null();
    return json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "node_name", c->node_name, "node_line",
                     node_line, "slurm_version", version, "version_from", v->from, "gpu_partition", c->gpu_partition,
                     "harvest_partition", c->harvest_partition, "split", split_to_json(r), "no_harvest",
                     r->harvest ? json_null() : json_string(r->why_not), "gres", gpus, "settings", lines);
}

typedef struct conf_options {
    const char *xml, *version;
    int json, check;
    const char *from;
    recipe_choices_t choices;
} conf_options_t;

static int set_conf_option(void *ctx, cli_option_id_t option, const char *value)
{
    conf_options_t *c = ctx;
    long n;
    switch (option) {
    case CLI_O_TOPOLOGY: c->xml = value; return 0;
    case CLI_O_HARVEST_PARTITION:
        /* also the node feature of its jobs, and a Lua string in job_submit.lua */
        if (!*value ||
            strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(value))
            return output_usage_error("slurm-conf",
                                      "--harvest-partition needs a name of letters, digits, '.', '_' and '-' (its "
                                      "jobs' node feature too), not '%s'",
                                      value);
        c->choices.harvest_partition = value;
        return 0;
    case CLI_O_GPU_PARTITION:
        if (!*value || strpbrk(value, " \t=,#"))
            return output_usage_error("slurm-conf",
                                      "--%s needs a partition name (no spaces, '=', ',' or '#'), not '%s'",
                                      cli_options[option].name, value);
        *(option == CLI_O_GPU_PARTITION ? &c->choices.gpu_partition : &c->choices.harvest_partition) = value;
        return 0;
    case CLI_O_NODES:
        if (!*value || strpbrk(value, " \t=#'\""))
            return output_usage_error("slurm-conf", "--nodes needs a Slurm node list such as gpu[001-016], not '%s'",
                                      value);
        c->choices.nodes = value;
        return 0;
    case CLI_O_SLURM_VERSION: c->version = value; return 0;
    case CLI_O_GRACE:
    case CLI_O_MEM_SPEC:
        if (cli_count(option, value, &n) < 0)
            return output_usage_error("slurm-conf", "--%s needs a whole number from %.0f to %.0f, not '%s'",
                                      cli_options[option].name, cli_options[option].min, cli_options[option].max,
                                      value);
        if (option == CLI_O_GRACE)
            c->choices.grace_s = (int)n;
        else
            c->choices.mem_spec_mib = n;
        return 0;
    case CLI_O_CHECK: c->check = 1; return 0;
    case CLI_O_FROM: c->from = value; return 0;
    default: c->json = 1; return 0;
    }
}

int cmd_slurm_conf(const client_opts_t *o, int argc, char **argv)
{
    conf_options_t opts = {.json = o->json,
                           .choices = {.gpu_partition = "gpu",
                                       .harvest_partition = "harvest",
                                       .grace_s = RECIPE_DEFAULT_GRACE_S,
                                       .mem_spec_mib = -1}};
    int rc = cli_parse_only("slurm-conf", argc, argv, set_conf_option, &opts);
    if (rc >= 0)
        return rc;
    if (opts.from && !opts.check)
        return output_usage_error("slurm-conf", "--from DIR goes with --check");
    if (strcmp(opts.choices.gpu_partition, opts.choices.harvest_partition) == 0)
        return output_usage_error("slurm-conf", "the GPU and the harvest partition are both named %s: they must differ",
                                  opts.choices.gpu_partition);
    version_source_t version;
    if ((rc = find_slurm_version(opts.version, &version)) >= 0)
        return rc;
    rc = EXIT_OK;
    opts.choices.version = version.version;

    char err[512], name[64], node_line[512];
    const char *source = topo_source_from_env(opts.xml);
    topo_t *t = topo_load(source, err, sizeof err);
    if (!t)
        return output_fail("%s", err);
    node_name(t, source == NULL, name, sizeof name);
    opts.choices.node_name = name;
    format_node_line(t, name, source == NULL, node_line, sizeof node_line);
    gres_gpu_t *gres = make_gres(t);
    slurm_recipe_t *r = gres ? slurm_recipe_build(t, real_memory_mib(t, source == NULL), &opts.choices, err, sizeof err)
                             : NULL;
    char *line = r ? full_node_line(node_line, r) : NULL;
    if (!gres || !r || !line)
        rc = output_fail("%s", !gres || (r && !line) ? "out of memory" : err);
    else if (opts.check)
        rc = slurm_check_run(r, &opts.choices, opts.from, opts.json);
    else if (opts.json)
        rc = output_print_json(to_json(t, line, gres, r, &opts.choices, &version));
    else
        print_text(t, line, gres, r, &opts.choices, &version);
    free(line);
    slurm_recipe_free(r);
    free_gres(gres, t->ngpus);
    topo_free(t);
    return rc;
}
