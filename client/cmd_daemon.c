/* cmd_daemon: the small daemon commands — status, report, metrics — and the table helpers
 * the other daemon commands share. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "suggest.h"
#include "wire.h"
#include "cpulist.h"

int no_options(const char *command, const char *usage_text, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        }
        return usage_error(command, "unexpected argument '%s'", argv[i]);
    }
    return -1;
}

int run_subcommand(const char *command, const char *usage_text, const subcommand_t *subs, int nsubs,
                   const client_opts_t *o, int argc, char **argv)
{
    char names[128] = "";
    for (int i = 0; i < nsubs; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", subs[i].name);
    if (argc < 2)
        return usage_error(command, "which subcommand: %s?", names);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    for (int i = 0; i < nsubs; i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(o, argc - 1, argv + 1);
    const char *words[16];
    for (int i = 0; i < nsubs && i < 16; i++)
        words[i] = subs[i].name;
    char near[256];
    suggest_names(argv[1], words, (size_t)(nsubs < 16 ? nsubs : 16), near, sizeof near);
    if (*near)
        return usage_error(command, "unknown subcommand '%s': did you mean %s? (%s)", argv[1], near, names);
    return usage_error(command, "unknown subcommand '%s' (%s)", argv[1], names);
}

int parse_job_option(const char *command, const char *usage_text, int argc, char **argv, const char **job)
{
    static const struct option options[] = {
        {"job", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        if (opt == 'j') {
            *job = optarg;
        } else if (opt == 'h') {
            fputs(usage_text, stdout);
            return EXIT_OK;
        } else {
            return usage_error(command, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error(command, "unexpected argument '%s'", argv[optind]);
    return -1;
}

int parse_topology_options(const char *command, void (*usage)(FILE *), const client_opts_t *o, int argc, char **argv,
                           const char **xml, int *json)
{
    static const struct option options[] = {{"topology", required_argument, NULL, 't'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    int opt;
    *xml = NULL;
    *json = o->json;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        switch (opt) {
        case 't': *xml = optarg; break;
        case 'j': *json = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: return usage_error(command, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error(command, "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* [1,2,3,7] as "1-3,7". */
static void print_json_list(json_t *arr, int width)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_integer(v)) hwloc_bitmap_set(set, (unsigned)json_integer_value(v));
    char *s = cpulist_format(set);
    printf("%-*s", width, s && *s ? s : "-");
    free(s);
    hwloc_bitmap_free(set);
}

void print_rank_table(json_t *ranks)
{
    printf("%-5s %-4s %-5s %-24s %s\n", "RANK", "GPU", "NUMA", "CPUS", "MEMS");
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r)
    {
        json_t *gpu = json_object_get(r, WIRE_R_GPU);
        char g[16] = "-";
        if (json_is_integer(gpu))
            snprintf(g, sizeof g, "%lld", (long long)json_integer_value(gpu));
        printf("%-5lld %-4s %-5lld ", (long long)json_integer_value(json_object_get(r, WIRE_R_RANK)), g,
               (long long)json_integer_value(json_object_get(r, WIRE_R_NUMA)));
        print_json_list(json_object_get(r, WIRE_R_CPUS), 24);
        printf(" ");
        print_json_list(json_object_get(r, WIRE_R_MEMS), 0);
        printf("\n");
    }
}

void print_guard_status(json_t *g)
{
    if (!json_is_true(json_object_get(g, WIRE_R_ENABLED))) {
        printf("guard: off (guard.enabled: false)\n");
        return;
    }
    printf("guard: on, budget %.1f %%, co-tenants' share %.2f; knobs, best first:\n",
           100 * json_number_value(json_object_get(g, WIRE_R_SLOWDOWN_BUDGET)),
           json_number_value(json_object_get(g, WIRE_R_COTENANT_SHARE)));
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(g, WIRE_R_KNOBS), i, k)
    printf("  %-10s %-3s %s\n", json_string_value(json_object_get(k, WIRE_R_NAME)),
           json_is_true(json_object_get(k, WIRE_R_AVAILABLE)) ? "yes" : "no",
           json_string_value(json_object_get(k, WIRE_R_DETAIL)));
    json_t *progress = json_object_get(g, WIRE_R_PROGRESS);
    if (json_is_object(progress)) {
        printf("progress: trainers' default source %s; GPUs' busy time in windows of %g s:\n",
               json_string_value(json_object_get(progress, WIRE_R_DEFAULT)),
               json_number_value(json_object_get(progress, WIRE_R_GPU_WINDOW)));
        print_gpus(json_object_get(progress, WIRE_R_GPUS), "  ");
        printf("  PMU: %s\n", json_string_value(json_object_get(progress, WIRE_R_PMU)));
    }
    json_array_foreach(json_object_get(g, WIRE_R_PROBLEMS), i, k)
    {
        const char *job = json_string_value(json_object_get(k, WIRE_R_JOB));
        printf("problem: %s%s%s%s\n", job ? "co-tenant " : "", job ? job : "", job ? ": " : "",
               json_string_value(json_object_get(k, WIRE_R_DETAIL)));
    }
}

int cmd_status(const client_opts_t *o, int argc, char **argv)
{
    int rc = no_options("status",
                        "Usage: cosched status\nIs coschedd up: version, uptime, topology, jobs, runs, CPUs held, and the guard's\nknobs on this machine.\n",
                        argc, argv);
    if (rc >= 0)
        return rc;
    json_t *s = rpc_call(o, WIRE_STATUS, NULL, &rc);
    if (!s)
        return rc;
    if (o->json)
        return print_json(s);
    json_t *jobs = json_object_get(s, WIRE_R_JOBS), *runs = json_object_get(s, WIRE_R_RUNS);
    printf("coschedd %s (pid %lld) up %.0f s on %s, policy %s\n", json_string_value(json_object_get(s, WIRE_R_VERSION)),
           (long long)json_integer_value(json_object_get(s, WIRE_R_PID)),
           json_number_value(json_object_get(s, WIRE_R_UPTIME)), json_string_value(json_object_get(s, WIRE_R_TOPOLOGY)),
           json_string_value(json_object_get(s, WIRE_R_POLICY)));
    printf("jobs: %lld trainer, %lld cotenant; runs: %lld running of %lld; CPUs allocated: %lld; you are %s\n",
           (long long)json_integer_value(json_object_get(jobs, WIRE_R_TRAINER)),
           (long long)json_integer_value(json_object_get(jobs, WIRE_R_COTENANT)),
           (long long)json_integer_value(json_object_get(runs, WIRE_R_RUNNING)),
           (long long)json_integer_value(json_object_get(runs, WIRE_R_TOTAL)),
           (long long)json_integer_value(json_object_get(s, WIRE_R_CPUS_ALLOCATED)),
           json_is_true(json_object_get(s, WIRE_R_OPERATOR)) ? "an operator" : "not an operator (read-only)");
    print_guard_status(json_object_get(s, WIRE_R_GUARD));
    json_decref(s);
    return EXIT_OK;
}

int cmd_metrics(const client_opts_t *o, int argc, char **argv)
{
    int rc = no_options("metrics", "Usage: cosched metrics\nPrint coschedd's metrics in Prometheus text format.\n",
                        argc, argv);
    if (rc >= 0)
        return rc;
    json_t *m = rpc_call(o, WIRE_METRICS, NULL, &rc);
    if (!m)
        return rc;
    if (o->json)
        return print_json(m);
    fputs(json_string_value(json_object_get(m, WIRE_R_TEXT)), stdout);
    json_decref(m);
    return EXIT_OK;
}

int cmd_report(const client_opts_t *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"job", required_argument, NULL, 'j'},
        {"step-time", required_argument, NULL, 's'},
        {"baseline", no_argument, NULL, 'b'},
        {"phase", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job = NULL, *phase = NULL;
    double step = 0;
    bool baseline = false;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'j': job = optarg; break;
        case 'b': baseline = true; break;
        case 'p': phase = optarg; break;
        case 's':
            step = strtod(optarg, &end);
            if (*end || !(step > 0))
                return usage_error("report", "--step-time needs a positive number of seconds, not '%s'", optarg);
            break;
        case 'h':
            printf("Usage: cosched report --job ID --step-time SECONDS [--baseline]\n"
                   "       cosched report --job ID --phase NAME\n"
                   "Report one training step's duration for a job, so that any framework (a PyTorch loop,\n"
                   "say) feeds the daemon's slowdown statistics and its guard. A process per step costs a\n"
                   "few milliseconds: a training loop should report through libcosched or the Python\n"
                   "module (docs/libcosched.md). --baseline instead fixes the job's baseline step time (the\n"
                   "guard then never pauses co-tenants to measure it). --phase says what the job does now:\n"
                   "train (its steps are judged), or another phase such as eval or checkpoint, whose steps\n"
                   "the guard never judges (co-tenants keep their share meanwhile). The job's owner or an\n"
                   "operator may.\n");
            return EXIT_OK;
        default: return usage_error("report", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (phase && (step > 0 || baseline))
        return usage_error("report", "--phase goes alone: a phase is no step");
    if (!job || (step <= 0 && !phase))
        return usage_error("report", "--job and --step-time (or --phase) are required");
    if (optind < argc)
        return usage_error("report", "unexpected argument '%s'", argv[optind]);
    int rc;
    json_t *r = phase ? rpc_call(o, WIRE_PHASE, json_pack("{s:s, s:s}", WIRE_P_JOB, job, WIRE_P_PHASE, phase), &rc)
                      : rpc_call(o, baseline ? WIRE_BASELINE_SET : WIRE_REPORT,
                                 json_pack("{s:s, s:f}", WIRE_P_JOB, job, WIRE_P_STEP_TIME, step), &rc);
    if (!r)
        return rc;
    if (o->json)
        return print_json(r);
    json_decref(r);
    return EXIT_OK;
}
