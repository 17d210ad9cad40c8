/* cosched: the command line of the cosched co-scheduler. Dispatches to one function per
 * command; topo and plan work without the daemon, on this machine or an hwloc XML file. */
#include <stdio.h>
#include <string.h>

#include "client.h"

#ifndef COSCHED_VERSION
#define COSCHED_VERSION "unknown"
#endif

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"topo", cmd_topo, "show NUMA domains, cores, L3 groups, GPUs and NICs"},
    {"plan", cmd_plan, "place trainer ranks on their GPUs' domains and noise ranks on the rest"},
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: cosched COMMAND [OPTIONS]\n"
                 "Co-schedule CPU jobs on the cores that GPU training leaves idle.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-6s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'cosched COMMAND --help' for a command's options.\n"
                 "Topology: --topology FILE or $COSCHED_TOPOLOGY (an hwloc XML file); default: this machine.\n"
                 "Exit status: 0 ok, 1 the request cannot be met or a file cannot be read, 2 usage.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("cosched %s\n", COSCHED_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "cosched: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
