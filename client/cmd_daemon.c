/* cmd_daemon: the small daemon commands — status, report, metrics — and the table helpers
 * the other daemon commands share. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_parse.h"
#include "client.h"
#include "wire.h"
#include "cpulist.h"

/* [1,2,3,7] as "1-3,7". */
static void print_json_list(json_t *arr, int width)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
        if (json_is_integer(v))
            hwloc_bitmap_set(set, (unsigned)json_integer_value(v));
    char *s = cpulist_format(set);
    printf("%-*s", width, s && *s ? s : "-");
    free(s);
    hwloc_bitmap_free(set);
}

void cmd_daemon_print_ranks(json_t *ranks)
{
    printf("%-5s %-4s %-5s %-24s %s\n", "RANK", "GPU", "NUMA", "CPUS", "MEMS");
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r) {
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

void cmd_daemon_print_guard(json_t *g)
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
    json_t *gate = json_object_get(g, WIRE_R_HARVEST_GATE);
    if (json_is_object(gate)) {
        const char *detail = json_string_value(json_object_get(gate, WIRE_R_DETAIL));
        printf("harvest gate: %s (feature '%s' of node %s, closed %lld time(s))%s%s\n",
               json_string_value(json_object_get(gate, WIRE_R_STATE)),
               json_string_value(json_object_get(gate, WIRE_R_FEATURE)),
               json_string_value(json_object_get(gate, WIRE_R_NODE)),
               (long long)json_integer_value(json_object_get(gate, WIRE_R_CLOSURES)), detail ? ": " : "",
               detail ? detail : "");
    }
    json_array_foreach(json_object_get(g, WIRE_R_PROBLEMS), i, k) {
        const char *job = json_string_value(json_object_get(k, WIRE_R_JOB));
        printf("problem: %s%s%s%s\n", job ? "co-tenant " : "", job ? job : "", job ? ": " : "",
               json_string_value(json_object_get(k, WIRE_R_DETAIL)));
    }
}

void cmd_status_help(FILE *out)
{
    fputs("Is coschedd up: version, uptime, topology, jobs, runs, CPUs held, and the guard's\nknobs on this machine.\n",
          out);
}

int cmd_status(const client_opts_t *o, int argc, char **argv)
{
    int rc = cli_no_options("status", argc, argv);
    if (rc >= 0)
        return rc;
    json_t *s = rpc_call(o, WIRE_STATUS, NULL, &rc);
    if (!s)
        return rc;
    if (o->json)
        return output_print_json(s);
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
    cmd_daemon_print_guard(json_object_get(s, WIRE_R_GUARD));
    json_decref(s);
    return EXIT_OK;
}

void cmd_metrics_help(FILE *out)
{
    fputs("Print coschedd's metrics in Prometheus text format.\n", out);
}

int cmd_metrics(const client_opts_t *o, int argc, char **argv)
{
    int rc = cli_no_options("metrics", argc, argv);
    if (rc >= 0)
        return rc;
    json_t *m = rpc_call(o, WIRE_METRICS, NULL, &rc);
    if (!m)
        return rc;
    if (o->json)
        return output_print_json(m);
    fputs(json_string_value(json_object_get(m, WIRE_R_TEXT)), stdout);
    json_decref(m);
    return EXIT_OK;
}

void cmd_report_help(FILE *out)
{
    fputs("Report one training step's duration for a job, so that any framework (a PyTorch loop,\n"
          "say) feeds the daemon's slowdown statistics and its guard. A process per step costs a\n"
          "few milliseconds: a training loop should report through libcosched or the Python\n"
          "module (docs/libcosched.md). --baseline instead fixes the job's baseline step time (the\n"
          "guard then never pauses co-tenants to measure it). --phase says what the job does now:\n"
          "train (its steps are judged), or another phase such as eval or checkpoint, whose steps\n"
          "the guard never judges (co-tenants keep their share meanwhile). The job's owner or an\n"
          "operator may.\n",
          out);
}

typedef struct {
    const char *job, *phase;
    double step;
    bool baseline;
} report_args_t;

static int set_report_option(void *ctx, cli_option_id_t option, const char *value)
{
    report_args_t *a = ctx;
    char *end;
    switch (option) {
    case CLI_O_JOB: a->job = value; break;
    case CLI_O_BASELINE: a->baseline = true; break;
    case CLI_O_PHASE: a->phase = value; break;
    default:
        a->step = strtod(value, &end);
        if (*end || !(a->step > 0))
            return output_usage_error("report", "--step-time needs a positive number of seconds, not '%s'", value);
    }
    return 0;
}

int cmd_report(const client_opts_t *o, int argc, char **argv)
{
    report_args_t a = {0};
    int rest, rc = cli_parse("report", argc, argv, set_report_option, &a, &rest);
    if (rc >= 0)
        return rc;
    const char *job = a.job, *phase = a.phase;
    double step = a.step;
    bool baseline = a.baseline;
    if (phase && (step > 0 || baseline))
        return output_usage_error("report", "--phase goes alone: a phase is no step");
    if (!job || (step <= 0 && !phase))
        return output_usage_error("report", "--job and --step-time (or --phase) are required");
    if (rest < argc)
        return output_usage_error("report", "unexpected argument '%s'", argv[rest]);
    json_t *r = phase ? rpc_call(o, WIRE_PHASE, json_pack("{s:s, s:s}", WIRE_P_JOB, job, WIRE_P_PHASE, phase), &rc)
                      : rpc_call(o, baseline ? WIRE_BASELINE_SET : WIRE_REPORT,
                                 json_pack("{s:s, s:f}", WIRE_P_JOB, job, WIRE_P_STEP_TIME, step), &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    json_decref(r);
    return EXIT_OK;
}
