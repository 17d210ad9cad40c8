/* cmd_stats: `cosched stats` — per job the step-time baseline, the recent window and the
 * slowdown with its interval; per run its progress and achieved bandwidth. --watch repeats. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_parse.h"
#include "client.h"
#include "wire.h"

/* A trainer's guard: its phase, the share it allows co-tenants, what it did and what it cost. */
static void print_guard(json_t *g)
{
    if (!json_is_true(json_object_get(g, "enabled"))) {
        printf("  guard: off\n");
        return;
    }
    json_t *actions = json_object_get(g, "actions"), *judged = json_object_get(g, "judged");
    json_t *age = json_object_get(g, "baseline_age_seconds"), *pauses = json_object_get(g, "baseline_pauses");
    printf("  guard: %s, co-tenants' share %.2f; actions: %lld throttle, %lld revert, %lld relax, %lld pause",
           json_string_value(json_object_get(g, "phase")), json_number_value(json_object_get(g, "share")),
           (long long)json_integer_value(json_object_get(actions, "throttle")),
           (long long)json_integer_value(json_object_get(actions, "revert")),
           (long long)json_integer_value(json_object_get(actions, "relax")),
           (long long)json_integer_value(json_object_get(actions, "pause")));
    if (json_is_object(judged))
        printf("; at this share %+.1f %% over %lld steps", 100 * json_number_value(json_object_get(judged, "slowdown")),
               (long long)json_integer_value(json_object_get(judged, "steps")));
    printf("\n");
    if (json_is_number(age))
        printf("  baseline %.0f s old; pauses for baselines: %lld, %.1f s, %.2f %% of co-tenant time\n",
               json_number_value(age), (long long)json_integer_value(json_object_get(pauses, "count")),
               json_number_value(json_object_get(pauses, "paused_seconds")),
               100 * json_number_value(json_object_get(pauses, "cost")));
}

static const char *listed(json_t *list)
{
    const char *s = json_string_value(list);
    return s && *s ? s : "none";
}

static void print_share(json_t *j)
{
    json_t *knob = json_object_get(j, "knob"), *pinned = json_object_get(j, "share_override");
    json_t *exposure = json_object_get(j, "exposure");
    const char *none = json_is_true(json_object_get(j, "external"))
                           ? " (started by Slurm: held once the TaskProlog's job confine finds its cgroups)"
                           : " (no processes to hold yet)";
    printf("  %s; allowed share %.2f%s%s%s\n", json_is_true(json_object_get(j, "active")) ? "at work" : "idle",
           json_number_value(json_object_get(j, "allowed_share")), json_is_string(knob) ? " through " : none,
           json_is_string(knob) ? json_string_value(knob) : "", json_is_number(pinned) ? ", pinned by an operator" : "");
    if (json_is_string(json_object_get(j, "share_reason")))
        printf("  why: %s\n", json_string_value(json_object_get(j, "share_reason")));
    if (json_is_object(exposure))
        printf("  isolation from trainers where it is: %s (cpus sharing a NUMA domain: %s; an L3: %s; a core: %s)\n",
               json_string_value(json_object_get(exposure, "isolation")), listed(json_object_get(exposure, "numa")),
               listed(json_object_get(exposure, "l3")), listed(json_object_get(exposure, "core")));
}

static void print_stats(json_t *s)
{
    size_t i;
    json_t *j;
    printf("slowdown budget %.1f %%; co-tenant running: %s; co-tenants' share: %.2f\n",
           100 * json_number_value(json_object_get(s, "slowdown_budget")),
           json_is_true(json_object_get(s, "cotenant_active")) ? "yes" : "no",
           json_number_value(json_object_get(s, "cotenant_share")));
    json_array_foreach(json_object_get(s, "jobs"), i, j)
    {
        printf("\njob %s (%s)\n", json_string_value(json_object_get(j, "job")),
               json_string_value(json_object_get(j, "role")));
        json_t *base = json_object_get(j, "baseline"), *win = json_object_get(j, "window");
        if (base) {
            printf("  steps %lld (%lld beside a co-tenant); baseline %.4f s (%s%lld steps); recent %.4f s (%lld steps)\n",
                   (long long)json_integer_value(json_object_get(j, "steps")),
                   (long long)json_integer_value(json_object_get(j, "steps_with_cotenant")),
                   json_number_value(json_object_get(base, "median_seconds")),
                   json_is_true(json_object_get(base, "explicit")) ? "set explicitly, " : "",
                   (long long)json_integer_value(json_object_get(base, "samples")),
                   json_number_value(json_object_get(win, "median_seconds")),
                   (long long)json_integer_value(json_object_get(win, "samples")));
            json_t *sd = json_object_get(j, "slowdown"), *ci = json_object_get(j, "slowdown_ci95");
            if (json_is_number(sd))
                printf("  slowdown %+.1f %% (95 %% CI %+.1f %% .. %+.1f %%)%s\n", 100 * json_number_value(sd),
                       100 * json_number_value(json_array_get(ci, 0)), 100 * json_number_value(json_array_get(ci, 1)),
                       json_is_true(json_object_get(j, "over_budget")) ? "  OVER BUDGET" : "");
            else
                printf("  slowdown: not enough steps yet\n");
            print_guard(json_object_get(j, "guard"));
            print_progress(json_object_get(j, "progress"), "  ");
        } else {
            print_share(j);
            print_hold(json_object_get(j, "hold"), "  ");
        }
        size_t k;
        json_t *r;
        json_array_foreach(json_object_get(j, "runs"), k, r)
        {
            printf("  run %lld rank %lld %-8s", (long long)json_integer_value(json_object_get(r, "id")),
                   (long long)json_integer_value(json_object_get(r, "rank")),
                   json_string_value(json_object_get(r, "state")));
            json_t *rate = json_object_get(r, "rate_bytes_per_second");
            if (json_is_number(rate))
                printf(" %.1f MB/s, %.3g GB moved\n", json_number_value(rate) / 1e6,
                       json_number_value(json_object_get(r, "bytes")) / 1e9);
            else if (base)
                printf(" steps %lld\n", (long long)json_integer_value(json_object_get(r, "steps")));
            else
                printf(" %lld output lines, no bandwidth reported yet\n",
                       (long long)json_integer_value(json_object_get(r, "lines")));
        }
    }
}

static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

void cmd_stats_help(FILE *out)
{
    fputs("Step-time baseline (steps with no co-tenant running, or set explicitly), recent median,\n"
          "slowdown = recent / baseline - 1 with a 95 % interval, the guard's state (the share it\n"
          "allows co-tenants, its actions, the cost of its baseline pauses), each co-tenant's allowed\n"
          "share and knob, and each run's progress and achieved bandwidth. --watch repeats every\n"
          "SECONDS (default 1) until interrupted.\n",
          out);
}

typedef struct {
    const char *job;
    double every;
} stats_args_t;

static int set_stats_option(void *ctx, cli_option_id_t option, const char *value)
{
    stats_args_t *a = ctx;
    char *end;
    if (option == CLI_O_JOB) {
        a->job = value;
        return 0;
    }
    a->every = value ? strtod(value, &end) : 1;
    if ((value && *end) || !(a->every >= 0.1) || a->every > 3600)
        return usage_error("stats", "--watch takes seconds between 0.1 and 3600, not '%s'", value);
    return 0;
}

int cmd_stats(const client_opts_t *o, int argc, char **argv)
{
    stats_args_t a = {NULL, 0};
    int rc = cli_parse_only("stats", argc, argv, set_stats_option, &a);
    if (rc >= 0)
        return rc;
    const char *job = a.job;
    double every = a.every;
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    for (;;) {
        int rc;
        json_t *s = rpc_call(o, WIRE_STATS, job ? json_pack("{s:s}", WIRE_P_JOB, job) : NULL, &rc);
        if (!s)
            return rc;
        if (o->json) {
            rc = print_json(s);
            if (rc != EXIT_OK)
                return rc;
        } else {
            print_stats(s);
            json_decref(s);
            fflush(stdout);
        }
        if (every <= 0 || interrupted)
            return EXIT_OK;
        struct timespec ts = {(time_t)every, (long)((every - (time_t)every) * 1e9)};
        nanosleep(&ts, NULL);
        if (interrupted)
            return EXIT_OK;
        if (!o->json)
            printf("\n----\n");
    }
}
