/* cli_help: --help from the table: the usage lines are the table's synopses, the commands'
 * list its summaries; what follows is each command's own text. */
#include "cli_help.h"

#include <string.h>

#include "proto.h"

int cli_is_command(const cli_command_t *c)
{
    return *c->path && !strchr(c->path, ' ');
}

/* One synopsis' lines, each after the prefix (the first) or as many spaces; 0 once one is out. */
static int print_lines(FILE *out, const char *synopsis, const char *prefix, int first)
{
    for (const char *line = synopsis; *line;) {
        size_t len = strcspn(line, "\n");
        fprintf(out, "%*s%s%.*s\n", first ? 0 : (int)strlen(prefix), "", first ? prefix : "", (int)len, line);
        first = 0;
        line += len + (line[len] == '\n');
    }
    return first;
}

void cli_print_synopsis(FILE *out, const char *path, const char *prefix, int first)
{
    const cli_command_t *c = cli_command_find(path);
    if (c->synopsis) {
        print_lines(out, c->synopsis, prefix, first);
        return;
    }
    size_t len = strlen(path);
    for (int i = 0; i < cli_ncommands; i++)
        if (strncmp(cli_commands[i].path, path, len) == 0 && cli_commands[i].path[len] == ' ')
            first = print_lines(out, cli_commands[i].synopsis, prefix, first);
}

static void print_main_help(FILE *out)
{
    cli_print_synopsis(out, "", "Usage: ", 1);
    fprintf(out, "Co-schedule CPU jobs on the cores that GPU training leaves idle.\n\n"
                 "Commands:\n");
    for (int i = 0; i < cli_ncommands; i++)
        if (cli_is_command(&cli_commands[i]))
            fprintf(out, "  %-10s %s\n", cli_commands[i].path, cli_commands[i].summary);
    fprintf(out,
            "\nGlobal options:\n"
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

void cli_print_help(FILE *out, const char *path)
{
    if (!*path) {
        print_main_help(out);
        return;
    }
    char top[32];
    snprintf(top, sizeof top, "%.*s", (int)strcspn(path, " "), path);
    cli_print_synopsis(out, top, "Usage: ", 1);
    const cli_command_t *c = cli_command_find(top);
    if (c && c->help)
        c->help(out);
}
