/* cosched: the command line of the cosched co-scheduler. Global options, then one function per
 * command; topo, plan and slurm-conf work without the daemon, the others talk to coschedd. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto.h"
#include "suggest.h"
#include "wire.h"

#ifndef COSCHED_VERSION
#define COSCHED_VERSION "unknown"
#endif

static const struct {
    const char *name;
    int (*run)(const client_opts_t *o, int argc, char **argv);
    const char *summary;
} commands[] = {
    {"topo", cmd_topo, "show NUMA domains, cores, L3 groups, GPUs and NICs (no daemon needed)"},
    {"plan", cmd_plan, "place trainer ranks on their GPUs' domains and noise on the rest (no daemon)"},
    {"slurm-conf", cmd_slurm_conf, "this node's slurm.conf and gres.conf lines, GPU-local (no daemon)"},
    {"status", cmd_status, "is coschedd up, and what does it hold"},
    {"job", cmd_job, "register | release | list jobs (Slurm prolog / epilog)"},
    {"run", cmd_run, "start | stop | list commands the daemon launches inside a job"},
    {"stats", cmd_stats, "step times, baseline and slowdown per job; noise runs' bandwidth"},
    {"report", cmd_report, "report a training step time for a job (for any framework)"},
    {"metrics", cmd_metrics, "the daemon's Prometheus metrics"},
    {"bind", cmd_bind, "exec a command bound to a job rank's CPUs and memory"},
    {"env", cmd_env, "print a job rank's task environment (for a Slurm TaskProlog or eval)"},
    {"guard", cmd_guard, "the slowdown guard: its knobs, each job's share; pin a co-tenant's share"},
    {"experiment", cmd_experiment, "the study's Table II on this node: training with and without noise"},
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: cosched [--socket PATH] [--json] [--timeout SECONDS] COMMAND [OPTIONS]\n"
                 "Co-schedule CPU jobs on the cores that GPU training leaves idle.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nGlobal options:\n"
                 "  --socket PATH      coschedd's socket (default $COSCHED_SOCKET or %s)\n"
                 "  --json             print JSON (the daemon's result object)\n"
                 "  --timeout SECONDS  give up on the daemon after this long (default 5)\n"
                 "  --help             this text\n"
                 "  --version          print the version\n"
                 "Run 'cosched COMMAND --help' for a command's options. Topology for topo, plan and\n"
                 "slurm-conf: --topology FILE or $COSCHED_TOPOLOGY (an hwloc XML file); default: this machine.\n"
                 "Exit status: 0 ok, 1 refused or cannot be met, 2 usage, 3 daemon unreachable.\n",
            PROTO_DEFAULT_SOCKET);
}

/* --json after the command, as before it: taken out of the command's words up to a "--" (after
 * it they are a command line of their own). bind and run start take a command line without "--"
 * too, so there, without one, the words are left to the command's own options. The new argc. */
static int take_json(int argc, char **argv, int from, int *json)
{
    int kept = from;
    bool command_line = false, has_separator = false;
    for (int i = from; i < argc; i++)
        has_separator |= strcmp(argv[i], "--") == 0;
    if (!has_separator && (strcmp(argv[from - 1], "bind") == 0 || strcmp(argv[from - 1], "run") == 0))
        return argc;
    for (int i = from; i < argc; i++) {
        command_line |= strcmp(argv[i], "--") == 0;
        if (!command_line && strcmp(argv[i], "--json") == 0)
            *json = 1;
        else
            argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    return kept;
}

static int unknown_command(const char *name)
{
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    char near[256], hint[384];
    suggest_names(name, names, sizeof names / sizeof names[0], near, sizeof near);
    snprintf(hint, sizeof hint, "%s%s%sRun 'cosched --help' for the commands.", *near ? "Did you mean " : "", near,
             *near ? "? " : "");
    return report_error(EXIT_USAGE, "EUSAGE", "cosched", hint, "unknown command '%s'", name);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    const char *env_socket = getenv(WIRE_ENV_SOCKET);
    client_opts_t o = {.socket = env_socket && *env_socket ? env_socket : PROTO_DEFAULT_SOCKET,
                       .timeout_ms = 5000};
    int opt;
    opterr = 0;
    /* '+': stop at the command; its options are its own. */
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        char *end;
        double seconds;
        switch (opt) {
        case 's': o.socket = optarg; break;
        case 'j': o.json = 1; break;
        case 't':
            seconds = strtod(optarg, &end);
            if (*end || !(seconds > 0) || seconds > 3600) {
                fprintf(stderr, "cosched: --timeout needs seconds between 0 and 3600, not '%s'\n", optarg);
                return EXIT_USAGE;
            }
            o.timeout_ms = (int)(seconds * 1000);
            break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("cosched %s\n", COSCHED_VERSION); return EXIT_OK;
        default:
            fprintf(stderr, "cosched: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    argc = take_json(argc, argv, optind + 1, &o.json);
    output_json_errors(o.json);
    const char *name = argv[optind];
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 1;
            return commands[i].run(&o, sub_argc, sub_argv);
        }
    return unknown_command(name);
}
