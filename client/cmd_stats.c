/* cmd_stats: `cosched stats` — per job the step-time baseline, the recent window and the
 * slowdown with its interval; per run its progress and achieved bandwidth. --watch repeats. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "wire.h"

static void print_stats(json_t *s)
{
    size_t i;
    json_t *j;
    printf("slowdown budget %.1f %%; co-tenant running: %s\n",
           100 * json_number_value(json_object_get(s, "slowdown_budget")),
           json_is_true(json_object_get(s, "cotenant_active")) ? "yes" : "no");
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

int cmd_stats(const client_opts_t *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"job", required_argument, NULL, 'j'}, {"watch", optional_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    const char *job = NULL;
    double every = 0;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'j': job = optarg; break;
        case 'w':
            every = optarg ? strtod(optarg, &end) : 1;
            if ((optarg && *end) || !(every >= 0.1) || every > 3600)
                return usage_error("stats", "--watch takes seconds between 0.1 and 3600, not '%s'", optarg);
            break;
        case 'h':
            printf("Usage: cosched stats [--job ID] [--watch[=SECONDS]]\n"
                   "Step-time baseline (steps with no co-tenant running, or set explicitly), recent median,\n"
                   "slowdown = recent / baseline - 1 with a 95 %% interval, and each run's progress and\n"
                   "achieved bandwidth. --watch repeats every SECONDS (default 1) until interrupted.\n");
            return EXIT_OK;
        default: return usage_error("stats", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("stats", "unexpected argument '%s'", argv[optind]);
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
