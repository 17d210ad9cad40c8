/* cmd_plan: `cosched plan` — turn a request (GPUs, ranks, policy) into a placement and print
 * it as a table, JSON, srun --cpu-bind specs or plain cpulists for scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_parse.h"
#include "client.h"
#include "cpulist.h"
#include "json_out.h"
#include "plan.h"
#include "topo.h"

typedef enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_SRUN, FORMAT_LIST, FORMAT_ENV } plan_format_t;

/* Print words after `col` columns already used, wrapping at 100 columns with the help's indent. */
static void print_wrapped(FILE *out, int col, const char *text)
{
    enum { WIDTH = 100, INDENT = 24 };
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > INDENT && col + 1 + (int)word > WIDTH) {
            fprintf(out, "\n%*s", INDENT, "");
            col = INDENT;
        } else if (col > INDENT) {
            fputc(' ', out);
            col++;
        }
        col += fprintf(out, "%.*s", (int)word, text);
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

/* The policies' lines come from the planner's table, so --help lists every row it knows. */
static void print_policies(FILE *out)
{
    for (int i = 0; i < PLAN_NPOLICIES; i++) {
        const plan_policy_info_t *info = plan_policy_info((plan_policy_t)i);
        char text[512];
        int n = snprintf(text, sizeof text, "%s%s: %s", info->name, i == PLAN_EXCLUSIVE ? " (default)" : "",
                         info->summary);
        if (info->fallback != (plan_policy_t)i && n > 0 && (size_t)n < sizeof text)
            snprintf(text + n, sizeof text - (size_t)n, " (falls back to %s when no core is apart at its level)",
                     plan_policy_name(info->fallback));
        fprintf(out, "%22s", "");
        print_wrapped(out, 22, text);
    }
}

void cmd_plan_help(FILE *out)
{
    fprintf(out, "Place a training job's ranks next to its GPUs and noise / co-tenant ranks on the cores left.\n\n"
                 "  --topology FILE     an hwloc XML file instead of this machine (default: $COSCHED_TOPOLOGY)\n"
                 "  --policy P          what co-tenants are kept apart from:\n");
    print_policies(out);
    fprintf(out,
            "  --gpus LIST         GPU indexes the trainer uses, e.g. 0-3 or 0,2; 'all' (default) or 'none'\n"
            "  --ranks-per-gpu N   trainer ranks per GPU (default 1)\n"
            "  --cores-per-rank N  cores per trainer rank (default: what a training rank uses, at most %d,\n"
            "                      fewer when the rank's share of its domain has fewer: all the domain's\n"
            "                      free cores under exclusive and l3, half of them under cores and shared,\n"
            "                      split over the ranks there)\n"
            "  --noise-ranks N     one-core noise ranks (default: every core the policy leaves)\n"
            "  --smt               give each core's SMT siblings too (default: one CPU per core)\n"
            "  --mem M             trainer ranks' memory: local (default) their domain's own memory; hbm\n"
            "                      also the memory-only HBM / MCDRAM domains local to their cores (used\n"
            "                      when the local memory is full: the kernel allocates nearest first).\n"
            "                      Noise memory is always local, never HBM. Where a cgroup forbids a\n"
            "                      domain's memory, its ranks bind to the nearest allowed domains.\n"
            "  --json              same as --format json\n"
            "  --format F          table (default), json, srun (two lines: the trainer's and the noise's\n"
            "                      --cpu-bind= spec), list (ROLE RANK CPUS MEMS per line), env (shell\n"
            "                      assignments for eval: COSCHED_{TRAINER,NOISE}_{CPU_BIND,NTASKS,CPUS})\n"
            "  -h, --help          show this help\n\n"
            "Every plan states its isolation: numa, l3, cores or none (the table's 'isolation:' line, the\n"
            "JSON key \"isolation\"). CPU numbers are OS indexes (as taskset, srun and /proc use). Exit\n"
            "status 1 when the request does not fit, with a message saying what does not fit; nothing is\n"
            "printed on stdout then.\n\n"
            "In a Slurm job, run the trainer and the noise as two overlapping steps of one allocation:\n"
            "  eval \"$(cosched plan --format env)\"\n"
            "  srun --overlap -n $COSCHED_TRAINER_NTASKS --cpu-bind=$COSCHED_TRAINER_CPU_BIND TRAINER &\n"
            "  srun --overlap -n $COSCHED_NOISE_NTASKS --cpu-bind=$COSCHED_NOISE_CPU_BIND NOISE &\n"
            "  wait\n"
            "(--overlap, not --exact: with --exact Slurm hands each step the lowest free CPUs, whatever\n"
            "mask it asks for, and the step fails with 'Unable to satisfy cpu bind request'.)\n",
            PLAN_DEFAULT_MAX_CORES_PER_RANK);
}

static int parse_format(const char *s, plan_format_t *out)
{
    static const char *const names[] = {"table", "json", "srun", "list", "env"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (plan_format_t)i;
            return 0;
        }
    return -1;
}

static void print_ranks(const char *role, const plan_rank_t *ranks, int n, int table)
{
    for (int i = 0; i < n; i++) {
        char *cpus = cpulist_format(ranks[i].cpus), *mems = cpulist_format(ranks[i].mems);
        if (table) {
            char gpu[16] = "-";
            if (ranks[i].gpu >= 0)
                snprintf(gpu, sizeof gpu, "%d", ranks[i].gpu);
            printf("%-8s %-5d %-4s %-5u %-24s %s\n", role, ranks[i].rank, gpu, ranks[i].numa, cpus ? cpus : "?",
                   mems ? mems : "?");
        } else {
            printf("%s %d %s %s\n", role, ranks[i].rank, cpus ? cpus : "?", mems ? mems : "?");
        }
        free(cpus);
        free(mems);
    }
}

static void print_srun(const plan_t *plan, int labelled)
{
    char *trainer = plan_srun_cpu_bind(plan->trainer, plan->ntrainer);
    char *noise = plan_srun_cpu_bind(plan->noise, plan->nnoise);
    if (labelled) {
        printf("srun --cpu-bind for the trainer: %s\n", trainer ? trainer : "(no ranks)");
        printf("srun --cpu-bind for the noise:   %s\n", noise ? noise : "(no ranks)");
    } else {
        printf("%s\n%s\n", trainer ? trainer : "", noise ? noise : "");
    }
    free(trainer);
    free(noise);
}

/* One role's shell assignments; a role without ranks gets empty values, so scripts can test. */
static void print_env_role(const char *role, const plan_rank_t *ranks, int n)
{
    char *bind = plan_srun_cpu_bind(ranks, n);
    hwloc_bitmap_t all = hwloc_bitmap_alloc();
    for (int i = 0; i < n; i++)
        hwloc_bitmap_or(all, all, ranks[i].cpus);
    char *cpus = cpulist_format(all);
    const char *spec = bind && strncmp(bind, "--cpu-bind=", 11) == 0 ? bind + 11 : "";
    printf("COSCHED_%s_CPU_BIND='%s'\nCOSCHED_%s_NTASKS=%d\nCOSCHED_%s_CPUS='%s'\n", role, spec, role, n, role,
           n && cpus ? cpus : "");
    free(bind);
    free(cpus);
    hwloc_bitmap_free(all);
}

static void print_env(const plan_t *plan)
{
    print_env_role("TRAINER", plan->trainer, plan->ntrainer);
    print_env_role("NOISE", plan->noise, plan->nnoise);
}

static void print_table(const topo_t *t, const plan_t *plan)
{
    int cores = plan->ntrainer ? hwloc_bitmap_weight(plan->trainer[0].cpus) : 0;
    printf("Plan for %s: policy %s, %d trainer rank%s x %d CPU%s, %d noise rank%s\n", t->source,
           plan_policy_name(plan->policy), plan->ntrainer, plan->ntrainer == 1 ? "" : "s", cores, cores == 1 ? "" : "s",
           plan->nnoise, plan->nnoise == 1 ? "" : "s");
    printf("isolation: %s \u2014 %s\n\n", plan_isolation_name(plan->isolation),
           plan_isolation_description(plan->isolation));
    printf("%-8s %-5s %-4s %-5s %-24s %s\n", "ROLE", "RANK", "GPU", "NUMA", "CPUS", "MEMS");
    print_ranks("trainer", plan->trainer, plan->ntrainer, 1);
    print_ranks("noise", plan->noise, plan->nnoise, 1);
    printf("\n");
    print_srun(plan, 1);
}

/* Parse --gpus: a list, 'all' (NULL: every GPU) or 'none' (the empty set). */
static int parse_gpus(const char *text, hwloc_bitmap_t *out, char *err, size_t errlen)
{
    *out = NULL;
    if (strcmp(text, "all") == 0)
        return 0;
    if (strcmp(text, "none") == 0) {
        *out = hwloc_bitmap_alloc();
        return 0;
    }
    *out = cpulist_parse(text, 0, err, errlen);
    return *out ? 0 : -1;
}

typedef struct {
    plan_request_t req;
    hwloc_bitmap_t gpus;
    const char *xml;
    plan_format_t format;
} plan_args_t;

/* --ranks-per-gpu, --cores-per-rank, --noise-ranks: whole numbers in their ranges (cli_table.c). */
static int set_plan_count(plan_args_t *a, cli_option_id_t option, const char *value)
{
    const cli_option_t *spec = &cli_options[option];
    long n;
    if (cli_count(option, value, &n) < 0)
        return output_usage_error("plan", "--%s needs a whole number from %ld to %ld, not '%s'", spec->name,
                                  (long)spec->min, (long)spec->max, value);
    if (option == CLI_O_RANKS_PER_GPU)
        a->req.ranks_per_gpu = (int)n;
    else if (option == CLI_O_CORES_PER_RANK)
        a->req.cores_per_rank = (int)n;
    else
        a->req.noise_ranks = (int)n;
    return 0;
}

static int set_plan_option(void *ctx, cli_option_id_t option, const char *value)
{
    plan_args_t *a = ctx;
    char err[512] = "";
    switch (option) {
    case CLI_O_TOPOLOGY: a->xml = value; break;
    case CLI_O_POLICY:
        if (plan_policy_parse(value, &a->req.policy) < 0)
            return output_usage_error("plan", "unknown policy '%s' (exclusive, shared, l3 or cores)", value);
        break;
    case CLI_O_GPUS:
        hwloc_bitmap_free(a->gpus);
        if (parse_gpus(value, &a->gpus, err, sizeof err) < 0)
            return output_usage_error("plan", "--gpus: %s", err);
        break;
    case CLI_O_SMT: a->req.smt = true; break;
    case CLI_O_MEM:
        if (plan_mem_parse(value, &a->req.mem) < 0)
            return output_usage_error("plan", "unknown memory binding '%s' (local or hbm)", value);
        break;
    case CLI_O_JSON: a->format = FORMAT_JSON; break;
    case CLI_O_FORMAT:
        if (parse_format(value, &a->format) < 0)
            return output_usage_error("plan", "unknown format '%s' (table, json, srun, list or env)", value);
        break;
    default: return set_plan_count(a, option, value);
    }
    return 0;
}

int cmd_plan(const client_opts_t *o, int argc, char **argv)
{
    plan_args_t a = {.gpus = NULL, .xml = NULL, .format = o->json ? FORMAT_JSON : FORMAT_TABLE};
    plan_request_init(&a.req);
    char err[512] = "";
    int rc = cli_parse_only("plan", argc, argv, set_plan_option, &a);
    if (rc >= 0)
        goto out;
    plan_request_t req = a.req;
    const char *xml = a.xml;
    plan_format_t format = a.format;
    req.gpus = a.gpus;

    topo_t *t = topo_load(topo_source_from_env(xml), err, sizeof err);
    if (!t) {
        rc = output_fail("%s", err);
        goto out;
    }
    plan_t *plan = plan_compute(t, &req, err, sizeof err);
    if (!plan) {
        rc = output_fail("cannot plan on %s: %s", t->source, err);
        topo_free(t);
        goto out;
    }
    for (int i = 0; i < plan->nwarnings; i++)
        fprintf(stderr, "cosched: warning: %s\n", plan->warnings[i]);
    rc = EXIT_OK;
    switch (format) {
    case FORMAT_TABLE: print_table(t, plan); break;
    case FORMAT_JSON: rc = output_print_json(plan_to_json(plan)); break;
    case FORMAT_SRUN: print_srun(plan, 0); break;
    case FORMAT_ENV: print_env(plan); break;
    case FORMAT_LIST:
        print_ranks("trainer", plan->trainer, plan->ntrainer, 0);
        print_ranks("noise", plan->noise, plan->nnoise, 0);
        break;
    }
    plan_free(plan);
    topo_free(t);
out:
    hwloc_bitmap_free(a.gpus);
    return rc;
}
