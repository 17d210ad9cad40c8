/* cmd_run: `cosched run start | stop | list` — commands coschedd launches inside a job's
 * allocation, bound to one rank's CPUs and memory, with their stdout read as progress. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_help.h"
#include "cli_parse.h"
#include "client.h"
#include "wire.h"
#include "cpulist.h"

void cmd_run_help(FILE *out)
{
    fputs("start launches CMD bound to the rank's CPUs and NUMA memory (job defaults to $SLURM_JOB_ID,\n"
          "rank to 0) as the job's user: its groups, an environment of HOME, USER, LOGNAME, SHELL and PATH\n"
          "(plus --env and the daemon's runs.keep_environment), in its home directory or --cwd DIR, umask\n"
          "077; its stdout JSON lines feed `cosched stats`, and its output files are the user's. stop sends\n"
          "SIGTERM, then SIGKILL after 5 s. Root and the configured operators may start and stop runs;\n"
          "anyone may list them.\n",
          out);
}

static void print_runs(json_t *runs)
{
    if (json_array_size(runs) == 0) {
        printf("no runs\n");
        return;
    }
    printf("%-4s %-12s %-4s %-8s %-10s %-7s %s\n", "ID", "JOB", "RANK", "PID", "STATE", "STEPS", "COMMAND");
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r) {
        char state[32];
        const char *s = json_string_value(json_object_get(r, WIRE_R_STATE));
        json_t *status = json_object_get(r, WIRE_R_EXIT_STATUS), *sig = json_object_get(r, WIRE_R_SIGNAL);
        if (json_is_integer(status))
            snprintf(state, sizeof state, "%s(%lld)", s, (long long)json_integer_value(status));
        else if (json_is_integer(sig))
            snprintf(state, sizeof state, "%s(%lld)", s, (long long)json_integer_value(sig));
        else
            snprintf(state, sizeof state, "%s", s);
        /* another user's run under private_jobs: redact comes without its pid and argv */
        json_t *pid = json_object_get(r, WIRE_R_PID), *args = json_object_get(r, WIRE_R_ARGV);
        char pid_text[24] = "-";
        if (json_is_integer(pid))
            snprintf(pid_text, sizeof pid_text, "%lld", (long long)json_integer_value(pid));
        printf("%-4lld %-12s %-4lld %-8s %-10s %-7lld", (long long)json_integer_value(json_object_get(r, WIRE_R_ID)),
               json_string_value(json_object_get(r, WIRE_R_JOB)),
               (long long)json_integer_value(json_object_get(r, WIRE_R_RANK)), pid_text, state,
               (long long)json_integer_value(json_object_get(r, WIRE_R_STEPS)));
        size_t k;
        json_t *a;
        json_array_foreach(args, k, a)
            printf(" %s", json_string_value(a));
        if (!args)
            printf(" (private)");
        printf("\n");
    }
}

typedef struct {
    const char *job, *cwd;
    long rank;
    json_t *env;
    int json;
} run_start_args_t;

static int set_start_option(void *ctx, cli_option_id_t option, const char *value)
{
    run_start_args_t *a = ctx;
    const char *eq;
    switch (option) {
    case CLI_O_JOB: a->job = value; break;
    case CLI_O_RANK:
        if (cli_count(CLI_O_RANK, value, &a->rank) < 0)
            return output_usage_error("run start", "--rank needs a whole number, not '%s'", value);
        break;
    case CLI_O_ENV:
        eq = strchr(value, '=');
        if (!eq || eq == value)
            return output_usage_error("run start", "--env needs NAME=VALUE, not '%s'", value);
        json_object_setn_new(a->env, value, (size_t)(eq - value), json_string(eq + 1));
        break;
    case CLI_O_JSON: a->json = 1; break; /* --json among these options, with no "--" to mark the command */
    default:
        if (value[0] != '/')
            return output_usage_error("run start", "--cwd needs an absolute path, not '%s'", value);
        a->cwd = value;
    }
    return 0;
}

int cmd_run_start(const client_opts_t *o, int argc, char **argv)
{
    run_start_args_t a = {.job = getenv(WIRE_ENV_SLURM_JOB), .env = json_object(), .json = o->json};
    int rest, rc = cli_parse("run start", argc, argv, set_start_option, &a, &rest);
    if (rc >= 0) {
        json_decref(a.env);
        return rc;
    }
    const char *job = a.job, *cwd = a.cwd;
    json_t *env = a.env;
    long rank = a.rank;
    int json = a.json;
    if (!job || !*job || rest >= argc) {
        json_decref(env);
        return output_usage_error("run start",
                                  !job || !*job ? "--job is required (or $SLURM_JOB_ID)" : "no command after --");
    }
    json_t *cmd = json_array();
    for (int i = rest; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_t *params = json_pack("{s:s, s:i, s:o, s:o}", WIRE_P_JOB, job, WIRE_P_RANK, (int)rank, WIRE_P_ARGV, cmd,
                               WIRE_P_ENV, env);
    if (cwd)
        json_object_set_new(params, WIRE_P_CWD, json_string(cwd));
    json_t *r = rpc_call(o, WIRE_RUN_START, params, &rc);
    if (!r)
        return rc;
    if (json)
        return output_print_json(r);
    printf("run %lld started: pid %lld, output in %s\n", (long long)json_integer_value(json_object_get(r, WIRE_R_ID)),
           (long long)json_integer_value(json_object_get(r, WIRE_R_PID)),
           json_string_value(json_object_get(r, WIRE_R_STDOUT)));
    json_decref(r);
    return EXIT_OK;
}

int cmd_run_stop(const client_opts_t *o, int argc, char **argv)
{
    long id;
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cli_print_help(stdout, "run stop");
        return EXIT_OK;
    }
    if (argc != 2 || cpulist_parse_int(argv[1], 1, 0x7fffffff, &id) < 0)
        return output_usage_error("run stop", "needs one run id (see cosched run list)");
    int rc;
    json_t *r = rpc_call(o, WIRE_RUN_STOP, json_pack("{s:i}", WIRE_P_ID, (int)id), &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    printf("run %ld %s\n", id,
           json_is_true(json_object_get(r, WIRE_R_STOPPING)) ? "is being stopped" : "had already ended");
    json_decref(r);
    return EXIT_OK;
}

int cmd_run_list(const client_opts_t *o, int argc, char **argv)
{
    const char *job = NULL;
    int rc = cli_parse_only("run list", argc, argv, cli_set_job, &job);
    if (rc >= 0)
        return rc;
    json_t *r = rpc_call(o, WIRE_RUN_LIST, job ? json_pack("{s:s}", WIRE_P_JOB, job) : NULL, &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    print_runs(json_object_get(r, WIRE_R_RUNS));
    json_decref(r);
    return EXIT_OK;
}

int cmd_run(const client_opts_t *o, int argc, char **argv)
{
    return cli_run_subcommand("run", o, argc, argv);
}
