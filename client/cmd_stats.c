/* cmd_stats: `cosched stats` — per job the step-time baseline, the recent window and the
 * slowdown with its interval; per run its progress and achieved bandwidth. --watch repeats. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_parse.h"
#include "client.h"
#include "stats_plot.h"
#include "wire.h"

/* A trainer's guard: its phase, the share it allows co-tenants, what it did and what it cost. */
static void print_guard(json_t *g)
{
    if (!json_is_true(json_object_get(g, WIRE_R_ENABLED))) {
        printf("  guard: off\n");
        return;
    }
    json_t *actions = json_object_get(g, WIRE_R_ACTIONS), *judged = json_object_get(g, WIRE_R_JUDGED);
    json_t *age = json_object_get(g, WIRE_R_BASELINE_AGE_SECONDS), *pauses = json_object_get(g, WIRE_R_BASELINE_PAUSES);
    printf("  guard: %s, co-tenants' share %.2f; actions: %lld throttle, %lld revert, %lld relax, %lld pause",
           json_string_value(json_object_get(g, WIRE_R_PHASE)), json_number_value(json_object_get(g, WIRE_R_SHARE)),
           (long long)json_integer_value(json_object_get(actions, WIRE_GUARD_ACTION_THROTTLE)),
           (long long)json_integer_value(json_object_get(actions, WIRE_GUARD_ACTION_REVERT)),
           (long long)json_integer_value(json_object_get(actions, WIRE_GUARD_ACTION_RELAX)),
           (long long)json_integer_value(json_object_get(actions, WIRE_GUARD_ACTION_PAUSE)));
    if (json_is_object(judged))
        printf("; at this share %+.1f %% over %lld steps",
               100 * json_number_value(json_object_get(judged, WIRE_R_SLOWDOWN)),
               (long long)json_integer_value(json_object_get(judged, WIRE_R_STEPS)));
    printf("\n");
    if (json_is_number(age))
        printf("  baseline %.0f s old; pauses for baselines: %lld, %.1f s, %.2f %% of co-tenant time\n",
               json_number_value(age), (long long)json_integer_value(json_object_get(pauses, WIRE_R_COUNT)),
               json_number_value(json_object_get(pauses, WIRE_R_PAUSED_SECONDS)),
               100 * json_number_value(json_object_get(pauses, WIRE_R_COST)));
}

static const char *listed(json_t *list)
{
    const char *s = json_string_value(list);
    return s && *s ? s : "none";
}

static void print_share(json_t *j)
{
    json_t *knob = json_object_get(j, WIRE_R_KNOB), *pinned = json_object_get(j, WIRE_R_SHARE_OVERRIDE);
    json_t *exposure = json_object_get(j, WIRE_R_EXPOSURE);
    const char *none = json_is_true(json_object_get(j, WIRE_R_EXTERNAL))
                           ? " (started by Slurm: held once the TaskProlog's job confine finds its cgroups)"
                           : " (no processes to hold yet)";
    printf("  %s; allowed share %.2f%s%s%s\n", json_is_true(json_object_get(j, WIRE_R_ACTIVE)) ? "at work" : "idle",
           json_number_value(json_object_get(j, WIRE_R_ALLOWED_SHARE)), json_is_string(knob) ? " through " : none,
           json_is_string(knob) ? json_string_value(knob) : "",
           json_is_number(pinned) ? ", pinned by an operator" : "");
    if (json_is_string(json_object_get(j, WIRE_R_SHARE_REASON)))
        printf("  why: %s\n", json_string_value(json_object_get(j, WIRE_R_SHARE_REASON)));
    if (json_is_object(exposure))
        printf("  isolation from trainers where it is: %s (cpus sharing a NUMA domain: %s; an L3: %s; a core: %s)\n",
               json_string_value(json_object_get(exposure, WIRE_R_ISOLATION)),
               listed(json_object_get(exposure, WIRE_R_NUMA)), listed(json_object_get(exposure, WIRE_R_L3)),
               listed(json_object_get(exposure, WIRE_R_CORE)));
}

static void print_stats(json_t *s)
{
    size_t i;
    json_t *j;
    printf("slowdown budget %.1f %%; co-tenant running: %s; co-tenants' share: %.2f\n",
           100 * json_number_value(json_object_get(s, WIRE_R_SLOWDOWN_BUDGET)),
           json_is_true(json_object_get(s, WIRE_R_COTENANT_ACTIVE)) ? "yes" : "no",
           json_number_value(json_object_get(s, WIRE_R_COTENANT_SHARE)));
    json_array_foreach(json_object_get(s, WIRE_R_JOBS), i, j) {
        printf("\njob %s (%s)\n", json_string_value(json_object_get(j, WIRE_R_JOB)),
               json_string_value(json_object_get(j, WIRE_R_ROLE)));
        json_t *base = json_object_get(j, WIRE_R_BASELINE), *win = json_object_get(j, WIRE_R_WINDOW);
        if (base) {
            printf("  steps %lld (%lld beside a co-tenant); baseline %.4f s (%s%lld steps); recent %.4f s (%lld "
                   "steps)\n",
                   (long long)json_integer_value(json_object_get(j, WIRE_R_STEPS)),
                   (long long)json_integer_value(json_object_get(j, WIRE_R_STEPS_WITH_COTENANT)),
                   json_number_value(json_object_get(base, WIRE_R_MEDIAN_SECONDS)),
                   json_is_true(json_object_get(base, WIRE_R_EXPLICIT)) ? "set explicitly, " : "",
                   (long long)json_integer_value(json_object_get(base, WIRE_R_SAMPLES)),
                   json_number_value(json_object_get(win, WIRE_R_MEDIAN_SECONDS)),
                   (long long)json_integer_value(json_object_get(win, WIRE_R_SAMPLES)));
            json_t *sd = json_object_get(j, WIRE_R_SLOWDOWN), *ci = json_object_get(j, WIRE_R_SLOWDOWN_CI95);
            if (json_is_number(sd))
                printf("  slowdown %+.1f %% (95 %% CI %+.1f %% .. %+.1f %%)%s\n", 100 * json_number_value(sd),
                       100 * json_number_value(json_array_get(ci, 0)), 100 * json_number_value(json_array_get(ci, 1)),
                       json_is_true(json_object_get(j, WIRE_R_OVER_BUDGET)) ? "  OVER BUDGET" : "");
            else
                printf("  slowdown: not enough steps yet\n");
            print_guard(json_object_get(j, WIRE_R_GUARD));
            print_progress(json_object_get(j, WIRE_R_PROGRESS), "  ");
        } else {
            print_share(j);
            print_hold(json_object_get(j, WIRE_R_HOLD), "  ");
        }
        size_t k;
        json_t *r;
        json_array_foreach(json_object_get(j, WIRE_R_RUNS), k, r) {
            printf("  run %lld rank %lld %-8s", (long long)json_integer_value(json_object_get(r, WIRE_R_ID)),
                   (long long)json_integer_value(json_object_get(r, WIRE_R_RANK)),
                   json_string_value(json_object_get(r, WIRE_R_STATE)));
            json_t *rate = json_object_get(r, WIRE_R_RATE_BYTES_PER_SECOND);
            if (json_is_number(rate))
                printf(" %.1f MB/s, %.3g GB moved\n", json_number_value(rate) / 1e6,
                       json_number_value(json_object_get(r, WIRE_R_BYTES)) / 1e9);
            else if (base)
                printf(" steps %lld\n", (long long)json_integer_value(json_object_get(r, WIRE_R_STEPS)));
            else
                printf(" %lld output lines, no bandwidth reported yet\n",
                       (long long)json_integer_value(json_object_get(r, WIRE_R_LINES)));
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
          "SECONDS (default 1) until interrupted.\n"
          "--plot FILE.png draws a trainer's recent history (the daemon keeps, in memory, its last\n"
          "240 samples, each the mean of the steps within 2 s: 8 minutes or more): its step time,\n"
          "baseline and budget line (baseline x (1 + budget)) and each co-tenant's share over time,\n"
          "with gnuplot (Debian: gnuplot-nox). Without --job it draws the only trainer.\n",
          out);
}

typedef struct {
    const char *job;
    double every;
    const char *plot;
} stats_args_t;

static int set_stats_option(void *ctx, cli_option_id_t option, const char *value)
{
    stats_args_t *a = ctx;
    char *end;
    if (option == CLI_O_JOB) {
        a->job = value;
        return 0;
    }
    if (option == CLI_O_PLOT) {
        if (!*value)
            return output_usage_error("stats", "--plot takes the PNG file to write");
        a->plot = value;
        return 0;
    }
    a->every = value ? strtod(value, &end) : 1;
    if ((value && *end) || !(a->every >= 0.1) || a->every > 3600)
        return output_usage_error("stats", "--watch takes seconds between 0.1 and 3600, not '%s'", value);
    return 0;
}

int cmd_stats(const client_opts_t *o, int argc, char **argv)
{
    stats_args_t a = {NULL, 0, NULL};
    int rc = cli_parse_only("stats", argc, argv, set_stats_option, &a);
    if (rc >= 0)
        return rc;
    if (a.plot && a.every > 0)
        return output_usage_error("stats", "--plot draws one picture; it does not take --watch");
    if (a.plot)
        return stats_plot(o, a.job, a.plot);
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
            rc = output_print_json(s);
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
