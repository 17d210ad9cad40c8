/* cosched: the command line of the cosched co-scheduler. Global options, then the command the
 * table names (cli_table.c); topo, plan and slurm-conf work without the daemon. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_complete.h"
#include "cli_help.h"
#include "cli_parse.h"
#include "client.h"
#include "proto.h"
#include "suggest.h"
#include "wire.h"

#ifndef COSCHED_VERSION
#define COSCHED_VERSION "unknown"
#endif

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
    const char *names[64];
    size_t n = 0;
    for (int i = 0; i < cli_ncommands && n < 64; i++)
        if (cli_is_command(&cli_commands[i]))
            names[n++] = cli_commands[i].path;
    char near[256], hint[384];
    suggest_names(name, names, n, near, sizeof near);
    snprintf(hint, sizeof hint, "%s%s%sRun 'cosched --help' for the commands.", *near ? "Did you mean " : "", near,
             *near ? "? " : "");
    return output_error(EXIT_USAGE, "EUSAGE", "cosched", hint, "unknown command '%s'", name);
}

static int set_global_option(void *ctx, cli_option_id_t option, const char *value)
{
    client_opts_t *o = ctx;
    char *end;
    double seconds;
    switch (option) {
    case CLI_O_SOCKET: o->socket = value; break;
    case CLI_O_JSON: o->json = 1; break;
    case CLI_O_TIMEOUT:
        seconds = strtod(value, &end);
        if (*end || !(seconds > 0) || seconds > 3600) {
            fprintf(stderr, "cosched: --timeout needs seconds between 0 and 3600, not '%s'\n", value);
            return EXIT_USAGE;
        }
        o->timeout_ms = (int)(seconds * 1000);
        break;
    default: printf("cosched %s\n", COSCHED_VERSION); return CLI_DONE;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *env_socket = getenv(WIRE_ENV_SOCKET);
    client_opts_t o = {.socket = env_socket && *env_socket ? env_socket : PROTO_DEFAULT_SOCKET, .timeout_ms = 5000};
    int first, rc = cli_parse("", argc, argv, set_global_option, &o, &first);
    if (rc >= 0)
        return rc;
    if (first >= argc) {
        cli_print_help(stderr, "");
        return EXIT_USAGE;
    }
    argc = take_json(argc, argv, first + 1, &o.json);
    output_json_errors(o.json);
    const char *name = argv[first];
    if (strcmp(name, "help") == 0) {
        cli_print_help(stdout, "");
        return EXIT_OK;
    }
    if (strcmp(name, "__complete") == 0) /* hidden: the table for bash completion and the man page */
        return cli_complete(argc - first, argv + first);
    const cli_command_t *c = cli_command_find(name);
    if (!c || !cli_is_command(c))
        return unknown_command(name);
    return c->run(&o, argc - first, argv + first);
}
