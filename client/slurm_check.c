/* slurm_check: `cosched slurm-conf --check` — scontrol's view of the cluster (scontrol_read.c) held
 * against the recipe, one finding per point. A finding is grave when it lets a co-tenant run
 * unguarded or lets co-tenants starve a GPU job: those make the exit status 1. */
#include "slurm_check.h"

#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "client.h"
#include "output.h"
#include "scontrol_read.h"
#include "table.h"

typedef enum { CHECK_OK, CHECK_NOTE, CHECK_MISSING, CHECK_CONTRADICTS } check_status_t;

static const char *const status_names[] = {"ok", "note", "missing", "contradicts"};

enum { MAX_FINDINGS = 40 };

typedef struct finding {
    const char *point;
    check_status_t status;
    bool grave; /* a co-tenant unguarded, or a GPU job starved */
    char detail[320];
} finding_t;

typedef struct checker {
    const slurm_recipe_t *recipe;
    const recipe_choices_t *choices;
    const scontrol_view_t *view;
    const scontrol_record_t *gpu, *harvest; /* the two partitions; NULL when absent */
    bool live;                              /* reading this node's cluster, not saved outputs */
    finding_t findings[MAX_FINDINGS];
    int n;
} checker_t;

static void say(checker_t *k, const char *point, check_status_t status, bool grave, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void say(checker_t *k, const char *point, check_status_t status, bool grave, const char *fmt, ...)
{
    if (k->n == MAX_FINDINGS)
        return;
    finding_t *f = &k->findings[k->n++];
    f->point = point;
    f->status = status;
    f->grave = grave && (status == CHECK_MISSING || status == CHECK_CONTRADICTS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
}

static const char *config(const checker_t *k, const char *key)
{
    const char *v = scontrol_get(&k->view->config, key);
    return v ? v : "(null)";
}

static bool is_null(const char *v)
{
    return !v || !*v || strcmp(v, "(null)") == 0 || strcasecmp(v, "UNLIMITED") == 0 || strcmp(v, "0") == 0;
}

/* A number scontrol prints, or -1 for (null), UNLIMITED and the like. */
static long long number(const char *v)
{
    if (is_null(v))
        return -1;
    char *end;
    long long n = strtoll(v, &end, 10);
    return end == v ? -1 : n;
}

/* A word of a comma-separated list, case ignored (CR_CORE_MEMORY, task/cgroup,task/affinity). */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, word, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static void check_selection(checker_t *k)
{
    const char *select = config(k, "SelectType"), *params = config(k, "SelectTypeParameters");
    if (strcmp(select, "select/cons_tres") == 0)
        say(k, "select", CHECK_OK, false, "SelectType=select/cons_tres");
    else
        say(k, "select", CHECK_CONTRADICTS, false,
            "SelectType=%s: only select/cons_tres allocates GPUs with their cores", select);
    if (strcasestr(params, "CR_CPU") || strcasestr(params, "CR_MEMORY"))
        say(k, "cores", CHECK_CONTRADICTS, false,
            "SelectTypeParameters=%s: CPUs, not whole cores, are allocated: a harvest job may get the other "
            "thread of a GPU job's core (want CR_Core_Memory)",
            params);
    if (strcasestr(params, "_MEMORY"))
        say(k, "memory", CHECK_OK, false, "SelectTypeParameters=%s", params);
    else
        say(k, "memory", CHECK_CONTRADICTS, true,
            "SelectTypeParameters=%s: memory is not consumed, so no co-tenant's memory is bounded or confined "
            "(want CR_Core_Memory)",
            params);
}

static void check_confinement(checker_t *k)
{
    const char *task = config(k, "TaskPlugin"), *track = config(k, "ProctrackType");
    const char *cores = config(k, "ConstrainCores"), *ram = config(k, "ConstrainRAMSpace");
    if (has_word(task, "task/cgroup") && strcasecmp(cores, "yes") == 0)
        say(k, "confinement", CHECK_OK, false, "TaskPlugin=%s, ConstrainCores=yes", task);
    else
        say(k, "confinement", has_word(task, "task/cgroup") ? CHECK_MISSING : CHECK_CONTRADICTS, true,
            "TaskPlugin=%s, ConstrainCores=%s: jobs are not confined to their cores, cosched's job confine finds no "
            "cpuset",
            task, cores);
    if (strcmp(track, "proctrack/cgroup") == 0)
        say(k, "proctrack", CHECK_OK, false, "ProctrackType=proctrack/cgroup");
    else
        say(k, "proctrack", CHECK_CONTRADICTS, true,
            "ProctrackType=%s: a co-tenant's processes are in no cgroup of the job, where the guard holds them", track);
    if (strcasecmp(ram, "yes") == 0)
        say(k, "ram", CHECK_OK, false, "ConstrainRAMSpace=yes");
    else
        say(k, "ram", CHECK_MISSING, true,
            "ConstrainRAMSpace=%s: a co-tenant that outgrows its memory takes it from the GPU job (cgroup.conf)", ram);
    const char *swap = config(k, "ConstrainSwapSpace");
    say(k, "swap", strcasecmp(swap, "yes") == 0 ? CHECK_OK : CHECK_MISSING, false, "ConstrainSwapSpace=%s%s", swap,
        strcasecmp(swap, "yes") == 0 ? ""
                                     : ": on a node with swap, a co-tenant over its memory swaps (I/O beside the GPU "
                                       "job) instead of being killed");
    const char *devices = config(k, "ConstrainDevices");
    say(k, "devices", strcasecmp(devices, "yes") == 0 ? CHECK_OK : CHECK_MISSING, false, "ConstrainDevices=%s%s",
        devices, strcasecmp(devices, "yes") == 0 ? "" : ": a CPU job may open the GPUs");
}

/* Is this file cosched's script NAME, or a wrapper that runs it? Its own scripts say so on their
 * second line ("# cosched Slurm prolog"); a wrapper names it (/usr/lib/cosched/slurm/prolog, or
 * packaging/slurm/prolog in a source tree). */
static bool file_runs(const char *path, const char *name)
{
    char head[4096], own[64], installed[64], source[64];
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    snprintf(own, sizeof own, "# cosched Slurm %s", name);
    snprintf(installed, sizeof installed, "/cosched/slurm/%s", name);
    snprintf(source, sizeof source, "packaging/slurm/%s", name);
    return strcasestr(head, own) || strstr(head, installed) || strstr(head, source);
}

/* Does this Prolog=, Epilog= or TaskProlog= run cosched's NAME? 1 yes, 0 no, -1 cannot tell
 * (saved outputs name files of another machine). Live, every file of a glob is read. */
static int runs_cosched(const checker_t *k, const char *value, const char *name)
{
    char installed[64];
    snprintf(installed, sizeof installed, "/cosched/slurm/%s", name);
    if (is_null(value))
        return 0;
    if (!k->live) { /* another machine's files: only cosched's own path tells */
        size_t n = strlen(value), w = strlen(installed);
        return n >= w && strcmp(value + n - w, installed) == 0 ? 1 : -1;
    }
    glob_t g;
    int found = 0;
    if (glob(value, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !found; i++)
            found = file_runs(g.gl_pathv[i], name);
        globfree(&g);
    }
    return found;
}

static void check_hooks(checker_t *k)
{
    static const struct {
        const char *key, *name;
        bool grave;
        const char *without;
    } hooks[] = {
        {"Prolog", "prolog", true,
         "jobs are never registered with coschedd: co-tenants run unguarded (a site's own prologs and cosched's "
         "go in a prolog.d glob)"},
        {"Epilog", "epilog", false, "jobs are never released: their cores stay planned until coschedd restarts"},
    };
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        const char *v = config(k, hooks[i].key);
        int runs = runs_cosched(k, v, hooks[i].name);
        if (runs > 0)
            say(k, hooks[i].name, CHECK_OK, false, "%s=%s runs cosched's", hooks[i].key, v);
        else if (runs < 0)
            say(k, hooks[i].name, CHECK_NOTE, false,
                "%s=%s: saved outputs cannot tell whether it runs cosched's (check without --from on a node)",
                hooks[i].key, v);
        else
            say(k, hooks[i].name, is_null(v) ? CHECK_MISSING : CHECK_CONTRADICTS, hooks[i].grave,
                "%s=%s is not cosched's: %s", hooks[i].key, v, hooks[i].without);
    }
    const char *task = config(k, "TaskProlog");
    if (is_null(task))
        say(k, "taskprolog", CHECK_MISSING, true,
            "TaskProlog=(null): a co-tenant is never confined to its cgroup, so the guard cannot hold it");
    else if (runs_cosched(k, task, "taskprolog") > 0)
        say(k, "taskprolog", CHECK_OK, false, "TaskProlog=%s runs cosched's", task);
    else
        say(k, "taskprolog", CHECK_NOTE, false,
            "TaskProlog=%s is the site's: it must run cosched's and pass its output on (docs/slurm.md)", task);
    const char *flags = config(k, "PrologFlags");
    say(k, "prologflags", has_word(flags, "Alloc") && has_word(flags, "Contain") ? CHECK_OK : CHECK_MISSING, false,
        "PrologFlags=%s (want Alloc,Contain)", flags);
}

static void check_preemption(checker_t *k)
{
    const char *type = config(k, "PreemptType");
    long long tier_gpu = number(scontrol_get(k->gpu, "PriorityTier"));
    long long tier_harvest = number(scontrol_get(k->harvest, "PriorityTier"));
    const char *mode = scontrol_get(k->harvest, "PreemptMode");
    if (strcmp(type, "preempt/partition_prio") != 0)
        say(k, "preemption", CHECK_MISSING, true,
            "PreemptType=%s: a GPU job waits for the harvest jobs on its node to end (want preempt/partition_prio)",
            type);
    else if (tier_harvest >= tier_gpu)
        say(k, "preemption", CHECK_CONTRADICTS, true,
            "partition %s has PriorityTier=%lld, %s %lld: the harvest partition cannot be told from the GPU "
            "partition, and neither preempts the other",
            k->choices->harvest_partition, tier_harvest, k->choices->gpu_partition, tier_gpu);
    else if (!mode || strcasecmp(mode, "OFF") == 0)
        say(k, "preemption", CHECK_CONTRADICTS, true, "partition %s has PreemptMode=%s: its jobs are never preempted",
            k->choices->harvest_partition, mode ? mode : "(null)");
    else
        say(k, "preemption", CHECK_OK, false, "preempt/partition_prio, %s (tier %lld) preempts %s (tier %lld, %s)",
            k->choices->gpu_partition, tier_gpu, k->choices->harvest_partition, tier_harvest, mode);
    const char *gpu_mode = scontrol_get(k->gpu, "PreemptMode");
    if (gpu_mode && strcasecmp(gpu_mode, "OFF") != 0)
        say(k, "gpu-preemptible", CHECK_CONTRADICTS, false,
            "partition %s has PreemptMode=%s: a GPU job could be preempted by a higher tier (want OFF)",
            k->choices->gpu_partition, gpu_mode);
    const char *requeue = config(k, "JobRequeue");
    say(k, "requeue", strcmp(requeue, "1") == 0 ? CHECK_OK : CHECK_CONTRADICTS, false, "JobRequeue=%s%s", requeue,
        strcmp(requeue, "1") == 0 ? "" : ": a preempted harvest job is cancelled unless submitted with --requeue");
    long long grace = number(scontrol_get(k->harvest, "GraceTime"));
    say(k, "grace", grace > 0 ? CHECK_OK : CHECK_MISSING, false, "partition %s has GraceTime=%lld%s",
        k->choices->harvest_partition, grace < 0 ? 0 : grace,
        grace > 0 ? "" : ": a preempted job is killed after KillWait, with no time to checkpoint");
}

static void check_harvest_limits(checker_t *k)
{
    const recipe_split_t *s = &k->recipe->split;
    const char *over = scontrol_get(k->harvest, "OverSubscribe");
    if (over && strncasecmp(over, "NO", 2) != 0 && strncasecmp(over, "EXCLUSIVE", 9) != 0)
        say(k, "oversubscribe", CHECK_CONTRADICTS, true,
            "partition %s has OverSubscribe=%s: two jobs may get the same cores, and cosched cannot confine the "
            "second (it stays registered but unheld)",
            k->choices->harvest_partition, over);
    else
        say(k, "oversubscribe", CHECK_OK, false, "partition %s has OverSubscribe=%s", k->choices->harvest_partition,
            over ? over : "NO");
    const char *gpu_over = scontrol_get(k->gpu, "OverSubscribe");
    if (gpu_over && strncasecmp(gpu_over, "NO", 2) != 0 && strncasecmp(gpu_over, "EXCLUSIVE", 9) != 0)
        say(k, "gpu-oversubscribe", CHECK_CONTRADICTS, false,
            "partition %s has OverSubscribe=%s: two GPU jobs may get the same cores", k->choices->gpu_partition,
            gpu_over);
    long long max_cpus = number(scontrol_get(k->harvest, "MaxCPUsPerNode"));
    if (max_cpus < 0)
        say(k, "max-cpus", CHECK_MISSING, true,
            "partition %s has no MaxCPUsPerNode: its jobs may fill a GPU node (the recipe: %d)",
            k->choices->harvest_partition, s->harvest_max_cpus);
    else if (max_cpus > s->harvest_max_cpus)
        say(k, "max-cpus", CHECK_CONTRADICTS, true,
            "partition %s has MaxCPUsPerNode=%lld, more than the %d CPUs the planner leaves to co-tenants on %s",
            k->choices->harvest_partition, max_cpus, s->harvest_max_cpus, k->choices->node_name);
    else
        say(k, "max-cpus", CHECK_OK, false, "partition %s has MaxCPUsPerNode=%lld (the recipe: %d)",
            k->choices->harvest_partition, max_cpus, s->harvest_max_cpus);
}

static void check_memory(checker_t *k)
{
    const char *part = scontrol_get(k->harvest, "DefMemPerCPU"), *global = config(k, "DefMemPerCPU");
    const char *per_node = scontrol_get(k->harvest, "DefMemPerNode"), *global_node = config(k, "DefMemPerNode");
    if (!is_null(part) || !is_null(global))
        say(k, "mem-default", CHECK_OK, false, "partition %s: DefMemPerCPU=%s", k->choices->harvest_partition,
            !is_null(part) ? part : global);
    else if (!is_null(per_node) || !is_null(global_node))
        say(k, "mem-default", CHECK_OK, false, "partition %s: DefMemPerNode=%s (the recipe: DefMemPerCPU=%llu)",
            k->choices->harvest_partition, !is_null(per_node) ? per_node : global_node,
            k->recipe->split.def_mem_per_cpu);
    else
        say(k, "mem-default", CHECK_MISSING, true,
            "partition %s has no DefMemPerCPU: a harvest job that asks for no memory gets the whole node's, and no "
            "GPU job fits beside it (the recipe: %llu MiB)",
            k->choices->harvest_partition, k->recipe->split.def_mem_per_cpu);
    const char *max = scontrol_get(k->harvest, "MaxMemPerNode");
    say(k, "mem-max", is_null(max) ? CHECK_MISSING : CHECK_OK, false, "partition %s: MaxMemPerNode=%s%s",
        k->choices->harvest_partition, max ? max : "(null)",
        is_null(max) ? ": one harvest job may ask for the GPU jobs' memory" : "");
    const char *defaults = scontrol_get(k->gpu, "JobDefaults");
    bool per_gpu = (defaults && strstr(defaults, "DefMemPerGPU")) || !is_null(config(k, "DefMemPerGPU"));
    say(k, "mem-gpu", per_gpu ? CHECK_OK : CHECK_MISSING, false, "partition %s: %s", k->choices->gpu_partition,
        per_gpu ? "DefMemPerGPU set" : "no DefMemPerGPU: a GPU job that asks for no memory gets the whole node's");
}

/* Nodes of the harvest partition that lack something: how many, and the first few by name. */
typedef struct node_list {
    int n;
    char names[128];
} node_list_t;

static void node_list_add(node_list_t *l, const char *name)
{
    size_t used = strlen(l->names);
    if (l->n++ < 3)
        snprintf(l->names + used, sizeof l->names - used, "%s%s", used ? ", " : "", name ? name : "?");
}

static const char *node_list_text(const node_list_t *l, char *out, size_t len)
{
    snprintf(out, len, "%d node(s) (%s%s)", l->n, l->names, l->n > 3 ? ", ..." : "");
    return out;
}

/* The harvest gate: job_submit/lua adds the feature to harvest jobs, the nodes offer it. Live, the
 * job_submit.lua beside the cluster's slurm.conf must be (or load) cosched's. */
static void check_gate(checker_t *k, const node_list_t *no_feature, int seen)
{
    const char *plugins = config(k, "JobSubmitPlugins"), *conf = scontrol_get(&k->view->config, "SLURM_CONF");
    const char *feature = k->choices->harvest_partition;
    char text[192], script[4200] = "";
    if (k->live && conf && strrchr(conf, '/'))
        snprintf(script, sizeof script, "%.*s/job_submit.lua", (int)(strrchr(conf, '/') - conf), conf);
    if (!has_word(plugins, "lua") && !has_word(plugins, "job_submit/lua"))
        say(k, "gate-submit", CHECK_MISSING, false,
            "JobSubmitPlugins=%s: harvest jobs ask for no node feature, so the harvest gate keeps none off a node "
            "whose trainer is over budget (want lua, with cosched's job_submit.lua)",
            plugins);
    else if (*script && access(script, R_OK) != 0)
        say(k, "gate-submit", CHECK_NOTE, false,
            "JobSubmitPlugins=%s; %s cannot be read here (it is the controller's: check there)", plugins, script);
    else if (*script && !file_runs(script, "job_submit.lua"))
        say(k, "gate-submit", CHECK_MISSING, false,
            "%s does not load cosched's (/usr/lib/cosched/slurm/job_submit.lua): harvest jobs may ask for no feature",
            script);
    else
        say(k, "gate-submit", CHECK_OK, false, "JobSubmitPlugins=%s%s%s", plugins, *script ? ", " : "", script);
    if (no_feature->n)
        say(k, "gate-feature", CHECK_MISSING, false,
            "%s of %s without feature '%s': no harvest job starts there (unless its harvest gate is closed now: "
            "cosched guard status there)",
            node_list_text(no_feature, text, sizeof text), k->choices->harvest_partition, feature);
    else
        say(k, "gate-feature", CHECK_OK, false, "feature '%s' on all %d node(s) of %s", feature, seen,
            k->choices->harvest_partition);
}

/* The nodes of the harvest partition: their reserves, GPUs and, from 24.05, restricted cores; one
 * finding per point, however many nodes. */
static void check_nodes(checker_t *k, slurm_version_t version)
{
    bool restricted = slurm_version_at_least(version, RECIPE_RESTRICTED_FROM_MAJOR, RECIPE_RESTRICTED_FROM_MINOR);
    node_list_t no_gpus = {0}, no_spec = {0}, no_restricted = {0}, no_feature = {0};
    int seen = 0;
    char text[192];
    for (int i = 0; i < k->view->nnodes; i++) {
        const scontrol_record_t *node = &k->view->nodes[i];
        const char *name = scontrol_get(node, "NodeName"), *gres = scontrol_get(node, "Gres");
        if (!has_word(scontrol_get(node, "Partitions"), k->choices->harvest_partition))
            continue;
        seen++;
        if (!gres || !strstr(gres, "gpu"))
            node_list_add(&no_gpus, name);
        if (number(scontrol_get(node, "MemSpecLimit")) <= 0)
            node_list_add(&no_spec, name);
        if (restricted && is_null(scontrol_get(node, "RestrictedCoresPerGPU")))
            node_list_add(&no_restricted, name);
        if (!has_word(scontrol_get(node, "AvailableFeatures"), k->choices->harvest_partition))
            node_list_add(&no_feature, name);
    }
    if (seen == 0) {
        say(k, "nodes", CHECK_MISSING, true, "no node is in partition %s", k->choices->harvest_partition);
        return;
    }
    if (no_gpus.n)
        say(k, "node-gpus", CHECK_NOTE, false, "%s in %s without GPUs: harvest jobs there take no GPU job's cores",
            node_list_text(&no_gpus, text, sizeof text), k->choices->harvest_partition);
    if (no_spec.n)
        say(k, "node-mem-spec", CHECK_MISSING, false,
            "%s without MemSpecLimit: jobs may take the memory the OS and coschedd need",
            node_list_text(&no_spec, text, sizeof text));
    else
        say(k, "node-mem-spec", CHECK_OK, false, "MemSpecLimit on all %d node(s) of %s", seen,
            k->choices->harvest_partition);
    if (no_restricted.n)
        say(k, "node-restricted", CHECK_MISSING, false,
            "%s without RestrictedCoresPerGPU (Slurm %d.%02d has it; the recipe: %d)",
            node_list_text(&no_restricted, text, sizeof text), version.major, version.minor,
            k->recipe->split.restricted_cores_per_gpu);
    else if (restricted)
        say(k, "node-restricted", CHECK_OK, false, "RestrictedCoresPerGPU on all %d node(s) of %s", seen,
            k->choices->harvest_partition);
    check_gate(k, &no_feature, seen);
}

static int print_findings(const checker_t *k, slurm_version_t version, const char *from, int json)
{
    int grave = 0, bad = 0;
    for (int i = 0; i < k->n; i++) {
        grave += k->findings[i].grave;
        bad += k->findings[i].status >= CHECK_MISSING;
    }
    if (json) {
        json_t *list = json_array();
        for (int i = 0; i < k->n; i++)
            json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:s}", "point", k->findings[i].point, "status",
                                                  status_names[k->findings[i].status], "grave", k->findings[i].grave,
                                                  "detail", k->findings[i].detail));
        json_t *v = version.major ? json_sprintf("%d.%02d", version.major, version.minor) : json_null();
        int rc = output_print_json(json_pack("{s:s, s:o, s:s, s:s, s:o, s:i, s:i}", "source", from ? from : "scontrol",
                                             "slurm_version", v, "gpu_partition", k->choices->gpu_partition,
                                             "harvest_partition", k->choices->harvest_partition, "findings", list,
                                             "not_as_recipe", bad, "grave", grave));
        return rc != EXIT_OK ? rc : grave ? EXIT_FAIL : EXIT_OK;
    }
    char release[32] = "of unknown version";
    if (version.major)
        snprintf(release, sizeof release, "%d.%02d", version.major, version.minor);
    printf("cosched slurm-conf --check: partitions %s and %s, Slurm %s, from %s\n\n", k->choices->gpu_partition,
           k->choices->harvest_partition, release, from ? from : "scontrol");
    table_t t;
    table_init(&t, 3);
    table_row(&t, "POINT", "STATUS", "WHAT");
    for (int i = 0; i < k->n; i++) {
        char status[32];
        snprintf(status, sizeof status, "%s%s", status_names[k->findings[i].status],
                 k->findings[i].grave ? " (!)" : "");
        table_row(&t, k->findings[i].point, status, k->findings[i].detail);
    }
    table_print(&t, stdout);
    table_free(&t);
    printf("\n%d of %d points not as the recipe; %d let a co-tenant run unguarded or starve a GPU job (!)\n", bad, k->n,
           grave);
    return grave ? EXIT_FAIL : EXIT_OK;
}

int slurm_check_run(const slurm_recipe_t *r, const recipe_choices_t *c, const char *from_dir, int json)
{
    char err[512];
    scontrol_view_t view;
    if (!r->harvest)
        return output_fail("no harvest partition to check against: %s (--topology FILE of a GPU node)", r->why_not);
    if (scontrol_view_read(from_dir, &view, err, sizeof err) < 0)
        return output_fail("%s", err);
    checker_t k = {.recipe = r, .choices = c, .view = &view, .live = from_dir == NULL};
    k.gpu = scontrol_find(view.partitions, view.npartitions, "PartitionName", c->gpu_partition);
    k.harvest = scontrol_find(view.partitions, view.npartitions, "PartitionName", c->harvest_partition);
    int rc;
    if (!k.gpu || !k.harvest) {
        rc = output_fail("the cluster has no partition %s (%s): name the cluster's with --%s NAME",
                         !k.harvest ? c->harvest_partition : c->gpu_partition,
                         !k.harvest ? "the harvest partition" : "the GPU partition",
                         !k.harvest ? "harvest-partition" : "gpu-partition");
    } else {
        slurm_version_t version = c->version;
        slurm_version_parse(config(&k, "SLURM_VERSION"), &version); /* the cluster's own, when it says */
        check_selection(&k);
        check_confinement(&k);
        check_hooks(&k);
        check_preemption(&k);
        check_harvest_limits(&k);
        check_memory(&k);
        check_nodes(&k, version);
        rc = print_findings(&k, version, from_dir, json);
    }
    scontrol_view_free(&view);
    return rc;
}
