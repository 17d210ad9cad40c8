/* cmd_guard: `cosched guard` — the slowdown guard at a glance (its knobs, each trainer's guard,
 * each co-tenant's share) — and `cosched guard set`, an operator pinning a co-tenant's share. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_parse.h"
#include "client.h"
#include "wire.h"

void cmd_guard_help(FILE *out)
{
    fputs("status shows the knobs the guard may use on this node (best first), each trainer's guard (its\n"
          "phase and the share it allows co-tenants) and each co-tenant's allowed share and knob. set pins a\n"
          "co-tenant job's share (0 = paused, 1 = unthrottled) whatever the guard decides, for experiments\n"
          "or maintenance; --share auto hands it back to the guard. Root and the configured operators may\n"
          "set. See docs/guard.md.\n",
          out);
}

/* A trainer's verdict on each co-tenant at work: whom its share holds, and who is free of it. */
static void print_verdicts(json_t *attribution)
{
    if (!json_is_object(attribution))
        return;
    if (!json_is_true(json_object_get(attribution, WIRE_R_ENABLED))) {
        printf("  attribution off: one share for every co-tenant\n");
        return;
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(attribution, WIRE_R_COTENANTS), i, c) {
        json_t *cost = json_object_get(c, WIRE_R_ESTIMATED_COST);
        printf("  co-tenant %s: %s%s, share %.2f", json_string_value(json_object_get(c, WIRE_R_JOB)),
               json_string_value(json_object_get(c, WIRE_R_VERDICT)),
               json_is_true(json_object_get(c, WIRE_R_PAUSED_BY_PROBE)) ? ", paused by a probe" : "",
               json_number_value(json_object_get(c, WIRE_R_SHARE)));
        if (json_is_object(cost))
            printf(", costs it %s%.1f %% at share %.2f (from a probe)",
                   json_is_true(json_object_get(cost, WIRE_R_BOUND)) ? "at most " : "about ",
                   100 * json_number_value(json_object_get(cost, WIRE_R_SLOWDOWN)),
                   json_number_value(json_object_get(cost, WIRE_R_AT_SHARE)));
        printf("\n");
    }
}

int cmd_guard_status(const client_opts_t *o, int argc, char **argv)
{
    int rc = cli_no_options("guard status", argc, argv);
    if (rc >= 0)
        return rc;
    json_t *status = rpc_call(o, WIRE_STATUS, NULL, &rc);
    if (!status)
        return rc;
    json_t *stats = rpc_call(o, WIRE_STATS, NULL, &rc);
    if (!stats) {
        json_decref(status);
        return rc;
    }
    if (o->json) {
        json_t *doc = json_pack("{s:O, s:O}", WIRE_R_GUARD, json_object_get(status, WIRE_R_GUARD), WIRE_R_JOBS,
                                json_object_get(stats, WIRE_R_JOBS));
        json_decref(status);
        json_decref(stats);
        return output_print_json(doc);
    }
    cmd_daemon_print_guard(json_object_get(status, WIRE_R_GUARD));
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(stats, WIRE_R_JOBS), i, j) {
        json_t *g = json_object_get(j, WIRE_R_GUARD);
        json_t *progress = json_object_get(j, WIRE_R_PROGRESS);
        if (g) {
            char source[96];
            printf("trainer %s: %s, allows co-tenants %.2f, budget %.1f %%, progress from %s\n",
                   json_string_value(json_object_get(j, WIRE_R_JOB)),
                   json_string_value(json_object_get(g, WIRE_R_PHASE)),
                   json_number_value(json_object_get(g, WIRE_R_SHARE)),
                   100 * json_number_value(json_object_get(j, WIRE_R_BUDGET)),
                   print_progress_brief(progress, source, sizeof source));
            print_verdicts(json_object_get(g, WIRE_R_ATTRIBUTION));
        } else
            printf("co-tenant %s: share %.2f through %s%s\n", json_string_value(json_object_get(j, WIRE_R_JOB)),
                   json_number_value(json_object_get(j, WIRE_R_ALLOWED_SHARE)),
                   json_is_string(json_object_get(j, WIRE_R_KNOB)) ? json_string_value(json_object_get(j, WIRE_R_KNOB))
                                                                   : "nothing yet (no processes)",
                   json_is_number(json_object_get(j, WIRE_R_SHARE_OVERRIDE)) ? " (pinned)" : "");
        if (!g) {
            print_hold(json_object_get(j, WIRE_R_HOLD), "  ");
            print_escalation(json_object_get(j, WIRE_R_ESCALATION), "  ");
            print_time_credit(json_object_get(j, WIRE_R_TIME_CREDIT), "  ");
            if (json_is_string(json_object_get(j, WIRE_R_SHARE_REASON)))
                printf("  why: %s\n", json_string_value(json_object_get(j, WIRE_R_SHARE_REASON)));
        }
    }
    json_decref(status);
    json_decref(stats);
    return EXIT_OK;
}

typedef struct {
    const char *job, *share;
} guard_set_args_t;

static int set_guard_option(void *ctx, cli_option_id_t option, const char *value)
{
    guard_set_args_t *a = ctx;
    if (option == CLI_O_JOB)
        a->job = value;
    else
        a->share = value;
    return 0;
}

int cmd_guard_set(const client_opts_t *o, int argc, char **argv)
{
    guard_set_args_t a = {NULL, NULL};
    int rc = cli_parse_only("guard set", argc, argv, set_guard_option, &a);
    if (rc >= 0)
        return rc;
    const char *job = a.job, *share_text = a.share;
    if (!job || !share_text)
        return output_usage_error("guard set", "--job and --share are required");
    json_t *share;
    if (!strcmp(share_text, "auto")) {
        share = json_null();
    } else {
        double v;
        if (cli_number(CLI_O_SHARE, share_text, &v) < 0)
            return output_usage_error("guard set", "--share takes a fraction from 0 to 1 or 'auto', not '%s'",
                                      share_text);
        share = json_real(v);
    }
    bool pinned = !json_is_null(share); /* json_pack takes the reference: ask before it goes */
    json_t *r = rpc_call(o, WIRE_GUARD_SET, json_pack("{s:s, s:o}", WIRE_P_JOB, job, WIRE_P_SHARE, share), &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    printf("co-tenant %s: share %.2f%s\n", job, json_number_value(json_object_get(r, WIRE_R_ALLOWED_SHARE)),
           pinned ? " (pinned)" : " (the guard's)");
    json_decref(r);
    return EXIT_OK;
}

int cmd_guard(const client_opts_t *o, int argc, char **argv)
{
    if (argc < 2)
        return cmd_guard_status(o, argc, argv);
    return cli_run_subcommand("guard", o, argc, argv);
}
