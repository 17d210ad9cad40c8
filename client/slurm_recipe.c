/* slurm_recipe: the recipe's lines — the settings every harvest cluster needs, then the node's and
 * its partitions' lines from the split (slurm_recipe_split.c). Each line says why. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_recipe_internal.h"

enum { MAX_LINES = 48 };

int slurm_version_parse(const char *text, slurm_version_t *out)
{
    while (*text && !isdigit((unsigned char)*text))
        text++;
    int major, minor, used = 0;
    if (sscanf(text, "%d.%d%n", &major, &minor, &used) != 2 || major < 1 || minor < 0 || minor > 99)
        return -1;
    out->major = major;
    out->minor = minor;
    return 0;
}

bool slurm_version_at_least(slurm_version_t v, int major, int minor)
{
    return v.major > major || (v.major == major && v.minor >= minor);
}

const char *recipe_place_file(recipe_place_t place)
{
    static const char *const files[RECIPE_NPLACES] = {
        [RECIPE_SLURM_CONF] = "slurm.conf",   [RECIPE_NODE] = "slurm.conf", [RECIPE_PARTITION] = "slurm.conf",
        [RECIPE_CGROUP_CONF] = "cgroup.conf", [RECIPE_SHELL] = "shell",     [RECIPE_SUBMIT] = "sbatch",
        [RECIPE_COSCHEDD] = "coschedd.yaml",
    };
    return place < RECIPE_NPLACES ? files[place] : "?";
}

static int add(slurm_recipe_t *r, recipe_place_t place, bool comment, const char *why, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int add(slurm_recipe_t *r, recipe_place_t place, bool comment, const char *why, const char *fmt, ...)
{
    if (r->nlines == MAX_LINES)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&r->lines[r->nlines].line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    r->lines[r->nlines].place = place;
    r->lines[r->nlines].why = why;
    r->lines[r->nlines++].comment = comment;
    return 0;
}

/* What any cluster that runs co-tenants beside GPU jobs needs, whatever the node. */
static int add_cluster_lines(slurm_recipe_t *r)
{
    int rc = 0;
    rc |= add(r, RECIPE_SLURM_CONF, false, "GPUs are a resource Slurm allocates", "GresTypes=gpu");
    rc |= add(r, RECIPE_SLURM_CONF, false, "jobs share a node on disjoint cores, GPUs with the cores near them",
              "SelectType=select/cons_tres");
    rc |= add(r, RECIPE_SLURM_CONF, false,
              "whole cores and memory are consumed (and no OverSubscribe: it gives two jobs the same cores)",
              "SelectTypeParameters=CR_Core_Memory");
    rc |= add(r, RECIPE_SLURM_CONF, false, "tasks confined to their cores and memory, bound there",
              "TaskPlugin=task/cgroup,task/affinity");
    rc |= add(r, RECIPE_SLURM_CONF, false, "every process of a job in its cgroup, where the guard holds it",
              "ProctrackType=proctrack/cgroup");
    rc |= add(r, RECIPE_SLURM_CONF, false, "a partition of a higher PriorityTier preempts the jobs of lower ones",
              "PreemptType=preempt/partition_prio");
    rc |= add(r, RECIPE_SLURM_CONF, false, "preempted jobs go back to the queue (the GPU partition: OFF)",
              "PreemptMode=REQUEUE");
    rc |= add(r, RECIPE_SLURM_CONF, false, "batch jobs may be requeued unless submitted with --no-requeue",
              "JobRequeue=1");
    rc |= add(r, RECIPE_SLURM_CONF, false, "cosched's prolog beside the site's own, a link in prolog.d (below)",
              "Prolog=/etc/slurm/prolog.d/*");
    rc |= add(r, RECIPE_SLURM_CONF, false, "and its epilog", "Epilog=/etc/slurm/epilog.d/*");
    rc |= add(r, RECIPE_SLURM_CONF, false,
              "no glob here: a site with its own TaskProlog calls this one from it (docs/slurm.md)",
              "TaskProlog=/usr/lib/cosched/slurm/taskprolog");
    rc |= add(r, RECIPE_SLURM_CONF, false, "the prolog runs at allocation, in the job's cgroup",
              "PrologFlags=Alloc,Contain");
    rc |= add(r, RECIPE_SLURM_CONF, false, "a stuck daemon cannot hold a job for long", "PrologEpilogTimeout=30");
    rc |= add(r, RECIPE_CGROUP_CONF, false, "a job runs only on the cores it was given", "ConstrainCores=yes");
    rc |= add(r, RECIPE_CGROUP_CONF, false, "a job opens only the GPUs it was given", "ConstrainDevices=yes");
    rc |= add(r, RECIPE_CGROUP_CONF, false,
              "a co-tenant that outgrows its memory is killed in its own cgroup, not the GPU job",
              "ConstrainRAMSpace=yes");
    rc |= add(r, RECIPE_CGROUP_CONF, false, "and does not swap instead (AllowedSwapSpace=0: RAM and swap together)",
              "ConstrainSwapSpace=yes");
    rc |= add(r, RECIPE_SHELL, false, "where Slurm finds the site's prologs and cosched's",
              "install -d /etc/slurm/prolog.d /etc/slurm/epilog.d");
    rc |= add(r, RECIPE_SHELL, false, "a link, never a copy: a package upgrade updates it",
              "ln -sf /usr/lib/cosched/slurm/prolog /etc/slurm/prolog.d/50-cosched");
    rc |= add(r, RECIPE_SHELL, false, "the same for the epilog",
              "ln -sf /usr/lib/cosched/slurm/epilog /etc/slurm/epilog.d/50-cosched");
    return rc;
}

/* The node's additions and the two partitions, from the split (which leaves co-tenants a core). */
static int add_node_lines(slurm_recipe_t *r, const recipe_choices_t *c)
{
    const recipe_split_t *s = &r->split;
    const char *nodes = c->nodes ? c->nodes : c->node_name;
    bool restricted = slurm_version_at_least(c->version, RECIPE_RESTRICTED_FROM_MAJOR, RECIPE_RESTRICTED_FROM_MINOR);
    int rc = 0;
    rc |= add(r, RECIPE_NODE, false, "memory no job gets: the OS, slurmd and coschedd", "MemSpecLimit=%llu",
              s->mem_spec_mib);
    if (*s->spec_cpus)
        rc |= add(r, RECIPE_NODE, false, "a co-tenant core for the OS, slurmd and coschedd (Slurm's abstract CPU ids)",
                  "CpuSpecList=%s", s->spec_cpus);
    if (s->restricted_cores_per_gpu > 0)
        rc |= add(r, RECIPE_NODE, !restricted,
                  restricted ? "each GPU's first cores of its gres.conf Cores= are for GPU jobs only"
                             : "Slurm 24.05 and later: each GPU's first cores for GPU jobs only",
                  "RestrictedCoresPerGPU=%d", s->restricted_cores_per_gpu);
    rc |= add(r, RECIPE_NODE, false,
              "harvest jobs ask for it (job_submit.lua); coschedd takes it away while the node's trainer is over "
              "budget",
              "Features=%s", c->harvest_partition);
    rc |= add(r, RECIPE_PARTITION, false, "GPU jobs: the higher tier, never preempted; memory per GPU unless they ask",
              "PartitionName=%s Nodes=%s PriorityTier=2 PreemptMode=OFF DefMemPerGPU=%llu State=UP", c->gpu_partition,
              nodes, s->def_mem_per_gpu);
    rc |= add(r, RECIPE_PARTITION, false,
              "CPU jobs on the cores the GPU jobs leave: the lower tier, requeued when a GPU job needs the node, "
              "never more CPUs than the co-tenants' side, memory per CPU",
              "PartitionName=%s Nodes=%s PriorityTier=1 PreemptMode=REQUEUE GraceTime=%d MaxCPUsPerNode=%d "
              "DefMemPerCPU=%llu MaxMemPerNode=%llu State=UP",
              c->harvest_partition, nodes, c->grace_s, s->harvest_max_cpus, s->def_mem_per_cpu, s->harvest_max_mem);
    rc |= add(r, RECIPE_SLURM_CONF, false,
              "job_submit.lua (below) makes every harvest job ask for the node feature of its partition's name",
              "JobSubmitPlugins=lua");
    if (strcmp(c->harvest_partition, "harvest") == 0)
        rc |= add(r, RECIPE_SHELL, false,
                  "on the controller, beside slurm.conf: a link; a site with its own script loads it from there",
                  "ln -sf /usr/lib/cosched/slurm/job_submit.lua /etc/slurm/job_submit.lua");
    else
        rc |= add(r, RECIPE_SHELL, false, "on the controller: beside slurm.conf, cosched's loaded for this partition",
                  "printf '%%s\\n' 'cosched_harvest_partition = \"%s\"' "
                  "'return dofile(\"/usr/lib/cosched/slurm/job_submit.lua\")' >/etc/slurm/job_submit.lua",
                  c->harvest_partition);
    rc |= add(r, RECIPE_COSCHEDD, false,
              "the harvest gate: the feature taken from the node while a co-tenant stays at the minimum share",
              "harvest_feature: %s", c->harvest_partition);
    rc |= add(r, RECIPE_COSCHEDD, false, "a held harvest job gets the minutes it lost added to its time limit",
              "extend_time_limit: true");
    rc |= add(r, RECIPE_SUBMIT, true,
              "GPU jobs: their cores come from their GPUs' Cores=", "--partition=%s --gres-flags=enforce-binding",
              c->gpu_partition);
    rc |= add(r, RECIPE_SUBMIT, true, "CPU jobs for the idle cores: requeued, not lost, when preempted",
              "--partition=%s --requeue", c->harvest_partition);
    return rc;
}

slurm_recipe_t *slurm_recipe_build(const topo_t *t, unsigned long long real_memory_mib, const recipe_choices_t *c,
                                   char *err, size_t errlen)
{
    slurm_recipe_t *r = calloc(1, sizeof *r);
    if (r)
        r->lines = calloc(MAX_LINES, sizeof *r->lines);
    if (!r || !r->lines) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (c->mem_spec_mib >= 0 && (unsigned long long)c->mem_spec_mib >= real_memory_mib) {
        snprintf(err, errlen, "--mem-spec %lld MiB leaves nothing of the node's %llu MiB to jobs", c->mem_spec_mib,
                 real_memory_mib);
        slurm_recipe_free(r);
        return NULL;
    }
    char why[256];
    if (t->ngpus == 0)
        snprintf(r->why_not, sizeof r->why_not, "this node has no GPUs: no GPU job leaves cores to harvest");
    else if (real_memory_mib == 0)
        snprintf(r->why_not, sizeof r->why_not, "the node's memory is unknown (RealMemory 0): no memory default");
    else if (recipe_split_node(t, real_memory_mib, c->mem_spec_mib, &r->split, why, sizeof why) < 0)
        snprintf(r->why_not, sizeof r->why_not,
                 "the planner cannot split this node (%s): describe the whole node, not a job's cgroup", why);
    else if (r->split.harvest_max_cpus <= 0)
        snprintf(r->why_not, sizeof r->why_not, "the planner leaves no core to co-tenants on this node");
    else
        r->harvest = true;
    if (add_cluster_lines(r) < 0 || (r->harvest && add_node_lines(r, c) < 0)) {
        snprintf(err, errlen, "out of memory");
        slurm_recipe_free(r);
        return NULL;
    }
    return r;
}

void slurm_recipe_free(slurm_recipe_t *r)
{
    if (!r)
        return;
    for (int i = 0; r->lines && i < r->nlines; i++)
        free(r->lines[i].line);
    free(r->lines);
    free(r);
}
